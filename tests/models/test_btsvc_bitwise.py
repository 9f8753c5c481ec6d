"""Bit-for-bit guard of the unweighted BTSVC path.

Case and class weights were added to every layer of the BTSVC (the SMO
kernels of the dual (5.29), the shrinking solve, the low-rank Newton start,
the evidence (5.35)-(5.37) dense and matrix-free, the estimator). Without
weights the iterates must stay exactly those of the code before that change.
:data:`REFERENCE` holds fingerprints (SHA-256 of the arrays' bytes, exact
``float.hex`` of scalars) computed by :func:`fingerprints` with the code as it
was before weights existed (commit 765b418), and recorded again when the
covariance's exponential became ``bsvm_scale._compiled.fastexp`` (kernel values
within one ulp of libm's); the test recomputes them with the current code and
demands equality. The numbers are those of this project's
machine kind (x86-64, the pinned numpy / numba / BLAS); after a change of
platform they are regenerated from that commit with
``PYTHONPATH=. python3 tests/models/test_btsvc_bitwise.py`` run at the root
of a checkout of it.
"""

import hashlib
import warnings

import numpy as np

from bsvm_scale import BayesianSVC
from bsvm_scale._compiled import smo_trig as smo
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache
from bsvm_scale.inference.evidence_lowrank import EvidenceSettings
from bsvm_scale.inference.map_lowrank import trig_start
from bsvm_scale.inference.objective_trig import TrigObjective, solve_dual


def _h(a):
    """Short SHA-256 of an array's float64 (or int64) bytes."""
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.tobytes()).hexdigest()[:24]


def _x(v):
    return float(v).hex()


def _data(n=160, d=2, seed=0, shift=0.4):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-shift, 1.0, (n // 2, d)), rng.normal(shift, 1.0, (n // 2, d))]
    y = np.r_[-np.ones(n // 2), np.ones(n // 2)]
    return X, y


def _kernel_prints(out):
    X, y = _data()
    cov = GaussianCovariance(10.0, 1.0, 5.0)
    cache = RowCache(X, cov, 64.0)
    alpha = np.zeros(y.size)
    g = np.empty(y.size)
    dual = smo.TrigDual(y, np.ones(y.size), alpha, g)  # the arrays of one solve (no weights)
    smo.gradient_from_f(dual, np.zeros(y.size))
    it, vmax, status = smo.smo_loop(cache.kernel, cache.state, dual, 1e-8, 10 ** 6, 1)
    out["smo_loop"] = (_h(alpha), _h(g), int(it), _x(vmax), int(status))
    cold = solve_dual(RowCache(X, cov, 64.0), y, None, 1e-6, 10 ** 6)
    warm = solve_dual(RowCache(X, GaussianCovariance(3.0, 0.5, 50.0), 1e-3), y, cold["alpha"],
                      1e-6, 10 ** 6)
    out["solve_dual"] = tuple((_h(s["alpha"]), _h(s["f"]), s["n_iter"], s["n_active"])
                              for s in (cold, warm))
    st = trig_start(cov, X, y, 64)
    out["trig_start"] = (_h(st.dual), _h(st.f), st.rank, st.n_newton)


def _objective_prints(out):
    X, y = _data(n=140, d=3, seed=2, shift=0.7)
    for ard, theta in ((False, np.log([3.0, 0.4, 2.0])),
                       (True, np.log([3.0, 0.3, 0.5, 0.8, 2.0]))):
        obj = TrigObjective(X, y, ard=ard, tol=1e-6)
        v, g, info = obj(theta)
        out[f"evidence_dense_{ard}"] = (_x(v), _h(g), _h(obj.alpha), info["n_sv"])
    obj = TrigObjective(X, y, ard=False, tol=1e-6,
                            evidence=EvidenceSettings("matrix_free", 1e-3))
    v, g, info = obj(np.log([3.0, 0.4, 2.0]))
    out["evidence_matrix_free"] = (_x(v), _h(g), info["rank"])


def _fit_prints(out):
    X, y = _data(n=120, d=2, seed=3, shift=0.8)
    Xt = np.random.default_rng(9).normal(size=(7, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixed = BayesianSVC(optimize=False, kappa0=10.0, kappa=0.5, kappa_b=100.0).fit(X, y)
        mu, sd = fixed.decision_function(Xt, return_std=True)
        out["fit_fixed"] = (_x(fixed.log_evidence_), _h(fixed.dual_coef_), _h(fixed.support_),
                            _h(mu), _h(sd), _h(fixed.predict_proba(Xt)))
        mf = BayesianSVC(optimize=False, kappa0=10.0, kappa=0.5, kappa_b=100.0,
                         evidence_method="matrix_free").fit(X, y)
        mu, sd = mf.decision_function(Xt, return_std=True)
        out["fit_fixed_matrix_free"] = (_x(mf.log_evidence_), _h(mu), _h(sd))
        opt = BayesianSVC(n_starts=2, init_subsample=50).fit(X, y)
        out["fit_coarse"] = (_h(opt.theta_), _x(opt.log_evidence_), _h(opt.dual_coef_),
                             int(opt.n_iter_))
        ard = BayesianSVC(ard=True, n_starts=1, optimizer_options={"maxiter": 6}).fit(X, y)
        out["fit_ard"] = (_h(ard.theta_), _x(ard.log_evidence_), int(ard.n_iter_))
        rng = np.random.default_rng(1)
        y3 = np.repeat([0, 1, 2], 30)
        X3 = np.array([[0, 0], [2.5, 0], [0, 2.5]])[y3] + 0.8 * rng.standard_normal((90, 2))
        ovr = BayesianSVC(n_starts=1, optimizer_options={"maxiter": 4},
                          multi_class="ovr").fit(X3, y3)
        out["fit_ovr"] = (_h(ovr.log_evidence_), _h(ovr.predict_proba(Xt)))


def fingerprints():
    """The fingerprints of every unweighted layer (see the module docstring)."""
    out = {}
    _kernel_prints(out)
    _objective_prints(out)
    _fit_prints(out)
    return out


#: :func:`fingerprints` of the code before weights (commit 765b418), except the
#: evidence gradients and the fits after them: since the implicit term of the
#: gradient (5.36) visits each pair of SVs once (``bilinear_dcov``) their bits
#: differ in rounding (values and SMO iterates unchanged; ln evidence of the fits
#: within 1e-12 relative), and those entries are the new code's; so is the MAP
#: function ``f`` of the cold ``solve_dual`` (the left-out cases' gradient is
#: updated by the cases a round moved instead of rebuilt: same alpha, rounding);
#: all entries recorded again with the exponential of ``bsvm_scale._compiled.fastexp``,
#: and the ARD fit once its continuation began with the lifted isotropic Hessian
REFERENCE = {'evidence_dense_False': ('0x1.e2704f1e3a742p+5',
                          '566c6208983e1215790b5fff',
                          'db051ad9957e5f625206deef',
                          97),
 'evidence_dense_True': ('0x1.f4fcc58053ee2p+5',
                         '98092fc2d363bcc9217bdde3',
                         'cd5e9c31c778ac98897fc666',
                         94),
 'evidence_matrix_free': ('0x1.e26eda6c5184dp+5', '771b2ed6d6c7ff1317d91fa3', 77),
 'fit_ard': ('a3e183c21307b5a4ab8b78dc', '-0x1.319d81f6997a8p+5', 361),
 'fit_coarse': ('137995e0bd9c9154a3dd074b',
                '-0x1.30c7cba03eee1p+5',
                '5ed570c2cc239432fe7d860c',
                352),
 'fit_fixed': ('-0x1.7fe47c3d2f1e4p+5',
               '010d6a35623ae8491eea1ba4',
               '3d61b0f65edd43bbaaafc84d',
               '3d9e0b7956173a7d45746032',
               'e14f7b28a5a944c7e764f29c',
               'd9734c3c3e45e114d76dc96d'),
 'fit_fixed_matrix_free': ('-0x1.7fb60245ac0d7p+5',
                           '53ea9a98af890a73a3a6482f',
                           '607dbf89bf4eedcaefb4aa4e'),
 'fit_ovr': ('7f5d8e9c1a62dca1ea688513', '610ec6c378cc9179c7ecbb33'),
 'smo_loop': ('1c08a7514876a7bdd77cd1a9',
              '6027ae2fd05a85f4bcb86188',
              2244,
              '0x1.4604a571ef3bdp-27',
              0),
 'solve_dual': (('579a2c10354b6bef05c3335e', '7f59a9b36f31c77e9e2ec59e', 2651, 152),
                ('68e9797a5df00ec5bd8975d2', '5c8ecb2e42841a5e9897cfbd', 779, 160)),
 'trig_start': ('cd3b728326f2ff24e2531c28', '25778225a475110c693c4800', 127, 5)}


def test_unweighted_iterates_are_those_before_weights():
    got = fingerprints()
    assert set(got) == set(REFERENCE)
    for key, value in REFERENCE.items():
        assert got[key] == value, key


if __name__ == "__main__":
    import pprint

    pprint.pprint(fingerprints(), width=100)
