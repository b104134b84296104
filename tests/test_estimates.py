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


# the default progress="auto": a bar for calls estimated at Tuning.progress_seconds or more
BAR_ALWAYS = replace(DEFAULT_TUNING, progress_seconds=0.0)


def _small_forest():
    X, y = _data(200, 5)
    return RandomForestRegressor(3, max_depth=6, random_state=0).fit(X, y), X, y


@pytest.mark.parametrize("local", [False, True])
def test_the_default_shows_a_bar_above_the_threshold_and_none_below(capsys, local):
    model, X, y = _small_forest()
    explainer = RSquaredExplainer(model)
    assert explainer.progress == "auto"

    def run(explainer):
        return explainer(X, y).values if local else explainer.rsq(X, y)

    expected = run(explainer)
    assert "trees" not in capsys.readouterr().err  # estimated far below 10 s: no bar
    values = run(RSquaredExplainer(model)._set_engine(tuning=BAR_ALWAYS))
    assert "trees" in capsys.readouterr().err
    np.testing.assert_array_equal(values, expected)  # a bar changes nothing


def test_progress_false_shows_no_bar_whatever_the_estimate(capsys):
    model, X, y = _small_forest()
    RSquaredExplainer(model, progress=False)._set_engine(tuning=BAR_ALWAYS).rsq(X, y)
    assert "trees" not in capsys.readouterr().err


@pytest.mark.parametrize(("progress", "warned"), [("auto", "A progress bar follows"), (False, "shows a progress bar")])
def test_a_long_call_warns_unless_the_bar_was_asked_for(capsys, progress, warned):
    model, X, y = _small_forest()
    explainer = RSquaredExplainer(model, progress=progress)._set_engine(tuning=ALWAYS)
    with pytest.warns(LongCallWarning, match="estimated to take about") as record:
        explainer.rsq(X, y)
    assert len(_long_call_warnings(record)) == 1 and warned in str(record[0].message)
    # ALWAYS keeps the 10 s threshold: the bar is deferred and never opens on this quick call
    assert "trees" not in capsys.readouterr().err


def test_a_deferred_bar_opens_only_when_the_trees_done_project_past_the_threshold(capsys):
    from shap_rsq.engine.estimates import Deferred, progress_bar

    opens = replace(DEFAULT_TUNING, late_bar_seconds=0.0, progress_seconds=0.0)
    with progress_bar(4, Deferred("trees (late)", opens)) as bar:
        bar.update(1)
        bar.update(1)
    assert "trees (late)" in capsys.readouterr().err
    never = replace(DEFAULT_TUNING, late_bar_seconds=0.0, progress_seconds=1e9)
    with progress_bar(4, Deferred("trees (late)", never)) as bar:
        for _ in range(4):
            bar.update(1)
    assert "trees (late)" not in capsys.readouterr().err


@pytest.mark.parametrize("progress", ["yes", None, 1, "True"])
def test_progress_must_be_true_false_or_auto(progress):
    model, _, _ = _small_forest()
    with pytest.raises(ValueError, match="progress must be True, False or 'auto'"):
        RSquaredExplainer(model, progress=progress)


def test_the_pattern_count_saturates_on_discrete_rows_and_grows_on_continuous_ones():
    from shap_rsq.engine.estimates import pattern_counts

    rng = np.random.default_rng(0)
    n = 20_000
    binary = rng.integers(0, 2, size=(n, 3)).astype(float)
    continuous = rng.normal(size=(n, 3))
    y = binary @ [1.0, 2.0, 3.0] + continuous @ [1.0, -1.0, 0.5]
    every_row = replace(DEFAULT_TUNING, estimate_sample_rows=n, estimate_max_sample_rows=n)
    for X in (binary, continuous):
        model = RandomForestRegressor(3, max_depth=6, random_state=0).fit(X, y)
        nodes = RSquaredExplainer(model).forest.nodes
        counts, exact = pattern_counts(nodes, X), pattern_counts(nodes, X, tuning=every_row)
        # three binary columns have 8 rows in all; continuous rows of depth-6 trees take 4,000-4,500
        # patterns, which a draw of 512 rows (one pattern a row) put at 10,000-15,000
        assert np.all(exact <= 8) if X is binary else np.all(exact > 4000)
        assert np.all(counts >= 0.5 * exact) and np.all(counts <= 2 * exact), (counts, exact)


def test_the_first_rows_settle_only_the_trees_on_which_each_row_is_a_pattern():
    # the first drawn rows stand for the whole sample only where each takes a pattern of its own:
    # trees on discrete rows go on to the whole sample and count as before
    from shap_rsq.engine.estimates import pattern_counts

    rng = np.random.default_rng(2)
    n = 5_000
    binary = rng.integers(0, 2, size=(n, 6)).astype(float)
    continuous = rng.normal(size=(n, 6))
    whole_sample = replace(DEFAULT_TUNING, estimate_first_rows=DEFAULT_TUNING.estimate_sample_rows)
    for X in (binary, continuous, np.hstack([binary[:, :3], continuous[:, :3]])):
        y = X @ np.arange(1.0, X.shape[1] + 1) + rng.normal(size=n)
        nodes = RSquaredExplainer(RandomForestRegressor(4, max_depth=8, random_state=0).fit(X, y)).forest.nodes
        staged = pattern_counts(nodes, X)
        np.testing.assert_allclose(staged, pattern_counts(nodes, X, tuning=whole_sample), rtol=0.1)
        assert np.all(staged <= n)
    assert np.all(pattern_counts(nodes, continuous[:300]) <= 300)  # every row counted: at most one pattern a row


@pytest.mark.parametrize(("progress", "counted"), [(False, False), ("auto", True), (True, True)])
def test_patterns_are_counted_only_when_the_estimate_decides_what_the_call_shows(monkeypatch, progress, counted):
    # without a bar the estimate only decides the warning: a call below it does not count patterns
    from shap_rsq.engine import estimates

    calls = []
    original = estimates.pattern_counts
    monkeypatch.setattr(estimates, "pattern_counts", lambda *a, **k: calls.append(1) or original(*a, **k))
    X, y = _data(300, 5)
    model = RandomForestRegressor(3, max_depth=5, random_state=0).fit(X, y)
    every_call_counts = replace(DEFAULT_TUNING, progress_seconds=0.0)
    explainer = RSquaredExplainer(model, progress=progress)._set_engine(tuning=every_call_counts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongCallWarning)
        explainer.rsq(X, y)
    assert bool(calls) is counted


def test_the_estimate_counts_patterns_not_rows_on_discrete_data(lca_routing):
    from shap_rsq.engine.estimates import estimated_seconds, pattern_counts

    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(50_000, 4)).astype(float)
    y = X @ [1.0, 2.0, -1.0, 0.5] + rng.normal(size=len(X))
    model = RandomForestRegressor(2, max_depth=8, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    units = explainer._units.units(False)
    bound = estimated_seconds(units, len(X), DEFAULT_TUNING)
    counted = estimated_seconds(units, len(X), DEFAULT_TUNING, patterns=pattern_counts(explainer.forest.nodes, X))
    assert counted < bound / 10  # 3^4 = 81 distinct rows, not 50,000


@pytest.mark.parametrize("local", [False, True])
def test_a_classifier_warns_once_of_the_time_of_all_its_classes(local):
    # each class plays its own trees: the warning, given before the first, is of all of them (a
    # fully grown binary forest classifier was announced at half the time it took)
    from sklearn.ensemble import RandomForestClassifier

    X, y = _data(150, 5)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    explainer = RSquaredExplainer(RandomForestClassifier(3, max_depth=4, random_state=0).fit(X, labels))
    explainer._set_engine(tuning=ALWAYS)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        explainer(X, labels) if local else explainer.rsq(X, labels)
    (warning,) = _long_call_warnings(record)
    one_class = estimated_seconds(explainer._unit_caches[0].units(local), len(X), ALWAYS, local=local)
    assert "Brier skill score shares of these 3 trees for each of 3 outputs" in str(warning.message)
    one = long_call_message(explainer._unit_caches[0].units(local), explainer.forest.nodes, len(X), local, ALWAYS)
    assert one_class > 0 and "for each of" not in one


def test_a_boosters_warning_names_its_score():
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(150, 5)
    model = xgboost.XGBClassifier(n_estimators=4, max_depth=3).fit(X, (y > np.median(y)).astype(int))
    explainer = RSquaredExplainer(model)._set_engine(tuning=ALWAYS)
    with pytest.warns(LongCallWarning, match=r"The exact D² \(log-loss\) shares of these 4 trees"):
        explainer.rsq(X, (y > np.median(y)).astype(int))


def test_a_tree_with_pair_nodes_prices_the_items_its_plans_evaluate():
    # the items of the nodes given to the leaf pairs are priced as pairs, not again as items:
    # priced as items too, a fully grown tree on 500 rows was estimated at 10x the items its
    # plans evaluate
    from shap_rsq.kernels.lca.hybrid import HybridUnit

    X, y = _data(500, 20)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    (unit,) = RSquaredExplainer(model)._units.units(False, n_rows=len(X))  # routed for its 500 rows
    assert isinstance(unit, HybridUnit) and unit.dense
    evaluated = sum(plan.node_evaluations for plan in unit.lca_plans())
    assert unit.item_work is not None and unit.item_work < unit.work / 4
    assert evaluated / 2 <= unit.item_work <= 2 * evaluated


def test_deep_trees_items_run_at_the_dense_rate_as_their_codes_outnumber_the_patterns():
    from shap_rsq.engine.estimates import _item_rate

    lca, dense = DEFAULT_TUNING.estimate_lca_seconds, DEFAULT_TUNING.estimate_dense_seconds
    assert _item_rate(lca, 8, 1e6, DEFAULT_TUNING) == pytest.approx(lca, rel=1e-3)  # cells shared
    assert _item_rate(lca, 14, 500, DEFAULT_TUNING) == dense  # every pattern its own cell
    assert _item_rate(lca, 1000, 500, DEFAULT_TUNING) == dense  # wide codes do not overflow
    rates = [_item_rate(lca, bits, 2000, DEFAULT_TUNING) for bits in range(6, 14)]
    assert np.all(np.diff(rates) >= 0) and lca < rates[4] < dense  # 10 bits on 2,000 patterns: between


def test_trees_the_recursion_may_take_are_priced_by_their_splits_and_patterns_not_their_depth():
    # lca_work grows as the cube of the leaves' depths: it priced the deep late trees of a
    # LightGBM booster at 2.5x its first ones, which take as long on the recursion; blocks cut by
    # it gave one of two workers half the trees
    lightgbm = pytest.importorskip("lightgbm")
    from shap_rsq.engine.estimates import unit_seconds
    from shap_rsq.engine.run import _unit_blocks

    X, y = _data(1000, 100)
    model = lightgbm.LGBMRegressor(n_estimators=60, num_leaves=31, verbose=-1, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    explainer.rsq(X, y)  # compiles the plans: a tree the recursion may take still reports no count
    units = [unit for unit in explainer._units.units(False) if getattr(unit, "junction", None) is not None]
    assert len(units) >= 40 and all(unit.compiled_work is None for unit in units)
    splits = np.array([int(np.sum(unit.tree.left >= 0)) for unit in units])
    seconds = np.array([unit_seconds(unit, len(X), False, None) for unit in units])
    work = np.array([unit.work for unit in units])
    same = splits == splits.max()
    assert same.sum() >= 20 and np.ptp(work[same]) > 0.5 * work[same].min()  # the LCA measure varies...
    np.testing.assert_allclose(seconds[same], seconds[same][0], rtol=1e-12)  # ... the recursion's does not
    assert np.all(np.diff(seconds[np.argsort(splits)]) >= 0)  # and grows with the splits
    eager = replace(DEFAULT_TUNING, parallel_work=0.0, blocks_per_job=2)
    blocks = _unit_blocks(units, 2, local=False, n_rows=len(X), tuning=eager)
    counts = [len(block) for block in blocks]
    assert len(blocks) > 1 and max(counts) <= 1.5 * min(counts)


def test_leaf_wise_trees_have_their_items_counted_and_balanced_ones_do_not():
    # lca_work prices a leaf by the cube of its depth, as if the features coupling its pairs grew
    # with it: on LightGBM's leaf-wise trees, most of whose splits have a leaf child (coupling
    # none), it came out at 2.4-2.5x their compiled plans' items, and the call's estimate at
    # 2.3-2.4x its time
    lightgbm = pytest.importorskip("lightgbm")
    from sklearn.ensemble import GradientBoostingRegressor

    X, y = _data(2000, 20)
    leaf_wise = lightgbm.LGBMRegressor(n_estimators=6, num_leaves=127, verbose=-1, random_state=0, n_jobs=1)
    balanced = GradientBoostingRegressor(n_estimators=6, max_depth=6, random_state=0)
    for model, counted in ((leaf_wise.fit(X, y), True), (balanced.fit(X, y), False)):
        explainer = RSquaredExplainer(model)._set_engine(kernel="lca")
        units = [unit for unit in explainer._units.units(False) if type(unit).__name__ == "LcaUnit"]
        assert len(units) == 6
        compiled = np.array([unit.plan.node_evaluations for unit in units], dtype=float)
        work = np.array([unit.work for unit in units])
        if not counted:  # their shape is the one lca_work's constants were set on: not counted
            assert all(unit.item_work is None for unit in units)
            continue
        items = np.array([unit.item_work for unit in units])
        assert np.median(work / compiled) > 2  # the depths' estimate is far over ...
        assert np.all((items > 0.5 * compiled) & (items < 1.5 * compiled))  # ... the count is not


def test_per_row_values_of_small_trees_are_priced_by_their_players_and_tables_once():
    # per-row values of a tree of one split add one column a row: once priced per row and tree at
    # 50x the global call, now by each tree's players, and its cube's tables only until they exist
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(1000, 20)
    stumps = xgboost.XGBRegressor(n_estimators=100, max_depth=1, n_jobs=1).fit(X, y)
    units = RSquaredExplainer(stumps)._units.units(True)
    per_row = estimated_seconds(units, len(X), DEFAULT_TUNING, local=True)
    assert per_row < 3 * estimated_seconds(units, len(X), DEFAULT_TUNING)

    booster = xgboost.XGBRegressor(n_estimators=50, max_depth=3, n_jobs=1).fit(X, y)
    explainer = RSquaredExplainer(booster, progress=False)
    units = explainer._units.units(True)
    first = estimated_seconds(units, len(X), DEFAULT_TUNING, local=True)
    explainer(X, y)
    again = estimated_seconds(units, len(X), DEFAULT_TUNING, local=True)
    heaps = [unit for unit in units if hasattr(unit, "local_tabulated")]
    assert heaps and all(unit.local_tabulated for unit in heaps)
    tables = DEFAULT_TUNING.estimate_local_table_seconds * sum(len(u.trees) * u.n_patterns for u in heaps)
    assert first - again == pytest.approx(tables)


def test_the_calls_checks_are_priced_by_the_values_they_read():
    X, y = _data(600, 2000)
    explainer = RSquaredExplainer(DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y))
    units = explainer._units.units(False)
    narrow = estimated_seconds(units, len(X), DEFAULT_TUNING)
    wide = estimated_seconds(units, len(X), DEFAULT_TUNING, n_columns=X.shape[1])
    assert wide - narrow == pytest.approx(DEFAULT_TUNING.estimate_input_element_seconds * X.size)


def test_the_draw_grows_with_the_rows_only_while_a_trees_decisions_fit_a_block():
    from shap_rsq.engine.estimates import pattern_counts

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40_000, 4))
    model = RandomForestRegressor(2, max_depth=8, random_state=0).fit(X, X[:, 0] * X[:, 1])
    nodes = RSquaredExplainer(model).forest.nodes
    small_draw = replace(DEFAULT_TUNING, estimate_max_sample_rows=512)
    # 4,096 rows of these trees' decisions fit the default block: a larger draw, other counts
    assert not np.array_equal(pattern_counts(nodes, X), pattern_counts(nodes, X, tuning=small_draw))
    # a block of 100 rows' decisions keeps the draw at 512 rows, as deep trees' (peaks of 100 MB)
    tight = replace(DEFAULT_TUNING, estimate_sample_elements=100 * nodes.left.shape[1])
    tight_small = replace(small_draw, estimate_sample_elements=tight.estimate_sample_elements)
    np.testing.assert_array_equal(pattern_counts(nodes, X, tuning=tight), pattern_counts(nodes, X, tuning=tight_small))


def test_trees_on_every_subset_are_priced_by_their_tables_and_blocks_not_by_the_routing_cost():
    # they were priced through the LCA rate times the routing's subset_element_cost, 2.7-3.1x their
    # time once their tables were laid out subsets first; now by their own elements and blocks
    X, y = _data(2000, 8)
    tree = DecisionTreeRegressor(random_state=0).fit(X, y)

    def estimate(**changes):
        tuning = replace(DEFAULT_TUNING, **changes)
        units = RSquaredExplainer(tree)._set_engine(tuning=tuning)._units.units(False)
        assert [type(unit).__name__ for unit in units] == ["SubsetUnit"]
        return estimated_seconds(units, len(X), tuning), units[0]

    base, unit = estimate()
    assert estimate(subset_element_cost=0.5)[0] == pytest.approx(base)
    assert unit.live == unit.plan.live  # known before the plan is compiled
    smaller = estimate(subset_block_elements=10 * unit.live)[0]
    splits = int(np.sum(unit.tree.left >= 0))
    more_blocks = -(-len(X) // 10) - -(-len(X) // unit.pattern_step())
    assert smaller - base == pytest.approx(DEFAULT_TUNING.estimate_subset_pass_seconds * more_blocks * splits)
