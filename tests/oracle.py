"""Brute-force reference: enumerate every feature subset (p <= 8).

Independent of the library's kernel: it walks each tree to compute the
path-dependent conditional expectation m_S(x) and applies the Shapley formula
to the sequential tree games of the definition in ``docs/method.md``.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from math import factorial

import numpy as np

from shap_rsq.models.forest import Forest, TreeTable


def conditional_expectation(tree: TreeTable, X: np.ndarray, known: frozenset[int]) -> np.ndarray:
    """m_S(x) for every row: follow x on known features, average children by cover otherwise."""

    def walk(node: int) -> np.ndarray:
        if tree.left[node] < 0:
            return np.full(X.shape[0], tree.value[node])
        left, right = int(tree.left[node]), int(tree.right[node])
        k = int(tree.feature[node])
        if k in known:
            x = X[:, k]
            go_left = np.where(np.isnan(x), tree.default[node] == left, x <= tree.threshold[node])
            return np.where(go_left, walk(left), walk(right))
        cover = tree.cover[node]
        rho_left = tree.cover[left] / cover if cover > 0 else 0.5
        rho_right = tree.cover[right] / cover if cover > 0 else 0.5
        return rho_left * walk(left) + rho_right * walk(right)

    return walk(0)


def shapley_weights(p: int) -> dict[int, float]:
    return {s: factorial(s) * factorial(p - s - 1) / factorial(p) for s in range(p)}


def shapley(game, p: int) -> np.ndarray:
    """Shapley values of ``game(frozenset) -> array`` (values may be vectors over rows)."""
    weight = shapley_weights(p)
    values = {}
    for size in range(p + 1):
        for subset in combinations(range(p), size):
            values[frozenset(subset)] = np.asarray(game(frozenset(subset)), dtype=float)
    phi = []
    for j in range(p):
        others = [k for k in range(p) if k != j]
        total = 0.0
        for size in range(p):
            for subset in combinations(others, size):
                s = frozenset(subset)
                total = total + weight[size] * (values[s | {j}] - values[s])
        phi.append(total)
    return np.array(phi)


def _games_setup(forest: Forest, X: np.ndarray, y: np.ndarray, w, players):
    """What both oracles start from: rows in the model's dtype, the players' features, the weights,
    SST, each tree's mean prediction and the forest's mean prediction (before any tree is known)."""
    X = forest.cast(X)
    members = [[j] for j in range(X.shape[1])] if players is None else [list(m) for m in players]
    w = np.ones(X.shape[0]) if w is None else np.asarray(w, dtype=float)
    sst = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    expected = [float(conditional_expectation(t, X[:1], frozenset())[0]) for t in forest.trees]
    f = forest.base_offset + sum(expected) + np.zeros(X.shape[0])
    return X, members, w, sst, expected, f


def rsq_oracle(forest: Forest, X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, players=None):
    """Feature R² ``(p,)`` and per-row contributions ``(n, p)`` by subset enumeration.

    ``players`` (a list of feature lists) makes each list one player: a coalition of players
    knows every feature of its members.  By default every feature is a player.
    """
    X, members, w, sst, expected, f = _games_setup(forest, X, y, w, players)
    n, p = X.shape[0], len(members)
    local = np.zeros((p, n))
    for tree, c in zip(forest.trees, expected, strict=True):
        r = y - f
        cache = {}

        def game(coalition, tree=tree, c=c, r=r, cache=cache):
            if coalition not in cache:
                known = frozenset(j for player in coalition for j in members[player])
                m = conditional_expectation(tree, X, known) - c
                cache[coalition] = -w * (m * m - 2.0 * r * m)
            return cache[coalition]

        local += shapley(game, p)
        f = f + conditional_expectation(tree, X, frozenset(range(X.shape[1]))) - c
    local = local.T / sst
    return local.sum(axis=0), local


def interaction_oracle(forest: Forest, X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, players=None):
    """Shapley interaction indices of the summed tree games ``(P, P)`` (zero diagonal) divided by
    SST, and per row ``(n, P, P)``, by subset enumeration (:func:`pair_indices`)."""
    X, members, w, sst, expected, f = _games_setup(forest, X, y, w, players)
    n, p = X.shape[0], len(members)
    local = np.zeros((p, p, n))
    for tree, c in zip(forest.trees, expected, strict=True):
        r = y - f

        def game(subset, tree=tree, c=c, r=r):
            known = frozenset(j for player in subset for j in members[player])
            m = conditional_expectation(tree, X, known) - c
            return -w * (m * m - 2.0 * r * m)

        local += pair_indices(game, p)
        f = f + conditional_expectation(tree, X, frozenset(range(X.shape[1]))) - c
    local = np.moveaxis(local, -1, 0) / sst
    return local.sum(axis=0), local


def pair_indices(game, p: int) -> np.ndarray:
    """Shapley interaction indices ``(p, p, n)`` (zero diagonal) of a game of ``p`` players whose value
    ``game(frozenset)`` is one number per row:
    ``I_jk = sum_S |S|! (p - |S| - 2)! / (p - 1)! [v(S+jk) - v(S+j) - v(S+k) + v(S)]``."""
    values = {frozenset(s): game(frozenset(s)) for size in range(p + 1) for s in combinations(range(p), size)}
    n = np.shape(values[frozenset()])[0]
    weight = {s: factorial(s) * factorial(p - s - 2) / factorial(p - 1) for s in range(p - 1)}
    out = np.zeros((p, p, n))
    for j, k in combinations(range(p), 2):
        others = [m for m in range(p) if m not in (j, k)]
        total = np.zeros(n)
        for size in range(p - 1):
            for subset in combinations(others, size):
                s = frozenset(subset)
                total += weight[size] * (values[s | {j, k}] - values[s | {j}] - values[s | {k}] + values[s])
        out[j, k] += total
        out[k, j] += total
    return out


def tree_shap_oracle(tree: TreeTable, X: np.ndarray) -> np.ndarray:
    """Path-dependent SHAP values of one tree ``(n, p)`` by subset enumeration."""
    p = X.shape[1]
    return shapley(lambda known: conditional_expectation(tree, X, known), p).T


def rsq_rational(forest: Forest, X: np.ndarray, y: np.ndarray) -> list[Fraction]:
    """Feature R² in exact rational arithmetic on the model's stored numbers (p <= 5, few rows).

    Leaf values, covers and targets are taken as the exact binary fractions they are stored as;
    nothing is rounded afterwards, so this is the reference for numerical error.
    """
    X = forest.cast(X)
    n, p = X.shape
    target = [Fraction(float(v)) for v in y]
    sst = sum((v - sum(target) / n) ** 2 for v in target)
    f = [Fraction(forest.base_offset)] * n
    expected = [_rational_expectation(tree, X[0], frozenset()) for tree in forest.trees]
    f = [f[i] + sum(expected) for i in range(n)]
    weight = {s: Fraction(factorial(s) * factorial(p - s - 1), factorial(p)) for s in range(p)}
    shares = [Fraction(0)] * p
    for tree, c in zip(forest.trees, expected, strict=True):
        residual = [target[i] - f[i] for i in range(n)]
        game = {}
        for size in range(p + 1):
            for subset in combinations(range(p), size):
                known = frozenset(subset)
                m = [_rational_expectation(tree, X[i], known) - c for i in range(n)]
                game[known] = -sum(m[i] * m[i] - 2 * residual[i] * m[i] for i in range(n))
        for j in range(p):
            others = [k for k in range(p) if k != j]
            for size in range(p):
                for subset in combinations(others, size):
                    s = frozenset(subset)
                    shares[j] += weight[size] * (game[s | {j}] - game[s])
        full = frozenset(range(p))
        f = [f[i] + _rational_expectation(tree, X[i], full) - c for i in range(n)]
    return [share / sst for share in shares]


def _rational_expectation(tree: TreeTable, x: np.ndarray, known: frozenset[int]) -> Fraction:
    def walk(node: int) -> Fraction:
        if tree.left[node] < 0:
            return Fraction(float(tree.value[node]))
        left, right = int(tree.left[node]), int(tree.right[node])
        k = int(tree.feature[node])
        if k in known:
            v = x[k]
            go_left = tree.default[node] == left if np.isnan(v) else v <= tree.threshold[node]
            return walk(left if go_left else right)
        cover = Fraction(float(tree.cover[node]))
        if cover == 0:
            return (walk(left) + walk(right)) / 2
        left_part = Fraction(float(tree.cover[left])) * walk(left)
        return (left_part + Fraction(float(tree.cover[right])) * walk(right)) / cover

    return walk(0)


def _loss_derivatives(loss: str, power: float, y: np.ndarray, margin: np.ndarray):
    """Gradient and Hessian of each deviance in the margin, written out here independently of the library."""
    if loss == "squared_error":
        return 2.0 * (margin - y), 2.0 + 0.0 * margin
    if loss == "log_loss":
        p = 1.0 / (1.0 + np.exp(-margin))
        return p - y, p * (1.0 - p)
    if loss == "poisson":
        return 2.0 * np.exp(margin) - 2.0 * y, 2.0 * np.exp(margin)
    if loss == "gamma":
        return 2.0 - 2.0 * y / np.exp(margin), 2.0 * y / np.exp(margin)
    # Tweedie: d/dF of 2 [-y mu^(1-p) / (1-p) + mu^(2-p) / (2-p)] with mu = exp(F)
    mu = np.exp(margin)
    return 2.0 * (mu ** (2 - power) - y * mu ** (1 - power)), 2.0 * (
        (2 - power) * mu ** (2 - power) + (power - 1) * y * mu ** (1 - power)
    )


def second_order_oracle(forests, X, y, w=None, loss="log_loss", power=0.0, players=None, interactions=False):
    """Shapley values of the second-order tree games ``-w [g d + h/2 d^2]``, ``d = m_S - c_t``, by subset
    enumeration: loss reductions ``(p,)``, per row ``(n, p)``, and each row's total of the games;
    with ``interactions=True`` instead the games' summed interaction indices ``(p, p)`` (zero diagonal).

    ``forests`` is one forest, or a softmax's forests (one per class, with their ``steps``): their
    trees are then played in the model's order, the class margins updated after each, with
    ``g = p_k - y_k`` and ``h = p_k (1 - p_k)`` of the softmax ``p``; ``y`` is then one-hot ``(n, K)``.
    """
    forests = [forests] if isinstance(forests, Forest) else list(forests)
    X = forests[0].cast(X)
    members = [[j] for j in range(X.shape[1])] if players is None else [list(m) for m in players]
    n, p = X.shape[0], len(members)
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    K = len(forests)
    expected = [[float(conditional_expectation(t, X[:1], frozenset())[0]) for t in f.trees] for f in forests]
    F = np.column_stack([f.base_offset + sum(e) + np.zeros(n) for f, e in zip(forests, expected, strict=True)])
    order = [(0, t) for t in range(forests[0].n_trees)]
    if K > 1:
        order = sorted(
            ((k, t) for k in range(K) for t in range(forests[k].n_trees)), key=lambda kt: forests[kt[0]].steps[kt[1]]
        )
    local = np.zeros((p, n))
    pairs = np.zeros((p, p, n))
    totals = np.zeros(n)
    for k, t in order:
        tree, c = forests[k].trees[t], expected[k][t]
        if K > 1:
            shifted = F - F.max(axis=1, keepdims=True)
            prob = np.exp(shifted[:, k]) / np.exp(shifted).sum(axis=1)
            g, h = prob - y[:, k], prob * (1 - prob)
        else:
            g, h = _loss_derivatives(loss, power, y, F[:, 0])

        def game(coalition, tree=tree, c=c, g=g, h=h):
            known = frozenset(j for player in coalition for j in members[player])
            d = conditional_expectation(tree, X, known) - c
            return -w * (g * d + 0.5 * h * d * d)

        if interactions:
            pairs += pair_indices(game, p)
        else:
            local += shapley(game, p)
        totals += game(frozenset(range(p)))
        F[:, k] += conditional_expectation(tree, X, frozenset(range(X.shape[1]))) - c
    if interactions:
        return pairs.sum(axis=2)
    return local.sum(axis=1), local.T, totals
