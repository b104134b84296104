"""Scale checks of the speed issue, each in a fresh process so peak memory is its own.

    python benchmarks/scale.py million    # 1,000,000 rows x 50 features, 200 depth-4 XGBoost trees
    python benchmarks/scale.py wide       # p = 20,000 features, n = 600, 1000 depth-3 trees

Prints the time of ``RSquaredExplainer(model).rsq(X, y)`` (construction included), the
peak resident memory of the whole process (data and model included), and the size of X.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import xgboost

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=["million", "wide"])
    args = parser.parse_args()
    fit_start = time.perf_counter()
    model, X, y, progress = {"million": million, "wide": wide}[args.case]()
    fitted = time.perf_counter() - fit_start
    start = time.perf_counter()
    shares = RSquaredExplainer(model, progress=progress).rsq(X, y)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB -> GiB
    print(
        f"case={args.case} n={X.shape[0]} p={X.shape[1]} trees={model.n_estimators} fit={fitted:.1f}s "
        f"rsq={elapsed:.1f}s sum_shares={shares.sum():.4f} peak_rss={peak:.2f}GiB X={X.nbytes / 1024**3:.2f}GiB"
    )


if __name__ == "__main__":
    main()
