"""The library's public exceptions and warnings, one place for every layer to raise them from.

This module imports nothing heavy (no shap, scikit-learn or pandas): the engine's worker processes
import it through the engine and must start without those libraries.
"""

from __future__ import annotations

__all__ = ["LongCallWarning", "MemoryBudgetError", "UnsupportedModelError"]


class UnsupportedModelError(ValueError):
    """The model cannot be decomposed exactly (wrong task, objective, split type or output shape)."""


class MemoryBudgetError(ValueError):
    """A call whose working memory cannot fit within the explainer's ``memory_budget``.

    Raised before any work starts; the message gives the estimate and what to change.
    """


class LongCallWarning(UserWarning):
    """A call is estimated to run for minutes, and no progress bar was asked for."""
