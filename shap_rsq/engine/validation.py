"""Checks of the rows, target and weights passed to the explainer, with errors that name the problem.

Every input path (NumPy, pandas, polars, pyarrow, dask) goes through these functions, so a
problem is reported with the same words whatever container it came in.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from numbers import Real
from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils.validation import _check_sample_weight, check_array, column_or_1d

from .columns import as_frame, in_model_order, listed

__all__ = [
    "Rows",
    "check_column_shape",
    "check_rows",
    "check_squares_finite",
    "check_target",
    "check_weight_total",
    "check_weights",
    "numeric_dtype",
    "ratio_weights",
    "target_values",
    "weighted_mean",
]


@dataclass(frozen=True)
class Rows:
    """Validated rows in the model's feature order.

    Attributes
    ----------
    array : ndarray of shape (n_samples, n_features)
        Float64 or float32 rows; NaN marks a missing value.
    columns : list of str or None
        Labels of the columns of ``array`` (the model's names when the input was a DataFrame
        matched by name, the input's own names when matched by position), ``None`` for arrays.
    labels : list or None
        The same columns' labels as the DataFrame holds them (integers stay integers): the
        index of the results, which a pandas user reads with the frame's own labels.
    order : list of int or None
        ``order[j]`` is the position in the DataFrame of the model's feature ``j``: ``None``
        when the columns came in the model's order (or an array was given).
    """

    array: np.ndarray
    columns: list[str] | None
    labels: list | None = None
    order: list[int] | None = None


def check_rows(
    X: Any,
    n_features: int,
    model_names: list[str] | None,
    family: str = "",
    min_rows: int = 2,
    precision: np.dtype | None = None,
) -> Rows:
    """Rows as a float array ``(n, p)`` in the model's feature order.

    A DataFrame (any library narwhals reads: pandas, polars, pyarrow, ...) is matched to the
    model by column name whenever the model recorded real names: reordered columns are put back
    in the model's order, and missing or extra columns are named in the error.  Only a model
    without names (or with the names its library makes up for arrays) is matched by position.
    NaN is allowed (trees route it to their default child); infinity and non-numeric values
    are refused.  A pandas column of object dtype whose values are all numbers is converted, as
    scikit-learn's ``check_array`` converts it.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        The rows.
    n_features : int
        The number of features the model reads.
    model_names : list of str or None
        The names the model recorded, if any.
    family : str, default=""
        The model's library (``"lightgbm"``, ``"catboost"``, ...), whose made-up names match by position.
    min_rows : int, default=2
        The fewest rows accepted.
    precision : dtype, optional
        The precision the model compares features in: values beyond its range are refused.

    Returns
    -------
    Rows
        The float array in the model's order and its column labels.
    """
    _refuse_sparse(X)
    _refuse_structured(X)
    frame = as_frame(_dense_pandas(X))
    labels = order = None
    if isinstance(frame, nw.DataFrame):
        array, labels, order = _frame_rows(frame, n_features, model_names, family, min_rows)
        columns = [str(c) for c in labels]
    else:
        _check_not_text(X)
        array, columns = _array(X, min_rows), None
    # finiteness is checked in row blocks: no (n, p) temporary
    step = max(1, (1 << 20) // max(1, array.shape[1]))
    if any(np.isinf(array[i : i + step]).any() for i in range(0, array.shape[0], step)):
        raise ValueError("X contains infinity; use NaN for missing values.")
    if precision is not None and np.dtype(precision).itemsize < array.dtype.itemsize:
        largest = float(np.finfo(precision).max)
        if any(np.nanmax(np.abs(array[i : i + step]), initial=0.0) > largest for i in range(0, len(array), step)):
            # the model rounds them to infinity, which X may not hold (scikit-learn's predict refuses them too)
            raise ValueError(
                f"X holds values beyond {np.dtype(precision).name}'s range (±{largest:.3g}), the precision this "
                "model compares features in: it would read them as infinite.  Rescale those features."
            )
    if array.shape[1] != n_features:
        raise ValueError(f"X has {array.shape[1]} features, but the model was fitted with {n_features} features.")
    return Rows(array, columns, labels, order)


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
    with np.errstate(over="ignore"):
        sst = np.sum(w * (target - weighted_mean(target, w)) ** 2)
    check_squares_finite(sst)
    if require_variance and sst <= 0.0:
        raise ValueError("y is constant (over the rows with positive weight): R² is undefined.")
    return target


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
        raise ValueError("y contains NaN or infinity; R² needs a finite target.")
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


_RATIO_SCALE = (1e-100, 1e100)  # weights whose largest lies here keep their digits in every sum of squares


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
        elif not np.isfinite(sample_weight):  # scikit-learn checks arrays for NaN, not a number
            raise ValueError(f"sample_weight must be a finite number or one per row; got {sample_weight!r}.")
    return _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True, allow_all_zero_weights=allow_all_zero
    )


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


def numeric_dtype(name: str, dtype: Any) -> None:
    """Refuse text before anything converts it: NumPy would turn '1.5' into a number, silently.

    Parameters
    ----------
    name : str
        The input's name, for the message.
    dtype : dtype-like
        The input's dtype.
    """
    if getattr(dtype, "kind", None) in ("U", "S"):
        raise ValueError(f"{name} holds text ({dtype}); pass numbers.")


def _frame_rows(frame, n_features: int, model_names, family: str, min_rows: int):
    """The frame's rows in the model's order, its column labels in that order (as the frame holds
    them), and the frame's position of each (``None``: already in order)."""
    labels = list(frame.columns)
    _check_numeric_columns(frame, [str(c) for c in labels])
    frame, order = in_model_order(frame, model_names, family)
    if order is not None:
        labels = [labels[i] for i in order]
    native = nw.to_native(frame)
    # pandas frames go to scikit-learn as they are (it knows their extension dtypes); others through NumPy
    data = native if frame.implementation.is_pandas() else frame.to_numpy()
    return _array(data, min_rows), labels, order


def _check_numeric_columns(frame, columns: list[str]) -> None:
    """Refuse columns that do not hold numbers; accept pandas object columns whose values all are.

    scikit-learn's ``check_array`` converts object columns of numbers to floats (and refuses text),
    so ``pd.DataFrame(array.astype(object))`` reads as numbers; such columns are converted the same
    way by :func:`_array`.  An object column holding anything else is named with one such value.
    """
    bad, example = [], None
    for position, (name, dtype) in enumerate(zip(columns, frame.schema.values(), strict=True)):
        if _is_number(dtype):
            continue
        if dtype == nw.Categorical and frame.implementation.is_pandas():
            # numbers as categories read as those numbers, as scikit-learn's check_array reads them
            categories = nw.to_native(frame).iloc[:, position].cat.categories
            if pd.api.types.is_numeric_dtype(categories.dtype):
                continue
        if dtype == nw.Object and frame.implementation.is_pandas():
            values = nw.to_native(frame).iloc[:, position]
            kind = pd.api.types.infer_dtype(values, skipna=True)
            if kind in _NUMBER_KINDS or (kind == "mixed" and all(map(_is_number_value, values))):
                continue
            if example is None:  # the first value that is not a number says what the column holds
                example = next(v for v in values if not _is_number_value(v))
        bad.append(name)
    if bad:
        held = f" (object dtype holding {example!r}, which is not a number)" if example is not None else ""
        raise ValueError(f"X has non-numeric columns {listed(bad)}{held}; encode them as numbers first.")


def _is_number_value(value: Any) -> bool:
    """A value scikit-learn converts to a float (None is missing, as ``astype(float)`` reads it)."""
    return value is None or isinstance(value, Real | Decimal | np.bool_)


# what pandas infers for object columns holding numbers only (NaN and None aside); "empty" is all missing
_NUMBER_KINDS = frozenset({"floating", "integer", "mixed-integer-float", "boolean", "decimal", "empty"})


def _is_number(dtype) -> bool:
    return dtype.is_numeric() or dtype == nw.Boolean


def _refuse_sparse(X: Any) -> None:
    # scikit-learn's own message says "use .toarray()", which turns the entries a sparse matrix
    # leaves out into 0.0: XGBoost and LightGBM read them as missing
    if sp.issparse(X):
        raise ValueError(
            "X is a sparse matrix; pass dense rows.  Entries a sparse matrix leaves out are missing "
            "values to XGBoost and LightGBM: to keep that meaning, fill them with NaN (X.toarray() fills "
            "them with 0.0, which the trees may route elsewhere)."
        )


def _refuse_structured(X: Any) -> None:
    if isinstance(X, np.ndarray) and X.dtype.names is not None:
        raise ValueError(
            f"X is a NumPy structured (record) array with fields {listed(list(X.dtype.names))}; pass a "
            "DataFrame of it (pandas.DataFrame(X), which keeps the names) or a plain 2-D array "
            "(numpy.lib.recfunctions.structured_to_unstructured(X))."
        )


def _dense_pandas(X: Any) -> Any:
    """A pandas frame with its sparse columns made dense: an entry such a column leaves out is its
    fill value (NaN stays missing, 0.0 is a zero), so nothing changes meaning."""
    if not isinstance(X, pd.DataFrame):
        return X
    sparse = {column: dtype.subtype for column, dtype in X.dtypes.items() if isinstance(dtype, pd.SparseDtype)}
    return X.astype(sparse) if sparse else X


def _check_not_text(X: Any) -> None:
    dtype = getattr(X, "dtype", None)
    numeric_dtype("X", np.asarray(X).dtype if dtype is None else dtype)


def _array(data: Any, min_rows: int) -> np.ndarray:
    # float32 is kept as is: a float32 copy of wide X would double its memory
    return check_array(
        data, dtype=(np.float64, np.float32), ensure_all_finite=False, ensure_min_samples=min_rows, input_name="X"
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
