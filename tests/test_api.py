"""The public surface: return types, names, weights, jobs, progress and memory."""

from __future__ import annotations

import dataclasses
import os
import pickle
import tracemalloc
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import shap
from conftest import FAMILIES, make_data
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer, UnsupportedModelError
from shap_rsq.engine.run import _unit_blocks, _unit_weight
from shap_rsq.kernels.lca import unit as _lca_unit
from shap_rsq.tuning import DEFAULT_TUNING

xgboost = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def frame_model():
    X, y, w = make_data(seed=31)
    frame = pd.DataFrame(X, columns=["age", "bmi", "bp", "s1", "s2", "noise"])
    model = xgboost.XGBRegressor(n_estimators=20, max_depth=3, random_state=0).fit(frame, y)
    return model, frame, y, w


def test_rsq_returns_a_series_for_frames_and_an_array_for_arrays(frame_model):
    model, frame, y, _ = frame_model
    explainer = RSquaredExplainer(model)
    series = explainer.rsq(frame, y)
    array = explainer.rsq(frame.to_numpy(), y)
    assert isinstance(series, pd.Series)
    assert list(series.index) == list(frame.columns)
    assert series.name == "R²"  # the score the shares are of
    assert isinstance(array, np.ndarray) and array.shape == (6,)
    np.testing.assert_allclose(series.to_numpy(), array, atol=1e-15)


def test_explanation_carries_data_names_and_row_bases(frame_model):
    model, frame, y, _ = frame_model
    explanation = RSquaredExplainer(model)(frame, y)
    assert isinstance(explanation, shap.Explanation)
    assert explanation.feature_names == list(frame.columns)
    np.testing.assert_array_equal(explanation.data, frame.to_numpy())
    assert explanation.values.shape == frame.shape
    assert explanation.base_values.shape == (len(y),)


def test_array_names_come_from_the_argument_then_the_model(frame_model):
    model, frame, y, _ = frame_model
    assert RSquaredExplainer(model)(frame.to_numpy(), y).feature_names == list(frame.columns)
    names = [f"g{j}" for j in range(6)]
    assert RSquaredExplainer(model, feature_names=names)(frame.to_numpy(), y).feature_names == names
    bare = GradientBoostingRegressor(n_estimators=3).fit(frame.to_numpy(), y)
    assert RSquaredExplainer(bare)(frame.to_numpy(), y).feature_names == [f"Feature {j}" for j in range(6)]


def test_feature_names_of_the_wrong_length_are_refused(frame_model):
    model, _, _, _ = frame_model
    with pytest.raises(ValueError, match="feature_names has 2 names, but the model has 6 features"):
        RSquaredExplainer(model, feature_names=["a", "b"])


def test_feature_names_that_move_the_models_own_names_are_refused(frame_model):
    # the model's names in another order labelled each share with another feature's name on arrays
    # (and with the right one on frames, matched by name): the strongest feature read as the weakest
    model, frame, y, _ = frame_model
    moved = list(frame.columns[::-1])
    with pytest.raises(ValueError, match=f"feature_names puts '{moved[0]}' at position 0, but the model"):
        RSquaredExplainer(model, feature_names=moved)
    renamed = [f"{name} (units)" for name in frame.columns]  # other names are labels, as shap takes them
    assert RSquaredExplainer(model, feature_names=renamed)(frame.to_numpy(), y).feature_names == renamed


def test_a_booster_trained_on_a_frame_explains_arrays(frame_model):
    model, frame, y, _ = frame_model
    booster = model.get_booster()
    assert booster.feature_names == list(frame.columns)
    explainer = RSquaredExplainer(booster)
    from_array = explainer.rsq(frame.to_numpy(), y)
    np.testing.assert_allclose(from_array, explainer.rsq(frame, y).to_numpy(), atol=1e-15)
    assert from_array.sum() > 0.5


def test_integer_weights_equal_repeated_rows():
    X, y, _ = make_data(seed=32)
    model = HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, y)
    counts = np.random.default_rng(0).integers(0, 4, size=len(y))
    counts[:2] = 1  # keep y non-constant
    explainer = RSquaredExplainer(model)
    weighted = explainer.rsq(X, y, sample_weight=counts)
    repeated = explainer.rsq(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    np.testing.assert_allclose(weighted, repeated, atol=1e-12)


@pytest.mark.parametrize("depth", [3, 6])
def test_parallel_jobs_give_identical_results(frame_model, depth):
    _, frame, y, w = frame_model
    model = xgboost.XGBRegressor(n_estimators=20, max_depth=depth, random_state=0).fit(frame, y)
    units = RSquaredExplainer(model)._units.units()
    # deep trees are split into blocks of trees whose starting predictions must be right; shallow
    # ones, and forests with less work than a pool's start-up, stay in one block in this process
    assert len(_unit_blocks(units, 2, local=False, n_rows=len(y))) == 1
    eager = replace(DEFAULT_TUNING, parallel_work=0.0)
    blocks = _unit_blocks(units, 2, local=False, n_rows=len(y), tuning=eager)
    assert len(blocks) == (1 if depth == 3 else 2 * eager.blocks_per_job)
    # per-row shares too, unless the blocks' (n, p) results would take a real part of the budget
    p = frame.shape[1]
    local_blocks = _unit_blocks(units, 2, local=True, n_rows=len(y), tuning=eager, n_features=p)
    assert len(local_blocks) == (1 if depth == 3 else 2 * eager.blocks_per_job)
    tight = replace(eager, memory_budget=8 * 8 * len(y) * p * 2 * eager.blocks_per_job - 1)
    assert len(_unit_blocks(units, 2, local=True, n_rows=len(y), tuning=tight, n_features=p)) == (
        1 if depth == 3 else 2
    )
    serial = RSquaredExplainer(model).rsq(frame, y, sample_weight=w)
    parallel = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=eager).rsq(frame, y, sample_weight=w)
    np.testing.assert_allclose(serial, parallel, atol=1e-12)
    local = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=eager)(frame, y, sample_weight=w)
    np.testing.assert_allclose(local.values.sum(0), serial.to_numpy(), atol=1e-12)


@pytest.mark.parametrize("family", ["xgboost", "forest", "lightgbm"])
def test_global_values_do_not_depend_on_jobs_or_on_the_call(frame_model, family):
    # blocks of trees are summed unit by unit in the order of the trees, and each block starts
    # from the residual the trees before it leave, added up in the same order as in one process:
    # the same bits with two jobs, and again on a second call, whose blocks the compiled plans
    # balance anew
    _, frame, y, w = frame_model
    if family == "xgboost":
        model = xgboost.XGBRegressor(n_estimators=20, max_depth=5, random_state=0).fit(frame, y)
    elif family == "forest":  # trees of mixed depths: enumeration batches, recursion and LCA units
        model = RandomForestRegressor(16, max_depth=None, min_samples_leaf=3, random_state=0).fit(frame, y)
    else:
        lightgbm = pytest.importorskip("lightgbm")
        model = lightgbm.LGBMRegressor(n_estimators=20, num_leaves=12, verbose=-1).fit(frame, y)
    eager = replace(DEFAULT_TUNING, parallel_work=0.0)
    explainer = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=eager)
    assert len(_unit_blocks(explainer._units.units(), 2, local=False, n_rows=len(y), tuning=eager)) > 1
    serial = RSquaredExplainer(model).rsq(frame, y, sample_weight=w).to_numpy()
    first = explainer.rsq(frame, y, sample_weight=w).to_numpy()
    second = explainer.rsq(frame, y, sample_weight=w).to_numpy()
    np.testing.assert_array_equal(first, serial)
    np.testing.assert_array_equal(second, serial)
    assert np.abs(serial).max() > 1e-3


def test_worker_processes_send_back_the_trees_they_compiled(frame_model, lca_routing):
    _, frame, y, _ = frame_model
    model = xgboost.XGBRegressor(n_estimators=8, max_depth=5, random_state=0).fit(frame, y)
    explainer = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=replace(DEFAULT_TUNING, parallel_work=0.0))
    assert not any(_lca_unit.compiled_plans(explainer._units.units()))
    first = explainer.rsq(frame, y)
    # compiled in the workers, kept by the explainer: the next call ships them instead
    assert all(plan is not None for plan in _lca_unit.compiled_plans(explainer._units.units()))
    np.testing.assert_allclose(explainer.rsq(frame, y), first, atol=1e-12)
    # ... and a worker sends back only the plans it compiled, not those it received
    units = explainer._units.units()
    present = _lca_unit.plans_present(units)
    assert not any(_lca_unit.compiled_plans(units, present))
    assert any(_lca_unit.compiled_plans(units, [(False, False)] * len(units)))


def test_a_threading_backend_runs_the_blocks_here_on_the_plans_this_process_holds(
    frame_model, monkeypatch, lca_routing
):
    # joblib.parallel_config(backend="threading") wins over the worker processes: the units went
    # without their plans as to a process, so each call compiled every tree again
    import joblib

    from shap_rsq.engine import run

    _, frame, y, w = frame_model
    model = xgboost.XGBRegressor(n_estimators=12, max_depth=5, random_state=0).fit(frame, y)
    serial = RSquaredExplainer(model)
    expected, expected_local = serial.rsq(frame, y, sample_weight=w), serial(frame, y, sample_weight=w).values
    eager = replace(DEFAULT_TUNING, parallel_work=0.0)
    # at 4 MiB the workers' blocks of patterns are cut to a share of the budget each: on threads,
    # copies of the units carry the cut, and the plans they compile come back to the explainer's
    tight = replace(eager, memory_budget=1 << 22)
    ran_in = []
    real = run._run_block

    def record(*args, **kwargs):
        ran_in.append(os.getpid())
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "_run_block", record)
    compiled = []
    real_compile = _lca_unit.compile_tree

    def count(tree, **kwargs):
        compiled.append(tree)
        return real_compile(tree, **kwargs)

    monkeypatch.setattr(_lca_unit, "compile_tree", count)
    for tuning in (eager, tight):
        explainer = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=tuning)
        units = explainer._units.units()
        assert len(_unit_blocks(units, 2, local=False, n_rows=len(y), tuning=tuning)) > 1
        with joblib.parallel_config(backend="threading"):
            first = explainer.rsq(frame, y, sample_weight=w)
            plans = [unit._plan for unit in units if isinstance(unit, _lca_unit.LcaUnit)]
            compiled.clear()
            second = explainer.rsq(frame, y, sample_weight=w)
            assert len(compiled) == plans.count(None)  # only the plans the budget could not keep
            again = [unit._plan for unit in units if isinstance(unit, _lca_unit.LcaUnit)]
            local = explainer(frame, y, sample_weight=w).values
        # compiled once and kept, as many as the budget keeps (an eighth of it: 512 KiB of 4 MiB)
        kept = [plan for plan in plans if plan is not None]
        assert len(kept) == len(plans) if tuning is eager else 0 < len(kept) < len(plans)
        assert all(a is b for a, b in zip(plans, again, strict=True) if a is not None)
        assert all(unit.tuning is tuning for unit in units)
        np.testing.assert_array_equal(first, expected)
        np.testing.assert_array_equal(second, expected)
        np.testing.assert_allclose(local, expected_local, rtol=0, atol=1e-15)
    assert len(ran_in) > 6 and set(ran_in) == {os.getpid()}


def test_blocks_of_compiled_trees_are_balanced_by_their_counted_work(frame_model, lca_routing):
    # before compiling, blocks split the estimated work (off by up to 3x per tree); once the plans
    # exist they split the seconds of what the plans count, each block within one tree of an equal
    # share (every tree on the LCA kernel here: a tree the recursion may take reports no count)
    _, frame, y, _ = frame_model
    model = xgboost.XGBRegressor(n_estimators=40, max_depth=6, random_state=0).fit(frame, y)
    # these small trees have a leaf child at most splits: counting their items up front
    # (Tuning.leaf_wise_share) would balance the first blocks already, so it is off here
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca", tuning=replace(DEFAULT_TUNING, leaf_wise_share=2.0))
    units = explainer._units.units(local=True)
    assert all(unit.compiled_work is None and unit.item_work is None for unit in units)
    eager = replace(DEFAULT_TUNING, parallel_work=0.0)
    # blocks for a call of many rows, whose items outweigh each tree's fixed costs
    rows = 1_000_000
    before = _unit_blocks(units, 2, local=True, n_rows=rows, tuning=eager, n_features=frame.shape[1])
    explainer(frame, y)
    counted = np.array([unit.compiled_work for unit in units])
    estimated = np.array([unit.work for unit in units])
    assert np.all(counted > 0) and np.ptp(counted / estimated) > 0.2  # the estimate's error varies by tree
    after = _unit_blocks(units, 2, local=True, n_rows=rows, tuning=eager, n_features=frame.shape[1])
    weight = np.array([_unit_weight(unit, rows, True, eager) for unit in units])
    share = weight.sum() / len(after)
    assert all(abs(weight[block].sum() - share) <= weight.max() for block in after)
    spread = [np.ptp([counted[block].sum() for block in blocks]) for blocks in (before, after)]
    assert spread[1] < spread[0]
    # what a plan counts: each cross item on its group's quadrature nodes, each single on single_q
    from shap_rsq.kernels.batching.cells import Cells
    from shap_rsq.kernels.lca.global_values import _chunks

    plan = units[0].plan
    codes = np.zeros((1, len(plan.code_size)), dtype=np.int64)
    cells = Cells(plan, codes)
    cut_everywhere = replace(DEFAULT_TUNING, level_work=0.0)
    cross = sum(len(chunk.items) * len(chunk.q) for chunk, _ in _chunks(plan, cells, cut_everywhere))
    assert plan.node_evaluations == cross + plan.n_single * plan.single_q


def test_workers_keep_the_plans_they_compiled_and_units_travel_without_them(frame_model, monkeypatch, lca_routing):
    # a block of units goes to a worker without its plans; the worker keeps what it compiled, by
    # unit token, and the next call's copies find them there instead of compiling again
    from collections import OrderedDict

    from shap_rsq.engine import run, worker_plans

    monkeypatch.setattr(worker_plans, "_CACHE", OrderedDict())
    _, frame, y, _ = frame_model
    model = xgboost.XGBRegressor(n_estimators=6, max_depth=5, random_state=0).fit(frame, y)
    explainer = RSquaredExplainer(model)
    explainer.rsq(frame, y)
    units = explainer._units.units()
    assert all(unit._plan is not None for unit in units)  # compiled by the call above, in this process
    forest = explainer.forest
    X, w = frame.to_numpy(dtype=float), np.ones(len(y))
    start = np.full(len(y), forest.base_offset + forest.nodes.tree_mean.sum())
    copies = worker_plans.shipped(units)
    assert all(c._plan is None and c.token == u.token for c, u in zip(copies, units, strict=True))
    assert len(pickle.dumps(copies)) < len(pickle.dumps(units)) / 5
    # another process's units
    other = {"present": [(False, False)] * len(units), "keep": 1 << 30, "caller": -1, "heap": 16 << 20}
    values, _, sent, _ = run._run_block(copies, X, y, w, start, forest, False, False, other)
    assert all(plan is not None for plan, _ in sent)  # compiled here, sent back to the caller
    again = worker_plans.shipped(units)
    values_again, _, _, _ = run._run_block(again, X, y, w, start, forest, False, False, other)
    assert all(a._plan is c._plan for a, c in zip(again, copies, strict=True))  # kept, not compiled again
    totals = [run._tree_order_sum([v], forest.n_players) for v in (values, values_again)]
    np.testing.assert_array_equal(totals[1], totals[0])
    # a bound smaller than the plans keeps none; the caller's own process never keeps any
    worker_plans.remember(again, limit=0)
    assert not worker_plans._CACHE
    mine = dict(other, caller=os.getpid())
    run._run_block(worker_plans.shipped(units), X, y, w, start, forest, False, False, mine)
    assert not worker_plans._CACHE


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_explainer_keeps_plans_within_its_bound(frame_model, jobs, lca_routing):
    # deep trees' plans are large: past Tuning.kept_plan_bytes the trees are compiled again on
    # each call, with the same values
    from shap_rsq.engine.worker_plans import held_bytes, plan_bytes

    _, frame, y, _ = frame_model
    model = xgboost.XGBRegressor(n_estimators=8, max_depth=6, random_state=0).fit(frame, y)
    free = RSquaredExplainer(model)
    expected, expected_local = free.rsq(frame, y), free(frame, y).values
    sizes = [plan_bytes(unit._plan) for unit in free._units.units()]
    assert all(size > 0 for size in sizes)
    bound = int(2.5 * np.mean(sizes))
    tuning = replace(DEFAULT_TUNING, kept_plan_bytes=bound, parallel_work=0.0)
    explainer = RSquaredExplainer(model, n_jobs=jobs)._set_engine(tuning=tuning)
    for _ in range(2):
        np.testing.assert_allclose(explainer.rsq(frame, y), expected, rtol=0, atol=1e-12)
        units = explainer._units.units()
        assert 0 < held_bytes(units) <= bound
        assert 0 < sum(unit._plan is not None for unit in units) < len(units)
    np.testing.assert_allclose(explainer(frame, y).values, expected_local, rtol=0, atol=1e-12)
    assert held_bytes(explainer._units.units(local=True)) <= bound


def test_progress_bar_can_be_switched_on(frame_model, capsys):
    model, frame, y, _ = frame_model
    RSquaredExplainer(model, progress=True).rsq(frame, y)
    assert "trees" in capsys.readouterr().err
    RSquaredExplainer(model).rsq(frame, y)
    assert capsys.readouterr().err == ""
    # with worker processes the bar is drawn here, block by block, and counts every tree
    deep = xgboost.XGBRegressor(n_estimators=12, max_depth=5, random_state=0).fit(frame, y)
    eager = replace(DEFAULT_TUNING, parallel_work=0.0)
    RSquaredExplainer(deep, n_jobs=2, progress=True)._set_engine(tuning=eager).rsq(frame, y)
    assert "12/12" in capsys.readouterr().err


def test_the_progress_bar_ends_full_when_some_trees_are_one_leaf(capsys):
    # trees that are one leaf reach no unit: a 400-tree model that fits y exactly ended at 144/400
    X, y, _ = make_data(seed=34, n=200)
    step = (X[:, 0] > 0).astype(float)  # fitted by the first tree: the others find no split
    model = xgboost.XGBRegressor(n_estimators=20, max_depth=3, learning_rate=1.0, random_state=0).fit(X, step)
    explainer = RSquaredExplainer(model, progress=True)
    leaves = explainer.forest.nodes.n_nodes == 1
    assert leaves.any() and not leaves.all()
    explainer.rsq(X, y)
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    done = int((~leaves).sum())
    assert f"{done}/{done}" in last and "100%" in last


def test_early_stopping_uses_the_trees_predict_uses():
    X, y, _ = make_data(seed=33, n=300)
    model = xgboost.XGBRegressor(n_estimators=200, learning_rate=0.5, early_stopping_rounds=3, max_depth=3)
    model.fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])], verbose=False)
    assert model.best_iteration < 150
    explainer = RSquaredExplainer(model)
    assert len(explainer.forest.trees) == model.best_iteration + 1
    np.testing.assert_allclose(explainer.forest.predict(X), model.predict(X), atol=1e-5)


def test_rsq_does_not_allocate_rows_times_features():
    n, p = 3000, 4000
    rng = np.random.default_rng(34)
    X = rng.normal(size=(n, p))
    y = X[:, 0] - X[:, 1] + rng.normal(size=n)
    explainer = RSquaredExplainer(xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(X, y))
    explainer.rsq(X, y)  # compile the plans first
    tracemalloc.start()
    shares = explainer.rsq(X, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert shares.shape == (p,)
    assert peak < X.nbytes / 10, f"peak {peak / 1e6:.1f} MB for X of {X.nbytes / 1e6:.1f} MB"


def test_loss_reduction_is_the_numerator_and_allows_a_constant_target(frame_model):
    model, frame, y, w = frame_model
    explainer = RSquaredExplainer(model)
    sst = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    numerators = explainer.loss_reduction(frame, y, sample_weight=w)
    np.testing.assert_allclose(
        numerators.to_numpy(), explainer.rsq(frame, y, sample_weight=w).to_numpy() * sst, rtol=1e-12
    )
    per_row = explainer.loss_reduction(frame, y, sample_weight=w, local=True)
    np.testing.assert_allclose(per_row.sum(axis=0), numerators.to_numpy(), rtol=1e-12)
    # each row's part depends on that row only, so any split of the rows adds up
    halves = [
        explainer.loss_reduction(frame.iloc[s], y[s], sample_weight=w[s]) for s in (slice(0, 50), slice(50, None))
    ]
    np.testing.assert_allclose(halves[0] + halves[1], numerators, rtol=1e-10)
    constant = np.full_like(y, 3.0)
    expected = -np.sum(
        w
        * (
            (constant - explainer.forest.predict(frame.to_numpy())) ** 2
            - (constant - (explainer.forest.base_offset + explainer.forest.nodes.tree_mean.sum())) ** 2
        )
    )
    assert explainer.loss_reduction(frame, constant, sample_weight=w).sum() == pytest.approx(expected, rel=1e-9)


def test_misread_trees_are_caught_by_the_prediction_check():
    from dataclasses import replace

    X, y, _ = make_data(seed=35)
    explainer = RSquaredExplainer(HistGradientBoostingRegressor(max_iter=5, random_state=0).fit(X, y))
    game = explainer._games[0]
    explainer._games = [replace(game, nodes=replace(game.nodes, value=game.nodes.value * 1.5))]
    explainer._set_engine()
    with pytest.raises(UnsupportedModelError, match="do not reproduce its predictions"):
        explainer.rsq(X, y)


def test_prediction_check_runs_once_and_again_for_the_first_missing_values():
    X, y, _ = make_data(seed=36)
    model = HistGradientBoostingRegressor(max_iter=5, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    calls = []
    original = explainer.model_info.predict
    info = replace_predict(explainer.model_info, lambda rows: calls.append(len(rows)) or original(rows))
    explainer._call_inputs = dataclasses.replace(explainer._call_inputs, info=info)
    explainer._prediction_check.info = info
    explainer.rsq(X, y)
    explainer.rsq(X, y)
    assert len(calls) == 1 and calls[0] <= 32
    with_nan = X.copy()
    with_nan[::9, 1] = np.nan
    explainer.rsq(with_nan, y)
    explainer.rsq(with_nan, y)
    assert len(calls) == 2


def replace_predict(info, predict):
    from dataclasses import replace

    return replace(info, predict=predict)


@pytest.mark.parametrize("fitted_on_frame", [True, False])
def test_the_internal_prediction_check_raises_no_feature_name_warning(fitted_on_frame):
    # scikit-learn warns when a model fitted on a frame predicts an array (and the reverse); the
    # explainer predicts a few rows itself to check the trees, which must not surface that warning
    X, y, _ = make_data(seed=33)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    model = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(frame if fitted_on_frame else X, y)
    rows = X if fitted_on_frame else frame
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shares = RSquaredExplainer(model).rsq(rows, y)
    assert np.sum(shares) > 0.5
    named = [str(w.message) for w in caught if "feature names" in str(w.message)]
    # only the explainer's own warning, once, that a frame meets a model without names (as predict warns)
    assert named == ([] if fitted_on_frame else [POSITIONAL])


POSITIONAL = (
    "X has feature names, but the model was fitted without feature names: its columns are read by position, in "
    "the order given."
)


def test_a_used_explainer_pickles_without_its_compiled_plans_and_gives_the_same_shares():
    # after one rsq a depth-8 forest's explainer pickled to 237 MB against 2.9 MB fresh: the plans
    # are a cache, compiled again on first use
    X, y, _ = make_data(seed=61, n=400)
    model = RandomForestRegressor(6, max_depth=8, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    fresh = len(pickle.dumps(explainer))
    shares = explainer.rsq(X, y)
    local = explainer(X, y).values
    assert explainer._units._units  # compiled
    assert len(pickle.dumps(explainer)) < 2 * fresh  # the forest keeps its per-tree tables (model-sized)
    copy = pickle.loads(pickle.dumps(explainer))
    np.testing.assert_array_equal(copy.rsq(X, y), shares)
    np.testing.assert_array_equal(copy(X, y).values, local)
    assert explainer._units._units  # the original keeps its plans


@pytest.mark.parametrize("n_jobs", [2.5, "2", 0, True])
def test_n_jobs_is_checked_when_the_explainer_is_made(n_jobs):
    # 2.5 and "2" failed only at the first call, inside the budget or joblib, without naming n_jobs
    model = DecisionTreeRegressor(max_depth=2).fit(*make_data(seed=35, n=50)[:2])
    with pytest.raises(ValueError, match=r"n_jobs must be None or a non-zero integer"):
        RSquaredExplainer(model, n_jobs=n_jobs)


@pytest.mark.parametrize(
    ("budget", "error", "message"),
    [
        ("1", TypeError, "a number of GiB"),
        (True, TypeError, "a number of GiB"),
        (None, TypeError, "a number of GiB"),
        (float("nan"), ValueError, "finite"),
        (0.001, ValueError, "at least 1/64 GiB"),
    ],
)
def test_memory_budget_is_a_real_number_of_gib(budget, error, message):
    # the text "1" and True became 1 GiB without a word, where n_jobs refuses "2" and True
    model = DecisionTreeRegressor(max_depth=2).fit(*make_data(seed=35, n=50)[:2])
    with pytest.raises(error, match=rf"memory_budget must be .*{message}.*; got {budget!r}"):
        RSquaredExplainer(model, memory_budget=budget)
    assert RSquaredExplainer(model, memory_budget=np.float32(0.5)).memory_budget == 0.5


def test_joblibs_multiprocessing_backend_runs_the_blocks(frame_model):
    # joblib's own error: "does not support return_as=generator"
    from joblib import parallel_config

    _, frame, y, _ = frame_model
    deep = xgboost.XGBRegressor(n_estimators=8, max_depth=5, random_state=0).fit(frame, y)
    eager = replace(DEFAULT_TUNING, parallel_work=0.0)
    serial = RSquaredExplainer(deep).rsq(frame, y)
    with parallel_config(backend="multiprocessing", n_jobs=2):
        spread = RSquaredExplainer(deep)._set_engine(tuning=eager).rsq(frame, y)
    np.testing.assert_allclose(spread, serial, atol=1e-12, rtol=0)


def test_a_failed_run_leaves_no_progress_bar_open(frame_model, monkeypatch):
    # the bar stayed open: the next call's was drawn a row lower and the stale one again at exit
    from tqdm import tqdm

    from shap_rsq.engine import run

    model, frame, y, _ = frame_model

    def fail(*args, **kwargs):
        raise RuntimeError("a unit failed")

    monkeypatch.setattr(run, "_play_unit", fail)
    with pytest.raises(RuntimeError, match="a unit failed"):
        RSquaredExplainer(model, progress=True).rsq(frame, y)
    assert not list(tqdm._instances)


def test_a_killed_worker_is_reported_with_what_to_change():
    # loky's TerminatedWorkerError named no cause; the out-of-memory killer is the usual one
    import os

    from joblib import delayed

    from shap_rsq.engine import run

    tasks = [delayed(os._exit)(3), delayed(os._exit)(3)]
    with pytest.raises(RuntimeError, match=r"worker process was killed .* lower memory_budget or n_jobs"):
        run._run_parallel(tasks, [np.arange(0), np.arange(0)], [], 2, False)


@pytest.mark.parametrize("family", FAMILIES)
def test_an_explainer_of_every_family_pickles_and_gives_the_same_shares(family, fitted):
    # an xgboost.Booster's explainer held a local function (its predict) and could not be pickled,
    # as shap.TreeExplainer(booster) can
    model, X, y, _ = fitted(family)
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(X, y)
    copy = pickle.loads(pickle.dumps(explainer))
    np.testing.assert_array_equal(copy.rsq(X, y), shares)
