"""A classifier's targets: class labels, or a 0/1 indicator, as the one-hot columns over ``classes_``.

Labels are compared with the classes by value, whatever holds them (``1.0`` and ``True`` are the
class ``1``, text held as an object is the same text held as ``<U``), and a label that is not a
class is refused by name.  An indicator's columns are matched with the classes by name when a
DataFrame names them, else by position; a binary classifier's one 0/1 column is what
:func:`sklearn.preprocessing.label_binarize` returns, 1 marking ``classes_[1]``, unless its values
are also class labels that say otherwise: then it is refused.
"""

from __future__ import annotations

from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import pandas as pd

from .validation import check_column_shape, target_values

__all__ = ["UnknownLabelsError", "match_labels", "one_hot", "refuse_unknown_labels"]


class UnknownLabelsError(ValueError):
    """``y`` holds labels that are not among the model's classes, first at row ``row`` (a
    ``ValueError`` to the caller; a dask block renumbers ``row`` from its own start)."""

    def __init__(self, unknown: list, classes: list, row: int):
        self.unknown, self.classes, self.row = unknown, classes, row
        super().__init__(
            f"y has labels {unknown[:10]} that are not among the model's classes {classes} (first at row {row})."
        )

    def __reduce__(self):  # raised in a dask worker, it travels back pickled
        return type(self), (self.unknown, self.classes, self.row)

    def shifted(self, start: int) -> UnknownLabelsError:
        """The same error for rows that start at ``start``."""
        return UnknownLabelsError(self.unknown, self.classes, self.row + start)


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
    raise UnknownLabelsError(unknown, np.asarray(classes).tolist(), int(np.flatnonzero(~known)[0]))


def one_hot(y: Any, classes: np.ndarray, n_rows: int) -> np.ndarray:
    """The one-hot target over ``classes`` from labels, or from a 0/1 indicator (checked).

    Parameters
    ----------
    y : array-like
        Class labels ``(n,)``, or a 0/1 indicator: ``(n, K)`` with one column per class, or
        ``(n, 1)`` for a binary classifier.
    classes : ndarray of shape (K,)
        The model's ``classes_``.
    n_rows : int
        The number of rows of ``X``.

    Returns
    -------
    ndarray of shape (n_rows, K)
        1.0 where a row's class is ``classes[k]``.

    Raises
    ------
    ValueError
        For labels that are not classes, an indicator whose names are not the classes, or a
        shape that fits neither form.
    """
    names, labels = _named_columns(y)
    if labels.dtype.kind in "mM" and np.asarray(classes).dtype.kind not in "mM":
        # their values print as counts of their unit: "labels [0, 1, 2] are not among the classes [0, 1, 2]"
        raise ValueError(
            f"y holds dates or durations ({labels.dtype}), but the classifier's classes are {classes.tolist()}."
        )
    if labels.ndim == 2 and labels.shape[1] == 1 and len(classes) == 2 and _zero_one(labels):
        return _binary_indicator(labels[:, 0], classes, n_rows, names)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim == 2 and labels.shape[1] == len(classes) > 1:
        return _indicator(labels, classes, n_rows, names)
    if labels.ndim == 2:  # neither labels nor an indicator: say what would fit this classifier
        raise ValueError(
            f"y has {labels.shape[1]} columns, but the classifier has {len(classes)} classes: pass one class "
            f"label per row, or a 0/1 indicator with one column per class ({len(classes)} columns)."
        )
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
    drop_first=True)`` keeps whichever category came second).  A column whose values are also class
    labels is refused where the two readings differ.
    """
    if column.shape[0] != n_rows:
        raise ValueError(f"y has {column.shape[0]} rows but X has {n_rows} rows.")
    marked = 1
    if names is not None:
        named = np.flatnonzero(match_labels(np.array(names, dtype=object), classes)[0])
        if named.size == 0:
            named = np.flatnonzero([str(names[0]) == str(c) for c in classes])
        marked = int(named[0]) if named.size == 1 else 1
    _refuse_two_readings(column, marked, classes, names)
    positive = column.astype(np.float64)
    return np.column_stack([positive, 1.0 - positive] if marked == 0 else [1.0 - positive, positive])


def _refuse_two_readings(column: np.ndarray, marked: int, classes: np.ndarray, names) -> None:
    """Refuse a binary classifier's one 0/1 column whose values are also its class labels, when the
    two readings disagree: classes ``[1, 2]`` and a column of 1s (labels: class 1 every row; an
    indicator: ``classes_[1]``), or classes ``[0, 1]`` in a DataFrame column named ``0`` (an
    indicator of class 0).  Either reading would give a score without a word about the other.
    ``marked`` is the class the indicator's 1 stands for."""
    as_labels = match_labels(column, classes)
    as_indicator = np.empty_like(as_labels)
    as_indicator[:, marked], as_indicator[:, 1 - marked] = column == 1, column == 0
    if not as_labels.any(axis=1).all() or np.array_equal(as_labels, as_indicator):
        return
    named = "" if names is None else f" named {names[0]!r}"
    raise ValueError(
        f"y's one column{named} holds only {sorted(set(column.tolist()))}: class labels of this classifier "
        f"(classes {classes.tolist()}), and also a 0/1 indicator in which 1 marks the class "
        f"{classes.tolist()[marked]!r}; the two readings give different targets.  Pass labels as a 1-D y "
        "(y.ravel()), or an indicator with one column per class."
    )


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
