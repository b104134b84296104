"""Suggestions for misspelt names, shared by the library's and the command line's messages (no heavy imports)."""

from __future__ import annotations

import difflib

__all__ = ["did_you_mean"]


def did_you_mean(name: str, choices: list[str]) -> str:
    """`` Did you mean 'bmi'?`` for the closest of ``choices`` (case-insensitive), or an empty string.

    Parameters
    ----------
    name : str
        The name that was not found.
    choices : list of str
        The names that exist.

    Returns
    -------
    str
        A sentence to append to an error message, starting with a space; empty when nothing is close.
    """
    # a typo in a one-hot column ('colour_red' for 'color_red') is the usual mistake; the list alone
    # hides it among hundreds of columns
    lowered = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f" Did you mean {lowered[close[0]]!r}?" if close else ""
