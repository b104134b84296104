"""One core, two worker processes and two threads of one process, alternating on reused explainers.

    python benchmarks/threads.py rf-10                  # rsq on a deep.py workload
    python benchmarks/threads.py xgb-d8 --per-row       # per-row shares on a local.py workload
    python benchmarks/threads.py xgb-10 --repeat 3

Fits the workload once, times shap's ``TreeExplainer.shap_values`` on the same rows, then, for
each mode, ``rsq`` (or ``explainer(X, y)``) on an explainer made for that mode and warmed by one
untimed call (plans compiled, worker pool started): ``n_jobs=1``; ``n_jobs=2`` (worker
processes); ``n_jobs=2`` under ``joblib.parallel_config(backend="threading")``.  The modes
alternate call by call, so that the machine's drift falls on all three alike; medians are
printed, and each mode's largest difference from the one-core values.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import warnings

import numpy as np

MODES = ("one core", "2 processes", "2 threads")


def _workload(name: str):
    import deep
    import local

    if name in deep.WORKLOADS:
        n, factory = deep.WORKLOADS[name]
        X, y = deep._data(n)
    else:
        X, y = local._data(1000)
        factory = local.WORKLOADS[name]
    return factory().fit(X, y), X, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload")
    parser.add_argument("--per-row", action="store_true")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import joblib
    import shap

    from shap_rsq import RSquaredExplainer

    model, X, y = _workload(args.workload)
    start = time.perf_counter()
    shap.TreeExplainer(model).shap_values(X)
    treeshap = time.perf_counter() - start
    explainers = {mode: RSquaredExplainer(model, n_jobs=1 if mode == "one core" else 2) for mode in MODES}

    def call(mode: str) -> np.ndarray:
        threads = joblib.parallel_config(backend="threading") if mode == "2 threads" else contextlib.nullcontext()
        with threads:
            if args.per_row:
                return explainers[mode](X, y).values
            return np.asarray(explainers[mode].rsq(X, y))

    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    values = {}
    for repeat in range(args.repeat + 1):  # the first round warms every explainer
        for mode in MODES:
            start = time.perf_counter()
            values[mode] = call(mode)
            if repeat:
                times[mode].append(time.perf_counter() - start)
    what = "per-row shares" if args.per_row else "rsq"
    print(f"{args.workload}, {len(y)} rows, {what}; TreeSHAP {treeshap:.2f} s")
    for mode in MODES:
        median = statistics.median(times[mode])
        gap = np.abs(values[mode] - values["one core"]).max()
        print(f"  {mode}: median {median:.2f} s ({median / treeshap:.1f}x TreeSHAP), largest difference {gap:.1e}")


if __name__ == "__main__":
    main()
