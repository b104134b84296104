"""Interaction shares of R²: which pairs of features explain y together, on a simulation with product terms.

The paper's simulation study (``examples/paper_reproduction.py``) draws independent features, adds
nuisance features and Gaussian noise, and fits XGBoost; its models b and c add product terms.  Here
the products are the whole signal of four of the features:

    y = x0 x1 + x2 x3 + x4 + e,    x ~ N(0, I_10),    e ~ N(0, 0.5^2)

so x0..x3 have no main effect at all.  With independent features the R² game of ``rsq`` gives each
pair the variance of the model's part that needs both features, over Var y.  In the population:
Var y = 3.25; the pairs (x0, x1) and (x2, x3) each carry an interaction share of 1 / 3.25 = 0.308,
every other pair 0; x4 has a main effect of 0.308; and each of x0..x3 has a share of half its pair's,
0.154, with a main effect of 0.  The script fits XGBoost on 5,000 rows, computes
``rsq_interactions`` on 5,000 held-out rows, prints the strongest pairs next to these values, checks
them (it fails if the known pairs stop carrying the interaction or another pair gets a share), and
draws the heatmap.  Run it from any folder (a few seconds):

    pip install ".[xgboost]" && python examples/interactions.py --out results

It writes ``interactions.txt`` and ``interactions.png`` into ``--out`` (default: the current folder).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.metrics import r2_score
from threadpoolctl import threadpool_limits

from shap_rsq import RSquaredExplainer, plots

P, SIGMA = 10, 0.5
PAIRS = (("x0", "x1"), ("x2", "x3"))  # the product terms
VAR_Y = 2.0 + 1.0 + SIGMA**2  # two products of independent N(0, 1) (variance 1 each), x4, the noise
PAIR_SHARE = 1.0 / VAR_Y  # each product is a pure interaction of its two features
# how far the estimates may be from the population: the fitted model and 5,000 rows are not the population
CLOSE, NEAR_ZERO = 0.05, 0.02


def simulate(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    X = pd.DataFrame(rng.normal(size=(n, P)), columns=[f"x{j}" for j in range(P)])
    y = X["x0"] * X["x1"] + X["x2"] * X["x3"] + X["x4"] + rng.normal(0.0, SIGMA, n)
    return X, y.to_numpy()


def population(names: list[str]) -> pd.DataFrame:
    """The population's matrix: half of each product's share off the diagonal, x4's main effect on it."""
    matrix = pd.DataFrame(0.0, index=names, columns=names)
    for a, b in PAIRS:
        matrix.loc[a, b] = matrix.loc[b, a] = PAIR_SHARE / 2
    matrix.loc["x4", "x4"] = PAIR_SHARE
    return matrix


def other_pairs(names: list[str]) -> list[tuple[str, str]]:
    """Every pair without a product term."""
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :] if (a, b) not in PAIRS]


def report(matrix: pd.DataFrame, strongest: pd.DataFrame, model_rsq: float, seconds: float) -> str:
    names = list(matrix.index)
    truth = population(names)
    pair = matrix + matrix.T  # a pair's whole share: the matrix holds half of it in each of its two cells
    others = other_pairs(names)
    largest = max(others, key=lambda ab: abs(pair.loc[ab]))
    rows = [(f"interaction {a} x {b}", pair.loc[a, b], 2 * truth.loc[a, b]) for a, b in PAIRS]
    rows += [
        (f"largest other, {' x '.join(largest)}", pair.loc[largest], 0.0),
        (f"sum of the {len(others)} others", sum(pair.loc[ab] for ab in others), 0.0),
    ]
    for name in ("x0", "x1", "x2", "x3", "x4"):
        rows.append((f"{name}: share", matrix.loc[name].sum(), truth.loc[name].sum()))
        rows.append((f"{name}: main effect", matrix.loc[name, name], truth.loc[name, name]))
    lines = [
        f"y = x0 x1 + x2 x3 + x4 + e, {P} features; held-out R² of the model {model_rsq:.3f} "
        f"(population {3.0 / VAR_Y:.3f}); interactions computed in {seconds:.2f} s",
        "",
        "strongest pairs (rsq_interactions(X, y, top_k=5): each pair's share of R²)",
        "",
        strongest.to_string(index=False, float_format="{:.4f}".format),
        "",
        f"  {'':<26}{'estimate':>10}{'population':>12}",
        *(f"  {label:<26}{estimate:>10.4f}{value:>12.4f}" for label, estimate, value in rows),
    ]
    return "\n".join(lines)


def check(matrix: pd.DataFrame) -> None:
    """Fail loudly if the known pairs stop carrying the interactions or another pair gets a share."""
    pair = matrix + matrix.T
    for a, b in PAIRS:
        assert abs(pair.loc[a, b] - PAIR_SHARE) < CLOSE, f"{a} x {b}: {pair.loc[a, b]:.4f}, expected {PAIR_SHARE:.4f}"
        for name in (a, b):  # a product term is no main effect of either feature
            assert abs(matrix.loc[name, name]) < NEAR_ZERO, f"{name}'s main effect {matrix.loc[name, name]:.4f}"
    for a, b in other_pairs(list(matrix.index)):
        assert abs(pair.loc[a, b]) < NEAR_ZERO, f"{a} x {b} has no product term but a share of {pair.loc[a, b]:.4f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="folder for interactions.txt and .png (default: here)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated rows")
    args = parser.parse_args(argv)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)

    import xgboost

    rng = np.random.default_rng(args.seed)
    X_train, y_train = simulate(5000, rng)
    X_test, y_test = simulate(5000, rng)
    # one OpenMP thread: these small fits are not faster with more, and the machine may be shared
    with threadpool_limits(limits=1, user_api="openmp"):
        model = xgboost.XGBRegressor(n_estimators=500, max_depth=3, learning_rate=0.1, n_jobs=1, random_state=0)
        model.fit(X_train, y_train)
        explainer = RSquaredExplainer(model)
        start = time.perf_counter()
        matrix = explainer.rsq_interactions(X_test, y_test)  # (p, p): row j sums to x_j's share of R²
        seconds = time.perf_counter() - start
        strongest = explainer.rsq_interactions(X_test, y_test, top_k=5)  # never forms the p x p matrix
    model_rsq = r2_score(y_test, model.predict(X_test))

    text = report(matrix, strongest, model_rsq, seconds)
    print(text)
    check(matrix)
    (folder / "interactions.txt").write_text(text + "\n", encoding="utf-8")
    ax = plots.interaction_heatmap(matrix, max_display=P, title="Interaction shares of R², held-out rows", show=False)
    ax.figure.savefig(folder / "interactions.png", dpi=100, bbox_inches="tight")
    plt.close(ax.figure)
    print(f"\nknown pairs carry the interactions, the others none: checked.  Wrote {folder / 'interactions.png'}")


if __name__ == "__main__":
    main()
