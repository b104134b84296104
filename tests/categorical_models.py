"""Mixed rows (categories, numbers, NaN) and small models of every library that split on categories,
for the categorical tests; the oracle on a model's routing columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
from oracle import interaction_oracle, rsq_oracle

from shap_rsq import RSquaredExplainer

COLOURS = list("abcdefg")  # seven categories: LightGBM splits them as sets (max_cat_to_onehot=4)
SIZES = ["s", "m", "l"]  # three: LightGBM splits one of them off (one-hot)


def mixed_data(seed: int = 0, n: int = 240, nan: bool = True):
    """A frame ``colour, x0, size, x1, x2`` (pandas categories and numbers, NaN in both), y, weights."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(COLOURS, n)
    size = rng.choice(SIZES, n)
    x = rng.normal(size=(n, 3))
    effect = dict(zip(COLOURS, [0.0, 2.0, -1.0, 3.0, 1.0, -2.0, 0.5], strict=True))
    y = (
        np.array([effect[c] for c in colour])
        + 1.5 * x[:, 0]
        + x[:, 1] * (size == "l")
        + 0.3 * x[:, 2]
        + rng.normal(scale=0.3, size=n)
    )
    frame = pd.DataFrame(
        {
            "colour": pd.Categorical(colour, categories=COLOURS),
            "x0": x[:, 0],
            "size": pd.Categorical(size, categories=SIZES),
            "x1": x[:, 1],
            "x2": x[:, 2],
        }
    )
    if nan:
        for column in ("colour", "size", "x1"):
            frame.loc[rng.random(n) < 0.08, column] = np.nan
    return frame, y, rng.uniform(0.5, 2.0, size=n)


def as_codes(frame: pd.DataFrame) -> pd.DataFrame:
    """The same rows with the categories as integer codes (NaN missing), numeric columns."""
    out = frame.copy()
    for column in ("colour", "size"):
        codes = frame[column].cat.codes.astype(float)
        out[column] = codes.where(codes >= 0, np.nan)
    return out


LIGHTGBM_MODES = ["gbdt", "dart", "goss", "rf"]


def lightgbm_model(boosting: str = "gbdt", codes: bool = False, seed: int = 0, **options):
    """A small LGBMRegressor on mixed rows (pandas categories, or ``categorical_feature=`` on codes)."""
    import lightgbm

    X, y, w = mixed_data(seed)
    params = dict(n_estimators=12, num_leaves=8, min_child_samples=5, min_data_per_group=5, cat_smooth=1.0)
    params.update(cat_l2=1.0, verbose=-1, random_state=seed, boosting_type=boosting)
    if boosting == "rf":
        params.update(bagging_fraction=0.7, bagging_freq=1)
    params.update(options)
    model = lightgbm.LGBMRegressor(**params)
    if codes:
        X = as_codes(X)
        model.fit(X.to_numpy(), y, categorical_feature=[0, 2])
        return model, X.to_numpy(), y, w
    return model.fit(X, y), X, y, w


def routed_oracle(explainer: RSquaredExplainer, X, y, w, interactions: bool = False):
    """Subset enumeration over the model's features on its routing rows: each feature is one
    player with its routing columns (the oracle walks the trees column by column)."""
    forest = explainer.forest
    rows = explainer._inputs.rows_weights(X, None, require_variance=False)[0].array
    routed = forest.routing_rows(rows)
    members = [list(np.flatnonzero(forest.routing.column_feature == j)) for j in range(forest.n_model_features)]
    oracle = interaction_oracle if interactions else rsq_oracle
    return oracle(forest, routed, y, w, players=members)


def xgboost_model(kind: str = "sklearn", onehot: bool = False, seed: int = 0):
    """A small XGBoost model with ``enable_categorical=True``: ``kind`` ``"sklearn"`` (pandas
    categories, stored in the model), ``"booster"`` (the same, as a Booster) or ``"codes"``
    (an array of integer codes with ``feature_types``); one-hot or partition splits."""
    import xgboost

    X, y, w = mixed_data(seed)
    params = dict(n_estimators=8, max_depth=3, enable_categorical=True, tree_method="hist", random_state=seed)
    params.update(max_cat_to_onehot=8 if onehot else 1, min_child_weight=2)
    if kind == "codes":
        X = as_codes(X).to_numpy()
        params.update(feature_types=["c", "q", "c", "q", "q"])
    model = xgboost.XGBRegressor(**params).fit(X, y)
    return (model.get_booster() if kind == "booster" else model), X, y, w


def _lightgbm_case(mode: str, codes: bool):
    return lambda: lightgbm_model(mode, codes)


def _xgboost_case(kind: str, onehot: bool):
    return lambda: xgboost_model(kind, onehot)


def hist_model(kind: str = "from_dtype", seed: int = 0):
    """A small HistGradientBoostingRegressor on mixed rows, its categorical features given by
    ``kind``: ``"from_dtype"`` (pandas categories), ``"names"``, ``"mask"`` or ``"indices"`` (an
    array of integer codes)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, y, w = mixed_data(seed)
    given = {"from_dtype": "from_dtype", "names": ["colour", "size"], "mask": [True, False, True, False, False]}
    if kind == "indices":
        X = as_codes(X).to_numpy()
    elif kind == "names":
        X = X.astype({"colour": object, "size": object})  # text columns, named as categorical
    model = HistGradientBoostingRegressor(
        max_iter=10,
        max_leaf_nodes=6,
        min_samples_leaf=5,
        categorical_features=given.get(kind, [0, 2]),
        random_state=seed,
    )
    return model.fit(X, y), X, y, w


def catboost_model(splits: str = "ctr", seed: int = 0, **options):
    """A small CatBoostRegressor on mixed rows (categories as text, NaN in numbers only): splits on
    each feature's own CTR (``"ctr"``) or one-hot splits (``"onehot"``)."""
    import catboost

    X, y, w = mixed_data(seed, nan=False)
    X = X.astype({"colour": str, "size": str})
    X.loc[X.index % 11 == 0, "x1"] = np.nan
    params = dict(iterations=10, depth=3, verbose=0, random_seed=seed, max_ctr_complexity=1, thread_count=1)
    params.update(allow_writing_files=False)
    params.update(one_hot_max_size=10 if splits == "onehot" else 1, cat_features=[0, 2])
    params.update(options)
    return catboost.CatBoostRegressor(**params).fit(X, y), X, y, w


# name -> a factory of (model, X, y, w); "codes" in the name: X holds integer codes, not categories
CASES = {
    **{f"lightgbm-{m}-{'codes' if c else 'pandas'}": _lightgbm_case(m, c) for m in LIGHTGBM_MODES for c in (0, 1)},
    **{
        f"xgboost-{k}-{'onehot' if o else 'partition'}": _xgboost_case(k, o)
        for k in ("sklearn", "booster", "codes")
        for o in (0, 1)
    },
    **{f"catboost-{kind}": (lambda kind=kind: catboost_model(kind)) for kind in ("ctr", "onehot")},
    **{f"hist-{kind}": (lambda kind=kind: hist_model(kind)) for kind in ("from_dtype", "names", "mask", "indices")},
}


def model_predict(model, X):
    """The library's own prediction of rows as the user passes them."""
    if type(model).__name__ == "Booster" and type(model).__module__.startswith("xgboost"):
        import xgboost

        return model.predict(xgboost.DMatrix(X, missing=np.nan, enable_categorical=True))
    return model.predict(X)


def model_leaves(model, X):
    """The leaf node each row reaches in each tree, by the library's own routing (``None`` where it
    gives none in the numbering of the forest as read)."""
    name = type(model).__module__.split(".")[0]
    if name == "lightgbm":
        return model.predict(X, pred_leaf=True), "lightgbm"
    if name == "xgboost":
        return model_predict_leaves_xgboost(model, X), "xgboost"
    return None, name


def model_predict_leaves_xgboost(model, X):
    import xgboost

    booster = model if isinstance(model, xgboost.Booster) else model.get_booster()
    return booster.predict(xgboost.DMatrix(X, missing=np.nan, enable_categorical=True), pred_leaf=True).astype(int)


def probe_rows(X, unseen: bool = True):
    """X and rows with every category, NaN, and (``unseen``) categories or codes the model never saw."""
    if isinstance(X, pd.DataFrame) and not isinstance(X["colour"].dtype, pd.CategoricalDtype):  # CatBoost: text
        extra = pd.DataFrame(
            {"colour": ["a", "g", "zz", "b"] * 3, "x0": 0.1, "size": ["s", "l", "xl"] * 4, "x1": np.nan, "x2": 0.2}
        )
        return pd.concat([X, extra], ignore_index=True)
    if isinstance(X, np.ndarray):
        colours = [-1, 0, 6, 7, 40, 2.7, np.nan] if unseen else [0, 3, 6, 2.7, np.nan]
        sizes = [0, 2, 9, np.nan] if unseen else [0, 1, 2, np.nan]
        return np.vstack([X, np.array([[c, 0.1, s, np.nan, 0.2] for c in colours for s in sizes])])
    colours = ["a", "g", "zz", None] if unseen else ["a", "g", "c", None]
    sizes = ["s", "l", "xl"] if unseen else ["s", "l", None]
    extra = pd.DataFrame(
        {
            "colour": [c for c in colours for _ in sizes],
            "x0": 0.1,
            "size": sizes * len(colours),
            "x1": np.nan,
            "x2": 0.2,
        }
    )
    both = pd.concat([X.astype({"colour": object, "size": object}), extra], ignore_index=True)
    # categories the model never saw stay in the frame's own list, in another order
    both["colour"] = pd.Categorical(both["colour"], categories=[*COLOURS, "zz"] if unseen else COLOURS)
    both["size"] = pd.Categorical(both["size"], categories=["xl", "l", "m", "s"] if unseen else SIZES)
    return both


def objective_model(name: str, seed: int = 0):
    """A small booster of another loss than squared error on mixed rows, by ``"library:objective"``
    (:data:`OBJECTIVE_CASES`): ``(model, X, target, w)``, the target of the objective's kind."""
    from conftest import objective_target

    library, objective = name.split(":", 1)
    kind = OBJECTIVE_CASES[name]
    X, y, w = mixed_data(seed, nan=library != "catboost")
    target = objective_target(kind, y, X, seed=seed + 1)
    classifier = kind in ("binary", "three")
    if library == "lightgbm":
        import lightgbm

        params = dict(n_estimators=6, num_leaves=6, min_child_samples=5, min_data_per_group=5, cat_smooth=1.0)
        params.update(verbose=-1, random_state=seed, objective=objective)
        model = (lightgbm.LGBMClassifier if classifier else lightgbm.LGBMRegressor)(**params)
    elif library == "xgboost":
        import xgboost

        params = dict(n_estimators=6, max_depth=3, enable_categorical=True, tree_method="hist", random_state=seed)
        params.update(max_cat_to_onehot=1, min_child_weight=2, objective=objective)
        model = (xgboost.XGBClassifier if classifier else xgboost.XGBRegressor)(**params)
    elif library == "hist":
        from sklearn import ensemble

        params = dict(max_iter=6, max_leaf_nodes=6, min_samples_leaf=5, categorical_features="from_dtype")
        params.update(random_state=seed)
        if classifier:
            model = ensemble.HistGradientBoostingClassifier(**params)
        else:
            model = ensemble.HistGradientBoostingRegressor(loss=objective, **params)
    else:
        import catboost

        X = X.astype({"colour": str, "size": str})
        X.loc[X.index % 11 == 0, "x1"] = np.nan
        params = dict(iterations=6, depth=3, verbose=0, random_seed=seed, max_ctr_complexity=1, thread_count=1)
        params.update(allow_writing_files=False, one_hot_max_size=1, cat_features=[0, 2])
        loss = "Tweedie:variance_power=1.5" if objective == "Tweedie" else objective
        estimator = catboost.CatBoostClassifier if classifier else catboost.CatBoostRegressor
        model = estimator(loss_function=loss, **params)
    return model.fit(X, target), X, target, w


# boosters of other losses that split on categories: "library:objective" -> the target's kind
OBJECTIVE_CASES = {
    "lightgbm:binary": "binary",
    "lightgbm:multiclass": "three",
    "lightgbm:poisson": "count",
    "xgboost:binary:logistic": "binary",
    "xgboost:multi:softprob": "three",
    "xgboost:count:poisson": "count",
    "hist:binary": "binary",
    "hist:three": "three",
    "hist:poisson": "count",
    "catboost:Logloss": "binary",
    "catboost:MultiClass": "three",
    "catboost:Poisson": "count",
    "catboost:Tweedie": "count",
}


def routed_second_order_oracle(explainer: RSquaredExplainer, X, y, w, interactions: bool = False):
    """:func:`oracle.second_order_oracle` on the routing rows, each model feature one player with its
    routing columns (as :func:`routed_oracle`)."""
    from oracle import second_order_oracle

    from shap_rsq.engine.labels import one_hot

    info = explainer.model_info
    forests = explainer.forests
    rows = explainer._inputs.rows_weights(X, None, require_variance=False)[0].array
    routed = forests[0].routing_rows(rows)
    members = [list(np.flatnonzero(forests[0].routing.column_feature == j)) for j in range(forests[0].n_model_features)]
    if info.n_outputs > 1:
        target = one_hot(y, info.classes, len(y))
    else:
        forests = forests[0]
        target = one_hot(y, info.classes, len(y))[:, -1] if info.classes is not None else np.asarray(y, dtype=float)
    return second_order_oracle(forests, routed, target, w, info.loss, info.loss_power, members, interactions)
