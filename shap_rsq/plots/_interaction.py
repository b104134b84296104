"""The heatmap of interaction shares of R² (the matrix of :meth:`RSquaredExplainer.rsq_interactions`).

Public through :mod:`shap_rsq.plots` (:func:`~shap_rsq.plots.interaction_heatmap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import shap
from matplotlib.axes import Axes
from matplotlib.colors import Normalize

from ._shap import _names, refuse_not_shares

__all__ = ["interaction_heatmap"]

ANNOTATE_UP_TO = 12  # features; past that the numbers no longer fit in their cells at a readable size
MASKED = "#c4c4c4"  # the hidden diagonal: a grey darker than any diverging colormap's near-zero white


def interaction_heatmap(
    matrix: pd.DataFrame | np.ndarray | shap.Explanation,
    max_display: int = 10,
    *,
    feature_names: Sequence[str] | None = None,
    order: Sequence[int] | np.ndarray | None = None,
    main_effects: bool = False,
    annotate: bool | None = None,
    cmap: str = "RdBu_r",
    title: str | None = "Interaction shares of R²",
    ax: Axes | None = None,
    show: bool = True,
) -> Axes:
    """Heatmap of the interaction shares of R² among the features with the largest shares.

    Features are ordered by their total share of R² (the matrix's row sums, which are the shares
    of :meth:`~shap_rsq.RSquaredExplainer.rsq`), largest first, on both axes.  Cell ``[j, k]`` is
    half of the pair's interaction share, as in shap's ``shap_interaction_values``: the pair's
    whole share is ``[j, k] + [k, j]``.  The colours are centred on zero, since an interaction
    can take R² away.

    Parameters
    ----------
    matrix : DataFrame, ndarray or shap.Explanation
        The ``(p, p)`` matrix of :meth:`RSquaredExplainer.rsq_interactions
        <shap_rsq.RSquaredExplainer.rsq_interactions>` (a DataFrame whose index and columns are
        the feature names, or an array), or the Explanation of ``explainer(X, y,
        interactions=True)``, whose per-row ``(n, p, p)`` values are summed over rows.
    max_display : int, default=10
        Number of features drawn: those with the largest total shares.  Unlike :func:`bar`, the
        others are not added up into one row, as a sum of interactions with several features is
        not an interaction of any pair; the x-axis label says how many are left out.
    feature_names : sequence of str, optional
        Names for an array (default ``Feature 0``, ``Feature 1``, ...).
    order : sequence of int, optional
        Positions of the features in the matrix, in the order to draw them (the first
        ``max_display`` are drawn).  Default: by total share, largest first.  Give it when the
        matrix holds only some of the features, whose row sums are then not their shares.
    main_effects : bool, default=False
        Draw the diagonal, each feature's main effect.  Hidden (grey) by default: the main
        effects are usually an order of magnitude larger than the interactions, and on a
        colour scale spanning both the interactions would all look white.  With the diagonal
        hidden the colours span the interactions only.
    annotate : bool, optional
        Write each cell's value in it.  Default: when at most 12 features are drawn.
    cmap : str, default="RdBu_r"
        A diverging matplotlib colormap.
    title : str or None
        Title of the Axes.
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made when not given.
    show : bool, default=True
        Call :func:`matplotlib.pyplot.show` before returning.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes holding the image (its figure also holds a colour bar).

    Raises
    ------
    ValueError
        For a matrix that is not square, not symmetric or not finite, a DataFrame whose rows
        and columns name different features, or ``max_display`` below 1.

    Examples
    --------
    >>> from shap_rsq import plots
    >>> matrix = explainer.rsq_interactions(X, y)  # doctest: +SKIP
    >>> ax = plots.interaction_heatmap(matrix, max_display=8, show=False)  # doctest: +SKIP
    >>> ax.figure.savefig("interactions.png", bbox_inches="tight")  # doctest: +SKIP
    """
    if max_display < 1:
        raise ValueError(f"max_display must be at least 1, got {max_display}.")
    values, names = _square(matrix, feature_names)
    by_share = order is None
    if order is None:  # by the signed total share, as bar and heatmap order features; ties keep the column order
        order = np.argsort(-values.sum(axis=1), kind="stable")
    order = _positions(order, len(names))[:max_display]
    image = values[np.ix_(order, order)]  # a copy of a copy (_square): the caller's matrix is never written
    labels = [names[j] for j in order]
    if not main_effects:
        np.fill_diagonal(image, np.nan)  # drawn in the colormap's "bad" colour
    limit = float(np.nanmax(np.abs(image))) if np.isfinite(image).any() else 0.0
    limit = limit or 1.0  # an all-zero picture still needs a colour scale
    colors = plt.get_cmap(cmap).with_extremes(bad=MASKED)
    size = len(labels)
    if ax is None:
        side = 2.2 + 0.55 * size
        _, ax = plt.subplots(figsize=(side + 1.4, side))
    picture = ax.imshow(image, cmap=colors, vmin=-limit, vmax=limit, interpolation="nearest")
    ax.set_xticks(np.arange(size), labels, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_yticks(np.arange(size), labels)
    shown = f"{size} of {len(names)} features" if size < len(names) else "features"
    ax.set_xlabel(f"{shown}, by share of R²" if by_share else shown)
    if (size <= ANNOTATE_UP_TO) if annotate is None else annotate:
        _annotate(ax, image, picture.norm, colors)
    label = "share of R² (off the diagonal: half the pair's)"
    ax.figure.colorbar(picture, ax=ax, label=label, fraction=0.046, pad=0.04)
    if title:
        ax.set_title(title)
    if show:
        plt.show()
    return ax


def _square(matrix: Any, feature_names: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    """The matrix as a float array and its feature names, refusing what is not an interaction matrix."""
    names = feature_names
    if isinstance(matrix, shap.Explanation):
        refuse_not_shares(matrix, "interaction_heatmap")
        values = np.asarray(matrix.values, dtype=float)
        if values.ndim == 3:  # per-row interaction shares sum over rows to the matrix
            values = values.sum(axis=0)
        names = matrix.feature_names if matrix.feature_names is not None else feature_names
    elif isinstance(matrix, pd.DataFrame):
        if {"feature_a", "feature_b"} <= set(matrix.columns):  # whatever its shape (top_k=3 is 3 x 3)
            raise ValueError(
                "interaction_heatmap needs the square (p, p) matrix of rsq_interactions; this is the top_k "
                "table of pairs, which is not a matrix: call rsq_interactions without top_k."
            )
        values = matrix.to_numpy()
        names = [str(name) for name in matrix.columns] if feature_names is None else feature_names
    else:
        values = np.asarray(matrix)
    if values.ndim != 2 or values.shape[0] != values.shape[1]:
        raise ValueError(
            "interaction_heatmap needs the square (p, p) matrix of rsq_interactions, got shape "
            f"{values.shape}; the top_k table of pairs is not a matrix."
        )
    if isinstance(matrix, pd.DataFrame) and not matrix.index.equals(matrix.columns):
        raise ValueError(
            "interaction_heatmap needs a matrix whose rows and columns name the same features in the same "
            f"order; got rows {list(matrix.index)[:5]} and columns {list(matrix.columns)[:5]}."
        )
    values = values.astype(float)  # a copy: what is drawn never aliases the caller's matrix
    if not np.isfinite(values).all():
        raise ValueError("interaction_heatmap needs finite shares; the matrix holds NaN or infinite values.")
    scale = max(float(np.abs(values).max()), 1.0)
    if not np.allclose(values, values.T, rtol=0.0, atol=1e-9 * scale):
        raise ValueError("interaction_heatmap needs a symmetric matrix, as rsq_interactions returns; this one is not.")
    return values, _names(names, values.shape[0])


def _positions(order: Any, count: int) -> np.ndarray:
    """``order`` as an array of distinct feature positions, or a ``ValueError`` naming what is wrong."""
    positions = np.asarray(order)
    if positions.ndim != 1 or not np.issubdtype(positions.dtype, np.integer):
        raise ValueError(f"order must be a sequence of feature positions (integers), got {order!r}.")
    if len(positions) == 0 or positions.min() < 0 or positions.max() >= count:
        raise ValueError(f"order must hold positions from 0 to {count - 1}, got {positions.tolist()}.")
    if len(np.unique(positions)) < len(positions):
        raise ValueError(f"order names a feature twice: {positions.tolist()}.")
    return positions


def _annotate(ax: Axes, image: np.ndarray, norm: Normalize, colors: Any) -> None:
    """Each finite cell's value, in white on dark cells and black on light ones."""
    # two significant digits of the largest cell, and at least the three decimals the tables print
    decimals = max(3, 1 - int(np.floor(np.log10(max(norm.vmax, 1e-12)))))
    for (row, column), value in np.ndenumerate(image):
        if not np.isfinite(value):
            continue
        red, green, blue, _ = colors(norm(value))
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5  # perceived brightness
        color = "white" if dark else "black"
        text = f"{round(value, decimals) + 0.0:.{decimals}f}"  # + 0.0: a rounded -0.0 prints as 0
        ax.text(column, row, text, ha="center", va="center", fontsize=8, color=color)
