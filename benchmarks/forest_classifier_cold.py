"""A fully grown ``RandomForestClassifier()`` at its defaults: one cold ``rsq`` (compiling included)
against shap's TreeSHAP, CPU seconds in one process.

    python benchmarks/forest_classifier_cold.py                 # 100 trees, 2,000 rows x 20 features
    python benchmarks/forest_classifier_cold.py --trees 30 --rows 1000

The rows are ``make_classification(rows, 20, n_informative=5, flip_y=0.08)``: noisy labels grow
trees of about 190 leaves on 2,000 rows, as real data does (clean ones stop at about 45).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import shap
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from shap_rsq import RSquaredExplainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the long-call warning
    X, y = make_classification(args.rows, 20, n_informative=5, flip_y=0.08, random_state=0)
    model = RandomForestClassifier(args.trees, n_jobs=1, random_state=0).fit(X, y)
    leaves = np.mean([tree.get_n_leaves() for tree in model.estimators_])
    start = time.process_time()
    shap.TreeExplainer(model).shap_values(X)
    tree_shap = time.process_time() - start
    start = time.process_time()
    shares = RSquaredExplainer(model, progress=False, n_jobs=1).rsq(X, y)
    ours = time.process_time() - start
    print(
        f"{args.trees} trees of {leaves:.0f} leaves on {args.rows} rows: rsq {ours:.1f} CPU s, "
        f"TreeSHAP {tree_shap:.2f} CPU s ({ours / tree_shap:.0f}x); shares sum to {np.sum(shares):.4f}"
    )


if __name__ == "__main__":
    main()
