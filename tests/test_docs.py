"""Every ``python`` block of README.md and docs/*.md runs as written: page by page, in order, in one namespace.

Blocks that are not meant to run use another fence (``text``, ``pycon``, ``bash``).  The blocks run
in a temporary folder, so files they save (models, pictures) land there.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest
import sklearn
from threadpoolctl import threadpool_limits

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "examples").glob("*.md"))]
OPTIONAL = ("xgboost", "lightgbm", "catboost", "polars", "pyarrow", "dask")  # extras, not the core install
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    """The page's fenced ``python`` blocks, in order."""
    return FENCE.findall(page.read_text(encoding="utf-8"))


def test_the_runner_finds_the_blocks():
    assert len(python_blocks(ROOT / "docs" / "plots.md")) >= 5
    assert python_blocks(ROOT / "README.md")[0].startswith("import shap\nimport xgboost")


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_page_runs_as_written(page, tmp_path, monkeypatch):
    code = "\n".join(python_blocks(page))
    for library in OPTIONAL:
        if re.search(rf"^\s*(import|from) {library}\b", code, re.MULTILINE):
            pytest.importorskip(library)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for number, block in enumerate(python_blocks(page), start=1):
        code = compile(block, f"{page.name}, python block {number}", "exec")
        # one OpenMP thread: on a busy 2-core machine, XGBoost threads made these small fits up to 40x slower
        with warnings.catch_warnings(), sklearn.config_context(), threadpool_limits(1, user_api="openmp"):
            warnings.filterwarnings("ignore", message=".*non-interactive.*")  # plt.show() under Agg
            exec(code, namespace)
        plt.close("all")


def _public_names() -> list[str]:
    """Every public class, function and method a user reaches from ``shap_rsq`` and ``shap_rsq.plots``."""
    import shap_rsq
    from shap_rsq import plots

    names = []
    for name in shap_rsq.__all__:
        if name in ("__version__", "plots"):  # the plots module's names are added below
            continue
        value = getattr(shap_rsq, name)
        names.append(f"{value.__module__}.{value.__qualname__}")
        if isinstance(value, type):
            for klass in value.__mro__:
                if not klass.__module__.startswith("shap_rsq"):
                    continue
                for member, attribute in vars(klass).items():
                    if callable(attribute) and (not member.startswith("_") or member == "__call__"):
                        names.append(f"{klass.__module__}.{klass.__qualname__}.{member}")
    names += [f"shap_rsq.plots.{name}" for name in plots.__all__]
    return sorted(set(names))


@pytest.mark.parametrize("name", _public_names())
def test_every_public_name_documents_its_parameters_and_returns(name):
    # numpydoc's own checks: a Parameters entry for each parameter and none for another, a Returns
    # section where something is returned, and a docstring at all
    validate = pytest.importorskip("numpydoc.validate").validate
    checked = ("GL08", "PR01", "PR02", "RT01")
    missing = [f"{code}: {message}" for code, message in validate(name)["errors"] if code in checked]
    assert not missing, missing
