"""``estimate_rsq``: how often its intervals cover the exact shares, and its time on fully grown forests.

Two parts:

``coverage``: for models small enough to compute every row's exact contributions, draws of
``n_sample`` rows are simulated (``--draws`` of them, without replacement) from those
contributions and the rows' additive parts, with the arithmetic of ``estimate_rsq``
(``shap_rsq.explainer._estimate.scaled_sample``), with and without the control variate.  Per workload and
``n_sample``: the largest standard error, and the share of draws whose 95% interval (+-1.96
standard errors) covers the exact share, for the worst-covered share among those above 0.005.

``time``: a forest of 100 fully grown trees (``RandomForestRegressor()``, 2,000 rows, 20
features), out of reach of the exact path (its estimate is printed): ``shap.TreeExplainer(model)
.shap_values(X)`` against ``estimate_rsq`` at a few ``n_sample`` in the same process, with the
largest standard error, the largest difference between the first and last estimates (independent
draws) over the root of their summed variances, and the peak resident memory.

    python benchmarks/estimate.py coverage [--draws 400]
    python benchmarks/estimate.py time [--samples 10 40] [--trees 100]
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings
from importlib import metadata

import numpy as np


def _data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.5 * X[:, 4] ** 2 + rng.normal(size=n)
    return X, y


def _coverage_workloads():
    import xgboost
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    return {
        "xgb, 20 trees of depth 3": (2000, 8, xgboost.XGBRegressor(n_estimators=20, max_depth=3, random_state=0)),
        "xgb, 100 trees of depth 6": (2000, 8, xgboost.XGBRegressor(n_estimators=100, max_depth=6, random_state=0)),
        "forest, 10 trees of depth 4": (2000, 8, RandomForestRegressor(10, max_depth=4, random_state=0)),
        "forest, 30 trees of depth 7": (2000, 8, RandomForestRegressor(30, max_depth=7, random_state=0)),
        "forest, 5 fully grown trees": (600, 8, RandomForestRegressor(5, random_state=0)),
        "one fully grown tree": (600, 8, DecisionTreeRegressor(random_state=0)),
    }


def coverage(draws: int, sizes: tuple[int, ...]) -> None:
    from shap_rsq import RSquaredExplainer
    from shap_rsq.explainer._additive_part import additive_part
    from shap_rsq.explainer._estimate import scaled_sample

    print("| model | rows | n_sample | largest SE, plain | coverage, plain | largest SE, control | coverage, control |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (n, p, model) in _coverage_workloads().items():
        X, y = _data(n, p)
        model.fit(X, y)
        explainer = RSquaredExplainer(model)
        rows, target, weights, sst = explainer._inputs.for_rsq(X, y, None)
        every = np.arange(n)
        raw = explainer._decompose(rows.array, target, weights, local=True).values
        forests, caches = explainer._game_sets.get(None)
        order = np.concatenate([unit.trees for unit in caches[0].units(True)])
        part = additive_part(forests[0], order, rows.array, target, weights, every, 2 << 30)
        exact = raw.sum(axis=0) / sst
        assert np.allclose(part.total, part.sampled.sum(axis=0), atol=1e-9 * sst)
        shown = exact > 0.005
        rng = np.random.default_rng(1)
        for m in sizes:
            cells = []
            for known, rest in ((np.zeros(p), raw), (part.total, raw - part.sampled)):
                covered, largest = np.zeros(p), 0.0
                for _ in range(draws):
                    pick = rng.choice(n, size=m, replace=False)
                    total, spread = scaled_sample(known, rest[pick], n)
                    covered += np.abs(total / sst - exact) <= 1.96 * spread / sst
                    largest = max(largest, float(np.max(spread / sst)))
                cells += [f"{largest:.2g}", f"{np.min(covered[shown]) / draws:.0%}"]
            print(f"| {name} | {n} | {m} | " + " | ".join(cells) + " |", flush=True)


def timing(samples: tuple[int, ...], trees: int) -> None:
    import shap
    from sklearn.ensemble import RandomForestRegressor

    from shap_rsq import RSquaredExplainer, estimate_rsq
    from shap_rsq.engine.estimates import estimated_seconds

    X, y = _data(2000, 20)
    model = RandomForestRegressor(trees, random_state=0, n_jobs=2).fit(X, y)
    leaves = [e.tree_.n_leaves for e in model.estimators_]
    depth = max(e.tree_.max_depth for e in model.estimators_)
    explainer = RSquaredExplainer(model)
    exact = estimated_seconds(explainer._units.units(), len(y), explainer._tuning)
    print(
        f"RandomForestRegressor({trees}) on 2000 x 20: {int(np.mean(leaves))} leaves on average, depth {depth}; "
        f"exact rsq estimated at {exact / 3600:.1f} h on one core"
    )
    start = time.perf_counter()
    shap.TreeExplainer(model).shap_values(X)
    treeshap = time.perf_counter() - start
    print(f"TreeSHAP: {treeshap:.1f} s")
    print("| n_sample | estimate_rsq (s) | / TreeSHAP | largest SE | largest share |")
    print("|---:|---:|---:|---:|---:|")
    estimates = []
    for seed, m in enumerate(samples):
        start = time.perf_counter()
        estimates.append(estimate_rsq(explainer, X, y, n_sample=m, random_state=seed))
        seconds = time.perf_counter() - start
        values, spread = np.asarray(estimates[-1].values), estimates[-1].standard_error
        print(
            f"| {m} | {seconds:.1f} | {seconds / treeshap:.1f}x | {np.max(spread):.2g} | {np.max(values):.3f} |",
            flush=True,
        )
    if len(estimates) > 1:  # independent draws: their differences in units of their joint standard error
        first, last = estimates[0], estimates[-1]
        z = np.abs(first.values - last.values) / np.hypot(first.standard_error, last.standard_error)
        print(f"largest |a - b| / sqrt(SE_a² + SE_b²) between the first and last: {np.max(z):.2f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak resident memory {peak:.2f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("coverage", "time"))
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 60, 200])
    parser.add_argument("--samples", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--trees", type=int, default=100)
    args = parser.parse_args()
    versions = ", ".join(f"{m} {metadata.version(m)}" for m in ("shap-rsq", "shap", "numpy", "scikit-learn", "xgboost"))
    print(versions)
    warnings.filterwarnings("ignore", category=UserWarning)
    if args.part == "coverage":
        coverage(args.draws, tuple(args.sizes))
    else:
        timing(tuple(args.samples), args.trees)


if __name__ == "__main__":
    main()
