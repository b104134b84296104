"""The selector: :class:`RSquaredSelector`, ``SelectFromModel`` by exact Shapley shares of R².

Modules, one subject each:

- :mod:`._selector`: the estimator (parameters, ``fit``, ``transform``, the fitted attributes);
- :mod:`._selection_rule`: thresholds, ``max_features`` and the support;
- :mod:`._screening`: shares of one fitted model on some rows, out-of-fold (``cv=``) and the
  two-stage screen (``screen=``);
- :mod:`._moments`: the sums a share and its standard error are made of;
- :mod:`._bootstrap`: bootstrap replicates (``uncertainty="bootstrap"``);
- :mod:`._groups`: ``feature_groups`` as players;
- :mod:`._routing`: metadata routing (sample weights and groups);
- :mod:`._support`: what a fitted selector keeps and reports.

The selector uses the explainer; the explainer never imports the selector.
"""

from ._selector import RSquaredSelector

__all__ = ["RSquaredSelector"]
