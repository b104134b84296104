"""Interaction shares of R² against ``rsq`` and shap's ``shap_interaction_values``, in one process.

python benchmarks/interactions.py            # the issue's workloads, the depth sweep and wide data
python benchmarks/interactions.py --quick    # fewer trees and rows (a smoke run)
python benchmarks/interactions.py --only sweep --depths 8 10 full --kernel pairs   # a path forced
python benchmarks/interactions.py --only sweep --depths 8 --features 20 100 --cpu   # wider data

Times are medians of wall-clock seconds (CPU seconds with ``--cpu``) over ``--repeat`` runs
(shap's interaction values once when they take over a minute).  The explainer is built and warmed
once per model, as a user who calls it repeatedly would see it; the first call (which compiles each
tree) is reported separately.
Memory of the wide run is the peak resident size of a fresh subprocess.
"""

from __future__ import annotations

import argparse
import platform
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
import shap
import sklearn
import xgboost
from sklearn.ensemble import RandomForestRegressor

import shap_rsq
from shap_rsq import RSquaredExplainer

CLOCK = time.perf_counter  # --cpu: time.process_time (CPU seconds of this process, for a loaded machine)


def _median_seconds(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = CLOCK()
        call()
        times.append(CLOCK() - start)
        if times[-1] > 60:
            break
    return float(np.median(times))


def _data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] * X[:, 1] + X[:, 2] + 0.5 * X[:, 3] * X[:, 4] + rng.normal(size=n)
    return X, y


KERNEL = "auto"  # --kernel: "pairs" forces the leaf pairs, "enumerate" every subset where it fits


def _row(name: str, model, X, y, repeat: int) -> dict:
    explainer = RSquaredExplainer(model)._set_engine(kernel=KERNEL)
    start = CLOCK()
    explainer.rsq_interactions(X, y)
    first = CLOCK() - start
    rsq = _median_seconds(lambda: explainer.rsq(X, y), repeat)
    matrix = _median_seconds(lambda: explainer.rsq_interactions(X, y), repeat)
    per_row = _median_seconds(lambda: explainer(X, y, interactions=True), 1)
    tree_explainer = shap.TreeExplainer(model)
    shap_time = _median_seconds(lambda: tree_explainer.shap_interaction_values(X), 1)
    return {
        "workload": name,
        "rsq": rsq,
        "matrix (first)": first,
        "matrix": matrix,
        "x rsq": matrix / rsq,
        "per-row": per_row,
        "shap_interaction_values": shap_time,
        "shap / matrix": shap_time / matrix,
    }


def _print(rows: list[dict]) -> None:
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        cells = [row[k] if isinstance(row[k], str) else f"{row[k]:.2f}" for k in keys]
        print("| " + " | ".join(cells) + " |")
    print()


def issue_workloads(quick: bool, repeat: int) -> None:
    n, trees = (300, 60) if quick else (1000, 300)
    X, y = _data(n, 100)
    rows = []
    for depth in (4, 6):
        model = xgboost.XGBRegressor(n_estimators=trees, max_depth=depth, learning_rate=0.1, n_jobs=1).fit(X, y)
        rows.append(_row(f"XGBoost depth {depth}, {trees} trees, n={n}, p=100", model, X, y, repeat))
    _print(rows)


def depth_sweep(quick: bool, repeat: int, depths=(4, 6, 8, 10, None), features=(10,)) -> None:
    n = 300  # a fully grown forest on 1,000 rows has 600 leaves a tree: its matrix takes many minutes
    rows = []
    for p in features:
        X, y = _data(n, p, seed=1)
        for depth in depths:
            model = RandomForestRegressor(n_estimators=10, max_depth=depth, random_state=0, n_jobs=1).fit(X, y)
            leaves = int(np.mean([e.get_n_leaves() for e in model.estimators_]))
            label = f"RF 10 trees, depth {depth or 'full'} ({leaves} leaves), n={n}, p={p}"
            rows.append(_row(label, model, X, y, repeat))
            if depth is None:
                break
    _print(rows)


_WIDE = """
import resource, time, tracemalloc, numpy as np
from sklearn.ensemble import RandomForestRegressor
from shap_rsq import RSquaredExplainer
rng = np.random.default_rng(0)
X = rng.normal(size=({n}, {p})).astype(np.float32)
y = X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(size={n})
model = RandomForestRegressor(100, max_depth=6, max_features=0.1, random_state=0, n_jobs=1).fit(X, y)
explainer = RSquaredExplainer(model)
tracemalloc.start()
start = time.perf_counter()
top = explainer.rsq_interactions(X, y, top_k=20)
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1]
resident = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(seconds, peak / 2**30, resident, top.feature_a[0], top.feature_b[0])
"""


def wide(quick: bool) -> None:
    n, p = (200, 2000) if quick else (300, 20000)
    out = subprocess.run([sys.executable, "-c", _WIDE.format(n=n, p=p)], capture_output=True, text=True, check=True)
    seconds, traced, resident, a, b = out.stdout.split()
    print(f"wide: n={n}, p={p}, random forest 100 trees depth 6, top_k=20: {float(seconds):.1f} s, ")
    print(
        f"peak of the call's traced allocations {float(traced):.3f} GiB, peak resident of the whole process "
        f"{float(resident):.2f} GiB (data, model and libraries included); strongest pair {a}-{b}"
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("issue", "sweep", "wide"))
    parser.add_argument("--depths", nargs="+", default=["4", "6", "8", "10", "full"], help="depths of the sweep")
    parser.add_argument("--features", nargs="+", type=int, default=[10], help="features of the sweep's data")
    parser.add_argument("--kernel", choices=("auto", "pairs", "enumerate"), default="auto")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds (run with one BLAS thread) instead of wall")
    args = parser.parse_args()
    global KERNEL, CLOCK
    KERNEL = args.kernel
    CLOCK = time.process_time if args.cpu else time.perf_counter
    warnings.simplefilter("ignore")
    versions = (
        f"shap-rsq {shap_rsq.__version__}, shap {shap.__version__}, xgboost {xgboost.__version__}, "
        f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, Python {platform.python_version()}"
    )
    print(versions, f"; max RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB\n")
    if args.only in (None, "issue"):
        issue_workloads(args.quick, args.repeat)
    if args.only in (None, "sweep"):
        depth_sweep(args.quick, args.repeat, [None if d == "full" else int(d) for d in args.depths], args.features)
    if args.only in (None, "wide"):
        wide(args.quick)


if __name__ == "__main__":
    main()
