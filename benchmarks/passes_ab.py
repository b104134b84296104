"""The conditioned recursion's passes alone, another commit's against this tree's, alternating in
one process on the same inputs (CPU seconds), with the largest relative difference of the values.

    python benchmarks/passes_ab.py 8a60ffe lgbm-31 --rounds 9

One ``rsq`` call of the workload (``bench.py``'s) records the arguments of every
``gradient_on_patterns`` call (each tree the recursion takes, with its sub-patterns already found);
both versions of ``kernels/recursion/conditioned_passes.py`` (``git show REF:...``, and this
tree's file) are then loaded as modules of their own and run on all of them, round by round in
alternating order.  Only the passes are timed: no routing, no sub-patterns, no LCA kernel.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
from bench import WORKLOADS

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.lca import unit as lca_unit

PASSES = "shap_rsq/kernels/recursion/conditioned_passes.py"
ROOT = Path(__file__).resolve().parent.parent


def load(name: str, source: str) -> types.ModuleType:
    """``source`` as a module of the recursion's package (its relative imports resolve there)."""
    module = types.ModuleType(f"shap_rsq.kernels.recursion.{name}")
    module.__package__ = "shap_rsq.kernels.recursion"
    sys.modules[module.__name__] = module  # dataclasses look their module up while it executes
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def recorded_calls(name: str) -> list[tuple]:
    """The arguments of every ``gradient_on_patterns`` call of one ``rsq`` of workload ``name``."""
    model, X, y = next(w for w in WORKLOADS if w.name == name).make()
    calls = []
    original = lca_unit.gradient_on_patterns

    def record(*args):
        calls.append(args)
        return original(*args)

    lca_unit.gradient_on_patterns = record
    try:
        RSquaredExplainer(model, progress=False).rsq(X, y)
    finally:
        lca_unit.gradient_on_patterns = original
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ref", help="the commit whose passes are the base")
    parser.add_argument("workload", nargs="?", default="lgbm-31")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    base_source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{args.ref}:{PASSES}"], capture_output=True, text=True, check=True
    ).stdout
    sides = {"base": load("_base_passes", base_source), "new": load("_new_passes", (ROOT / PASSES).read_text())}
    calls = recorded_calls(args.workload)
    times: dict[str, list[float]] = {side: [] for side in sides}
    values: dict[str, list[np.ndarray]] = {}
    for r in range(args.rounds):
        for side in sorted(sides, reverse=r % 2 == 1):
            start = time.process_time()
            values[side] = [sides[side].gradient_on_patterns(*call) for call in calls]
            times[side].append(time.process_time() - start)
    pairs = zip(values["base"], values["new"], strict=True)
    moved = max((float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300)) for a, b in pairs), default=0.0)
    base, new = (float(np.median(times[side])) for side in sides)
    print(f"{args.workload}: {len(calls)} trees, {args.rounds} rounds")
    for side in sides:
        print(f"  {side}: " + " ".join(f"{t:.3f}" for t in times[side]))
    print(f"base {base:.3f} s, new {new:.3f} s (medians): base / new {base / new:.3f}; largest move {moved:.1e}")


if __name__ == "__main__":
    main()
