"""A real-data analysis: which measurements carry the R² of a diabetes-progression model, in and out of sample?

scikit-learn's diabetes data (442 patients, 10 baseline measurements, disease progression one year
later) ships with scikit-learn, so this runs without a network.  The script

1. fits a gradient-boosted model and a random forest on 70% of the patients;
2. splits each model's R² on the training rows and on the held-out rows among the features, and
   checks that the shares add up to the R² that ``sklearn.metrics.r2_score`` reports;
3. compares the held-out shares with scikit-learn's permutation importance, which ranks features
   too but whose numbers do not add up to anything;
4. draws the pictures shown on the documentation's plotting page.

Run it from any folder:

    pip install . && python examples/diabetes.py --out results

It writes ``diabetes.txt`` and ``diabetes_*.png`` into ``--out`` (default: the current folder).  The
documentation shows the outputs of ``--out /tmp/diabetes``, copied to ``docs/examples/`` and
``docs/_static/``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import shap
from sklearn.datasets import load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.inspection import permutation_importance
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from shap_rsq import RSquaredExplainer, plots


def models() -> dict:
    return {
        "gradient boosting": HistGradientBoostingRegressor(
            max_iter=150, learning_rate=0.05, max_depth=3, min_samples_leaf=10, random_state=0
        ),
        "random forest": RandomForestRegressor(
            n_estimators=100, max_depth=6, min_samples_leaf=3, random_state=0, n_jobs=1
        ),
    }


def shares_table(model, X_train, y_train, X_test, y_test) -> tuple[pd.DataFrame, str]:
    """Shares on the training and held-out rows, with permutation importance, and an efficiency check."""
    explainer = RSquaredExplainer(model)
    start = time.perf_counter()
    train = explainer.rsq(X_train, y_train)
    test = explainer.rsq(X_test, y_test)
    seconds = time.perf_counter() - start
    permutation = permutation_importance(model, X_test, y_test, scoring="r2", n_repeats=20, random_state=0)
    table = pd.DataFrame(
        {"train R2 share": train, "test R2 share": test, "test permutation": permutation.importances_mean}
    ).sort_values("test R2 share", ascending=False)
    check = (
        f"  R² on the training rows {r2_score(y_train, model.predict(X_train)):.4f}, "
        f"shares add up to {train.sum():.4f}\n"
        f"  R² on the held-out rows {r2_score(y_test, model.predict(X_test)):.4f}, "
        f"shares add up to {test.sum():.4f}; permutation importances add up to "
        f"{permutation.importances_mean.sum():.4f}\n"
        f"  both decompositions computed in {seconds:.2f} s"
    )
    return table, check


def draw(model, X_test, y_test, folder: Path) -> list[Path]:
    """The pictures of the plotting page: shap-rsq's own plots and the shap.plots that make sense for R²."""
    explainer = RSquaredExplainer(model)
    explanation = explainer(X_test, y_test)
    interactions = explainer.rsq_interactions(X_test, y_test)
    pictures = {
        "diabetes_bar.png": lambda: plots.bar(explanation, max_display=6, show=False),
        "diabetes_heatmap.png": lambda: plots.heatmap(explanation, max_display=6, show=False),
        "diabetes_interactions.png": lambda: plots.interaction_heatmap(interactions, max_display=6, show=False),
        "diabetes_shap_bar.png": lambda: plots.shap_plot(shap.plots.bar, explanation, show=False),
        "diabetes_shap_waterfall.png": lambda: plots.shap_plot(shap.plots.waterfall, explanation, show=False),
        "diabetes_shap_beeswarm.png": lambda: plots.shap_plot(shap.plots.beeswarm, explanation, "each", show=False),
        "diabetes_shap_scatter.png": lambda: plots.shap_plot(
            shap.plots.scatter, explanation, "each", row="bmi", show=False
        ),
    }
    written = []
    for name, draw_one in pictures.items():
        draw_one()
        plt.gcf().savefig(folder / name, dpi=90, bbox_inches="tight")
        plt.close("all")
        written.append(folder / name)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="folder for the report and the pictures (default: here)")
    args = parser.parse_args(argv)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
    sections = [f"scikit-learn diabetes data: {len(X_train)} training and {len(X_test)} held-out patients\n"]
    fitted = {}
    # small data: one OpenMP thread is faster than several and does not stall on a busy machine
    with threadpool_limits(limits=1, user_api="openmp"), pd.option_context("display.float_format", "{:.4f}".format):
        for name, model in models().items():
            fitted[name] = model.fit(X_train, y_train)
            table, check = shares_table(model, X_train, y_train, X_test, y_test)
            sections.append(f"{name} ({type(model).__name__})\n\n{table.to_string()}\n\n{check}\n")
        pictures = draw(fitted["gradient boosting"], X_test, y_test, folder)
    report = "\n".join(sections)
    print(report)
    (folder / "diabetes.txt").write_text(report, encoding="utf-8")
    print("pictures:", ", ".join(str(p) for p in pictures))


if __name__ == "__main__":
    main()
