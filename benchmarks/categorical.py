"""Categorical splits against the same workload on numeric columns (LightGBM, CPU seconds, one core).

python benchmarks/categorical.py [--repeat 3]

The data: n = 5,000 rows, p = 50 features of which 10 are categorical (12 categories each, pandas
``category`` columns); LightGBM with 300 trees of 31 leaves.  "numeric" fits the same model on the
same rows with the 10 columns as their integer codes (numbers, split by thresholds); "categorical"
fits it on the categories (splits on sets of them).  Each is timed fresh (construction, compiling
the trees, ``rsq``) and again on the reused explainer.
"""

from __future__ import annotations

import argparse
import time
import warnings

import lightgbm
import numpy as np
import pandas as pd

from shap_rsq import RSquaredExplainer

N, P, N_CATEGORICAL, N_CATEGORIES = 5000, 50, 10, 12


def data(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The rows with categories and the same rows with their codes as numbers, and y."""
    rng = np.random.default_rng(seed)
    numbers = rng.normal(size=(N, P - N_CATEGORICAL))
    codes = rng.integers(0, N_CATEGORIES, size=(N, N_CATEGORICAL))
    effects = rng.normal(size=(N_CATEGORICAL, N_CATEGORIES))
    y = numbers[:, :5] @ np.linspace(1.0, 0.2, 5) + numbers[:, 5] * numbers[:, 6]
    y = y + effects[np.arange(N_CATEGORICAL), codes].sum(axis=1) + rng.normal(scale=0.5, size=N)
    names = [f"c{j}" for j in range(N_CATEGORICAL)] + [f"x{j}" for j in range(P - N_CATEGORICAL)]
    numeric = pd.DataFrame(np.column_stack([codes, numbers]), columns=names)
    categorical = numeric.copy()
    for j in range(N_CATEGORICAL):
        categorical[f"c{j}"] = pd.Categorical.from_codes(codes[:, j], [f"k{k}" for k in range(N_CATEGORIES)])
    return categorical, numeric, y


def _cpu_seconds(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    categorical, numeric, y = data()
    params = dict(n_estimators=300, num_leaves=31, verbose=-1, n_jobs=1, random_state=0)
    print(f"{'columns':<12} {'fresh (s)':>10} {'reused (s)':>11} {'routing columns':>16}")
    results = {}
    for name, X in (("numeric", numeric), ("categorical", categorical)):
        model = lightgbm.LGBMRegressor(**params).fit(X, y)
        fresh = _cpu_seconds(lambda m=model, X=X: RSquaredExplainer(m).rsq(X, y), args.repeat)
        explainer = RSquaredExplainer(model)
        explainer.rsq(X, y)
        reused = _cpu_seconds(lambda e=explainer, X=X: e.rsq(X, y), args.repeat)
        results[name] = (fresh, reused)
        extra = explainer.forest.n_features - P
        print(f"{name:<12} {fresh:>10.3f} {reused:>11.3f} {extra:>16d}")
    (fresh_n, reused_n), (fresh_c, reused_c) = results["numeric"], results["categorical"]
    print(f"categorical / numeric: fresh {fresh_c / fresh_n:.2f}x, reused {reused_c / reused_n:.2f}x")


if __name__ == "__main__":
    main()
