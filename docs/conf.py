"""Sphinx configuration of the shap-rsq documentation (built in CI with ``sphinx-build -W``)."""

from __future__ import annotations

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
