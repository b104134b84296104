"""``shap-rsq explain --interactions``, ``--top-k`` and ``--plot-interactions``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import joblib
import matplotlib
import numpy as np
import pandas as pd
import pytest
from conftest import make_data
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from shap_rsq import RSquaredExplainer
from shap_rsq.cli import interactions as cli_interactions
from shap_rsq.cli import main

matplotlib.use("Agg")

NAMES = ["age", "bmi", "bp", "s1", "s2", "noise"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GROUPS = {"body": ["bmi", "bp"], "serum": ["s2", "s1"]}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """data.csv (features, y, weights w), a forest fitted with names, one fitted on an array, a classifier."""
    where = tmp_path_factory.mktemp("interactions")
    X, y, w = make_data(seed=61)
    frame = pd.DataFrame(X, columns=NAMES)
    frame.assign(y=y, w=w).to_csv(where / "data.csv", index=False)
    forest = RandomForestRegressor(n_estimators=8, max_depth=4, random_state=0)
    joblib.dump(forest.fit(frame, y), where / "named.joblib")
    joblib.dump(RandomForestRegressor(n_estimators=8, max_depth=4, random_state=1).fit(X, y), where / "bare.joblib")
    labels = np.where(y > np.median(y), "high", "low")
    frame.assign(label=labels).to_csv(where / "classes.csv", index=False)
    classifier = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(frame, labels)
    joblib.dump(classifier, where / "classifier.joblib")
    (where / "groups.json").write_text(json.dumps(GROUPS))
    return where


def explain(folder: Path, model: str = "named.joblib", *options) -> list[str]:
    argv = ["explain", "--model", folder / model, "--trust-pickle", "--data", folder / "data.csv", "--target", "y"]
    return [str(a) for a in [*argv, *options]]


def rows(folder: Path) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    table = pd.read_csv(folder / "data.csv")
    return table[NAMES], table["y"].to_numpy(), table["w"].to_numpy()


@pytest.mark.parametrize("with_plot", [False, True], ids=["pairs only", "pairs and heatmap"])
def test_the_written_pairs_are_rsq_interactions_top_k(with_plot, folder, tmp_path, capsys):
    out, picture = tmp_path / "pairs.csv", tmp_path / "pairs.png"
    options = ["--interactions", out, "--top-k", "4", *(["--plot-interactions", picture] if with_plot else [])]
    assert main(explain(folder, "named.joblib", *options)) == 0
    printed = capsys.readouterr().out
    written = pd.read_csv(out)
    X, y, _ = rows(folder)
    expected = RSquaredExplainer(joblib.load(folder / "named.joblib")).rsq_interactions(X, y, top_k=4)
    assert list(written.columns) == ["feature_a", "feature_b", "rsq"] and len(written) == 4
    # the heatmap asks for every pair; the file must still be exactly top_k's answer
    pd.testing.assert_frame_equal(written[["feature_a", "feature_b"]], expected[["feature_a", "feature_b"]])
    np.testing.assert_allclose(written["rsq"], expected["rsq"], rtol=0, atol=1e-12)
    assert list(written["rsq"].abs()) == sorted(written["rsq"].abs(), reverse=True)
    first = expected.iloc[0]
    assert re.search(rf"^  {first.feature_a} x {first.feature_b}\s+{first.rsq:.4f}$", printed, re.MULTILINE)
    assert f"interactions written to {out}" in printed
    assert (picture.read_bytes()[:8] == PNG_MAGIC) if with_plot else not picture.exists()


def test_json_pairs_with_weights_carry_the_run_and_k(folder, tmp_path, capsys):
    out = tmp_path / "pairs.json"
    assert main(explain(folder, "named.joblib", "--weight", "w", "--interactions", out, "--top-k", "3")) == 0
    document = json.loads(out.read_text())
    X, y, w = rows(folder)
    expected = RSquaredExplainer(joblib.load(folder / "named.joblib")).rsq_interactions(X, y, w, top_k=3)
    assert document["top_k"] == 3 and document["weight"] == "w" and document["n_features"] == len(NAMES)
    pairs = pd.DataFrame(document["interactions"])
    assert list(pairs.columns) == ["feature_a", "feature_b", "rsq"]
    assert list(zip(pairs.feature_a, pairs.feature_b, strict=True)) == list(
        zip(expected.feature_a, expected.feature_b, strict=True)
    )
    np.testing.assert_allclose(pairs["rsq"], expected["rsq"], rtol=0, atol=1e-12)
    unweighted = RSquaredExplainer(joblib.load(folder / "named.joblib")).rsq_interactions(X, y, top_k=3)
    assert not np.allclose(pairs["rsq"], unweighted["rsq"])  # the weights were used


@pytest.mark.parametrize("model", ["named.joblib", "bare.joblib"], ids=["names", "positions"])
def test_groups_interact_as_players_by_name(model, folder, tmp_path, capsys):
    out = tmp_path / "pairs.csv"
    # without names every column but the target and the weight is a feature: w must be the weight
    argv = explain(folder, model, "--groups", folder / "groups.json", "--interactions", out, "--top-k", "100")
    assert main([*argv, "--weight", "w"]) == 0
    written = pd.read_csv(out)
    X, y, w = rows(folder)
    if model == "bare.joblib":  # a model without names reads an array, and groups are given by position
        X = X.to_numpy()
        groups = {name: [NAMES.index(c) for c in columns] for name, columns in GROUPS.items()}
    else:
        groups = GROUPS
    expected = RSquaredExplainer(joblib.load(folder / model)).rsq_interactions(X, y, w, top_k=100, groups=groups)
    players = ["body", "serum", "age", "noise"]
    if model == "bare.joblib":  # the library labels an array's columns by position (groups by name); the CLI by name
        for column in ("feature_a", "feature_b"):
            expected[column] = [c if isinstance(c, str) else NAMES[c] for c in expected[column]]
    assert len(written) == len(expected) == 6  # every pair of the four players
    assert set(written.feature_a) | set(written.feature_b) == set(players)
    pd.testing.assert_frame_equal(written[["feature_a", "feature_b"]], expected[["feature_a", "feature_b"]])
    np.testing.assert_allclose(written["rsq"], expected["rsq"], rtol=0, atol=1e-12)


def test_the_heatmap_block_is_the_matrix_of_rsq_interactions(folder):
    X, y, _ = rows(folder)
    explainer = RSquaredExplainer(joblib.load(folder / "named.joblib"))
    for groups in (None, GROUPS):
        matrix = explainer.rsq_interactions(X, y, groups=groups)
        pairs = explainer.rsq_interactions(X, y, top_k=100, groups=groups)
        shares = explainer.rsq(X, y, groups=groups)
        shown = list(shares.sort_values(ascending=False).index[:3])
        block = cli_interactions.pairs_matrix(pairs, shares, shown)
        # the diagonal holds main effects net of every pair, also those with features left out
        pd.testing.assert_frame_equal(block, matrix.loc[shown, shown], rtol=0, atol=1e-12)


def test_the_heatmap_draws_the_features_with_the_largest_shares(folder, tmp_path, capsys, monkeypatch):
    drawn = []
    monkeypatch.setattr(cli_interactions, "save_figure", lambda path, ax: drawn.append(ax))
    argv = explain(folder, "named.joblib", "--plot-interactions", tmp_path / "h.png", "--max-display", "3")
    assert main(argv) == 0
    X, y, _ = rows(folder)
    shares = RSquaredExplainer(joblib.load(folder / "named.joblib")).rsq(X, y)
    (ax,) = drawn
    assert [t.get_text() for t in ax.get_yticklabels()] == list(shares.sort_values(ascending=False).index[:3])
    assert ax.get_xlabel() == "3 of 6 features, by share of R²"
    assert np.ma.getmaskarray(ax.images[0].get_array()).diagonal().all()
    assert "interactions written" not in capsys.readouterr().out  # no --interactions: no pairs file


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "argument --top-k: must be at least 1, got 0"),
        ("-3", "argument --top-k: must be at least 1, got -3"),
        ("many", "argument --top-k: expected a whole number, got 'many'"),
    ],
)
def test_a_bad_top_k_is_refused_by_the_parser(value, message, folder, capsys):
    with pytest.raises(SystemExit) as stop:
        main(explain(folder, "named.joblib", "--interactions", "pairs.csv", "--top-k", value))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: shap-rsq") and message in err.splitlines()[-1], err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--top-k", "5"], "--top-k 5 sets how many pairs --interactions writes: give --interactions too."),
        (["--interactions", "pairs.txt"], "--interactions pairs.txt: the file name must end with .csv or .json."),
        (["--interactions", "nowhere/p.csv"], "--interactions nowhere/p.csv: folder nowhere does not exist."),
        (
            ["--plot-interactions", "h.docx"],
            "--plot-interactions h.docx: the file name must end with an image type such as .png, .svg or .pdf.",
        ),
        (["--plot-interactions", "nowhere/h.png"], "--plot-interactions nowhere/h.png: folder nowhere does not exist."),
    ],
)
def test_bad_interaction_outputs_are_refused_before_any_work(options, message, folder, capsys, monkeypatch):
    monkeypatch.chdir(folder)
    code = main(explain(folder, "named.joblib", *options))
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == f"shap-rsq: error: {message}\n"


def test_a_classifiers_pairs_are_of_its_brier_skill_score(folder, tmp_path, capsys):
    out = tmp_path / "pairs.csv"
    argv = explain(folder, "classifier.joblib", "--interactions", out, "--top-k", "3")
    argv[argv.index("--target") + 1] = "label"
    argv[argv.index("--data") + 1] = str(folder / "classes.csv")
    assert main(argv) == 0
    capsys.readouterr()
    table = pd.read_csv(folder / "classes.csv")
    expected = RSquaredExplainer(joblib.load(folder / "classifier.joblib")).rsq_interactions(
        table[NAMES], table["label"], top_k=3
    )
    written = pd.read_csv(out)
    pd.testing.assert_frame_equal(written[["feature_a", "feature_b"]], expected[["feature_a", "feature_b"]])
    np.testing.assert_allclose(written["rsq"], expected["rsq"], rtol=0, atol=1e-12)
    assert np.abs(written["rsq"]).max() > 1e-4


def test_the_librarys_refusal_ends_in_one_line_not_a_traceback(folder, tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise NotImplementedError("Interaction shares of R² are not available here.\n  more detail")

    monkeypatch.setattr(RSquaredExplainer, "rsq_interactions", refuse)
    code = main(explain(folder, "named.joblib", "--interactions", tmp_path / "pairs.csv"))
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.endswith("\nshap-rsq: error: --interactions: Interaction shares of R² are not available here.\n")
