"""The output name of an Explanation of R² shares, carrying what slicing the Explanation drops.

shap's Explanation keeps ``output_names`` through every operation (row and column slices,
``sample``, ``cohorts``, ``abs.mean(0)``, copies and pickles) but no attribute of ours.  The
plots need the number of rows the shares were computed on (a row's share is about ``1/n`` of a
feature's) and whether every row and feature is still there (only then do the shares and base
values add up to the model's R²): a ``str`` that reads "R²" carries both (one per output for
``multioutput="raw_values"``, whose output names shap slices along the last axis).  shap's
``op_history`` tells the operations that turned the shares into something else (``abs``,
``mean``, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "ScoreName",
    "ShareLabel",
    "holds_interactions",
    "is_whole",
    "labelled_shares",
    "output_score",
    "rows_computed",
    "score_name",
    "share_label",
    "transformed",
]

# shap's operations after which an Explanation still holds shares: picking rows, features or an
# output (``__getitem__``, also ``sample``) and summing over rows (axis 0: the global shares)
_SHARE_PRESERVING = frozenset({"__getitem__", "sum"})


class ShareLabel(str):
    """``"R²"``, with the shape and total of the shares it names.

    Attributes
    ----------
    n_rows, n_features : int
        Rows and players of the Explanation the explainer returned.
    total : float
        Its values and base values summed: the model's R² (a classifier's Brier skill score).
    interactions : bool
        Whether it holds interaction shares, ``(rows, features, features)``: one row of them,
        ``explanation[0]``, is a ``(features, features)`` matrix that reads like per-row shares.
    summary : dict or None
        Second-order games of a booster's loss: the model's exact score, the exact change the shares
        stand for, their sum and the gap between the two (the ``attrs`` of ``rsq``'s Series).
        ``None`` for squared error, whose shares add up to the exact change.
    """

    n_rows: int
    n_features: int
    total: float
    interactions: bool
    summary: dict | None

    def __new__(
        cls,
        text: str,
        n_rows: int,
        n_features: int,
        total: float,
        interactions: bool = False,
        summary: dict | None = None,
    ) -> ShareLabel:
        label = super().__new__(cls, text)
        label.n_rows, label.n_features, label.total = int(n_rows), int(n_features), float(total)
        label.interactions = bool(interactions)
        label.summary = None if summary is None else dict(summary)
        return label

    def __reduce__(self):
        return ShareLabel, (str(self), self.n_rows, self.n_features, self.total, self.interactions, self.summary)


class ScoreName(str):
    """A score's name with the summary of a second-order game (see :class:`ShareLabel`)."""

    summary: dict | None

    def __new__(cls, text: str, summary: dict | None = None) -> ScoreName:
        name = super().__new__(cls, text)
        name.summary = summary
        return name


def output_score(games: Any) -> str:
    """The score of combined outputs: a forest classifier's Brier skill score (variance-weighted over
    its classes), or R² (of a multi-output regressor, or averaged over a classifier's classes)."""
    brier = getattr(games, "brier", False) and games.multioutput == "variance_weighted"
    return "Brier skill score" if brier else "R²"


def score_name(shares: Any) -> str:
    """The score the shares are of: an Explanation's label or a Series' name when it names one
    (``"R²"``, ``"Brier skill score"``, ``"D² (log-loss)"``...), else ``"R²"``."""
    label = getattr(shares, "output_names", None) if not isinstance(shares, pd.Series) else shares.name
    if isinstance(label, str) and label.startswith(("R²", "D²", "Brier skill score")):
        return str(label)
    return "R²"


def share_label(
    output_names: Any, values: np.ndarray, base_values: np.ndarray, interactions: bool = False, summary=None
) -> Any:
    """``output_names`` as the explainer sets them: a single "R²" becomes a :class:`ShareLabel`, and
    so does each output's name of ``(rows, features, outputs)`` shares (with that output's total);
    ``summary``: a second-order game's exact score beside the shares' sum."""
    if isinstance(output_names, str) and values.ndim >= 2:
        total = float(values.sum() + np.sum(base_values))
        return ShareLabel(output_names, values.shape[0], values.shape[1], total, interactions, summary)
    if isinstance(output_names, list) and values.ndim == 3 and len(output_names) == values.shape[2]:
        base = np.broadcast_to(np.asarray(base_values, dtype=float), (values.shape[0], values.shape[2]))
        totals = values.sum(axis=(0, 1)) + base.sum(axis=0)
        return [
            ShareLabel(str(name), values.shape[0], values.shape[1], float(total))
            for name, total in zip(output_names, totals, strict=True)
        ]
    return output_names


def transformed(explanation: Any) -> str | None:
    """The first of shap's operations on the Explanation after which its values are no longer
    shares of R² (``abs``, ``mean``, ``max``, ``percentile``, arithmetic), or ``None``."""
    for item in getattr(explanation, "op_history", None) or ():
        name = getattr(item, "name", None)
        if name not in _SHARE_PRESERVING:
            return str(name)
        if name == "sum":  # over rows it gives the global shares; over features, each row's total
            args, kwargs = getattr(item, "args", ()) or (), getattr(item, "kwargs", {}) or {}
            axis = kwargs.get("axis", args[0] if args else None)
            if axis != 0:
                return f"sum(axis={axis})"
    return None


def labelled_shares(explanation: Any) -> bool:
    """Whether the Explanation says it holds shares of R²: the explainer's label (one, or one per
    output), or ``output_names="R²"`` set by whoever made it.  shap's SHAP values of the
    predictions (``explainer(X)`` without ``y``) carry neither."""
    label = explanation.output_names
    if isinstance(label, list):
        return bool(label) and all(isinstance(name, ShareLabel) for name in label)
    return isinstance(label, ShareLabel) or (isinstance(label, str) and label == "R²")


def holds_interactions(explanation: Any) -> bool | None:
    """Whether the explainer made the Explanation (or the slice of one) as interaction shares;
    ``None`` for an Explanation made elsewhere, which carries nothing to tell."""
    labels = explanation.output_names
    labels = labels if isinstance(labels, list) else [labels]
    if not labels or not all(isinstance(label, ShareLabel) for label in labels):
        return None
    return any(label.interactions for label in labels)


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
    if transformed(explanation) or values.ndim < 1 or values.shape[-1 if values.ndim == 1 else 1] != label.n_features:
        return False
    if values.ndim >= 2 and values.shape[0] != label.n_rows:
        return False
    # the rows in another order, or their sum (Explanation.sum(0)), add up to the total; one row,
    # or every row drawn again with replacement (sample(n, replace=True)), does not
    total = float(values.sum() + np.sum(explanation.base_values))
    return abs(total - label.total) <= 1e-9 * max(1.0, abs(label.total))
