"""shap-rsq: exact Shapley decomposition of R^2 for tree models (Q-SHAP)."""

from ._models import UnsupportedModelError
from .explainer import RSquaredExplainer
from .selector import RSquaredSelector

__all__ = ["RSquaredExplainer", "RSquaredSelector", "UnsupportedModelError", "__version__"]
__version__ = "0.1.0.dev0"
