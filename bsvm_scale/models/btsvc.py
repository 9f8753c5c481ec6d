"""Bayesian trigonometric support vector classifier (BTSVC), thesis ch. 5.

The latent function ``f`` has a zero-mean Gaussian process prior with the
Gaussian covariance (5.13) (ARD form 5.37) and the trigonometric likelihood
(5.8). Fitting consists of

1. the MAP estimate ``f_MP = Sigma v`` (5.32), obtained from the convex dual
   (5.29) by the Numba SMO solver of :mod:`bsvm_scale._compiled.smo_trig`, warm
   started from the previous solution whenever the hyperparameters change;
2. the Laplace-approximated evidence (5.35) and its gradient (5.36)/(5.37)
   over the support-vector block (:mod:`bsvm_scale.inference.evidence_trig`);
3. a trust-region quasi-Newton search on ``[ln kappa0, ln kappa (or ln
   kappa_l), ln kappa_b]`` within a box prior, from one or several starts,
   keeping the start with the highest evidence (:mod:`bsvm_scale.optimization.driver`).

Prediction uses the Gaussian predictive distribution of ``f(x)`` (5.41) and the class
probability (5.42), whose finite integral is evaluated by a fixed-order Gauss-Legendre
rule vectorised over test points. More than two classes are handled by binary models
with hyperparameters of their own (:mod:`bsvm_scale.models.multiclass`): one-versus-one
(the default; probabilities coupled, :mod:`bsvm_scale.inference.coupling`) or
one-versus-rest (Appendix H / experiment C4; probabilities normalised).

Case weights (``fit(sample_weight=...)``, ``class_weight``) multiply the cases' losses
in every step (:class:`BayesianSVC`, "Case and class weights"); repeated cases are
fitted as one weighted case (:mod:`bsvm_scale.models.merge`).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions

from .._util.base import resolve_rng, standardizer_for
from .._util.threads import fit_threads
from .._util.validation import (check_classification_data, check_positive, check_predict_X,
                                check_sample_weight, class_weights, store_params)
from ..inference.covariance import GaussianCovariance
from ..inference.evidence_lowrank import DEFAULT_TOL, EvidenceSettings, LowRankPredictor
from ..inference.evidence_trig import predictive_moments, trig_class_probability
from ..inference.objective_trig import EVIDENCE_MB, TrigObjective, solve_dual
from ..tables import EncodedTable
from ._common import BAYES_CONSTRAINTS, SearchRun, ard_groups, table_groups
from .merge import merge_fit_inputs, restore_rows
from .multiclass import (COUPLINGS, FitJob, binary_problems, class_probabilities,
                         decision_values, fit_binaries, fit_shared, retrain_starts)
from .search_hooks import TrigSearch
from .warm_start import check_case_ids, keep_support_case_ids, previous_model
from ..optimization.records import fixed_record
from ..optimization.search import Data, Resume, evaluate_at, search
from ..optimization.starts import DEFAULT_ARD_INIT

__all__ = ["BayesianSVC", "solve_dual", "trig_class_probability", "TrigObjective"]

#: box prior on the log hyperparameters
BOUNDS_LN_KAPPA0 = (-5.0, 10.0)
BOUNDS_LN_KAPPA = (-17.0, 10.0)
BOUNDS_LN_KAPPA_B = (-13.0, 10.0)
#: starting values of kappa0 tried in order (docs/protocols.md, Conventions)
KAPPA0_STARTS = (10.0, 1.0, 100.0, 0.1)
KAPPA_B_START = 100.0


# -- the estimator ----------------------------------------------------------------------
class BayesianSVC(ClassifierMixin, BaseEstimator):
    """Bayesian trigonometric support vector classifier (BTSVC).

    Gaussian-process classifier with the trigonometric likelihood (5.8), MAP
    by SMO on the dual (5.29), hyperparameters ``kappa0, kappa (or kappa_l),
    kappa_b`` of the covariance (5.13)/(5.37) chosen by maximising the
    Laplace evidence (5.35) with its analytic gradient (5.36).

    Parameters
    ----------
    ard : bool, default=False
        One ``kappa_l`` per input (5.37) instead of a single ``kappa``.
    ard_init : {"continuation", "isotropic", "start"}, default="continuation"
        How an ARD search begins (``ard=True`` with more than one input;
        :func:`bsvm_scale.optimization.starts.isotropic_stage`).
        ``"continuation"``: the isotropic model (one ``kappa``, the geometric
        mean of the start's ``kappa_l``) is fitted first from every start, and
        the ARD search runs from its best optimum (every ``kappa_l`` equal to
        its ``kappa``, SMO warm start from its solution, its model Hessian
        lifted, :func:`bsvm_scale.optimization.starts.ard_hessian`, trust radius
        ``FINE_MAX_STEP``), so that the ARD evidence is at least the isotropic
        optimum's. ``"isotropic"``: the
        same, plus a run from every start (same guarantee, about twice the
        evaluations). ``"start"``: only the run from the start (no guarantee).
    n_starts : int, optional
        Number of starting points for the evidence maximisation; start ``k``
        uses ``kappa0`` from ``(10, 1, 100, 0.1)`` (then log-uniform random
        values in ``[0.1, 100]``), ``kappa = 1/d`` and ``kappa_b = 100``.
        Default 2 (``kappa0 = 10`` and ``1``), or 1 when ``kappa0`` is given.
    tol : float, default=1e-3
        Tolerance ``tau`` of the SMO stopping rule (5.31).
    cache_mb : float, default=256
        Memory budget of the covariance-row cache in MiB.
    random_state : int, Generator or None
        Seeds the extra random starts (more than four starts).
    optimize : bool, default=True
        Maximise the evidence; if False the given (or default starting)
        hyperparameters are used as they are and fit only solves the MAP
        problem and evaluates the evidence.
    kappa0, kappa, kappa_b : float, optional
        Starting (``optimize=True``) or fixed (``optimize=False``) values;
        ``kappa`` may be an array of length ``d`` with ``ard=True``.
        Defaults: ``kappa0`` from the list above, ``kappa = 1/d``,
        ``kappa_b = 100``. Inputs are standardised, so ``kappa`` refers to
        standardised inputs.
    starts : list of dict, optional
        Explicit starts, each a dict with any of ``kappa0``, ``kappa``,
        ``kappa_b`` (missing entries take the defaults). Overrides
        ``n_starts``; used e.g. to run one start per Dask task.
    max_iter : int, optional
        SMO iteration limit per MAP solve (default ``max(10**6, 100 n)``).
    evidence_method : {"auto", "dense", "matrix_free"}, default="auto"
        How the SV block of the evidence (5.35)-(5.37) is handled:
        ``"dense"`` factorises it (exact, O(m^3), 8 m^2 bytes);
        ``"matrix_free"`` uses a pivoted-Cholesky factor with a bound on what
        it leaves out, and a preconditioned stochastic Lanczos correction
        with fixed probes when the rank budget stops it first
        (:mod:`bsvm_scale.inference.evidence_lowrank`); ``"auto"``: dense up to 2,000
        SVs, up to 5,000 a factor of ``<= 0.35 m`` columns where it meets
        ``evidence_tol`` alone (else dense), matrix-free beyond.
        ``evidence_method_`` and ``evidence_error_`` say what the fit used.
    evidence_tol : float, default=0.05
        Error allowed in ``-ln evidence`` (nats) on the matrix-free path.
    evidence_mb : float, default=1024
        Memory budget (MiB) of the evidence arrays: the dense block, or the
        ``m x r`` factor (its rank is capped to fit). A block that does not
        fit is a rejected step during the search and an
        :class:`~bsvm_scale.inference.evidence_lowrank.EvidenceBudgetError` naming this
        parameter at the final fit.
    init_subsample : int or None, default=4000
        Coarse-to-fine starts for large data: when ``n > 2 * init_subsample``
        every start is first optimised on a random subsample of
        ``init_subsample`` training cases (seeded by ``random_state``, seed 0
        when None, so that a fit is repeatable); the start with the highest
        subsample evidence is then refined on the full data from its
        subsample optimum, with the SMO warm-started from the subsample's dual
        solution and a trust radius of :data:`~bsvm_scale.optimization.starts.FINE_MAX_STEP`,
        ending once 2 evaluations in a row have not improved on its best point
        by more than 1 nat (:data:`~bsvm_scale.optimization.starts.FINE_OPTIONS`). The
        subsample optimum is usually close to the full one, so the costly full-data
        evaluations (an SMO solve over ``n`` cases and an ``m x m`` evidence block) are few.
        ``None`` always optimises every start on the full data.
    optimizer_options : dict, optional
        Options of the evidence search
        (:class:`bsvm_scale.optimization.driver.Options`) over its defaults
        :data:`bsvm_scale.optimization.driver.PIECEWISE_OPTIONS`, e.g.
        ``stall_evals`` (5), ``stall_atol`` (0.1 nat), ``slope_rounds`` (1).

    warm_start_from : estimator, str or path, optional
        An earlier fit of this class (or its model file, which keeps the new
        model file small) whose optimum starts a retraining: one start from
        its ``theta_`` on the full data, beginning with the earlier search's
        model Hessian, with the stop rule of a retraining
        (:func:`bsvm_scale.optimization.starts.retrain_options`;
        ``optimizer_options`` override it). Its inputs, ``ard`` and (one-versus-
        rest) classes must match; :mod:`bsvm_scale.models.warm_start` describes
        the whole procedure.
        With ``fit(init=...)`` the start is ``init["theta"]`` (resuming such a
        retraining).
    n_jobs : int or None, default=-1
        Threads for the independent parts of the evidence search, as in
        :class:`~bsvm_scale.models.bsvr.BayesianSVR` (the starts, each with
        its own row cache of ``cache_mb``, without a ``callback``; the
        isotropic first stage of ARD; the subsample phase) or, with more than
        two classes, for the binary models instead. As there, it
        is the number of threads of the whole fit: -1 (the default) every
        core; 1 or None a one-core fit, one task after the other.
    class_weight : dict, "balanced" or None, default=None
        Weight of the cases of each class, multiplying ``sample_weight``: a
        dict ``{label: weight}`` (labels of ``y``; a label that is not a
        class of ``y`` is an error; classes not named keep weight 1),
        ``"balanced"`` (``n_samples / (n_classes * count(class))``, as
        :func:`sklearn.utils.class_weight.compute_class_weight`) or None (all
        1). See "Case and class weights" below.
    multi_class : {"ovo", "ovr"}, default="ovo"
        More than two classes (:mod:`bsvm_scale.models.multiclass`): "ovo",
        one model per pair of classes on their cases, probabilities coupled
        by ``coupling``; "ovr", one model per class against the rest on all
        cases, probabilities normalised (the thesis' C4). Ignored for two
        classes.
    shared_kernel : bool, default=False
        One ``(kappa0, kappa, kappa_b)`` for all binary models of more than
        two classes, chosen by the sum of their evidences (one search, as
        for two classes: ``init`` one dict, ``callback`` start indices ints;
        inputs standardised on all cases), as one kernel in LIBSVM or a GP
        classifier; False, each its own (:mod:`bsvm_scale.models.multiclass`).
    coupling : {"product", "wu_lin_weng"}, default="product"
        How "ovo" turns the pairwise probabilities (5.42) into class
        probabilities (:mod:`bsvm_scale.inference.coupling`): "product",
        ``p_i`` proportional to the product of class ``i``'s pairwise
        probabilities; "wu_lin_weng", Wu, Lin & Weng (2004) method 2
        (LIBSVM's).
    decision_function_shape : {"ovr", "ovo"}, default="ovr"
        The columns of :meth:`decision_function` of a "ovo" model, as in
        scikit-learn's ``SVC``: "ovo", the pairwise latent means; "ovr", one
        score per class (votes, ties broken by the pairwise means).

    Attributes
    ----------
    classes_ : ndarray
        Class labels.
    n_features_in_ : int
        Number of inputs.
    hyperparameters_ : dict or list of dict
        ``kappa0``, ``kappa`` (float, or array with ARD), ``kappa_b``; a list
        (one per binary model) for more than two classes.
    theta_ : ndarray
        Log hyperparameters (binary).
    log_evidence_ : float or ndarray
        ``ln P(D | theta)`` (5.35) at the chosen hyperparameters (per binary model).
    support_ : ndarray
        Indices of the support vectors (binary; of repeated cases the first).
    support_vectors_ : ndarray
        Standardised inputs of the support vectors (binary).
    dual_coef_ : ndarray
        ``v_M = y_M alpha_M`` (5.32) of the support vectors (binary).
    support_case_ids_ : ndarray or list of ndarray
        The ``case_ids`` given to ``fit`` of the support vectors (one array per
        class with more than two classes; absent without them).
    cholesky_, lam_sqrt_ : ndarray or None
        Dense path: lower Cholesky factor of ``I + Lambda^1/2 Sigma_M
        Lambda^1/2`` and ``Lambda_M^1/2`` (binary), read by the predictive
        variance (5.41); None on the matrix-free path.
    predictor_ : dict or None
        Matrix-free path: pivot inputs ``X_S``, their weights ``sl_S`` and the
        triangles ``L_S``, ``L_C`` of :class:`~bsvm_scale.inference.evidence_lowrank.LowRankPredictor`
        (O(r^2), never the ``m x m`` factor).
    evidence_method_ : str
        ``"dense"`` or ``"matrix_free"`` at the fitted hyperparameters.
    evidence_error_ : float
        Error estimate of ``log_evidence_`` (nats; 0 for dense).
    x_mean_, x_scale_ : ndarray
        Training statistics used to standardise inputs.
    n_iter_ : int or ndarray
        SMO iterations of the fit: summed over every MAP solve of the chosen
        start (its evidence search on the full data and the final solve).
    n_opt_iter_ : int or ndarray
        Trust-region iterations of the chosen start (0 when ``optimize=False``).
    starts_ : list of dict
        Per start, in the layout of :func:`bsvm_scale.optimization.records.start_record`
        (each trajectory record's ``info`` holds ``n_sv``, ``smo_iter``, and
        ``map_s`` / ``evidence_s``, the seconds of the MAP solve and of the
        evidence + gradient). With coarse-to-fine starts (``init_subsample``)
        the refined start comes first and holds its subsample phase under ``subsample`` (a start
        record plus ``n_samples``); the other starts ran on the subsample
        only (empty ``trajectory``, their record under ``subsample``).
    best_start_ : int
        Index in ``starts_`` of the chosen start.
    jitter_ : float
        Jitter that the final factorisation needed (normally 0.0).
    estimators_ : list of BayesianSVC
        The binary models (more than two classes only): one per class
        ("ovr") or per pair of classes in ``(0, 1), (0, 2), ...`` order
        ("ovo"). The per-model attributes above (``hyperparameters_``,
        ``support_``, ...) are then lists or arrays in the same order;
        ``support_`` indexes the rows of the ``X`` given to ``fit``.
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class of ``classes_`` that ``class_weight`` gave
        (ones without it).

    Notes
    -----
    **Case and class weights.** Case ``i`` of ``fit`` gets the weight ``c_i =
    sample_weight_i * class_weight_[y_i]``, computed on the labels given to
    ``fit``: with more than two classes every binary model is fitted with
    these same weights on its cases (``"balanced"`` counts all the classes, a dict
    names the original labels; the binary models have ``class_weight=None``).
    A weight multiplies the case's loss in the MAP problem, ``min_f 1/2 f^T
    Sigma^-1 f + sum_i c_i l_t(y_i f_i)`` (as LIBSVM's per-case ``C_i = C
    c_i``): the likelihood (5.8) of the case enters as ``P(y_i | f_i)^c_i``.
    In the dual (5.29) ``phi(alpha_i)`` becomes ``c_i phi(alpha_i / c_i)``
    (:mod:`bsvm_scale._compiled.smo_trig`); in the evidence (5.35)-(5.37),
    the predictive variance (5.41) and so the class probability (5.42) the
    curvature ``Lambda_m`` (5.10) of an SV becomes ``c_m Lambda_m``
    (:mod:`bsvm_scale.inference.evidence_trig`). Inputs are standardised
    with the weighted mean and standard deviation, and the subsample phase
    (``init_subsample``) draws cases uniformly, each with its weight.

    Integer weights are repeated cases: weight ``k`` gives the MAP function,
    predictions and evidence of the data with the case repeated ``k`` times (no
    constant between the evidences, by Sylvester's determinant identity), and a
    fit merges repeated cases (same inputs and label) into one of their summed
    weight (:mod:`bsvm_scale.models.merge`). A case of weight 0 is left out in
    effect: it is held at ``alpha = 0``, is never a support vector and has no
    say in the standardisation; ``support_`` (and every other index) still
    refers to the rows of the ``X`` given to ``fit``. With other weights
    ``log_evidence_`` is the Laplace approximation of ``ln int prod_i P(y_i |
    f_i)^c_i p(f) df``, the evidence of data in which case ``i`` counts ``c_i``
    times (not a normalised distribution over labels): it ranks hyperparameters
    fitted with the same weights, but evidences of fits with different weights
    (e.g. all weights doubled) are not comparable.
    """

    _parameter_constraints = {**BAYES_CONSTRAINTS,
                              "class_weight": [dict, StrOptions({"balanced"}), None],
                              "multi_class": [StrOptions({"ovr", "ovo"})],
                              "shared_kernel": ["boolean"],
                              "coupling": [StrOptions(set(COUPLINGS))],
                              "decision_function_shape": [StrOptions({"ovr", "ovo"})]}

    def __init__(self, *, ard=False, n_starts=None, tol=1e-3, cache_mb=256, random_state=None,
                 optimize=True, kappa0=None, kappa=None, kappa_b=None, starts=None,
                 max_iter=None, optimizer_options=None, init_subsample=4000,
                 evidence_method="auto", evidence_tol=DEFAULT_TOL, evidence_mb=EVIDENCE_MB,
                 warm_start_from=None, ard_init=DEFAULT_ARD_INIT, n_jobs=-1,
                 class_weight=None, multi_class="ovo", shared_kernel=False, coupling="product",
                 decision_function_shape="ovr"):
        store_params(self, locals())

    # -- helpers ---------------------------------------------------------------
    def _check_params(self, d):
        """Validate the parameters (``_parameter_constraints``, then an array
        ``kappa`` against ``ard`` and the ``d`` inputs)."""
        self._validate_params()
        kappa = check_positive("kappa", self.kappa, allow_none=True)
        if kappa is not None and np.ndim(kappa) == 1:
            if not self.ard:
                raise ValueError(f"kappa is an array ({self.kappa!r}) but ard=False; pass a float "
                                 "or set ard=True.")
            if kappa.shape[0] != self._n_kappa(d):
                raise ValueError(f"kappa has {kappa.shape[0]} entries but X has "
                                 f"{self._n_kappa(d)} input columns; pass one kappa_l per input "
                                 "(or a float).")

    def _theta_from(self, d, kappa0, kappa, kappa_b):
        kappa0 = float(check_positive("kappa0", kappa0))
        kappa_b = float(check_positive("kappa_b", kappa_b))
        kappa = check_positive("kappa", 1.0 / d if kappa is None else kappa)
        if self.ard:
            k = self._n_kappa(d)
            if np.ndim(kappa) > 1 or np.size(kappa) not in (1, k):
                raise ValueError(f"kappa must have {k} entries with ard=True; got {kappa!r}.")
            kappa = np.broadcast_to(np.asarray(kappa, dtype=np.float64), (k,)).copy()
        elif np.ndim(kappa) != 0:
            raise ValueError("kappa must be a float with ard=False.")
        return GaussianCovariance(kappa0, kappa, kappa_b).theta

    def _theta_kappa(self, d):
        """The user's kappa (or 1/d) in the layout of the covariance."""
        kappa = 1.0 / d if self.kappa is None else self.kappa
        if self.ard:
            return np.broadcast_to(np.asarray(kappa, dtype=np.float64),
                                   (self._n_kappa(d),)).copy()
        return float(kappa)

    def _start_thetas(self, d):
        if self.starts is not None:
            if len(self.starts) == 0:
                raise ValueError("starts must be a non-empty list of dicts.")
            k0 = KAPPA0_STARTS[0] if self.kappa0 is None else self.kappa0
            kb = KAPPA_B_START if self.kappa_b is None else self.kappa_b
            out = []
            for s in self.starts:
                if not isinstance(s, dict) or not set(s) <= {"kappa0", "kappa", "kappa_b"}:
                    raise ValueError("each entry of starts must be a dict with keys among "
                                     f"kappa0, kappa, kappa_b; got {s!r}.")
                out.append(self._theta_from(d, s.get("kappa0", k0), s.get("kappa", self.kappa),
                                            s.get("kappa_b", kb)))
            return out
        kb = KAPPA_B_START if self.kappa_b is None else self.kappa_b
        if self.kappa0 is not None:
            k0s = [self.kappa0]
        else:
            n = 2 if self.n_starts is None else int(self.n_starts)
            k0s = list(KAPPA0_STARTS[:n])
            if n > len(KAPPA0_STARTS):
                rng = resolve_rng(self.random_state)
                k0s += list(10.0 ** rng.uniform(-1.0, 2.0, size=n - len(KAPPA0_STARTS)))
        return [self._theta_from(d, k0, self.kappa, kb) for k0 in k0s]

    def _evidence_settings(self):
        return {"evidence": EvidenceSettings(self.evidence_method, float(self.evidence_tol),
                                             float(self.evidence_mb))}

    def _bounds(self, d):
        return ([BOUNDS_LN_KAPPA0] + [BOUNDS_LN_KAPPA] * (self._n_kappa(d) if self.ard else 1)
                + [BOUNDS_LN_KAPPA_B])

    def _n_kappa(self, d):
        """Relevance weights of an ARD model on ``d`` inputs: ``d``, or one per
        input column of a table (its one-hot columns tied, :func:`ard_groups`)."""
        groups = getattr(self, "_groups", None)
        return d if groups is None else int(groups.max()) + 1

    def start_points(self, X, y=None):
        """The optimiser's starting points ``theta0`` (``[ln kappa0, ln kappa
        (or ln kappa_l), ln kappa_b]``) that :meth:`fit` would use for
        inputs ``X`` (every binary model uses the same ones);
        pipelines run start ``k`` as its own task with
        ``fit(init={"theta": start_points(X)[k], ...})``."""
        self._groups, X = table_groups(self, X)
        d = np.asarray(X).shape[1] if np.ndim(X) == 2 else None
        if d is None or d == 0:
            raise ValueError(f"X must be a 2-D array with at least one feature; got shape "
                             f"{np.shape(X)}.")
        self._check_params(d)
        return self._start_thetas(d)

    # -- fitting ---------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, callback=None, init=None, case_ids=None):
        """Fit the BTSVC (binary models, ``multi_class``, for more than two classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite).
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct values).
        sample_weight : array-like of shape (n_samples,), optional
            Case weights (finite, >= 0, not all 0), multiplied by the class
            weights of ``class_weight``; see the class docstring, "Case and
            class weights". None: every case counts once.
        callback : callable, optional
            ``callback(start_index, record, state)`` after every evidence
            evaluation (used by pipelines for checkpoints): ``record`` is the
            optimiser's trajectory record (``theta``, ``fun``, ``grad``,
            ``grad_norm``, ``info``, ``replayed``) and ``state`` the
            objective's warm-start state (SMO vector ``alpha`` and the best
            point so far, :meth:`TrigObjective.get_state`). With more
            than two classes ``start_index`` is the pair ``(model_index,
            start_index)`` of the binary model being fitted (``estimators_`` order).
        init : dict or list of dict, optional
            Resume one start: ``theta`` (log hyperparameters, the start
            point), optionally with ``alpha`` (SMO warm start) or ``state`` (a
            ``state`` given to ``callback``) and ``evaluations`` (the records
            given to ``callback`` since ``theta``, replayed without
            re-evaluation, so that the result equals the uninterrupted
            start's). More than two classes: one such dict (or None) per
            binary model, in ``estimators_`` order.
        case_ids : array-like of shape (n_samples,), optional
            Unique case identifiers (integers or strings), kept for the
            support vectors of every binary model (``support_case_ids_``). A
            retraining given them begins each binary model's SMO at its
            earlier ``alpha`` on the shared cases
            (:mod:`bsvm_scale.models.warm_start`).

        Returns
        -------
        self : BayesianSVC
        """
        job = self._prepare(X, y, sample_weight, case_ids)
        with fit_threads(self.n_jobs):
            if job.problems is None:
                self._fit_binary(job.X, np.where(job.y == self.classes_[1], 1.0, -1.0), callback,
                                 init, job.warm, job.case_ids, job.weights)
            elif self.shared_kernel:
                fit_shared(self, job, callback, init)
            else:
                # the binary models on n_jobs threads, or with a callback (a
                # pipeline's checkpoints, one writer) one after the other
                outer = self.n_jobs if callback is None else None
                fit_binaries(self, job, callback, init, outer,
                             self.n_jobs if outer is None else None)
        return self

    def _prepare(self, X, y, sample_weight=None, case_ids=None, retrain=True):
        """Validate a fit's data, set the class attributes (``classes_``,
        ``class_weight_``, a table's coding) and return its
        :class:`~bsvm_scale.models.multiclass.FitJob` (``retrain``: with the
        warm starts of ``warm_start_from``)."""
        X, y, classes, codes = check_classification_data(self, X, y)
        self._groups = ard_groups(self)
        self._check_params(X.shape[1])
        sample_weight = check_sample_weight(self, sample_weight, X.shape[0])
        self.class_weight_ = class_weights(self, classes, codes)
        weights = self._case_weights(sample_weight, codes)
        self.classes_ = classes
        case_ids = check_case_ids(case_ids, X.shape[0])
        prev = None if not retrain else previous_model(self.warm_start_from, BayesianSVC,
                                                       X.shape[1], self.ard, self._groups)
        problems = None if classes.size == 2 else binary_problems(y, classes, self.multi_class)
        warm = None if prev is None else retrain_starts(self, prev, classes, case_ids, problems)
        return FitJob(X, y, problems, warm, case_ids, weights)

    def _case_weights(self, sample_weight, codes):
        """The per-case weights of the fit, ``sample_weight_i * class_weight_[y_i]``
        (computed on the labels given to ``fit``), or None when neither is given."""
        if sample_weight is None and self.class_weight is None:
            return None
        w = self.class_weight_[codes]
        if sample_weight is not None:
            w = sample_weight * w
        if not np.any(w > 0):
            raise ValueError("sample_weight times class_weight is zero for every case, which "
                             "leaves nothing to fit; give some class and case a positive weight.")
        return np.ascontiguousarray(w, dtype=np.float64)

    def _fit_binary_labels(self, X, y01, callback, init, warm, case_ids=None, weights=None):
        """Binary member of a multi-class model: a fit on 0/1 labels with the case
        weights ``weights`` (or None), warm-started from ``warm`` (or None; see
        :func:`~bsvm_scale.models.multiclass.retrain_starts`)."""
        X, y01, classes, _ = check_classification_data(self, X, y01)
        self._groups = ard_groups(self)
        self.classes_ = classes
        self._fit_binary(X, np.where(y01 == classes[1], 1.0, -1.0), callback, init, warm,
                         case_ids, weights)

    def _design(self, X):
        """The training design matrix as nested fits take it: with the coding
        of a table (its kernel scales and ARD groups), else as it is."""
        encoder = getattr(self, "encoder_", None)
        return X if encoder is None else EncodedTable(X, encoder)

    def _check_init(self, init, d):
        """Validate the ``init`` argument of :meth:`fit`; returns the start theta."""
        if not isinstance(init, dict) or "theta" not in init:
            raise ValueError("init must be a dict with the start point 'theta' (and "
                             f"optionally 'alpha' or 'state'); got {init!r:.200}.")
        theta = np.asarray(init["theta"], dtype=float)
        k = len(self._bounds(d))
        if theta.shape != (k,) or not np.all(np.isfinite(theta)):
            raise ValueError(f"init['theta'] must hold {k} finite log hyperparameters "
                             f"(ln kappa0, ln kappa{'_l' if self.ard else ''}, ln kappa_b); "
                             f"got {init['theta']!r}.")
        return theta

    def _search_inputs(self, d, init, retrain):
        """The start points and the resumed start (:class:`Resume`) of a
        binary fit, given its retraining (:class:`Retrain` or None)."""
        thetas, resume = self._start_thetas(d), None
        if retrain is not None:  # retraining: one start (the earlier optimum), full data
            thetas = [retrain.theta]
        if init is not None:
            resume = Resume(self._check_init(init, d), init.get("state"), init.get("alpha"),
                            init.get("evaluations"))
            thetas = [resume.theta]
        return thetas, resume

    def _fit_binary(self, X, yb, callback=None, init=None, retrain=None, case_ids=None,
                    weights=None):
        merged, (X, yb, weights, case_ids, init, retrain) = merge_fit_inputs(  # repeated cases
            X, yb, weights, case_ids, init, retrain)
        scaler = standardizer_for(self, X, weights)
        Xs = scaler.transform(X)
        self.x_mean_, self.x_scale_ = scaler.mean, scaler.scale
        run = self._run_search(self._trig_search(X), Data(Xs, yb, weights), X.shape[1], init,
                               retrain, callback)
        self._set_run_fitted(run, run.final, Xs, case_ids)
        restore_rows(self, merged, ("support_",))

    def _trig_search(self, X):
        """The search hooks of a binary fit on ``X`` (SMO limit: ``max_iter``
        or ``max(10^6, 100 n)``)."""
        max_iter = max(10 ** 6, 100 * X.shape[0]) if self.max_iter is None else int(self.max_iter)
        return TrigSearch(self, self._bounds(X.shape[1]), max_iter, self.ard, self._groups)

    def _run_search(self, model, data, d, init, retrain, callback):
        """The evidence search of ``model`` (hooks) on ``data`` from the starts
        (or, ``optimize=False``, the evaluation at the user's values) as a
        :class:`SearchRun`."""
        thetas, resume = self._search_inputs(d, init, retrain)
        if self.optimize:
            out = search(model, data, thetas, resume, retrain, callback)
            smo_iter = sum(max(0, int(r["info"].get("smo_iter", 0)))
                           for r in out.result.trajectory)
            run = SearchRun(out.theta, out.final, None, out.records, out.best,
                            int(out.result.n_iter), smo_iter)
            obj = out.objective
        else:
            kappa0 = KAPPA0_STARTS[0] if self.kappa0 is None else self.kappa0
            kappa_b = KAPPA_B_START if self.kappa_b is None else self.kappa_b
            theta = self._theta_from(d, kappa0, self.kappa, kappa_b)
            obj, final = evaluate_at(model, data, theta, resume, retrain)
            cov = GaussianCovariance(kappa0, self._theta_kappa(d), kappa_b,  # the user's values
                                     self._groups if self.ard else None)
            run = SearchRun(theta, final, cov, [fixed_record(theta, final.value, final.info)],
                            0, 0, 0)
        if obj.smo_limit_hits:
            warnings.warn(f"SMO reached max_iter={model.max_iter} in {obj.smo_limit_hits} "
                          "MAP solve(s); the KKT conditions (5.31) may not hold to tol.",
                          ConvergenceWarning, stacklevel=4)
        return run

    def _set_run_fitted(self, run, final, Xs, case_ids):
        """Fitted attributes from the evaluation ``final`` of the search ``run``
        (a binary model's, or its part of a shared search's) on ``Xs``."""
        cov = final.detail if run.cov is None else run.cov
        self._set_binary_fitted(run.theta, cov, final.value, final.info, Xs)
        keep_support_case_ids(self, case_ids)
        self.n_iter_ = int(run.smo_iter + int(final.info["smo_iter"]))
        self.n_opt_iter_ = run.n_iter
        self.starts_ = run.records
        self.best_start_ = int(run.best)

    def _set_binary_fitted(self, theta, cov, value, info, Xs):
        """Fitted attributes of a binary model from its final evaluation."""
        self.theta_ = theta
        self.hyperparameters_ = {"kappa0": float(cov.kappa0),
                                 "kappa": (np.array(cov.kappa) if self.ard else float(cov.kappa)),
                                 "kappa_b": float(cov.kappa_b)}
        self.log_evidence_ = -float(value)
        self.support_ = np.asarray(info["support"], dtype=np.int64)
        self.support_vectors_ = np.ascontiguousarray(Xs[self.support_])
        self.dual_coef_ = np.asarray(info["dual_coef"], dtype=np.float64)
        self.evidence_method_ = info["method"]
        self.evidence_error_ = float(info["error"])
        for name in ("cholesky_", "lam_sqrt_", "predictor_"):  # from an earlier fit
            self.__dict__.pop(name, None)
        if "predictor" in info:
            self.predictor_ = info["predictor"].as_dict()
        else:
            self.cholesky_ = info["chol"]
            self.lam_sqrt_ = info["lam_sqrt"]
        self.jitter_ = float(info["jitter"])
        self.__dict__.pop("ard_groups_", None)
        if getattr(self, "_groups", None) is not None:  # tied ARD on a table
            self.ard_groups_ = self._groups

    # -- prediction ------------------------------------------------------------
    def _covariance(self):
        h = self.hyperparameters_
        return GaussianCovariance(h["kappa0"], h["kappa"], h["kappa_b"],
                                  getattr(self, "ard_groups_", None))

    def _latent(self, X):
        Xs = np.ascontiguousarray((X - self.x_mean_) / self.x_scale_, dtype=np.float64)
        cov = self._covariance()
        if getattr(self, "predictor_", None) is not None:
            mu = (cov.cross_matvec(Xs, self.support_vectors_, self.dual_coef_)
                  if self.dual_coef_.size else np.zeros(Xs.shape[0]))
            var = LowRankPredictor.from_dict(self.predictor_).variance(cov, Xs)
            return mu, np.sqrt(var)
        mu, var = predictive_moments(cov, self.support_vectors_, self.dual_coef_,
                                     self.cholesky_, self.lam_sqrt_, Xs)
        return mu, np.sqrt(var)

    def latent_moments(self, X):
        """Mean and standard deviation of the latent ``f(x)`` (5.41) of every
        binary model: arrays of shape ``(n_samples,)`` for two classes, else
        ``(n_samples, n_models)`` with one column per model of ``estimators_``.
        :meth:`proba_from_latent` turns them into class probabilities."""
        X = check_predict_X(self, X, "classes_")
        if self.classes_.size == 2:
            return self._latent(X)
        moments = [e._latent(X) for e in self.estimators_]
        return (np.column_stack([m[0] for m in moments]),
                np.column_stack([m[1] for m in moments]))

    def decision_function(self, X, return_std=False):
        """Mean (and standard deviation) of the latent ``f(x)``, (5.41).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the standard deviation ``sigma_t`` (not for the
            vote scores of a "ovo" model with ``decision_function_shape="ovr"``).

        Returns
        -------
        mu : ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_pairs)
            Two classes: the latent mean (positive for ``classes_[1]``).
            "ovr" models: one column per class. "ovo" models: with
            ``decision_function_shape="ovo"`` the pairwise latent means
            (positive for the pair's first class), with "ovr" (the default)
            scikit-learn's votes (:func:`~bsvm_scale.inference.coupling.ovo_votes`),
            whose largest can differ from :meth:`predict`'s coupled choice.
        sd : ndarray, same shape as ``mu`` (only with ``return_std=True``)
        """
        mu, sd = self.latent_moments(X)
        if self.classes_.size > 2 and return_std and self.multi_class == "ovo" and \
                self.decision_function_shape == "ovr":
            raise ValueError("return_std=True: the one-versus-rest shaped scores of a "
                             "multi_class='ovo' model have no standard deviation; set "
                             "decision_function_shape='ovo' for the pairwise latent moments.")
        if self.classes_.size > 2:
            mu = decision_values(self.multi_class, self.decision_function_shape,
                                 self.classes_.size, mu)
        return (mu, sd) if return_std else mu

    def predict_proba(self, X):
        """Class probabilities, (5.42); columns follow ``classes_``.

        For more than two classes each binary model's probability is
        computed by (5.42); "ovr" normalises the rows, "ovo" couples the
        pairwise probabilities (``coupling``).
        """
        return self.proba_from_latent(*self.latent_moments(X))

    def proba_from_latent(self, mu, sd):
        """Class probabilities (5.42) from the latent moments that
        :meth:`latent_moments` returns (so that a caller wanting both
        computes them once)."""
        if self.classes_.size == 2:
            p1 = trig_class_probability(mu, sd)
            return np.column_stack([1.0 - p1, p1])
        return class_probabilities(self.multi_class, self.coupling, self.classes_.size, mu, sd)

    def predict(self, X):
        """Class with the highest predictive probability."""
        P = self.predict_proba(X)
        return self.classes_[np.argmax(P, axis=1)]

