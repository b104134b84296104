"""The cells' bit helpers (``kernels.batching.cells``) read codes a byte at a time through tables;
they must equal the bit-by-bit definitions at every width, across byte boundaries."""

from __future__ import annotations

import numpy as np
import pytest

from shap_rsq.kernels.batching.cells import _popcount, compress


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


def test_popcount_counts_the_set_bits_of_wide_masks():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 1 << 62, size=2000, dtype=np.int64)
    values[:3] = [0, (1 << 62) - 1, 1 << 61]
    expected = np.array([bin(int(v)).count("1") for v in values])
    assert np.array_equal(_popcount(values), expected)
