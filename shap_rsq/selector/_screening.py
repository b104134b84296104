"""Helpers of :class:`~shap_rsq.RSquaredSelector`: the shares of one fitted model on some rows
(:func:`evaluate`, as :class:`~shap_rsq.selector._moments.Moments` that folds and row blocks add up), the
paper's two-stage screen, and out-of-fold shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import cross_validate
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _num_samples

from ..engine.estimates import Advice, Progress
from ..explainer._explainer import RSquaredExplainer
from ..tuning import DEFAULT_TUNING
from ._groups import PlayerMap
from ._moments import Moments, pooled_means, squares, target

__all__ = ["check_split_rows", "evaluate", "out_of_fold", "screen_and_fit", "subset_params"]


# --------------------------------------------------------------------------------------------- shares and SEs

# A long call's warning names the options of the selector its reader made, not those of the explainer
# made for them (``progress=``, ``estimate_rsq``), which they cannot reach; the bar shows as it does there.
SELECTOR_ADVICE = Advice(bar="", jobs="RSquaredSelector(n_jobs=-1)", sample="")


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
    explainer.progress = Progress(advice=SELECTOR_ADVICE)
    p = explainer.model_info.n_features if groups is None else len(groups)
    parsed = target(explainer, y, held_out=held_out)
    if explainer.model_info.second_order:  # D²: each row's deviance at the mean of y (or the pooled rows')
        s = explainer._null_deviances_of(y, w, pooled)
    else:
        with np.errstate(over="ignore"):  # an overflow is refused by name when the shares are read
            s = squares(parsed.all_columns, w, None if pooled is None else pooled_means(explainer, parsed, *pooled))
    sst, n = float(s.sum()), int(np.count_nonzero(w))
    y = parsed.model_columns
    # numerators, not shares: a held-out fold with a constant target still adds to the pooled shares
    if not np.any(w > 0):  # a fold whose rows all have weight 0 adds nothing
        return Moments(np.zeros(p), sst, n, *((np.zeros(p), np.zeros(p), 0.0) if per_row else ()))
    if not per_row:  # summed over rows the values come in the model's order, per row in X's
        order = _in_column_order(explainer, X, groups)
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
    return moments


def _in_column_order(explainer: RSquaredExplainer, X: Any, groups: dict | None) -> np.ndarray:
    """Indices that put the explainer's values summed over rows (in the model's feature order) in
    ``X``'s column order (its per-row values come in that order already).

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


def _contributions(explainer: RSquaredExplainer, X: Any, y: np.ndarray, w: np.ndarray, groups, p: int) -> np.ndarray:
    """Per-row numerators ``a_ij`` of the ``p`` players: each row's part of the squared-error reduction."""
    if not np.any(w > 0):
        return np.zeros((len(y), p))
    return _over_classes(explainer, _loss_reduction(explainer, X, y, w, True, groups))


def _loss_reduction(explainer: RSquaredExplainer, X: Any, y: np.ndarray, w: np.ndarray, local: bool, groups) -> Any:
    """The explainer's loss reductions; a classifier's of the one-hot ``model_columns`` of
    :func:`~shap_rsq.selector._moments.target` (rows of zeros where a held-out label is not among the
    model's classes)."""
    if not explainer.model_info.by_output:
        return explainer.loss_reduction(X, y, w, local=local, groups=groups)
    return explainer._class_loss_reduction(X, y, w, local=local, groups=groups)


def _over_classes(explainer: RSquaredExplainer, values: Any) -> np.ndarray:
    """Loss reductions summed over a forest classifier's classes (its last axis, even for one class): the Brier
    score's.  A boosted classifier's come summed over its classes already."""
    values = np.asarray(values, dtype=np.float64)
    return values if not explainer.model_info.by_output else values.sum(axis=-1)


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
    return unfitted_copy(estimator).fit(X, y, **fit_params)


def unfitted_copy(estimator: Any) -> Any:
    """scikit-learn's :func:`~sklearn.base.clone`, and a copy of the parameters of a CatBoost model
    that ``clone`` refuses.

    CatBoost's ``get_params`` hands out a new list for a list parameter (``cat_features=[0, 2]``),
    which ``clone``'s check that the new estimator holds the very object it was given refuses, so
    :class:`~sklearn.feature_selection.SelectFromModel` cannot fit such a model.  Its parameters are
    plain values, which a new estimator takes as they are.

    Parameters
    ----------
    estimator : estimator
        The unfitted tree model.

    Returns
    -------
    estimator
        A new, unfitted estimator with the same parameters.
    """
    try:
        return clone(estimator)
    except RuntimeError:
        if not type(estimator).__module__.startswith("catboost"):
            raise
        return type(estimator)(**estimator.get_params(deep=False))


def subset_params(params: dict, rows: np.ndarray, n_rows: int) -> dict:
    """Row-aligned fit parameters (sample_weight, eval sets aside) are subset with the rows."""

    def aligned(value):
        return hasattr(value, "__len__") and not isinstance(value, str) and _num_samples(value) == n_rows

    return {k: _safe_indexing(v, rows) if aligned(v) else v for k, v in params.items()}


def check_split_rows(splits: list, n_rows: int) -> None:
    """Refuse splits whose indices lie outside the rows: ``cv=list(splitter.split(X))`` made for
    the whole data, then used inside a cross-validation of a Pipeline, whose folds have fewer rows
    (scikit-learn's own cross-validation fails there with an ``IndexError``)."""
    largest = max(max((int(np.max(part, initial=-1)) for part in split), default=-1) for split in splits)
    if largest >= n_rows:
        raise ValueError(
            f"cv gives row index {largest}, and fit was given {n_rows} rows: a list of splits made for other "
            "data (such as the whole data, inside an outer cross-validation) does not fit these rows; pass "
            "a splitter (GroupKFold(5)) and the groups as fit(..., groups=groups) instead."
        )


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
    # numbers, not the vectors of sums a fold adds to the shares, so each fold's model is decomposed here.
    models, tests = _fold_models(estimator, X, y, fit_params, list(splits), n_jobs)
    # every fold's sum of squares about the mean of all held-out rows, as r2_score of the pooled
    # out-of-fold predictions takes it: about each fold's own mean, folds of a few rows shrank the
    # sums of squares and not the numerators (shares summing to 1.6 with 100 folds of 2 rows)
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
        for model, test in zip(models, tests, strict=True)
    ]
    return replace(sum(results[1:], results[0]), rows="every held-out fold of cv=")


def _fold_models(
    estimator: Any, X: Any, y: np.ndarray, fit_params: dict, splits: list, n_jobs: int | None
) -> tuple[list, list]:
    """Each fold's model, fitted on the other folds, and the fold's rows.

    scikit-learn's ``cross_validate`` fits them, in parallel; a model its ``clone`` refuses (CatBoost
    with a list parameter, :func:`unfitted_copy`) is fitted here, fold after fold."""
    try:
        clone(estimator)
    except RuntimeError:
        n = len(y)
        models = [
            _fit(estimator, _safe_indexing(X, train), y[train], subset_params(fit_params, train, n))
            for train, _ in splits
        ]
        return models, [np.asarray(test) for _, test in splits]
    # fit_params are already routed to the estimator's fit (an alias, my_w -> sample_weight, resolved):
    # with routing on, cross_validate would route them again and refuse the resolved names
    with config_context(enable_metadata_routing=False):
        folds = cross_validate(
            estimator,
            X,
            y,
            cv=splits,
            params=fit_params,
            n_jobs=n_jobs,
            scoring=_no_score,
            return_estimator=True,
            return_indices=True,
            error_score="raise",
        )
    return folds["estimator"], folds["indices"]["test"]


def _no_score(estimator: Any, X: Any, y: Any) -> float:
    """cross_validate always scores the folds; the shares are computed from the fitted models instead."""
    return 0.0
