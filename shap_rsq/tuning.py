"""Every tuned number of the engine, in one frozen record.

Each field says what it trades and which script of ``benchmarks/`` measured it (or that none
did: a memory bound, or bytes counted with ``tracemalloc`` by hand); the figures are in
``docs/benchmarks.md``.  No tuned number lives anywhere else: a kernel or the engine reads it
from the :class:`Tuning` it is handed.  None of them changes a result: every setting gives the
same values (to rounding), only in another time or memory.  Tests force paths with
``dataclasses.replace(DEFAULT_TUNING, ...)`` passed to the engine, never by changing globals.

This module imports nothing but the standard library, so every layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_TUNING", "Tuning"]


@dataclass(frozen=True)
class Tuning:
    """Thresholds that choose kernels, block sizes and parallelism.

    Attributes
    ----------
    heap_depth : int
        Trees at most this deep go through batched subset enumeration on the whole cube of their
        split patterns (a heap of 7 splits at depth 3, fewer than 2^7 patterns): tables built once
        whatever the rows, against tables that grow as 2^(2^depth - 1) a tree (a depth-4 cube has
        2^15 patterns).
        Benchmark: ``benchmarks/bench.py`` (boosters of depth 2-6, the paper's settings).
    observed_depth : int
        Trees of this depth go through the two-particle recursion with its root on the split
        patterns the rows reach (global values), or through tables of the root's two sides on
        all their sub-patterns and the chain rule at the root (per-row values,
        ``kernels.recursion.pattern_rows``): work on the patterns that occur (a few hundred of
        2^15) against the LCA kernel's set-up per tree.
        Benchmark: ``benchmarks/local.py`` (``xgb-d4``, ``rf-d4``) and ``benchmarks/bench.py``.
    recursion_cost : int
        A tree of a shallow heap batch takes the two-particle recursion instead of subset
        enumeration when ``2^repeated x depth x recursion_cost < 2^players``: one state of the
        recursion at one quadrature node costs about this many subsets.
        Benchmark: none recorded; ``benchmarks/bench.py``'s shallow boosters run both methods.
    oblivious_size : int
        Symmetric (CatBoost) trees deeper than ``heap_depth`` are tabulated by known levels when
        ``depth + players`` is at most this: their tables hold ``2^depth x 2^depth`` entries a tree
        (``sum_d 2^d 4^(depth - d)`` in the making), beyond which the LCA kernel is cheaper.
        Benchmark: none recorded; ``benchmarks/bench.py`` (``catboost_symmetric``) runs the symmetric path.
    max_repeated : int
        ... if they have at most this many repeated features: each doubles the recursion's
        states, and past 3 the LCA kernel was faster on depth-4 trees (per-row values too: at 4,
        300 XGBoost trees of depth 4 on 10,000 rows took 2.3-2.6 s against 2.4-2.5 s at 3, and
        3.4-3.6 s at 5).
        Benchmark: ``benchmarks/local.py`` (``xgb-d4`` with 300 trees on 10,000 rows).
    junction_repeated : int
        Leaf-wise trees with more repeated features never try the conditioned recursion
        (LightGBM with 31 leaves: 92% of trees have at most 6, all at most 8).
        Benchmark: ``benchmarks/deep.py`` (``lgbm-31`` to ``lgbm-255``): counted on their trees.
    junction_share : float
        The conditioned recursion takes a leaf-wise tree when its work (states x quadrature nodes
        x sub-patterns) is below this fraction of the LCA kernel's estimate: its time per element
        is 10-20x the LCA kernel's per item.  Timed per tree on LightGBM (300 trees, 31 leaves).
        Benchmark: ``benchmarks/deep.py`` (``lgbm-31``), per tree.
    junction_local_share : float
        ... and for per-row values, whose reverse pass runs on every row (not on each node's
        sub-patterns): per element 7-9x the LCA kernel's per item on LightGBM with 31 leaves on
        2,000 rows (46-66 ns against 6-8), where it never wins (0.28-0.68 of the LCA work); on
        fully grown forests on 300 rows x 10,000 features, at 0.08-0.14, it took 0.28-0.41 of the
        LCA kernel's time.
        Benchmark: ``benchmarks/local.py`` on LightGBM and ``benchmarks/scale.py wide-forest``.
    junction_elements : int
        ... and below this many elements (its saved arrays, about six per element, stay small).
        A memory bound, not timed (no benchmark).
    junction_whole_rows : float
        A node of the conditioned recursion with at least this fraction of the rows' distinct
        patterns as its own distinct sub-patterns keeps every row instead (on LightGBM's chains of
        nodes with one leaf child, most of the work): a child that keeps every row too is then
        read and sent its adjoints as it is, without a gather or a sparse product, for up to
        1 / this more elements (on 300 LightGBM trees of 31 leaves on 1,000 rows, 4.6% more).
        Benchmark: ``benchmarks/bench.py lgbm-31`` (the passes, timed beside the kernel without it).
    patterns_per_leaf : int
        Lower bound of sub-patterns per leaf used to turn trees away from the conditioned
        recursion before their sub-patterns are found (finding them costs 1-3 ms a tree).
        Benchmark: ``benchmarks/deep.py`` (``lgbm-*``): the time finding sub-patterns takes.
    batch_trees : int
        Consecutive small trees evaluated together in one enumeration batch: fewer, longer NumPy
        calls against the batch's tables, which grow with its trees.
        Benchmark: ``benchmarks/bench.py`` (hundreds of shallow trees).
    batch_patterns : int
        Per-pattern weights of one batch of depth-4 trees (trees x 2^15 floats): bounds memory.
        A memory bound, not timed; ``benchmarks/local.py`` (``xgb-d4``) runs it.
    chunk_elements : int
        Elements of one routing block (rows x path entries, rows x splits): memory per block
        against NumPy calls per block.
        Benchmark: ``benchmarks/scale.py million`` (memory per block on 10^6 rows).
    min_chunk_rows : int
        Smallest row chunk of a batch, so that NumPy calls stay long on wide batches (at the
        cost of a chunk's memory past ``chunk_elements``).
        Benchmark: ``benchmarks/scale.py wide`` (1,000 depth-3 trees on 20,000 columns).
    pattern_elements : int
        Distinct patterns x items per LCA kernel call, a cap beside the memory budget (which binds
        first up to a budget of 4 GiB): each call tabulates the tree's items again, so fewer,
        larger calls are faster as long as they fit.  2^28 alone would cut the largest tree of
        XGBoost depth 12 on 10,000 rows (178,505 items) into 7 calls; the budget at 4 bytes an
        item cut it into 14, 154 s of kernel against 78 s in 3 calls and 68 s in one.
        Benchmark: ``benchmarks/deep.py xgb-12-10k`` and ``benchmarks/ab_blocks.py``.
    block_elements : int
        Float64 elements of one temporary array in the LCA kernel (4 MB): its passes are
        memory-bound products, and blocks that stay in cache ran 1.2-1.3x faster than 64 MB ones.
        Benchmark: ``benchmarks/deep.py`` (``rf-10``, ``xgb-12``).
    side_block_elements : int
        Float64 elements of a block of rows in the global LCA kernel's side sums and cotangents
        (``kernels.lca.global_values``, 1 MB): a block's (row, item) entries, its
        ``(rows, sides, groups, nodes)`` sums and cotangents are read and written a few times each,
        and the blocks of ``block_elements`` (4 MB each) fell out of a core's 2 MB L2 cache: on
        an Intel Xeon (2 MB L2 a core), ``rsq`` of XGBoost depth 6 and 8 (n = 1,000) took 1.1-1.3x
        less CPU time at 2^16-2^17 than at 2^19, and 2^21 took 1.3x more (alternating in one
        process on a loaded machine; ``block_elements`` at 2^17 for the other kernels gained
        nothing).  Benchmark:
        ``python benchmarks/bench.py xgb-d6 depth-6 depth-8`` (docs/benchmarks.md, "Deep XGBoost:
        global rsq").
    chunk_cells : int
        Table entries of one chunk of cross items (``kernels.batching.chunks``), whose value and
        cotangent tables every row block reads and writes at random: 2^13 entries x 8 nodes x 2
        tables x 8 bytes stay within a core's L2 cache.  On depth-10 forests 2^15 was 10% faster
        and 2^17 10% slower.
        Benchmark: ``benchmarks/deep.py`` (``rf-10``).
    dense_slots : int
        Distinct keys (a block's leaf codes, the cells of its views) are found through a table of
        all their possible values when it has at most this many slots (or 4 per key), else by
        sorting: 4 million slots take 36 MB (a flag and a rank each), a sixteenth of the budget at
        most (:attr:`dense_slots_within`).
        A memory bound (see :attr:`dense_slots_within`), timed with ``benchmarks/deep.py``.
    tabulate_cells : int
        Table entries whose values and slopes are computed together: consecutive chunks make one
        pass of NumPy calls (their per-call costs were a quarter of an XGBoost depth-12 tree with
        1,900 chunks), while rows still walk them chunk by chunk.
        Benchmark: ``benchmarks/deep.py xgb-12``.
    mixed_cells : int
        A chunk whose tables hold at most this many entries computes them as one class of mixed
        widths (products gathered factor by factor, slopes by one set of index sums), instead of
        one pass of NumPy calls per width and kind of table: small trees otherwise spend most of
        their time in those calls.
        Benchmark: ``benchmarks/bench.py`` and ``benchmarks/local.py`` (shallow trees).
    join_single_work : int
        A tree evaluates its single items in its first chunk of cross items, on that chunk's
        quadrature nodes, instead of in a chunk of their own, when the nodes this adds to their
        table entries (entries x extra nodes) are at most this many: each chunk's tables and slopes
        cost about 50 NumPy calls whatever its entries.  CPU s of ``rsq``, one core, medians of 5
        (2026-12-06, ``-1`` never joins): XGBoost depth 6 on 1,000 rows of 100 features 2.47 at -1,
        2.36 at 4,096, 2.30 at 8,192, 2.32 at 16,384; the depth-6 forest 0.97 / 0.93 / 0.94 /
        0.91; at depth 8 (single tables of 2,800-15,000 entries, 2-4 nodes more) 7.59 / 7.60 /
        7.57 (XGBoost at -1, 8,192, 16,384) and 2.79 / 2.79 / 2.75 (forest), while 16,384
        *entries* joined regardless of the nodes took 3-4% more there.
        Benchmark: ``benchmarks/ab_tuning.py xgb-p100-d6 join_single_work``.
    level_work : float
        A chunk of cross items is evaluated on the quadrature nodes of its first group, the most
        its groups need (``TreePlan.group_q``: the root's pairs need about twice the nodes of
        the last splits').  A new chunk starts where fewer nodes suffice when that saves at least
        this many ``rows x items x nodes``: about the cost of building one more chunk.  Cutting at
        every change (0) made per-row values on depth-8 XGBoost and forests (1,000 rows) 8-11%
        faster, but depth-4 and depth-6 XGBoost up to 20% slower (three or four chunks where one
        sufficed); at 3e5 depth 6 keeps one chunk on 1,000 rows and depth 8 cuts.
        Benchmark: ``benchmarks/local.py`` (``xgb-d4`` to ``xgb-d8``, ``rf-d8``, 1,000 rows).
    dense_ratio : float
        A view's items are tabulated on all ``2^w`` combinations of its ``w`` bits when ``2^w`` is at
        most ``max(1, dense_ratio x w)`` times the combinations that occur, otherwise cell by cell
        (a full table is never worse than its cells; 0 tabulates every view cell by cell).  At
        ``w x 1``, the wide views of XGBoost depth-12 trees (w = 8-10, a quarter to 40% of their
        combinations present) went dense and each entry cost its passes for nothing; at 0.3 those
        trees took 16% less time on 2,000 rows and 40% less on 500, depth-10 forests and depth-8
        XGBoost the same.
        Benchmark: ``benchmarks/deep.py`` (``xgb-12``, ``rf-10``, ``xgb-8``; 500 and 2,000 rows).
    max_dense_width : int
        ... and never wider than this many bits: a chunk holds at least one item's table, and 2^16
        entries x 11 nodes x 8 bytes (6 MB) still keep a chunk's tables small.
        A memory bound, not timed (no benchmark).
    root_elements : int
        Elements of one (trees, states, quadrature nodes, observed patterns) array at the root of
        the observed-pattern recursion (16 MB); for per-row values, of the derivatives the
        observed patterns gather (``kernels.recursion.pattern_rows``).
        A memory bound, not timed; ``benchmarks/local.py`` (``xgb-d4``) runs it.
    local_columns_per_player : int
        Per-row values of a batch of small trees go to the output as one sparse product (``2 T x
        columns`` multiply-adds a row, no temporaries) when the batch reads at most this many
        columns per player of a tree, else through ``(n, T, K)`` gathers summed per column (about
        six passes over ``T K`` a row).  On 100 depth-4 trees over 20 columns (``K`` 6-10) on
        10,000 rows the product took 0.19-0.20 s of the per-row call against 0.24-0.25 s with
        the gathers (at a bound of 3, some batches took the gathers).
        Benchmark: ``benchmarks/local.py`` (``xgb-d4``, 10,000 rows).
    offset_block_elements : int
        Rows x trees of a softmax booster's other classes predicted at once while its offsets move
        on to a unit's first tree (``engine.losses.SoftmaxOffsets``, 8 MB): the memory of the
        offsets stays ``K x n`` floats plus this, where the ``(n, T)`` tables of every class took
        1 GiB on 50,000 rows of a three-class booster of 100 rounds.
    route_elements : int
        Rows x trees routed at once when predicting (int64 node indices: 0.5 MB, in cache):
        0.12 s for 225 depth-4 trees on 10,000 rows, 0.24 s at 1M; 75 trees of depth 8 took
        0.07-0.11 s, against 0.15-0.17 s.
        Benchmark: ``benchmarks/local.py`` (``xgb-d4``, 10,000 rows) and ``benchmarks/deep.py xgb-8``.
    parallel_work : float
        Estimated LCA work (items x quadrature nodes x rows) from which blocks of trees go to worker
        processes: about half a second on one core, against ~25 ms to hand blocks to a warm pool.
        Benchmark: ``benchmarks/jobs.py`` and ``benchmarks/threads.py``.
    blocks_per_job : int
        Blocks of trees per worker: a worker that drew cheap trees takes another block, but each
        block costs 10-20 ms of hand-over.  Per-row values keep one block per worker when the
        blocks' ``(n, p)`` results would pass an eighth of the memory budget.
        Benchmark: ``benchmarks/jobs.py`` and ``benchmarks/threads.py``.
    block_seconds : float
        Global values of a call estimated (``engine.estimates.estimated_seconds``) at many times
        this go to the workers in blocks of about this long, down to one tree a block, the
        costliest first: a block's hand-over costs 10-20 ms, and with two blocks a worker one
        worker of two drew 57% of the estimated work of XGBoost of depth 12 on 10,000 rows.
        Benchmark: ``benchmarks/jobs.py xgb-12-10k``.
    heap_threshold_bytes : int
        The mmap threshold a call raises glibc's ``malloc`` to, as freeing a block of that size
        does (``engine.allocator``; at most 32 MiB, past which glibc does not follow): temporaries
        below it come from the heap and stay mapped from one block of rows to the next.  At the
        threshold's start of 128 KiB, a process that had freed no large block (one that loads a
        saved model) took a page fault per 4 KiB of every row block's temporaries: 430,000-610,000
        faults and 1.10-1.31x the CPU time of a call of per-row shares of issue 58's workloads.
        16 MiB is above every row block's temporary (``block_elements``: 4 MB); the heap then keeps
        at most twice that free at its top.  Benchmark: ``benchmarks/allocator.py``.
    worker_plan_bytes : int
        Bytes of compiled plans a worker process keeps between calls (``engine.worker_plans``; at
        most an eighth of the budget too).  joblib's process pool restarts a worker whose memory
        grows 300 MB past its size after its first task, with a warning, and the plans go with it:
        at 256 MB that happened on a depth-8 forest on 10,000 rows.  96 MB holds the plans of the
        forests and boosters of depth 6-8 with 100-300 trees on 1,000 rows (49-80 MB).
        Benchmark: ``benchmarks/threads.py`` and ``benchmarks/local.py --jobs 2``.
    kept_plan_bytes : int
        Bytes of compiled plans an explainer keeps for its next call (at most an eighth of the
        budget too); trees past it are compiled again on each call.  256 MB holds every plan of
        forests and boosters of depth 6-8 with 100-300 trees (49-80 MB on 1,000 rows); XGBoost of
        depth 12 on 10,000 rows takes 40-140 MB a tree, so a few hundred such trees would
        otherwise hold tens of GB between calls.  The trees' interaction plans (about 6 MB each
        at depth 12) are bounded by the same amount, apart.
        Benchmark: ``benchmarks/local.py`` and ``benchmarks/deep.py`` (plan sizes of their workloads).
    selector_block_entries : int
        Largest number of per-row contributions the selector holds at once (32 MB): memory
        against the selector's passes over the rows.
        A memory bound, not timed (no benchmark).
    pair_min_work : float
        Trees whose estimated LCA work (``kernels.lca.unit.lca_work``, items x quadrature nodes)
        is lower never consider the per-pair kernel: their plans stay as they are, and their
        per-node costs (1-10 ms a tree) are not computed.  Complete trees of depth 8 estimate
        49k, depth-10 forests and 255-leaf LightGBM trees 10^5-10^6.
        Benchmark: ``benchmarks/deep.py`` (depth sweep).
    leaf_wise_share : float
        A tree at least this share of whose splits have a leaf child (LightGBM's leaf-wise trees:
        0.63-0.83; balanced XGBoost trees and forests of depth 6-10: 0.52-0.61) and that stays
        below ``pair_min_work`` has its LCA items counted node by node for the time estimate and
        the blocks' weights (0.4-0.6 ms a tree, once per explainer; routing does not read the
        count).  ``lca_work`` prices a leaf by the cube of its depth, as if the features coupling
        its pairs grew with it; a split with a leaf child couples none, and on LightGBM's trees of
        31-255 leaves it counted 2.4-2.5x the compiled plans' items (their estimate 2.3-2.4x the
        time on one machine).  Not tuned beyond separating the two shapes.
        Benchmark: ``benchmarks/estimate_accuracy.py --units deep:lgbm-127``.
    pair_cost : float
        Time of one leaf pair x quadrature node (``kernels.lca.pairs``) relative to one LCA item x
        quadrature node, per row pattern: a node takes the pairs when ``pair_cost x pairs x
        ceil(width / 2)`` is below its items x the tree's quadrature nodes.  Measured 2.9 on a
        fully grown tree (500 leaves, 500 rows: all LCA 11.8 s, all pairs 13.3 s, per unit of each
        cost, on a loaded machine) once a pair's product came from one matrix product of its bits
        with the factors' logarithms; 9.7 with prefix and suffix products, 2 before the LCA slopes
        came from the log-derivative.  In the mix the optimum is flat: that tree took 4.7-4.8 s at 5,
        4.9-5.0 at 3 and 5.1-5.5 at 10; XGBoost of depth 12 on 2,000 rows 23.3 s at 10, 24-25 s at
        3 and 5 (one core, quiet).  Since the pairs' products come from batched matrix products
        (measured at 3.9e-10 s a pair x feature x node and row pattern, against 4e-9 to 1e-8 an
        LCA item x node in the same fully grown trees), 2 (CPU s, alternating, one core, 2026-12-06):
        ``RandomForestRegressor()`` at its defaults, 2 trees on 1,000 rows of 20 features, 32 s
        against 61 s at 5 (29 s at 1), per-row shares of 100 of its rows 5.8 s against 7.4-9.5 s; a
        fully grown tree on 500 rows 6.0-6.9 s against 7.1-8.2 s (4.3-4.5 s at 1); depth-10 and
        depth-12 forests on 2,000 rows unchanged; XGBoost of depth 12 on 10,000 rows (trees 4-5)
        44.0 s against 42.3 s, and 51.7 s at 1: with many rows the LCA items' tables serve many
        rows each and the pairs' work does not shrink, so lower values lose there.
        Benchmark: ``benchmarks/ab_pairs.py`` and ``benchmarks/deep.py`` (``tree-full-500``, ``xgb-12``);
        ``benchmarks/ab_tuning.py xgb-12-10k pair_cost 2 5 --trees 4 6``.
    local_pair_discount : float
        ``pair_cost`` is multiplied by this for per-row values: there an LCA item costs more per
        row (each row takes its own slopes, the per-row section of ``docs/benchmarks.md``), a pair
        about the same.  Per-row shares of two fully grown forest trees (1,260 leaves) on 100 rows,
        CPU time: 92-95 s at a ``pair_cost`` of 5, 71-75 s at 3, 59-65 s at 2, 64-72 s all pairs
        and 334-343 s all LCA items; depth-10 forests and depth-12 XGBoost on 1,000 rows moved
        within noise between 2, 3 and 5 (7.2-8.8 s and 9.6-11.3 s), as did a fully grown tree of
        500 leaves on 500 rows (20-23 s at a discount of 1 and of 0.4) and a depth-10 forest of 20
        trees on 2,000 rows (78 s at 1, 73 s at 0.4): the gain is on large trees and few rows,
        ``estimate_rsq``'s samples.
        Benchmark: ``benchmarks/ab_pairs.py`` and ``benchmarks/deep.py`` (fully grown trees,
        ``rf-10``, ``xgb-12``), per-row shares.
    pair_rows : int
        Rows of a call from which ``pair_cost`` holds; for global values on ``n`` fewer rows a node
        compares its pairs at ``pair_cost x n / pair_rows``, at least :attr:`pair_cost_floor`
        (per-row values keep ``local_pair_discount``: ``engine.routing.pair_cost``).  An LCA item's
        table entries serve the rows whose codes agree on its view, so with few rows each item's
        tables, blocks and chunks are paid for about one row each; a leaf pair is paid per row
        pattern at any ``n``.  Global ``rsq`` of one fully grown tree of
        ``RandomForestRegressor()`` (1,000 rows of 20 features), CPU s at ``pair_cost`` 2 / 1 /
        0.5 / every node on the pairs: 4.92 / 3.23 / 2.24 / 2.20 on 100 rows, 8.01 / 5.77 / 4.25 /
        4.45 on 250, 10.41 / 8.33 / 7.92 / 7.94 on 500, 16.48 / 14.39 / - / 16.53 on 1,000.  More
        rows than ``pair_rows`` keep ``pair_cost``: the tables of wide leaf codes are not shared
        even then (the same tree on 4,000 and 8,000 new rows took 52 and 97 s at 2, 57 and 106 s
        at 5), though XGBoost of depth 12 on 10,000 rows took 4% less at 5.
        Benchmark: ``benchmarks/pair_rows.py rsq`` and ``benchmarks/ab_tuning.py xgb-12-10k
        pair_cost``.
    pair_cost_floor : float
        The least ``pair_cost`` that :attr:`pair_rows` scales it to: below 0.5 the fully grown
        tree above gained nothing (every node on the pairs tied 0.5 on 100-500 rows).
        Benchmark: ``benchmarks/pair_rows.py rsq``.
    pair_min_pairs : int
        Nodes with fewer leaf pairs keep their LCA items whatever the costs: near the leaves
        (one or two leaves a side) moving them saves nothing, and a tree with pair nodes sizes
        its LCA blocks as dense (``lca_dense_global_bytes``).  At 1, 8 of 20 XGBoost depth-12
        trees had such nodes only.
        Benchmark: ``benchmarks/deep.py xgb-12``.
    union_pairs : int
        Per split, the most distinct pairs of its two sides' leaf feature sets counted to find
        the widest pair's features exactly (``kernels.leaf_paths.widest_unions``): each feature
        fewer saves half a quadrature node on every item of the split when it lowers the rule.
        Past it the split keeps the bound of its widest leaves (exact too, on more nodes).  At
        2^20 pairs a split counts in about 20 ms; the splits of the depth-12 XGBoost trees and
        of a fully grown tree on 2,000 rows count at most a few thousand.
        Benchmark: ``benchmarks/deep.py`` (compile times, ``xgb-12``, ``tree-full``).
    max_lca_items : int
        Most estimated LCA items one plan holds (:attr:`plan_item_cap`): a tree with more is
        compiled as several plans, one after the other (``kernels.lca.hybrid``), and a node with
        more alone takes the pairs, which need no plan.  The memory budget lowers it further
        (``lca_item_bytes``), and is what binds at the default budget.  Moving whole nodes to the
        pairs instead cost up to 15x the tree's time: an XGBoost tree of depth 12 on 10,000
        rows (437k estimated items, 4% over the cap) sent its root to the pairs and took 904 s,
        against 59 s in pieces.
        Benchmark: ``benchmarks/deep.py xgb-12-10k``.
    memory_budget : int
        Bytes of working memory a call may use (set by ``RSquaredExplainer(memory_budget=)``).
        An LCA kernel call sizes its blocks of patterns to a quarter of it; compiling a plan
        takes at most a quarter of it (:attr:`plan_item_cap`); worker processes are capped so
        that their kernels fit (their blocks of patterns cut to a share of it first,
        ``engine.budget.fit_jobs``); and a call whose per-row arrays alone exceed half of it is
        refused before it starts.
        The user's setting, not tuned; ``benchmarks/jobs.py`` takes it as an argument.
    lca_global_bytes : float
        Peak bytes per (pattern, item) pair of one LCA kernel call for global values, beside
        ``lca_leaf_bytes`` per (pattern, leaf).  Only a block of rows' entries is ever held per
        item (``block_elements``), so a call's peak grows with its leaves, not its items: measured
        with ``tracemalloc`` on 10,000 distinct patterns in one call, 394 MiB on the largest tree
        of XGBoost depth 12 (178,505 items, 875 leaves), 217 MiB on a depth-10 forest's (39,293
        items, 503 leaves) and 109 MiB on LightGBM's with 255 leaves (11,204 items), 45-47 bytes
        per (pattern, leaf) all told, 0.04-0.11 per (pattern, item) beyond 40 a leaf.  The 4
        charged before (measured 1.1-1.4 while a block held every row's entries) cut that
        XGBoost tree into 14 calls, each tabulating the items again: 2.2x its time in one call.
        Benchmark: ``benchmarks/ab_blocks.py`` (time); the bytes with ``tracemalloc`` by hand.
    lca_local_bytes : float
        ... for per-row values (the ``(n, p)`` outputs are counted apart).  Measured with
        ``tracemalloc`` on 10,000 distinct patterns in one call: 105 MiB on a depth-10 forest's
        tree (49,353 elements a pattern, 503 leaves), 49-54 MiB on LightGBM's with 255 leaves,
        142 and 235 MiB on XGBoost depth-12 trees (86,685 and 214,022 elements, 723 and 863
        leaves): 20-29 bytes per (pattern, leaf) all told, below ``lca_leaf_bytes`` alone.  The
        0.4-1.2 measured while a block held every row's entries, and the 4 charged then, cut those
        XGBoost trees into 8-17 calls.  Per-row shares of a depth-10 forest on 10,000 rows ran 1.2x
        faster in one or two calls a tree, XGBoost's within noise (CPU time, alternating).
        Benchmark: ``benchmarks/ab_blocks.py --per-row`` (time); the bytes with ``tracemalloc`` by hand.
    lca_dense_global_bytes : int
        ... for trees with pair nodes (``kernels.lca.hybrid``) whose leaf codes are wider than
        ``shared_code_bits``: 3.2 measured on a fully grown tree, whose cells of every view its
        rows rarely share (1.3-1.4 per (pattern, item) beyond 40 per (pattern, leaf), or 4.5-11
        per (pattern, view), on 2,000 patterns since blocks of rows hold the entries).
        Measured with ``tracemalloc`` by hand (no script); ``benchmarks/deep.py tree-full`` runs it.
    lca_dense_local_bytes : int
        ... for their per-row values (1.2 measured).
        Measured with ``tracemalloc`` by hand (no script).
    shared_code_bits : int
        Widest leaf code (distinct features on a path) whose values the patterns of a block
        share: at most 2^12 of them against blocks of thousands of patterns, so a tree with pair
        nodes and such codes is charged like any tree (``lca_global_bytes``).  The first piece of
        an XGBoost depth-12 tree with a pair node (232,720 items, 863 leaves, codes of up to 12
        bits) took 398 MiB on 10,000 patterns in one call, 0.03 bytes per (pattern, item) beyond
        40 per (pattern, leaf), and ran in 18 calls at ``lca_dense_global_bytes``.
        Measured with ``tracemalloc`` by hand (no script) on ``benchmarks/deep.py xgb-12-10k``'s trees.
    lca_leaf_bytes : int
        ... per (pattern, leaf): the leaf codes of a block of patterns and their cells in every
        view (``kernels.batching.cells``), 35 measured with ``tracemalloc`` on a deep tree compiled in
        pieces of 3,000-4,000 items with 434 leaves, and 45-47 all told on whole plans of
        XGBoost depth 12, depth-10 forests and LightGBM (see ``lca_global_bytes``).
        Measured with ``tracemalloc`` by hand (no script) on ``benchmarks/deep.py``'s trees.
    lca_item_bytes : int
        Bytes per *estimated* item (``kernels.lca.pairs.node_costs`` counts 1.5-3x the compiled
        items) while a plan is compiled: 1,190-1,260 measured with ``tracemalloc`` (XGBoost depth
        12, a depth-12 forest, a fully grown tree), of which the plan keeps 270-310.  The budget's
        quarter divided by it caps ``max_lca_items``.
        Measured with ``tracemalloc`` by hand (no script) on ``benchmarks/deep.py``'s trees.
    lca_kept_item_bytes : int
        ... of which the compiled plan keeps: what a unit holds while its blocks of patterns run
        (``engine.budget.unit_bytes``).  270-310 measured on whole plans, about 420 on the
        pieces of a deep tree (26,000 estimated items each, 434 leaves).
        Measured with ``tracemalloc`` by hand (no script).
    lca_path_bytes : int
        ... per (leaf, depth) entry of the whole tree, which every piece of a tree compiled in
        pieces holds (arrays over its paths): 330 measured while compiling the pieces of a deep
        tree with 434 leaves and 11,284 entries (3,000-4,000 items each), a quarter of it kept.
        Measured with ``tracemalloc`` by hand (no script).
    cache_line_bytes : int
        Bytes the memory moves at once (64 on x86-64 and most ARM cores): the rows are laid out
        column by column before routing where each tree's gather of its split columns from rows
        laid out row by row (a line per column read, up to the whole row) would move more lines
        than the copy and the gathers from columns (``engine.budget.columns_first``).  On 400,000
        rows of 50 columns read by 60 depth-4 trees (4.4 columns a tree), 1.46x less time.
        Benchmark: ``benchmarks/ab_functions.py HEAD~1 rows:xgb-d4-400k --swap
        shap_rsq.engine.budget:routing_rows`` (at the commit that made the copy).
    column_copy_lines : float
        Cache lines the copy column by column costs per line of ``X``: it reads each line, and
        writes a fresh array whose lines are read before they are written and whose pages are
        touched for the first time, where the trees' gathers from rows read lines a cache may
        still hold.  At 2 (a read and a write), 600 rows of 20,000 columns read by 1,000 depth-3
        trees (6 columns a tree, the trees' gathers 1.04x the copy's lines) were copied, 0.28 s of
        a 0.45 s first call.
        Benchmark: ``benchmarks/ab_tuning.py scale:wide column_copy_lines 2 4``.
    estimate_lca_seconds, estimate_lca_local_seconds, estimate_junction_split_seconds, \
    estimate_junction_pattern_seconds, estimate_junction_local_seconds, estimate_dense_seconds, \
    estimate_wide_item_seconds, estimate_pair_seconds, estimate_tree_seconds, \
    estimate_compile_seconds, estimate_split_row_seconds, estimate_table_seconds : float
        The up-front time estimate of a call (``engine.estimates.unit_seconds``), in CPU seconds of
        one core per unit of each kernel's work: LCA items x quadrature nodes per row pattern, for
        global and per-row values (measured on XGBoost of depth 6-8 and forests of depth 6-10); per
        split of a tree the conditioned recursion may take, its NumPy calls in both passes whatever
        the rows and its arrays per row pattern (fitted to each such tree's time on four workloads:
        LightGBM with 31 leaves on 1,000 rows, 0.41 ms a split, and on the 53,940 diamonds, 1.23 ms
        on 4,048 patterns a tree, LightGBM with 63 leaves on 2,000 rows, and a default forest on
        300 rows, 0.23 ms; the tree's splits and patterns set its time, not its depth), and per
        pattern for per-row values, whose reverse pass runs on the rows (1.12 ms a split on the
        first of those, 0.35 ms on the forest); items
        whose cells are not shared (the dense rate, reached by degrees as a tree's codes take more
        values than there are patterns), the items of trees whose codes are wider than
        ``shared_code_bits`` once whatever the rows (their tables: 0.11-0.19 CPU s a tree of a
        default forest on 300 rows and 10,000 features, 2.2 s for 20 such trees on 100 rows and
        2.9 s on 300; 0.16 s a fully grown tree on 500 rows) and leaf pairs x features x
        quadrature nodes per pattern of trees with pair nodes (a fully grown tree on 500 rows); a
        tree's own passes of NumPy calls,
        per tree and call whatever its size (most of the time of small trees: depth-4 XGBoost);
        compiling a plan per item x quadrature node, first call only (XGBoost of depth 8); routing
        a row through a split, the tables of small trees (the paper's boosters, CatBoost).
        Calibrated on 2026-12-06, on
        a loaded machine, each against the CPU time of the kind of unit it prices; the two LCA
        rates again at 09:15 UTC on the quiet machine, after the kernels of that day were merged
        (global 1.03-1.93x over, per row 1.5x: 3.5e-9 and 5.5e-9 before); the leaf pairs' rate
        again at 16:30 UTC on the quiet machine, timing ``pair_values`` alone in eight fully grown
        trees of 300-1,000 rows (3.7e-10 to 4.3e-10; 1.2e-9 before, 2.8x over on
        ``RandomForestRegressor()`` on 1,000 rows of 20 features); to calibrate again after a kernel
        changes, multiply a kind's constant by its measured / estimated.  Those were measured on
        Xeons.  On an AMD EPYC (2026-12-07) three rates moved to values between the two machines:
        the leaf pairs' from 4e-10 to 7.5e-10 (``pair_values`` timed alone ran at 9.1e-10 to 9.8e-10
        here, after each pair node's quadrature rule came from its widest leaf pair and the count
        of nodes fell while the pass-bit products did not: fully grown trees were estimated at
        0.44-0.45 of their time), the global LCA rate from 3.0e-9 to 3.3e-9 (0.52-0.85 here on
        XGBoost and forests, 1.28 on LightGBM's 255 leaves, whose items ``lca_work`` counts high)
        and the recursion's share from 0.3 to 0.2 beside its new cost per split (1.45x over here on
        LightGBM before, 1.22 on the Xeon before the recursion's later speed-ups).  On a Xeon with a
        480 MiB L3 (2026-12-07) the pairs ran at 1.9-1.95x their estimate (a fully grown tree on
        500 rows), against 0.72 on the AMD EPYC: their rate moved to the two machines' geometric
        mean, 6.4e-10: estimates of about 1.6 of the time taken on the Xeon and 0.6 on the EPYC.
        Benchmark: ``benchmarks/estimate_accuracy.py --units`` (its table in docs/benchmarks.md).
    estimate_observed_seconds, estimate_observed_tree_seconds, estimate_observed_unit_seconds, \
    estimate_observed_local_seconds, estimate_small_local_seconds, estimate_local_table_seconds, \
    estimate_tree_row_seconds, estimate_call_seconds, estimate_input_element_seconds : float
        The same estimate's small trees (``engine.estimates._small_seconds``) and a call's own
        costs, in CPU seconds: the root of a depth-4 batch run on the patterns that occur, per tree
        and pattern, per tree, and per unit (its passes' NumPy calls take a group of trees at once),
        and for per-row values per tree; a small tree's per-row gather per row and player (the
        values of a tree's few features go to their columns), and its values on every pattern of
        its cube tabulated on the first per-row call, per tree and pattern; its predictions and
        row weights per row; a call's checks, once and per input value.  Fitted (least squares
        on relative error) to each unit's CPU time in fresh explainers, global and per-row values
        on 250 and 1,000-10,000 rows of 13 workloads (the paper's boosters, depth 1-4 XGBoost and
        forests, CatBoost, 20,000 columns) on the Xeon with a 480 MiB L3 (2026-12-07), times 1.3:
        the AMD EPYC ran these NumPy calls 1.4-2.3x slower (2 ms a depth-4 tree on 100 rows there,
        1.2 ms here), and 1.3 is between the two.  Per-row values of small trees were priced per
        row and tree at 1.5e-6 s before, 17-65x their time on boosters of depth 1-3 (measured
        there 5e-9 to 3e-8 s per row and player).
        Benchmark: ``benchmarks/estimate_accuracy.py --units`` (its table in docs/benchmarks.md).
    estimate_subset_seconds, estimate_subset_local_seconds, estimate_subset_pass_seconds, \
    estimate_subset_unit_seconds, estimate_subset_row_seconds : float
        The same estimate's trees on every subset (``engine.estimates._subset_seconds``), in CPU
        seconds: per table element and pattern (global and per-row values), per split and block of
        patterns (the pass's NumPy calls), per tree, and for per-row values per row and player.
        Fitted (least squares on relative error) to each unit's CPU time on 2026-12-08, after the
        tables were laid out subsets first: LightGBM on the 53,940 diamonds (244 trees, and
        per-row values of 5,000 rows), a fully grown tree and a forest of 30 on 2,000 rows of 10
        features (global, and per-row values of 1,000 rows): 1.9e-9 and 2.2e-9 s an element, 6e-6
        a split and block, 1.2e-4 to 2.7e-4 a tree, 9e-9 a row and player, each within 0.7-1.2 of
        its unit's time; times 1.3 like the small trees'.  They were priced through the LCA rate
        and ``subset_element_cost`` before, 2.7-3.1x their time once the tables were laid out
        subsets first.
        Benchmark: ``benchmarks/estimate_accuracy.py --units`` (its table in docs/benchmarks.md).
    estimate_sample_rows, estimate_sample_elements : int
        Rows drawn (a fixed seed) to count each tree's distinct split patterns for the estimate
        (``engine.estimates.pattern_counts``), and elements of one block of their decisions: 512
        rows through LightGBM's 300 trees of 31 leaves take 0.16 CPU s (the diamonds), against a
        call of 14 s; the count is only taken for calls whose bound (every row its own pattern)
        passes ``progress_seconds``.  A bound on the estimate's cost, not tuned.
    estimate_max_sample_rows, estimate_extrapolation : int
        On more rows, the draw is an ``estimate_extrapolation``-th of them up to
        ``estimate_max_sample_rows``.  On 512 of 400,000 rows every depth-6 tree's patterns were one
        a row, and extrapolated to 330,000-400,000 where the rows held 110,000-220,000 (the call
        estimated at 2.4x its time); 4,096 rows see the growth bend (220,000-330,000).  Counting
        4,096 rows costs 8x 512 (about 1.5 s on 300 depth-8 trees, on calls of minutes); a model of
        the patterns' frequencies (Chao's estimate of the patterns not drawn) put them at 0.1-0.3 of
        their number: rare patterns are many.
    estimate_first_rows : int
        The first of those drawn rows counted first: a tree on which each of them takes a pattern
        of its own is taken at one pattern a row (what the whole sample extrapolates to when it
        keeps taking one a row), and only the other trees are counted on the whole sample.  300
        depth-8 XGBoost trees on continuous features: 0.14-0.2 CPU s counted on 512 rows,
        0.05-0.06 s with the first 128.  A tree of ``P`` equally likely patterns takes one a row on all of
        them with probability about ``exp(-rows^2 / 2P)``: under 1e-3 for ``P`` = 1,000, so
        saturating trees still go on to the whole sample.  Not tuned.
    progress_seconds : float
        ``progress="auto"`` (the default) shows a progress bar for calls estimated at this many
        seconds or more on one core, as tqdm-style libraries do for calls of more than a few
        seconds; the bar's label gives the estimate from here on.
        Benchmark: ``benchmarks/estimate_accuracy.py`` (the estimate is within 2x).
    estimate_jobs_overhead : float
        A call whose blocks of trees go to ``k`` worker processes is estimated at its time on one
        core over ``k``, times one plus this: hand-over and blocks of unequal cost.
        Benchmark: ``benchmarks/estimate_accuracy.py --jobs 2``.
    late_bar_seconds : float
        A call below ``progress_seconds`` with ``progress="auto"`` opens its bar part-way when,
        after this many seconds, the trees done project its total past ``progress_seconds``: the
        estimate is within 2x, and a call it puts at 6 s that takes 20 s still shows a bar.
        Not timed: short beside ``progress_seconds``, long enough for a few trees to count.
    long_call_seconds : float
        A call estimated at this many seconds or more on one core warns first
        (:class:`~shap_rsq.LongCallWarning`, with what shortens it) unless ``progress=True`` was
        asked for: a forest of 100 fully grown trees on 3,000 rows is estimated at an hour.
        Benchmark: ``benchmarks/estimate_accuracy.py`` and ``benchmarks/estimate.py time``.
    projection_seconds : float
        Interaction shares, which have no up-front estimate, project their total from the trees
        done once they have run this long (``engine.estimates.Projection``): long enough for a
        few trees to count, short beside the hours a forest of fully grown trees takes.
        Benchmark: ``benchmarks/interactions.py``.
    interaction_code_bits : int
        Widest entry of the interaction kernel (``kernels.interactions.indices``) whose rows are merged by
        their pass bits (an ``int64`` key of code x entry): wider entries, which only trees deeper
        than 20 have, are evaluated row by row.
        A bound of the ``int64`` keys, not timed; ``benchmarks/interactions.py`` runs it.
    interaction_table_codes : int
        The entries' distinct codes on a block of rows are found through a presence table of every
        code (one byte each, and a rank of four) while it has at most this many slots per
        (row, entry) key, otherwise by sorting the keys: 7% less time for the interaction matrix of
        forests of depth 8 on 100 features than with at most 1 slot a key (5.5 s against 5.9-6.0 s,
        CPU, alternating), none measurable on 20 features.  Benchmark: ``benchmarks/interactions.py --only sweep
        --depths 8 --features 20 100``.
    interaction_entry_bytes, interaction_player_bytes : int
        Compiling a tree's interaction plan peaks at ``entry + player x (K + 1)`` bytes an entry
        (one per pair of leaves and two per leaf) for a tree on ``K`` players: 144, 201, 232, 369
        and 638 measured with ``tracemalloc`` at ``K`` = 3, 6, 8, 20 and 40 (fully grown and
        depth-8 to 10 trees), against 168, 210, 238, 406 and 686 here.
        Measured with ``tracemalloc`` by hand (no script); ``benchmarks/interactions.py`` (wide run) checks the peak.
    interaction_subset_players, interaction_subset_cost, interaction_subset_row_cost : int, float, float
        Trees on at most ``interaction_subset_players`` players take their interaction indices
        from their game on every subset (``kernels.interactions.subsets``) when it costs less than
        their leaf pairs' products (``W (W - 1) / 2`` x ``ceil((W - 1) / 2)`` an entry, ``W`` the
        players of its two paths; ``engine.routing.takes_subsets``): a table element
        (``sum_u 2^{s_u}`` a row, ``s_u`` the players of split ``u``'s subtree) costs
        ``interaction_subset_cost`` products, and for per-row indices each of the ``2^K x K (K + 1)
        / 2`` weights that map a row's game to its indices (one matrix product)
        ``interaction_subset_row_cost``.  Measured on one core (one BLAS thread), 300 rows:
        XGBoost depth 4 on 100 features (60 trees, 5-15 players) 0.60 s on subsets against 0.25 s
        on pairs at 1.4x the subsets' estimate; forests of 10 trees on 14 features, depth 6 and 8:
        0.32 s and 1.31 s against 0.48 s and 3.41 s (per row 0.80 s and 2.93 s against 0.62 s and
        4.22 s), which put an element at 1.8-2.2 products and a weight at 0.022.  14 players
        keep the weights on every subset at 13 MB.
        Benchmark: ``benchmarks/interactions.py`` (and ``--kernel`` to force either).
    subset_players, subset_element_cost, subset_local_element_cost, subset_table_bytes : int, float, float, int
        Trees on at most ``subset_players`` players whose LCA kernel would cost more (``lca_work``
        per pattern, items x quadrature nodes) than ``subset_element_cost`` x their subset-table
        elements (``sum_u 2^{s_u}``; ``subset_local_element_cost`` for per-row values) take their
        R² Shapley values from their game on every subset (``kernels.interactions.subset_values``;
        ``engine.routing.takes_subset_values``): deep and fully grown trees on few features, whose
        LCA items grow with leaves x depth squared.  Measured on 4 RandomForest trees on 10
        features, 2,000 rows (CPU seconds, machine loaded 6x): an element cost 5.7, 5.1, 2.9 and
        1.3 LCA units at depth 6, 8, 10 and 12 for global values (4.4, 2.6, 1.5, 0.7 per row;
        small tables pay NumPy's per-call overhead), so depth 10 was about even, depth 12 and
        fully grown trees took the subsets.  Once the tables were laid out subsets first and
        blocked in cache (2026-12-08), every tree each kernel could take was timed on both
        (``kernel="enumerate"`` against the default; LightGBM on the diamonds, forests of depth
        6-12, XGBoost of depth 6-10 and LightGBM of 63 leaves on 2,000 rows of 10 features): of
        131 trees the default sent to the LCA kernel or the recursion at lca_work 1.05-3.0 times
        their elements, the subsets ran them in 6.1 CPU s against 9.6 (rf-10 2.3x, XGBoost depth 8
        1.5x, the diamonds 1.3x; LightGBM of 63 leaves 1.06x slower), best with the cost at 1.5;
        per-row values of 13 trees at 1.05-1.5, 0.26 s against 0.34, best at 1.0 (3.0 and 1.5
        before).  12 players keep a pattern's tables at most 32 KiB a
        node; ``subset_table_bytes`` per table element bounds a block of patterns (the tables alive
        at once and their gathers).
    subset_block_elements : int
        Float64 elements of the subset tables one block of patterns holds at once (1 MB: the
        live tables of a block stay in a core's L2 cache while every split of the pass reads and
        writes them).  On LightGBM's trees of 9 players (the 53,940 diamonds, 514 live elements a
        pattern) blocks of 2^17 took 1.33x less time than all 1,200 patterns at once, 2^16 1.16x
        and 2^18 1.28x.
        Benchmark: ``benchmarks/ab_functions.py HEAD diamonds-lgbm``.
        Benchmark: ``benchmarks/deep.py tree-full-p10 rf-full-p10`` (``--kernel lca`` for the LCA path).
    interaction_merge_entries : int
        Pending ``(row, column, value)`` triplets of the global interaction indices merged into their
        sparse sum past this (``engine.interactions``): fewer merges against 24 bytes a triplet
        held (96 MB).
        Benchmark: ``benchmarks/interactions.py`` (wide data).
    batch_fixed_bytes : int
        Bytes a batch of small trees holds whatever its size (its small arrays and index tables),
        charged by ``engine.budget.unit_bytes`` beside what grows with its trees and rows: 20-90 KiB
        measured, 256 KiB charged.
        Measured with ``tracemalloc`` by hand (no script).
    complement_tolerance : float
        How far a binary forest classifier's two class probabilities may add up from 1, leaf by
        leaf and in all, for class 0's games to be played as class 1's
        (``engine.outputs.complementary_classes``): a few roundings of scikit-learn's leaf
        fractions; a model whose probabilities are not complements misses it by far more.
"""

    heap_depth: int = 3
    observed_depth: int = 4
    recursion_cost: int = 5
    oblivious_size: int = 16
    max_repeated: int = 3
    junction_repeated: int = 8
    junction_share: float = 0.05
    junction_local_share: float = 0.15
    junction_elements: int = 1 << 22
    junction_whole_rows: float = 0.75
    patterns_per_leaf: int = 8
    batch_trees: int = 256
    batch_patterns: int = 1 << 20
    chunk_elements: int = 1 << 22
    min_chunk_rows: int = 256
    pattern_elements: int = 1 << 31
    block_elements: int = 1 << 19
    side_block_elements: int = 1 << 17
    chunk_cells: int = 1 << 13
    dense_slots: int = 1 << 22
    tabulate_cells: int = 1 << 17
    mixed_cells: int = 1 << 14
    join_single_work: int = 1 << 13
    level_work: float = 3e5
    dense_ratio: float = 0.3
    max_dense_width: int = 16
    root_elements: int = 1 << 21
    local_columns_per_player: int = 8
    route_elements: int = 1 << 16
    offset_block_elements: int = 1 << 20
    parallel_work: float = 1e8
    blocks_per_job: int = 2
    block_seconds: float = 1.0
    heap_threshold_bytes: int = 16 << 20
    worker_plan_bytes: int = 96 << 20
    kept_plan_bytes: int = 256 << 20
    selector_block_entries: int = 1 << 22
    pair_min_work: float = 65536.0
    leaf_wise_share: float = 0.65
    pair_cost: float = 2.0
    local_pair_discount: float = 0.4
    pair_rows: int = 2000
    pair_cost_floor: float = 0.5
    pair_min_pairs: int = 16
    union_pairs: int = 1 << 20
    max_lca_items: int = 1 << 20
    memory_budget: int = 2 << 30
    lca_global_bytes: float = 0.5
    lca_local_bytes: float = 0.5
    lca_dense_global_bytes: int = 4
    lca_dense_local_bytes: int = 4
    shared_code_bits: int = 12
    lca_leaf_bytes: int = 48
    lca_item_bytes: int = 1280
    lca_kept_item_bytes: int = 480
    lca_path_bytes: int = 360
    cache_line_bytes: int = 64
    column_copy_lines: float = 4.0
    estimate_lca_seconds: float = 3.3e-9
    estimate_lca_local_seconds: float = 4.6e-9
    estimate_junction_split_seconds: float = 1.6e-4
    estimate_junction_pattern_seconds: float = 1.86e-7
    estimate_junction_local_seconds: float = 8e-7
    estimate_dense_seconds: float = 7e-9
    estimate_wide_item_seconds: float = 8e-6
    estimate_pair_seconds: float = 6.4e-10
    estimate_tree_seconds: float = 3e-3
    estimate_compile_seconds: float = 7e-8
    estimate_split_row_seconds: float = 4e-9
    estimate_table_seconds: float = 1e-6
    estimate_observed_seconds: float = 2.5e-6
    estimate_observed_tree_seconds: float = 6.5e-4
    estimate_observed_unit_seconds: float = 1.1e-3
    estimate_observed_local_seconds: float = 4e-4
    estimate_small_local_seconds: float = 2.5e-8
    estimate_local_table_seconds: float = 2.5e-6
    estimate_call_seconds: float = 5e-3
    estimate_input_element_seconds: float = 3.5e-9
    estimate_tree_row_seconds: float = 1.4e-8
    estimate_subset_seconds: float = 2.5e-9
    estimate_subset_local_seconds: float = 2.8e-9
    estimate_subset_pass_seconds: float = 8e-6
    estimate_subset_unit_seconds: float = 3e-4
    estimate_subset_row_seconds: float = 1.2e-8
    estimate_sample_rows: int = 512
    estimate_max_sample_rows: int = 4096
    estimate_extrapolation: int = 8
    estimate_sample_elements: int = 1 << 22
    estimate_first_rows: int = 128
    estimate_jobs_overhead: float = 0.15
    progress_seconds: float = 10.0
    late_bar_seconds: float = 2.0
    long_call_seconds: float = 120.0
    projection_seconds: float = 10.0
    interaction_code_bits: int = 40
    interaction_table_codes: int = 64
    interaction_entry_bytes: int = 112
    interaction_player_bytes: int = 14
    interaction_subset_players: int = 14
    interaction_subset_cost: float = 2.0
    interaction_subset_row_cost: float = 0.022
    subset_players: int = 12
    subset_element_cost: float = 1.5
    subset_local_element_cost: float = 1.0
    subset_table_bytes: int = 32
    subset_block_elements: int = 1 << 17
    interaction_merge_entries: int = 1 << 22
    batch_fixed_bytes: int = 1 << 18
    complement_tolerance: float = 1e-12

    @property
    def kept_plan_limit(self) -> int:
        """Bytes of plans an explainer keeps between calls: ``kept_plan_bytes``, at most an
        eighth of the budget (for its LCA plans and, apart, its interaction plans)."""
        return min(self.kept_plan_bytes, self.memory_budget // 8)

    @property
    def worker_plan_limit(self) -> int:
        """Bytes of plans a worker process keeps between calls: ``worker_plan_bytes``, at most an
        eighth of the budget."""
        return min(self.worker_plan_bytes, self.memory_budget // 8)

    @property
    def junction_row_elements(self) -> int:
        """Floats one block of rows of the conditioned recursion's per-row reverse pass holds
        (``kernels.recursion.conditioned_rows``): a quarter of the budget."""
        return self.memory_budget // 32

    @property
    def chunk_elements_within(self) -> int:
        """``chunk_elements`` (rows x splits) for batches of shallow trees, within a quarter of
        the budget: a chunk holds up to 10 floats per row and tree (predictions, weights, pattern
        cells, per-row values), 80 bytes per element for trees of one split, so that a small
        budget takes fewer rows at a time instead of refusing them."""
        return max(1, min(self.chunk_elements, self.memory_budget // (4 * 80)))

    def pair_cost_at(self, n_rows: int | None) -> float:
        """``pair_cost`` on a call of ``n_rows`` rows: scaled down below :attr:`pair_rows`, to
        :attr:`pair_cost_floor` at least (``None``: ``pair_cost`` as it stands)."""
        if n_rows is None:
            return self.pair_cost
        return min(self.pair_cost, max(self.pair_cost_floor, self.pair_cost * n_rows / self.pair_rows))

    @property
    def block_elements_within(self) -> int:
        """``block_elements``, at most a 512th of the budget in float64 elements: a few such
        temporaries are alive at once beside the kernel's blocks of patterns (binds below 256 MiB;
        at 16 MiB a deep tree's fixed 4 MB temporaries alone passed the budget)."""
        return max(1, min(self.block_elements, self.memory_budget // 512))

    @property
    def side_block_elements_within(self) -> int:
        """``side_block_elements``, at most a 512th of the budget in float64 elements (as
        :attr:`block_elements_within`)."""
        return max(1, min(self.side_block_elements, self.memory_budget // 512))

    @property
    def routing_elements_within(self) -> int:
        """``chunk_elements`` (rows x path entries) for routing a tree's rows to their split
        patterns, within a sixteenth of the budget: about 2 bytes an element (binds below 64 MiB; a
        fully grown tree on 2,000 rows took 31 MiB for a floor of 256 rows, whatever the budget)."""
        return max(1, min(self.chunk_elements, self.memory_budget // 16))

    @property
    def interaction_bits_within(self) -> int:
        """``chunk_elements`` (rows x leaves x features) for the pass bits of the interaction
        kernel, within an eighth of the budget: a chunk and its routing temporaries peak at about
        1.5 bytes an element (5.8 MiB at the default on a depth-10 tree; binds below 32 MiB).  The
        kernel walks all its entries once per chunk, so smaller chunks cost time."""
        return max(1, min(self.chunk_elements, self.memory_budget // 8))

    @property
    def interaction_block_within(self) -> int:
        """``block_elements`` for the interaction kernel's blocks of entries and of codes, within a
        64th of the budget (binds below 32 MiB): its products hold three float arrays of a block at
        once (5.6 MiB at the default).  The kernel loops in Python per block: a 128th made per-row
        interactions of a depth-9 tree 1.8x slower at 16 MiB, and the LCA kernel's 512th
        (:attr:`block_elements_within`) made blocks of one entry.
        """
        return max(1, min(self.block_elements, self.memory_budget // 64))

    @property
    def dense_slots_within(self) -> int:
        """``dense_slots``, within a sixteenth of the budget at 9 bytes a slot (binds below 576 MiB)."""
        return max(1, min(self.dense_slots, self.memory_budget // (16 * 9)))

    @property
    def tabulate_cells_within(self) -> int:
        """``tabulate_cells``, at most a 2,048th of the budget: a chunk's value, slope and
        cotangent tables hold about 50 bytes per entry over its quadrature nodes (binds below
        256 MiB)."""
        return max(1, min(self.tabulate_cells, self.memory_budget // 2048))

    @property
    def root_elements_within(self) -> int:
        """``root_elements``, at most what a quarter of the budget holds for the root's arrays of
        the observed-pattern recursion (about 16 of them, float64)."""
        return max(1, min(self.root_elements, self.memory_budget // (4 * 16 * 8)))

    @property
    def plan_item_cap(self) -> int:
        """Most estimated items in one compiled LCA plan: ``max_lca_items``, or what a quarter of
        the memory budget holds while the plan compiles (``lca_item_bytes`` each)."""
        return min(self.max_lca_items, self.memory_budget // (4 * self.lca_item_bytes))


DEFAULT_TUNING = Tuning()
