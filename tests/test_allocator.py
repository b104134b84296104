"""The kernels' temporaries stay mapped from block to block (``shap_rsq.engine.allocator``)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
import tracemalloc

import pytest

from shap_rsq.engine.allocator import keep_temporaries_on_the_heap
from shap_rsq.tuning import DEFAULT_TUNING

glibc = pytest.mark.skipif(
    platform.system() != "Linux"
    or platform.libc_ver()[0] != "glibc"
    or any(k.startswith("MALLOC_") for k in os.environ),
    reason="glibc's dynamic mmap threshold, at its defaults",
)

# a fresh process that fits a small forest (no large block freed yet) and counts the minor page
# faults of its second call of per-row shares; ``off`` takes the threshold raise away
_PROBE = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    from sklearn.ensemble import RandomForestRegressor
    import shap_rsq.engine.run as run
    from shap_rsq import RSquaredExplainer

    if sys.argv[1] == "off":
        run.keep_temporaries_on_the_heap = lambda n_bytes: None
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 20))
    y = X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(size=1000)
    explainer = RSquaredExplainer(RandomForestRegressor(10, max_depth=7, random_state=0).fit(X, y), progress=False)
    first = explainer(X, y).values
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    second = explainer(X, y).values
    assert np.array_equal(first, second)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
)


def _faults_per_call(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


@glibc
def test_a_fresh_process_makes_its_row_blocks_without_page_faults():
    # the gap this fixes: without the raise, every row block maps its temporaries' pages again
    # (about 40,000 faults here, 430,000 a call on XGBoost depth 6 with 300 trees)
    kept, faulting = _faults_per_call("on"), _faults_per_call("off")
    assert kept < 2_000
    assert faulting > 10 * max(kept, 1_000)


def test_the_threshold_is_one_glibc_follows_and_above_the_row_blocks():
    # glibc raises its threshold only for a freed block of at most 32 MiB, and the row blocks'
    # temporaries (``Tuning.block_elements`` float64, 4 MB) must fall below it
    n_bytes = DEFAULT_TUNING.heap_threshold_bytes
    assert 8 * DEFAULT_TUNING.block_elements < n_bytes <= 32 << 20
    # the block is the C library's, never NumPy's: the memory-budget tests' tracemalloc peaks
    # must not count 16 MiB that no page of is ever mapped in
    tracemalloc.start()
    try:
        keep_temporaries_on_the_heap(n_bytes)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
