"""Pictures of R² shares: shap-rsq's own bar chart and heatmaps, and shap's plots made to read in R².

:func:`bar`, :func:`heatmap` and :func:`interaction_heatmap` take what
:class:`~shap_rsq.RSquaredExplainer` returns and draw on matplotlib Axes, which they return.
:func:`for_shap` turns the Explanation of ``explainer(X, y)`` into percentage points of R², the
scale on which ``shap.plots`` prints readable numbers, and :func:`shap_plot` draws one of
``shap.plots`` on it with axes that say R² instead of "SHAP value".

Modules: :mod:`._shares` (the bar charts and the per-row heatmap), :mod:`._interaction` (the
interaction heatmap), :mod:`._shap` (shap's plots on R² shares).
"""

from ._interaction import interaction_heatmap
from ._shap import for_shap, shap_plot
from ._shares import bar, class_bar, heatmap

__all__ = ["bar", "class_bar", "for_shap", "heatmap", "interaction_heatmap", "shap_plot"]
