"""Metadata routing of :class:`~shap_rsq.RSquaredSelector`: the weights of the R², what estimator and splitter get.

Kept apart from ``selector`` so that the selector's module stays short; the behaviour is ``SelectFromModel``'s
plus the splitter of ``cv``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, _routing_enabled, process_routing

__all__ = ["metadata_router", "route", "rsq_weights"]


def rsq_weights(selector: Any, sample_weight: Any) -> Any:
    """The weights of the R²: ``sample_weight``, unless routing was told to keep it from the selector.

    Parameters
    ----------
    selector : RSquaredSelector
        The selector being fitted.
    sample_weight : array-like or None
        As given to ``fit``.

    Returns
    -------
    array-like or None
        The weights of the R².
    """
    # a router passes sample_weight on when only the estimator requests it; the selector then
    # receives it for routing, but set_fit_request(sample_weight=False) says not to use it
    if sample_weight is not None and _routing_enabled():
        if selector._get_metadata_request().fit.requests.get("sample_weight") is False:
            return None
    return sample_weight


def route(selector: Any, sample_weight: Any, w: np.ndarray, fit_params: dict) -> tuple[dict, dict]:
    """Parameters of the estimator's ``fit`` and of the splitter's ``split``.

    Parameters
    ----------
    selector : RSquaredSelector
        The selector being fitted.
    sample_weight : array-like or None
        As given to ``fit``.
    w : ndarray
        The validated weights of the R² (all ones without weights).
    fit_params : dict
        The other parameters given to ``fit``.

    Returns
    -------
    fit_params, split_params : dict
        For the estimator's ``fit`` and the splitter's ``split``.
    """
    if selector.prefit:  # nothing is fitted: as SelectFromModel, no estimator's request is asked for
        return {}, {}
    if _routing_enabled():
        # sample_weight=None is not metadata: passed on, it failed as "not routed to any object"
        # when neither the selector nor its estimator requested weights under that name
        weights = {} if sample_weight is None else {"sample_weight": sample_weight}
        if not weights and not fit_params:  # process_routing's empty request hangs on ``in``
            return {}, {}
        routed = process_routing(selector, "fit", **weights, **fit_params)
        split_params = routed.splitter.split if "splitter" in routed else {}
        return dict(routed.estimator.fit), dict(split_params)
    # as SelectFromModel without routing: every parameter goes to the estimator, and the weights
    # that weight the R² also weight the model; but groups go to the splitter, as cross_validate's do
    split_params = {}
    if selector.cv is not None and "groups" in fit_params:
        fit_params = dict(fit_params)
        split_params["groups"] = fit_params.pop("groups")
    return (fit_params if sample_weight is None else {**fit_params, "sample_weight": w}), split_params


def metadata_router(selector: Any) -> MetadataRouter:
    """The selector's router: its own ``sample_weight``, the estimator's ``fit`` and, with ``cv``, ``split``.

    Parameters
    ----------
    selector : RSquaredSelector
        The selector.

    Returns
    -------
    sklearn.utils.metadata_routing.MetadataRouter
        The routing information.
    """
    router = MetadataRouter(owner=selector).add_self_request(selector)
    router.add(estimator=selector.estimator, method_mapping=MethodMapping().add(caller="fit", callee="fit"))
    if selector.cv is not None:  # as given: check_cv would consume a generator of splits before fit
        router.add(splitter=selector.cv, method_mapping=MethodMapping().add(caller="fit", callee="split"))
    return router
