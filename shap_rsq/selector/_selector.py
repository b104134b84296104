"""``RSquaredSelector``: keep the features with the largest exact Shapley share of a tree model's R²."""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.feature_selection import SelectorMixin
from sklearn.model_selection import check_cv
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils._tags import get_tags
from sklearn.utils.metadata_routing import MetadataRouter
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ..engine.validation import check_spread
from ..models.inspect import frame_for_categories, refuse_boosted_classifier, unfrozen
from ._bootstrap import bootstrap_shares, check_replicates
from ._groups import PlayerMap, resolve_players
from ._routing import metadata_router, route, rsq_weights
from ._screening import check_split_rows, evaluate, out_of_fold, screen_and_fit
from ._selection_rule import check_max_features, threshold_rule
from ._support import SelectorSupport

__all__ = ["RSquaredSelector"]


class RSquaredSelector(SelectorSupport, MetaEstimatorMixin, SelectorMixin, BaseEstimator):
    """Select features by their exact Shapley share of a tree model's R².

    A drop-in for :class:`sklearn.feature_selection.SelectFromModel` whose importance is each
    feature's share of R² computed by :class:`~shap_rsq.RSquaredExplainer` (Q-SHAP).  Shares are
    signed: a feature that makes predictions worse (possible out of fold) has a negative share and is
    ranked below one the model never uses (share 0).  With ``feature_groups``, groups of columns are
    ranked and kept or dropped whole, by their exact Shapley share as one player.

    Parameters
    ----------
    estimator : estimator
        A tree regressor supported by :class:`~shap_rsq.RSquaredExplainer` (scikit-learn trees,
        forests and gradient boosting, XGBoost, LightGBM, CatBoost), or a scikit-learn forest
        classifier (decision tree, random forest, extra trees), whose shares are of the Brier skill
        score (the R^2 of the one-hot target); fitted when ``prefit=True``.
    threshold : float or str, default=None
        Features whose share is at least the threshold are kept.  ``"mean"`` or ``"median"`` of the
        shares, a scaled form such as ``"1.5*mean"``, or ``"cumulative:0.95"``: the smallest set of
        features whose shares add up to 95% of the sum of the *positive* shares (the cut-off is the
        smallest share in that set; ties with it are kept too).  ``None`` means ``"mean"``, as in
        ``SelectFromModel``; to select on ``max_features`` alone, pass ``threshold=-np.inf``.
    max_features : int or callable, default=None
        At most this many features (the largest shares, ties broken by column order), or players with
        ``feature_groups``: a group counts once, however many columns it has, and ties are broken by
        player order (the groups first).  A callable is called as
        ``max_features(X)`` in ``fit``.  Like ``threshold``, an int set with ``set_params``
        after ``fit`` applies at the next ``transform`` without a refit.
    prefit : bool, default=False
        Use the fitted ``estimator`` as is (it is deep-copied, never refitted); ``fit`` then only
        computes the shares on ``(X, y)``.  Not combinable with ``cv``, ``screen`` or the bootstrap.
    cv : int, cross-validation generator or iterable, default=None
        If set, shares are out of fold: a model is fitted on all folds but one and decomposed on the
        held-out fold, and the folds are pooled: their numerators are added and divided by the sum
        of squares of all held-out rows about their common mean, as ``r2_score`` of out-of-fold
        predictions takes it.  In-sample shares credit features that the model
        used to overfit; out-of-fold shares of such features are near zero or negative.  Resolved with
        :func:`sklearn.model_selection.check_cv` (``KFold`` for an int, ``StratifiedKFold`` for a
        classifier).  A held-out label the fold's model never saw counts with probability 0.
    n_jobs : int, default=None
        Parallel jobs over folds and bootstrap replicates, otherwise over blocks of trees.
    screen : int, default=None
        Two-stage screening (Jiang et al. 2025, section 6): fit on all features, keep the ``screen``
        features of largest in-sample share, refit on them and recompute the shares, which ``threshold``
        and ``max_features`` then act on.  Features screened out get share 0 and are never selected.
        Ignored if it is at least the number of features.  With ``feature_groups`` it counts players,
        and a group is kept whole.
    uncertainty : {"se", "bootstrap"}, default=None
        ``"se"``: a delta-method standard error of each share from the per-row contributions, holding
        the fitted model(s) fixed.  ``"bootstrap"``: refit on ``n_bootstrap`` resamples of the rows
        (repeating the screen) and take the standard deviation of their shares; replicates are
        decomposed on their own rows, or on the rows they did not draw when ``cv`` is set.
    n_bootstrap : int, default=100
        Number of bootstrap replicates.
    random_state : int, RandomState instance or None, default=None
        Seeds the bootstrap draws.
    feature_groups : dict of str to list, default=None
        Groups of columns that are selected together, e.g. the one-hot columns of a categorical:
        ``{"color": ["color_red", "color_blue"], ...}``, columns by name (when ``X`` has string column
        names) or by position, each in one group at most.  Each group is one player, with its exact
        Shapley share as in ``RSquaredExplainer.rsq(groups=)`` (not the sum of its columns' shares);
        ``threshold``, ``max_features``, ``screen`` and the bootstrap act on the players (the groups,
        then the ungrouped columns), and a selected group keeps all its columns.  Not ``groups``:
        ``fit(X, y, groups=...)`` is the ``cv`` splitter's (``GroupKFold``), as in scikit-learn.

    Attributes
    ----------
    estimator_ : estimator
        The model fitted on all rows (on the screened columns with ``screen``); with ``prefit=True``
        a deep copy of ``estimator``.
    feature_rsq_ : ndarray of shape (n_features,)
        Each feature's share of R² (out of fold with ``cv``, second round with ``screen``).  With
        ``feature_groups`` every column of a group carries the group's share (so a group counts once
        only in ``player_rsq_``), and so do the other per-column attributes below.
    player_rsq_ : ndarray of shape (n_players,)
        The shares that are ranked, one per player: the groups', then the ungrouped columns'
        (``feature_rsq_`` without ``feature_groups``).
    player_names_ : ndarray of str of shape (n_players,)
        The players' names: the groups', then the ungrouped columns' (named as in
        ``get_feature_names_out``).
    player_of_feature_ : ndarray of int of shape (n_features,)
        Each column's player, an index into ``player_names_``.
    feature_groups_ : dict of str to ndarray of int
        Each group's columns, by position (with ``feature_groups``).
    feature_rsq_se_ : ndarray of shape (n_features,)
        Standard errors of ``feature_rsq_`` (with ``uncertainty``).
    bootstrap_rsq_ : ndarray of shape (n_bootstrap, n_features)
        Shares of each bootstrap replicate (with ``uncertainty="bootstrap"``); NaN for a replicate
        whose (out-of-bag) rows all have one target value, where R² is undefined (with a warning).
    bootstrap_screen_support_ : ndarray of bool of shape (n_bootstrap, n_features)
        Features each replicate's screen kept (with ``uncertainty="bootstrap"`` and ``screen``).
    screen_rsq_ : ndarray of shape (n_features,)
        First-round shares, on all features (with ``screen``).
    screen_support_ : ndarray of bool of shape (n_features,)
        Features kept by the first round (with ``screen``).
    threshold_ : float
        The cut-off applied to ``player_rsq_``.
    max_features_ : int
        ``max_features``, or its value on ``X`` for a callable (when it is set).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Column names seen in ``fit``, when they are all strings; with ``prefit=True`` and an array,
        the names the estimator was fitted with, if any (as in ``SelectFromModel``).

    See Also
    --------
    sklearn.feature_selection.SelectFromModel : The same selection from impurity or coefficients.
    shap_rsq.RSquaredExplainer : The decomposition itself.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from shap_rsq import RSquaredSelector
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 6))
    >>> y = 2 * X[:, 0] + X[:, 1] + rng.normal(scale=0.3, size=200)
    >>> selector = RSquaredSelector(DecisionTreeRegressor(max_depth=4), max_features=2, threshold=-np.inf)
    >>> selector.fit(X, y).get_support(indices=True)
    array([0, 1])
    """

    _parameter_constraints: ClassVar[dict] = {
        "estimator": [HasMethods("fit")],
        "threshold": [Interval(Real, None, None, closed="both"), str, None],
        "max_features": [Interval(Integral, 0, None, closed="left"), callable, None],
        "prefit": ["boolean"],
        "cv": ["cv_object"],
        "n_jobs": [Integral, None],
        "screen": [Interval(Integral, 1, None, closed="left"), None],
        "uncertainty": [StrOptions({"se", "bootstrap"}), None],
        "n_bootstrap": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
        "feature_groups": [dict, None],
    }

    def __init__(
        self,
        estimator: Any,
        *,
        threshold: float | str | None = None,
        max_features: int | Callable[[Any], int] | None = None,
        prefit: bool = False,
        cv: Any = None,
        n_jobs: int | None = None,
        screen: int | None = None,
        uncertainty: str | None = None,
        n_bootstrap: int = 100,
        random_state: Any = None,
        feature_groups: dict[str, list] | None = None,
    ) -> None:
        self.estimator = estimator
        self.threshold = threshold
        self.max_features = max_features
        self.prefit = prefit
        self.cv = cv
        self.n_jobs = n_jobs
        self.screen = screen
        self.uncertainty = uncertainty
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state
        self.feature_groups = feature_groups

    @_fit_context(prefer_skip_nested_validation=False)  # the estimator's own parameters are validated by its fit
    def fit(self, X: Any, y: Any = None, sample_weight: Any = None, **fit_params: Any) -> RSquaredSelector:
        """Fit the estimator (unless ``prefit``) and compute each feature's share of R².

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Training rows.  A DataFrame is passed on as is, so the estimator keeps its column names.
        y : array-like of shape (n_samples,)
            Target (class labels for a classifier); it must not be constant (R² is undefined).
            Required: ``None`` (``SelectFromModel``'s default) is refused.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights of the R² (and of its decomposition).  Without metadata routing they are also
            passed to the estimator's ``fit``; with ``enable_metadata_routing=True`` the estimator gets
            them only if it requests them (``estimator.set_fit_request(sample_weight=True)``).
        **fit_params : dict
            Without metadata routing: other parameters of the estimator's ``fit`` (ignored with
            ``prefit=True``), except ``groups`` with ``cv``, which goes to the splitter as
            :func:`~sklearn.model_selection.cross_validate`'s does.  With routing: metadata routed to
            the estimator's ``fit`` and, with ``cv``, to the splitter's ``split`` (e.g. ``groups`` for
            ``GroupKFold``).  Row-aligned parameters
            of the estimator are subset with the folds and bootstrap draws.

        Returns
        -------
        self : RSquaredSelector
            The fitted selector.
        """
        if y is None:
            raise ValueError(
                "RSquaredSelector requires y to be passed, but the target y is None: the shares are of the R² "
                "of the model's predictions of y."
            )
        self._check_options()
        self._forget_fit()
        threshold_rule(self.threshold)  # a malformed threshold fails here, not at the first transform
        array, y = self._validate_rows(X, y)
        classifier = is_classifier(self.estimator)
        if classifier:
            refuse_boosted_classifier(unfrozen(self.estimator))  # before its fit, which may take long
            check_classification_targets(y)
        y = np.asarray(y) if classifier else np.asarray(y, dtype=np.float64)
        w = _check_sample_weight(rsq_weights(self, sample_weight), array, dtype=np.float64, ensure_non_negative=True)
        if not classifier:  # the explainer's words for a y whose squares underflow ("constant" before)
            check_spread(y, w)
        # a DataFrame goes on as is (the estimator keeps its names); the array made from it to validate
        # it is a copy of X when its columns are not one block, so it must not live through the fits.
        # Another library's frame (polars, pyarrow) goes on as that array under its names, which the
        # estimator then records as it does from the frame itself
        names = getattr(self, "feature_names_in_", None)
        if not isinstance(X, pd.DataFrame):
            X = array if names is None else pd.DataFrame(array, columns=list(names), copy=False)
        del array
        fit_params, split_params = route(self, sample_weight, w, fit_params)
        max_features = check_max_features(self.max_features, X)
        if max_features is not None:  # as in SelectFromModel, only defined when max_features is set
            self.max_features_ = max_features
        if self.prefit:
            self._copy_prefit()
        players = self._resolve_players(X)  # before any fit: a misspelt column fails at once
        if self.prefit:
            self._fit_prefit(X, y, w, players)
        else:
            self._fit_estimator(X, y, w, fit_params, split_params, players)
        if self.uncertainty == "bootstrap":
            shares, kept = bootstrap_shares(
                self.estimator,
                X,
                y,
                w,
                fit_params,
                screen=self.screen,
                out_of_bag=self.cv is not None,
                n_bootstrap=self.n_bootstrap,
                random_state=check_random_state(self.random_state),
                n_jobs=self.n_jobs,
                players=players,
            )
            check_replicates(shares, out_of_bag=self.cv is not None, screen=self.screen is not None)
            self.bootstrap_rsq_ = shares[:, players.of_feature]
            if self.screen is not None:
                self.bootstrap_screen_support_ = kept[:, players.of_feature]
            self.feature_rsq_se_ = np.nanstd(self.bootstrap_rsq_, axis=0, ddof=1)
        return self

    def _validate_rows(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """scikit-learn's validation of ``(X, y)``, with the refusals that concern the shares explained."""
        categorical = frame_for_categories(self.estimator, X)  # passed on as it is: the explainer matches it
        try:
            return validate_data(
                self,
                X,
                y,
                dtype=None if categorical else (np.float64, np.float32),
                ensure_all_finite=False
                if categorical
                else "allow-nan"
                if get_tags(self).input_tags.allow_nan
                else True,
                ensure_min_samples=2,
                y_numeric=not is_classifier(self.estimator),
            )
        except ValueError as error:
            if "1d array" in str(error):  # scikit-learn's words alone do not say why
                raise ValueError(
                    f"{str(error).rstrip('.')}: RSquaredSelector selects features by their share of one "
                    "target's R² (or one classifier's Brier skill score); select on one column of y, or compare "
                    "outputs with "
                    "RSquaredExplainer(model).rsq(X, Y, multioutput=...)."
                ) from error
            if "could not convert" in str(error):
                raise ValueError(
                    f"X holds values that are not numbers ({error}), which this estimator cannot split on: "
                    "encode categories as numbers first (e.g. OneHotEncoder, with feature_groups= to keep a "
                    "categorical's columns together), or give them as pandas category columns to a model that "
                    "splits on categories natively (docs/models.md, Categorical features)."
                ) from error
            raise

    def _check_options(self) -> None:
        if isinstance(self.screen, bool):  # an Integral to the parameter constraints: True read as 1 column
            raise ValueError(f"screen must be a number of columns to keep (an int >= 1) or None; got {self.screen}.")
        frozen = unfrozen(self.estimator) is not self.estimator
        if not (self.prefit or frozen):
            return
        refitting = {"cv": self.cv is not None, "screen": self.screen is not None}
        refitting["uncertainty='bootstrap'"] = self.uncertainty == "bootstrap"
        clashes = [name for name, used in refitting.items() if used]
        if clashes:
            # a frozen model scored on "held-out" rows it was fitted on would be judged in sample
            used_as_is = "a FrozenEstimator is used" if frozen else "prefit=True uses the fitted estimator"
            raise ValueError(
                f"{used_as_is} as is, but {', '.join(clashes)} needs to refit it; pass an unfitted estimator "
                "with prefit=False."
            )

    def _forget_fit(self) -> None:
        # a refit with other options must not leave attributes of the previous fit behind
        for name in [name for name in vars(self) if name.endswith("_") and not name.startswith("_")]:
            delattr(self, name)

    def _copy_prefit(self) -> None:
        try:
            check_is_fitted(self.estimator)
        except NotFittedError as exc:
            raise NotFittedError("When `prefit=True`, `estimator` is expected to be a fitted estimator.") from exc
        self.estimator_ = deepcopy(self.estimator)
        names = getattr(self.estimator_, "feature_names_in_", None)
        if names is not None and not hasattr(self, "feature_names_in_"):
            # as SelectFromModel: a model fitted on a DataFrame names the columns of an array (the
            # explainer checks that their number matches)
            self.feature_names_in_ = np.asarray(names, dtype=object)

    def _resolve_players(self, X: Any) -> PlayerMap:
        names = getattr(self, "feature_names_in_", None)
        players, player_names, groups = resolve_players(self.feature_groups, X, names, self.n_features_in_)
        self.player_of_feature_, self.player_names_ = players.of_feature, np.asarray(player_names, dtype=object)
        if groups is not None:
            self.feature_groups_ = groups
        return players

    def _fit_prefit(self, X, y, w, players: PlayerMap) -> None:
        per_row = self.uncertainty == "se"
        groups = players.explainer_groups(np.arange(self.n_features_in_))
        moments = evaluate(self.estimator_, X, y, w, per_row=per_row, n_jobs=self.n_jobs, groups=groups)
        self._set_shares(moments.shares, moments.standard_errors() if per_row else None)

    def _fit_estimator(self, X, y, w, fit_params, split_params, players: PlayerMap) -> None:
        columns, first_shares, self.estimator_ = screen_and_fit(
            self.estimator, X, y, w, fit_params, self.screen, n_jobs=self.n_jobs, players=players
        )
        if first_shares is not None:
            self.screen_rsq_ = first_shares[players.of_feature]
            self.screen_support_ = np.isin(np.arange(self.n_features_in_), columns)
        Xk = X if len(columns) == self.n_features_in_ else _safe_indexing(X, columns, axis=1)
        per_row, groups = self.uncertainty == "se", players.explainer_groups(columns)
        if self.cv is None:
            moments = evaluate(self.estimator_, Xk, y, w, per_row=per_row, n_jobs=self.n_jobs, groups=groups)
        else:
            # stratified folds for a classifier, as cross_validate makes them
            splitter = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
            splits = list(splitter.split(X, y, **split_params))
            if not splits:  # cross_validate then fails with an IndexError of its own
                raise ValueError(
                    f"cv={self.cv!r} gives no train/test splits; a generator of splits is spent after one fit: "
                    "pass a splitter (KFold(5)), an int or a list of (train, test) index pairs."
                )
            check_split_rows(splits, len(y))
            moments = out_of_fold(
                self.estimator, Xk, y, w, fit_params, splits, per_row=per_row, n_jobs=self.n_jobs, groups=groups
            )
        errors = players.embed(moments.standard_errors(), columns) if per_row else None
        self._set_shares(players.embed(moments.shares, columns), errors)

    def _set_shares(self, shares: np.ndarray, errors: np.ndarray | None) -> None:
        """Per-player shares (and standard errors) in ``player_rsq_``, and each column's player's in the rest."""
        self.player_rsq_ = shares
        self.feature_rsq_ = shares[self.player_of_feature_]
        if errors is not None:
            self.feature_rsq_se_ = errors[self.player_of_feature_]

    def __sklearn_is_fitted__(self) -> bool:
        # n_features_in_ is set while X is validated, so a fit that failed later would otherwise look fitted
        return hasattr(self, "feature_rsq_")

    def get_metadata_routing(self) -> MetadataRouter:
        """Metadata routing of this selector (used with ``sklearn.set_config(enable_metadata_routing=True)``).

        The selector itself consumes ``sample_weight`` in ``fit`` (weighted R²), routes ``fit``
        metadata to the estimator's ``fit`` and, with ``cv``, to the splitter's ``split``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
            The routing information.
        """
        return metadata_router(self)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # R² needs y
        tags.input_tags.sparse = False  # the explainer reads dense rows
        tags.input_tags.allow_nan = get_tags(self.estimator).input_tags.allow_nan
        return tags
