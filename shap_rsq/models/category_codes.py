"""A categorical feature's input values as the codes its splits test, matched by value.

A pandas column whose categories come in another order, or with other categories, reads the same
as the same values in the model's order; text where the model's categories are numbers (or the
reverse) is refused with the column's name.  The codes then become routing columns
(:mod:`~shap_rsq.models.categories`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["UNSEEN", "CategoricalColumn", "coded_rows"]

# a value no category takes: codes are non-negative integers, so it matches no split's set
UNSEEN = -1.0


@dataclass(frozen=True)
class CategoricalColumn:
    """How one categorical feature's input values become the codes its splits test.

    Attributes
    ----------
    feature : int
        The feature's position in the model.
    name : str
        Its name, for messages.
    categories : ndarray or None
        The model's categories in code order (code ``k`` is ``categories[k]``); values are
        matched to them by value.  ``None``: the input holds the library's integer codes
        themselves (``categorical_feature=`` on integers), read as numbers.
    unseen : {"other", "missing", "refuse"}
        How a value that is none of the categories reads, as the library's own ``predict`` reads
        it: as a code no split holds (``"other"``), as missing (LightGBM recodes a pandas column to
        its training categories), or not at all (XGBoost refuses a category it was not fitted on).
    truncate : bool
        Whether codes given as numbers are truncated toward zero, as the library casts them
        (LightGBM reads 2.7 as category 2).
    """

    feature: int
    name: str
    categories: np.ndarray | None = None
    unseen: str = "other"
    truncate: bool = True

    @property
    def reads_text(self) -> bool:
        """Whether the categories are text (a CSV file's column is then read as text, as written)."""
        return self.categories is not None and all(isinstance(c, str) for c in self.categories)

    def codes(self, values: Any) -> np.ndarray:
        """The codes of ``values`` (a column: pandas Series, NumPy array), NaN where missing.

        Parameters
        ----------
        values : array-like of shape (n_samples,)
            The column as given.

        Returns
        -------
        ndarray of float64
            Codes, NaN for missing values, :data:`UNSEEN` (or NaN, see :attr:`unseen`) for
            values that are none of the model's categories.

        Raises
        ------
        ValueError
            For text where the model reads numbers, or numbers where its categories are text:
            the message names the column.
        """
        if self.categories is None:
            return self._numeric_codes(values)
        return self._matched_codes(values)

    def _numeric_codes(self, values: Any) -> np.ndarray:
        series = pd.Series(values) if not isinstance(values, pd.Series) else values
        if isinstance(series.dtype, pd.CategoricalDtype):
            series = series.astype(series.cat.categories.dtype if _numbers(series.cat.categories) else object)
        try:
            codes = pd.to_numeric(series, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            example = next(v for v in series if not _is_number(v))
            raise ValueError(
                f"Column {self.name!r} is a categorical feature that the model reads as integer codes, but "
                f"it holds {example!r}, which is not a number; pass the codes the model was fitted on."
            ) from None
        return np.trunc(codes) if self.truncate else codes

    def _matched_codes(self, values: Any) -> np.ndarray:
        known = pd.Index(self.categories)
        series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object))
        if isinstance(series.dtype, pd.CategoricalDtype):
            # match the column's own categories once, then read its codes
            given = series.cat.categories
            self._check_kind(given)
            position = known.get_indexer(given).astype(np.float64)
            raw = series.cat.codes.to_numpy()
            used = np.zeros(len(given), dtype=bool)
            used[raw[raw >= 0]] = True
            self._unseen(position, given, used)
            return np.where(raw >= 0, position[np.maximum(raw, 0)], np.nan)
        missing = series.isna().to_numpy()
        self._check_kind(pd.Index(series[~missing].unique()))
        codes = known.get_indexer(series.where(~missing, None)).astype(np.float64)
        codes[missing] = np.nan
        self._unseen(codes, series, ~missing)
        return codes

    def _unseen(self, codes: np.ndarray, values: Any, present: np.ndarray) -> None:
        """Set the codes of values that are none of the categories (``-1`` from ``get_indexer``)."""
        unseen = (codes < 0) & present
        if unseen.any() and self.unseen == "refuse":
            example = np.asarray(values, dtype=object)[np.flatnonzero(unseen)[0]]
            raise ValueError(
                f"Column {self.name!r} holds {example!r}, a category the model was not fitted on; the model's own "
                "predict refuses it too."
            )
        codes[codes < 0] = np.nan if self.unseen == "missing" else UNSEEN

    def _check_kind(self, given: pd.Index) -> None:
        """Refuse numbers where the categories are text and text where they are numbers."""
        if len(given) == 0 or _numbers(given) == _numbers(pd.Index(self.categories)):
            return
        held = "numbers" if _numbers(given) else "text"
        kind = "numbers" if _numbers(pd.Index(self.categories)) else "text"
        shown = ", ".join(repr(v) for v in list(self.categories)[:5]) + (", ..." if len(self.categories) > 5 else "")
        raise ValueError(
            f"Column {self.name!r} is a categorical feature whose categories are {kind} ({shown}), but it holds "
            f"{held} (such as {given[0]!r}); pass the categories themselves: they are matched by value."
        )


def _numbers(index: pd.Index) -> bool:
    return pd.api.types.is_numeric_dtype(index.dtype) or pd.api.types.infer_dtype(index, skipna=True) in (
        "integer",
        "floating",
        "mixed-integer-float",
        "decimal",
    )


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, str)


def coded_rows(features: dict, X: Any) -> np.ndarray:
    """Rows in the model's feature order (a frame or an array, categories as values) as floats,
    the categorical ``features`` (by position) as codes: what a categorical model's predict reads.

    Parameters
    ----------
    features : dict of int to CategoricalColumn
        The model's categorical features.
    X : DataFrame or array-like of shape (n_samples, n_features)
        The rows, in the model's order; a float array is taken to hold codes already.

    Returns
    -------
    ndarray of float64
        The rows with codes.
    """
    if isinstance(X, np.ndarray) and X.dtype.kind == "f":
        return X
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=object))
    out = np.empty(frame.shape, dtype=np.float64)
    for j in range(frame.shape[1]):
        column = frame.iloc[:, j]
        out[:, j] = features[j].codes(column) if j in features else pd.to_numeric(column).to_numpy(np.float64)
    return out
