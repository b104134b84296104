"""Leaf pairs of fully grown trees against the rows: per-row shares and ``rsq`` under ``pair_cost``.

The first ``--trees`` trees of ``RandomForestRegressor()`` at its defaults (``deep.py``'s
``rf-default-1k``: 1,000 rows of 20 features; ``--workload`` names another of deep.py's
scikit-learn models, such as ``tree-full``), CPU seconds of this process on reused explainers:

    python benchmarks/pair_rows.py local --rows 100 --trees 3
    python benchmarks/pair_rows.py rsq --rows 500 --trees 1 --pair-cost 2 1 0.5 0
    python benchmarks/pair_rows.py selector --rows 1000 --trees 5 --cv 5

``local`` times per-row shares of the first ``--rows`` rows (what ``estimate_rsq`` computes on its
sample) and saves them with ``--save`` so that two checkouts can be compared (run it with each on
``PYTHONPATH``, alternating); ``rsq`` times global shares with the nodes each ``pair_cost`` gives to
the leaf pairs (0: every node, ``kernel="pairs"``) and prints the largest difference between them.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings

import numpy as np
from deep import WORKLOADS, _data

from shap_rsq import RSquaredExplainer


def _model(workload: str, trees: int):
    n, factory = WORKLOADS[workload]
    X, y = _data(n)
    model = factory().fit(X, y)
    if hasattr(model, "estimators_"):
        model.estimators_ = model.estimators_[:trees]
        model.n_estimators = trees
    return model, X, y


def _cpu(call) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["local", "rsq", "selector"])
    parser.add_argument("--workload", default="rf-default-1k", help="a deep.py workload of scikit-learn trees")
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--trees", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--pair-cost", type=float, nargs="+", default=[2.0])
    parser.add_argument("--save", help="file to save the per-row shares in (.npy)")
    parser.add_argument("--cv", type=int, default=5, help="folds of the selector")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the long-call warning
    if args.what == "selector":
        _selector(args)
        return
    model, X, y = _model(args.workload, args.trees)
    X, y = X[: args.rows], y[: args.rows]
    if args.what == "local":
        explainer = RSquaredExplainer(model, progress=False)
        values = explainer(X, y).values
        times = [_cpu(lambda: explainer(X, y)) for _ in range(args.repeat)]
        print(f"per-row shares, {args.rows} rows, {args.trees} trees: CPU s {[round(t, 2) for t in times]}")
        if args.save:
            np.save(args.save, values)
        return
    results = {}
    for cost in args.pair_cost:
        explainer = RSquaredExplainer(model, progress=False)
        if cost == 0:
            explainer._set_engine(kernel="pairs")
        else:
            tuning = explainer._unit_caches[0].tuning
            explainer._set_engine(tuning=dataclasses.replace(tuning, pair_cost=cost))
        results[cost] = explainer.rsq(X, y)
        times = [_cpu(lambda e=explainer: e.rsq(X, y)) for _ in range(args.repeat)]
        print(f"rsq, {args.rows} rows, {args.trees} trees, pair_cost {cost:g}: CPU s {[round(t, 2) for t in times]}")
    first = results[args.pair_cost[0]]
    print("largest difference:", max(float(np.abs(r - first).max()) for r in results.values()))


def _selector(args) -> None:
    """``RSquaredSelector`` of a forest of ``--trees`` default trees with ``--cv`` folds: each fold's
    trees are decomposed on its held-out rows (200 of 1,000 at 5 folds)."""
    from sklearn.ensemble import RandomForestRegressor

    from shap_rsq import RSquaredSelector

    X, y = _data(WORKLOADS["rf-default-1k"][0])
    X, y = X[: args.rows], y[: args.rows]
    selector = RSquaredSelector(RandomForestRegressor(args.trees, random_state=0), cv=args.cv)
    seconds = _cpu(lambda: selector.fit(X, y))
    print(f"RSquaredSelector, {args.trees} default trees, cv={args.cv}, {len(y)} rows: CPU s {seconds:.1f}")


if __name__ == "__main__":
    main()
