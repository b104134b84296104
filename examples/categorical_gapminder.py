"""Categorical features: each feature's share of R² for models that split on categories.

The Gapminder data (life expectancy of 142 countries every five years, 1952-2007) ship with plotly
(``plotly.express.data.gapminder``, no download).  ``continent`` and ``country`` are pandas
categories: LightGBM, scikit-learn's HistGradientBoostingRegressor and CatBoost split on sets of
them.  The explainer reads those splits as they are (no re-encoding, no refit), and the shares
of every model add up to its R² (less that of its mean prediction).

    pip install ".[lightgbm,catboost]" && python examples/categorical_gapminder.py   # catboost brings plotly
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from shap_rsq import RSquaredExplainer


def gapminder() -> tuple[pd.DataFrame, pd.Series]:
    """The rows (continent and country as categories, year, log GDP per head, log population) and
    life expectancy."""
    from plotly.express.data import gapminder as load

    data = load()
    X = pd.DataFrame(
        {
            "continent": data["continent"].astype("category"),
            "country": data["country"].astype("category"),
            "year": data["year"].astype(float),
            "log_gdp": np.log(data["gdpPercap"]),
            "log_pop": np.log(data["pop"]),
        }
    )
    return X, data["lifeExp"]


def models(quick: bool) -> dict:
    """Models that split on categories natively, each with the rows it is fitted on."""
    trees = 60 if quick else 300
    found = {
        "HistGradientBoostingRegressor": HistGradientBoostingRegressor(
            max_iter=trees, learning_rate=0.05, categorical_features="from_dtype", random_state=0
        )
    }
    try:
        import lightgbm

        found["LGBMRegressor"] = lightgbm.LGBMRegressor(
            n_estimators=trees, learning_rate=0.05, num_leaves=15, min_data_per_group=20, verbose=-1, random_state=0
        )
    except ImportError:
        pass
    try:
        import catboost

        found["CatBoostRegressor"] = catboost.CatBoostRegressor(
            iterations=trees,
            depth=4,
            verbose=0,
            random_seed=0,
            cat_features=["continent", "country"],
            allow_writing_files=False,
            max_ctr_complexity=1,  # splits on each category's own CTR: combinations are not decomposed
        )
    except ImportError:
        pass
    return found


def as_text(X: pd.DataFrame) -> pd.DataFrame:
    """CatBoost reads categories as text."""
    return X.astype({"continent": str, "country": str})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer trees")
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    X, y = gapminder()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
    table = {}
    for name, model in models(args.quick).items():
        rows = as_text if name.startswith("CatBoost") else (lambda frame: frame)
        model.fit(rows(X_train), y_train)
        explainer = RSquaredExplainer(model)
        shares = explainer.rsq(rows(X_test), y_test)
        place = explainer.rsq(rows(X_test), y_test, groups={"place": ["continent", "country"]})["place"]
        model_rsq = r2_score(y_test, model.predict(rows(X_test)))
        mean_rsq = r2_score(y_test, np.full(len(y_test), explainer.forest.expected_value))
        assert abs(shares.sum() + mean_rsq - model_rsq) < 1e-6  # the shares add up to the model's R²
        table[name] = {**shares.to_dict(), "place (group)": place, "sum of shares": shares.sum(), "R²": model_rsq}
    print(f"Shares of R² on {len(y_test)} held-out rows of the Gapminder data (life expectancy)\n")
    print(pd.DataFrame(table).round(4).to_string())
    print("\nEvery sum of shares plus the R² of the model's mean prediction equals its R²: checked.")


if __name__ == "__main__":
    main()
