"""Scale checks of the speed issue, each in a fresh process so peak memory is its own.

    python benchmarks/scale.py million    # 1,000,000 rows x 50 features, 200 depth-4 XGBoost trees
    python benchmarks/scale.py wide       # p = 20,000 features, n = 600, 1000 depth-3 trees
    python benchmarks/scale.py wide-forest  # p = 10,000, n = 300, RandomForestRegressor() defaults

Prints the time of ``RSquaredExplainer(model).rsq(X, y)`` (construction included), the
peak resident memory of the whole process (data and model included), and the size of X.
``wide-forest`` (screening with a forest of fully grown trees) also times per-row shares on a
fresh explainer and shap's ``TreeExplainer(model).shap_values(X)`` on the same rows (both with
construction), and prints the efficiency gap ``|sum of shares - (R^2(model) - R^2(E f))|``.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import xgboost
from deep import efficiency_gap

from shap_rsq import RSquaredExplainer


def million():
    rng = np.random.default_rng(0)
    n, p = 1_000_000, 50
    X = rng.normal(size=(n, p))
    y = X[:, :5] @ np.arange(1, 6) + np.sin(3 * X[:, 5]) + X[:, 6] * X[:, 7] + rng.normal(size=n)
    model = xgboost.XGBRegressor(n_estimators=200, max_depth=4, learning_rate=0.1, n_jobs=2, tree_method="hist")
    return model.fit(X, y), X, y, True


def wide():
    rng = np.random.default_rng(0)
    n, p = 600, 20_000
    X = rng.normal(size=(n, p))
    y = X[:, :10] @ rng.normal(size=10) + rng.normal(size=n)
    model = xgboost.XGBRegressor(n_estimators=1000, max_depth=3, learning_rate=0.05, n_jobs=2, colsample_bytree=0.5)
    return model.fit(X, y), X, y, False


def wide_forest():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    n, p = 300, 10_000
    X = rng.normal(size=(n, p))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + rng.normal(scale=0.5, size=n)
    return RandomForestRegressor(random_state=0, n_jobs=2).fit(X, y), X, y, False


def _timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def _beside_treeshap(explainer, model, X, y, shares) -> str:
    """Per-row shares (a fresh explainer) and TreeSHAP on the same rows, and the efficiency gap of
    ``shares``."""
    import shap

    explanation, per_row = _timed(lambda: RSquaredExplainer(model)(X, y))
    _, treeshap = _timed(lambda: shap.TreeExplainer(model).shap_values(X))
    assert np.allclose(explanation.values.sum(axis=0), shares, rtol=0, atol=1e-12)
    gap = efficiency_gap(explainer, model, X, y, shares)
    return f" per_row={per_row:.1f}s treeshap={treeshap:.2f}s efficiency_gap={gap:.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=["million", "wide", "wide-forest"])
    args = parser.parse_args()
    fit_start = time.perf_counter()
    model, X, y, progress = {"million": million, "wide": wide, "wide-forest": wide_forest}[args.case]()
    fitted = time.perf_counter() - fit_start
    start = time.perf_counter()
    explainer = RSquaredExplainer(model, progress=progress)
    shares = explainer.rsq(X, y)
    elapsed = time.perf_counter() - start
    beside = _beside_treeshap(explainer, model, X, y, shares) if args.case == "wide-forest" else ""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB -> GiB
    print(
        f"case={args.case} n={X.shape[0]} p={X.shape[1]} trees={model.n_estimators} fit={fitted:.1f}s "
        f"rsq={elapsed:.1f}s sum_shares={shares.sum():.4f} peak_rss={peak:.2f}GiB X={X.nbytes / 1024**3:.2f}GiB{beside}"
    )


if __name__ == "__main__":
    main()
