"""Matching the columns of a data table to a model's features, its target and its weights.

Every failure is raised as :class:`~shap_rsq.cli.errors.InputError` naming the file, the column
and what to do.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..engine.columns import generic_names  # one rule for names made up for arrays
from .errors import InputError, did_you_mean

__all__ = ["LISTED", "ModelInputs", "model_inputs", "preview"]


@dataclass(frozen=True)
class ModelInputs:
    """The columns of a table that a model reads, its target and optional row weights."""

    X: pd.DataFrame
    y: pd.Series
    weight: pd.Series | None
    ignored: list[str]
    by_name: bool


def model_inputs(
    frame: pd.DataFrame,
    source: str | os.PathLike,
    target: str,
    model_names: list[str] | None,
    n_features: int,
    weight: str | None = None,
    classes: Any = None,
    family: str = "",
    categorical: dict | None = None,
) -> ModelInputs:
    """Select the model's feature columns from ``frame`` (read from ``source``) by name, or by position.

    Columns are matched by name when the model recorded real feature names
    (other columns are ignored), and by position otherwise; missing features,
    a wrong number of columns and non-numeric columns are refused.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    source : str or path-like
        Where it was read from, for messages.
    target : str
        The column holding ``y``.
    model_names : list of str or None
        The names of the model's features, if it recorded any.
    n_features : int
        The number of features the model reads.
    weight : str, optional
        The column of row weights.
    classes : array-like, optional
        A classifier's classes: the target then holds class labels, read as they are and checked
        against them.
    family : str, default=""
        The model's library: only the names *it* makes up for arrays (LightGBM's ``Column_0``,
        CatBoost's ``0``) mean "no names"; scikit-learn and XGBoost record the user's names only.
    categorical : dict of int to CategoricalColumn, optional
        The model's categorical features by position: their columns may hold text, and are
        passed on as they are (the explainer matches their values to the model's categories).

    Returns
    -------
    ModelInputs
        The feature columns in the model's order, the target, the weights and the ignored columns.
    """
    frame = frame.set_axis([str(c) for c in frame.columns], axis=1)  # a copy: the caller's table is untouched
    if len(frame) == 0:  # a header alone reads as columns of no type, which would be reported as non-numeric
        raise InputError(f"{source} has a header but no rows of data.")
    if weight is not None and weight == target:  # the target would weight its own rows
        raise InputError(f"--weight {weight!r} is the target column; give a column of row weights, or leave it out.")
    reserved = [c for c in (target, weight) if c is not None]
    columns = list(frame.columns)
    absent = [c for c in reserved if c not in columns]
    if absent:
        raise InputError(
            f"{source} has no column {absent[0]!r}.{did_you_mean(absent[0], columns)} "
            f"Its columns are {preview(columns, limit=LISTED)}.{_delimiter_hint(columns)}"
        )
    others = [c for c in columns if c not in reserved]
    # 'f0', 'f1', .. recorded by an XGBoost model fitted on a DataFrame are its columns' names:
    # matching them by position put a reordered table's columns on the wrong features
    # names a library makes up for arrays match by name too when the header holds every one of them
    # (the API matches them so): by position, a reordered table put its columns on other features
    named = bool(model_names) and set(model_names) <= set(others)
    by_name = bool(model_names) and (named or not generic_names(model_names, family))
    if by_name:
        _refuse_features_as(frame, target, weight, model_names)  # type: ignore[arg-type]
    if by_name:
        features = _columns_named(model_names, list(frame.columns), source)  # type: ignore[arg-type]
    else:
        if len(others) != n_features:
            raise InputError(
                f"{source} has {len(others)} columns besides the target, but the model expects {n_features} "
                "features (it records no feature names, so columns are matched by position)."
            )
        features = others
    categorical = categorical or {}
    _require_numeric(frame, [c for j, c in enumerate(features) if j not in categorical], source)
    used = set(features)
    for role, column in (("target", target), ("weight", weight)):
        if role == "target" and classes is not None:
            _check_labels(frame, column, source, classes)
            continue
        _check_column(frame, column, role, source)
    return ModelInputs(
        X=frame[features].astype({c: float for j, c in enumerate(features) if j not in categorical}),
        y=frame[target] if classes is not None else frame[target].astype(float),
        weight=frame[weight].astype(float) if weight is not None else None,
        ignored=[c for c in others if c not in used],
        by_name=by_name,
    )


def _refuse_features_as(frame: pd.DataFrame, target: str, weight: str | None, model_names: list[str]) -> None:
    """A column the model reads cannot also be the target or the weights: its R² would be meaningless."""
    spelled = {name.replace(" ", "_") for name in model_names}
    for role, column in (("target", target), ("weight", weight)):
        if column is not None and column.replace(" ", "_") in spelled:
            others = [c for c in frame.columns if c.replace(" ", "_") not in spelled and c != column]
            hint = f" Columns the model does not read: {preview(others, limit=LISTED)}." if others else ""
            raise InputError(
                f"the {role} column {column!r} is one of the model's features, so it cannot be the {role}: "
                f"give the column that holds the observed {'y' if role == 'target' else 'row weights'}.{hint}"
            )


def _columns_named(model_names: list[str], columns: list[str], source: str | os.PathLike) -> list[str]:
    """The column holding each of the model's features, in the model's order.

    LightGBM stores the feature ``'body mass'`` as ``'body_mass'``, so a
    column whose spaces read as underscores stands in for a missing name:
    the table the model was fitted on is accepted as it is.
    """
    underscored = {c.replace(" ", "_"): c for c in columns if " " in c}
    present = set(columns)  # sets, not lists: membership tests over 10^5 names were quadratic (60 s)
    found = [name if name in present else underscored.get(name) for name in model_names]
    missing = [name for name, column in zip(model_names, found, strict=True) if column is None]
    if missing:
        taken = set(found)
        unused = [c for c in columns if c not in taken]
        raise InputError(
            f"{source} lacks {len(missing)} feature(s) the model was fitted with: {preview(missing, limit=LISTED)}."
            f"{did_you_mean(missing[0], unused)} Its columns are {preview(columns, limit=LISTED)}."
        )
    return found  # type: ignore[return-value]


def _delimiter_hint(columns: list[str]) -> str:
    """A header read as one column that holds another delimiter (the file is not comma-separated),
    or a first line of numbers (the file has no header)."""
    if all(_is_number(name) for name in columns):
        return " Its first line holds numbers, not names: the file needs a header row naming its columns."
    if len(columns) != 1:
        return ""
    found = [mark for mark in (";", "|", "\t") if mark in columns[0]]
    return f" The header holds {found[0]!r}: save the table with commas, tabs (.tsv) or as Parquet." if found else ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _require_numeric(frame: pd.DataFrame, columns: list[str], source: str | os.PathLike) -> None:
    bad = [c for c in columns if not _numeric(frame[c])]
    if bad:
        # the first text that is not a number says what the column holds ('?' for missing, '1,5')
        column = frame[bad[0]]
        text = column[column.notna() & pd.to_numeric(column, errors="coerce").isna()]
        held = f" (column {bad[0]!r} holds {text.iloc[0]!r})" if len(text) else ""
        raise InputError(
            f"{source} has non-numeric feature column(s) {preview(bad)}{held}; tree models read numbers: encode "
            "them first (leave missing values as empty cells)."
        )


def _check_labels(frame: pd.DataFrame, column: str, source: str | os.PathLike, classes: Any) -> None:
    missing = int(frame[column].isna().sum())
    if missing:
        raise InputError(f"the target column {column!r} of {source} has {missing} missing class label(s).")
    known = np.asarray(classes).tolist()
    unknown = ~frame[column].isin(known)
    if unknown.any():
        shown = list(dict.fromkeys(frame[column][unknown].tolist()))
        raise InputError(
            f"the target column {column!r} of {source} holds {int(unknown.sum())} value(s) that are not among the "
            f"classifier's classes {known}; give the column of class labels (unknown: {shown[:3]})."
        )


def _check_column(frame: pd.DataFrame, column: str | None, role: str, source: str | os.PathLike) -> None:
    if column is None:
        return
    if not _numeric(frame[column]):
        raise InputError(f"the {role} column {column!r} of {source} is not numeric.")
    missing = int(frame[column].isna().sum())
    if missing:
        raise InputError(f"the {role} column {column!r} of {source} has {missing} missing value(s).")
    values = frame[column].astype(float)
    infinite = int((~values.map(math.isfinite)).sum())
    if infinite:
        raise InputError(f"the {role} column {column!r} of {source} has {infinite} infinite value(s).")
    negative = int((values < 0).sum())
    if role == "weight" and negative:
        raise InputError(
            f"the weight column {column!r} of {source} has {negative} negative value(s), the first in data row "
            f"{int((values < 0).to_numpy().argmax()) + 1}; row weights must be zero or more."
        )
    if role == "weight" and not (values > 0).any():  # scikit-learn's message named no column
        raise InputError(f"the weight column {column!r} of {source} is zero on every row: no row would count.")


def _numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)


# names a message lists in full before it cuts them short: every column of an ordinary table, not
# the 60,000 of a genomics one (a missing target printed them all on one line)
LISTED = 50


def preview(names: list[str], limit: int | None = 8) -> str:
    """``['a', 'b', ...] (12 columns)``: a list of names for a one-line message.

    Parameters
    ----------
    names : list of str
        Column names.
    limit : int or None, default=8
        Names shown before ``...``; ``None`` shows them all.

    Returns
    -------
    str
        The names and their count.
    """
    cut = len(names) if limit is None else limit
    shown = ", ".join(repr(n) for n in names[:cut])
    return f"[{shown}{', ...' if len(names) > cut else ''}] ({len(names)} column{'s' if len(names) != 1 else ''})"
