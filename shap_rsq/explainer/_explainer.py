"""``RSquaredExplainer``: each feature's exact Shapley share of a tree model's R²."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import shap
from shap.explainers._tree import DEPRECATED_APPROX, TreeEnsemble

from ..engine.columns import in_input_order
from ..engine.distributed import is_dask_array, rsq_over_blocks
from ..engine.estimates import as_progress
from ..engine.outputs import checked_multioutput, combine, complementary_classes, labelled, local_output_shares
from ..engine.routing import Kernel
from ..engine.run import Decomposition, UnitCache, check_row_totals, decompose
from ..engine.validation import weighted_mean
from ..models.forest import Forest
from ..models.inspect import ModelInfo, UnsupportedModelError, inspect_model, read_forests
from ..tuning import DEFAULT_TUNING, Tuning
from ._checks import (
    PredictionCheck,
    check_budget,
    check_n_jobs,
    check_names,
    check_progress,
    refuse_non_flag,
    refuse_rsq_game,
    refuse_unreached_splits,
    refuse_without_target,
)
from ._groups import GroupedGames, player_data, player_index
from ._inputs import CallInputs
from ._interactions import OUTPUTS_INTERACTIONS, InteractionShares
from ._outputs import SeveralOutputs
from ._second_order import SecondOrderShares
from ._shap_calls import PredictionShap, ShapTreeExplainer, background_by_name, explanation_in_input_order
from ._share_label import ScoreName, output_score, share_label

__all__ = ["RSquaredExplainer"]


class RSquaredExplainer(InteractionShares, SeveralOutputs, SecondOrderShares, PredictionShap, ShapTreeExplainer):
    """Exact Shapley decomposition of R² for tree models (Q-SHAP).

    A :class:`shap.TreeExplainer` (same arguments, values and errors) that also splits the
    model's R² on a dataset into per-feature shares.  Trees are played as
    sequential games: tree ``t``, centred on its cover-weighted mean, reduces
    the squared error left by the trees before it, and that reduction is
    divided among the features by its Shapley value.  The shares add up to
    ``R²(model) - R²(E f)``, where ``E f`` is the model's mean prediction
    under its training cover, or over the background rows when they give the
    covers (``R²(E f) <= 0``, and 0 when ``E f`` equals the mean of ``y``).

    Parameters
    ----------
    model : tree model
        A fitted regressor trained with squared error: scikit-learn decision trees, random
        forests, extra trees, ``GradientBoostingRegressor`` and ``HistGradientBoostingRegressor``;
        ``XGBRegressor`` / ``xgboost.Booster``; ``LGBMRegressor`` / ``lightgbm.Booster``;
        ``CatBoostRegressor`` (any grow policy).  Also forest classifiers (shares of the Brier
        skill score) and multi-output scikit-learn and XGBoost regressors (docs/classification.md).
        Also boosted classifiers (XGBoost, LightGBM, CatBoost, scikit-learn) and Poisson, Gamma
        and Tweedie boosters: shares of D² through the second-order games of their own loss, with
        the exact change of the score beside their sum (docs/method.md).  Any other model
        ``shap.TreeExplainer`` explains (an absolute-error or quantile objective) gives an
        explainer whose calls without ``y`` are shap's; every call that needs R² raises
        :class:`~shap_rsq.UnsupportedModelError` with the reason.
    data : array-like, DataFrame or shap masker, optional
        Background data, as ``shap.TreeExplainer`` takes it (shap keeps a sample of 100 rows of a
        larger array; a DataFrame's columns are matched to the model's features by name).  With
        ``feature_perturbation="tree_path_dependent"`` each node's cover becomes the number of
        background rows through it, for shap's values as for the shares of R²: how much of R²
        each feature carries, with conditional expectations taken on this reference population
        (docs/models.md).  Interventional explainers (data with ``"auto"`` or ``"interventional"``)
        give shap's values; their calls with ``y`` are refused.
    model_output : str, default="raw"
        As in ``shap.TreeExplainer`` (``"probability"``, ``"log_loss"``, a method name); shares of R²
        decompose the raw output, and an explainer of another output refuses the calls with ``y``
        (with ``"log_loss"``, ``y`` is shap's labels).
    feature_perturbation : {"auto", "interventional", "tree_path_dependent"}, default="auto"
        As in ``shap.TreeExplainer``: ``"auto"`` is interventional with data and tree-path-dependent
        without, ``"interventional"`` without data warns and falls back to tree-path-dependent.
    feature_names : list of str, optional
        Names of the model's features (the fifth positional parameter, as in shap): the feature
        names of the Explanations of array inputs (``rsq`` and ``rsq_interactions`` of an array
        return arrays, in the model's order), the names ``groups=`` may use on arrays, and the
        names DataFrame columns are matched by when the model recorded none of its own (or only
        names its library made up for an array).
    n_jobs : int, optional
        Number of worker processes over blocks of trees (joblib semantics; ``-1`` = all
        cores; ``None`` follows ``joblib.parallel_config``, whose backend, dask for
        instance, is used when set).  Workers start with the first call that needs
        them (about half a second) and are kept for later calls.  Forests with less
        work than about 100 depth-5 trees on 1,000 rows, and forests of shallow
        (depth 3 or less) or symmetric trees, run in this process whatever ``n_jobs``
        says: they take less time than handing their rows to another process.  Under
        ``joblib.parallel_config(backend="threading")`` the blocks run on threads of this
        process instead, sharing its compiled trees (nearly as fast as processes on deep trees,
        slower on shallower ones: docs/benchmarks.md).  ``rsq`` gives the same bits whatever ``n_jobs``
        and backend; per-row shares agree to rounding (within 1e-16).
    progress : bool or "auto", default="auto"
        Show a progress bar over trees (tqdm), labelled with the call's estimated time when that
        is 10 s or more.  ``"auto"`` shows it for calls estimated at 10 s or more (on the workers
        ``n_jobs`` gives them), and part-way for a shorter estimate that the trees done, 2 s
        into the call, project past 10 s (the estimate is within about 2x:
        docs/benchmarks.md); ``True`` always, ``False`` never.  Unless ``progress=True``, a call
        estimated at two minutes or more on one core (deep trees: fully grown forests take
        hours) first warns with :class:`~shap_rsq.LongCallWarning`, which gives the estimate
        and what shortens the call; interaction shares, which have no estimate up front, warn
        as soon as the trees done, 10 s or more into the call, project its total past two
        minutes (with ``"auto"`` their bar opens once the trees done project past 10 s).
    memory_budget : float, default=2.0
        Working memory, in GiB, that one call that needs R² may use (besides ``X`` itself; shap's own
        calls are not bounded by it).  Deep trees are
        evaluated in blocks sized to it, worker processes share it (with smaller blocks, or
        fewer of them when fewer fit; their imported libraries are not counted), rows go through
        in blocks when the trees' kernels fit only fewer of them at a time, and a call
        whose per-row arrays alone cannot fit is refused at once with
        :class:`~shap_rsq.MemoryBudgetError` (a ``ValueError``), which gives the
        estimate and what to change.  Results do not depend on it beyond rounding.  At least 1/64 GiB.
    approximate : bool, optional
        Deprecated in shap's constructor (it warns); pass ``approximate`` to the calls instead.
    link, linearize_link : optional
        Accepted and handed to ``shap.TreeExplainer``, which ignores them (shap issue #3513).

    Examples
    --------
    >>> import xgboost
    >>> from sklearn.datasets import load_diabetes
    >>> from shap_rsq import RSquaredExplainer
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = xgboost.XGBRegressor(n_estimators=50, max_depth=3).fit(X, y)
    >>> explainer = RSquaredExplainer(model)
    >>> shares = explainer.rsq(X, y)         # pandas Series indexed by feature name
    >>> explanation = explainer(X, y)          # shap.Explanation of per-row shares of R²
    >>> shap_values = explainer(X)             # without y: shap's SHAP values of the predictions
    """

    _call_inputs: CallInputs | None = None  # None where the explainer is shap's alone
    _unsupported: str | None = None  # why, then: the message of every call that needs R²
    _rsq_refusal: Exception | None = None  # why calls that need R² are refused where the model has them

    def __init__(
        self,
        model: Any,
        data: Any = None,
        model_output: str = "raw",
        feature_perturbation: str = "auto",
        feature_names: list[str] | None = None,
        approximate: Any = DEPRECATED_APPROX,
        link: Any = None,
        linearize_link: Any = None,
        *,
        n_jobs: int | None = None,
        progress: bool | str = "auto",
        memory_budget: float = 2.0,
    ) -> None:
        self.n_jobs = check_n_jobs(n_jobs)
        self.progress = check_progress(progress)
        self.memory_budget = check_budget(memory_budget)
        self._tuning = replace(DEFAULT_TUNING, memory_budget=int(self.memory_budget * (1 << 30)))
        shap_options = {
            "model_output": model_output,
            "feature_perturbation": feature_perturbation,
            "feature_names": feature_names,
            "approximate": approximate,
            "link": link,
            "linearize_link": linearize_link,
        }
        try:
            info = inspect_model(model)
            # shap checks and resolves data, model_output and feature_perturbation, as for its own class
            background = background_by_name(data, info.feature_names, info.family)
            ShapTreeExplainer.__init__(self, info.shap_model, background, **shap_options)
            forests = read_forests(self._training_ensemble(info), info, type(model).__name__)
        except UnsupportedModelError as error:
            # a model shap explains whose R² has no exact decomposition (an absolute-error or
            # quantile objective) is shap's explainer alone: every call without y is shap's
            self._explain_predictions_only(model, data, shap_options, error)
            return
        self.feature_names = check_names(feature_names, info)
        self.forests, self.forest = forests, forests[0]
        self._call_inputs, self._unsupported = CallInputs(info, self.feature_names, self.forest.input_dtype), None
        self._rsq_refusal = refuse_rsq_game(self.model_output, self.feature_perturbation)
        covered = self._covered(forests)
        if info.adjust is not None and self.feature_perturbation == "tree_path_dependent":
            # shap's expected value comes from its own reading, which missed the fix (CatBoost's
            # bias, XGBoost's base of each target); shap puts it right only once shap_values has run.
            # On background data it is the rows' mean prediction, their covers' mean as well
            values = [forest.expected_value for forest in covered]
            self.expected_value = values[0] if len(values) == 1 else np.array(values)
        # the games square tree values: centred on each tree's mean they stay on the scale of y's
        # spread, not of y itself, so a target in the millions keeps its digits
        self._games = [forest.centred() for forest in covered]
        self._unit_caches = [UnitCache(game, "auto", self._tuning) for game in self._games]
        self._game_forest, self._units = self._games[0], self._unit_caches[0]
        self._prediction_check = PredictionCheck(info)
        self._game_sets = GroupedGames(self._games, self._unit_caches)
        self._complementary_classes = info.classes is not None and complementary_classes(covered, self._tuning)

    @property
    def model_info(self) -> ModelInfo:
        """What the explainer read from the model (:class:`~shap_rsq.models.info.ModelInfo`).

        Raises
        ------
        UnsupportedModelError
            For a model whose R² has no exact decomposition (the explainer is then shap's alone).
        """
        return self._inputs.info

    @property
    def _model_info(self) -> ModelInfo | None:
        return None if self._call_inputs is None else self._call_inputs.info

    @property
    def _inputs(self) -> CallInputs:
        """The model's record, names and input checks; a model without an exact decomposition is
        refused here, with its reason, before a call reads its inputs."""
        if self._call_inputs is None:
            raise UnsupportedModelError(self._unsupported)
        return self._call_inputs

    def _training_ensemble(self, info: Any) -> Any:
        """shap's parse of the model with its training covers: the one shap's constructor built, or,
        where background data replaced its covers, a parse of its own."""
        if self.data is None:
            return self.model
        return TreeEnsemble(info.shap_model, model_output="raw") if info.trees is None else None

    def _covered(self, forests: list[Forest]) -> list[Forest]:
        """The forests the R² games are played on: with covers counted on the background data where
        shap's tree-path-dependent values take theirs from it (shap recomputes them the same way)."""
        if self.data is None or self.feature_perturbation != "tree_path_dependent":
            return forests
        rows = np.asarray(self.data, dtype=np.float64)
        covered = [forest.with_covers(rows) for forest in forests]
        if self._rsq_refusal is None:
            self._rsq_refusal = refuse_unreached_splits(covered, len(rows))
        return covered

    @property
    def _labels_for_shap(self) -> bool:
        """Whether ``y`` is shap's: with ``model_output="log_loss"`` shap explains each row's loss,
        and its calls take the labels as ``y``."""
        return isinstance(self.model_output, str) and self.model_output == "log_loss"

    def _check_rsq_game(self) -> None:
        """Refuse a call that needs R² where the explainer has no R² game: a model without an exact
        decomposition (its reason), or shap's options that change the game (interventional values,
        another model output, background data that misses a split)."""
        _ = self.model_info
        if self._rsq_refusal is not None:  # a fresh exception each time: no traceback piles up on it
            raise type(self._rsq_refusal)(*self._rsq_refusal.args)

    def rsq(
        self, X: Any, y: Any, sample_weight: Any = None, *, multioutput: str | None = None, groups: Any = None
    ) -> np.ndarray | pd.Series | pd.DataFrame:
        """Each feature's share of R² on ``(X, y)``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to evaluate on; NaN follows each split's default direction.  A DataFrame
            (pandas, polars, pyarrow) is matched to the model's features by column name when
            the model recorded names; a dask array is evaluated block by block on dask's
            scheduler (``n_jobs`` and ``progress`` do not apply; each
            block works within ``memory_budget``).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Observed target.  For a classifier, class labels (any of ``classes_``, matched by value), or
            a 0/1 indicator as ``sklearn.preprocessing.label_binarize`` returns it (one column per class,
            a DataFrame's matched by name; one column, 1 for ``classes_[1]``, for a binary classifier);
            for a multi-output regressor, ``(n_samples, n_outputs)``.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights; R² and its shares are then weighted.
        multioutput : {"raw_values", "uniform_average", "variance_weighted"}, optional
            How the outputs of a classifier or multi-output regressor combine, as in
            :func:`sklearn.metrics.r2_score`.  By default a classifier's shares are of its Brier
            skill score (``"variance_weighted"`` over the one-hot target) and a multi-output
            regressor's of its average R² (``"uniform_average"``).  Single-output models ignore it.
        groups : dict of str to list, optional
            Grouped features as single players: ``{"name": [columns], ...}``, columns by name (when
            the features have names) or by position.  Each group gets its exact Shapley share as one
            player; ungrouped features stay single players, listed after the groups.

        Returns
        -------
        ndarray of shape (n_features,) or pandas.Series
            Shares that sum to ``R²(model) - R²(E f)``; a Series named ``"rsq"`` indexed by
            feature name when ``X`` is a DataFrame.  With ``multioutput="raw_values"``,
            ``(n_features, n_outputs)`` (a DataFrame with one column per class or output).
            Memory stays O(n + p): no ``(n, p)`` array is formed.  For a boosted classifier or a
            Poisson, Gamma or Tweedie booster, shares of D² through its second-order games: a Series
            named for the score (``"D² (log-loss)"``...) whose ``attrs`` hold the model's exact
            D², the exact change the shares stand for and the gap (docs/method.md).
        """
        self._check_rsq_game()
        if self.model_info.second_order:
            return self._second_order_rsq(X, y, sample_weight, multioutput, groups)
        if self.model_info.by_output and is_dask_array(X):
            return self._outputs_over_blocks(X, y, sample_weight, multioutput, groups)
        if self.model_info.by_output:
            games = self._output_games(X, y, sample_weight, multioutput, local=False, groups=groups)
            shares = combine(games.values, games.sst(), games.multioutput, brier=games.brier)
            return labelled(shares, games.names, self.model_info, output_score(games), multioutput=games.multioutput)
        checked_multioutput(multioutput, self.model_info)
        if is_dask_array(X):
            players = self._inputs.players(groups, None)
            forests, caches = self._game_sets.get(players)
            check = self._prediction_check.sample
            n_features = self.model_info.n_features
            units = caches[0].units(False, _block_rows(X))
            return rsq_over_blocks(forests[0], units, X, y, sample_weight, n_features, check)
        rows, target, weights, sst = self._inputs.for_rsq(X, y, sample_weight)
        players = self._inputs.players(groups, rows)
        result = self._decompose(rows.array, target, weights, local=False, players=players)
        names = player_index(rows.labels, players)
        return result.values / sst if names is None else pd.Series(result.values / sst, index=names, name="R²")

    def loss_reduction(
        self, X: Any, y: Any, sample_weight: Any = None, *, local: bool = False, groups: Any = None
    ) -> np.ndarray | pd.Series:
        """Shapley decomposition of the squared-error loss the model removes, in squared units of ``y``.

        The numerators of :meth:`rsq`: feature shares of
        ``sum_i w_i [(y_i - E f)^2 - (y_i - f(x_i))^2]``, the drop in the weighted
        sum of squared errors from the constant ``E f`` to the model.  Unlike R²
        it needs no total sum of squares, so ``y`` may be constant, and it adds up
        over disjoint sets of rows (folds, blocks).

        Parameters
        ----------
        X, y, sample_weight
            As in :meth:`rsq`.
        local : bool, default=False
            Return the per-row values ``(n_samples, n_features)`` instead of their sums.
        groups : dict of str to list, optional
            Grouped features as single players: ``{"name": [columns], ...}``, columns by name (when
            the features have names) or by position.  Each group gets its exact Shapley share as one
            player; ungrouped features stay single players, listed after the groups.

        Returns
        -------
        ndarray or pandas.Series
            ``(n_features,)`` (a Series indexed by feature name for a DataFrame), or
            ``(n_samples, n_features)`` with ``local=True`` (columns in ``X``'s order, as the per-row
            shares'); a classifier or multi-output
            regressor adds a last axis over its outputs (a DataFrame with one column each).  A
            booster of another loss gives the second-order expansions of its deviance's reduction
            (summed over a softmax's classes).
        """
        self._check_rsq_game()
        if self.model_info.second_order:
            return self._second_order_loss_reduction(X, y, sample_weight, local, groups)
        if self.model_info.by_output:
            games = self._output_games(X, y, sample_weight, None, local=local, require_variance=False, groups=groups)
            if local:
                return in_input_order(games.values, games.rows.order if groups is None else None)
            return labelled(games.values, games.names, self.model_info, "loss_reduction")
        rows, target, weights = self._inputs.rows_target_weights(X, y, sample_weight, require_variance=False)
        players = self._inputs.players(groups, rows)
        result = self._decompose(rows.array, target, weights, local=local, players=players)
        if local:  # an array: its columns follow X's, as the per-row shares' do
            return in_input_order(result.values, rows.order if groups is None else None)
        names = player_index(rows.labels, players)
        return result.values if names is None else pd.Series(result.values, index=names, name="loss_reduction")

    def __call__(  # type: ignore[override]
        self,
        X: Any,
        y: Any = None,
        interactions: bool = False,
        check_additivity: bool = True,
        approximate: bool = False,
        *,
        sample_weight: Any = None,
        multioutput: str | None = None,
        groups: Any = None,
    ) -> shap.Explanation:
        """Per-row shares of R² as a :class:`shap.Explanation` (with ``y``), or shap's own SHAP values.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to explain.
        y : array-like of shape (n_samples,), optional
            Observed target.  Without it the call is :class:`shap.TreeExplainer`'s, unchanged:
            SHAP values of the model's predictions.
        interactions : bool, default=False
            Without ``y``, shap's interaction values; with ``y``, per-row interaction shares of R²,
            ``values`` of shape ``(n, p, p)`` that sum over rows to :meth:`rsq_interactions`
            (single-output regressors only: classifiers and multi-output models are refused).
        check_additivity : bool, default=True
            With ``y``, check that each row's shares plus its base value add up to the row's
            part of R² (a misread model would break it); without ``y``, shap's own check.
        approximate : bool, default=False
            Passed to shap without ``y``; R² shares are always exact.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the R² (only with ``y``).  Keyword-only: the positional parameters are
            shap's, in shap's order.
        multioutput : str, optional
            As in :meth:`rsq`; ``"raw_values"`` adds a last axis over outputs.
        groups : dict of str to list, optional
            As in :meth:`rsq` (only with ``y``): one column of values per player.

        Returns
        -------
        shap.Explanation
            With ``y``: ``values[i, j]`` is row ``i``'s part of feature ``j``'s share, so
            ``values.sum(0)`` equals :meth:`rsq`; ``base_values[i]`` is the part of the
            constant ``E f``, so that ``values[i].sum() + base_values[i]`` equals
            ``w_i [(y_i - ybar)^2 - (y_i - f(x_i))^2] / SST`` and the grand total is the
            model's (weighted) R².  Features come in ``X``'s column order (a DataFrame is matched
            to the model by name, and its columns may come in another order).
        """
        refuse_non_flag(interactions)
        if y is None or self._labels_for_shap:
            refuse_without_target(sample_weight=sample_weight, groups=groups, multioutput=multioutput)
            frame, order = self._aligned(X)
            explanation = super().__call__(
                frame, y, interactions=interactions, check_additivity=check_additivity, approximate=approximate
            )
            return explanation_in_input_order(explanation, order, interactions)
        self._check_rsq_game()
        if interactions:
            info = self.model_info
            if info.by_output and checked_multioutput(multioutput, info) != checked_multioutput(None, info):
                raise ValueError(OUTPUTS_INTERACTIONS.format(multioutput=multioutput))
            values, base, rows, names = self._local_interactions(X, y, sample_weight, check_additivity, groups)
            output_names = self._second_order_loss().score if info.second_order else "R²"
            output_names = "Brier skill score" if info.by_output and info.classes is not None else output_names
        else:
            values, base, rows, names, output_names = self._local_shares(
                X, y, sample_weight, check_additivity, multioutput, groups
            )
        explanation = shap.Explanation(
            values=values,
            base_values=base,
            # a grouped game's players are not the columns: beside each, its column if it is one
            data=rows.array if groups is None else player_data(rows.array, self._inputs.players(groups, rows)),
            feature_names=self._inputs.explanation_names(names, groups, values.shape[1]),
            output_names=share_label(output_names, values, base, interactions, getattr(output_names, "summary", None)),
        )
        return explanation_in_input_order(explanation, rows.order if groups is None else None, interactions)

    def shap_values(  # type: ignore[override]
        self,
        X: Any,
        y: Any = None,
        tree_limit: int | None = None,
        approximate: bool = False,
        check_additivity: bool = True,
        from_call: bool = False,
        *,
        sample_weight: Any = None,
    ) -> np.ndarray:
        """SHAP values of the predictions (shap's, unchanged), or per-row R² shares with ``y``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to explain.
        y : array-like of shape (n_samples,), optional
            Observed target: when given, the result is the ``values`` of :meth:`__call__`.
        tree_limit, approximate, from_call
            shap's parameters, used only without ``y``.
        check_additivity : bool, default=True
            As in :meth:`__call__`.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the R² (only with ``y``).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Columns in ``X``'s order, so that ``shap.summary_plot(values, X)`` labels them right
            whatever order a DataFrame's columns come in.
        """
        if y is None or self._labels_for_shap:
            refuse_without_target(sample_weight=sample_weight)
            tree_limit = self._shap_tree_limit(tree_limit)
            frame, order = self._aligned(X)
            values = super().shap_values(frame, y, tree_limit, approximate, check_additivity, from_call)
            return in_input_order(values, order)
        self._check_rsq_game()  # a model or shap options without an R² game are refused first, with the reason
        if tree_limit is not None or approximate:
            raise ValueError(
                "R² shares use every tree the model predicts with, exactly: tree_limit and approximate "
                "apply only to SHAP values of predictions (call without y)."
            )
        values, _, rows, _, _ = self._local_shares(X, y, sample_weight, check_additivity, None, None)
        return in_input_order(values, rows.order)

    def _local_shares(self, X, y, sample_weight, check_additivity: bool, multioutput: str | None, groups):
        if self.model_info.second_order:
            values, base, rows, names, summary = self._second_order_local(
                X, y, sample_weight, check_additivity, multioutput, groups
            )
            return values, base, rows, names, ScoreName(summary.score, summary.attrs())
        if self.model_info.by_output:
            games = self._output_games(X, y, sample_weight, multioutput, local=True, groups=groups)
            values, base = local_output_shares(games, check_additivity)
            names = list(self.model_info.outputs) if games.multioutput == "raw_values" else output_score(games)
            return values, base, games.rows, games.names, names
        checked_multioutput(multioutput, self.model_info)
        rows, target, weights, sst = self._inputs.for_rsq(X, y, sample_weight)
        players = self._inputs.players(groups, rows)
        result = self._decompose(rows.array, target, weights, local=True, players=players)
        values = result.values / sst
        mean = weighted_mean(target, weights)
        base = weights * ((target - mean) ** 2 - (target - result.mean_prediction) ** 2) / sst
        if check_additivity:
            check_row_totals(values, base, target, result.prediction, weights, mean, sst)
        return values, base, rows, player_index(rows.labels, players), "R²"

    def _set_engine(self, kernel: Kernel = "auto", tuning: Tuning | None = None) -> RSquaredExplainer:
        """Force a kernel or a tuning for the games of every output (tests and benchmarks).

        Every choice gives the same values up to rounding; only time and memory change.  Without
        ``tuning``, the explainer's own (the defaults with its memory budget).
        """
        tuning = self._tuning if tuning is None else tuning
        self._unit_caches = [UnitCache(game, kernel, tuning) for game in self._games]
        self._units = self._unit_caches[0]
        self._game_sets = GroupedGames(self._games, self._unit_caches)
        return self

    def _run_options(self, local: bool) -> dict:
        tuning = self._unit_caches[0].tuning
        info = self.model_info
        progress = self.progress
        if info.second_order or info.classes is not None:  # a long call's warning names the score
            score = self._second_order_loss().score if info.second_order else "Brier skill score"
            progress = replace(as_progress(progress), score=score)
        return {"local": local, "n_jobs": self.n_jobs, "progress": progress, "tuning": tuning}

    def _block_options(self) -> dict:
        """:meth:`_run_options` of global values on one dask block: one process a block, since dask
        runs the blocks side by side and shows its own progress."""
        return {**self._run_options(False), "n_jobs": 1, "progress": False, "warn_long": False}

    def _decompose(
        self, rows: np.ndarray, target, weights, *, local: bool, players=None, warn_long=True
    ) -> Decomposition:
        """The squared-error games of one forest (second-order games: ``SecondOrderShares._played``)."""
        forests, caches = self._game_sets.get(players)
        options = {**self._run_options(local), "warn_long": warn_long}
        result = decompose(forests[0], caches[0].units(local, len(rows)), rows, target, weights, **options)
        self._prediction_check(rows, result.prediction, target)
        return result


def _block_rows(X) -> int | None:
    """Rows of a dask array's largest block, each block being a call of its own rows for the
    routing (``UnitCache.units``); ``None`` where they are unknown (a dask DataFrame's partitions)."""
    blocks = getattr(X, "chunks", None)
    rows = max(blocks[0], default=0) if blocks else 0
    return int(rows) if np.isfinite(rows) and rows > 0 else None
