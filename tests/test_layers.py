"""The package's layers: models -> kernels -> engine -> public API, data flowing one way."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from shap_rsq.engine.routing import KERNELS, build_units
from shap_rsq.tuning import DEFAULT_TUNING

PACKAGE = Path(__file__).resolve().parents[1] / "shap_rsq"

# what each layer may import from the package (by top-level name below shap_rsq)
ALLOWED = {
    "models": {"models", "tuning"},
    "kernels": {"kernels", "models", "tuning"},
    "engine": {"engine", "kernels", "models", "tuning"},
}


def _package_imports(path: Path) -> set[str]:
    """Top-level names below ``shap_rsq`` that a module imports (relative or absolute)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(parts[: len(parts) - node.level])
                target = base + (node.module.split(".") if node.module else [])
                if not target:  # "from .. import x": the names themselves are the modules
                    names.update(alias.name for alias in node.names)
                else:
                    names.add(target[0])
            elif node.module and node.module.startswith("shap_rsq."):
                names.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("shap_rsq."))
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer):
    for path in sorted((PACKAGE / layer).glob("*.py")):
        stray = _package_imports(path) - ALLOWED[layer]
        assert not stray, f"{path.relative_to(PACKAGE)} imports {sorted(stray)}"


def test_kernels_pull_in_neither_shap_nor_sklearn_nor_pandas():
    # worker processes import the kernels only: they must start without the heavy libraries
    code = (
        "import importlib, pkgutil, sys\n"
        "import shap_rsq.kernels as k\n"
        "for m in pkgutil.iter_modules(k.__path__): importlib.import_module('shap_rsq.kernels.' + m.name)\n"
        "print(sorted(m for m in ('shap', 'sklearn', 'pandas', 'matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_is_long():
    lengths = {p.relative_to(PACKAGE): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert max(lengths.values()) <= 430, sorted(lengths.items(), key=lambda kv: -kv[1])[:3]


def test_tuning_is_one_frozen_record():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_TUNING.parallel_work = 0.0  # type: ignore[misc]
    assert all(f.name.islower() for f in dataclasses.fields(DEFAULT_TUNING))


def test_an_unknown_kernel_is_refused_with_the_choices(fitted):
    from shap_rsq import RSquaredExplainer

    model = fitted("DecisionTreeRegressor")[0]
    with pytest.raises(ValueError, match="kernel must be one of") as error:
        build_units(RSquaredExplainer(model).forest, kernel="fast")  # type: ignore[arg-type]
    assert all(k in str(error.value) for k in KERNELS)
