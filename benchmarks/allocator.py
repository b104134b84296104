"""CPU time and page faults of calls in a process that loads its model from a file, as a user's
script or the command line does, with two versions of the package side by side.

A process that fitted the model itself has usually freed large blocks already, which raises
glibc's mmap threshold (``shap_rsq.engine.allocator``); one that only loaded it has not, and
there the kernels' temporaries fault in page by page.  The other benchmarks fit in process, so
they time the first kind.  Here every timing runs in a fresh process that unpickles the model
(fitted once by this script), TreeSHAP first (its time does not depend on ours), then ``rsq``
and per-row shares on a reused explainer: CPU seconds, medians, and minor page faults per call.
The two versions alternate, ``--runs`` times each.

    python benchmarks/allocator.py --base ../checkout-of-main xgb-p100-d6 rf-p100-d6
    python benchmarks/allocator.py --base ../old xgb-p100-d6 xgb-p100-d8 rf-p100-d6 rf-p100-d8 --runs 2
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _child(path: str, repeat: int) -> None:
    """Time one workload in this fresh process and print a JSON line."""
    import shap

    from shap_rsq import RSquaredExplainer

    with open(path, "rb") as f:
        model, X, y = pickle.load(f)
    shap.TreeExplainer(model).shap_values(X)
    start = time.process_time()
    shap.TreeExplainer(model).shap_values(X)
    result = {"TreeSHAP": time.process_time() - start}
    explainer = RSquaredExplainer(model, progress=False)
    explainer.rsq(X, y)  # read and compile once
    for label, call in (("rsq", lambda: explainer.rsq(X, y)), ("per row", lambda: explainer(X, y))):
        times, faults = [], []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.process_time()
            call()
            times.append(time.process_time() - start)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        result[label] = float(np.median(times))
        result[f"{label} faults"] = int(np.median(faults))
    print(json.dumps(result))


def _run(source: Path, path: str, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(source), str(HERE)]))
    command = [sys.executable, __file__, "--child", path, "--repeat", str(repeat)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", default=["xgb-p100-d6"])
    parser.add_argument("--base", type=Path, help="a checkout of the version to compare with")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.repeat)
        return
    from local import WORKLOADS, _data

    sides = {"now": HERE.parent}
    if args.base is not None:
        sides = {"base": args.base.resolve(), **sides}
    print("| workload | version | TreeSHAP | `rsq` | faults / call | per row | faults / call | per row / TreeSHAP |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.workloads:
            factory, p = WORKLOADS[name]
            X, y = _data(1000, p)
            path = os.path.join(tmp, f"{name}.pkl")
            with open(path, "wb") as f:
                pickle.dump((factory().fit(X, y), X, y), f)
            for run in range(args.runs):
                order = list(sides.items()) if run % 2 == 0 else list(sides.items())[::-1]
                for label, source in order:
                    r = _run(source, path, args.repeat)
                    print(
                        f"| {name} | {label} | {r['TreeSHAP']:.2f} | {r['rsq']:.2f} | {r['rsq faults']:,} | "
                        f"{r['per row']:.2f} | {r['per row faults']:,} | {r['per row'] / r['TreeSHAP']:.2f}x |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
