"""Checks of the target and weights passed to the explainer, with errors that name the problem.

Every input path (NumPy, pandas, polars, pyarrow, dask) goes through these functions, so a
problem is reported with the same words whatever container it came in; the rows are checked in
:mod:`~shap_rsq.engine.rows`.
"""

from __future__ import annotations

from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
from sklearn.utils.validation import _check_sample_weight, check_array, column_or_1d

__all__ = [
    "INFINITE_ROWS",
    "NONFINITE_TARGET",
    "check_column_shape",
    "check_spread",
    "check_squares_finite",
    "check_target",
    "check_weight_total",
    "check_weights",
    "check_weights_are_a_vector",
    "check_width",
    "numeric_dtype",
    "ratio_weights",
    "target_values",
    "weighted_mean",
]


# rows with infinity are refused: said here once, for NumPy, pandas and polars rows and dask's blocks
INFINITE_ROWS = (
    "X contains infinity: replace it with a large finite value such as ±1e30, which every split routes as "
    "it routes infinity, or with NaN if it stands for a missing value."
)
NONFINITE_TARGET = "y contains NaN or infinity; the loss needs a finite target (drop those rows)."
_SMALLEST_SQUARES = 1e-200  # sums of squares below this lose digits in the squares of their games
_RATIO_SCALE = (1e-100, 1e100)  # weights whose largest lies here keep their digits in every sum of squares


def check_target(y: Any, n_rows: int, w: np.ndarray, *, require_variance: bool = True) -> np.ndarray:
    """The target as a finite float vector of length ``n_rows`` (with positive weighted variance, R²'s
    denominator, when ``require_variance``).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The observed target.
    n_rows : int
        The number of rows of ``X``.
    w : ndarray of shape (n_samples,)
        Validated row weights.
    require_variance : bool, default=True
        Refuse a target that is constant over the rows with positive weight.

    Returns
    -------
    ndarray of shape (n_samples,)
        The target as float64.
    """
    check_column_shape("y", np.shape(y), n_rows)
    target = target_values(y)
    sst = check_spread(target, w) if require_variance else _squares(target, w)
    if require_variance and sst < _SMALLEST_SQUARES:
        raise ValueError("y is constant (over the rows with positive weight): R² is undefined.")
    return target


def check_spread(target: np.ndarray, w: np.ndarray) -> float:
    """The weighted sum of squares of ``target`` about its mean, refusing one too small for float64
    to hold a target that varies (a constant target is left to the caller: R² is undefined there).

    Parameters
    ----------
    target : ndarray of shape (n_samples,)
        Finite target values.
    w : ndarray of shape (n_samples,)
        Validated row weights.

    Returns
    -------
    float
        The sum of squares.
    """
    sst = _squares(target, w)
    positive = target[w > 0]
    if sst < _SMALLEST_SQUARES and positive.size and positive.min() != positive.max():
        # squares of a spread of 1e-160 are subnormal: shares drifted by 2e-4, and at 1e-170 the
        # sum of squares was 0 and y was called constant
        raise ValueError(
            f"y varies too little for float64 (its sum of squares about the mean is {sst:.3g}): R² does not "
            "depend on the unit of y, so fit the model on y in a smaller unit (y times a power of ten)."
        )
    return sst


def _squares(target: np.ndarray, w: np.ndarray) -> float:
    """The weighted sum of squares about the mean, refused by name when it overflows."""
    with np.errstate(over="ignore", under="ignore"):
        sst = float(np.sum(w * (target - weighted_mean(target, w)) ** 2))
    check_squares_finite(sst)
    return sst


def weighted_mean(values: np.ndarray, w: np.ndarray) -> np.ndarray | float:
    """The weighted mean over rows (axis 0), exactly the common value of a column that is constant
    over the rows with positive weight.

    ``np.average`` of a constant can be one rounding off it (0.1 averaged over 100 rows): its sum of
    squares is then 1e-33 instead of 0, the constant passes for a target with variance, and the
    shares divided by it come out near 1e30.

    Parameters
    ----------
    values : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        The values.
    w : ndarray of shape (n_samples,)
        Non-negative weights, not all zero.

    Returns
    -------
    float or ndarray of shape (n_outputs,)
        The means.
    """
    mean = np.average(values, axis=0, weights=w)
    positive = w > 0
    if not positive.any():
        return mean
    first = values[np.argmax(positive)]
    constant = np.all(values[positive] == first, axis=0)
    return np.where(constant, first, mean) if np.ndim(mean) else (first if constant else mean)


def check_squares_finite(sst: float) -> None:
    """Refuse a target whose sum of squares overflows float64: every share would read 0 or NaN.

    Parameters
    ----------
    sst : float
        The weighted sum of squares of ``y`` about its mean.
    """
    if not np.isfinite(sst):
        raise ValueError(
            "y spreads too widely for float64: its sum of squares about the mean overflows (above 1.8e308).  "
            "R² does not depend on the unit of y: fit the model on y in a larger unit (y divided by a "
            "power of ten)."
        )


def target_values(y: Any) -> np.ndarray:
    """``y`` as a finite float vector (one column of a 2-D ``y`` is accepted, with sklearn's warning).

    Parameters
    ----------
    y : array-like
        The target, from any container narwhals reads.

    Returns
    -------
    ndarray
        A finite float64 vector.
    """
    y = _native_column(y)
    numeric_dtype("y", getattr(y, "dtype", np.asarray(y).dtype))
    try:
        array = check_array(y, dtype=np.float64, ensure_2d=False, ensure_all_finite=False, input_name="y")
    except ValueError as error:
        if "convert" not in str(error):
            raise
        raise ValueError(f"y holds values that are not numbers ({error}).") from error
    target = column_or_1d(array, warn=True)
    if not np.all(np.isfinite(target)):
        raise ValueError(NONFINITE_TARGET)
    return target


def ratio_weights(w: np.ndarray) -> np.ndarray:
    """Weights of a ratio of weighted sums (R²), divided by their largest when it lies far from 1.

    R² does not change when every weight is scaled, but float64 does: weights of 1e307 made the
    sums of squares overflow, and weights of 5e-324 (subnormal) lost their digits (shares summing
    to 1.035 for an R² of 0.987).  Ordinary weights are returned as they are, bit for bit.

    Parameters
    ----------
    w : ndarray of shape (n_samples,)
        Validated weights.

    Returns
    -------
    ndarray of shape (n_samples,)
        The weights, on a scale float64 holds.
    """
    largest = float(w.max(initial=0.0))
    return w / largest if largest > 0 and not _RATIO_SCALE[0] <= largest <= _RATIO_SCALE[1] else w


def check_weights(sample_weight: Any, X: np.ndarray, *, allow_all_zero: bool = False) -> np.ndarray:
    """Non-negative finite weights of length ``n``, not all zero (ones when ``None``).

    ``allow_all_zero`` is for one block of rows among others: the sum is checked over all blocks.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
        The weights.
    X : ndarray of shape (n_samples, n_features)
        The validated rows (for their number).
    allow_all_zero : bool, default=False
        Accept weights that are all zero.

    Returns
    -------
    ndarray of shape (n_samples,)
        Float64 weights.
    """
    if sample_weight is not None and not _is_plain(sample_weight):
        sample_weight = _native_column(sample_weight)
    if sample_weight is not None:
        numeric_dtype("sample_weight", getattr(sample_weight, "dtype", np.asarray(sample_weight).dtype))
        if not np.isscalar(sample_weight):
            check_column_shape("sample_weight", np.shape(sample_weight), X.shape[0])
            check_weights_are_a_vector(np.shape(sample_weight))
        elif not np.isfinite(sample_weight):  # scikit-learn checks arrays for NaN, not a number
            raise ValueError(f"sample_weight must be a finite number or one per row; got {sample_weight!r}.")
    return _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True, allow_all_zero_weights=allow_all_zero
    )


def check_weights_are_a_vector(shape: tuple[int, ...]) -> None:
    """Refuse weights of shape ``(n, 1)``: a target may come as one column, weights come as a vector
    (scikit-learn's words, "got 2D array", came through before)."""
    if len(shape) != 1:
        raise ValueError(f"sample_weight must be 1-D, one weight per row; got shape {shape}.")


def check_column_shape(name: str, shape: tuple[int, ...], n_rows: int) -> None:
    """One value per row: 1-D (or a single column) of length ``n_rows``.

    Parameters
    ----------
    name : str
        ``"y"`` or ``"sample_weight"``, for the message.
    shape : tuple of int
        The input's shape.
    n_rows : int
        The number of rows of ``X``.
    """
    if len(shape) == 2 and shape[1] != 1:
        what = "the model has one output, so y must be 1-D" if name == "y" else "one weight per row is expected"
        raise ValueError(f"{name} has {shape[1]} columns; {what}.")
    if len(shape) not in (1, 2):
        raise ValueError(f"{name} must be 1-D (one value per row of X); got shape {shape}.")
    if shape[0] != n_rows:
        raise ValueError(f"{name} has {shape[0]} values but X has {n_rows} rows.")


def check_weight_total(total: float) -> None:
    """The message scikit-learn gives for all-zero weights, for weights summed block by block.

    Parameters
    ----------
    total : float
        The sum of the weights over all blocks.
    """
    if not total > 0:
        raise ValueError("Sample weights must contain at least one non-zero number.")


def check_width(n_columns: int, n_features: int) -> None:
    """Refuse rows of ``n_columns`` columns for a model fitted on ``n_features`` (scikit-learn's words).

    Parameters
    ----------
    n_columns : int
        The rows' columns.
    n_features : int
        The features the model was fitted with.
    """
    if n_columns != n_features:
        raise ValueError(f"X has {n_columns} features, but the model was fitted with {n_features} features.")


def numeric_dtype(name: str, dtype: Any) -> None:
    """Refuse text before anything converts it: NumPy would turn '1.5' into a number, silently.

    Parameters
    ----------
    name : str
        The input's name, for the message.
    dtype : dtype-like
        The input's dtype.
    """
    kind = getattr(dtype, "kind", None)
    if kind in ("U", "S"):
        raise ValueError(f"{name} holds text ({dtype}); pass numbers.")
    if kind in ("M", "m"):
        # NumPy and scikit-learn read them as counts of their unit: a target of dates gave an R² of 1.7e-9
        raise ValueError(
            f"{name} holds dates or durations ({dtype}), which would be read as counts of their unit; pass numbers."
        )


def _native_column(values: Any) -> Any:
    """A Series of any library narwhals reads as its native object, so that scikit-learn reads
    it; anything else (arrays, a one-column DataFrame, which scikit-learn reads) as it is."""
    if _is_plain(values):
        return values
    return nw.to_native(nw.from_native(values, series_only=True, pass_through=True), pass_through=True)


def _is_plain(value: Any) -> bool:
    # a number is one weight for every row, as scikit-learn's sample_weight takes it
    return value is None or np.isscalar(value) or isinstance(value, (np.ndarray, list, tuple))
