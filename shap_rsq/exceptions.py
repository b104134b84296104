"""The library's public exceptions and warnings, one place for every layer to raise them from.

This module imports nothing heavy (no shap, scikit-learn or pandas): the engine's worker processes
import it through the engine and must start without those libraries.
"""

from __future__ import annotations

__all__ = ["LongCallWarning", "MemoryBudgetError", "SecondOrderGapWarning", "UnsupportedModelError"]


class UnsupportedModelError(ValueError):
    """The model cannot be decomposed exactly (wrong task, objective, split type or output shape)."""


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
