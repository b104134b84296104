"""The one-hot products of ``_sparse`` call SciPy's compiled kernels directly (its public matrices
check their index arrays on every call, which costs more than the small products themselves); both
paths must give the public matrices' sums."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from shap_rsq.kernels.batching import sparse as _sparse


@pytest.fixture(params=["compiled", "public"])
def path(request, monkeypatch):
    if request.param == "public":
        monkeypatch.setattr(_sparse, "_kernels", lambda: None)
    else:
        assert _sparse._kernels() is not None  # SciPy still ships the kernels with the checked signature
    return request.param


def _random_indices(rng, n_rows: int, n_columns: int, most: int, index_type):
    """CSR ``(indptr, indices)`` with 0 .. ``most - 1`` random columns a row."""
    counts = rng.integers(0, most, size=n_rows)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(index_type)
    return indptr, rng.integers(0, n_columns, size=int(indptr[-1])).astype(index_type)


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_one_hot_sums_and_transposed_sums_match_scipy(path, index_type):
    rng = np.random.default_rng(3)
    indptr, indices = _random_indices(rng, 40, 25, 5, index_type)
    public = sparse.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(40, 25))
    matrix = _sparse.OneHot(indptr, indices, 25)

    table = rng.normal(size=(25, 7))
    np.testing.assert_allclose(matrix.sums(table), public @ table, rtol=1e-14, atol=1e-14)

    g = rng.normal(size=(40, 7))
    out = rng.normal(size=(25, 7))
    expected = out + public.T @ g
    matrix.add_transposed(g, out)
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)

    strided = np.zeros((25, 14))[:, ::2]  # not contiguous: summed through a temporary
    matrix.add_transposed(g, strided)
    np.testing.assert_allclose(strided, public.T @ g, rtol=1e-14, atol=1e-14)


def test_picks_sum_rows_by_target(path):
    target = np.array([2, 0, 2, 2, 1])
    g = np.arange(10.0).reshape(5, 2)
    out = np.zeros((4, 2))
    _sparse.OneHot.picks(target, 4).add_transposed(g, out)
    np.testing.assert_array_equal(out, [[2, 3], [8, 9], [0 + 4 + 6, 1 + 5 + 7], [0, 0]])


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_weighted_sums_add_the_weighted_rows_as_scipy_does(path, index_type):
    # per-row values weight each picked cell's slopes by the row's cotangent
    rng = np.random.default_rng(4)
    indptr, indices = _random_indices(rng, 30, 20, 6, index_type)
    data = rng.normal(size=len(indices))
    table = rng.normal(size=(20, 5))
    out = rng.normal(size=(30, 5))
    expected = out + sparse.csr_matrix((data, indices, indptr), shape=(30, 20)) @ table
    _sparse.weighted_sums(indptr, indices, data, table, out)
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_tiled_one_hot_is_the_block_diagonal_of_its_copies(path, index_type):
    # the per-row kernel sums a (Q x items, rows) stack node by node with one product
    rng = np.random.default_rng(4)
    indptr, indices = _random_indices(rng, 12, 9, 4, index_type)
    public = sparse.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(12, 9))
    tiled = _sparse.OneHot(indptr, indices, 9).tiled(3)
    assert tiled.shape == (36, 27)
    stack = rng.normal(size=(27, 5))
    expected = sparse.block_diag([public] * 3) @ stack
    np.testing.assert_allclose(tiled.sums(stack), expected, rtol=1e-14, atol=1e-14)
    assert not np.allclose(tiled.sums(stack[::-1]), expected)  # each copy reads its own table


def test_pattern_values_add_each_rows_weighted_pattern_values_into_its_columns_only(path):
    # per-row values of a tree: row r adds w_quad[r] g_quad[pattern r] + w_lin[r] g_lin[pattern r]
    # into the tree's columns; the compiled kernel adds the terms in this order, bit for bit
    rng = np.random.default_rng(5)
    n, n_patterns, columns = 50, 7, np.array([4, 1, 6])
    inverse = rng.integers(0, n_patterns, size=n)
    w_quad, w_lin = rng.normal(size=n), rng.normal(size=n)
    g_quad, g_lin = rng.normal(size=(n_patterns, 3)), rng.normal(size=(n_patterns, 3))
    start = rng.normal(size=(n, 8))
    expected = start.copy()
    expected[:, columns] += w_quad[:, None] * g_quad[inverse] + w_lin[:, None] * g_lin[inverse]

    out = start.copy()
    _sparse.add_pattern_values(out, columns, inverse, (w_quad, g_quad), (w_lin, g_lin))
    np.testing.assert_allclose(out, expected, rtol=1e-15, atol=1e-15)
    if path == "compiled":
        np.testing.assert_array_equal(out, expected)
    untouched = np.setdiff1d(np.arange(8), columns)
    np.testing.assert_array_equal(out[:, untouched], start[:, untouched])

    one = start.copy()
    _sparse.add_pattern_values(one, columns, inverse, (w_quad, g_quad))
    np.testing.assert_allclose(one[:, columns], start[:, columns] + w_quad[:, None] * g_quad[inverse], rtol=1e-15)


def test_pattern_values_of_a_batch_add_one_pattern_per_tree_and_part(path):
    # a batch of trees: row r adds, for each tree t, w_quad[r, t] g_quad[cell r t] + w_lin[r, t] g_lin[cell r t]
    rng = np.random.default_rng(6)
    n, n_trees, n_cells, columns = 40, 3, 11, np.array([0, 5, 2, 7])
    cell = rng.integers(0, n_cells, size=(n, n_trees))
    w_quad, w_lin = rng.normal(size=(n, n_trees)), rng.normal(size=(n, n_trees))
    g_quad, g_lin = rng.normal(size=(n_cells, 4)), rng.normal(size=(n_cells, 4))
    start = rng.normal(size=(n, 9))
    expected = start.copy()
    expected[:, columns] += np.einsum("rt,rtk->rk", w_quad, g_quad[cell]) + np.einsum("rt,rtk->rk", w_lin, g_lin[cell])

    out = start.copy()
    _sparse.add_pattern_values(out, columns, cell, (w_quad, g_quad), (w_lin, g_lin))
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-14)
    untouched = np.setdiff1d(np.arange(9), columns)
    np.testing.assert_array_equal(out[:, untouched], start[:, untouched])
