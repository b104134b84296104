"""shap-rsq: exact Shapley decomposition of R² for tree models (Q-SHAP)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__all__ = [
    "LongCallWarning",
    "MemoryBudgetError",
    "RSquaredExplainer",
    "RSquaredSelector",
    "RsqEstimate",
    "SecondOrderGapWarning",
    "UnsupportedModelError",
    "__version__",
    "estimate_rsq",
    "plots",
]
__version__ = "0.1.0.dev0"

# The public names are imported on first use: the engine's worker processes import only the
# kernel modules (NumPy, SciPy), not shap and scikit-learn, which take seconds to load.
_PUBLIC = {
    "LongCallWarning": "exceptions",
    "MemoryBudgetError": "exceptions",
    "RSquaredExplainer": "explainer",
    "RSquaredSelector": "selector",
    "RsqEstimate": "explainer",
    "estimate_rsq": "explainer",
    "SecondOrderGapWarning": "exceptions",
    "UnsupportedModelError": "exceptions",
}

if TYPE_CHECKING:
    from .exceptions import LongCallWarning, MemoryBudgetError, SecondOrderGapWarning, UnsupportedModelError
    from .explainer import RsqEstimate, RSquaredExplainer, estimate_rsq
    from .selector import RSquaredSelector


def __getattr__(name: str):
    if name == "plots":  # shap_rsq.plots.bar(...) after `import shap_rsq`, as shap.plots.bar after `import shap`
        return importlib.import_module(".plots", __name__)
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)
