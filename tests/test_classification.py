"""Forest classifiers (Brier skill score) and multi-output regressors against subset enumeration.

Class ``k``'s probability of a forest classifier is a sum of trees, so the squared error of the
one-hot target decomposes exactly, class by class; ``oracle.rsq_oracle`` on each class's forest is
the reference.  The shares must combine as ``sklearn.metrics.r2_score`` combines outputs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oracle import rsq_oracle
from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor, RandomForestClassifier, RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.preprocessing import label_binarize
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeClassifier

from shap_rsq import MemoryBudgetError, RSquaredExplainer

CLASSIFIERS = {
    "DecisionTreeClassifier": lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
    "ExtraTreeClassifier": lambda: ExtraTreeClassifier(max_depth=5, random_state=0),
    "RandomForestClassifier": lambda: RandomForestClassifier(5, max_depth=4, random_state=0),
    "ExtraTreesClassifier": lambda: ExtraTreesClassifier(5, max_depth=4, random_state=0),
}
LABELS = {
    "binary strings": np.array(["control", "case"]),
    "three ints": np.array([3, 7, 11]),
    "four strings": np.array(["a", "b", "c", "d"]),
}


def _data(n_classes: int, nan: bool, n=160, p=6, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    score = 1.5 * X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n)
    code = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    if nan:
        X[rng.random(X.shape) < 0.1] = np.nan
    return X, code, rng.uniform(0.3, 2.0, size=n)


def _one_hot(labels, classes):
    return (np.asarray(labels)[:, None] == np.asarray(classes)[None, :]).astype(float)


def _brier_skill(Y, P, w):
    return 1 - np.sum(w[:, None] * (Y - P) ** 2) / np.sum(w[:, None] * (Y - np.average(Y, axis=0, weights=w)) ** 2)


@pytest.mark.parametrize("labels", list(LABELS))
@pytest.mark.parametrize("family", list(CLASSIFIERS))
@pytest.mark.parametrize("nan", [False, True])
def test_class_shares_match_subset_enumeration_and_sum_to_the_brier_skill_score(family, labels, nan):
    classes = LABELS[labels]
    X, code, w = _data(len(classes), nan)
    y = classes[code]
    model = CLASSIFIERS[family]().fit(X, y)
    explainer = RSquaredExplainer(model)
    raw = explainer.rsq(X, y, sample_weight=w, multioutput="raw_values")
    Y = _one_hot(y, model.classes_)
    expected = np.column_stack([rsq_oracle(explainer.forests[k], X, Y[:, k], w)[0] for k in range(len(model.classes_))])
    np.testing.assert_allclose(raw, expected, atol=1e-9, rtol=0)

    sst = np.sum(w[:, None] * (Y - np.average(Y, axis=0, weights=w)) ** 2, axis=0)
    shares = explainer.rsq(X, y, sample_weight=w)  # the Brier skill score by default
    np.testing.assert_allclose(shares, (raw * sst).sum(axis=1) / sst.sum(), atol=1e-12)
    constant = np.array([forest.base_offset + forest.nodes.tree_mean.sum() for forest in explainer.forests])
    bss_gain = _brier_skill(Y, model.predict_proba(X), w) - _brier_skill(Y, np.tile(constant, (len(y), 1)), w)
    assert shares.sum() == pytest.approx(bss_gain, abs=1e-9)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w, multioutput="uniform_average"), raw.mean(1))


def test_per_row_class_shares_add_up_to_the_global_ones_and_to_the_score():
    X, code, w = _data(3, nan=False)
    frame = pd.DataFrame(X, columns=[f"g{j}" for j in range(X.shape[1])])
    y = LABELS["four strings"][:3][code]
    model = RandomForestClassifier(6, max_depth=5, random_state=1).fit(frame, y)
    explainer = RSquaredExplainer(model)
    explanation = explainer(frame, y, sample_weight=w)
    shares = explainer.rsq(frame, y, sample_weight=w)
    np.testing.assert_allclose(explanation.values.sum(0), shares.to_numpy(), atol=1e-12)
    Y = _one_hot(y, model.classes_)
    total = explanation.values.sum() + explanation.base_values.sum()
    assert total == pytest.approx(_brier_skill(Y, model.predict_proba(frame), w), abs=1e-9)

    raw = explainer(frame, y, sample_weight=w, multioutput="raw_values")
    assert raw.values.shape == (len(y), X.shape[1], 3) and raw.output_names == ["a", "b", "c"]
    table = explainer.rsq(frame, y, sample_weight=w, multioutput="raw_values")
    assert list(table.columns) == ["a", "b", "c"] and list(table.index) == list(frame.columns)
    np.testing.assert_allclose(raw.values.sum(0), table.to_numpy(), atol=1e-12)
    assert explainer.loss_reduction(frame, y).shape == (X.shape[1], 3)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DecisionTreeRegressor(max_depth=4, random_state=0),
        lambda: RandomForestRegressor(4, max_depth=4, random_state=0),
        lambda: ExtraTreesRegressor(4, max_depth=4, random_state=0),
    ],
)
@pytest.mark.parametrize("multioutput", ["raw_values", "uniform_average", "variance_weighted"])
def test_multi_output_regressors_decompose_r2_score_of_each_kind(make, multioutput):
    X, code, w = _data(3, nan=False)
    Y = np.column_stack([X[:, 0] + code, 10 * X[:, 1] * X[:, 2] + 1e6])  # a second target on another scale
    model = make().fit(X, Y)
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(X, Y, sample_weight=w, multioutput=multioutput)
    per_output = np.column_stack([rsq_oracle(explainer.forests[k], X, Y[:, k], w)[0] for k in range(2)])
    sst = np.sum(w[:, None] * (Y - np.average(Y, axis=0, weights=w)) ** 2, axis=0)
    expected = {
        "raw_values": per_output,
        "uniform_average": per_output.mean(1),
        "variance_weighted": (per_output * sst).sum(1) / sst.sum(),
    }[multioutput]
    np.testing.assert_allclose(shares, expected, atol=1e-9, rtol=0)
    constant = np.array([f.base_offset + f.nodes.tree_mean.sum() for f in explainer.forests])
    gain = np.asarray(r2_score(Y, model.predict(X), sample_weight=w, multioutput=multioutput)) - np.asarray(
        r2_score(Y, np.tile(constant, (len(Y), 1)), sample_weight=w, multioutput=multioutput)
    )
    np.testing.assert_allclose(np.sum(shares, axis=0), gain, atol=1e-9)


def test_an_output_constant_on_the_rows_weighs_nothing_but_an_absent_class_counts():
    # r2_score's "variance_weighted" gives an output without variance the weight 0; its squared
    # error was counted in the numerator (0.12 against r2_score's 0.84).  A classifier's Brier skill
    # score counts the probability given to a class absent from y as error, on purpose.
    X, code, w = _data(3, nan=False)
    Y = np.column_stack([X[:, 0] + code, 10 * X[:, 1] * X[:, 2]])
    model = RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, Y)
    flat = Y.copy()
    flat[:, 1] = 0.0
    explanation = RSquaredExplainer(model)(X, flat, sample_weight=w, multioutput="variance_weighted")
    total = explanation.values.sum() + explanation.base_values.sum()
    expected = r2_score(flat, model.predict(X), sample_weight=w, multioutput="variance_weighted")
    np.testing.assert_allclose(total, expected, atol=1e-9)
    classifier = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, code)
    absent = np.where(code == 2, 1, code)
    explanation = RSquaredExplainer(classifier)(X, absent, sample_weight=w)
    total = explanation.values.sum() + explanation.base_values.sum()
    brier = _brier_skill(_one_hot(absent, classifier.classes_), classifier.predict_proba(X), w)
    np.testing.assert_allclose(total, brier, atol=1e-9)


def test_a_class_absent_from_the_rows_is_not_mistaken_for_float32_rounding():
    # the check of the model's rounding against y's range read the absent class's one-hot column
    # (range 0) and refused the probabilities' 1e-16 of rounding as "rounded in float32"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.array(["a"] * 15 + ["b"] * 14 + ["c"])
    train, test = np.r_[5:15, 20:30], np.r_[0:5, 15:20]
    model = RandomForestClassifier(3, random_state=0).fit(X[train], y[train])
    explainer = RSquaredExplainer(model)
    explanation = explainer(X[test], y[test])
    assert explainer._prediction_check.gap > 0  # the rounding this test is about
    total = explanation.values.sum() + explanation.base_values.sum()
    brier = _brier_skill(_one_hot(y[test], model.classes_), model.predict_proba(X[test]), np.ones(len(test)))
    np.testing.assert_allclose(total, brier, atol=1e-9)


def test_bad_targets_are_refused_by_name():
    X, code, _ = _data(3, nan=False)
    y = LABELS["four strings"][:3][code]
    classifier = RSquaredExplainer(RandomForestClassifier(3, max_depth=3, random_state=0).fit(X, y))
    with pytest.raises(ValueError, match=r"labels \['z'\] that are not among the model's classes \['a', 'b', 'c'\]"):
        classifier.rsq(X, np.where(y == "b", "z", y))
    with pytest.raises(ValueError, match="multioutput must be one of"):
        classifier.rsq(X, y, multioutput="average")
    # r2_score's array of output weights raised NumPy's "truth value of an array is ambiguous"
    with pytest.raises(ValueError, match=r"multioutput must be one of .* output weights"):
        classifier.rsq(X, y, multioutput=np.ones(3))
    regressor = RSquaredExplainer(DecisionTreeRegressor(max_depth=3).fit(X, np.column_stack([X[:, 0], X[:, 1]])))
    with pytest.raises(ValueError, match=r"The model has 2 outputs, so y must have 2 columns; got shape \(160,\)"):
        regressor.rsq(X, X[:, 0])
    with pytest.raises(ValueError, match=r"y is constant for output\(s\) \['output 1'\]"):
        regressor.rsq(X, np.column_stack([X[:, 0], np.ones(len(X))]), multioutput="raw_values")
    # every output constant: no combination is defined, so none is suggested
    for how in ("raw_values", "uniform_average", "variance_weighted"):
        with pytest.raises(ValueError, match=r"^y is constant \(over the rows with positive weight\)"):
            regressor.rsq(X, np.ones((len(X), 2)), multioutput=how)


@pytest.mark.parametrize("dtype", [object, "string", "category"])
def test_a_missing_label_is_refused_by_name_whatever_holds_the_labels(dtype):
    # pd.NA (the "string" dtype's missing value) cannot be compared: NumPy raised "boolean value of
    # NA is ambiguous" instead of naming the label, as it does for None in an object column
    X, code, _ = _data(3, nan=False)
    y = LABELS["four strings"][:3][code]
    explainer = RSquaredExplainer(RandomForestClassifier(3, max_depth=3, random_state=0).fit(X, y))
    labels = pd.Series([*y[:-1], None], dtype=dtype)
    with pytest.raises(ValueError, match=r"y has labels \[.*\] that are not among the model's classes .* row 159\)"):
        explainer.rsq(X, labels)
    complete = pd.Series(y, dtype=dtype)  # the same container without the missing value reads as the labels
    np.testing.assert_allclose(explainer.rsq(X, complete), explainer.rsq(X, y), atol=1e-14)


def test_dates_as_labels_of_a_classifier_of_numbers_are_refused_as_dates():
    # their values printed as counts of their unit: "labels [0, 1, 2] are not among the model's classes [0, 1, 2]"
    X, code, _ = _data(3, nan=False)
    explainer = RSquaredExplainer(RandomForestClassifier(3, max_depth=3, random_state=0).fit(X, code))
    for dates in (code.astype("datetime64[ns]"), pd.Series(pd.to_datetime(code)), code.astype("timedelta64[s]")):
        with pytest.raises(ValueError, match=r"^y holds dates or durations \(\w+64\[n?s\]\), but the classifier"):
            explainer.rsq(X, dates)


def test_a_classifier_of_one_class_is_a_classifier_at_every_entry_point():
    # it has one output, which sent it down the regressor's path: labels it never saw gave shares 0,
    # text labels failed with "y holds text" and interaction shares of R² were computed
    X, code, w = _data(3, nan=False)
    model = RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, np.full(len(X), "spam"))
    explainer = RSquaredExplainer(model)
    other = np.where(code > 0, "spam", "ham")
    for call in (
        lambda: explainer.rsq(X, other),
        lambda: explainer(X, other),
        lambda: explainer.shap_values(X, other),
        lambda: explainer.loss_reduction(X, other),
    ):
        with pytest.raises(
            ValueError, match=r"y has labels \['ham'\] that are not among the model's classes \['spam'\]"
        ):
            call()
    numeric = RSquaredExplainer(RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, np.full(len(X), 3)))
    with pytest.raises(ValueError, match=r"y has labels \[\d, \d, \d\] that are not among the model's classes \[3\]"):
        numeric.rsq(X, code)
    # every label is then the one class: y is constant and the Brier skill score undefined, as for
    # any classifier given one label
    spam = np.full(len(X), "spam")
    for call in (lambda: explainer.rsq(X, spam, sample_weight=w), lambda: explainer(X, spam)):
        with pytest.raises(ValueError, match=r"y is constant \(over the rows with positive weight\)"):
            call()
    three = RSquaredExplainer(RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, code))
    with pytest.raises(ValueError, match=r"y is constant \(over the rows with positive weight\)"):
        three.rsq(X, np.zeros(len(X), dtype=int))
    with pytest.raises(ValueError, match=r"y is constant \(over the rows with positive weight\)"):
        explainer.rsq_interactions(X, spam)
    # the loss reduction needs no variance: the model and E f both give probability 1, which removes nothing
    frame = pd.DataFrame(X, columns=[f"g{j}" for j in range(X.shape[1])])
    reduction = explainer.loss_reduction(frame, spam, sample_weight=w)
    assert list(reduction.columns) == ["spam"] and list(reduction.index) == list(frame.columns)
    Y = _one_hot(spam, model.classes_)
    mean_prediction = explainer.forests[0].base_offset + explainer.forests[0].nodes.tree_mean.sum()
    expected = np.sum(w[:, None] * ((Y - mean_prediction) ** 2 - (Y - model.predict_proba(frame)) ** 2))
    assert reduction.to_numpy().sum() == pytest.approx(expected, abs=1e-12)
    np.testing.assert_allclose(explainer.loss_reduction(X, spam, local=True).sum(0), reduction.to_numpy(), atol=1e-12)


def test_a_named_indicator_is_matched_to_the_classes_by_name():
    # pd.get_dummies of a Categorical follows its categories, not the sorted classes_: the columns were
    # read by position, and the shares came out negative (-1.06 for the leading feature)
    X, code, w = _data(3, nan=False)
    categories = ["zeta", "alpha", "mid"]
    labels = pd.Series(pd.Categorical(np.array(categories)[code], categories=categories))
    model = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, labels)
    assert list(model.classes_) == ["alpha", "mid", "zeta"]
    explainer = RSquaredExplainer(model)
    dummies = pd.get_dummies(labels, dtype=int)
    assert list(dummies.columns) == categories
    for how in ("variance_weighted", "raw_values"):
        expected = explainer.rsq(X, labels, sample_weight=w, multioutput=how)
        np.testing.assert_allclose(explainer.rsq(X, dummies, sample_weight=w, multioutput=how), expected, atol=1e-14)
    numbers = pd.get_dummies(pd.Series(code))[[2, 0, 1]]  # classes named by value, in another order
    numeric = RSquaredExplainer(RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, code))
    np.testing.assert_allclose(numeric.rsq(X, numbers), numeric.rsq(X, code), atol=1e-14)
    # an array has no names: its columns are the classes in the order of classes_
    relabelled = model.classes_[np.argmax(dummies.to_numpy(), axis=1)]
    np.testing.assert_allclose(explainer.rsq(X, dummies.to_numpy()), explainer.rsq(X, relabelled), atol=1e-14)
    with pytest.raises(ValueError, match=r"y's columns \['a', 'b', 'c'\] are not the model's classes"):
        explainer.rsq(X, dummies.set_axis(["a", "b", "c"], axis=1))
    # an indicator of the wrong width: the message said "the model has one output, so y must be 1-D"
    for wrong in (pd.get_dummies(labels, drop_first=True), np.zeros((len(code), 4))):
        with pytest.raises(ValueError, match=rf"y has {wrong.shape[1]} columns, but the classifier has 3 classes"):
            explainer.rsq(X, wrong)
    polars = pytest.importorskip("polars")  # polars names every column with text: the class 2 is "2"
    np.testing.assert_allclose(numeric.rsq(X, polars.from_pandas(numbers.rename(columns=str))), numeric.rsq(X, code))


@pytest.mark.parametrize("classes", [np.array(["neg", "pos"]), np.array([1, 2]), np.array([0, 1])])
def test_label_binarize_of_a_binary_classifier_is_its_one_column_of_the_positive_class(classes):
    # label_binarize gives a binary classifier ONE column, 1 for classes_[1]: it was read as labels
    # 0 and 1, which are not the classes ["neg", "pos"] or [1, 2]
    X, code, w = _data(2, nan=False)
    y = classes[code]
    model = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    column = label_binarize(y, classes=model.classes_)
    assert column.shape == (len(y), 1)
    expected = explainer.rsq(X, y, sample_weight=w)
    np.testing.assert_allclose(explainer.rsq(X, column, sample_weight=w), expected, atol=1e-14)
    np.testing.assert_allclose(explainer(X, column.astype(bool)).values, explainer(X, y).values, atol=1e-14)
    Y = _one_hot(y, model.classes_)
    constant = np.array([forest.base_offset + forest.nodes.tree_mean.sum() for forest in explainer.forests])
    gain = _brier_skill(Y, model.predict_proba(X), w) - _brier_skill(Y, np.tile(constant, (len(y), 1)), w)
    assert expected.sum() == pytest.approx(gain, abs=1e-10)
    # a DataFrame's one column named after a class marks that class: get_dummies(drop_first=True) of
    # categories in reverse order keeps the column of classes_[0]
    reverse = pd.Series(pd.Categorical(y, categories=model.classes_[::-1]))
    kept = pd.get_dummies(reverse, drop_first=True, dtype=int)
    assert list(kept.columns) == [model.classes_[0]]
    if model.classes_.tolist() == [0, 1]:  # 0/1 are labels too, and they say the opposite: refused
        with pytest.raises(ValueError, match=r"one column named 0 holds only \[0, 1\]"):
            explainer.rsq(X, kept, sample_weight=w)
    else:
        np.testing.assert_allclose(explainer.rsq(X, kept, sample_weight=w), expected, atol=1e-14)


@pytest.mark.parametrize(
    ("classes", "column", "named"),
    [([1, 2], "ones", None), ([1, 5], "ones", None), ([0, 1], "labels", 0)],
)
def test_a_binary_column_that_is_both_labels_and_an_indicator_and_reads_two_ways_is_refused(classes, column, named):
    # the column was read as an indicator without a word: classes [1, 2] and rows whose labels are
    # all 1 became class 2 on every row (loss_reduction -67.7 per feature instead of +24.5); a
    # DataFrame column of 0/1 labels named 0 marked class 0, and the shares summed to -1.85, not 0.66
    X, code, _ = _data(2, nan=False)
    y = np.array(classes)[code]
    model = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    rows = y == classes[0] if column == "ones" else np.ones(len(y), dtype=bool)
    values = (y[rows] == classes[1]).astype(int) if column == "labels" else y[rows]
    y_2d = pd.DataFrame({named: values}) if named is not None else values[:, None]
    with pytest.raises(ValueError, match=r"class labels of this classifier .* the two readings give different"):
        explainer.loss_reduction(X[rows], y_2d)
    with pytest.raises(ValueError, match=r"Pass labels as a 1-D y"):
        explainer(X[rows], y_2d)
    # where the readings agree nothing changes: 0/1 labels of classes [0, 1] in an unnamed column
    if classes == [0, 1]:
        np.testing.assert_array_equal(explainer.rsq(X, y[:, None]), explainer.rsq(X, y))
        np.testing.assert_array_equal(explainer.rsq(X, pd.Series(y).to_frame()), explainer.rsq(X, y))


def test_per_row_shares_of_many_outputs_are_refused_when_their_arrays_cannot_fit():
    # each output's run was sized for one (n, p) block, but the outputs' blocks are kept and
    # stacked: 40 classes, 20,000 rows and 200 features took 2.5 GB at a 200 MB budget
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 20))
    labels = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0.1, 0.9, 9)))  # 10 classes
    model = RandomForestClassifier(n_estimators=2, max_depth=3, random_state=0).fit(X, labels)
    explainer = RSquaredExplainer(model, memory_budget=1 / 64)  # 3 x 8 x 20 x 10 bytes a row: 3,495 fit
    with pytest.raises(MemoryBudgetError, match=r"5,000 rows x 20 players x 10 outputs .*\(about 3,495 fit\)"):
        explainer(X, labels)
    np.testing.assert_allclose(explainer(X[:3000], labels[:3000]).values.sum(0), explainer.rsq(X[:3000], labels[:3000]))


def test_each_class_keeps_its_compiled_plans_only_while_it_is_decomposed():
    # every class kept its own plans after the call: 530 MiB held after a 40-class forest's rsq under
    # a 102 MiB budget, growing with the classes; now one class's plans at a time, the same values
    import tracemalloc

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 8))
    y = np.clip((X[:, 0] * 2 + 4 + rng.normal(size=600)).astype(int), 0, 7)
    model = RandomForestClassifier(6, max_depth=7, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    first = explainer.rsq(X, y)
    assert len(model.classes_) == 8 and not any(cache._units for cache in explainer._unit_caches)
    tracemalloc.start()
    again = explainer.rsq(X, y)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    np.testing.assert_array_equal(again, first)
    assert held < 8 << 20  # nothing compiled stays behind
    per_row = explainer(X, y)
    np.testing.assert_allclose(per_row.values.sum(0), first, atol=1e-12)


def test_each_class_has_a_progress_bar_that_says_which(capsys):
    # three identical "trees 5/5" bars gave no clue which class was running
    X, code, _ = _data(3, nan=False)
    labels = np.array(["low", "mid", "high"])[code]
    RSquaredExplainer(RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, labels), progress=True).rsq(
        X, labels
    )
    err = capsys.readouterr().err
    assert all(f"class {name}: trees" in err for name in ("high", "low", "mid"))


@pytest.mark.parametrize("local", [False, True])
def test_a_binary_forest_classifier_plays_class_1s_games_once_for_both_classes(monkeypatch, local):
    # p_0 = 1 - p_1 tree by tree: class 0's games are class 1's, so they are played once; a fold's
    # target with rows of an unseen label (zeros in both columns) plays both
    X, code, w = _data(2, nan=True)
    labels = np.array(["control", "case"])[code]
    explainer = RSquaredExplainer(RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, labels))
    assert explainer._complementary_classes
    played = []
    original = type(explainer)._output_game
    monkeypatch.setattr(
        type(explainer), "_output_game", lambda self, game, *args: played.append(game) or original(self, game, *args)
    )
    Y = _one_hot(labels, explainer.model_info.classes)
    expected = [rsq_oracle(explainer.forests[k], X, Y[:, k], w) for k in range(2)]
    if local:
        values = explainer(X, labels, sample_weight=w, multioutput="raw_values").values
        sst = np.sum(w[:, None] * (Y - np.average(Y, axis=0, weights=w)) ** 2, axis=0)
        for k in range(2):
            np.testing.assert_allclose(values[:, :, k] * sst[k], expected[k][1] * sst[k], rtol=0, atol=1e-9)
    else:
        raw = explainer.rsq(X, labels, sample_weight=w, multioutput="raw_values")
        np.testing.assert_allclose(raw, np.column_stack([e[0] for e in expected]), rtol=0, atol=1e-9)
    assert len(played) == 1
    unseen = Y.copy()
    unseen[:10] = 0.0  # rows of a third label, as a selector's fold may hold
    reductions = explainer._class_loss_reduction(X, unseen, w, local=False)
    assert len(played) == 3
    for k in range(2):
        centred = unseen[:, k] - np.average(unseen[:, k], weights=w)
        sst_k = np.sum(w * centred**2)
        oracle_k = rsq_oracle(explainer.forests[k], X, unseen[:, k], w)[0] * sst_k
        np.testing.assert_allclose(reductions[:, k], oracle_k, rtol=0, atol=1e-9)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_forest_classifiers_interaction_shares_are_of_its_brier_skill_score(n_classes):
    # every class's squared-error games, their interaction indices summed over the summed SST (a
    # binary forest's class 0 played as class 1's); rows sum to rsq's shares, per-row values to the matrix
    from oracle import interaction_oracle

    X, code, w = _data(n_classes, nan=True)
    labels = np.array(["low", "mid", "high"])[code] if n_classes == 3 else np.array(["no", "yes"])[code]
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    explainer = RSquaredExplainer(RandomForestClassifier(4, max_depth=4, random_state=0).fit(frame, labels))
    assert explainer._complementary_classes == (n_classes == 2)
    Y = _one_hot(labels, explainer.model_info.classes)
    sst = np.sum(w[:, None] * (Y - np.average(Y, axis=0, weights=w)) ** 2, axis=0)
    expected = sum(interaction_oracle(explainer.forests[k], X, Y[:, k], w)[0] * sst[k] for k in range(n_classes))
    expected /= sst.sum()
    matrix = explainer.rsq_interactions(frame, labels, sample_weight=w)
    off = ~np.eye(X.shape[1], dtype=bool)
    assert np.abs(expected[off]).max() > 1e-3
    np.testing.assert_allclose(2 * matrix.to_numpy()[off], expected[off], rtol=0, atol=1e-9)
    shares = explainer.rsq(frame, labels, sample_weight=w)
    np.testing.assert_allclose(matrix.sum(axis=1), shares, rtol=0, atol=1e-12)
    explanation = explainer(frame, labels, sample_weight=w, interactions=True)
    assert explanation.output_names == "Brier skill score"
    np.testing.assert_allclose(explanation.values.sum(axis=0), matrix, rtol=0, atol=1e-12)
    per_row = explainer(frame, labels, sample_weight=w)
    np.testing.assert_allclose(explanation.values.sum(axis=2), per_row.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(explanation.base_values, per_row.base_values, rtol=0, atol=1e-12)
    top = explainer.rsq_interactions(frame, labels, sample_weight=w, top_k=2)
    assert top["rsq"].abs().iloc[0] == pytest.approx(np.abs(2 * matrix.to_numpy()[off]).max(), abs=1e-12)
    with pytest.raises(ValueError, match="Brier skill score \\(multioutput='variance_weighted'\\)"):
        explainer(frame, labels, interactions=True, multioutput="raw_values")
