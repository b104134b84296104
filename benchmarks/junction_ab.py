"""The conditioned recursion's passes against an older checkout's, in one process, CPU seconds.

LightGBM's leaf-wise trees mostly take the conditioned recursion
(``kernels.recursion.conditioned_passes``).  This script times ``rsq`` with this checkout's passes
("new") and with the passes of another checkout ("base", its ``conditioned_passes.py`` loaded
beside this one and run on sub-patterns deduplicated at every node, as before
``Tuning.junction_whole_rows``), alternating, on a fresh explainer (construction included,
"cold") and on a reused one.  With ``--qshap`` it first times qshap once (warm, one core) on
``lgbm-31`` and prints both ratios.  CPU seconds (``time.process_time``), medians of ``--repeat``.

    git worktree add /tmp/base <commit>
    python benchmarks/junction_ab.py --base /tmp/base --qshap lgbm-31
    python benchmarks/junction_ab.py --base /tmp/base lgbm-63 lgbm-127 lgbm-255   # benchmarks/deep.py's
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.lca import unit as lca_unit
from shap_rsq.kernels.recursion import conditioned


def base_kernels(checkout: str) -> tuple:
    """The base checkout's ``gradient_on_patterns``, and sub-patterns found as it found them."""
    path = Path(checkout) / "shap_rsq" / "kernels" / "recursion" / "conditioned_passes.py"
    spec = importlib.util.spec_from_file_location("shap_rsq.kernels.recursion._base_passes", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.gradient_on_patterns, functools.partial(conditioned.sub_patterns, whole=2.0)


def use(kernels: tuple) -> None:
    lca_unit.gradient_on_patterns, lca_unit.sub_patterns = kernels


def workload(name: str):
    if name == "lgbm-31":
        from bench import lightgbm_31

        return lightgbm_31()
    import deep

    n, factory = deep.WORKLOADS[name]
    X, y = deep._data(n)
    return factory().fit(X, y), X, y


def cpu(call, *args) -> float:
    start = time.process_time()
    call(*args)
    return time.process_time() - start


def cold_rsq(model, X, y):
    return RSquaredExplainer(model).rsq(X, y)


def qshap_rsq(model, X, y):
    import qshap

    return qshap.gazer(model).rsq(X, y, ncore=1, progress_bar=False)


def run(name: str, kernels: dict, repeat: int, with_qshap: bool) -> str:
    """One line: each kernel's median CPU seconds, cold and reused (and their ratios to qshap)."""
    model, X, y = workload(name)
    q = None
    if with_qshap:
        qshap_rsq(model, X[:50], y[:50])  # its first calls compile code
        q = cpu(qshap_rsq, model, X, y)
    times = {label: {"cold": [], "reused": []} for label in kernels}
    reused = {label: RSquaredExplainer(model) for label in kernels}
    shares = {}
    for _ in range(repeat):
        for label, pair in kernels.items():
            use(pair)
            times[label]["cold"].append(cpu(cold_rsq, model, X, y))
            if label not in shares:
                shares[label] = reused[label].rsq(X, y)
            times[label]["reused"].append(cpu(reused[label].rsq, X, y))
    use(kernels["new"])
    line = [f"{name}:"]
    for label in kernels:
        cold, warm = (float(np.median(times[label][k])) for k in ("cold", "reused"))
        ratios = f" ({q / cold:.1f}x / {q / warm:.1f}x qshap)" if q else ""
        line.append(f"{label} cold {cold:.2f} s, reused {warm:.2f} s{ratios};")
    if q:
        line.append(f"qshap {q:.1f} s;")
    line.append(f"largest share difference {np.max(np.abs(shares['new'] - shares['base'])):.1e}")
    return " ".join(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="+")
    parser.add_argument("--base", required=True, help="a checkout whose conditioned passes are the base")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--qshap", action="store_true", help="time qshap once on each workload first")
    args = parser.parse_args()
    kernels = {"new": (lca_unit.gradient_on_patterns, lca_unit.sub_patterns), "base": base_kernels(args.base)}
    for name in args.workloads:
        print(run(name, kernels, args.repeat, args.qshap), flush=True)


if __name__ == "__main__":
    main()
