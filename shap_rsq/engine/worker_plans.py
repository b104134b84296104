"""Compiled plans kept by each worker process between calls, so that units travel without them.

A block of trees sent to a worker carried every compiled plan of its units: 49-80 MB a call for
100-300 trees of depth 6-8, pickled here and unpickled there on every call (0.16 s to pickle
a depth-8 forest's, as long as compiling them all: 0.16-0.23 s).  Instead, units go without
their plans (:func:`shipped`); a worker restores the plans it compiled on an earlier call from
its own cache (:func:`restore`), compiles the others, and keeps them (:func:`remember`), least
recently used first out once they pass a byte bound.  Batches of depth-4 trees keep their
per-row side tables the same way (made again on each call, they took a fifth of two workers'
time on a depth-4 booster).  Units are told apart by their ``token``, unique to each unit
object, so two explainers never share an entry.  The caller still gets the plans it lacks
back with the results (``kernels.lca.unit.compiled_plans``); side tables stay in the workers.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import fields, is_dataclass, replace

from ..kernels.enumeration.small_trees import HeapUnit
from ..kernels.interactions.subset_values import SubsetUnit
from ..kernels.lca.unit import LcaUnit
from .budget import worker_tuning

__all__ = ["held_bytes", "keep_within", "plan_bytes", "remember", "restore", "shipped"]

# token -> (what the unit keeps: attribute -> value, bytes); only worker processes fill it (_run_block)
_CACHE: OrderedDict[str, tuple[dict, int]] = OrderedDict()


def shipped(units, split: int = 1, threads: bool = False) -> list:
    """Shallow copies of ``units`` without their compiled plans and side tables (the units
    themselves keep them), their kernels' blocks sized for ``split`` workers sharing the budget
    (``budget.worker_tuning``).

    For ``threads`` of this process the plans stay: the threads share them with this process,
    and a copy is made only to cut the blocks."""
    if threads and split == 1:
        return list(units)
    plans = {} if threads else {"_plan": None, "_junction_plan": None}
    copies = []
    for unit in units:
        if isinstance(unit, LcaUnit):
            unit = replace(unit, **plans, tuning=worker_tuning(unit.tuning, split))
        elif isinstance(unit, SubsetUnit):
            unit = replace(unit, **({} if threads else {"_plan": None}), tuning=worker_tuning(unit.tuning, split))
        elif isinstance(unit, HeapUnit) and not threads:
            unit = replace(unit, tuning=worker_tuning(unit.tuning, split))  # a copy starts without tables
        copies.append(unit)
    return copies


def restore(units) -> None:
    """Give each unit the plans or side tables this process kept for its token, if any."""
    for unit in units:
        if getattr(unit, "token", None) not in _CACHE:
            continue
        _CACHE.move_to_end(unit.token)
        for name, value in _CACHE[unit.token][0].items():
            if name == "_tables":
                unit._tables = {**value, **unit._tables}
            elif getattr(unit, name) is None:
                setattr(unit, name, value)


def remember(units, limit: int) -> None:
    """Keep the units' plans and side tables, at most ``limit`` bytes of them in all (the least
    recently used go)."""
    for unit in units:
        kept = _kept(unit)
        if not kept:
            continue
        size = sum(plan_bytes(value) for value in kept.values())
        if size > limit:
            continue
        _CACHE.pop(unit.token, None)
        _CACHE[unit.token] = (kept, size)
    total = sum(entry[1] for entry in _CACHE.values())
    while total > limit:
        _, (_, size) = _CACHE.popitem(last=False)
        total -= size


def _kept(unit) -> dict:
    """What a worker keeps of ``unit``: its compiled plans, or a batch's per-row side tables."""
    if isinstance(unit, LcaUnit):
        return {name: value for name in ("_plan", "_junction_plan") if (value := getattr(unit, name)) is not None}
    if isinstance(unit, HeapUnit):
        return {"_tables": unit.side_tables} if unit.side_tables else {}
    if isinstance(unit, SubsetUnit):
        return {"_plan": unit._plan} if unit._plan is not None else {}
    return {}


def plan_bytes(plan) -> int:
    """The bytes of a plan's arrays, in nested records and tuples too (0 for ``None``); a record
    that counts its own (``nbytes``, as arrays do) is taken at its word."""
    if hasattr(plan, "nbytes"):
        return int(plan.nbytes)
    if isinstance(plan, tuple | list):
        return sum(plan_bytes(part) for part in plan)
    if isinstance(plan, dict):
        return sum(plan_bytes(part) for part in plan.values())
    if is_dataclass(plan):
        return sum(plan_bytes(getattr(plan, f.name)) for f in fields(plan))
    return 0


def held_bytes(units) -> int:
    """Bytes of the compiled plans (and batches' per-row side tables) ``units`` hold."""
    plans = sum(plan_bytes(unit._plan) + plan_bytes(unit._junction_plan) for unit in units if isinstance(unit, LcaUnit))
    subsets = sum(plan_bytes(unit._plan) for unit in units if isinstance(unit, SubsetUnit))
    return plans + subsets + sum(unit.table_bytes for unit in units if isinstance(unit, HeapUnit))


def keep_within(unit, present: tuple[bool, bool], room: int) -> int:
    """Keep the plans ``unit`` compiled in this call (those ``present`` says it lacked), or the
    side tables a batch of depth-4 trees made for per-row values, if they fit in ``room`` bytes,
    else drop them; the bytes kept.

    An explainer keeps every tree's plan for its next call, and the plans of deep trees are
    large (40-140 MB each for XGBoost of depth 12 on 10,000 rows): unbounded, a booster of a few
    hundred such trees would hold more than the machine has.  Past the room, a tree is compiled
    again on each call (a few percent of evaluating it).
    """
    if isinstance(unit, HeapUnit):
        return unit.keep_tables_within(room)
    if isinstance(unit, SubsetUnit):  # its plan counted whole, on every call: it has no second plan
        size = plan_bytes(unit._plan)
        if size > room:
            unit._plan = None
            return 0
        return size
    if not isinstance(unit, LcaUnit):
        return 0
    new_plan = not present[0] and unit._plan is not None
    new_junction = not present[1] and unit._junction_plan is not None
    size = (plan_bytes(unit._plan) if new_plan else 0) + (plan_bytes(unit._junction_plan) if new_junction else 0)
    if size <= room:
        return size
    if new_plan:
        unit._plan = None
    if new_junction:
        unit._junction_plan = None
    return 0
