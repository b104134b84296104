"""The ``shap-rsq`` command line: ``demo`` and ``explain`` (see :mod:`.commands`)."""

from .commands import build_parser, main

__all__ = ["build_parser", "main"]
