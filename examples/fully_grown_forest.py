"""Shares of R² for a random forest at scikit-learn's defaults (fully grown trees), estimated with standard errors.

A forest at its defaults grows every tree until its leaves are pure: on 2,000 rows, about 1,260
leaves and depth 25-30 a tree.  Exact shares cost at least ``leaves²`` per row and tree, an hour or
more for such a forest (``explainer.rsq`` warns with its estimate before it starts).  ``estimate_rsq`` is the
opt-in alternative: the exact per-row shares of a few rows drawn at random, plus, for every row,
the part each tree's TreeSHAP values explain; it is unbiased and reports a standard error for
each share.  The data: 20 standard normal features, of which five carry the signal,

    y = x0 + sin(2 x1) + x2 x3 + 0.5 x4² + e,    e ~ N(0, 1),

so x5..x19 should get shares near 0 on held-out rows (x2 and x3 act only through their product,
which small forests catch late).  The script prints shap's TreeSHAP time on the same rows for
scale, the estimate's time (with progress bars), the estimates with their standard errors, and checks
that the five signal features lead and the noise features stay within a few standard errors of
0.  ``--exact`` also computes the exact shares (minutes on the small setting) and prints how many
standard errors each estimate is from them.  Run it from any folder:

    python examples/fully_grown_forest.py                       # 30 trees on 2,000 rows: 5-10 minutes
    python examples/fully_grown_forest.py --trees 5 --rows 300 --exact   # a minute, with the exact check
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import shap
from sklearn.ensemble import RandomForestRegressor

from shap_rsq import RSquaredExplainer, estimate_rsq

P, SIGNAL = 20, 5


def simulate(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    X = pd.DataFrame(rng.normal(size=(n, P)), columns=[f"x{j}" for j in range(P)])
    x = X.to_numpy()
    y = x[:, 0] + np.sin(2 * x[:, 1]) + x[:, 2] * x[:, 3] + 0.5 * x[:, 4] ** 2 + rng.normal(size=n)
    return X, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", type=int, default=30)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--n-sample", type=int, default=10, help="rows whose exact per-row shares are computed")
    parser.add_argument("--exact", action="store_true", help="also compute the exact shares and compare")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    X_train, y_train = simulate(args.rows, rng)
    X, y = simulate(args.rows, rng)  # held-out rows: on its own training rows a fully grown forest is near R² 1
    model = RandomForestRegressor(args.trees, random_state=0, n_jobs=-1).fit(X_train, y_train)
    leaves = np.mean([tree.get_n_leaves() for tree in model.estimators_])
    depth = max(tree.get_depth() for tree in model.estimators_)
    # progress bars, each with its time estimate: the TreeSHAP pass over every tree, then the rows drawn
    explainer = RSquaredExplainer(model, progress=True)
    print(f"RandomForestRegressor({args.trees}) at its defaults on {args.rows:,} rows x {P} features:")
    print(f"  {leaves:.0f} leaves a tree on average, depth up to {depth}")
    print(f"  R² on {len(y):,} held-out rows: {model.score(X, y):.3f}")

    start = time.perf_counter()
    shap.TreeExplainer(model).shap_values(X)
    treeshap = time.perf_counter() - start
    start = time.perf_counter()
    estimate = estimate_rsq(explainer, X, y, n_sample=args.n_sample, random_state=0)
    seconds = time.perf_counter() - start
    print(f"  shap's TreeSHAP of the predictions: {treeshap:.1f} s")
    print(f"  estimate_rsq(n_sample={args.n_sample}): {seconds:.1f} s ({seconds / treeshap:.1f}x TreeSHAP)\n")

    table = pd.DataFrame({"share": estimate.values, "standard error": estimate.standard_error})
    if args.exact:
        exact = explainer.rsq(X, y)
        table["exact"] = exact
        table["errors / SE"] = (table["share"] - exact) / table["standard error"]
    print(table.round(4).to_string())
    print(f"\nsum of the estimates {table['share'].sum():.4f}: close to, not exactly, the model's R² on these rows")
    print(f"{model.score(X, y):.4f} (the exact shares add up to it)")

    main_effects, noise = table.loc[["x0", "x1", "x4"]], table.iloc[SIGNAL:]
    assert main_effects["share"].min() > noise["share"].max(), "a noise feature outranks x0, x1 or x4"
    assert np.all(np.abs(noise["share"]) < 0.03), "a noise feature takes a share beyond 0.03"
    if args.exact:
        assert np.abs(table["share"] - table["exact"]).max() < 0.03, "an estimate is far from the exact share"
    print("x0, x1 and x4 lead, the noise features stay near 0: checked")


if __name__ == "__main__":
    main()
