"""Shapley interaction indices of one tree's game, two ways: leaf-pair products, or the game on
every subset of a tree's few players.

Identity.  The Shapley interaction index of players ``j != k`` is
``I_jk = sum_{S not j, k} |S|! (K - |S| - 2)! / (K - 1)! [v(S + jk) - v(S + j) - v(S + k) + v(S)]``
(Grabisch & Roubens 1999), equal to the integral along the diagonal of the mixed second derivative
of the game's multilinear extension (Owen 1972): ``I_jk = int_0^1 d^2 g / dq_j dq_k (q, ..., q) dq``.
:mod:`.indices` takes the integral: each term of the tree's game (a pair of leaves, a leaf with
itself, a leaf alone for the linear part) is a product of factors linear in their own coins, so its
mixed slope is ``s_j s_k prod_{m != j, k} F_m``.  :mod:`.subsets` takes the sum: ``m_S`` on every
subset of the tree's ``K`` players from one bottom-up pass, then ``v(S)`` and the sums above (with
the Shapley values beside them, which ``rsq_interactions`` then needs from no other kernel).

Cost, per distinct row pattern.  Leaf pairs (per code of an entry): ``L (L + 1) / 2`` pairs of
leaves plus ``L`` single leaves, each ``W (W - 1) / 2`` products x ``ceil((W - 1) / 2)`` quadrature
nodes, ``W`` the players on its two paths (at most ``2 D``); the work grows with the square of the
leaves.  Subsets: ``sum_u 2^{s_u}`` table elements, ``s_u`` the players of split ``u``'s subtree
(at most ``nodes x 2^K``, and mostly far less), plus ``2^K x K (K + 1) / 2`` weights a row for per-row
indices; it grows with the leaves, not their square, but as ``2^K``.  ``engine.routing.takes_subsets``
chooses per tree.

The same pass serves the R² game's Shapley values alone (``phi_j = sum_{S not j} |S|! (K - |S| -
1)! / K! [v(S + j) - v(S)]``, Shapley 1953): ``2^K x K`` weights a row instead of ``2^K x K (K + 1)
/ 2``, for deep trees on few players whose LCA items (leaves x depth squared) cost more
(``engine.routing.takes_subset_values``).

Modules: :mod:`.indices` (leaf pairs: the plan of a tree's entries and their evaluation on rows),
:mod:`.subsets` (the bottom-up pass over subsets and the weights of the indices on every subset),
:mod:`.subset_values` (``SubsetUnit``: the R² Shapley values of a tree from that pass, a
:class:`~shap_rsq.kernels.protocol.TreeKernel`).
The rows' routing and the leaves' covers come from :mod:`~shap_rsq.kernels.lca.pairs`.
"""
