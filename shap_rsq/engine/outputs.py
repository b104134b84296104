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

import narwhals.stable.v2 as nw
import numpy as np
import pandas as pd
from sklearn.utils.validation import check_array

from ..models.info import ModelInfo
from .run import check_row_totals
from .validation import Rows, check_column_shape, target_values

__all__ = [
    "MULTIOUTPUT",
    "OutputGames",
    "checked_multioutput",
    "combine",
    "labelled",
    "local_output_shares",
    "match_labels",
    "output_sst",
    "refuse_unknown_labels",
    "target_columns",
]

MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")


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
    if multioutput not in MULTIOUTPUT:
        raise ValueError(f"multioutput must be one of {', '.join(map(repr, MULTIOUTPUT))}; got {multioutput!r}.")
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
        return _one_hot(y, info.classes, n_rows)
    shape = np.shape(y)
    if len(shape) != 2 or shape[1] != info.n_outputs:
        raise ValueError(
            f"The model has {info.n_outputs} outputs, so y must have {info.n_outputs} columns; got shape {shape}."
        )
    if shape[0] != n_rows:
        raise ValueError(f"y has {shape[0]} rows but X has {n_rows} rows.")
    columns = check_array(y, dtype=np.float64, ensure_all_finite=False, input_name="y")
    if not np.all(np.isfinite(columns)):
        raise ValueError("y contains NaN or infinity; R² needs a finite target.")
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
    mean = np.average(Y, axis=0, weights=weights)
    sst = np.sum(weights[:, None] * (Y - mean) ** 2, axis=0)
    if multioutput == "variance_weighted":
        if not sst.sum() > 0:
            raise ValueError("y is constant (over the rows with positive weight): the score is undefined.")
    elif np.any(sst <= 0):
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


def match_labels(labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """``(n, K)`` True where row ``i``'s label is ``classes[k]``, labels compared by value.

    Values are compared as NumPy compares them, whatever the containers' dtypes: ``1.0`` and
    ``True`` are the class ``1``, a label held as an object is the same text held as ``<U``, and
    labels of another kind (text against numbers) match no class.  A missing value (``None``,
    NaN, ``pd.NA``) matches no class.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Class labels.
    classes : ndarray of shape (n_classes,)
        The model's ``classes_``.

    Returns
    -------
    ndarray of bool, shape (n_samples, n_classes)
        Which class each row's label is (a row of False: a label the model never saw).
    """
    labels = np.asarray(labels)
    if labels.dtype == object:
        missing = pd.isna(labels)
        if missing.any():  # pd.NA == "a" is NA, whose truth value NumPy cannot take: compare no missing value
            labels = labels.copy()
            labels[missing] = _MISSING
    return labels[:, None] == np.asarray(classes)[None, :]


_MISSING = object()  # equal to nothing but itself: stands for a missing label in comparisons


def refuse_unknown_labels(labels: np.ndarray, known: np.ndarray, classes: np.ndarray) -> None:
    """Refuse labels that are not among the model's classes, naming them.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Class labels.
    known : ndarray of bool, shape (n_samples,)
        Which labels are classes (a row of :func:`match_labels` with a True).
    classes : ndarray of shape (n_classes,)
        The model's ``classes_``.

    Raises
    ------
    ValueError
        When some label is not a class.
    """
    if known.all():
        return
    unknown = list(dict.fromkeys(np.asarray(labels)[~known].tolist()))
    raise ValueError(
        f"y has labels {unknown[:10]} that are not among the model's classes {np.asarray(classes).tolist()} "
        f"(first at row {int(np.flatnonzero(~known)[0])})."
    )


def _one_hot(y: Any, classes: np.ndarray, n_rows: int) -> np.ndarray:
    """The one-hot target over ``classes`` from labels, or from a 0/1 indicator (checked)."""
    names, labels = _named_columns(y)
    if labels.ndim == 2 and labels.shape[1] == 1 and len(classes) == 2 and _zero_one(labels):
        return _binary_indicator(labels[:, 0], classes, n_rows, names)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim == 2 and labels.shape[1] == len(classes) > 1:
        return _indicator(labels, classes, n_rows, names)
    check_column_shape("y", labels.shape, n_rows)
    if labels.ndim != 1:
        raise ValueError(f"y must hold one class label per row; got shape {labels.shape}.")
    if labels.dtype.kind == "f":
        target_values(labels)  # NaN or infinity named as for regressors
    matches = match_labels(labels, classes)
    refuse_unknown_labels(labels, matches.any(axis=1), classes)
    return matches.astype(np.float64)


def _named_columns(y: Any) -> tuple[list | None, np.ndarray]:
    """A DataFrame's column names (``None`` for arrays, Series and the labels pandas makes up for an
    array's columns, ``0 .. m-1``) and its values as an array."""
    if isinstance(y, pd.DataFrame):
        default = isinstance(y.columns, pd.RangeIndex) and y.columns.equals(pd.RangeIndex(y.shape[1]))
        return (None if default else list(y.columns)), y.to_numpy()
    frame = nw.from_native(y, eager_only=True, pass_through=True)
    if isinstance(frame, nw.DataFrame):  # polars, pyarrow: their columns always have names
        return list(frame.columns), frame.to_numpy()
    return None, np.asarray(y)


def _zero_one(Y: np.ndarray) -> bool:
    return Y.dtype.kind in "biuf" and bool(np.all((Y == 0) | (Y == 1)))


def _binary_indicator(column: np.ndarray, classes: np.ndarray, n_rows: int, names: list | None) -> np.ndarray:
    """A binary classifier's one 0/1 column, as ``label_binarize`` gives it: 1 marks ``classes[1]``.

    A DataFrame whose column is named after a class marks that class instead (``pd.get_dummies(y,
    drop_first=True)`` keeps whichever category came second); for classes ``0`` and ``1`` either
    reading is the labels themselves.
    """
    if column.shape[0] != n_rows:
        raise ValueError(f"y has {column.shape[0]} rows but X has {n_rows} rows.")
    marked = 1
    if names is not None:
        named = np.flatnonzero(match_labels(np.array(names, dtype=object), classes)[0])
        if named.size == 0:
            named = np.flatnonzero([str(names[0]) == str(c) for c in classes])
        marked = int(named[0]) if named.size == 1 else 1
    positive = column.astype(np.float64)
    return np.column_stack([positive, 1.0 - positive] if marked == 0 else [1.0 - positive, positive])


def _name_matches(names: list, classes: np.ndarray) -> np.ndarray:
    """``(m, K)`` which class each column name is: by value as labels are matched, or else by spelling
    (polars and pyarrow columns are always text, so the class ``1`` is the column ``"1"`` there)."""
    matches = match_labels(np.array(names, dtype=object), classes)
    if _one_to_one(matches):
        return matches
    return np.array([str(n) for n in names], dtype=object)[:, None] == np.array([str(c) for c in classes])[None, :]


def _one_to_one(matches: np.ndarray) -> bool:
    return matches.shape[0] == matches.shape[1] and bool(
        np.all(matches.sum(axis=0) == 1) and np.all(matches.sum(1) == 1)
    )


def _indicator(Y: np.ndarray, classes: np.ndarray, n_rows: int, names: list | None = None) -> np.ndarray:
    """An ``(n, K)`` 0/1 indicator over ``classes`` (``label_binarize``'s output), checked.

    An array's columns are the classes in the order of ``classes``; a DataFrame's are matched to them
    by name (``pd.get_dummies`` of a Categorical follows its categories, not the sorted ``classes_``)
    and refused when their names are not the classes.  A row of zeros is a label the model never
    saw: its predicted probabilities still count in the Brier score.
    """
    if Y.shape[0] != n_rows:
        raise ValueError(f"y has {Y.shape[0]} rows but X has {n_rows} rows.")
    if names is not None:
        matches = _name_matches(names, classes)
        if not _one_to_one(matches):
            raise ValueError(
                f"y's columns {names} are not the model's classes {classes.tolist()}: name the indicator's "
                "columns after the classes (in any order), or pass an array, whose columns are read in the "
                "order of classes_."
            )
        Y = Y[:, np.argmax(matches, axis=0)]
    if Y.dtype.kind not in "biuf" or not np.all((Y == 0) | (Y == 1)) or np.any(Y.sum(axis=1) > 1):
        raise ValueError(
            f"A 2-D y for a classifier must be a 0/1 indicator with one column per class of {classes.tolist()} "
            "and at most one 1 per row (as sklearn.preprocessing.label_binarize returns); pass labels otherwise."
        )
    return Y.astype(np.float64)


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
        mean = np.average(self.Y, axis=0, weights=self.weights)
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
        means = np.average(games.Y, axis=0, weights=games.weights)
        for k in np.flatnonzero(sst > 0):
            values_k, base_k = games.values[..., k] / sst[k], base[:, k] / sst[k]
            Y_k, prediction_k = games.Y[:, k], games.predictions[:, k]
            check_row_totals(values_k, base_k, Y_k, prediction_k, games.weights, means[k], sst[k])
    how = {"multioutput": games.multioutput, "brier": games.brier}
    return combine(games.values, sst, **how), combine(base, sst, **how)


def labelled(shares: np.ndarray, names: Any, info: ModelInfo, name: str) -> Any:
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

    Returns
    -------
    ndarray, pandas.Series or pandas.DataFrame
        ``shares`` as is without ``names``.
    """
    if names is None:
        return shares
    index = pd.Index(names)
    if shares.ndim == 2:
        return pd.DataFrame(shares, index=index, columns=pd.Index(list(info.outputs), name="output"))
    return pd.Series(shares, index=index, name=name)
