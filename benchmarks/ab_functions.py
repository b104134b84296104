"""``rsq`` with some functions of the global LCA path taken from another commit, against this
tree's, alternating in one process on a reused explainer (CPU time), with the largest relative
difference of the shares.

    python benchmarks/ab_functions.py main depth-8 --rounds 3
    python benchmarks/ab_functions.py main xgb-12-10k --trees 4 5 --rounds 2

The functions listed in ``SWAPS`` are read from ``git show REF:path`` and executed in their
module's namespace, so both sides run on the same plans, data and machine load.  Workloads are
``bench.py``'s (``xgb-d6``, ``depth-N``) or ``deep.py``'s (``xgb-12-10k``: ``--trees`` keeps a
slice of the booster).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import textwrap
import time
import warnings

import numpy as np

from shap_rsq import RSquaredExplainer

SWAPS = [
    ("shap_rsq.kernels.lca.global_values", "weighted_gradient"),
    ("shap_rsq.kernels.lca.global_values", "_side_sums"),
    ("shap_rsq.kernels.batching.cells", "Cells.entry_reader"),
]


def _function_at(ref: str, module: str, qualified: str):
    path = module.replace(".", "/") + ".py"
    source = subprocess.run(["git", "show", f"{ref}:{path}"], capture_output=True, text=True, check=True).stdout
    body, node = ast.parse(source).body, None
    for part in qualified.split("."):
        node = next(n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
        body = node.body
    namespace = dict(vars(importlib.import_module(module)))
    exec(textwrap.dedent(ast.get_source_segment(source, node)), namespace)
    return namespace[qualified.split(".")[-1]]


def _owner(module: str, qualified: str):
    owner = importlib.import_module(module)
    for part in qualified.split(".")[:-1]:
        owner = getattr(owner, part)
    return owner, qualified.split(".")[-1]


def _model(name: str, trees: tuple[int, int] | None):
    if name in ("xgb-12-10k",):
        from deep import WORKLOADS, _data

        n, factory = WORKLOADS[name]
        X, y = _data(n)
        model = factory().fit(X, y).get_booster()
        return (model[trees[0] : trees[1]] if trees else model), X, y
    from bench import WORKLOADS

    return next(w for w in WORKLOADS if w.name == name).make()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ref")
    parser.add_argument("workload")
    parser.add_argument("--trees", type=int, nargs=2, default=None, metavar=("A", "B"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the long-call warning
    sides = {"before": {}, "now": {}}
    for module, qualified in SWAPS:
        owner, name = _owner(module, qualified)
        sides["now"][(owner, name)] = getattr(owner, name)
        sides["before"][(owner, name)] = _function_at(args.ref, module, qualified)
    model, X, y = _model(args.workload, args.trees)
    explainer = RSquaredExplainer(model)
    explainer.rsq(X, y)  # plans compiled before the timing
    times: dict[str, list[float]] = {"before": [], "now": []}
    shares = {}
    for r in range(args.rounds):
        for label in ("before", "now") if r % 2 == 0 else ("now", "before"):
            for (owner, name), function in sides[label].items():
                setattr(owner, name, function)
            start = time.process_time()
            shares[label] = np.asarray(explainer.rsq(X, y))
            times[label].append(time.process_time() - start)
            print(f"{label}: {times[label][-1]:.2f} s", flush=True)
    gap = np.abs(shares["before"] - shares["now"]).max() / np.abs(shares["before"]).max()
    medians = {label: float(np.median(t)) for label, t in times.items()}
    print(
        f"{args.workload}: CPU s {medians}, before / now {medians['before'] / medians['now']:.2f}x, "
        f"largest relative difference {gap:.1e}"
    )


if __name__ == "__main__":
    main()
