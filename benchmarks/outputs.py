"""Record every output of a fixed set of models, and compare a later version's outputs bit for bit.

A restructuring must not change a single bit: ``record`` before it, ``compare`` after.

    python benchmarks/outputs.py record /tmp/outputs.npz
    python benchmarks/outputs.py compare /tmp/outputs.npz
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from conftest import FAMILIES, NO_NAN, fit_family, make_data

from shap_rsq import RSquaredExplainer


def _extra_models():
    import lightgbm
    import xgboost
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    X, y, w = make_data(seed=99, n=400, p=10)
    for depth in range(2, 9):
        yield f"xgb-d{depth}", xgboost.XGBRegressor(n_estimators=20, max_depth=depth).fit(X, y), X, y, w
    yield "lgbm-31", lightgbm.LGBMRegressor(n_estimators=30, num_leaves=31, verbose=-1).fit(X, y), X, y, w
    yield "rf-d4", RandomForestRegressor(30, max_depth=4, random_state=0).fit(X, y), X, y, w
    yield "tree-deep", DecisionTreeRegressor(min_samples_leaf=8, random_state=0).fit(X, y), X, y, w
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    yield "rf-classifier", RandomForestClassifier(10, max_depth=5, random_state=0).fit(X, labels), X, labels, w


def _models():
    for family in FAMILIES:
        for nan in (False, True):
            if nan and family in NO_NAN:
                continue
            X, y, w = make_data(seed=FAMILIES.index(family), nan=nan)
            yield f"{family}-nan{nan}", fit_family(family, X, y), X, y, w
    yield from _extra_models()


def _eager(explainer: RSquaredExplainer) -> RSquaredExplainer:
    """Split even small forests over worker processes, whatever the engine's layout."""
    if hasattr(explainer, "_set_engine"):
        from dataclasses import replace

        from shap_rsq.tuning import DEFAULT_TUNING

        return explainer._set_engine(tuning=replace(DEFAULT_TUNING, parallel_work=0.0))
    from shap_rsq import _engine  # the flat layout before the restructuring

    _engine._PARALLEL_WORK = 0.0
    return explainer


def outputs() -> dict[str, np.ndarray]:
    result = {}
    for name, model, X, y, w in _models():
        explainer = RSquaredExplainer(model)
        result[f"{name}/rsq"] = np.asarray(explainer.rsq(X, y, sample_weight=w))
        result[f"{name}/loss_local"] = np.asarray(explainer.loss_reduction(X, y, w, local=True))
        explanation = explainer(X, y, sample_weight=w)
        result[f"{name}/values"] = explanation.values
        result[f"{name}/base"] = np.asarray(explanation.base_values)
        result[f"{name}/jobs2"] = np.asarray(_eager(RSquaredExplainer(model, n_jobs=2)).rsq(X, y, sample_weight=w))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["record", "compare"])
    parser.add_argument("path")
    parser.add_argument(
        "--rtol",
        type=float,
        default=0.0,
        help="relative tolerance of compare, against each array's largest magnitude (0: bit for bit)",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    now = outputs()
    if args.action == "record":
        np.savez(args.path, **now)
        print(f"recorded {len(now)} arrays to {args.path}")
        return 0
    before = dict(np.load(args.path))
    changed = [key for key in before if key not in now or not np.array_equal(before[key], now[key], equal_nan=True)]
    beyond = []
    for key in changed:
        if key not in now or before[key].shape != now[key].shape:
            print(f"CHANGED {key}: shape")
            beyond.append(key)
            continue
        gap = float(np.nanmax(np.abs(before[key] - now[key]), initial=0.0))
        scale = float(np.nanmax(np.abs(before[key]), initial=0.0))
        relative = gap / scale if scale else gap
        print(f"CHANGED {key}: {gap:.3g} ({relative:.3g} relative)")
        if relative > args.rtol:
            beyond.append(key)
    print(f"{len(before) - len(changed)} of {len(before)} arrays identical", end="")
    print(f", {len(changed) - len(beyond)} within rtol={args.rtol:g}" if args.rtol else "")
    return 1 if beyond else 0


if __name__ == "__main__":
    sys.exit(main())
