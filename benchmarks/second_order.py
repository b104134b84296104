"""Second-order games of boosters: the gap to the exact change of D², and the time against squared error.

    python benchmarks/second_order.py gap      # learning rates 0.03-1, depths 2-8, on datasets scikit-learn ships
    python benchmarks/second_order.py speed    # rsq of classifiers against an XGBRegressor of the same shape

Prints Markdown tables for docs/benchmarks.md.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import xgboost
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

from shap_rsq import RSquaredExplainer, SecondOrderGapWarning

RATES = (0.03, 0.1, 0.3, 1.0)
DEPTHS = (2, 4, 6, 8)
N_TREES = 50


def _datasets():
    cancer = load_breast_cancer(return_X_y=True)
    wine = load_wine(return_X_y=True)
    diabetes = load_diabetes(return_X_y=True)
    return {
        "breast_cancer, binary:logistic": (*cancer, "binary:logistic"),
        "wine, multi:softprob (3 classes)": (*wine, "multi:softprob"),
        "diabetes, count:poisson": (*diabetes, "count:poisson"),
        "diabetes, reg:gamma": (*diabetes, "reg:gamma"),
    }


def gap() -> None:
    print("| data, objective | depth | " + " | ".join(f"lr {r:g}" for r in RATES) + " |")
    print("|---|---|" + "---|" * len(RATES))
    for name, (X, y, objective) in _datasets().items():
        for depth in DEPTHS:
            cells = []
            for rate in RATES:
                kind = xgboost.XGBClassifier if objective.startswith(("binary", "multi")) else xgboost.XGBRegressor
                model = kind(n_estimators=N_TREES, max_depth=depth, learning_rate=rate, objective=objective, n_jobs=1)
                model.fit(X, y)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", SecondOrderGapWarning)
                    explanation = RSquaredExplainer(model)(X, y)
                s = explanation.output_names.summary
                cells.append(f"{s['exact_change']:.3f} / {s['gap']:+.3f} ({100 * s['gap'] / s['exact_change']:+.1f}%)")
            print(f"| {name} | {depth} | " + " | ".join(cells) + " |", flush=True)


def _cpu_times(calls: dict, repeat: int = 3) -> dict:
    """Best CPU seconds of each call, the calls alternating round by round so that they share the
    machine's load (this machine's speed moves 2-5x between runs)."""
    best = dict.fromkeys(calls, np.inf)
    for _ in range(repeat):
        for key, call in calls.items():
            start = time.process_time()
            call()
            best[key] = min(best[key], time.process_time() - start)
    return best


def speed() -> None:
    """Each classifier beside an XGBRegressor of the same shape on the same target (0/1, or the class
    codes): the CPU time of ``rsq`` on a reused explainer (best of three, the two models alternating),
    and per leaf (boosters of the same shape grow different trees: the softmax grows K trees a round)."""
    rng = np.random.default_rng(0)
    n, p = 2000, 20
    X = rng.normal(size=(n, p))
    signal = X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
    binary = (signal + rng.normal(size=n) > 0).astype(int)
    three = np.digitize(signal + rng.normal(size=n), [-0.7, 0.7])
    print("| model (100 rounds, depth 6, 2,000 rows, 20 features) | leaves | rsq (CPU s) | ms per leaf | time ratio |")
    print("|---|---|---|---|---|")
    shape = {"n_estimators": 100, "max_depth": 6, "learning_rate": 0.1, "n_jobs": 1, "random_state": 0}
    for target, y in (("0/1", binary), ("3 classes", three)):
        explainers = {}
        for label, model in (
            (f"XGBRegressor on the {target} target", xgboost.XGBRegressor(**shape)),
            (f"XGBClassifier, {target}", xgboost.XGBClassifier(**shape)),
        ):
            model.fit(X, y)
            explainer = RSquaredExplainer(model, n_jobs=1)
            explainer.rsq(X, y)  # plans compiled once, as a reused explainer has them
            explainers[label] = explainer
        seconds = _cpu_times({label: (lambda e=e, y=y: e.rsq(X, y)) for label, e in explainers.items()})
        base = None
        for label, explainer in explainers.items():
            leaves = sum(int(forest.nodes.tree_leaves.sum()) for forest in explainer.forests)
            base = seconds[label] if base is None else base
            print(
                f"| {label} | {leaves} | {seconds[label]:.2f} | {1e3 * seconds[label] / leaves:.2f} "
                f"| {seconds[label] / base:.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    {"gap": gap, "speed": speed}[sys.argv[1]]()
