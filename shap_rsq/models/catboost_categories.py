"""CatBoost's splits on categorical features: one-hot splits and splits on one feature's CTR.

At prediction time a CTR is a fixed number per category (counts from the training data, kept in
the model), so a split on it, like a one-hot split, sends each category one way: a split on a set
of categories.  CatBoost keeps hashes of the categories, not the categories themselves, so the
sets are not read from the model: the model is asked, for each category the rows hold, where
every such split sends it (the leaf indexes of symmetric trees give the side of every split of
every tree at once).  The answers are kept by value, so each category is asked about once.

Splits on CTRs of *combinations* (``max_ctr_complexity`` above 1: several categorical features,
or one with the borders of numeric features) read several features at one node; the game of
this package gives each split one player, so such a model is refused with the combination named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .categories import CategoricalModel, CategoricalRouting
from .info import UnsupportedModelError

__all__ = ["CatBoostColumn", "CatBoostRouting", "full_tree", "in_output", "output_trees", "symmetric_categorical_trees"]


@dataclass(frozen=True)
class CatBoostColumn:
    """A CatBoost categorical feature's values as codes: their position in a list of the values seen
    so far (CatBoost reads integers as their decimal text: 3 and ``"3"`` are one category).

    Attributes
    ----------
    feature : int
        The feature's position.
    name : str
        Its name, for messages.
    values : list
        The values met so far, in order (shared with the routing, which asks the model about them).
    categories : None
        The categories are unknown (CatBoost keeps their hashes).
    """

    feature: int
    name: str
    values: list = field(default_factory=list)
    categories: None = None

    @property
    def reads_text(self) -> bool:
        """CatBoost reads categories as text (integers as their decimal digits)."""
        return True

    def codes(self, column: Any) -> np.ndarray:
        """The codes of a column's values (text or integers; CatBoost reads no missing category).

        Parameters
        ----------
        column : array-like of shape (n_samples,)
            The column as given.

        Returns
        -------
        ndarray of float64
            Each value's position in :attr:`values` (new values are appended).
        """
        series = column if isinstance(column, pd.Series) else pd.Series(np.asarray(column, dtype=object))
        if series.isna().any():
            raise ValueError(
                f"Column {self.name!r} is a categorical feature of a CatBoost model and holds missing values, "
                "which CatBoost refuses in categorical features; pass them as a category of their own (text)."
            )
        text = pd.Index([_as_text(v, self.name) for v in series.astype(object).unique()])
        known = pd.Index(self.values)
        new = text[known.get_indexer(text) < 0]
        self.values.extend(new.tolist())
        return (
            pd.Index(self.values)
            .get_indexer([_as_text(v, self.name) for v in series.astype(object)])
            .astype(np.float64)
        )


def _as_text(value: Any, name: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"Column {name!r} is a categorical feature of a CatBoost model; it holds {value!r}.")
    if isinstance(value, int | np.integer) or (isinstance(value, float | np.floating) and float(value).is_integer()):
        return str(int(value))
    raise ValueError(
        f"Column {name!r} is a categorical feature of a CatBoost model, which reads text or integers; it holds "
        f"{value!r}."
    )


@dataclass(frozen=True)
class CatBoostRouting(CategoricalRouting):
    """Routing columns of a CatBoost model's categorical splits, asked of the model by value.

    Attributes
    ----------
    model : catboost.CatBoost
        The model asked.
    features : dict
        The categorical features by position (:class:`CatBoostColumn`).
    locations : dict
        Per categorical feature, ``(columns, trees, levels)``: each routing column and one
        (tree, level) that splits on it.
    tables : dict
        Per categorical feature, the side (0 or 1) of each value met so far at each of its columns.
    """

    model: Any = None
    features: dict = field(default_factory=dict)
    locations: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)

    def __getstate__(self) -> dict:
        # a worker reads the routing rows made here; the model stays in this process
        return {**self.__dict__, "model": None}

    def rows(self, X: np.ndarray) -> np.ndarray:
        """The routing rows of rows ``X`` (codes in the categorical features), see
        :meth:`CategoricalRouting.rows`."""
        out = np.empty((X.shape[0], self.width), dtype=X.dtype)
        out[:, : self.n_features] = X
        for j, (columns, _, _) in self.locations.items():
            out[:, columns] = self._table(j)[X[:, j].astype(np.int64)]
        return out

    def _table(self, j: int) -> np.ndarray:
        """The sides of every value of feature ``j`` met so far, asking the model about new ones."""
        table = self.tables.get(j, np.zeros((0, len(self.locations[j][0]))))
        values = self.features[j].values
        if len(table) < len(values):
            table = np.vstack([table, self._ask(j, values[len(table) :])])
            self.tables[j] = table
        return table

    def _ask(self, j: int, values: list) -> np.ndarray:
        """Where each split on feature ``j`` sends each of ``values``: bit ``level`` of the leaf
        index a row reaches in a symmetric tree is the side of the tree's split at that level."""
        from catboost import Pool

        _, trees, levels = self.locations[j]
        names = list(self.model.feature_names_)
        frame = pd.DataFrame({name: np.zeros(len(values)) for name in names})
        for k in self.features:
            frame[names[k]] = values  # every categorical feature: each split reads only its own
        pool = Pool(frame, cat_features=sorted(self.features))
        leaves = np.asarray(self.model.calc_leaf_indexes(pool), dtype=np.int64)
        return ((leaves[:, trees] >> levels) & 1).astype(np.float64)


def symmetric_categorical_trees(
    model: Any, document: dict, names: list[str], scale: float, nan_right: set[int], n_outputs: int = 1
):
    """The symmetric trees of a CatBoost JSON export as shap's dict model, their categorical splits on
    routing columns, and the :class:`CategoricalModel` that routes rows to them.

    Parameters
    ----------
    model : catboost.CatBoost
        The model (asked where its categorical splits send each category).
    document : dict
        Its JSON export.
    names : list of str
        Its feature names.
    scale : float
        Its leaf scale.
    nan_right : set of int
        Numeric features whose NaN goes right.
    n_outputs : int, default=1
        Values a leaf holds (a ``MultiClass`` model's classes): each tree is then read as
        ``n_outputs`` trees, tree ``c`` holding output ``c``'s values in its output ``c``.

    Returns
    -------
    tuple
        ``(trees, categorical)``: the dict model and the categorical features.
    """
    info = document["features_info"]
    p = len(names)
    float_flat = [int(f["flat_feature_index"]) for f in info.get("float_features", [])]
    cat_flat = [int(c["flat_feature_index"]) for c in info.get("categorical_features", [])]
    binary = _binary_features(info, float_flat, cat_flat, names)
    keys: dict = {}  # a categorical split's identity -> (routing column, flat feature, tree, level)
    trees = []
    for t, tree in enumerate(document["oblivious_trees"]):
        levels = []
        for d, split in enumerate(tree["splits"]):
            kind, feature, border = binary[int(split["split_index"])]
            if kind == "float":
                levels.append((feature, float(border), feature in nan_right))
                continue
            key = int(split["split_index"])
            if key not in keys:
                keys[key] = (p + len(keys), feature, t, d)
            levels.append((keys[key][0], 0.5, False))
        trees.extend(output_trees(levels, tree, scale, n_outputs))
    features = {j: CatBoostColumn(j, names[j]) for j in cat_flat}
    column_feature = np.concatenate([np.arange(p), [f for _, f, _, _ in keys.values()]]).astype(np.int64)
    locations = {}
    for j in cat_flat:
        mine = [(c, t, d) for c, f, t, d in keys.values() if f == j]
        locations[j] = tuple(np.array([m[i] for m in mine], dtype=np.int64) for i in range(3))
    routing = CatBoostRouting(p, column_feature, model=model, features=features, locations=locations, tables={})
    bias = document.get("scale_and_bias", [1.0, [0.0]])[1]
    base = float(np.ravel(bias)[0]) if np.size(bias) else 0.0
    model_dict = {
        "trees": trees,
        "base_offset": base,
        "input_dtype": np.float32,
        "tree_output": "raw_value",
        "objective": "squared_error",
    }
    return model_dict, CategoricalModel(tuple(features.values()), {}, routing)


def output_trees(levels: list[tuple], tree: dict, scale: float, n_outputs: int) -> list[dict]:
    """A symmetric tree of ``n_outputs`` values a leaf as that many trees in shap's dict format, tree
    ``c`` holding output ``c``'s values in its output ``c`` (zero in the others); one tree as it is
    when a leaf holds one value.

    Parameters
    ----------
    levels : list of tuple
        Each level's ``(feature, border, NaN right)``, as :func:`full_tree` reads them.
    tree : dict
        The tree in CatBoost's JSON export (``leaf_values``, ``leaf_weights``).
    scale : float
        The model's leaf scale.
    n_outputs : int
        Values a leaf holds.

    Returns
    -------
    list of dict
        ``n_outputs`` trees (one when ``n_outputs`` is 1).
    """
    if n_outputs == 1:
        return [full_tree(levels, tree["leaf_values"], tree["leaf_weights"], scale)]
    values = np.asarray(tree["leaf_values"], dtype=np.float64).reshape(-1, n_outputs)
    return [
        in_output(full_tree(levels, values[:, c], tree["leaf_weights"], scale), c, n_outputs) for c in range(n_outputs)
    ]


def in_output(tree: dict, output: int, n_outputs: int) -> dict:
    """A one-output tree in shap's dict format with its values moved to ``output`` of ``n_outputs``.

    Parameters
    ----------
    tree : dict
        The tree, one value a node.
    output : int
        Where its values go.
    n_outputs : int
        How many outputs the model has.

    Returns
    -------
    dict
        The tree, ``(nodes, n_outputs)`` values, zero outside ``output``.
    """
    values = np.zeros((len(tree["values"]), n_outputs))
    values[:, output] = np.asarray(tree["values"])[:, 0]
    return {**tree, "values": values}


def _binary_features(info: dict, float_flat: list[int], cat_flat: list[int], names: list[str]) -> list[tuple]:
    """CatBoost's binary features in the order its splits index them: the numeric features' borders,
    the one-hot values, then each CTR's borders; each as ``(kind, flat feature, border)``."""
    out: list[tuple] = []
    for f, flat in zip(info.get("float_features", []), float_flat, strict=True):
        out.extend(("float", flat, border) for border in f.get("borders") or [])
    for c, flat in zip(info.get("categorical_features", []), cat_flat, strict=True):
        out.extend(("onehot", flat, None) for _ in c.get("values") or [])
    for ctr in info.get("ctrs", []):
        out.extend(("ctr", _ctr_feature(ctr["elements"], cat_flat, float_flat, names), None) for _ in ctr["borders"])
    return out


def _ctr_feature(elements: list[dict], cat_flat: list[int], float_flat: list[int], names: list[str]) -> int:
    """The one categorical feature a CTR reads; a combination is refused, named."""
    if len(elements) == 1 and elements[0].get("combination_element") == "cat_feature_value":
        return cat_flat[int(elements[0]["cat_feature_index"])]
    parts = []
    for e in elements:
        if e.get("combination_element") == "float_feature":
            parts.append(f"{names[float_flat[int(e['float_feature_index'])]]} > {e['border']:.6g}")
        elif "cat_feature_index" in e:
            parts.append(names[cat_flat[int(e["cat_feature_index"])]])
        else:
            parts.append(json.dumps(e))
    raise UnsupportedModelError(
        f"CatBoost model splits on the CTR of a combination of features ({' x '.join(parts)}), which reads "
        "several features at one split; the game of this package gives each split one feature.  Refit with "
        "max_ctr_complexity=1: each categorical feature is then split on by its own CTRs (and one-hot values), "
        "which costs the interactions CatBoost's combinations capture (often little accuracy; the trees still "
        "combine features along their paths)."
    )


def full_tree(levels: list[tuple], leaf_values: list, leaf_weights: list, scale: float) -> dict:
    """A symmetric tree as a full binary tree in shap's dict format: level ``d`` splits on
    ``levels[d]`` (feature, border, NaN right); leaf ``sum_d side_d 2^d`` holds ``leaf_values``."""
    depth = len(levels)
    n_inner = (1 << depth) - 1
    n = n_inner + (1 << depth)
    left = np.full(n, -1, dtype=np.int32)
    right = np.full(n, -1, dtype=np.int32)
    feature = np.full(n, -1, dtype=np.int32)
    threshold = np.zeros(n)
    value = np.zeros((n, 1))
    cover = np.zeros(n)
    default = np.full(n, -1, dtype=np.int32)
    # heap layout: node h at level d has children 2h+1 (side 0) and 2h+2 (side 1)
    for h in range(n_inner):
        d = int(np.log2(h + 1))
        f, border, nan_right = levels[d]
        left[h], right[h], feature[h], threshold[h] = 2 * h + 1, 2 * h + 2, f, border
        default[h] = right[h] if nan_right else left[h]
    weights = np.asarray(leaf_weights, dtype=np.float64)
    values = np.asarray(leaf_values, dtype=np.float64) * scale
    for slot in range(1 << depth):
        # the heap's bottom slot `slot` took side bit (depth-1-d) at level d: the leaf index reverses them
        index = sum(((slot >> (depth - 1 - d)) & 1) << d for d in range(depth))
        value[n_inner + slot, 0] = values[index]
        cover[n_inner + slot] = weights[index]
    for h in range(n_inner - 1, -1, -1):
        cover[h] = cover[left[h]] + cover[right[h]]
    return {
        "children_left": left,
        "children_right": right,
        "children_default": default,
        "features": feature,
        "thresholds": threshold,
        "values": value,
        "node_sample_weight": cover,
    }
