"""The explainer: :class:`RSquaredExplainer` (a ``shap.TreeExplainer`` that also knows R²) and
:func:`estimate_rsq`, the opt-in sampling estimate for forests too deep to decompose exactly.

Modules, one subject each:

- :mod:`._explainer`: the class and its calls (``rsq``, ``loss_reduction``, ``__call__``,
  ``shap_values``);
- :mod:`._inputs`: :class:`~._inputs.CallInputs`, the one object that owns the model's record and
  names and checks a call's rows, target and weights (the explainer holds it, as ``_inputs``);
- :mod:`._checks`: the constructor's arguments and the checks around a decomposition;
- :mod:`._groups`: groups of columns as players (``groups=``);
- :mod:`._interactions`: interaction shares (``rsq_interactions``, ``shap_interaction_values``);
- :mod:`._outputs`: classes and targets of a model with several outputs;
- :mod:`._second_order`: boosters of other losses than squared error: shares of D² through
  their second-order games, beside the exact score;
- :mod:`._shap_calls`: shap's own calls without ``y``;
- :mod:`._share_label`: the output name an Explanation of shares carries (read by the plots);
- :mod:`._estimate`, :mod:`._additive_part`: :func:`estimate_rsq` and its control variate.
"""

from ._estimate import RsqEstimate, estimate_rsq
from ._explainer import RSquaredExplainer

__all__ = ["RSquaredExplainer", "RsqEstimate", "estimate_rsq"]
