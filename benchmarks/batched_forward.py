"""What batching the conditioned recursion's nodes across trees would buy, measured on its forward step.

Issue 58's lead for LightGBM is to run many trees' nodes in the same NumPy calls.  This takes the
recursion's trees of one ``rsq`` call of ``bench.py``'s ``lgbm-31`` (their sub-patterns as the call
found them, as ``passes_ab.py`` records them), runs each tree's forward pass once to have every
node's values, and then times, for the nodes without states (alike, not conditioned: most nodes),

* their forward step node by node, as ``kernels.recursion.conditioned_passes`` runs it, and
* one batched step per number of quadrature nodes over all of them: every node's values in one
  store (a row per sub-pattern; a leaf child reads a row of zeros, and all nine tables are
  gathered, so one formula serves every kind), the children's rows and the tables gathered by
  index, the products taken once.  Building the indices is timed; the store is not (a batched
  pass would write its values there).

Small nodes (at most 64 sub-patterns) and the others apart, CPU seconds, medians of ``--rounds``::

    python benchmarks/batched_forward.py --rounds 5
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np
from passes_ab import recorded_calls

from shap_rsq.kernels.quadrature import gauss_legendre
from shap_rsq.kernels.recursion import conditioned_passes as cp

SMALL = 64  # sub-patterns of a small node


def forward_values(calls) -> list[tuple]:
    """Each tree's plan, sub-patterns, tables, every node's values and all nine tables ``(nodes, 9, 2, Q)``."""
    trees = []
    for plan, patterns, *_ in calls:
        q, _ = gauss_legendre(plan.n_q)
        tables = cp.node_tables(plan, q)
        rows = cp._OnRows(q, max(p.count for p in patterns))
        values = []
        for node, pat, table in zip(plan.nodes, patterns, tables, strict=True):
            a, b, _ = cp._forward(node, pat, values, rows, table)
            values.append((a, b))
        unknown, known = cp._branch_terms(plan.node_rho, plan.node_leaf)
        full = unknown[..., None] * (1.0 - q) + known[..., None] * q
        trees.append((plan, patterns, tables, values, rows, full))
    return trees


def stateless(tree, small: bool) -> list[int]:
    """The tree's alike nodes without states, small or not."""
    plan, patterns, tables = tree[:3]
    return [
        i
        for i, (node, table) in enumerate(zip(plan.nodes, tables, strict=True))
        if table is not None and node.n_bits == 0 and not node.conditioned and (patterns[i].count <= SMALL) == small
    ]


def stores(chosen) -> dict:
    """Per number of quadrature nodes: the trees, their nodes, and every node's ``A, B`` stacked (row 0 zeros)."""
    by_q = collections.defaultdict(list)
    for tree, nodes in chosen:
        if nodes:
            by_q[tree[0].n_q].append((tree, nodes))
    out = {}
    for n_q, group in by_q.items():
        a_parts, b_parts, offsets, start = [np.zeros((1, n_q))], [np.zeros((1, n_q))], [], 1
        for tree, _ in group:
            first = []
            for a, b in tree[3]:
                a_parts.append(a.reshape(-1, n_q))
                b_parts.append(b.reshape(-1, n_q))
                first.append(start)
                start += a.shape[0] * a.shape[1]
            offsets.append(first)
        out[n_q] = (group, np.concatenate(a_parts), np.concatenate(b_parts), offsets)
    return out


def per_node(chosen) -> None:
    for (plan, patterns, tables, values, rows, _), nodes in chosen:
        for i in nodes:
            cp._forward(plan.nodes[i], patterns[i], values, rows, tables[i])


def batched(by_q: dict) -> None:
    for group, store_a, store_b, offsets in by_q.values():
        reads, picks, coefficients = ([], []), [], []
        for ((plan, patterns, *_, full), nodes), first in zip(group, offsets, strict=True):
            for i in nodes:
                node, pat = plan.nodes[i], patterns[i]
                for side in (0, 1):
                    child = node.children[side]
                    if child < 0:
                        reads[side].append(np.zeros(pat.count, dtype=np.int64))
                    else:
                        own = np.arange(pat.count) if pat.same[side] else pat.child[side]
                        reads[side].append(first[child] + own)
                picks.append(2 * len(coefficients) + pat.decision)
                coefficients.append(full[i].transpose(1, 0, 2))
        left, right = (np.concatenate(r) for r in reads)
        c = np.take(np.concatenate(coefficients), np.concatenate(picks), axis=0)
        al, ar = np.take(store_a, left, axis=0), np.take(store_a, right, axis=0)
        bl, br = np.take(store_b, left, axis=0), np.take(store_b, right, axis=0)
        a = c[:, cp.BL] * al
        a += c[:, cp.BR] * ar
        a += c[:, cp.ALPHA]
        b = c[:, cp.K] * (al * ar)
        b += c[:, cp.EL] * bl
        b += c[:, cp.ER] * br
        b += c[:, cp.LL] * al
        b += c[:, cp.LR] * ar
        b += c[:, cp.GAMMA]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trees = forward_values(recorded_calls("lgbm-31"))
    print("| nodes | count | elements | node by node (s) | batched (s) |")
    print("|---|---:|---:|---:|---:|")
    for small in (True, False):
        chosen = [(tree, stateless(tree, small)) for tree in trees]
        by_q = stores(chosen)
        times = []
        for _ in range(args.rounds):
            start = time.process_time()
            per_node(chosen)
            middle = time.process_time()
            batched(by_q)
            times.append((middle - start, time.process_time() - middle))
        mine, theirs = np.median(times, axis=0)
        count = sum(len(nodes) for _, nodes in chosen)
        elements = sum(tree[1][i].count * tree[0].n_q for tree, nodes in chosen for i in nodes)
        label = f"at most {SMALL} sub-patterns" if small else f"more than {SMALL}"
        print(f"| {label} | {count} | {elements} | {mine:.3f} | {theirs:.3f} |")


if __name__ == "__main__":
    main()
