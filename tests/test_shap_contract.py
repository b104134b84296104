"""Every shap.TreeExplainer call keeps its meaning on RSquaredExplainer.

Without y the explainer is shap's: the same SHAP values of the predictions.  With y the same
calls return shares of R².  Background data and shap's other options: tests/test_shap_dropin.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import shap
from conftest import make_data

from shap_rsq import RSquaredExplainer

xgboost = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def fitted():
    X, y, w = make_data(seed=4)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    model = xgboost.XGBRegressor(n_estimators=15, max_depth=3, random_state=0).fit(frame, y)
    return model, frame, y, w


def test_without_y_every_call_is_shaps_own(fitted):
    model, frame, _, _ = fitted
    ours, theirs = RSquaredExplainer(model), shap.TreeExplainer(model)
    np.testing.assert_array_equal(ours.shap_values(frame), theirs.shap_values(frame))
    np.testing.assert_array_equal(ours.shap_interaction_values(frame), theirs.shap_interaction_values(frame))
    for kwargs in ({}, {"check_additivity": False}, {"interactions": True}):
        mine, reference = ours(frame, **kwargs), theirs(frame, **kwargs)
        np.testing.assert_array_equal(mine.values, reference.values)
        np.testing.assert_array_equal(mine.base_values, reference.base_values)
        assert mine.feature_names == reference.feature_names
    assert ours.expected_value == theirs.expected_value


def test_with_y_the_same_calls_give_shares_of_r2(fitted):
    model, frame, y, w = fitted
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(frame, y, sample_weight=w)
    explanation = explainer(frame, y, sample_weight=w)
    unchecked = explainer(frame, y, sample_weight=w, check_additivity=False)
    np.testing.assert_array_equal(unchecked.values, explanation.values)
    np.testing.assert_allclose(explanation.values.sum(0), shares.to_numpy(), atol=1e-12)
    np.testing.assert_array_equal(explainer.shap_values(frame, y, sample_weight=w), explanation.values)
    from sklearn.metrics import r2_score

    total = explanation.values.sum() + explanation.base_values.sum()
    assert total == pytest.approx(r2_score(y, model.predict(frame), sample_weight=w), abs=1e-6)  # float32 predict


def test_interaction_shares_of_r2_come_in_shaps_layout(fitted):
    model, frame, y, w = fitted
    explainer = RSquaredExplainer(model)
    explanation = explainer(frame, y, sample_weight=w, interactions=True)
    n, p = frame.shape
    assert explanation.values.shape == (n, p, p) and explanation.feature_names == list(frame.columns)
    # each row's matrix is symmetric and its rows sum to that row's per-feature shares
    np.testing.assert_allclose(explanation.values, np.swapaxes(explanation.values, 1, 2), atol=1e-15)
    np.testing.assert_allclose(explanation.values.sum(axis=2), explainer(frame, y, sample_weight=w).values, atol=1e-12)
    matrix = explainer.rsq_interactions(frame, y, sample_weight=w)
    np.testing.assert_allclose(explanation.values.sum(axis=0), matrix.to_numpy(), atol=1e-12)
    np.testing.assert_array_equal(explainer.shap_interaction_values(frame, y, sample_weight=w), explanation.values)
    assert explainer.shap_interaction_values(frame).shape == (n, p, p)  # shap's own, without y


def test_weights_groups_or_multioutput_without_a_target_are_refused(fitted):
    # groups= and multioutput= were ignored without y: shap's ungrouped SHAP values of the
    # predictions came back, even for a group of no existing column
    model, frame, _, w = fitted
    explainer = RSquaredExplainer(model)
    with pytest.raises(TypeError, match="sample_weight weights the rows of R²: pass y too"):
        explainer(frame, sample_weight=w)
    with pytest.raises(TypeError, match=r"groups= makes players of R² shares .*: pass y too"):
        explainer(frame, groups={"g": ["no_such_column"]})
    with pytest.raises(TypeError, match="groups= makes players"):
        explainer(frame, interactions=True, groups={"g": [0, 1]})
    with pytest.raises(TypeError, match="multioutput= combines the outputs' R²: pass y too"):
        explainer(frame, multioutput="raw_values")


def test_the_positional_parameters_are_shaps(fitted):
    # shap's call takes interactions third: explainer(X, None, True) raised TypeError on sample_weight
    model, frame, y, w = fitted
    ours, theirs = RSquaredExplainer(model), shap.TreeExplainer(model)
    np.testing.assert_array_equal(ours(frame, None, True).values, theirs(frame, None, True).values)
    np.testing.assert_array_equal(ours(frame, None, False, False).values, theirs(frame, None, False, False).values)
    with_y = ours(frame, y, True)
    np.testing.assert_allclose(with_y.values.sum(0), ours.rsq_interactions(frame, y).to_numpy(), atol=1e-12)
    with pytest.raises(TypeError, match=r"interactions must be True or False.*sample_weight="):
        ours(frame, y, w)  # weights where shap has interactions are named, not read as "yes"
    # the constructor's too: shap's TreeExplainer(model, None, "raw") raised TypeError here, and so did
    # link= and linearize_link=, which shap accepts (and ignores)
    spelled = RSquaredExplainer(
        model, None, "raw", "tree_path_dependent", link=shap.links.identity, linearize_link=True
    )
    np.testing.assert_array_equal(spelled.shap_values(frame), theirs.shap_values(frame))
    np.testing.assert_allclose(spelled.rsq(frame, y), ours.rsq(frame, y), atol=1e-15)


def test_feature_names_are_checked(fitted):
    model, frame, y, _ = fitted
    names = [f"n{j}" for j in range(frame.shape[1])]
    explainer = RSquaredExplainer(model, feature_names=names)
    assert explainer(frame.to_numpy(), y).feature_names == names
    with pytest.raises(ValueError, match="feature_names has 2 names"):
        RSquaredExplainer(model, feature_names=["a", "b"])


def _catboost(policy: str, X, y):
    catboost = pytest.importorskip("catboost")
    size = {"max_leaves": 12} if policy == "Lossguide" else {"depth": 6}
    return catboost.CatBoostRegressor(
        grow_policy=policy, iterations=15, verbose=0, allow_writing_files=False, random_seed=0, thread_count=1, **size
    ).fit(X, y)


def _lightgbm_forest(X, y):
    lightgbm = pytest.importorskip("lightgbm")
    options = {"boosting_type": "rf", "subsample": 0.7, "subsample_freq": 1}  # predicts the mean of its trees
    return lightgbm.LGBMRegressor(n_estimators=15, num_leaves=8, verbose=-1, random_state=0, **options).fit(X, y)


NOT_SHAPS = {
    "lightgbm rf": _lightgbm_forest,
    "catboost Depthwise": lambda X, y: _catboost("Depthwise", X, y),
    "catboost Lossguide": lambda X, y: _catboost("Lossguide", X, y),
}


@pytest.mark.parametrize("kind", list(NOT_SHAPS))
def test_prediction_shap_values_add_up_where_shaps_own_do_not(kind):
    # shap's values of these models do not add up to the predictions: LightGBM's pred_contrib sums
    # a random forest's trees instead of averaging them, CatBoost explains its non-symmetric trees
    # wrong; shap is given the trees as read here, and its own TreeSHAP explains them exactly
    from oracle import tree_shap_oracle

    X, y, _ = make_data(seed=5)
    model = NOT_SHAPS[kind](X, y)
    rows = X.copy()
    rows[::7, 1] = np.nan
    explainer = RSquaredExplainer(model)
    explanation = explainer(rows)
    forest = explainer.forest
    exact = sum(tree_shap_oracle(tree, forest.cast(rows)) for tree in forest.trees)
    np.testing.assert_allclose(explanation.values, exact, atol=1e-12)
    additivity = explanation.values.sum(axis=1) + explanation.base_values - model.predict(rows)
    assert np.abs(additivity).max() < 1e-9
    np.testing.assert_allclose(explainer.shap_values(rows), exact, atol=1e-12)
    np.testing.assert_allclose(explainer.shap_interaction_values(rows[:20]).sum(axis=2), exact[:20], atol=1e-12)
    theirs = shap.TreeExplainer(model)(rows, check_additivity=False)  # the gap this fills
    assert np.abs(theirs.values.sum(axis=1) + theirs.base_values - model.predict(rows)).max() > 1e-3
    # the expected value is a number, as shap's is (the fixed trees gave a one-element array)
    assert isinstance(explainer.expected_value, float)
    assert explainer.expected_value == pytest.approx(model.predict(rows).mean() - explanation.values.sum(1).mean())
    with pytest.raises(ValueError, match="tree_limit is not available for this"):  # was an additivity error
        explainer.shap_values(rows, tree_limit=3)


def test_models_shap_explains_right_keep_shaps_own_values():
    lightgbm = pytest.importorskip("lightgbm")
    X, y, _ = make_data(seed=5)
    plain = lightgbm.LGBMRegressor(n_estimators=15, num_leaves=8, verbose=-1).fit(X, y)
    for model in (plain, _catboost("SymmetricTree", X, y)):
        np.testing.assert_array_equal(RSquaredExplainer(model).shap_values(X), shap.TreeExplainer(model).shap_values(X))


def test_lightgbm_interaction_values_read_nan_as_lightgbm_does():
    # a LightGBM model fitted without missing values reads NaN as 0.0; shap's SHAP values (LightGBM's
    # pred_contrib) know it, its interaction values (its own parse) sent NaN to the default child
    lightgbm = pytest.importorskip("lightgbm")
    X, y, _ = make_data(seed=6)
    model = lightgbm.LGBMRegressor(n_estimators=15, num_leaves=8, verbose=-1).fit(X, y)
    rows = X.copy()
    rows[::3, 0] = np.nan
    explainer = RSquaredExplainer(model)
    values = explainer.shap_values(rows)
    np.testing.assert_array_equal(values, shap.TreeExplainer(model).shap_values(rows))  # shap's own, right
    np.testing.assert_allclose(explainer.shap_interaction_values(rows).sum(axis=2), values, atol=1e-12)
    np.testing.assert_allclose(explainer(rows, interactions=True).values.sum(axis=2), values, atol=1e-12)
    theirs = shap.TreeExplainer(model).shap_interaction_values(rows)  # the gap this fills
    assert np.abs(theirs.sum(axis=2) - values).max() > 1e-3


def test_trees_handed_to_shap_keep_nodes_no_training_row_reached():
    # shap's TreeSHAP refuses a zero cover (it divides by the fraction); a node nobody reached gets
    # a vanishing share of its parent's cover, which must leave every value as subset enumeration
    # on the zero covers gives it
    import dataclasses

    from oracle import tree_shap_oracle
    from sklearn.tree import DecisionTreeRegressor

    from shap_rsq.models.forest import Forest
    from shap_rsq.models.node_arrays import NodeArrays
    from shap_rsq.models.shap_trees import forest_model

    X, y, _ = make_data(seed=7)
    forest = RSquaredExplainer(DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)).forest
    nodes = forest.nodes
    cover = nodes.cover.copy()
    left, right = nodes.left[0], nodes.right[0]
    unreached = [int(left[left[0]])]  # a whole subtree two levels down: its splits split evenly
    while unreached[-1] >= 0 and len(unreached) < 40:
        below = [c for n in unreached if n >= 0 for c in (left[n], right[n]) if c >= 0 and c not in unreached]
        if not below:
            break
        unreached.extend(below)
    leaf = int(np.flatnonzero((left < 0) & (nodes.depth[0] >= 0))[-1])
    cover[0, [*unreached, leaf]] = 0.0
    for node in np.argsort(-nodes.depth[0], kind="stable"):  # a split's cover is its children's, as trained
        if left[node] >= 0 and nodes.depth[0, node] >= 0:
            cover[0, node] = cover[0, left[node]] + cover[0, right[node]]
    fields = {name: getattr(nodes, name) for name in ("left", "right", "default", "feature", "threshold", "value")}
    zeroed = dataclasses.replace(forest, nodes=NodeArrays.from_padded(**fields, cover=cover, n_nodes=nodes.n_nodes))
    assert isinstance(zeroed, Forest) and (zeroed.nodes.cover[0, : nodes.n_nodes[0]] == 0).sum() >= 3
    exact = sum(tree_shap_oracle(tree, zeroed.cast(X)) for tree in zeroed.trees)
    values = shap.TreeExplainer(forest_model(zeroed)).shap_values(X)
    np.testing.assert_allclose(values, exact, atol=1e-12)
    assert np.abs(exact - sum(tree_shap_oracle(t, forest.cast(X)) for t in forest.trees)).max() > 1e-3


def test_the_expected_value_of_a_multi_target_model_has_one_value_per_output_before_any_call():
    # the constructor set the first output's expected value alone (a number) until shap's first
    # call replaced it with one per output: expected_value[k] failed or read another baseline
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    Y = np.c_[X[:, 0] + 3, 3 * X[:, 1] - 0.3, -0.5 * X[:, 0] + 5.6]
    model = xgboost.XGBRegressor(n_estimators=4, max_depth=3).fit(X, Y)
    explainer = RSquaredExplainer(model)
    before = np.asarray(explainer.expected_value, dtype=float)
    values = explainer.shap_values(X)  # (n, p, outputs)
    np.testing.assert_allclose(before, np.asarray(explainer.expected_value, dtype=float), rtol=1e-6)
    np.testing.assert_allclose(values.sum(axis=1) + before, model.predict(X), atol=1e-5)


def _shap_only_models():
    lightgbm = pytest.importorskip("lightgbm")
    return {
        "XGBRegressor, quantile": (
            lambda: xgboost.XGBRegressor(objective="reg:quantileerror", quantile_alpha=0.2, n_estimators=5),
            0,
        ),
        "LGBMRegressor, absolute error": (
            lambda: lightgbm.LGBMRegressor(objective="l1", n_estimators=5, num_leaves=6, verbose=-1),
            0,
        ),
        "XGBRegressor, absolute error": (
            lambda: xgboost.XGBRegressor(objective="reg:absoluteerror", n_estimators=5, max_depth=3),
            0,
        ),
    }


@pytest.mark.parametrize("name", list(_shap_only_models()))
def test_a_model_without_an_r2_decomposition_is_still_shaps_explainer(name):
    # boosted classifiers and other objectives were refused when the explainer was made, so even the
    # calls without y that shap.TreeExplainer answers failed; now only the calls that need R² do
    import pickle

    from shap_rsq import UnsupportedModelError, estimate_rsq

    make, n_classes = _shap_only_models()[name]
    X, y, _ = make_data(seed=6)
    target = y if n_classes == 0 else np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    model = make().fit(X, target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # shap's notice that LightGBM's binary output is a list now
        ours, theirs = RSquaredExplainer(model), shap.TreeExplainer(model)
        np.testing.assert_array_equal(ours.shap_values(X), theirs.shap_values(X))
        mine, reference = ours(X), theirs(X)
    np.testing.assert_array_equal(mine.values, reference.values)
    np.testing.assert_array_equal(mine.base_values, reference.base_values)
    np.testing.assert_array_equal(np.asarray(ours.expected_value), np.asarray(theirs.expected_value))
    if name.startswith("XGB"):
        np.testing.assert_array_equal(ours.shap_interaction_values(X[:20]), theirs.shap_interaction_values(X[:20]))
    copy = pickle.loads(pickle.dumps(ours))
    np.testing.assert_array_equal(copy.shap_values(X[:20]), theirs.shap_values(X[:20]))
    reason = "no usable second derivative"
    calls = {
        "rsq": lambda: ours.rsq(X, target),
        "explainer(X, y)": lambda: ours(X, target),
        "shap_values(X, y)": lambda: ours.shap_values(X, target),
        # the reason comes before the complaint about an option that applies only without y
        "shap_values(X, y, tree_limit=2)": lambda: ours.shap_values(X, target, tree_limit=2),
        "shap_interaction_values(X, y, tree_limit=2)": lambda: ours.shap_interaction_values(X, target, tree_limit=2),
        "shap_interaction_values(X, y)": lambda: ours.shap_interaction_values(X, target),
        "loss_reduction": lambda: ours.loss_reduction(X, target),
        "rsq_interactions": lambda: ours.rsq_interactions(X, target),
        "estimate_rsq": lambda: estimate_rsq(ours, X, target, n_sample=10),
        "model_info": lambda: ours.model_info,
    }
    for call in calls.values():
        with pytest.raises(UnsupportedModelError, match=reason):
            call()


def test_a_model_without_an_r2_decomposition_matches_a_frame_by_name_too():
    # the explainer is shap's alone here, and shap reads a frame by position: reordered columns gave
    # an XGBClassifier's values to other columns' names (XGBoost's own predict refuses that frame)
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    labels = (5 * X["a"] + 0.3 * X["c"] > 0).astype(int)
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3).fit(X, labels)
    ours, theirs = RSquaredExplainer(model), shap.TreeExplainer(model)
    reordered = X[["c", "a", "b"]]
    moved = [2, 0, 1]
    expected = theirs(X)
    explanation = ours(reordered)
    assert explanation.feature_names == ["c", "a", "b"]
    np.testing.assert_array_equal(explanation.values, expected.values[:, moved])
    np.testing.assert_array_equal(explanation.data, reordered.to_numpy())
    np.testing.assert_array_equal(ours.shap_values(reordered), theirs.shap_values(X)[:, moved])
    interactions = ours.shap_interaction_values(reordered)
    np.testing.assert_array_equal(interactions, theirs.shap_interaction_values(X)[:, moved][:, :, moved])
    with pytest.raises(ValueError, match="missing 'b'; unexpected 'B'"):
        ours(reordered.rename(columns={"b": "B"}))


@pytest.mark.parametrize("kind", ["forest", "lightgbm", "xgboost", "xgboost classifier"])
def test_calls_without_y_refuse_rows_of_another_width_as_calls_with_y_do(kind):
    # shap does not check the width of an array: with a column fewer its interaction values came
    # back wrong (8.3 off the predictions of a random forest) without an error, with one more the
    # extra column got zeros, and XGBoost aborted the whole process ("free(): invalid next size")
    from sklearn.ensemble import RandomForestRegressor

    X, y, _ = make_data(seed=2)
    if kind == "forest":
        model = RandomForestRegressor(4, max_depth=3, random_state=0).fit(X, y)
    elif kind == "lightgbm":
        model = pytest.importorskip("lightgbm").LGBMRegressor(n_estimators=5, verbose=-1).fit(X, y)
    elif kind == "xgboost":
        model = xgboost.XGBRegressor(n_estimators=5, max_depth=3).fit(X, y)
    else:  # shap's explainer alone (no R² decomposition): the width the model says it was fitted on
        model = xgboost.XGBClassifier(n_estimators=5, max_depth=3).fit(X, y > np.median(y))
    explainer = RSquaredExplainer(model)
    p = X.shape[1]
    for rows in (X[:, :-1], np.c_[X, X[:, :1]], pd.DataFrame(X[:, :-1]), X[0, :-1]):
        width = np.shape(rows)[-1]
        message = f"X has {width} features, but the model was fitted with {p} features"
        for call in (explainer.shap_values, explainer, explainer.shap_interaction_values):
            with pytest.raises(ValueError, match=message):
                call(rows)
    np.testing.assert_array_equal(explainer.shap_values(X), shap.TreeExplainer(model).shap_values(X))
