"""RSquaredSelector's statistics: out-of-fold shares, two-stage screening, standard errors and the bootstrap."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.tree import DecisionTreeRegressor

import shap_rsq.selector._screening as screening
from shap_rsq import RSquaredExplainer, RSquaredSelector


def noisy_data(n: int, p: int = 12, seed: int = 0):
    """Two signal columns, ``p - 2`` pure-noise columns and a noisy target."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + 0.7 * X[:, 1] + rng.normal(size=n)
    return X, y


def blocks_data(seed: int = 0, n: int = 200, p: int = 1000, block: int = 20, rho: float = 0.5, k: int = 6):
    """Genes in correlated blocks; ``k`` planted genes in distinct blocks with linear and on/off effects."""
    rng = np.random.default_rng(seed)
    factors = rng.normal(size=(n, p // block))
    X = np.sqrt(rho) * np.repeat(factors, block, axis=1) + np.sqrt(1 - rho) * rng.normal(size=(n, p))
    planted = rng.choice(p // block, size=k, replace=False) * block + rng.integers(0, block, size=k)
    g = X[:, planted]
    y = g[:, :3] @ [1.0, 0.9, 0.8] + 2.0 * (g[:, 3:] > 0) @ [1.0, 0.9, 0.8] + rng.normal(scale=0.7, size=n)
    return X, y, planted


def deep_tree() -> DecisionTreeRegressor:
    return DecisionTreeRegressor(max_depth=6, random_state=0)


# ------------------------------------------------------------------------------------------------ cross-validation


@pytest.mark.parametrize("seed", [0, 1])
def test_out_of_fold_shares_do_not_credit_noise(seed):
    X, y = noisy_data(150, seed=seed)
    inside = RSquaredSelector(deep_tree()).fit(X, y).feature_rsq_
    held_out = RSquaredSelector(deep_tree(), cv=KFold(5, shuffle=True, random_state=0)).fit(X, y).feature_rsq_
    # the overfitted tree gives the ten noise columns a real share in sample ...
    assert inside[2:].sum() > 0.05
    # ... which out of fold turns into nothing or a loss, while the signal columns stay on top
    assert held_out[2:].sum() < 0.0
    assert held_out[2:].max() < 0.02
    assert set(np.argsort(-held_out)[:2]) == {0, 1}


def test_out_of_fold_pools_numerators_and_sums_of_squares():
    X, y = noisy_data(90, p=5, seed=3)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    folds = list(KFold(3, shuffle=True, random_state=1).split(X))
    numerator = np.zeros(X.shape[1])
    for train, test in folds:
        model = clone(deep_tree()).fit(X[train], y[train], sample_weight=w[train])
        sst = np.sum(w[test] * (y[test] - np.average(y[test], weights=w[test])) ** 2)
        numerator += RSquaredExplainer(model).rsq(X[test], y[test], w[test]) * sst
    # the pooled sum of squares is about the mean of all held-out rows, as r2_score of out-of-fold
    # predictions takes it (the folds partition the rows: about the mean of y)
    total = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    selector = RSquaredSelector(deep_tree(), cv=folds).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(selector.feature_rsq_, numerator / total, atol=1e-12)
    # estimator_ is still fitted on all rows, as in SelectFromModel
    np.testing.assert_array_equal(selector.estimator_.predict(X), deep_tree().fit(X, y, sample_weight=w).predict(X))


def test_a_held_out_fold_with_a_constant_target_still_counts():
    X, y = noisy_data(60, p=4, seed=6)
    folds = [(np.arange(20, 60), np.arange(20)), (np.arange(20), np.arange(20, 60))]
    y[:20] = 1.5  # the first held-out fold has no variance of its own
    selector = RSquaredSelector(deep_tree(), cv=folds).fit(X, y)
    # efficiency per row: sum_j a_ij = (y_i - E f)^2 - (y_i - f(x_i))^2, E f the model's mean under its cover
    gains, total = 0.0, 0.0
    for train, test in folds:
        model = deep_tree().fit(X[train], y[train])
        mean = RSquaredExplainer(model).expected_value
        gains += np.sum((y[test] - mean) ** 2 - (y[test] - model.predict(X[test])) ** 2)
    total = np.sum((y - y.mean()) ** 2)
    assert selector.feature_rsq_.sum() == pytest.approx(gains / total, abs=1e-10)


def test_out_of_fold_shares_do_not_grow_with_the_number_of_folds():
    # about each fold's own mean, folds of few rows shrank the sums of squares and not the
    # numerators: 100 folds of 2 rows gave one feature a share of 1.14 and a total of 1.64,
    # against an out-of-fold R^2 of 0.73
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    y = 3 * X[:, 0] + 2 * X[:, 1] + X[:, 2] + rng.normal(scale=0.5, size=200)
    tree = DecisionTreeRegressor(max_depth=4, random_state=0)
    totals = []
    for k in (5, 20, 100):
        cv = KFold(k, shuffle=True, random_state=0)
        shares = RSquaredSelector(tree, cv=cv).fit(X, y).feature_rsq_
        out_of_fold = r2_score(y, cross_val_predict(tree, X, y, cv=cv))
        # the shares add up to the pooled reduction of the squared error from the fold models' means
        assert abs(shares.sum() - out_of_fold) < 0.03
        assert shares.max() < 0.6
        totals.append(shares.sum())
    assert np.ptp(totals) < 0.05


def test_out_of_fold_is_the_same_in_parallel():
    X, y = noisy_data(80, p=4)
    serial = RSquaredSelector(deep_tree(), cv=4, uncertainty="se").fit(X, y)
    parallel = RSquaredSelector(deep_tree(), cv=4, uncertainty="se", n_jobs=2).fit(X, y)
    np.testing.assert_allclose(parallel.feature_rsq_, serial.feature_rsq_, atol=1e-12)
    np.testing.assert_allclose(parallel.feature_rsq_se_, serial.feature_rsq_se_, atol=1e-12)


# ------------------------------------------------------------------------------------------------ two-stage screen


def test_two_stage_screen_reports_both_rounds():
    X, y = noisy_data(120, p=10)
    names = [f"c{j}" for j in range(10)]
    frame = pd.DataFrame(X, columns=names)
    selector = RSquaredSelector(deep_tree(), screen=4, threshold=-np.inf).fit(frame, y)
    first = RSquaredExplainer(deep_tree().fit(frame, y)).rsq(frame, y).to_numpy()
    np.testing.assert_allclose(selector.screen_rsq_, first, atol=1e-12)
    kept = np.sort(np.argsort(-first, kind="mergesort")[:4])
    np.testing.assert_array_equal(np.flatnonzero(selector.screen_support_), kept)
    # round two: a model refitted on the four columns, decomposed again; the others get 0
    assert list(selector.estimator_.feature_names_in_) == [names[j] for j in kept]
    second = RSquaredExplainer(selector.estimator_).rsq(frame.iloc[:, kept], y).to_numpy()
    np.testing.assert_allclose(selector.feature_rsq_[kept], second, atol=1e-12)
    assert np.all(selector.feature_rsq_[~selector.screen_support_] == 0)
    # -inf keeps every column round two saw; the screen already dropped the others
    np.testing.assert_array_equal(selector.get_support(), selector.screen_support_)
    assert list(selector.summary().columns) == ["rsq", "screen_rsq", "selected"]


def test_screen_at_least_p_is_one_round():
    X, y = noisy_data(60, p=5)
    selector = RSquaredSelector(deep_tree(), screen=5).fit(X, y)
    assert not hasattr(selector, "screen_rsq_") and selector.estimator_.n_features_in_ == 5


def test_planted_genes_are_recovered_by_a_two_stage_screen():
    X, y, planted = blocks_data()
    booster = GradientBoostingRegressor(n_estimators=80, max_depth=2, max_features=0.2, random_state=0)
    selector = RSquaredSelector(booster, screen=40, cv=3, max_features=6, threshold=-np.inf).fit(X, y)
    assert np.isin(planted, np.flatnonzero(selector.screen_support_)).all()  # stage 1 keeps all six
    assert np.isin(planted, selector.get_support(indices=True)).sum() >= 5  # stage 2's top six: recall >= 5/6


# ------------------------------------------------------------------------------------------------ standard errors


def delta_se(model, X, y):
    """The delta-method formula written out from the explainer's per-row shares."""
    s = (y - y.mean()) ** 2
    a = RSquaredExplainer(model)(X, y).values * s.sum()
    d = a - a.sum(0) / s.sum() * s[:, None]
    return np.sqrt(len(y) / (len(y) - 1) * (d**2).sum(0)) / s.sum()


def test_standard_error_formula_and_zero_for_unused_features():
    X, y = noisy_data(150, p=8)
    selector = RSquaredSelector(DecisionTreeRegressor(max_depth=3, random_state=0), uncertainty="se").fit(X, y)
    np.testing.assert_allclose(selector.feature_rsq_se_, delta_se(selector.estimator_, X, y), rtol=1e-9, atol=1e-15)
    unused = selector.feature_rsq_ == 0
    assert unused.any() and np.all(selector.feature_rsq_se_[unused] == 0)
    assert np.all(selector.feature_rsq_se_[~unused] > 0)


def test_standard_error_matches_the_spread_over_new_samples_and_shrinks_with_n():
    X, y = noisy_data(400, p=4, seed=5)
    model = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    fresh = [noisy_data(200, p=4, seed=100 + r) for r in range(150)]
    spread = np.std([RSquaredExplainer(model).rsq(Xr, yr) for Xr, yr in fresh], axis=0, ddof=1)
    selector = RSquaredSelector(model, prefit=True, uncertainty="se")
    predicted = np.mean([selector.fit(Xr, yr).feature_rsq_se_ for Xr, yr in fresh[:20]], axis=0)
    ratio = predicted[:2] / spread[:2]
    assert np.all((ratio > 0.75) & (ratio < 1.33)), ratio
    small = selector.fit(*noisy_data(300, p=4, seed=7)).feature_rsq_se_[:2]
    large = selector.fit(*noisy_data(2700, p=4, seed=8)).feature_rsq_se_[:2]
    assert np.all((small / large > 2.0) & (small / large < 4.5)), small / large  # sqrt(9) = 3


def test_row_blocks_give_the_same_standard_errors():
    X, y = noisy_data(101, p=6, seed=2)
    y = (y > 0).astype(float)  # two-row blocks of a binary target are often constant
    w = np.random.default_rng(1).uniform(0.0, 2.0, size=len(y))
    w[:4] = 0.0
    model = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    whole = screening.evaluate(model, X, y, w, per_row=True)
    blocked = screening.evaluate(model, X, y, w, per_row=True, block_entries=2 * X.shape[1])
    np.testing.assert_allclose(blocked.shares, whole.shares, atol=1e-12)
    np.testing.assert_allclose(blocked.standard_errors(), whole.standard_errors(), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(blocked.shares, RSquaredExplainer(model).rsq(X, y, w), atol=1e-12)


# ------------------------------------------------------------------------------------------------ bootstrap


def test_bootstrap_is_reproducible_and_ranks_stable_features_first():
    X, y = noisy_data(120, p=6)
    params = dict(uncertainty="bootstrap", n_bootstrap=12, random_state=0, threshold="mean")
    selector = RSquaredSelector(DecisionTreeRegressor(max_depth=3, random_state=0), **params).fit(X, y)
    assert selector.bootstrap_rsq_.shape == (12, 6)
    np.testing.assert_allclose(selector.feature_rsq_se_, selector.bootstrap_rsq_.std(axis=0, ddof=1))
    again = RSquaredSelector(DecisionTreeRegressor(max_depth=3, random_state=0), n_jobs=2, **params).fit(X, y)
    np.testing.assert_array_equal(again.bootstrap_rsq_, selector.bootstrap_rsq_)
    frequency = selector.selection_frequency_
    assert frequency[0] == 1.0 and frequency[1] == 1.0 and frequency[2:].max() < 0.5
    assert list(selector.summary().columns) == ["rsq", "se", "selection_frequency", "selected"]
    assert not hasattr(RSquaredSelector(DecisionTreeRegressor()).fit(X, y), "selection_frequency_")


def test_out_of_bag_bootstrap_does_not_credit_noise():
    X, y = noisy_data(120, p=8, seed=4)
    params = dict(uncertainty="bootstrap", n_bootstrap=8, random_state=0)
    inside = RSquaredSelector(deep_tree(), **params).fit(X, y).bootstrap_rsq_
    held_out = RSquaredSelector(deep_tree(), cv=3, **params).fit(X, y).bootstrap_rsq_
    assert inside[:, 2:].sum(axis=1).mean() > 0.05
    assert held_out[:, 2:].sum(axis=1).mean() < 0.0


@pytest.mark.parametrize("cv", [None, 3])
def test_bootstrap_replicates_are_the_procedure_on_the_drawn_rows(cv):
    """Each replicate screens and refits on its draw, then is decomposed on the draw (or its out-of-bag rows)."""
    X, y = noisy_data(80, p=8, seed=9)
    params = dict(screen=4, uncertainty="bootstrap", n_bootstrap=3, random_state=0, cv=cv)
    selector = RSquaredSelector(deep_tree(), **params).fit(X, y)
    draws = np.random.RandomState(0)
    for replicate in selector.bootstrap_rsq_:
        rows = draws.randint(0, len(y), size=len(y))
        first = deep_tree().fit(X[rows], y[rows])
        kept = np.sort(np.argsort(-RSquaredExplainer(first).rsq(X[rows], y[rows]), kind="mergesort")[:4])
        model = deep_tree().fit(X[rows][:, kept], y[rows])
        held = rows if cv is None else np.setdiff1d(np.arange(len(y)), rows)
        expected = np.zeros(X.shape[1])
        expected[kept] = RSquaredExplainer(model).rsq(X[held][:, kept], y[held])
        np.testing.assert_allclose(replicate, expected, atol=1e-12)


@pytest.mark.parametrize("cv", [None, 3])
def test_bootstrap_holds_one_resample_of_wide_data_at_a_time(cv):
    """A replicate copies X's rows once (the resample); the rows it is decomposed on add no second copy."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3000)).astype(np.float32)  # float32: the tree fits on it without a copy of its own
    y = X[:, 0] + rng.normal(size=200)
    selector = RSquaredSelector(
        DecisionTreeRegressor(max_depth=2, random_state=0), uncertainty="bootstrap", n_bootstrap=2, cv=cv
    )
    tracemalloc.start()
    try:
        selector.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * X.nbytes, peak / X.nbytes


def test_columns_the_screen_dropped_are_never_selected():
    # screened-out columns have share 0 and are not in estimator_; out of fold, screened-in noise
    # columns have negative shares, so max_features with threshold=-inf picked columns 2 and 3,
    # which the final model never saw
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 8))
    y = 2 * X[:, 0] + rng.normal(size=150)
    tree = DecisionTreeRegressor(max_depth=6, random_state=0)
    selector = RSquaredSelector(tree, screen=4, cv=5, max_features=6, threshold=-np.inf).fit(X, y)
    assert np.any(selector.feature_rsq_[selector.screen_support_] < 0)  # the case: negative kept shares
    np.testing.assert_array_equal(selector.get_support(), selector.screen_support_)
    assert selector.transform(X).shape[1] == selector.estimator_.n_features_in_
    # the cut-off is still over every share: 'mean' counts the screened-out zeros
    by_mean = RSquaredSelector(tree, screen=4, cv=5).fit(X, y)
    keep = by_mean.screen_support_ & (by_mean.feature_rsq_ >= by_mean.feature_rsq_.mean())
    np.testing.assert_array_equal(by_mean.get_support(), keep)


def test_a_bootstrap_replicate_selects_only_the_columns_its_screen_kept():
    # each replicate screens anew: its dropped columns have share 0 and, as in the fit, are not
    # selected, even by a threshold of -inf (they counted as selected in selection_frequency_)
    X, y = noisy_data(120, p=8, seed=2)
    options = {"screen": 3, "uncertainty": "bootstrap", "n_bootstrap": 6, "random_state": 0}
    selector = RSquaredSelector(deep_tree(), threshold=-np.inf, **options).fit(X, y)
    kept = selector.bootstrap_screen_support_
    assert kept.shape == (6, 8) and np.all(kept.sum(axis=1) == 3)
    assert np.all(selector.bootstrap_rsq_[~kept] == 0)
    np.testing.assert_allclose(selector.selection_frequency_, kept.mean(axis=0), atol=1e-12)
    assert not hasattr(
        RSquaredSelector(deep_tree(), uncertainty="bootstrap", n_bootstrap=3).fit(X, y), "bootstrap_screen_support_"
    )
