"""The selection rule of :class:`~shap_rsq.RSquaredSelector`: thresholds, ``max_features`` and the support."""

from __future__ import annotations

import re
from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np

__all__ = ["check_max_features", "support_mask", "threshold_rule"]

# the scale is any text float() reads, as SelectFromModel reads it ('inf*mean' keeps nothing)
_SCALED = re.compile(r"^\s*(?:(?P<scale>[^*]+?)\s*\*\s*)?(?P<reference>mean|median)\s*$")
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

    Parameters
    ----------
    threshold : float, str or None
        As ``RSquaredSelector``'s ``threshold``.

    Returns
    -------
    callable
        ``rule(shares) -> float``, the cut-off for those shares.
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
        value = float(text)
    except ValueError:
        raise ValueError(f"threshold must be {_THRESHOLD_FORMS}; got {threshold!r}.") from None
    if value != value:  # 'nan*mean' kept nothing, silently
        raise ValueError(f"threshold={threshold!r} holds NaN, which no share compares with.")
    return value


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


def support_mask(
    shares: np.ndarray,
    rule: Callable[[np.ndarray], float],
    max_features: int | None,
    eligible: np.ndarray | None = None,
) -> np.ndarray:
    """Features whose share is at least the cut-off and, with ``max_features``, among the largest ones.

    As in ``SelectFromModel``, ties in the ranking are broken by column order (stable sort).

    Parameters
    ----------
    shares : ndarray of shape (n_features,)
        Each feature's share.
    rule : callable
        From :func:`threshold_rule`.
    max_features : int or None
        Keep at most this many.
    eligible : ndarray of bool, optional
        The features that may be selected at all (the cut-off is still over all shares).

    Returns
    -------
    ndarray of bool, shape (n_features,)
        The selected features.
    """
    mask = shares >= rule(shares)
    ranked = shares
    if eligible is not None:
        mask &= eligible
        ranked = np.where(eligible, shares, -np.inf)
    if max_features is not None:
        top = np.zeros(shares.shape, dtype=bool)
        top[np.argsort(-ranked, kind="mergesort")[:max_features]] = True
        mask &= top
    return mask


def check_max_features(value: Any, X: Any) -> int | None:
    """``max_features`` as a non-negative int (a callable is called on ``X``).

    Parameters
    ----------
    value : int, callable or None
        The selector's ``max_features``.
    X : array-like
        The rows given to ``fit``.

    Returns
    -------
    int or None
        The limit.
    """
    if value is None:
        return None
    result = value(X) if callable(value) else value
    if isinstance(result, bool) or not isinstance(result, Integral) or result < 0:
        raise ValueError(f"max_features must be a non-negative integer or a callable returning one; got {result!r}.")
    return int(result)
