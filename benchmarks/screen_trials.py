"""Held-out recall of booster settings on the case/control screen of ``screen_recall.py``, one
setting a run: ``python benchmarks/screen_trials.py lightgbm '{"boosting_type": "rf", ...}' 0 1 2``.

Prints one line: the recalls per seed, their mean, the mean AUC of the shares (informative
against noise features) and the CPU seconds a seed (the selector's fit: three folds' models and
their held-out shares).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from scipy.stats import rankdata
from screen_recall import case_control
from sklearn.model_selection import StratifiedKFold

from shap_rsq import RSquaredSelector


def classifier(family: str, settings: dict, p: int = 5000):
    """The boosted classifier of ``family`` with ``settings``, on one core (LightGBM's
    ``cegb_coupled``: one cost-effective penalty for every feature's first use; ``univariate``:
    each tree on one feature, an interaction constraint of each feature alone)."""
    settings = dict(settings)
    if "cegb_coupled" in settings:
        settings["cegb_penalty_feature_coupled"] = [settings.pop("cegb_coupled")] * p
    if settings.pop("univariate", False):
        singletons = [[j] for j in range(p)]  # XGBoost reads a list as feature names, a string as indices
        settings["interaction_constraints"] = json.dumps(singletons) if family == "xgboost" else singletons
    if family == "forest":  # the reference: screen_recall.py's forest, settings on top
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(
            **{"n_estimators": 500, "max_features": "sqrt", "n_jobs": 1, "random_state": 0, **settings}
        )
    if family == "lightgbm":
        import lightgbm

        return lightgbm.LGBMClassifier(**{"n_jobs": 1, "random_state": 0, "verbose": -1, **settings})
    if family == "catboost":
        import catboost

        return catboost.CatBoostClassifier(**{"thread_count": 1, "random_seed": 0, "verbose": 0, **settings})
    import xgboost

    return xgboost.XGBClassifier(**{"n_jobs": 1, "random_state": 0, **settings})


def screen(estimator, X, y, truth, seed: int) -> tuple[float, float, float]:
    """The recall of ``screen_recall.recall`` (the same selector), the AUC of the out-of-fold shares
    (informative against noise features: finer-grained than a recall of 20), and CPU seconds."""
    selector = RSquaredSelector(
        estimator, threshold=-np.inf, max_features=len(truth), cv=StratifiedKFold(3, shuffle=True, random_state=seed)
    )
    start = time.process_time()
    selector.fit(X, y)
    seconds = time.process_time() - start
    ranks = rankdata(selector.feature_rsq_)
    informative = np.isin(np.arange(X.shape[1]), truth)
    n_in, n_out = informative.sum(), (~informative).sum()
    auc = (ranks[informative].sum() - n_in * (n_in + 1) / 2) / (n_in * n_out)
    return float(np.isin(np.flatnonzero(selector.get_support()), truth).mean()), float(auc), seconds


def main() -> None:
    family, settings, seeds = sys.argv[1], json.loads(sys.argv[2]), [int(s) for s in sys.argv[3:]]
    recalls, aucs, seconds = [], [], []
    for seed in seeds:
        X, y, truth = case_control(seed)
        r, a, t = screen(classifier(family, settings), X, y, truth, seed)
        recalls.append(r)
        aucs.append(a)
        seconds.append(t)
        print(f"  seed {seed}: {r:.2f}, AUC {a:.3f} ({t:.1f} CPU s)", flush=True)
    print(
        f"{family} {json.dumps(settings)} seeds {seeds[0]}-{seeds[-1]}: "
        f"{', '.join(f'{r:.2f}' for r in recalls)} mean {np.mean(recalls):.3f}, "
        f"AUC {np.mean(aucs):.3f}, {np.mean(seconds):.1f} CPU s a seed",
        flush=True,
    )


if __name__ == "__main__":
    main()
