"""The two-particle recursion: ``E m`` and ``E m^2`` bottom-up, each feature a coin of probability ``q``.

Identity.  With every player known independently with probability ``q``, the Shapley value is the
integral along the diagonal of the multilinear extension's slope (Owen 1972):

    phi_j = int_0^1 d/dq_j E_q[w_quad m^2 + w_lin m] dq.

Where a node's two subtrees use disjoint coins and its own feature occurs once, ``A = E m`` and
``B = E m^2`` follow from its children's:

    A(u) = q A(c_x) + (1 - q) (rL A(L) + rR A(R))
    B(u) = q B(c_x) + (1 - q) (rL^2 B(L) + rR^2 B(R) + 2 rL rR A(L) A(R))

(``c_x`` the child the row takes, ``r`` the cover fractions).  A feature that splits several nodes
is conditioned on (known or unknown), and the cases mixed with weights ``q`` and ``1 - q``.
Gradients come from one reverse pass, integrated exactly by Gauss-Legendre in ``depth`` nodes.
This is shap-rsq's own evaluation, not the paper's (``docs/method.md``, "Algorithm"); it gives the
values of the paper's Theorem 1 to rounding, and the tests check it against subset enumeration.

Cost.  No leaf pairs: ``2^R`` conditioned cases x nodes x ``D`` quadrature nodes per split
pattern for a small tree whose ``R`` repeated features are conditioned at the root
(:mod:`.pattern_recursion`, batched over trees in heap layout); per node, ``2^states`` x its
sub-patterns x ``Q`` for the conditioned recursion (:mod:`.conditioned`), where a repeated
feature is conditioned only between its occurrences and the lowest node that holds them all.

Modules:

- :mod:`.pattern_recursion`: the recursion on batches of small heap trees, global values and the
  per-pattern gradients.
- :mod:`.pattern_rows`: per-row values of depth-4 heaps: tables of the root's two sides and the
  chain rule at the root.
- :mod:`.conditioned`: the plan of the conditioned recursion on one tree of any shape, its
  sub-patterns and its work; :mod:`.conditioned_passes` its forward and reverse passes;
  :mod:`.conditioned_rows` its per-row reverse pass.
"""
