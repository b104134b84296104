"""Two worker processes: blocks of trees weighed by estimated seconds against the LCA measure.

``engine.run`` cuts a forest into blocks of about equal weight and hands them to the workers
costliest first.  The weight was ``unit.work`` (the LCA kernel's items x quadrature nodes, or
its compiled plan's count), which misprices the trees the conditioned recursion takes; it is now
each unit's estimated seconds (``run._unit_weight``).  This script times both weights in one
process, alternating, on the same model and rows (the old one restored by swapping
``run._unit_weight``: the blocks are cut in this process, so the workers run the same code):

* ``cold``    ``RSquaredExplainer(model, n_jobs=2).rsq(X, y)`` with a new explainer (plans
              compiled in the workers), wall seconds;
* ``reused``  the same call on an explainer kept per weight (plans compiled, balanced by what
              they count), wall seconds;
* ``one job`` a reused explainer on one job, for the speed-up.

The global values do not depend on the blocks (each unit's sum is added in the order of the
trees), which the script checks.  Medians of ``--rounds`` rounds.

    python benchmarks/block_balance.py lgbm-31 --rounds 5
    python benchmarks/block_balance.py xgb-p100-d8 --rounds 3     # local.py's workloads too
"""

from __future__ import annotations

import argparse
import time

import bench
import local
import numpy as np

from shap_rsq import RSquaredExplainer
from shap_rsq.engine import run


def _make(name: str):
    for workload in bench.WORKLOADS:
        if workload.name == name:
            return workload.make()
    factory, p = local.WORKLOADS[name]
    X, y = local._data(1000, p)
    return factory().fit(X, y), X, y


def _lca_measure(unit, n_rows: int, local_values: bool, tuning) -> float:
    """The weight before: the LCA kernel's measure, its compiled count once the plan exists."""
    plan = getattr(unit, "_plan", None)
    return float(unit.work if plan is None else plan.node_evaluations)


def _wall(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    model, X, y = _make(args.workload)
    weights = {"seconds": run._unit_weight, "lca measure": _lca_measure}
    expected = RSquaredExplainer(model, progress=False).rsq(X, y)
    RSquaredExplainer(model, progress=False, n_jobs=2).rsq(X[:100], y[:100])  # the pool started
    one = RSquaredExplainer(model, progress=False)
    one.rsq(X, y)
    reused = {}
    for name, weight in weights.items():
        run._unit_weight = weight
        reused[name] = RSquaredExplainer(model, progress=False, n_jobs=2)
        np.testing.assert_allclose(reused[name].rsq(X, y), expected, rtol=1e-12, atol=1e-15)
    times: dict[str, list] = {name: [] for name in weights}
    single = []
    for _ in range(args.rounds):
        single.append(_wall(lambda: one.rsq(X, y)))
        for name, weight in weights.items():
            run._unit_weight = weight
            cold = _wall(lambda: RSquaredExplainer(model, progress=False, n_jobs=2).rsq(X, y))
            again = _wall(lambda e=reused[name]: e.rsq(X, y))
            times[name].append((cold, again))
    run._unit_weight = weights["seconds"]
    print(f"{args.workload}: one job, reused: {np.median(single):.2f} s (median of {args.rounds})")
    print("| weight | two jobs, cold (s) | two jobs, reused (s) | one job / two jobs, reused |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        cold, again = np.median(np.array(values), axis=0)
        print(f"| {name} | {cold:.2f} | {again:.2f} | {np.median(single) / again:.2f}x |")
    for name, values in times.items():
        print(name, "rounds (cold, reused):", [(round(a, 2), round(b, 2)) for a, b in values])


if __name__ == "__main__":
    main()
