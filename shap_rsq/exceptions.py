"""The library's public exceptions and warnings, one place for every layer to raise them from.

This module imports nothing heavy (no shap, scikit-learn or pandas): the engine's worker processes
import it through the engine and must start without those libraries.  :class:`UnsupportedModelError`
subclasses shap's ``InvalidModelError`` (code written for ``shap.TreeExplainer`` catches it), so it
is made on first access, when shap is imported for it: the engine never touches it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["LongCallWarning", "MemoryBudgetError", "SecondOrderGapWarning", "UnsupportedModelError"]


class MemoryBudgetError(ValueError):
    """A call whose working memory cannot fit within the explainer's ``memory_budget``.

    Raised before any work starts; the message gives the estimate and what to change.
    """


class LongCallWarning(UserWarning):
    """A call is estimated to run for minutes, and no progress bar was asked for."""


class SecondOrderGapWarning(UserWarning):
    """The shares of a booster's D² add up to the second-order expansion of its loss change, and that
    is off the exact change by more than 5% of it: the trees take large steps of the margin (a high
    learning rate, few trees, large leaf values), past where the loss is close to its quadratic
    expansion."""


_UNSUPPORTED_DOC = """The model cannot be decomposed exactly (wrong task, objective, split type or output shape).

A subclass of shap's ``InvalidModelError`` (itself a ``ValueError``): code that catches what
``shap.TreeExplainer`` raises for a model it cannot explain catches this too.
"""

if TYPE_CHECKING:
    from shap.utils._exceptions import InvalidModelError

    class UnsupportedModelError(InvalidModelError):
        """The model cannot be decomposed exactly (see the module)."""


def _unsupported_model_error() -> type:
    """The class ``UnsupportedModelError``, made once: shap is imported only here."""
    from shap.utils._exceptions import InvalidModelError

    return type("UnsupportedModelError", (InvalidModelError,), {"__doc__": _UNSUPPORTED_DOC, "__module__": __name__})


def __getattr__(name: str) -> Any:
    if name == "UnsupportedModelError":
        made = _unsupported_model_error()
        globals()[name] = made  # later look-ups (and pickle's) find this one class
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
