"""Per-row shares of R² (``explainer(X, y)``) against ``rsq`` and shap's TreeSHAP, in one process.

For each workload: the model is fitted once; then, on the same rows, medians of ``--repeat`` runs of

* ``rsq``       ``RSquaredExplainer(model).rsq(X, y)`` on a reused explainer (model read once),
* ``per row``   ``explainer(X, y)`` on the same explainer (per-row shares, a shap.Explanation),
* TreeSHAP      ``shap.TreeExplainer(model).shap_values(X)`` (shap's C++, the model's threads).

Every run also checks the efficiency identity: per-row shares summed over rows equal ``rsq``.
With ``--jobs N`` per-row shares are also timed with ``n_jobs=N`` (worker processes, pool started
and trees compiled before timing) and checked equal to the single-process values.

    python benchmarks/local.py                       # every workload, n = 1000
    python benchmarks/local.py --rows 10000 xgb-d6
    python benchmarks/local.py --jobs 2 xgb-d6 rf-d6
    python benchmarks/local.py --jobs 2 xgb-p100-d6 xgb-p100-d8 rf-p100-d6 rf-p100-d8   # issue 58's
    python benchmarks/local.py --cpu xgb-p100-d8      # CPU seconds, for a machine other jobs share
"""

from __future__ import annotations

import argparse
import time
from importlib import metadata

import numpy as np
import shap
from sklearn.ensemble import RandomForestRegressor

from shap_rsq import RSquaredExplainer


def _data(n: int, p: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.sin(X[:, 0]) * X[:, 1] + X[:, 2] ** 2 + 0.5 * X[:, 3] * X[:, 4] + rng.normal(scale=0.5, size=n)
    return X, y


def _xgboost(depth: int, trees: int | None = None):
    import xgboost

    trees = trees or (300 if depth <= 6 else 100)
    return xgboost.XGBRegressor(n_estimators=trees, max_depth=depth, learning_rate=0.05)


def _forest(depth: int):
    return RandomForestRegressor(100, max_depth=depth, random_state=0)


# name: (model factory, features); the p100 workloads are speed issue 58's (300 XGBoost trees at every depth)
WORKLOADS = {
    **{f"xgb-d{d}": ((lambda d=d: _xgboost(d)), 20) for d in (4, 6, 8)},
    **{f"rf-d{d}": ((lambda d=d: _forest(d)), 20) for d in (4, 6, 8)},
    **{f"xgb-p100-d{d}": ((lambda d=d: _xgboost(d, 300)), 100) for d in (6, 8)},
    **{f"rf-p100-d{d}": ((lambda d=d: _forest(d)), 100) for d in (6, 8)},
}


def _median_time(call, repeat: int, clock=time.perf_counter) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = clock()
        result = call()
        times.append(clock() - start)
    return float(np.median(times)), result


def run(name: str, n: int, repeat: int, jobs: int = 1, cpu: bool = False) -> dict:
    factory, p = WORKLOADS[name]
    X, y = _data(n, p)
    model = factory().fit(X, y)
    explainer = RSquaredExplainer(model)
    explainer.rsq(X, y)  # read and compile once: both timings below are of a reused explainer
    # process time: this process's CPU seconds, TreeSHAP's threads included (not worker processes)
    clock = time.process_time if cpu else time.perf_counter
    rsq_time, shares = _median_time(lambda: explainer.rsq(X, y), repeat, clock)
    local_time, explanation = _median_time(lambda: explainer(X, y), repeat, clock)
    shap_time, _ = _median_time(lambda: shap.TreeExplainer(model).shap_values(X), repeat, clock)
    treeshap_time = shap_time
    gap = float(np.max(np.abs(explanation.values.sum(0) - shares)))
    jobs_time = float("nan")
    if jobs > 1:
        if cpu:  # the jobs column is wall time: against TreeSHAP's wall time
            shap_time, _ = _median_time(lambda: shap.TreeExplainer(model).shap_values(X), repeat)
        parallel = RSquaredExplainer(model, n_jobs=jobs)
        parallel(X, y)  # start the worker pool and compile in the workers once
        jobs_time, spread = _median_time(lambda: parallel(X, y), repeat)
        gap = max(gap, float(np.max(np.abs(spread.values - explanation.values))))
    return {
        "workload": name,
        "rows": n,
        "rsq": rsq_time,
        "per_row": local_time,
        "treeshap": treeshap_time,
        "per_row/rsq": local_time / rsq_time,
        "per_row/treeshap": local_time / treeshap_time,
        "per_row_jobs": jobs_time,
        "per_row_jobs/treeshap": jobs_time / shap_time,
        "efficiency gap": gap,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD", help=f"any of {', '.join(WORKLOADS)} (default all)")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="also time per-row shares with n_jobs=JOBS")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time the one-process columns in CPU seconds (TreeSHAP's threads summed), steadier on a shared "
        "machine; the jobs column stays wall time, against TreeSHAP's wall time",
    )
    args = parser.parse_args()
    unknown = sorted(set(args.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    versions = {name: metadata.version(name) for name in ("shap-rsq", "shap", "xgboost", "scikit-learn", "numpy")}
    print("versions:", ", ".join(f"{k} {v}" for k, v in versions.items()))
    if args.cpu:
        print("rsq, per row and TreeSHAP in CPU seconds of this process; the jobs column in wall seconds")
    jobs = f" {args.jobs} jobs" if args.jobs > 1 else ""
    extra = f" per row,{jobs} (s) | per row{jobs} / TreeSHAP |" if jobs else ""
    print(f"| workload | rows | rsq (s) | per row (s) | TreeSHAP (s) | per row / rsq | per row / TreeSHAP |{extra}")
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if jobs else ""))
    for name in args.workloads or list(WORKLOADS):
        r = run(name, args.rows, args.repeat, args.jobs, args.cpu)
        assert r["efficiency gap"] < 1e-9, r
        extra = f" {r['per_row_jobs']:.2f} | {r['per_row_jobs/treeshap']:.1f}x |" if jobs else ""
        print(
            f"| {r['workload']} | {r['rows']} | {r['rsq']:.2f} | {r['per_row']:.2f} | {r['treeshap']:.2f} "
            f"| {r['per_row/rsq']:.1f}x | {r['per_row/treeshap']:.1f}x |{extra}",
            flush=True,
        )


if __name__ == "__main__":
    main()
