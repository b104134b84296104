"""The losses boosters minimise, and the second-order tree games they give.

Tree ``t`` of a booster moves the margin ``F`` of a row from ``F_{t-1}`` (the trees before it, the
later ones at their means) by ``m - c_t``.  Its game on a row with weight ``w`` is the second-order
(Newton) expansion of the loss change at ``F_{t-1}``, with the loss's exact gradient ``g`` and
Hessian ``h`` there:

    v_t(S) = -w [g (m_S - c_t) + h/2 (m_S - c_t)^2],

a quadratic in ``m_S`` whose Shapley values are ``w_quad phi(m^2) + w_lin phi(m)`` with
``w_quad = -w h / 2`` and ``w_lin = w (h c_t - g)``.  For squared error, ``L = (y - F)^2``,
``g = -2 (y - F)`` and ``h = 2``: the game of :mod:`~shap_rsq.engine.run`, exactly.

Every loss here is a deviance (zero at a perfect prediction), so that the shares divided by the
deviance of the weighted mean of ``y`` are shares of ``D^2``: scikit-learn's
``d2_log_loss_score`` and ``d2_tweedie_score``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit, logsumexp, xlogy

__all__ = ["LOSSES", "Loss", "SoftmaxOffsets", "TreeLosses"]

LOSSES = ("squared_error", "log_loss", "poisson", "gamma", "tweedie")


@dataclass(frozen=True)
class Loss:
    """A twice-differentiable loss of the margin ``F`` (the sum of the trees), as a deviance.

    Attributes
    ----------
    name : {"squared_error", "log_loss", "poisson", "gamma", "tweedie"}
        ``log_loss``: the probability is ``sigmoid(F)`` (or a softmax over classes);
        ``poisson``, ``gamma`` and ``tweedie``: the mean is ``exp(F)``.
    power : float
        Tweedie's variance power, in ``(1, 2)`` (1 for Poisson, 2 for Gamma).
    """

    name: str = "squared_error"
    power: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}; got {self.name!r}.")
        if self.name == "tweedie" and not 1.0 < self.power < 2.0:
            raise ValueError(f"Tweedie's variance power must lie in (1, 2); got {self.power!r}.")

    @property
    def exact(self) -> bool:
        """Whether the tree games are the loss change itself (squared error), not its expansion."""
        return self.name == "squared_error"

    @property
    def score(self) -> str:
        """The name of the score whose shares the games give: ``R²`` or ``D²`` of the deviance."""
        if self.name == "squared_error":
            return "R²"
        if self.name == "tweedie":
            return f"D² (Tweedie, power {self.power:g})"
        return {"log_loss": "D² (log-loss)", "poisson": "D² (Poisson)", "gamma": "D² (Gamma)"}[self.name]

    def derivatives(self, y: np.ndarray, margin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gradient and Hessian of the deviance in the margin, ``(g, h)``, elementwise.

        Parameters
        ----------
        y : ndarray
            Targets (broadcast against ``margin``): 0/1 (or a probability) for log-loss.
        margin : ndarray
            The margins ``F``.

        Returns
        -------
        tuple of ndarray
            ``dL/dF`` and ``d^2L/dF^2``.
        """
        if self.name == "squared_error":
            return -2.0 * (y - margin), np.full(np.shape(margin), 2.0)
        if self.name == "log_loss":
            p = expit(margin)
            return p - y, p * (1.0 - p)
        if self.name == "poisson":
            mu = np.exp(margin)
            return 2.0 * (mu - y), 2.0 * mu
        if self.name == "gamma":
            ratio = y * np.exp(-margin)
            return 2.0 * (1.0 - ratio), 2.0 * ratio
        a = y * np.exp((1.0 - self.power) * margin)
        b = np.exp((2.0 - self.power) * margin)
        return 2.0 * (b - a), 2.0 * ((self.power - 1.0) * a + (2.0 - self.power) * b)

    def deviance(self, y: np.ndarray, margin: np.ndarray) -> np.ndarray:
        """Each row's deviance at margin ``F`` (binary log-loss for ``log_loss``).

        Parameters
        ----------
        y, margin : ndarray
            Targets and margins, one per row.

        Returns
        -------
        ndarray
            The deviances, 0 at a perfect prediction.
        """
        if self.name == "squared_error":
            return (y - margin) ** 2
        if self.name == "log_loss":  # -y log p - (1 - y) log(1 - p), plus its value at p = y
            return np.logaddexp(0.0, margin) - y * margin + _entropy(y)
        if self.name == "poisson":
            return 2.0 * (xlogy(y, y) - y * margin - y + np.exp(margin))
        if self.name == "gamma":
            return 2.0 * (margin - np.log(y) + y * np.exp(-margin) - 1.0)
        p = self.power
        return 2.0 * (
            np.maximum(y, 0.0) ** (2.0 - p) / ((1.0 - p) * (2.0 - p))
            - y * np.exp((1.0 - p) * margin) / (1.0 - p)
            + np.exp((2.0 - p) * margin) / (2.0 - p)
        )

    def check_target(self, y: np.ndarray) -> None:
        """Refuse targets outside the loss's domain, with the reason.

        Parameters
        ----------
        y : ndarray
            The target values.

        Raises
        ------
        ValueError
            For negative counts (Poisson, Tweedie), non-positive values (Gamma), or log-loss targets
            outside ``[0, 1]``.
        """
        if self.name == "log_loss" and np.any((y < 0) | (y > 1)):
            raise ValueError("y must lie in [0, 1] for a cross-entropy (log-loss) model: it is a probability.")
        if self.name in ("poisson", "tweedie") and np.any(y < 0):
            raise ValueError(f"y must be non-negative for a {self.name.capitalize()} model (its mean is exp(F)).")
        if self.name == "gamma" and np.any(y <= 0):
            raise ValueError("y must be positive for a Gamma model: its deviance takes log(y).")


def _entropy(y: np.ndarray) -> np.ndarray:
    """The log-loss of predicting ``y`` itself (0 for 0/1 targets, positive for probabilities)."""
    return xlogy(y, y) + xlogy(1.0 - y, 1.0 - y)


@dataclass(frozen=True)
class TreeLosses:
    """The second-order games of one forest's trees: its loss, and for a softmax the margin the
    other classes add at each tree.

    Attributes
    ----------
    loss : Loss
        The loss of the margin.
    offsets : SoftmaxOffsets or None
        For class ``k`` of a softmax, ``log sum_{j != k} exp(F_j)`` when tree ``t`` is added: the
        class's log-loss is then the binary one at margin ``F_k - offset``.  ``None`` otherwise.
    """

    loss: Loss
    offsets: SoftmaxOffsets | None = None

    def of_rows(self, rows: slice | np.ndarray) -> TreeLosses:
        """The same games on the rows ``rows`` of the call (a sample or a block of them)."""
        return self if self.offsets is None else TreeLosses(self.loss, self.offsets.of_rows(rows))

    def row_weights(self, before, means, y, w, rows=slice(None), trees=None) -> tuple[np.ndarray, np.ndarray]:
        """``(w_quad, w_lin)`` of the games of trees ``trees`` on rows ``rows``.

        Parameters
        ----------
        before : ndarray of shape (n_rows, n_trees)
            Each row's margin before each tree (the later trees at their means).
        means : ndarray of shape (n_trees,)
            The trees' means ``c_t``.
        y, w : ndarray of shape (n_rows,)
            Targets and weights of these rows.
        rows : slice or ndarray, default=slice(None)
            Which rows of the forest's call these are (for the offsets).
        trees : ndarray of int, optional
            Which trees of the forest these are (for the offsets).

        Returns
        -------
        tuple of ndarray
            ``w_quad = -w h / 2`` and ``w_lin = w (h c_t - g)``, each ``(n_rows, n_trees)``.
        """
        if self.offsets is not None:
            before = before - self.offsets.columns(rows, trees)
        g, h = self.loss.derivatives(np.reshape(y, (len(y), -1)), before)
        weight = np.reshape(w, (len(w), -1))
        return -0.5 * weight * h, weight * (h * means - g)


class SoftmaxOffsets:
    """Class ``k``'s offsets of a softmax booster on a set of rows, computed for the trees and rows
    asked: blocks of the ``(n, T_k)`` table of ``log sum_{j != k} exp(F_j)``, with ``F_j`` class
    ``j``'s margin after its trees that come before each of class ``k``'s (the later ones at their
    means), without forming it.  Each margin sums its trees' shifts one after another from the first
    (``np.cumsum``'s order), then adds the class's start, so the blocks do not depend on how the
    trees and rows are asked for.

    Formed whole, that table and the margins it comes from took ``n x T`` floats several times over
    (1 GiB for 50,000 rows of a three-class booster of 100 rounds, under a 64 MiB budget).  Here the
    other classes' margins before the first tree asked are kept for every row (``K x n``), moved
    on as the game reaches later trees, and a block of the table is made for the rows asked from
    them (the trees in between predicted on those rows): memory ``O(n K)`` plus the caller's block.
    The games ask for the trees in order; a request for an earlier tree starts the margins again.
    The margins are per thread, so that blocks of trees on threads of one process keep their own.

    Parameters
    ----------
    forests : sequence of Forest
        Every class's forest, with its ``steps`` (positions in the model's order of all trees).
    rows : sequence of ndarray
        The call's rows as each forest routes them (:meth:`Forest.routing_rows`).
    k : int
        The class.
    block_elements : int
        Rows x trees predicted at once while the margins move on.
    shifts : sequence of ndarray, optional
        Every class's trees' shifts ``m - c_t`` on every row, ``(n, T_j)``, when they fit the
        caller's budget: read instead of predicted (each tree once for all classes, where
        predicting them as the games reach them costs each tree ``K - 1`` times).
    """

    def __init__(
        self,
        forests: Sequence[Any],
        rows: Sequence[np.ndarray],
        k: int,
        block_elements: int,
        shifts: Sequence[np.ndarray] | None = None,
    ):
        self.forests = tuple(forests)
        self.rows = tuple(rows)
        self.k = k
        self.block_elements = block_elements
        self.shifts = shifts
        self._local = threading.local()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_local"]  # the running margins stay with their thread
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    @property
    def n_rows(self) -> int:
        return self.rows[0].shape[0]

    def of_rows(self, rows: slice | np.ndarray) -> SoftmaxOffsets:
        """The offsets of the rows ``rows`` of the call alone."""
        shifts = None if self.shifts is None else [table[rows] for table in self.shifts]
        return SoftmaxOffsets(self.forests, [routed[rows] for routed in self.rows], self.k, self.block_elements, shifts)

    def columns(self, rows: slice | np.ndarray, trees: np.ndarray | None) -> np.ndarray:
        """``(len(rows), len(trees))`` the offsets of class ``k``'s ``trees`` (all when ``None``,
        ascending) on the call's ``rows``."""
        trees = np.arange(self.forests[self.k].n_trees) if trees is None else np.asarray(trees)
        others = [j for j in range(len(self.forests)) if j != self.k]
        counts = self._counts(trees, others)  # (others, trees): each other class's trees before each
        self._move_to(others, counts[:, 0])
        every_row = isinstance(rows, slice) and range(self.n_rows)[rows] == range(self.n_rows)
        margins = [self._margins(j, count, rows, every_row) for j, count in zip(others, counts, strict=True)]
        return logsumexp(np.stack(margins), axis=0)  # over the other classes, in class order

    def _margins(self, j: int, counts: np.ndarray, rows: slice | np.ndarray, every_row: bool) -> np.ndarray:
        """``(rows, len(counts))`` class ``j``'s margin after its first ``counts`` trees (ascending, none
        before the kept margins), the trees past the kept margins predicted on these rows only.  On
        ``every_row`` of the call the kept margins move on to the last of them (no other block of
        rows will ask for these trees), so that each tree is predicted once."""
        state = self._local
        added = state.added[j]
        shifts = self._shifts(j, np.arange(added, counts[-1]), rows)
        running = state.summed[j][rows].copy()
        out = np.empty((running.shape[0], len(counts)))
        done = 0
        for column, count in enumerate(counts - added):
            for step in range(done, count):  # one tree after another, as np.cumsum adds them
                running += shifts[:, step]
            done = count
            out[:, column] = running
        if every_row:
            state.summed[j], state.added[j] = running, int(counts[-1])
        out += self._start(j)
        return out

    def _counts(self, trees: np.ndarray, others: list[int]) -> np.ndarray:
        steps = self.forests[self.k].steps[trees]
        return np.array([np.searchsorted(self.forests[j].steps, steps) for j in others], dtype=np.int64)

    def _start(self, j: int) -> float:
        forest = self.forests[j]
        return forest.base_offset + float(forest.nodes.tree_mean.sum())

    def _shifts(self, j: int, trees: np.ndarray, rows: slice | np.ndarray) -> np.ndarray:
        """``(rows, trees)`` class ``j``'s trees' shifts ``m - c_t`` on ``rows``."""
        forest = self.forests[j]
        if len(trees) == 0:
            return np.empty((len(range(self.n_rows)[rows]) if isinstance(rows, slice) else len(rows), 0))
        if self.shifts is not None:
            return self.shifts[j][rows][:, trees]
        return forest.nodes.leaf_values(self.rows[j][rows], trees, forest.input_dtype) - forest.nodes.tree_mean[trees]

    def _move_to(self, others: list[int], counts: np.ndarray) -> None:
        """Every row's margins of the ``others`` after their first ``counts`` trees (summed one tree
        after another, in blocks of rows), from the start when one of them is already past."""
        state = self._local
        fresh = getattr(state, "added", None) is None  # nothing kept yet on this thread
        if fresh or any(c < state.added[j] for j, c in zip(others, counts, strict=True)):
            state.summed = [np.zeros(self.n_rows) for _ in self.forests]
            state.added = [0] * len(self.forests)
        for j, count in zip(others, counts, strict=True):
            trees = np.arange(state.added[j], count)
            if len(trees) == 0:
                continue
            step = max(1, self.block_elements // len(trees))
            for start in range(0, self.n_rows, step):
                rows = slice(start, min(self.n_rows, start + step))
                shifts, total = self._shifts(j, trees, rows), state.summed[j][rows]
                for column in range(len(trees)):
                    total += shifts[:, column]
            state.added[j] = int(count)
