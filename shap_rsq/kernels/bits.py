"""Bit helpers of the kernels: codes and feature sets held as integers, read a byte or a word at a time.

A leaf code packs a row's pass bits along a leaf's path (``kernels.lca.plan``), a view's mask the
bits its items read (``kernels.batching.cells``), and a feature set the features of a leaf's path
(``kernels.leaf_paths``); NumPy works on them element by element.
"""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["bit_words", "compress", "popcount"]


@cache
def _byte_tables() -> tuple[np.ndarray, np.ndarray]:
    """``extract[mask * 256 + code]``, the bits of the byte ``code`` at the set bits of the byte
    ``mask`` packed from bit 0 up, and ``popcount[mask]``: 64 KiB, built on first use."""
    mask, code = np.divmod(np.arange(1 << 16, dtype=np.int64), 256)
    extract = np.zeros(1 << 16, dtype=np.int64)
    rank = np.zeros(1 << 16, dtype=np.int64)
    for j in range(8):
        selected = (mask >> j) & 1
        extract |= ((code >> j) & selected) << rank
        rank += selected
    return extract.astype(np.uint8), rank[::256].astype(np.int64)


def compress(code: np.ndarray, mask: np.ndarray, n_bits: int) -> np.ndarray:
    """The bits of ``code`` at the set bits of ``mask``, packed from bit 0 up (a parallel bit
    extract, element by element).

    A byte at a time through a table of every (mask, code) byte pair: leaf codes of trees to
    depth 8 take one lookup where a pass per bit took eight (a fifth of the cells' set-up).
    """
    extract, counts = _byte_tables()
    out = np.zeros(code.shape, dtype=np.int64)
    rank = np.zeros(code.shape, dtype=np.int64)
    for shift in range(0, n_bits, 8):
        m = (mask >> shift) & 255
        part = extract[(m << 8) | ((code >> shift) & 255)].astype(np.int64)
        out |= part << rank if shift else part
        rank += counts[m]
    return out


def popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each element of a non-negative integer array, as int64: NumPy 2's
    ``bitwise_count``, else a byte at a time through a table."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values).astype(np.int64)
    table = _byte_tables()[1]
    out = np.zeros(values.shape, dtype=np.int64)
    v = values.astype(np.uint64)
    while np.any(v):
        out += table[(v & np.uint64(255)).astype(np.int64)]
        v = v >> np.uint64(8)
    return out


def bit_words(sets: list[int], n_bits: int) -> np.ndarray:
    """``(len(sets), W)`` Python bit sets of at most ``n_bits`` bits as 64-bit words."""
    n_words = max(1, -(-n_bits // 64))
    raw = b"".join(s.to_bytes(8 * n_words, "little") for s in sets)
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(len(sets), n_words)
