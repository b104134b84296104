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

# What each part of the package may import from the package, by top-level name below shap_rsq.
# Data flows one way: models -> kernels -> engine -> explainer -> selector; the plots read what the
# explainer returns; the command line sits on top of everything and nothing imports it.  The root's
# modules (the exceptions, Tuning, name suggestions) import nothing of the package.
ROOT_MODULES = {"exceptions", "tuning", "_names"}
ALLOWED = {
    "models": {"models", "exceptions", "tuning"},
    "kernels": {"kernels", "models", "tuning"},
    "engine": {"engine", "kernels", "models", "exceptions", "tuning"},
    "explainer": {"explainer", "engine", "models", "exceptions", "tuning", "_names"},
    "selector": {"selector", "explainer", "engine", "models", "exceptions", "tuning", "_names"},
    "plots": {"plots", "explainer"},
    "cli": {"cli", "plots", "selector", "explainer", "engine", "models", "exceptions", "tuning", "_names"}
    | {"__version__"},
}


def _package_imports(path: Path, package: Path = PACKAGE) -> set[str]:
    """Top-level names below ``shap_rsq`` that a module imports (relative or absolute)."""
    parts = path.relative_to(package).with_suffix("").parts
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
    paths = sorted((PACKAGE / layer).rglob("*.py"))
    assert paths
    for path in paths:
        stray = _package_imports(path) - ALLOWED[layer]
        assert not stray, f"{path.relative_to(PACKAGE)} imports {sorted(stray)}"


def test_every_module_belongs_to_a_layer_or_the_root():
    folders = {path.parent.relative_to(PACKAGE).parts[0] for path in PACKAGE.rglob("*.py") if path.parent != PACKAGE}
    assert folders == set(ALLOWED)
    root = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert root == ROOT_MODULES


@pytest.mark.parametrize("module", sorted(ROOT_MODULES))
def test_the_roots_modules_import_nothing_of_the_package(module):
    assert not _package_imports(PACKAGE / f"{module}.py")


def test_the_explainer_never_imports_the_selector_nor_anything_the_cli():
    # the two rules the table above exists for, stated where a reader looks for them
    assert "selector" not in ALLOWED["explainer"]
    assert all("cli" not in allowed for layer, allowed in ALLOWED.items() if layer != "cli")


def test_the_layer_check_sees_a_stray_import(tmp_path):
    # the parser must catch every spelling of an import that breaks the direction
    probe = tmp_path / "shap_rsq" / "explainer" / "_probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "from ..selector import RSquaredSelector\nimport shap_rsq.cli.commands\ndef late():\n    from .. import plots\n"
    )
    assert _package_imports(probe, tmp_path / "shap_rsq") == {"selector", "cli", "plots"}


def test_kernels_pull_in_neither_shap_nor_sklearn_nor_pandas():
    # worker processes import the kernels only: they must start without the heavy libraries
    code = (
        "import importlib, pkgutil, sys\n"
        "import shap_rsq.kernels as k\n"
        "for m in pkgutil.walk_packages(k.__path__, 'shap_rsq.kernels.'): importlib.import_module(m.name)\n"
        "print(sorted(m for m in ('shap', 'sklearn', 'pandas', 'matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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


# numbers at module level in kernels/ and engine/ that are not tuned: a bound of the heap layout, a
# count of the arrays the code allocates, units, and the floating-point range of the squares
NOT_TUNED = {"MAX_OBLIVIOUS_DEPTH", "_NODE_ARRAYS", "_GIB", "_SMALLEST_SQUARES", "_RATIO_SCALE"}


def _is_number(node: ast.AST) -> bool:
    """A literal number, or arithmetic, a call or a tuple of them (``1 << 22``, ``float(1 << 30)``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return bool(node.args) and all(_is_number(a) for a in node.args)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_is_number(e) for e in node.elts)
    return False


@pytest.mark.parametrize("layer", ["kernels", "engine"])
def test_tuned_numbers_live_in_tuning_only(layer):
    # a threshold at module level is read by no Tuning a test or a user passes: it belongs to Tuning
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_number(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                stray = names - NOT_TUNED
                assert not stray, f"{path.relative_to(PACKAGE)} sets {sorted(stray)} outside Tuning"
