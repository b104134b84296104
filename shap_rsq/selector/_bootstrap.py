"""Bootstrap replicates of :class:`~shap_rsq.RSquaredSelector`: refits on rows drawn with replacement.

Each replicate repeats the selector's whole procedure (screen, refit) on its draw and is decomposed
in sample or on its out-of-bag rows; a replicate whose rows all have one target value has no R²
and is kept as a row of NaN, so that ``bootstrap_rsq_`` keeps one row per draw.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils import _safe_indexing, resample

from ..engine.rows import user_stacklevel
from ._groups import PlayerMap
from ._moments import UndefinedScoreError
from ._screening import evaluate, screen_and_fit, subset_params
from ._selection_rule import support_mask

__all__ = ["bootstrap_shares", "check_replicates", "defined_replicates", "selection_frequency"]


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
    players: PlayerMap | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Shares of ``n_bootstrap`` refits on rows drawn with replacement, shape ``(n_bootstrap, n_players)``.

    Each replicate repeats the whole procedure (screen, refit) on its rows and is decomposed on them, or on
    the rows it did not draw when ``out_of_bag``.  Indices are drawn up front, so results do not depend on
    ``n_jobs``.

    Parameters
    ----------
    estimator : estimator
        The unfitted tree model.
    X, y, w : array-like
        Rows, target and the weights of the R².
    fit_params : dict
        Passed to every fit; row-aligned ones are drawn with the rows.
    screen : int or None
        As in :func:`screen_and_fit`.
    out_of_bag : bool
        Decompose each replicate on the rows it did not draw.
    n_bootstrap : int
        Number of replicates.
    random_state : numpy.random.RandomState
        The source of the draws.
    n_jobs : int or None
        Processes over replicates.
    players : PlayerMap, optional
        The players (groups of columns); by default every column.

    Returns
    -------
    shares : ndarray of shape (n_bootstrap, n_players)
        Every replicate's shares (0 for screened-out players; NaN for a replicate whose rows all
        have the same target, on which R² is undefined).
    kept : ndarray of bool of shape (n_bootstrap, n_players)
        The players each replicate's screen kept (all without a screen).
    """
    n = len(y)
    players = PlayerMap.single(X.shape[1]) if players is None else players
    draws = [resample(np.arange(n), random_state=random_state) for _ in range(n_bootstrap)]
    shares, kept = zip(
        *Parallel(n_jobs=n_jobs)(
            delayed(_replicate)(estimator, X, y, w, fit_params, rows, screen, out_of_bag, players) for rows in draws
        ),
        strict=True,
    )
    return np.vstack(shares), np.vstack(kept)


def selection_frequency(shares: np.ndarray, kept: np.ndarray | None, rule, limit: int | None) -> np.ndarray:
    """Per player, the fraction of defined replicates whose shares ``(n_bootstrap, n_players)`` the rule
    selects it in; only among the players the replicate's screen ``kept``, as the fit selects."""
    defined = defined_replicates(shares)
    eligible = np.ones(shares.shape, dtype=bool) if kept is None else kept
    selected = [support_mask(s, rule, limit, e) for s, e in zip(shares[defined], eligible[defined], strict=True)]
    return np.mean(selected, axis=0)


def defined_replicates(shares: np.ndarray) -> np.ndarray:
    """``(n_bootstrap,)`` True for the replicates on which R² is defined (rows without NaN)."""
    return ~np.isnan(shares).any(axis=1)


def check_replicates(shares: np.ndarray, *, out_of_bag: bool, screen: bool = False) -> None:
    """Warn of bootstrap replicates on which R² is undefined (NaN rows); refuse fewer than two defined.

    With ``screen``, a replicate is also undefined when its drawn rows have one target value: the
    screen ranks the columns by their in-sample shares on those rows.
    """
    defined = int(defined_replicates(shares).sum())
    undefined = len(shares) - defined
    rows = "out-of-bag rows" if out_of_bag else "rows"
    if screen and out_of_bag:
        rows = "drawn rows (which the screen ranks on) or out-of-bag rows"
    said = (
        f"{undefined} of {len(shares)} bootstrap replicates have one target value (one class) on their "
        f"{rows}, where R² is undefined"
    )
    if defined < 2:
        raise ValueError(f"{said}, leaving fewer than 2 for a standard error.  Pass more rows or uncertainty='se'.")
    if undefined:
        warnings.warn(
            f"{said}: their rows of bootstrap_rsq_ are NaN and are left out of feature_rsq_se_ and "
            "selection_frequency_.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _replicate(
    estimator, X, y, w, fit_params, rows, screen, out_of_bag, players: PlayerMap
) -> tuple[np.ndarray, np.ndarray]:
    """The replicate's shares ``(n_players,)``, and the players its screen kept."""
    n = len(y)
    Xb, yb, wb = _safe_indexing(X, rows), y[rows], w[rows]
    params = subset_params(fit_params, rows, n)
    try:
        columns, _, model = screen_and_fit(estimator, Xb, yb, wb, params, screen, players=players)
    except UndefinedScoreError:  # the screen ranks by in-sample shares, undefined on a draw of one target value
        return np.full(players.n_players, np.nan), np.ones(players.n_players, dtype=bool)
    if out_of_bag:
        del Xb  # as large as X: drop it before the out-of-bag rows are copied
        held = np.setdiff1d(np.arange(n), rows)
        Xe, ye, we = _take(X, held, columns), y[held], w[held]
    else:  # in sample: the resample already holds the rows
        Xe, ye, we = _take(Xb, None, columns), yb, wb
    groups = players.explainer_groups(columns)
    moments = evaluate(model, Xe, ye, we, per_row=False, groups=groups, held_out=out_of_bag)
    kept = players.embed(np.ones(len(moments.a)), columns) > 0
    if not moments.sst > 0:  # its rows share one target value (one class): R² is undefined there
        return np.full(players.n_players, np.nan), kept
    return players.embed(moments.shares, columns), kept


def _take(X: Any, rows: np.ndarray | None, columns: np.ndarray) -> Any:
    """``X[rows][:, columns]`` copying no more than the result (``rows=None``: all rows, ``columns`` sorted)."""
    if columns.size < X.shape[1]:  # columns first: with a screen they are few, and all of them need no copy
        X = _safe_indexing(X, columns, axis=1)
    return X if rows is None else _safe_indexing(X, rows)
