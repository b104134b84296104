"""A newcomer's mistakes on the command line stop it with a message that says what to do."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import make_data

from shap_rsq import RSquaredExplainer
from shap_rsq.cli import main

NAMES = ["age", "bmi", "bp", "s1", "s2", "noise"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A data table with a target ``progression``, weights ``w`` with one negative value, and an XGBoost model."""
    xgboost = pytest.importorskip("xgboost")
    X, y, w = make_data(seed=7)
    frame = pd.DataFrame(X, columns=NAMES)
    where = tmp_path_factory.mktemp("mistakes")
    w[4] = -1.0
    frame.assign(progression=y, w=w).to_csv(where / "data.csv", index=False)
    xgboost.XGBRegressor(n_estimators=5, max_depth=2).fit(frame, y).save_model(where / "model.json")
    return where


def run(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def explain(folder: Path, *options: str) -> list:
    return ["explain", "--model", folder / "model.json", "--data", folder / "data.csv", *options]


def test_a_feature_given_as_the_target_is_an_error_that_names_it(folder, capsys):
    code, err = run(explain(folder, "--target", "bmi"), capsys)
    assert code == 1
    assert err.startswith("shap-rsq: error: the target column 'bmi' is one of the model's features")
    assert "Columns the model does not read: ['progression', 'w'] (2 columns)." in err


def test_an_unknown_target_lists_every_column_and_suggests_the_closest(folder, capsys):
    code, err = run(explain(folder, "--target", "Progresion"), capsys)
    assert code == 1
    assert "has no column 'Progresion'. Did you mean 'progression'?" in err
    assert "['age', 'bmi', 'bp', 's1', 's2', 'noise', 'progression', 'w'] (8 columns)" in err


def test_a_negative_weight_is_named_with_its_column_and_row(folder, capsys):
    code, err = run(explain(folder, "--target", "progression", "--weight", "w"), capsys)
    assert code == 1
    assert "the weight column 'w' of " in err and "has 1 negative value(s), the first in data row 5" in err


@pytest.mark.parametrize("loss", ["Logloss", "MultiClass"])
def test_a_catboost_classifier_file_gives_shares_of_its_log_loss_d2(loss, tmp_path, capsys):
    # it was refused as a boosted classifier: its log-loss is decomposed through its second-order games
    catboost = pytest.importorskip("catboost")
    X, y, _ = make_data(seed=8)
    frame = pd.DataFrame(X, columns=NAMES)
    labels = np.digitize(y, np.quantile(y, [0.5] if loss == "Logloss" else [0.33, 0.67]))
    model = catboost.CatBoostClassifier(iterations=3, depth=2, loss_function=loss, verbose=0, allow_writing_files=False)
    model.fit(frame, labels).save_model(str(tmp_path / "model.cbm"))
    frame.assign(y=labels).to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / "shares.json"
    argv = ["explain", "--model", tmp_path / "model.cbm", "--data", tmp_path / "data.csv", "--target", "y"]
    assert main([str(a) for a in [*argv, "--out", out]]) == 0
    printed = capsys.readouterr().out
    assert "Shares of D² (log-loss)" in printed and "model D² (log-loss)" in printed and "gap (exact change" in printed
    document = json.loads(out.read_text())
    assert document["score"] == "D² (log-loss)"
    assert document["gap"] == pytest.approx(document["exact_change"] - document["sum_of_shares"], abs=1e-12)
    assert document["sum_of_shares"] == pytest.approx(RSquaredExplainer(model).rsq(frame, labels).sum(), abs=1e-12)


def test_version_answers_fast_without_loading_the_heavy_libraries():
    code = (
        "import sys, runpy\n"
        "sys.argv = ['shap-rsq', '--version']\n"
        "try:\n    runpy.run_module('shap_rsq', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'sklearn', 'shap', 'numpy', 'matplotlib') if m in sys.modules))\n"
    )
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    assert result.stdout.splitlines() == ["shap-rsq 0.1.0.dev0", "[]"]
    assert seconds < 2.0  # about 0.1 s; generous for a busy machine, far below the 2-3 s of importing shap


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_a_booster_file_of_a_classifier_prints_its_d2_and_the_gap(library, tmp_path, capsys):
    module = pytest.importorskip(library)
    X, y, _ = make_data(seed=10)
    frame = pd.DataFrame(X, columns=NAMES)
    labels = (y > np.median(y)).astype(int)
    if library == "xgboost":
        path = tmp_path / "model.json"
        module.XGBClassifier(n_estimators=3, max_depth=2).fit(frame, labels).save_model(path)
    else:
        path = tmp_path / "model.txt"
        model = module.LGBMClassifier(n_estimators=3, num_leaves=4, min_child_samples=5, verbose=-1)
        model.fit(frame, labels).booster_.save_model(path)
    frame.assign(y=labels).to_csv(tmp_path / "data.csv", index=False)
    assert main(["explain", "--model", str(path), "--data", str(tmp_path / "data.csv"), "--target", "y"]) == 0
    printed = capsys.readouterr().out
    assert "D² (log-loss) share" in printed and "exact change of D² (log-loss) from E f" in printed


def test_a_wide_tables_columns_are_listed_short_in_a_message(tmp_path, capsys):
    # a missing target printed all 20,001 column names on one line
    names = [f"g{j}" for j in range(20_000)]
    pd.DataFrame(np.zeros((3, 20_001)), columns=[*names, "target"]).to_csv(tmp_path / "wide.csv", index=False)
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(30, 20_000)), columns=names)
    xgboost.XGBRegressor(n_estimators=2, max_depth=2).fit(X, X["g0"]).save_model(tmp_path / "model.json")
    code = main(
        ["explain", "--model", str(tmp_path / "model.json"), "--data", str(tmp_path / "wide.csv"), "--target", "y"]
    )
    err = capsys.readouterr().err
    assert code == 1 and "(20001 columns)" in err and "'g49', ..." in err and len(err) < 1_500


def test_a_catboost_json_file_is_named_as_catboost(folder, tmp_path, capsys):
    # it failed as a corrupt XGBoost model ("Unknown construct, around character position: 8880")
    catboost = pytest.importorskip("catboost")
    X, y, _ = make_data(seed=8)
    model = catboost.CatBoostRegressor(iterations=3, depth=2, verbose=0, allow_writing_files=False)
    model.fit(pd.DataFrame(X, columns=NAMES), y).save_model(str(tmp_path / "model.json"), format="json")
    argv = ["explain", "--model", tmp_path / "model.json", "--data", folder / "data.csv", "--target", "progression"]
    code, err = run(argv, capsys)
    assert code == 1
    assert "is a CatBoost model saved as JSON; the command line reads CatBoost's own format" in err


def test_json_that_is_not_an_xgboost_model_is_named_in_one_short_line(folder, tmp_path, capsys):
    # a LightGBM dump_model() file failed as an XGBoost model with a message quoting the whole file
    # (60,000 characters for 30 trees), and other JSON with XGBoost's "Invalid cast, from Null to Object"
    lightgbm = pytest.importorskip("lightgbm")
    import json

    frame = pd.read_csv(folder / "data.csv")
    booster = lightgbm.LGBMRegressor(n_estimators=30, verbose=-1).fit(frame[NAMES], frame["progression"]).booster_
    (tmp_path / "dump.json").write_text(json.dumps(booster.dump_model()))
    (tmp_path / "other.json").write_text('{"hello": 1}')
    for model, message in (
        ("dump.json", "is a LightGBM model dumped as JSON (dump_model); the command line reads LightGBM's text"),
        ("other.json", 'is not an XGBoost model saved as JSON (it holds no "learner"); the command line reads'),
    ):
        argv = ["explain", "--model", tmp_path / model, "--data", folder / "data.csv", "--target", "progression"]
        code, err = run(argv, capsys)
        assert code == 1 and message in err and len(err) < 400


def test_a_table_of_another_delimiter_or_missing_marker_is_named(folder, tmp_path, capsys):
    # a semicolon file read as one column, '?' for missing, and a file without a header row were
    # refused without saying why
    frame = pd.read_csv(folder / "data.csv")
    frame.to_csv(tmp_path / "semi.csv", sep=";", index=False)
    frame["bmi"] = frame["bmi"].astype(object)
    frame.loc[3, "bmi"] = "?"
    frame.to_csv(tmp_path / "marked.csv", index=False)
    frame.drop(index=3).to_csv(tmp_path / "headerless.csv", index=False, header=False)
    for data, message in (
        ("semi.csv", "The header holds ';': save the table with commas"),
        ("headerless.csv", "Its first line holds numbers, not names: the file needs a header row"),
        ("marked.csv", "non-numeric feature column(s) ['bmi'] (1 column) (column 'bmi' holds '?')"),
    ):
        argv = ["explain", "--model", folder / "model.json", "--data", tmp_path / data, "--target", "progression"]
        code, err = run(argv, capsys)
        assert code == 1 and message in err


def test_a_reader_that_stops_early_leaves_no_traceback_and_every_file_written(folder, tmp_path):
    # shap-rsq explain ... | head -1 ended with a BrokenPipeError traceback, sometimes before --out
    out = tmp_path / "shares.csv"
    argv = [*map(str, explain(folder, "--target", "progression")), "--out", str(out)]
    command = [sys.executable, "-c", "import sys; from shap_rsq.cli import main; sys.exit(main(sys.argv[1:]))"]
    process = subprocess.Popen([*command, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before anything is printed
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    assert len(pd.read_csv(out)) == len(NAMES)


@pytest.mark.parametrize("twice", [["--model", "other.json"], ["--target=w"], ["--n-jobs", "1", "--n-jobs", "1"]])
def test_an_option_given_twice_is_an_error_not_its_last_value(folder, capsys, twice):
    # argparse keeps the last value: "--model a.json --model b.txt" explained b.txt without a word
    with pytest.raises(SystemExit) as stop:
        main([str(a) for a in [*explain(folder, "--target", "progression"), *twice]])
    assert stop.value.code == 2
    option = twice[0].split("=")[0]
    assert f"{option} was given twice: give it once" in capsys.readouterr().err
