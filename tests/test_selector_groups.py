"""RSquaredSelector(feature_groups=...): groups of columns ranked as one player and kept or dropped whole."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import Ridge
from sklearn.model_selection import GroupKFold, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils import resample
from sklearn.utils._param_validation import InvalidParameterError

from shap_rsq import RSquaredExplainer, RSquaredSelector

NUMERIC = ["age", "bmi", "bp", "s1"]
COLORS = ["color_blue", "color_green", "color_red", "color_white"]
GROUPS = {"color": COLORS}
PLAYERS = ["color", "age", "bmi", "bp", "s1"]  # the group first, then the ungrouped columns in order


def frame(n: int = 300, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """``age`` strong, a four-level ``color`` one-hot encoded (last columns), ``bmi`` weak, ``bp`` and ``s1`` noise."""
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(n, 4))
    color = rng.choice(["blue", "green", "red", "white"], n)
    effect = pd.Series({"blue": -1.2, "green": 0.0, "red": 1.2, "white": 0.6})[color].to_numpy()
    y = 1.5 * numeric[:, 0] + effect + 0.4 * numeric[:, 1] + rng.normal(scale=0.5, size=n)
    one_hot = (color[:, None] == np.array(["blue", "green", "red", "white"])).astype(float)
    X = pd.DataFrame(np.hstack([numeric, one_hot]), columns=NUMERIC + COLORS)
    return X, y, color


def tree(depth: int = 5) -> DecisionTreeRegressor:
    return DecisionTreeRegressor(max_depth=depth, random_state=0)


def by_hand(shares: np.ndarray, keep: np.ndarray) -> list[str]:
    """The columns of the players ``keep`` selects, ``shares`` and ``keep`` in PLAYERS order."""
    members = {"color": COLORS, **{name: [name] for name in NUMERIC}}
    kept = {column for player, chosen in zip(PLAYERS, keep, strict=True) if chosen for column in members[player]}
    return [column for column in NUMERIC + COLORS if column in kept]


@pytest.fixture(scope="module")
def data():
    return frame()


def test_support_is_the_ranking_of_the_explainers_group_shares(data):
    X, y, _ = data
    selector = RSquaredSelector(tree(), feature_groups=GROUPS).fit(X, y)
    shares = RSquaredExplainer(selector.estimator_).rsq(X, y, groups=GROUPS)
    assert list(shares.index) == PLAYERS and list(selector.player_names_) == PLAYERS
    np.testing.assert_allclose(selector.player_rsq_, shares.to_numpy(), atol=1e-12)
    assert selector.threshold_ == pytest.approx(shares.mean())
    expected = by_hand(shares.to_numpy(), shares.to_numpy() >= shares.mean())
    assert list(selector.get_feature_names_out()) == expected == ["age", *COLORS]
    # each column carries its group's share; the group's is not the sum of its columns' own shares
    np.testing.assert_allclose(selector.feature_rsq_, shares[["age", "bmi", "bp", "s1"] + ["color"] * 4], atol=1e-12)
    alone = RSquaredSelector(tree()).fit(X, y)
    assert list(alone.get_feature_names_out()) == ["age", "color_blue"]  # column by column, one colour survives
    assert abs(selector.player_rsq_[0] - alone.feature_rsq_[4:].sum()) > 1e-3
    transformed = selector.transform(X)
    np.testing.assert_array_equal(transformed, X[expected].to_numpy())


@pytest.mark.parametrize("threshold", ["median", "0.5*mean", "cumulative:0.9", "cumulative:0.6", 0.01, 0.3])
def test_a_group_is_kept_or_dropped_whole(data, threshold):
    X, y, _ = data
    selector = RSquaredSelector(tree(), feature_groups=GROUPS, threshold=threshold).fit(X, y)
    shares = RSquaredExplainer(selector.estimator_).rsq(X, y, groups=GROUPS).to_numpy()
    if isinstance(threshold, str) and threshold.startswith("cumulative"):
        fraction = float(threshold.split(":")[1])
        ranked = np.sort(shares[shares > 0])[::-1]
        cut = ranked[np.argmax(np.cumsum(ranked) >= fraction * ranked.sum())]  # smallest set reaching the fraction
    elif threshold == "median":
        cut = np.median(shares)
    elif threshold == "0.5*mean":
        cut = 0.5 * shares.mean()
    else:
        cut = threshold
    assert selector.threshold_ == pytest.approx(cut)
    support = selector.get_support()
    assert support[4:].all() or not support[4:].any()
    assert list(selector.get_feature_names_out()) == by_hand(shares, shares >= cut)


def test_max_features_counts_groups_not_columns(data):
    X, y, _ = data
    selector = RSquaredSelector(tree(), feature_groups=GROUPS, max_features=2, threshold=-np.inf).fit(X, y)
    assert list(selector.get_feature_names_out()) == ["age", *COLORS]  # two players, five columns
    selector.set_params(max_features=1)  # applies at the next transform, as without groups
    assert list(selector.get_feature_names_out()) == ["age"]
    selector.set_params(max_features=3)
    assert list(selector.get_feature_names_out()) == ["age", "bmi", *COLORS]
    called = RSquaredSelector(tree(), feature_groups=GROUPS, max_features=lambda X: 2, threshold=-np.inf).fit(X, y)
    assert called.max_features_ == 2 and called.get_support().sum() == 5


def test_columns_by_position_and_in_a_pipeline_after_a_one_hot_encoder(data):
    X, y, color = data
    by_position = RSquaredSelector(tree(), feature_groups={"color": [4, 5, 6, 7]}).fit(X, y)
    by_name = RSquaredSelector(tree(), feature_groups=GROUPS).fit(X, y)
    np.testing.assert_array_equal(by_position.player_rsq_, by_name.player_rsq_)
    # the realistic case: the encoder makes the columns, the selector keeps them together
    raw = X[NUMERIC].assign(color=color)
    encode = ColumnTransformer(
        [("color", OneHotEncoder(sparse_output=False), ["color"])],
        remainder="passthrough",
        verbose_feature_names_out=False,
    )
    pipeline = make_pipeline(encode, RSquaredSelector(tree(), feature_groups=GROUPS), Ridge()).set_output(
        transform="pandas"
    )
    pipeline.fit(raw, y)
    selector = pipeline[1]
    assert list(selector.feature_names_in_) == [*COLORS, *NUMERIC]
    assert list(selector.player_names_) == ["color", *NUMERIC]
    assert list(pipeline[-1].feature_names_in_) == [*COLORS, "age"]
    assert list(selector.summary().index) == ["age", "color", "bmi", "s1", "bp"]
    assert list(selector.summary()["n_columns"]) == [1, 4, 1, 1, 1]


def test_out_of_fold_group_shares_pool_the_folds(data):
    X, y, _ = data
    cv = KFold(4, shuffle=True, random_state=0)
    selector = RSquaredSelector(tree(4), feature_groups=GROUPS, cv=cv, threshold=0.0).fit(X, y)
    reductions = np.zeros(len(PLAYERS))
    for train, test in cv.split(X):
        model = tree(4).fit(X.iloc[train], y[train])
        reductions += RSquaredExplainer(model).loss_reduction(X.iloc[test], y[test], groups=GROUPS).to_numpy()
    squares = np.sum((y - y.mean()) ** 2)  # about the mean of all held-out rows: the folds cover y
    np.testing.assert_allclose(selector.player_rsq_, reductions / squares, atol=1e-12)
    assert list(selector.get_feature_names_out()) == by_hand(reductions, reductions >= 0)


def test_group_k_fold_groups_still_reach_the_splitter_with_feature_groups(data):
    X, y, _ = data
    patients = np.arange(len(y)) // 3
    splits = list(GroupKFold(3).split(X, y, patients))
    selector = RSquaredSelector(tree(4), feature_groups=GROUPS, cv=splits).fit(X, y)
    reductions = np.zeros(len(PLAYERS))
    for train, test in splits:
        model = tree(4).fit(X.iloc[train], y[train])
        reductions += RSquaredExplainer(model).loss_reduction(X.iloc[test], y[test], groups=GROUPS).to_numpy()
    squares = np.sum((y - y.mean()) ** 2)  # about the mean of all held-out rows: the folds cover y
    np.testing.assert_allclose(selector.player_rsq_, reductions / squares, atol=1e-12)


def test_a_forest_classifier_selects_groups_by_their_brier_skill_share(data):
    X, y, _ = data
    labels = np.array(["low", "mid", "high"], dtype=object)[np.digitize(y, np.quantile(y, [0.33, 0.66]))]
    model = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, labels)
    selector = RSquaredSelector(model, prefit=True, feature_groups=GROUPS, max_features=2).fit(X, labels)
    shares = RSquaredExplainer(model).rsq(X, labels, groups=GROUPS).to_numpy()
    np.testing.assert_allclose(selector.player_rsq_, shares, atol=1e-12)
    keep = (shares >= shares.mean()) & np.isin(np.arange(5), np.argsort(-shares, kind="mergesort")[:2])
    assert list(selector.get_feature_names_out()) == by_hand(shares, keep) == ["age", *COLORS]
    # refitted with stratified out-of-fold folds, the ranking holds
    forest = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0)
    folded = RSquaredSelector(forest, feature_groups=GROUPS, cv=3, max_features=2).fit(X, labels)
    assert list(folded.get_feature_names_out()) == ["age", *COLORS]
    assert folded.player_rsq_[1] > folded.player_rsq_[0] > 5 * folded.player_rsq_[2:].max()


def test_a_screen_keeps_whole_groups_and_counts_players(data):
    X, y, _ = data
    selector = RSquaredSelector(tree(), feature_groups=GROUPS, screen=2, threshold=0.01).fit(X, y)
    first = RSquaredExplainer(tree().fit(X, y)).rsq(X, y, groups=GROUPS).to_numpy()
    np.testing.assert_allclose(selector.screen_rsq_, first[[1, 2, 3, 4, 0, 0, 0, 0]], atol=1e-12)
    kept = ["age", *COLORS]
    assert list(X.columns[selector.screen_support_]) == kept
    assert list(selector.estimator_.feature_names_in_) == kept
    second = RSquaredExplainer(selector.estimator_).rsq(X[kept], y, groups=GROUPS).to_numpy()  # color, age
    np.testing.assert_allclose(selector.player_rsq_, [*second, 0.0, 0.0, 0.0], atol=1e-12)
    assert list(selector.get_feature_names_out()) == kept


def test_a_screen_on_an_array_tells_the_explainer_positions_among_the_kept_columns(data):
    X, y, _ = data
    params = dict(screen=2, cv=KFold(3, shuffle=True, random_state=0), uncertainty="se")
    named = RSquaredSelector(tree(), feature_groups=GROUPS, **params).fit(X, y)
    positional = RSquaredSelector(tree(), feature_groups={"color": [7, 5, 6, 4]}, **params).fit(X.to_numpy(), y)
    np.testing.assert_allclose(positional.player_rsq_, named.player_rsq_, atol=1e-12)
    np.testing.assert_allclose(positional.feature_rsq_se_, named.feature_rsq_se_, atol=1e-12)
    assert named.player_rsq_[2:].tolist() == [0.0, 0.0, 0.0] and np.all(named.player_rsq_[:2] > 0.1)


def test_standard_errors_are_the_groups(data):
    X, y, _ = data
    selector = RSquaredSelector(tree(4), feature_groups=GROUPS, uncertainty="se").fit(X, y)
    explainer = RSquaredExplainer(selector.estimator_)
    a = explainer.loss_reduction(X, y, local=True, groups=GROUPS)
    s = (y - y.mean()) ** 2
    r = a.sum(axis=0) / s.sum()
    expected = np.sqrt(len(y) / (len(y) - 1) * ((a - s[:, None] * r) ** 2).sum(axis=0)) / s.sum()
    np.testing.assert_allclose(selector.feature_rsq_se_, expected[[1, 2, 3, 4, 0, 0, 0, 0]], rtol=1e-9)
    assert selector.summary().loc["color", "se"] == pytest.approx(expected[0], rel=1e-9)


@pytest.mark.parametrize("cv", [None, 3])
def test_bootstrap_replicates_and_stability_are_per_group(data, cv):
    X, y, _ = data
    params = dict(feature_groups=GROUPS, uncertainty="bootstrap", n_bootstrap=3, random_state=0, cv=cv)
    selector = RSquaredSelector(tree(3), max_features=1, threshold=-np.inf, **params).fit(X, y)
    draws = np.random.RandomState(0)
    replicates = []
    for _ in range(3):
        rows = resample(np.arange(len(y)), random_state=draws)
        model = tree(3).fit(X.iloc[rows], y[rows])
        held = rows if cv is None else np.setdiff1d(np.arange(len(y)), rows)
        replicates.append(RSquaredExplainer(model).rsq(X.iloc[held], y[held], groups=GROUPS).to_numpy())
    replicates = np.array(replicates)
    np.testing.assert_allclose(selector.bootstrap_rsq_, replicates[:, [1, 2, 3, 4, 0, 0, 0, 0]], atol=1e-12)
    np.testing.assert_allclose(selector.feature_rsq_se_[4], replicates[:, 0].std(ddof=1), atol=1e-12)
    tops = np.argmax(replicates, axis=1)  # max_features=1: the replicate's largest player
    frequency = np.array([np.mean(tops == k) for k in range(5)])
    np.testing.assert_allclose(selector.selection_frequency_, frequency[[1, 2, 3, 4, 0, 0, 0, 0]])


def test_clone_params_and_refit_without_groups(data):
    X, y, _ = data
    selector = RSquaredSelector(tree(), feature_groups=GROUPS)
    assert selector.get_params()["feature_groups"] is GROUPS  # stored as given, resolved in fit
    twin = clone(selector)
    assert twin.get_params()["feature_groups"] == GROUPS
    twin.fit(X, y)
    np.testing.assert_array_equal(twin.feature_groups_["color"], [4, 5, 6, 7])
    assert GROUPS == {"color": COLORS}  # the caller's dict is not changed
    twin.set_params(feature_groups=None).fit(X, y)
    assert not hasattr(twin, "feature_groups_")
    assert list(twin.player_names_) == [*NUMERIC, *COLORS]
    np.testing.assert_array_equal(twin.player_rsq_, twin.feature_rsq_)
    assert twin.summary().index.name == "feature"


def test_a_prefit_model_is_matched_to_reordered_columns_by_name(data):
    X, y, _ = data
    model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    reordered = X[X.columns[::-1]]
    selector = RSquaredSelector(model, prefit=True, feature_groups=GROUPS).fit(reordered, y)
    shares = RSquaredExplainer(model).rsq(X, y, groups=GROUPS)
    assert list(selector.player_names_) == ["color", "s1", "bp", "bmi", "age"]
    np.testing.assert_allclose(selector.player_rsq_, shares[selector.player_names_].to_numpy(), atol=1e-12)
    assert list(selector.get_feature_names_out()) == [*COLORS[::-1], "age"]


def test_arrays_take_positions_and_name_ungrouped_columns_like_get_feature_names_out(data):
    X, y, _ = data
    selector = RSquaredSelector(tree(), feature_groups={"color": [4, 5, 6, 7]}).fit(X.to_numpy(), y)
    assert list(selector.player_names_) == ["color", "x0", "x1", "x2", "x3"]
    assert list(selector.summary().index) == ["x0", "color", "x1", "x3", "x2"]
    assert list(selector.summary(input_features=X.columns).index) == ["age", "color", "bmi", "s1", "bp"]
    assert list(selector.get_feature_names_out()) == ["x0", "x4", "x5", "x6", "x7"]


@pytest.mark.parametrize(
    ("groups", "array", "message"),
    [
        ({"color": ["colour_red", "color_blue"]}, False, "feature_groups: .*Did you mean 'color_red'"),
        ({"a": ["age", "bmi"], "b": ["bmi", "bp"]}, False, "Column 'bmi' is in group 'a' and in group 'b'"),
        ({"color": COLORS}, True, "features have no names here: give positions"),
        ({"color": [4, 5, 6, 8]}, True, "column 8 is out of range for 8 features"),
        ({"x3": [4, 5]}, True, "the name 'x3' is given to a group and to another group or an ungrouped column"),
        ({1: ["age"], "1": ["bmi"]}, False, "feature_groups: Groups 1 and '1' have the same name as text, '1'"),
        ({"bp": ["age", "bmi"]}, False, "'bp' is also the name of an ungrouped feature"),
        ({"color": []}, False, "Group 'color' has no columns"),
        ({"color": "color_red"}, False, "must list its columns"),
        ({}, False, "feature_groups must be None or a non-empty dict"),
    ],
)
def test_bad_groups_are_refused_in_fit_before_any_model_is_fitted(data, groups, array, message):
    X, y, _ = data

    class Refuses(DecisionTreeRegressor):
        def fit(self, X, y, sample_weight=None, check_input=True):
            raise AssertionError("the groups must be checked before the estimator is fitted")

    selector = RSquaredSelector(Refuses(), feature_groups=groups)
    with pytest.raises(ValueError, match=message):
        selector.fit(X.to_numpy() if array else X, y)


def test_a_list_is_not_a_dict_of_groups(data):
    X, y, _ = data
    with pytest.raises(InvalidParameterError, match="'feature_groups' parameter of RSquaredSelector must be"):
        RSquaredSelector(tree(), feature_groups=[COLORS]).fit(X, y)


@pytest.mark.parametrize("options", [{}, {"cv": 3}, {"uncertainty": "se"}, {"screen": 4}])
def test_groups_by_position_on_integer_column_labels(options):
    # positions went to the explainer, which reads an int as the column it labels: on a frame
    # labelled [7, 6, ..., 0] the color group's share went to other columns, and the wrong ones were kept
    X, y, _ = frame()
    groups = {"color": [4, 5, 6, 7]}
    expected = RSquaredSelector(tree(), feature_groups=groups, **options).fit(X.to_numpy(), y)
    for labels in (list(range(7, -1, -1)), list(range(2, 10))):
        fitted = RSquaredSelector(tree(), feature_groups=groups, **options).fit(X.set_axis(labels, axis=1), y)
        np.testing.assert_allclose(fitted.player_rsq_, expected.player_rsq_, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(fitted.get_support(), expected.get_support())
    with pytest.raises(ValueError, match="mix integers with other labels"):
        RSquaredSelector(tree(), feature_groups=groups).fit(X.set_axis([0, 1, 2, 3, 4, 5, 6, (7, 8)], axis=1), y)
