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
from shap_rsq.plots._shares import NEGATIVE, OTHERS

matplotlib.use("Agg")  # no window, whatever the machine has

NAMES = ["age", "bmi", "bp", "s1", "s2", "noise"]


@pytest.fixture(scope="module")
def fitted() -> tuple[RSquaredExplainer, pd.DataFrame, np.ndarray]:
    X, y, _ = make_data(seed=51)
    frame = pd.DataFrame(X, columns=NAMES)
    model = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=8, random_state=0).fit(frame, y)
    return RSquaredExplainer(model), frame, y


@pytest.fixture(scope="module")
def explanation(fitted) -> shap.Explanation:
    explainer, frame, y = fitted
    return explainer(frame, y)


@pytest.fixture(scope="module")
def interactions(fitted) -> pd.DataFrame:
    explainer, frame, y = fitted
    return explainer.rsq_interactions(frame, y)


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
    assert ax.patches[0].get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb(OTHERS))


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
    assert ax.patches[0].get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb(NEGATIVE))
    assert "model R² = 0.550" in annotation(ax)
    assert ax.get_title() == ""
    # shares below a thousandth keep two digits: -0.0003 read "-0.000", and 0.0002 as nothing
    small = plots.bar(np.array([0.5, -0.0003, 0.0002, 0.0]), show=False)
    assert {"-3.0e-04", "2.0e-04", "0.000", "0.500"} <= set(annotation(small).split())


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
    # an Explanation with an output axis (multioutput="raw_values") was read as 200 features
    by_output = shap.Explanation(np.ones((5, 3, 2)), np.zeros((5, 2)), feature_names=["a", "b", "c"], output_names="R²")
    with pytest.raises(ValueError, match=r"values of shape \(5, 3, 2\).*explanation\[\.\.\., k\]"):
        plots.bar(by_output, show=False)
    # interaction shares were said to come "from multioutput='raw_values'"
    pairs = shap.Explanation(np.ones((5, 3, 3)), np.zeros(5), feature_names=["a", "b", "c"], output_names="R²")
    with pytest.raises(ValueError, match=r"interaction shares of shape \(5, 3, 3\).*interaction_heatmap"):
        plots.bar(pairs, show=False)
    with pytest.raises(TypeError, match=r"class_bar needs a DataFrame .* got Explanation"):
        plots.class_bar(by_output, show=False)


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


# ---------------------------------------------------------------- interaction_heatmap


def tick_labels(ax) -> tuple[list[str], list[str]]:
    return [t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]


def test_interaction_heatmap_orders_features_by_share_and_hides_the_diagonal(interactions):
    before = interactions.copy()
    ax = plots.interaction_heatmap(interactions, show=False)
    order = interactions.sum(axis=1).sort_values(ascending=False, kind="stable").index
    assert tick_labels(ax) == (list(order), list(order))
    assert list(order) != NAMES  # the order is the shares', not the columns'
    image = ax.images[0].get_array()
    mask = np.ma.getmaskarray(image)
    assert mask.diagonal().all() and mask.sum() == len(NAMES)  # the main effects, and only they, hidden
    expected = interactions.loc[order, order].to_numpy()
    off = ~np.eye(len(NAMES), dtype=bool)
    np.testing.assert_allclose(image.data[off], expected[off])
    low, high = ax.images[0].get_clim()
    assert high == pytest.approx(np.abs(expected[off]).max()) and low == -high  # the interactions' range only
    assert ax.images[0].get_cmap().get_bad()[:3] == pytest.approx(matplotlib.colors.to_rgb("#c4c4c4"))
    assert len(ax.texts) == len(NAMES) * (len(NAMES) - 1)  # six features: every visible cell is annotated
    pd.testing.assert_frame_equal(interactions, before)  # the caller's matrix is left as it was


def test_interaction_heatmap_with_main_effects_shows_the_diagonal_and_scales_to_it(interactions):
    ax = plots.interaction_heatmap(interactions, max_display=3, main_effects=True, annotate=False, show=False)
    order = interactions.sum(axis=1).sort_values(ascending=False, kind="stable").index[:3]
    image = ax.images[0].get_array()
    assert not np.ma.getmaskarray(image).any()
    np.testing.assert_allclose(image.data, interactions.loc[order, order].to_numpy())
    assert ax.images[0].get_clim()[1] == pytest.approx(np.abs(image.data).max())
    assert ax.get_xlabel() == f"3 of {len(NAMES)} features, by share of R²"
    assert len(ax.texts) == 0


def test_interaction_heatmap_centres_negative_interactions_and_names_array_features():
    matrix = np.array([[0.5, -0.04, 0.01], [-0.04, 0.2, -1e-6], [0.01, -1e-6, 0.3]])
    ax = plots.interaction_heatmap(matrix, show=False, title=None)
    assert tick_labels(ax)[1] == ["Feature 0", "Feature 2", "Feature 1"]  # row sums 0.47, 0.31, 0.16
    assert ax.images[0].get_clim() == pytest.approx((-0.04, 0.04))
    assert ax.get_title() == "" and ax.get_xlabel() == "features, by share of R²"
    texts = {text.get_text() for text in ax.texts}
    assert texts == {"-0.040", "0.010", "0.000"}  # a rounded -1e-6 prints without its sign
    named = plots.interaction_heatmap(matrix, feature_names=["a", "b", "c"], show=False)
    assert tick_labels(named)[1] == ["a", "c", "b"]


def test_interaction_heatmap_sums_per_row_interactions_and_skips_annotations_when_many(fitted, interactions):
    explainer, frame, y = fitted
    rows = explainer(frame, y, interactions=True)
    from_rows = plots.interaction_heatmap(rows, show=False).images[0].get_array()
    from_matrix = plots.interaction_heatmap(interactions, show=False).images[0].get_array()
    np.testing.assert_allclose(from_rows.filled(0.0), from_matrix.filled(0.0), atol=1e-12)
    big = np.diag(np.arange(20.0, 0.0, -1.0))
    ax = plots.interaction_heatmap(big, max_display=20, show=False)
    assert len(ax.texts) == 0 and ax.images[0].get_clim() == (-1.0, 1.0)  # no interactions: a scale all the same


def test_interaction_heatmap_refuses_what_is_not_an_interaction_matrix(fitted, interactions):
    explainer, frame, y = fitted
    # the table of top_k=3 pairs is 3 x 3: it was refused for its row and column names
    for k in (5, 3):
        with pytest.raises(ValueError, match=r"this is the top_k table of pairs, which is not a matrix"):
            plots.interaction_heatmap(explainer.rsq_interactions(frame, y, top_k=k), show=False)
    with pytest.raises(ValueError, match="got shape \\(2, 3\\)"):
        plots.interaction_heatmap(np.ones((2, 3)), show=False)
    with pytest.raises(ValueError, match="rows and columns name the same features"):
        plots.interaction_heatmap(interactions.iloc[::-1], show=False)
    asymmetric = np.array([[0.3, 0.1], [0.0, 0.2]])
    with pytest.raises(ValueError, match="symmetric"):
        plots.interaction_heatmap(asymmetric, show=False)
    with pytest.raises(ValueError, match="finite"):
        plots.interaction_heatmap(np.array([[np.nan, 0.0], [0.0, 0.1]]), show=False)
    with pytest.raises(ValueError, match="max_display"):
        plots.interaction_heatmap(interactions, max_display=0, show=False)
    with pytest.raises(ValueError, match="2 feature names for 3 features"):
        plots.interaction_heatmap(np.eye(3), feature_names=["a", "b"], show=False)


def test_interaction_heatmap_follows_a_given_feature_order(interactions):
    ax = plots.interaction_heatmap(interactions, max_display=2, order=[5, 0, 1], show=False)
    assert tick_labels(ax)[1] == ["noise", "age"]
    assert ax.get_xlabel() == f"2 of {len(NAMES)} features"  # not "by share": the order is the caller's
    assert ax.images[0].get_array().data[0, 1] == pytest.approx(interactions.loc["noise", "age"])
    for order, message in (([0, 0], "names a feature twice"), ([6], "positions from 0 to 5"), ([0.5], "integers")):
        with pytest.raises(ValueError, match=message):
            plots.interaction_heatmap(interactions, order=order, show=False)


def test_interaction_heatmap_draws_on_a_given_axes_and_shows_only_when_asked(interactions, monkeypatch):
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(True))
    _, ax = plt.subplots()
    assert plots.interaction_heatmap(interactions, ax=ax, show=False) is ax
    assert not shown
    plots.interaction_heatmap(interactions)
    assert shown == [True]


def test_wrong_inputs_to_the_plots_are_refused_by_name():
    # a raw AttributeError, matplotlib's "Axis limits cannot be NaN", and two R² values silently resolved
    with pytest.raises(TypeError, match=r"heatmap needs the shap\.Explanation of per-row shares"):
        plots.heatmap(np.zeros((3, 2)), show=False)
    with pytest.raises(ValueError, match=r"bar needs finite shares; \['a'\] are not"):
        plots.bar({"a": np.nan, "b": 0.2}, show=False)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="disagree; give one"):
        plots.bar({"a": 0.1}, model_rsq=0.5, model_r2=0.4, show=False)
