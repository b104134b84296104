"""Agreement with qshap, the paper authors' implementation (optional ``bench`` extra)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_data

from shap_rsq import RSquaredExplainer

qshap = pytest.importorskip("qshap")


def _models():
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.tree import DecisionTreeRegressor

    xgboost = pytest.importorskip("xgboost")
    lightgbm = pytest.importorskip("lightgbm")
    return {
        "XGBRegressor": xgboost.XGBRegressor(n_estimators=40, max_depth=3, learning_rate=0.2, random_state=0),
        "LGBMRegressor": lightgbm.LGBMRegressor(n_estimators=40, num_leaves=8, verbose=-1, random_state=0),
        "GradientBoostingRegressor": GradientBoostingRegressor(n_estimators=40, max_depth=3, random_state=0),
        "DecisionTreeRegressor": DecisionTreeRegressor(max_depth=4, random_state=0),
    }


@pytest.mark.parametrize(
    "name", ["XGBRegressor", "LGBMRegressor", "GradientBoostingRegressor", "DecisionTreeRegressor"]
)
def test_boosted_models_agree_with_qshap(name):
    X, y, _ = make_data(seed=41, n=400)
    model = _models()[name].fit(X, y)
    ours = RSquaredExplainer(model).rsq(X, y)
    theirs = np.asarray(qshap.gazer(model).rsq(X, y), dtype=float)
    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=0)
