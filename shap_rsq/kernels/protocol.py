"""The interface every kernel's unit of work offers the engine."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["JunctionChoice", "TreeKernel"]


class TreeKernel(Protocol):
    """Consecutive trees of a forest, evaluated by one kernel.

    The engine owns the residuals: for each chunk of rows it asks the unit what its trees
    predict (:meth:`prepare`), turns that into the row weights of each tree's game, and hands
    them to :meth:`contribute`.  A unit whose games depend on a row only through a small cube of
    split patterns returns the weights summed per pattern instead; the engine adds them up over
    chunks and hands the total to :meth:`finish`.

    Attributes
    ----------
    trees : ndarray of int
        Indices of the unit's trees in the forest, consecutive.
    means : ndarray of float
        Each tree's cover-weighted mean ``c_t``.
    work : float
        Estimated cost, comparable between units (how the engine splits a forest into blocks).
    parallel_work : float
        Estimated cost per row of sending the unit to a worker process (0: never worth it).
    compiled_work : float or None
        ``work`` counted on what the unit compiled, once it has (``None`` before, or when the
        estimate is the better measure): the engine balances blocks by it.
    """

    trees: np.ndarray
    means: np.ndarray

    @property
    def work(self) -> float: ...

    @property
    def parallel_work(self) -> float: ...

    @property
    def compiled_work(self) -> float | None: ...

    def chunk_rows(self) -> int | None:
        """Rows per chunk the unit wants (``None``: all rows at once, it blocks inside)."""

    def prepare(self, X: np.ndarray, dtype: Any) -> tuple[tuple, np.ndarray]:
        """Route a chunk of rows: the unit's state for :meth:`contribute` and ``(n, T)`` predictions."""

    def contribute(
        self, state: tuple, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Add the Shapley values of the games ``w_quad m_S^2 + w_lin m_S`` (row weights ``(n, T)``) to
        ``out`` (``(p,)``, or ``(n, p)`` when ``local``), or return per-pattern weights for :meth:`finish`."""

    def finish(self, weights: tuple[np.ndarray, np.ndarray], out: np.ndarray) -> None:
        """Add the Shapley values of the games whose weights were summed per pattern over all chunks."""


class JunctionChoice(Protocol):
    """The rule by which an LCA unit's tree takes the conditioned recursion instead of its LCA
    items, on the rows at hand (``engine.routing`` makes it; the unit only counts the work)."""

    def takes(self, junction_work: float, lca_work: float, n_patterns: int, reverse: float, local: bool) -> bool:
        """Whether the recursion takes the tree: its forward work ``junction_work`` (an estimate
        before its sub-patterns are found, then their count) and, for per-row values, its reverse
        pass ``reverse``, against the LCA kernel's ``lca_work`` per pattern on ``n_patterns``."""
