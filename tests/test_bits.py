"""The kernels' bit helpers (``kernels.bits``) read codes a byte or a word at a time; they must
equal the bit-by-bit definitions at every width, across byte boundaries."""

from __future__ import annotations

import numpy as np
import pytest

from shap_rsq.kernels.bits import bit_words, compress, popcount


def _extract_bit_by_bit(code: np.ndarray, mask: np.ndarray, n_bits: int) -> np.ndarray:
    out = np.zeros(code.shape, dtype=np.int64)
    rank = np.zeros(code.shape, dtype=np.int64)
    for j in range(n_bits):
        selected = (mask >> j) & 1
        out |= ((code >> j) & selected) << rank
        rank += selected
    return out


@pytest.mark.parametrize("n_bits", [1, 7, 8, 9, 16, 17, 33, 62])
def test_compress_packs_the_masked_bits_as_a_bit_by_bit_extract_does(n_bits):
    rng = np.random.default_rng(n_bits)
    code = rng.integers(0, 1 << n_bits, size=5000, dtype=np.int64)
    mask = rng.integers(0, 1 << n_bits, size=5000, dtype=np.int64)
    mask[:3] = [0, (1 << n_bits) - 1, 1 << (n_bits - 1)]  # no bit, every bit, the top bit alone
    for codes in (code, code & mask):  # the cells pass masked codes; bits outside the mask must not leak
        assert np.array_equal(compress(codes, mask, n_bits), _extract_bit_by_bit(codes, mask, n_bits))


@pytest.mark.parametrize("numpy_count", [True, False])
def test_popcount_counts_the_set_bits_of_wide_masks(numpy_count, monkeypatch):
    # NumPy 2's bitwise_count, or (NumPy 1) the byte table
    if not numpy_count:
        monkeypatch.delattr(np, "bitwise_count", raising=False)
    rng = np.random.default_rng(0)
    values = rng.integers(0, 1 << 62, size=2000, dtype=np.int64)
    values[:3] = [0, (1 << 62) - 1, 1 << 61]
    expected = np.array([bin(int(v)).count("1") for v in values])
    assert np.array_equal(popcount(values), expected)
    assert np.array_equal(popcount(values.astype(np.uint64) | np.uint64(1 << 63)), expected + 1)


@pytest.mark.parametrize("n_bits", [1, 63, 64, 65, 130])
def test_bit_words_keep_every_bit_of_python_sets_across_words(n_bits):
    rng = np.random.default_rng(n_bits)
    sets = [int(rng.integers(0, 2, size=n_bits) @ (1 << np.arange(n_bits, dtype=object))) for _ in range(50)]
    sets[:2] = [0, (1 << n_bits) - 1]
    words = bit_words(sets, n_bits)
    assert words.shape == (50, -(-n_bits // 64))
    rebuilt = [sum(int(w) << (64 * k) for k, w in enumerate(row)) for row in words]
    assert rebuilt == sets
    assert popcount(words).sum(axis=1).tolist() == [s.bit_count() for s in sets]
