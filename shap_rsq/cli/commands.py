"""The ``shap-rsq`` command: a demo on data shipped with scikit-learn, and ``explain`` for saved models.

``shap-rsq demo`` fits a gradient-boosted model on scikit-learn's diabetes data
and prints each feature's share of its R^2; ``shap-rsq explain`` does the same
for a model file and a data file.  Problems with the inputs end the command
with a one-line message on stderr and exit status 1 (2 for a wrong command line).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from sklearn.metrics import r2_score

from .. import __version__
from ..explainer import RSquaredExplainer
from .files import (
    InputError,
    ModelInputs,
    first_line,
    load_data,
    load_model,
    missing_pyarrow,
    model_inputs,
    preview,
    write_atomic,
)
from .report import LOCAL_SUFFIXES, SHARE_SUFFIXES, check_suffix, format_table, write_local, write_shares

__all__ = ["build_parser", "main"]

DEMO_PLOT = "shap-rsq-demo.png"
DIABETES_LEGEND = (
    "  diabetes features: age, sex, bmi (body-mass index), bp (blood pressure), s1-s6 (blood serum\n"
    "  measurements); target: disease progression one year after baseline."
)

EXPLAIN_EPILOG = """\
Columns are matched to the model's features by name; for a model that recorded
no names, every column but the target and weight is used, in file order.

example:
  shap-rsq explain --model model.json --data patients.csv --target progression \\
      --out shares.csv --plot shares.png
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    args = build_parser().parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")  # the command writes image files and never opens a window
    try:
        return args.run(args)
    except (InputError, ValueError) as error:  # UnsupportedModelError and input checks are ValueErrors
        print(f"shap-rsq: error: {first_line(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("shap-rsq: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``shap-rsq`` and its ``demo`` and ``explain`` subcommands."""
    parser = argparse.ArgumentParser(
        prog="shap-rsq",
        description="Exact Shapley shares of a tree model's R^2 (Q-SHAP).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="explain a gradient-boosted model on scikit-learn's diabetes data (no network needed)",
        description="Fit a HistGradientBoostingRegressor on scikit-learn's diabetes data, print each "
        "feature's share of its R^2 and write a bar chart.",
    )
    demo.add_argument("--plot", default=DEMO_PLOT, metavar="PNG", help=f"bar chart to write (default: {DEMO_PLOT})")
    demo.set_defaults(run=run_demo)

    explain = commands.add_parser(
        "explain",
        help="split the R^2 of a saved model on a data file among its features",
        description="Read a saved tree model and a data file, print each feature's share of the\n"
        "model's R^2 on that data, and optionally write them to files.",
        epilog=EXPLAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the example's lines as written
    )
    explain.add_argument(
        "--model",
        required=True,
        metavar="PATH",
        help="XGBoost .json/.ubj, LightGBM text or CatBoost .cbm; scikit-learn joblib/pickle with --trust-pickle",
    )
    explain.add_argument("--data", required=True, metavar="FILE", help="CSV, TSV or Parquet table with a header")
    explain.add_argument("--target", required=True, metavar="COLUMN", help="column of the data holding y")
    explain.add_argument("--weight", metavar="COLUMN", help="column of row weights for a weighted R^2")
    explain.add_argument("--out", metavar="CSV|JSON", help="write the shares (feature,r2), largest first")
    explain.add_argument("--plot", metavar="PNG", help="write a bar chart of the shares")
    explain.add_argument("--local", metavar="PATH", help="write per-row shares as .csv or .parquet")
    explain.add_argument(
        "--trust-pickle",
        action="store_true",
        help="allow a pickle/joblib model file; unpickling runs code stored in the file",
    )
    explain.add_argument(
        "--max-display",
        type=_positive,
        default=20,
        metavar="N",
        help="features listed and drawn before the rest are added up (default: 20)",
    )
    explain.add_argument(
        "--n-jobs", type=_n_jobs, metavar="N", help="processes over blocks of trees (-1: all cores, -2: all but one)"
    )
    explain.add_argument("--progress", action="store_true", help="show a progress bar over trees")
    explain.set_defaults(run=run_explain)
    return parser


def run_demo(args: argparse.Namespace) -> int:
    """``shap-rsq demo``: the whole path from data to a table and a picture, on the core install."""
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
        model_r2 = r2_score(y, model.predict(X))
    title = (
        f"shap-rsq demo: HistGradientBoostingRegressor (200 trees, depth 4) on scikit-learn's diabetes data "
        f"({X.shape[0]} rows, {X.shape[1]} features)"
    )
    print(format_table(shares, model_r2=model_r2, seconds=seconds, max_display=len(shares), title=title))
    print(f"\n{DIABETES_LEGEND}")
    _save_bar(args.plot, shares, model_r2, len(shares), "Shares of R\u00b2: gradient boosting on diabetes data")
    print(f"\nbar chart written to {args.plot}")
    return 0


def run_explain(args: argparse.Namespace) -> int:
    """``shap-rsq explain``: shares of R^2 for a model file on a data file."""
    _check_outputs(args)
    model = load_model(args.model, trust_pickle=args.trust_pickle)
    explainer = RSquaredExplainer(model, n_jobs=args.n_jobs, progress=args.progress)
    if explainer.model_info.n_outputs > 1:
        raise InputError(
            f"{type(model).__name__} has {explainer.model_info.n_outputs} outputs; the command line explains "
            "single-output regressors (use RSquaredExplainer.rsq in Python for classifiers and multi-output models)."
        )
    inputs = _read_inputs(args, explainer)
    # a model that records no names is given a bare array, so its predict does not compare column names
    X = inputs.X if inputs.by_name else inputs.X.to_numpy()
    names = list(inputs.X.columns)

    start = time.perf_counter()
    explanation = explainer(X, inputs.y, sample_weight=inputs.weight) if args.local else None
    values = explanation.values.sum(axis=0) if explanation is not None else explainer.rsq(X, inputs.y, inputs.weight)
    shares = pd.Series(values, index=names, name="r2")
    seconds = time.perf_counter() - start
    model_r2 = float(r2_score(inputs.y, explainer.model_info.predict(X), sample_weight=inputs.weight))

    kind = f"{type(model).__module__.split('.')[0]}.{type(model).__name__}"
    title = f"Shares of R^2: {Path(args.model).name} ({kind}) on {Path(args.data).name}, n={len(X)}"
    print(format_table(shares, model_r2=model_r2, seconds=seconds, max_display=args.max_display, title=title))
    if args.out:
        summary = {
            "model": str(args.model),
            "data": str(args.data),
            "target": args.target,
            "weight": args.weight,
            "n_rows": len(X),
            "n_features": len(names),
            "model_r2": model_r2,
            "sum_of_shares": float(shares.sum()),
        }
        write_shares(args.out, shares, summary)
        print(f"shares written to {args.out}")
    if explanation is not None:
        write_local(args.local, explanation.values, explanation.base_values, names)
        print(f"per-row shares written to {args.local}")
    if args.plot:
        _save_bar(args.plot, shares, model_r2, args.max_display, f"Shares of R\u00b2 on {Path(args.data).name}")
        print(f"bar chart written to {args.plot}")
    return 0


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse output names of unknown type or in missing folders before any work is done."""
    check_suffix(args.out, SHARE_SUFFIXES, "--out")
    check_suffix(args.local, LOCAL_SUFFIXES, "--local")
    # a Parquet writer missing would only show after the shares were computed and --out written
    if args.local and Path(args.local).suffix.lower() != ".csv" and importlib.util.find_spec("pyarrow") is None:
        raise missing_pyarrow(args.local)
    _check_plot_name(args.plot, "--plot")
    for option, path in (("--out", args.out), ("--local", args.local), ("--plot", args.plot)):
        _check_destination(path, option)


def _read_inputs(args: argparse.Namespace, explainer: RSquaredExplainer) -> ModelInputs:
    """The data file's columns matched to the model, with notes on stderr about columns left out."""
    frame = load_data(args.data)
    info = explainer.model_info
    inputs = model_inputs(frame, args.data, args.target, info.feature_names, info.n_features, args.weight)
    if args.target in inputs.X.columns:
        print(f"shap-rsq: warning: the target {args.target!r} is also one of the model's features", file=sys.stderr)
    if inputs.ignored:
        print(f"shap-rsq: ignoring column(s) the model does not use: {preview(inputs.ignored)}", file=sys.stderr)
    return inputs


def _save_bar(path: str, shares: pd.Series, model_r2: float, max_display: int, title: str) -> None:
    import matplotlib.pyplot as plt

    from .. import plots

    ax = plots.bar(shares, max_display, model_r2=model_r2, title=title, show=False)
    try:
        write_atomic(path, lambda temporary: ax.figure.savefig(temporary, dpi=150, bbox_inches="tight"))
    finally:
        plt.close(ax.figure)


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
    if not target.parent.is_dir():
        raise InputError(f"{option} {path}: folder {target.parent} does not exist.")


def _n_jobs(text: str) -> int:
    value = _whole_number(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 jobs cannot run anything: give 1 or more, or -1 for all cores")
    return value


def _positive(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
