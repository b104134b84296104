"""The sums an R² share and its standard error are made of, and the target they are over.

Every share here is a ratio ``A_j / S``: ``A_j = sum_i a_ij`` adds the per-row contributions ``a_ij`` of
feature ``j`` to the reduction of the weighted squared error, and ``S = sum_i s_i`` with
``s_i = w_i (y_i - ybar_w)^2`` is the total sum of squares.  :class:`Moments` keeps the sums needed for
the shares and for their delta-method standard errors, so that folds and row blocks simply add up.
For a classifier the target is one-hot over the classes (the Brier skill score, :class:`Target`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..engine.labels import match_labels, refuse_unknown_labels
from ..engine.validation import check_squares_finite, weighted_mean
from ..explainer._explainer import RSquaredExplainer
from ..models.inspect import UnsupportedModelError

__all__ = ["Moments", "Target", "UndefinedScoreError", "pooled_means", "squares", "target"]


class UndefinedScoreError(ValueError):
    """The target is constant over the rows a model is evaluated on: R² (or the Brier skill score) is undefined."""


@dataclass
class Moments:
    """Sums over evaluation rows from which shares and their standard errors follow.

    ``aa``, ``as_`` and ``ss`` (sums of ``a_ij^2``, ``a_ij s_i`` and ``s_i^2``) are only kept when
    per-row contributions were computed.  ``rows`` names the rows the sums are over, for the error
    of a constant target.
    """

    a: np.ndarray
    sst: float
    n: int
    aa: np.ndarray | None = None
    as_: np.ndarray | None = None
    ss: float = 0.0
    rows: str = "the rows the model is evaluated on"

    def __add__(self, other: Moments) -> Moments:
        def add(x, y):
            return None if x is None or y is None else x + y

        return Moments(
            self.a + other.a,
            self.sst + other.sst,
            self.n + other.n,
            add(self.aa, other.aa),
            add(self.as_, other.as_),
            self.ss + other.ss,
            self.rows,
        )

    @property
    def shares(self) -> np.ndarray:
        """Each feature's share of R², ``A_j / S``.

        Returns
        -------
        ndarray of shape (n_features,)
            The shares.
        """
        check_squares_finite(self.sst)
        if not self.sst > 0:
            raise UndefinedScoreError(f"y is constant over {self.rows}, so R² is undefined.")
        return self.a / self.sst

    def standard_errors(self) -> np.ndarray:
        """Delta-method standard error of the ratio ``A_j / S`` over i.i.d. rows, the model(s) held fixed.

        Linearising, ``A_j/S - R_j ~ sum_i (a_ij - R_j s_i) / S``, whose terms have mean zero, so
        ``SE_j^2 = n/(n-1) sum_i d_ij^2 / S^2`` with ``d_ij = a_ij - R_j s_i``.  ``sum_i d_ij^2`` is expanded
        into the kept sums so that no ``(n, p)`` array needs to outlive a row block.

        Returns
        -------
        ndarray of shape (n_features,)
            The standard errors.
        """
        if self.aa is None or self.as_ is None:
            raise ValueError("Standard errors need per-row contributions.")
        r = self.shares
        squares = np.maximum(self.aa - 2.0 * r * self.as_ + r * r * self.ss, 0.0)
        return np.sqrt(self.n / max(self.n - 1, 1) * squares) / self.sst


@dataclass(frozen=True)
class Target:
    """What the explainer decomposes (``model_columns``) and what the total sum of squares is over.

    For a regressor both are ``y``.  For a classifier the score is the Brier skill score: the
    squared error of the one-hot target over every class, the model's and those of ``y`` (a held-out
    fold or an out-of-bag draw may hold a label the fold's model never saw: its probability is 0).
    """

    all_columns: np.ndarray
    model_columns: np.ndarray
    unseen: np.ndarray | None = None  # a classifier's labels of the columns past the model's classes


def target(explainer: RSquaredExplainer, y: np.ndarray, *, held_out: bool = False) -> Target:
    """The target the explainer plays and the one the sum of squares is over (see :class:`Target`).

    A classifier's labels are matched to its ``classes_`` by value, as the explainer matches them
    (``1.0`` is the class ``1``, text held as objects or as a Categorical is the same text held as
    ``<U``), whatever the dtypes.  A label the model never saw is refused by name, as the explainer
    refuses it, unless the rows are ``held_out`` (a fold or an out-of-bag draw of the selector's own
    ``y``, whose model may have missed a rare class): it then adds a column of its own to the total
    sum of squares, over which the model's probability is 0.
    """
    info = explainer.model_info
    if info.second_order:  # the explainer matches a boosted classifier's labels itself
        return Target(y, y)
    if info.classes is None:
        if info.n_outputs > 1:
            raise UnsupportedModelError(
                f"{info.family} model with {info.n_outputs} outputs: RSquaredSelector selects features for "
                "single-output regressors and for forest classifiers."
            )
        return Target(y, y)
    labels = np.asarray(y)
    matches = match_labels(labels, info.classes)
    known = matches.any(axis=1)
    if not held_out:
        refuse_unknown_labels(labels, known, info.classes)
    model_columns = matches.astype(np.float64)
    codes, uniques = pd.factorize(labels[~known])
    unseen = np.zeros((len(labels), codes.max() + 1 if codes.size else 0))
    unseen[np.flatnonzero(~known), codes] = 1.0
    return Target(np.hstack([model_columns, unseen]), model_columns, np.asarray(uniques))


def pooled_means(explainer: RSquaredExplainer, target: Target, y: np.ndarray, w: np.ndarray):
    """The weighted mean over the pooled rows ``(y, w)`` of each column of ``target.all_columns``
    (a classifier's: each label's frequency there), and for a classifier the sum of the squared
    frequencies of the pooled labels these rows have no column for (each row is 0 there)."""
    total = w.sum()
    if not total > 0:
        return np.zeros(target.all_columns.shape[1:]), 0.0
    classes = explainer.model_info.classes
    if classes is None:
        return np.asarray(weighted_mean(y, w)), 0.0
    labels = np.asarray(y)
    known = match_labels(labels, classes)
    seen = known.any(axis=1) | np.isin(labels, target.unseen)
    indicators = [known, *[(labels == label)[:, None] for label in target.unseen]]
    codes, _ = pd.factorize(labels[~seen])
    absent = np.bincount(codes, weights=w[~seen]) / total if codes.size else np.zeros(0)
    return weighted_mean(np.hstack(indicators).astype(np.float64), w), float(absent @ absent)


def squares(Y: np.ndarray, w: np.ndarray, pooled: tuple[np.ndarray, float] | None = None) -> np.ndarray:
    """Each row's weighted squared deviation from the rows' weighted mean, summed over target
    columns; or from the ``pooled`` means, plus the squares of the columns the rows lack."""
    total = w.sum()
    if not total > 0:  # a fold whose rows all have weight 0 adds nothing
        return np.zeros(len(Y))
    means, absent = (weighted_mean(Y, w), 0.0) if pooled is None else pooled
    deviation = Y - means
    return w * ((deviation**2 if deviation.ndim == 1 else np.sum(deviation**2, axis=1)) + absent)
