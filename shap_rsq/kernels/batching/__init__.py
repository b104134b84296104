"""NumPy batching: how the kernels' tables are cut, laid out and walked, never what they hold.

Nothing here changes a value: these modules decide how many NumPy calls a tree costs and how long
each is, so that the Python overhead per call stays small beside the work (a deep tree has
hundreds of thousands of items, a batch of shallow trees a few dozen each).  Their thresholds are
fields of :class:`~shap_rsq.tuning.Tuning` (``chunk_cells``, ``tabulate_cells``, ``mixed_cells``,
``dense_ratio``, ``max_dense_width``, ``dense_slots``, ``block_elements``,
``local_columns_per_player``).

- :mod:`.cells`: the distinct masked leaf codes (*cells*) of each view among a block of rows, and
  whether a view is tabulated on all its bit combinations (*dense*) or cell by cell.
- :mod:`.chunks`: one chunk of items: its tables laid out part by part (cache-sized for the rows),
  then by class (one width, one kind of table), so that a class's values are a few NumPy calls.
- :mod:`.blocks`: items that share a view and their factors, summed per block, and every factor's
  slope from those sums by the log-derivative (one pass, no "all factors but one" products).
- :mod:`.pattern_tables`: a batch of small trees' per-pattern tables and the rows: each row's cell,
  the weights summed per cell, per-cell values scattered into the outputs by column.
- :mod:`.sparse`: one-hot gathers and scatters through SciPy's compiled kernels, without the
  per-call checks of its matrix constructors (shared by every family).
"""
