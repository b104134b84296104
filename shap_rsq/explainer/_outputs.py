"""The games of a model with several outputs: a classifier's classes or a multi-output regressor's targets.

Each output is a forest of its own, played on its own target column (``engine.outputs``); a mixin
of :class:`~shap_rsq.RSquaredExplainer`, whose validation, players and runs it reads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..engine.budget import check_output_rows
from ..engine.columns import in_input_order
from ..engine.distributed import on_blocks, row_blocks, rows_from
from ..engine.estimates import as_progress, named
from ..engine.outputs import (
    OutputGames,
    checked_multioutput,
    checked_sst,
    combine,
    complement,
    complementary_targets,
    output_sst,
    target_columns,
)
from ..engine.run import decompose
from ._groups import player_index

__all__ = ["SeveralOutputs"]


class SeveralOutputs:
    """Per-output games of :class:`~shap_rsq.RSquaredExplainer` (a mixin)."""

    def _class_loss_reduction(self, X: Any, Y: np.ndarray, sample_weight: Any, *, local: bool, groups: Any = None):
        """A classifier's loss reductions on a one-hot target ``Y`` already matched to ``classes_``.

        The selector's folds and out-of-bag rows may hold labels the fold's model never saw (rows of
        zeros in ``Y``), which :meth:`loss_reduction` refuses; ``Y`` has one column per class, even
        for a model of one class.  Returns the values with their last axis over classes.
        """
        games = self._output_games(
            X, Y, sample_weight, None, local=local, require_variance=False, groups=groups, one_hot=True
        )
        # per row in X's column order, as loss_reduction's; summed over rows in the model's
        return in_input_order(games.values, games.rows.order if local and groups is None else None)

    def _output_games(
        self,
        X,
        y,
        sample_weight,
        multioutput,
        *,
        local: bool,
        require_variance: bool = True,
        groups: Any = None,
        one_hot: bool = False,
        options: dict | None = None,
    ):
        info = self.model_info
        how = checked_multioutput(multioutput, info)
        rows, weights = self._inputs.rows_weights(X, sample_weight, require_variance=require_variance)
        Y = np.asarray(y, dtype=np.float64) if one_hot else target_columns(y, info, rows.array.shape[0])
        players = self._inputs.players(groups, rows)
        if local:
            n_players = info.n_features if players is None else len(players.names)
            check_output_rows(rows.array.shape[0], n_players, len(info.outputs), self._tuning.memory_budget)
        forests, caches = self._game_sets.get(players)
        mirrored = self._mirrored(Y)
        results = [
            self._output_game(game, units, rows, Y[:, k], weights, local, _named_part(self, info, k, mirrored), options)
            for k, (game, units) in enumerate(zip(forests, caches, strict=True))
            if not (mirrored and k == 0)
        ]
        if mirrored:
            results.insert(0, complement(results[0]))
        predictions = np.column_stack([result.prediction for result in results])
        self._prediction_check(rows.array, predictions, Y)
        values = np.stack([result.values for result in results], axis=-1)
        means = np.array([result.mean_prediction for result in results])
        names = player_index(rows.labels, players)
        brier = info.classes is not None
        return OutputGames(rows, Y, weights, how, values, predictions, means, info.outputs, names, brier)

    def _outputs_over_blocks(self, X, y, sample_weight, multioutput, groups) -> np.ndarray:
        """The shares of a forest classifier's or a multi-output regressor's score on a dask array of
        rows, block by block on dask's scheduler: each output's weighted mean of its target column
        first, then each block's games and its sums of squares about those means, all added up."""
        import dask

        info = self.model_info
        how = checked_multioutput(multioutput, info)
        forests, _ = self._game_sets.get(None)
        classifier = info.classes is not None
        X, blocks = row_blocks(forests[0], X, y, sample_weight, info.n_features, not classifier, y_columns=True)
        shared = dask.delayed(self, pure=True, traverse=False)
        sums = on_blocks(X, blocks, _block_output_sums, shared)  # the input checks run here, in every block
        total = sum(s[0] for s in sums)
        mean = sum(s[1] for s in sums) / total if total > 0 else np.zeros(len(info.outputs))
        parts = on_blocks(X, blocks, _block_output_games, shared, how, groups, mean)
        sst = checked_sst(sum(part[1] for part in parts), how, info.outputs)
        return combine(sum(part[0] for part in parts), sst, how, brier=classifier)

    def _squared_error_inputs(self, X, y, sample_weight):
        """Rows, target (a model of several outputs: ``(n, K)``), weights and the score's
        denominator: ``SST``, or the outputs' summed (rsq's default combination of them)."""
        info = self.model_info
        if not info.by_output:
            return self._inputs.for_rsq(X, y, sample_weight)
        rows, weights = self._inputs.rows_weights(X, sample_weight, require_variance=True)
        target = target_columns(y, info, rows.array.shape[0])
        sst = float(output_sst(target, weights, checked_multioutput(None, info), info.outputs).sum())
        return rows, target, weights, sst

    def _mirrored(self, Y: np.ndarray) -> bool:
        """Whether a binary forest classifier's class 0 plays class 1's games on target ``Y``
        (:func:`~shap_rsq.engine.outputs.complementary_classes` forests, complementary columns)."""
        return self._complementary_classes and complementary_targets(Y)

    def _squared_error_games(self, target: np.ndarray, weights: np.ndarray, players) -> list[tuple]:
        """``(unit cache, target column, scale, mirrored)`` of each squared-error game played, its
        values counted ``scale`` times over the denominator of :meth:`_squared_error_inputs`: a
        regressor's one game; a forest classifier's classes (the Brier skill score), class 1 twice
        where it ``mirrored`` class 0 (:meth:`_mirrored`); a multi-output regressor's targets, each
        over its own ``SST`` (the mean R²)."""
        caches = self._game_sets.get(players)[1]
        if target.ndim == 1:
            return [(caches[0], target, 1.0, False)]
        info = self.model_info
        if info.classes is not None and self._mirrored(target):
            return [(caches[1], target[:, 1], 2.0, True)]
        if info.classes is not None:
            return [(cache, target[:, k], 1.0, False) for k, cache in enumerate(caches)]
        sst = output_sst(target, weights, checked_multioutput(None, info), info.outputs)
        return [(cache, target[:, k], sst.sum() / (len(sst) * sst[k]), False) for k, cache in enumerate(caches)]

    def _output_decompositions(self, rows: np.ndarray, target, weights, players, *, local: bool) -> list:
        """Each squared-error game's decomposition (:meth:`_squared_error_games`), with its target
        column and the ``scale`` it counts."""
        options = self._run_options(local)
        games = self._squared_error_games(target, weights, players)
        results = []
        for part, (cache, column, scale, _) in enumerate(games):
            # one warning, before the first game, of the time of all of them
            progress = replace(as_progress(options["progress"]), part=part, parts=len(games))
            result = decompose(
                cache.forest, cache.units(local, len(rows)), rows, column, weights, **{**options, "progress": progress}
            )
            results.append((result, column, scale))
        return results

    def _output_game(self, game, units, rows, y: np.ndarray, weights: np.ndarray, local: bool, progress, options=None):
        """One output's decomposition; its compiled plans are dropped after it, so that a model of K
        outputs holds one output's plans at a time (K sets of them grew past the memory budget: 530 MiB
        held after a 40-class forest's rsq under a 102 MiB budget).  ``options`` replace the
        explainer's run options (a dask block's)."""
        options = {**self._run_options(local), "progress": progress} if options is None else options
        result = decompose(game, units.units(local, len(y)), rows.array, y, weights, **options)
        units.release()
        return result


def _block_output_sums(explainer, start: int, X, y, sample_weight) -> tuple[float, np.ndarray] | ValueError:
    """The total weight and weighted sum of each output's target (a class's: its count) of a block
    of rows that starts at row ``start``, or the error its rows are refused with."""
    try:
        with rows_from(start):
            rows, weights = explainer._inputs.rows_weights(X, sample_weight, require_variance=False)
            return float(weights.sum()), weights @ target_columns(y, explainer.model_info, rows.array.shape[0])
    except ValueError as error:
        return error


def _block_output_games(explainer, start: int, X, y, sample_weight, how: str, groups, mean: np.ndarray) -> tuple:
    """A block's loss reductions ``(P, K)`` and each output's sum of squares about ``mean``."""
    options = explainer._block_options()
    with rows_from(start):
        games = explainer._output_games(
            X, y, sample_weight, how, local=False, require_variance=False, groups=groups, options=options
        )
    squares = games.weights @ (games.Y - mean) ** 2
    return games.values, squares


def _named_part(explainer, info, k: int, mirrored: bool):
    """Output ``k``'s progress, one bar per output, each saying whose it is (a class or a target);
    the outputs played (``mirrored``: class 1's only) count for the warning."""
    name = f"class {info.outputs[k]}" if info.classes is not None else str(info.outputs[k])
    progress = explainer._run_options(False)["progress"]  # with the score a warning names
    return named(progress, name, k - mirrored, len(info.outputs) - mirrored)
