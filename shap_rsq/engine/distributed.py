"""Scale-out over row blocks: ``rsq`` on dask arrays.

Rows are independent once the trees are fixed: each block of rows plays every
tree's game on its own rows, and the feature sums add up.  Only the total sum of
squares needs all rows, and dask computes it first.  The compiled units are
shipped once to the cluster and shared by every block's task.  Every block's
values go through the same checks as in-memory inputs, so the messages match.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import numpy as np

from ..tuning import DEFAULT_TUNING
from .labels import UnknownLabelsError
from .run import decompose
from .validation import (
    INFINITE_ROWS,
    check_column_shape,
    check_squares_finite,
    check_weight_total,
    check_weights,
    check_weights_are_a_vector,
    check_width,
    numeric_dtype,
    target_values,
)

__all__ = ["is_dask_array", "on_blocks", "row_blocks", "rows_from", "rsq_over_blocks"]


def is_dask_array(value: Any) -> bool:
    """Whether ``value`` is a dask array (checked without importing dask).

    Parameters
    ----------
    value : object
        Any input.

    Returns
    -------
    bool
        True for a dask array.
    """
    return type(value).__module__.startswith("dask.") and hasattr(value, "to_delayed")


def rsq_over_blocks(forest, units, X, y, sample_weight, n_features: int, check_sample) -> np.ndarray:
    """Feature shares of R² for a dask array ``X`` (rows in blocks; columns must fit in one block).

    Parameters
    ----------
    forest : Forest
        The centred forest of the explainer.
    units : list
        Its units of work (``engine.run.UnitCache.units()``).
    X : dask.array.Array of shape (n_samples, n_features)
        The rows, chunked by rows only.
    y, sample_weight : array-like or dask array
        Target and optional weights, chunked like ``X`` or held in memory.
    n_features : int
        The number of features the model reads.
    check_sample : callable
        ``check_sample(rows, prediction, target)`` checks the trees' predictions on a sample of rows
        against the model's own, and the model's rounding against the range of ``target``.

    Returns
    -------
    ndarray of shape (n_features,)
        The shares, as :meth:`RSquaredExplainer.rsq` returns for an array.
    """
    import dask

    X, blocks = row_blocks(forest, X, y, sample_weight, n_features)
    rows = X.chunks[0]
    checked = [dask.delayed(_checked_block)(yb, wb, n) for (_, yb, wb), n in zip(blocks, rows, strict=True)]
    sums = dask.compute(*[dask.delayed(_weighted_sums)(block) for block in checked])
    total_w = sum(s[0] for s in sums)
    check_weight_total(total_w)
    # a constant is refused by comparing values: its mean can be one rounding off it (engine.validation)
    low, high = min(s[2] for s in sums), max(s[3] for s in sums)
    if low == high:
        raise ValueError("y is constant (over the rows with positive weight): R² is undefined.")
    mean = sum(s[1] for s in sums) / total_w
    sst = float(sum(dask.compute(*[dask.delayed(_squares_about)(block, mean) for block in checked])))
    check_squares_finite(sst)

    shared = dask.delayed(units, pure=True, traverse=False)
    parts = [
        dask.delayed(_block_values)(forest, shared, xb, block)
        for (xb, _, _), block in zip(blocks, checked, strict=True)
    ]
    total, first_prediction = dask.compute(sum(p[0] for p in parts), parts[0][1])
    first_rows = X.blocks[0][:32].compute()  # separately: one compute mixing arrays and delayed misorders results
    check_sample(first_rows, first_prediction[: len(first_rows)], np.array([low, high]))  # y's range
    return total / sst


def row_blocks(forest, X, y, sample_weight, n_features: int, numeric_y: bool = True, y_columns: bool = False):
    """A dask array of rows checked and cut into blocks of whole rows, with ``y`` and the weights
    cut alike: ``(X, [(rows, y, weights), ...])``, each block a ``dask.delayed`` (weights ``None``
    when not given).  ``numeric_y=False`` takes class labels of any type, ``y_columns`` a 2-D ``y``
    (several targets, or a classifier's 0/1 indicator) whole in every block.

    The refusals are those of arrays in memory; a model that matches categories by value is refused,
    since a dask array of numbers does not hold them."""
    _check_dask_rows(X, n_features)
    if forest.routing is not None and forest.routing.matched:
        # a block's numbers would be read as the model's codes, which need not be its categories
        raise ValueError(
            f"The model's categorical feature(s) {list(forest.routing.matched)} are matched to its categories by "
            "value, which a dask array of numbers does not hold: pass the rows as a pandas DataFrame (in blocks "
            "of rows, adding up loss_reduction), or fit the model on integer codes."
        )
    X = X.rechunk({1: -1})
    rows = X.chunks[0]
    y = _column_in_blocks("y", y, X.shape[0], rows, numeric=numeric_y, columns=y_columns)
    w = None if sample_weight is None else _column_in_blocks("sample_weight", sample_weight, X.shape[0], rows)
    blocks = zip(X.to_delayed().ravel(), y.to_delayed().ravel(), _weight_blocks(w, rows), strict=True)
    return X, list(blocks)


def on_blocks(X, blocks: list, task, shared, *args) -> list:
    """``task(shared, start, rows, y, weights, *args)`` on every block of :func:`row_blocks`, on dask's
    scheduler, with ``start`` the block's first row; the results in the blocks' order, where a
    block that returned a ``ValueError`` (its rows refused) has it raised, the first block's first
    (dask would raise whichever block failed first in time)."""
    import dask

    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(int).tolist()
    tasks = [dask.delayed(task)(shared, start, *block, *args) for start, block in zip(starts, blocks, strict=True)]
    results = dask.compute(*tasks)
    for result in results:
        if isinstance(result, ValueError):
            raise result
    return list(results)


@contextmanager
def rows_from(start: int):
    """Errors raised for a block's rows name them from the whole array's first row, not the block's."""
    try:
        yield
    except UnknownLabelsError as error:
        raise error.shifted(start) from None


def _check_dask_rows(X, n_features: int) -> None:
    """A dask array of numbers, ``(rows, n_features)``, with known chunk sizes: the same refusals as
    in memory, not dask's or NumPy's own errors."""
    if not hasattr(X, "chunks") or not hasattr(X, "dtype"):  # a dask DataFrame
        raise ValueError(
            f"X is a dask {type(X).__name__}; pass a dask array of its numbers, "
            "X.to_dask_array(lengths=True), with the columns in the model's order."
        )
    numeric_dtype("X", X.dtype)
    if np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"X holds complex numbers ({X.dtype}); pass real ones.")
    if any(np.isnan(size) for sizes in X.chunks for size in sizes):
        raise ValueError(
            "X has unknown chunk sizes (from a dask DataFrame or a boolean mask): compute them first, "
            "X.compute_chunk_sizes(), or X = frame.to_dask_array(lengths=True)."
        )
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (rows by features); got shape {X.shape}.")
    check_width(X.shape[1], n_features)


def _column_in_blocks(name: str, values, n_rows: int, rows: tuple[int, ...], numeric: bool = True, columns=False):
    """``y`` or weights as a 1-D dask array chunked like the rows of ``X`` (shape and dtype checked now,
    values block by block; class labels, not ``numeric``, of any type; with ``columns``, a 2-D ``y``
    keeps its columns, every block all of them)."""
    import dask.array as da

    if is_dask_array(values) and not hasattr(values, "chunks"):  # a dask Series or DataFrame
        values = values.to_dask_array(lengths=True)
    if is_dask_array(values) and any(np.isnan(size) for sizes in values.chunks for size in sizes):
        values = values.compute_chunk_sizes()
    if not is_dask_array(values):
        if name == "sample_weight" and np.ndim(values) == 0:  # one weight for every row, checked as in memory
            values = check_weights(values, np.empty((n_rows, 0)))
        values = np.asarray(values)
    if numeric:
        numeric_dtype(name, values.dtype)
    if columns and values.ndim == 2:  # several targets, or a classifier's 0/1 indicator: checked per block
        if values.shape[0] != n_rows:
            raise ValueError(f"{name} has {values.shape[0]} rows but X has {n_rows} rows.")
        return da.asarray(values).rechunk((rows, -1))
    check_column_shape(name, values.shape, n_rows)
    if name == "sample_weight":
        check_weights_are_a_vector(values.shape)
    if values.ndim == 2:
        values = values[:, 0]
    return da.asarray(values).rechunk((rows,))


def _weight_blocks(w, rows: tuple[int, ...]) -> list:
    return [None] * len(rows) if w is None else list(w.to_delayed().ravel())


def _checked_block(y, w, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    target = target_values(y)
    return target, check_weights(w, np.empty((n_rows, 0)), allow_all_zero=True)


def _weighted_sums(block) -> tuple[float, float, float, float]:
    """The block's total weight, weighted sum of y, and least and largest y of positive weight."""
    y, w = block
    positive = y[w > 0]
    low, high = (float(positive.min()), float(positive.max())) if positive.size else (np.inf, -np.inf)
    return float(w.sum()), float(w @ y), low, high


def _squares_about(block, mean: float) -> float:
    y, w = block
    return float(w @ (y - mean) ** 2)


def _block_values(forest, units, X, block):
    rows = np.asarray(X, dtype=np.float64)
    if np.isinf(rows).any():
        raise ValueError(INFINITE_ROWS)
    y, w = block
    # the units carry the explainer's tuning, and with it its memory budget
    tuning = units[0].tuning if units else DEFAULT_TUNING
    result = decompose(forest, units, rows, y, w, tuning=tuning, warn_long=False)  # dask shows its own progress
    return result.values, result.prediction
