"""The command line's error type and message cleaning; light to import, as ``main`` catches them."""

from __future__ import annotations

import re

from .._names import did_you_mean

__all__ = ["InputError", "did_you_mean", "first_line"]

_NATIVE_PREFIX = re.compile(r"^\[\d{2}:\d{2}:\d{2}\] \S+:\d+: ")  # XGBoost's "[12:00:00] file.cc:409: "


class InputError(Exception):
    """A file cannot be read or written, or its contents do not fit the command."""


def first_line(error: BaseException) -> str:
    """The first non-empty line of an error's message (native libraries append stack traces).

    Parameters
    ----------
    error : BaseException
        Any exception.

    Returns
    -------
    str
        Its first non-empty line without a native library's time and source prefix, or the
        exception's type name when the message is empty.
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return _NATIVE_PREFIX.sub("", lines[0]) if lines else type(error).__name__
