"""Leaf pairs at their lowest common ancestor: the paper's Q-SHAP, one deeper tree at a time.

Identity.  The multilinear extension of ``m^2`` is a sum over ordered leaf pairs,
``sum_{a, b} v_a v_b prod_k F_k`` with ``F_k = q p_ak p_bk + (1 - q) r_ak r_bk``, and that of ``m``
is ``sum_a v_a prod_k h_ak`` with ``h = q p + (1 - q) r``; ``phi_j = int_0^1 d/dq_j (...) dq``.
This is the paper's Theorem 1 (Section 3, equations ``msqdec`` and ``nppoly``: each pair's term
over the union of its two paths' features), integrated by Gauss-Legendre quadrature instead of
the paper's roots-of-unity IFFT (Section 3.3, Proposition 2), exact for these polynomials.  The
pairs are grouped at the node ``u`` where they meet: every feature gives a factor of one leaf,
except the features both sides reuse below ``u`` (*coupled*), which are expanded over their
subsets into separable *items* (:mod:`.plan`).

Cost, per distinct split pattern.  ``sum_u sum_{l under u} 2^{coupled at u on l's path}`` items x
``Q`` quadrature nodes (``Q <= D``, the most distinct features on a path) instead of the paper's
``L^2`` pairs x ``D``; plus factors x ``Q`` per block of items for the slopes.  Where the coupling
makes the expansion costlier than the pairs themselves, a node's ``|left| x |right|`` pairs are
taken one by one (:mod:`.pairs`): ``pairs x features x Q_u`` whatever the coupling.

Modules:

- :mod:`.plan`: compile one tree into items (row-independent).
- :mod:`.global_values`: the items on blocks of patterns, weighted and summed (``rsq``).
- :mod:`.row_values`: each pattern's own gradients (per-row values).
- :mod:`.pairs`: the per-pair kernel and the per-node costs that ``engine.routing`` compares.
- :mod:`.unit`: ``LcaUnit``, one tree through its plan (or through the conditioned recursion of
  :mod:`~shap_rsq.kernels.recursion` when ``engine.routing`` allows it), and the plans units keep.
- :mod:`.hybrid`: ``HybridUnit``, a deep tree split node by node between plans (in pieces of
  bounded size) and the pairs.

The tables these modules fill are laid out and walked by :mod:`~shap_rsq.kernels.batching`.
"""
