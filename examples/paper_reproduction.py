"""Reproduce the simulation study of the Q-SHAP paper (Jiang, Zhang & Zhang, UAI 2025, section 5, appendix B).

Models (X1, X2, X3 ~ Bernoulli(0.6, 0.7, 0.5), nuisance features ~ Bernoulli(0.5) up to p = 100,
noise N(0, sigma^2) with sigma in {0.5, 1, 1.5}):

    a.  Y = 4 X1 - 5 X2 + 6 X3 + e
    b.  Y = 4 X1 - 5 X2 + 6 X3 + 3 X1 X2 - X1 X3 + e
    c.  Y = 4 X1 - 5 X2 + 6 X3 + 3 X1 X2 - X1 X2 X3 + e

For each data set, an XGBoost model (depth 1, 2, 3 for a, b, c) is tuned as in the paper by 5-fold
cross-validation over learning rates {0.01, 0.05, 0.1} and 50, 100, 200, ..., 1000 trees, and each
feature's R² is computed on the training data with shap-rsq.  The script prints

1. the exact population R² shares, next to the paper's appendix table;
2. the mean Q-SHAP estimates for all nine settings, against those values;
3. the paper's Table 1 (bias and its spread over data sets at n = 1000, p = 100, sigma = 1.5) for
   Q-SHAP and SAGE (package ``sage-importance``, on fewer data sets because it is slow),

and draws the biases.  Run it from any folder (about 25 minutes on 2 cores):

    pip install ".[bench]"
    python examples/paper_reproduction.py --out results                   # 30 data sets, SAGE on 10
    python examples/paper_reproduction.py --replicates 2 --sage-replicates 0 --out /tmp/check

It writes ``paper_reproduction.txt``, ``.csv`` and ``.png`` into ``--out`` (default: the current
folder); the documentation shows those of the first command, copied to ``docs/examples/`` and
``docs/_static/``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

FEATURE_P = (0.6, 0.7, 0.5)
SIGMAS = (0.5, 1.0, 1.5)
DEPTH = {"a": 1, "b": 2, "c": 3}
LEARNING_RATES = (0.01, 0.05, 0.1)
N_TREES = (50, *range(100, 1001, 100))
COLUMNS = ("X1", "X2", "X3", "Sum")
SAGE_PERMUTATIONS = 2048

# Appendix B, Table "Theoretical R² in simulated models": (total, X1, X2, X3)
PAPER_THEORY = {
    ("a", 0.5): (0.9864, 0.2094, 0.2863, 0.4907),
    ("a", 1.0): (0.9477, 0.2012, 0.2750, 0.4715),
    ("a", 1.5): (0.8894, 0.1888, 0.2581, 0.4425),
    ("b", 0.5): (0.9860, 0.4390, 0.1341, 0.4129),
    ("b", 1.0): (0.9459, 0.4212, 0.1286, 0.3961),
    ("b", 1.5): (0.8860, 0.3945, 0.1205, 0.3710),
    ("c", 0.5): (0.9868, 0.4288, 0.1450, 0.4130),
    ("c", 1.0): (0.9491, 0.4124, 0.1395, 0.3972),
    ("c", 1.5): (0.8925, 0.3878, 0.1312, 0.3735),
}
# Table 1: bias (SE) of X1, X2, X3 and the sum, n = 1000, p = 100, sigma = 1.5, 1000 data sets
PAPER_TABLE1 = {
    ("a", "Q-SHAP"): ((0.006, 0.011), (0.008, 0.014), (0.015, 0.015), (0.031, 0.014)),
    ("a", "SAGE"): ((-0.015, 0.015), (-0.017, 0.016), (-0.021, 0.016), (-0.053, 0.020)),
    ("b", "Q-SHAP"): ((0.008, 0.017), (0.002, 0.009), (0.009, 0.016), (0.024, 0.019)),
    ("b", "SAGE"): ((-0.026, 0.016), (-0.014, 0.011), (-0.024, 0.014), (-0.062, 0.019)),
    ("c", "Q-SHAP"): ((0.005, 0.017), (0.002, 0.009), (0.005, 0.015), (0.021, 0.016)),
    ("c", "SAGE"): ((-0.025, 0.016), (-0.014, 0.012), (-0.024, 0.014), (-0.062, 0.020)),
}


def signal(model: str, x1: np.ndarray, x2: np.ndarray, x3: np.ndarray) -> np.ndarray:
    linear = 4 * x1 - 5 * x2 + 6 * x3
    if model == "a":
        return linear
    if model == "b":
        return linear + 3 * x1 * x2 - x1 * x3
    return linear + 3 * x1 * x2 - x1 * x2 * x3


# ---------------------------------------------------------------- exact population values


def theoretical_r2(model: str, sigma: float) -> tuple[float, float, float, float]:
    """Total R² and the Shapley shares of X1..X3 of v(S) = Var E[Y | X_S] / Var Y, over the 8 cells."""
    cells = np.array(list(itertools.product((0, 1), repeat=3)))
    prob = np.prod(np.where(cells == 1, FEATURE_P, 1 - np.array(FEATURE_P)), axis=1)
    values = signal(model, *cells.T)
    mean = prob @ values
    var_y = prob @ (values - mean) ** 2 + sigma**2

    def explained(subset: tuple[int, ...]) -> float:
        total = 0.0
        for key in itertools.product((0, 1), repeat=len(subset)):
            inside = np.all(cells[:, list(subset)] == key, axis=1)
            weight = prob[inside].sum()
            total += weight * (prob[inside] @ values[inside] / weight - mean) ** 2
        return total

    shares = []
    for j in range(3):
        others = [k for k in range(3) if k != j]
        share = 0.0
        for size in range(3):
            for subset in itertools.combinations(others, size):
                weight = math.factorial(size) * math.factorial(2 - size) / math.factorial(3)
                share += weight * (explained(tuple(sorted((*subset, j)))) - explained(subset))
        shares.append(share / var_y)
    return (explained((0, 1, 2)) / var_y, *shares)


# ---------------------------------------------------------------- one simulated data set


def simulate(model: str, sigma: float, n: int, p: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    probabilities = np.r_[FEATURE_P, np.full(p - 3, 0.5)]
    X = (rng.random((n, p)) < probabilities).astype(np.float64)
    y = signal(model, X[:, 0], X[:, 1], X[:, 2]) + rng.normal(0.0, sigma, n)
    return X, y


def tuned_xgboost(X: np.ndarray, y: np.ndarray, depth: int, seed: int, max_trees: int = max(N_TREES)):
    """XGBoost with learning rate and number of trees chosen by 5-fold CV, as in the paper."""
    import xgboost

    data = xgboost.DMatrix(X, label=y)
    best = (np.inf, None, None)
    grid = [trees for trees in N_TREES if trees <= max_trees] or [max_trees]
    for rate in LEARNING_RATES:
        params = {"max_depth": depth, "eta": rate, "objective": "reg:squarederror", "nthread": 1, "seed": seed}
        curve = xgboost.cv(params, data, num_boost_round=max(grid), nfold=5, seed=seed)["test-rmse-mean"]
        for trees in grid:
            best = min(best, (float(curve.iloc[trees - 1]), rate, trees), key=lambda t: t[0])
    _, rate, trees = best
    model = xgboost.XGBRegressor(
        n_estimators=trees, learning_rate=rate, max_depth=depth, n_jobs=1, random_state=seed, tree_method="hist"
    )
    return model.fit(X, y), rate, trees


def sage_r2(model, X: np.ndarray, y: np.ndarray, seed: int, background: int) -> np.ndarray:
    """SAGE values of the mean squared error (marginal imputer), divided by Var(y)."""
    import sage

    rng = np.random.default_rng(seed)
    imputer = sage.MarginalImputer(model, X[rng.choice(len(X), background, replace=False)])
    estimator = sage.PermutationEstimator(imputer, "mse", random_state=seed)
    # converged (sage's default 0.025) or capped, so one data set takes about a minute on one core
    values = estimator(X, y, batch_size=128, n_permutations=SAGE_PERMUTATIONS, bar=False).values
    return values / np.var(y)


def replicate(
    model: str, sigma: float, index: int, n: int, p: int, with_sage: bool, background: int, max_trees: int
) -> list[dict]:
    """Fit one data set and return one record per method: shares of X1..X3, their sum, and timings."""
    from shap_rsq import RSquaredExplainer

    seed = int(np.random.SeedSequence([ord(model), int(sigma * 10), index]).generate_state(1)[0])
    X, y = simulate(model, sigma, n, p, np.random.default_rng(seed))
    start = time.perf_counter()
    fitted, rate, trees = tuned_xgboost(X, y, DEPTH[model], seed, max_trees)
    fit_seconds = time.perf_counter() - start
    base = {"model": model, "sigma": sigma, "replicate": index, "n": n, "p": p}
    base.update(rate=rate, trees=trees, fit_s=fit_seconds)

    start = time.perf_counter()
    shares = np.asarray(RSquaredExplainer(fitted).rsq(X, y))
    records = [{**base, **_summary(shares), "method": "Q-SHAP", "seconds": time.perf_counter() - start}]
    if with_sage:
        start = time.perf_counter()
        shares = sage_r2(fitted, X, y, seed, background)
        records.append({**base, **_summary(shares), "method": "SAGE", "seconds": time.perf_counter() - start})
    return records


def _summary(shares: np.ndarray) -> dict:
    return {"X1": shares[0], "X2": shares[1], "X3": shares[2], "Sum": shares.sum(), "nuisance": shares[3:].sum()}


# ---------------------------------------------------------------- reports


def theory_report() -> str:
    lines = ["1. Population R²: exact values computed here vs the paper's appendix B table", ""]
    lines.append(f"  {'model':<5} {'sigma':>5}  {'Total':>15}  {'X1':>15}  {'X2':>15}  {'X3':>15}")
    worst = 0.0
    for (model, sigma), paper in PAPER_THEORY.items():
        exact = theoretical_r2(model, sigma)
        worst = max(worst, *(abs(e - q) for e, q in zip(exact, paper, strict=True)))
        cells = "  ".join(f"{e:.4f} ({q:.4f})" for e, q in zip(exact, paper, strict=True))
        lines.append(f"  {model:<5} {sigma:>5.1f}  {cells}")
    lines += ["", f"  exact (paper); largest difference {worst:.4f}: the paper's last digit, rounded differently."]
    return "\n".join(lines)


def estimates_report(results: pd.DataFrame) -> str:
    qshap = results[results["method"] == "Q-SHAP"]
    count = qshap.groupby(["model", "sigma"]).size().min()
    n, p = int(results["n"].iloc[0]), int(results["p"].iloc[0])
    lines = [
        f"2. Q-SHAP feature R² on the training data: mean (SD) over {count} data sets per setting,",
        f"   n = {n}, p = {p}, against the population value (theory)",
        "",
        f"  {'model':<5} {'sigma':>5}  " + "  ".join(f"{c:>23}" for c in COLUMNS) + f"  {f'{p - 3} nuisance':>12}",
    ]
    for (model, sigma), group in qshap.groupby(["model", "sigma"]):
        theory = theoretical_r2(model, sigma)
        truth = dict(zip(COLUMNS, (*theory[1:], theory[0]), strict=True))
        cells = "  ".join(f"{group[c].mean():.3f} ({group[c].std():.3f}) [{truth[c]:.3f}]" for c in COLUMNS)
        lines.append(f"  {model:<5} {sigma:>5.1f}  {cells}  {group['nuisance'].mean():>12.4f}")
    lines += ["", f"  mean (SD) [theory]; last column: the {p - 3} nuisance features' R² summed, mean over data sets."]
    return "\n".join(lines)


def table1_report(results: pd.DataFrame) -> str:
    table = results[results["sigma"] == 1.5]
    n, p = int(results["n"].iloc[0]), int(results["p"].iloc[0])
    lines = [
        f"3. Table 1: bias = estimate - theory, mean (SD over data sets), n = {n}, p = {p}, sigma = 1.5",
        "   'here' was measured by this script; 'paper' is the paper's Table 1 (1000 data sets; its 'SE'",
        "   is the spread over data sets, which SD reports here)",
        "",
        f"  {'model':<5} {'method':<16} {'data sets':>9}  " + "  ".join(f"{c:>15}" for c in COLUMNS),
    ]
    for model in DEPTH:
        theory = theoretical_r2(model, 1.5)
        truth = dict(zip(COLUMNS, (*theory[1:], theory[0]), strict=True))
        for method in ("Q-SHAP", "SAGE"):
            group = table[(table["model"] == model) & (table["method"] == method)]
            if len(group):
                cells = "  ".join(
                    f"{(group[c] - truth[c]).mean():+.3f} ({(group[c] - truth[c]).std():.3f})" for c in COLUMNS
                )
                lines.append(f"  {model:<5} {method + ', here':<16} {len(group):>9}  {cells}")
            paper = "  ".join(f"{m:+.3f} ({s:.3f})" for m, s in PAPER_TABLE1[(model, method)])
            lines.append(f"  {model:<5} {method + ', paper':<16} {1000:>9}  {paper}")
    return "\n".join(lines)


def timing_report(results: pd.DataFrame, background: int) -> str:
    seconds = results.groupby(["method", "model"])["seconds"].agg(["mean", "max", "size"])
    lines = ["4. Seconds per data set (one core; XGBoost tuning excluded)", ""]
    for (method, model), row in seconds.iterrows():
        lines.append(
            f"  {method:<7} model {model}: mean {row['mean']:7.2f} s, max {row['max']:7.2f} s "
            f"({int(row['size'])} data sets)"
        )
    lines.append(
        f"  SAGE: permutation estimator, marginal imputer with {background} background rows, stopped at "
        f"convergence 0.025 or {SAGE_PERMUTATIONS} permutations."
    )
    lines.append(f"  XGBoost tuning: mean {results['fit_s'].mean():.1f} s per data set.")
    return "\n".join(lines)


def draw(results: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(12, 4), sharey=True)
    table = results[results["sigma"] == 1.5]
    for ax, model in zip(axes, DEPTH, strict=True):
        theory = theoretical_r2(model, 1.5)
        truth = dict(zip(COLUMNS, (*theory[1:], theory[0]), strict=True))
        for offset, method, color in ((-0.18, "Q-SHAP", "#1f6fb4"), (0.18, "SAGE", "#e08a1e")):
            group = table[(table["model"] == model) & (table["method"] == method)]
            if len(group) == 0:
                continue
            bias = [group[c].to_numpy() - truth[c] for c in COLUMNS]
            box = ax.boxplot(bias, positions=np.arange(4) + offset, widths=0.3, patch_artist=True, showfliers=False)
            for patch in box["boxes"]:
                patch.set(facecolor=color, alpha=0.5)
            paper = [m for m, _ in PAPER_TABLE1[(model, method)]]
            ax.scatter(np.arange(4) + offset, paper, marker="D", color=color, edgecolor="black", zorder=3,
                       label=f"{method} (paper's mean)")  # fmt: skip
            ax.plot([], [], color=color, linewidth=6, alpha=0.5, label=f"{method} (here)")
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(4), list(COLUMNS))
        ax.set_title(f"model {model} (XGBoost depth {DEPTH[model]})")
    axes[0].set_ylabel("bias of feature R² (estimate \u2212 theory)")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=4, frameon=False)  # below the panels, over no data
    n, p = int(results["n"].iloc[0]), int(results["p"].iloc[0])
    figure.suptitle(f"Table 1 of the paper: n = {n}, p = {p}, \u03c3 = 1.5")
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    figure.savefig(path, dpi=120)
    plt.close(figure)


# ---------------------------------------------------------------- driver


def run(args: argparse.Namespace) -> pd.DataFrame:
    from joblib import Parallel, delayed

    tasks = [
        (model, sigma, index, sigma == 1.5 and index < args.sage_replicates)
        for model in DEPTH
        for sigma in SIGMAS
        for index in range(args.replicates)
    ]
    tasks.sort(key=lambda task: not task[3])  # the slow SAGE tasks first, so the workers finish together
    batches = Parallel(n_jobs=args.jobs, verbose=5)(
        delayed(replicate)(model, sigma, index, args.n, args.p, with_sage, args.background, args.max_trees)
        for model, sigma, index, with_sage in tasks
    )
    return pd.DataFrame([record for batch in batches for record in batch]).sort_values(["method", "model", "sigma"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=30, help="data sets per setting (paper: 1000)")
    parser.add_argument("--sage-replicates", type=int, default=10, help="data sets per model given to SAGE")
    parser.add_argument("--background", type=int, default=32, help="background rows of SAGE's imputer")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--p", type=int, default=100)
    parser.add_argument("--max-trees", type=int, default=max(N_TREES), help="largest number of trees tried")
    parser.add_argument("--jobs", type=int, default=2, help="processes over data sets")
    parser.add_argument("--out", default=".", help="folder for the .txt, .csv and .png outputs (default: here)")
    parser.add_argument("--reuse", action="store_true", help="redraw the reports from the saved .csv")
    args = parser.parse_args(argv)

    output = Path(args.out) / "paper_reproduction"
    output.parent.mkdir(parents=True, exist_ok=True)
    if args.reuse:
        results = pd.read_csv(output.with_suffix(".csv"))
    else:
        start = time.perf_counter()
        results = run(args)
        results["run_minutes"] = (time.perf_counter() - start) / 60
        results["jobs"] = args.jobs
        results.to_csv(output.with_suffix(".csv"), index=False)
    report = "\n\n".join(
        [theory_report(), estimates_report(results), table1_report(results), timing_report(results, args.background)]
    )
    report += f"\n\nTotal run time {results['run_minutes'].iloc[0]:.1f} min with {results['jobs'].iloc[0]} processes."
    print(report)
    output.with_suffix(".txt").write_text(report + "\n", encoding="utf-8")
    draw(results, output.with_suffix(".png"))


if __name__ == "__main__":
    main()
