"""Models that split on sets of categories: exact shares against subset enumeration on the
routing columns, routing equal to the library's own predict, categories matched by value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from categorical_models import CASES, mixed_data, model_leaves, model_predict, probe_rows, routed_oracle

from shap_rsq import RSquaredExplainer, UnsupportedModelError

# unseen categories: XGBoost refuses those it stores (as its own predict does)
REFUSES_UNSEEN = {name for name in CASES if name.startswith(("xgboost-sklearn", "xgboost-booster"))}
INTERACTION_CASES = ["lightgbm-gbdt-pandas", "lightgbm-rf-codes", "xgboost-sklearn-partition"]


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = CASES[name]()
        return cache[name]

    return get


def lightgbm_models_of(models):
    return lambda mode, codes: models(f"lightgbm-{mode}-{'codes' if codes else 'pandas'}")


@pytest.fixture(scope="module")
def lightgbm_models(models):
    return lightgbm_models_of(models)


@pytest.mark.parametrize("case", list(CASES))
def test_shares_match_subset_enumeration(models, case):
    model, X, y, w = models(case)
    explainer = RSquaredExplainer(model)
    assert explainer.forest.routing is not None and explainer.forest.n_features > 5  # categorical splits read
    expected, expected_local = routed_oracle(explainer, X, y, w)
    np.testing.assert_allclose(np.asarray(explainer.rsq(X, y, w)), expected, atol=1e-9, rtol=0)
    np.testing.assert_allclose(explainer.shap_values(X, y, sample_weight=w), expected_local, atol=1e-9, rtol=0)


@pytest.mark.parametrize("case", INTERACTION_CASES)
def test_interaction_shares_match_subset_enumeration(models, case):
    model, X, y, w = models(case)
    explainer = RSquaredExplainer(model)
    expected, _ = routed_oracle(explainer, X, y, w, interactions=True)
    indices = np.asarray(explainer.rsq_interactions(X, y, w))
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_allclose(indices[off], (expected / 2)[off], atol=1e-9, rtol=0)


def test_groups_match_subset_enumeration(lightgbm_models):
    from oracle import rsq_oracle

    model, X, y, w = lightgbm_models("gbdt", False)
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(X, y, w, groups={"kind": ["colour", "size"], "x": ["x1", "x2"]})
    forest = explainer.forest
    routed = forest.routing_rows(explainer._inputs.rows_weights(X, None, require_variance=False)[0].array)
    owner = np.array([0, 2, 0, 1, 1])[forest.routing.column_feature]  # kind, x, x0
    members = [list(np.flatnonzero(owner == g)) for g in range(3)]
    np.testing.assert_allclose(shares.to_numpy(), rsq_oracle(forest, routed, y, w, players=members)[0], atol=1e-9)
    assert list(shares.index) == ["kind", "x", "x0"]


@pytest.mark.parametrize("case", list(CASES))
def test_routing_gives_the_models_leaves_and_predictions(models, case):
    model, X, _, _ = models(case)
    explainer = RSquaredExplainer(model)
    rows = probe_rows(X, unseen=case not in REFUSES_UNSEEN)
    checked = explainer._inputs.rows_weights(rows, None, require_variance=False)[0].array
    forest = explainer.forest
    routed = forest.routing_rows(checked)
    leaves, library = model_leaves(model, rows)
    for t, tree in enumerate(forest.trees if leaves is not None else ()):  # scikit-learn gives no leaves
        reached = tree.leaf_of(routed, forest.input_dtype)
        # LightGBM numbers leaves after its splits; XGBoost gives the leaf's node
        shift = int((tree.left >= 0).sum()) if library == "lightgbm" else 0
        np.testing.assert_array_equal(reached - shift, leaves[:, t])
    np.testing.assert_allclose(forest.predict(checked), model_predict(model, rows), atol=1e-5, rtol=1e-6)


def test_a_category_xgboost_was_not_fitted_on_is_refused_as_its_predict_refuses_it(models):
    model, X, y, _ = models("xgboost-sklearn-partition")
    rows = probe_rows(X, unseen=True)
    with pytest.raises(ValueError, match="Column 'colour' holds 'zz', a category the model was not fitted on"):
        RSquaredExplainer(model).rsq(rows, np.r_[y, np.zeros(len(rows) - len(y))])


PANDAS_CASES = ["lightgbm-gbdt-pandas", "xgboost-sklearn-partition", "xgboost-booster-onehot", "hist-from_dtype"]


@pytest.mark.parametrize("case", PANDAS_CASES)
def test_categories_are_matched_by_value_not_by_code(models, case):
    model, X, y, w = models(case)
    explainer = RSquaredExplainer(model)
    expected = explainer.rsq(X, y, w)
    reordered = X.copy()
    reordered["colour"] = X["colour"].cat.reorder_categories(list("gfedcba"))
    reordered["size"] = X["size"].cat.set_categories(["xl", "l", "s", "m"])  # an extra one, another order
    pd.testing.assert_series_equal(explainer.rsq(reordered, y, w), expected)
    fewer = X.copy()
    fewer["colour"] = (
        X["colour"].cat.remove_unused_categories().cat.set_categories(list(pd.unique(X["colour"].dropna())))
    )
    pd.testing.assert_series_equal(explainer.rsq(fewer, y, w), expected)
    as_text = X.astype({"colour": object, "size": object})
    pd.testing.assert_series_equal(explainer.rsq(as_text, y, w), expected)


def test_numbers_in_a_categorical_column_and_text_in_a_numeric_one_are_refused_by_name(lightgbm_models):
    model, X, y, _w = lightgbm_models("gbdt", False)
    explainer = RSquaredExplainer(model)
    numbers = X.copy()
    numbers["colour"] = X["colour"].cat.codes
    with pytest.raises(ValueError, match="'colour' is a categorical feature whose categories are text"):
        explainer.rsq(numbers, y)
    text = X.copy()
    text["x1"] = "high"
    with pytest.raises(ValueError, match="non-numeric columns 'x1'"):
        explainer.rsq(text, y)
    coded, Xc, yc, _ = lightgbm_models("gbdt", True)
    rows = pd.DataFrame(Xc).astype(object)
    rows[0] = "a"
    with pytest.raises(ValueError, match="reads as integer codes, but it holds 'a'"):
        RSquaredExplainer(coded).rsq(rows, yc)


def _cli(argv, capsys):
    import json

    from shap_rsq.cli import main

    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(Path(argv[argv.index("--out") + 1]).read_text())


@pytest.mark.parametrize("data_format", ["csv", "parquet"])
def test_the_cli_reads_categories_from_csv_text_and_parquet_categories(lightgbm_models, data_format, tmp_path, capsys):
    model, X, y, w = lightgbm_models("gbdt", False)
    model.booster_.save_model(tmp_path / "model.txt")
    table = X.assign(y=y, w=w)
    data = tmp_path / f"data.{data_format}"
    if data_format == "csv":
        table.to_csv(data, index=False)  # the categories as text, missing ones as empty cells
    else:
        pytest.importorskip("pyarrow")
        table.to_parquet(data)
    out = tmp_path / "r2.json"
    document = _cli(
        ["explain", "--model", tmp_path / "model.txt", "--data", data, "--target", "y", "--weight", "w", "--out", out],
        capsys,
    )
    expected = RSquaredExplainer(model).rsq(X, y, w)
    np.testing.assert_allclose(pd.Series(document["rsq"])[expected.index], expected, atol=1e-12)
    assert document["model_rsq"] == pytest.approx(expected.sum() + _mean_part(model, X, y, w), abs=1e-9)


def _mean_part(model, X, y, w):
    """R² of the model minus the sum of its shares: the R² of its constant mean prediction."""
    from sklearn.metrics import r2_score

    forest = RSquaredExplainer(model).forest
    return r2_score(y, np.full(len(y), forest.expected_value), sample_weight=w)


def test_catboost_combinations_are_refused_with_the_setting_that_avoids_them():
    from categorical_models import catboost_model

    model, X, y, _ = catboost_model("ctr", max_ctr_complexity=3, iterations=60, depth=4)
    explainer = RSquaredExplainer(model)  # shap's explainer still: its calls without y are CatBoost's
    with pytest.raises(UnsupportedModelError, match=r"combination of features \(.*\).*max_ctr_complexity=1"):
        explainer.rsq(X, y)


def test_a_catboost_model_of_one_categorical_column_is_explained_with_default_settings():
    import catboost
    from oracle import rsq_oracle

    X, y, w = mixed_data(nan=False)
    frame = X[["colour"]].astype(str)
    model = catboost.CatBoostRegressor(
        iterations=20, depth=3, verbose=0, random_seed=0, cat_features=[0], allow_writing_files=False
    ).fit(frame, y)
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(frame, y, w)
    routed = explainer.forest.routing_rows(explainer._inputs.rows_weights(frame, None, require_variance=False)[0].array)
    expected = rsq_oracle(explainer.forest, routed, y, w, players=[list(range(routed.shape[1]))])[0]
    np.testing.assert_allclose(shares.to_numpy(), expected, atol=1e-9)
    assert shares["colour"] > 0.3


def test_missing_categories_of_a_catboost_model_are_refused_by_name(models):
    model, X, y, _ = models("catboost-ctr")
    rows = X.copy()
    rows.loc[3, "size"] = None
    with pytest.raises(
        ValueError, match="Column 'size' is a categorical feature of a CatBoost model and holds missing"
    ):
        RSquaredExplainer(model).rsq(rows, y)


def test_the_cli_reads_catboost_categories_from_csv_text(models, tmp_path, capsys):
    model, X, y, _ = models("catboost-ctr")
    model.save_model(str(tmp_path / "model.cbm"))
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / "r2.json"
    document = _cli(
        ["explain", "--model", tmp_path / "model.cbm", "--data", tmp_path / "data.csv", "--target", "y", "--out", out],
        capsys,
    )
    expected = RSquaredExplainer(model).rsq(X, y)
    np.testing.assert_allclose(pd.Series(document["rsq"])[expected.index], expected, atol=1e-12)


# shap's own values are wrong for these (a random forest's trees summed; scikit-learn's categorical
# splits read as numeric ones), and shap cannot build a categorical DMatrix for a bare Booster
SHAP_WRONG = {"lightgbm-rf-pandas", "lightgbm-rf-codes", *(name for name in CASES if name.startswith("hist-"))}
SHAP_FAILS = {name for name in CASES if name.startswith("xgboost-booster")}


@pytest.mark.parametrize("case", [name for name in CASES if name not in SHAP_FAILS])
def test_shap_values_without_y_add_up_to_the_predictions_and_are_shaps_where_shap_is_right(models, case):
    import shap

    model, X, _, _ = models(case)
    explainer = RSquaredExplainer(model)
    values = explainer.shap_values(X)
    assert values.shape == (len(X), 5)
    np.testing.assert_allclose(values.sum(axis=1) + explainer.expected_value, model_predict(model, X), atol=1e-5)
    if case not in SHAP_WRONG:
        np.testing.assert_allclose(values, shap.TreeExplainer(model).shap_values(X), atol=1e-6)


def test_shap_values_of_the_fixed_trees_match_subset_enumeration(models):
    from oracle import conditional_expectation, shapley

    model, X, _, _ = models("hist-from_dtype")
    explainer = RSquaredExplainer(model)
    forest = explainer.forest
    rows = X.iloc[:12]
    routed = forest.routing_rows(explainer._inputs.rows_weights(rows, None, require_variance=False)[0].array)
    members = [np.flatnonzero(forest.routing.column_feature == j) for j in range(5)]

    def game(players):
        known = frozenset(int(c) for j in players for c in members[j])
        return sum(conditional_expectation(tree, forest.cast(routed), known) for tree in forest.trees)

    np.testing.assert_allclose(explainer.shap_values(rows), shapley(game, 5).T, atol=1e-9)
    with pytest.raises(ValueError, match="SHAP interaction values of the predictions are not available"):
        explainer.shap_interaction_values(rows)
    explanation = explainer(rows)
    np.testing.assert_allclose(explanation.values, shapley(game, 5).T, atol=1e-9)
    assert explanation.feature_names == list(X.columns)


def test_the_selector_keeps_a_frames_categories_in_a_pipeline_with_groups(models):
    import lightgbm
    from sklearn.pipeline import make_pipeline

    from shap_rsq import RSquaredSelector

    _, X, y, _ = models("lightgbm-gbdt-pandas")
    params = dict(n_estimators=12, num_leaves=8, min_child_samples=5, min_data_per_group=5, cat_smooth=1.0)
    params.update(cat_l2=1.0, verbose=-1, random_state=0)
    selector = RSquaredSelector(lightgbm.LGBMRegressor(**params), feature_groups={"kind": ["colour", "size"]})
    pipeline = make_pipeline(selector, lightgbm.LGBMRegressor(**params)).set_output(transform="pandas")
    pipeline.fit(X, y)
    fitted = pipeline[0]
    explainer = RSquaredExplainer(fitted.estimator_)
    expected = explainer.rsq(X, y, groups={"kind": ["colour", "size"]})
    np.testing.assert_allclose(fitted.player_rsq_, expected.to_numpy(), atol=1e-12)
    assert list(fitted.player_names_) == ["kind", "x0", "x1", "x2"]
    kept = pipeline[0].transform(X)
    assert isinstance(kept["colour"].dtype, pd.CategoricalDtype)  # the next model splits on them too
    assert pipeline.predict(X).shape == (len(X),)


def test_estimate_rsq_of_a_categorical_model_is_unbiased_around_the_exact_shares(models):
    from shap_rsq import estimate_rsq

    model, X, y, w = models("lightgbm-gbdt-pandas")
    explainer = RSquaredExplainer(model)
    exact = explainer.rsq(X, y, w)
    estimate = estimate_rsq(explainer, X, y, w, n_sample=60, random_state=0)
    assert np.all(np.abs(estimate.values - exact) <= 4 * estimate.standard_error + 1e-12)
    whole = estimate_rsq(explainer, X, y, w, n_sample=len(X))
    np.testing.assert_allclose(whole.values, exact, atol=1e-12)


def test_dask_blocks_of_codes_give_the_shares_and_categories_matched_by_value_are_refused(models):
    da = pytest.importorskip("dask.array")
    model, X, y, _ = models("lightgbm-gbdt-codes")
    explainer = RSquaredExplainer(model)
    np.testing.assert_allclose(explainer.rsq(da.from_array(X, chunks=(70, 5)), y), explainer.rsq(X, y), atol=1e-12)
    model, X, y, _ = models("hist-indices")
    with pytest.raises(ValueError, match=r"categorical feature\(s\) \['0', '2'\] are matched .* by value"):
        RSquaredExplainer(model).rsq(da.from_array(X, chunks=(70, 5)), y)
