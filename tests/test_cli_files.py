"""What the command line reads from model and data files: the same model and rows as the API.

Each case here was read differently by the command line than by the API on the same file, with
exit 0: the shares were those of another model or of other columns.
"""

from __future__ import annotations

import json

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier

from shap_rsq import RSquaredExplainer
from shap_rsq.cli import main


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _data(seed: int = 0, n: int = 300):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["x0", "x1", "x2", "x3"])
    y = pd.Series(2 * X.x0 + X.x1 * X.x2 + rng.normal(scale=0.5, size=n), name="y")
    return X, y


def _explain(model_path, data_path, out, capsys, *extra):
    argv = ["explain", "--model", model_path, "--data", data_path, "--target", "y", "--out", out, *extra]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    return json.loads(out.read_text()), err


def test_an_xgboost_file_saved_after_early_stopping_is_explained_up_to_its_best_round(tmp_path, capfd):
    # a bare Booster predicts with every round: model R² 0.780 where the saved estimator's is 0.788;
    # capfd, not capsys: the note was written while the native libraries' stderr was silenced
    capsys = capfd
    xgboost = pytest.importorskip("xgboost")
    X, y = _data()
    model = xgboost.XGBRegressor(n_estimators=300, max_depth=4, learning_rate=0.3, early_stopping_rounds=5)
    model.fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])], verbose=False)
    assert model.best_iteration + 1 < model.get_booster().num_boosted_rounds()  # it did stop early
    err = _explain_as_the_api_does(model, xgboost.XGBRegressor(), X[200:], y[200:], tmp_path, capsys)
    assert f"records early stopping at round {model.best_iteration}" in err


def test_a_booster_file_saved_after_early_stopping_is_explained_on_every_round(tmp_path, capfd):
    # xgboost.train's Booster predicts with every round, and so does the API's explainer of it: the
    # command line cut it at the best round (model R² 0.922 against the booster's 0.935)
    xgboost = pytest.importorskip("xgboost")
    X, y = _data()
    train, valid = xgboost.DMatrix(X[:200], y[:200]), xgboost.DMatrix(X[200:], y[200:])
    params = {"max_depth": 3, "eta": 0.3, "nthread": 1}
    booster = xgboost.train(params, train, 300, evals=[(valid, "v")], early_stopping_rounds=5, verbose_eval=False)
    assert booster.best_iteration + 1 < booster.num_boosted_rounds()
    err = _explain_as_the_api_does(booster, xgboost.Booster(), X[200:], y[200:], tmp_path, capfd)
    assert "early stopping" not in err


def _explain_as_the_api_does(model, empty, X, y, tmp_path, capsys) -> str:
    """Save ``model``, explain its file with the command line, and check the shares equal the API's
    on the file loaded into ``empty``; returns what the command wrote to stderr."""
    model.save_model(tmp_path / "model.json")
    pd.concat([X, y], axis=1).to_csv(tmp_path / "data.csv", index=False)
    written, err = _explain(tmp_path / "model.json", tmp_path / "data.csv", tmp_path / "out.json", capsys)
    empty.load_model(tmp_path / "model.json")
    expected = RSquaredExplainer(empty).rsq(X, y)
    np.testing.assert_allclose(pd.Series(written["rsq"])[expected.index], expected, atol=1e-9)
    return err


def test_names_a_library_made_up_match_a_header_that_holds_them_in_another_order(tmp_path, capsys):
    # CatBoost fitted on an array records '0'..'3'; a header with those names reordered was read
    # by position (shares -0.015 .. -0.705 against 0.751 .. 0.004)
    catboost = pytest.importorskip("catboost")
    X, y = _data(1)
    model = catboost.CatBoostRegressor(iterations=20, depth=3, verbose=0, allow_writing_files=False)
    model.fit(X.to_numpy(), y)
    model.save_model(str(tmp_path / "model.cbm"))
    frame = pd.DataFrame(X.to_numpy(), columns=["0", "1", "2", "3"])
    frame[["2", "0", "3", "1"]].assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    written, _ = _explain(tmp_path / "model.cbm", tmp_path / "data.csv", tmp_path / "out.json", capsys)
    expected = RSquaredExplainer(model).rsq(X.to_numpy(), y)
    np.testing.assert_allclose(pd.Series(written["rsq"])[["0", "1", "2", "3"]].to_numpy(), expected, atol=1e-9)


def test_a_header_that_repeats_a_name_is_refused(tmp_path, capsys):
    # pandas renamed the second 'x0' to 'x0.1' and the model read the first: x0's share -0.91, not 0.79
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(2)
    xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(X, y).save_model(tmp_path / "model.json")
    table = X.assign(y=y)
    table.insert(1, "x0 again", X.x3)
    table.rename(columns={"x0 again": "x0"}).to_csv(tmp_path / "data.csv", index=False)
    argv = ["explain", "--model", tmp_path / "model.json", "--data", tmp_path / "data.csv", "--target", "y"]
    code, _, err = run(argv, capsys)
    assert code == 1
    assert err == (
        f"shap-rsq: error: {tmp_path / 'data.csv'} has the column name(s) ['x0'] more than once; "
        "give every column its own name.\n"
    )


@pytest.mark.parametrize("labels", [["1", "2", "3"], ["01", "02", "03"], ["AS", "EU", "NA"], ["False", "True"]])
def test_text_class_labels_are_read_as_written(labels, tmp_path, capsys):
    # pandas read '01' as 1, 'True' as a boolean and 'NA' as missing: the labels matched no class
    X, _ = _data(3)
    codes = np.digitize(X.x0, np.quantile(X.x0, np.linspace(0, 1, len(labels) + 1)[1:-1]))
    y = np.array(labels, dtype=object)[codes]
    model = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    joblib.dump(model, tmp_path / "model.joblib")
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    written, _ = _explain(
        tmp_path / "model.joblib", tmp_path / "data.csv", tmp_path / "out.json", capsys, "--trust-pickle"
    )
    expected = RSquaredExplainer(model).rsq(X, y)
    np.testing.assert_allclose(pd.Series(written["rsq"])[expected.index], expected, atol=1e-9)


def test_a_groups_file_that_lists_positions_is_refused(tmp_path, capsys):
    # a position was taken for a name ("Did you mean 's2'?" for position 2, which is another column)
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(4)
    xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(X, y).save_model(tmp_path / "model.json")
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "groups.json").write_text(json.dumps({"pair": [2, 3]}))
    argv = ["explain", "--model", tmp_path / "model.json", "--data", tmp_path / "data.csv", "--target", "y"]
    code, _, err = run([*argv, "--groups", tmp_path / "groups.json"], capsys)
    assert code == 1
    assert "group 'pair' lists the number 2; in a groups file name the columns, e.g. 'x0', 'x1', 'x2'." in err


def test_a_model_may_hold_a_name_with_a_space_and_the_same_with_an_underscore(tmp_path):
    # both names were folded into 'a_b' for every library (LightGBM's own spelling): the columns
    # collided and the error named no column
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(5)
    frame = X.set_axis(["a b", "a_b", "x2", "x3"], axis=1)
    model = xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(frame, y)
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(frame[["x3", "a_b", "a b", "x2"]], y)
    np.testing.assert_allclose(shares.to_numpy(), explainer.rsq(frame.to_numpy(), y), atol=1e-12)


def test_the_target_as_weights_is_refused_by_name(tmp_path, capsys):
    # it was reported as negative weights (the target has negative values)
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(6)
    xgboost.XGBRegressor(n_estimators=5, max_depth=2).fit(X, y).save_model(tmp_path / "model.json")
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    argv = ["explain", "--model", tmp_path / "model.json", "--data", tmp_path / "data.csv", "--target", "y"]
    code, _, err = run([*argv, "--weight", "y"], capsys)
    assert code == 1
    assert err == "shap-rsq: error: --weight 'y' is the target column; give a column of row weights, or leave it out.\n"


def test_a_refusal_of_the_interactions_leaves_the_other_outputs_unwritten(tmp_path, capsys, monkeypatch):
    # the interactions came last, after --out and --local were written
    from shap_rsq import MemoryBudgetError

    xgboost = pytest.importorskip("xgboost")
    X, y = _data(7)
    xgboost.XGBRegressor(n_estimators=5, max_depth=2).fit(X, y).save_model(tmp_path / "model.json")
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False)

    def refuse(self, *args, **kwargs):
        raise MemoryBudgetError("Estimated working memory 9 GiB exceeds the budget.")

    monkeypatch.setattr(RSquaredExplainer, "rsq_interactions", refuse)
    argv = ["explain", "--model", tmp_path / "model.json", "--data", tmp_path / "data.csv", "--target", "y"]
    outputs = ["--out", tmp_path / "r2.csv", "--local", tmp_path / "rows.csv", "--interactions", tmp_path / "p.csv"]
    code, _, err = run([*argv, *outputs], capsys)
    assert code == 1 and "9 GiB" in err
    assert not any(path.exists() for path in (tmp_path / "r2.csv", tmp_path / "rows.csv", tmp_path / "p.csv"))
