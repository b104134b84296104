"""Matching a DataFrame's columns to the features a model was fitted with, by name.

A model that recorded real names is matched by name: reordered columns are put back in the
model's order, and missing or extra ones are named in the error.  Names a library makes up for
arrays (LightGBM's ``Column_0``, CatBoost's ``0``) carry no meaning and match by position.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import pandas as pd

__all__ = [
    "aligned_frame",
    "as_frame",
    "column_mismatch",
    "generic_names",
    "in_input_order",
    "in_model_order",
    "listed",
    "read_by_position",
]


def aligned_frame(X: Any, model_names: list[str] | None, family: str = "") -> tuple[Any, list[int] | None]:
    """``X`` as shap's prediction SHAP values can read it: a DataFrame as a pandas one with its columns
    in the model's order (matched by name, as :func:`~shap_rsq.engine.rows.check_rows`
    matches it), arrays as they are; and that order (:func:`in_model_order`).

    shap reads a DataFrame by position, and only pandas: for scikit-learn models a polars frame
    or a pyarrow table failed inside shap (no ``dtype``).  Its Explanation takes the names from
    the pandas columns.
    """
    frame = as_frame(X)
    if not isinstance(frame, nw.DataFrame):
        return X, None
    ordered, order = in_model_order(frame, model_names, family)
    if not frame.implementation.is_pandas():
        return pd.DataFrame(ordered.to_numpy(), columns=ordered.columns), order
    return (X if order is None else nw.to_native(ordered)), order


def in_input_order(values: Any, order: list[int] | None, axes: tuple[int, ...] = (1,)) -> Any:
    """Per-row results computed in the model's feature order, with their feature ``axes`` put in
    the order of the columns they were computed from (``order`` from :func:`in_model_order`).

    An array carries no names: ``shap.summary_plot(explainer.shap_values(X), X)`` pairs its
    columns with ``X``'s by position, so they follow ``X`` even where ``X``'s columns came in
    another order than the model's.  A list (one array per output) is reordered array by array.
    """
    if order is None:
        return values
    if isinstance(values, list):
        return [in_input_order(each, order, axes) for each in values]
    back = np.argsort(order)
    # one gather for every axis: per-row interaction values are the call's largest array, and an
    # axis at a time would hold two reordered copies of it besides the original
    index: list[Any] = [slice(None)] * np.ndim(values)
    for k, axis in enumerate(axes):
        index[axis] = back.reshape([-1 if j == k else 1 for j in range(len(axes))])
    return np.asarray(values)[tuple(index)]


def column_mismatch(columns: list[str], expected: list[str]) -> str:
    """A sentence naming the missing and the unexpected columns (empty when the sets agree).

    Parameters
    ----------
    columns : list of str
        The columns given.
    expected : list of str
        The columns the model was fitted with.

    Returns
    -------
    str
        ``"missing 'a'; unexpected 'b'"``, or an empty string.
    """
    present, wanted = set(columns), set(expected)
    missing = [c for c in expected if c not in present]
    extra = [c for c in columns if c not in wanted]
    parts = []
    if missing:
        parts.append(f"missing {listed(missing)}")
    if extra:
        parts.append(f"unexpected {listed(extra)}")
    return "; ".join(parts)


def as_frame(X: Any):
    """A narwhals DataFrame for any eager DataFrame library, else ``X`` itself."""
    columns = _column_labels(X)
    if columns is not None:
        # narwhals refuses duplicated names too, without saying which input it was reading
        names = [str(c) for c in columns]
        duplicated = sorted(name for name, count in Counter(names).items() if count > 1)
        if duplicated:
            raise ValueError(f"X has duplicated column names {listed(duplicated)}.")
    return nw.from_native(X, eager_only=True, pass_through=True)


def _column_labels(X: Any) -> list | None:
    """A DataFrame's column labels as its library holds them (``None`` for arrays).

    A pyarrow table's ``columns`` are its columns' data, its labels are ``column_names``: read as
    labels, two columns of equal values (two constant ones, a copied feature) were refused as one
    name given twice, with the data in the message.  (Not ``column_names`` wherever it exists: a
    pandas column of that name is an attribute of its frame too.)
    """
    if type(X).__module__.partition(".")[0] == "pyarrow":  # a Table or a RecordBatch
        return list(X.column_names)
    columns = getattr(X, "columns", None)
    return None if columns is None else list(columns)


def in_model_order(frame, model_names, family: str) -> tuple[Any, list[int] | None]:
    """The frame with its columns in the model's order, and that order (``None``: the frame as it
    is, already in order or matched by position).  A reordering copies the frame."""
    order = _model_order([str(c) for c in frame.columns], model_names, family)
    if order is None or order == list(range(len(order))):
        return frame, None
    return frame.select([nw.col(frame.columns[i]) for i in order]), order


def _model_order(columns: list[str], model_names, family: str) -> list[int] | None:
    """Positions of the model's features among ``columns``, or ``None`` to match by position.

    A model that recorded real names is matched by name, and a mismatch is an error.  Names that a
    library makes up when fitted on an array (LightGBM's ``Column_0``, CatBoost's ``0``) are only
    used when the columns are exactly those names, in any order: a model fitted on a frame whose
    columns were named '0'..'4' records the same names, and its columns are its features
    (tests/test_alignment.py).
    """
    # scikit-learn's feature-name check (validate_data) refuses reordered columns and knows no
    # LightGBM spelling; here columns are put in the model's order (tests/test_library_choices.py)
    if model_names is None:
        return None
    order = _order_by_name(columns, model_names, family)
    if order is not None or _made_up_names(model_names, family):
        return order
    spell = _lightgbm_spelling if family == "lightgbm" else str
    mismatch = column_mismatch([spell(c) for c in columns], [spell(m) for m in model_names])
    raise ValueError(f"X does not have the columns the model was fitted with: {mismatch}.")


def _order_by_name(columns: list[str], model_names: list[str], family: str) -> list[int] | None:
    """Positions of the model's features among ``columns`` when they are exactly its names (in
    any order, as the library spells them), else ``None``."""
    spell = _lightgbm_spelling if family == "lightgbm" else str
    spelled = {spell(c): i for i, c in enumerate(columns)}
    if len(spelled) != len(columns) or len(columns) != len(model_names):
        return None
    if not all(spell(m) in spelled for m in model_names):
        return None
    return [spelled[spell(m)] for m in model_names]


def read_by_position(columns: list[str], model_names, family: str) -> bool:
    """Whether a frame with these column names is matched to the model by position: the model
    recorded no names, or only the names its library makes up for arrays, which are not these."""
    if model_names is None:
        return True
    return _made_up_names(model_names, family) and _order_by_name(columns, model_names, family) is None


def _lightgbm_spelling(name: str) -> str:
    # LightGBM stores the column 'a b' as 'a_b'; the frame it was fitted on must still match (other
    # libraries keep names as given: a model may hold both 'a b' and 'a_b')
    return name.replace(" ", "_")


def generic_names(names: list[str], family: str | None = None) -> bool:
    """Names made up for arrays; without ``family``, any library's invented pattern counts."""
    if family is not None:
        return _made_up_names(names, family)
    return all(n in (f"f{i}", f"Column_{i}", str(i), f"Feature_{i}") for i, n in enumerate(names))


def _made_up_names(names: list[str], family: str) -> bool:
    """Names the library invented because it was fitted on an array (so they carry no meaning).

    scikit-learn and XGBoost record no names for arrays: any names they hold are the user's, even
    '0'..'4' (XGBoost stores integer column names as strings).
    """
    invented = {"lightgbm": "Column_{}", "catboost": "{}"}.get(family)
    return invented is not None and all(n == invented.format(i) for i, n in enumerate(names))


def listed(names: list[str], limit: int = 20) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"{shown}{more}"
