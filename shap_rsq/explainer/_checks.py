"""Checks the explainer makes around a decomposition: its constructor's arguments, the trees it
read against the model's own predictions, and the additivity of per-row shares."""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from shap.utils._exceptions import ExplainerError

from ..engine.columns import generic_names
from ..models.inspect import ModelInfo, UnsupportedModelError

__all__ = [
    "PredictionCheck",
    "check_budget",
    "check_model_predictions",
    "check_n_jobs",
    "check_names",
    "check_progress",
    "check_rounding_against_target",
    "refuse_rsq_game",
    "refuse_unreached_splits",
    "refuse_without_target",
    "rows_with_nan",
]


def check_budget(memory_budget: Any) -> float:
    """``memory_budget`` in GiB: a positive finite number (below 1/64 GiB nothing useful fits)."""
    # float() takes the text "1" and True as 1 GiB: only real numbers are numbers of GiB here
    if isinstance(memory_budget, bool) or not isinstance(memory_budget, numbers.Real):
        raise TypeError(f"memory_budget must be a number of GiB; got {memory_budget!r}.")
    budget = float(memory_budget)
    if not np.isfinite(budget):  # no call could be sized or refused against it
        raise ValueError(f"memory_budget must be a finite number of GiB; got {memory_budget!r}.")
    if budget < 1.0 / 64:
        raise ValueError(f"memory_budget must be at least 1/64 GiB (16 MiB); got {memory_budget!r}.")
    return budget


def check_progress(progress: Any) -> bool | str:
    """``progress``: ``True``, ``False`` or ``"auto"`` (a bar for calls estimated at 10 s or more)."""
    if isinstance(progress, str) and progress == "auto":
        return "auto"
    if isinstance(progress, (bool, np.bool_)):
        return bool(progress)
    raise ValueError(f"progress must be True, False or 'auto'; got {progress!r}.")


def check_n_jobs(n_jobs: Any) -> int | None:
    """``n_jobs`` as joblib takes it: ``None`` (joblib's configuration) or a non-zero integer."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1: every core); got {n_jobs!r}.")
    return int(n_jobs)


def refuse_rsq_game(model_output: Any, feature_perturbation: str) -> Exception | None:
    """Why calls that need R² are refused on an explainer of these shap options, or ``None``.

    The shares of R² are the Shapley values of a game whose coalitions know some features and
    average the trees over the others along their paths (tree-path-dependent).  shap's other
    options explain other functions: another output (a probability, a loss), or the marginal
    (interventional) game, whose R² shares (a "SAGE for trees") this package does not compute.

    Parameters
    ----------
    model_output : str
        shap's ``model_output``.
    feature_perturbation : str
        shap's, resolved (``"interventional"`` or ``"tree_path_dependent"``).

    Returns
    -------
    ValueError or None
        The refusal every call with ``y`` raises; ``None`` where the game is defined.
    """
    if not (isinstance(model_output, str) and model_output == "raw"):
        return ValueError(
            f"This explainer explains model_output={model_output!r}; shares of R² decompose the model's raw "
            "output (its prediction), so they need an explainer with model_output='raw'.  Calls without y "
            "are shap's and work as they do in shap.TreeExplainer."
        )
    if feature_perturbation != "tree_path_dependent":
        return ValueError(
            "This explainer is interventional (background data with feature_perturbation 'auto' or "
            "'interventional'): its SHAP values are those of the marginal game.  Shares of R² are the Shapley "
            "values of the tree-path-dependent game, whose coalitions condition on the features they know "
            "and average the trees over the others with the trees' covers; its marginal counterpart is not "
            "computed here.  For shares with conditional expectations on your own reference rows, use "
            "RSquaredExplainer(model, data, feature_perturbation='tree_path_dependent'); without data the "
            "covers are the trees' training covers.  Calls without y are shap's and work as in shap."
        )
    return None


def refuse_unreached_splits(forests: list, n_rows: int) -> Exception | None:
    """Why calls that need R² are refused on covers counted from background rows, or ``None``.

    A coalition that does not know a split's feature averages its children by the share of the
    background rows going each way; a split that none of them reaches has no such share, so the
    game is not defined there.  (A leaf none of them reaches, below a split some reach, is fine:
    it gets a share of 0.)  shap itself then puts 1e-6 in place of each zero cover for its SHAP
    values; the R² game takes no made-up weight.

    Parameters
    ----------
    forests : list of Forest
        The forests with covers counted from the background rows.
    n_rows : int
        How many background rows there were.

    Returns
    -------
    shap's ExplainerError or None
        The refusal every call with ``y`` raises; ``None`` where every split is reached.
    """
    nodes = [forest.nodes for forest in forests]
    unreached = [int(np.sum((n.left >= 0) & (n.depth >= 0) & (n.cover <= 0))) for n in nodes]
    if not any(unreached):
        return None
    trees = sum(int(np.sum(np.any((n.left >= 0) & (n.depth >= 0) & (n.cover <= 0), axis=1))) for n in nodes)
    return ExplainerError(
        f"None of the {n_rows} background rows reaches {max(unreached)} of the trees' splits (in {trees} "
        "tree(s)): shares of R² with conditional expectations on this reference population are not defined "
        "where it has no rows.  Pass more background rows (shap keeps 100 of a larger array or DataFrame; "
        "shap.maskers.Independent(data, max_samples=len(data)) keeps them all), or no data to use the "
        "trees' training covers."
    )


def refuse_without_target(**options: Any) -> None:
    """Options that belong to R² (``sample_weight``, ``groups``, ``multioutput``) need ``y``:
    refuse any given on a call without it, which returns shap's SHAP values of the predictions.

    Parameters
    ----------
    **options
        The options passed, ``None`` when not given.
    """
    given = [name for name, value in options.items() if value is not None]
    if given:
        what = {
            "sample_weight": "sample_weight weights the rows of R²",
            "groups": "groups= makes players of R² shares (shap's SHAP values of the predictions have none)",
            "multioutput": "multioutput= combines the outputs' R²",
        }[given[0]]
        raise TypeError(f"{what}: pass y too, or leave {given[0]} out.")


def refuse_non_flag(interactions: Any) -> None:
    """``interactions`` is a flag, the third positional parameter as in shap's call: weights passed
    there (``explainer(X, y, w)``) are refused by name rather than read as "yes".

    Parameters
    ----------
    interactions : object
        What was passed as ``interactions``.
    """
    if not isinstance(interactions, bool | np.bool_):
        raise TypeError(
            f"interactions must be True or False (the third positional parameter, as in shap.TreeExplainer's "
            f"call); got {type(interactions).__name__}.  Pass row weights as sample_weight=..."
        )


def check_names(feature_names: Any, info: ModelInfo) -> list[str] | None:
    """The names given, one per model feature, else those the model was fitted with.

    Parameters
    ----------
    feature_names : sequence of str or None
        The names passed to the explainer.
    info : ModelInfo
        The model's record.

    Returns
    -------
    list of str or None
        The names to label the shares with.
    """
    if feature_names is None:
        return info.feature_names
    if isinstance(feature_names, str) or (hasattr(feature_names, "shape") and np.ndim(feature_names) != 1):
        raise TypeError("feature_names must be a list of names, one per feature.")
    names = [str(name) for name in feature_names]
    if len(names) != info.n_features:
        raise ValueError(f"feature_names has {len(names)} names, but the model has {info.n_features} features.")
    _refuse_moved_names(names, info)
    return names


def _refuse_moved_names(names: list[str], info: ModelInfo) -> None:
    # names label the model's features in its order: one of the model's own names at another
    # position would put a feature's share under another feature's name (rows as arrays)
    recorded = info.feature_names
    if recorded is None or generic_names(recorded, info.family):
        return
    position = {name: j for j, name in enumerate(recorded)}
    moved = [(name, j, position[name]) for j, name in enumerate(names) if position.get(name, j) != j]
    if moved:
        name, given, own = moved[0]
        raise ValueError(
            f"feature_names puts {name!r} at position {given}, but the model was fitted with {name!r} at "
            f"position {own}: its share would be labelled with another feature's name.  Give the names in "
            "the model's order, or leave feature_names out (the model's own names are used)."
        )


_SPREAD_TOLERANCE = 0.01  # of the checked rows' prediction range; float32 rounding of y ~ 1e5 with spread 1 is 0.3%


def check_model_predictions(info: ModelInfo, sample: np.ndarray, prediction: np.ndarray) -> float:
    """The trees as read must reproduce the model's own predictions (up to float32 rounding).

    Parameters
    ----------
    info : ModelInfo
        The model's record (its ``predict``).
    sample : ndarray of shape (n_rows, n_features)
        A few rows.
    prediction : ndarray
        The trees' prediction of those rows as read.

    Returns
    -------
    float
        The largest difference between the model's predictions and the trees'.
    """
    with warnings.catch_warnings(), _one_openmp_thread():
        # the rows were already matched to the model's features by name or position; the model's
        # complaint about an array where it was fitted on a frame would point at a call never made
        warnings.filterwarnings("ignore", message=".*feature names", category=UserWarning)
        expected = np.asarray(info.predict(sample), dtype=np.float64).reshape(-1)
    scale = 1.0 + np.max(np.abs(expected))
    gap = np.max(np.abs(np.reshape(prediction, -1) - expected))
    if gap > 1e-5 * scale:
        raise UnsupportedModelError(
            f"The trees read from this {info.family} model do not reproduce its predictions "
            f"(largest difference {gap:.3g}); it uses a feature shap-rsq does not support."
        )
    # measured against the predictions' size alone, float32 rounding passes: XGBoost adds its trees
    # in float32, and on y = signal + 1e7 (spread 1) its predictions step by 1 while the trees' exact
    # sum is another model (R² -7.9 against the model's 0.38, the main feature dropped by a selector).
    # The trees' own spread counts too: on y + 1e8 the model's predictions are all equal while its
    # trees' sum varies, and a spread of the model's alone (zero) let it through
    spread = max(float(np.ptp(expected)), float(np.ptp(prediction))) if expected.size > 1 else 0.0
    _refuse_coarse_rounding(info, gap, spread, "their spread")
    return gap


def check_rounding_against_target(info: ModelInfo, gap: float, target: np.ndarray) -> None:
    """Refuse a target that varies less than the model's float32 rounding (``gap``, from
    :func:`check_model_predictions`): its R² would be that of the trees' exact sum, not the model's.

    On ``y + 1e12`` XGBoost's trees learn nothing and the model predicts one rounded constant, 4,000
    away from the trees' exact base: the shares summed to R² -0.0016 against the model's -4e6.
    """
    # a constant column (spread 0) has no R² to misstate: a class absent from the rows (its one-hot
    # column all 0) was refused over the probabilities' 1e-16 of rounding
    _refuse_coarse_rounding(info, gap, float(np.ptp(target)) if target.size > 1 else 0.0, "the range of y")


def _refuse_coarse_rounding(info: ModelInfo, gap: float, spread: float, what: str) -> None:
    """Refuse a model whose predictions differ from its trees' exact sum by ``gap``, more than 1% of
    a ``spread`` that varies (``what`` names it)."""
    if spread > 0 and gap > _SPREAD_TOLERANCE * spread:
        rounded = "rounded in float32" if info.family == "xgboost" else "rounded"  # XGBoost adds in float32
        raise UnsupportedModelError(
            f"The trees read from this {info.family} model reproduce its predictions only to {gap:.3g}, "
            f"{gap / spread:.0%} of {what} ({spread:.3g}): its predictions are {rounded} more coarsely than "
            "they vary, so its R² is not that of its trees.  Fit the model on y minus its mean (R² and its "
            "shares do not change), or in another unit."
        )


class PredictionCheck:
    """Checks, once, that the trees as read reproduce the model's own predictions.

    Misread trees are a property of the model, so this runs on the first call, and again the
    first time rows with missing values are seen (their routing is checked too).  At most 32 of
    the validated rows are predicted, rows with NaN first, so a fresh and a used explainer see the
    same input and the model's ``predict`` never copies a wide ``X``.
    """

    def __init__(self, info: ModelInfo) -> None:
        self.info = info
        self.verified = self.verified_missing = False
        self.gap = 0.0  # the largest difference seen between the model's predictions and the trees'

    def __call__(self, rows: np.ndarray, prediction: np.ndarray, target: np.ndarray | None = None) -> None:
        """Check the model on a few of ``rows`` (once, and again for the first missing values),
        then ``target`` (each output's in its columns) against the model's rounding."""
        missing = np.zeros(0, dtype=np.int64) if self.verified_missing else rows_with_nan(rows, limit=16)
        if not self.verified or missing.size:
            spread = np.linspace(0, len(prediction) - 1, num=min(16, len(prediction))).astype(int)
            index = np.unique(np.concatenate([missing, spread]))
            self.sample(rows[index], prediction[index])
            self.verified = True
            self.verified_missing = missing.size > 0
        self.against(target)

    def sample(self, sample: np.ndarray, prediction: np.ndarray, target: np.ndarray | None = None) -> None:
        """Compare the model's predictions on ``sample`` with the trees' (``prediction``), then the
        largest gap seen with the range of ``target`` (the dask path's check)."""
        self.gap = max(self.gap, check_model_predictions(self.info, sample, prediction))
        self.against(target)

    def against(self, target: np.ndarray | None) -> None:
        """Compare the largest gap seen with the range of ``target`` (values, or each output's in
        its columns)."""
        if target is not None and self.gap > 0:
            for column in np.reshape(target, (len(target), -1)).T:
                check_rounding_against_target(self.info, self.gap, column)


def rows_with_nan(rows: np.ndarray, limit: int) -> np.ndarray:
    """Indices of up to ``limit`` rows holding a NaN, scanning row blocks (no ``(n, p)`` temporary).

    Parameters
    ----------
    rows : ndarray of shape (n_samples, n_features)
        The validated rows.
    limit : int
        Most indices to return.

    Returns
    -------
    ndarray of int
        The rows' indices, in order.
    """
    step = max(1, (1 << 20) // max(1, rows.shape[1]))
    found: list[np.ndarray] = []
    for start in range(0, rows.shape[0], step):
        hit = np.flatnonzero(np.isnan(rows[start : start + step]).any(axis=1)) + start
        found.append(hit)
        if sum(len(f) for f in found) >= limit:
            break
    return np.concatenate(found)[:limit] if found else np.zeros(0, dtype=np.int64)


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
