"""Quickstart: how much of a model's R² does each feature account for?

Runs with the core install only (scikit-learn's diabetes data ships with scikit-learn):

    pip install . && python examples/quickstart.py
"""

from __future__ import annotations

import time

from sklearn.datasets import load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import r2_score

from shap_rsq import RSquaredExplainer


def main() -> None:
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.05, max_depth=4, random_state=0)
    model.fit(X, y)

    start = time.perf_counter()
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(X, y)
    elapsed = time.perf_counter() - start

    print(f"Feature shares of R² for a {type(model).__name__} on the diabetes data (n={len(y)})\n")
    for name, share in shares.sort_values(ascending=False).items():
        print(f"  {name:>6s}  {share:7.4f}  {'#' * round(share * 100)}")
    print(f"\n  sum of shares  {shares.sum():.4f}")
    print(f"  model R²      {r2_score(y, model.predict(X)):.4f}")
    print(f"  computed in {elapsed:.2f} s")


if __name__ == "__main__":
    main()
