"""Minor page faults and CPU time of a reused explainer's calls, and of each of the library's
functions inside them (self: its own, without the library functions it calls; inclusive).

A call whose temporaries are mapped afresh pays a page fault per 4 KiB of them
(``shap_rsq.engine.allocator``); this finds which function makes them.  The model is fitted in
this process, or with ``--load`` saved and read back in a fresh process (XGBoost's
``save_model``, else pickle), whose allocator has freed no large block of its own.  The call is
made once before the counted ones (plans compiled).  Counting wraps every function of
``shap_rsq.kernels``, ``shap_rsq.engine`` and ``shap_rsq.models.forest`` and reads ``getrusage``
twice a call, which adds system time of its own: compare faults, not seconds, with an
unwrapped run (``--no-wrap`` counts the whole calls alone).

    python benchmarks/faults.py xgb-p100-d8 --load
    python benchmarks/faults.py rf-p100-d8 --rsq --calls 3
    python benchmarks/faults.py deep:xgb-12 --top 10
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import os
import pickle
import pkgutil
import resource
import subprocess
import sys
import tempfile
import time

_PACKAGES = ("shap_rsq.kernels", "shap_rsq.engine", "shap_rsq.models.forest")


def _workload(name: str):
    """``(unfitted model, X, y)``: ``local.py``'s workloads on 1,000 rows, ``deep:NAME`` ``deep.py``'s."""
    if name.startswith("deep:"):
        import deep

        n, factory = deep.WORKLOADS[name[5:]]
        X, y = deep._data(n)
        return factory(), X[:, : deep._columns(name[5:])], y
    from local import WORKLOADS, _data

    factory, p = WORKLOADS[name]
    X, y = _data(1000, p)
    return factory(), X, y


def _save(model, folder: str) -> str:
    if type(model).__module__.startswith("xgboost"):
        path = os.path.join(folder, "model.json")
        model.save_model(path)
    else:
        path = os.path.join(folder, "model.pkl")
        with open(path, "wb") as f:
            pickle.dump(model, f)
    return path


def _load(path: str, like):
    if path.endswith(".json"):
        model = type(like)()
        model.load_model(path)
        return model
    with open(path, "rb") as f:
        return pickle.load(f)


class _Counter:
    """Each wrapped function's calls, faults and CPU seconds, inclusive and self."""

    def __init__(self) -> None:
        self.on = False
        self.stats: dict[str, list] = {}
        self.stack: list[list] = []

    def wrap(self, function, name: str):
        @functools.wraps(function)
        def counted(*args, **kwargs):
            if not self.on:
                return function(*args, **kwargs)
            faults, start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
            self.stack.append([0, 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
                seconds = time.process_time() - start
                inner_faults, inner_seconds = self.stack.pop()
                row = self.stats.setdefault(name, [0, 0, 0, 0.0, 0.0])
                row[0] += 1
                row[1] += faults
                row[2] += faults - inner_faults
                row[3] += seconds
                row[4] += seconds - inner_seconds
                if self.stack:
                    self.stack[-1][0] += faults
                    self.stack[-1][1] += seconds

        return counted

    def install(self) -> None:
        """Wrap every function and method defined in the packages, and the names that import them."""
        import shap_rsq

        wrapped = {}
        for info in pkgutil.walk_packages(shap_rsq.__path__, "shap_rsq."):
            if not info.name.startswith(_PACKAGES):
                continue
            module = importlib.import_module(info.name)
            short = info.name.removeprefix("shap_rsq.")
            for key, value in list(vars(module).items()):
                if inspect.isfunction(value) and value.__module__ == module.__name__:
                    wrapped[id(value)] = self.wrap(value, f"{short}.{key}")
                    setattr(module, key, wrapped[id(value)])
                elif inspect.isclass(value) and value.__module__ == module.__name__:
                    for attribute, method in list(vars(value).items()):
                        if inspect.isfunction(method) and (attribute == "__init__" or not attribute.startswith("__")):
                            setattr(value, attribute, self.wrap(method, f"{short}.{key}.{attribute}"))
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("shap_rsq"):
                for key, value in list(vars(module).items()):
                    if id(value) in wrapped:
                        setattr(module, key, wrapped[id(value)])


def measure(model, X, y, rsq: bool, calls: int, top: int, wrap: bool) -> None:
    from shap_rsq import RSquaredExplainer

    counter = _Counter()
    if wrap:
        counter.install()
    explainer = RSquaredExplainer(model, progress=False)
    call = (lambda: explainer.rsq(X, y)) if rsq else (lambda: explainer(X, y))
    explainer.rsq(X, y)  # read and compile once
    call()
    counter.on = True
    for i in range(calls):
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        call()
        seconds, after = time.process_time() - start, resource.getrusage(resource.RUSAGE_SELF)
        print(
            f"call {i + 1}: {seconds:.2f} CPU s ({after.ru_stime - before.ru_stime:.2f} system), "
            f"{after.ru_minflt - before.ru_minflt:,} minor faults, peak resident {after.ru_maxrss / 1024:.0f} MiB",
            flush=True,
        )
    if not wrap:
        return
    header = ["calls", "faults, self", "faults, inclusive", "CPU s, self", "CPU s, inclusive"]
    print(f"| function (over {calls} calls) | " + " | ".join(header) + " |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (n, faults, own, seconds, own_seconds) in sorted(counter.stats.items(), key=lambda kv: -kv[1][2])[:top]:
        print(f"| {name} | {n:,} | {own:,} | {faults:,} | {own_seconds:.2f} | {seconds:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", help="local.py's (xgb-p100-d8, rf-p100-d8, ...) or deep:NAME (deep.py's)")
    parser.add_argument("--load", action="store_true", help="save the model and time it in a process that loads it")
    parser.add_argument("--rsq", action="store_true", help="rsq instead of per-row shares")
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--top", type=int, default=15, help="functions listed, most faults first")
    parser.add_argument("--no-wrap", action="store_true", help="count whole calls only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    model, X, y = _workload(args.workload)
    if args.child:
        model = _load(args.child, model)
    elif args.load:
        with tempfile.TemporaryDirectory() as folder:
            path = _save(model.fit(X, y), folder)
            subprocess.run([sys.executable, *sys.argv, "--child", path], check=True)
        return
    else:
        model.fit(X, y)
    measure(model, X, y, args.rsq, args.calls, args.top, not args.no_wrap)


if __name__ == "__main__":
    main()
