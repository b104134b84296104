"""Shares of D² for boosters of log-loss, Poisson, Gamma and Tweedie deviance: their second-order games.

Each tree is played on the second-order expansion of the loss change it makes, at the margin the
trees before it left (:mod:`~shap_rsq.engine.losses`).  The shares add up to that expansion of the
deviance removed from the constant ``E f`` to the model, divided by the deviance of the weighted mean
of ``y`` (the denominator of scikit-learn's ``d2_log_loss_score`` and ``d2_tweedie_score``).  The
exact change of D² is computed beside them, and the gap between the two is reported, with a
warning past 5% of the change.  A mixin of :class:`~shap_rsq.RSquaredExplainer`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ..engine.columns import in_input_order
from ..engine.distributed import is_dask_array, on_blocks, row_blocks, rows_from
from ..engine.estimates import named
from ..engine.labels import one_hot
from ..engine.losses import Loss, SoftmaxOffsets, TreeLosses
from ..engine.run import decompose
from ..engine.validation import check_target, weighted_mean
from ..exceptions import SecondOrderGapWarning
from ._groups import player_index

__all__ = [
    "GAP_WARNING",
    "SecondOrderShares",
    "SecondOrderSummary",
    "check_second_order_rows",
]

CONSTANT_TARGET = (
    "y is constant (over the rows with positive weight): the deviance of its mean is 0, so D² is undefined."
)
GAP_WARNING = 0.05  # the gap, as a fraction of the exact change of the score, past which a call warns


@dataclass(frozen=True)
class SecondOrderSummary:
    """What the shares of a second-order game add up to, beside the exact score.

    Attributes
    ----------
    score : str
        The score's name, ``"D² (log-loss)"`` for instance.
    model_score : float
        The model's D² on the rows (exact).
    mean_score : float
        D² of the constant margin ``E f`` (at most 0, and 0 when it predicts the mean of ``y``).
    exact_change : float
        ``model_score - mean_score``: the exact change the shares stand for.
    shares_sum : float
        The sum of the shares: the second-order expansion of that change, tree by tree.
    """

    score: str
    model_score: float
    mean_score: float
    exact_change: float
    shares_sum: float

    @property
    def gap(self) -> float:
        """``exact_change - shares_sum``: the remainder of the expansion."""
        return self.exact_change - self.shares_sum

    def attrs(self) -> dict:
        """The summary as a Series' ``attrs``."""
        return {
            "score": self.score,
            "model_score": self.model_score,
            "mean_score": self.mean_score,
            "exact_change": self.exact_change,
            "shares_sum": self.shares_sum,
            "gap": self.gap,
        }

    def describe(self) -> str:
        """One line: the shares' sum, the exact change, and the gap."""
        return (
            f"shares sum to {self.shares_sum:.4g} (second order); exact change {self.exact_change:.4g}; "
            f"gap {self.gap:.3g}"
        )


@dataclass(frozen=True)
class SecondOrderGames:
    """The decomposition of a booster's loss on one set of rows (before division by the null deviance)."""

    rows: Any
    weights: np.ndarray
    values: np.ndarray  # (P,) or (n, P): loss reductions, summed over a softmax's classes
    totals: np.ndarray  # (n,) each row's second-order loss reduction
    start: np.ndarray  # (n,) each row's weighted deviance at E f
    end: np.ndarray  # (n,) ... at the model's margin
    null: np.ndarray  # (n,) ... at the weighted mean of y
    names: Any
    score: str

    def summary(self) -> SecondOrderSummary:
        """The exact D² change beside the shares' sum."""
        null = float(self.null.sum())
        return SecondOrderSummary(
            self.score,
            1.0 - float(self.end.sum()) / null,
            1.0 - float(self.start.sum()) / null,
            float(self.start.sum() - self.end.sum()) / null,
            float(self.totals.sum()) / null,
        )


@dataclass(frozen=True)
class Played:
    """The second-order games of every tree on checked rows (before division by the null deviance)."""

    values: np.ndarray  # (P,) or (n, P): loss reductions, summed over a softmax's classes
    game_totals: np.ndarray  # (n,) each row's second-order loss reduction
    start: np.ndarray  # (n,) each row's weighted deviance at E f
    end: np.ndarray  # (n,) ... at the model's margin


class SecondOrderShares:
    """Second-order games of :class:`~shap_rsq.RSquaredExplainer` (a mixin)."""

    def _second_order_loss(self) -> Loss:
        return Loss(self.model_info.loss, self.model_info.loss_power)

    def _second_order_rsq(self, X, y, sample_weight, multioutput, groups) -> np.ndarray | pd.Series:
        shares, names, summary = self._second_order_shares(X, y, sample_weight, multioutput, groups)
        if names is None:
            return shares
        series = pd.Series(shares, index=names, name=summary.score)
        series.attrs.update(summary.attrs())
        return series

    def _second_order_shares(self, X, y, sample_weight, multioutput=None, groups=None):
        """Shares of D² ``(P,)``, the players' names (``None`` for arrays) and the summary beside them
        (the command line's, which reads arrays too)."""
        _refuse_multioutput(multioutput)
        if is_dask_array(X):
            return self._second_order_over_blocks(X, y, sample_weight, groups)
        games = self._second_order_games(X, y, sample_weight, local=False, groups=groups)
        summary = _warn_on_gap(games.summary())
        return games.values / float(games.null.sum()), games.names, summary

    def _second_order_loss_reduction(self, X, y, sample_weight, local: bool, groups):
        games = self._second_order_games(X, y, sample_weight, local=local, groups=groups, require_variance=False)
        if local:
            return in_input_order(games.values, games.rows.order if groups is None else None)
        if games.names is None:
            return games.values
        return pd.Series(games.values, index=games.names, name="loss_reduction")

    def _second_order_local(self, X, y, sample_weight, check_additivity: bool, multioutput, groups):
        """Per-row shares, each row's base (its part of D² at ``E f``), rows, names and the label."""
        _refuse_multioutput(multioutput)
        games = self._second_order_games(X, y, sample_weight, local=True, groups=groups)
        summary = _warn_on_gap(games.summary())
        null = float(games.null.sum())
        values = games.values / null
        base = (games.null - games.start) / null
        if check_additivity:
            check_second_order_rows(values, games.totals / null)
        return values, base, games.rows, games.names, summary

    def _second_order_over_blocks(self, X, y, sample_weight, groups):
        """:meth:`_second_order_shares` of a dask array of rows, block by block on dask's scheduler.

        D²'s denominator is the deviance of the weighted mean of ``y`` over all rows: the blocks'
        weighted sums of the target come first, then each block plays every tree's game on its rows
        and sums its deviances at ``E f``, at the model's margin and at that mean.  All of them add up
        over blocks; the explainer travels to the workers once, without its compiled plans.
        """
        import dask

        forests, _ = self._game_sets.get(None)
        classifier = self.model_info.classes is not None
        n_features = self.model_info.n_features
        X, blocks = row_blocks(forests[0], X, y, sample_weight, n_features, not classifier, y_columns=classifier)
        players = self._inputs.players(groups, None)
        shared = dask.delayed(self, pure=True, traverse=False)
        sums = on_blocks(X, blocks, _block_target_sums, shared)  # the input checks run here, in every block
        total_weight = sum(s[0] for s in sums)
        mean = sum(s[1] for s in sums) / total_weight if total_weight > 0 else None
        margin = _margin_of_mean(self._second_order_loss(), mean, sums[0][1])
        parts = on_blocks(X, blocks, _block_games, shared, players, margin)
        values = sum(part[0] for part in parts)
        totals, start, end, null = (float(sum(part[i] for part in parts)) for i in range(1, 5))
        if not null > 0:
            raise ValueError(CONSTANT_TARGET)
        score = self._second_order_loss().score
        summary = SecondOrderSummary(score, 1.0 - end / null, 1.0 - start / null, (start - end) / null, totals / null)
        return values / null, None, _warn_on_gap(summary)

    def _block_target(self, X, y, sample_weight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A block's checked rows, target and weights (the weights as given: D² is a ratio over all blocks)."""
        rows, weights = self._inputs.rows_weights(X, sample_weight, require_variance=False)
        loss = self._second_order_loss()
        return rows.array, self._second_order_target(y, len(weights), weights, loss, False), weights

    def _second_order_inputs(self, X, y, sample_weight):
        """Rows, target, weights and the deviance of the weighted mean of ``y`` (D²'s denominator)."""
        rows, weights = self._inputs.rows_weights(X, sample_weight, require_variance=True)
        target = self._second_order_target(y, rows.array.shape[0], weights, self._second_order_loss(), True)
        null = float(self._null_deviances(target, weights).sum())
        if not null > 0:
            raise ValueError(CONSTANT_TARGET)
        return rows, target, weights, null

    def _second_order_scores(self, rows: np.ndarray, target: np.ndarray, weights: np.ndarray, null: float) -> dict:
        """The model's exact D² on checked rows, that of ``E f`` and the change between them, from the
        model's margins alone (no game played; ``null`` the deviance of the mean of ``y``): what
        :func:`~shap_rsq.estimate_rsq`'s sampled shares stand for, as ``rsq``'s ``attrs`` say it."""
        loss = self._second_order_loss()
        deviance = _deviance(loss, target)
        forests = self._game_sets.get(None)[0]
        # the trees' own sums in float64, as the games' (a library's predict may round to float32)
        margins = np.column_stack([forest.predict(rows) for forest in forests])
        margins = margins if len(forests) > 1 else margins[:, 0]
        means = np.array([forest.expected_value for forest in forests])
        at_mean = np.broadcast_to(means if len(means) > 1 else means[0], margins.shape)
        end, start = float(np.sum(weights * deviance(margins))), float(np.sum(weights * deviance(at_mean)))
        return {
            "score": loss.score,
            "model_score": 1.0 - end / null,
            "mean_score": 1.0 - start / null,
            "exact_change": (start - end) / null,
        }

    def _null_deviances_of(self, y, weights: np.ndarray, pooled=None) -> np.ndarray:
        """Each row's weighted deviance at the weighted mean of ``y``, or of the pooled rows'
        ``(y, w)`` (the selector's held-out folds, pooled)."""
        loss = self._second_order_loss()
        target = self._second_order_target(y, len(weights), weights, loss, False)
        if pooled is None:
            return self._null_deviances(target, weights)
        reference = self._second_order_target(pooled[0], len(pooled[1]), pooled[1], loss, False)
        return self._null_deviances(target, weights, (reference, pooled[1]))

    def _null_deviances(self, target: np.ndarray, weights: np.ndarray, reference=None) -> np.ndarray:
        """Each row's weighted deviance at the weighted mean of ``y`` (or of ``reference``'s
        ``(target, weights)``)."""
        loss = self._second_order_loss()
        deviance = _deviance(loss, target)
        margin = _null_margin(loss, *((target, weights) if reference is None else reference))
        with np.errstate(invalid="ignore"):  # a constant 0/1 target: its null margin is infinite, refused after
            return weights * deviance(np.broadcast_to(margin, target.shape))

    def _second_order_games(
        self, X, y, sample_weight, *, local: bool, groups: Any = None, require_variance: bool = True
    ) -> SecondOrderGames:
        loss = self._second_order_loss()
        rows, weights = self._inputs.rows_weights(X, sample_weight, require_variance=require_variance)
        n = rows.array.shape[0]
        target = self._second_order_target(y, n, weights, loss, require_variance)
        players = self._inputs.players(groups, rows)
        played = self._played(rows.array, target, weights, players, local=local)
        null = self._null_deviances(target, weights)
        if require_variance and not null.sum() > 0:
            raise ValueError(CONSTANT_TARGET)
        return SecondOrderGames(
            rows,
            weights,
            played.values,
            played.game_totals,
            played.start,
            played.end,
            null,
            player_index(rows.labels, players),
            loss.score,
        )

    def _class_games(self, rows: np.ndarray, players) -> list[tuple[Any, Any, TreeLosses]]:
        """``(forest, unit cache, losses)`` of each forest the game plays: a softmax's classes one by one,
        each with the margin the other classes' trees reached at each of its trees; one forest otherwise."""
        forests, caches = self._game_sets.get(players)
        loss = self._second_order_loss()
        tuning = self._unit_caches[0].tuning
        offsets = _softmax_offsets(forests, rows, tuning) if len(forests) > 1 else [None]
        return [(f, c, TreeLosses(loss, o)) for f, c, o in zip(forests, caches, offsets, strict=True)]

    def _played(
        self, rows: np.ndarray, target: np.ndarray, weights: np.ndarray, players, *, local: bool, options=None
    ) -> Played:
        """The second-order games of every tree on checked rows, summed over a softmax's classes
        (``options`` for :func:`~shap_rsq.engine.run.decompose`: the explainer's by default)."""
        info = self.model_info
        loss = self._second_order_loss()
        options = self._run_options(local) if options is None else options
        progress = options["progress"]
        games = self._class_games(rows, players)
        results = []
        for k, (forest, units, losses) in enumerate(games):
            column = target if target.ndim == 1 else target[:, k]
            if len(games) > 1:
                options["progress"] = named(progress, f"class {info.outputs[k]}", k, len(games))
            routed = units.units(local, len(rows))
            results.append(decompose(forest, routed, rows, column, weights, loss=losses, **options))
            if len(games) > 1:
                units.release()
        margins = np.column_stack([r.prediction for r in results]) if len(results) > 1 else results[0].prediction
        self._prediction_check(rows, margins)
        start = np.array([r.mean_prediction for r in results])
        deviance = _deviance(loss, target)
        return Played(
            sum(r.values for r in results),
            sum(r.game_totals for r in results),
            weights * deviance(np.broadcast_to(start if len(results) > 1 else start[0], np.shape(margins))),
            weights * deviance(margins),
        )

    def _second_order_target(self, y, n: int, weights: np.ndarray, loss: Loss, require_variance: bool) -> np.ndarray:
        """A classifier's 0/1 target (one column per class of a softmax), or the checked target."""
        info = self.model_info
        if info.classes is not None:
            Y = one_hot(y, info.classes, n)
            return Y if info.n_outputs > 1 else Y[:, -1]
        target = check_target(y, n, weights, require_variance=require_variance)
        loss.check_target(target)
        return target


def _softmax_offsets(forests, X: np.ndarray, tuning) -> list[SoftmaxOffsets]:
    """Each class's offsets: the other classes' log-sum-exp margin when each of its trees is added,
    computed as the games reach the trees.  Every tree's shifts on every row are predicted once up
    front when they take at most an eighth of the memory budget (each class's game would otherwise
    predict the other classes' trees again); never the ``(n, T)`` tables of the offsets themselves."""
    routed = [forest.routing_rows(X) for forest in forests]  # categorical splits read routing columns
    shifts = None
    if 8 * X.shape[0] * sum(forest.n_trees for forest in forests) <= tuning.memory_budget // 8:
        shifts = [
            forest.nodes.leaf_values(rows, np.arange(forest.n_trees), forest.input_dtype) - forest.nodes.tree_mean
            for forest, rows in zip(forests, routed, strict=True)
        ]
    # a block of predictions and its routing take a few times its floats: a thirty-second of the budget
    block = max(1, min(tuning.offset_block_elements, tuning.memory_budget // 256))
    return [SoftmaxOffsets(forests, routed, k, block, shifts) for k in range(len(forests))]


def _block_target_sums(explainer, start: int, X, y, sample_weight) -> tuple[float, np.ndarray] | ValueError:
    """The total weight and weighted sum of the target (a softmax's: per class) of a block of rows
    that starts at row ``start``, or the error its rows are refused with."""
    try:
        with rows_from(start):
            _, target, weights = explainer._block_target(X, y, sample_weight)
    except ValueError as error:
        return error
    return float(weights.sum()), weights @ target


def _block_games(explainer, start: int, X, y, sample_weight, players, margin) -> tuple:
    """A block's summed games ``(P,)``, and its sums of the second-order totals and of the
    deviances at ``E f``, at the model's margin and at ``margin`` (the mean of all blocks' ``y``)."""
    with rows_from(start):
        rows, target, weights = explainer._block_target(X, y, sample_weight)
    played = explainer._played(rows, target, weights, players, local=False, options=explainer._block_options())
    loss = explainer._second_order_loss()
    with np.errstate(invalid="ignore"):  # a constant 0/1 target: its null margin is infinite, refused after
        null = weights * _deviance(loss, target)(np.broadcast_to(margin, target.shape))
    return played.values, played.game_totals.sum(), played.start.sum(), played.end.sum(), null.sum()


def _deviance(loss: Loss, target: np.ndarray):
    """Each row's deviance as a function of its margin (a softmax's: its classes' margins)."""
    if target.ndim == 1:
        return lambda margin: loss.deviance(target, margin)
    return lambda margins: logsumexp(margins, axis=1) - np.sum(target * margins, axis=1)


def _null_margin(loss: Loss, target: np.ndarray, weights: np.ndarray) -> np.ndarray | float:
    """The margin of the weighted mean of ``y`` (a softmax's: the log of each class's frequency)."""
    mean = weighted_mean(target, weights) if np.sum(weights) > 0 else None
    return _margin_of_mean(loss, mean, target[0] if len(target) else np.zeros(target.shape[1:]))


def _margin_of_mean(loss: Loss, mean, like: np.ndarray) -> np.ndarray | float:
    """The margin whose prediction is ``mean`` (zeros shaped as one row of the target, ``like``,
    when no row weighs anything)."""
    if mean is None:
        return np.zeros(np.shape(like))
    with np.errstate(divide="ignore"):
        if np.ndim(mean) > 0:
            return np.log(mean)
        if loss.name == "log_loss":
            return np.log(mean) - np.log1p(-mean)
        return np.log(mean)


def _refuse_multioutput(multioutput) -> None:
    if multioutput is not None:
        raise ValueError(
            "multioutput does not apply to a boosted model's D²: a softmax's classes share one log-loss, "
            "and the shares are of it."
        )


def _warn_on_gap(summary: SecondOrderSummary) -> SecondOrderSummary:
    if abs(summary.gap) > GAP_WARNING * abs(summary.exact_change):
        warnings.warn(
            f"The shares of {summary.score} add up to its second-order expansion, {summary.shares_sum:.4g}, "
            f"which is off the exact change {summary.exact_change:.4g} by {summary.gap:.3g} (more than "
            f"{GAP_WARNING:.0%} of it): the trees take large steps of the margin (a high learning rate or "
            "large leaf values), where the loss is far from quadratic.",
            SecondOrderGapWarning,
            stacklevel=5,
        )
    return summary


def check_second_order_rows(values: np.ndarray, totals: np.ndarray) -> None:
    """Each row's shares must add up to its second-order total (efficiency, per row)."""
    gap = np.max(np.abs(values.sum(axis=1) - totals), initial=0.0)
    if gap > 1e-6 * max(1.0, float(np.abs(totals).sum())):
        raise AssertionError(
            f"The per-row shares do not add up to each row's second-order change of D² (largest gap {gap:.3g}).  "
            "Please report this with the model; pass check_additivity=False to get the values anyway."
        )
