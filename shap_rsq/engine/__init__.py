"""The decomposition game over a forest: input checks, the choice of a kernel for each tree, and
execution (row chunks, worker processes, dask blocks).

- :mod:`.validation`: one validation of rows, target and weights for every input path.
- :mod:`.routing`: the single place that chooses a kernel for each tree.
- :mod:`.run`: the sequential tree games summed over trees (:func:`~.run.decompose`).
- :mod:`.distributed`: the same over dask blocks of rows.
- :mod:`.outputs`: several outputs (classes, targets) combined as ``r2_score`` combines them.
"""
