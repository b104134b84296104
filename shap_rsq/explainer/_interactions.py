"""Interaction shares of R²: :meth:`RSquaredExplainer.rsq_interactions` and its per-row form.

The matrix follows shap's convention for ``shap_interaction_values``, applied to the game that
:meth:`~shap_rsq.RSquaredExplainer.rsq` decomposes: off the diagonal, ``[j, k]`` is half the
Shapley interaction index ``I_jk`` of that game (divided by SST); on it, the main effect
``phi_j - sum_{k != j} I_jk / 2``.  Each row of the matrix therefore sums to feature ``j``'s
share of R², and the matrix to the model's explained R² (the efficiency identity of ``rsq``).
The indices come from :mod:`~shap_rsq.engine.interactions`; the shares from ``rsq``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..engine.budget import check_matrix_budget
from ..engine.columns import in_input_order
from ..engine.distributed import is_dask_array
from ..engine.interactions import check_interactions_fit, interaction_indices
from ..engine.run import Decomposition, check_row_totals
from ..engine.validation import weighted_mean
from ._checks import refuse_without_target
from ._groups import player_index, position_labels
from ._second_order import check_second_order_rows
from ._shap_calls import ROUTED_INTERACTIONS

__all__ = [
    "OUTPUTS_INTERACTIONS",
    "InteractionShares",
    "shares_matrix",
    "top_pairs",
]

OUTPUTS_INTERACTIONS = (
    "Interaction shares of a model of several outputs are of rsq's default score: a forest classifier's Brier "
    "skill score (multioutput='variance_weighted'), a multi-output regressor's mean R² "
    "(multioutput='uniform_average'); got multioutput={multioutput!r}, whose combination of the outputs has "
    "no interaction shares here."
)


class InteractionShares:
    """The interaction methods of :class:`~shap_rsq.RSquaredExplainer` (a mixin: it reads the
    explainer's validation, games and shares)."""

    def rsq_interactions(
        self, X: Any, y: Any, sample_weight: Any = None, *, top_k: int | None = None, groups: Any = None
    ) -> np.ndarray | pd.DataFrame:
        """Pairwise interaction shares of R²: a symmetric ``(p, p)`` matrix, or the ``top_k`` pairs.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to evaluate on, as in :meth:`rsq`.
        y : array-like of shape (n_samples,)
            Observed target.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights.
        top_k : int, optional
            Return only the ``top_k`` strongest pairs, by absolute value, as a DataFrame with
            columns ``feature_a``, ``feature_b`` and ``rsq`` (the pair's total ``[a, b] + [b, a]``,
            its whole Shapley interaction index).  No ``(p, p)`` array is formed, so this is the
            form for thousands of features.  Pairs that no tree splits on together interact by
            exactly 0 and are not listed, so fewer than ``top_k`` rows come back when fewer pairs
            interact; ties are broken by column order.  Features are labelled by their names
            when ``X`` has them, else by their column positions (ints); groups by their names.
        groups : dict of str to list, optional
            Grouped features as single players, as in :meth:`rsq`: the interactions are then
            between groups (and the ungrouped features, listed after them).

        Returns
        -------
        ndarray of shape (p, p) or pandas.DataFrame
            ``[j, k]`` (``j != k``) is half the Shapley interaction index of features ``j`` and
            ``k`` in the game :meth:`rsq` decomposes, and ``[j, j]`` is ``j``'s main effect, so
            that row ``j`` sums to ``rsq(X, y)[j]`` and the matrix to the shares' total.  A
            DataFrame with the feature names as index and columns when ``X`` has names.

        Notes
        -----
        The index of a pair is the integral along the diagonal of the mixed second derivative of
        the game's multilinear extension, evaluated exactly on the trees' leaf pairs (see
        ``docs/method.md``).  It costs about ``W^2 / 2`` times what ``rsq`` costs per leaf pair,
        ``W`` being the features on two paths.
        """
        self._check_rsq_game()
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1):
            raise ValueError(f"top_k must be a positive integer; got {top_k!r}.")
        rows, target, weights, sst, players = self._interaction_inputs(X, y, sample_weight, groups)
        names = player_index(rows.labels, players)
        if top_k is None:
            n_players = self.model_info.n_features if players is None else len(players.names)
            check_matrix_budget(n_players, self._tuning.memory_budget)
        indices, shares, _ = self._indices(rows.array, target, weights, players, local=False)
        if top_k is not None:
            labels = names
            if labels is None:  # an array: column positions, as without groups, and the groups' names
                labels = range(indices.shape[0]) if players is None else position_labels(players)
            return top_pairs(indices / sst, list(labels), int(top_k))
        if shares is None:  # a tree taken leaf pair by leaf pair gives no shares (nor, here, a booster's loss)
            shares = self._shares(rows.array, target, weights, players)
        shares = shares / sst
        matrix = (indices + indices.T).toarray()
        matrix /= sst
        matrix = shares_matrix(matrix, shares)
        return matrix if names is None else pd.DataFrame(matrix, index=names, columns=names)

    def shap_interaction_values(
        self, X: Any, y: Any = None, tree_limit: int | None = None, *, sample_weight: Any = None
    ) -> np.ndarray:
        """SHAP interaction values of the predictions (shap's, of the trees as read and fixed where
        shap reads the model wrong: docs/models.md), or per-row interaction shares of R² with ``y``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to explain.
        y : array-like, optional
            Observed target: when given, per-row interaction shares of R² (the ``values`` of
            ``explainer(X, y, interactions=True)``).
        tree_limit : int, optional
            shap's parameter, used only without ``y``.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the R² (only with ``y``).

        Returns
        -------
        ndarray of shape (n_samples, n_features, n_features)
            Both feature axes in ``X``'s column order.
        """
        if y is None:
            refuse_without_target(sample_weight=sample_weight)
            tree_limit = self._shap_tree_limit(tree_limit)
            if self._routed_for_shap():
                raise ValueError(ROUTED_INTERACTIONS)
            frame, order = self._aligned(X)
            info = self._model_info
            # the fixed trees of a model with categorical splits read routing columns, which shap's
            # TreeSHAP would index past the rows it is given: shap's own parse is used for those
            fixed = info is not None and info.shap_interactions_wrong and info.categorical is None
            shap_explainer = self._fixed_shap() if fixed else super()
            return in_input_order(shap_explainer.shap_interaction_values(frame, None, tree_limit), order, (1, 2))
        self._check_rsq_game()  # a model or shap options without an R² game are refused first, with the reason
        if tree_limit is not None:
            raise ValueError(
                "R² interaction shares use every tree the model predicts with: tree_limit applies without y."
            )
        values, _, rows, _ = self._local_interactions(X, y, sample_weight, True, None)
        return in_input_order(values, rows.order, (1, 2))

    def _local_interactions(self, X, y, sample_weight, check_additivity: bool, groups):
        """Per-row interaction shares ``(n, p, p)``, their base values, rows and player names."""
        rows, target, weights, sst, players = self._interaction_inputs(X, y, sample_weight, groups)
        caches = self._game_sets.get(players)[1]
        for cache in caches:  # before the shares' work
            check_interactions_fit(cache.interaction_plans(), rows.array.shape[0], True)
        # the shares first when the interactions' kernels do not give them: a long call's warning
        # about them comes before the interactions' hours
        if self.model_info.second_order:
            played = self._played(rows.array, target, weights, players, local=True)
            indices, _, _ = self._indices(rows.array, target, weights, players, local=True)
            indices /= sst
            values = shares_matrix(indices, played.values / sst)
            # each row's part of D² at E f; its shares add up to its second-order total
            base = self._null_deviances(target, weights) / sst - played.start / sst
            if check_additivity:
                check_second_order_rows(values.sum(axis=2), played.game_totals / sst)
            return values, base, rows, player_index(rows.labels, players)
        if target.ndim > 1:  # a forest classifier's classes, a multi-output regressor's targets
            return self._output_local_interactions(rows, target, weights, sst, players, check_additivity)
        result = None
        if not caches[0].interaction_plans().all_subsets(local=True):
            result = self._decompose(rows.array, target, weights, local=True, players=players)
        indices, shares, prediction = self._indices(rows.array, target, weights, players, local=True)
        if result is None:  # every tree on subsets: their shares are the same Shapley values
            forest = caches[0].forest
            result = Decomposition(shares, prediction, forest.base_offset + float(forest.nodes.tree_mean.sum()))
        indices /= sst
        values = shares_matrix(indices, result.values / sst)
        mean = weighted_mean(target, weights)
        base = weights * ((target - mean) ** 2 - (target - result.mean_prediction) ** 2) / sst
        if check_additivity:
            check_row_totals(values.sum(axis=2), base, target, result.prediction, weights, mean, sst)
        return values, base, rows, player_index(rows.labels, players)

    def _interaction_inputs(self, X, y, sample_weight, groups):
        """Rows, target (a model of several outputs: ``(n, K)``), weights, the score's denominator
        (``SST``; the outputs' summed; or the null deviance) and the players."""
        info = self.model_info
        if is_dask_array(X):
            raise NotImplementedError("Interaction shares of R² take in-memory rows; pass a NumPy array or DataFrame.")
        if info.second_order:
            rows, target, weights, sst = self._second_order_inputs(X, y, sample_weight)
        else:
            rows, target, weights, sst = self._squared_error_inputs(X, y, sample_weight)
        return rows, target, weights, sst, self._inputs.players(groups, rows)

    def _shares(self, rows: np.ndarray, target, weights, players) -> np.ndarray:
        """The players' shares of the game, before division by its total (``SST`` or the null deviance)."""
        if self.model_info.second_order:
            return self._played(rows, target, weights, players, local=False).values
        if target.ndim > 1:
            results = self._output_decompositions(rows, target, weights, players, local=False)
            return sum(scale * result.values for result, _, scale in results)
        return self._decompose(rows, target, weights, local=False, players=players).values

    def _indices(self, rows: np.ndarray, target, weights, players, *, local: bool):
        """The interaction indices of every tree's game, summed over the forests played: a softmax's
        classes one by one (each with its column of the one-hot target and its offsets), as its shares are;
        with squared error the shares too when every tree's kernel gave them (else ``None``), and the
        predictions."""
        if self.model_info.second_order:
            games = [
                (cache, losses, target if target.ndim == 1 else target[:, k], 1.0, False)
                for k, (_, cache, losses) in enumerate(self._class_games(rows, players))
            ]
        else:
            played = self._squared_error_games(target, weights, players)
            games = [(cache, None, column, scale, mirrored) for cache, column, scale, mirrored in played]
        total, predictions, all_shares = None, [], []
        for cache, losses, column, scale, mirrored in games:
            indices, shares, prediction = interaction_indices(
                cache.interaction_plans(),
                rows,
                column,
                weights,
                local=local,
                progress=self.progress,
                tuning=cache.tuning,
                loss=losses,
            )
            if scale != 1.0:
                indices *= scale
            if mirrored:  # class 1 of a binary forest classifier: class 0's games are its own
                predictions.append(1.0 - prediction)
            predictions.append(prediction)
            all_shares.append(None if shares is None else scale * shares)
            if total is None:
                total = indices
            else:
                total += indices  # in place: per-row indices are the largest arrays of a call
        margins = predictions[0] if len(predictions) == 1 else np.column_stack(predictions)
        self._prediction_check(rows, margins, None if self.model_info.second_order else target)
        if self.model_info.second_order or any(shares is None for shares in all_shares):
            return total, None, margins
        return total, sum(all_shares), margins

    def _output_local_interactions(self, rows, Y: np.ndarray, weights, sst: float, players, check_additivity: bool):
        """Per-row interaction shares of a model of several outputs: every output's games combined
        (:meth:`_squared_error_games`), each output's row totals checked on its own."""
        results = self._output_decompositions(rows.array, Y, weights, players, local=True)
        indices, _, _ = self._indices(rows.array, Y, weights, players, local=True)
        indices /= sst
        values = shares_matrix(indices, sum(scale * result.values for result, _, scale in results) / sst)
        base = 0.0
        for result, column, scale in results:
            mean = weighted_mean(column, weights)
            base_k = weights * ((column - mean) ** 2 - (column - result.mean_prediction) ** 2) / sst
            if check_additivity:
                check_row_totals(result.values / sst, base_k, column, result.prediction, weights, mean, sst)
            base = base + scale * base_k
        return values, base, rows, player_index(rows.labels, players)


def shares_matrix(indices: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """shap's layout: half of each index off the diagonal, and on it what makes each row sum to
    the share (``shares`` ``(..., p)``, ``indices`` ``(..., p, p)`` symmetric with zero diagonal).

    Written over ``indices`` (returned): per-row matrices are the largest arrays of a call.
    """
    matrix = indices
    matrix *= 0.5
    diagonal = shares - matrix.sum(axis=-1)
    p = matrix.shape[-1]
    matrix[..., np.arange(p), np.arange(p)] = diagonal
    return matrix


def top_pairs(upper: sp.spmatrix, labels: list, k: int) -> pd.DataFrame:
    """The ``k`` pairs of largest absolute index from a sparse upper triangle, strongest first."""
    coo = sp.coo_matrix(upper)
    keep = coo.row != coo.col
    rows, cols, values = coo.row[keep], coo.col[keep], coo.data[keep]
    # one total order (strength, then position), so that ties at the k-th place are cut the same
    # way whatever k is: the first k pairs of a larger top_k are this top_k
    order = np.lexsort((cols, rows, -np.abs(values)))[:k]
    return pd.DataFrame(
        {
            "feature_a": [labels[i] for i in rows[order]],
            "feature_b": [labels[i] for i in cols[order]],
            "rsq": values[order],
        }
    )
