"""Every script in examples/ runs from a folder outside the repository and writes only into ``--out``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

DIABETES_PICTURES = ("bar", "heatmap", "interactions", "shap_bar", "shap_beeswarm", "shap_scatter", "shap_waterfall")
# script -> (options for a quick run, libraries it needs, files it writes into --out, text its report holds)
CASES = {
    "quickstart.py": ([], [], [], "sum of shares"),
    "categorical_gapminder.py": (["--quick"], ["plotly", "lightgbm"], [], "equals its R²: checked"),
    "diabetes.py": (
        ["--out", "results/run1"],  # a folder that does not exist yet
        [],
        [f"results/run1/{name}" for name in ("diabetes.txt", *(f"diabetes_{p}.png" for p in DIABETES_PICTURES))],
        "held-out rows",
    ),
    "selector_pipeline.py": (["--quick"], [], [], "best max_features"),
    "genomics_screen.py": (["--genes", "1000"], ["xgboost"], [], "planted"),
    "interactions.py": ([], ["xgboost"], ["interactions.txt", "interactions.png"], "the others none: checked"),
    "fully_grown_forest.py": (["--trees", "5", "--rows", "300", "--exact"], [], [], "stay near 0: checked"),
    "paper_reproduction.py": (
        ["--replicates", "1", "--sage-replicates", "0", "--n", "150", "--p", "6", "--jobs", "1", "--max-trees", "50"],
        ["xgboost"],
        ["paper_reproduction.txt", "paper_reproduction.csv", "paper_reproduction.png"],
        "Population R²",
    ),
}


def test_every_example_is_covered():
    assert sorted(CASES) == sorted(p.name for p in EXAMPLES.glob("*.py"))


def _tracked_state() -> dict[Path, float]:
    return {p: p.stat().st_mtime_ns for p in (ROOT / "docs").rglob("*") if p.is_file() and "_build" not in p.parts}


@pytest.mark.parametrize("script", list(CASES))
def test_example_runs_elsewhere_and_writes_only_where_told(script, tmp_path):
    options, needs, written, marker = CASES[script]
    for library in needs:
        pytest.importorskip(library)
    before = _tracked_state()
    here = tmp_path / "here"
    here.mkdir()
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *options],
        cwd=here,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert marker in result.stdout
    # only the files named, in --out (by default the current folder), and nothing under docs/
    assert sorted(str(p.relative_to(here)) for p in here.rglob("*") if p.is_file()) == sorted(written)
    assert _tracked_state() == before
