"""The losses boosters minimise, and the second-order tree games they give.

Tree ``t`` of a booster moves the margin ``F`` of a row from ``F_{t-1}`` (the trees before it, the
later ones at their means) by ``m - c_t``.  Its game on a row with weight ``w`` is the second-order
(Newton) expansion of the loss change at ``F_{t-1}``, with the loss's exact gradient ``g`` and
Hessian ``h`` there:

    v_t(S) = -w [g (m_S - c_t) + h/2 (m_S - c_t)^2],

a quadratic in ``m_S`` whose Shapley values are ``w_quad phi(m^2) + w_lin phi(m)`` with
``w_quad = -w h / 2`` and ``w_lin = w (h c_t - g)``.  For squared error, ``L = (y - F)^2``,
``g = -2 (y - F)`` and ``h = 2``: the game of :mod:`~shap_rsq.engine.run`, exactly.

Every loss here is a deviance (zero at a perfect prediction), so that the shares divided by the
deviance of the weighted mean of ``y`` are shares of ``D^2``: scikit-learn's
``d2_log_loss_score`` and ``d2_tweedie_score``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logsumexp, xlogy

__all__ = ["LOSSES", "Loss", "TreeLosses", "softmax_offsets"]

LOSSES = ("squared_error", "log_loss", "poisson", "gamma", "tweedie")


@dataclass(frozen=True)
class Loss:
    """A twice-differentiable loss of the margin ``F`` (the sum of the trees), as a deviance.

    Attributes
    ----------
    name : {"squared_error", "log_loss", "poisson", "gamma", "tweedie"}
        ``log_loss``: the probability is ``sigmoid(F)`` (or a softmax over classes);
        ``poisson``, ``gamma`` and ``tweedie``: the mean is ``exp(F)``.
    power : float
        Tweedie's variance power, in ``(1, 2)`` (1 for Poisson, 2 for Gamma).
    """

    name: str = "squared_error"
    power: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}; got {self.name!r}.")
        if self.name == "tweedie" and not 1.0 < self.power < 2.0:
            raise ValueError(f"Tweedie's variance power must lie in (1, 2); got {self.power!r}.")

    @property
    def exact(self) -> bool:
        """Whether the tree games are the loss change itself (squared error), not its expansion."""
        return self.name == "squared_error"

    @property
    def score(self) -> str:
        """The name of the score whose shares the games give: ``R²`` or ``D²`` of the deviance."""
        if self.name == "squared_error":
            return "R²"
        if self.name == "tweedie":
            return f"D² (Tweedie, power {self.power:g})"
        return {"log_loss": "D² (log-loss)", "poisson": "D² (Poisson)", "gamma": "D² (Gamma)"}[self.name]

    def derivatives(self, y: np.ndarray, margin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gradient and Hessian of the deviance in the margin, ``(g, h)``, elementwise.

        Parameters
        ----------
        y : ndarray
            Targets (broadcast against ``margin``): 0/1 (or a probability) for log-loss.
        margin : ndarray
            The margins ``F``.

        Returns
        -------
        tuple of ndarray
            ``dL/dF`` and ``d^2L/dF^2``.
        """
        if self.name == "squared_error":
            return -2.0 * (y - margin), np.full(np.shape(margin), 2.0)
        if self.name == "log_loss":
            p = expit(margin)
            return p - y, p * (1.0 - p)
        if self.name == "poisson":
            mu = np.exp(margin)
            return 2.0 * (mu - y), 2.0 * mu
        if self.name == "gamma":
            ratio = y * np.exp(-margin)
            return 2.0 * (1.0 - ratio), 2.0 * ratio
        a = y * np.exp((1.0 - self.power) * margin)
        b = np.exp((2.0 - self.power) * margin)
        return 2.0 * (b - a), 2.0 * ((self.power - 1.0) * a + (2.0 - self.power) * b)

    def deviance(self, y: np.ndarray, margin: np.ndarray) -> np.ndarray:
        """Each row's deviance at margin ``F`` (binary log-loss for ``log_loss``).

        Parameters
        ----------
        y, margin : ndarray
            Targets and margins, one per row.

        Returns
        -------
        ndarray
            The deviances, 0 at a perfect prediction.
        """
        if self.name == "squared_error":
            return (y - margin) ** 2
        if self.name == "log_loss":  # -y log p - (1 - y) log(1 - p), plus its value at p = y
            return np.logaddexp(0.0, margin) - y * margin + _entropy(y)
        if self.name == "poisson":
            return 2.0 * (xlogy(y, y) - y * margin - y + np.exp(margin))
        if self.name == "gamma":
            return 2.0 * (margin - np.log(y) + y * np.exp(-margin) - 1.0)
        p = self.power
        return 2.0 * (
            np.maximum(y, 0.0) ** (2.0 - p) / ((1.0 - p) * (2.0 - p))
            - y * np.exp((1.0 - p) * margin) / (1.0 - p)
            + np.exp((2.0 - p) * margin) / (2.0 - p)
        )

    def check_target(self, y: np.ndarray) -> None:
        """Refuse targets outside the loss's domain, with the reason.

        Parameters
        ----------
        y : ndarray
            The target values.

        Raises
        ------
        ValueError
            For negative counts (Poisson, Tweedie), non-positive values (Gamma), or log-loss targets
            outside ``[0, 1]``.
        """
        if self.name == "log_loss" and np.any((y < 0) | (y > 1)):
            raise ValueError("y must lie in [0, 1] for a cross-entropy (log-loss) model: it is a probability.")
        if self.name in ("poisson", "tweedie") and np.any(y < 0):
            raise ValueError(f"y must be non-negative for a {self.name.capitalize()} model (its mean is exp(F)).")
        if self.name == "gamma" and np.any(y <= 0):
            raise ValueError("y must be positive for a Gamma model: its deviance takes log(y).")


def _entropy(y: np.ndarray) -> np.ndarray:
    """The log-loss of predicting ``y`` itself (0 for 0/1 targets, positive for probabilities)."""
    return xlogy(y, y) + xlogy(1.0 - y, 1.0 - y)


@dataclass(frozen=True)
class TreeLosses:
    """The second-order games of one forest's trees: its loss, and for a softmax the margin the
    other classes add at each tree.

    Attributes
    ----------
    loss : Loss
        The loss of the margin.
    offsets : ndarray of shape (n_samples, n_trees) or None
        For class ``k`` of a softmax, ``log sum_{j != k} exp(F_j)`` when tree ``t`` is added: the
        class's log-loss is then the binary one at margin ``F_k - offset``.  ``None`` otherwise.
    """

    loss: Loss
    offsets: np.ndarray | None = None

    def row_weights(self, before, means, y, w, rows=slice(None), trees=None) -> tuple[np.ndarray, np.ndarray]:
        """``(w_quad, w_lin)`` of the games of trees ``trees`` on rows ``rows``.

        Parameters
        ----------
        before : ndarray of shape (n_rows, n_trees)
            Each row's margin before each tree (the later trees at their means).
        means : ndarray of shape (n_trees,)
            The trees' means ``c_t``.
        y, w : ndarray of shape (n_rows,)
            Targets and weights of these rows.
        rows : slice or ndarray, default=slice(None)
            Which rows of the forest's call these are (for the offsets).
        trees : ndarray of int, optional
            Which trees of the forest these are (for the offsets).

        Returns
        -------
        tuple of ndarray
            ``w_quad = -w h / 2`` and ``w_lin = w (h c_t - g)``, each ``(n_rows, n_trees)``.
        """
        if self.offsets is not None:
            offsets = self.offsets[rows]
            before = before - (offsets if trees is None else offsets[:, trees])
        g, h = self.loss.derivatives(np.reshape(y, (len(y), -1)), before)
        weight = np.reshape(w, (len(w), -1))
        return -0.5 * weight * h, weight * (h * means - g)


def softmax_offsets(trajectories: list[np.ndarray], steps: list[np.ndarray], k: int) -> np.ndarray:
    """``(n, T_k)``: for each tree of class ``k``, ``log sum_{j != k} exp(F_j)`` at the time it is added.

    Parameters
    ----------
    trajectories : list of ndarray of shape (n, T_j + 1)
        Each class's margin after its first ``i`` trees (the later trees at their means).
    steps : list of ndarray of int
        Each class's trees' positions in the model's order of all trees (rounds, class by class).
    k : int
        The class.

    Returns
    -------
    ndarray
        The offsets of class ``k``'s trees.
    """
    others = [
        trajectory[:, np.searchsorted(steps[j], steps[k])]  # class j's trees added before each of class k's
        for j, trajectory in enumerate(trajectories)
        if j != k
    ]
    return logsumexp(np.stack(others), axis=0)
