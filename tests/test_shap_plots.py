"""shap's own plots on R² shares (``plots.for_shap`` / ``plots.shap_plot``): readable numbers, axes that say R².

Each test renders with matplotlib's Agg backend and reads the texts shap drew.
"""

from __future__ import annotations

import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import shap
from conftest import make_data
from sklearn.ensemble import HistGradientBoostingRegressor

from shap_rsq import RSquaredExplainer, plots

matplotlib.use("Agg")

NAMES = ["age", "bmi", "bp", "s1", "s2", "noise"]


@pytest.fixture(scope="module")
def explanation() -> shap.Explanation:
    X, y, _ = make_data(seed=52, n=300)
    frame = pd.DataFrame(X, columns=NAMES)
    model = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=8, random_state=0).fit(frame[:150], y[:150])
    return RSquaredExplainer(model)(frame[150:], y[150:])  # held out: some shares are negative


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(ax) -> list[str]:
    """Every non-empty text of the drawn figure: axis labels, tick labels, numbers on the bars."""
    ax.figure.canvas.draw()
    found = [t.get_text() for t in ax.figure.findobj(matplotlib.text.Text)]
    return [t for t in found if t.strip()]


def numbers(ax) -> list[str]:
    """The signed numbers shap writes on its bars (``+17.25``, ``−2.84``), not the axis ticks."""
    ax.figure.canvas.draw()
    found = [t.get_text() for axes in ax.figure.axes for t in axes.texts]
    return [t for t in found if re.fullmatch(r"[+\u2212][\d.]+|0", t)]


def shap_style(value: float) -> str:
    """A number as shap_plot has shap write it: two decimals, trailing zeros dropped, a unicode minus;
    "0" below the second decimal (shap wrote "+0" or "−0")."""
    if abs(value) < 0.005:
        return "0"
    text = re.sub(r"\.?0+$", "", f"{value:+.2f}")
    return text.replace("-", "\u2212")


def test_shap_alone_prints_row_shares_as_zero_and_calls_them_shap_values(explanation):
    """The gap: shap's fixed two decimals and wording do not fit per-row shares of R²."""
    row = numbers(shap.plots.waterfall(explanation[0], show=False))
    assert len(row) == len(NAMES) and set(row) <= {"+0", "\u22120", "+0.01", "\u22120.01"}
    plt.close("all")
    assert shap.plots.bar(explanation, show=False).get_xlabel() == "mean(|SHAP value|)"


def test_summed_shares_are_points_of_r2_that_add_up(explanation):
    summed, each = plots.for_shap(explanation, "sum"), plots.for_shap(explanation, "each")
    shares = explanation.values.sum(0)
    np.testing.assert_allclose(summed.values, 100 * shares)
    np.testing.assert_allclose(each.values.mean(0), 100 * shares)  # a row times n: its mean is the share
    model_r2 = explanation.values.sum() + explanation.base_values.sum()
    assert summed.values.sum() + summed.base_values == pytest.approx(100 * model_r2)
    assert summed.data is None  # summed feature values would be printed next to the names
    np.testing.assert_array_equal(each.data, explanation.data)


def test_bar_of_the_summed_shares_reads_in_points_of_r2_by_signed_value(explanation):
    ax = plots.shap_plot(shap.plots.bar, explanation, show=False)
    shares = 100 * explanation.values.sum(0)
    assert ax.get_xlabel() == "share of R² (percentage points)"
    order = np.argsort(-shares, kind="stable")
    assert numbers(ax) == [shap_style(v) for v in shares[order]]  # largest first; negative ones last
    assert shares.min() < 0 and not any("SHAP" in t for t in texts(ax))


def test_waterfall_of_the_summed_shares_goes_from_r2_of_e_f_to_the_model_r2(explanation):
    ax = plots.shap_plot(shap.plots.waterfall, explanation, show=False)
    drawn = texts(ax)
    model_r2 = 100 * (explanation.values.sum() + explanation.base_values.sum())
    assert any(t.startswith("model R² = ") and abs(float(t.split("= ")[1]) - model_r2) < 1e-3 for t in drawn)
    assert any(t.strip().startswith("R² of E f = ") for t in drawn)
    assert ax.figure.axes[0].get_xlabel() == "share of R² (percentage points)"
    assert not any("f(x)" in t or "E[f(X)]" in t for t in drawn)


def test_waterfall_of_one_row_prints_readable_numbers(explanation):
    ax = plots.shap_plot(shap.plots.waterfall, explanation, "each", row=0, show=False)
    drawn = numbers(ax)
    scaled = 100 * len(explanation.values) * explanation.values[0]
    assert sorted(drawn) == sorted(shap_style(v) for v in scaled)
    assert sum(t != "0" for t in drawn) >= 4  # shap alone printed none (test above)
    assert any(t.startswith("row's total = ") for t in texts(ax))
    assert ax.figure.axes[0].get_xlabel() == "row's share of R², times n (percentage points)"


def test_a_value_below_the_printed_precision_reads_0_not_minus_0():
    # in-sample, the constant E f has an R² of about -3e-8: shap printed "R² of E f = −0"
    X, y, _ = make_data(seed=52, n=200)
    model = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=8, random_state=0).fit(X, y)
    explanation = RSquaredExplainer(model)(X, y)
    assert 0 < abs(explanation.base_values.sum()) < 5e-6
    drawn = texts(plots.shap_plot(shap.plots.waterfall, explanation, show=False))
    assert any(t.strip() == "R² of E f = 0" for t in drawn)
    assert not any(re.search("(^|= )[\u2212-]0$", t.strip()) for t in drawn)


def test_beeswarm_and_scatter_label_their_axes_in_r2(explanation):
    beeswarm = plots.shap_plot(shap.plots.beeswarm, explanation, "each", show=False)
    assert beeswarm.get_xlabel() == "row's share of R², times n (percentage points)"
    shares = explanation.values.sum(0)
    labels = [t.get_text() for t in beeswarm.get_yticklabels()][::-1]  # top down
    assert labels[0] == NAMES[int(np.argmax(shares))]  # ordered by the signed share, not by mean |value|
    plt.close("all")
    scatter = plots.shap_plot(shap.plots.scatter, explanation, "each", row="bmi", show=False)
    assert scatter.get_ylabel() == "row's share of R², times n (percentage points) for\nbmi"


def test_for_shap_refuses_what_it_cannot_scale(explanation):
    with pytest.raises(ValueError, match="rows must be 'sum' or 'each'"):
        plots.for_shap(explanation, "mean")
    with pytest.raises(ValueError, match=r"one row: draw it with rows='each'"):
        plots.for_shap(explanation[0])
    with pytest.raises(ValueError, match=r"summed over rows: nothing is left per row"):
        plots.for_shap(explanation.sum(0), "each")
    with pytest.raises(ValueError, match=r"mean absolute row share.*use rows='sum'"):
        plots.shap_plot(shap.plots.bar, explanation, "each", show=False)
    # each of these died inside shap, on its "single instance" or on the missing feature values
    with pytest.raises(ValueError, match=r"shap.plots.beeswarm draws every row: use rows='each'"):
        plots.shap_plot(shap.plots.beeswarm, explanation, show=False)
    grouped = shap.Explanation(
        explanation.values, explanation.base_values, feature_names=explanation.feature_names, output_names="R²"
    )
    with pytest.raises(ValueError, match=r"shap.plots.scatter draws shares against feature values"):
        plots.shap_plot(shap.plots.scatter, grouped, "each", row=0, show=False)


def test_a_slice_keeps_each_rows_scale_and_never_says_model_r2(explanation):
    # the scale was the rows at hand: row 0 read ten times smaller from explanation[:15] than from
    # the whole, and a waterfall of a slice ended at "model R² = 10.3" (the model's was 89.9)
    whole = plots.for_shap(explanation, "each").values
    np.testing.assert_allclose(plots.for_shap(explanation[:15], "each").values, whole[:15], atol=1e-12)
    np.testing.assert_allclose(plots.for_shap(explanation[[4, 0]], "each").values, whole[[4, 0]], atol=1e-12)
    for part in (explanation[:15], explanation[:, :3]):
        drawn = texts(plots.shap_plot(shap.plots.waterfall, part, show=False))
        assert not any("model R²" in t for t in drawn)
        assert any(t.startswith("sum shown = ") for t in drawn)
        assert "model R²" not in plots.bar(part, show=False).texts[-1].get_text()
    # the whole, and its sum over rows, still end at the model's R²
    model_rsq = f"model R² = {explanation.values.sum() + explanation.base_values.sum():.3f}"
    for whole_rows in (explanation, explanation.sum(0)):
        assert model_rsq in plots.bar(whole_rows, show=False).texts[-1].get_text()
    assert explanation.output_names == "R²"  # what shap's plots print, through every slice
    assert explanation[:15, :2].output_names == "R²"


def test_what_is_no_longer_shares_is_refused_by_name(explanation):
    # shap's own bar input, e.abs.mean(0), drew shares n times smaller, and e.abs was annotated with
    # a "model R²" of 1.8 (the held-out R² was 0.34): their values are no longer shares
    for transformed, operation in (
        (explanation.abs, "abs"),
        (explanation.mean(0), "mean"),
        (explanation * 2, "__mul__"),
    ):
        with pytest.raises(ValueError, match=rf"went through \.{re.escape(operation)}, after which"):
            plots.bar(transformed, show=False)
        with pytest.raises(ValueError, match=rf"went through \.{re.escape(operation)}"):
            plots.shap_plot(shap.plots.waterfall, transformed, show=False)
    for draw in (plots.bar, plots.heatmap, lambda e, show: plots.shap_plot(shap.plots.bar, e, show=show)):
        with pytest.raises(ValueError, match="a set of cohorts: draw each one"):
            draw(explanation.cohorts(2), show=False)
    with pytest.raises(ValueError, match=r"feature 'bmi''s share on each row.*row='bmi'"):
        plots.bar(explanation[:, "bmi"], show=False)


def test_rows_drawn_again_with_replacement_are_not_the_whole(explanation):
    resampled = explanation.sample(len(explanation.values), replace=True, random_state=0)
    assert "model R²" not in plots.bar(resampled, show=False).texts[-1].get_text()
    # the rows in another order still add up to the model's R²
    model_rsq = f"model R² = {explanation.values.sum() + explanation.base_values.sum():.3f}"
    reordered = explanation[np.random.default_rng(0).permutation(len(explanation.values))]
    assert model_rsq in plots.bar(reordered, show=False).texts[-1].get_text()


def test_shaps_own_idioms_on_one_row_one_column_or_the_sum(explanation):
    # shap users write scatter(e[:, "bmi"]) and waterfall(e[0]): the same figures as row="bmi" / row=0
    column = plots.shap_plot(shap.plots.scatter, explanation[:, "bmi"], "each", show=False)
    by_name = plots.shap_plot(shap.plots.scatter, explanation, "each", row="bmi", show=False)
    points = [np.sort(np.asarray(ax.collections[0].get_offsets()), axis=0) for ax in (column, by_name)]
    np.testing.assert_allclose(points[0], points[1])  # shap shuffles the points it draws
    assert column.get_ylabel() == by_name.get_ylabel()
    plt.close("all")
    one_row = numbers(plots.shap_plot(shap.plots.waterfall, explanation[0], "each", show=False))
    plt.close("all")
    assert one_row == numbers(plots.shap_plot(shap.plots.waterfall, explanation, "each", row=0, show=False))
    plt.close("all")
    summed = texts(plots.shap_plot(shap.plots.waterfall, explanation.sum(0), show=False))
    model_rsq = 100 * (explanation.values.sum() + explanation.base_values.sum())
    assert any(t.startswith(f"model R² = {model_rsq:.3f}") for t in summed)


def test_a_wrong_row_or_plot_is_refused_by_name(explanation):
    with pytest.raises(ValueError, match=r"row='nope' names no feature of this Explanation \(its features: 'age'"):
        plots.shap_plot(shap.plots.scatter, explanation, "each", row="nope", show=False)
    with pytest.raises(ValueError, match="row number below 150"):
        plots.shap_plot(shap.plots.waterfall, explanation, "each", row=150, show=False)
    with pytest.raises(ValueError, match=r"row= picks one row .* of rows='each'"):
        plots.shap_plot(shap.plots.waterfall, explanation, row=0, show=False)
    for plot in (shap.plots.force, shap.plots.decision):
        with pytest.raises(ValueError, match="shares of R² are not a prediction"):
            plots.shap_plot(plot, explanation, "each", row=0, show=False)
    with pytest.raises(TypeError, match=r"the plot first and the shares second: shap_plot\(shap.plots.bar, expl"):
        plots.shap_plot(explanation, shap.plots.bar, show=False)


def test_a_share_below_two_decimals_reads_0(explanation):
    # shap writes a bar's value with two decimals: -0.004 points read "−0"
    row = plots.for_shap(explanation, "each").values[10]
    assert np.any((np.abs(row) < 0.005) & (row != 0)), "the fixture's row 10 should hold a tiny share"
    drawn = numbers(plots.shap_plot(shap.plots.waterfall, explanation, "each", row=10, show=False))
    assert "0" in drawn
    assert "\u22120" not in drawn and "+0" not in drawn


def test_each_output_of_raw_values_keeps_its_own_scale_and_total():
    # per-output slices e[:20, :, 0] claimed a "model R²" of 0.054 (the output's was 0.861) and
    # were scaled by the 20 rows at hand, not the 200 computed
    from sklearn.ensemble import RandomForestRegressor

    X, y, _ = make_data(seed=53, n=200)
    Y = np.column_stack([y, 3 * X[:, 1] * X[:, 2]])
    model = RandomForestRegressor(10, max_depth=4, random_state=0).fit(X, Y)
    explanation = RSquaredExplainer(model)(X, Y, multioutput="raw_values")
    for k in range(2):
        output = explanation[..., k]
        total = output.values.sum() + output.base_values.sum()
        assert f"model R² = {total:.3f}" in plots.bar(output, show=False).texts[-1].get_text()
        part = explanation[:20, :, k]
        assert "model R²" not in plots.bar(part, show=False).texts[-1].get_text()
        whole = plots.for_shap(output, "each").values
        np.testing.assert_allclose(plots.for_shap(part, "each").values, whole[:20], atol=1e-12)
        plt.close("all")


def test_shap_values_of_the_predictions_or_each_rows_total_are_not_drawn_as_shares(explanation):
    # explainer(X) without y (shap's SHAP values of the predictions) was drawn as "share of R²", its
    # waterfall ending at "model R² = -458"; e.sum(1), each row's total, passed for the global shares
    X, y, _ = make_data(seed=52, n=300)
    frame = pd.DataFrame(X, columns=NAMES)
    model = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=8, random_state=0).fit(frame[:150], y[:150])
    predictions = RSquaredExplainer(model)(frame[150:])
    draws = (plots.bar, plots.heatmap, plots.for_shap, lambda e, show=False: plots.shap_plot(shap.plots.bar, e))
    for draw in draws:
        with pytest.raises(ValueError, match=r"does not say it holds them: explainer\(X\) without y"):
            draw(predictions, show=False) if draw is not plots.for_shap else draw(predictions)
    for summed in (explanation.sum(1), explanation[:6].sum(1), explanation.sum()):
        with pytest.raises(ValueError, match=r"went through \.sum\(axis=(1|None)\)"):
            plots.for_shap(summed)
    own = shap.Explanation(explanation.values, explanation.base_values, output_names="R²", feature_names=NAMES)
    np.testing.assert_allclose(plots.for_shap(own).values, 100 * explanation.values.sum(0))


def test_the_waterfalls_model_r2_counts_the_values_below_the_printed_precision():
    # tiny shares are drawn as 0 (not "-0"), and shap summed the drawn values: ten features of a few
    # thousandths of a point made "model R² = 88.416" for an R² of 88.4305
    values = np.array([[0.8, 0.1] + [0.00004] * 8])
    tiny = shap.Explanation(values, np.zeros(1), feature_names=[f"x{j}" for j in range(10)], output_names="R²")
    ax = plots.shap_plot(shap.plots.waterfall, tiny, show=False)
    labels = [t.get_text() for a in ax.figure.axes for t in a.get_xticklabels()]
    assert "model R² = 90.032" in labels


def test_a_plot_that_would_misread_the_shares_is_refused_however_it_is_given(explanation):
    # a functools.partial of shap.plots.bar drew the mean absolute row share that bar itself is
    # refused for; shap's legacy functions, a feature as a waterfall's row, a row number as a
    # scatter's feature, no rows, and interaction shares summed over rows died inside shap
    import functools

    with pytest.raises(ValueError, match="mean absolute row share"):
        plots.shap_plot(functools.partial(shap.plots.bar, max_display=5), explanation, "each", show=False)
    for legacy in (shap.summary_plot, shap.bar_plot):
        with pytest.raises(ValueError, match=r"shap_plot draws shap\.plots\.bar, shap\.plots\.waterfall"):
            plots.shap_plot(legacy, explanation, show=False)
    with pytest.raises(ValueError, match=r"waterfall draws one row: give its number"):
        plots.shap_plot(shap.plots.waterfall, explanation, "each", row="bmi", show=False)
    with pytest.raises(ValueError, match=r"scatter draws one feature over the rows: give its name"):
        plots.shap_plot(shap.plots.scatter, explanation, "each", row=0, show=False)
    with pytest.raises(ValueError, match="has no rows"):
        plots.shap_plot(shap.plots.bar, explanation[explanation.data[:, 0] > 1e9], show=False)
    matrix = shap.Explanation(np.ones((5, 3, 3)), np.zeros(5), feature_names=["a", "b", "c"], output_names="R²")
    with pytest.raises(ValueError, match=r"summed over rows and still has shape \(3, 3\): interaction shares"):
        plots.shap_plot(shap.plots.beeswarm, matrix.sum(0), "each", show=False)


def test_a_row_of_interaction_shares_or_of_several_outputs_is_not_drawn_as_per_row_shares():
    # one row of interaction shares, e[0], is a (p, p) matrix, and a row or the sum of the shares of
    # multioutput="raw_values" a (p, outputs) table: each read as (rows, features), so bar and heatmap
    # drew them with feature names on rows and for_shap passed them on to shap
    import pickle

    from sklearn.ensemble import RandomForestRegressor

    X, y, _ = make_data(seed=54, n=200)
    frame = pd.DataFrame(X, columns=NAMES)
    explainer = RSquaredExplainer(RandomForestRegressor(10, max_depth=3, random_state=0).fit(frame, y))
    pairs = explainer(frame, y, interactions=True)
    draws = (
        plots.bar,
        plots.heatmap,
        lambda e, show: plots.for_shap(e, "each"),
        lambda e, show: plots.shap_plot(shap.plots.beeswarm, e, "each", show=show),
    )
    for draw in draws:
        for row in (pairs[0], pickle.loads(pickle.dumps(pairs))[3]):
            with pytest.raises(ValueError, match=r"holds interaction shares of shape \(6, 6\).*interaction_heatmap"):
                draw(row, show=False)
    plots.interaction_heatmap(pairs[0], show=False)  # one row's matrix is what it draws
    with pytest.raises(ValueError, match=r"draws interaction shares; this Explanation holds shares of shape \(200, 6"):
        plots.interaction_heatmap(explainer(frame, y), show=False)

    Y = np.column_stack([y, 3 * X[:, 1] * X[:, 2]])
    outputs = RSquaredExplainer(RandomForestRegressor(10, max_depth=3, random_state=0).fit(frame, Y))
    several = outputs(frame, Y, multioutput="raw_values")
    for part in (several[0], several.sum(0)):
        with pytest.raises(ValueError, match=r"shares of several outputs \(multioutput='raw_values'\)"):
            plots.bar(part, show=False)
        with pytest.raises(ValueError, match=r"several outputs.*pick an output first, explanation\[\.\.\., k\]"):
            plots.for_shap(part)
    with pytest.raises(ValueError, match=r"got shape \(6, 2\): pick an output first"):
        plots.heatmap(several[0], show=False)
    second = several[..., 1]
    total = second.values.sum() + second.base_values.sum()
    assert f"model R² = {total:.3f}" in plots.bar(second, show=False).texts[-1].get_text()
