"""The objective contract of the evidence search: what a Bayesian model gives
:mod:`bsvm_scale.optimization.search` and the driver of
:mod:`bsvm_scale.optimization.driver`.

An objective belongs to one data set (a model's training data, or a
subsample of it) and maps log hyperparameters ``theta`` to ``-ln P(D |
theta)`` and its gradient at the MAP solution. It keeps the dual solution of
its last solve (the warm start of the next one) and the best point it has
evaluated, and it can save and restore that state exactly, so that an
interrupted search resumes where it stopped.

``SilfObjective`` (BSVR, thesis (4.25), (4.38)-(4.42)) and ``TrigObjective``
(BTSVC, (5.29), (5.35)-(5.37)) implement it, and so can any model with an
evidence to maximise (the tests run a quadratic through the search).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

__all__ = ["BestPoint", "Evaluation", "Warm", "Objective"]


class BestPoint(NamedTuple):
    """The lowest ``-ln evidence`` an objective has evaluated: the value, the
    point, its MAP dual solution (``nu`` of BSVR, ``alpha`` of BTSVC), the MAP
    function ``f`` where the objective keeps it, and the evaluation's info."""

    value: float
    theta: np.ndarray
    dual: np.ndarray
    f: np.ndarray | None = None
    info: dict | None = None


class Warm(NamedTuple):
    """Where an objective's next MAP solve begins: the dual vector ``dual``
    (None: the objective's own) and, for BSVR, the slope of the outer secant
    equation of its SMO (None: as it is) and ``newton_first`` (its next solve
    begins with Newton's method where the row cache holds every row,
    :func:`~bsvm_scale.inference.map_newton.smo_newton`)."""

    dual: np.ndarray | None
    slope: float | None = None
    newton_first: bool = False


@dataclass
class Evaluation:
    """One evaluation of an objective, by name.

    Attributes
    ----------
    theta : ndarray
        The log hyperparameters.
    value : float
        ``-ln P(D | theta)`` (``inf`` for a rejected step).
    grad : ndarray or None
        Its gradient in ``theta`` (None when not asked for).
    info : dict
        Diagnostics: ``n_sv``, ``smo_iter``, ``smo_violation``, ``method``,
        ``error`` (the bound on the error of ``value``, nats), seconds of the
        MAP solve and the evidence, and the model's own entries.
    dual : ndarray or None
        The MAP dual solution (``nu`` of BSVR, ``alpha`` of BTSVC): the warm
        start a later run or a continuation begins from.
    f : ndarray or None
        The MAP function at the training cases, where the model keeps it.
    detail : object
        The model's evidence result (its factor, support sets, ...), read by
        the model that made it when it sets its fitted state.
    """

    theta: np.ndarray
    value: float
    grad: np.ndarray | None
    info: dict
    dual: np.ndarray | None = None
    f: np.ndarray | None = None
    detail: object = field(default=None, repr=False)

    @property
    def error(self):
        """The error bound of :attr:`value` (0 where it is exact)."""
        return float(self.info.get("error", 0.0))

    @property
    def n_sv(self):
        """Support vectors of the MAP solution."""
        return int(self.info.get("n_sv", 0))

    def as_tuple(self):
        """``(value, gradient, info)``, what the driver's loop takes."""
        grad = self.grad if self.grad is not None else np.zeros(np.size(self.theta))
        return self.value, grad, self.info


class Objective(Protocol):
    """What the search and the driver need of an objective.

    ``objective(theta)`` returns ``(value, gradient, info)`` for the driver;
    :meth:`evaluate` returns the same as an :class:`Evaluation`;
    :meth:`final` is the evaluation a fitted model is made from, at the best
    point's own MAP solution when ``theta`` is the best point (a re-solve
    could stop elsewhere within the solver's tolerance, and the evidence
    jumps where a case changes the loss's piece). :meth:`restart` begins a
    later run from a :class:`Warm` keeping :attr:`best`;
    :meth:`get_state` / :meth:`set_state` save and restore everything a
    resumed run needs (plain arrays and numbers, storable in HDF5);
    :meth:`release` drops caches that the next evaluation can rebuild;
    :meth:`carry` is what a larger problem's search takes from this one
    (the best dual solution and solver state) as its :class:`Warm`.
    """

    best: BestPoint | None

    def __call__(self, theta): ...

    def evaluate(self, theta, need_grad=True) -> Evaluation: ...

    def final(self, theta) -> Evaluation: ...

    def restart(self, warm=None): ...

    def get_state(self) -> dict: ...

    def set_state(self, state): ...

    def release(self): ...

    def carry(self) -> Warm: ...
