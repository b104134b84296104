"""Sphinx configuration of the shap-rsq documentation (built in CI with ``sphinx-build -W``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # document the checkout, also when it is not installed

import shap_rsq  # noqa: E402

project = "shap-rsq"
author = "shap-rsq developers"
copyright = "shap-rsq developers, BSD-3-Clause"
release = shap_rsq.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]
numpydoc_show_class_members = False  # members are listed explicitly in api.rst
numpydoc_xref_param_type = False
autodoc_typehints = "none"  # numpydoc's Parameters sections already give the types
autodoc_member_order = "bysource"

html_theme = "furo"
html_title = f"shap-rsq {release}"
html_static_path = ["_static"]

SELECTOR_API = """

Feature selection
-----------------

.. autoclass:: shap_rsq.selector.RSquaredSelector
   :members: fit, summary
   :show-inheritance:
"""


def _optional_pages(app, docname: str, source: list[str]) -> None:
    """Link and document the selector once it exists: ``docs/selector.md`` and ``shap_rsq/selector.py``
    are written alongside this site, and a toctree entry for a missing page fails a ``-W`` build."""
    if docname == "index" and not (DOCS / "selector.md").exists():
        source[0] = source[0].replace("\nselector\n", "\n")
    if docname == "api" and importlib.util.find_spec("shap_rsq.selector") is not None:
        source[0] += SELECTOR_API


def setup(app) -> None:
    app.connect("source-read", _optional_pages)
