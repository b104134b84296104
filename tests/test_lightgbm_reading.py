"""A LightGBM model's record, read from its text model where its splits are numeric: the same as
from its JSON dump, which shap's reading makes too and which takes about ten times longer."""

from __future__ import annotations

import lightgbm
import numpy as np
import pandas as pd
import pytest

from shap_rsq.models.lightgbm_models import _json_dump, _nan_as_zero, _numeric_dump

_FIELDS = ("split_index", "split_feature", "threshold", "decision_type", "default_left", "missing_type")


def _data(n: int = 400, seed: int = 0, nan: bool = True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    if nan:
        X[::9, 1] = np.nan
    X[::5, 2] = 0.0
    y = X[:, 0] + np.sin(np.nan_to_num(X[:, 1])) + 0.3 * rng.normal(size=n)
    return X, y


def _custom_l2(y_true, y_pred):
    return y_pred - y_true, np.ones_like(y_pred)


NUMERIC = {
    "regression, NaN seen": lambda: lightgbm.LGBMRegressor(n_estimators=8, num_leaves=15),
    "no missing values": lambda: lightgbm.LGBMRegressor(n_estimators=8, num_leaves=15, use_missing=False),
    "zero as missing": lambda: lightgbm.LGBMRegressor(n_estimators=8, num_leaves=7, zero_as_missing=True),
    "random forest": lambda: lightgbm.LGBMRegressor(
        boosting_type="rf", n_estimators=5, subsample=0.7, subsample_freq=1, num_leaves=15
    ),
    "tweedie": lambda: lightgbm.LGBMRegressor(objective="tweedie", n_estimators=6, num_leaves=7),
    "binary": lambda: lightgbm.LGBMClassifier(n_estimators=6, num_leaves=7),
    "softmax": lambda: lightgbm.LGBMClassifier(n_estimators=4, num_leaves=7),
    "single leaves": lambda: lightgbm.LGBMRegressor(n_estimators=4, min_child_samples=1000),
    "custom objective": lambda: lightgbm.LGBMRegressor(objective=_custom_l2, n_estimators=4, num_leaves=7),
}


def _fitted(name: str):
    X, y = _data(nan=name != "no missing values")
    if name == "tweedie":
        y = np.exp(y / 2)
    if name == "binary":
        y = (y > np.median(y)).astype(int)
    if name == "softmax":
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    return NUMERIC[name]().set_params(verbose=-1).fit(X, y).booster_


@pytest.mark.parametrize("name", list(NUMERIC))
def test_the_text_model_gives_the_json_dumps_fields_and_splits(name):
    booster = _fitted(name)
    dump, splits = _json_dump(booster)
    read = _numeric_dump(booster)
    assert read is not None
    fast, fast_splits = read
    for key in ("num_class", "num_tree_per_iteration", "feature_names", "pandas_categorical"):
        assert fast.get(key) == dump.get(key), key
    assert fast["average_output"] == bool(dump.get("average_output"))
    assert fast.get("objective") == dump.get("objective")
    assert len(fast_splits) == len(splits)
    for tree, fast_tree in zip(splits, fast_splits, strict=True):
        assert [[node.get(f) for f in _FIELDS] for node in tree] == [[n[f] for f in _FIELDS] for n in fast_tree]
    if name != "zero as missing":  # refused either way (its thresholds can send zeros away from the default)
        for a, b in zip(_nan_as_zero(splits), _nan_as_zero(fast_splits), strict=True):
            np.testing.assert_array_equal(a, b)


def test_models_the_text_does_not_cover_are_read_from_the_json_dump():
    X, y = _data(nan=False)
    codes = pd.DataFrame(X).assign(c=np.arange(len(X)) % 4)
    y = y + 3.0 * (codes["c"] == 2)  # so that the trees split on the categories
    declared = lightgbm.LGBMRegressor(n_estimators=4, num_leaves=7, verbose=-1)
    declared.fit(codes.to_numpy(), y, categorical_feature=[5])
    frame = codes.assign(c=pd.Categorical(codes["c"].map("abcd".__getitem__)))
    from_pandas = lightgbm.LGBMRegressor(n_estimators=4, num_leaves=7, verbose=-1).fit(frame, y)
    linear = lightgbm.LGBMRegressor(n_estimators=3, num_leaves=7, linear_tree=True, verbose=-1).fit(X, y)
    for model in (declared, from_pandas, linear):
        assert _numeric_dump(model.booster_) is None
    # the JSON dump has the categorical splits the text reading leaves to it
    assert any(node["decision_type"] == "==" for tree in _json_dump(declared.booster_)[1] for node in tree)
