"""The output name of an Explanation of R² shares, carrying what slicing the Explanation drops.

shap's Explanation keeps ``output_names`` through every operation (row and column slices,
``sample``, ``cohorts``, ``abs.mean(0)``, copies and pickles) but no attribute of ours.  The
plots need the number of rows the shares were computed on (a row's share is about ``1/n`` of a
feature's) and whether every row and feature is still there (only then do the shares and base
values add up to the model's R²): a ``str`` that reads "R²" carries both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ShareLabel", "is_whole", "rows_computed", "share_label"]


class ShareLabel(str):
    """``"R²"``, with the shape and total of the shares it names.

    Attributes
    ----------
    n_rows, n_features : int
        Rows and players of the Explanation the explainer returned.
    total : float
        Its values and base values summed: the model's R² (a classifier's Brier skill score).
    """

    n_rows: int
    n_features: int
    total: float

    def __new__(cls, text: str, n_rows: int, n_features: int, total: float) -> ShareLabel:
        label = super().__new__(cls, text)
        label.n_rows, label.n_features, label.total = int(n_rows), int(n_features), float(total)
        return label

    def __reduce__(self):
        return ShareLabel, (str(self), self.n_rows, self.n_features, self.total)


def share_label(output_names: Any, values: np.ndarray, base_values: np.ndarray) -> Any:
    """``output_names`` as the explainer sets them: a single "R²" becomes a :class:`ShareLabel`."""
    if isinstance(output_names, str) and values.ndim >= 2:
        total = float(values.sum() + np.sum(base_values))
        return ShareLabel(output_names, values.shape[0], values.shape[1], total)
    return output_names


def rows_computed(explanation: Any) -> int | None:
    """The number of rows the explainer computed the shares on (``None`` for an Explanation made
    elsewhere)."""
    label = explanation.output_names
    return label.n_rows if isinstance(label, ShareLabel) else None


def is_whole(explanation: Any) -> bool:
    """Whether the Explanation holds every row and feature the explainer returned (or their sum
    over rows), so that its values and base values add up to the model's R²; ``True`` for an
    Explanation made elsewhere, which carries nothing to tell."""
    label = explanation.output_names
    if not isinstance(label, ShareLabel):
        return True
    values = np.asarray(explanation.values, dtype=float)
    if values.ndim < 1 or values.shape[-1 if values.ndim == 1 else 1] != label.n_features:
        return False
    if values.ndim >= 2:
        return values.shape[0] == label.n_rows
    # one row, or the sum over rows (Explanation.sum(0)): only the sum adds up to the total
    total = float(values.sum() + np.sum(explanation.base_values))
    return abs(total - label.total) <= 1e-9 * max(1.0, abs(label.total))
