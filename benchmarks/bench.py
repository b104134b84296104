"""Side-by-side timings: shap-rsq vs qshap (the paper authors' package) vs shap's TreeSHAP.

Every workload fits one model on one dataset and times, in this process, on the same data:

* ours     ``RSquaredExplainer(model).rsq(X, y)`` (construction included) on one core, after
           one such call on the model, as qshap is timed after its warm-up call (that first
           call is timed too, "first call": on the first workload of a run it also warms the
           process); ``rsq`` again on a reused explainer ("reused": the model already read
           and compiled); and end to end with ``n_jobs=2`` ("2 jobs": two worker processes,
           started once per session; the start is timed once and printed first)
* qshap    ``qshap.gazer(model).rsq(X, y)`` (optional ``bench`` extra; one core), after a
           warm-up call; our cold call is timed again before and after each of its calls
           ("ours beside qshap"), and "qshap / ours" is taken on those
* TreeSHAP ``shap.TreeExplainer(model).shap_values(X)`` (construction included).  For XGBoost,
           LightGBM and CatBoost shap calls the booster's own C++ TreeSHAP, which uses the
           model's threads (2 here), so TreeSHAP is compared with ours on 2 jobs.

Medians of ``--repeat`` runs.  qshap on deep XGBoost trees costs about half a second per tree
per 1000 rows; for those workloads it is timed on every k-th tree (a strided sample, so that
early and late trees are both represented) and scaled linearly (marked ``*``), unless
``--full`` is given.

    python benchmarks/bench.py                 # every workload
    python benchmarks/bench.py paper-b xgb-d6  # some of them
    python benchmarks/bench.py --list
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

import numpy as np

from shap_rsq import RSquaredExplainer


@dataclass
class Workload:
    name: str
    description: str
    make: Callable[[], tuple]  # -> (model, X, y)
    qshap_trees: int | None = None  # time qshap on this many leading trees and scale up
    targets: str = ""


def paper_data(model: str, n: int, p: int, sigma: float = 1.5, seed: int = 0):
    """The paper's simulation (section 5): Bernoulli features, models a, b, c."""
    rng = np.random.default_rng(seed)
    X = rng.binomial(1, 0.5, size=(n, p)).astype(float)
    X[:, 0] = rng.binomial(1, 0.6, n)
    X[:, 1] = rng.binomial(1, 0.7, n)
    X[:, 2] = rng.binomial(1, 0.5, n)
    x1, x2, x3 = X[:, 0], X[:, 1], X[:, 2]
    y = 4 * x1 - 5 * x2 + 6 * x3
    if model == "b":
        y += 3 * x1 * x2 - x1 * x3
    elif model == "c":
        y += 3 * x1 * x2 - x1 * x2 * x3
    return X, y + rng.normal(0, sigma, n)


def continuous_data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, :5] @ np.arange(1, 6) + np.sin(3 * X[:, 5]) + X[:, 6] * X[:, 7] + rng.normal(size=n)
    return X, y


def xgb(depth: int, trees: int, **kwargs):
    import xgboost

    return xgboost.XGBRegressor(n_estimators=trees, max_depth=depth, learning_rate=0.1, n_jobs=2, **kwargs)


def paper(model: str, n: int, p: int, depth: int, trees: int):
    def make():
        X, y = paper_data(model, n, p)
        return xgb(depth, trees).fit(X, y), X, y

    return make


def continuous_xgb(depth: int, trees: int, n: int = 1000, p: int = 100):
    def make():
        X, y = continuous_data(n, p)
        return xgb(depth, trees).fit(X, y), X, y

    return make


def lightgbm_31():
    import lightgbm

    X, y = continuous_data(1000, 100)
    return lightgbm.LGBMRegressor(n_estimators=300, num_leaves=31, verbose=-1, n_jobs=2).fit(X, y), X, y


def catboost_symmetric():
    import catboost

    X, y = continuous_data(10_000, 100)
    model = catboost.CatBoostRegressor(iterations=300, depth=6, verbose=0, allow_writing_files=False, thread_count=2)
    return model.fit(X, y), X, y


WORKLOADS = [
    Workload(
        "paper-a", "model a, n=1000, p=100, depth 1, 300 trees", paper("a", 1000, 100, 1, 300), targets=">=20x qshap"
    ),
    Workload(
        "paper-b",
        "model b, n=1000, p=100, depth 2, 300 trees (paper setting)",
        paper("b", 1000, 100, 2, 300),
        targets=">=20x qshap",
    ),
    Workload(
        "paper-c", "model c, n=1000, p=100, depth 3, 300 trees", paper("c", 1000, 100, 3, 300), targets=">=20x qshap"
    ),
    Workload(
        "paper-c-large",
        "model c, n=5000, p=500, depth 3, 500 trees",
        paper("c", 5000, 500, 3, 500),
        targets=">=20x qshap",
    ),
    Workload(
        "paper-b-1000",
        "model b, n=5000, p=500, depth 2, 1000 trees",
        paper("b", 5000, 500, 2, 1000),
        targets=">=20x qshap",
    ),
    Workload(
        "xgb-d6",
        "XGBoost depth 6, continuous, n=1000, p=100, 300 trees",
        continuous_xgb(6, 300),
        qshap_trees=20,
        targets=">=20x qshap, <=3x TreeSHAP",
    ),
    Workload(
        "lgbm-31",
        "LightGBM num_leaves=31, continuous, n=1000, p=100, 300 trees",
        lightgbm_31,
        targets=">=20x qshap",  # qshap timed on every tree: LightGBM's late trees cost far more than its first
    ),
    Workload(
        "catboost-d6", "CatBoost symmetric depth 6, n=10,000, p=100, 300 trees", catboost_symmetric, targets="<= qshap"
    ),
    *[
        Workload(
            f"depth-{d}",
            f"XGBoost depth {d}, continuous, n=1000, p=100, 100 trees",
            continuous_xgb(d, 100),
            qshap_trees=10 if d >= 5 else None,
            targets="<=3x TreeSHAP",
        )
        for d in range(1, 9)
    ],
]


def seconds(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def median_time(function: Callable[[], object], repeat: int) -> float:
    return float(np.median([seconds(function) for _ in range(repeat)]))


def sampled_trees(model, count: int):
    """An XGBRegressor holding every k-th tree of ``model`` (about ``count`` trees) and that number.

    qshap's cost per tree depends on the tree's shape, which changes along the boosting
    rounds, so a strided sample represents the whole model where the first trees would not.
    """
    import xgboost

    booster = model.get_booster()
    step = max(1, booster.num_boosted_rounds() // count)
    sample = xgboost.XGBRegressor()
    sample.load_model(bytearray(booster[::step].save_raw("ubj")))
    return sample, sample.get_booster().num_boosted_rounds()


def run(workload: Workload, repeat: int, full: bool) -> dict:
    import shap

    model, X, y = workload.make()
    reused = RSquaredExplainer(model)
    n_trees = reused.forest.n_trees

    def cold():
        return RSquaredExplainer(model).rsq(X, y)

    # the process's first call also pays for warming it (the OpenMP runtime's lookup, the heap's
    # first growth): timed on its own, and the cold calls after it are ``ours``, as qshap's are
    # timed after its warm-up call below
    first = seconds(cold)
    ours = median_time(cold, repeat)
    reused.rsq(X, y)
    ours_call = median_time(lambda: reused.rsq(X, y), repeat)
    start_pool()  # warm already unless qshap ran for longer than loky's idle timeout (300 s)
    ours_jobs = median_time(lambda: RSquaredExplainer(model, n_jobs=2).rsq(X, y), repeat)
    tree_shap = median_time(lambda: shap.TreeExplainer(model).shap_values(X), repeat)
    row = {
        "workload": workload.name,
        "description": workload.description,
        "ours_first": first,
        "ours": ours,
        "ours_call": ours_call,
        "ours_jobs": ours_jobs,
        "treeshap": tree_shap,
        "targets": workload.targets,
    }
    try:
        import qshap
    except ImportError:
        return row
    sampled = bool(workload.qshap_trees) and not full
    target, timed_trees = sampled_trees(model, workload.qshap_trees) if sampled else (model, n_trees)

    def qshap_rsq(model, X, y):
        return qshap.gazer(model).rsq(X, y, ncore=1, progress_bar=False)

    qshap_rsq(target, X[:50], y[:50])  # its first calls compile code (several seconds): time it warm
    # this machine's speed drifts by a fifth or more over minutes (the same call's CPU time in one
    # process moved 5.2-7.2 s): our cold call is timed again before and after each of qshap's
    # calls, and the ratio is taken on those
    beside, qshap_times = [seconds(cold)], []
    for _ in range(1 if sampled or repeat == 1 else min(repeat, 3)):
        qshap_times.append(seconds(lambda: qshap_rsq(target, X, y)))
        beside.append(seconds(cold))
    row["qshap"] = float(np.median(qshap_times)) * n_trees / timed_trees
    row["ours_beside_qshap"] = float(np.median(beside))
    row["qshap_scaled"] = sampled
    if not sampled:
        mine, theirs = RSquaredExplainer(model).rsq(X, y), np.asarray(qshap_rsq(model, X, y))
        row["max_diff_vs_qshap"] = float(np.max(np.abs(mine - theirs)))
    return row


def _import_engine() -> None:
    import shap_rsq.engine.run  # noqa: F401


def start_pool() -> float:
    """Start joblib's pool of two worker processes (if not running) with the engine imported in
    each; returns the time it took.  The first call with ``n_jobs=2`` in a session pays this."""
    from joblib import Parallel, delayed

    start = time.perf_counter()
    Parallel(n_jobs=2, prefer="processes")(delayed(_import_engine)() for _ in range(2))
    return time.perf_counter() - start


def sage_context() -> dict:
    """SAGE (sage-importance) on one small case: its time, and how far its R² shares are from ours."""
    import sage

    X, y = paper_data("b", 500, 10)
    model = xgb(2, 100).fit(X, y)
    ours_start = time.perf_counter()
    ours = RSquaredExplainer(model).rsq(X, y)
    ours_time = time.perf_counter() - ours_start
    start = time.perf_counter()
    imputer = sage.MarginalImputer(model, X[:128])
    values = sage.PermutationEstimator(imputer, "mse")(X, y, verbose=False, bar=False).values
    sage_time = time.perf_counter() - start
    shares = values / np.var(y)  # SAGE explains the drop in MSE; divided by var(y) it is a share of R²
    return {
        "workload": "sage-context",
        "description": "model b, n=500, p=10, depth 2, 100 trees",
        "ours": ours_time,
        "sage": sage_time,
        "sage_max_abs_diff": float(np.max(np.abs(shares - ours))),
        "ours_sum": float(ours.sum()),
        "sage_sum": float(shares.sum()),
    }


def environment() -> dict:
    versions = {}
    for package in (
        "shap-rsq",
        "shap",
        "qshap",
        "sage-importance",
        "numpy",
        "scipy",
        "scikit-learn",
        "xgboost",
        "lightgbm",
        "catboost",
    ):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"python": platform.python_version(), "cpu": cpu, "cores": os.cpu_count(), **versions}


def format_table(rows: list[dict]) -> str:
    lines = [
        "| workload | ours, first call (s) | ours (s) | ours, reused (s) | ours, 2 jobs (s) | qshap (s) "
        "| ours beside qshap (s) | TreeSHAP (s) | qshap / ours | ours (2 jobs) / TreeSHAP | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        q = row.get("qshap")
        q_text = "n/a" if q is None else f"{q:.3g}{'*' if row.get('qshap_scaled') else ''}"
        beside = "n/a" if q is None else f"{row['ours_beside_qshap']:.3g}"
        ratio = "n/a" if q is None else f"{q / row['ours_beside_qshap']:.1f}x"
        lines.append(
            f"| {row['workload']} | {row['ours_first']:.3g} | {row['ours']:.3g} | {row['ours_call']:.3g} | "
            f"{row['ours_jobs']:.3g} | {q_text} | {beside} | {row['treeshap']:.3g} | {ratio} | "
            f"{row['ours_jobs'] / row['treeshap']:.2f} | "
            f"{row['targets']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", help="names to run (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="time qshap on every tree, however long it takes")
    parser.add_argument("--json", help="also write the rows and environment to this file")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--sage", action="store_true", help="also time SAGE on one small case for context")
    args = parser.parse_args(argv)
    if args.list:
        for w in WORKLOADS:
            print(f"{w.name:15s} {w.description}")
        return 0
    chosen = [w for w in WORKLOADS if not args.workloads or w.name in args.workloads]
    pool_start = start_pool()
    print(f"worker pool start (paid once per session by the first call with n_jobs=2): {pool_start:.2f} s")
    rows = []
    for workload in chosen:
        rows.append(run(workload, args.repeat, args.full))
        print(format_table(rows[-1:]).splitlines()[-1], flush=True)
    env = {**environment(), "pool_start_seconds": pool_start}
    if args.sage:
        context = sage_context()
        print(
            f"\nSAGE context ({context['description']}): SAGE {context['sage']:.1f} s, ours {context['ours']:.3f} s; "
            f"largest share difference {context['sage_max_abs_diff']:.3f}; sums {context['sage_sum']:.3f} (SAGE) vs "
            f"{context['ours_sum']:.3f} (ours)"
        )
        rows.append(context)
    print()
    print(format_table([r for r in rows if "treeshap" in r]))
    print("\n* qshap timed on a strided sample of the trees and scaled linearly to the whole model.")
    print("environment:", json.dumps(env))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": rows, "environment": env}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
