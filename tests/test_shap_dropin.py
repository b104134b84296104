"""RSquaredExplainer is shap's TreeExplainer wherever y is not given: side by side with shap's class.

Each test builds both explainers on the same small model with the same arguments and compares
every result (exactly, or at 1e-12) and every exception class.  shap's class is taken from its
defining module: tests that swap ``shap.TreeExplainer`` must not compare the class with itself.
Then R² on background data: tree-path-dependent covers counted from the rows (checked against the
subset-enumeration oracle on those covers), the interventional game refused with its reason.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import shap
from conftest import make_data
from oracle import rsq_oracle
from shap.explainers._tree import TreeExplainer as ShapTreeExplainer
from shap.utils._exceptions import ExplainerError, InvalidFeaturePerturbationError, InvalidModelError
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.metrics import r2_score

from shap_rsq import MemoryBudgetError, RSquaredExplainer, UnsupportedModelError
from shap_rsq.models.node_arrays import NodeArrays

xgboost = pytest.importorskip("xgboost")

NAMES = [f"x{j}" for j in range(5)]


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_data(seed=7, n=90, p=5)
    return pd.DataFrame(X, columns=NAMES), y


@pytest.fixture(scope="module")
def models(data):
    frame, y = data
    label = (y > np.median(y)).astype(int)
    return {
        "forest": RandomForestRegressor(4, max_depth=3, random_state=0).fit(frame, y),
        "xgboost": xgboost.XGBRegressor(n_estimators=8, max_depth=3, random_state=0).fit(frame, y),
        "xgb classifier": xgboost.XGBClassifier(n_estimators=8, max_depth=3, random_state=0).fit(frame, label),
        # no decomposition (a loss without a usable second derivative): the explainer is shap's alone
        "xgb absolute error": xgboost.XGBRegressor(
            n_estimators=8, max_depth=3, objective="reg:absoluteerror", random_state=0
        ).fit(frame, y),
        "forest classifier": RandomForestClassifier(4, max_depth=3, random_state=0).fit(frame, label),
    }


def _outcome(call):
    """What a call gives: its value, or the class of what it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except Exception as error:  # the class is what is compared
            return type(error), sorted({w.category.__name__ for w in caught})
    return value, sorted({w.category.__name__ for w in caught})


def _assert_same(ours, theirs):
    (mine, my_warnings), (reference, their_warnings) = _outcome(ours), _outcome(theirs)
    assert my_warnings == their_warnings
    if isinstance(reference, type):
        assert mine is reference
        return
    if isinstance(reference, shap.Explanation):
        for field in ("values", "base_values", "data"):
            value = getattr(reference, field)
            if callable(value) or np.asarray(value).dtype == object:  # log_loss: a function of the labels
                continue
            np.testing.assert_allclose(getattr(mine, field), getattr(reference, field), rtol=0, atol=1e-12)
        assert _names(mine) == _names(reference)
        return
    np.testing.assert_allclose(mine, reference, rtol=0, atol=1e-12)


def _names(explanation):
    return None if explanation.feature_names is None else list(explanation.feature_names)


def _both(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RSquaredExplainer(model, *args, **kwargs), ShapTreeExplainer(model, *args, **kwargs)


def _same_calls(ours, theirs, X, interactions=True):
    """Every call shap users make without y, with its options."""
    calls = [
        lambda e: e.shap_values(X),
        lambda e: e.shap_values(X, check_additivity=False),
        lambda e: e.shap_values(X, approximate=True),
        lambda e: e.shap_values(X, tree_limit=2),
        lambda e: e(X),
        lambda e: e(X, approximate=True),
        lambda e: e(X, check_additivity=False),
        lambda e: e(X.iloc[0]),  # one row as a Series
    ]
    if interactions:
        calls += [lambda e: e.shap_interaction_values(X), lambda e: e(X, interactions=True)]
    for call in calls:
        _assert_same(lambda call=call: call(ours), lambda call=call: call(theirs))
    np.testing.assert_allclose(ours.expected_value, theirs.expected_value, rtol=0, atol=1e-12)
    assert ours.feature_perturbation == theirs.feature_perturbation


@pytest.mark.parametrize("kind", ["forest", "xgboost", "xgb classifier", "xgb absolute error"])
@pytest.mark.parametrize("perturbation", ["auto", "interventional", "tree_path_dependent"])
def test_background_data_gives_shaps_values(models, data, kind, perturbation):
    frame, _ = data
    background = frame.iloc[::3]
    X = frame.iloc[:12]
    ours, theirs = _both(models[kind], background, feature_perturbation=perturbation)
    _same_calls(ours, theirs, X)


@pytest.mark.parametrize(
    "form",
    ["keyword", "array", "masker", "large frame"],
)
def test_background_data_in_every_form(models, data, form):
    frame, _ = data
    model = models["xgboost"]
    background = {
        "keyword": None,
        "array": frame.iloc[::3].to_numpy(),
        "masker": shap.maskers.Independent(frame, max_samples=30),
        "large frame": pd.concat([frame] * 2, ignore_index=True),  # shap keeps a sample of 100 rows
    }[form]
    if form == "keyword":
        ours, theirs = _both(model, data=frame.iloc[::3], feature_perturbation="tree_path_dependent")
    else:
        ours, theirs = _both(model, background, feature_perturbation="tree_path_dependent")
    np.testing.assert_array_equal(ours.data, theirs.data)
    _same_calls(ours, theirs, frame.iloc[:10], interactions=False)


def test_interventional_without_data_warns_and_falls_back_as_shap(models, data):
    model, X = models["forest"], data[0].iloc[:10]
    for explainer in (RSquaredExplainer, ShapTreeExplainer):
        with pytest.warns(FutureWarning, match="background dataset"):
            made = explainer(model, feature_perturbation="interventional")
        assert made.feature_perturbation == "tree_path_dependent"
    ours = RSquaredExplainer(model, feature_perturbation="interventional")
    np.testing.assert_array_equal(ours.shap_values(X), ShapTreeExplainer(model).shap_values(X))
    np.testing.assert_array_equal(ours.rsq(*data), RSquaredExplainer(model).rsq(*data))  # the same game


@pytest.mark.parametrize("kind", ["forest", "xgb classifier"])
def test_an_unknown_feature_perturbation_is_shaps_error(models, kind):
    for explainer in (RSquaredExplainer, ShapTreeExplainer):
        with pytest.raises(InvalidFeaturePerturbationError):
            explainer(models[kind], feature_perturbation="random")


@pytest.mark.parametrize(
    ("kind", "output", "background"),
    [
        ("xgb classifier", "probability", True),
        ("xgb classifier", "log_loss", True),
        ("xgb classifier", "probability", False),  # shap refuses it without data: the same error
        ("forest classifier", "probability", True),
        ("forest classifier", "predict_proba", True),
        ("forest", "probability", True),
    ],
)
def test_model_output_is_shaps(models, data, kind, output, background):
    frame, y = data
    model, X = models[kind], frame.iloc[:10]
    args = (frame.iloc[::4],) if background else ()
    mine, my_warnings = _outcome(lambda: RSquaredExplainer(model, *args, model_output=output))
    theirs, their_warnings = _outcome(lambda: ShapTreeExplainer(model, *args, model_output=output))
    assert my_warnings == their_warnings
    if isinstance(theirs, type):
        assert mine is theirs
        return
    label = (y[:10] > np.median(y)).astype(int)
    if output == "log_loss":  # shap's calls take the labels as y
        _assert_same(lambda: mine.shap_values(X, label), lambda: theirs.shap_values(X, label))
        _assert_same(lambda: mine(X, label), lambda: theirs(X, label))
    else:
        _same_calls(mine, theirs, X, interactions=False)
    if kind == "forest classifier":  # a model with R² shares: not of this output
        with pytest.raises(ValueError, match=f"model_output='{output}'.*model_output='raw'"):
            mine.rsq(frame, (y > np.median(y)).astype(int))


def test_the_constructors_positional_parameters_are_shaps(models, data):
    frame, _ = data
    model, X = models["forest"], frame.to_numpy()[:10]
    names = [f"n{j}" for j in range(5)]
    ours, theirs = _both(model, None, "raw", "tree_path_dependent", names)
    _same_calls(ours, theirs, X, interactions=False)
    assert ours(X).feature_names == theirs(X).feature_names == names
    # the constructor's approximate is deprecated in shap: the same warning
    for explainer in (RSquaredExplainer, ShapTreeExplainer):
        with pytest.warns(DeprecationWarning, match="approximate"):
            explainer(model, approximate=True)


def test_models_shap_cannot_explain_raise_shaps_error_class():
    class CustomEstimator: ...

    for explainer in (RSquaredExplainer, ShapTreeExplainer):
        with pytest.raises(InvalidModelError, match="Model type not yet supported by TreeExplainer"):
            explainer(CustomEstimator())
    with pytest.raises(UnsupportedModelError, match=r"not a supported tree model.*\(shap.TreeExplainer: Model type"):
        RSquaredExplainer(CustomEstimator())  # why it is refused here, then shap's own words


def test_a_gradient_boosting_classifier_without_init_is_explained_where_shap_refuses_it():
    # deliberate difference: shap cannot read init="zero" (no initial estimator to take a base
    # from); its margin starts at 0, which is all the trees need, so it is read here and explained
    X, y, _ = make_data(seed=1, n=60, p=4)
    zero_init = GradientBoostingClassifier(n_estimators=3, init="zero").fit(X, y > 3)
    with pytest.raises(InvalidModelError):
        ShapTreeExplainer(zero_init)
    explanation = RSquaredExplainer(zero_init)(X)
    totals = explanation.values.sum(axis=1) + explanation.base_values
    np.testing.assert_allclose(totals, zero_init.decision_function(X), atol=1e-6)


def test_unsupported_model_error_is_shaps_invalid_model_error(models, data):
    assert issubclass(UnsupportedModelError, InvalidModelError) and issubclass(UnsupportedModelError, ValueError)
    error = UnsupportedModelError("why")
    assert type(pickle.loads(pickle.dumps(error))) is UnsupportedModelError  # worker processes send it back
    with pytest.raises(InvalidModelError, match="second derivative"):
        RSquaredExplainer(models["xgb absolute error"]).rsq(*data)


def test_the_plots_are_reached_from_the_package_as_shaps_are():
    # shap.plots.bar(...) works after `import shap`; so does shap_rsq.plots.bar(...) after `import shap_rsq`
    code = "import shap_rsq; bar = shap_rsq.plots.bar; from shap_rsq.plots import bar as direct; assert bar is direct"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_engine_does_not_import_shap():
    # worker processes import the engine; shap takes seconds to import
    code = (
        "import sys; import shap_rsq.engine.run; import shap_rsq.exceptions as e; e.MemoryBudgetError; "
        "assert 'shap' not in sys.modules, 'shap imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("kind", ["forest", "xgb classifier", "xgb absolute error"])
def test_the_fallback_works_under_a_swapped_shap_tree_explainer(models, data, monkeypatch, kind):
    # the usual way to swap an explainer into existing code; the fallback for models without an R²
    # decomposition called shap's class through this name, which now points back at ours
    monkeypatch.setattr(shap, "TreeExplainer", RSquaredExplainer)
    frame, _ = data
    ours = shap.TreeExplainer(models[kind], frame.iloc[::3], feature_perturbation="tree_path_dependent")
    assert isinstance(ours, RSquaredExplainer)
    theirs = ShapTreeExplainer(models[kind], frame.iloc[::3], feature_perturbation="tree_path_dependent")
    _same_calls(ours, theirs, frame.iloc[:10])


def test_the_memory_budget_bounds_r2_calls_only(models, data):
    frame, y = data
    model = models["forest"]
    explainer = RSquaredExplainer(model, memory_budget=1 / 64)
    explainer._set_engine(tuning=replace(explainer._tuning, memory_budget=2_000))  # under one row of anything
    np.testing.assert_array_equal(
        explainer.shap_interaction_values(frame), ShapTreeExplainer(model).shap_interaction_values(frame)
    )
    np.testing.assert_array_equal(explainer(frame).values, ShapTreeExplainer(model)(frame).values)
    for call in (explainer.rsq, explainer, explainer.rsq_interactions):
        with pytest.raises(MemoryBudgetError):
            call(frame, y)


def _with_shaps_covers(forest, shap_explainer):
    """``forest`` with the covers shap counted from its background data (its 1e-6 for none back to 0),
    read from shap's own parse: the oracle's covers do not come from this package's routing."""
    nodes = forest.nodes
    counted = np.asarray(shap_explainer.model.node_sample_weight, dtype=np.float64)[:, : nodes.cover.shape[1]]
    counted = np.where((counted == 1e-6) | (nodes.depth < 0), 0.0, counted)
    fields = {f: getattr(nodes, f) for f in NodeArrays.__dataclass_fields__ if f not in ("depth", "mass")}
    return replace(forest, nodes=NodeArrays.from_padded(**{**fields, "cover": counted}))


@pytest.mark.parametrize("kind", ["forest", "xgboost"])
def test_r2_on_background_data_takes_shaps_covers_and_matches_the_oracle(models, data, kind):
    frame, y = data
    model, background = models[kind], frame.iloc[::2]
    explainer = RSquaredExplainer(model, background, feature_perturbation="tree_path_dependent")
    reference = ShapTreeExplainer(model, background, feature_perturbation="tree_path_dependent")
    covered = _with_shaps_covers(explainer.forest, reference)
    np.testing.assert_array_equal(explainer._games[0].nodes.cover, covered.nodes.cover)
    nodes = covered.nodes  # leaves no background row reaches (below splits some reach) get a share of 0
    assert np.any(nodes.is_leaf & (nodes.depth >= 0) & (nodes.cover == 0))
    X, target = frame.iloc[:30], y[:30]
    expected, expected_local = rsq_oracle(covered, X.to_numpy(), target)
    np.testing.assert_allclose(explainer.rsq(X, target).to_numpy(), expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explainer(X, target).values, expected_local, rtol=0, atol=1e-9)
    # the shares add up to R² of the model less R² of the background's mean prediction
    mean_prediction = np.full(len(target), model.predict(background).mean())
    total = r2_score(target, model.predict(X)) - r2_score(target, mean_prediction)
    assert explainer.rsq(X, target).sum() == pytest.approx(total, abs=1e-5)  # float32 predictions
    assert not np.allclose(explainer.rsq(X, target), RSquaredExplainer(model).rsq(X, target), atol=1e-6)


def test_a_split_no_background_row_reaches_refuses_r2_not_shaps_calls(models, data):
    frame, y = data
    model, background = models["forest"], frame.iloc[:3]
    ours, theirs = _both(model, background, feature_perturbation="tree_path_dependent")
    _same_calls(ours, theirs, frame.iloc[:10])  # shap puts 1e-6 in place of each zero cover
    with pytest.raises(ExplainerError, match=r"None of the 3 background rows reaches .* max_samples"):
        ours.rsq(frame, y)
    with pytest.raises(ExplainerError):
        ours(frame, y)


@pytest.mark.parametrize("perturbation", ["auto", "interventional"])
def test_interventional_r2_is_refused_with_the_game_it_would_need(models, data, perturbation):
    frame, y = data
    explainer = RSquaredExplainer(models["forest"], frame.iloc[::3], feature_perturbation=perturbation)
    message = r"tree-path-dependent game.*RSquaredExplainer\(model, data, feature_perturbation='tree_path_dependent'\)"
    for call in (
        lambda: explainer.rsq(frame, y),
        lambda: explainer(frame, y),
        lambda: explainer.shap_values(frame, y),
        lambda: explainer.loss_reduction(frame, y),
        lambda: explainer.rsq_interactions(frame, y),
        lambda: explainer.shap_interaction_values(frame, y),
    ):
        with pytest.raises(ValueError, match=message):
            call()


def test_frames_are_matched_by_name_where_shap_reads_them_by_position(models, data):
    # deliberate: shap reads a DataFrame by position, so columns in another order than the model's
    # gave each feature another's values without an error; here they are matched by name and the
    # values come back in the frame's own column order (as shap.summary_plot(values, X) pairs them)
    frame, _ = data
    model = models["xgboost"]
    shuffled = frame[NAMES[::-1]]
    ours, theirs = RSquaredExplainer(model), ShapTreeExplainer(model)
    np.testing.assert_array_equal(ours.shap_values(shuffled), theirs.shap_values(frame)[:, ::-1])
    assert not np.allclose(theirs.shap_values(shuffled), theirs.shap_values(frame)[:, ::-1])
    # the background frame too: shap would count each feature's covers on another's values
    background = RSquaredExplainer(model, shuffled.iloc[::2], feature_perturbation="tree_path_dependent")
    reference = ShapTreeExplainer(model, frame.iloc[::2], feature_perturbation="tree_path_dependent")
    np.testing.assert_array_equal(background.shap_values(frame), reference.shap_values(frame))


def test_interaction_values_of_a_lightgbm_model_with_categorical_splits_are_shaps():
    # shap's test of GH 480: its own parse of the categorical splits; the trees as read here route
    # rows through extra columns, which must never reach shap's TreeSHAP (it wrote past its array)
    lightgbm = pytest.importorskip("lightgbm")
    X, y, _ = make_data(seed=11, n=300, p=4)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(g=np.arange(300) % 4)
    model = lightgbm.LGBMRegressor(n_estimators=20, max_cat_to_onehot=1, min_data_per_group=5, verbose=-1)
    model.fit(frame, y + frame["g"], categorical_feature=[4])
    ours = RSquaredExplainer(model).shap_interaction_values(frame.iloc[:10])
    theirs = ShapTreeExplainer(model).shap_interaction_values(frame.iloc[:10])
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
