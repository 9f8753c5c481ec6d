"""Bayesian support vector regression (BSVR), thesis chapter 4.

A thin public estimator over the shared engines:

- the MAP solution of (4.25) by the Numba SMO of :mod:`bsvm_scale._compiled.smo_silf`
  over the kernel-row cache of :mod:`bsvm_scale.inference.covariance`;
- the evidence (4.38) and its gradient (4.39)-(4.41), ARD (4.42), in
  :mod:`bsvm_scale.inference.evidence_silf`;
- evidence maximisation from several starts by :mod:`bsvm_scale.optimization.driver`;
- prediction with error bars (4.46) and the SILF noise variance (2.33).

Inputs are standardised with training statistics; targets are used as given.
Case weights (``fit(..., sample_weight=...)``) scale each case's loss term
(per-case box ``C w_i`` of the dual) and likelihood term (class docstring,
Notes).
The default box prior and starting values of ``C`` and ``epsilon`` are the
thesis' values (docs/protocols.md, Conventions) expressed in units of the
standard deviation ``s`` of the training targets (``C`` in units of ``1/s``,
``epsilon`` in units of ``s``), so that the box stays meaningful for targets
of any scale; for targets of unit spread they coincide with the thesis' values.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from ..inference import losses
from .._util.base import resolve_rng, standardizer_for
from .._util.threads import fit_threads
from .._util.validation import (POSITIVE, check_nonconstant, check_positive, check_predict_X,
                                check_regression_data, check_sample_weight, store_params,
                                warn_target_offset)
from ..inference.covariance import GaussianCovariance
from ..inference.evidence_lowrank import DEFAULT_TOL, EvidenceSettings, LowRankPredictor
from ..inference.evidence_silf import (prediction_factor, predictive_variance_chunk,
                                       variance_from_cross)
from ._common import BAYES_CONSTRAINTS, ard_groups, table_groups
from .merge import merge_fit_inputs, restore_rows
from .search_hooks import SilfSearch
from .warm_start import (carried_dual, check_case_ids, previous_hessians, previous_model,
                         previous_thetas,
                         keep_support_case_ids)
from ..optimization.objective import Warm
from ..optimization.records import fixed_record
from ..optimization.search import Data, Resume, Retrain, evaluate_at, search
from ..optimization.starts import DEFAULT_ARD_INIT

__all__ = ["BayesianSVR", "default_beta"]

#: thesis box prior (docs/protocols.md, Conventions) for unit-scale targets
BOX = {"ln_C": (np.log(0.01), np.log(1000.0)), "ln_epsilon": (-5.0, -0.7),
       "ln_kappa_b": (-13.0, 10.0), "ln_kappa": (-17.0, 10.0), "ln_kappa0": (-7.0, 9.0)}
#: ``kappa0`` value that makes it a hyperparameter inferred from the evidence (the default)
INFER = "evidence"
#: ``kappa0`` value that fixes it at the variance of the targets (thesis footnote 9)
TARGET_VAR = "variance"
_PRED_CHUNK_BYTES = 32 * 2**20



def default_beta(n):
    """Default ``beta`` for ``n`` training samples.

    The thesis heuristic (section 4.3.3): 0.3 below 2000 samples, 0.1 for
    2000-4000 and 0.05 for 4000-6000. Beyond 6000 the number of off-bound SVs
    grows like ``n beta``; to keep the ``m x m`` block (and the O(m^3) cost)
    roughly constant we continue with ``beta = 300 / n`` (continuous at
    6000, e.g. 0.006 at 50,000).
    """
    if n < 2000:
        return 0.3
    if n < 4000:
        return 0.1
    if n <= 6000:
        return 0.05
    return 300.0 / n


def _target_var(y, sample_weight=None):
    """``var(y)``; with case weights ``sum_i w_i (y_i - ybar)^2 / sum_i w_i``
    around the weighted mean (that of the data set with case ``i`` repeated
    ``w_i`` times for integer weights)."""
    if sample_weight is None:
        return float(np.var(y))
    mean = np.average(y, weights=sample_weight)
    return float(np.average((y - mean) ** 2, weights=sample_weight))


def _target_scale(y, sample_weight=None):
    """Target scale ``s`` of the box prior and the starts: the (weighted)
    standard deviation of ``y``, 1 for constant targets."""
    if sample_weight is None:
        return float(np.std(y)) or 1.0
    return float(np.sqrt(_target_var(y, sample_weight))) or 1.0


def _warn_offset(y, sw, bounds):
    """Warn when the mean of ``y`` lies far beyond the bias prior ``kappa_b``."""
    warn_target_offset(y if sw is None else y[sw > 0], np.exp(0.5 * bounds[-1][1]),
                       "BayesianSVR",
                       "Subtract the mean of y before fitting (add it back to predictions).")


class BayesianSVR(RegressorMixin, BaseEstimator):
    """Bayesian support vector regression with the soft insensitive loss.

    Parameters
    ----------
    beta : float in (0, 1], optional
        Shape of the soft insensitive loss (2.28); fixed, not inferred.
        Default: :func:`default_beta` of the training-set size.
    ard : bool, default=False
        One relevance weight ``kappa_l`` per input (4.42).
    ard_init : {"continuation", "isotropic", "start"}, default="continuation"
        How an ARD search begins (``ard=True`` with more than one input;
        :func:`bsvm_scale.optimization.starts.isotropic_stage`). ``"continuation"``:
        the isotropic model (one ``kappa``, the geometric mean of the start's
        ``kappa_l``) is fitted first from every start with every option of this
        estimator, and the ARD search runs from its best optimum (every
        ``kappa_l`` equal to its ``kappa``, dual warm start from its solution, its
        lifted Hessian, :func:`bsvm_scale.optimization.starts.ard_hessian`, trust
        radius ``FINE_MAX_STEP``, MAP solves Newton-first). The ARD model contains
        the isotropic one and the search keeps its best point, so the ARD
        evidence is at least the isotropic optimum's.
        ``"isotropic"``: the same, plus an ARD run from every start itself; the
        best run is kept (the same guarantee, about twice the evaluations).
        ``"start"``: only the runs from the starts (no such guarantee: the
        evidence (4.38) jumps where a case crosses between the loss's pieces,
        and where the search ends depends on where it began).
    n_starts : int, optional
        Number of optimiser starts (default: the two starts of the thesis
        protocol, or ``len(starts)``). Starts beyond the given/default ones
        are drawn uniformly inside the box prior with ``random_state``.
    tol : float, default=1e-3
        SMO tolerance ``tau`` of the stopping rule (4.33).
    cache_mb : float, default=256
        Memory budget of the kernel-row cache in MiB; when it holds every
        row, MAP solves the SMO has not finished after ``10 n`` steps go on
        by Newton's method (:mod:`bsvm_scale.inference.map_newton`).
    random_state : int, Generator or None
        Seed for extra random starts.
    optimize : bool, default=True
        Maximise the evidence; with ``False`` the given hyperparameters are
        used as they are (fit solves the MAP problem and evaluates the
        evidence only).
    C, epsilon, kappa, kappa_b : float, optional
        Fixed hyperparameters (``optimize=False``) or the first start.
        ``kappa`` may be an array with ``ard=True``.
    kappa0 : float, "evidence" or "variance", default="evidence"
        Signal variance ``kappa0`` of (4.3). ``"evidence"``: inferred with the
        other hyperparameters (``ln kappa0`` joins ``theta`` after ``ln
        epsilon``; gradient (4.41) with ``dSigma/d ln kappa0`` the Gaussian part
        of the covariance; box ``bounds["ln_kappa0"]``, default ``var(y)`` times
        ``[e^-7, e^9]``; held at the start's value by an ARD search's isotropic
        stage and by the subsample phase, inferred by the runs after them).
        ``"variance"`` (or None): ``var(y)``, fixed (thesis footnote 9); a float.
    starts : list of dict, optional
        Explicit starting points with keys among ``C, epsilon, kappa, kappa_b``
        (and ``kappa0`` with ``kappa0="evidence"``).
    bounds : dict, optional
        Box prior overriding the default, keys ``ln_C, ln_epsilon, ln_kappa,
        ln_kappa_b`` (and ``ln_kappa0``) with ``(low, high)`` in natural-log units of the raw
        hyperparameters.
    max_iter : int, optional
        SMO iteration limit per solve (default ``max(10^6, 100 n)``).
    optimizer_options : dict, optional
        Options of the trust-region search, merged over
        :data:`bsvm_scale.optimization.driver.PIECEWISE_OPTIONS` (documented
        with :class:`~bsvm_scale.optimization.driver.Options`): stop once 5
        evaluations in a row gained less than 0.1 nat, then one slope trial.
    evidence_method : {"auto", "dense", "matrix_free"}, default="auto"
        How the off-bound block of the evidence (4.38)-(4.42) is handled:
        ``"dense"`` factorises it (exact, O(m^3), 24 m^2 bytes);
        ``"matrix_free"`` uses a pivoted-Cholesky factor with a bound on
        what it leaves out, and a preconditioned stochastic Lanczos correction
        with fixed probes when the rank budget stops it first
        (:mod:`bsvm_scale.inference.evidence_lowrank`); ``"auto"``: dense up to 2,000
        off-bound cases, up to 5,000 a factor of ``<= 0.35 m`` columns where it meets
        ``evidence_tol`` alone (else dense), matrix-free beyond.
        ``evidence_method_`` and ``evidence_error_`` say what the fit used.
    evidence_tol : float, default=0.05
        Error allowed in ``-ln evidence`` (nats) on the matrix-free path.
    evidence_mb : float, default=1024
        Memory budget (MiB) of the evidence arrays: the dense block, or
        the ``m x r`` factor (its rank is capped to fit). A block that does
        not fit is a rejected step during the search and an
        :class:`~bsvm_scale.inference.evidence_lowrank.EvidenceBudgetError` naming this
        parameter at the final fit.
    init_subsample : int or None, default=4000
        Coarse-to-fine starts for large data: when ``n > 2 * init_subsample``
        every start is first optimised on a random subsample of
        ``init_subsample`` training cases (same ``beta``, ``kappa0`` and box;
        drawn with ``random_state``, or a fixed seed when it is None, so that
        a fit is repeatable); the start with the highest subsample evidence
        is then refined on the full data, from the subsample optimum, with a
        dual warm start predicted from the subsample solution and a trust
        radius of :data:`bsvm_scale.optimization.starts.FINE_MAX_STEP`,
        ending once 2 evaluations in a row have not improved on its best
        point by more than 1 nat (:data:`bsvm_scale.optimization.starts.FINE_OPTIONS`). ``C`` and
        ``epsilon`` are per-case noise parameters and ``kappa``, ``kappa_b``
        describe the function, so the subsample optimum is close to the full
        one and the expensive full-data evaluations drop to a handful.
        ``None`` turns this off (every start is then optimised on the full
        data).
    warm_start_from : estimator, str or path, optional
        An earlier fit of this class (or its model file, which keeps the new
        model file small) whose optimum starts a retraining: one start from
        its ``theta_`` on the full data, beginning with the earlier search's
        model Hessian, with the stop rule of a retraining
        (:func:`bsvm_scale.optimization.starts.retrain_options`;
        ``optimizer_options`` override it). Its inputs and ``ard`` must
        match; :mod:`bsvm_scale.models.warm_start` describes the whole procedure.
        With ``fit(init=...)`` the start is ``init["theta"]`` (resuming such a
        retraining).
    n_jobs : int or None, default=-1
        The number of threads the fit runs on
        (:func:`bsvm_scale._util.threads.fit_threads`). The independent parts
        of the evidence search (:mod:`bsvm_scale.optimization.search`) run on
        up to ``n_jobs`` threads: the starts (each on an objective and row
        cache of its own; one thread with a ``callback``), the isotropic
        first stage of an ARD search and the subsample phase of
        coarse-to-fine starts, each running BLAS and Numba's parallel kernels
        on one thread; a single task (one start) runs them on up to ``n_jobs``
        threads. -1 (the default): every core. 1 (or None,
        scikit-learn's convention outside a ``joblib.parallel_config``
        context): a one-core fit, one task after the other. The result is
        the same either way unless SV blocks are large enough for
        multithreaded BLAS (:func:`bsvm_scale._util.threads.thread_map`).

    Attributes
    ----------
    hyperparameters_ : dict
        ``C, epsilon, beta, kappa0, kappa, kappa_b`` at the optimum.
    theta_ : ndarray
        The log hyperparameters searched: ``[ln C, ln epsilon, (ln kappa0,)
        ln kappa or ln kappa_1..d, ln kappa_b]``.
    log_evidence_ : float
        ``ln P(D | theta)`` (4.38) at the fitted hyperparameters (with case
        weights that of the weighted likelihood; see Notes).
    noise_variance_ : float
        ``sigma_n^2`` of the fitted SILF noise model (2.33): that of a case of
        weight 1 (with case weights, ``P(y_i|f_i)^{w_i}`` is no longer a
        density of ``y_i``; ``include_noise=True`` in :meth:`predict` adds
        this value).
    support_, off_bound_, on_bound_ : ndarray of int
        Training indices (rows of the ``X`` given to ``fit``) of all SVs,
        off-bound SVs (``0 < |nu_i| < C_i``) and on-bound SVs (``|nu_i| =
        C_i``), with ``C_i = C w_i`` under case weights (a case of weight 0
        is never an SV).
    dual_coef_ : ndarray
        ``alpha - alpha*`` of the support vectors.
    support_case_ids_ : ndarray
        The ``case_ids`` given to ``fit`` of the support vectors (absent
        without them).
    intercept_ : float
        The bias ``b = kappa_b sum(alpha - alpha*)`` of ``f`` (4.12).
    support_vectors_ : ndarray
        Standardised inputs of the SVs.
    n_iter_ : int
        Iterations of the final MAP solve: SMO pair steps plus Newton steps.
    evidence_method_ : str
        ``"dense"`` or ``"matrix_free"`` at the fitted hyperparameters.
    evidence_error_ : float
        Error estimate of ``log_evidence_`` (nats; 0 for dense).
    cholesky_, predictor_ : ndarray or None, dict or None
        What the predictive variance (4.46) reads: the dense Cholesky factor
        of ``Sigma_M + diag(2 beta eps / C_i)``, or (matrix-free) the pivot inputs
        ``X_S``, their weights ``sl_S`` and the triangles ``L_S``, ``L_C``
        (:class:`~bsvm_scale.inference.evidence_lowrank.LowRankPredictor`), O(r^2).
    starts_ : list of dict
        Every start, in the layout of
        :func:`bsvm_scale.optimization.records.start_record` (the trajectory records
        hold the SV counts and SMO diagnostics of each evaluation under
        ``info``). One record per
        optimiser run, in order: the runs from the starts (coarse-to-fine:
        the one refined on the full data, with ``subsample``, that phase's
        own record); with the isotropic first stage (``ard_init``) the run
        from the best isotropic optimum, with ``isotropic``, that fit's start
        record (its ``theta`` has one ``ln kappa``); last, coarse-to-fine
        starts that were not refined (subsample phase only).

    Notes
    -----
    **Case weights.** ``fit(X, y, sample_weight=w)`` gives case ``i`` the
    weight ``w_i >= 0`` (scikit-learn's and LIBSVM's convention): it
    multiplies the case's loss term, so the MAP problem (4.10) becomes
    ``min_f 1/2 f^T Sigma^-1 f + C sum_i w_i l(y_i - f_i)`` and its dual
    (4.25) has the box ``|nu_i| <= C_i = C w_i`` and the diagonal term ``2
    beta eps / C_i``; the stopping rule (4.33) is judged in these boxes. The
    likelihood in the evidence is ``prod_i P(y_i | f_i)^{w_i}``: ``C sum_i w_i
    l_i`` and ``(sum_i w_i) ln Z_S`` in (4.38), the curvature ``C w_i / (2
    beta eps)`` of each off-bound SV in its determinant, the gradients
    (4.39)-(4.41) with the same weighted sums, and the predictive variance
    (4.46) from ``Sigma_M + diag(2 beta eps / C_i)``
    (:mod:`bsvm_scale.inference.evidence_silf`). Weights also enter every
    statistic the fit takes from the data: the input standardisation
    (weighted mean and standard deviation), ``kappa0="variance"`` and an
    inferred one's start (the weighted variance of ``y``), the target scale of
    the box and the starts (its square root); the default ``beta`` counts the
    cases of positive weight. Hence:

    - integer weights give the fit of the data set with case ``i`` repeated
      ``w_i`` times: the same MAP function (up to the SMO tolerance ``tol``)
      and, at the same hyperparameters, the same evidence, with no
      constant between them (Sylvester's determinant identity); the default
      ``beta`` may differ, as it counts distinct cases. Conversely a fit
      merges repeated cases (same inputs and target) into one case of their
      summed weight (:mod:`bsvm_scale.models.merge`); ``support_`` and the
      other indices hold the first row of each group;
    - a case of weight 0 is a case left out (its ``nu_i`` stays 0; it is
      never an SV), while ``support_`` and the other indices keep referring
      to rows of the ``X`` given to ``fit``;
    - weights all 1 give the unweighted fit, bit for bit; weights are not
      normalised: multiplying all of them by ``k`` is the data ``k`` times
      over (at fixed hyperparameters the MAP fit of ``k C``), not the
      same fit;
    - with other weights the evidence is the Laplace approximation of the
      integral of the weighted likelihood: a pseudo-likelihood, not a
      probability of the data. It ranks hyperparameters (what the search
      uses it for) and compares fits with the same weights; values from
      different weights, or from weighted and unweighted fits, are not
      comparable. ``noise_variance_`` is that of the unweighted noise model.
    """

    _parameter_constraints = {**BAYES_CONSTRAINTS,
                              "beta": [Interval(Real, 0, 1, closed="right"), None],
                              "C": [POSITIVE, None], "epsilon": [POSITIVE, None],
                              "kappa0": [POSITIVE, StrOptions({INFER, TARGET_VAR}), None],
                              "bounds": [dict, None]}

    def __init__(self, *, beta=None, ard=False, n_starts=None, tol=1e-3, cache_mb=256.0,
                 random_state=None, optimize=True, C=None, epsilon=None, kappa=None,
                 kappa_b=None, kappa0=INFER, starts=None, bounds=None, max_iter=None,
                 optimizer_options=None, init_subsample=4000, ard_init=DEFAULT_ARD_INIT,
                 evidence_method="auto", evidence_tol=DEFAULT_TOL, evidence_mb=1024.0, warm_start_from=None,
                 n_jobs=-1):
        store_params(self, locals())

    # ------------------------------------------------------------------
    def _evidence_settings(self):
        return EvidenceSettings(self.evidence_method, float(self.evidence_tol),
                                float(self.evidence_mb))

    def _check_params(self, n, d):
        """Validate the parameters (``_parameter_constraints``, then the
        length of an array ``kappa``); returns ``beta`` for ``n`` cases."""
        self._validate_params()
        if self.kappa is not None:
            k = np.atleast_1d(check_positive("kappa", self.kappa))
            d = self._n_kappa(d)
            if k.size not in (1, d) or (k.size == d and d > 1 and not self.ard):
                raise ValueError(f"kappa must be a float, or an array of {d} relevance weights "
                                 f"(one per input column) with ard=True; got {self.kappa!r}.")
        return default_beta(n) if self.beta is None else float(self.beta)

    def _n_kappa(self, d):
        """Relevance weights of an ARD model on ``d`` inputs: ``d``, or one per
        input column of a table (its one-hot columns tied, :func:`ard_groups`)."""
        groups = getattr(self, "_groups", None)
        return d if groups is None else int(groups.max()) + 1

    @property
    def _lead(self):
        """Log hyperparameters before ``ln kappa`` in ``theta``: ``ln C, ln eps``
        (and ``ln kappa0`` when it is inferred)."""
        return 3 if self.kappa0 == INFER else 2

    def _box(self, s, d):
        box = dict(BOX)
        box["ln_C"] = (box["ln_C"][0] - np.log(s), box["ln_C"][1] - np.log(s))
        box["ln_epsilon"] = (box["ln_epsilon"][0] + np.log(s), box["ln_epsilon"][1] + np.log(s))
        box["ln_kappa0"] = (box["ln_kappa0"][0] + 2 * np.log(s),
                            box["ln_kappa0"][1] + 2 * np.log(s))
        if self.bounds:
            unknown = set(self.bounds) - set(BOX)
            if unknown:
                raise ValueError(f"bounds has unknown keys {sorted(unknown)}; allowed: {sorted(BOX)}.")
            if "ln_kappa0" in self.bounds and self._lead == 2:
                raise ValueError("bounds['ln_kappa0'] applies only with kappa0='evidence'; "
                                 f"kappa0 is {self.kappa0!r}.")
            box.update({k: tuple(map(float, v)) for k, v in self.bounds.items()})
        k = self._n_kappa(d) if self.ard else 1
        lead = [box["ln_C"], box["ln_epsilon"]] + ([box["ln_kappa0"]] if self._lead == 3 else [])
        return lead + [box["ln_kappa"]] * k + [box["ln_kappa_b"]]

    def _theta_from(self, start, s, d):
        """Start dict -> optimisation vector."""
        allowed = {"C", "epsilon", "kappa", "kappa_b"} | ({"kappa0"} if self._lead == 3 else set())
        unknown = set(start) - allowed
        if unknown:
            raise ValueError(f"start has unknown hyperparameter names {sorted(unknown)}; "
                             f"allowed: {sorted(allowed)}.")
        C = check_positive("C", start.get("C", 1.0 / s))
        eps = check_positive("epsilon", start.get("epsilon", 0.05 * s))
        kappa = np.atleast_1d(check_positive("kappa", start.get("kappa", 0.5)))
        kappa = np.broadcast_to(kappa, (self._n_kappa(d),)) if self.ard else kappa[:1]
        kb = check_positive("kappa_b", start.get("kappa_b", 100.0))
        k0 = [np.log(check_positive("kappa0", start.get("kappa0", s * s)))] if self._lead == 3 else []
        return np.concatenate(([np.log(C), np.log(eps)], k0, np.log(kappa), [np.log(kb)]))

    def _start_points(self, s, d, bounds):
        given = {k: getattr(self, k) for k in ("C", "epsilon", "kappa", "kappa_b")
                 if getattr(self, k) is not None}
        if self.starts is not None:
            starts = [dict(st) for st in self.starts]
        else:
            starts = [dict(given) or {}, {**given, "C": 10.0 / s, "kappa": 1.0 / d}]
            if given:
                starts = starts[:1] + [{"C": 10.0 / s, "kappa": 1.0 / d}]
        n = len(starts) if self.n_starts is None else int(self.n_starts)
        thetas = [self._theta_from(st, s, d) for st in starts[:n]]
        rng = resolve_rng(self.random_state)
        lo = np.array([b[0] for b in bounds])
        hi = np.array([b[1] for b in bounds])
        while len(thetas) < n:
            thetas.append(rng.uniform(lo, hi))
        return thetas

    def start_points(self, X, y, sample_weight=None):
        """The optimiser's starting points ``theta0`` for training data ``(X, y)``
        (and case weights ``sample_weight``, which change the target scale).

        The list :meth:`fit` would start from (``[ln C, ln epsilon, (ln kappa0
        with kappa0="evidence",) ln kappa (or ln kappa_l), ln kappa_b]``, box and starts scaled by the
        standard deviation of ``y``); pipelines run start ``k`` as its own
        task with ``fit(init={"theta": start_points(X, y)[k], ...})``.
        """
        self._groups, X = table_groups(self, X)
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise ValueError(f"X must be 2-D and y hold one target per row of X; got shapes "
                             f"{X.shape} and {y.shape}.")
        n, d = X.shape
        sw = check_sample_weight(self, sample_weight, n)
        self._check_params(n, d)
        s = _target_scale(y, sw)
        return self._start_points(s, d, self._box(s, d))

    # ------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, callback=None, init=None, case_ids=None):
        """Fit the MAP solution and, with ``optimize=True``, maximise the evidence.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : array-like (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Case weights: one finite number ``>= 0`` per case, not all zero
            (see "Case weights" in the class docstring). None: every case
            has weight 1.
        callback : callable, optional
            ``callback(start_index, record, state)`` after every full-data
            evidence evaluation (pipelines' checkpoints; the subsample phase
            and the isotropic first stage are not reported, a resumed fit
            repeats them): the optimiser's trajectory record (``theta``,
            ``fun``, ``grad``, ``grad_norm``, ``info``, ``replayed``) and the
            objective's state (``nu``, secant slope, best point so far).
        init : dict, optional
            Resume one start: ``theta`` (the start point), optionally with
            ``nu`` (SMO warm start) or ``state`` (a ``state`` given to
            ``callback``; without either the SMO starts as in a fresh fit);
            optionally ``evaluations``, the records given to ``callback``
            since ``theta``, which the optimiser replays without
            re-evaluating them, so that the result equals that of the
            uninterrupted start (see :func:`bsvm_scale.optimization.driver.run_start`).
        case_ids : array-like of shape (n_samples,), optional
            Unique integer or string case identifiers, kept for the support
            vectors (``support_case_ids_``); a retraining given them starts
            its SMO at the earlier ``nu`` of the shared cases
            (:mod:`bsvm_scale.models.warm_start`).
        """
        X, y = check_regression_data(self, X, y)
        n, d = X.shape
        self._groups = ard_groups(self)
        sw = check_sample_weight(self, sample_weight, n)
        case_ids = check_case_ids(case_ids, n)
        beta = self._check_params(n if sw is None else int(np.count_nonzero(sw)), d)
        self._scaler = standardizer_for(self, X, sw)
        Xs, kappa0 = self._scaler.transform(X), self._kappa0(y, sw)
        s = _target_scale(y, sw)
        bounds = self._box(s, d)
        _warn_offset(y, sw, bounds)
        self._max_iter = int(self.max_iter) if self.max_iter is not None else max(10**6, 100 * n)
        model = SilfSearch(self, bounds, kappa0, beta, self._groups)
        thetas, resume, retrain = self._search_inputs(s, d, bounds, init, case_ids)
        merged, (Xs, ym, wm, _, resume, retrain) = merge_fit_inputs(  # repeated cases
            Xs, y, sw, None, resume, retrain)
        data = Data(Xs, ym, wm)
        with fit_threads(self.n_jobs):
            if self.optimize:
                out = search(model, data, thetas, resume, retrain, callback)
                obj, final, self.starts_ = out.objective, out.final, out.records
            else:
                obj, final = evaluate_at(model, data, thetas[0], resume, retrain)
                self.starts_ = [fixed_record(thetas[0], final.value, final.info)]
            self._set_fitted(final, beta, Xs, model.settings, wm)
        restore_rows(self, merged, ("support_", "off_bound_", "on_bound_"))
        keep_support_case_ids(self, case_ids)
        self._smo_slope = float(obj.slope)
        return self

    def _search_inputs(self, s, d, bounds, init, case_ids):
        """The start points, the resumed start (:class:`Resume`) and the
        retraining (:class:`Retrain`) of a fit."""
        thetas, resume, retrain = self._start_points(s, d, bounds), None, None
        prev = previous_model(self.warm_start_from, BayesianSVR, d, bool(self.ard),
                              self._groups)
        if prev is not None:
            retrain = self._retrain(prev, bounds, case_ids)
            thetas = [retrain.theta]
        if init is not None:
            resume = self._resume(init, bounds)
            thetas = [resume.theta]
        return thetas, resume, retrain

    def _kappa0(self, y, sample_weight=None):
        """``kappa0`` of the objective: None when inferred (in ``theta``), the given
        value, or ``var(y)`` (weighted with case weights)."""
        if self.kappa0 is None or isinstance(self.kappa0, str):  # scaled by var(y)
            check_nonconstant(y if sample_weight is None else y[sample_weight > 0], "BayesianSVR",
                              "kappa0 (or its start and box) = var(y) would be 0; pass a "
                              "float kappa0 or check y" + ("." if sample_weight is None else
                                                           " (the cases of positive weight)."))
        if isinstance(self.kappa0, Real):
            return float(self.kappa0)
        return None if self._lead == 3 else _target_var(y, sample_weight)

    def _resume(self, init, bounds):
        """The start ``init`` of ``fit(init=...)``, checked: its ``theta``,
        objective state (or bare SMO vector ``nu``) and evaluations."""
        theta = np.asarray(init["theta"], dtype=float)
        if theta.shape != (len(bounds),) or not np.all(np.isfinite(theta)):
            raise ValueError(f"init['theta'] must hold {len(bounds)} finite log "
                             f"hyperparameters (ard={self.ard}, kappa0={self.kappa0!r}); "
                             f"got {init['theta']!r:.200}.")
        return Resume(theta, init.get("state"), init.get("nu"), init.get("evaluations"))

    def _retrain(self, prev, bounds, case_ids=None):
        """A retraining (``warm_start_from``): the earlier optimum inside this
        fit's box, the earlier search's final model Hessian, and as warm start
        the earlier dual vector on the cases still present (with
        ``case_ids``) and the earlier fit's estimate of the slope ``psi'(s)``
        of the outer equation of the SMO
        (:func:`bsvm_scale._compiled.smo_silf.smo_silf`): without one the
        first solve on the new data begins from the slope ``kappa_b`` and its
        first steps in ``s`` overshoot."""
        theta = previous_thetas(prev)
        if theta.shape[0] != len(bounds):
            raise ValueError(f"warm_start_from: the earlier model has kappa0={prev.kappa0!r}, "
                             f"this fit kappa0={self.kappa0!r}; their hyperparameters "
                             "do not correspond.")
        theta = np.clip(theta, [b[0] for b in bounds], [b[1] for b in bounds])
        warm = Warm(carried_dual(prev, case_ids), float(getattr(prev, "_smo_slope", 0.0)))
        return Retrain(theta, warm, previous_hessians(prev))

    def _set_fitted(self, final, beta, X, settings, sample_weight=None):
        theta, nu, info = final.theta, final.dual, final.info
        C, eps, cov, ev = final.detail
        if info["smo_violation"] > self.tol:
            hint = ("increase max_iter" if info["smo_iter"] >= self._max_iter else
                    "the solver stalled at the limit of floating-point precision; use a "
                    "larger tol")
            warnings.warn(f"SMO stopped after {info['smo_iter']} iterations with KKT violation "
                          f"{info['smo_violation']:.3g} > tol={self.tol}; {hint}.",
                          ConvergenceWarning, stacklevel=3)
        if ev.jitter:
            warnings.warn(f"Sigma_M was not numerically positive definite; relative jitter "
                          f"{ev.jitter:g} was added to its diagonal.", RuntimeWarning, stacklevel=3)
        if not np.isfinite(ev.value):
            raise FloatingPointError("the evidence at the fitted hyperparameters is not finite.")
        self.x_mean_ = self._scaler.mean
        self.x_scale_ = self._scaler.scale
        self.theta_ = theta
        self.hyperparameters_ = {"C": C, "epsilon": eps, "beta": beta, "kappa0": cov.kappa0,
                                 "kappa": cov.kappa if not cov.ard else np.array(cov.kappa),
                                 "kappa_b": cov.kappa_b}
        self.log_evidence_ = -float(ev.value)
        self.noise_variance_ = float(losses.silf_noise_variance(C, eps, beta))
        absnu = np.abs(nu)
        self.support_ = ev.support
        self.off_bound_ = ev.off_bound
        self.on_bound_ = np.flatnonzero(absnu >= C) if sample_weight is None else \
            np.flatnonzero((absnu >= C * sample_weight) & (absnu > 0.0))
        self.dual_coef_ = nu[ev.support].copy()
        self.intercept_ = float(info["bias"])
        self.support_vectors_ = X[ev.support].copy()
        self.off_bound_vectors_ = X[ev.off_bound].copy()
        for name in ("cholesky_", "predictor_"):  # from an earlier fit
            self.__dict__.pop(name, None)
        if ev.method == "matrix_free":
            p = prediction_factor(ev, settings)
            self.predictor_ = p.as_dict()
        else:
            self.cholesky_ = ev.L
        self.evidence_method_ = ev.method
        self.evidence_error_ = float(ev.error)
        self.jitter_ = float(ev.jitter)
        self.n_iter_ = int(info["smo_iter"]) + int(info["newton_iter"])
        self.fit_info_ = dict(info)
        self.__dict__.pop("ard_groups_", None)
        if self._groups is not None:  # tied ARD on a table
            self.ard_groups_ = self._groups
        del self._scaler, self._groups

    # ------------------------------------------------------------------
    def _latent_variance(self, cov, Xs):
        """``sigma_t^2`` (4.46): dense factor, or the matrix-free predictor."""
        p = getattr(self, "predictor_", None)
        if p is not None:
            return LowRankPredictor.from_dict(p).variance(cov, Xs)
        var = np.empty(Xs.shape[0])
        rows = max(1, _PRED_CHUNK_BYTES // (8 * max(1, self.off_bound_vectors_.shape[0])))
        for a in range(0, Xs.shape[0], rows):
            var[a:a + rows] = predictive_variance_chunk(cov, Xs[a:a + rows],
                                                        self.off_bound_vectors_, self.cholesky_)
        return var

    def _covariance(self):
        h = self.hyperparameters_
        return GaussianCovariance(h["kappa0"], h["kappa"], h["kappa_b"],
                                  getattr(self, "ard_groups_", None))

    def predict(self, X, return_std=False, include_noise=False):
        """Predictive mean (and standard deviation) at ``X``.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        return_std : bool, default=False
            Also return the standard deviation: of ``f(x)`` (``sigma_t``,
            4.46), or of the target ``sqrt(sigma_t^2 + sigma_n^2)`` with
            ``include_noise=True``.
        include_noise : bool, default=False

        Returns
        -------
        mean : ndarray (n_samples,)
        std : ndarray (n_samples,), only with ``return_std=True``
        """
        if not return_std:
            return self._moments(X, variance=False)[0]
        mean, var_f, var_y = self._moments(X)
        return mean, np.sqrt(var_y if include_noise else var_f)

    def predictive_moments(self, X):
        """``(mean, var_f, var_y)`` at ``X`` in one pass: the predictive mean,
        the variance ``sigma_t^2`` of ``f(x)`` (4.46) and that of the target,
        ``sigma_t^2 + sigma_n^2`` (what :meth:`predict` returns the roots of;
        batch scoring takes all three at once)."""
        return self._moments(X)

    def _moments(self, X, variance=True):
        X = check_predict_X(self, X, "dual_coef_")
        Xs = np.ascontiguousarray((X - self.x_mean_) / self.x_scale_)
        cov = self._covariance()
        cols = self._off_bound_columns() if variance else None
        if cols is not None:  # dense factor: mean and variance from one kernel pass
            mean, var = self._dense_moments(cov, Xs, cols)
            return mean, var, var + self.noise_variance_
        # f(x) = sum_i nu_i Cov~(x, x_i) + b, with b = kappa_b sum(nu) at the optimum
        kern = cov.with_bias(0.0)
        mean = kern.cross_matvec(Xs, self.support_vectors_, self.dual_coef_) \
            if self.dual_coef_.size else np.zeros(Xs.shape[0])
        mean = mean + self.intercept_
        if not variance:
            return mean, None, None
        var = self._latent_variance(cov, Xs)
        return mean, var, var + self.noise_variance_

    def _off_bound_columns(self):
        """Positions of the off-bound SVs among the SVs when the variance uses
        the dense factor (else None: matrix-free, or no off-bound case)."""
        if getattr(self, "cholesky_", None) is None or self.off_bound_.size == 0:
            return None
        cols = np.searchsorted(self.support_, self.off_bound_)
        if np.any(cols >= self.support_.size) or not np.array_equal(self.support_[cols],
                                                                     self.off_bound_):
            return None
        return cols

    def _dense_moments(self, cov, Xs, cols):
        """Mean and ``sigma_t^2`` (4.46) in chunks, each kernel value computed
        once (:meth:`GaussianCovariance.cross_matvec_block`); the same bits as
        the separate mean and :func:`predictive_variance_chunk`."""
        kern = cov.with_bias(0.0)
        mean, var = np.empty(Xs.shape[0]), np.empty(Xs.shape[0])
        rows = max(1, _PRED_CHUNK_BYTES // (8 * cols.size))
        for a in range(0, Xs.shape[0], rows):
            m, K = kern.cross_matvec_block(Xs[a:a + rows], self.support_vectors_,
                                           self.dual_coef_, cols, cov.kappa_b)
            mean[a:a + rows] = m + self.intercept_
            var[a:a + rows] = variance_from_cross(cov, K.T, self.cholesky_)
        return mean, var

