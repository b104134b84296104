"""Checks of the rows, target and weights passed to the explainer, with errors that name the problem."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import _check_sample_weight, check_array, column_or_1d

__all__ = ["check_rows", "check_target", "check_weights"]


def check_rows(
    X: Any, n_features: int, model_names: list[str] | None, min_rows: int = 2
) -> tuple[np.ndarray, list[str] | None]:
    """Rows as a float array ``(n, p)`` and their column names (when ``X`` is a DataFrame).

    NaN is allowed (trees route it to their default child); infinity, non-numeric
    columns, the wrong width and columns that do not match the model's are refused.
    """
    columns = _frame_columns(X)
    if columns is not None:
        _check_numeric_columns(X)
        if model_names is not None and not _generic_names(model_names) and not _same_names(columns, model_names):
            raise ValueError(
                "X has columns that do not match the features the model was fitted with: "
                f"expected {_preview(model_names)}, got {_preview(columns)}."
            )
    # float32 is kept as is and finiteness is checked in row blocks: no (n, p) temporary
    array = check_array(
        X, dtype=(np.float64, np.float32), ensure_all_finite=False, ensure_min_samples=min_rows, input_name="X"
    )
    step = max(1, (1 << 20) // max(1, array.shape[1]))
    if any(np.isinf(array[i : i + step]).any() for i in range(0, array.shape[0], step)):
        raise ValueError("X contains infinity; use NaN for missing values.")
    if array.shape[1] != n_features:
        raise ValueError(f"X has {array.shape[1]} features, but the model was fitted with {n_features} features.")
    return array, columns


def check_target(y: Any, n_rows: int, w: np.ndarray, *, require_variance: bool = True) -> np.ndarray:
    """The target as a finite float vector of length ``n_rows`` (with positive weighted variance, R^2's
    denominator, when ``require_variance``)."""
    target = column_or_1d(
        check_array(y, dtype=np.float64, ensure_2d=False, ensure_all_finite=False, input_name="y"), warn=True
    )
    if len(target) != n_rows:
        raise ValueError(f"y has {len(target)} values but X has {n_rows} rows.")
    if not np.all(np.isfinite(target)):
        raise ValueError("y contains NaN or infinity; R^2 needs a finite target.")
    mean = np.average(target, weights=w)
    if require_variance and np.sum(w * (target - mean) ** 2) <= 0.0:
        raise ValueError("y is constant (over the rows with positive weight): R^2 is undefined.")
    return target


def check_weights(sample_weight: Any, X: np.ndarray) -> np.ndarray:
    """Non-negative finite weights of length ``n``, not all zero (ones when ``None``)."""
    return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)


def _frame_columns(X: Any) -> list[str] | None:
    columns = getattr(X, "columns", None)
    return None if columns is None else [str(c) for c in columns]


def _check_numeric_columns(X: Any) -> None:
    bad = [
        str(name)
        for name, dtype in X.dtypes.items()
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))
    ]
    if bad:
        raise ValueError(f"X has non-numeric columns {_preview(bad)}; encode them as numbers first.")


def _same_names(columns: list[str], model_names: list[str]) -> bool:
    # LightGBM stores the column 'a b' as 'a_b'; the frame it was fitted on must still be accepted
    return [c.replace(" ", "_") for c in columns] == [m.replace(" ", "_") for m in model_names]


def _generic_names(names: list[str]) -> bool:
    # models fitted on arrays make up names such as 'f0', 'Column_0' or '0'
    return all(n in (f"f{i}", f"Column_{i}", str(i), f"Feature_{i}") for i, n in enumerate(names))


def _preview(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}] ({len(names)} columns)"
