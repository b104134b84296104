"""``shap_rsq.plots`` and the ``shap.plots`` functions the docs recommend, drawn headless."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import shap
from conftest import make_data
from sklearn.ensemble import HistGradientBoostingRegressor

from shap_rsq import RSquaredExplainer, plots

matplotlib.use("Agg")  # no window, whatever the machine has

NAMES = ["age", "bmi", "bp", "s1", "s2", "noise"]


@pytest.fixture(scope="module")
def explanation() -> shap.Explanation:
    X, y, _ = make_data(seed=51)
    frame = pd.DataFrame(X, columns=NAMES)
    model = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=8, random_state=0).fit(frame, y)
    return RSquaredExplainer(model)(frame, y)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def bar_labels(ax) -> list[str]:
    """Tick labels from the top bar down."""
    return [tick.get_text() for tick in ax.get_yticklabels()][::-1]


def bar_values(ax) -> list[float]:
    return [patch.get_width() for patch in ax.patches][::-1]


def annotation(ax) -> str:
    return " ".join(text.get_text() for text in ax.texts)


def test_bar_sorts_features_and_annotates_the_totals(explanation):
    ax = plots.bar(explanation, show=False)
    shares = pd.Series(explanation.values.sum(0), index=NAMES).sort_values(ascending=False)
    assert bar_labels(ax) == list(shares.index)
    np.testing.assert_allclose(bar_values(ax), shares.to_numpy())
    model_rsq = explanation.values.sum() + explanation.base_values.sum()
    assert f"sum of shares = {shares.sum():.3f}" in annotation(ax)
    assert f"model R² = {model_rsq:.3f}" in annotation(ax)


def test_bar_groups_the_smallest_shares_into_others(explanation):
    ax = plots.bar(explanation, max_display=3, show=False)
    shares = pd.Series(explanation.values.sum(0), index=NAMES).sort_values(ascending=False)
    assert bar_labels(ax) == [*shares.index[:2], "4 other features"]
    assert bar_values(ax)[-1] == pytest.approx(shares.iloc[2:].sum())
    assert ax.patches[0].get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb(plots.OTHERS))


@pytest.mark.parametrize("kind", ["series", "mapping", "array", "global explanation"])
def test_bar_accepts_every_form_of_shares(kind, explanation):
    totals = explanation.values.sum(0)
    shares = {
        "series": pd.Series(totals, index=NAMES),
        "mapping": dict(zip(NAMES, totals, strict=True)),
        "array": totals,
        "global explanation": explanation.sum(0),
    }[kind]
    names = NAMES if kind == "array" else None
    ax = plots.bar(shares, feature_names=names, show=False)
    assert set(bar_labels(ax)) == set(NAMES)
    assert ("model R²" in annotation(ax)) == (kind == "global explanation")


def test_bar_colours_negative_shares_and_names_array_features():
    ax = plots.bar(np.array([0.4, -0.1, 0.2]), show=False, title=None, model_rsq=0.55)
    assert bar_labels(ax) == ["Feature 0", "Feature 2", "Feature 1"]
    assert ax.patches[0].get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb(plots.NEGATIVE))
    assert "model R² = 0.550" in annotation(ax)
    assert ax.get_title() == ""


def test_bar_draws_on_a_given_axes_and_shows_only_when_asked(monkeypatch):
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(True))
    _, ax = plt.subplots()
    assert plots.bar({"a": 0.3, "b": 0.1}, ax=ax, show=False) is ax
    assert not shown
    plots.bar({"a": 0.3, "b": 0.1}, show=True)
    assert shown == [True]


def test_bar_and_heatmap_refuse_malformed_input(explanation):
    with pytest.raises(ValueError, match="feature names"):
        plots.bar(np.ones(3), feature_names=["a", "b"], show=False)
    with pytest.raises(ValueError, match="one share per feature"):
        plots.bar(np.ones((2, 3)), show=False)
    with pytest.raises(ValueError, match="max_display"):
        plots.bar(np.ones(3), max_display=0, show=False)
    with pytest.raises(ValueError, match="per-row shares"):
        plots.heatmap(explanation.sum(0), show=False)


def test_heatmap_rows_are_features_by_share_and_columns_are_data_rows(explanation):
    ax = plots.heatmap(explanation, max_display=4, show=False)
    image = ax.images[0].get_array()
    shares = pd.Series(explanation.values.sum(0), index=NAMES).sort_values(ascending=False)
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    assert labels == [*shares.index[:3], "3 other features"]
    assert image.shape == (4, len(explanation.values))
    np.testing.assert_allclose(image.sum(axis=1)[:3], shares.iloc[:3].to_numpy())
    np.testing.assert_allclose(image.sum(), explanation.values.sum())
    low, high = ax.images[0].get_clim()
    assert low == pytest.approx(-high)  # centred: rows that lose R² show in the other colour


def test_heatmap_follows_a_given_row_order(explanation):
    order = np.arange(len(explanation.values))[::-1]
    ax = plots.heatmap(explanation, max_display=len(NAMES), order=order, show=False)
    first = [NAMES.index(t.get_text()) for t in ax.get_yticklabels()]
    np.testing.assert_allclose(ax.images[0].get_array()[:, 0], explanation.values[-1, first])


SHAP_PLOTS = {
    "bar of the global shares": lambda e: shap.plots.bar(e.sum(0), show=False),
    "waterfall of the global shares": lambda e: shap.plots.waterfall(
        shap.Explanation(e.values.sum(0), e.base_values.sum(), feature_names=e.feature_names), show=False
    ),
    "beeswarm ordered by share": lambda e: shap.plots.beeswarm(e, order=np.argsort(-e.values.sum(0)), show=False),
    "heatmap": lambda e: shap.plots.heatmap(e, show=False),
    "scatter": lambda e: shap.plots.scatter(e[:, "bmi"], show=False),
    "waterfall of one row": lambda e: shap.plots.waterfall(e[0], show=False),
}


@pytest.mark.parametrize("name", list(SHAP_PLOTS))
def test_shap_plots_recommended_in_the_docs_run_headless(name, explanation):
    SHAP_PLOTS[name](explanation)
    assert plt.get_fignums()


def test_bar_model_r2_is_a_deprecated_name_of_model_rsq():
    with pytest.warns(FutureWarning, match="use model_rsq="):
        ax = plots.bar(np.array([0.4, 0.2]), show=False, model_r2=0.7)
    assert "model R² = 0.700" in annotation(ax)
