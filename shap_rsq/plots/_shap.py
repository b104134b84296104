"""shap's own plots drawn on R² shares: the Explanation in percentage points and axes that say R².

Public through :mod:`shap_rsq.plots` (:func:`~shap_rsq.plots.for_shap`, :func:`~shap_rsq.plots.shap_plot`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import matplotlib.pyplot as plt
import numpy as np
import shap
from matplotlib.axes import Axes

from ..explainer._share_label import (
    holds_interactions,
    is_whole,
    labelled_shares,
    rows_computed,
    score_name,
    transformed,
)

__all__ = ["for_shap", "refuse_not_shares", "shap_plot"]


POINTS = 100.0  # shares are drawn in percentage points of R²: shap prints values with two decimals
# decimals shap prints: a feature's value on a bar, and a waterfall's totals (E f and f(x))
_VALUE_DECIMALS, _TOTAL_DECIMALS = 2, 3

# shap's fixed wording -> what it means on R² shares; longer keys first, as some contain others
_SUMMED_WORDS = {
    "mean(|SHAP value|)": "share of R² (percentage points)",
    "SHAP value (impact on model output)": "share of R² (percentage points)",
    "SHAP value": "share of R² (percentage points)",
    "$E[f(X)]$": "R² of E f",
    "$f(x)$": "model R²",
}
# a slice of the rows or features: its shares and base values do not add up to the model's R²
_PART_WORDS = {**_SUMMED_WORDS, "$E[f(X)]$": "these rows' part of the R² of E f", "$f(x)$": "sum shown"}
_ROW_WORDS = {
    "SHAP value (impact on model output)": "row's share of R², times n (percentage points)",
    "SHAP value": "row's share of R², times n (percentage points)",
    "$E[f(X)]$": "row's base",
    "$f(x)$": "row's total",
}


def for_shap(explanation: shap.Explanation, rows: Literal["sum", "each"] = "sum") -> shap.Explanation:
    """Per-row shares of R² on the scale where ``shap.plots`` prints readable numbers.

    shap prints values with two decimals, and a row's share is about ``1/n`` of a
    feature's share, so ``shap.plots.waterfall(explanation[0])`` reads "+0" and
    "-0".  This returns the shares in percentage points of R²:

    * ``rows="sum"``: the shares summed over rows (a 1-D Explanation, without
      feature values, which a sum would make meaningless): ``values`` are the
      global shares and ``base_values`` the R² of the constant ``E f``, so that a
      waterfall goes from it to the model's R².
    * ``rows="each"``: every row's shares times the number of rows ``n``, so that
      their mean over rows is the global share and a row reads as "the R² the
      model would have if every row were like this one".  Feature values are kept,
      for beeswarm and scatter plots.

    ``n`` is the number of rows the explainer computed the shares on, also for a slice
    of its Explanation (``explanation[:40]``, ``explanation.sample(50)``): a row reads
    the same whatever rows are drawn beside it.

    Parameters
    ----------
    explanation : shap.Explanation
        Per-row shares, as returned by ``RSquaredExplainer(model)(X, y)``.
    rows : {"sum", "each"}, default="sum"
        Sum the rows, or keep each row scaled by ``n``.

    Returns
    -------
    shap.Explanation
        The shares in percentage points of R².
    """
    refuse_not_shares(explanation, "for_shap")
    if rows not in ("sum", "each"):
        raise ValueError(f"rows must be 'sum' or 'each', got {rows!r}.")
    values = np.asarray(explanation.values, dtype=float)
    if values.size == 0:
        raise ValueError("This Explanation has no rows: nothing to draw.")
    if values.ndim == 1:
        return _one_dimension(explanation, values, rows)
    if values.ndim != 2:
        raise ValueError(f"for_shap needs per-row shares of shape (n_rows, n_features), got shape {values.shape}.")
    if any(getattr(item, "name", None) == "sum" for item in explanation.op_history or ()):
        raise ValueError(
            f"This Explanation is summed over rows and still has shape {values.shape}: interaction shares (a "
            "feature by feature matrix), which plots.interaction_heatmap draws."
        )
    base = np.broadcast_to(np.asarray(explanation.base_values, dtype=float), values.shape[:1])
    names = _names(explanation.feature_names, values.shape[1])
    if rows == "sum":
        return shap.Explanation(POINTS * values.sum(0), POINTS * float(base.sum()), feature_names=names)
    if rows == "each":
        scale = POINTS * (rows_computed(explanation) or len(values))
        data = explanation.data if explanation.display_data is None else explanation.display_data
        return shap.Explanation(scale * values, scale * base, data=data, feature_names=names)


def _one_dimension(explanation: shap.Explanation, values: np.ndarray, rows: str) -> shap.Explanation:
    """:func:`for_shap` of a 1-D Explanation: one feature's column (``explanation[:, name]``), one
    row (``explanation[i]``), or the shares summed over rows (``explanation.sum(0)``)."""
    scale = POINTS * (rows_computed(explanation) or 1)
    base = np.asarray(explanation.base_values, dtype=float)
    data = explanation.data if explanation.display_data is None else explanation.display_data
    summed = any(getattr(item, "name", None) == "sum" for item in explanation.op_history or ())
    if isinstance(explanation.feature_names, str):  # one feature's share on each row
        if rows == "sum":
            raise ValueError(
                f"This Explanation holds feature {explanation.feature_names!r}'s share on each row: draw them "
                "with rows='each' (shap.plots.scatter), or pass the whole Explanation with rows='sum'."
            )
        return shap.Explanation(scale * values, scale * base, data=data, feature_names=explanation.feature_names)
    names = _names(explanation.feature_names, len(values))
    if summed or rows_computed(explanation) is None:  # the global shares (or an Explanation made elsewhere)
        if rows == "each":
            raise ValueError("This Explanation is summed over rows: nothing is left per row; use rows='sum'.")
        return shap.Explanation(POINTS * values, POINTS * float(base.sum()), feature_names=names)
    if rows == "sum":
        raise ValueError(
            "This Explanation is one row: draw it with rows='each', which scales it as every row is scaled "
            "(or pass the whole Explanation with rows='sum' for the shares)."
        )
    return shap.Explanation(scale * values, scale * float(base), data=data, feature_names=names)


def refuse_not_shares(explanation: Any, what: str) -> None:
    """Refuse shap's cohorts, and an Explanation whose values are no longer shares of R².

    Parameters
    ----------
    explanation : object
        What a plot was given.
    what : str
        The plot's name, for the message.
    """
    if isinstance(explanation, shap.Cohorts):
        raise ValueError(
            f"{what} draws the shares of one Explanation, and this is a set of cohorts: draw each one "
            "(for name, part in cohorts.cohorts.items(): ...)."
        )
    if isinstance(explanation, shap.Explanation) and not labelled_shares(explanation):
        raise ValueError(
            f"{what} draws shares of R², and this Explanation does not say it holds them: explainer(X) without "
            "y returns shap's SHAP values of the predictions, which are not shares of R² (pass y: "
            "explainer(X, y)).  For shares of R² computed some other way, say so with output_names='R²' "
            "(shap.Explanation(values, base_values, output_names='R²', ...))."
        )
    interactions = holds_interactions(explanation) if isinstance(explanation, shap.Explanation) else None
    if interactions is not None and interactions != (what == "interaction_heatmap"):
        raise ValueError(_interaction_mismatch(what, np.shape(explanation.values)))
    if isinstance(explanation, shap.Explanation) and isinstance(explanation.output_names, list):
        # multioutput="raw_values": the outputs on the last axis, which a row or a sum reads as features
        raise ValueError(
            f"{what} draws the shares of one output; this Explanation holds the shares of several outputs "
            f"(multioutput='raw_values'), got shape {np.shape(explanation.values)}: pick an output first, "
            "explanation[..., k]."
        )
    operation = transformed(explanation) if isinstance(explanation, shap.Explanation) else None
    if operation is not None:
        raise ValueError(
            f"{what} draws shares of R², and this Explanation went through .{operation}, after which its "
            "values are no longer shares (a mean over rows divides them by n; a sum over features gives each "
            "row's total; .abs counts rows that take R² away as importance): pass the Explanation as the "
            "explainer returned it, a slice of it, or its sum over rows, explanation.sum(0)."
        )


def _interaction_mismatch(what: str, shape: tuple) -> str:
    """Why ``what`` refuses the explainer's Explanation: interaction shares where it draws one share
    per feature, or the other way round."""
    if what == "interaction_heatmap":
        return (
            f"interaction_heatmap draws interaction shares; this Explanation holds shares of shape {shape}, one per "
            "feature: ask for explainer(X, y, interactions=True) or rsq_interactions(X, y), or draw these with "
            "plots.bar or plots.heatmap."
        )
    return (
        f"{what} draws one share per feature; this Explanation holds interaction shares of shape {shape} (a "
        "feature by feature matrix for each row): draw them with plots.interaction_heatmap, or the shares they "
        "add up to, explainer(X, y) without interactions."
    )


def shap_plot(
    plot: Callable[..., Any],
    explanation: shap.Explanation,
    rows: Literal["sum", "each"] = "sum",
    *,
    row: int | str | None = None,
    show: bool = True,
    **options: Any,
) -> Axes:
    """Draw one of ``shap.plots`` on R² shares, with numbers in percentage points and axes that say R².

    The plot is shap's own (its layout, sorting and options); this passes it
    :func:`for_shap`'s Explanation and renames shap's fixed wording ("SHAP value",
    ``E[f(X)]``, ``f(x)``) on the figure it drew.

    Parameters
    ----------
    plot : callable
        A function of ``shap.plots`` that takes an Explanation and ``show``: ``shap.plots.bar``
        and ``shap.plots.waterfall`` with ``rows="sum"``; ``shap.plots.beeswarm``,
        ``shap.plots.scatter`` and ``shap.plots.waterfall`` (of one ``row``) with ``rows="each"``.
    explanation : shap.Explanation
        Per-row shares, as returned by ``RSquaredExplainer(model)(X, y)``.
    rows : {"sum", "each"}, default="sum"
        As in :func:`for_shap`.
    row : int or str, optional
        With ``rows="each"``, draw this row only (for ``shap.plots.waterfall``).  A feature
        name selects a column instead (for ``shap.plots.scatter``).
    show : bool, default=True
        Call :func:`matplotlib.pyplot.show` before returning.
    **options
        Passed to ``plot`` (``max_display``, ``order``, ...).

    Returns
    -------
    matplotlib.axes.Axes
        The Axes shap drew on.

    Examples
    --------
    >>> import shap
    >>> from shap_rsq import plots
    >>> plots.shap_plot(shap.plots.waterfall, explanation)  # doctest: +SKIP
    >>> plots.shap_plot(shap.plots.beeswarm, explanation, rows="each")  # doctest: +SKIP
    """
    refuse_not_shares(explanation, "shap_plot")  # what the values are, before how they would be drawn
    _check_plot(getattr(plot, "func", plot), explanation, rows, row)  # a functools.partial is its function
    scaled = for_shap(explanation, rows)
    if row is not None:
        scaled = _picked(scaled, row)
    # the total before tiny values are set to 0: shap writes f(x) as their sum (waterfall)
    total = float(np.sum(scaled.values) + np.sum(scaled.base_values)) if np.ndim(scaled.values) == 1 else None
    scaled = _without_signed_zeros(scaled)
    if "order" in inspect.signature(plot).parameters and "order" not in options and scaled.values.ndim <= 2:
        # shap orders by |value|; a share's sign matters (a negative one takes R² away), so order by value
        totals = scaled.values if scaled.values.ndim == 1 else scaled.values.mean(0)
        options["order"] = np.argsort(-totals, kind="stable")
    result = plot(scaled, show=False, **options)
    ax = result if isinstance(result, Axes) else plt.gca()
    words = _ROW_WORDS if rows == "each" else _SUMMED_WORDS if is_whole(explanation) else _PART_WORDS
    score = score_name(explanation)  # R², a forest classifier's Brier skill score, a booster's D²
    words = {old: new.replace("R²", score) for old, new in words.items()}
    _rename(ax.figure, words, total)
    main = ax.figure.axes[0]  # the waterfall returns a twin axis drawn on top of the bars' own
    if not main.get_xlabel():  # and draws no axis label: say what its numbers are
        main.set_xlabel(words["SHAP value"], labelpad=22)  # below the base value's tick label
    if show:
        plt.show()
    return ax


def _check_plot(plot: Callable[..., Any], explanation: shap.Explanation, rows: str, row: int | str | None) -> None:
    """Refuse a plot that cannot draw these shares this way, naming what to use instead."""
    if isinstance(plot, shap.Explanation):
        raise TypeError("shap_plot takes the plot first and the shares second: shap_plot(shap.plots.bar, explanation).")
    name = getattr(plot, "__name__", "this plot")
    if plot in _PREDICTION_PLOTS:
        raise ValueError(
            f"shap.plots.{name} draws a prediction built up from a base value, and shares of R² are not "
            "a prediction: use shap.plots.waterfall (the summed shares, or one row with rows='each')."
        )
    if plot not in _DRAWN:  # shap's legacy functions (summary_plot, bar_plot) read the values their own way
        drawn = ", ".join(f"shap.plots.{p.__name__}" for p in _DRAWN)
        raise ValueError(f"shap_plot draws {drawn}; got {getattr(plot, '__module__', '')}.{name}.")
    if row is not None and rows != "each":
        raise ValueError("row= picks one row (or a feature's column) of rows='each'; rows='sum' sums the rows.")
    if plot is shap.plots.bar and rows == "each" and row is None:
        raise ValueError(
            "shap.plots.bar on every row draws the mean absolute row share, which counts rows that take R² "
            "away as importance and adds up to nothing: use rows='sum' (the shares themselves)."
        )
    if plot in _EVERY_ROW and rows == "sum":
        raise ValueError(f"shap.plots.{name} draws every row: use rows='each' (the sum over rows is one row).")
    if plot in _FEATURE_VALUES and explanation.data is None:
        raise ValueError(
            f"shap.plots.{name} draws shares against feature values, and this Explanation has none (a group "
            "of columns has no single value): draw it without groups, or use shap.plots.beeswarm."
        )
    if plot is shap.plots.waterfall and isinstance(row, str):
        raise ValueError(f"shap.plots.waterfall draws one row: give its number, row=0, not a feature ({row!r}).")
    if plot is shap.plots.scatter and row is not None and not isinstance(row, str):
        raise ValueError(f"shap.plots.scatter draws one feature over the rows: give its name, not row={row!r}.")


# shap's plots that draw one mark per row, those that need the feature values to draw it, and
# those that build a prediction up from a base value (there is none here)
_EVERY_ROW = (shap.plots.beeswarm, shap.plots.scatter, shap.plots.violin, shap.plots.heatmap)
_FEATURE_VALUES = (shap.plots.scatter,)
_PREDICTION_PLOTS = (shap.plots.force, shap.plots.decision)
_DRAWN = (shap.plots.bar, shap.plots.waterfall, *_EVERY_ROW)


def _picked(scaled: shap.Explanation, row: int | str) -> shap.Explanation:
    """One row (an int) or one feature's column (a name) of per-row shares, checked first."""
    if np.ndim(scaled.values) != 2:
        raise ValueError("row= picks from every row's shares, and this Explanation is already one row or column.")
    if isinstance(row, str):
        if row not in scaled.feature_names:
            shown = ", ".join(map(repr, scaled.feature_names[:8]))
            raise ValueError(f"row={row!r} names no feature of this Explanation (its features: {shown}, ...).")
        return scaled[:, row]
    n_rows = len(scaled.values)
    if not isinstance(row, (int, np.integer)) or not -n_rows <= row < n_rows:
        raise ValueError(f"row must be a feature name or a row number below {n_rows}, got {row!r}.")
    return scaled[int(row)]


def _without_signed_zeros(scaled: shap.Explanation) -> shap.Explanation:
    """The Explanation with values and base values below shap's printed precision set to 0.

    shap prints a bar's value with two decimals and a waterfall's totals with three: the R² of
    ``E f`` (about -1e-6 percentage points) read "−0", and so did a share of -0.004 points.
    """
    tiny, tiny_total = 0.5 * 10.0**-_VALUE_DECIMALS, 0.5 * 10.0**-_TOTAL_DECIMALS
    values = np.where(np.abs(scaled.values) < tiny, 0.0, scaled.values)
    base = np.asarray(scaled.base_values, dtype=float)
    base = np.where(np.abs(base) < tiny_total, 0.0, base)
    base = base if base.ndim else float(base)
    return shap.Explanation(values, base, data=scaled.data, feature_names=scaled.feature_names)


def _rename(figure: Any, words: dict[str, str], total: float | None = None) -> None:
    """Replace shap's words in the figure's texts: axis labels, titles, and tick labels (set through their axis,
    since a tick's Text is redrawn from the axis's formatter).  A waterfall's ``f(x)`` is written as
    ``total``, the sum before values below the printed precision were set to 0 (with ten features of
    a few thousandths each, the model's R² read 0.014 points low)."""
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            axis.label.set_text(_renamed(axis.label.get_text(), words))
            labels = [tick.get_text() for tick in axis.get_majorticklabels()]
            if total is not None and len(labels) == 2 and labels[0] == "$f(x)$":
                labels[1] = f"$ = {_total_value(total)}$"
            renamed = [_renamed(label, words) for label in labels]
            if renamed != labels and len(renamed) == 2 and renamed[1].strip().startswith("$ ="):
                # shap places "= value" at a fixed offset from its short "f(x)": longer names need them joined
                renamed = [f"{renamed[0]} {renamed[1].strip().strip('$').strip()}", ""]
            if renamed != labels:
                axis.set_ticklabels(renamed)
        ax.title.set_text(_renamed(ax.title.get_text(), words))
        for text in ax.texts:  # a value below the printed precision was set to 0: shap writes it "+0"
            if text.get_text() == "+0":
                text.set_text("0")


def _total_value(value: float) -> str:
    """``value`` as shap writes a waterfall's totals: three decimals, no trailing zeros, a true minus."""
    text = re.sub(r"\.?0+$", "", f"{value:.{_TOTAL_DECIMALS}f}")
    return "\u2212" + text[1:] if text.startswith("-") else text


def _renamed(text: str, words: dict[str, str]) -> str:
    for old, new in words.items():  # the first (longest) match only: some keys contain others
        if old in text:
            return text.replace(old, new)
    return text


def _names(names: Sequence[str] | None, count: int) -> list[str]:
    if names is None:
        return [f"Feature {j}" for j in range(count)]
    if len(names) != count:
        raise ValueError(f"{len(names)} feature names for {count} features.")
    return [str(name) for name in names]
