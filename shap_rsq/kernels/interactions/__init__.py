"""Shapley interaction indices of one tree's game: mixed second slopes of leaf-pair products.

Identity.  The Shapley interaction index of players ``j != k`` is the integral along the diagonal
of the mixed second derivative of the game's multilinear extension (Grabisch & Roubens 1999;
Owen 1972): ``I_jk = int_0^1 d^2 g / dq_j dq_k (q, ..., q) dq``.  Each term of the tree's game
(a pair of leaves, a leaf with itself, a leaf alone for the linear part) is a product of factors
linear in their own coins, so its mixed slope is ``s_j s_k prod_{m != j, k} F_m``.

Cost, per distinct pass-bit code of an entry.  ``L (L + 1) / 2`` pairs of leaves plus ``L`` single
leaves, each ``W (W - 1) / 2`` products x ``ceil((W - 1) / 2)`` quadrature nodes, ``W`` the players on
its two paths (at most ``2 D``).  Coupling costs nothing extra: no expansion is made, so the work
grows with the square of the leaves.

Modules: :mod:`.indices` (the plan of a tree's entries and their evaluation on rows).  The rows'
routing and the leaves' covers come from :mod:`~shap_rsq.kernels.lca.pairs`.
"""
