"""Columns reach the trees by name whenever the model and X both carry names.

Shares must land on the features they belong to, whatever order the columns arrive in, whatever
the DataFrame library, and the outcome must not depend on whether the explainer was used before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer, RSquaredSelector


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 5))
    y = 3 * X[:, 0] + X[:, 1] - 0.5 * X[:, 4] + rng.normal(scale=0.2, size=150)
    return X, y


def _fit(kind, frame, y):
    if kind == "sklearn":
        return DecisionTreeRegressor(max_depth=4, random_state=0).fit(frame, y)
    if kind == "xgboost":
        xgboost = pytest.importorskip("xgboost")
        return xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(frame, y)
    if kind == "lightgbm":
        lightgbm = pytest.importorskip("lightgbm")
        return lightgbm.LGBMRegressor(n_estimators=10, num_leaves=6, verbose=-1).fit(frame, y)
    catboost = pytest.importorskip("catboost")
    return catboost.CatBoostRegressor(iterations=10, depth=3, verbose=0, allow_writing_files=False).fit(frame, y)


# numeric-looking names were taken for names made up for arrays, so reordered columns went unnoticed
NAMES = {
    "strings": ["g", "a", "c", "e", "b"],
    "digit strings": ["0", "1", "2", "3", "4"],
    "integers": [0, 1, 2, 3, 4],
}


@pytest.mark.parametrize("kind", ["sklearn", "xgboost", "lightgbm", "catboost"])
@pytest.mark.parametrize("names", list(NAMES))
def test_reordered_columns_give_each_feature_its_own_share(rows, kind, names):
    X, y = rows
    frame = pd.DataFrame(X, columns=NAMES[names])
    model = _fit(kind, frame, y)
    shuffled = frame[frame.columns[[3, 0, 4, 2, 1]]]
    used = RSquaredExplainer(model)
    expected = used.rsq(frame, y)
    assert expected.idxmax() == frame.columns[0]  # the strong feature is named right, as the frame names it
    if kind == "sklearn" and names == "integers":
        # scikit-learn records names only when all are strings: this model has none, so position rules
        assert not hasattr(model, "feature_names_in_")
        positional = used.rsq(shuffled, y)
        assert list(positional.index) == list(shuffled.columns)
        np.testing.assert_allclose(positional.to_numpy(), used.rsq(shuffled.to_numpy(), y), atol=1e-12)
        return
    for explainer in (used, RSquaredExplainer(model)):  # a used and a fresh explainer agree
        shares = explainer.rsq(shuffled, y)
        assert list(shares.index) == list(frame.columns)  # integer names stay integers: shares[3] works
        np.testing.assert_allclose(shares.to_numpy(), expected.to_numpy(), atol=1e-12)
        # per-row results follow X's columns, as an array must for shap.summary_plot(values, X): in
        # the model's order, the share of the first column shown was another feature's
        explanation = explainer(shuffled, y)
        assert explanation.feature_names == [str(c) for c in shuffled.columns]  # shap's plots write them as text
        np.testing.assert_allclose(explanation.values.sum(0), expected[shuffled.columns].to_numpy(), atol=1e-12)
        np.testing.assert_array_equal(explanation.data, shuffled.to_numpy())
        np.testing.assert_array_equal(explainer.shap_values(shuffled, y), explanation.values)
        interactions = explainer.shap_interaction_values(shuffled, y)
        np.testing.assert_allclose(interactions.sum(axis=2), explanation.values, atol=1e-12)
        per_row = explainer.loss_reduction(shuffled, y, local=True)  # in X's order too, unscaled
        np.testing.assert_allclose(per_row.sum(0), explainer.loss_reduction(shuffled, y)[shuffled.columns], atol=1e-9)


@pytest.mark.parametrize("kind", ["sklearn", "xgboost", "lightgbm"])
def test_prediction_shap_values_follow_reordered_columns(rows, kind):
    # without y the call is shap's, which reads a DataFrame by position: reordered columns got
    # the SHAP values of other features under their own names
    X, y = rows
    frame = pd.DataFrame(X, columns=["g", "a", "c", "e", "b"])
    model = _fit(kind, frame, y)
    explainer = RSquaredExplainer(model)
    shuffled = frame[["b", "e", "a", "g", "c"]]
    moved = [list(frame.columns).index(c) for c in shuffled.columns]
    expected = explainer(frame)
    explanation = explainer(shuffled)
    # computed in the model's order, returned in X's: an array lines up with the X it came from
    assert explanation.feature_names == list(shuffled.columns)
    np.testing.assert_allclose(explanation.values, expected.values[:, moved], atol=1e-12)
    np.testing.assert_array_equal(explanation.data, shuffled.to_numpy())
    additivity = explanation.values.sum(axis=1) + explanation.base_values - model.predict(frame)
    assert np.abs(additivity).max() < 1e-5  # XGBoost adds up in float32
    np.testing.assert_allclose(explainer.shap_values(shuffled), expected.values[:, moved], atol=1e-12)
    interactions = explainer.shap_interaction_values(shuffled)
    np.testing.assert_allclose(interactions.sum(axis=2), expected.values[:, moved], atol=1e-5)
    pairs = explainer(shuffled, interactions=True)
    np.testing.assert_allclose(pairs.values, interactions, atol=1e-12)
    assert pairs.feature_names == list(shuffled.columns)
    with pytest.raises(ValueError, match=r"missing 'b'; unexpected 'B'"):
        explainer(shuffled.rename(columns={"b": "B"}))


def test_missing_and_extra_columns_are_named(rows):
    X, y = rows
    frame = pd.DataFrame(X, columns=["age", "bmi", "bp", "s1", "s2"])
    explainer = RSquaredExplainer(_fit("sklearn", frame, y))
    with pytest.raises(ValueError, match=r"missing 'bmi'; unexpected 'BMI'"):
        explainer.rsq(frame.rename(columns={"bmi": "BMI"}), y)
    with pytest.raises(ValueError, match=r"missing 's2'"):
        explainer.rsq(frame.drop(columns="s2"), y)
    with pytest.raises(ValueError, match=r"unexpected 'extra'"):
        explainer.rsq(frame.assign(extra=1.0), y)
    with pytest.raises(ValueError, match=r"duplicated column names 'bp'"):
        explainer.rsq(pd.concat([frame, frame[["bp"]]], axis=1), y)


def test_pyarrow_columns_are_read_by_their_names_not_their_values(rows):
    pyarrow = pytest.importorskip("pyarrow")
    X, y = rows
    frame = pd.DataFrame(X, columns=["age", "bmi", "bp", "s1", "s2"]).assign(s2=0.0, s1=0.0)
    explainer = RSquaredExplainer(_fit("sklearn", frame, y))
    # two constant columns hold equal values: the table's columns were compared as data
    table = pyarrow.Table.from_pandas(frame[["s2", "bp", "age", "s1", "bmi"]], preserve_index=False)
    np.testing.assert_allclose(explainer.rsq(table, y).to_numpy(), explainer.rsq(frame, y).to_numpy(), atol=1e-12)
    twice = pyarrow.Table.from_arrays([table["bp"], *table.columns], names=["bp", *table.column_names])
    with pytest.raises(ValueError, match=r"^X has duplicated column names 'bp'\.$"):
        explainer.rsq(twice, y)
    # a pandas column named ``column_names`` is an attribute of its frame (here a constant one, whose
    # values read as labels repeat): its labels stay the columns
    named = frame.rename(columns={"s1": "column_names"})
    shares = RSquaredExplainer(_fit("sklearn", named, y)).rsq(named[named.columns[::-1]], y)
    assert list(shares.index) == list(named.columns)
    np.testing.assert_allclose(shares.to_numpy(), explainer.rsq(frame, y).to_numpy(), atol=1e-12)


def test_a_model_without_names_matches_by_position_and_labels_by_the_frame(rows):
    X, y = rows
    model = _fit("sklearn", X, y)
    frame = pd.DataFrame(X, columns=list("vwxyz"))
    # scikit-learn's predict warns that such a frame is read by position; so does the explainer
    with pytest.warns(UserWarning, match="fitted without feature names: its columns are read by position") as seen:
        shares = RSquaredExplainer(model).rsq(frame, y)
    assert list(shares.index) == list("vwxyz")
    # the warning points at the caller's line, also through scikit-learn's wrapper of a selector's fit
    # (it pointed at sklearn/base.py)
    with pytest.warns(UserWarning, match="read by position") as through_selector:
        RSquaredSelector(model, prefit=True).fit(frame, y)
    assert {w.filename for w in [*seen, *through_selector]} == {__file__}
    np.testing.assert_allclose(shares.to_numpy(), RSquaredExplainer(model).rsq(X, y), atol=1e-12)


def test_lightgbm_fitted_on_an_array_matches_any_frame_by_position(rows):
    X, y = rows
    model = _fit("lightgbm", X, y)
    assert model.booster_.feature_name()[0] == "Column_0"
    with pytest.warns(UserWarning, match="read by position"):
        shares = RSquaredExplainer(model).rsq(pd.DataFrame(X, columns=list("vwxyz")), y)
    np.testing.assert_allclose(shares.to_numpy(), RSquaredExplainer(model).rsq(X, y), atol=1e-12)


@pytest.mark.parametrize("kind", ["sklearn", "xgboost", "lightgbm", "catboost"])
def test_names_given_for_a_model_fitted_on_an_array_match_a_frame_by_name(rows, kind):
    # LightGBM's Column_0.. and CatBoost's '0'.. were taken for the model's own names: a frame with
    # the given names in another order was read by position, and the strong feature x0 got 0
    X, y = rows
    model = _fit(kind, X, y)
    names = ["x0", "x1", "x2", "x3", "x4"]
    explainer = RSquaredExplainer(model, feature_names=names)
    expected = explainer.rsq(X, y)  # an array: the shares in the model's order
    assert np.argmax(expected) == 0
    shuffled = pd.DataFrame(X, columns=names)[["x3", "x0", "x4", "x2", "x1"]]
    shares = explainer.rsq(shuffled, y)
    np.testing.assert_allclose(shares[names].to_numpy(), expected, atol=1e-12)
    grouped = explainer.rsq(X, y, groups={"first": ["x0", "x1"]})  # the names label the array's columns
    np.testing.assert_allclose(grouped, RSquaredExplainer(model).rsq(X, y, groups={"first": [0, 1]}), atol=1e-12)


@pytest.mark.parametrize("kind", ["sklearn", "catboost"])
@pytest.mark.parametrize("library", ["polars", "pyarrow"])
def test_other_dataframe_libraries_are_read_by_name(rows, library, kind):
    X, y = rows
    frame = pd.DataFrame(X, columns=["g", "a", "c", "e", "b"])
    explainer = RSquaredExplainer(_fit(kind, frame, y))
    expected = explainer.rsq(frame, y)
    expected_values = explainer(frame)
    shuffled = frame[["b", "e", "a", "g", "c"]]
    if library == "polars":
        polars = pytest.importorskip("polars")
        other = polars.from_pandas(shuffled)
        target = polars.Series("y", y)
    else:
        pyarrow = pytest.importorskip("pyarrow")
        other = pyarrow.Table.from_pandas(shuffled)
        target = pyarrow.chunked_array([y])
    shares = explainer.rsq(other, target)
    pd.testing.assert_series_equal(shares, expected, atol=1e-12)
    # shap's own calls: shap reads pandas only (scikit-learn models failed inside shap on 'dtype')
    explanation = explainer(other)
    moved = [list(frame.columns).index(c) for c in shuffled.columns]
    assert explanation.feature_names == list(shuffled.columns)
    np.testing.assert_allclose(explanation.values, expected_values.values[:, moved], atol=1e-12)
    np.testing.assert_allclose(explainer.shap_values(other), expected_values.values[:, moved], atol=1e-12)
    interactions = explainer.shap_interaction_values(other)
    np.testing.assert_allclose(interactions.sum(2), expected_values.values[:, moved], atol=1e-9)
    polars_text = pytest.importorskip("polars").DataFrame({"g": ["1"] * 3}) if library == "polars" else None
    if polars_text is not None:
        with pytest.raises(ValueError, match="non-numeric columns 'g'"):
            explainer.rsq(polars_text, y[:3])


def test_numeric_strings_are_refused_the_same_way_by_a_fresh_and_a_used_explainer(rows):
    X, y = rows
    model = _fit("xgboost", X, y)
    used = RSquaredExplainer(model)
    used.rsq(X, y)
    for explainer in (RSquaredExplainer(model), used):
        with pytest.raises(ValueError, match=r"X holds text \(<U"):
            explainer.rsq(X.astype(str), y)
        with pytest.raises(ValueError, match=r"y holds text"):
            explainer.rsq(X, y.astype(str))


def test_object_arrays_are_read_as_numbers_only(rows):
    # as a DataFrame's object columns: numbers (None missing) are read, anything else is named;
    # NumPy had turned the strings '0.5' into numbers silently and a Timestamp into a TypeError
    X, y = rows
    explainer = RSquaredExplainer(_fit("xgboost", X, y))
    expected = explainer.rsq(X, y)
    np.testing.assert_array_equal(explainer.rsq(X.astype(object), y), expected)
    holed = X.astype(object)
    holed[0, 1] = None
    np.testing.assert_array_equal(explainer.rsq(holed, y), explainer.rsq(_with_nan(X, 0, 1), y))
    for value, shown in [("0.5", "'0.5'"), (pd.Timestamp("2020-01-01"), "Timestamp"), ("a", "'a'")]:
        bad = X.astype(object)
        bad[3, 2] = value
        with pytest.raises(ValueError, match=rf"X is an object array holding {shown}.*which is not a number"):
            explainer.rsq(bad, y)


def _with_nan(X, row, column):
    X = X.copy()
    X[row, column] = np.nan
    return X
