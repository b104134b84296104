"""Shared data and one small fitted model per supported family."""

from __future__ import annotations

import os
import sys

# Under pytest-xdist each worker has about one core: OpenMP and BLAS threads of XGBoost, LightGBM,
# scikit-learn's histogram boosting and NumPy would compete with the other worker's and spin
# while they wait.  Set before those libraries load (the examples' and CLI's subprocesses
# inherit it); a value the user exported wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    threads = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, threads)

import numpy as np
import pytest
from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

N_ROWS, N_FEATURES = 120, 6

# The suite draws the same examples on every run, so that CI judges the code, not the draw.
# HYPOTHESIS_PROFILE=explore draws new ones; keep what it finds as an explicit test.
settings.register_profile("default", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def make_data(seed: int = 0, nan: bool = False, n: int = N_ROWS, p: int = N_FEATURES):
    """Rows with an interaction, a weak feature and a pure-noise column; optional NaN holes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = 2.0 * X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] + rng.normal(scale=0.5, size=n) + 3.0
    if nan:
        X[rng.random(X.shape) < 0.12] = np.nan
    w = rng.uniform(0.2, 3.0, size=n)
    return X, y, w


def deep_data(n: int = 90, p: int = 6, seed: int = 0, noise: float = 0.3):
    """Rows on which fully grown trees reuse features along their paths (a sine, a product and a
    square), with weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.5 * X[:, 4] ** 2 + rng.normal(scale=noise, size=n)
    return X, y, rng.uniform(0.5, 2.0, size=n)


def _sklearn(name):
    from sklearn import ensemble, tree

    return {
        "DecisionTreeRegressor": lambda: tree.DecisionTreeRegressor(max_depth=5, random_state=0),
        "ExtraTreeRegressor": lambda: tree.ExtraTreeRegressor(max_depth=5, random_state=0),
        "RandomForestRegressor": lambda: ensemble.RandomForestRegressor(8, max_depth=4, random_state=0),
        "ExtraTreesRegressor": lambda: ensemble.ExtraTreesRegressor(6, max_depth=4, random_state=0),
        "GradientBoostingRegressor": lambda: ensemble.GradientBoostingRegressor(
            n_estimators=12, max_depth=3, random_state=0
        ),
        "HistGradientBoostingRegressor": lambda: ensemble.HistGradientBoostingRegressor(
            max_iter=12, max_leaf_nodes=8, min_samples_leaf=5, random_state=0
        ),
    }[name]()


def _xgboost(booster: bool):
    xgboost = pytest.importorskip("xgboost")
    model = xgboost.XGBRegressor(n_estimators=12, max_depth=4, learning_rate=0.3, random_state=0)
    return ("booster", model) if booster else model


def _lightgbm(booster: bool):
    lightgbm = pytest.importorskip("lightgbm")
    model = lightgbm.LGBMRegressor(n_estimators=12, num_leaves=10, min_child_samples=5, verbose=-1, random_state=0)
    return ("booster", model) if booster else model


def _catboost(policy: str):
    catboost = pytest.importorskip("catboost")
    kwargs = {"max_leaves": 10} if policy == "Lossguide" else {"depth": 4}
    return catboost.CatBoostRegressor(
        iterations=12, grow_policy=policy, verbose=0, allow_writing_files=False, random_seed=0, thread_count=1, **kwargs
    )


FAMILIES = [
    "DecisionTreeRegressor",
    "ExtraTreeRegressor",
    "RandomForestRegressor",
    "ExtraTreesRegressor",
    "GradientBoostingRegressor",
    "HistGradientBoostingRegressor",
    "XGBRegressor",
    "xgboost.Booster",
    "LGBMRegressor",
    "lightgbm.Booster",
    "CatBoost-SymmetricTree",
    "CatBoost-Depthwise",
    "CatBoost-Lossguide",
]
# scikit-learn's GradientBoostingRegressor refuses NaN (extra trees route it since scikit-learn 1.6)
NO_NAN = {"GradientBoostingRegressor"}
BOOSTED = {
    "GradientBoostingRegressor",
    "HistGradientBoostingRegressor",
    "XGBRegressor",
    "xgboost.Booster",
    "LGBMRegressor",
    "lightgbm.Booster",
    "CatBoost-SymmetricTree",
}


def fit_family(family: str, X, y):
    """Fit a small model of ``family`` and return what the user would pass to the explainer."""
    if family == "XGBRegressor":
        return _xgboost(False).fit(X, y)
    if family == "xgboost.Booster":
        return _xgboost(True)[1].fit(X, y).get_booster()
    if family == "LGBMRegressor":
        return _lightgbm(False).fit(X, y)
    if family == "lightgbm.Booster":
        return _lightgbm(True)[1].fit(X, y).booster_
    if family.startswith("CatBoost-"):
        return _catboost(family.split("-")[1]).fit(X, y)
    return _sklearn(family).fit(X, y)


def predict(model, X):
    if type(model).__name__ == "Booster" and type(model).__module__.startswith("xgboost"):
        import xgboost

        return model.predict(xgboost.DMatrix(X, missing=np.nan))
    return model.predict(X)


@pytest.fixture(scope="session")
def fitted():
    """Cache of ``(family, nan) -> (model, X, y, w)`` so each model is fitted once per session."""
    cache: dict = {}

    def get(family: str, nan: bool = False):
        key = (family, nan)
        if key not in cache:
            X, y, w = make_data(seed=FAMILIES.index(family), nan=nan)
            cache[key] = (fit_family(family, X, y), X, y, w)
        return cache[key]

    return get


# Boosters of other losses than squared error, played through their second-order games: name ->
# (target kind, estimator).  Targets: "binary" 0/1, "three" three classes, "count" Poisson counts,
# "positive" Gamma-like values, "probability" in (0, 1).
def _objective_model(name: str):
    from sklearn import ensemble

    xgb = {"n_estimators": 5, "max_depth": 3, "learning_rate": 0.3, "random_state": 0}
    lgb = {"n_estimators": 5, "num_leaves": 6, "min_child_samples": 5, "verbose": -1, "random_state": 0}
    cat = {"iterations": 5, "depth": 3, "verbose": 0, "allow_writing_files": False, "random_seed": 0, "thread_count": 1}
    hgb = {"max_iter": 5, "max_leaf_nodes": 6, "min_samples_leaf": 5, "random_state": 0}
    if name.startswith("XGB"):
        xgboost = pytest.importorskip("xgboost")
        objective = name.split(":", 1)[1]
        if objective in ("binary:logistic", "multi:softprob", "multi:softmax"):
            return xgboost.XGBClassifier(objective=objective, **xgb)
        extra = {"tweedie_variance_power": 1.3} if objective == "reg:tweedie" else {}
        return xgboost.XGBRegressor(objective=objective, **xgb, **extra)
    if name.startswith("LGBM"):
        lightgbm = pytest.importorskip("lightgbm")
        objective = name.split(":", 1)[1]
        if objective in ("binary", "multiclass"):
            return lightgbm.LGBMClassifier(objective=objective, **lgb)
        extra = {"tweedie_variance_power": 1.6} if objective == "tweedie" else {}
        return lightgbm.LGBMRegressor(objective=objective, **lgb, **extra)
    if name.startswith("CatBoost"):
        catboost = pytest.importorskip("catboost")
        loss = name.split(":", 1)[1]
        if loss == "Logloss":
            return catboost.CatBoostClassifier(loss_function=loss, **cat)
        if loss == "Logloss-Lossguide":
            shape = {k: v for k, v in cat.items() if k != "depth"}
            return catboost.CatBoostClassifier(grow_policy="Lossguide", max_leaves=6, **shape)
        if loss.startswith("MultiClass"):
            policy = "Depthwise" if loss.endswith("Depthwise") else "SymmetricTree"
            return catboost.CatBoostClassifier(loss_function="MultiClass", grow_policy=policy, **cat)
        loss = "Tweedie:variance_power=1.5" if loss == "Tweedie" else loss
        return catboost.CatBoostRegressor(loss_function=loss, **cat)
    if name.startswith("HistGradientBoostingClassifier"):
        return ensemble.HistGradientBoostingClassifier(**hgb)
    if name.startswith("HistGradientBoostingRegressor"):
        return ensemble.HistGradientBoostingRegressor(loss=name.split(":")[1], **hgb)
    return ensemble.GradientBoostingClassifier(n_estimators=5, max_depth=3, random_state=0)


OBJECTIVES = {
    "XGB:binary:logistic": "binary",
    "XGB:multi:softprob": "three",
    "XGB:multi:softmax": "three",
    "XGB:count:poisson": "count",
    "XGB:reg:gamma": "positive",
    "XGB:reg:tweedie": "count",
    "LGBM:binary": "binary",
    "LGBM:multiclass": "three",
    "LGBM:poisson": "count",
    "LGBM:gamma": "positive",
    "LGBM:tweedie": "count",
    "LGBM:cross_entropy": "probability",
    "CatBoost:Logloss": "binary",
    "CatBoost:Logloss-Lossguide": "binary",
    "CatBoost:MultiClass": "three",
    "CatBoost:MultiClass-Depthwise": "three",
    "CatBoost:Poisson": "count",
    "CatBoost:Tweedie": "count",
    "HistGradientBoostingClassifier:binary": "binary",
    "HistGradientBoostingClassifier:three": "three",
    "HistGradientBoostingRegressor:poisson": "count",
    "HistGradientBoostingRegressor:gamma": "positive",
    "GradientBoostingClassifier:binary": "binary",
    "GradientBoostingClassifier:three": "three",
}
NO_NAN_OBJECTIVES = {"GradientBoostingClassifier:binary", "GradientBoostingClassifier:three"}


def objective_target(kind: str, y: np.ndarray, X: np.ndarray, seed: int = 0) -> np.ndarray:
    """A target of ``kind`` that depends on the rows as ``make_data``'s ``y`` does."""
    rng = np.random.default_rng(seed)
    centred = (y - y.mean()) / y.std()
    if kind == "binary":
        return (centred + rng.normal(scale=0.5, size=len(y)) > 0).astype(int)
    if kind == "three":
        return np.digitize(centred + rng.normal(scale=0.5, size=len(y)), [-0.5, 0.5])
    if kind == "count":
        return rng.poisson(np.exp(0.6 * centred)).astype(float)
    if kind == "positive":
        return np.exp(0.5 * centred) * rng.gamma(2.0, 0.5, size=len(y))
    return 1.0 / (1.0 + np.exp(-centred))  # probability


@pytest.fixture(scope="session")
def fitted_objective():
    """Cache of ``(objective, nan) -> (model, X, y, w)`` for the boosters of :data:`OBJECTIVES`."""
    cache: dict = {}

    def get(name: str, nan: bool = False):
        key = (name, nan)
        if key not in cache:
            X, y, w = make_data(seed=list(OBJECTIVES).index(name), nan=nan)
            target = objective_target(OBJECTIVES[name], y, X, seed=1)
            cache[key] = (_objective_model(name).fit(X, target), X, target, w)
        return cache[key]

    return get


# SHAP_RSQ_TEST_CPU=FILE appends each test's CPU seconds (user + system of this process, of the
# subprocesses it waited for and of its live worker processes, which joblib keeps between calls)
# to FILE, one "seconds<TAB>test id" line: wall times lie on a shared machine, CPU times compare
# runs. Off unless asked for; needs psutil (the bench extra).
_CPU_LOG = os.environ.get("SHAP_RSQ_TEST_CPU")

if _CPU_LOG:
    import resource

    import psutil

    def _cpu_seconds() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
        for child in psutil.Process().children(recursive=True):
            try:
                times = child.cpu_times()
            except psutil.Error:  # it ended while being read
                continue
            total += times.user + times.system + times.children_user + times.children_system
        return total

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        start = _cpu_seconds()
        yield
        with open(_CPU_LOG, "a") as log:
            log.write(f"{_cpu_seconds() - start:.3f}\t{item.nodeid}\n")


@pytest.fixture
def lca_routing(monkeypatch):
    """Deep trees keep the LCA kernel (and its hybrids) instead of their game on every subset:
    for the tests of that kernel's own blocks, pieces, pairs and budgets, on trees of few
    features that would otherwise take :class:`~shap_rsq.kernels.interactions.subset_values.SubsetUnit`."""
    from shap_rsq.engine import routing

    monkeypatch.setattr(routing, "takes_subset_values", lambda *args, **kwargs: False)


def walked_bytes(record) -> int:
    """Bytes of every array in a record, walked field by field through nested records, tuples and
    lists: what a plan that counts its own arrays (``nbytes``) must find."""
    from dataclasses import fields, is_dataclass

    if isinstance(record, np.ndarray):
        return record.nbytes
    if isinstance(record, tuple | list):
        return sum(walked_bytes(part) for part in record)
    if is_dataclass(record):
        return sum(walked_bytes(getattr(record, f.name)) for f in fields(record))
    return 0
