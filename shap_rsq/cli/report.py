"""R² shares as a printed table and as CSV, JSON or Parquet files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..plots._shares import sorted_shares, top_shares
from .files import InputError, missing_pyarrow, write_atomic

__all__ = ["format_table", "save_bar", "save_figure", "write_local", "write_shares"]

SHARE_SUFFIXES = (".csv", ".json")
LOCAL_SUFFIXES = (".csv", ".parquet", ".pq")


def format_table(
    shares: pd.Series,
    *,
    model_rsq: float,
    seconds: float,
    max_display: int,
    title: str,
    score: str = "R²",
    errors: pd.Series | None = None,
) -> str:
    """The shares as text: one line a feature (top-k and the rest), their sum, the model's R² and the run time.

    Parameters
    ----------
    shares : pandas.Series
        Shares indexed by feature name.
    model_rsq : float
        The model's R² on the same rows.
    seconds : float
        The time the decomposition took.
    max_display : int
        Features listed before the rest are added up.
    title : str
        The first line.
    score : str, default="R²"
        What the shares split, in the column header and the model's line (a classifier's "BSS").
    errors : pandas.Series, optional
        Standard errors of estimated shares, by feature name: printed beside each share (not beside
        the line adding up the rest, whose error the features' do not give).

    Returns
    -------
    str
        The table, lines joined by newlines.
    """
    shown = top_shares(shares, max_display)
    width = max(len("sum of shares"), len(f"model {score}"), *(len(str(name)) for name in shown.index))
    scale = max(float(shown.abs().max()), 1e-12)
    column = max(10, len(f"{score} share"))  # "D² (log-loss) share" is wider than the numbers
    head = f"  {'feature':<{width}}  {f'{score} share':>{column}}"
    lines = [title, "", head if errors is None else f"{head}  {'std. error':>10}"]
    for name, value in shown.items():
        bar = "#" * round(30 * abs(value) / scale)
        bar = bar if value >= 0 else "-" * len(bar)
        if errors is not None:  # the line adding up the rest has none
            error = f"{errors[name]:>10.4f}" if name in errors.index else " " * 10
            bar = f"{error}  {bar}"
        lines.append(f"  {name!s:<{width}}  {value:>{column}.4f}  {bar}")
    lines += [
        "",
        f"  {'sum of shares':<{width}}  {shares.sum():>{column}.4f}",
        f"  {f'model {score}':<{width}}  {model_rsq:>{column}.4f}",
        f"  computed in {seconds:.2f} s",
    ]
    return "\n".join(lines)


def check_suffix(path: str | os.PathLike | None, allowed: tuple[str, ...], option: str) -> None:
    """Refuse an output name whose type is unknown before any work is done.

    Parameters
    ----------
    path : str, path-like or None
        The output name (``None``: nothing to check).
    allowed : tuple of str
        The accepted suffixes, lower case with the dot.
    option : str
        The command-line option, for the message.
    """
    if path is not None and Path(path).suffix.lower() not in allowed:
        raise InputError(f"{option} {path}: the file name must end with {' or '.join(allowed)}.")


def write_shares(
    path: str | os.PathLike, shares: pd.Series, summary: dict[str, Any], errors: pd.Series | None = None
) -> None:
    """Write the shares, largest first, as CSV (``feature,rsq``) or JSON (``summary`` plus ``rsq``);
    estimated shares with their standard errors (a column ``standard_error``, an object of them).

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.json`` file.
    shares : pandas.Series
        Shares indexed by feature name.
    summary : dict
        The run's description (model, data, target, ``model_rsq``, ...), written into a JSON file.
    errors : pandas.Series, optional
        Standard errors of estimated shares, by feature name.
    """
    ordered = sorted_shares(shares)
    if Path(path).suffix.lower() == ".json":
        shares_by_name = {str(k): float(v) for k, v in ordered.items()}
        document = {**summary, "rsq": shares_by_name}
        if errors is not None:
            document["standard_error"] = {str(k): float(errors[k]) for k in ordered.index}
        # the names of 0.1.0.dev0, kept for readers of older files; deprecated, removed in 0.3
        document.update(r2=shares_by_name, model_r2=summary.get("model_rsq"))
        text = json.dumps(document, indent=2, allow_nan=False) + "\n"
        write_atomic(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))
    else:
        table = pd.DataFrame({"feature": ordered.index.astype(str), "rsq": ordered.to_numpy()})
        if errors is not None:
            table["standard_error"] = errors[ordered.index].to_numpy()
        write_atomic(path, lambda temporary: table.to_csv(temporary, index=False))


def save_bar(path: str, shares: pd.Series, model_rsq: float, max_display: int, title: str) -> None:
    """Write a bar chart of ``shares`` (:func:`shap_rsq.plots.bar`) to ``path``."""
    from .. import plots

    save_figure(path, plots.bar(shares, max_display, model_rsq=model_rsq, title=title, show=False))


def save_figure(path: str | os.PathLike, ax: Any) -> None:
    """Save the figure of ``ax`` atomically (150 dpi, tight), then close it.

    Parameters
    ----------
    path : str or path-like
        An image file name (its suffix chooses the format).
    ax : matplotlib.axes.Axes
        Any Axes of the figure.
    """
    import matplotlib.pyplot as plt

    try:
        write_atomic(path, lambda temporary: ax.figure.savefig(temporary, dpi=150, bbox_inches="tight"))
    finally:
        plt.close(ax.figure)


def write_local(path: str | os.PathLike, values: np.ndarray, base_values: np.ndarray, names: list[str]) -> None:
    """Write per-row shares (one column a feature, then ``base_value``) as CSV or Parquet.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` file.
    values : ndarray of shape (n_rows, n_features)
        Per-row shares.
    base_values : ndarray of shape (n_rows,)
        Each row's part of the constant ``E f``.
    names : list of str
        The feature names, one column each.
    """
    table = pd.DataFrame(values, columns=names)
    table["base_value" if "base_value" not in names else "base_value_"] = base_values
    if Path(path).suffix.lower() == ".csv":
        write_atomic(path, lambda temporary: table.to_csv(temporary, index=False))
    else:
        write_atomic(path, lambda temporary: _to_parquet(table, temporary, path))


def _to_parquet(table: pd.DataFrame, temporary: str, path: str | os.PathLike) -> None:
    try:
        table.to_parquet(temporary, index=False)
    except ImportError:
        raise missing_pyarrow(path) from None
