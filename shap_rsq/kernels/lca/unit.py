"""The unit of work for one tree through the LCA kernel (``kernels.lca.plan`` / ``kernels.lca.global_values``).

A deep tree is compiled into its plan only when a worker first runs it, and the
plans a worker process compiled travel back to the caller's units, so that an
explainer that is used again compiles each tree once.

A tree may take the conditioned recursion of ``kernels.recursion.conditioned`` instead: both
kernels are exact, and the unit counts the work of each on the rows at hand for the rule that
``engine.routing`` gave it (a :class:`~shap_rsq.kernels.protocol.JunctionChoice`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np

from ...models.forest import TreeTable
from ...models.node_arrays import NodeArrays
from ...tuning import DEFAULT_TUNING, Tuning
from ..batching.sparse import add_pattern_values
from ..protocol import JunctionChoice
from ..recursion.conditioned import (
    JunctionPlan,
    compile_junction,
    expected_junction_work,
    junction_work,
    pattern_predictions,
    sub_patterns,
)
from ..recursion.conditioned_passes import gradient_on_patterns
from ..recursion.conditioned_rows import reverse_work, row_gradients
from ..row_patterns import key_decisions, routed_decisions, routed_pattern_keys, split_decisions
from . import global_values as lca
from .plan import TreePlan, compile_tree
from .row_values import pattern_gradients

__all__ = ["LcaUnit", "adopt_plans", "compiled_plans", "lca_work", "plans_present"]


@dataclass
class LcaUnit:
    """One tree through the compiled LCA kernel (``kernels.lca.plan`` / ``kernels.lca.global_values``).

    All rows are first routed to split patterns (in row blocks) and merged
    across the whole dataset, so a tree with few distinct patterns costs little
    however many rows there are; the kernel then runs over blocks of patterns.
    """

    trees: np.ndarray
    means: np.ndarray
    tree: TreeTable
    work: float  # estimated items x quadrature nodes (``lca_work``), known before compiling
    junction: JunctionChoice | None = None  # when the conditioned recursion takes the tree (None: never)
    tuning: Tuning = DEFAULT_TUNING
    # items x quadrature nodes counted per node (``kernels.lca.pairs.node_costs``) where routing
    # counted them, for time estimates (``None``: not counted).  ``work`` stays the larger of both
    # counts and, on a tree with pair nodes, counts their items too: it weighs the whole tree when
    # blocks of trees are scheduled.
    item_work: float | None = None
    _plan: TreePlan | None = field(default=None, repr=False)
    _junction_plan: JunctionPlan | None = field(default=None, repr=False)
    # tells this unit's plans apart in a worker's cache (``engine.worker_plans``); copies keep it
    token: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False, compare=False)

    @property
    def plan(self) -> TreePlan:
        # compiled on first use, by the worker that runs the unit
        if self._plan is None:
            self._plan = compile_tree(self.tree, tuning=self.tuning)
        return self._plan

    @property
    def junction_plan(self) -> JunctionPlan:
        if self._junction_plan is None:
            self._junction_plan = compile_junction(self.tree, self.tuning)
        return self._junction_plan

    @property
    def parallel_work(self) -> float:
        return self.work

    @property
    def compiled_work(self) -> float | None:
        """What ``work`` estimates, counted on the compiled plan (``None`` before compiling, and for
        a tree the conditioned recursion may take: the plan counts the kernel it may not run)."""
        return None if self._plan is None or self.junction is not None else float(self._plan.node_evaluations)

    def chunk_rows(self) -> int | None:
        return None  # all rows at once: routing is blocked inside

    def prepare(self, X: np.ndarray, dtype) -> tuple[tuple, np.ndarray]:
        elements = self.tuning.routing_elements_within
        if self.junction is not None:  # route with the recursion's plan: the LCA plan may never be needed
            plan = self.junction_plan
            # each pattern's decisions, which the recursion reads too
            first, inverse, decisions = routed_decisions(plan, X, dtype, elements)
            prediction = pattern_predictions(plan, decisions)[inverse]
            return (X, dtype, first, inverse, decisions, None), prediction[:, None]
        first, inverse, prediction, keys = routed_pattern_keys(self.plan, X, dtype, elements, self.plan.leaf_value)
        return (X, dtype, first, inverse, None, keys), prediction[:, None]

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        X, dtype, first, inverse, decisions, keys = state
        if local:
            features, g_quad, g_lin = self._junction_rows(first, decisions) or self._lca_rows(X, dtype, first, keys)
            add_pattern_values(out, features, inverse, (w_quad[:, 0], g_quad), (w_lin[:, 0], g_lin))
            return
        n_patterns = len(first)
        per_quad = np.bincount(inverse, weights=w_quad[:, 0], minlength=n_patterns)
        per_lin = np.bincount(inverse, weights=w_lin[:, 0], minlength=n_patterns)
        if self._junction_gradient(first, decisions, per_quad, per_lin, out):
            return
        for plan, block, codes in self._coded_blocks(X, dtype, first, local=False, keys=keys):
            weights = per_quad[block], per_lin[block]
            out[plan.features] += lca.weighted_gradient(plan, codes, *weights, self.tuning)

    def _lca_rows(self, X, dtype, first, keys: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tree's features and each pattern's gradients of ``m^2`` and ``m`` through the LCA plans."""
        g_quad = np.zeros((len(first), self.plan.n_features))
        g_lin = np.zeros_like(g_quad)
        for plan, block, codes in self._coded_blocks(X, dtype, first, local=True, keys=keys):
            quad, lin = pattern_gradients(plan, codes, self.tuning)
            g_quad[block] += quad
            g_lin[block] += lin
        return self.plan.features, g_quad, g_lin

    def _coded_blocks(self, X, dtype, first, local: bool, keys: np.ndarray | None = None):
        """Each LCA plan with each of its blocks of patterns (:meth:`pattern_step`) and their leaf codes.

        The patterns' decisions come from their routing ``keys`` (``None``: from their first rows of
        ``X`` again) where a plan splits as the unit's own does: gathering the first rows again, in
        the keys' order, read a cache line a split column a pattern (on 128,000 rows, depth-6 trees:
        2.2 of 59 s)."""
        for plan in self.lca_plans():
            step = self.pattern_step(local, plan)
            coded = keys is not None and _same_splits(plan, self.plan)
            for start in range(0, len(first), step):
                block = slice(start, min(len(first), start + step))
                if coded:
                    decisions = key_decisions(keys[block], len(plan.split_feature))
                else:
                    decisions = split_decisions(plan, X, dtype, rows=first[block])
                yield plan, block, lca.leaf_codes(plan, decisions)

    def lca_plans(self):
        """The plans whose items add up to the tree's game: its one plan (see ``HybridUnit``)."""
        yield self.plan

    def pattern_step(self, local: bool, plan: TreePlan | None = None) -> int:
        """Patterns per kernel call on ``plan`` (the unit's own by default): at most
        ``pattern_elements`` (pattern, item) pairs, whose temporaries (:meth:`element_bytes`
        each) and the leaf codes and cells of each pattern (``Tuning.lca_leaf_bytes`` a leaf)
        fill a quarter of the budget."""
        plan = self.plan if plan is None else plan
        width = self.pattern_width(local, plan)
        per_pattern = self.pattern_bytes(local, width, len(plan.code_size))
        return max(1, min(self.tuning.pattern_elements // width, int(self.tuning.memory_budget // (4 * per_pattern))))

    def pattern_bytes(self, local: bool, width: float, n_leaves: int) -> float:
        """Peak bytes a pattern adds to a kernel call: ``width`` (pattern, item) elements and its
        leaf codes and cells (``Tuning.lca_leaf_bytes`` a leaf)."""
        return width * self.element_bytes(local) + n_leaves * self.tuning.lca_leaf_bytes

    def element_bytes(self, local: bool) -> float:
        """Temporaries per (pattern, item) pair (``Tuning.lca_local_bytes`` / ``lca_global_bytes``)."""
        return self.tuning.lca_local_bytes if local else self.tuning.lca_global_bytes

    def pattern_width(self, local: bool, plan: TreePlan | None = None) -> int:
        """(pattern, item) elements per pattern; per-row values also hold two slot arrays of a
        pattern's leaves x path features (``kernels.lca.row_values``)."""
        plan = self.plan if plan is None else plan
        return max(1, len(plan.item_leaf) + (2 * plan.path_split.size if local else 0))

    def _junction_gradient(self, first, decisions, per_quad, per_lin, out) -> bool:
        """Add the tree's global values through the conditioned recursion, if it is the cheaper kernel."""
        found = self._junction_patterns(first, decisions, local=False)
        if found is None:
            return False
        plan, (patterns, at) = self.junction_plan, found
        out[plan.features] += gradient_on_patterns(plan, patterns, at[-1], per_quad, per_lin)
        return True

    def _junction_rows(self, first, decisions) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`_lca_rows` through the conditioned recursion, if it is the cheaper kernel."""
        if self.junction is None:
            return None
        plan = self.junction_plan
        found = self._junction_patterns(first, decisions, local=True, reverse=reverse_work(plan, len(first)))
        if found is None:
            return None
        return plan.features, *row_gradients(plan, *found, self.tuning.junction_row_elements)

    def _junction_patterns(self, first, decisions, local: bool, reverse: float = 0.0):
        """The recursion's sub-patterns of the rows (:func:`~shap_rsq.kernels.recursion.conditioned.sub_patterns`)
        from their split ``decisions`` (:meth:`prepare`'s),
        or ``None`` when the unit's :class:`~shap_rsq.kernels.protocol.JunctionChoice` does not take
        the tree: asked first with the work estimated before the sub-patterns are found (finding
        them costs 1-3 ms a tree), then with the work counted on them."""
        if self.junction is None:
            return None
        plan, m = self.junction_plan, len(first)
        if not self._takes(expected_junction_work(plan, m, self.tuning.patterns_per_leaf), m, reverse, local):
            return None
        patterns, at = sub_patterns(plan, decisions, self.tuning.junction_whole_rows)
        if not self._takes(junction_work(plan, patterns), m, reverse, local):
            return None
        return patterns, at

    def _takes(self, junction_work: float, n_patterns: int, reverse: float, local: bool) -> bool:
        return self.junction.takes(junction_work, self.work, n_patterns, reverse, local)


def lca_work(nodes: NodeArrays) -> np.ndarray:
    """``(T,)`` items x quadrature nodes of each tree's LCA plan, estimated without compiling:
    ``0.6 sum_leaves d^2 (d / 2 + 1)`` over leaf depths ``d`` (within 2x of the compiled count
    on XGBoost trees of depth 4 to 8; leaf-wise LightGBM trees are overestimated up to 3x)."""
    d = np.where(nodes.is_leaf & (nodes.depth >= 0), nodes.depth, 0).astype(float)
    return 0.6 * np.sum(d * d * (d / 2 + 1), axis=1)


def compiled_plans(units, present: list | None = None) -> list:
    """Each unit's compiled plans, ``None`` where there are none (to send back from a worker).

    ``present`` (:func:`plans_present` before the units ran) leaves out the plans the units
    arrived with: the caller has them, and sending them back cost a worker as long as pickling
    them on the way out (50 MB for 300 depth-6 trees).
    """
    present = present or [(False, False)] * len(units)
    compiled = [
        (None if had[0] else unit._plan, None if had[1] else unit._junction_plan)
        if isinstance(unit, LcaUnit)
        else (None, None)
        for unit, had in zip(units, present, strict=True)
    ]
    return [None if pair == (None, None) else pair for pair in compiled]


def plans_present(units) -> list[tuple[bool, bool]]:
    """Whether each unit holds its LCA plan and its recursion plan already."""
    return [
        (unit._plan is not None, unit._junction_plan is not None) if isinstance(unit, LcaUnit) else (True, True)
        for unit in units
    ]


def adopt_plans(units, plans) -> None:
    """Keep the plans a worker compiled for these units (the same units, in this process)."""
    for unit, compiled in zip(units, plans, strict=True):
        if compiled is None:
            continue
        plan, junction_plan = compiled
        if plan is not None and unit._plan is None:
            unit._plan = plan
        if junction_plan is not None and unit._junction_plan is None:
            unit._junction_plan = junction_plan


def _same_splits(plan: TreePlan, other: TreePlan) -> bool:
    """Whether two plans of a tree route rows alike: the same splits in the same order."""
    return plan is other or (
        np.array_equal(plan.split_feature, other.split_feature)
        and np.array_equal(plan.split_threshold, other.split_threshold)
        and np.array_equal(plan.split_default_left, other.split_default_left)
    )
