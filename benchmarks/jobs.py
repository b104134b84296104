"""``rsq`` with two worker processes against TreeSHAP, alone (the 2-jobs part of ``deep.py``).

    python benchmarks/jobs.py xgb-12-10k [budget GiB] [--threads]

Fits the ``deep.py`` workload, times shap's ``TreeExplainer.shap_values`` and then
``RSquaredExplainer(model, n_jobs=2).rsq`` in the same process (the worker pool started and the
library imported in it first; plans are compiled inside the timing), and prints the workers and
block split chosen by ``engine.budget.fit_jobs``.  With ``--threads`` the blocks run on two
threads of this process (``joblib.parallel_config(backend="threading")``), and the peak resident
memory of the process is printed too.
"""

from __future__ import annotations

import importlib
import sys
import time

from deep import WORKLOADS, _data


def main(name: str, budget: float = 2.0, threads: bool = False) -> None:
    import contextlib
    import resource

    import shap
    from joblib import Parallel, delayed, parallel_config

    from shap_rsq import RSquaredExplainer
    from shap_rsq.engine.budget import fit_jobs

    n, factory = WORKLOADS[name]
    X, y = _data(n)
    model = factory().fit(X, y)
    start = time.perf_counter()
    shap.TreeExplainer(model).shap_values(X)
    treeshap = time.perf_counter() - start
    explainer = RSquaredExplainer(model, n_jobs=2, memory_budget=budget)
    forest = explainer.forest
    units = explainer._units.units()
    print("fit_jobs (jobs, split):", fit_jobs(units, n, forest.n_features, forest.n_trees, False, 2, explainer._tuning))
    Parallel(n_jobs=2)(delayed(importlib.import_module)("shap_rsq.engine.run") for _ in range(2))
    start = time.perf_counter()
    with parallel_config(backend="threading") if threads else contextlib.nullcontext():
        shares = explainer.rsq(X, y)
    seconds = time.perf_counter() - start
    how = "2 threads" if threads else "2 jobs"
    print(f"{name}, budget {budget} GiB: rsq with {how} {seconds:.1f} s, TreeSHAP {treeshap:.2f} s, ")
    print(f"ratio {seconds / treeshap:.2f}x, sum of shares {shares.sum():.12f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak resident memory of this process {peak:.2f} GiB")


if __name__ == "__main__":
    flags = [a for a in sys.argv[2:] if a.startswith("--")]
    numbers = [float(a) for a in sys.argv[2:] if not a.startswith("--")]
    main(sys.argv[1], *numbers[:1], threads="--threads" in flags)
