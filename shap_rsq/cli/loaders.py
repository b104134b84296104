"""How each library's model file is read: the loaders behind :func:`~shap_rsq.cli.files.load_model`,
with the checks that turn a file of another kind into a one-line message before a library fails
on it with its own."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["NATIVE", "NATIVE_FORMATS", "best_rounds", "load_pickle"]

NATIVE_FORMATS = "XGBoost JSON/UBJ, LightGBM text or CatBoost .cbm"


def _load_xgboost(xgboost: Any, path: str) -> Any:
    if path.lower().endswith(".json"):
        _refuse_other_json(path)
    return xgboost.Booster(model_file=path)


def _refuse_other_json(path: str) -> None:
    """JSON that is not an XGBoost model failed as a corrupt XGBoost file, with XGBoost's parser
    message (a LightGBM dump's was the whole file, 60,000 characters for 30 trees)."""
    with open(path, "rb") as file:
        head = file.read(1 << 16)
    if b'"oblivious_trees"' in head or (b'"features_info"' in head and b'"model_info"' in head):
        raise InputError(
            f"{path} is a CatBoost model saved as JSON; the command line reads CatBoost's own format: save it "
            "with model.save_model('model.cbm')."
        )
    if b'"learner"' in head:  # the first key of every XGBoost JSON model
        return
    if b'"tree_structure"' in head or b'"num_tree_per_iteration"' in head:
        raise InputError(
            f"{path} is a LightGBM model dumped as JSON (dump_model); the command line reads LightGBM's text "
            "format: save it with model.booster_.save_model('model.txt')."
        )
    raise InputError(
        f'{path} is not an XGBoost model saved as JSON (it holds no "learner"); the command line reads '
        f"{NATIVE_FORMATS}: save an XGBoost model with model.save_model('model.json')."
    )


def best_rounds(booster: Any, path: Path) -> Any:
    """The booster's rounds up to the best one when the file records early stopping by XGBoost's
    scikit-learn estimator, which predicts with them; a file saved from ``xgboost.train`` is a
    Booster, whose ``predict`` uses every round (and so does the explainer of a Booster)."""
    best = booster.attr("best_iteration")
    rounds = booster.num_boosted_rounds()
    if best is None or int(best) + 1 >= rounds or booster.attr("scikit_learn") is None:
        return booster
    # early stopping recorded in the file: its scikit-learn estimator predicts with the rounds up to
    # the best one, and so does the explanation (a bare Booster would use every round)
    print(
        f"shap-rsq: {path} records early stopping at round {int(best)}: explaining rounds 0-{int(best)} of "
        f"{rounds}, as XGBoost's scikit-learn predict does.",
        file=sys.stderr,
    )
    return booster[: int(best) + 1]


def _load_lightgbm(lightgbm: Any, path: str) -> Any:
    # LightGBM aborts the process (SIGABRT or SIGSEGV, nothing printed) on a truncated model file:
    # a complete one ends its trees, and its parameters when it lists them
    with open(path, "rb") as file:
        text = file.read()
    if b"end of trees" not in text or (b"\nparameters:\n" in text and b"end of parameters" not in text):
        raise InputError(
            f"cannot read {path} as a LightGBM model: the file ends before its trees and parameters do "
            "(truncated or corrupt); save the model again."
        )
    return lightgbm.Booster(model_str=text.decode("utf-8", errors="replace"))


# CatBoost losses of classifiers: such a file is loaded as a CatBoostClassifier, so that the
# explainer's refusal names the class the user fitted, not the one used to read the file
_CATBOOST_CLASSIFIER_LOSSES = ("Logloss", "CrossEntropy", "MultiClass", "MultiClassOneVsAll", "MultiLogloss")


def _load_catboost(catboost: Any, path: str) -> Any:
    generic = catboost.CatBoost().load_model(path)
    loss = str(generic.get_all_params().get("loss_function", "RMSE")).split(":")[0]
    kind = catboost.CatBoostClassifier if loss in _CATBOOST_CLASSIFIER_LOSSES else catboost.CatBoostRegressor
    return kind().load_model(path)


def load_pickle(path: Path) -> Any:
    import joblib

    return joblib.load(path)  # reads plain pickles too


# format -> (loader, module to import, what the file is called in messages)
NATIVE: dict[str, tuple[Callable[[Any, str], Any], str, str]] = {
    "xgboost": (_load_xgboost, "xgboost", "an XGBoost model"),
    "lightgbm": (_load_lightgbm, "lightgbm", "a LightGBM model"),
    "catboost": (_load_catboost, "catboost", "a CatBoost model"),
}
