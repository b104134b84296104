"""``shap-rsq explain --interactions`` and ``--plot-interactions``: the strongest pairs and their heatmap.

The pairs come from :meth:`RSquaredExplainer.rsq_interactions` with ``top_k``, which never forms
the dense ``(p, p)`` matrix.  The heatmap needs every pair among the features it draws, so with
``--plot-interactions`` every pair is asked for (still without a dense matrix: trees leave most
pairs empty) and the drawn features' block of the matrix is built from them and the shares.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..explainer._explainer import RSquaredExplainer
from .errors import first_line
from .files import InputError, write_atomic
from .report import SHARE_SUFFIXES, check_suffix, save_figure

__all__ = [
    "DEFAULT_TOP_K",
    "check_interaction_options",
    "format_pairs",
    "pairs_matrix",
    "run_interactions",
]

DEFAULT_TOP_K = 20


def check_interaction_options(args: argparse.Namespace) -> None:
    """Refuse ``--interactions`` and ``--top-k`` values that cannot work, before any work is done.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``interactions``, ``top_k``).
    """
    check_suffix(args.interactions, SHARE_SUFFIXES, "--interactions")
    if args.top_k is not None and args.interactions is None:
        # silently ignored otherwise: the user would believe the number did something
        raise InputError(f"--top-k {args.top_k} sets how many pairs --interactions writes: give --interactions too.")


def run_interactions(
    args: argparse.Namespace,
    explainer: RSquaredExplainer,
    rows: tuple[Any, Any, Any],
    groups: dict | None,
    shares: pd.Series,
    summary: dict[str, Any],
) -> None:
    """Compute the pairs, print the strongest, and write ``--interactions`` and ``--plot-interactions``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    explainer : RSquaredExplainer
        The explainer of a regressor of one output or of a classifier.
    rows : tuple
        ``(X, y, sample_weight)`` as the explainer takes them.
    groups : dict or None
        Columns grouped into players (``--groups``).
    shares : pandas.Series
        The players' shares of R², by name, in the explainer's player order.
    summary : dict
        The run's description, written into a JSON file.
    """
    top_k = DEFAULT_TOP_K if args.top_k is None else args.top_k
    names = list(shares.index)
    every_pair = max(len(names) * (len(names) - 1) // 2, 1)
    X, y, weight = rows
    try:
        pairs = explainer.rsq_interactions(
            X, y, weight, top_k=every_pair if args.plot_interactions else top_k, groups=groups
        )
    except NotImplementedError as error:  # the library's refusals (several outputs, dask arrays) are one line
        option = "--interactions" if args.interactions else "--plot-interactions"
        raise InputError(f"{option}: {first_line(error)}") from None
    if not isinstance(X, pd.DataFrame):  # a model that records no names was given an array: positions
        # columns are labelled by position, groups by name: each column's player names it
        player = np.arange(len(names)) if groups is None else explainer._inputs.players(groups, None).of_feature
        for column in ("feature_a", "feature_b"):
            pairs[column] = [label if isinstance(label, str) else names[player[label]] for label in pairs[column]]
    strongest = pairs.head(top_k)  # all pairs are sorted as top_k sorts them, so their head is top_k's answer
    print(format_pairs(strongest, min(args.max_display, top_k)))
    if args.interactions:
        _write_pairs(args.interactions, strongest, {**summary, "top_k": top_k})
        print(f"interactions written to {args.interactions}")
    if args.plot_interactions:
        from .. import plots

        shown = shares.sort_values(ascending=False, kind="stable").index[: args.max_display]
        matrix = pairs_matrix(pairs, shares, list(shown))
        ax = plots.interaction_heatmap(
            matrix,
            len(shown),
            order=np.arange(len(shown)),  # by share; the block's row sums lack the other features' pairs
            title=f"Interaction shares of R² on {Path(args.data).name}",
            show=False,
        )
        ax.set_xlabel(f"{len(shown)} of {len(names)} features, by share of R²")
        save_figure(args.plot_interactions, ax)
        print(f"interaction heatmap written to {args.plot_interactions}")


def pairs_matrix(pairs: pd.DataFrame, shares: pd.Series, features: list[str]) -> pd.DataFrame:
    """The block of the ``rsq_interactions`` matrix for ``features``, from every pair and the shares.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Every non-empty pair (``feature_a``, ``feature_b``, ``rsq``), as ``rsq_interactions`` returns
        with a ``top_k`` of at least the number of pairs.
    shares : pandas.Series
        Every player's share of R², by name.
    features : list of str
        The rows and columns of the block, in order.

    Returns
    -------
    pandas.DataFrame
        Half of each pair's share off the diagonal; on it the main effect, the share less half of
        the feature's pairs with every feature (in the block or not), as in ``rsq_interactions``.
    """
    half = pairs["rsq"].to_numpy() / 2.0
    # each pair counts towards both of its features' rows
    ends = pd.concat([pairs["feature_a"], pairs["feature_b"]], ignore_index=True)
    row_sums = pd.Series(np.concatenate([half, half])).groupby(ends.to_numpy()).sum()
    position = {name: j for j, name in enumerate(features)}
    block = np.zeros((len(features), len(features)))
    inside = pairs["feature_a"].isin(position) & pairs["feature_b"].isin(position)
    a = pairs.loc[inside, "feature_a"].map(position).to_numpy(dtype=int)
    b = pairs.loc[inside, "feature_b"].map(position).to_numpy(dtype=int)
    block[a, b] = block[b, a] = half[inside.to_numpy()]
    main = shares[features].to_numpy(dtype=float) - row_sums.reindex(features, fill_value=0.0).to_numpy()
    block[np.arange(len(features)), np.arange(len(features))] = main
    return pd.DataFrame(block, index=features, columns=features)


def format_pairs(pairs: pd.DataFrame, limit: int) -> str:
    """The strongest pairs as text, one line each.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Pairs (``feature_a``, ``feature_b``, ``rsq``), strongest first.
    limit : int
        Lines listed.

    Returns
    -------
    str
        The table, starting with an empty line.
    """
    shown = pairs.head(limit)
    if shown.empty:
        return "\n  no two features share a tree path: every interaction share is 0"
    width = max(len("pair"), *(len(f"{a} x {b}") for a, b in zip(shown["feature_a"], shown["feature_b"], strict=True)))
    lines = ["", "  strongest interactions (each pair's share of R², by absolute value):", ""]
    for a, b, value in shown.itertuples(index=False):
        lines.append(f"  {f'{a} x {b}':<{width}}  {value:>10.4f}")
    return "\n".join(lines)


def _write_pairs(path: str, pairs: pd.DataFrame, summary: dict[str, Any]) -> None:
    """The pairs as CSV (``feature_a,feature_b,rsq``) or JSON (``summary`` and ``interactions``)."""
    table = pairs.astype({"feature_a": str, "feature_b": str})
    if Path(path).suffix.lower() == ".json":
        records = [{"feature_a": a, "feature_b": b, "rsq": float(v)} for a, b, v in table.itertuples(index=False)]
        text = json.dumps({**summary, "interactions": records}, indent=2, allow_nan=False) + "\n"
        write_atomic(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))
    else:
        write_atomic(path, lambda temporary: table.to_csv(temporary, index=False))
