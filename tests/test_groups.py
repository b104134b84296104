"""Grouped features as single players: exact against subset enumeration over groups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import shap
from conftest import FAMILIES, NO_NAN
from oracle import rsq_oracle
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer

# six features: {0, 2} and {1, 4, 5} are groups, 3 stays alone (listed after the groups)
GROUPS = {"ab": [0, 2], "cde": [1, 4, 5]}
MEMBERS = [[0, 2], [1, 4, 5], [3]]


@pytest.mark.parametrize("family", FAMILIES)
def test_group_shares_match_subset_enumeration_over_groups(fitted, family):
    model, X, y, w = fitted(family, family not in NO_NAN)
    explainer = RSquaredExplainer(model)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w, players=MEMBERS)
    shares = explainer.rsq(X, y, sample_weight=w, groups=GROUPS)
    np.testing.assert_allclose(shares, expected_global, atol=1e-9, rtol=0)
    local = explainer(X, y, sample_weight=w, groups=GROUPS)
    np.testing.assert_allclose(local.values, expected_local, atol=1e-9, rtol=0)
    # efficiency: the players change, the total does not
    np.testing.assert_allclose(shares.sum(), explainer.rsq(X, y, sample_weight=w).sum(), atol=1e-12)


def test_a_group_is_not_the_sum_of_its_columns_and_singletons_change_nothing(fitted):
    model, X, y, w = fitted("XGBRegressor")
    explainer = RSquaredExplainer(model)
    single = explainer.rsq(X, y, sample_weight=w)
    singletons = explainer.rsq(X, y, sample_weight=w, groups={f"g{j}": [j] for j in range(X.shape[1])})
    np.testing.assert_allclose(singletons, single, atol=1e-12)
    grouped = explainer.rsq(X, y, sample_weight=w, groups={"pair": [0, 1]})
    np.testing.assert_allclose(grouped[1:], single[2:], atol=0.05)  # the others barely move ...
    assert abs(grouped[0] - single[:2].sum()) > 1e-6  # ... but the pair's interaction is its own


def test_groups_by_name_label_the_result_and_follow_reordered_columns(fitted):
    model, X, y, _ = fitted("RandomForestRegressor")
    names = ["age", "bmi", "bp", "s1", "s2", "s3"]
    frame = pd.DataFrame(X, columns=names)
    model = type(model)(**model.get_params()).fit(frame, y)
    explainer = RSquaredExplainer(model)
    groups = {"body": ["bmi", "age"], "blood": ["bp", "s2"]}
    shares = explainer.rsq(frame, y, groups=groups)
    assert list(shares.index) == ["body", "blood", "s1", "s3"] and shares.name == "R²"
    np.testing.assert_allclose(explainer.rsq(frame[names[::-1]], y, groups=groups), shares, atol=1e-12)
    by_position = explainer.rsq(X, y, groups={"body": [1, 0], "blood": [2, 4]})  # model names, array rows
    np.testing.assert_allclose(by_position, shares.to_numpy(), atol=1e-12)
    explanation = explainer(frame, y, groups=groups)
    assert explanation.feature_names == ["body", "blood", "s1", "s3"]
    np.testing.assert_allclose(explanation.values.sum(axis=0), shares.to_numpy(), atol=1e-12)


def test_an_explanation_of_groups_on_an_array_is_labelled_by_its_players(fitted):
    # an array has no column labels: the Explanation once fell back to "Feature 0".."Feature 2",
    # so the third player (feature 3) was shown as feature 2
    model, X, y, _ = fitted("XGBRegressor")
    explanation = RSquaredExplainer(model)(X, y, groups=GROUPS)
    assert explanation.feature_names == ["ab", "cde", "Feature 3"]
    named = RSquaredExplainer(model, feature_names=list("uvwxyz"))(X, y, groups={"ab": ["u", "w"], "cde": [1, 4, 5]})
    assert named.feature_names == ["ab", "cde", "x"]
    np.testing.assert_allclose(named.values, explanation.values, atol=1e-12)


def test_an_explanation_of_groups_shows_each_players_own_column_beside_it(fitted):
    # as many players as columns: the rows were attached in the model's order, so the player
    # 'only_c' stood beside the values of column a in beeswarm and scatter plots; then no rows were
    # attached, and shap.plots.scatter of an ungrouped player failed inside shap
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, X, y, _ = fitted("XGBRegressor")
    singletons = {f"only_{j}": [j] for j in reversed(range(X.shape[1]))}
    for interactions in (False, True):
        explanation = RSquaredExplainer(model)(X, y, groups=singletons, interactions=interactions)
        assert explanation.feature_names[0] == f"only_{X.shape[1] - 1}"
        np.testing.assert_array_equal(explanation.data, X[:, ::-1])
    explanation = RSquaredExplainer(model)(X, y, groups=GROUPS)  # ab, cde, then feature 3 alone
    assert np.isnan(explanation.data[:, :2]).all()  # a group of several columns has no one value
    np.testing.assert_array_equal(explanation.data[:, 2], X[:, 3])
    shap.plots.scatter(explanation[:, "Feature 3"], show=False)
    drawn = np.asarray(plt.gca().collections[0].get_offsets())  # the points, in shap's own order
    expected = np.c_[X[:, 3], explanation.values[:, 2]]
    np.testing.assert_array_equal(drawn[np.lexsort(drawn.T[::-1])], expected[np.lexsort(expected.T[::-1])])
    plt.close("all")


def test_a_group_the_model_never_uses_gets_zero():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5))
    y = X[:, 0] + X[:, 1] ** 2 + rng.normal(scale=0.1, size=300)
    # columns 2-4 are constant when the model is fitted: it never splits on them
    model = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X * [1, 1, 0, 0, 0], y)
    shares = RSquaredExplainer(model).rsq(X, y, groups={"noise": [2, 3, 4]})
    assert shares[0] == 0.0 and shares[1:].sum() > 0.5


def test_class_shares_of_groups_match_enumeration_per_class(fitted):
    _, X, y, w = fitted("DecisionTreeRegressor")
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    model = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(X, labels)
    explainer = RSquaredExplainer(model)
    raw = explainer.rsq(X, labels, sample_weight=w, groups=GROUPS, multioutput="raw_values")
    for k, forest in enumerate(explainer.forests):
        Y = (labels == model.classes_[k]).astype(float)
        np.testing.assert_allclose(raw[:, k], rsq_oracle(forest, X, Y, w, players=MEMBERS)[0], atol=1e-9, rtol=0)


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ({"a": [0, 1], "b": [1, 2]}, "Column 1 is in group 'a' and in group 'b'"),
        ({"a": [0, 9]}, "column 9 is out of range for 6 features"),
        ({"a": []}, "Group 'a' has no columns"),
        ({"a": "x0"}, "must list its columns"),
        ({"a": [0, 0]}, "lists a column twice"),
        ({"a": ["bmi"]}, "features have no names here"),
        ({}, "non-empty dict"),
        ([[0, 1]], "non-empty dict"),
    ],
)
def test_bad_groups_are_refused_by_name(fitted, groups, message):
    model, X, y, _ = fitted("DecisionTreeRegressor")
    with pytest.raises(ValueError, match=message):
        RSquaredExplainer(model).rsq(X, y, groups=groups)


def test_group_names_must_not_shadow_an_ungrouped_feature():
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(50, 3)), columns=["a", "b", "c"])
    model = DecisionTreeRegressor(max_depth=3).fit(frame, frame["a"] + frame["b"])
    with pytest.raises(ValueError, match="'c' is also the name of an ungrouped feature"):
        RSquaredExplainer(model).rsq(frame, frame["a"], groups={"c": ["a", "b"]})
    with pytest.raises(ValueError, match="'zz' is not one of the model's features"):
        RSquaredExplainer(model).rsq(frame, frame["a"], groups={"g": ["a", "zz"]})


def test_group_names_equal_as_text_are_refused():
    # players are labelled by text: 1 and "1" gave a Series indexed ['1', '1', ...]
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(50, 4)), columns=list("abcd"))
    model = DecisionTreeRegressor(max_depth=3).fit(frame, frame["a"] * frame["b"] + frame["c"])
    explainer = RSquaredExplainer(model)
    message = r"Groups 1 and '1' have the same name as text, '1'; rename one of them\."
    for call in (explainer.rsq, explainer.rsq_interactions, explainer):
        with pytest.raises(ValueError, match=message):
            call(frame, frame["a"], groups={1: ["a"], "1": ["b"]})
    shares = explainer.rsq(frame, frame["a"], groups={1: ["a"], "2": ["b"]})  # distinct as text: accepted
    assert list(shares.index) == ["1", "2", "c", "d"]


@pytest.mark.parametrize("kernel", ["auto", "pairs", "lca"])
def test_groups_on_a_fully_grown_tree_through_each_deep_kernel(fitted, kernel):
    # a fully grown tree sends its upper nodes' leaf pairs to the pair kernel: it reads coins by player too
    _, X, y, w = fitted("DecisionTreeRegressor")
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)._set_engine(kernel=kernel)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w, players=MEMBERS)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w, groups=GROUPS), expected_global, atol=1e-9)
    local = explainer(X, y, sample_weight=w, groups=GROUPS)
    np.testing.assert_allclose(local.values, expected_local, atol=1e-9, rtol=0)


def test_an_unknown_column_is_refused_with_the_closest_name():
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(50, 3)), columns=["color_red", "color_blue", "size"])
    model = DecisionTreeRegressor(max_depth=3).fit(frame, frame["size"])
    with pytest.raises(ValueError, match="Did you mean 'color_red'"):
        RSquaredExplainer(model).rsq(frame, frame["size"], groups={"color": ["colour_red", "color_blue"]})


def test_positions_count_the_frames_columns_as_given_and_integer_labels_name_columns():
    # positions were read in the model's order on a reordered frame, and on a frame labelled
    # [4, 3, 2, 1, 0] {"g": [0, 1]} grouped the columns labelled 4 and 3 (the user's were 0 and 1)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 5))
    y = X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=200)
    frame = pd.DataFrame(X, columns=list("abcde"))
    explainer = RSquaredExplainer(DecisionTreeRegressor(max_depth=5, random_state=0).fit(frame, y))
    reordered = frame[["e", "d", "c", "b", "a"]]
    by_position = explainer.rsq(reordered, y, groups={"g": [3, 4]})  # X's fourth and fifth: b and a
    by_name = explainer.rsq(frame, y, groups={"g": ["a", "b"]})
    np.testing.assert_allclose(by_position[by_name.index].to_numpy(), by_name.to_numpy(), atol=1e-12)
    labelled = pd.DataFrame(X[:, ::-1], columns=[4, 3, 2, 1, 0])  # label k holds X[:, k]
    model = DecisionTreeRegressor(max_depth=5, random_state=0).fit(labelled, y)
    shares = RSquaredExplainer(model).rsq(labelled, y, groups={"g": [0, 1]})
    assert list(shares.index) == ["g", 4, 3, 2]  # ungrouped columns keep their integer labels
    ungrouped = RSquaredExplainer(model).rsq(labelled, y)
    assert shares["g"] > 0.9 and shares["g"] >= ungrouped[0] + ungrouped[1] - 0.05


def test_a_group_named_like_an_ungrouped_columns_position_is_refused_for_top_pairs():
    # top_k on an array labels ungrouped columns by position: {2: [0, 1]} gave a pair ("2", 2)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 5))
    y = X[:, 0] * X[:, 2] + X[:, 3] + 0.1 * rng.normal(size=150)
    explainer = RSquaredExplainer(DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y))
    for name in (2, "2"):
        with pytest.raises(ValueError, match=r"Group name '2' is also the position of an ungrouped column"):
            explainer.rsq_interactions(X, y, groups={name: [0, 1]}, top_k=3)
    pairs = explainer.rsq_interactions(X, y, groups={"g": [0, 1]}, top_k=3)
    assert len(pairs) == 3
