"""How much of a reused explainer's call does not grow with the rows: each tree's fixed cost.

Times ``rsq`` and per-row shares of issue 58's workloads on 1,000 rows and on their first 20
(the same trees and plans, hardly any rows: what is left is each tree's NumPy calls and its
row-independent tables), with TreeSHAP on the 1,000 rows beside them; CPU seconds, medians, one
process.  The share that stays at 20 rows is what running several trees' passes in the same
NumPy calls could remove at most.

    python benchmarks/fixed_cost.py
    python benchmarks/fixed_cost.py xgb-p100-d6 --repeat 5
"""

from __future__ import annotations

import argparse
import time

import shap
from local import WORKLOADS, _data, _median_time

from shap_rsq import RSquaredExplainer

NAMES = ["xgb-p100-d6", "xgb-p100-d8", "rf-p100-d6", "rf-p100-d8"]


def _cpu(call, repeat: int) -> float:
    return _median_time(call, repeat, time.process_time)[0]


def measure(name: str, repeat: int) -> str:
    """One workload's table row."""
    factory, p = WORKLOADS[name]
    X, y = _data(1000, p)
    model = factory().fit(X, y)
    explainer = RSquaredExplainer(model, progress=False)
    explainer.rsq(X, y)  # read and compile once
    explainer(X, y)
    Xf, yf = X[:20], y[:20]
    rsq, rsq_few = _cpu(lambda: explainer.rsq(X, y), repeat), _cpu(lambda: explainer.rsq(Xf, yf), repeat)
    local, local_few = _cpu(lambda: explainer(X, y), repeat), _cpu(lambda: explainer(Xf, yf), repeat)
    tree_shap = _cpu(lambda: shap.TreeExplainer(model).shap_values(X), repeat)
    cells = [rsq, rsq_few, local, local_few, tree_shap]
    return f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {rsq_few / rsq:.0%} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(NAMES)} (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    header = ["`rsq` 1,000 rows", "`rsq` 20 rows", "per row 1,000", "per row 20", "TreeSHAP 1,000", "fixed share"]
    print("| workload | " + " | ".join(header) + " |")
    print("|---|" + "---:|" * len(header))
    unknown = sorted(set(args.names) - set(NAMES))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {NAMES}")
    for name in args.names or NAMES:
        print(measure(name, args.repeat), flush=True)


if __name__ == "__main__":
    main()
