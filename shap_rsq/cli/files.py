"""Reading model and data files for the command line, and writing its outputs atomically.

Matching a table's columns to the model is in :mod:`.columns`.

Every failure is raised as :class:`InputError` with a one-line message that
names the file and what is wrong with it, so the command line can print it
without a traceback.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import InputError, first_line
from .loaders import NATIVE, NATIVE_FORMATS, best_rounds, load_pickle

__all__ = [
    "InputError",
    "first_line",
    "load_data",
    "load_model",
    "missing_pyarrow",
    "model_format",
    "text_column",
    "write_atomic",
]

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".sav")


# ---------------------------------------------------------------- models


def model_format(path: Path) -> str:
    """``'xgboost'``, ``'lightgbm'``, ``'catboost'`` or ``'pickle'``, from the file's first bytes.

    The content decides rather than the suffix, so a model saved under an
    unusual name is still read by the right library.

    Parameters
    ----------
    path : Path
        The model file.

    Returns
    -------
    str
        The library that wrote it, or ``'pickle'``.
    """
    head = _head(path, 8)
    if head.startswith(b"{"):  # XGBoost JSON and UBJSON both open an object
        return "xgboost"
    if head.startswith(b"tree"):
        return "lightgbm"
    if head.startswith(b"CBM1"):
        return "catboost"
    if path.suffix.lower() in PICKLE_SUFFIXES or head.startswith(b"\x80"):
        return "pickle"
    raise InputError(f"cannot tell what kind of model {path} is; expected {NATIVE_FORMATS}, or a pickle/joblib file.")


def load_model(path: str | os.PathLike, *, trust_pickle: bool = False) -> Any:
    """Load a fitted model from ``path`` with the library that wrote it.

    Pickle and joblib files are loaded only when ``trust_pickle`` is true:
    unpickling runs whatever code the file contains.

    Parameters
    ----------
    path : str or path-like
        The model file.
    trust_pickle : bool, default=False
        Allow a pickle/joblib file.

    Returns
    -------
    object
        The fitted model (an XGBoost or LightGBM ``Booster``, a CatBoost model, or the unpickled object).

    Raises
    ------
    InputError
        When the file cannot be read, or is a pickle without ``trust_pickle``.
    """
    path = Path(path)
    kind = model_format(path)
    if kind == "pickle":
        if not trust_pickle:
            raise InputError(
                f"{path} is a pickle/joblib file, and loading one runs any code it contains: pass --trust-pickle "
                f"if you trust it, or save the model as {NATIVE_FORMATS}."
            )
        return _guarded(path, "a pickle/joblib file", lambda: load_pickle(path))
    loader, library, what = NATIVE[kind]
    module = _import(library, f"reading {path}")
    model = _guarded(path, what, lambda: loader(module, str(path)))
    # outside the guard, which silences the native libraries' output on stderr, this note too
    return best_rounds(model, path) if library == "xgboost" else model


_LONGEST = 300  # characters of a library's message quoted in one line on stderr


def _import(library: str, purpose: str) -> Any:
    import importlib

    try:
        return importlib.import_module(library)
    except ImportError:
        raise InputError(
            f"{purpose} needs {library}, which is not installed: pip install 'shap-rsq[{library}]'"
        ) from None


def _guarded(path: Path, what: str, load: Callable[[], Any]) -> Any:
    """Run ``load``; turn whatever the library raises into a one-line :class:`InputError`."""
    try:
        with _quiet_native_output():
            return load()
    except InputError:
        raise
    except Exception as error:  # libraries raise their own error types for corrupt files
        raise InputError(f"cannot read {path} as {what}: {_described(error)}") from None


def _described(error: BaseException) -> str:
    """The error's first line, after its type when the message alone says nothing (unpickling:
    ``KeyError: 32``), cut short when a parser quotes the file back."""
    message = first_line(error)
    message = message if re.search(r"[A-Za-z]{3}", message) else f"{type(error).__name__}: {message}"
    return message if len(message) <= _LONGEST else message[: _LONGEST - 1] + "…"


@contextlib.contextmanager
def _quiet_native_output() -> Iterator[None]:
    """Silence what C++ libraries print straight to the terminal while they parse a file.

    LightGBM and XGBoost write their own copy of a parse error on file
    descriptors 1 and 2; the error that reaches Python is reported instead.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = []
    try:
        with open(os.devnull, "w") as sink:
            for fd in (1, 2):
                saved.append((fd, os.dup(fd)))
                os.dup2(sink.fileno(), fd)
            yield
    finally:
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)


# ---------------------------------------------------------------- data

_PARQUET_SUFFIXES = (".parquet", ".pq")
_DATA_KINDS = {"csv": "CSV", "tsv": "TSV", "parquet": "Parquet"}  # as the formats are written in messages
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zip", ".zst")


def load_groups(path: str | os.PathLike) -> dict[str, list]:
    """Groups of columns from a JSON (or, with PyYAML installed, YAML) file: ``{"name": [columns]}``.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    dict
        Group name to its columns (names or positions), in the file's order.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--groups {path}: no such file.")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise InputError(
                f"--groups {path}: reading YAML needs PyYAML (pip install pyyaml); or write JSON."
            ) from None
        groups = _guarded(path, "YAML", lambda: yaml.safe_load(text))
    else:
        import json

        groups = _guarded(path, "JSON", lambda: json.loads(text))
    valid = isinstance(groups, dict) and groups and all(isinstance(v, list) and v for v in groups.values())
    if not valid:
        raise InputError(
            f"--groups {path} must hold an object from group name to a non-empty list of columns, e.g. "
            '{"serum": ["s1", "s2"], "body": ["bmi", "bp"]}.'
        )
    return {str(name): columns for name, columns in groups.items()}


def load_data(path: str | os.PathLike) -> pd.DataFrame:
    """A table from a CSV/TSV file (optionally compressed) or a Parquet file.

    Parameters
    ----------
    path : str or path-like
        A ``.csv``, ``.tsv`` (optionally compressed) or ``.parquet`` file with a header row.

    Returns
    -------
    pandas.DataFrame
        The table as read.
    """
    path = Path(path)
    _head(path, 4)  # a missing or unreadable file fails here, before pandas guesses at it
    kind = _data_format(path)
    try:
        if kind == "parquet":
            return _read_parquet(path)
        sep = "\t" if kind == "tsv" else ","
        _refuse_duplicated_header(path, pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str).iloc[0])
        return pd.read_csv(path, sep=sep)
    except InputError:
        raise
    except Exception as error:  # pandas and pyarrow raise many types for malformed files
        raise InputError(f"cannot read {path} as {_DATA_KINDS[kind]}: {first_line(error)}") from None


def _refuse_duplicated_header(path: Path, header: pd.Series) -> None:
    # pandas renames a repeated name 'x0' to 'x0.1', and the model would read the first 'x0' only
    counts = Counter(str(name) for name in header)  # one pass: a genomics header has 10^5 names
    repeated = sorted(name for name, count in counts.items() if count > 1)
    if repeated:
        raise InputError(f"{path} has the column name(s) {repeated} more than once; give every column its own name.")


def text_column(path: str | os.PathLike, column: str, missing: bool = False) -> pd.Series:
    """One column of a CSV/TSV table as text, exactly as written ('01', 'True' and 'NA' stay text):
    class labels, which pandas would read as numbers, booleans or missing values.  With
    ``missing``, empty cells (and pandas' other missing markers) are missing: categories."""
    path = Path(path)
    kind = _data_format(path)
    if kind == "parquet":
        return load_data(path)[column]
    sep = "\t" if kind == "tsv" else ","
    return pd.read_csv(path, sep=sep, usecols=[column], dtype=str, keep_default_na=missing)[column]


def _data_format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSION_SUFFIXES:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in _PARQUET_SUFFIXES or _head(path, 4) == b"PAR1":
        return "parquet"
    if last == ".csv":
        return "csv"
    if last in (".tsv", ".tab"):
        return "tsv"
    raise InputError(f"cannot tell the format of {path} from its name; use a .csv, .tsv or .parquet file.")


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except ImportError:
        raise missing_pyarrow(path) from None


def missing_pyarrow(path: str | os.PathLike) -> InputError:
    """The error for a Parquet file when no Parquet engine is installed.

    Parameters
    ----------
    path : str or path-like
        The Parquet file to read or write.

    Returns
    -------
    InputError
        The error to raise, naming the extra to install.
    """
    return InputError(f"{path} is Parquet, which needs pyarrow (not installed): pip install 'shap-rsq[parquet]'")


def _head(path: Path, size: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except IsADirectoryError:
        raise InputError(f"{path} is a directory, not a file.") from None
    except FileNotFoundError:
        raise InputError(f"{path} does not exist.") from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}.") from None


# ---------------------------------------------------------------- outputs


def write_atomic(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(temporary_path)``, then move the result onto ``path`` in one step.

    The temporary file sits in the destination's folder, so ``os.replace`` is
    an atomic rename: readers see the old file or the complete new one, and a
    failure part-way leaves ``path`` untouched.

    Parameters
    ----------
    path : str or path-like
        The destination.
    write : callable
        Writes the output to the temporary path it is given.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: folder {folder} does not exist.")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=folder)
        os.close(handle)
    except OSError as error:
        raise InputError(f"cannot write {path}: {error.strerror or error}.") from None
    try:
        write(temporary)
        os.chmod(temporary, _mode_for(path))  # mkstemp makes the file private (0600)
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        if isinstance(error, OSError):
            raise InputError(f"cannot write {path}: {error.strerror or error}.") from None
        raise


def _mode_for(path: Path) -> int:
    """The permissions a new file gets from ``open`` (or those of the file being replaced)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
