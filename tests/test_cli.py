"""The ``shap-rsq`` command line: the demo, every model and data format, outputs, and every input error."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import re
import stat
import subprocess
import sys
from pathlib import Path

import joblib
import matplotlib
import numpy as np
import pandas as pd
import pytest
from conftest import make_data
from sklearn.ensemble import RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier

from shap_rsq import RSquaredExplainer
from shap_rsq.cli import build_parser, main
from shap_rsq.cli.files import InputError, first_line, write_atomic

matplotlib.use("Agg")

NAMES = ["age", "bmi", "bp", "s1", "s2", "noise"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DOCS = Path(__file__).resolve().parent.parent / "docs"


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    """Features under real names, a target ``y``, a weight column and an identifier the models never see."""
    X, y, w = make_data(seed=41)
    frame = pd.DataFrame(X, columns=NAMES)
    return frame.assign(y=y, w=w, row_id=np.arange(len(y)))


def _fit_xgboost(frame, y):
    xgboost = pytest.importorskip("xgboost")
    return xgboost.XGBRegressor(n_estimators=15, max_depth=3, random_state=0).fit(frame, y)


def _fit_lightgbm(frame, y):
    lightgbm = pytest.importorskip("lightgbm")
    return lightgbm.LGBMRegressor(n_estimators=15, num_leaves=8, min_child_samples=5, verbose=-1).fit(frame, y)


def _fit_catboost(frame, y):
    catboost = pytest.importorskip("catboost")
    model = catboost.CatBoostRegressor(iterations=15, depth=3, verbose=0, allow_writing_files=False, thread_count=1)
    return model.fit(frame, y)


def _save(kind: str, folder: Path, frame: pd.DataFrame, y: np.ndarray) -> tuple[Path, object]:
    """Fit a small model, save it as ``kind`` and return the file and the in-memory model."""
    if kind in ("xgboost.json", "xgboost.ubj"):
        model = _fit_xgboost(frame, y)
        path = folder / f"model.{kind.split('.')[1]}"
        model.save_model(path)
    elif kind == "lightgbm.txt":
        model = _fit_lightgbm(frame, y)
        path = folder / "model.txt"
        model.booster_.save_model(path)
    elif kind == "catboost.cbm":
        model = _fit_catboost(frame, y)
        path = folder / "model.cbm"
        model.save_model(str(path))
    elif kind == "sklearn.joblib":
        model = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(frame, y)
        path = folder / "model.joblib"
        joblib.dump(model, path)
    else:
        model = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(frame, y)
        path = folder / "model.pkl"
        path.write_bytes(pickle.dumps(model))
    return path, model


FORMATS = ["xgboost.json", "xgboost.ubj", "lightgbm.txt", "catboost.cbm", "sklearn.joblib", "sklearn.pkl"]


@pytest.fixture(scope="module")
def files(tmp_path_factory, table):
    """A folder holding the data as CSV and Parquet, and one saved model per format (fitted lazily)."""
    folder = tmp_path_factory.mktemp("cli")
    table.to_csv(folder / "data.csv", index=False)
    cache: dict[str, tuple[Path, object]] = {}

    def get(kind: str):
        if kind not in cache:
            cache[kind] = _save(kind, folder, table[NAMES], table["y"].to_numpy())
        return cache[kind]

    get.folder = folder
    return get


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def expected_shares(model, table: pd.DataFrame, weight: bool = False) -> pd.Series:
    return RSquaredExplainer(model).rsq(table[NAMES], table["y"], sample_weight=table["w"] if weight else None)


# ---------------------------------------------------------------- demo


def test_demo_prints_the_sorted_table_and_writes_a_png(tmp_path, capsys):
    plot = tmp_path / "demo.png"
    code, out, err = run(["demo", "--plot", plot], capsys)
    assert code == 0, err
    rows = re.findall(r"^  (\w+)\s+(-?\d\.\d{4})  #*$", out, flags=re.MULTILINE)
    assert [name for name, _ in rows][:2] == ["s5", "bmi"]
    values = [float(v) for _, v in rows]
    assert len(values) == 10 and values == sorted(values, reverse=True)
    total = float(re.search(r"sum of shares\s+(\S+)", out).group(1))
    model_rsq = float(re.search(r"model R²\s+(\S+)", out).group(1))
    assert total == pytest.approx(sum(values), abs=1e-3) and total == pytest.approx(model_rsq, abs=1e-3)
    assert re.search(r"computed in \d+\.\d\d s", out)
    assert plot.read_bytes()[:8] == PNG_MAGIC


def test_demo_writes_its_default_png_in_the_current_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(["demo"], capsys)[0] == 0
    assert (tmp_path / "shap-rsq-demo.png").read_bytes()[:8] == PNG_MAGIC


# ---------------------------------------------------------------- explain: success paths


@pytest.mark.parametrize("kind", FORMATS)
def test_each_model_format_gives_the_explainers_shares(kind, files, table, tmp_path, capsys):
    path, model = files(kind)
    out_csv = tmp_path / "shares.csv"
    argv = ["explain", "--model", path, "--data", files.folder / "data.csv", "--target", "y", "--out", out_csv]
    if kind.startswith("sklearn"):
        argv.append("--trust-pickle")
    code, _, err = run(argv, capsys)
    assert code == 0, err
    written = pd.read_csv(out_csv)
    assert list(written.columns) == ["feature", "rsq"]
    assert list(written["rsq"]) == sorted(written["rsq"], reverse=True)
    expected = expected_shares(model, table)
    np.testing.assert_allclose(written.set_index("feature")["rsq"][NAMES], expected[NAMES], rtol=1e-9, atol=1e-12)
    assert "'row_id'" in err and "'w'" in err  # columns the model does not read are named, not silently used


def test_a_long_call_is_announced_in_the_commands_words(files, tmp_path, capsys, monkeypatch):
    from dataclasses import replace

    import shap_rsq.explainer._explainer

    # every call counts as long: the warning's path without a long call
    explainer_module = shap_rsq.explainer._explainer
    monkeypatch.setattr(
        explainer_module, "DEFAULT_TUNING", replace(explainer_module.DEFAULT_TUNING, long_call_seconds=0.0)
    )
    path, _ = files("sklearn.joblib")
    argv = ["explain", "--model", path, "--data", files.folder / "data.csv", "--target", "y", "--trust-pickle"]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    warning = [line for line in err.splitlines() if "estimated to take about" in line]
    assert len(warning) == 1 and warning[0].startswith("shap-rsq: warning: The exact R² shares of")
    # by default a bar follows the warning; --progress shows it without
    assert "A progress bar follows; --progress shows it without this warning" in warning[0]
    assert "--n-jobs -1 uses every core" in warning[0]
    assert "--sample N estimates the shares, with standard errors, from N rows drawn at random" in warning[0]
    assert "estimate_rsq" not in warning[0]
    assert "RSquaredExplainer(" not in warning[0] and "n_jobs=" not in warning[0]
    assert "LongCallWarning" not in err  # not Python's format, with the console script's path
    code, _, err = run([*argv, "--no-progress"], capsys)
    assert code == 0 and "--progress shows a progress bar" in err
    code, _, err = run([*argv, "--progress"], capsys)
    assert code == 0 and "estimated to take about" not in err


def test_json_output_local_shares_and_plot(files, table, tmp_path, capsys):
    path, model = files("xgboost.json")
    pytest.importorskip("pyarrow")
    data = tmp_path / "data.parquet"
    table.to_parquet(data)
    out, local, plot = tmp_path / "r2.json", tmp_path / "local.parquet", tmp_path / "bar.png"
    argv = ["explain", "--model", path, "--data", data, "--target", "y", "--out", out, "--local", local, "--plot", plot]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    document = json.loads(out.read_text())
    expected = expected_shares(model, table)
    assert list(document["rsq"]) == list(expected.sort_values(ascending=False).index)
    np.testing.assert_allclose(pd.Series(document["rsq"])[NAMES], expected[NAMES], rtol=1e-9, atol=1e-12)
    assert document["n_rows"] == len(table) and document["target"] == "y"
    assert document["sum_of_shares"] == pytest.approx(expected.sum(), abs=1e-12)
    assert document["model_rsq"] == pytest.approx(expected.sum(), abs=1e-4)
    assert document["r2"] == document["rsq"] and document["model_r2"] == document["model_rsq"]  # deprecated keys
    rows = pd.read_parquet(local)
    assert list(rows.columns) == [*NAMES, "base_value"] and len(rows) == len(table)
    np.testing.assert_allclose(rows[NAMES].sum(), expected[NAMES], atol=1e-10)
    assert rows.to_numpy().sum() == pytest.approx(document["model_rsq"], abs=1e-6)  # predict rounds to float32
    assert plot.read_bytes()[:8] == PNG_MAGIC


def test_weights_columns_in_another_order_and_csv_local_output(files, table, tmp_path, capsys):
    path, model = files("lightgbm.txt")
    shuffled = tmp_path / "shuffled.csv"
    table[["w", "y", *NAMES[::-1], "row_id"]].to_csv(shuffled, index=False)
    local = tmp_path / "local.csv"
    argv = ["explain", "--model", path, "--data", shuffled, "--target", "y", "--weight", "w", "--local", local]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    expected = expected_shares(model, table, weight=True)
    rows = pd.read_csv(local)
    np.testing.assert_allclose(rows[NAMES].sum(), expected[NAMES], atol=1e-10)
    assert "'w'" not in err  # the weight column is used, not ignored


def test_models_without_feature_names_match_columns_by_position(table, tmp_path, capsys):
    xgboost = pytest.importorskip("xgboost")
    X, y = table[NAMES].to_numpy(), table["y"].to_numpy()
    model = xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(X, y)
    model.save_model(tmp_path / "bare.json")
    data = tmp_path / "data.tsv"
    table[[*NAMES, "y"]].to_csv(data, sep="\t", index=False)
    out = tmp_path / "r2.csv"
    code, _, err = run(
        ["explain", "--model", tmp_path / "bare.json", "--data", data, "--target", "y", "--out", out], capsys
    )
    assert code == 0, err
    expected = RSquaredExplainer(model).rsq(X, y)
    np.testing.assert_allclose(pd.read_csv(out).set_index("feature")["rsq"][NAMES], expected, rtol=1e-9, atol=1e-12)
    # a table in another order than the training array would be read wrong: the note names the order read
    assert f"read by position from the columns {NAMES!r}" in err
    named = tmp_path / "named.json"
    xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(table[NAMES], y).save_model(named)
    code, _, err = run(["explain", "--model", named, "--data", data, "--target", "y", "--out", out], capsys)
    assert code == 0 and "position" not in err, err


@pytest.mark.parametrize("kind", FORMATS)
def test_names_that_look_made_up_are_matched_by_name_when_the_user_gave_them(kind, table, tmp_path, capsys):
    # f0, f1, .. were taken for names a library makes up for arrays, for every library: a table with
    # its columns in another order was read by position, with exit 0 and the shares on other features
    generic = [f"f{j}" for j in range(len(NAMES))]
    frame = table[NAMES].set_axis(generic, axis=1)
    y = table["y"].to_numpy()
    path, model = _save(kind, tmp_path, frame, y)
    data = tmp_path / "reordered.csv"
    frame[generic[::-1]].assign(y=y, row_id=np.arange(len(y))).to_csv(data, index=False)
    out = tmp_path / "r2.csv"
    argv = ["explain", "--model", path, "--data", data, "--target", "y", "--out", out, "--trust-pickle"]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert "ignoring column(s) the model does not use: ['row_id']" in err
    expected = RSquaredExplainer(model).rsq(frame, y)
    np.testing.assert_allclose(pd.read_csv(out).set_index("feature")["rsq"][generic], expected, atol=1e-12)


def test_lightgbm_model_reads_the_table_it_was_fitted_on_despite_renaming_spaces(table, tmp_path, capsys):
    spaced = table[NAMES].rename(columns={"bmi": "body mass", "s1": "serum 1"})
    model = _fit_lightgbm(spaced, table["y"])
    assert model.booster_.feature_name()[1:4] == ["body_mass", "bp", "serum_1"]  # what the file records
    model.booster_.save_model(tmp_path / "model.txt")
    spaced.assign(y=table["y"]).to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / "r2.csv"
    argv = ["explain", "--model", tmp_path / "model.txt", "--data", tmp_path / "data.csv", "--target", "y"]
    code, _, err = run([*argv, "--out", out], capsys)
    assert code == 0, err
    assert err == ""  # every column is used: none is reported as ignored
    written = pd.read_csv(out).set_index("feature")["rsq"]
    expected = RSquaredExplainer(model).rsq(spaced, table["y"])
    assert sorted(written.index) == sorted(spaced.columns)  # the table's names, as the user wrote them
    np.testing.assert_allclose(written[expected.index], expected, rtol=1e-9, atol=1e-12)


def test_many_features_are_listed_top_k_plus_the_rest(files, tmp_path, capsys):
    path, _ = files("xgboost.json")
    argv = ["explain", "--model", path, "--data", files.folder / "data.csv", "--target", "y", "--max-display", "3"]
    code, out, _ = run(argv, capsys)
    assert code == 0
    assert re.search(r"^  4 other features\s+-?\d\.\d{4}", out, flags=re.MULTILINE)


def test_outputs_are_replaced_atomically_and_leave_no_temporary_files(files, tmp_path, capsys):
    path, _ = files("xgboost.json")
    out = tmp_path / "r2.csv"
    out.write_text("old contents\n")
    for target, status in (("absent", 1), ("y", 0)):
        argv = ["explain", "--model", path, "--data", files.folder / "data.csv", "--target", target, "--out", out]
        assert run(argv, capsys)[0] == status
        if status:  # a failed run leaves the old file as it was
            assert out.read_text() == "old contents\n"
    assert out.read_text().startswith("feature,rsq")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r2.csv"]


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")

    def broken(temporary: str) -> None:
        Path(temporary).write_text("half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_atomic(target, broken)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_written_files_get_ordinary_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.csv"
        write_atomic(fresh, lambda temporary: Path(temporary).write_text("new"))
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # not mkstemp's private 0600
        kept = tmp_path / "kept.csv"
        kept.write_text("old")
        kept.chmod(0o640)
        write_atomic(kept, lambda temporary: Path(temporary).write_text("new"))
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    finally:
        os.umask(umask)


# ---------------------------------------------------------------- explain: errors


# name -> (options changed from the defaults, the message after "shap-rsq: error: ").  A message ending in
# "..." is followed by words of another library or module, which may change; the others are exact.
COLUMNS = "['age', 'bmi', 'bp', 's1', 's2', 'noise', 'y', 'w', 'row_id'] (9 columns)"
TEXT_BMI = "?"  # the first value of text_feature.csv's bmi: a missing-value marker read as text
ERROR_CASES = {
    "missing target": ([("--target", "outcome")], f"data.csv has no column 'outcome'. Its columns are {COLUMNS}."),
    "missing weight": (
        [("--weight", "weights")],
        f"data.csv has no column 'weights'. Its columns are {COLUMNS}.",
    ),
    "text feature": (
        [("--data", "text_feature.csv")],
        "text_feature.csv has non-numeric feature column(s) ['bmi'] (1 column) (column 'bmi' holds "
        f"'{TEXT_BMI}'); tree models read numbers: encode them first (leave missing values as empty cells).",
    ),
    "text target": ([("--data", "text_target.csv")], "the target column 'y' of text_target.csv is not numeric."),
    "text weight": (
        [("--data", "text_weight.csv"), ("--weight", "w")],
        "the weight column 'w' of text_weight.csv is not numeric.",
    ),
    "nan target": ([("--data", "nan_target.csv")], "the target column 'y' of nan_target.csv has 1 missing value(s)."),
    "nan weight": (
        [("--data", "nan_weight.csv"), ("--weight", "w")],
        "the weight column 'w' of nan_weight.csv has 2 missing value(s).",
    ),
    "zero weights": (  # scikit-learn's "Sample weights must contain at least one non-zero number"
        [("--data", "zero_weight.csv"), ("--weight", "w")],
        "the weight column 'w' of zero_weight.csv is zero on every row: no row would count.",
    ),
    "names differ": (
        [("--data", "renamed.csv")],
        "renamed.csv lacks 1 feature(s) the model was fitted with: ['bmi'] (1 column). Did you mean 'BMI'? "
        "Its columns are ['age', 'BMI', 'bp', 's1', 's2', 'noise', 'y', 'w', 'row_id'] (9 columns).",
    ),
    "columns by position": (
        [("--model", "bare.json")],
        "data.csv has 8 columns besides the target, but the model expects 6 features (it records no feature "
        "names, so columns are matched by position).",
    ),
    "no model file": ([("--model", "absent.json")], "absent.json does not exist."),
    "corrupt xgboost json": ([("--model", "corrupt.json")], "cannot read corrupt.json as an XGBoost model: ..."),
    "corrupt xgboost ubj": ([("--model", "corrupt.ubj")], "cannot read corrupt.ubj as an XGBoost model: ..."),
    "corrupt lightgbm": ([("--model", "corrupt.txt")], "cannot read corrupt.txt as a LightGBM model: ..."),
    # LightGBM aborted the whole process on it, with nothing printed
    "truncated lightgbm": (
        [("--model", "truncated.txt")],
        "cannot read truncated.txt as a LightGBM model: the file ends before its trees and parameters do "
        "(truncated or corrupt); save the model again.",
    ),
    "corrupt catboost": ([("--model", "corrupt.cbm")], "cannot read corrupt.cbm as a CatBoost model: ..."),
    "corrupt pickle": (
        [("--model", "corrupt.pkl"), ("--trust-pickle",)],
        "cannot read corrupt.pkl as a pickle/joblib file: ...",
    ),
    "unknown model": (
        [("--model", "model.onnx")],
        "cannot tell what kind of model model.onnx is; expected XGBoost JSON/UBJ, LightGBM text or CatBoost .cbm, "
        "or a pickle/joblib file.",
    ),
    "pickle refused": (
        [("--model", "classifier.joblib")],
        "classifier.joblib is a pickle/joblib file, and loading one runs any code it contains: pass --trust-pickle "
        "if you trust it, or save the model as XGBoost JSON/UBJ, LightGBM text or CatBoost .cbm.",
    ),
    "classifier": (
        [("--model", "classifier.joblib"), ("--trust-pickle",)],
        "the target column 'y' of data.csv holds 120 value(s) that are not among the classifier's classes "
        "[False, True]; give the column of class labels (unknown: [-0.01598858102301204, 4.848466218751061, "
        "5.9218320962669395]).",
    ),
    "not a model": (
        [("--model", "dict.joblib"), ("--trust-pickle",)],
        "dict is not a supported tree model. Supported: ...",
    ),
    "model is a folder": ([("--model", ".")], ". is a directory, not a file."),
    "no data file": ([("--data", "absent.csv")], "absent.csv does not exist."),
    "corrupt parquet": ([("--data", "corrupt.parquet")], "cannot read corrupt.parquet as Parquet: ..."),  # pyarrow
    "empty csv": ([("--data", "empty.csv")], "cannot read empty.csv as CSV: No columns to parse from file"),
    "header only": ([("--data", "header_only.csv")], "header_only.csv has a header but no rows of data."),
    "binary csv": ([("--data", "binary.csv")], "cannot read binary.csv as CSV: ..."),
    "unknown data": (
        [("--data", "data.xlsx")],
        "cannot tell the format of data.xlsx from its name; use a .csv, .tsv or .parquet file.",
    ),
    "out suffix": ([("--out", "r2.txt")], "--out r2.txt: the file name must end with .csv or .json."),
    "out folder": ([("--out", "nowhere/r2.csv")], "--out nowhere/r2.csv: folder nowhere does not exist."),
    "out is a folder": ([("--out", "folder.csv")], "--out folder.csv is a directory; give a file name."),
    # each of these was written, the data file or the first output replaced, with exit 0
    "out is the data": (
        [("--out", "data.csv")],
        "--out data.csv would overwrite --data; give each output a file of its own.",
    ),
    "two outputs, one file": (
        [("--out", "r2.csv"), ("--local", "./r2.csv")],
        "--local ./r2.csv would name the same file as --out; give each output a file of its own.",
    ),
    "out under a file": ([("--out", "data.csv/r2.csv")], "--out data.csv/r2.csv: data.csv is a file, not a folder."),
    "local suffix": (
        [("--local", "rows.json")],
        "--local rows.json: the file name must end with .csv or .parquet or .pq.",
    ),
    "plot suffix": (
        [("--plot", "bar.docx")],
        "--plot bar.docx: the file name must end with an image type such as .png, .svg or .pdf.",
    ),
}


@pytest.fixture(scope="module")
def bad_files(files, table) -> Path:
    """Broken models and tables beside the good ones."""
    folder = files.folder
    table.assign(bmi=[TEXT_BMI, *table["bmi"].astype(str)[1:]]).to_csv(folder / "text_feature.csv", index=False)
    table.assign(y=table["y"].astype(str) + "!").to_csv(folder / "text_target.csv", index=False)
    table.assign(w=table["w"].astype(str) + " kg").to_csv(folder / "text_weight.csv", index=False)
    table.assign(y=table["y"].where(table.index != 3)).to_csv(folder / "nan_target.csv", index=False)
    table.assign(w=table["w"].where(~table.index.isin([0, 5]))).to_csv(folder / "nan_weight.csv", index=False)
    table.assign(w=0.0).to_csv(folder / "zero_weight.csv", index=False)
    table.rename(columns={"bmi": "BMI"}).to_csv(folder / "renamed.csv", index=False)
    table.iloc[:0].to_csv(folder / "header_only.csv", index=False)
    (folder / "binary.csv").write_bytes(b"\x00\x01binary\xff\xfe")
    (folder / "corrupt.json").write_text('{"learner": ')
    (folder / "corrupt.ubj").write_bytes(b"{\x00\x01\x02")
    (folder / "corrupt.txt").write_text("tree\nversion=v4\n")
    lightgbm = pytest.importorskip("lightgbm")
    text = lightgbm.LGBMRegressor(n_estimators=3, verbose=-1).fit(table[NAMES], table["y"]).booster_.model_to_string()
    (folder / "truncated.txt").write_text(text[: text.index("end of trees") + 200])  # inside its parameters
    (folder / "corrupt.cbm").write_bytes(b"CBM1 truncated")
    (folder / "corrupt.pkl").write_bytes(b"\x80\x04 truncated")
    (folder / "model.onnx").write_bytes(b"\x08\x07\x12\x04onnx")
    (folder / "corrupt.parquet").write_bytes(b"PAR1 not really")
    (folder / "empty.csv").write_text("")
    (folder / "folder.csv").mkdir()
    (folder / "data.xlsx").write_bytes(b"PK\x03\x04")
    classifier = DecisionTreeClassifier(max_depth=2).fit(table[NAMES], table["y"] > table["y"].median())
    joblib.dump(classifier, folder / "classifier.joblib")
    joblib.dump({"not": "a model"}, folder / "dict.joblib")
    _fit_xgboost(table[NAMES].to_numpy(), table["y"]).save_model(folder / "bare.json")  # records no names
    return folder


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_each_input_error_is_one_line_with_exit_status_1(case, bad_files, files, capsys, monkeypatch):
    model_path, _ = files("xgboost.json")
    monkeypatch.chdir(bad_files)
    options = {"--model": model_path.name, "--data": "data.csv", "--target": "y"}
    changes, message = ERROR_CASES[case]
    if "parquet" in case:
        pytest.importorskip("pyarrow")  # without it the error is the missing extra, tested below
    flags = [change[0] for change in changes if len(change) == 1]
    options.update(change for change in changes if len(change) == 2)
    argv = ["explain", *[item for pair in options.items() for item in pair], *flags]
    code, out, err = run(argv, capsys)
    assert code == 1
    assert out == ""  # nothing computed, nothing reported as written
    assert len(err.strip().splitlines()) == 1, err  # one line: no traceback, no native-library noise
    if message.endswith("..."):
        prefix = f"shap-rsq: error: {message[:-3]}"
        assert err.startswith(prefix), err
        assert re.search(r"[A-Za-z]{3}", err[len(prefix) :]), err  # a reason follows, not a bare code
    else:
        assert err == f"shap-rsq: error: {message}\n"


def test_pickle_refusal_says_why(files, capsys):
    path, _ = files("sklearn.joblib")
    code, _, err = run(["explain", "--model", path, "--data", files.folder / "data.csv", "--target", "y"], capsys)
    assert code == 1 and "runs any code it contains" in err


def test_a_missing_library_is_named_with_the_extra_to_install(files, capsys, monkeypatch):
    path, _ = files("xgboost.json")
    monkeypatch.setitem(sys.modules, "xgboost", None)  # makes `import xgboost` fail
    code, _, err = run(["explain", "--model", path, "--data", files.folder / "data.csv", "--target", "y"], capsys)
    assert code == 1 and "pip install 'shap-rsq[xgboost]'" in err


def test_parquet_without_pyarrow_names_the_extra(files, table, capsys, monkeypatch):
    path, _ = files("xgboost.json")
    data = files.folder / "fake.parquet"
    data.write_bytes(b"PAR1")

    def no_engine(*args, **kwargs):
        raise ImportError("Unable to find a usable engine")

    monkeypatch.setattr(pd, "read_parquet", no_engine)
    code, _, err = run(["explain", "--model", path, "--data", data, "--target", "y"], capsys)
    assert code == 1 and "pip install 'shap-rsq[parquet]'" in err


def test_parquet_output_without_pyarrow_is_refused_before_anything_is_written(files, tmp_path, capsys, monkeypatch):
    path, _ = files("xgboost.json")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real_find_spec(name, *a)
    )
    out, local = tmp_path / "r2.csv", tmp_path / "rows.parquet"
    argv = ["explain", "--model", path, "--data", files.folder / "data.csv", "--target", "y"]
    code, printed, err = run([*argv, "--out", out, "--local", local], capsys)
    assert code == 1 and printed == ""
    needs = "is Parquet, which needs pyarrow (not installed): pip install 'shap-rsq[parquet]'"
    assert err == f"shap-rsq: error: {local} {needs}\n"
    assert list(tmp_path.iterdir()) == []  # not even --out, which comes first


REQUIRED = ["explain", "--model", "m.json", "--data", "d.csv", "--target", "y"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        (["explain", "--model", "m.json"], "the following arguments are required: --data, --target"),
        ([*REQUIRED, "--max-display", "0"], "argument --max-display: must be at least 1, got 0"),
        ([*REQUIRED, "--max-display", "ten"], "argument --max-display: expected a whole number, got 'ten'"),
        ([*REQUIRED, "--n-jobs", "0"], "argument --n-jobs: 0 jobs cannot run anything"),
        ([*REQUIRED, "--n-jobs", "all"], "argument --n-jobs: expected a whole number, got 'all'"),
    ],
)
def test_command_line_mistakes_exit_with_status_2(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: shap-rsq") and message in err.splitlines()[-1], err


def test_explain_help_shows_an_example_and_how_columns_are_matched(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps the options to the terminal's width
    with pytest.raises(SystemExit) as stop:
        main(["explain", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "Columns are matched to the model's features by name" in text
    assert "  shap-rsq explain --model model.json --data patients.csv --target progression \\\n" in text
    assert max(len(line) for line in text.splitlines()) <= 80  # no paragraph left on one long line


def test_first_line_drops_native_prefixes_and_stack_traces():
    error = InputError("[02:51:59] /src/json.cc:409: Expecting: ','\nStack trace:\n  [bt] (0) libxgboost.so")
    assert first_line(error) == "Expecting: ','"


def test_python_dash_m_runs_the_command_without_a_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "shap_rsq", "explain", "--model", "absent.json", "--data", "x.csv", "--target", "y"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MPLBACKEND": "Agg"},
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "shap-rsq: error: absent.json does not exist."


def test_every_option_is_documented():
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps subcommands here
    for name, command in commands.items():
        assert f"shap-rsq {name}" in page
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in page, f"{option} of `shap-rsq {name}` is not in docs/cli.md"


def test_memory_budget_reaches_the_explainer_and_a_bad_one_is_refused(files, capsys, monkeypatch):
    model_path, _ = files("xgboost.json")
    data = files.folder / "data.csv"
    budgets = []
    original = RSquaredExplainer.__init__

    def spy(self, *args, **kwargs):
        budgets.append(kwargs.get("memory_budget"))
        original(self, *args, **kwargs)

    monkeypatch.setattr(RSquaredExplainer, "__init__", spy)
    argv = ["explain", "--model", model_path, "--data", data, "--target", "y"]
    code, _, _ = run([*argv, "--memory-budget", "0.5"], capsys)
    assert code == 0 and budgets == [0.5]
    with pytest.raises(SystemExit) as stop:
        main(["explain", "--model", str(model_path), "--data", str(data), "--target", "y", "--memory-budget", "0"])
    assert stop.value.code == 2
    assert "--memory-budget: must be at least 1/64 GiB (0.015625), got 0" in capsys.readouterr().err
    for text in ("inf", "nan"):  # were "must be at least 1/64 GiB", which infinity is
        with pytest.raises(SystemExit):
            main(["explain", "--model", str(model_path), "--data", str(data), "--target", "y", "--memory-budget", text])
        assert f"--memory-budget: must be a finite number of GiB, got {text}" in capsys.readouterr().err


def test_a_budget_refusal_names_the_option(files, capsys, monkeypatch):
    # the library's advice named RSquaredExplainer(memory_budget=...), which a command line user cannot pass
    from shap_rsq import MemoryBudgetError

    def refuse(self, *args, **kwargs):
        raise MemoryBudgetError(
            "Estimated working memory 9 GiB exceeds memory_budget=2.00 GiB: raise RSquaredExplainer(memory_budget=...)."
        )

    monkeypatch.setattr(RSquaredExplainer, "rsq", refuse)
    model_path, _ = files("xgboost.json")
    code, _, err = run(["explain", "--model", model_path, "--data", files.folder / "data.csv", "--target", "y"], capsys)
    assert code == 1
    # the budget it quotes too ("exceeds memory_budget=2.00 GiB")
    assert err.endswith(
        "error: Estimated working memory 9 GiB exceeds --memory-budget 2.00 GiB: raise --memory-budget.\n"
    )


def test_a_per_row_budget_refusal_says_to_leave_out_local(files, capsys, tmp_path, monkeypatch):
    # it said "compute global shares with rsq()", a Python call
    from shap_rsq import MemoryBudgetError
    from shap_rsq.engine.budget import check_output_rows

    with pytest.raises(MemoryBudgetError) as refusal:  # the library's own words
        check_output_rows(10**9, 20, 1, 1 << 26)

    def refuse(self, *args, **kwargs):
        raise refusal.value

    monkeypatch.setattr(RSquaredExplainer, "__call__", refuse)
    model_path, _ = files("xgboost.json")
    argv = ["explain", "--model", model_path, "--data", files.folder / "data.csv", "--target", "y"]
    code, _, err = run([*argv, "--local", tmp_path / "rows.csv"], capsys)
    assert code == 1
    assert "leave out --local (global shares take memory O(n + p))" in err and "rsq()" not in err
    assert "raise --memory-budget" in err


def test_groups_file_explains_each_group_as_one_player(files, table, capsys, tmp_path):
    model_path, model = files("xgboost.json")
    groups = {"first": NAMES[:2], "third": [NAMES[3], NAMES[2]]}
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    out = tmp_path / "shares.csv"
    argv = ["explain", "--model", model_path, "--data", files.folder / "data.csv", "--target", "y"]
    code, printed, _ = run([*argv, "--groups", tmp_path / "groups.json", "--out", out], capsys)
    assert code == 0 and "first" in printed
    written = pd.read_csv(out).set_index("feature")["rsq"]
    expected = RSquaredExplainer(model).rsq(table[NAMES], table["y"], groups=groups)
    assert list(expected.index[:2]) == ["first", "third"]
    np.testing.assert_allclose(written[expected.index], expected, atol=1e-12)
    (tmp_path / "typo.json").write_text(json.dumps({"g": [NAMES[0] + "x"]}))
    code, _, err = run([*argv, "--groups", tmp_path / "typo.json"], capsys)
    assert code == 1 and f"group 'g' names '{NAMES[0]}x', which is not one of the model's features" in err
    assert f"Did you mean '{NAMES[0]}'?" in err
    (tmp_path / "list.json").write_text("[1, 2]")
    code, _, err = run([*argv, "--groups", tmp_path / "list.json"], capsys)
    assert code == 1 and "must hold an object from group name to a non-empty list of columns" in err
    # the target is not a feature: a "did you mean" pointed at an unrelated column; every mistake
    # names the file, a column listed twice or in two groups too
    mistakes = {
        "target.json": ({"g": [NAMES[0], "y"]}, "group 'g' lists 'y', the --target column, not a feature."),
        "twice.json": ({"g": [NAMES[0], NAMES[0]]}, "Group 'g' lists a column twice."),
        "two.json": ({"g": [NAMES[0]], "h": NAMES[:2]}, f"Column '{NAMES[0]}' is in group 'g' and in group 'h'"),
    }
    for name, (content, message) in mistakes.items():
        (tmp_path / name).write_text(json.dumps(content))
        code, _, err = run([*argv, "--groups", tmp_path / name], capsys)
        assert code == 1 and f"--groups {tmp_path / name}: " in err and message in err and "Did you mean" not in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a folder no file can be made in")
def test_an_output_that_cannot_be_written_is_refused_before_the_others_are_written(files, tmp_path, capsys):
    # the plot failed after the shares were computed and --out already replaced
    model_path, _ = files("xgboost.json")
    out = tmp_path / "r2.csv"
    out.write_text("previous results\n")
    argv = ["explain", "--model", model_path, "--data", files.folder / "data.csv", "--target", "y", "--out", out]
    code, _, err = run([*argv, "--plot", "/proc/shares.png"], capsys)
    assert code == 1
    assert err.startswith("shap-rsq: error: --plot /proc/shares.png: cannot create a file in /proc (")
    assert out.read_text() == "previous results\n"


# ---------------------------------------------------------------- --sample


def test_sample_estimates_the_shares_with_standard_errors(files, table, tmp_path, capsys):
    from shap_rsq import estimate_rsq

    path, model = files("sklearn.joblib")
    data = files.folder / "data.csv"
    base = ["explain", "--model", path, "--data", data, "--target", "y", "--trust-pickle", "--weight", "w"]
    out = tmp_path / "shares.csv"
    code, printed, err = run([*base, "--sample", 40, "--seed", 7, "--out", out], capsys)
    assert code == 0, err
    assert f"estimated from 40 of {len(table):,} rows drawn at random (seed 7)" in printed
    assert "std. error" in printed
    written = pd.read_csv(out).set_index("feature")
    expected = estimate_rsq(
        RSquaredExplainer(model), table[NAMES], table["y"], table["w"], n_sample=40, random_state=7
    )  # the same draw as the library's
    np.testing.assert_allclose(written["rsq"][NAMES], expected.values[NAMES], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(written["standard_error"][NAMES], expected.standard_error[NAMES], rtol=1e-12)
    assert np.all(written["standard_error"] > 0)
    # every row drawn: the exact shares, with standard errors of zero, and the draw in the JSON file
    document = tmp_path / "shares.json"
    code, _, err = run([*base, "--sample", len(table), "--out", document], capsys)
    assert code == 0, err
    saved = json.loads(document.read_text())
    assert saved["n_sampled"] == saved["n_rows"] == len(table) and saved["seed"] == 0
    exact = expected_shares(model, table, weight=True)
    np.testing.assert_allclose(pd.Series(saved["rsq"])[NAMES], exact[NAMES], rtol=1e-9, atol=1e-12)
    assert set(saved["standard_error"]) == set(NAMES) and max(saved["standard_error"].values()) == 0.0
    # grouped columns are sampled as one player, as the library samples them
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"serum": ["s1", "s2"]}))
    code, printed, err = run([*base, "--sample", 40, "--groups", groups, "--out", tmp_path / "grouped.csv"], capsys)
    assert code == 0, err
    written = pd.read_csv(tmp_path / "grouped.csv").set_index("feature")
    expected = estimate_rsq(
        RSquaredExplainer(model),
        table[NAMES],
        table["y"],
        table["w"],
        n_sample=40,
        random_state=0,
        groups={"serum": ["s1", "s2"]},
    )
    assert set(written.index) == {"serum", "age", "bmi", "bp", "noise"}
    np.testing.assert_allclose(written["rsq"][expected.values.index], expected.values, rtol=1e-12, atol=1e-15)


def test_a_sampled_booster_gives_its_d2_and_the_models_exact_score(tmp_path, capsys):
    xgboost = pytest.importorskip("xgboost")
    X, y, _ = make_data(seed=5)
    frame = pd.DataFrame(X, columns=NAMES).assign(label=(y > np.median(y)).astype(int))
    frame.to_csv(tmp_path / "data.csv", index=False)
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3).fit(frame[NAMES], frame["label"])
    model.save_model(tmp_path / "model.json")
    argv = ["explain", "--model", tmp_path / "model.json", "--data", tmp_path / "data.csv", "--target", "label"]
    code, printed, err = run([*argv, "--sample", 60, "--out", tmp_path / "shares.json"], capsys)
    assert code == 0, err
    assert "Shares of D² (log-loss) estimated from 60 of" in printed
    saved = json.loads((tmp_path / "shares.json").read_text())
    from shap_rsq.cli.files import load_model

    read = load_model(str(tmp_path / "model.json"), trust_pickle=False)  # as the command read it
    exact = RSquaredExplainer(read).rsq(frame[NAMES], frame["label"])
    assert saved["score"] == "D² (log-loss)"
    assert saved["model_rsq"] == pytest.approx(exact.attrs["model_score"], abs=1e-9)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            ["--sample", "30", "--local", "rows.csv"],
            "--sample estimates the shares from a sample of rows, while --local",
        ),
        (["--sample", "30", "--interactions", "pairs.csv"], "while --interactions need every row exactly"),
        (["--seed", "3"], "--seed is the seed of --sample's draw: give --sample N too"),
    ],
)
def test_sample_beside_exact_outputs_or_a_seed_alone_is_refused_before_any_work(files, tmp_path, capsys, extra, says):
    path, _ = files("sklearn.joblib")
    argv = ["explain", "--model", path, "--data", files.folder / "data.csv", "--target", "y", "--trust-pickle"]
    code, printed, err = run([*argv, *[tmp_path / e if e.endswith(".csv") else e for e in extra]], capsys)
    assert code == 1 and printed == ""
    assert err.count("\n") == 1 and says in err
    assert list(tmp_path.iterdir()) == []
