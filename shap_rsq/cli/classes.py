"""``shap-rsq explain`` on a forest classifier: shares of the Brier skill score, class by class.

The Brier skill score is the R² of the one-hot target, so a feature's share of it adds up over
classes: its part for class ``k`` is the squared-error reduction of class ``k``'s probability
divided by the total sum of squares of every class (``L_jk / sum_k SST_k``).  The table and the
picture show those parts, which add up to the feature's share of the score.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..engine.outputs import output_sst, target_columns
from ..explainer._explainer import RSquaredExplainer
from ..plots._shares import sorted_shares
from .files import write_atomic
from .interactions import run_interactions
from .report import format_table, save_figure, write_local

__all__ = ["brier_skill_score", "class_parts", "format_class_table", "run_explain_classes"]


def class_parts(
    explainer: RSquaredExplainer, X, labels: pd.Series, weight: pd.Series | None, groups=None, names=None
) -> tuple[pd.DataFrame, float]:
    """Each feature's part of the Brier skill score share per class, and the model's score.

    Parameters
    ----------
    explainer : RSquaredExplainer
        The explainer of a forest classifier.
    X : DataFrame or ndarray
        Rows in the model's feature order.
    labels : pandas.Series
        Class labels, one per row.
    weight : pandas.Series or None
        Row weights.
    groups : dict, optional
        Columns grouped into players, as ``RSquaredExplainer.rsq(groups=)`` takes them.
    names : list of str, optional
        The players' names (by default the columns of ``X``, or ``Feature j``).

    Returns
    -------
    parts : pandas.DataFrame of shape (n_features, n_classes)
        ``L_jk / sum_k SST_k``; each row adds up to the feature's share of the score.
    score : float
        The model's Brier skill score on these rows.
    """
    info = explainer.model_info
    _, w, sst = _one_hot_target(explainer, labels, weight)
    reduction = np.asarray(explainer.loss_reduction(X, labels.to_numpy(), w, groups=groups), dtype=float)  # (p, K)
    score = brier_skill_score(explainer, X, labels, weight)
    if names is None:
        names = list(X.columns) if hasattr(X, "columns") else [f"Feature {j}" for j in range(reduction.shape[0])]
    columns = pd.Index([str(c) for c in info.classes], name="class")
    return pd.DataFrame(reduction / sst, index=names, columns=columns), score


def brier_skill_score(explainer: RSquaredExplainer, X, labels: pd.Series, weight: pd.Series | None) -> float:
    """A forest classifier's Brier skill score on the rows (the arguments of :func:`class_parts`): the R²
    of its probabilities for the one-hot class, over the total sum of squares of every class."""
    Y, w, sst = _one_hot_target(explainer, labels, weight)
    probabilities = np.asarray(explainer.model_info.predict(X), dtype=float)
    return 1.0 - float(np.sum(w[:, None] * (Y - probabilities) ** 2)) / sst


def _one_hot_target(explainer: RSquaredExplainer, labels: pd.Series, weight: pd.Series | None):
    """The one-hot target the explainer plays ``(n, K)``, the row weights and the score's denominator."""
    info = explainer.model_info
    w = np.ones(len(labels)) if weight is None else weight.to_numpy(dtype=float)
    Y = target_columns(labels.to_numpy(), info, len(labels))
    return Y, w, float(output_sst(Y, w, "variance_weighted", info.outputs).sum())


def format_class_table(parts: pd.DataFrame, max_display: int) -> str:
    """The per-class parts of the largest shares, one line a feature.

    Parameters
    ----------
    parts : pandas.DataFrame
        As :func:`class_parts` returns.
    max_display : int
        Features listed (the largest shares of the score).

    Returns
    -------
    str
        The table.
    """
    order = sorted_shares(parts.sum(axis=1)).index[:max_display]
    shown = parts.loc[order]
    width = max(len("feature"), *(len(str(name)) for name in shown.index))
    cells = [max(10, len(str(c))) for c in shown.columns]
    head = "  ".join(f"{c!s:>{w}}" for c, w in zip(shown.columns, cells, strict=True))
    lines = ["", "  parts by class (each row adds up to the feature's share):", f"  {'feature':<{width}}  {head}"]
    for name, row in shown.iterrows():
        values = "  ".join(f"{v:>{w}.4f}" for v, w in zip(row.to_numpy(), cells, strict=True))
        lines.append(f"  {name!s:<{width}}  {values}")
    return "\n".join(lines)


def run_explain_classes(args: argparse.Namespace, explainer: RSquaredExplainer, inputs, X, groups, names) -> int:
    """``shap-rsq explain`` for a forest classifier: tables, ``--interactions``, ``--out``, ``--local``
    and ``--plot``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    explainer : RSquaredExplainer
        The classifier's explainer.
    inputs : ModelInputs
        The matched columns, with the labels as read.
    X : DataFrame or ndarray
        The rows as the model reads them.
    groups : dict or None
        Columns grouped into players (``--groups``).
    names : list of str
        The players' names.

    Returns
    -------
    int
        The exit status, 0.
    """
    start = time.perf_counter()
    parts, score = class_parts(explainer, X, inputs.y, inputs.weight, groups, names)
    explanation = explainer(X, inputs.y.to_numpy(), sample_weight=inputs.weight, groups=groups) if args.local else None
    seconds = time.perf_counter() - start
    shares = parts.sum(axis=1).rename("rsq")
    title = (
        f"Shares of the Brier skill score (the R² of the one-hot class): {Path(args.model).name} "
        f"on {Path(args.data).name}, n={len(inputs.y)}, classes {list(parts.columns)}"
    )
    print(
        format_table(shares, model_rsq=score, seconds=seconds, max_display=args.max_display, title=title, score="BSS")
    )
    print(format_class_table(parts, args.max_display))
    if args.interactions or args.plot_interactions:  # first: a refusal there leaves no other output written
        summary = {
            "model": str(args.model),
            "data": str(args.data),
            "target": args.target,
            "weight": args.weight,
            "n_rows": len(inputs.y),
            "n_features": len(names),
            "score": "Brier skill score",
            "model_rsq": float(score),
            "sum_of_shares": float(shares.sum()),
        }
        run_interactions(args, explainer, (X, inputs.y.to_numpy(), inputs.weight), groups, shares, summary)
    if args.out:
        _write_parts(args.out, parts, shares, args, score, len(inputs.y))
        print(f"shares written to {args.out}")
    if explanation is not None:
        write_local(args.local, explanation.values, explanation.base_values, list(parts.index))
        print(f"per-row shares written to {args.local}")
    if args.plot:
        _save_class_bar(args.plot, parts, score, args.max_display, f"Shares of the Brier skill score on {args.data}")
        print(f"bar chart written to {args.plot}")
    return 0


def _write_parts(
    path: str, parts: pd.DataFrame, shares: pd.Series, args: argparse.Namespace, score: float, n_rows: int
) -> None:
    """Write the shares and their parts per class, with the model's score and the number of rows."""
    order = sorted_shares(shares).index
    if Path(path).suffix.lower() == ".json":
        import json

        document = {  # the regressor's keys (docs/cli.md), then the classes'
            "model": str(args.model),
            "data": str(args.data),
            "target": args.target,
            "weight": args.weight,
            "n_rows": n_rows,
            "n_features": len(parts.index),
            "score": "brier_skill_score",
            "model_rsq": score,
            "sum_of_shares": float(shares.sum()),
            "rsq": {str(k): float(shares[k]) for k in order},
            "rsq_by_class": {str(c): {str(k): float(parts.loc[k, c]) for k in order} for c in parts.columns},
        }
        text = json.dumps(document, indent=2, allow_nan=False) + "\n"
        write_atomic(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))
        return
    table = parts.loc[order].add_prefix("rsq_")
    table.insert(0, "rsq", shares[order])
    table.insert(0, "feature", order.astype(str))
    write_atomic(path, lambda temporary: table.to_csv(temporary, index=False))


def _save_class_bar(path: str, parts: pd.DataFrame, score: float, max_display: int, title: str) -> None:
    from .. import plots

    save_figure(path, plots.class_bar(parts, max_display, model_rsq=score, title=title, show=False))
