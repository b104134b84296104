"""Time estimates: a call estimated to run for minutes warns first, unless a progress bar shows it."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer
from shap_rsq.engine.estimates import LongCallWarning, estimated_seconds, long_call_message
from shap_rsq.tuning import DEFAULT_TUNING

# every call counts as long, and interaction calls project at once: the warnings' paths without a long call
ALWAYS = replace(DEFAULT_TUNING, long_call_seconds=0.0, projection_seconds=0.0)


def _data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + rng.normal(scale=0.3, size=n)
    return X, y


def _long_call_warnings(record) -> list:
    return [w for w in record if issubclass(w.category, LongCallWarning)]


def test_a_forest_at_its_defaults_is_announced_before_it_runs():
    # scikit-learn's defaults grow every tree fully: thousands of leaves, depth about 25
    X, y = _data(2000, 20)
    model = RandomForestRegressor(10, random_state=0, n_jobs=1).fit(X, y)
    explainer = RSquaredExplainer(model)
    units = explainer._units.units(False)
    seconds = estimated_seconds(units, len(X), DEFAULT_TUNING)
    assert seconds >= DEFAULT_TUNING.long_call_seconds
    message = long_call_message(units, explainer.forest.nodes, len(X), False, DEFAULT_TUNING)
    leaves = max(tree.get_n_leaves() for tree in model.estimators_)
    assert f"10 trees (up to {leaves:,} leaves" in message
    assert "on 2,000 rows" in message
    for advice in ("progress=True", "--progress", "n_jobs=-1", "max_depth", "min_samples_leaf", "estimate_rsq"):
        assert advice in message
    assert "per-row" not in message
    local = long_call_message(explainer._units.units(True), explainer.forest.nodes, len(X), True, DEFAULT_TUNING)
    assert "per-row R² shares" in local


@pytest.mark.parametrize("call", ["rsq", "per_row"])
def test_the_warning_comes_first_and_changes_nothing(call):
    X, y = _data(120, 5)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    quiet = RSquaredExplainer(model)
    warned = RSquaredExplainer(model)._set_engine(tuning=ALWAYS)

    def run(explainer):
        return explainer.rsq(X, y) if call == "rsq" else explainer(X, y).values

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        expected = run(quiet)
        assert not _long_call_warnings(record)
    with pytest.warns(LongCallWarning, match="estimated to take about") as record:
        values = run(warned)
    np.testing.assert_array_equal(values, expected)
    # the warning points at the caller's line, not at the library's
    assert [w.filename for w in _long_call_warnings(record)] == [__file__]


def test_no_warning_with_a_progress_bar(capsys):
    X, y = _data(120, 5)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model, progress=True)._set_engine(tuning=ALWAYS)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        explainer.rsq(X, y)
    assert not _long_call_warnings(record)
    assert "trees" in capsys.readouterr().err  # the bar, which carries the estimate instead


def test_shallow_boosters_on_many_rows_are_not_announced():
    # R² shares of 200 depth-4 trees on a million rows take about 34 s (docs/benchmarks.md, "Scale");
    # per-row shares about a second per 10,000 rows
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(3000, 20)
    model = xgboost.XGBRegressor(n_estimators=200, max_depth=4, n_jobs=1).fit(X, y)
    explainer = RSquaredExplainer(model)
    for local, n_rows in ((False, 1_000_000), (True, 100_000)):
        units = explainer._units.units(local)
        assert long_call_message(units, explainer.forest.nodes, n_rows, local, DEFAULT_TUNING) is None


@pytest.mark.parametrize("kernel", ["auto", "pairs"])
@pytest.mark.parametrize("local", [False, True])
def test_interaction_shares_warn_once_when_their_projection_is_long(local, kernel):
    X, y = _data(80, 4)
    model = RandomForestRegressor(3, max_depth=4, random_state=0).fit(X, y)
    quiet = RSquaredExplainer(model)._set_engine(kernel=kernel)
    warned = RSquaredExplainer(model)._set_engine(kernel=kernel, tuning=ALWAYS)

    def run(explainer):
        return explainer(X, y, interactions=True).values if local else explainer.rsq_interactions(X, y)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        expected = run(quiet)
        assert not _long_call_warnings(record)
        values = run(warned)
    np.testing.assert_array_equal(values, expected)
    # one projection warning for the interactions (per-row on leaf pairs: also the up-front one of
    # the shares; on every subset, the trees' kernel gives the shares with the interactions)
    texts = [str(w.message) for w in _long_call_warnings(record)]
    projected = [text for text in texts if "projected to take" in text]
    what = "per-row interaction shares" if local else "The interaction shares"
    assert len(projected) == 1 and what in projected[0] and "of these 3 trees" in projected[0]
    assert "progress=True" in projected[0] and "max_depth" in projected[0]
    assert {w.filename for w in _long_call_warnings(record)} == {__file__}
    if local and kernel == "pairs":  # the per-row shares are announced first, before the interactions' long part
        assert "estimated to take about" in texts[0] and "projected to take" in texts[1]
    if kernel == "auto":
        assert texts == projected


def test_interaction_shares_show_a_bar_instead(capsys):
    X, y = _data(80, 4)
    model = RandomForestRegressor(3, max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model, progress=True)._set_engine(tuning=ALWAYS)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        explainer.rsq_interactions(X, y)
    assert not _long_call_warnings(record)
    assert "trees (interaction shares)" in capsys.readouterr().err
