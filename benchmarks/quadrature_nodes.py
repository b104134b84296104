"""Quadrature nodes each split's LCA items are evaluated on, with the widest leaf pair counted
(``Tuning.union_pairs``, the default) against the bound of the widest leaves (``union_pairs=0``).

For every tree of a workload: the splits' rules (``node_quadrature``) weighted by the LCA items
meeting there (``node_costs``), summed over the trees, and the time the rules took to find; and
the conditioned recursion's rule per tree (``compile_junction``), averaged.  The LCA kernel's
work on the cross items is items x nodes x rows, so the ratio is what the change can save there.

    python benchmarks/quadrature_nodes.py deep:xgb-12 deep:lgbm-255 lgbm-31 xgb-p100-d8

Workloads as in ``ab_functions.py``: ``bench.py``'s, ``local.py``'s or ``deep:NAME``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from ab_functions import _model

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.lca.pairs import node_costs
from shap_rsq.kernels.lca.plan import node_quadrature
from shap_rsq.kernels.leaf_paths import tree_paths
from shap_rsq.kernels.recursion.conditioned import compile_junction
from shap_rsq.tuning import DEFAULT_TUNING


def measure(name: str) -> str:
    model, _, _ = _model(name, None)
    trees = [tree for tree in RSquaredExplainer(model).forest.trees if tree.left[0] >= 0]
    weighted = {0: 0.0, DEFAULT_TUNING.union_pairs: 0.0}
    seconds = dict.fromkeys(weighted, 0.0)
    for tree in trees:
        paths = tree_paths(tree)
        items = node_costs(tree).items
        for budget in weighted:
            start = time.perf_counter()
            split_q = node_quadrature(tree, paths, budget)[1]
            seconds[budget] += time.perf_counter() - start
            weighted[budget] += float(split_q @ items)
    bounded, counted = weighted.values()
    bound_only = replace(DEFAULT_TUNING, union_pairs=0)
    recursion = [np.mean([compile_junction(tree, t).n_q for tree in trees]) for t in (bound_only, DEFAULT_TUNING)]
    return (
        f"| {name} | {len(trees)} | {bounded / counted:.3f} | {recursion[0]:.2f} / {recursion[1]:.2f} | "
        f"{1e3 * seconds[0]:.0f} | {1e3 * seconds[DEFAULT_TUNING.union_pairs]:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="+")
    args = parser.parse_args()
    print(
        "| workload | trees | items x nodes, bound / counted | recursion's nodes a tree, bound / counted "
        "| rules, bound (ms) | rules, counted (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name in args.workloads:
        print(measure(name), flush=True)


if __name__ == "__main__":
    main()
