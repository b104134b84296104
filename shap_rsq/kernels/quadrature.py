"""Gauss-Legendre rules on ``[0, 1]``: every family integrates its polynomial slopes in ``q`` with them.

An ``n``-point rule is exact for polynomials of degree below ``2 n``; each family counts the nodes
its integrands need (a tree's deepest path, a pair's two paths, a node's states).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["exact_nodes", "gauss_legendre"]


@lru_cache(maxsize=64)
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the ``n``-point Gauss-Legendre rule on ``[0, 1]``."""
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1.0) / 2.0, w / 2.0


def exact_nodes(features: int | np.ndarray) -> int | np.ndarray:
    """Nodes of the smallest rule that integrates exactly an integrand of degree below
    ``features`` (the slope of a product of that many linear factors): ``ceil(features / 2)``,
    at least 1; element by element on an array."""
    if isinstance(features, np.ndarray):
        return np.maximum(1, -(-features // 2))
    return max(1, -(-int(features) // 2))
