"""Held-out recall of a sparse case/control screen: RSquaredSelector on a boosted classifier
(second-order shares of D²) against the same selector on a forest classifier (Brier skill score).

p = 5,000 features, n = 500 rows, 20 informative; the selector keeps the 20 features with the
largest out-of-fold shares (stratified 3-fold ``cv=``), and recall is the fraction of the 20
informative features among them.

    python benchmarks/screen_recall.py --seeds 3                      # the booster's settings of the first run
    python benchmarks/screen_recall.py --seeds 6 --booster screening  # stumps on 2% of the columns a split

``--booster``: ``first`` is 300 trees of depth 2 at rate 0.05 (the settings of the first run);
``screening`` is 1,000 stumps at rate 0.05, each split choosing among 2% of the columns
(``colsample_bynode=0.02``, about 100 of 5,000, as the forest's ``max_features="sqrt"`` chooses
among 70) on half the rows (``subsample=0.5``): the settings a screen of many weak main effects
calls for, the best of seven tried (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import StratifiedKFold

from shap_rsq import RSquaredSelector


def case_control(seed: int, n: int = 500, p: int = 5000, informative: int = 20):
    """Rows whose log-odds are a sum of 20 effects (main effects and two products) plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    signal = X[:, :informative] @ rng.choice([-1.0, 1.0], informative) * 0.6
    signal += X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3]
    y = (signal + rng.logistic(size=n) > 0).astype(int)
    return X, y, np.arange(informative)


def recall(estimator, X, y, truth, seed: int) -> tuple[float, float]:
    selector = RSquaredSelector(
        estimator, threshold=-np.inf, max_features=len(truth), cv=StratifiedKFold(3, shuffle=True, random_state=seed)
    )
    start = time.perf_counter()
    selector.fit(X, y)
    seconds = time.perf_counter() - start
    return float(np.isin(np.flatnonzero(selector.get_support()), truth).mean()), seconds


BOOSTERS = {
    "first": {"n_estimators": 300, "max_depth": 2, "learning_rate": 0.05},
    "screening": {
        "n_estimators": 1000,
        "max_depth": 1,
        "learning_rate": 0.05,
        "colsample_bynode": 0.02,
        "subsample": 0.5,
    },
}


def main() -> None:
    import xgboost

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--booster", choices=sorted(BOOSTERS), default="first")
    args = parser.parse_args()
    rows = []
    for seed in range(args.seeds):
        X, y, truth = case_control(seed)
        boosted = xgboost.XGBClassifier(**BOOSTERS[args.booster], n_jobs=1, random_state=0)
        forest = RandomForestClassifier(500, max_features="sqrt", n_jobs=1, random_state=0)
        rows.append((seed, *recall(boosted, X, y, truth, seed), *recall(forest, X, y, truth, seed)))
    print("| seed | XGBClassifier recall | time (s) | RandomForestClassifier recall | time (s) |")
    print("|---:|---:|---:|---:|---:|")
    for seed, rb, tb, rf, tf in rows:
        print(f"| {seed} | {rb:.2f} | {tb:.1f} | {rf:.2f} | {tf:.1f} |")
    boosted_mean, forest_mean = np.mean([r[1] for r in rows]), np.mean([r[3] for r in rows])
    print(f"| mean | {boosted_mean:.2f} | | {forest_mean:.2f} | |")


if __name__ == "__main__":
    main()
