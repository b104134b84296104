"""``shap-rsq explain`` and ``plots.class_bar`` on a forest classifier: shares of the Brier skill score by class."""

from __future__ import annotations

import json

import joblib
import matplotlib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine
from sklearn.ensemble import RandomForestClassifier

from shap_rsq import RSquaredExplainer, plots
from shap_rsq.cli import main
from shap_rsq.cli.classes import class_parts

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def wine_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wine")
    data = load_wine(as_frame=True)
    X = data.data.iloc[:, :6]
    labels = pd.Series(np.asarray(data.target_names)[data.target], name="cultivar")
    model = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0).fit(X, labels)
    joblib.dump(model, folder / "forest.joblib")
    pd.concat([X, labels], axis=1).to_csv(folder / "wine.csv", index=False)
    return folder, model, X, labels


def test_the_command_line_prints_and_writes_each_class_part(wine_files, capsys):
    folder, model, X, labels = wine_files
    out, local, picture = folder / "shares.csv", folder / "rows.csv", folder / "shares.png"
    argv = ["explain", "--model", str(folder / "forest.joblib"), "--trust-pickle", "--data", str(folder / "wine.csv")]
    argv += ["--target", "cultivar", "--out", str(out), "--local", str(local), "--plot", str(picture)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Brier skill score" in printed and "model BSS" in printed and "parts by class" in printed
    # the model's score in the column of the shares' sum (it was one character to the right)
    lines = {line.split("  ")[1].strip(): line for line in printed.splitlines() if line.startswith("  ")}
    assert lines["model BSS"].index(".") == lines["sum of shares"].index(".") and "BSS share" in printed
    table = pd.read_csv(out).set_index("feature")
    expected = RSquaredExplainer(model).rsq(X, labels)
    np.testing.assert_allclose(table["rsq"], expected[table.index], atol=1e-12)
    parts = table[[f"rsq_{c}" for c in model.classes_]]
    np.testing.assert_allclose(parts.sum(axis=1), table["rsq"], atol=1e-12)  # the parts add up to the share
    rows = pd.read_csv(local)
    np.testing.assert_allclose(rows[list(X.columns)].sum(), expected, atol=1e-12)
    assert picture.stat().st_size > 0


def test_json_output_names_the_score_and_each_class(wine_files):
    folder, model, _, _ = wine_files
    out = folder / "shares.json"
    argv = ["explain", "--model", str(folder / "forest.joblib"), "--trust-pickle", "--data", str(folder / "wine.csv")]
    assert main([*argv, "--target", "cultivar", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["score"] == "brier_skill_score" and set(document["rsq_by_class"]) == set(model.classes_)
    shares = pd.Series(document["rsq"])
    by_class = pd.DataFrame(document["rsq_by_class"]).loc[shares.index]
    np.testing.assert_allclose(by_class.sum(axis=1), shares, atol=1e-12)
    # every key docs/cli.md lists for --out, as a regressor's file has them
    table = pd.read_csv(folder / "wine.csv")
    assert document["weight"] is None and document["n_rows"] == len(table)
    assert document["n_features"] == len(shares) and document["sum_of_shares"] == pytest.approx(shares.sum(), abs=1e-12)


def test_class_parts_are_loss_reductions_over_the_total_sum_of_squares(wine_files):
    _, model, X, labels = wine_files
    explainer = RSquaredExplainer(model)
    parts, score = class_parts(explainer, X, labels, None)
    np.testing.assert_allclose(parts.sum(axis=1), explainer.rsq(X, labels), atol=1e-12)
    Y = (labels.to_numpy()[:, None] == model.classes_).astype(float)
    brier = np.sum((Y - model.predict_proba(X)) ** 2) / np.sum((Y - Y.mean(axis=0)) ** 2)
    assert score == pytest.approx(1.0 - brier, abs=1e-12)


def test_class_bar_stacks_the_parts_with_a_legend_of_classes(wine_files):
    _, model, X, labels = wine_files
    parts, score = class_parts(RSquaredExplainer(model), X, labels, None)
    ax = plots.class_bar(parts, max_display=4, model_rsq=score, show=False)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [str(c) for c in model.classes_]
    assert "Brier skill score" in ax.get_xaxis().get_label().get_text()
    labels_shown = [t.get_text() for t in ax.get_yticklabels()]
    assert labels_shown[-1] == parts.sum(axis=1).idxmax() and labels_shown[0] == "3 other features"
    widths = np.array([patch.get_width() for patch in ax.patches]).reshape(len(model.classes_), 4)
    np.testing.assert_allclose(widths.sum(axis=0)[::-1][0], parts.sum(axis=1).max(), atol=1e-12)
    assert any("model BSS" in t.get_text() for t in ax.texts)


def test_class_bar_refuses_each_class_s_own_r2_shares(wine_files):
    # rsq(multioutput="raw_values") was stacked and titled as Brier skill score shares ("sum of
    # shares = 1.606"): each column is its class's own R² share, on that class's scale
    _, model, X, labels = wine_files
    explainer = RSquaredExplainer(model)
    raw = explainer.rsq(X, labels, multioutput="raw_values")
    with pytest.raises(ValueError, match=r"each class's own R² shares .*loss_reduction"):
        plots.class_bar(raw, show=False)
    with pytest.raises(ValueError, match=r"multioutput='raw_values'"):
        plots.class_bar(raw.iloc[:5], show=False)  # a slice keeps the mark
    parts, _ = class_parts(explainer, X, labels, None)
    assert "multioutput" not in parts.attrs
    matplotlib.pyplot.close("all")


def test_groups_reach_the_class_parts(wine_files, tmp_path, capsys):
    folder, model, X, labels = wine_files
    groups = {"colour": ["alcohol", "malic_acid"], "ash": ["ash", "alcalinity_of_ash"]}
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    out = tmp_path / "shares.csv"
    argv = ["explain", "--model", str(folder / "forest.joblib"), "--trust-pickle", "--data", str(folder / "wine.csv")]
    assert main([*argv, "--target", "cultivar", "--groups", str(tmp_path / "groups.json"), "--out", str(out)]) == 0
    capsys.readouterr()
    table = pd.read_csv(out).set_index("feature")
    expected = RSquaredExplainer(model).rsq(X, labels, groups=groups)
    np.testing.assert_allclose(table.loc[expected.index, "rsq"], expected, atol=1e-12)
