"""A binary forest classifier's class 0 played as class 1's, against both classes played.

A binary forest's class probabilities are complements tree by tree, so class 0's squared-error
games are class 1's (``shap_rsq.engine.outputs.complementary_classes``) and the explainer plays
them once.  This times ``rsq`` on a reused explainer both ways, alternating in one process (CPU
seconds, medians), with shap's TreeSHAP beside it, and checks that the shares agree to rounding.

    python benchmarks/binary_classes.py                      # 30 fully grown trees, 1,000 rows
    python benchmarks/binary_classes.py --trees 100 --rows 2000 --repeat 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import shap
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from shap_rsq import RSquaredExplainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=30)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    X, y = make_classification(args.rows, 20, n_informative=8, flip_y=0.05, random_state=0)
    model = RandomForestClassifier(args.trees, n_jobs=1, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model, progress=False)
    explainer.rsq(X, y)  # the plans compiled once, for both ways
    times: dict[bool, list[float]] = {True: [], False: []}
    shares = {}
    for _ in range(args.repeat):
        for once in (True, False):
            explainer._complementary_classes = once
            start = time.process_time()
            shares[once] = explainer.rsq(X, y)
            times[once].append(time.process_time() - start)
    start = time.process_time()
    shap.TreeExplainer(model).shap_values(X)
    tree_shap = time.process_time() - start
    gap = float(np.max(np.abs(shares[True] - shares[False])))
    print(f"RandomForestClassifier({args.trees}) at its defaults, {args.rows} rows x 20 features; CPU s, medians")
    print("| | `rsq` CPU s |\n|---|---:|")
    print(f"| both classes played | {np.median(times[False]):.2f} |")
    print(f"| class 1 played once | {np.median(times[True]):.2f} |")
    print(f"| TreeSHAP (`shap_values`) | {tree_shap:.2f} |")
    print(f"largest difference of the shares: {gap:.2g}")


if __name__ == "__main__":
    main()
