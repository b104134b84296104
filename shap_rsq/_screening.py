"""Helpers of :class:`~shap_rsq.RSquaredSelector`: out-of-fold and bootstrap shares, standard errors.

Every share here is a ratio ``A_j / S``: ``A_j = sum_i a_ij`` adds the per-row contributions ``a_ij`` of
feature ``j`` to the reduction of the weighted squared error, and ``S = sum_i s_i`` with
``s_i = w_i (y_i - ybar_w)^2`` is the total sum of squares.  :class:`Moments` keeps the sums needed for
the shares and for their delta-method standard errors, so that folds and row blocks simply add up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import cross_validate
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _num_samples

from ._selector_groups import PlayerMap
from .engine.labels import match_labels, refuse_unknown_labels
from .engine.validation import check_squares_finite, weighted_mean
from .explainer import RSquaredExplainer
from .models.inspect import UnsupportedModelError
from .tuning import DEFAULT_TUNING

__all__ = ["Moments", "UndefinedScoreError", "evaluate", "out_of_fold", "screen_and_fit", "subset_params"]


# --------------------------------------------------------------------------------------------- shares and SEs


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


def evaluate(
    model: Any,
    X: Any,
    y: np.ndarray,
    w: np.ndarray,
    *,
    per_row: bool,
    n_jobs: int | None = None,
    block_entries: int = DEFAULT_TUNING.selector_block_entries,
    groups: dict | None = None,
    held_out: bool = False,
    pooled: tuple[np.ndarray, np.ndarray] | None = None,
) -> Moments:
    """Moments of ``model``'s R² decomposition on ``(X, y, w)`` (a classifier's: its Brier skill score).

    Without ``per_row`` this is one :meth:`RSquaredExplainer.loss_reduction` call (memory O(n + p)); with
    it, the per-row contributions are formed in row blocks of at most ``block_entries`` values.

    Parameters
    ----------
    model : estimator
        A fitted tree model (a regressor, or a forest classifier).
    X, y, w : array-like
        Rows, target (class labels for a classifier) and row weights.
    per_row : bool
        Keep the sums of squares of the per-row contributions, for standard errors.
    n_jobs : int, optional
        The explainer's worker processes.
    block_entries : int
        Largest block of per-row contributions formed at once.
    groups : dict, optional
        The explainer's ``groups=``: the moments are then the players' (see ``PlayerMap.explainer_groups``).
    held_out : bool, default=False
        The rows are held out from ``model``'s fit (a fold, out-of-bag rows): a classifier's label the
        model never saw counts with probability 0.  Otherwise such a label is refused by name.
    pooled : (y, w), optional
        The target and weights of all the rows these are pooled with (every held-out fold): the sum
        of squares is about their mean, as the R² of pooled out-of-fold predictions is.  Default:
        about the mean of ``y`` itself.

    Returns
    -------
    Moments
        The sums the shares and their standard errors are made of.
    """
    explainer = RSquaredExplainer(model, n_jobs=n_jobs)
    p = explainer.model_info.n_features if groups is None else len(groups)
    target = _target(explainer, y, held_out=held_out)
    with np.errstate(over="ignore"):  # an overflow is refused by name when the shares are read
        s = _squares(target.all_columns, w, None if pooled is None else _pooled_means(explainer, target, *pooled))
    sst, n = float(s.sum()), int(np.count_nonzero(w))
    y = target.model_columns
    # numerators, not shares: a held-out fold with a constant target still adds to the pooled shares
    if not np.any(w > 0):  # a fold whose rows all have weight 0 adds nothing
        return Moments(np.zeros(p), sst, n, *((np.zeros(p), np.zeros(p), 0.0) if per_row else ()))
    order = _in_column_order(explainer, X, groups)
    if not per_row:
        return Moments(_over_classes(explainer, _loss_reduction(explainer, X, y, w, False, groups))[order], sst, n)
    moments = Moments(np.zeros(p), sst, n, np.zeros(p), np.zeros(p), float(s @ s))
    n_rows = len(y)
    step = max(2, block_entries // max(p * explainer.model_info.n_outputs, 1))
    for start in range(0, n_rows, step):
        rows = np.arange(start, min(n_rows, start + step))
        a = _contributions(explainer, _safe_indexing(X, rows), y[rows], w[rows], groups, p)
        moments.a += a.sum(axis=0)
        moments.aa += np.einsum("ij,ij->j", a, a)
        moments.as_ += s[rows] @ a
    return Moments(moments.a[order], sst, n, moments.aa[order], moments.as_[order], moments.ss)


def _in_column_order(explainer: RSquaredExplainer, X: Any, groups: dict | None) -> np.ndarray:
    """Indices that put the explainer's values (in the model's feature order) in ``X``'s column order.

    The explainer matches a DataFrame's columns to the model's features by name, so a prefit model
    given its columns in another order returns its shares in its own order; the selector's masks
    are over ``X``'s columns.  Groups are named, and come back in the order they were given.
    """
    model_names = explainer.model_info.feature_names
    columns = getattr(X, "columns", None)
    identity = np.arange(explainer.model_info.n_features if groups is None else len(groups))
    if groups is not None or model_names is None or columns is None:
        return identity
    position = {str(name): j for j, name in enumerate(model_names)}
    names = [str(c) for c in columns]
    if sorted(names) != sorted(position):
        return identity  # the explainer has already refused names that do not match
    return np.array([position[name] for name in names])


@dataclass(frozen=True)
class _Target:
    """What the explainer decomposes (``model_columns``) and what the total sum of squares is over.

    For a regressor both are ``y``.  For a classifier the score is the Brier skill score: the
    squared error of the one-hot target over every class, the model's and those of ``y`` (a held-out
    fold or an out-of-bag draw may hold a label the fold's model never saw: its probability is 0).
    """

    all_columns: np.ndarray
    model_columns: np.ndarray
    unseen: np.ndarray | None = None  # a classifier's labels of the columns past the model's classes


def _target(explainer: RSquaredExplainer, y: np.ndarray, *, held_out: bool = False) -> _Target:
    """The target the explainer plays and the one the sum of squares is over (see :class:`_Target`).

    A classifier's labels are matched to its ``classes_`` by value, as the explainer matches them
    (``1.0`` is the class ``1``, text held as objects or as a Categorical is the same text held as
    ``<U``), whatever the dtypes.  A label the model never saw is refused by name, as the explainer
    refuses it, unless the rows are ``held_out`` (a fold or an out-of-bag draw of the selector's own
    ``y``, whose model may have missed a rare class): it then adds a column of its own to the total
    sum of squares, over which the model's probability is 0.
    """
    info = explainer.model_info
    if info.classes is None:
        if info.n_outputs > 1:
            raise UnsupportedModelError(
                f"{info.family} model with {info.n_outputs} outputs: RSquaredSelector selects features for "
                "single-output regressors and for forest classifiers."
            )
        return _Target(y, y)
    labels = np.asarray(y)
    matches = match_labels(labels, info.classes)
    known = matches.any(axis=1)
    if not held_out:
        refuse_unknown_labels(labels, known, info.classes)
    model_columns = matches.astype(np.float64)
    codes, uniques = pd.factorize(labels[~known])
    unseen = np.zeros((len(labels), codes.max() + 1 if codes.size else 0))
    unseen[np.flatnonzero(~known), codes] = 1.0
    return _Target(np.hstack([model_columns, unseen]), model_columns, np.asarray(uniques))


def _pooled_means(explainer: RSquaredExplainer, target: _Target, y: np.ndarray, w: np.ndarray):
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


def _squares(Y: np.ndarray, w: np.ndarray, pooled: tuple[np.ndarray, float] | None = None) -> np.ndarray:
    """Each row's weighted squared deviation from the rows' weighted mean, summed over target
    columns; or from the ``pooled`` means, plus the squares of the columns the rows lack."""
    total = w.sum()
    if not total > 0:  # a fold whose rows all have weight 0 adds nothing
        return np.zeros(len(Y))
    means, absent = (weighted_mean(Y, w), 0.0) if pooled is None else pooled
    deviation = Y - means
    return w * ((deviation**2 if deviation.ndim == 1 else np.sum(deviation**2, axis=1)) + absent)


def _contributions(explainer: RSquaredExplainer, X: Any, y: np.ndarray, w: np.ndarray, groups, p: int) -> np.ndarray:
    """Per-row numerators ``a_ij`` of the ``p`` players: each row's part of the squared-error reduction."""
    if not np.any(w > 0):
        return np.zeros((len(y), p))
    return _over_classes(explainer, _loss_reduction(explainer, X, y, w, True, groups))


def _loss_reduction(explainer: RSquaredExplainer, X: Any, y: np.ndarray, w: np.ndarray, local: bool, groups) -> Any:
    """The explainer's loss reductions; a classifier's of the one-hot ``model_columns`` of :func:`_target`
    (rows of zeros where a held-out label is not among the model's classes)."""
    if explainer.model_info.classes is None:
        return explainer.loss_reduction(X, y, w, local=local, groups=groups)
    return explainer._class_loss_reduction(X, y, w, local=local, groups=groups)


def _over_classes(explainer: RSquaredExplainer, values: Any) -> np.ndarray:
    """Loss reductions summed over a classifier's classes (its last axis, even for one class): the Brier score's."""
    values = np.asarray(values, dtype=np.float64)
    return values if explainer.model_info.classes is None else values.sum(axis=-1)


def screen_and_fit(
    estimator: Any,
    X: Any,
    y: np.ndarray,
    w: np.ndarray,
    fit_params: dict,
    screen: int | None,
    n_jobs=None,
    players: PlayerMap | None = None,
) -> tuple[np.ndarray, np.ndarray | None, Any]:
    """Fit ``estimator`` on all columns or, with ``screen``, on the ``screen`` players of largest in-sample share.

    ``w`` weights the first round's R²; ``fit_params`` (``sample_weight`` included, if the estimator is to
    be weighted) go to every fit.  Returns the kept columns, the first round's shares (or None) and the
    fitted final model.

    Parameters
    ----------
    estimator : estimator
        The unfitted tree model.
    X, y, w : array-like
        Rows, target and the weights of the first round's R².
    fit_params : dict
        Passed to every fit.
    screen : int or None
        Players kept after the first round; ``None`` fits once on all columns.
    n_jobs : int, optional
        The explainer's worker processes.
    players : PlayerMap, optional
        The players (groups of columns); by default every column.

    Returns
    -------
    columns : ndarray of int
        The kept columns (all columns of the kept players), in order.
    first_shares : ndarray or None
        The first round's in-sample shares, per player.
    model : estimator
        The final model, fitted on ``columns``.
    """
    players = PlayerMap.single(X.shape[1]) if players is None else players
    columns, first_shares = np.arange(X.shape[1]), None
    if screen is not None and screen < players.n_players:
        first = _fit(estimator, X, y, fit_params)
        groups = players.explainer_groups(columns)
        first_shares = evaluate(first, X, y, w, per_row=False, n_jobs=n_jobs, groups=groups).shares
        del first  # the first model of a wide screen can be large
        columns = players.top_columns(first_shares, screen)
        X = _safe_indexing(X, columns, axis=1)
    return columns, first_shares, _fit(estimator, X, y, fit_params)


def _fit(estimator: Any, X: Any, y: np.ndarray, fit_params: dict) -> Any:
    return clone(estimator).fit(X, y, **fit_params)


def subset_params(params: dict, rows: np.ndarray, n_rows: int) -> dict:
    """Row-aligned fit parameters (sample_weight, eval sets aside) are subset with the rows."""

    def aligned(value):
        return hasattr(value, "__len__") and not isinstance(value, str) and _num_samples(value) == n_rows

    return {k: _safe_indexing(v, rows) if aligned(v) else v for k, v in params.items()}


def out_of_fold(
    estimator: Any,
    X: Any,
    y: np.ndarray,
    w: np.ndarray,
    fit_params: dict,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    per_row: bool,
    n_jobs: int | None,
    groups: dict | None = None,
) -> Moments:
    """Pooled held-out moments: each fold's model is fitted on the other folds and decomposed on its own rows.

    Parameters
    ----------
    estimator : estimator
        The unfitted tree model; a clone is fitted per fold.
    X, y, w : array-like
        Rows, target and the weights of the held-out R².
    fit_params : dict
        Passed to each fit; row-aligned ones (``sample_weight``) are subset with the folds.
    splits : sequence of (train, test) index arrays
        The folds.
    per_row : bool
        Keep the sums of squares of the per-row contributions, for standard errors.
    n_jobs : int or None
        Processes over folds.
    groups : dict, optional
        The explainer's ``groups=``, for the players' moments.

    Returns
    -------
    Moments
        The folds' moments, added up.
    """
    # scikit-learn fits the folds (in parallel, fit parameters subset with the rows); its scorers return
    # numbers, not the vectors of sums a fold adds to the shares, so each fold's model is decomposed here
    folds = cross_validate(
        estimator,
        X,
        y,
        cv=list(splits),
        params=fit_params,
        n_jobs=n_jobs,
        scoring=_no_score,
        return_estimator=True,
        return_indices=True,
        error_score="raise",
    )
    # every fold's sum of squares about the mean of all held-out rows, as r2_score of the pooled
    # out-of-fold predictions takes it: about each fold's own mean, folds of a few rows shrank the
    # sums of squares and not the numerators (shares summing to 1.6 with 100 folds of 2 rows)
    tests = folds["indices"]["test"]
    held = np.concatenate(tests)
    results = [
        evaluate(
            model,
            _safe_indexing(X, test),
            y[test],
            w[test],
            per_row=per_row,
            groups=groups,
            held_out=True,
            pooled=(y[held], w[held]),
        )
        for model, test in zip(folds["estimator"], tests, strict=True)
    ]
    return replace(sum(results[1:], results[0]), rows="every held-out fold of cv=")


def _no_score(estimator: Any, X: Any, y: Any) -> float:
    """cross_validate always scores the folds; the shares are computed from the fitted models instead."""
    return 0.0
