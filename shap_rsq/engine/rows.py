"""The rows passed to the explainer, checked and put in the model's feature order.

Every container (NumPy, pandas, polars, pyarrow) goes through :func:`check_rows`, so a problem is
reported with the same words whatever the rows came in; the target and weights are checked in
:mod:`~shap_rsq.engine.validation`.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from decimal import Decimal
from numbers import Real
from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils.validation import check_array

from .columns import as_frame, in_model_order, listed, read_by_position
from .validation import INFINITE_ROWS, check_width, numeric_dtype

__all__ = ["Rows", "check_rows", "user_stacklevel"]


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
    categorical: dict | None = None,
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
    categorical : dict of int to CategoricalColumn, optional
        The model's categorical features by position: their values (categories, text or numbers)
        become the codes the model's splits test, matched by value
        (:class:`~shap_rsq.models.categories.CategoricalColumn`).

    Returns
    -------
    Rows
        The float array in the model's order and its column labels.
    """
    _refuse_sparse(X, family)
    _refuse_structured(X)
    frame = as_frame(_dense_pandas(X))
    labels = order = None
    if isinstance(frame, nw.DataFrame):
        array, labels, order = _frame_rows(frame, n_features, model_names, family, min_rows, categorical)
        columns = [str(c) for c in labels]
    elif categorical:
        array, columns = _coded_array(X, n_features, categorical, min_rows), None
    else:
        _check_not_text(X)
        array, columns = _array(X, min_rows), None
    # finiteness is checked in row blocks: no (n, p) temporary
    step = max(1, (1 << 20) // max(1, array.shape[1]))
    if any(np.isinf(array[i : i + step]).any() for i in range(0, array.shape[0], step)):
        raise ValueError(INFINITE_ROWS)
    if precision is not None and np.dtype(precision).itemsize < array.dtype.itemsize:
        largest = float(np.finfo(precision).max)
        if any(np.nanmax(np.abs(array[i : i + step]), initial=0.0) > largest for i in range(0, len(array), step)):
            # the model rounds them to infinity, which X may not hold (scikit-learn's predict refuses them too)
            raise ValueError(
                f"X holds values beyond {np.dtype(precision).name}'s range (±{largest:.3g}), the precision this "
                "model compares features in: it would read them as infinite.  Rescale those features."
            )
    check_width(array.shape[1], n_features)
    return Rows(array, columns, labels, order)


def _frame_rows(frame, n_features: int, model_names, family: str, min_rows: int, categorical: dict | None = None):
    """The frame's rows in the model's order, its column labels in that order (as the frame holds
    them), and the frame's position of each (``None``: already in order)."""
    labels = list(frame.columns)
    if categorical:
        return _coded_frame_rows(frame, labels, n_features, model_names, family, min_rows, categorical)
    _check_numeric_columns(frame, [str(c) for c in labels])
    if all(isinstance(c, str) for c in labels) and read_by_position(labels, model_names, family):
        # as scikit-learn's predict warns: a reordered frame would be read wrong, silently
        warnings.warn(
            "X has feature names, but the model was fitted without feature names: its columns are read by "
            "position, in the order given.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    frame, order = in_model_order(frame, model_names, family)
    if order is not None:
        labels = [labels[i] for i in order]
    native = nw.to_native(frame)
    # pandas frames go to scikit-learn as they are (it knows their extension dtypes); others through NumPy
    data = native if frame.implementation.is_pandas() else frame.to_numpy()
    return _array(data, min_rows), labels, order


def _coded_frame_rows(frame, labels, n_features: int, model_names, family: str, min_rows: int, categorical: dict):
    """:func:`_frame_rows` for a model with categorical features: their columns become codes."""
    ordered, order = in_model_order(frame, model_names, family)
    if order is not None:
        labels = [labels[i] for i in order]
    check_width(len(labels), n_features)
    native = nw.to_native(ordered) if ordered.implementation.is_pandas() else ordered.to_pandas()
    numeric = [j for j in range(len(labels)) if j not in categorical]
    _check_numeric_columns(nw.from_native(native.iloc[:, numeric], eager_only=True), [str(labels[j]) for j in numeric])
    return _coded(native, categorical, min_rows), labels, order


def _coded_array(X: Any, n_features: int, categorical: dict, min_rows: int) -> np.ndarray:
    """An array's rows with its categorical features' values as codes (text is read there only)."""
    if not hasattr(X, "__array__") and not isinstance(X, list | tuple):
        return _array(X, min_rows)
    array = np.asarray(X)
    if array.ndim != 2:
        return _array(array, min_rows)
    check_width(array.shape[1], n_features)
    _check_not_text(np.delete(array, list(categorical), axis=1))
    return _coded(pd.DataFrame(array), categorical, min_rows)


def _coded(native: pd.DataFrame, categorical: dict, min_rows: int) -> np.ndarray:
    """A pandas frame in the model's order as floats, its categorical features as codes."""
    columns = {
        j: (categorical[j].codes(native.iloc[:, j]) if j in categorical else native.iloc[:, j])
        for j in range(native.shape[1])
    }
    return _array(pd.DataFrame(columns, index=native.index), min_rows)


def user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside shap_rsq and scikit-learn (a warning points at
    the user's call: the selector's ``fit`` runs inside scikit-learn's ``_fit_context`` wrapper)."""
    skipped = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    sklearn = sys.modules.get("sklearn")
    if sklearn is not None and sklearn.__file__:
        skipped.append(os.path.dirname(os.path.abspath(sklearn.__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(tuple(skipped)):
        frame, level = frame.f_back, level + 1
    return level


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
            found = _first_non_number(nw.to_native(frame).iloc[:, position])
            if found is None:
                continue
            example = found if example is None else example  # the first one says what the column holds
        bad.append(name)
    if bad:
        held = f" (object dtype holding {example!r}, which is not a number)" if example is not None else ""
        raise ValueError(f"X has non-numeric columns {listed(bad)}{held}; encode them as numbers first.")


def _first_non_number(values: Any) -> Any:
    """The first of the object ``values`` that scikit-learn would not read as a number, or ``None``
    when they all are (``None`` itself is a missing value)."""
    if pd.api.types.infer_dtype(values, skipna=True) in _NUMBER_KINDS:
        return None
    return next((value for value in values if not _is_number_value(value)), None)


def _is_number_value(value: Any) -> bool:
    """A value scikit-learn converts to a float (None is missing, as ``astype(float)`` reads it)."""
    return value is None or isinstance(value, Real | Decimal | np.bool_)


# what pandas infers for object columns holding numbers only (NaN and None aside); "empty" is all missing
_NUMBER_KINDS = frozenset({"floating", "integer", "mixed-integer-float", "boolean", "decimal", "empty"})


def _is_number(dtype) -> bool:
    return dtype.is_numeric() or dtype == nw.Boolean


def _refuse_sparse(X: Any, family: str) -> None:
    # XGBoost's predict reads the entries a sparse matrix leaves out as missing; LightGBM,
    # scikit-learn and CatBoost read them as 0.0, as X.toarray() fills them
    if not sp.issparse(X):
        return
    if family == "xgboost":
        fill = (
            "XGBoost reads the entries a sparse matrix leaves out as missing values: to keep that meaning, "
            "fill them with NaN (X.toarray() fills them with 0.0, which the trees may route elsewhere)."
        )
    else:
        fill = "This model reads the entries a sparse matrix leaves out as 0.0, as X.toarray() fills them."
    raise ValueError(f"X is a sparse matrix; pass dense rows.  {fill}")


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
    array = np.asarray(X) if dtype is None or getattr(dtype, "kind", None) == "O" else None
    numeric_dtype("X", array.dtype if array is not None else dtype)
    if array is not None and array.dtype.kind == "O":
        # as a DataFrame's object columns (_check_numeric_columns): numbers and None only, else
        # NumPy turns '1.5' into a number silently and a Timestamp into a TypeError
        example = _first_non_number(array.ravel())
        if example is not None:
            raise ValueError(f"X is an object array holding {example!r}, which is not a number; pass numbers.")


def _array(data: Any, min_rows: int) -> np.ndarray:
    shape = np.shape(data) if isinstance(data, list | tuple) or hasattr(data, "__array__") else None
    if shape is not None and len(shape) == 1:  # scikit-learn's message prints every value of X
        raise ValueError(
            f"X is 1-D (shape {shape}); pass a 2-D array of rows: X.reshape(-1, 1) if it holds one feature, "
            "X.reshape(1, -1) if it is one row."
        )
    # float32 is kept as is: a float32 copy of wide X would double its memory
    array = check_array(
        data, dtype=(np.float64, np.float32), ensure_all_finite=False, ensure_min_samples=0, input_name="X"
    )
    if array.shape[0] < min_rows:  # scikit-learn's "Found array with 1 sample(s)" says not why
        raise ValueError(_too_few_rows(array.shape[0], min_rows))
    return array


def _too_few_rows(n_rows: int, min_rows: int) -> str:
    held = f"X has {n_rows} row{'' if n_rows == 1 else 's'}"
    if min_rows < 2:
        return f"{held}; the loss decomposition needs at least one."
    return (
        f"{held}, and R² needs at least {min_rows}: it compares the model's errors with the spread of y over "
        "the rows (loss_reduction takes a single row)."
    )
