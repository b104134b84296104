"""``shap-rsq explain --sample N``: the shares estimated from ``N`` rows drawn at random, with their
standard errors (:func:`shap_rsq.estimate_rsq`), for trees too deep to decompose every row.

Every model the command explains is estimated so (regressors' R², forest classifiers' Brier skill
score, boosters' D²), of single features or ``--groups``; the model's own score is computed on every
row, exactly.  Per-row shares and interactions need every row exactly, and are refused beside
``--sample``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import r2_score

from ..explainer._estimate import estimate_rsq
from ..explainer._explainer import RSquaredExplainer
from .classes import brier_skill_score
from .files import InputError
from .report import format_table, save_bar, write_shares

__all__ = ["check_sample_options", "run_explain_sampled"]


def check_sample_options(args: argparse.Namespace) -> None:
    """Refuse ``--sample`` beside the outputs that need every row exactly, and ``--seed`` without it,
    before any work is done."""
    if args.sample is None:
        if args.seed is not None:
            raise InputError("--seed is the seed of --sample's draw: give --sample N too, or leave out --seed.")
        return
    exact = [
        option
        for option, value in (
            ("--local", args.local),
            ("--interactions", args.interactions),
            ("--plot-interactions", args.plot_interactions),
        )
        if value
    ]
    if exact:
        raise InputError(
            f"--sample estimates the shares from a sample of rows, while {' and '.join(exact)} need every row "
            f"exactly: leave out --sample, or {' and '.join(exact)}."
        )


def run_explain_sampled(
    args: argparse.Namespace, model, explainer: RSquaredExplainer, inputs, X, groups, names: list[str]
) -> int:
    """``shap-rsq explain --sample N``: the table of estimated shares with their standard errors,
    ``--out`` (with a ``standard_error`` column or object) and ``--plot``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    model : object
        The model as read from its file.
    explainer : RSquaredExplainer
        The model's explainer.
    inputs : ModelInputs
        The matched columns, with the target and weights as read.
    X : DataFrame or ndarray
        The rows as the model reads them.
    groups : dict or None
        Columns grouped into players (``--groups``).
    names : list of str
        The players' names.

    Returns
    -------
    int
        The exit status, 0.
    """
    seed = 0 if args.seed is None else args.seed
    y = inputs.y.to_numpy()
    start = time.perf_counter()
    estimate = estimate_rsq(explainer, X, y, inputs.weight, n_sample=args.sample, random_state=seed, groups=groups)
    seconds = time.perf_counter() - start
    shares = pd.Series(np.asarray(estimate.values, dtype=float), index=names, name="rsq")
    errors = pd.Series(np.asarray(estimate.standard_error, dtype=float), index=names, name="standard_error")
    score, label, model_score = _model_score(explainer, X, inputs)
    kind = f"{type(model).__module__.split('.')[0]}.{type(model).__name__}"
    title = (
        f"Shares of {score} estimated from {estimate.n_sampled:,} of {estimate.n_rows:,} rows drawn at random "
        f"(seed {seed}): {Path(args.model).name} ({kind}) on {Path(args.data).name}"
    )
    print(
        format_table(
            shares,
            model_rsq=model_score,
            seconds=seconds,
            max_display=args.max_display,
            title=title,
            score=label,
            errors=errors,
        )
    )
    if args.out:
        summary = {
            "model": str(args.model),
            "data": str(args.data),
            "target": args.target,
            "weight": args.weight,
            "n_rows": estimate.n_rows,
            "n_features": len(names),
            "score": score,
            "model_rsq": model_score,
            "sum_of_shares": float(shares.sum()),
            "n_sampled": estimate.n_sampled,
            "seed": seed,
        }
        write_shares(args.out, shares, summary, errors)
        print(f"shares written to {args.out}")
    if args.plot:
        title = f"Shares of {score} on {Path(args.data).name}, from {estimate.n_sampled:,} rows drawn"
        save_bar(args.plot, shares.rename(score), model_score, args.max_display, title)
        print(f"bar chart written to {args.plot}")
    return 0


def _model_score(explainer: RSquaredExplainer, X, inputs) -> tuple[str, str, float]:
    """The score the shares split, its short label for the table, and the model's score on every row."""
    info = explainer.model_info
    if info.second_order:  # a booster: D² of its loss, from its margins
        rows, target, weights, null = explainer._second_order_inputs(X, inputs.y.to_numpy(), inputs.weight)
        scores = explainer._second_order_scores(rows.array, target, weights, null)
        return scores["score"], scores["score"], float(scores["model_score"])
    if info.classes is not None:
        return "Brier skill score", "BSS", brier_skill_score(explainer, X, inputs.y, inputs.weight)
    return "R²", "R²", float(r2_score(inputs.y, info.predict(X), sample_weight=inputs.weight))
