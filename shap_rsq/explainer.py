"""``RSquaredExplainer``: each feature's exact Shapley share of a tree model's R^2."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import shap
from shap.explainers._tree import TreeEnsemble

from ._distributed import is_dask_array, rsq_over_blocks
from ._engine import Decomposition, UnitCache, decompose
from ._models import ModelInfo, UnsupportedModelError, inspect_model
from ._trees import Forest
from ._validation import check_rows, check_target, check_weights

__all__ = ["RSquaredExplainer"]


class RSquaredExplainer(shap.TreeExplainer):
    """Exact Shapley decomposition of R^2 for tree models (Q-SHAP).

    A :class:`shap.TreeExplainer` (tree-path-dependent) that also splits the
    model's R^2 on a dataset into per-feature shares.  Trees are played as
    sequential games: tree ``t``, centred on its cover-weighted mean, reduces
    the squared error left by the trees before it, and that reduction is
    divided among the features by its Shapley value.  The shares add up to
    ``R^2(model) - R^2(E f)``, where ``E f`` is the model's mean prediction
    under its training cover (``R^2(E f) <= 0``, and 0 when ``E f`` equals the
    mean of ``y``).

    Parameters
    ----------
    model : tree model
        A fitted single-output regressor trained with squared error:
        scikit-learn decision trees, random forests, extra trees,
        ``GradientBoostingRegressor`` and ``HistGradientBoostingRegressor``;
        ``XGBRegressor`` / ``xgboost.Booster``; ``LGBMRegressor`` /
        ``lightgbm.Booster``; ``CatBoostRegressor`` (any grow policy).
    feature_names : list of str, optional
        Names for the columns of array inputs.  DataFrame columns take precedence.
    n_jobs : int, optional
        Number of worker processes over blocks of trees (joblib semantics; ``-1`` = all
        cores; ``None`` follows ``joblib.parallel_config``, whose backend, dask for
        instance, is used when set).  Workers start with the first call that needs
        them (about half a second) and are kept for later calls.  Forests with less
        work than about 100 depth-5 trees on 1,000 rows, and forests of shallow
        (depth 3 or less) or symmetric trees, run in this process whatever ``n_jobs``
        says: they take less time than handing their rows to another process.
    progress : bool, default=False
        Show a progress bar over trees.

    Examples
    --------
    >>> import xgboost
    >>> from sklearn.datasets import load_diabetes
    >>> from shap_rsq import RSquaredExplainer
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = xgboost.XGBRegressor(n_estimators=50, max_depth=3).fit(X, y)
    >>> explainer = RSquaredExplainer(model)
    >>> shares = explainer.rsq(X, y)         # pandas Series indexed by column
    >>> explanation = explainer(X, y)          # shap.Explanation of per-row shares
    """

    def __init__(
        self,
        model: Any,
        feature_names: list[str] | None = None,
        *,
        n_jobs: int | None = None,
        progress: bool = False,
    ) -> None:
        info = inspect_model(model)
        super().__init__(info.shap_model, feature_perturbation="tree_path_dependent", feature_names=feature_names)
        ensemble = self.model if info.trees is None else TreeEnsemble(info.trees)
        if ensemble.trees is None:
            raise UnsupportedModelError(f"shap could not read the trees of this {type(model).__name__}.")
        if np.any((ensemble.threshold_types > 0) & (ensemble.children_left >= 0)):
            raise UnsupportedModelError("Models with categorical splits are not supported.")
        self.model_info: ModelInfo = info
        self.feature_names = _checked_names(feature_names, info)
        self.n_jobs = n_jobs
        self.progress = progress
        tree_limit = info.tree_limit if info.tree_limit is not None else ensemble.tree_limit
        self.forest = Forest.from_ensemble(ensemble, info.n_features, tree_limit)
        if info.adjust is not None:
            self.forest = info.adjust(self.forest)
        self._units = UnitCache(self.forest)
        self._verified = self._verified_missing = False

    def rsq(self, X: Any, y: Any, sample_weight: Any = None) -> np.ndarray | pd.Series:
        """Each feature's share of R^2 on ``(X, y)``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to evaluate on; NaN follows each split's default direction.
        y : array-like of shape (n_samples,)
            Observed target.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights; R^2 and its shares are then weighted.

        Returns
        -------
        ndarray of shape (n_features,) or pandas.Series
            Shares that sum to ``R^2(model) - R^2(E f)``; a Series indexed by
            column when ``X`` is a DataFrame.  Memory stays O(n + p): no
            ``(n, p)`` array is formed.
        """
        if is_dask_array(X):
            return rsq_over_blocks(
                self.forest, self._units.units(), X, y, sample_weight, self.model_info.n_features, self._check_sample
            )
        rows, columns, target, weights, sst = self._inputs(X, y, sample_weight)
        result = self._decompose(X, rows, target, weights, local=False)
        shares = result.values / sst
        if columns is not None:
            return pd.Series(shares, index=pd.Index(columns), name="r2")
        return shares

    def loss_reduction(
        self, X: Any, y: Any, sample_weight: Any = None, *, local: bool = False
    ) -> np.ndarray | pd.Series:
        """Shapley decomposition of the squared-error loss the model removes, in units of ``y``^2.

        The numerators of :meth:`rsq`: feature shares of
        ``sum_i w_i [(y_i - E f)^2 - (y_i - f(x_i))^2]``, the drop in the weighted
        sum of squared errors from the constant ``E f`` to the model.  Unlike R^2
        it needs no total sum of squares, so ``y`` may be constant, and it adds up
        over disjoint sets of rows (folds, blocks).

        Parameters
        ----------
        X, y, sample_weight
            As in :meth:`rsq`.
        local : bool, default=False
            Return the per-row values ``(n_samples, n_features)`` instead of their sums.

        Returns
        -------
        ndarray or pandas.Series
            ``(n_features,)`` (a Series indexed by column for a DataFrame), or
            ``(n_samples, n_features)`` with ``local=True``.
        """
        rows, columns, target, weights = self._rows_target_weights(X, y, sample_weight, require_variance=False)
        result = self._decompose(X, rows, target, weights, local=local)
        if columns is not None and not local:
            return pd.Series(result.values, index=pd.Index(columns), name="loss_reduction")
        return result.values

    def __call__(self, X: Any, y: Any, sample_weight: Any = None) -> shap.Explanation:  # type: ignore[override]
        """Per-row shares of R^2 as a :class:`shap.Explanation`.

        ``values[i, j]`` is row ``i``'s part of feature ``j``'s share, so
        ``values.sum(0)`` equals :meth:`rsq`.  ``base_values[i]`` is the part
        of the constant ``E f``, so that ``values[i].sum() + base_values[i]``
        equals ``w_i [(y_i - ybar)^2 - (y_i - f(x_i))^2] / SST``, and the grand
        total is the model's (weighted) R^2.
        """
        rows, columns, target, weights, sst = self._inputs(X, y, sample_weight)
        result = self._decompose(X, rows, target, weights, local=True)
        mean = np.average(target, weights=weights)
        base = weights * ((target - mean) ** 2 - (target - result.mean_prediction) ** 2) / sst
        names = columns if columns is not None else self._array_names(rows.shape[1])
        return shap.Explanation(
            values=result.values / sst,
            base_values=base,
            data=np.asarray(X) if columns is None else X.to_numpy(),
            feature_names=names,
            output_names="R^2",
        )

    def _inputs(self, X, y, sample_weight):
        rows, columns, target, weights = self._rows_target_weights(X, y, sample_weight, require_variance=True)
        sst = float(np.sum(weights * (target - np.average(target, weights=weights)) ** 2))
        return rows, columns, target, weights, sst

    def _rows_target_weights(self, X, y, sample_weight, *, require_variance: bool):
        # R^2 needs two rows to vary; the loss decomposition is defined for one
        min_rows = 2 if require_variance else 1
        rows, columns = check_rows(X, self.model_info.n_features, self.model_info.feature_names, min_rows)
        weights = check_weights(sample_weight, rows)
        target = check_target(y, rows.shape[0], weights, require_variance=require_variance)
        return rows, columns, target, weights

    def _decompose(self, X, rows, target, weights, *, local: bool) -> Decomposition:
        result = decompose(
            self.forest,
            self._units.units(local),
            rows,
            target,
            weights,
            local=local,
            n_jobs=self.n_jobs,
            progress=self.progress,
        )
        self._check_predictions(X, rows, result.prediction)
        return result

    def _check_predictions(self, X, rows: np.ndarray, prediction: np.ndarray) -> None:
        """The trees as read must reproduce the model's own predictions (up to float32 rounding).

        Misread trees are a property of the model, so this runs on the first call, and again the
        first time rows with missing values are seen (their routing is checked too).  At most 32
        rows are predicted, rows with NaN first, so the model's ``predict`` never copies a wide ``X``.
        """
        if self._verified_missing:
            return
        missing = _rows_with_nan(rows, limit=16)
        if self._verified and missing.size == 0:
            return
        spread = np.linspace(0, len(prediction) - 1, num=min(16, len(prediction))).astype(int)
        index = np.unique(np.concatenate([missing, spread]))
        sample = X.iloc[index] if hasattr(X, "iloc") else np.asarray(X)[index]
        self._check_sample(sample, prediction[index])
        self._verified = True
        self._verified_missing = missing.size > 0

    def _check_sample(self, sample, prediction: np.ndarray) -> None:
        with warnings.catch_warnings(), _one_openmp_thread():
            # columns were already matched to the model by name or position; the model's own
            # complaint about a frame versus an array would point at a call the user never made
            warnings.filterwarnings("ignore", message=".*feature names", category=UserWarning)
            expected = np.asarray(self.model_info.predict(sample), dtype=np.float64).reshape(-1)
        scale = 1.0 + np.max(np.abs(expected))
        gap = np.max(np.abs(prediction - expected))
        if gap > 1e-5 * scale:
            raise UnsupportedModelError(
                f"The trees read from this {self.model_info.family} model do not reproduce its predictions "
                f"(largest difference {gap:.3g}); it uses a feature shap-rsq does not support."
            )

    def _array_names(self, n_features: int) -> list[str]:
        if self.feature_names is not None and len(self.feature_names) == n_features:
            return list(self.feature_names)
        return [f"Feature {j}" for j in range(n_features)]


_THREADPOOLS = None


def _one_openmp_thread():
    """Limit OpenMP to one thread (the model's ``predict`` on the few rows of the check).

    XGBoost predicts with the model's threads: right after the engine's NumPy work two OpenMP
    threads took 17-25 ms for 16 rows of 300 small trees (a thread waits for a core), one 1 ms.
    The libraries are looked up once: that lookup costs more than the check.
    """
    global _THREADPOOLS
    if _THREADPOOLS is None:
        from threadpoolctl import ThreadpoolController

        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="openmp")


def _checked_names(feature_names: list[str] | None, info: ModelInfo) -> list[str] | None:
    """The names given, one per model feature, else those the model was fitted with."""
    if feature_names is None:
        return info.feature_names
    names = [str(name) for name in feature_names]
    if len(names) != info.n_features:
        raise ValueError(f"feature_names has {len(names)} names, but the model has {info.n_features} features.")
    return names


def _rows_with_nan(rows: np.ndarray, limit: int) -> np.ndarray:
    """Indices of up to ``limit`` rows holding a NaN, scanning row blocks (no ``(n, p)`` temporary)."""
    step = max(1, (1 << 20) // max(1, rows.shape[1]))
    found: list[np.ndarray] = []
    for start in range(0, rows.shape[0], step):
        hit = np.flatnonzero(np.isnan(rows[start : start + step]).any(axis=1)) + start
        found.append(hit)
        if sum(len(f) for f in found) >= limit:
            break
    return np.concatenate(found)[:limit] if found else np.zeros(0, dtype=np.int64)
