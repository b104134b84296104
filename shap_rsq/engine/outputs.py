"""Several outputs: a classifier's class probabilities (the Brier score) or a multi-output regressor.

Each output ``k`` of such a model is a sum of trees ``f_k``, so its squared error decomposes exactly
as a single output's does: the games of output ``k`` are played on target column ``Y_k``.  The
outputs' loss reductions ``L_jk`` (feature ``j``, output ``k``) then combine as
:func:`sklearn.metrics.r2_score` combines R² over outputs:

- ``"raw_values"``: ``L_jk / SST_k``, one column per output;
- ``"uniform_average"``: ``mean_k L_jk / SST_k``;
- ``"variance_weighted"``: ``sum_k L_jk / sum_k SST_k``.

For a classifier ``Y`` is the one-hot encoding of the labels over ``classes_``, and the
variance-weighted score is the Brier skill score
``BSS = 1 - sum_ik (Y_ik - p_ik)^2 / sum_ik (Y_ik - Ybar_k)^2``, its default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_array

from ..models.info import ModelInfo
from ..tuning import DEFAULT_TUNING, Tuning
from .labels import one_hot
from .rows import Rows
from .run import Decomposition, check_row_totals
from .validation import NONFINITE_TARGET, weighted_mean

__all__ = [
    "MULTIOUTPUT",
    "OutputGames",
    "checked_multioutput",
    "checked_sst",
    "combine",
    "complement",
    "complementary_classes",
    "complementary_targets",
    "labelled",
    "local_output_shares",
    "output_sst",
    "target_columns",
]

MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")


def complementary_classes(forests: Any, tuning: Tuning = DEFAULT_TUNING) -> bool:
    """Whether two class forests are complements, ``f_0 = 1 - f_1`` tree by tree (a binary forest
    classifier's probabilities).

    Then class 0's games are class 1's, term by term, on a target with ``Y_0 = 1 - Y_1``: each
    tree's values about its mean, ``m_S - c_t``, and the residuals before it are class 1's
    negated, and every game multiplies them in pairs.  Computing class 1's alone halves the time.

    Parameters
    ----------
    forests : sequence of Forest
        The model's forests, one per output.
    tuning : Tuning
        Its ``complement_tolerance``.

    Returns
    -------
    bool
        True for two forests of the same trees whose leaf values add up to one constant per tree,
        and whose constants and base offsets add up to 1.
    """
    if len(forests) != 2:
        return False
    a, b = forests[0].nodes, forests[1].nodes
    same = ("left", "right", "default", "feature", "threshold", "cover", "n_nodes")
    if a.value.shape != b.value.shape or not all(np.array_equal(getattr(a, f), getattr(b, f)) for f in same):
        return False
    leaves = a.is_leaf & (np.arange(a.value.shape[1]) < a.n_nodes[:, None])  # not the padding
    total = np.where(leaves, a.value + b.value, np.nan)
    constant = np.nanmean(total, axis=1)
    tolerance = tuning.complement_tolerance
    if np.nanmax(np.abs(total - constant[:, None]), initial=0.0) > tolerance:
        return False
    whole = forests[0].base_offset + forests[1].base_offset + float(np.sum(constant))
    return abs(whole - 1.0) <= tolerance * max(1, len(constant))


def complement(result: Decomposition) -> Decomposition:
    """Class 0's decomposition from class 1's, of :func:`complementary_classes` forests on
    :func:`complementary_targets`: the same values, the predictions and their mean from 1.

    Parameters
    ----------
    result : Decomposition
        Class 1's.

    Returns
    -------
    Decomposition
        Class 0's.
    """
    return Decomposition(result.values, 1.0 - result.prediction, 1.0 - result.mean_prediction)


def complementary_targets(Y: np.ndarray) -> bool:
    """Whether a two-column target's columns add up to 1 on every row (labels of the two classes:
    a fold's rows of a class its model never saw are rows of zeros).

    Parameters
    ----------
    Y : ndarray of shape (n_samples, 2)
        One-hot targets.

    Returns
    -------
    bool
        True when ``Y_0 = 1 - Y_1``.
    """
    return Y.shape[1] == 2 and bool(np.all(Y[:, 0] + Y[:, 1] == 1.0))


def checked_multioutput(multioutput: str | None, info: ModelInfo) -> str:
    """The combination asked for, by default the Brier skill score for classifiers and the
    average R² for regressors (as ``r2_score``).

    Parameters
    ----------
    multioutput : {"raw_values", "uniform_average", "variance_weighted"} or None
        The combination asked for.
    info : ModelInfo
        The model's record.

    Returns
    -------
    str
        The combination to use.
    """
    if multioutput is None:
        return "variance_weighted" if info.classes is not None else "uniform_average"
    if not isinstance(multioutput, str) or multioutput not in MULTIOUTPUT:  # an array's `in` is ambiguous
        weights = "" if isinstance(multioutput, str) else " (r2_score's output weights: weight 'raw_values' columns)"
        raise ValueError(
            f"multioutput must be one of {', '.join(map(repr, MULTIOUTPUT))}{weights}; got {multioutput!r}."
        )
    return multioutput


def target_columns(y: Any, info: ModelInfo, n_rows: int) -> np.ndarray:
    """``(n, K)`` float targets: the one-hot labels of a classifier, or a regressor's target columns.

    Parameters
    ----------
    y : array-like
        Class labels (classifier) or an ``(n, K)`` target (multi-output regressor).
    info : ModelInfo
        The model's record (its classes or number of outputs).
    n_rows : int
        The number of rows of ``X``.

    Returns
    -------
    ndarray of shape (n_rows, K)
        Float targets, one column per output.
    """
    if info.classes is not None:
        return one_hot(y, info.classes, n_rows)
    shape = np.shape(y)
    if len(shape) != 2 or shape[1] != info.n_outputs:
        raise ValueError(
            f"The model has {info.n_outputs} outputs, so y must have {info.n_outputs} columns; got shape {shape}."
        )
    if shape[0] != n_rows:
        raise ValueError(f"y has {shape[0]} rows but X has {n_rows} rows.")
    columns = check_array(y, dtype=np.float64, ensure_all_finite=False, input_name="y")
    if not np.all(np.isfinite(columns)):
        raise ValueError(NONFINITE_TARGET)
    return columns


def output_sst(Y: np.ndarray, weights: np.ndarray, multioutput: str, outputs: tuple[str, ...]) -> np.ndarray:
    """Each output's weighted total sum of squares, refused where the chosen score divides by zero.

    Parameters
    ----------
    Y : ndarray of shape (n_rows, K)
        The target columns.
    weights : ndarray of shape (n_rows,)
        Row weights.
    multioutput : str
        The combination, which decides where a zero sum of squares is an error.
    outputs : tuple of str
        The outputs' names, for the message.

    Returns
    -------
    ndarray of shape (K,)
        Each output's weighted total sum of squares.
    """
    mean = weighted_mean(Y, weights)
    return checked_sst(np.sum(weights[:, None] * (Y - mean) ** 2, axis=0), multioutput, outputs)


def checked_sst(sst: np.ndarray, multioutput: str, outputs: tuple[str, ...]) -> np.ndarray:
    """Each output's total sum of squares ``(K,)``, refused where the chosen score divides by zero
    (see :func:`output_sst`; a dask array's are summed over its blocks)."""
    if not sst.sum() > 0:  # every output constant: no combination is defined
        raise ValueError("y is constant (over the rows with positive weight): the score is undefined.")
    if multioutput != "variance_weighted" and np.any(sst <= 0):
        constant = [outputs[k] for k in np.flatnonzero(sst <= 0)]
        raise ValueError(
            f"y is constant for output(s) {constant} over these rows, so their R² is undefined; "
            'use multioutput="variance_weighted", or rows where every output varies.'
        )
    return sst


def combine(per_output: np.ndarray, sst: np.ndarray, multioutput: str, *, brier: bool = False) -> np.ndarray:
    """Combine loss reductions whose last axis runs over outputs into the chosen score's shares.

    Parameters
    ----------
    per_output : ndarray of shape (..., K)
        Loss reductions, the last axis over outputs.
    sst : ndarray of shape (K,)
        Each output's total sum of squares.
    multioutput : str
        ``"raw_values"``, ``"uniform_average"`` or ``"variance_weighted"``.
    brier : bool, default=False
        The outputs are a classifier's one-hot classes: ``"variance_weighted"`` is then the Brier
        skill score, which counts the probability given to a class absent from ``y`` as error.
        Otherwise an output constant on the rows weighs nothing, as in
        :func:`sklearn.metrics.r2_score` (its loss reduction is left out with its zero ``SST``).

    Returns
    -------
    ndarray
        Shares of the chosen score: the last axis kept for ``"raw_values"``, dropped otherwise.
    """
    if multioutput == "raw_values":
        return per_output / sst
    if multioutput == "uniform_average":
        return np.mean(per_output / sst, axis=-1)
    counted = per_output if brier else per_output[..., sst > 0]
    return counted.sum(axis=-1) / sst.sum()


@dataclass(frozen=True)
class OutputGames:
    """The decomposition of every output on one set of rows (not yet combined).

    Attributes
    ----------
    rows : Rows
        The validated rows.
    Y : ndarray of shape (n_samples, n_outputs)
        Target columns (one-hot labels for a classifier).
    weights : ndarray of shape (n_samples,)
    multioutput : str
        How the outputs combine.
    values : ndarray of shape (n_features, n_outputs) or (n_samples, n_features, n_outputs)
        Loss reductions of every output, summed over rows or per row.
    predictions : ndarray of shape (n_samples, n_outputs)
    mean_predictions : ndarray of shape (n_outputs,)
        ``E f_k`` of every output.
    outputs : tuple of str
        The outputs' names.
    names : pandas.Index or None
        Labels of the values' feature axis (features or grouped players), ``None`` for arrays.
    brier : bool
        The outputs are a classifier's classes (see :func:`combine`).
    """

    rows: Rows
    Y: np.ndarray
    weights: np.ndarray
    multioutput: str
    values: np.ndarray
    predictions: np.ndarray
    mean_predictions: np.ndarray
    outputs: tuple[str, ...]
    names: Any = None
    brier: bool = False

    def sst(self) -> np.ndarray:
        """Each output's weighted total sum of squares.

        Returns
        -------
        ndarray of shape (K,)
            The sums, as :func:`output_sst` checks them.
        """
        return output_sst(self.Y, self.weights, self.multioutput, self.outputs)

    def base_values(self) -> np.ndarray:
        """``(n, K)`` each row's part of the constant ``E f_k``'s loss reduction.

        Returns
        -------
        ndarray of shape (n_rows, K)
            The base values.
        """
        mean = weighted_mean(self.Y, self.weights)
        return self.weights[:, None] * ((self.Y - mean) ** 2 - (self.Y - self.mean_predictions) ** 2)


def local_output_shares(games: OutputGames, check_additivity: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-row shares and base values of the combined score (each output checked for additivity).

    Parameters
    ----------
    games : OutputGames
        The decomposition of every output.
    check_additivity : bool
        Check each output's per-row values against its loss reduction.

    Returns
    -------
    values : ndarray
        Per-row shares, ``(n_rows, n_features)`` or with a last axis over outputs for ``"raw_values"``.
    base_values : ndarray
        Each row's base value, shaped like ``values`` without the feature axis.
    """
    sst = games.sst()
    base = games.base_values()
    if check_additivity:
        means = weighted_mean(games.Y, games.weights)
        for k in np.flatnonzero(sst > 0):
            values_k, base_k = games.values[..., k] / sst[k], base[:, k] / sst[k]
            Y_k, prediction_k = games.Y[:, k], games.predictions[:, k]
            check_row_totals(values_k, base_k, Y_k, prediction_k, games.weights, means[k], sst[k])
    how = {"multioutput": games.multioutput, "brier": games.brier}
    return combine(games.values, sst, **how), combine(base, sst, **how)


def labelled(shares: np.ndarray, names: Any, info: ModelInfo, name: str, multioutput: str | None = None) -> Any:
    """A Series (one score) or a DataFrame (one column per output) when the values have ``names``.

    Parameters
    ----------
    shares : ndarray of shape (n_players,) or (n_players, K)
        Combined shares.
    names : sequence of str or None
        Labels of the features (or grouped players); ``None`` for arrays.
    info : ModelInfo
        The model's record (its output names).
    name : str
        The Series' name.
    multioutput : str, optional
        How the shares were combined, kept in a DataFrame's ``attrs["multioutput"]`` when given:
        ``"raw_values"`` shares are each output's own R² share, on that output's scale, which
        :func:`shap_rsq.plots.class_bar` (the parts of one score, stacked) reads and refuses.

    Returns
    -------
    ndarray, pandas.Series or pandas.DataFrame
        ``shares`` as is without ``names``.
    """
    if names is None:
        return shares
    index = pd.Index(names)
    if shares.ndim == 2:
        frame = pd.DataFrame(shares, index=index, columns=pd.Index(list(info.outputs), name="output"))
        if multioutput is not None:
            frame.attrs["multioutput"] = multioutput
        return frame
    return pd.Series(shares, index=index, name=name)
