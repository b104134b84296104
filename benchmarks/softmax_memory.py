"""Memory and time of a softmax booster's ``rsq``: CPU seconds and ``tracemalloc``'s peak, one process.

Three-class XGBoost classifiers (100 rounds) on standard normal rows, the target
``x0 + x1 x2 + noise`` cut at -1 and 1; each workload fits its model, reads it once on 20 rows,
then times one ``rsq`` on all rows with the peak of the memory it traced.

    python benchmarks/softmax_memory.py                  # every workload
    python benchmarks/softmax_memory.py rows-200k        # the default budget on 200,000 rows
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np
import xgboost

from shap_rsq import RSquaredExplainer

# name: (rows, depth, memory budget in GiB)
WORKLOADS = {
    "rows-200k": (200_000, 4, 2.0),
    "budget-64MiB": (50_000, 3, 1 / 16),
    "rows-20k": (20_000, 4, 2.0),
}


def measure(name: str) -> str:
    n, depth, budget = WORKLOADS[name]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 10))
    labels = np.digitize(X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n), [-1.0, 1.0])
    model = xgboost.XGBClassifier(n_estimators=100, max_depth=depth, n_jobs=2).fit(X, labels)
    explainer = RSquaredExplainer(model, memory_budget=budget, progress=False)
    explainer.rsq(X[:20], labels[:20])
    tracemalloc.start()
    start = time.process_time()
    explainer.rsq(X, labels)
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    resident = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return (
        f"{name}: {n:,} rows, depth {depth}, budget {budget:g} GiB: {seconds:.1f} CPU s, "
        f"{peak:.0f} MiB traced, {resident:.0f} MiB resident (whole process)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "workloads", nargs="*", metavar="WORKLOAD", help=f"any of {', '.join(WORKLOADS)} (default: all)"
    )
    names = parser.parse_args().workloads or list(WORKLOADS)
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    for name in names:
        print(measure(name), flush=True)


if __name__ == "__main__":
    main()
