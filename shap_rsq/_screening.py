"""Helpers of :class:`~shap_rsq.RSquaredSelector`: thresholds, out-of-fold and bootstrap shares, standard errors.

Every share here is a ratio ``A_j / S``: ``A_j = sum_i a_ij`` adds the per-row contributions ``a_ij`` of
feature ``j`` to the reduction of the weighted squared error, and ``S = sum_i s_i`` with
``s_i = w_i (y_i - ybar_w)^2`` is the total sum of squares.  :class:`Moments` keeps the sums needed for
the shares and for their delta-method standard errors, so that folds and row blocks simply add up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import cross_validate
from sklearn.utils import _safe_indexing, resample
from sklearn.utils.validation import _num_samples

from .explainer import RSquaredExplainer
from .models.inspect import UnsupportedModelError
from .tuning import DEFAULT_TUNING

__all__ = [
    "Moments",
    "bootstrap_shares",
    "check_max_features",
    "evaluate",
    "out_of_fold",
    "screen_and_fit",
    "support_mask",
    "threshold_rule",
]


_SCALED = re.compile(r"^\s*(?:(?P<scale>[-+0-9.eE]+)\s*\*\s*)?(?P<reference>mean|median)\s*$")
_CUMULATIVE = re.compile(r"^\s*cumulative\s*:\s*(?P<fraction>[-+0-9.eE]+)\s*$")
_THRESHOLD_FORMS = (
    "a float, 'mean', 'median', a scaled reference such as '1.5*mean' or '0.5*median', "
    "or 'cumulative:<fraction>' with a fraction in (0, 1] such as 'cumulative:0.95'"
)


# --------------------------------------------------------------------------------------------- selection rule


def threshold_rule(threshold: float | str | None) -> Callable[[np.ndarray], float]:
    """Parse ``threshold`` once into a function of the shares that returns the cut-off.

    Raises ``ValueError`` naming the accepted forms for a string it cannot read, so that a typo fails in
    ``fit`` rather than at the first ``transform``.
    """
    # SelectFromModel's parser is private, knows no 'cumulative:f' and fails only at transform
    # (tests/test_library_choices.py); the forms it does read give the same cut-off here
    if threshold is None:
        threshold = "mean"  # scikit-learn's SelectFromModel default
    if not isinstance(threshold, str):
        value = float(threshold)
        return lambda shares: value
    scaled = _SCALED.match(threshold)
    if scaled:
        scale = _parse_number(scaled["scale"] or "1", threshold)
        reference = np.mean if scaled["reference"] == "mean" else np.median
        return lambda shares: scale * float(reference(shares))
    cumulative = _CUMULATIVE.match(threshold)
    if cumulative:
        fraction = _parse_number(cumulative["fraction"], threshold)
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"The fraction in threshold={threshold!r} must be in (0, 1]; got {fraction}.")
        return lambda shares: _cumulative_cut(shares, fraction)
    raise ValueError(f"threshold must be {_THRESHOLD_FORMS}; got {threshold!r}.")


def _parse_number(text: str, threshold: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"threshold must be {_THRESHOLD_FORMS}; got {threshold!r}.") from None


def _cumulative_cut(shares: np.ndarray, fraction: float) -> float:
    """Smallest kept share of the shortest top list whose positive shares reach ``fraction`` of their sum.

    Only positive shares count: features with negative shares (they make held-out predictions worse)
    never help reach the target, and normalising by the positive sum makes every fraction reachable.
    """
    positive = np.sort(shares[shares > 0])[::-1]
    if positive.size == 0:
        return np.inf  # nothing explains anything: the smallest set reaching 0 is empty
    running = np.cumsum(positive)
    # the target uses the same summation as the running sums, so fraction=1 reaches exactly the last one
    k = int(np.searchsorted(running, fraction * running[-1], side="left"))
    return float(positive[min(k, positive.size - 1)])


def support_mask(shares: np.ndarray, rule: Callable[[np.ndarray], float], max_features: int | None) -> np.ndarray:
    """Features whose share is at least the cut-off and, with ``max_features``, among the largest ones.

    As in ``SelectFromModel``, ties in the ranking are broken by column order (stable sort).
    """
    mask = shares >= rule(shares)
    if max_features is not None:
        top = np.zeros(shares.shape, dtype=bool)
        top[np.argsort(-shares, kind="mergesort")[:max_features]] = True
        mask &= top
    return mask


# --------------------------------------------------------------------------------------------- shares and SEs


@dataclass
class Moments:
    """Sums over evaluation rows from which shares and their standard errors follow.

    ``aa``, ``as_`` and ``ss`` (sums of ``a_ij^2``, ``a_ij s_i`` and ``s_i^2``) are only kept when
    per-row contributions were computed.
    """

    a: np.ndarray
    sst: float
    n: int
    aa: np.ndarray | None = None
    as_: np.ndarray | None = None
    ss: float = 0.0

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
        )

    @property
    def shares(self) -> np.ndarray:
        if not self.sst > 0:
            raise ValueError(
                "y is constant over the rows the model is evaluated on (every held-out fold, with cv=), "
                "so R² is undefined."
            )
        return self.a / self.sst

    def standard_errors(self) -> np.ndarray:
        """Delta-method standard error of the ratio ``A_j / S`` over i.i.d. rows, the model(s) held fixed.

        Linearising, ``A_j/S - R_j ~ sum_i (a_ij - R_j s_i) / S``, whose terms have mean zero, so
        ``SE_j^2 = n/(n-1) sum_i d_ij^2 / S^2`` with ``d_ij = a_ij - R_j s_i``.  ``sum_i d_ij^2`` is expanded
        into the kept sums so that no ``(n, p)`` array needs to outlive a row block.
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
) -> Moments:
    """Moments of ``model``'s R² decomposition on ``(X, y, w)``.

    Without ``per_row`` this is one :meth:`RSquaredExplainer.rsq` call (memory O(n + p)); with it, the
    per-row contributions are formed in row blocks of at most ``block_entries`` values.
    """
    s = _squares(y, w)
    sst, n = float(s.sum()), int(np.count_nonzero(w))
    explainer = RSquaredExplainer(model, n_jobs=n_jobs)
    if explainer.model_info.n_outputs > 1:
        raise UnsupportedModelError(
            f"{type(model).__name__} has {explainer.model_info.n_outputs} outputs; RSquaredSelector selects "
            "features for single-output regressors."
        )
    # numerators, not shares: a held-out fold with a constant target still adds to the pooled shares
    if not np.any(w > 0):  # a fold whose rows all have weight 0 adds nothing
        p = explainer.model_info.n_features
        return Moments(np.zeros(p), sst, n, *((np.zeros(p), np.zeros(p), 0.0) if per_row else ()))
    if not per_row:
        return Moments(np.asarray(explainer.loss_reduction(X, y, w), dtype=np.float64), sst, n)
    p = explainer.model_info.n_features
    moments = Moments(np.zeros(p), sst, n, np.zeros(p), np.zeros(p), float(s @ s))
    n_rows = len(y)
    step = max(2, block_entries // max(p, 1))
    for start in range(0, n_rows, step):
        rows = np.arange(start, min(n_rows, start + step))
        a = _contributions(explainer, _safe_indexing(X, rows), y[rows], w[rows])
        moments.a += a.sum(axis=0)
        moments.aa += np.einsum("ij,ij->j", a, a)
        moments.as_ += s[rows] @ a
    return moments


def _squares(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    total = w.sum()
    if not total > 0:  # a fold whose rows all have weight 0 adds nothing
        return np.zeros_like(y)
    return w * (y - (w @ y) / total) ** 2


def _contributions(explainer: RSquaredExplainer, X: Any, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per-row numerators ``a_ij``: each row's part of the squared-error reduction."""
    if not np.any(w > 0):
        return np.zeros((len(y), explainer.model_info.n_features))
    return explainer.loss_reduction(X, y, w, local=True)


def screen_and_fit(
    estimator: Any, X: Any, y: np.ndarray, w: np.ndarray, fit_params: dict, screen: int | None, n_jobs=None
) -> tuple[np.ndarray, np.ndarray | None, Any]:
    """Fit ``estimator`` on all columns or, with ``screen``, on the ``screen`` columns of largest in-sample share.

    ``w`` weights the first round's R²; ``fit_params`` (``sample_weight`` included, if the estimator is to
    be weighted) go to every fit.  Returns the kept columns, the first round's shares (or None) and the
    fitted final model.
    """
    p = X.shape[1]
    columns, first_shares = np.arange(p), None
    if screen is not None and screen < p:
        first = _fit(estimator, X, y, fit_params)
        first_shares = evaluate(first, X, y, w, per_row=False, n_jobs=n_jobs).shares
        del first  # the first model of a wide screen can be large
        columns = np.sort(np.argsort(-first_shares, kind="mergesort")[:screen])
        X = _safe_indexing(X, columns, axis=1)
    return columns, first_shares, _fit(estimator, X, y, fit_params)


def _fit(estimator: Any, X: Any, y: np.ndarray, fit_params: dict) -> Any:
    return clone(estimator).fit(X, y, **fit_params)


def _subset_params(params: dict, rows: np.ndarray, n_rows: int) -> dict:
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
    results = [
        evaluate(model, _safe_indexing(X, test), y[test], w[test], per_row=per_row)
        for model, test in zip(folds["estimator"], folds["indices"]["test"], strict=True)
    ]
    return sum(results[1:], results[0])


def _no_score(estimator: Any, X: Any, y: Any) -> float:
    """cross_validate always scores the folds; the shares are computed from the fitted models instead."""
    return 0.0


def bootstrap_shares(
    estimator: Any,
    X: Any,
    y: np.ndarray,
    w: np.ndarray,
    fit_params: dict,
    *,
    screen: int | None,
    out_of_bag: bool,
    n_bootstrap: int,
    random_state: np.random.RandomState,
    n_jobs: int | None,
) -> np.ndarray:
    """Shares of ``n_bootstrap`` refits on rows drawn with replacement, shape ``(n_bootstrap, p)``.

    Each replicate repeats the whole procedure (screen, refit) on its rows and is decomposed on them, or on
    the rows it did not draw when ``out_of_bag``.  Indices are drawn up front, so results do not depend on
    ``n_jobs``.
    """
    n = len(y)
    draws = [resample(np.arange(n), random_state=random_state) for _ in range(n_bootstrap)]
    return np.vstack(
        Parallel(n_jobs=n_jobs)(
            delayed(_replicate)(estimator, X, y, w, fit_params, rows, screen, out_of_bag) for rows in draws
        )
    )


def _replicate(estimator, X, y, w, fit_params, rows, screen, out_of_bag) -> np.ndarray:
    n = len(y)
    Xb, yb, wb = _safe_indexing(X, rows), y[rows], w[rows]
    columns, _, model = screen_and_fit(estimator, Xb, yb, wb, _subset_params(fit_params, rows, n), screen)
    if out_of_bag:
        del Xb  # as large as X: drop it before the out-of-bag rows are copied
        held = np.setdiff1d(np.arange(n), rows)
        Xe, ye, we = _take(X, held, columns), y[held], w[held]
    else:  # in sample: the resample already holds the rows
        Xe, ye, we = _take(Xb, None, columns), yb, wb
    shares = np.zeros(X.shape[1])
    shares[columns] = evaluate(model, Xe, ye, we, per_row=False).shares
    return shares


def _take(X: Any, rows: np.ndarray | None, columns: np.ndarray) -> Any:
    """``X[rows][:, columns]`` copying no more than the result (``rows=None``: all rows, ``columns`` sorted)."""
    if columns.size < X.shape[1]:  # columns first: with a screen they are few, and all of them need no copy
        X = _safe_indexing(X, columns, axis=1)
    return X if rows is None else _safe_indexing(X, rows)


def check_max_features(value: Any, X: Any) -> int | None:
    """``max_features`` as a non-negative int (a callable is called on ``X``)."""
    if value is None:
        return None
    result = value(X) if callable(value) else value
    if isinstance(result, bool) or not isinstance(result, Integral) or result < 0:
        raise ValueError(f"max_features must be a non-negative integer or a callable returning one; got {result!r}.")
    return int(result)
