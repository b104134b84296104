"""Scale-out: dask arrays of rows and joblib's dask backend on a local cluster (optional ``dask`` extra)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import make_data
from sklearn.ensemble import HistGradientBoostingRegressor

from shap_rsq import RSquaredExplainer

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def cluster_client():
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def problem():
    X, y, w = make_data(seed=51, n=900, nan=True)
    model = HistGradientBoostingRegressor(max_iter=30, max_leaf_nodes=12, random_state=0).fit(X, y)
    return model, X, y, w


def test_rsq_on_a_dask_array_equals_rsq_in_memory(cluster_client, problem):
    model, X, y, w = problem
    explainer = RSquaredExplainer(model)
    expected = explainer.rsq(X, y, sample_weight=w)
    lazy = da.from_array(X, chunks=(200, 3))  # uneven row blocks, columns split too
    shares = explainer.rsq(lazy, da.from_array(y, chunks=150), sample_weight=w)
    np.testing.assert_allclose(shares, expected, atol=1e-12, rtol=0)
    assert len(cluster_client.scheduler_info()["workers"]) == 2


def test_dask_array_errors_name_the_problem(cluster_client, problem):
    model, X, y, _ = problem
    explainer = RSquaredExplainer(model)
    with pytest.raises(ValueError, match="the model was fitted with 6 features"):
        explainer.rsq(da.from_array(X[:, :5], chunks=200), y)
    with pytest.raises(ValueError, match="y is constant"):
        explainer.rsq(da.from_array(X, chunks=200), np.ones(len(y)))
    with pytest.raises(ValueError, match="y is constant"):  # a mean one rounding off the constant
        explainer.rsq(da.from_array(X, chunks=200), np.full(len(y), 0.1))
    with pytest.raises(ValueError, match="y has 899 values"):
        explainer.rsq(da.from_array(X, chunks=200), y[:-1])


def test_joblib_dask_backend_spreads_the_work_over_the_cluster(cluster_client, problem):
    from dataclasses import replace

    from joblib import parallel_config

    from shap_rsq.tuning import DEFAULT_TUNING

    model, X, y, w = problem
    serial = RSquaredExplainer(model).rsq(X, y, sample_weight=w)
    eager = replace(DEFAULT_TUNING, parallel_work=0.0)  # a small model, split as a large one would be
    with distributed.get_task_stream(cluster_client) as stream, parallel_config(backend="dask"):
        spread = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=eager).rsq(X, y, sample_weight=w)
    np.testing.assert_allclose(spread, serial, atol=1e-12, rtol=0)
    assert len({task["worker"] for task in stream.data}) == 2


def _bad_inputs(y, w):
    nan_w, inf_w = w.copy(), w.copy()
    nan_w[3], inf_w[5] = np.nan, np.inf
    negative = w.copy()
    negative[7] = -1.0
    return [
        ("NaN weight", y, nan_w),
        ("infinite weight", y, inf_w),
        ("negative weight", y, negative),
        ("all-zero weights", y, np.zeros_like(w)),
        ("short weights", y, w[:-1]),
        ("2-D weights", y, np.column_stack([w, w])),
        ("two targets", np.column_stack([y, y]), None),
        ("text target", y.astype(str), None),
        ("NaN target", np.where(np.arange(len(y)) == 4, np.nan, y), None),
        ("NaN weight for every row", y, np.nan),
        ("negative weight for every row", y, -2.0),
        ("text weight", y, "heavy"),
    ]


@pytest.mark.parametrize("case", range(12))
@pytest.mark.parametrize("lazy_columns", [False, True])
def test_dask_inputs_are_refused_with_the_in_memory_message(problem, case, lazy_columns):
    model, X, y, w = problem
    explainer = RSquaredExplainer(model)
    name, target, weights = _bad_inputs(y, w)[case]
    with pytest.raises(ValueError) as in_memory:
        explainer.rsq(X, target, sample_weight=weights)
    if lazy_columns:
        target = da.from_array(target, chunks=250)
        weights = weights if weights is None or np.ndim(weights) == 0 else da.from_array(weights, chunks=250)
    with pytest.raises(ValueError) as lazy:
        explainer.rsq(da.from_array(X, chunks=(200, 6)), target, sample_weight=weights)
    assert str(lazy.value) == str(in_memory.value), name


def test_one_weight_for_every_row_changes_nothing(problem):
    # scikit-learn takes a number as the weight of every row; narwhals refused it with its own error
    model, X, y, _ = problem
    explainer = RSquaredExplainer(model)
    expected = explainer.rsq(X, y)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=2.5), expected, atol=1e-12)
    np.testing.assert_allclose(
        explainer.rsq(da.from_array(X, chunks=(200, 6)), y, sample_weight=3), expected, atol=1e-12
    )
    np.testing.assert_allclose(explainer(X, y, sample_weight=0.5).values, explainer(X, y).values, atol=1e-12)


def test_dask_frames_unknown_chunks_and_odd_columns_are_handled_by_name(problem):
    # a dask DataFrame died on "no attribute 'dtype'", unknown chunk sizes read as "X has nan rows",
    # a dask Series y raised dask's own TypeError, complex X went through with a ComplexWarning and
    # (n, 1) weights were accepted here but refused in memory
    dd = pytest.importorskip("dask.dataframe")
    model, X, y, w = problem
    explainer = RSquaredExplainer(model)
    rows = da.from_array(X, chunks=(200, 6))
    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]), npartitions=2)
    with pytest.raises(ValueError, match=r"X is a dask DataFrame; pass a dask array .*to_dask_array\(lengths=True\)"):
        explainer.rsq(frame, y)
    with pytest.raises(ValueError, match=r"X has unknown chunk sizes .*compute_chunk_sizes"):
        explainer.rsq(frame.to_dask_array(), y)
    series = dd.from_pandas(pd.Series(y), npartitions=3)
    np.testing.assert_allclose(explainer.rsq(rows, series), explainer.rsq(X, y), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="X holds complex numbers"):
        explainer.rsq(rows.astype(complex), y)
    with pytest.raises(ValueError, match=r"sample_weight must be 1-D"):
        explainer.rsq(rows, y, sample_weight=w[:, None])


def test_a_model_rounded_more_coarsely_than_y_varies_is_refused_on_dask_too():
    # on y + 1e12 XGBoost's trees learn nothing and its float32 constant sits 4,000 from the trees'
    # exact base; in memory this is refused against y's range, on dask it was accepted (R² -0.0016
    # reported against the model's -4e6)
    xgboost = pytest.importorskip("xgboost")
    from shap_rsq import UnsupportedModelError

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=300) + 1e12
    model = xgboost.XGBRegressor(n_estimators=8, max_depth=3, n_jobs=1).fit(X, y)
    for rows, target in ((X, y), (da.from_array(X, chunks=(100, 4)), da.from_array(y, chunks=100))):
        with pytest.raises(UnsupportedModelError, match="rounded in float32 more coarsely than they vary"):
            RSquaredExplainer(model).rsq(rows, target)


@pytest.fixture(scope="module")
def classes():
    from sklearn.datasets import make_classification

    X, y = make_classification(900, 8, n_informative=4, n_classes=3, random_state=3)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    return X, np.array(["setosa", "versicolor", "virginica"])[y], w


def _boosted(kind: str, X, labels):
    import lightgbm
    import xgboost

    if kind == "xgboost binary":
        return xgboost.XGBClassifier(n_estimators=30, max_depth=3).fit(X, labels == "setosa"), labels == "setosa"
    if kind == "lightgbm softmax":
        return lightgbm.LGBMClassifier(n_estimators=20, num_leaves=8, verbose=-1).fit(X, labels), labels
    counts = np.searchsorted(["setosa", "versicolor", "virginica"], labels).astype(float)
    return xgboost.XGBRegressor(objective="count:poisson", n_estimators=30, max_depth=3).fit(X, counts), counts


@pytest.mark.parametrize("kind", ["xgboost binary", "lightgbm softmax", "xgboost poisson"])
def test_boosters_of_other_losses_take_dask_rows_block_by_block(cluster_client, classes, kind):
    # their second-order games need the mean of y over all rows (D²'s denominator) before any block
    # plays: the shares, the exact D² beside them and the gap must not depend on the blocks
    X, labels, w = classes
    model, target = _boosted(kind, X, labels)
    explainer = RSquaredExplainer(model)
    expected = explainer.rsq(pd.DataFrame(X), target, sample_weight=w)
    lazy = da.from_array(X, chunks=(200, 3))
    lazy_target = da.from_array(np.asarray(target), chunks=150)
    shares = explainer.rsq(lazy, lazy_target, sample_weight=da.from_array(w, chunks=300))
    np.testing.assert_allclose(shares, expected.to_numpy(), atol=1e-12, rtol=0)
    _, _, summary = explainer._second_order_shares(lazy, lazy_target, w)
    for name, value in summary.attrs().items():
        if name != "score":
            assert value == pytest.approx(expected.attrs[name], abs=1e-12), name


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("multioutput", [None, "raw_values"])
def test_forest_classifiers_take_dask_rows_block_by_block(cluster_client, classes, n_classes, multioutput):
    from sklearn.ensemble import RandomForestClassifier

    X, labels, w = classes
    y = labels if n_classes == 3 else np.where(labels == "setosa", "setosa", "other")
    model = RandomForestClassifier(20, max_depth=5, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    expected = explainer.rsq(X, y, sample_weight=w, multioutput=multioutput)
    shares = explainer.rsq(da.from_array(X, chunks=(250, 8)), da.from_array(y, chunks=250), w, multioutput=multioutput)
    np.testing.assert_allclose(shares, expected, atol=1e-12, rtol=0)


def test_dask_rows_of_classifiers_are_refused_with_the_in_memory_message(cluster_client, classes):
    from sklearn.ensemble import RandomForestClassifier

    # the unknown labels sit in the second block only: its rows are named from the array's first
    X, labels, _ = classes
    lazy = da.from_array(X, chunks=(300, 8))
    first = np.arange(len(labels)) < 5
    unknown = np.where((np.arange(len(labels)) >= 400) & (labels == "setosa"), "rose", labels)
    for model, bad in [
        (_boosted("lightgbm softmax", X, labels)[0], unknown),
        (_boosted("xgboost poisson", X, labels)[0], np.where(first, -1.0, 1.0)),
        (RandomForestClassifier(5, random_state=0).fit(X, labels), unknown),
    ]:
        explainer = RSquaredExplainer(model)
        with pytest.raises(ValueError) as in_memory:
            explainer.rsq(X, bad)
        with pytest.raises(ValueError) as lazy_error:
            explainer.rsq(lazy, da.from_array(bad, chunks=300))
        assert str(lazy_error.value) == str(in_memory.value)
    constant = _boosted("xgboost binary", X, labels)[0]
    with pytest.raises(ValueError, match="y is constant"):
        RSquaredExplainer(constant).rsq(lazy, np.ones(len(labels), dtype=bool))


@pytest.mark.parametrize("multioutput", [None, "raw_values", "variance_weighted"])
def test_multi_output_regressors_and_indicators_take_dask_rows_block_by_block(cluster_client, classes, multioutput):
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.preprocessing import label_binarize

    X, labels, w = classes
    lazy = da.from_array(X, chunks=(300, 8))
    Y = np.column_stack([X[:, 0] + X[:, 1], X[:, 2] * X[:, 3]])
    regressor = RandomForestRegressor(10, max_depth=5, random_state=0).fit(X, Y)
    forest = RandomForestClassifier(10, max_depth=5, random_state=0).fit(X, labels)
    indicator = label_binarize(labels, classes=forest.classes_)
    booster = _boosted("lightgbm softmax", X, labels)[0]
    cases = [(regressor, Y), (forest, indicator)] + ([(booster, indicator)] if multioutput is None else [])
    for model, target in cases:
        explainer = RSquaredExplainer(model)
        expected = np.asarray(explainer.rsq(X, target, sample_weight=w, multioutput=multioutput))
        lazy_target = da.from_array(target, chunks=(250, 1))  # columns in chunks too: every block gets all
        shares = explainer.rsq(lazy, lazy_target, sample_weight=w, multioutput=multioutput)
        np.testing.assert_allclose(shares, expected, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="y has 899 rows but X has 900 rows"):
        RSquaredExplainer(regressor).rsq(lazy, Y[:-1])


def test_groups_of_columns_play_as_one_on_dask_rows_too(cluster_client, classes):
    from sklearn.ensemble import RandomForestClassifier

    X, labels, w = classes
    groups = {"first two": [0, 1], "third": [2]}
    for model, target in [
        (_boosted("lightgbm softmax", X, labels)[0], labels),
        (RandomForestClassifier(10, max_depth=4, random_state=0).fit(X, labels), labels),
    ]:
        explainer = RSquaredExplainer(model)
        expected = np.asarray(explainer.rsq(X, target, sample_weight=w, groups=groups))
        lazy = da.from_array(X, chunks=(300, 8))
        shares = explainer.rsq(lazy, da.from_array(target, chunks=300), sample_weight=w, groups=groups)
        assert shares.shape == (len(groups) + X.shape[1] - 3,)
        np.testing.assert_allclose(shares, expected, atol=1e-12, rtol=0)
