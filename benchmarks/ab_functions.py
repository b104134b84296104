"""``rsq`` (or per-row shares) with some functions taken from another commit, against this tree's,
alternating in one process on a reused explainer (CPU time), beside TreeSHAP, with the largest
relative difference of the results.

    python benchmarks/ab_functions.py main depth-8 --rounds 3
    python benchmarks/ab_functions.py main xgb-12-10k --trees 4 5 --rounds 2
    python benchmarks/ab_functions.py HEAD~1 xgb-p100-d6 --local --rounds 5 \\
        --swap shap_rsq.kernels.lca.row_values:pattern_gradients

The functions (``--swap module:qualified``, by default the global LCA path's ``SWAPS``) are read
from ``git show REF:path`` and executed in one namespace per module, so that the old functions
call each other; a module that imported a swapped function by name has it swapped too.  Both
sides run on the same plans, data and machine load.  Workloads are ``bench.py``'s (``xgb-d6``,
``depth-N``), ``deep.py``'s (``deep:NAME``, or ``xgb-12-10k``; ``--trees`` keeps a slice of an XGBoost booster) or
``local.py``'s (``xgb-p100-d6``, ``rf-p100-d8``, ... on their 1,000 rows), ``estimate_accuracy.py``'s
many rows (``rows:xgb-d4-400k``) and real data (``diamonds-lgbm``) or ``scale.py``'s (``scale:million``).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np

from shap_rsq import RSquaredExplainer

SWAPS = [
    "shap_rsq.kernels.lca.global_values:weighted_gradient",
    "shap_rsq.kernels.lca.global_values:_side_sums",
    "shap_rsq.kernels.batching.cells:Cells.entry_reader",
]


def _function_at(ref: str, module: str, qualified: str, namespace: dict | None = None):
    """``module``'s ``qualified`` function at ``ref``, executed in ``namespace`` (a copy of the
    module's own by default)."""
    path = module.replace(".", "/") + ".py"
    source = subprocess.run(["git", "show", f"{ref}:{path}"], capture_output=True, text=True, check=True).stdout
    body, node = ast.parse(source).body, None
    for part in qualified.split("."):
        node = next(n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
        body = node.body
    namespace = dict(vars(importlib.import_module(module))) if namespace is None else namespace
    exec(textwrap.dedent(ast.get_source_segment(source, node)), namespace)
    return namespace[qualified.split(".")[-1]]


def _owner(module: str, qualified: str):
    owner = importlib.import_module(module)
    for part in qualified.split(".")[:-1]:
        owner = getattr(owner, part)
    return owner, qualified.split(".")[-1]


def _model(name: str, trees: tuple[int, int] | None):
    if name.startswith("deep:") or name == "xgb-12-10k":  # --trees: trees A..B of an XGBoost booster
        from deep import WORKLOADS as DEEP
        from deep import _columns, _data

        name = name.removeprefix("deep:")
        n, factory = DEEP[name]
        X, y = _data(n)
        X = X[:, : _columns(name)]
        model = factory().fit(X, y)
        if trees:
            model = model.get_booster()[trees[0] : trees[1]]
        return model, X, y
    if name.startswith(("rows:", "scale:", "diamonds")):  # estimate_accuracy.py's many rows, scale.py's
        from estimate_accuracy import WORKLOADS as ESTIMATED

        return ESTIMATED[name].make()
    from local import WORKLOADS as LOCAL

    if name in LOCAL:
        from local import _data

        factory, p = LOCAL[name]
        X, y = _data(1000, p)
        return factory().fit(X, y), X, y
    from bench import WORKLOADS

    return next(w for w in WORKLOADS if w.name == name).make()


def _sides(ref: str, swaps: list[str]) -> dict[str, dict]:
    """For ``before`` and ``now``: the ``(owner, name) -> function`` to set."""
    sides: dict[str, dict] = {"before": {}, "now": {}}
    namespaces: dict[str, dict] = {}
    for swap in swaps:
        module, qualified = swap.split(":")
        owner, name = _owner(module, qualified)
        namespace = namespaces.setdefault(module, dict(vars(importlib.import_module(module))))
        sides["now"][(owner, name)] = getattr(owner, name)
        sides["before"][(owner, name)] = _function_at(ref, module, qualified, namespace)
    _link_old_namespaces(ref, namespaces, sides)
    for (owner, name), now in list(sides["now"].items()):
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("shap_rsq") and module is not owner:
                if getattr(module, name, None) is now:  # imported by name: swap that reference too
                    sides["now"][(module, name)] = now
                    sides["before"][(module, name)] = sides["before"][(owner, name)]
    return sides


def _link_old_namespaces(ref: str, namespaces: dict[str, dict], sides: dict[str, dict]) -> None:
    """Make the old functions call each other across modules: in each module's old namespace, a
    name that holds a swapped function, or that the module's source at ``ref`` imports by name
    from the package, is bound to the old function of that name (a function the module no longer
    imports, or one that changed its signature, would otherwise be the new one)."""
    old = {name: function for (owner, name), function in sides["before"].items()}
    new = {id(function): name for (owner, name), function in sides["now"].items()}
    for module, namespace in namespaces.items():
        path = module.replace(".", "/") + ".py"
        source = subprocess.run(["git", "show", f"{ref}:{path}"], capture_output=True, text=True, check=True).stdout
        imported = {
            alias.asname or alias.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.level > 0
            for alias in node.names
        }
        for key, value in list(namespace.items()):
            if id(value) in new:
                namespace[key] = old[new[id(value)]]
        for name in imported & old.keys():
            namespace[name] = old[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ref")
    parser.add_argument("workload")
    parser.add_argument("--trees", type=int, nargs=2, default=None, metavar=("A", "B"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--swap", action="append", metavar="MODULE:QUALIFIED", help=f"default: {SWAPS}")
    parser.add_argument("--local", action="store_true", help="per-row shares (explainer(X, y)) instead of rsq")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the long-call warning
    import shap

    model, X, y = _model(args.workload, tuple(args.trees) if args.trees else None)
    sides = _sides(args.ref, args.swap or SWAPS)
    explainer = RSquaredExplainer(model, progress=False)
    call = (lambda: explainer(X, y).values) if args.local else (lambda: explainer.rsq(X, y))
    call()  # plans compiled before the timing
    tree_explainer = shap.TreeExplainer(model)
    times: dict[str, list[float]] = {"before": [], "now": [], "TreeSHAP": []}
    results = {}
    for r in range(args.rounds):
        for label in ("before", "now") if r % 2 == 0 else ("now", "before"):
            for (owner, name), function in sides[label].items():
                setattr(owner, name, function)
            start = time.process_time()
            results[label] = np.asarray(call())
            times[label].append(time.process_time() - start)
        start = time.process_time()
        tree_explainer.shap_values(X)
        times["TreeSHAP"].append(time.process_time() - start)
        print({label: round(t[-1], 3) for label, t in times.items()}, flush=True)
    gap = np.abs(results["before"] - results["now"]).max() / np.abs(results["before"]).max()
    medians = {label: float(np.median(t)) for label, t in times.items()}
    print(
        f"{args.workload}: CPU s {medians}, before / now {medians['before'] / medians['now']:.3f}x, "
        f"/ TreeSHAP {medians['before'] / medians['TreeSHAP']:.2f}x -> {medians['now'] / medians['TreeSHAP']:.2f}x, "
        f"largest relative difference {gap:.1e}"
    )


if __name__ == "__main__":
    main()
