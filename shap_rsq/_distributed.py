"""Scale-out over row blocks: ``rsq`` on dask arrays.

Rows are independent once the trees are fixed: each block of rows plays every
tree's game on its own rows, and the feature sums add up.  Only the total sum of
squares needs all rows, and dask computes it first.  The compiled units are
shipped once to the cluster and shared by every block's task.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._engine import decompose

__all__ = ["is_dask_array", "rsq_over_blocks"]


def is_dask_array(value: Any) -> bool:
    return type(value).__module__.startswith("dask.") and hasattr(value, "to_delayed")


def rsq_over_blocks(forest, units, X, y, sample_weight, n_features: int, check_sample) -> np.ndarray:
    """Feature shares of R^2 for a dask array ``X`` (rows in blocks; columns must fit in one block)."""
    import dask
    import dask.array as da

    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(f"X has shape {X.shape}, but the model was fitted with {n_features} features.")
    X = X.rechunk({1: -1})
    rows = X.chunks[0]
    if len(y) != X.shape[0]:
        raise ValueError(f"y has {len(y)} values but X has {X.shape[0]} rows.")
    y = da.asarray(y).rechunk((rows,))
    w = da.ones(X.shape[0], chunks=(rows,)) if sample_weight is None else da.asarray(sample_weight).rechunk((rows,))
    total_w, total_wy = dask.compute(w.sum(), (w * y).sum())
    if not np.isfinite(total_wy):
        raise ValueError("y contains NaN or infinity; R^2 needs a finite target.")
    if not np.isfinite(total_w) or total_w <= 0 or dask.compute(w.min())[0] < 0:
        raise ValueError("sample_weight must be finite and non-negative with a positive sum.")
    mean = total_wy / total_w
    sst = float(dask.compute((w * (y - mean) ** 2).sum())[0])
    if sst <= 0.0:
        raise ValueError("y is constant (over the rows with positive weight): R^2 is undefined.")

    shared = dask.delayed(units, pure=True, traverse=False)
    parts = [
        dask.delayed(_block_values)(forest, shared, xb, yb, wb)
        for xb, yb, wb in zip(X.to_delayed().ravel(), y.to_delayed().ravel(), w.to_delayed().ravel(), strict=True)
    ]
    total, first_prediction = dask.compute(sum(p[0] for p in parts), parts[0][1])
    first_rows = X.blocks[0][:32].compute()  # separately: one compute mixing arrays and delayed misorders results
    check_sample(first_rows, first_prediction[: len(first_rows)])
    return total / sst


def _block_values(forest, units, X, y, w):
    rows = np.asarray(X, dtype=np.float64)
    if np.isinf(rows).any():
        raise ValueError("X contains infinity; use NaN for missing values.")
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity; R^2 needs a finite target.")
    result = decompose(forest, units, rows, y, np.asarray(w, dtype=np.float64))
    return result.values, result.prediction
