"""Players of :class:`~shap_rsq.RSquaredSelector`: ``feature_groups`` resolved against the columns.

With ``feature_groups`` a group of columns (the one-hot columns of a categorical, say) is one player of
the game: its share is its exact Shapley value with the group as one player (see ``_groups``), and the
selection ranks, thresholds, counts and screens players, a kept player keeping all its columns.  Without
it every column is its own player and everything here reduces to the per-column selection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from ..explainer._groups import resolve_groups
from ._selection_rule import support_mask

__all__ = ["PlayerMap", "first_columns", "player_support", "resolve_players", "summary_table"]


@dataclass(frozen=True)
class PlayerMap:
    """The player of each column of the selector's ``X``, and how the explainer is told about them.

    Attributes
    ----------
    of_feature : ndarray of int, shape (n_features,)
        Each column's player: the groups first (in ``feature_groups`` order), then the ungrouped
        columns in column order.
    grouped : bool
        Whether ``feature_groups`` was given; if not, the explainer is asked for plain per-feature shares.
    column_names : list of str or list of int or None
        Names by which the explainer is told the columns (``X`` is a DataFrame with string column
        names), a DataFrame's integer column labels, or ``None`` for positions.
    """

    of_feature: np.ndarray
    grouped: bool = False
    column_names: list[str] | list[int] | None = None

    @classmethod
    def single(cls, n_features: int) -> PlayerMap:
        """Every column its own player."""
        return cls(np.arange(n_features))

    @property
    def n_players(self) -> int:
        """Number of players."""
        return int(self.of_feature.max()) + 1 if self.of_feature.size else 0

    def kept(self, columns: np.ndarray) -> np.ndarray:
        """The players of ``columns`` (whole players, as a screen keeps them), in player order."""
        return np.unique(self.of_feature[columns])

    def explainer_groups(self, columns: np.ndarray) -> dict[int, list] | None:
        """``groups=`` for the explainer of a model fitted on ``columns`` (sorted): every player among them.

        Singletons are listed too, so that the explainer returns the shares in player order even when it
        reorders a DataFrame's columns to the model's (a prefit model); columns are named when names are
        known for that reason, else given by position among ``columns``.  Integer keys cannot clash with
        a column's name.
        """
        if not self.grouped:
            return None
        # positions among ``columns``, sorted by player once (a search per player is quadratic at
        # genomics width, where nearly every column is a player of its own)
        of_column = self.of_feature[columns]
        order = np.argsort(of_column, kind="stable")
        players, counts = np.unique(of_column, return_counts=True)
        groups: dict[int, list] = {}
        for player, positions in zip(players, np.split(order, np.cumsum(counts)[:-1]), strict=True):
            if self.column_names is None:
                groups[int(player)] = positions.tolist()
            else:
                groups[int(player)] = [self.column_names[j] for j in columns[positions]]
        return groups

    def top_columns(self, shares: np.ndarray, k: int) -> np.ndarray:
        """Columns of the ``k`` players of largest share (ties by player order), sorted."""
        top = np.argsort(-shares, kind="mergesort")[:k]
        return np.flatnonzero(np.isin(self.of_feature, top))

    def embed(self, values: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """Values of the players of ``columns`` placed among all players (0 for the others)."""
        full = np.zeros(self.n_players)
        full[self.kept(columns)] = values
        return full


def resolve_players(
    feature_groups: dict | None, X: Any, feature_names: Sequence[str] | None, n_features: int
) -> tuple[PlayerMap, list[str], dict[str, np.ndarray] | None]:
    """Resolve ``feature_groups`` against the columns; ``ValueError`` prefixed with the parameter's name.

    Parameters
    ----------
    feature_groups : dict or None
        Group name to its columns, by name when ``feature_names`` are known, else by position.
    X : array-like or DataFrame
        The rows given to ``fit``; a DataFrame with these names is told to the explainer by name.
    feature_names : sequence of str or None
        The selector's ``feature_names_in_``, if any.
    n_features : int
        Number of columns.

    Returns
    -------
    players : PlayerMap
        The player of each column.
    names : list of str
        One name per player: the groups', then the ungrouped columns' (``x0, x1, ...`` for arrays, as
        ``get_feature_names_out`` names them).
    groups : dict of str to ndarray of int, or None
        Each group's columns by position (``None`` without ``feature_groups``).
    """
    columns = [str(name) for name in feature_names] if feature_names is not None else None
    column_labels = columns if columns is not None else [f"x{j}" for j in range(n_features)]
    if feature_groups is None:
        return PlayerMap.single(n_features), column_labels, None
    if not feature_groups:
        raise ValueError("feature_groups must be None or a non-empty dict from a group name to its columns.")
    try:
        resolved = resolve_groups(feature_groups, columns, n_features)
    except ValueError as exc:
        raise ValueError(f"feature_groups: {exc}") from None
    of_feature = resolved.of_feature
    n_groups = len(feature_groups)
    singles = np.flatnonzero(of_feature >= n_groups)
    names = [str(group) for group in feature_groups] + [column_labels[j] for j in singles]
    # resolve_groups calls an array's columns 'Feature j'; here they are 'x<j>', which a group may be named
    clash = [name for name, count in pd.Series(names).value_counts().items() if count > 1]
    if clash:
        raise ValueError(
            f"feature_groups: the name {clash[0]!r} is given to a group and to another group or an ungrouped "
            "column; rename the group."
        )
    groups = {name: np.flatnonzero(of_feature == g) for g, name in enumerate(names[:n_groups])}
    # a DataFrame's columns are told by name: the explainer matches names to a prefit model's own order
    by_name = isinstance(X, pd.DataFrame) and columns is not None and list(map(str, X.columns)) == columns
    players = PlayerMap(of_feature, grouped=True, column_names=columns if by_name else _integer_labels(X))
    return players, names, groups


def _integer_labels(X: Any) -> list[int] | None:
    """A DataFrame's integer column labels, by which the explainer must be told its columns.

    The explainer reads an int in ``groups=`` as the column it labels (as ``frame[[0, 1]]`` does),
    so positions would pick the wrong columns of a frame labelled ``[3, 2, 1, 0]``.
    """
    if not isinstance(X, pd.DataFrame):
        return None
    integer = [isinstance(label, Integral) and not isinstance(label, bool) for label in X.columns]
    if not any(integer):
        return None  # positions cannot be mistaken for labels
    if not all(integer) or not X.columns.is_unique:
        raise ValueError(
            "feature_groups: X's column labels mix integers with other labels or repeat one; give the "
            "columns distinct string names (X.columns = X.columns.astype(str))."
        )
    return [int(label) for label in X.columns]


def player_support(
    shares: np.ndarray,
    rule: Callable[[np.ndarray], float],
    limit: int | None,
    of_feature: np.ndarray,
    eligible_features: np.ndarray | None = None,
) -> np.ndarray:
    """The columns of the players that the rule selects (``shares`` per player, ``limit`` in players).

    Parameters
    ----------
    shares : ndarray of shape (n_players,)
        Each player's share.
    rule : callable
        From ``threshold_rule``: the cut-off of these shares.
    limit : int or None
        Keep at most this many players.
    of_feature : ndarray of int, shape (n_features,)
        Each column's player.
    eligible_features : ndarray of bool, shape (n_features,), optional
        The columns that may be selected; a player may be when any of its columns may.

    Returns
    -------
    ndarray of bool, shape (n_features,)
        The selected columns: all columns of a selected player.
    """
    eligible = None
    if eligible_features is not None:
        eligible = np.zeros(len(shares), dtype=bool)
        eligible[of_feature[eligible_features]] = True
    return support_mask(shares, rule, limit, eligible)[of_feature]


def first_columns(of_feature: np.ndarray) -> np.ndarray:
    """One column per player (its first), to read per-player values off column-aligned ones."""
    return np.unique(of_feature, return_index=True)[1]


def summary_table(selector: Any, names: np.ndarray) -> pd.DataFrame:
    """One row per player of a fitted selector, largest share first (see ``RSquaredSelector.summary``).

    Parameters
    ----------
    selector : RSquaredSelector
        Fitted.
    names : ndarray of str, shape (n_features,)
        The columns' names; ungrouped players are named after their column.

    Returns
    -------
    pandas.DataFrame
        The summary.
    """
    of_feature = selector.player_of_feature_
    rows = first_columns(of_feature)
    table = {"rsq": selector.player_rsq_}
    column_values = {
        "se": "feature_rsq_se_",
        "selection_frequency": "selection_frequency_",
        "screen_rsq": "screen_rsq_",
    }
    for label, attribute in column_values.items():
        if hasattr(selector, attribute):  # every column of a player carries the player's value
            table[label] = getattr(selector, attribute)[rows]
    table["selected"] = selector.get_support()[rows]
    groups = getattr(selector, "feature_groups_", None)
    index_name = "feature"
    player_names = np.asarray(names, dtype=object)[rows]
    if groups is not None:
        table["n_columns"] = np.bincount(of_feature)
        player_names[: len(groups)] = list(groups)
        index_name = "player"
    frame = pd.DataFrame(table, index=pd.Index(player_names, name=index_name))
    return frame.sort_values("rsq", ascending=False, kind="mergesort")
