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
import pandas as pd

from ..engine.budget import MemoryBudgetError, fit_jobs, rows_per_block
from ..engine.estimates import warn_if_long_sample
from ..engine.losses import TreeLosses
from ..engine.run import decompose
from ._additive_part import AdditivePart, additive_part
from ._groups import player_index

__all__ = ["RsqEstimate", "estimate_rsq"]


@dataclass(frozen=True)
class RsqEstimate:
    """Estimated shares of R² and their standard errors, as :func:`estimate_rsq` returns them.

    Parameters
    ----------
    values : ndarray or pandas Series of shape (n_features,)
        Unbiased estimates of :meth:`RSquaredExplainer.rsq`'s shares, labelled as ``rsq`` labels
        them (a Series indexed by the columns and named for the score, ``"R²"``, ``"Brier skill
        score"`` or ``"D² (log-loss)"``..., for a DataFrame; an array in the model's feature order
        for an array).  A booster's Series holds in its ``attrs``, exactly, the model's D², that of
        ``E f`` and the change between them (``model_score``, ``mean_score``, ``exact_change``), as
        ``rsq``'s does; the shares estimate the second-order expansion of that change.
    standard_error : ndarray or pandas Series of shape (n_features,)
        Standard error of each estimate, labelled the same way (sampling without replacement:
        zero when every row with positive weight was sampled).
    n_sampled : int
        Rows evaluated exactly.
    n_rows : int
        Rows in ``X``.
    """

    values: np.ndarray | pd.Series
    standard_error: np.ndarray | pd.Series
    n_sampled: int
    n_rows: int


def estimate_rsq(
    explainer,
    X: Any,
    y: Any,
    sample_weight: Any = None,
    *,
    n_sample: int = 500,
    random_state=None,
    control_variate: bool = True,
    groups: Any = None,
) -> RsqEstimate:
    """Estimate each feature's share of R² from ``n_sample`` rows drawn at random.

    Parameters
    ----------
    explainer : RSquaredExplainer
        An explainer of any model :meth:`rsq` decomposes: a squared-error regressor (of several
        outputs: shares of their mean R², each output's games over its own ``SST``), a forest
        classifier (shares of its Brier skill score) or a booster of another loss (shares of its D²
        through each tree's second-order game, a softmax's classes with the margins the other classes
        reach), each output's or class's games summed row by row as :meth:`rsq` sums them.
    X, y, sample_weight
        As in :meth:`RSquaredExplainer.rsq`; the score's denominator (``SST``, or the deviance of
        the mean of ``y``) is computed on all rows.
    n_sample : int, default=500
        Rows drawn without replacement and evaluated exactly; the time is that of
        ``explainer(X_sample, y_sample)``.  They are drawn from the rows with positive weight (a
        row of weight 0 contributes exactly 0); all of them when ``n_sample`` is at least their
        number (then the values are exact and the standard errors zero).
    random_state : int or numpy Generator, optional
        Seed of the draw.
    groups : dict of str to list, optional
        Grouped features as single players, as :meth:`RSquaredExplainer.rsq` takes them (their
        additive part from this package's TreeSHAP of the grouped players, not shap's).
    control_variate : bool, default=True
        Sample only what is not additive: each row's contributions, were each tree's expected
        predictions additive in the features, follow from its trees' TreeSHAP values
        (:mod:`shap_rsq.explainer._additive_part`); that part is computed for every row, by shap's TreeSHAP
        one tree at a time (about the time of ``shap.TreeExplainer(model).shap_values(X)``), and
        only the rest of the sampled rows' exact contributions is scaled up.  Unbiased either
        way; the standard errors shrink 3x for one fully grown tree, 20x for a fully grown forest
        of 5 trees and 100x or more for forests of 30 trees and boosted trees, and are 0 for
        stumps.  ``False``: the sampled contributions alone, without the TreeSHAP pass.

    Returns
    -------
    RsqEstimate
        The all-row additive part plus ``n / m`` times the rest of the sampled rows' exact
        contributions (``n / m`` times those contributions without ``control_variate``), with
        the standard error of that total (finite-population corrected).

    Notes
    -----
    The estimate is unbiased; the standard error is the usual one of a sample mean, and an
    interval of +-1.96 of them covers the exact share about 95% of the time only when what is
    sampled is not heavy-tailed across rows.  Without ``control_variate`` it often is: a feature
    with a small share usually takes it from a few rows.  Per-row contributions with a skewness
    of 10-20 (a depth-7 forest whose rare splits isolate outliers) were covered 44-76% of the time
    at ``n_sample`` 60-200; a depth-4 forest of 10 trees and 20 depth-3 XGBoost trees already had
    skewness 9-27 on their small shares, covered 63-88% of the time at ``n_sample=300`` of 2,000
    rows and 79-91% at 500.  Read the standard errors as a lower bound for small shares, draw as
    many rows as the budget allows, or compute the shares exactly with ``rsq``.
    """
    if not hasattr(explainer, "model_info") or not hasattr(explainer, "_decompose"):
        raise TypeError(
            f"estimate_rsq needs an RSquaredExplainer, e.g. estimate_rsq(RSquaredExplainer(model), X, y); got "
            f"{type(explainer).__name__}."
        )
    explainer._check_rsq_game()  # a model or shap options without an R² game: the reason
    info = explainer.model_info
    if isinstance(n_sample, bool) or not isinstance(n_sample, numbers.Integral):
        raise ValueError(f"n_sample must be an integer number of rows; got {n_sample!r}.")
    if sample_weight is not None and np.ndim(sample_weight) == 0:
        # the fourth argument is rsq's sample_weight: estimate_rsq(explainer, X, y, 50) weighted every
        # row by 50 (which changes no share) and drew the default 500 rows
        raise ValueError(
            f"sample_weight is one number ({sample_weight!r}), not a weight per row; to draw that many rows, "
            f"pass n_sample={sample_weight!r}."
        )
    if int(n_sample) < 2:
        raise ValueError(f"n_sample must be at least 2 (a standard error needs two rows); got {n_sample!r}.")
    if not isinstance(control_variate, (bool, np.bool_)):
        raise ValueError(f"control_variate must be True or False; got {control_variate!r}.")
    rng = _generator(random_state)
    inputs = explainer._second_order_inputs if info.second_order else explainer._squared_error_inputs
    rows, target, weights, denominator = inputs(X, y, sample_weight)
    # rows of weight 0 contribute exactly 0: the population is the rows with positive weight (a draw
    # of zero-weight rows only returned 0 with a standard error of 0 for a share of 0.83)
    population = np.flatnonzero(weights > 0)
    n = len(population)
    m = min(int(n_sample), n)
    _check_sample_budget(explainer, m)
    if explainer.progress is not True:  # the bars asked for carry the estimate instead
        played = (
            len(explainer._game_sets.get(None)[0])
            if info.second_order
            else len(explainer._squared_error_games(target, weights, None))
        )
        warn_if_long_sample(explainer._units.units(True, m), m, explainer._units.tuning, played, _score(explainer))
    pick = np.sort(rng.choice(population, size=m, replace=False))
    players = explainer._inputs.players(groups, rows)
    values, spread = _sample_total(explainer, rows.array, target, weights, pick, n, control_variate, players)
    values, spread = values / denominator, spread / denominator
    names = player_index(rows.labels, players)
    if names is not None:  # labelled as rsq labels a DataFrame's shares (its columns in the model's order)
        # named for the score, as rsq's shares are
        name = _score(explainer)
        values = pd.Series(values, index=names, name=name)
        spread = pd.Series(spread, index=names, name=f"standard error of {name}")
        if info.second_order:  # exact on every row, as rsq's attrs: what the shares stand for
            values.attrs.update(explainer._second_order_scores(rows.array, target, weights, denominator))
    return RsqEstimate(values, spread, m, len(weights))


def _score(explainer) -> str:
    """What the shares are of, as ``rsq`` names its Series."""
    info = explainer.model_info
    if info.second_order:
        return explainer._second_order_loss().score
    return "Brier skill score" if info.classes is not None else "R²"


def _sample_total(
    explainer,
    X: np.ndarray,
    target: np.ndarray,
    w: np.ndarray,
    pick: np.ndarray,
    n: int,
    control_variate: bool,
    players=None,
) -> tuple[np.ndarray, np.ndarray]:
    """The estimated total of the contributions of ``n`` rows (loss units, summed over a model's
    games) from the rows ``pick``, and its standard error: unbiased whatever is subtracted, as long
    as its total over the rows is added back.  The games (:func:`_games`) are a regressor's one, a
    classifier's or multi-output regressor's outputs, or a booster's second-order games (a softmax's
    classes): they are sums over the same sampled rows, so they are summed row by row before the
    spread is taken.  ``players``: a grouped game's."""
    options = {**explainer._run_options(True), "warn_long": False}
    every_row = not control_variate or len(pick) == n  # every row drawn: the sample is the total
    known, rest, predictions = 0.0, 0.0, []
    for forest, cache, y, scale, loss, mirrored in _games(explainer, X, target, w, players):
        sampled = None if loss is None else loss.of_rows(pick)
        result = decompose(forest, cache.units(True, len(pick)), X[pick], y[pick], w[pick], loss=sampled, **options)
        if mirrored:  # class 1 of a binary forest classifier: class 0's games are its own
            predictions.append(1.0 - result.prediction)
        predictions.append(result.prediction)
        rest = rest + scale * result.values
        if not every_row:
            part = _additive_part(explainer, forest, cache, X, y, w, pick, loss)
            known, rest = known + scale * part.total, rest - scale * part.sampled
        if target.ndim > 1:  # one output's plans at a time, as rsq holds them
            cache.release()
    explainer._prediction_check(X[pick], np.column_stack(predictions) if len(predictions) > 1 else predictions[0])
    return scaled_sample(known + np.zeros(rest.shape[1]), rest, n)


def _games(explainer, X: np.ndarray, target: np.ndarray, w: np.ndarray, players) -> list[tuple]:
    """``(forest, unit cache, target column, scale, losses, mirrored)`` of each game ``rsq`` plays: the
    squared-error games of :meth:`~shap_rsq.RSquaredExplainer._squared_error_games`, or a booster's
    second-order games, a softmax's classes each with the margins its other classes reach on every
    row of ``X``."""
    if not explainer.model_info.second_order:
        played = explainer._squared_error_games(target, w, players)
        return [(cache.forest, cache, y, scale, None, mirrored) for cache, y, scale, mirrored in played]
    return [
        (forest, cache, target if target.ndim == 1 else target[:, k], 1.0, losses, False)
        for k, (forest, cache, losses) in enumerate(explainer._class_games(X, players))
    ]


def scaled_sample(known: np.ndarray, sampled: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``known`` plus ``n`` times the mean of ``sampled`` (rows drawn without replacement from
    ``n``), and the standard error of that total (finite-population corrected)."""
    m = sampled.shape[0]
    spread = sampled.std(axis=0, ddof=1) * n / np.sqrt(m) * np.sqrt(max(0.0, 1.0 - m / n))
    return known + sampled.mean(axis=0) * n, spread


def _additive_part(
    explainer, forest, cache, X: np.ndarray, y: np.ndarray, w: np.ndarray, pick: np.ndarray, loss: TreeLosses | None
) -> AdditivePart:
    """The additive part of every row's contributions to one forest's games, trees in the order the
    game plays them (``loss``: a booster's second-order games)."""
    order = np.concatenate([unit.trees for unit in cache.units(True, len(pick))] or [np.zeros(0, dtype=int)])
    progress = "additive part (TreeSHAP)" if explainer.progress is True else False
    return additive_part(forest, order, X, y, w, pick, explainer._tuning.memory_budget, progress, loss)


def _generator(random_state: Any) -> np.random.Generator:
    """The draw's generator, or an error that names ``random_state``."""
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"random_state must be None, a non-negative int or a numpy Generator; got {random_state!r} ({error})."
        ) from None


def _check_sample_budget(explainer, m: int) -> None:
    """Refuse a sample whose per-row contributions cannot fit the budget, before its rows are copied."""
    units = explainer._units.units(True, m)
    forest = explainer.forest
    try:
        fit_jobs(units, m, forest.n_players, forest.n_trees, True, explainer.n_jobs, explainer._tuning)
    except MemoryBudgetError as error:
        if rows_per_block(units, m, forest.n_players, True, explainer._tuning) > 0:
            return  # the sample's rows go through in blocks (engine.run.decompose)
        raise MemoryBudgetError(f"estimate_rsq(n_sample={m}): {error}  Here, pass a smaller n_sample.") from None
