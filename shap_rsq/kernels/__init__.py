"""The maths: exact Shapley values of the squared tree games, one module per evaluation strategy.

Every strategy offers the engine one small interface, :class:`~.protocol.TreeKernel`:

- :mod:`.small_trees`: subset enumeration and the two-particle recursion on the whole cube of a
  shallow tree's split patterns, batched over trees (``HeapUnit``); symmetric (CatBoost) trees on
  their level patterns (``ObliviousUnit``).  Shared pieces: :mod:`.split_patterns` (heap layout,
  routing rows to patterns), :mod:`.pattern_recursion`.
- :mod:`.lca_tree`: one deeper tree (``LcaUnit``) through the LCA kernel (:mod:`.leaf_paths`,
  :mod:`.lca_plan`, :mod:`.lca_cells`, :mod:`.lca_chunks`, :mod:`.lca_blocks`, :mod:`.lca`,
  per-row values :mod:`.lca_local`), or, for leaf-wise trees
  when cheaper, the conditioned recursion (:mod:`.conditioned`, its passes :mod:`.conditioned_passes`,
  per-row values :mod:`.conditioned_rows`).
- :mod:`.sparse`: one-hot gathers and scatters through SciPy's compiled kernels.

Which strategy takes which tree is decided in one place, :mod:`shap_rsq.engine.routing`, and every
tuned number lives in :class:`shap_rsq.tuning.Tuning`.  Importing this package pulls in NumPy and
SciPy only (no shap, scikit-learn or pandas): worker processes start fast.
"""

from .protocol import TreeKernel

__all__ = ["TreeKernel"]
