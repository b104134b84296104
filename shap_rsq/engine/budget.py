"""Working memory of one call, estimated before it starts: refuse what cannot fit, cap the workers.

Two parts make up a call's memory.  Arrays over rows (targets, predictions, residuals, and for
per-row shares one ``(n, p)`` block per worker) grow with the data and are what a call may have
to refuse.  The kernels' own memory is bounded by construction: an LCA kernel call sizes its
blocks of patterns to a quarter of the budget (``LcaUnit.pattern_step``), compiling a plan takes
at most another quarter (``Tuning.plan_item_cap``: larger trees are compiled in pieces,
``kernels.hybrid_tree``), and the per-pair kernel and the small-tree kernels work in fixed-size
blocks.  Each worker process runs one unit at a time, so the number of workers is capped to what
fits.
"""

from __future__ import annotations

from collections.abc import Sequence

from joblib import effective_n_jobs

from ..kernels.hybrid_tree import HybridUnit
from ..kernels.lca_tree import LcaUnit
from ..tuning import DEFAULT_TUNING, Tuning

__all__ = [
    "MemoryBudgetError",
    "check_shap_output",
    "estimated_seconds",
    "fit_jobs",
    "out_of_memory",
    "progress_label",
    "row_bytes",
    "unit_bytes",
]

_GIB = float(1 << 30)


class MemoryBudgetError(ValueError):
    """A call whose working memory cannot fit within the explainer's ``memory_budget``.

    Raised before any work starts; the message gives the estimate and what to change.
    """


def row_bytes(n_rows: int, n_features: int, n_trees: int, local: bool, jobs: int) -> int:
    """Arrays over rows: about 16 floats a row (target, weights, predictions, residuals, row
    weights, pattern maps); for per-row shares ``jobs + 4`` arrays of ``(n, p)`` (each worker's
    block, their sum, the Explanation and the kernels' gathers); with workers, the predictions of
    the trees before each block ``(n, trees)``."""
    per_row = 16 + (n_features * (jobs + 4) if local else 0) + (n_trees if jobs > 1 else 0)
    return 8 * n_rows * per_row


def unit_bytes(unit, n_rows: int, local: bool, tuning: Tuning = DEFAULT_TUNING) -> int:
    """Peak bytes of one unit of work while it runs (an estimate, from before its plan exists)."""
    if not isinstance(unit, LcaUnit):
        # enumeration and recursion batches work in fixed-size blocks of rows (measured 4-36 MiB
        # for global values, 130 MiB for per-row values of 256 depth-3 trees on 50,000 rows)
        return (32 if local else 16) * tuning.chunk_elements
    per_element = tuning.lca_local_bytes if local else tuning.lca_global_bytes
    items = unit.work / 4.0  # lca_work counts items x quadrature nodes (4-10 of them)
    kernel = min(tuning.memory_budget // 4, items * n_rows * per_element)
    plan = min(tuning.memory_budget // 4, items * tuning.lca_item_bytes)
    return int(kernel + plan)


def fit_jobs(
    units: Sequence, n_rows: int, n_features: int, n_trees: int, local: bool, n_jobs, tuning: Tuning = DEFAULT_TUNING
):
    """``n_jobs`` as given when the call fits the budget, fewer workers when only fewer fit.

    Raises
    ------
    MemoryBudgetError
        When even one process would exceed ``tuning.memory_budget``.
    """
    budget = tuning.memory_budget
    largest = max((unit_bytes(unit, n_rows, local, tuning) for unit in units), default=0)
    jobs = max(1, effective_n_jobs(n_jobs))
    for allowed in range(jobs, 0, -1):
        if row_bytes(n_rows, n_features, n_trees, local, allowed) + allowed * largest <= budget:
            return n_jobs if allowed == jobs else allowed
    need = row_bytes(n_rows, n_features, n_trees, local, 1) + largest
    raise MemoryBudgetError(_refusal(need, budget, n_rows, n_features, local, largest))


def estimated_seconds(units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING) -> float:
    """Rough time of a call on one core, from the units' work estimates (within about 3x on the
    deep trees of ``benchmarks/deep.py``; shallow trees, whose rows share split patterns, take less)."""
    lca = dense = pairs = 0.0
    for unit in units:
        if isinstance(unit, HybridUnit) and unit.dense:
            dense += unit.work
            pairs += unit.pair_work
        elif isinstance(unit, LcaUnit):
            lca += unit.work
    return n_rows * (tuning.lca_seconds * lca + tuning.lca_dense_seconds * dense + tuning.pair_seconds * pairs)


def progress_label(units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING) -> str:
    """The progress bar's label: the trees, and the estimated time when it is worth saying."""
    seconds = estimated_seconds(units, n_rows, tuning)
    if seconds < 10:
        return "trees"
    amount = f"{seconds / 60:.1f} min" if seconds >= 120 else f"{seconds:.0f} s"
    return f"trees (estimated {amount} on one core)"


def check_shap_output(n_rows: int, n_features: int, n_outputs: int, interactions: bool, budget: int) -> None:
    """Refuse shap's own SHAP (interaction) values of rows whose result alone would pass ``budget``.

    shap's TreeSHAP returns an ``(n, p)`` array per output, ``(n, p, p)`` for interactions, with
    no chunking: interaction values of 2,000 rows x 600 features are 5.4 GiB.  Measured peaks
    (shap 0.51, 1,000 x 200, per output): 1.0x the float64 ``(n, p + 1, p + 1)`` array for
    LightGBM and scikit-learn, 1.0x as well for XGBoost, whose float32 result is converted; SHAP
    values peak at twice their ``(n, p + 1)`` array.

    Raises
    ------
    MemoryBudgetError
        When that estimate exceeds ``budget``.
    """
    width = n_features + 1
    per_row = 8 * n_outputs * (width * width if interactions else 2 * width)
    need = n_rows * per_row
    if need <= budget:
        return
    what = "interaction values" if interactions else "SHAP values"
    shape = "n x (p + 1)^2" if interactions else "n x (p + 1)"
    instead = (
        "rsq_interactions(X, y) gives the interaction shares of R² summed over rows without it"
        if interactions
        else "rsq(X, y) gives the shares of R² summed over rows without it"
    )
    raise MemoryBudgetError(
        f"shap's {what} of {n_rows:,} rows x {n_features:,} features form one array of about {_size(need)} "
        f"({shape} floats{f' x {n_outputs} outputs' if n_outputs > 1 else ''}), over "
        f"memory_budget={_size(budget)}: pass fewer rows (about {budget // per_row:,} fit) or raise "
        f"RSquaredExplainer(memory_budget=...); {instead}."
    )


def out_of_memory(n_rows: int, n_features: int, local: bool, tuning: Tuning = DEFAULT_TUNING) -> str:
    """The message when the machine ran out of memory although the estimate fitted the budget."""
    what = "per-row shares" if local else "R² shares"
    return (
        f"The machine ran out of memory computing the {what} of {n_rows:,} rows x {n_features} features "
        f"within memory_budget={tuning.memory_budget / _GIB:.2f} GiB (the estimate fell short, or other "
        "processes hold memory): lower RSquaredExplainer(memory_budget=...), pass fewer rows, or grow "
        "shallower trees (max_depth, min_samples_leaf, num_leaves)."
    )


def _refusal(need: int, budget: int, n_rows: int, n_features: int, local: bool, largest: int) -> str:
    per_row = row_bytes(1, n_features, 0, local, 1)
    fitting = max(0, int((budget - largest) // per_row))
    what = "per-row shares" if local else "R² shares"
    advice = [f"pass fewer rows (about {fitting:,} fit)", "or raise RSquaredExplainer(memory_budget=...)"]
    if fitting == 0:  # the trees' own working memory alone is over the budget: rows are not the problem
        advice = ["raise RSquaredExplainer(memory_budget=...)"]
    if local:
        advice.insert(1, "compute global shares with rsq() (memory O(n + p))")
    if largest > budget / 4:
        advice.insert(1, "grow shallower trees (max_depth, min_samples_leaf, num_leaves)")
    return (
        f"Estimated working memory {_size(need)} for the {what} of {n_rows:,} rows x {n_features} features "
        f"(of which {_size(largest)} for the deepest tree) exceeds memory_budget={_size(budget)}: "
        + ", ".join(advice)
        + "."
    )


def _size(n_bytes: float) -> str:
    """A size in GiB, or in MiB below 0.1 GiB (a budget of 1/64 GiB read as "0.02 GiB")."""
    return f"{n_bytes / _GIB:.2f} GiB" if n_bytes >= 0.1 * _GIB else f"{n_bytes / (1 << 20):.0f} MiB"
