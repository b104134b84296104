"""``rsq`` (or per-row shares) with the LCA kernel's blocks of patterns sized as before
``Tuning.lca_global_bytes`` and ``lca_local_bytes`` were measured anew, against the current
sizing, alternating in one process (CPU time).

    python benchmarks/ab_blocks.py xgb-12-10k --trees 4 8 --rounds 2
    python benchmarks/ab_blocks.py xgb-12-10k --trees 0 1 --per-row

Fits a ``deep.py`` workload, keeps the trees ``--trees A B`` (XGBoost boosters are sliced;
forests keep their estimators ``A..B``; other models keep all their trees), compiles both
explainers' plans before timing, then times ``rsq`` with each sizing in turn and prints the
blocks of patterns per tree and the largest difference of the shares (blocks change no value).
The earlier sizing charged 4 bytes per (pattern, item), global or per row, 40 per (pattern,
leaf), capped a call at 2^28 (pattern, item) elements, and charged every tree with pair nodes as
one whose rows rarely share cells (``Tuning.shared_code_bits``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace

import numpy as np
from deep import WORKLOADS, _data

from shap_rsq import RSquaredExplainer
from shap_rsq.tuning import DEFAULT_TUNING

BEFORE = replace(
    DEFAULT_TUNING,
    lca_global_bytes=4,
    lca_local_bytes=4,
    lca_leaf_bytes=40,
    pattern_elements=1 << 28,
    shared_code_bits=0,
)


def _model(name: str, first: int, stop: int):
    n, factory = WORKLOADS[name]
    X, y = _data(n)
    model = factory().fit(X, y)
    if name.startswith("xgb"):
        return model.get_booster()[first:stop], X, y
    if hasattr(model, "estimators_"):
        model.estimators_ = model.estimators_[first:stop]
        model.n_estimators = len(model.estimators_)
    return model, X, y


def _blocks(explainer, n_rows: int, local: bool) -> list[int]:
    """Blocks of patterns of each LCA unit's first plan, compiling it (rows stand for patterns:
    continuous data)."""
    counts = []
    for unit in explainer._units.units(local):
        if hasattr(unit, "lca_plans"):  # pieces after the first are compiled as they are reached
            counts.append(-(-n_rows // unit.pattern_step(local, unit.plan)))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=list(WORKLOADS))
    parser.add_argument("--trees", type=int, nargs=2, default=(0, 20), metavar=("A", "B"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--per-row", action="store_true", help="time per-row shares instead of rsq")
    args = parser.parse_args()
    model, X, y = _model(args.workload, *args.trees)
    explainers = {
        "before": RSquaredExplainer(model)._set_engine(tuning=BEFORE),
        "now": RSquaredExplainer(model)._set_engine(tuning=DEFAULT_TUNING),
    }
    for label, explainer in explainers.items():  # compiled before the timing: the plans are alike
        print(label, "blocks of patterns per plan:", _blocks(explainer, len(y), args.per_row), flush=True)
    times: dict[str, list[float]] = {label: [] for label in explainers}
    shares = {}
    warnings.simplefilter("ignore")  # the long-call warning
    for r in range(args.rounds):
        for label in list(explainers)[:: 1 if r % 2 == 0 else -1]:
            start = time.process_time()
            call = explainers[label]
            shares[label] = call(X, y).values if args.per_row else np.asarray(call.rsq(X, y))
            times[label].append(time.process_time() - start)
            print(f"{label}: {times[label][-1]:.1f} s", flush=True)
    gap = float(np.abs(shares["before"] - shares["now"]).max())
    print(f"{args.workload} trees {args.trees[0]}..{args.trees[1]}: {times}, largest difference {gap:.1e}")


if __name__ == "__main__":
    main()
