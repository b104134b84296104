"""What an additive fit could screen on the case/control design of ``screen_recall.py``: a NumPy
sketch, not a model of this package.

Each feature's function is fitted alone on the training folds (a Newton step of the log-loss from
the base rate, for each basis function separately) and scored on the held-out folds as the
selector scores a booster's shares (the second-order gain, ``sum r f - h/2 sum f^2``), pooled over
the same stratified 3 folds; recall is that of the top 20.  The other features' fits are ignored
(no cross terms), so this is an optimistic bound for the shapes compared:

- ``linear``: ``f`` linear in the standardised column;
- ``grid K``: ``K`` steps at fixed quantiles, averaged;
- ``random K``: ``K`` steps at random quantiles (leaves of at least 20 rows), averaged;
- ``full |t|`` for scale: the case/control mean difference on all rows, no held-out rows.

    python benchmarks/screen_additive.py 9
"""

from __future__ import annotations

import sys

import numpy as np
from screen_recall import case_control
from sklearn.model_selection import StratifiedKFold

HESSIAN = 0.25  # p (1 - p) at the base rate of a balanced design


def steps(train: np.ndarray, rows: np.ndarray, quantiles: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Each column's Newton step at its own quantile, fitted on ``train``, read on ``rows``."""
    ordered = np.sort(train, axis=0)
    threshold = ordered[(quantiles * (len(train) - 1)).astype(int), np.arange(train.shape[1])]
    left = train <= threshold
    n_left = left.sum(0)
    n_right = len(train) - n_left
    usable = (n_left >= 20) & (n_right >= 20)
    left_value = (g[:, None] * left).sum(0) / (HESSIAN * np.maximum(n_left, 1))
    right_value = (g[:, None] * ~left).sum(0) / (HESSIAN * np.maximum(n_right, 1))
    return np.where(rows <= threshold, left_value, right_value) * usable


def fitted(kind: str, train: np.ndarray, test: np.ndarray, y: np.ndarray, rng) -> np.ndarray:
    """Each feature's fitted function on the held-out rows."""
    g = y - y.mean()
    if kind == "linear":
        mean, sd = train.mean(0), train.std(0)
        slope = ((train - mean) / sd * g[:, None]).sum(0) / (HESSIAN * len(g))
        return slope * (test - mean) / sd
    shape, k = kind.split()
    k = int(k)
    total = np.zeros_like(test)
    for i in range(k):
        if shape == "grid":
            quantiles = np.full(train.shape[1], (i + 1) / (k + 1))
        else:
            quantiles = rng.uniform(0.02, 0.98, train.shape[1])
        total += steps(train, test, quantiles, g) / k
    return total


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    kinds = ["linear", "grid 1", "grid 7", "grid 15", "random 4", "random 16"]
    recalls: dict[str, list[float]] = {kind: [] for kind in ["full |t|", *kinds]}
    rng = np.random.default_rng(0)
    for seed in range(seeds):
        X, y, truth = case_control(seed)
        full = np.abs(((X - X.mean(0)) / X.std(0)).T @ (y - y.mean()))
        recalls["full |t|"].append(np.isin(np.argsort(-full)[:20], truth).mean())
        folds = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(X, y))
        for kind in kinds:
            gain = np.zeros(X.shape[1])
            for train, test in folds:
                f = fitted(kind, X[train], X[test], y[train], rng)
                r = y[test] - y[train].mean()
                gain += f.T @ r - HESSIAN / 2 * (f**2).sum(0)
            recalls[kind].append(np.isin(np.argsort(-gain)[:20], truth).mean())
    for kind, values in recalls.items():
        print(f"{kind:>10}: {', '.join(f'{v:.2f}' for v in values)}  mean {np.mean(values):.3f}")


if __name__ == "__main__":
    main()
