"""Boosters of other losses than squared error that split on categories: their second-order games
on the routing columns against subset enumeration, and D² as scikit-learn scores it."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from categorical_models import OBJECTIVE_CASES, objective_model, routed_second_order_oracle
from sklearn.metrics import d2_log_loss_score, d2_tweedie_score

from shap_rsq import RSquaredExplainer
from shap_rsq.exceptions import SecondOrderGapWarning


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = objective_model(name)
        return cache[name]

    return get


@pytest.mark.parametrize("case", list(OBJECTIVE_CASES))
def test_loss_reductions_match_subset_enumeration_on_the_routing_columns(models, case):
    model, X, y, w = models(case)
    explainer = RSquaredExplainer(model)
    assert explainer.model_info.second_order
    assert explainer.forests[0].routing is not None and explainer.forests[0].n_features > 5
    expected, expected_local, totals = routed_second_order_oracle(explainer, X, y, w)
    assert np.abs(expected).max() > 1e-3 * np.abs(totals).sum()  # the oracle itself is not trivially zero
    reductions = explainer.loss_reduction(X, y, sample_weight=w)
    local = explainer.loss_reduction(X, y, sample_weight=w, local=True)
    scale = np.abs(totals).sum()
    np.testing.assert_allclose(np.asarray(reductions), expected, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(np.asarray(local), expected_local, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(np.asarray(local).sum(axis=1), totals, rtol=0, atol=1e-9 * scale)


@pytest.mark.parametrize("case", list(OBJECTIVE_CASES))
def test_the_score_is_scikit_learns_d2_of_the_models_own_predictions(models, case):
    model, X, y, w = models(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecondOrderGapWarning)
        shares = RSquaredExplainer(model).rsq(X, y, sample_weight=w)
    if OBJECTIVE_CASES[case] == "count":
        power = 1.5 if case.endswith("Tweedie") else 1.0
        d2 = d2_tweedie_score(y, model.predict(X), sample_weight=w, power=power)
        assert shares.name == ("D² (Tweedie, power 1.5)" if power == 1.5 else "D² (Poisson)")
    else:
        d2 = d2_log_loss_score(y, model.predict_proba(X), sample_weight=w, labels=model.classes_)
        assert shares.name == "D² (log-loss)"
    assert shares.attrs["model_score"] == pytest.approx(d2, abs=2e-6)
    assert shares.attrs["gap"] == pytest.approx(shares.attrs["exact_change"] - shares.sum(), abs=1e-12)


@pytest.mark.parametrize("case", ["lightgbm:multiclass", "catboost:Logloss", "hist:three"])
def test_interaction_shares_match_subset_enumeration_on_the_routing_columns(models, case):
    model, X, y, w = models(case)
    explainer = RSquaredExplainer(model)
    expected = routed_second_order_oracle(explainer, X, y, w, interactions=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecondOrderGapWarning)
        shares = explainer.rsq(X, y, sample_weight=w)
        reductions = explainer.loss_reduction(X, y, sample_weight=w)
        matrix = np.asarray(explainer.rsq_interactions(X, y, sample_weight=w))
    null = float(np.sum(reductions) / np.sum(shares))  # D²'s denominator
    off = ~np.eye(X.shape[1], dtype=bool)
    assert np.abs(expected[off]).max() > 1e-4 * null  # some pair interacts
    np.testing.assert_allclose(2 * matrix[off], expected[off] / null, rtol=0, atol=1e-9)
    np.testing.assert_allclose(matrix.sum(axis=1), np.asarray(shares), rtol=0, atol=1e-12)


def _margin(model, X) -> np.ndarray:
    """The model's own margin: what its trees add up to (log-odds, softmax margins, log of the mean)."""
    library = type(model).__module__.split(".")[0]
    if library == "lightgbm":
        return model.predict(X, raw_score=True)
    if library == "xgboost":
        return model.predict(X, output_margin=True)
    if library == "catboost":
        return model.predict(X, prediction_type="RawFormulaVal")
    return model.decision_function(X) if hasattr(model, "decision_function") else np.log(model.predict(X))


@pytest.mark.parametrize("case", list(OBJECTIVE_CASES))
def test_shap_calls_without_y_add_up_to_the_models_margins(models, case):
    model, X, _, _ = models(case)
    explainer = RSquaredExplainer(model)
    margin = np.asarray(_margin(model, X), dtype=np.float64)
    values = np.asarray(explainer.shap_values(X))
    n_classes = 3 if OBJECTIVE_CASES[case] == "three" else 1
    assert values.shape == ((len(X), 5, 3) if n_classes == 3 else (len(X), 5))
    np.testing.assert_allclose(values.sum(axis=1) + explainer.expected_value, margin, rtol=0, atol=1e-5)
    explanation = explainer(X)
    np.testing.assert_allclose(explanation.values, values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(explanation.values.sum(axis=1) + explanation.base_values, margin, rtol=0, atol=1e-5)


@pytest.mark.parametrize("case", ["catboost:MultiClass", "lightgbm:binary", "xgboost:multi:softprob"])
def test_the_cli_decomposes_the_model_file_with_categories_read_from_csv_text(models, case, tmp_path):
    import json

    from shap_rsq.cli import main

    model, X, y, w = models(case)
    if case.startswith("catboost"):
        path = tmp_path / "model.cbm"
        model.save_model(str(path))
    elif case.startswith("lightgbm"):
        path = tmp_path / "model.txt"
        model.booster_.save_model(path)
    else:
        path = tmp_path / "model.json"
        model.save_model(path)
    X.assign(y=y, w=w).to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / "d2.json"
    argv = ["explain", "--model", path, "--data", tmp_path / "data.csv", "--target", "y", "--weight", "w"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecondOrderGapWarning)
        assert main([str(a) for a in [*argv, "--out", out]]) == 0
        expected = RSquaredExplainer(model).rsq(X, y, sample_weight=w)
    document = json.loads(out.read_text())
    np.testing.assert_allclose(pd.Series(document["rsq"])[expected.index], expected, rtol=0, atol=1e-9)
