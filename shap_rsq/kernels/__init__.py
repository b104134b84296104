"""The maths: exact Shapley values of the squared tree games, one folder per evaluation family.

Every family offers the engine one small interface, :class:`~.protocol.TreeKernel`, and all of
them give the same values (the tests check each against subset enumeration):

- :mod:`.enumeration`: subset enumeration over a small tree's own players, batched over trees
  on the whole cube of their split patterns (``HeapUnit``, ``ObliviousUnit``).
- :mod:`.recursion`: the two-particle recursion (``E m``, ``E m^2`` bottom-up): on batches of
  small heap trees, and conditioned, one tree of any shape at a time.
- :mod:`.lca`: leaf pairs grouped at their lowest common ancestor (the paper's Q-SHAP) for deeper
  trees (``LcaUnit``), with leaf pairs one by one where the grouping would blow up
  (``HybridUnit``).
- :mod:`.interactions`: Shapley interaction indices, leaf pair by leaf pair.
- :mod:`.batching`: the NumPy batching of the LCA kernel's tables and the one-hot sparse products:
  how the work is cut into calls, never what it computes.

Shared by the families: :mod:`.protocol` (the unit interface), :mod:`.leaf_paths` (root-to-leaf
paths as arrays), :mod:`.row_patterns` (rows to a tree's split decisions and distinct patterns)
and :mod:`.quadrature` (Gauss-Legendre rules).

Which family takes which tree (and which node of a deep tree) is decided in one place,
:mod:`shap_rsq.engine.routing`, which hands its choices down as parameters; every tuned number
lives in :class:`shap_rsq.tuning.Tuning`.  Importing this package pulls in NumPy and SciPy only
(no shap, scikit-learn or pandas): worker processes start fast.
"""

from .protocol import TreeKernel

__all__ = ["TreeKernel"]
