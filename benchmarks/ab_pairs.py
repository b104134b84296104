"""The per-pair kernel against an earlier revision's, alternating in one process (CPU time).

On this noisy 2-core machine, runs in separate processes move by 20-30% from one to the next;
alternating the two kernels in one process, on one fitted fully grown tree, compares them under
the same load.  The earlier revision's ``shap_rsq/kernels/pairs.py`` is read with ``git show`` and
its ``pair_values`` swapped in for the current one (the rest of the engine is the current one).

    python benchmarks/ab_pairs.py --base fc8fac3 --rows 1000 --repeat 1
    python benchmarks/ab_pairs.py --base fc8fac3 --rows 500 --all-pairs   # every node through pairs
    python benchmarks/ab_pairs.py --base fc8fac3 --rows 500 --fit-rows 2000 --local 10
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from deep import _data  # the depth sweep's data

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.lca import hybrid as hybrid_tree


def _base_pair_values(revision: str):
    """``pair_values`` of the per-pair kernel at ``revision`` (``shap_rsq/kernels/lca/pairs.py``, or
    ``shap_rsq/kernels/pairs.py`` before the kernels had a folder per family), its imports made
    absolute and sent to where each name lives today."""
    root = os.path.join(os.path.dirname(__file__), "..")
    places = {"shap_rsq/kernels/lca/pairs.py": "shap_rsq.kernels.lca", "shap_rsq/kernels/pairs.py": "shap_rsq.kernels"}
    shown = {
        path: subprocess.run(["git", "show", f"{revision}:{path}"], cwd=root, capture_output=True, text=True)
        for path in places
    }
    found = [path for path, run in shown.items() if run.returncode == 0]
    if not found:
        raise SystemExit(f"no per-pair kernel at {revision}")
    package = places[found[0]]
    source = re.sub(
        r"^from (\.+)([\w.]*) import (.+)$", lambda m: _today(package, *m.groups()), shown[found[0]].stdout, flags=re.M
    )
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("base_pairs", file.name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.pair_values


# where the names an earlier per-pair kernel imported live today, when not where it found them
_HOMES = ("shap_rsq.kernels.quadrature", "shap_rsq.kernels.row_patterns", "shap_rsq.kernels.leaf_paths")


def _today(package: str, dots: str, module: str, names: str) -> str:
    """One relative import of a kernel at ``package``, as absolute imports of today's modules."""
    base = package.split(".")[: len(package.split(".")) - (len(dots) - 1)]
    lines = []
    for name in (n.strip() for n in names.split(",")):
        for home in (".".join(base + ([module] if module else [])), *_HOMES):
            try:
                if hasattr(importlib.import_module(home), name):
                    lines.append(f"from {home} import {name}")
                    break
            except ImportError:
                continue
        else:
            raise SystemExit(f"{name} (from {dots}{module}) is nowhere today")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the earlier revision, e.g. fc8fac3")
    parser.add_argument("--rows", type=int, default=500, help="rows the tree is fitted on and decomposed on")
    parser.add_argument("--fit-rows", type=int, help="rows the tree is fitted on (default: --rows)")
    parser.add_argument("--local", type=int, metavar="N", help="per-row shares of the first N rows instead of rsq")
    parser.add_argument("--all-pairs", action="store_true", help="every node through the pairs (pair_cost 0.01)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from sklearn.tree import DecisionTreeRegressor

    X, y = _data(args.fit_rows or args.rows)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    X, y = X[: args.local or args.rows], y[: args.local or args.rows]
    kernels = {"base": _base_pair_values(args.base), "current": hybrid_tree.pair_values}
    times: dict[str, list[float]] = {name: [] for name in kernels}
    values = {}
    for _ in range(args.repeat):
        for name, kernel in kernels.items():
            hybrid_tree.pair_values = kernel
            explainer = RSquaredExplainer(model)
            if args.all_pairs:
                explainer._set_engine(tuning=dataclasses.replace(explainer._tuning, pair_cost=0.01))
            start = time.process_time()
            values[name] = np.asarray(explainer(X, y).values if args.local else explainer.rsq(X, y))
            times[name].append(time.process_time() - start)
            print(f"{name}: {times[name][-1]:.2f} s", flush=True)
    leaves = model.tree_.n_leaves
    print(
        f"fully grown tree ({leaves} leaves) on {len(y)} rows, {'per-row' if args.local else 'rsq'}, "
        f"{'all pairs' if args.all_pairs else 'default routing'}: base {args.base} "
        + ", ".join(f"{t:.2f}" for t in times["base"])
        + " s; current "
        + ", ".join(f"{t:.2f}" for t in times["current"])
        + f" s; largest difference {np.max(np.abs(values['base'] - values['current'])):.1e}"
    )


if __name__ == "__main__":
    main()
