"""What ``shap-rsq demo`` and ``shap-rsq explain`` do once the command line is parsed.

Kept apart from the parser so that ``shap-rsq --version`` and ``--help`` import neither
pandas, scikit-learn nor shap (which take seconds to load).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import r2_score

from ..explainer._explainer import RSquaredExplainer
from ..explainer._groups import resolve_groups
from .columns import LISTED, ModelInputs, model_inputs, preview
from .errors import did_you_mean
from .files import InputError, load_data, load_groups, load_model, missing_pyarrow, text_column
from .interactions import check_interaction_options, run_interactions
from .report import (
    LOCAL_SUFFIXES,
    SHARE_SUFFIXES,
    check_suffix,
    format_table,
    save_bar,
    write_local,
    write_shares,
)
from .sampled import check_sample_options, run_explain_sampled

__all__ = ["run_demo", "run_explain"]

DIABETES_LEGEND = (
    "  diabetes features: age, sex, bmi (body-mass index), bp (blood pressure), s1-s6 (blood serum\n"
    "  measurements); target: disease progression one year after baseline."
)


def run_demo(args: argparse.Namespace) -> int:
    """``shap-rsq demo``: the whole path from data to a table and a picture, on the core install.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``plot``).

    Returns
    -------
    int
        The exit status, 0.
    """
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    _check_plot_name(args.plot, "--plot")
    _check_destination(args.plot, "--plot")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.05, max_depth=4, random_state=0)
    # 442 rows: starting OpenMP threads costs more than it saves, and stalls on a busy machine
    with threadpool_limits(limits=1, user_api="openmp"):
        model.fit(X, y)
        start = time.perf_counter()
        shares = RSquaredExplainer(model).rsq(X, y)
        seconds = time.perf_counter() - start
        model_rsq = r2_score(y, model.predict(X))
    title = (
        f"shap-rsq demo: HistGradientBoostingRegressor (200 trees, depth 4) on scikit-learn's diabetes data "
        f"({X.shape[0]} rows, {X.shape[1]} features)"
    )
    print(format_table(shares, model_rsq=model_rsq, seconds=seconds, max_display=len(shares), title=title))
    print(f"\n{DIABETES_LEGEND}")
    save_bar(args.plot, shares, model_rsq, len(shares), "Shares of R²: gradient boosting on diabetes data")
    print(f"\nbar chart written to {args.plot}")
    return 0


def run_explain(args: argparse.Namespace) -> int:
    """``shap-rsq explain``: shares of R² for a model file on a data file.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``model``, ``data``, ``target``, ``weight``, the outputs, ...).

    Returns
    -------
    int
        The exit status, 0; problems raise :class:`InputError` or ``ValueError``.
    """
    _check_outputs(args)
    model = load_model(args.model, trust_pickle=args.trust_pickle)
    explainer = RSquaredExplainer(model, n_jobs=args.n_jobs, progress=args.progress, memory_budget=args.memory_budget)
    second_order = explainer.model_info.second_order  # a booster of log-loss, Poisson, Gamma or Tweedie
    classifier = explainer.model_info.classes is not None and not second_order
    if explainer.model_info.n_outputs > 1 and not classifier and not second_order:
        raise InputError(
            f"{type(model).__name__} has {explainer.model_info.n_outputs} outputs; the command line reads one "
            "target column (use RSquaredExplainer.rsq in Python for multi-output regressors)."
        )
    inputs = _read_inputs(args, explainer)
    # a model that records no names is given a bare array, so its predict does not compare column names
    X = inputs.X if inputs.by_name else inputs.X.to_numpy()
    groups, names = column_groups(args.groups, list(inputs.X.columns), args.target)
    if args.sample is not None:
        return run_explain_sampled(args, model, explainer, inputs, X, groups, names)
    if classifier:
        from .classes import run_explain_classes

        return run_explain_classes(args, explainer, inputs, X, groups, names)

    start = time.perf_counter()
    explanation = explainer(X, inputs.y, sample_weight=inputs.weight, groups=groups) if args.local else None
    second = None  # a second-order game's summary: the exact change of D² beside the shares' sum
    if explanation is not None:
        values = explanation.values.sum(axis=0)
        second = getattr(explanation.output_names, "summary", None)
    elif second_order:
        values, _, found = explainer._second_order_shares(X, inputs.y, inputs.weight, groups=groups)
        second = found.attrs()
    else:
        values = np.asarray(explainer.rsq(X, inputs.y, inputs.weight, groups=groups))
    shares = pd.Series(values, index=names, name="rsq")
    seconds = time.perf_counter() - start
    if second is not None:
        score, model_rsq = second["score"], float(second["model_score"])
    else:
        score = "R²"
        model_rsq = float(r2_score(inputs.y, explainer.model_info.predict(X), sample_weight=inputs.weight))

    kind = f"{type(model).__module__.split('.')[0]}.{type(model).__name__}"
    title = f"Shares of {score}: {Path(args.model).name} ({kind}) on {Path(args.data).name}, n={len(X)}"
    table = format_table(
        shares, model_rsq=model_rsq, seconds=seconds, max_display=args.max_display, title=title, score=score
    )
    print(table if second is None else f"{table}\n{second_order_lines(second)}")
    summary = {
        "model": str(args.model),
        "data": str(args.data),
        "target": args.target,
        "weight": args.weight,
        "n_rows": len(X),
        "n_features": len(names),
        "model_rsq": model_rsq,
        "sum_of_shares": float(shares.sum()),
    }
    if second is not None:  # what the score is, and how far its second-order shares are from it
        summary.update(score=score, exact_change=second["exact_change"], gap=second["gap"])
    if args.interactions or args.plot_interactions:  # first: a refusal there leaves no other output written
        run_interactions(args, explainer, (X, inputs.y, inputs.weight), groups, shares, summary)
    if args.out:
        write_shares(args.out, shares, summary)
        print(f"shares written to {args.out}")
    if explanation is not None:
        write_local(args.local, explanation.values, explanation.base_values, names)
        print(f"per-row shares written to {args.local}")
    if args.plot:
        plot_title = f"Shares of {score} on {Path(args.data).name}"
        if second is not None:
            plot_title += f"\nexact change {second['exact_change']:.3f}, gap {second['gap']:.3f} (second order)"
        save_bar(args.plot, shares.rename(score), model_rsq, args.max_display, plot_title)
        print(f"bar chart written to {args.plot}")
    return 0


def second_order_lines(summary: dict) -> str:
    """The exact change of a booster's D² beside its shares' sum (their second-order expansion).

    Parameters
    ----------
    summary : dict
        The summary of the shares (``exact_change``, ``gap``, ``score``).

    Returns
    -------
    str
        Two lines of the table.
    """
    return (
        f"  exact change of {summary['score']} from E f: {summary['exact_change']:.4f}\n"
        f"  gap (exact change - sum of shares, the second-order remainder): {summary['gap']:.4f}"
    )


def column_groups(path: str | None, columns: list[str], target: str | None = None) -> tuple[dict | None, list[str]]:
    """The ``--groups`` file's groups by column position, and the names of the players.

    Parameters
    ----------
    path : str or None
        The ``--groups`` file (``None``: every feature is a player).
    columns : list of str
        The model's feature columns, in its order.
    target : str, optional
        The ``--target`` column, named as such when a group lists it.

    Returns
    -------
    groups : dict or None
        Group name to column positions, as ``RSquaredExplainer.rsq(groups=)`` takes them.
    names : list of str
        The groups' names, then the ungrouped columns'.
    """
    if path is None:
        return None, columns
    groups = {}
    for name, members in load_groups(path).items():
        positions = [m for m in members if isinstance(m, int) and not isinstance(m, bool) and str(m) not in columns]
        if positions:  # a table's positions count the target and other columns: only names are clear
            raise InputError(
                f"--groups {path}: group {name!r} lists the number {positions[0]}; in a groups file name the "
                f"columns, e.g. {', '.join(repr(c) for c in columns[:3])}."
            )
        unknown = [m for m in members if str(m) not in columns]
        if unknown and str(unknown[0]) == target:
            raise InputError(f"--groups {path}: group {name!r} lists {target!r}, the --target column, not a feature.")
        if unknown:
            raise InputError(
                f"--groups {path}: group {name!r} names {unknown[0]!r}, which is not one of the model's features."
                f"{did_you_mean(str(unknown[0]), columns)} The features are {preview(columns, limit=LISTED)}."
            )
        groups[name] = [columns.index(str(m)) for m in members]
    try:
        players = resolve_groups(groups, columns, len(columns))
    except ValueError as error:  # a column listed twice, or in two groups: name the file, as above
        raise InputError(f"--groups {path}: {error}") from None
    return groups, players.names


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse output names of unknown type or in missing folders before any work is done."""
    check_suffix(args.out, SHARE_SUFFIXES, "--out")
    check_suffix(args.local, LOCAL_SUFFIXES, "--local")
    # a Parquet writer missing would only show after the shares were computed and --out written
    if args.local and Path(args.local).suffix.lower() != ".csv" and importlib.util.find_spec("pyarrow") is None:
        raise missing_pyarrow(args.local)
    check_interaction_options(args)
    check_sample_options(args)
    _check_plot_name(args.plot, "--plot")
    _check_plot_name(args.plot_interactions, "--plot-interactions")
    outputs = {"--out": args.out, "--local": args.local, "--plot": args.plot, "--interactions": args.interactions}
    outputs = {**outputs, "--plot-interactions": args.plot_interactions}
    for option, path in outputs.items():
        _check_destination(path, option)
    _check_distinct(outputs, {"--data": args.data, "--model": args.model, "--groups": getattr(args, "groups", None)})


def _check_distinct(outputs: dict, inputs: dict) -> None:
    """Refuse two outputs naming one file, or an output naming an input: the second write would
    replace the first silently (and an input is read before its replacement is written)."""
    seen: dict[Path, str] = {}
    for option, path in inputs.items():
        if isinstance(path, str | Path):
            seen.setdefault(Path(path).resolve(), option)
    for option, path in outputs.items():
        if path is None:
            continue
        resolved = Path(path).resolve()
        if resolved in seen:
            other = seen[resolved]
            what = "overwrite" if other in inputs else "name the same file as"
            raise InputError(f"{option} {path} would {what} {other}; give each output a file of its own.")
        seen[resolved] = option


def _text_categories(info, frame: pd.DataFrame) -> list[str]:
    """The table's columns, by the model's names, of categorical features whose categories are text."""
    names = info.feature_names or []
    return [
        names[j]
        for j, column in info.categorical_columns.items()
        if j < len(names) and names[j] in frame and column.reads_text
    ]


def _read_inputs(args: argparse.Namespace, explainer: RSquaredExplainer) -> ModelInputs:
    """The data file's columns matched to the model, with notes on stderr about columns left out."""
    frame = load_data(args.data)
    info = explainer.model_info
    if info.classes is not None and all(isinstance(c, str) for c in info.classes) and args.target in frame:
        # text classes as written: pandas reads '1', '01', 'True' and 'NA' as numbers, booleans, missing
        frame[args.target] = text_column(args.data, args.target)
    for column in _text_categories(info, frame):
        # categories written as text, as written: pandas reads '1' and '01' as one number
        frame[column] = text_column(args.data, column, missing=True)
    # a classifier's target holds class labels, of any type
    inputs = model_inputs(
        frame,
        args.data,
        args.target,
        info.feature_names,
        info.n_features,
        args.weight,
        info.classes,
        info.family,
        info.categorical_columns,
    )
    if inputs.ignored:
        print(f"shap-rsq: ignoring column(s) the model does not use: {preview(inputs.ignored)}", file=sys.stderr)
    if not inputs.by_name:  # a table in another column order than the model's training array reads wrong
        print(
            "shap-rsq: note: the model records no feature names, so its features are read by position from the "
            f"columns {preview(list(inputs.X.columns))}, in that order; it must be the order the model was fitted on",
            file=sys.stderr,
        )
    return inputs


def _check_plot_name(path: str | None, option: str) -> None:
    from matplotlib.backend_bases import FigureCanvasBase

    if path is None:
        return
    kinds = FigureCanvasBase.get_supported_filetypes()
    if Path(path).suffix.lower().lstrip(".") not in kinds:
        raise InputError(f"{option} {path}: the file name must end with an image type such as .png, .svg or .pdf.")


def _check_destination(path: str | None, option: str) -> None:
    """Refuse an output that cannot be written before any work is done."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{option} {path} is a directory; give a file name.")
    if target.parent.exists() and not target.parent.is_dir():
        raise InputError(f"{option} {path}: {target.parent} is a file, not a folder.")
    if not target.parent.is_dir():
        raise InputError(f"{option} {path}: folder {target.parent} does not exist.")
    # permissions alone do not tell (root, read-only mounts, /proc): a file is made there and removed,
    # so that no output is written before another one fails
    try:
        with tempfile.TemporaryFile(dir=target.parent):
            pass
    except OSError as error:
        reason = (error.strerror or str(error)).lower()
        raise InputError(f"{option} {path}: cannot create a file in {target.parent} ({reason}).") from None
    if target.exists() and not os.access(target, os.W_OK):
        raise InputError(f"{option} {path}: the file exists and cannot be written (permission denied).")
