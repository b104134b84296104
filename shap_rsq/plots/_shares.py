"""shap-rsq's own pictures of the shares: the bar chart of global shares, the stacked bars of a
classifier's classes, and the heatmap of per-row shares; and the ordering (:func:`top_shares`) that
the bar chart and the command line's table share."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import shap
from matplotlib.axes import Axes

from ..explainer._share_label import is_whole, score_name
from ._shap import _names, refuse_not_shares

__all__ = ["bar", "class_bar", "heatmap", "sorted_shares", "top_shares"]

POSITIVE = "#1f6fb4"
NEGATIVE = "#d6404e"
OTHERS = "#9a9a9a"
DEFAULT_TITLE = "Shapley shares of R²"  # bar's default: replaced by the score the shares are of


def sorted_shares(shares: pd.Series) -> pd.Series:
    """Shares from largest to smallest; ties keep the column order.

    Parameters
    ----------
    shares : pandas.Series
        Shares indexed by feature name.

    Returns
    -------
    pandas.Series
        The same shares, sorted.
    """
    return shares.sort_values(ascending=False, kind="stable")


def top_shares(shares: pd.Series, max_display: int) -> pd.Series:
    """The largest ``max_display - 1`` shares and one entry adding up the rest (as in the paper's tables).

    With ``max_display`` features or fewer, all of them are kept as they are.

    Parameters
    ----------
    shares : pandas.Series
        Shares indexed by feature name.
    max_display : int
        Entries to return, at least 1.

    Returns
    -------
    pandas.Series
        At most ``max_display`` entries, largest first, the last one named ``"<k> other features"``.
    """
    ordered = sorted_shares(shares)
    if max_display < 1:
        raise ValueError(f"max_display must be at least 1, got {max_display}.")
    if len(ordered) <= max_display:
        return ordered
    keep = max_display - 1
    rest = ordered.iloc[keep:]
    others = pd.Series([rest.sum()], index=[f"{len(rest)} other features"])
    return pd.concat([ordered.iloc[:keep], others]).rename(shares.name)


def bar(
    shares: pd.Series | Mapping[str, float] | np.ndarray | shap.Explanation,
    max_display: int = 10,
    *,
    feature_names: Sequence[str] | None = None,
    model_rsq: float | None = None,
    title: str | None = DEFAULT_TITLE,
    ax: Axes | None = None,
    show: bool = True,
    model_r2: float | None = None,
) -> Axes:  # the default title names the score the shares are of (see _score_of)
    """Bar chart of each feature's share of R², largest first, with the total annotated.

    Parameters
    ----------
    shares : Series, mapping, 1-d array or shap.Explanation
        The output of :meth:`RSquaredExplainer.rsq <shap_rsq.RSquaredExplainer.rsq>`
        or of the explainer's call (per-row shares are summed over rows).
    max_display : int, default=10
        Number of bars.  With more features than that, the largest
        ``max_display - 1`` are drawn and one grey bar adds up the others.
    feature_names : sequence of str, optional
        Names for an array of shares (default ``Feature 0``, ``Feature 1``, ...).
    model_rsq : float, optional
        The model's R², annotated next to the sum of the shares.  Taken from an
        Explanation's ``base_values`` when not given.
    title : str or None
        Title of the Axes.  The default names the score the shares are of (R², a forest
        classifier's Brier skill score, a booster's D²), and for a booster's second-order game
        adds the shares' sum beside the exact change of the score, and the gap.
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made when not given.
    show : bool, default=True
        Call :func:`matplotlib.pyplot.show` before returning.
    model_r2 : float, optional
        Deprecated name of ``model_rsq`` (removed in 0.3).

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on.

    Examples
    --------
    >>> from shap_rsq import plots
    >>> ax = plots.bar(explainer.rsq(X, y), max_display=8, show=False)  # doctest: +SKIP
    >>> ax.figure.savefig("rsq.png", bbox_inches="tight")  # doctest: +SKIP
    """
    if model_r2 is not None:
        warnings.warn("bar(model_r2=) is deprecated; use model_rsq=.", FutureWarning, stacklevel=2)
        if model_rsq is not None and model_rsq != model_r2:
            raise ValueError(f"model_rsq={model_rsq!r} and its old name model_r2={model_r2!r} disagree; give one.")
        model_rsq = model_r2
    # shap.plots.bar draws mean |row share| for per-row input and cannot annotate the sum and the
    # model's R² (tests/test_library_choices.py); shap_plot forwards to it for shap's own look
    series, total = _global(shares, feature_names)
    if not np.all(np.isfinite(series.to_numpy())):
        missing = list(series.index[~np.isfinite(series.to_numpy())])[:5]
        raise ValueError(f"bar needs finite shares; {missing} are not (NaN or infinite).")
    model_rsq = total if model_rsq is None else model_rsq
    score, summary = _score_of(shares)
    if model_rsq is None and summary is not None:
        model_rsq = summary["model_score"]
    if title == DEFAULT_TITLE:
        title = f"Shapley shares of {score}" + ("" if summary is None else "\n" + _gap_text(summary))
    shown = top_shares(series, max_display).iloc[::-1]  # barh draws bottom-up; the largest goes on top
    grouped = len(series) > max_display
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 1.2 + 0.38 * len(shown)))
    colors = [POSITIVE if v >= 0 else NEGATIVE for v in shown.to_numpy()]
    if grouped:
        colors[0] = OTHERS
    positions = np.arange(len(shown))
    ax.barh(positions, shown.to_numpy(), color=colors, height=0.7)
    ax.set_yticks(positions, [str(name) for name in shown.index])
    _label_bars(ax, shown.to_numpy())
    return _finish(ax, f"share of {score}", _total_text(series.sum(), model_rsq, score), title, show, below=22)


def _score_of(shares: Any) -> tuple[str, dict | None]:
    """The score the shares are of, and a second-order game's summary (exact change and gap)."""
    if isinstance(shares, pd.Series):
        return score_name(shares), (dict(shares.attrs) if "gap" in shares.attrs else None)
    if isinstance(shares, shap.Explanation):
        return score_name(shares), getattr(shares.output_names, "summary", None)
    return "R²", None


def _gap_text(summary: dict) -> str:
    """A second-order game's shares beside the exact change of the score."""
    return (
        f"shares sum to {summary['shares_sum']:.3f} (second order); exact change {summary['exact_change']:.3f}, "
        f"gap {summary['gap']:.3f}"
    )


def class_bar(
    parts: pd.DataFrame,
    max_display: int = 10,
    *,
    model_rsq: float | None = None,
    title: str | None = "Shares of the Brier skill score, by class",
    ax: Axes | None = None,
    show: bool = True,
) -> Axes:
    """Stacked bars of a classifier's shares: each feature's part for each class, largest share first.

    Parameters
    ----------
    parts : pandas.DataFrame of shape (n_features, n_classes)
        Each feature's part of its Brier skill score share per class, ``L_jk / sum_k SST_k``
        (:func:`shap_rsq.cli.classes.class_parts`; ``explainer.loss_reduction(X, y)`` divided by
        the total sum of squares of the one-hot target).  A row adds up to the feature's share.
    max_display : int, default=10
        Number of bars; past it, one bar adds up the other features.
    model_rsq : float, optional
        The model's Brier skill score, annotated next to the sum of the shares.
    title : str or None
        Title of the Axes.
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made when not given.
    show : bool, default=True
        Call :func:`matplotlib.pyplot.show` before returning.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on (its legend names the classes).
    """
    if not isinstance(parts, pd.DataFrame):
        raise TypeError(
            "class_bar needs a DataFrame of each feature's part per class (features by classes), such as "
            f"explainer.loss_reduction(X, y) divided by the one-hot target's total sum of squares; got "
            f"{type(parts).__name__}."
        )
    if parts.attrs.get("multioutput") == "raw_values":
        raise ValueError(
            "class_bar stacks each feature's parts of one Brier skill score share, but this table holds each "
            "class's own R² shares (rsq(..., multioutput='raw_values')), each on its class's scale: stacked, they "
            "add up to no score.  Pass explainer.loss_reduction(X, y) divided by the one-hot target's total sum "
            "of squares (docs/classification.md), or plot one class's column with plots.bar."
        )
    order = top_shares(parts.sum(axis=1), max_display).index
    rows = [parts.loc[name] if name in parts.index else parts.drop(index=order[:-1]).sum() for name in order]
    table = pd.DataFrame(rows, index=[str(name) for name in order]).iloc[::-1]  # the largest on top
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 1.4 + 0.38 * len(table)))
    positions = np.arange(len(table))
    right, left = np.zeros(len(table)), np.zeros(len(table))
    colors = plt.get_cmap("tab10")
    for k, column in enumerate(table.columns):
        values = table[column].to_numpy()
        start = np.where(values >= 0, right, left)  # positive parts stack rightwards, negative leftwards
        ax.barh(positions, values, left=start, height=0.7, color=colors(k % 10), label=str(column))
        right, left = right + np.maximum(values, 0), left + np.minimum(values, 0)
    ax.set_yticks(positions, list(table.index))
    ax.legend(title="class", loc="lower right", frameon=False)
    total = _total_text(float(parts.to_numpy().sum()), model_rsq).replace("model R²", "model BSS")
    return _finish(ax, "share of the Brier skill score", total, title, show, below=36)


def heatmap(
    explanation: shap.Explanation,
    max_display: int = 10,
    *,
    order: Sequence[int] | np.ndarray | None = None,
    cmap: str = "RdBu_r",
    title: str | None = "Per-row shares of R²",
    ax: Axes | None = None,
    show: bool = True,
) -> Axes:
    """Heatmap of per-row shares: features (largest global share first) against rows.

    A row's share of a feature is its part of that feature's R² share; the
    colours are centred on zero, as rows the model fits worse than the mean
    take shares away.

    Parameters
    ----------
    explanation : shap.Explanation
        Per-row shares, as returned by ``RSquaredExplainer(model)(X, y)``.
    max_display : int, default=10
        Number of feature rows; past that the last row adds up the other features.
    order : sequence of int, optional
        Order of the data rows (columns of the image).  Default: by each row's
        total share (its shares plus its base value), largest first.
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
    """
    refuse_not_shares(explanation, "heatmap")
    if not isinstance(explanation, shap.Explanation):
        raise TypeError(
            f"heatmap needs the shap.Explanation of per-row shares, explainer(X, y); got {type(explanation).__name__}."
        )
    values = np.asarray(explanation.values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"heatmap needs per-row shares of shape (n_rows, n_features), got shape {values.shape}.")
    names = _names(explanation.feature_names, values.shape[1])
    # shap.plots.heatmap orders features by mean |row share|, which ranks a feature that takes R² away
    # above one that adds it (tests/test_library_choices.py); here they are ordered by the signed share
    by_total = order is None
    if order is None:
        totals = values.sum(axis=1) + np.broadcast_to(np.asarray(explanation.base_values, float), len(values))
        order = np.argsort(-totals, kind="stable")
    image, labels = _feature_rows(values[np.asarray(order)], names, max_display)
    limit = float(np.quantile(np.abs(image), 0.99)) or float(np.abs(image).max()) or 1.0
    if ax is None:
        _, ax = plt.subplots(figsize=(8.0, 1.5 + 0.4 * len(labels)))
    picture = ax.imshow(image, aspect="auto", cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest")
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.set_xlabel("rows, by their total share of R²" if by_total else "rows")
    ax.figure.colorbar(picture, ax=ax, label="row's share of R²", extend="both")
    if title:
        ax.set_title(title)
    if show:
        plt.show()
    return ax


def _global(shares: Any, feature_names: Sequence[str] | None) -> tuple[pd.Series, float | None]:
    """Global shares as a Series, and the model's R² when the input carries it."""
    refuse_not_shares(shares, "bar")
    if isinstance(shares, shap.Explanation):
        values = np.asarray(shares.values, dtype=float)
        base = np.asarray(shares.base_values, dtype=float)
        if values.ndim == 1 and isinstance(shares.feature_names, str):
            raise ValueError(
                f"bar draws one share per feature; this Explanation holds feature {shares.feature_names!r}'s "
                "share on each row (explanation[:, name]): bar the whole Explanation, or draw the column with "
                f"plots.shap_plot(shap.plots.scatter, explanation, 'each', row={shares.feature_names!r})."
            )
        if values.ndim == 3 and values.shape[1] == values.shape[2] and not isinstance(shares.output_names, list):
            raise ValueError(
                f"bar draws one share per feature; this Explanation holds interaction shares of shape "
                f"{values.shape} (rows by feature pairs): draw them with plots.interaction_heatmap, or bar "
                "the shares they add up to, explainer(X, y) without interactions."
            )
        if values.ndim > 2:
            raise ValueError(
                f"bar draws one share per feature; this Explanation has values of shape {values.shape} (one "
                "per row, feature and output, from multioutput='raw_values'): pick an output, "
                "explanation[..., k], or draw a classifier's parts per class with plots.class_bar."
            )
        # only every row and feature adds up to the model's R²: not a slice of them
        total = float(values.sum() + base.sum()) if is_whole(shares) else None
        if values.ndim == 2:
            values = values.sum(axis=0)
        names = shares.feature_names if shares.feature_names is not None else feature_names
        return pd.Series(values, index=_names(names, len(values))), total
    if isinstance(shares, pd.Series):
        return shares.astype(float), None
    if isinstance(shares, Mapping):
        return pd.Series({str(k): float(v) for k, v in shares.items()}), None
    values = np.asarray(shares, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"bar needs one share per feature, got an array of shape {values.shape}.")
    return pd.Series(values, index=_names(feature_names, len(values))), None


def _feature_rows(values: np.ndarray, names: list[str], max_display: int) -> tuple[np.ndarray, list[str]]:
    """Image rows: features by global share, the last adding up the features past ``max_display``."""
    shown = top_shares(pd.Series(values.sum(axis=0), index=range(len(names))), max_display)
    kept = [j for j in shown.index if isinstance(j, (int, np.integer))]
    rows = [values[:, kept].T]
    labels = [names[j] for j in kept]
    if len(kept) < len(names):
        rest = np.setdiff1d(np.arange(len(names)), kept)
        rows.append(values[:, rest].sum(axis=1)[None, :])
        labels.append(f"{len(rest)} other features")
    return np.vstack(rows), labels


def _label_bars(ax: Axes, values: np.ndarray) -> None:
    span = float(np.ptp(np.append(values, 0.0))) or 1.0
    for position, value in enumerate(values):
        offset = 0.01 * span if value >= 0 else -0.01 * span
        ax.text(value + offset, position, _share_text(value), va="center", ha="left" if value >= 0 else "right")
    low, high = min(values.min(), 0.0), max(values.max(), 0.0)
    # room for the labels on the side(s) where bars are, and none on the side where there are none
    ax.set_xlim(low - (0.15 * span if low < 0 else 0.0), high + (0.15 * span if high > 0 else 0.0))


def _share_text(value: float) -> str:
    """Three decimals, or two significant digits below them: a share of -0.0003 read "-0.000"."""
    if value == 0.0 or abs(value) >= 0.0005:
        return f"{value:.3f}"
    return f"{value:.1e}"


def _finish(ax: Axes, xlabel: str, total: str, title: str | None, show: bool, below: float) -> Axes:
    """Zero line, axis label, open frame, the total under the axis (right-aligned, where no bar runs
    into it, ``below`` points down), title and ``show``."""
    ax.axvline(0.0, color="#444444", linewidth=0.8)
    ax.set_xlabel(xlabel, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.annotate(
        total,
        xy=(1.0, 0.0),
        xycoords="axes fraction",
        xytext=(0, -below),
        textcoords="offset points",
        ha="right",
        va="top",
    )
    if title:
        ax.set_title(title)
    if show:
        plt.show()
    return ax


def _total_text(total: float, model_rsq: float | None, score: str = "R²") -> str:
    text = f"sum of shares = {total:.3f}"
    if model_rsq is not None:
        text += f",  model {score} = {model_rsq:.3f}"
    return text
