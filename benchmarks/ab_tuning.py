"""``rsq`` (or per-row shares) under several values of one ``Tuning`` field, alternating in one
process on reused explainers (CPU time), beside TreeSHAP's ``shap_values`` on the same model, with
the largest relative difference of the results.

    python benchmarks/ab_tuning.py xgb-d6 side_block_elements 131072 524288 --rounds 3
    python benchmarks/ab_tuning.py xgb-12-10k side_block_elements 131072 524288 --trees 4 6 --rounds 2
    python benchmarks/ab_tuning.py xgb-p100-d6 level_work 3e5 1e12 --local

Workloads are those of ``ab_functions.py`` (``bench.py``'s, ``deep.py``'s with ``--trees``).  Each
value gets its own explainer, called once before the timing so that its plans are compiled.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings

import numpy as np
import shap
from ab_functions import _model

from shap_rsq import RSquaredExplainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload")
    parser.add_argument("field")
    parser.add_argument("values", nargs="+", type=float)
    parser.add_argument("--trees", type=int, nargs=2, default=None, metavar=("A", "B"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--local", action="store_true", help="per-row shares (explainer(X, y)) instead of rsq")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the long-call warning
    model, X, y = _model(args.workload, tuple(args.trees) if args.trees else None)
    calls = {}
    for value in args.values:
        explainer = RSquaredExplainer(model, progress=False)
        tuning = explainer._unit_caches[0].tuning
        kind = type(getattr(tuning, args.field))
        explainer._set_engine(tuning=dataclasses.replace(tuning, **{args.field: kind(value)}))
        calls[value] = (lambda e=explainer: e(X, y).values) if args.local else (lambda e=explainer: e.rsq(X, y))
        calls[value]()
    tree_explainer = shap.TreeExplainer(model)
    times: dict[float, list[float]] = {value: [] for value in args.values}
    reference: list[float] = []
    results = {}
    for r in range(args.rounds):
        for value in args.values if r % 2 == 0 else args.values[::-1]:
            start = time.process_time()
            results[value] = np.asarray(calls[value]())
            times[value].append(time.process_time() - start)
        start = time.process_time()
        tree_explainer.shap_values(X)
        reference.append(time.process_time() - start)
        print({value: round(t[-1], 3) for value, t in times.items()}, f"TreeSHAP {reference[-1]:.3f}", flush=True)
    first = results[args.values[0]]
    tree_shap = float(np.median(reference))
    for value in args.values:
        median = float(np.median(times[value]))
        gap = np.abs(results[value] - first).max() / np.abs(first).max()
        print(
            f"{args.field}={value:g}: {median:.3f} CPU s, {median / tree_shap:.2f}x TreeSHAP ({tree_shap:.3f} s), "
            f"largest relative difference {gap:.1e}"
        )


if __name__ == "__main__":
    main()
