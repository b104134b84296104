"""Subset enumeration: the Shapley formula itself, over the few players of small trees.

Identity.  For a tree on ``K`` players (the features it splits on), the Shapley value of the
game ``v(S) = w_quad m_S^2 + w_lin m_S`` is the weighted sum over subsets

    phi_j = sum_{S not containing j} |S|! (K - |S| - 1)! / K! (v(S + j) - v(S)),

with ``m_S`` the TreeSHAP conditional expectation (paper, Section 3.2, "Distributing the
prediction to leaves").  Players outside the tree are dummies of its game: by the paper's
Proposition 1 (``dimension_reduce``) the sum over all ``p`` features reduces to the tree's ``K``.

Cost.  ``2^K`` subsets x ``2^depth`` heap nodes per split pattern, in one bottom-up pass
(:func:`~.split_patterns.subset_values`); a tree of depth ``D`` in heap layout has at most
``2^(2^D - 1)`` split patterns, so shallow trees (depth <= ``Tuning.heap_depth``) are tabulated on
their whole cube once, row-independently, and rows only add their weights into it.  Symmetric
(CatBoost) trees have ``2^D`` patterns and are tabulated by the levels a subset knows:
``sum_d 2^d 4^(D - d)`` entries a tree.  Coupling does not matter here; the number of players does.

Modules:

- :mod:`.split_patterns`: the heap layout of a batch of trees (:class:`~.split_patterns.HeapBatch`),
  rows to their split patterns, ``m_S`` on every subset, the Shapley weights.
- :mod:`.small_trees`: the units of batched small trees (``HeapUnit``, ``ObliviousUnit``).  A
  ``HeapUnit`` evaluates each of its trees by enumeration or by the two-particle recursion of
  :mod:`~shap_rsq.kernels.recursion`, as ``engine.routing`` chose per tree.
"""
