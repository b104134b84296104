"""The ``shap-rsq`` command: a demo on data shipped with scikit-learn, and ``explain`` for saved models.

``shap-rsq demo`` fits a gradient-boosted model on scikit-learn's diabetes data
and prints each feature's share of its R²; ``shap-rsq explain`` does the same
for a model file and a data file.  Problems with the inputs end the command
with a one-line message on stderr and exit status 1 (2 for a wrong command line).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence

from .. import __version__
from .errors import InputError, first_line

__all__ = ["build_parser", "main"]

DEMO_PLOT = "shap-rsq-demo.png"

EXPLAIN_EPILOG = """\
Columns are matched to the model's features by name; for a model that recorded
no names, every column but the target and weight is used, in file order.

example:
  shap-rsq explain --model model.json --data patients.csv --target progression \\
      --out shares.csv --plot shares.png
"""


# the library's advice in Python words -> the same advice in the command's options
_OPTION_WORDS = {
    "RSquaredExplainer(memory_budget=...)": "--memory-budget",
    "compute global shares with rsq() (memory O(n + p))": "leave out --local (global shares take memory O(n + p))",
    "memory_budget=": "--memory-budget ",  # the budget a refusal quotes, after the advice above
    "RSquaredExplainer(progress=True), or --progress on the command line, shows": "--progress shows",
    "RSquaredExplainer(progress=True) shows": "--progress shows",
    "n_jobs=-1 uses": "--n-jobs -1 uses",
    "shap_rsq.estimate_rsq estimates the shares, with standard errors, from a sample of rows (n_sample: fewer "
    "rows, less time)": "--sample N estimates the shares, with standard errors, from N rows drawn at random "
    "(fewer rows, less time)",
    "estimate_rsq(n_sample=": "--sample ",
    "): the exact per-row ": ": the exact per-row ",
    "Fewer rows (n_sample)": "Fewer rows (--sample)",
}


def _in_option_words(text: str) -> str:
    """The library's advice with its Python calls spelled as the command's options."""
    for python, option in _OPTION_WORDS.items():
        text = text.replace(python, option)
    return text


def _show_warning(original):
    """``warnings.showwarning`` for a run: the library's long-call warning as one line in the
    command's words (not the path of the console script it points at); others as Python shows them."""

    def show(message, category, filename, lineno, file=None, line=None):
        from ..engine.estimates import LongCallWarning  # imported once a warning comes, not for --help

        if issubclass(category, LongCallWarning):
            print(f"shap-rsq: warning: {_in_option_words(str(message))}", file=sys.stderr)
        else:
            original(message, category, filename, lineno, file, line)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name.

    Returns
    -------
    int
        0 on success, 1 for a problem with the inputs (one line on stderr), 130 when interrupted;
        a wrong command line exits with status 2 (``SystemExit``, from argparse).
    """
    args = build_parser().parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")  # the command writes image files and never opens a window
    stdout, sys.stdout = sys.stdout, _PipeSafe(sys.stdout)
    try:
        with warnings.catch_warnings():  # restores showwarning when the run ends
            warnings.showwarning = _show_warning(warnings.showwarning)
            # imported only now: --version and --help must not wait for pandas, scikit-learn and shap
            actions = importlib.import_module(".actions", __package__)
            return getattr(actions, args.run)(args)
    except (InputError, ValueError) as error:  # UnsupportedModelError and input checks are ValueErrors
        # the library's advice names its Python calls; here they are options
        print(f"shap-rsq: error: {_in_option_words(first_line(error))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("shap-rsq: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout


class _PipeSafe:
    """Standard output that outlives its reader: once ``| head`` has read what it wants, further
    output is dropped and the run goes on to write its files (a ``BrokenPipeError`` traceback
    ended it, sometimes before ``--out`` was written)."""

    def __init__(self, stream):
        self._stream, self._gone = stream, False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self._gone = True
        try:  # the interpreter flushes stdout at exit: let that go nowhere rather than fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
        except (OSError, AttributeError, ValueError):
            pass

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``shap-rsq`` and its ``demo`` and ``explain`` subcommands.

    Returns
    -------
    argparse.ArgumentParser
        The parser; each subcommand sets ``run`` to the name of its function in ``cli.actions``.
    """
    parser = argparse.ArgumentParser(
        prog="shap-rsq",
        description="Exact Shapley shares of a tree model's R² (Q-SHAP).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="explain a gradient-boosted model on scikit-learn's diabetes data (no network needed)",
        description="Fit a HistGradientBoostingRegressor on scikit-learn's diabetes data, print each "
        "feature's share of its R² and write a bar chart.",
    )
    demo.add_argument("--plot", default=DEMO_PLOT, metavar="PNG", help=f"bar chart to write (default: {DEMO_PLOT})")
    demo.set_defaults(run="run_demo")

    explain = commands.add_parser(
        "explain",
        help="split the R² of a saved model on a data file among its features",
        description="Read a saved tree model and a data file, print each feature's share of the\n"
        "model's R² on that data, and optionally write them to files.",
        epilog=EXPLAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the example's lines as written
    )
    # an option given twice is an error, not its last value: "--model a.json --model b.txt" explained b
    explain.register("action", None, _Once)
    explain.add_argument(
        "--model",
        required=True,
        metavar="PATH",
        help="XGBoost .json/.ubj, LightGBM text or CatBoost .cbm; scikit-learn joblib/pickle with --trust-pickle",
    )
    explain.add_argument("--data", required=True, metavar="FILE", help="CSV, TSV or Parquet table with a header")
    explain.add_argument("--target", required=True, metavar="COLUMN", help="column of the data holding y")
    explain.add_argument("--weight", metavar="COLUMN", help="column of row weights for a weighted R²")
    explain.add_argument("--out", metavar="CSV|JSON", help="write the shares (feature,rsq), largest first")
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
    explain.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default="auto",
        help="show a progress bar over trees (default: for runs estimated at 10 s or more)",
    )
    explain.add_argument(
        "--groups",
        metavar="JSON|YAML",
        help='file of column groups, each explained as one player: {"name": [columns], ...}',
    )
    explain.add_argument(
        "--interactions",
        metavar="CSV|JSON",
        help="write the strongest pairs of features (feature_a,feature_b,rsq), by absolute interaction share",
    )
    explain.add_argument(
        "--top-k", type=_positive, metavar="K", help="pairs --interactions writes (default: 20, at least 1)"
    )
    explain.add_argument(
        "--plot-interactions",
        metavar="PNG",
        help="write a heatmap of the interaction shares among the --max-display features with the largest shares",
    )
    explain.add_argument(
        "--sample",
        type=_at_least_two,
        metavar="N",
        help="estimate the shares, with standard errors, from N rows drawn at random (for trees too deep to "
        "decompose every row: fully grown forests)",
    )
    explain.add_argument("--seed", type=_whole_number, metavar="S", help="seed of --sample's draw (default 0)")
    explain.add_argument(
        "--memory-budget",
        type=_gib,
        default=2.0,
        metavar="GIB",
        help="working memory one run may use, in GiB (default 2); a run that cannot fit is refused at once",
    )
    explain.set_defaults(run="run_explain")
    return parser


class _Once(argparse._StoreAction):
    """Store an option's value, refusing a second one (argparse keeps the last silently)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, "_given_once", set())
        if self.dest in given:
            parser.error(f"{option_string} was given twice: give it once")
        namespace._given_once = given | {self.dest}
        super().__call__(parser, namespace, values, option_string)


def _n_jobs(text: str) -> int:
    value = _whole_number(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 jobs cannot run anything: give 1 or more, or -1 for all cores")
    return value


def _gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GiB, got {text!r}") from None
    if value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of GiB, got {text}")
    if value < 1.0 / 64:
        raise argparse.ArgumentTypeError(f"must be at least 1/64 GiB (0.015625), got {text}")
    return value


def _at_least_two(text: str) -> int:
    value = _whole_number(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2 rows (a standard error needs two), got {value}")
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
