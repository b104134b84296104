"""An opt-in estimate of the R² shares from a random sample of rows, with standard errors.

For fully grown trees the exact shares cost at least ``leaves²`` per row (``docs/method.md``,
"Deep trees"): a forest of 100 fully grown trees on 2,000 rows is estimated at 46 hours.  The shares
are a sum over rows of each row's own contribution (its Shapley values of the tree games, which
depend on that row alone), so a simple random sample of rows, evaluated exactly, gives an unbiased
estimate of the total with a standard error, at the cost of the sampled rows only.  Nothing here
is approximated silently: :meth:`RSquaredExplainer.rsq` stays exact, and this is asked for by name.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .engine.budget import MemoryBudgetError, fit_jobs

__all__ = ["RsqEstimate", "estimate_rsq"]


@dataclass(frozen=True)
class RsqEstimate:
    """Estimated shares of R² and their standard errors.

    Attributes
    ----------
    values : ndarray of shape (n_features,)
        Unbiased estimates of :meth:`RSquaredExplainer.rsq`'s shares.
    standard_error : ndarray of shape (n_features,)
        Standard error of each estimate (sampling without replacement: zero when every row
        was sampled).
    n_sampled, n_rows : int
        Rows evaluated exactly, and rows in ``X``.
    """

    values: np.ndarray
    standard_error: np.ndarray
    n_sampled: int
    n_rows: int


def estimate_rsq(
    explainer, X: Any, y: Any, sample_weight: Any = None, *, n_sample: int = 500, random_state=None
) -> RsqEstimate:
    """Estimate each feature's share of R² from ``n_sample`` rows drawn at random.

    Parameters
    ----------
    explainer : RSquaredExplainer
        A single-output explainer.
    X, y, sample_weight
        As in :meth:`RSquaredExplainer.rsq`; ``SST`` is computed on all rows.
    n_sample : int, default=500
        Rows drawn without replacement and evaluated exactly; the time is that of
        ``explainer(X_sample, y_sample)``.  All rows when ``n_sample >= len(X)`` (then the
        values are exact and the standard errors zero).
    random_state : int or numpy Generator, optional
        Seed of the draw.

    Returns
    -------
    RsqEstimate
        ``n / m`` times the sampled rows' exact contributions, with the standard error of that
        total (finite-population corrected).

    Notes
    -----
    The estimate is unbiased; the standard error is the usual one of a sample mean, and an
    interval of +-1.96 of them covers the exact share about 95% of the time only when the rows'
    contributions to it are not heavy-tailed.  A feature whose share comes from a few rows (per-row
    contributions with a skewness of 10-20, as on a depth-7 forest whose rare splits isolate
    outliers) was covered 44-76% of the time at ``n_sample`` 60-200: draw more rows, or compute it
    exactly with ``rsq``.
    """
    if explainer.model_info.by_output:
        raise NotImplementedError("estimate_rsq supports single-output regressors only.")
    if isinstance(n_sample, bool) or not isinstance(n_sample, numbers.Integral):
        raise ValueError(f"n_sample must be an integer number of rows; got {n_sample!r}.")
    if int(n_sample) < 2:
        raise ValueError(f"n_sample must be at least 2 (a standard error needs two rows); got {n_sample!r}.")
    rows, target, weights, sst = explainer._inputs(X, y, sample_weight)
    n = len(target)
    m = min(int(n_sample), n)
    _check_sample_budget(explainer, m)
    pick = np.sort(np.random.default_rng(random_state).choice(n, size=m, replace=False))
    raw = explainer._decompose(rows.array[pick], target[pick], weights[pick], local=True).values
    values = raw.mean(axis=0) * n / sst
    spread = raw.std(axis=0, ddof=1) * n / np.sqrt(m) * np.sqrt(max(0.0, 1.0 - m / n))
    return RsqEstimate(values, spread / sst, m, n)


def _check_sample_budget(explainer, m: int) -> None:
    """Refuse a sample whose per-row contributions cannot fit the budget, before its rows are copied."""
    units = explainer._units.units(True)
    forest = explainer.forest
    try:
        fit_jobs(units, m, forest.n_players, forest.n_trees, True, explainer.n_jobs, explainer._tuning)
    except MemoryBudgetError as error:
        raise MemoryBudgetError(f"estimate_rsq(n_sample={m}): {error}  Here, pass a smaller n_sample.") from None
