"""RSquaredSelector in a scikit-learn Pipeline, with GridSearchCV choosing how many features to keep.

Friedman's regression problem #1 has 5 informative features; 25 pure-noise columns are added.  A
support vector regressor is sensitive to irrelevant inputs, so a gradient-boosting model's exact
shares of R² pick the features it sees.  Grid search over ``max_features`` finds how many to keep;
``set_output(transform="pandas")`` keeps the column names through the pipeline.

    pip install . && python examples/selector_pipeline.py

``--quick`` searches a smaller grid on 3 folds, to check that the script runs; the script prints
only, and writes no file.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from sklearn.datasets import make_friedman1
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

from shap_rsq import RSquaredSelector


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two candidates on 3 folds (a check that it runs)")
    args = parser.parse_args(argv)
    candidates, folds = ([3, 5], 3) if args.quick else ([2, 3, 4, 5, 6, 8, 12, 30], 5)
    X, y = make_friedman1(n_samples=400, n_features=30, noise=1.0, random_state=0)
    names = [f"signal_{j}" if j < 5 else f"noise_{j}" for j in range(X.shape[1])]
    X = pd.DataFrame(X, columns=names)

    booster = HistGradientBoostingRegressor(max_iter=100, max_depth=3, learning_rate=0.1, random_state=0)
    pipeline = Pipeline(
        [
            # threshold=-inf: select on max_features alone (as with SelectFromModel)
            ("select", RSquaredSelector(booster, threshold=-np.inf)),
            ("scale", StandardScaler()),
            ("svr", SVR(C=10.0)),
        ]
    ).set_output(transform="pandas")
    search = GridSearchCV(
        pipeline,
        {"select__max_features": candidates},
        cv=KFold(folds, shuffle=True, random_state=0),
        scoring="r2",
    )

    start = time.perf_counter()
    search.fit(X, y)
    elapsed = time.perf_counter() - start

    results = pd.DataFrame(search.cv_results_)
    print("cross-validated R² of the pipeline by number of features kept:")
    for k, mean, sd in results[["param_select__max_features", "mean_test_score", "std_test_score"]].itertuples(
        index=False
    ):
        print(f"  max_features={k:>2}: {mean:.3f} ± {sd:.3f}")
    best = search.best_estimator_
    selector = best.named_steps["select"]
    print(f"\nbest max_features = {search.best_params_['select__max_features']}")
    print(f"kept columns: {list(selector.get_feature_names_out())}")
    print(f"columns reaching the SVR: {list(best[:-1].transform(X.head(2)).columns)}")
    print("\nshares of R² of the booster (refitted on all rows):")
    print(selector.summary().head(8).to_string(float_format="{:.4f}".format))
    print(f"\nrun time ({len(candidates)} candidates x {folds} folds + refit): {elapsed:.1f} s")


if __name__ == "__main__":
    main()
