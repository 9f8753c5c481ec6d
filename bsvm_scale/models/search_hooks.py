"""How each Bayesian model meets the one evidence search.

:func:`bsvm_scale.optimization.search.search` knows no model: BSVR and BTSVC
each give it a :class:`~bsvm_scale.optimization.search.SearchModel` --
:class:`SilfSearch` and :class:`TrigSearch` -- that makes the model's
objective on any part of its standardised training data, holds its box and
optimiser options, and says how its isotropic model begins an ARD search and
how a solution warm-starts the next solve. A third model needs only such a
class. :class:`SharedSearch` turns either into the hooks of one covariance
for several data sets (the sum of their evidences).
"""

from __future__ import annotations

import numpy as np

from ..inference.covariance import GaussianCovariance
from ..inference.objective_silf import SilfObjective
from ..inference.objective_trig import TrigObjective
from ..optimization.objective import Warm
from ..optimization.starts import ard_hessian, search_options
from ..optimization.summed import SummedObjective

__all__ = ["SilfSearch", "TrigSearch", "SharedSearch"]


class _Hooks:
    """What both models' hooks share: the search settings read from the
    estimator, the driver's options and the isotropic-to-ARD map. ``lead``:
    the log hyperparameters before ``ln kappa`` in ``theta``."""

    def __init__(self, est, bounds, ard, groups, lead):
        self.est, self.bounds, self.lead = est, bounds, lead
        self.ard = bool(ard)
        self.groups = groups if self.ard else None
        self.n_kappa = len(bounds) - lead - 1
        self.n_jobs, self.random_state = est.n_jobs, est.random_state
        self.init_subsample = est.init_subsample
        self.ard_mode = est.ard_init if self.ard and self.n_kappa > 1 else "start"

    def subsample_max_iter(self):
        """The SMO iteration limit of a subsample's objective."""
        return max(10**6, 100 * int(self.init_subsample))

    def options(self, phase=None):
        return search_options(phase, self.est.optimizer_options)

    def held_bounds(self, theta0):
        """The box: no variable is held by an earlier stage."""
        return list(self.bounds)

    def ard_theta(self, theta):
        """Every ``ln kappa_l`` equal to the isotropic ``ln kappa``."""
        k = self.lead
        return np.concatenate((theta[:k], np.full(self.n_kappa, theta[k]), theta[-1:]))

    def ard_hessian(self, B):
        """The isotropic model Hessian lifted to the ARD parameters (:func:`ard_hessian`)."""
        return ard_hessian(B, self.lead, self.n_kappa)


class SilfSearch(_Hooks):
    """BSVR's hooks for :func:`bsvm_scale.optimization.search.search`:
    objectives (:class:`~bsvm_scale.inference.objective_silf.SilfObjective`)
    on the standardised data, ``theta = [ln C, ln eps, (ln kappa0,) ln kappa
    (or ln kappa_l), ln kappa_b]`` in ``bounds``, and the isotropic model of
    an ARD search."""

    precondition = True

    def __init__(self, est, bounds, kappa0, beta, groups, ard=None):
        super().__init__(est, bounds, est.ard if ard is None else ard, groups,
                         3 if kappa0 is None else 2)
        self.kappa0, self.beta = kappa0, beta
        self.settings = est._evidence_settings()

    def objective(self, data, subsample=False):
        est = self.est
        max_iter = self.subsample_max_iter() if subsample else est._max_iter
        return SilfObjective(data.X, data.y, self.kappa0, self.beta, self.ard, float(est.tol),
                             float(est.cache_mb), max_iter, self.settings, data.weights,
                             self.groups)

    def held_bounds(self, theta0):
        """The box of a stage that holds an inferred ``kappa0`` at its value in
        the start ``theta0``: the isotropic first stage of ARD (:meth:`isotropic`)
        and the subsample phase of coarse-to-fine starts. Its interval shrinks
        to that point, where the trust-region step leaves a variable of zero
        width; the ARD run and the full-data run, which begin at those stages'
        optima, infer it. The stages that take the search's large steps then
        move in one variable fewer, and their MAP solves stay on the
        well-conditioned problems of ``kappa0 = var(y)`` by default
        (docs/design/kappa0.md, "kappa0 held where the search takes large
        steps"). With ``kappa0`` fixed: the box."""
        held = super().held_bounds(theta0)
        if self.lead == 2:
            return held
        lo, hi = held[2]
        at = float(np.clip(theta0[2], lo, hi))
        held[2] = (at, at)
        return held

    def isotropic(self, theta0):
        k, b = self.lead, self.held_bounds(theta0)
        return SilfSearch(self.est, b[:k + 1] + b[-1:], self.kappa0, self.beta, None, ard=False)

    def isotropic_theta(self, theta):
        """One ``kappa``, the geometric mean of the ``kappa_l``."""
        k = self.lead
        lead = [np.log(float(np.exp(theta[i]))) for i in range(k)]
        kappa = float(np.exp(np.mean(theta[k:-1])))
        return np.concatenate((lead, np.log(np.atleast_1d(kappa)),
                               [np.log(float(np.exp(theta[-1])))]))

    @staticmethod
    def continuation_warm(final, data):
        """The isotropic solution ``nu`` on its support, 0 elsewhere."""
        support = final.detail.evidence.support
        nu = np.zeros(data.y.shape[0])
        nu[support] = final.dual[support].copy()
        # the continuation moves by at most FINE_MAX_STEP a step from a solved
        # point: Newton's method, from a close warm start, solves in 1-3
        # iterations where the SMO takes 2-8 n pair steps
        return Warm(nu, newton_first=True)

    @staticmethod
    def dual_state(dual):
        return {"nu": dual}


class TrigSearch(_Hooks):
    """BTSVC's hooks for :func:`bsvm_scale.optimization.search.search`:
    objectives (:class:`~bsvm_scale.inference.objective_trig.TrigObjective`)
    on the standardised data, ``theta = [ln kappa0, ln kappa (or ln
    kappa_l), ln kappa_b]`` in ``bounds``, and the isotropic model of an ARD
    search."""

    precondition = False

    def __init__(self, est, bounds, max_iter, ard, groups):
        super().__init__(est, bounds, ard, groups, 1)
        self.max_iter = max_iter

    def objective(self, data, subsample=False):
        est = self.est
        max_iter = self.subsample_max_iter() if subsample else self.max_iter
        return TrigObjective(data.X, data.y, self.ard, est.cache_mb, est.tol, max_iter,
                             weights=data.weights, groups=self.groups,
                             **est._evidence_settings())

    def isotropic(self, theta0=None):
        return TrigSearch(self.est, [self.bounds[0], self.bounds[1], self.bounds[-1]],
                           self.max_iter, False, None)

    @staticmethod
    def isotropic_theta(theta):
        """One ``kappa``, the geometric mean of the ``kappa_l``."""
        return GaussianCovariance(float(np.exp(theta[0])), float(np.exp(np.mean(theta[1:-1]))),
                                  float(np.exp(theta[-1]))).theta

    @staticmethod
    def continuation_warm(final, data):
        """The isotropic solution ``alpha`` (``v = y alpha`` on the SVs)."""
        support = np.asarray(final.info["support"], dtype=np.int64)
        alpha = np.zeros(data.y.shape[0])
        alpha[support] = data.y[support] * np.asarray(final.info["dual_coef"], dtype=np.float64)
        return Warm(np.maximum(alpha, 0.0))

    @staticmethod
    def dual_state(dual):
        return {"alpha": dual}


class SharedSearch:
    """One covariance for several data sets: the hooks of ``inner`` (a
    :class:`TrigSearch` or :class:`SilfSearch`) over the data sets ``parts``
    (``(rows, y, weights)`` each, rows of the design matrix the search is
    given), whose objective is the sum of theirs
    (:class:`~bsvm_scale.optimization.summed.SummedObjective`).

    The starts run one after the other and each evaluation's parts on
    ``n_jobs`` threads; there is no subsample phase (``init_subsample`` is
    None): a subsample of the design matrix is not a subsample of every part.
    """

    init_subsample = None

    def __init__(self, inner, parts, n_jobs=None):
        self.inner, self.parts, self.part_jobs = inner, list(parts), n_jobs
        self.bounds, self.precondition = inner.bounds, inner.precondition
        self.random_state, self.ard_mode = inner.random_state, inner.ard_mode
        self.n_jobs = None

    @property
    def max_iter(self):
        """The SMO iteration limit of each part's solves."""
        return self.inner.max_iter

    def part_data(self, data):
        """Each part's :class:`~bsvm_scale.optimization.search.Data`."""
        from ..optimization.search import Data

        return [Data(np.ascontiguousarray(data.X if rows is None else data.X[rows]), y, w)
                for rows, y, w in self.parts]

    def objective(self, data, subsample=False):
        parts = self.part_data(data)
        return SummedObjective([self.inner.objective(p, subsample) for p in parts],
                               [p.y.shape[0] for p in parts], self.part_jobs)

    def options(self, phase=None):
        return self.inner.options(phase)

    def isotropic(self, theta0=None):
        return SharedSearch(self.inner.isotropic(theta0), self.parts, self.part_jobs)

    def isotropic_theta(self, theta):
        return self.inner.isotropic_theta(theta)

    def ard_theta(self, theta):
        return self.inner.ard_theta(theta)

    def held_bounds(self, theta0):
        return self.inner.held_bounds(theta0)

    def ard_hessian(self, B):
        return self.inner.ard_hessian(B)

    def continuation_warm(self, final, data):
        """Each part's isotropic solution, end to end."""
        return Warm(np.concatenate([self.inner.continuation_warm(ev, p).dual
                                    for ev, p in zip(final.detail, self.part_data(data))]))

    @staticmethod
    def dual_state(dual):
        return {"dual": dual}
