"""Grouped features as players: ``groups={"name": [columns], ...}`` resolved against the model's features.

A group is one player of the game: a coalition knows every column of the group or none of them, so
the group's share is its exact Shapley value, not the sum of its columns' shares (which splits the
interactions inside the group between them).  Columns left out of every group stay single players,
listed after the groups in the model's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from .._names import did_you_mean

__all__ = ["GroupedGames", "Players", "player_data", "player_index", "position_labels", "resolve_groups"]


@dataclass(frozen=True)
class Players:
    """The players of a grouped game.

    Attributes
    ----------
    of_feature : ndarray of int, shape (n_features,)
        The player of each feature, in the model's order.
    names : list of str
        One name per player: the groups' names, then the ungrouped features'.
    n_groups : int
        How many of the players are groups (the first ones).
    """

    of_feature: np.ndarray
    names: list[str]
    n_groups: int = 0

    @property
    def single_columns(self) -> np.ndarray:
        """The column of each ungrouped player (the players after the groups), in player order."""
        column_of = np.empty(len(self.names), dtype=np.int64)
        column_of[self.of_feature] = np.arange(len(self.of_feature))  # an ungrouped player has one column
        return column_of[self.n_groups :]

    @property
    def key(self) -> tuple[int, ...]:
        """Hashable identity (games are cached per grouping)."""
        return tuple(self.of_feature.tolist())


def resolve_groups(
    groups: Any,
    feature_names: Sequence[str] | None,
    n_features: int,
    labels: Sequence | None = None,
    order: Sequence[int] | None = None,
) -> Players:
    """Map ``groups`` (name to columns) onto the features; raise ``ValueError`` naming any problem.

    Columns are given by name when ``feature_names`` are known (a DataFrame, or a model that recorded
    names), or by position (an int).  For a DataFrame (its ``labels`` as it holds them and ``order``,
    as in :class:`~shap_rsq.engine.rows.Rows`) an int that labels one of its columns names
    that column, as ``frame[[0, 1]]`` reads it, and any other int is a position among the frame's
    columns as given; for an array, a position in the model's feature order.
    """
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError(
            'groups must be a non-empty dict from a group name to its columns, e.g. {"diet": ["bmi", "s5"]}; '
            f"got {type(groups).__name__}."
        )
    seen: dict[str, Any] = {}
    for group in groups:  # players are labelled by text: {1: [...], "1": [...]} would give two '1's
        if str(group) in seen:
            raise ValueError(
                f"Groups {seen[str(group)]!r} and {group!r} have the same name as text, {str(group)!r}; "
                "rename one of them."
            )
        seen[str(group)] = group
    names = None if feature_names is None else [str(name) for name in feature_names]
    # one lookup table, not a search of the names per column: a selector's groups at genomics width
    # list every column, and list.index made that quadratic (3 s for 20,000 columns)
    index: dict[str, int] | None = None
    if names is not None:
        index = {}
        for j, name in enumerate(names):
            index.setdefault(name, j)  # the first of duplicated names, as list.index found it
    owner = np.full(n_features, -1, dtype=np.int64)
    frame = _FrameColumns.of(labels, order, n_features)
    for g, (group, columns) in enumerate(groups.items()):
        positions = _positions(str(group), columns, names, index, n_features, frame)
        taken = positions[owner[positions] >= 0]
        if taken.size:
            other = list(groups)[owner[taken[0]]]
            raise ValueError(
                f"Column {_label(taken[0], names)} is in group {other!r} and in group {group!r}; "
                "a column can be in one group only."
            )
        owner[positions] = g
    single = np.flatnonzero(owner < 0)
    player_names = [str(g) for g in groups] + [_label(j, names, quote=False) for j in single]
    clash = sorted(set(map(str, groups)) & set(player_names[len(groups) :]))
    if clash:
        raise ValueError(f"Group name {clash[0]!r} is also the name of an ungrouped feature; rename the group.")
    owner[single] = len(groups) + np.arange(len(single))
    return Players(owner, player_names, len(groups))


@dataclass(frozen=True)
class _FrameColumns:
    """The model feature an int in ``groups`` means on a DataFrame: one of its integer labels (as
    pandas reads ``frame[[0, 1]]``), else a position among its columns as given."""

    by_label: dict[int, int]
    by_position: np.ndarray

    @classmethod
    def of(cls, labels: Sequence | None, order: Sequence[int] | None, n_features: int) -> _FrameColumns | None:
        """From :class:`~shap_rsq.engine.rows.Rows`' labels and order; ``None`` for an array."""
        if labels is None:
            return None
        integer = [isinstance(label, Integral) and not isinstance(label, bool) for label in labels]
        by_label = {int(labels[j]): int(j) for j in np.flatnonzero(integer)}
        by_position = np.arange(n_features) if order is None else np.argsort(np.asarray(order))
        return cls(by_label, by_position)


def _positions(
    group: str,
    columns: Any,
    names: list[str] | None,
    index: dict[str, int] | None,
    n_features: int,
    frame: _FrameColumns | None = None,
) -> np.ndarray:
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence | np.ndarray):
        raise ValueError(f"Group {group!r} must list its columns (a list of names or positions); got {columns!r}.")
    if len(columns) == 0:
        raise ValueError(f"Group {group!r} has no columns.")
    positions = [_position(group, column, names, index, n_features, frame) for column in columns]
    if len(set(positions)) < len(positions):
        raise ValueError(f"Group {group!r} lists a column twice.")
    return np.array(positions, dtype=np.int64)


def _position(
    group: str,
    column: Any,
    names: list[str] | None,
    index: dict[str, int] | None,
    n_features: int,
    frame: _FrameColumns | None = None,
) -> int:
    if isinstance(column, Integral) and not isinstance(column, bool):
        if frame is not None and int(column) in frame.by_label:
            return frame.by_label[int(column)]
        if not 0 <= column < n_features:
            features = "1 feature" if n_features == 1 else f"{n_features} features"
            raise ValueError(f"Group {group!r}: column {column} is out of range for {features}.")
        return int(column) if frame is None else int(frame.by_position[column])
    if names is None or index is None:
        raise ValueError(
            f"Group {group!r} names column {column!r}, but the features have no names here: "
            "give positions, or pass X as a DataFrame."
        )
    if str(column) not in index:
        raise ValueError(
            f"Group {group!r}: {column!r} is not one of the model's features.{did_you_mean(str(column), names)} "
            f"The features are {_preview(names)}."
        )
    return index[str(column)]


def _preview(names: list[str], limit: int = 20) -> str:
    """The names, cut after ``limit`` so that a genomics-wide message stays readable."""
    shown = ", ".join(map(repr, names[:limit]))
    return f"[{shown}]" if len(names) <= limit else f"[{shown}, ... ({len(names) - limit} more)]"


def _label(j: int, names: list[str] | None, quote: bool = True) -> str:
    if names is None:
        return str(j) if quote else f"Feature {j}"
    return repr(names[j]) if quote else names[j]


def player_data(rows: np.ndarray, players: Players) -> np.ndarray:
    """The rows' values beside a grouped game's shares, one column per player: the column of a
    player of one column (ungrouped, or a group of one), and NaN for a group of several, which has
    no one value (shap's plots draw NaN in gray).  Without them ``shap.plots.scatter`` of an
    ungrouped player failed inside shap."""
    size = np.bincount(players.of_feature, minlength=len(players.names))
    alone = np.flatnonzero(size[players.of_feature] == 1)  # the features that are a player by themselves
    data = np.full((rows.shape[0], len(players.names)), np.nan)
    data[:, players.of_feature[alone]] = rows[:, alone]
    return data


def player_index(columns: list | None, players: Players | None) -> pd.Index | None:
    """Labels of the values: the players' names when grouped, else the columns' (``None`` for arrays).

    ``columns`` are the rows' labels as the DataFrame holds them (:attr:`Rows.labels`): a frame with
    integer column names gets results indexed by those integers, its ungrouped columns too.
    """
    if columns is None:
        return None
    if players is None:
        return pd.Index(columns)
    return pd.Index([*players.names[: players.n_groups], *(columns[j] for j in players.single_columns)])


def position_labels(players: Players) -> list[str | int]:
    """Labels of the players of rows without column names (a NumPy array): each group's name, then
    each ungrouped feature's column position, as labelled without groups.

    The players' own positions would be ambiguous: with ``{"g": [0, 1]}`` player 1 is column 2.
    """
    singles = [int(j) for j in players.single_columns]
    clash = sorted(set(players.names[: players.n_groups]) & {str(j) for j in singles})
    if clash:  # ("2", 3) and (2, 3) would read as one pair once written out
        raise ValueError(
            f"Group name {clash[0]!r} is also the position of an ungrouped column, which labels it here; "
            "rename the group."
        )
    return [*players.names[: players.n_groups], *singles]


class GroupedGames:
    """Each output's game forest and units, for the features as players or for a grouping.

    A grouping's forests and units are built on first use and kept, so a grouped call compiles
    each tree once, as an ungrouped one does.

    Parameters
    ----------
    forests : list of Forest
        Each output's game forest, every feature its own player.
    caches : list of UnitCache
        Their units; a grouping's units take the same kernel choice and tuning.
    """

    def __init__(self, forests: list, caches: list) -> None:
        self.forests, self.caches = forests, caches
        self._grouped: dict[tuple[int, ...], tuple[list, list]] = {}

    def get(self, players: Players | None) -> tuple[list, list]:
        """The forests and units of ``players`` (``None``: the features' own)."""
        if players is None:
            return self.forests, self.caches
        if players.key not in self._grouped:
            forests = [forest.grouped(players.of_feature) for forest in self.forests]
            caches = [type(c)(f, c.kernel, c.tuning) for f, c in zip(forests, self.caches, strict=True)]
            self._grouped[players.key] = (forests, caches)
        return self._grouped[players.key]
