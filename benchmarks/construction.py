"""The time to construct an explainer beside shap's own, on a large LightGBM model.

``RSquaredExplainer(model)`` is a ``shap.TreeExplainer``: it pays shap's reading of the model and
its own record of it.  CPU seconds, medians, one process, alternating:

    python benchmarks/construction.py
    python benchmarks/construction.py --trees 300 --leaves 31 --repeat 5
"""

from __future__ import annotations

import argparse
import time

import lightgbm
import numpy as np
import shap

from shap_rsq import RSquaredExplainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=1000)
    parser.add_argument("--leaves", type=int, default=255)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 50))
    y = X[:, 0] + np.sin(X[:, 1]) + rng.normal(size=len(X))
    model = lightgbm.LGBMRegressor(n_estimators=args.trees, num_leaves=args.leaves, verbose=-1).fit(X, y)
    times: dict[str, list[float]] = {"RSquaredExplainer": [], "shap.TreeExplainer": []}
    for _ in range(args.repeat):
        for name, make in (("RSquaredExplainer", RSquaredExplainer), ("shap.TreeExplainer", shap.TreeExplainer)):
            start = time.process_time()
            make(model)
            times[name].append(time.process_time() - start)
    ours, theirs = (float(np.median(t)) for t in times.values())
    print(
        f"LightGBM, {args.trees} trees of {args.leaves} leaves: RSquaredExplainer {ours:.2f} CPU s, "
        f"shap.TreeExplainer {theirs:.2f} CPU s, ratio {ours / theirs:.2f}"
    )


if __name__ == "__main__":
    main()
