"""Bad models and bad inputs get errors that name the problem; nothing the caller passed is mutated."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from conftest import FAMILIES, NO_NAN, make_data
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
)
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer, UnsupportedModelError

xgboost = pytest.importorskip("xgboost")
lightgbm = pytest.importorskip("lightgbm")
catboost = pytest.importorskip("catboost")


@pytest.fixture(scope="module")
def data():
    return make_data(seed=11)


@pytest.fixture(scope="module")
def explainer(data):
    X, y, _ = data
    return RSquaredExplainer(DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y))


def _catboost(**kwargs):
    return catboost.CatBoostRegressor(iterations=3, depth=2, verbose=0, allow_writing_files=False, **kwargs)


# ------------------------------------------------------------------ models


def _r2_model_info(model):
    """What the R² decomposition reads of ``model``: refused at once where shap cannot explain the
    model either, else by every call that needs R² (the explainer is then shap's alone)."""
    return RSquaredExplainer(model).model_info


@pytest.mark.parametrize(
    "make",
    [
        lambda: xgboost.XGBClassifier(n_estimators=2),
        lambda: lightgbm.LGBMClassifier(n_estimators=2, verbose=-1),
        lambda: catboost.CatBoostClassifier(iterations=2, verbose=0, allow_writing_files=False),
        lambda: GradientBoostingClassifier(n_estimators=2),
        lambda: HistGradientBoostingClassifier(max_iter=2),
    ],
)
def test_boosted_classifiers_are_read_as_games_of_their_log_loss(data, make):
    # they were refused ("not a sum of trees"); their margins are, and their log-loss is expanded
    X, y, _ = data
    model = make().fit(X, (y > np.median(y)).astype(int))
    info = _r2_model_info(model)
    assert info.second_order and info.loss == "log_loss" and list(info.classes) == [0, 1]
    assert not info.by_output  # one margin, not one probability per class


def test_adaboost_is_refused_as_a_vote_not_a_margin(data):
    from sklearn.ensemble import AdaBoostClassifier

    from shap_rsq.models.inspect import refuse_boosted_classifier

    with pytest.raises(UnsupportedModelError, match="weighted vote"):
        refuse_boosted_classifier(AdaBoostClassifier())


def test_an_xgboost_model_without_trees_is_refused_by_name(data):
    # shap's loader failed on it with a bare IndexError
    X, y, _ = data
    for model in (
        xgboost.XGBRegressor(n_estimators=0).fit(X, y),
        xgboost.train({}, xgboost.DMatrix(X, y), num_boost_round=0),
    ):
        with pytest.raises(UnsupportedModelError, match="XGBoost model has no trees"):
            RSquaredExplainer(model)


def test_a_classifier_that_is_not_boosted_is_not_called_boosted(data):
    # every unsupported classifier was "a boosted classifier: its probabilities are a sigmoid or
    # softmax of a sum of trees", a bagging ensemble and a logistic regression too
    from sklearn.ensemble import BaggingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    X, y, _ = data
    labels = (y > np.median(y)).astype(int)
    for model in (
        BaggingClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=2),
        LogisticRegression(),
        make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=2)),
    ):
        with pytest.raises(UnsupportedModelError, match=r"is not a supported tree model\. Supported:") as error:
            RSquaredExplainer(model.fit(X, labels))
        assert "boosted" not in str(error.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: DecisionTreeRegressor(criterion="absolute_error", max_depth=2), "criterion='absolute_error'"),
        (lambda: RandomForestRegressor(3, criterion="poisson", max_depth=2), "criterion='poisson'"),
        (lambda: GradientBoostingRegressor(loss="huber", n_estimators=2), "loss='huber'"),
        (lambda: HistGradientBoostingRegressor(loss="absolute_error", max_iter=2), "loss='absolute_error'"),
        (lambda: xgboost.XGBRegressor(objective="reg:absoluteerror", n_estimators=2), "objective='reg:absoluteerror'"),
        (
            lambda: xgboost.XGBRegressor(objective="reg:pseudohubererror", n_estimators=2),
            "objective='reg:pseudohubererror'",
        ),
        (lambda: lightgbm.LGBMRegressor(objective="huber", n_estimators=2, verbose=-1), "objective='huber'"),
        (lambda: lightgbm.LGBMRegressor(objective="quantile", n_estimators=2, verbose=-1), "objective='quantile'"),
        (lambda: _catboost(loss_function="MAE"), "loss_function='MAE'"),
        (lambda: xgboost.XGBRegressor(booster="gblinear", n_estimators=2), "booster='gblinear'"),
        # the message said it needed a squared-error regressor, which this one is
        (lambda: xgboost.XGBRegressor(booster="dart", n_estimators=2), "only booster='gbtree' predicts with"),
        (lambda: xgboost.XGBRegressor(objective=_squared_error_gradient, n_estimators=2), "custom function"),
        (lambda: lightgbm.LGBMRegressor(objective=_squared_error_gradient, n_estimators=2, verbose=-1), "custom"),
        (lambda: lightgbm.LGBMRegressor(reg_sqrt=True, n_estimators=2, verbose=-1), "reg_sqrt=True"),
    ],
)
def test_objectives_other_than_squared_error_are_named(data, make, message):
    X, y, _ = data
    model = make().fit(X, np.abs(y) + 0.1)
    with pytest.raises(UnsupportedModelError, match=message.replace("(", r"\(")):
        _r2_model_info(model)


def _squared_error_gradient(y_true, y_pred):
    # a custom objective: even when it is squared error the model cannot tell
    return y_pred - y_true, np.ones_like(y_pred)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: xgboost.XGBRegressor(n_estimators=3, missing=0.0), "missing=0.0"),
        (lambda: lightgbm.LGBMRegressor(n_estimators=3, zero_as_missing=True, verbose=-1), "zero_as_missing=True"),
    ],
)
def test_missing_value_markers_other_than_nan_are_refused(data, make, message):
    # zeros sent to the default child cannot be expressed by a threshold
    X, y, _ = data
    X = np.where(np.arange(X.size).reshape(X.shape) % 5 == 0, 0.0, X)
    with pytest.raises(UnsupportedModelError, match=message):
        _r2_model_info(make().fit(X, y))


def test_gradient_boosting_with_model_init_is_refused(data):
    X, y, _ = data
    model = GradientBoostingRegressor(n_estimators=2, init=LinearRegression()).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="init=LinearRegression"):
        RSquaredExplainer(model)


def test_gradient_boosting_with_zero_init_is_supported(data):
    # shap cannot load init='zero'; the thin layer reads the trees itself
    X, y, _ = data
    model = GradientBoostingRegressor(n_estimators=5, init="zero").fit(X, y)
    with pytest.raises(Exception, match="init"):
        import shap

        shap.TreeExplainer(model)
    explanation = RSquaredExplainer(model)(X, y)
    from sklearn.metrics import r2_score

    assert explanation.values.sum() + explanation.base_values.sum() == pytest.approx(
        r2_score(y, model.predict(X)), abs=1e-9
    )


@pytest.mark.parametrize(
    "model",
    [
        DecisionTreeRegressor(),
        GradientBoostingRegressor(),
        HistGradientBoostingRegressor(),
        xgboost.XGBRegressor(),
        lightgbm.LGBMRegressor(),
        _catboost(),
    ],
    ids=lambda m: type(m).__name__,
)
def test_unfitted_models_are_refused(model):
    with pytest.raises(NotFittedError):
        RSquaredExplainer(model)


def test_an_empty_xgboost_booster_is_refused_as_unfitted():
    with pytest.raises(NotFittedError, match=r"xgboost\.Booster has no model"):
        RSquaredExplainer(xgboost.Booster())


@pytest.mark.parametrize(
    "make",
    [
        lambda X, y: xgboost.XGBRegressor(n_estimators=2, multi_strategy="multi_output_tree").fit(
            X, np.column_stack([y, -y])
        ),
        lambda X, y: _catboost(loss_function="MultiRMSE").fit(X, np.column_stack([y, -y])),
    ],
)
def test_multi_output_models_are_refused(data, make):
    X, y, _ = data
    with pytest.raises(UnsupportedModelError, match=r"MultiRMSE|vector leaves"):
        _r2_model_info(make(X, y))


def test_unknown_model_types_are_refused_with_the_supported_list():
    with pytest.raises(UnsupportedModelError, match="Supported: scikit-learn DecisionTreeRegressor"):
        RSquaredExplainer(LinearRegression())


# ------------------------------------------------------------------ inputs


@pytest.mark.parametrize("method", ["rsq", "__call__"])
def test_target_problems_are_named(data, explainer, method):
    X, y, _ = data
    call = getattr(explainer, method)
    with pytest.raises(ValueError, match="y has 119 values but X has 120 rows"):
        call(X, y[:-1])
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        call(X, bad)
    bad[3] = np.inf
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        call(X, bad)
    with pytest.raises(ValueError, match="y is constant"):
        call(X, np.full_like(y, 2.5))


def test_dates_and_durations_are_refused_where_numbers_are_expected(data, explainer):
    # NumPy reads them as counts of their unit: a Series of dates as y gave an R² of 1.7e-9, silently
    X, y, _ = data
    dates = pd.Series(pd.date_range("2020-01-01", periods=len(y), freq="D"))
    for target in (dates, dates.dt.tz_localize("UTC"), dates - dates[0], dates.to_numpy().astype("datetime64[D]")):
        with pytest.raises(ValueError, match=r"y holds dates or durations \((datetime|timedelta)64"):
            explainer.rsq(X, target)
    with pytest.raises(ValueError, match="sample_weight holds dates or durations"):
        explainer.rsq(X, y, sample_weight=dates - dates[0])


def test_rows_problems_are_named(data, explainer):
    X, y, _ = data
    with pytest.raises(ValueError, match="X has 5 features, but the model was fitted with 6 features"):
        explainer.rsq(X[:, :5], y)
    with pytest.raises(ValueError, match="X contains infinity"):
        explainer.rsq(np.where(np.arange(X.size).reshape(X.shape) == 7, np.inf, X), y)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(x5="text")
    with pytest.raises(ValueError, match="non-numeric columns 'x5'"):
        explainer.rsq(frame, y)


def test_object_columns_of_numbers_are_read_as_numbers_and_of_text_are_refused(data, explainer):
    # scikit-learn's check_array converts object columns of numbers; they were refused as
    # "non-numeric columns", which they are not
    X, y, _ = data
    expected = explainer.rsq(X, y)
    np.testing.assert_array_equal(explainer.rsq(pd.DataFrame(X.astype(object)), y).to_numpy(), expected)
    mixed = pd.DataFrame(X).astype({2: object})
    mixed[2] = [int(v > 0) if i % 2 else float(v) for i, v in enumerate(X[:, 2])]  # ints and floats
    mixed.iloc[3, 2] = None  # missing, as astype(float) reads it
    with_nan = X.copy()
    with_nan[:, 2] = [int(v > 0) if i % 2 else float(v) for i, v in enumerate(X[:, 2])]
    with_nan[3, 2] = np.nan
    np.testing.assert_array_equal(explainer.rsq(mixed, y).to_numpy(), explainer.rsq(with_nan, y))
    text = pd.DataFrame(X.astype(object), columns=[f"x{j}" for j in range(6)])
    text.iloc[5, 4] = "1.5"
    message = r"X has non-numeric columns 'x4' \(object dtype holding '1\.5', which is not a number\); encode"
    with pytest.raises(ValueError, match=message):
        explainer.rsq(text, y)


def test_columns_must_match_the_names_the_model_was_fitted_with(data):
    X, y, _ = data
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)])
    explainer = RSquaredExplainer(DecisionTreeRegressor(max_depth=3).fit(frame, y))
    with pytest.raises(ValueError, match="missing 'x5'; unexpected 'z'"):
        explainer.rsq(frame.rename(columns={"x5": "z"}), y)
    assert list(explainer.rsq(frame, y).index) == list(frame.columns)


def test_lightgbm_accepts_the_frame_whose_spaces_it_renamed(data):
    X, y, _ = data
    frame = pd.DataFrame(X, columns=[f"x {j}" for j in range(6)])
    model = lightgbm.LGBMRegressor(n_estimators=5, verbose=-1).fit(frame, y)
    assert model.booster_.feature_name()[0] == "x_0"
    shares = RSquaredExplainer(model).rsq(frame, y)
    assert list(shares.index) == list(frame.columns)
    reordered = RSquaredExplainer(model).rsq(frame[frame.columns[::-1]], y)
    pd.testing.assert_series_equal(reordered, shares)
    with pytest.raises(ValueError, match="missing 'x_0'"):
        RSquaredExplainer(model).rsq(frame.drop(columns="x 0"), y)


def test_weight_problems_are_named(data, explainer):
    X, y, w = data
    with pytest.raises(ValueError, match="Negative values"):
        explainer.rsq(X, y, sample_weight=-w)
    bad = w.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        explainer.rsq(X, y, sample_weight=bad)
    with pytest.raises(ValueError, match="sample_weight has 119 values but X has 120 rows"):
        explainer.rsq(X, y, sample_weight=w[:-1])
    with pytest.raises(ValueError, match="non-zero"):
        explainer.rsq(X, y, sample_weight=np.zeros_like(w))
    only_one = np.zeros_like(w)
    only_one[0] = 1.0
    with pytest.raises(ValueError, match="y is constant"):
        explainer.rsq(X, y, sample_weight=only_one)


def test_nothing_the_caller_passes_is_mutated(data):
    X, y, w = data
    X = X.copy()
    X[::7, 2] = np.nan
    model = HistGradientBoostingRegressor(max_iter=5).fit(X, y)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)])
    before = [x.copy() for x in (X, y, w)], frame.copy(), pickle.dumps(model)
    explainer = RSquaredExplainer(model)
    explainer.rsq(X, y, sample_weight=w)
    explainer(frame, y, sample_weight=w)
    for original, now in zip(before[0], (X, y, w), strict=True):
        np.testing.assert_array_equal(original, now)
    pd.testing.assert_frame_equal(before[1], frame)
    assert pickle.dumps(model) == before[2]


@pytest.mark.parametrize("family", FAMILIES)
def test_no_model_family_is_mutated_and_rows_stay_as_given(fitted, family):
    model, X, y, w = fitted(family, family not in NO_NAN)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    before = X.copy(), y.copy(), w.copy(), frame.copy(), pickle.dumps(model)
    explainer = RSquaredExplainer(model)
    explainer.rsq(X, y, sample_weight=w)
    explainer(X, y, sample_weight=w)
    explainer.loss_reduction(X, y, sample_weight=w, local=True)
    explainer.rsq(frame, y, sample_weight=w)
    for original, now in zip(before[:3], (X, y, w), strict=True):
        np.testing.assert_array_equal(original, now)
    pd.testing.assert_frame_equal(before[3], frame)
    assert pickle.dumps(model) == before[4]


@pytest.mark.parametrize("family", ["xgboost", "lightgbm", "sklearn"])
def test_a_sparse_matrix_is_refused_with_what_its_absent_entries_mean(family):
    # the advice to fill them with NaN, right for XGBoost, gave LightGBM and scikit-learn models
    # shares of another function (they read absent entries as 0.0): the fill advised must
    # reproduce the model's own predict on the sparse matrix
    import scipy.sparse

    rng = np.random.default_rng(0)
    X = np.where(rng.uniform(size=(600, 3)) < 0.4, 0.0, rng.normal(size=(600, 3)))
    y = X[:, 0] + 3.0 * (X[:, 0] == 0) + X[:, 1] + rng.normal(scale=0.1, size=600)
    seen = np.where(rng.uniform(size=(600, 1)) < 0.1, np.nan, X[:, :1])  # NaN seen in training: routed apart
    model = {
        "xgboost": lambda: xgboost.XGBRegressor(n_estimators=20, max_depth=3),
        "lightgbm": lambda: lightgbm.LGBMRegressor(n_estimators=20, verbose=-1),
        "sklearn": lambda: RandomForestRegressor(10, max_depth=4, random_state=0),
    }[family]().fit(np.column_stack([seen, X[:, 1:]]), y)
    sparse = scipy.sparse.csr_matrix(X)
    with pytest.raises(ValueError, match=r"sparse matrix; pass dense rows") as error:
        RSquaredExplainer(model).rsq(sparse, y)
    advised = np.where(X == 0, np.nan, X) if "fill them with NaN" in str(error.value) else sparse.toarray()
    np.testing.assert_allclose(model.predict(advised), model.predict(sparse), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="sparse matrix"):
        RSquaredExplainer(model)(scipy.sparse.csc_matrix(X), y)


def test_a_one_column_dataframe_is_a_target_as_scikit_learn_reads_it():
    # a one-column DataFrame y raised "Expected Narwhals object, got pandas.DataFrame"
    X, y, w = make_data(seed=31)
    explainer = RSquaredExplainer(DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y))
    expected = explainer.rsq(X, y, w)
    with pytest.warns(Warning, match="column-vector y"):
        shares = explainer.rsq(X, pd.DataFrame({"target": y}), w)
    np.testing.assert_allclose(shares, expected, atol=1e-12)


def test_pandas_sparse_and_numeric_category_columns_read_as_their_numbers():
    # both were refused as "non-numeric columns"; pd.get_dummies(sparse=True) makes the first, and
    # scikit-learn reads both as numbers (a model fitted on them predicts on them)
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.normal(size=(120, 3)), columns=list("abc"))
    frame.loc[::7, "b"] = np.nan
    frame["k"] = rng.integers(0, 3, 120).astype(float)
    y = frame["a"] + frame["k"] + 0.1 * rng.normal(size=120)
    model = xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(frame, y)
    expected = RSquaredExplainer(model).rsq(frame, y)
    sparse = frame.astype(pd.SparseDtype("float64", np.nan))  # unstored entries are NaN: still missing
    np.testing.assert_array_equal(RSquaredExplainer(model).rsq(sparse, y).to_numpy(), expected.to_numpy())
    categories = frame.assign(k=pd.Categorical(frame["k"]))
    np.testing.assert_array_equal(RSquaredExplainer(model).rsq(categories, y).to_numpy(), expected.to_numpy())
    text = frame.assign(k=pd.Categorical(frame["k"].map({0.0: "low", 1.0: "mid", 2.0: "high"})))
    with pytest.raises(ValueError, match="non-numeric columns 'k'"):
        RSquaredExplainer(model).rsq(text, y)


def test_a_structured_array_is_refused_with_what_to_pass():
    X, y, _ = make_data(seed=5, n=60)
    model = DecisionTreeRegressor(max_depth=3).fit(X, y)
    record = np.rec.fromarrays(X.T, names=[f"f{j}" for j in range(X.shape[1])])
    with pytest.raises(ValueError, match=r"structured \(record\) array with fields 'f0', 'f1'.*pandas.DataFrame\(X\)"):
        RSquaredExplainer(model).rsq(record, y)


def test_values_beyond_the_models_float32_range_are_refused_on_every_call():
    # a used explainer rounded them to infinity and returned shares; scikit-learn's predict refuses them
    X, y, _ = make_data(seed=7, n=80)
    model = RandomForestRegressor(5, max_depth=3, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    explainer.rsq(X, y)
    huge = X.copy()
    huge[3, 1] = 1e300
    with pytest.raises(ValueError, match=r"beyond float32's range .* it would read them as infinite"):
        explainer.rsq(huge, y)
    lightgbm_model = lightgbm.LGBMRegressor(n_estimators=5, verbose=-1).fit(X, y)  # compares in float64
    assert np.isfinite(RSquaredExplainer(lightgbm_model).rsq(huge, y)).all()


def test_one_row_is_refused_for_r2_with_the_reason_and_taken_by_loss_reduction(data, explainer):
    # scikit-learn's "Found array with 1 sample(s) ... a minimum of 2 is required" said not why
    X, y, _ = data
    for call in (explainer.rsq, explainer, explainer.rsq_interactions):
        with pytest.raises(ValueError, match=r"X has 1 row, and R² needs at least 2: .*loss_reduction takes"):
            call(X[:1], y[:1])
    # a row's loss reduction depends on that row alone: one row alone gives its row of the whole
    alone = explainer.loss_reduction(X[:1], y[:1])
    np.testing.assert_allclose(alone, explainer.loss_reduction(X, y, local=True)[0], rtol=0, atol=1e-12)


def test_no_rows_and_one_dimensional_rows_are_named_without_printing_them(data, explainer):
    # scikit-learn's check_array said "a minimum of 1 is required" for no rows, and printed every
    # value of a 1-D X
    X, y, _ = data
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    for rows in (X[:0], frame.iloc[:0]):
        with pytest.raises(ValueError, match=r"X has 0 rows, and R² needs at least 2"):
            explainer.rsq(rows, y[:0])
    with pytest.raises(ValueError, match=r"X has 0 rows; the loss decomposition needs at least one\.$"):
        explainer.loss_reduction(X[:0], y[:0])
    for column in (X[:, 0], list(X[:, 0]), frame["x0"]):
        with pytest.raises(ValueError, match=r"X is 1-D \(shape \(\d+,\)\); .*reshape\(-1, 1\)") as error:
            explainer.rsq(column, y)
        assert str(round(X[3, 0], 4))[:6] not in str(error.value)
