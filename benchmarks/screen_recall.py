"""Held-out recall of a sparse case/control screen: RSquaredSelector on a boosted classifier
(second-order shares of D²) against the same selector on a forest classifier (Brier skill score).

p = 5,000 features, n = 500 rows, 20 informative; the selector keeps the 20 features with the
largest out-of-fold shares (stratified 3-fold ``cv=``), and recall is the fraction of the 20
informative features among them.

    python benchmarks/screen_recall.py --seeds 3                      # the booster's settings of the first run
    python benchmarks/screen_recall.py --seeds 6 --booster screening  # stumps on 2% of the columns a split
    python benchmarks/screen_recall.py --seeds 20 --family lightgbm --booster screening

``--family`` picks the boosted classifier (``xgboost``: XGBClassifier, the default; ``lightgbm``:
LGBMClassifier), ``--booster`` its settings:

- ``xgboost first``: 300 trees of depth 2 at rate 0.05 (the settings of the first run);
- ``xgboost screening``: 1,000 stumps at rate 0.05, each split choosing among 2% of the columns
  (``colsample_bynode=0.02``, about 100 of 5,000, as the forest's ``max_features="sqrt"`` chooses
  among 70) on half the rows (``subsample=0.5``), the best of the first XGBoost settings tried;
- ``lightgbm screening``: the same kind of stumps in LightGBM, their columns drawn per tree
  (``feature_fraction=0.02``: a stump has one split, so per tree is per split, and LightGBM then
  builds histograms of the drawn columns only, five times faster), ``bagging_fraction=0.5``,
  with splits of at least 50 rows on 16 bins (``min_child_samples=50``, ``max_bin=16``), 3,000
  of them at rate 0.02: the closest to the forest of some forty settings tried, and still short
  of it (recall 0.30 against 0.35 over seeds 0-19);
- ``xgboost forest``: XGBoost's random-forest mode, one round of 500 parallel trees of depth up to
  12 (``num_parallel_tree=500``), each on a 0.632 subsample of the rows and 20% of the columns,
  each split choosing among 7% of those (70 columns, as the forest's ``max_features="sqrt"``),
  on 16 bins, with leaves of a single row allowed (``min_child_weight=0.2``) and almost no
  shrinkage of their Newton values (``reg_lambda=0.01``): a forest of the logistic loss's
  Newton steps, whose average is the margin.  Recall 0.40 over seeds 0-19 against the forest's
  0.35, at about 2.8 times its CPU;
- ``xgboost boosted-forests``: the same trees boosted, 5 rounds of 100 at rate 0.2 (each round a
  forest fitted to the gradient the rounds before it left): recall 0.375 over seeds 0-19.  Sequences
  of single trees (stumps to depth 3, some fifty settings) stay at 0.25-0.30 (docs/benchmarks.md).

docs/benchmarks.md tables every setting tried.
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
    start = time.process_time()
    selector.fit(X, y)
    seconds = time.process_time() - start
    return float(np.isin(np.flatnonzero(selector.get_support()), truth).mean()), seconds


BOOSTERS = {
    "xgboost": {
        "first": {"n_estimators": 300, "max_depth": 2, "learning_rate": 0.05},
        "screening": {
            "n_estimators": 1000,
            "max_depth": 1,
            "learning_rate": 0.05,
            "colsample_bynode": 0.02,
            "subsample": 0.5,
        },
        "forest": {
            "n_estimators": 1,
            "num_parallel_tree": 500,
            "learning_rate": 1.0,
            "max_depth": 12,
            "colsample_bytree": 0.2,
            "colsample_bynode": 0.07,
            "subsample": 0.632,
            "max_bin": 16,
            "min_child_weight": 0.2,
            "reg_lambda": 0.01,
        },
    },
    "lightgbm": {
        "screening": {
            "n_estimators": 3000,
            "max_depth": 1,
            "num_leaves": 2,
            "learning_rate": 0.02,
            "feature_fraction": 0.02,
            "bagging_fraction": 0.5,
            "bagging_freq": 1,
            "min_child_samples": 50,
            "max_bin": 16,
        },
    },
}
# the forest's trees in 5 boosting rounds of 100
BOOSTERS["xgboost"]["boosted-forests"] = {
    **BOOSTERS["xgboost"]["forest"],
    "n_estimators": 5,
    "num_parallel_tree": 100,
    "learning_rate": 0.2,
}


def boosted_classifier(family: str, booster: str):
    """The boosted classifier of ``family`` with the named settings, on one core."""
    settings = BOOSTERS[family][booster]
    if family == "lightgbm":
        import lightgbm

        return lightgbm.LGBMClassifier(**settings, n_jobs=1, random_state=0, verbose=-1)
    import xgboost

    return xgboost.XGBClassifier(**settings, n_jobs=1, random_state=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument(
        "--forest-trees", type=int, default=500, help="trees of the forest classifier (100: scikit-learn's default)"
    )
    parser.add_argument("--family", choices=sorted(BOOSTERS), default="xgboost", help="the boosted classifier")
    parser.add_argument(
        "--booster",
        choices=sorted({name for names in BOOSTERS.values() for name in names}),
        help="its settings (default: the family's first)",
    )
    args = parser.parse_args()
    booster = args.booster or next(iter(BOOSTERS[args.family]))
    if booster not in BOOSTERS[args.family]:
        parser.error(f"--booster {booster} is not a setting of --family {args.family}: {sorted(BOOSTERS[args.family])}")
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        X, y, truth = case_control(seed)
        boosted = boosted_classifier(args.family, booster)
        forest = RandomForestClassifier(args.forest_trees, max_features="sqrt", n_jobs=1, random_state=0)
        rows.append((seed, *recall(boosted, X, y, truth, seed), *recall(forest, X, y, truth, seed)))
    name = type(boosted).__name__
    print(f"| seed | {name} recall | CPU (s) | RandomForestClassifier({args.forest_trees}) recall | CPU (s) |")
    print("|---:|---:|---:|---:|---:|")
    for seed, rb, tb, rf, tf in rows:
        print(f"| {seed} | {rb:.2f} | {tb:.1f} | {rf:.2f} | {tf:.1f} |")
    boosted, forest = np.array([r[1] for r in rows]), np.array([r[3] for r in rows])
    print(f"| mean | {boosted.mean():.3f} | | {forest.mean():.3f} | |")
    wins, ties = int(np.sum(boosted > forest)), int(np.sum(boosted == forest))
    print(f"\n{name} better on {wins} seeds, equal on {ties}, worse on {len(rows) - wins - ties}")


if __name__ == "__main__":
    main()
