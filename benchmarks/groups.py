"""Grouped against ungrouped ``rsq`` on the same explainer and rows (CPU seconds, one core).

python benchmarks/groups.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import xgboost
from sklearn.ensemble import RandomForestRegressor

from shap_rsq import RSquaredExplainer

GROUPS = {"a": [0, 1, 2], "b": [3, 4], "c": list(range(10, 20))}


def _cpu_seconds(call, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return float(np.median(times))


def main() -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 20))
    y = np.sin(X[:, 0]) * X[:, 1] + X[:, 2] ** 2 + 0.5 * X[:, 3] * X[:, 4] + rng.normal(scale=0.5, size=1000)
    models = {
        "xgb-d4": xgboost.XGBRegressor(n_estimators=300, max_depth=4, learning_rate=0.05, n_jobs=1),
        "xgb-d6": xgboost.XGBRegressor(n_estimators=100, max_depth=6, n_jobs=1),
        "rf-d6": RandomForestRegressor(50, max_depth=6, random_state=0),
    }
    print(f"{'model':<8} {'ungrouped':>10} {'grouped':>9} {'ratio':>6}")
    for name, model in models.items():
        explainer = RSquaredExplainer(model.fit(X, y))
        grouped = explainer.rsq(X, y, groups=GROUPS)  # compiles the grouped trees once
        assert abs(grouped.sum() - explainer.rsq(X, y).sum()) < 1e-9  # the efficiency identity
        plain = _cpu_seconds(lambda e=explainer: e.rsq(X, y))
        together = _cpu_seconds(lambda e=explainer: e.rsq(X, y, groups=GROUPS))
        print(f"{name:<8} {plain:>10.2f} {together:>9.2f} {together / plain:>6.2f}")


if __name__ == "__main__":
    main()
