"""Deep trees: time and peak memory of ``rsq`` against shap's TreeSHAP on the same rows.

Each workload runs in its own process (so that its peak resident memory is its own): the model
is fitted, TreeSHAP's ``shap_values`` and ``RSquaredExplainer.rsq`` are timed side by side
(``--repeat`` times each, medians), the efficiency identity is checked, and one markdown row is
printed.  Data: ``n`` rows of ``p = 20`` standard normal features, a nonlinear target.

    python benchmarks/deep.py                 # the depth sweep (slow: fully grown trees last)
    python benchmarks/deep.py rf-10 lgbm-255  # chosen workloads
    python benchmarks/deep.py --list
    python benchmarks/deep.py --estimate rf-full-30   # the progress bar's time estimate only
    python benchmarks/deep.py --jobs 2 xgb-12-10k    # also rsq with 2 worker processes
    python benchmarks/deep.py --cpu --local tree-full-p10 rf-full-p10   # CPU seconds, per-row shares too
    python benchmarks/deep.py --cpu --kernel lca tree-full-p10          # rsq forced to the LCA kernel

Workloads ending in ``-p10`` keep the first 10 of the 20 features (the target reads only the first
five): trees on 10 players, which take their game on every subset (``SubsetUnit``).

With ``--jobs N`` a fresh explainer with ``n_jobs=N`` is timed as well (its worker pool started
and the library imported in it before the timing, its plans compiled inside it), on the hardware
TreeSHAP uses (the booster's threads), and its shares are checked equal to the one-core ones.
Each worker holds its own plans within ``memory_budget`` (``--budget``, default 2 GiB): a tree
whose plan takes half the budget runs in one process.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

P = 20


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.5 * X[:, 4] ** 2 + rng.normal(scale=0.3, size=n)
    return X, y


def _sklearn_forest(trees: int, **kwargs):
    from sklearn.ensemble import RandomForestRegressor

    return RandomForestRegressor(trees, random_state=0, n_jobs=1, **kwargs)


def _sklearn_tree(**kwargs):
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(random_state=0, **kwargs)


def _lightgbm(trees: int, leaves: int):
    import lightgbm

    return lightgbm.LGBMRegressor(n_estimators=trees, num_leaves=leaves, verbose=-1, random_state=0, n_jobs=1)


def _xgboost(trees: int, depth: int):
    import xgboost

    return xgboost.XGBRegressor(n_estimators=trees, max_depth=depth, random_state=0, n_jobs=1)


# name -> (rows, model factory)
WORKLOADS = {
    **{f"rf-{d}": (2000, lambda d=d: _sklearn_forest(20, max_depth=d)) for d in (4, 6, 8, 10, 12)},
    "rf-full-30": (2000, lambda: _sklearn_forest(30)),
    "rf-default-1k": (1000, lambda: _sklearn_forest(100)),  # RandomForestRegressor() at its defaults
    "tree-full": (2000, lambda: _sklearn_tree()),
    "tree-full-500": (500, lambda: _sklearn_tree()),
    "tree-leaf5": (2000, lambda: _sklearn_tree(min_samples_leaf=5)),
    **{f"lgbm-{leaves}": (2000, lambda leaves=leaves: _lightgbm(20, leaves)) for leaves in (31, 63, 127, 255)},
    **{f"xgb-{d}": (2000, lambda d=d: _xgboost(20, d)) for d in (4, 6, 8, 10, 12)},
    "rf-10-10k": (10000, lambda: _sklearn_forest(20, max_depth=10)),
    "lgbm-255-10k": (10000, lambda: _lightgbm(20, 255)),
    "xgb-12-10k": (10000, lambda: _xgboost(20, 12)),
    "tree-full-p10": (2000, lambda: _sklearn_tree()),
    "rf-full-p10": (2000, lambda: _sklearn_forest(30)),
}


def _columns(name: str) -> int:
    """Features a workload keeps: 10 for the ``-p10`` ones, else all ``P``."""
    return 10 if name.endswith("-p10") else P


def _shape(model) -> tuple[int, int]:
    """Most leaves and deepest tree of the fitted model, as our reader sees them."""
    from shap_rsq import RSquaredExplainer

    nodes = RSquaredExplainer(model).forest.nodes
    leaves = np.sum(nodes.is_leaf & (nodes.depth >= 0), axis=1)
    return int(leaves.max()), int(nodes.tree_depth.max())


def efficiency_gap(explainer, model, X, y, shares) -> float:
    """``|sum of shares - (R^2(model) - R^2(E f))|``: the shares add up to the R^2 the model gains
    over its constant mean prediction."""
    from sklearn.metrics import r2_score

    mean = explainer.forest.base_offset + explainer.forest.nodes.tree_mean.sum()
    identity = r2_score(y, model.predict(X)) - r2_score(y, np.full_like(y, mean))
    return float(abs(np.sum(shares) - identity))


def run_one(
    name: str, repeat: int, jobs: int = 1, budget: float = 2.0, kernel: str = "auto", cpu: bool = False,
    local: bool = False,
) -> dict:  # fmt: skip
    import shap

    from shap_rsq import RSquaredExplainer
    from shap_rsq.kernels.interactions.subset_values import SubsetUnit
    from shap_rsq.kernels.lca.hybrid import HybridUnit

    clock = time.process_time if cpu else time.perf_counter
    n, factory = WORKLOADS[name]
    X, y = _data(n)
    X = X[:, : _columns(name)]
    model = factory().fit(X, y)
    shap_times, our_times, local_times = [], [], []
    for _ in range(repeat):
        start = clock()
        shap.TreeExplainer(model).shap_values(X)
        shap_times.append(clock() - start)
        # fresh: plans compiled inside the timing
        explainer = RSquaredExplainer(model, memory_budget=budget)._set_engine(kernel=kernel)
        start = clock()
        shares = explainer.rsq(X, y)
        our_times.append(clock() - start)
        if local:
            fresh = RSquaredExplainer(model, memory_budget=budget)._set_engine(kernel=kernel)
            start = clock()
            per_row = fresh(X, y).values
            local_times.append(clock() - start)
            assert np.allclose(per_row.sum(axis=0), shares, atol=1e-10)
    jobs_time, jobs_gap = float("nan"), 0.0
    if jobs > 1:
        import importlib

        from joblib import Parallel, delayed

        # start the worker pool and import the library in it: plans are still compiled inside the timing
        Parallel(n_jobs=jobs)(delayed(importlib.import_module)("shap_rsq.engine.run") for _ in range(jobs))
        times = []
        with _TreePeak() as tree_peak:
            for _ in range(repeat):
                parallel = RSquaredExplainer(model, n_jobs=jobs, memory_budget=budget)
                start = time.perf_counter()
                spread = parallel.rsq(X, y)
                times.append(time.perf_counter() - start)
        jobs_time, jobs_gap = statistics.median(times), float(np.max(np.abs(spread - shares)))
    units = explainer._units.units()
    leaves, depth = _shape(model)
    return {
        "name": name,
        "n": n,
        "leaves": leaves,
        "depth": depth,
        "rsq": statistics.median(our_times),
        "treeshap": statistics.median(shap_times),
        "rsq_jobs": jobs_time,
        "jobs_peak_gib": tree_peak.peak / 2**30 if jobs > 1 else float("nan"),
        "jobs_gap": jobs_gap,
        "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "efficiency_gap": efficiency_gap(explainer, model, X, y, shares),
        # trees with nodes given to the per-pair kernel, and trees compiled as several plans
        "pair_trees": sum(int(isinstance(u, HybridUnit) and u.dense) for u in units),
        "piece_trees": sum(int(isinstance(u, HybridUnit) and u.pieces.max() > 0) for u in units),
        "trees": len(units),
        "subset_trees": sum(len(u.trees) for u in units if isinstance(u, SubsetUnit)),
        "local": statistics.median(local_times) if local else float("nan"),
    }


class _TreePeak:
    """Peak resident memory of this process and its worker processes together, sampled every
    0.2 s while the block runs (the caller's own peak misses the workers' plans and kernels)."""

    def __enter__(self):
        import threading

        import psutil

        self.peak, self._stop = 0, threading.Event()
        me = psutil.Process()

        def watch():
            while not self._stop.is_set():
                try:
                    rss = me.memory_info().rss + sum(c.memory_info().rss for c in me.children(recursive=True))
                except psutil.Error:
                    continue
                self.peak = max(self.peak, rss)
                self._stop.wait(0.2)

        self._thread = threading.Thread(target=watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def estimate(name: str) -> str:
    """The progress bar's time estimate for ``rsq`` on a workload, without running it."""
    from shap_rsq import RSquaredExplainer
    from shap_rsq.engine.estimates import estimated_seconds

    n, factory = WORKLOADS[name]
    X, y = _data(n)
    X = X[:, : _columns(name)]
    explainer = RSquaredExplainer(factory().fit(X, y))
    seconds = estimated_seconds(explainer._units.units(), n, explainer._tuning)
    return f"{name}: estimated {seconds:.1f} s ({seconds / 60:.1f} min) on one core"


def versions() -> str:
    import importlib

    names = ["numpy", "scipy", "sklearn", "shap", "lightgbm", "xgboost"]
    return ", ".join(f"{name} {importlib.import_module(name).__version__}" for name in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per workload")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--estimate", action="store_true", help="print the time estimates only")
    parser.add_argument("--jobs", type=int, default=1, help="also time rsq with this many worker processes")
    parser.add_argument("--budget", type=float, default=2.0, help="the explainers' memory_budget, GiB")
    parser.add_argument("--kernel", default="auto", help="force rsq's kernel (explainer._set_engine)")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds of this process, not wall time")
    parser.add_argument("--local", action="store_true", help="also time per-row shares explainer(X, y)")
    args = parser.parse_args()
    if args.list:
        print("\n".join(WORKLOADS))
        return
    if args.estimate:
        for name in args.workloads:
            print(estimate(name), flush=True)
        return
    if args.one:
        print(json.dumps(run_one(args.one, args.repeat, args.jobs, args.budget, args.kernel, args.cpu, args.local)))
        return
    print(versions())
    columns = ["workload", "n", "leaves", "depth", "pair / piece trees", "rsq (s)", "TreeSHAP (s)", "ratio"]
    if args.jobs > 1:
        columns += [f"rsq, {args.jobs} jobs (s)", f"{args.jobs} jobs / TreeSHAP", "peak RSS with workers (GiB)"]
    if args.local:
        columns += ["per-row (s)", "per-row / TreeSHAP"]
    columns += ["subset trees", "peak RSS (GiB)"]
    print("| " + " | ".join([*columns, "efficiency gap"]) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name in args.workloads:
        command = [sys.executable, __file__, "--one", name, "--repeat", str(args.repeat), "--jobs", str(args.jobs)]
        command += ["--budget", str(args.budget), "--kernel", args.kernel]
        command += (["--cpu"] if args.cpu else []) + (["--local"] if args.local else [])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, check=True)
        except subprocess.TimeoutExpired:
            print(f"| {name} | | | | | > {args.timeout:.0f} | | | | |", flush=True)
            continue
        except subprocess.CalledProcessError as error:
            print(f"| {name} | failed: {error.stderr.strip().splitlines()[-1]} |", flush=True)
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        if r["jobs_gap"] > 1e-12:
            print(f"| {name} | {args.jobs} jobs differ from one core by {r['jobs_gap']:.1e} |", flush=True)
        parallel = (
            f"| {r['rsq_jobs']:.2f} | {r['rsq_jobs'] / r['treeshap']:.1f}x | {r['jobs_peak_gib']:.2f} "
            if args.jobs > 1
            else ""
        )
        per_row = f"| {r['local']:.2f} | {r['local'] / r['treeshap']:.1f}x " if args.local else ""
        print(
            f"| {r['name']} | {r['n']} | {r['leaves']} | {r['depth']} "
            f"| {r['pair_trees']}, {r['piece_trees']} of {r['trees']} "
            f"| {r['rsq']:.2f} | {r['treeshap']:.3f} | {r['rsq'] / r['treeshap']:.1f}x {parallel}{per_row}"
            f"| {r['subset_trees']} | {r['peak_gib']:.2f} "
            f"| {r['efficiency_gap']:.1e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
