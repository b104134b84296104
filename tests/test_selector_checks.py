"""scikit-learn's estimator checks for RSquaredSelector, in its plain and statistical configurations."""

from __future__ import annotations

from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestClassifier
from sklearn.model_selection import KFold
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from shap_rsq import RSquaredSelector

SELECTORS = [
    RSquaredSelector(DecisionTreeRegressor(random_state=0)),
    # shuffled folds: a check fits iris, whose targets are sorted by class; unshuffled 3-fold cv would hold
    # out one class per fold, every held-out target would be constant, and R² is then undefined
    RSquaredSelector(
        DecisionTreeRegressor(random_state=0),
        cv=KFold(3, shuffle=True, random_state=0),
        uncertainty="se",
        max_features=2,
    ),
    RSquaredSelector(
        DecisionTreeRegressor(random_state=0),
        screen=2,
        uncertainty="bootstrap",
        n_bootstrap=3,
        random_state=0,
        threshold="cumulative:0.9",
    ),
    RSquaredSelector(HistGradientBoostingRegressor(max_iter=5, random_state=0)),
    # a forest classifier: shares of the Brier skill score, stratified folds
    RSquaredSelector(RandomForestClassifier(n_estimators=5, random_state=0), cv=3, uncertainty="se"),
    # groups of columns as players, with every option that acts on players
    RSquaredSelector(
        DecisionTreeRegressor(random_state=0),
        feature_groups={"pair": [0, 1]},
        cv=KFold(3, shuffle=True, random_state=0),
        uncertainty="se",
        screen=2,
        max_features=1,
    ),
    RSquaredSelector(
        RandomForestClassifier(n_estimators=5, random_state=0),
        feature_groups={"pair": [0, 1]},
        uncertainty="bootstrap",
        n_bootstrap=3,
        random_state=0,
        threshold="cumulative:0.9",
    ),
]


def expected_failed_checks(selector: RSquaredSelector) -> dict[str, str]:
    failures = {}
    if selector.feature_groups is not None:
        # the group names columns 0 and 1: on one column fit refuses it, naming column 1 as out of range,
        # where the check wants scikit-learn's own wording for too few features
        failures["check_fit2d_1feature"] = "feature_groups names a column that one-column data lacks"
    return failures | _inherited_failures(selector)


def _inherited_failures(selector: RSquaredSelector) -> dict[str, str]:
    if isinstance(selector.estimator, HistGradientBoostingRegressor):
        # inherited: scikit-learn itself lists this check as an expected failure of HistGradientBoostingRegressor,
        # whose bins and early stopping treat a weight of 2 differently from a repeated row
        return {
            "check_sample_weight_equivalence_on_dense_data": "HistGradientBoostingRegressor's weights are not "
            "equivalent to repeated rows"
        }
    if isinstance(selector.estimator, RandomForestClassifier):
        # inherited: a forest's bootstrap draws rows, so a weight of 2 is not a repeated row (scikit-learn
        # lists this check as an expected failure of its forests), and folds of repeated rows differ
        return {"check_sample_weight_equivalence_on_dense_data": "a forest's bootstrap and the folds differ"}
    return {}


@parametrize_with_checks(SELECTORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
