"""Time of one call: estimated before it starts (the progress bar's label, and a warning before a
long call that would otherwise run silently), or projected from its first trees where no estimate
exists (interaction shares), and the progress bar itself.

The estimate comes from the work the units count up front (``LcaUnit.work``: items times
quadrature nodes per row; ``HybridUnit.pair_work``: leaf pairs times features), times the seconds
per unit of work measured on one core (``Tuning.lca_seconds`` and its siblings).  It is within
about 3x on deep trees.  Trees whose rows share split patterns (shallow boosters, symmetric trees)
take less than their work says, so a warning is only given far above the time such models take.

Interaction shares have no such estimate (their cost depends on the pass-bit codes the rows take
at each leaf pair).  A call without a bar is timed instead: once it has run for
``Tuning.projection_seconds``, the trees' leaf pairs give its projected total, and the same warning
follows if that passes ``Tuning.long_call_seconds``.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..exceptions import LongCallWarning
from ..kernels.lca.hybrid import HybridUnit
from ..kernels.lca.unit import LcaUnit
from ..models.node_arrays import NodeArrays
from ..tuning import DEFAULT_TUNING, Tuning
from .rows import user_stacklevel

__all__ = [
    "LongCallWarning",
    "Projection",
    "estimated_seconds",
    "progress_bar",
    "progress_label",
    "trees_named",
    "warn_if_long",
    "warn_if_long_sample",
]


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


def _duration(seconds: float) -> str:
    """``45 s``, ``12.5 min`` or ``3.1 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def trees_named(n_trees: int) -> str:
    """``this tree`` or ``these 1,000 trees``."""
    return "this tree" if n_trees == 1 else f"these {n_trees:,} trees"


def progress_label(units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING) -> str:
    """The progress bar's label: the trees, and the estimated time when it is worth saying."""
    seconds = estimated_seconds(units, n_rows, tuning)
    if seconds < 10:
        return "trees"
    return f"trees (estimated {_duration(seconds)} on one core)"


def long_call_message(
    units: Sequence, nodes: NodeArrays, n_rows: int, local: bool, tuning: Tuning = DEFAULT_TUNING
) -> str | None:
    """What to tell the caller before a call estimated at ``tuning.long_call_seconds`` or more
    (``None`` below): the estimate, the trees that make it, and what shortens it."""
    seconds = _long_seconds(units, n_rows, tuning)
    if seconds is None:
        return None
    leaves = nodes.tree_leaves
    what, of = (
        ("per-row R² shares", "; that of R² shares alone: per-row shares take up to 2x as long")
        if local
        else ("R² shares", "")
    )
    return (
        f"The exact {what} of {trees_named(len(leaves))} (up to {int(leaves.max()):,} leaves and depth "
        f"{int(nodes.tree_depth.max())}) on {n_rows:,} rows are estimated to take about {_duration(seconds)} on "
        f"one core (a rough estimate, within about 3x{of}): their cost grows with leaves, depth and the features "
        "a path uses more than once.  RSquaredExplainer(progress=True), or --progress on the command line, shows a "
        "progress bar.  To take less time: n_jobs=-1 uses every core; smaller trees (max_depth, min_samples_leaf, "
        "max_leaf_nodes) cost far less; shap_rsq.estimate_rsq estimates the shares, with standard errors, from a "
        "sample of rows (n_sample: fewer rows, less time)."
    )


def long_sample_message(units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING) -> str | None:
    """What to tell the caller of ``estimate_rsq`` before its ``n_rows`` drawn rows' exact per-row
    shares, estimated at ``tuning.long_call_seconds`` or more (``None`` below)."""
    seconds = _long_seconds(units, n_rows, tuning)
    if seconds is None:
        return None
    return (
        f"estimate_rsq(n_sample={n_rows}): the exact per-row R² shares of the {n_rows:,} rows drawn are estimated "
        f"to take about {_duration(seconds)} on one core (a rough estimate, within about 3x), plus one TreeSHAP "
        "pass over every row.  Fewer rows (n_sample) take less time and give larger standard errors; n_jobs=-1 "
        "uses every core; RSquaredExplainer(progress=True) shows progress bars."
    )


def _long_seconds(units: Sequence, n_rows: int, tuning: Tuning) -> float | None:
    """The estimated seconds of a call, when they reach ``tuning.long_call_seconds``."""
    seconds = estimated_seconds(units, n_rows, tuning)
    return seconds if seconds >= tuning.long_call_seconds else None


def warn_if_long(units: Sequence, nodes: NodeArrays, n_rows: int, local: bool, tuning: Tuning = DEFAULT_TUNING) -> None:
    """Warn (:class:`LongCallWarning`) before a call estimated at ``tuning.long_call_seconds`` or more."""
    _warn(long_call_message(units, nodes, n_rows, local, tuning))


def warn_if_long_sample(units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING) -> None:
    """Warn (:class:`LongCallWarning`) before ``estimate_rsq``'s sample of ``n_rows`` rows when it is
    estimated to take minutes, with the advice that fits a sample (the explainer's own warning
    would suggest ``estimate_rsq`` itself)."""
    _warn(long_sample_message(units, n_rows, tuning))


def _warn(message: str | None) -> None:
    if message is not None:
        warnings.warn(message, LongCallWarning, stacklevel=user_stacklevel())


class Projection:
    """Warn once, part-way through a call of many trees without a progress bar, when the time its
    first trees took projects past ``tuning.long_call_seconds`` (trees weighed by ``weights``)."""

    def __init__(self, weights: np.ndarray, what: str, advice: str, tuning: Tuning = DEFAULT_TUNING):
        self.total = float(np.sum(weights))
        self.done = 0.0
        self.what, self.advice, self.tuning = what, advice, tuning
        self.start = time.perf_counter()
        self.warned = False

    def add(self, weight: float) -> None:
        """One more tree of ``weight`` is done: warn now if the projection passes the threshold."""
        self.done += weight
        elapsed = time.perf_counter() - self.start
        if self.warned or elapsed < self.tuning.projection_seconds or self.done <= 0:
            return
        projected = elapsed * self.total / self.done
        if projected >= self.tuning.long_call_seconds:
            self.warned = True
            warnings.warn(
                f"The {self.what} are projected to take about {_duration(projected)} in all (from the "
                f"{_duration(elapsed)} their first {self.done / self.total:.0%} took).  {self.advice}",
                LongCallWarning,
                stacklevel=user_stacklevel(),
            )


@contextlib.contextmanager
def progress_bar(total: int, label: str | bool) -> Iterator[Any]:
    """A tqdm bar over ``total`` trees (``None`` without ``label``), closed however the run ends: a
    bar left open by an error was drawn again under the next call's and at exit."""
    if not label:
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=label, unit="tree")
    try:
        yield bar
    finally:
        bar.close()
