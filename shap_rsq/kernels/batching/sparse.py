"""One-hot sparse products: sums of table rows picked by index lists, and their transposes.

The kernels gather rows of small tables by index and scatter cotangents back into them; a
one-hot sparse matrix does both in compiled loops.  SciPy's matrix constructors check the
index arrays on every call, which costs 40-80 microseconds, more than the product itself
for the thousands of small products a model needs.  Here the same products call SciPy's
compiled kernels (``scipy.sparse._sparsetools``) directly, once a first call has checked
them against the public matrices, and fall back to the public matrices when the private
kernels are missing or disagree.  Neither path checks that the indices are in range (SciPy's
constructors check types and lengths only): the callers build them from their own tables.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import sparse

__all__ = ["OneHot", "add_pattern_values", "offsets", "ranges", "segment_sums", "weighted_sums"]

_ONES = np.ones(0)


def offsets(counts: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive segments of the given lengths, with the total appended (int64)."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def ranges(first: np.ndarray | int, counts: np.ndarray) -> np.ndarray:
    """``first[r], first[r] + 1, .., first[r] + counts[r] - 1`` for every ``r``, one run after
    another (``first`` may be one number for all runs)."""
    starts = offsets(counts)
    return np.repeat(np.asarray(first) - starts[:-1], counts) + np.arange(starts[-1])


def _ones(n: int) -> np.ndarray:
    """``n`` ones from a shared buffer that only grows (one-hot matrices never write their data)."""
    global _ONES
    ones = _ONES
    if ones.size < n:
        ones = _ONES = np.ones(max(n, 2 * ones.size))
    return ones[:n]


class OneHot:
    """A ``(rows, columns)`` matrix with ones at ``(r, indices[indptr[r]:indptr[r + 1]])``.

    ``indptr`` and ``indices`` are integer arrays of one type (int32 or int64), as in CSR.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, n_columns: int):
        self.indptr = indptr
        self.indices = indices
        self.shape = (len(indptr) - 1, n_columns)

    @classmethod
    def picks(cls, index: np.ndarray, n_columns: int) -> OneHot:
        """One one per row, at column ``index[r]``: ``picks(t, n).T @ g`` sums the rows of ``g`` by ``t``."""
        return cls(np.arange(len(index) + 1, dtype=index.dtype), index, n_columns)

    def tiled(self, copies: int) -> OneHot:
        """``copies`` copies of the matrix along the diagonal: on a stack of ``copies`` tables,
        one above the other, it acts on each table apart (one product for all of them)."""
        nnz = int(self.indptr[-1])
        shift = np.arange(copies, dtype=np.int64)[:, None]
        indptr = np.append((self.indptr[:-1] + shift * nnz).ravel(), copies * nnz)
        indices = (self.indices + shift * self.shape[1]).ravel()
        return OneHot(indptr.astype(np.int64), indices.astype(np.int64), copies * self.shape[1])

    def sums(self, table: np.ndarray) -> np.ndarray:
        """``self @ table``: ``(rows, Q)``, each row the sum of the table rows it picks."""
        out = np.zeros((self.shape[0], table.shape[1]))
        _product(self, np.ascontiguousarray(table, dtype=float), out, transposed=False)
        return out

    def add_transposed(self, g: np.ndarray, out: np.ndarray) -> None:
        """``out += self.T @ g``: each row of ``g (rows, Q)`` added into the rows of ``out (columns, Q)``
        it picks."""
        g = np.ascontiguousarray(g, dtype=float)
        if out.flags.c_contiguous and out.dtype == float:
            _product(self, g, out, transposed=True)
        else:
            total = np.zeros(out.shape)
            _product(self, g, total, transposed=True)
            out += total


def segment_sums(table: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``np.add.reduceat(table, starts, axis=0)`` for non-empty segments: the sums of the runs of
    rows ``starts[i] .. starts[i + 1]`` (the last to the end), any trailing shape.

    ``reduceat`` along the first axis of a wide array runs 5-15x slower than this one-hot product
    (measured on ``(40, 1024, 11)`` and ``(1000, 18, 7)`` tables).
    """
    n = table.shape[0]
    starts = np.asarray(starts, dtype=np.int64)
    matrix = OneHot(np.append(starts, n), np.arange(n, dtype=np.int64), n)
    return matrix.sums(table.reshape(n, -1)).reshape((len(starts), *table.shape[1:]))


def weighted_sums(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, table: np.ndarray, out: np.ndarray
) -> None:
    """``out += A @ table`` for the CSR matrix ``A`` of ``(indptr, indices, data)``: each row of
    ``out`` adds the table rows its entries pick, each times its entry (``out`` C-contiguous float64)."""
    matrix = OneHot(indptr, indices, table.shape[0])
    _product(matrix, np.ascontiguousarray(table, dtype=float), out, transposed=False, data=data)


def add_pattern_values(out: np.ndarray, columns: np.ndarray, inverse: np.ndarray, *parts) -> None:
    """``out[:, columns] += sum_k w_k[:, None] * g_k[inverse]`` for ``parts`` ``(w_k (n,), g_k (P, K))``:
    each row's weighted values of its pattern, as one sparse product with ``len(parts)`` entries a
    row (no ``(n, K)`` temporary per part); the terms add up in the order of ``parts``.

    ``inverse`` and every ``w_k`` may also be ``(n, E)``: each row then adds ``E`` patterns (one per
    tree of a batch whose tables are stacked in ``g_k``), summed per part, then over the parts.
    """
    n_rows, n_parts = len(inverse), len(parts)
    n_patterns = parts[0][1].shape[0]
    inverse = inverse.reshape(n_rows, 1, -1).astype(np.int64)
    per_row = n_parts * inverse.shape[2]
    indptr = np.arange(0, per_row * n_rows + 1, per_row, dtype=np.int64)
    indices = (inverse + n_patterns * np.arange(n_parts)[:, None]).ravel()
    data = np.stack([np.asarray(w, dtype=float).reshape(n_rows, -1) for w, _ in parts], axis=1).ravel()
    values = np.zeros((n_rows, parts[0][1].shape[1]))
    weighted_sums(indptr, indices, data, np.concatenate([g for _, g in parts]), values)
    out[:, columns] += values


def _product(matrix: OneHot, x: np.ndarray, out: np.ndarray, transposed: bool, data: np.ndarray | None = None) -> None:
    """``out += matrix @ x`` (or ``matrix.T @ x``), ``x`` and ``out`` C-contiguous float64; ``data``
    replaces the ones of the matrix."""
    kernels = _kernels()
    n_rows, n_columns = matrix.shape
    data = _ones(len(matrix.indices)) if data is None else np.ascontiguousarray(data, dtype=float).ravel()
    if kernels is not None:
        # CSR arrays read as CSC are the transpose: the same arrays serve both products
        if transposed:
            kernels.csc_matvecs(
                n_columns, n_rows, x.shape[1], matrix.indptr, matrix.indices, data, x.ravel(), out.ravel()
            )
        else:
            kernels.csr_matvecs(
                n_rows, n_columns, x.shape[1], matrix.indptr, matrix.indices, data, x.ravel(), out.ravel()
            )
        return
    public = sparse.csr_matrix((data, matrix.indices, matrix.indptr), shape=matrix.shape, copy=False)
    out += (public.T if transposed else public) @ x


@lru_cache(maxsize=1)
def _kernels():
    """SciPy's compiled kernels, if they compute what the public matrices compute on a small case."""
    try:
        from scipy.sparse import _sparsetools as kernels
    except ImportError:
        return None
    rng = np.random.default_rng(0)
    for index_type in (np.int32, np.int64):
        indptr = np.array([0, 2, 2, 5], dtype=index_type)
        indices = np.array([1, 3, 0, 3, 3], dtype=index_type)
        public = sparse.csr_matrix((np.ones(5), indices, indptr), shape=(3, 4))
        for transposed, x in ((False, rng.random((4, 3))), (True, rng.random((3, 3)))):
            expected = (public.T if transposed else public) @ x
            out = np.zeros(expected.shape)
            try:
                if transposed:
                    kernels.csc_matvecs(4, 3, 3, indptr, indices, np.ones(5), x.ravel(), out.ravel())
                else:
                    kernels.csr_matvecs(3, 4, 3, indptr, indices, np.ones(5), x.ravel(), out.ravel())
            except Exception:  # any change of the private signature means: do not use it
                return None
            if not np.allclose(out, expected, rtol=1e-15, atol=0):
                return None
    return kernels
