"""Where shap-rsq keeps its own code instead of a library call, what the library cannot do here.

Each test shows the gap named in a one-line comment next to the kept code.
"""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import shap
from conftest import make_data
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.feature_selection._from_model import _calculate_threshold
from sklearn.utils.validation import validate_data

from shap_rsq import RSquaredExplainer, plots
from shap_rsq.selector._selection_rule import threshold_rule

matplotlib.use("Agg")

NAMES = ["age", "bmi", "bp", "s1", "s2", "noise"]


@pytest.fixture(scope="module")
def fitted():
    X, y, _ = make_data(seed=53, n=300)
    frame = pd.DataFrame(X, columns=NAMES)
    model = HistGradientBoostingRegressor(max_iter=30, max_leaf_nodes=8, random_state=0).fit(frame[:150], y[:150])
    return model, frame[150:], y[150:]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("threshold", [None, "mean", "median", "1.5*mean", "0.5*median", 0.02])
def test_threshold_forms_of_select_from_model_give_the_same_cut(threshold):
    shares = np.array([0.31, 0.2, 0.05, 0.0, -0.02, 0.11])
    assert threshold_rule(threshold)(shares) == pytest.approx(_calculate_threshold(None, shares, threshold))


def test_select_from_model_cannot_read_a_cumulative_threshold():
    shares = np.array([0.31, 0.2, 0.05, 0.0, -0.02, 0.11])
    with pytest.raises(ValueError):
        _calculate_threshold(None, shares, "cumulative:0.9")
    assert threshold_rule("cumulative:0.9")(shares) == pytest.approx(0.11)  # 0.31 + 0.2 + 0.11 >= 0.9 * 0.67


def test_sklearn_refuses_reordered_columns_which_the_explainer_puts_in_order(fitted):
    model, X, y = fitted
    reordered = X[NAMES[::-1]]
    with pytest.raises(ValueError, match="same order"):
        validate_data(model, reordered, reset=False)
    explainer = RSquaredExplainer(model)
    pd.testing.assert_series_equal(explainer.rsq(reordered, y)[NAMES], explainer.rsq(X, y))


def test_shap_bar_on_rows_draws_mean_absolute_shares_that_add_up_to_nothing(fitted):
    model, X, y = fitted
    explanation = RSquaredExplainer(model)(X, y)
    ax = shap.plots.bar(explanation, show=False)
    widths = sorted(patch.get_width() for patch in ax.patches)
    np.testing.assert_allclose(widths, sorted(np.abs(explanation.values).mean(0)))
    assert not np.isclose(sum(widths), explanation.values.sum())  # the shares add up to R²; these do not
    plt.close("all")
    ours = plots.bar(explanation, show=False)
    assert "sum of shares" in " ".join(t.get_text() for t in ours.texts)


def test_shap_heatmap_ranks_features_by_mean_absolute_row_share(fitted):
    model, X, y = fitted
    explanation = RSquaredExplainer(model)(X, y)
    shares = explanation.values.sum(0)
    by_magnitude = [NAMES[j] for j in np.argsort(-np.abs(explanation.values).mean(0))]
    by_share = [NAMES[j] for j in np.argsort(-shares)]
    assert by_magnitude != by_share  # on held-out rows the two orders differ
    shap.plots.heatmap(explanation, show=False)
    drawn = [t.get_text() for t in plt.gcf().axes[0].get_yticklabels() if t.get_text() in NAMES]
    assert drawn == by_magnitude
    plt.close("all")
    ours = plots.heatmap(explanation, show=False)
    assert [t.get_text() for t in ours.get_yticklabels()] == by_share
