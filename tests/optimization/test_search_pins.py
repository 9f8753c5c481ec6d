"""Bit-for-bit guard of the evidence searches of BSVR and BTSVC.

The fits below cover every route of a search: several starts, the subsample
phase of coarse-to-fine starts, the isotropic-to-ARD continuation, an
inferred ``kappa0``, the matrix-free evidence, a resumed start (``init`` with
state and recorded evaluations), a retraining (``warm_start_from``) and more
than two classes. :data:`REFERENCE` holds their fingerprints (exact
``float.hex`` of scalars, SHA-256 of array bytes) as computed by
:func:`fingerprints`; the test recomputes them and demands equality, so that
a change of how the search is organised cannot change a result unnoticed.

The numbers are those of this project's machine kind (x86-64, the pinned
numpy / numba / BLAS, one thread). Fingerprints are regenerated with
``PYTHONPATH=. python3 tests/optimization/test_search_pins.py``; a change of
a fingerprint must be explained in the commit that makes it.
"""

import hashlib
import pprint
import warnings

import numpy as np

from bsvm_scale import BayesianSVC, BayesianSVR


def _h(a):
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()[:24]


def _x(v):
    return float(v).hex()


def _reg(n=150, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, (n, d))
    y = np.sinc(X[:, 0]) + 0.3 * X[:, -1] + 0.1 * rng.standard_normal(n)
    return X, y


def _cls(n=150, d=2, seed=0, shift=0.7):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-shift, 1.0, (n // 2, d)), rng.normal(shift, 1.0, (n - n // 2, d))]
    y = np.r_[np.zeros(n // 2), np.ones(n - n // 2)]
    return X, y


def _print(est, Xt):
    """The fitted values a search decides: hyperparameters, evidence,
    iterations, the records' count and the predictions at ``Xt``."""
    if isinstance(est, BayesianSVR):
        mu, sd = est.predict(Xt, return_std=True)
        out = (_h(mu), _h(sd))
    else:
        out = (_h(est.predict_proba(Xt)),)
    theta = (np.concatenate([e.theta_ for e in est.estimators_])
             if hasattr(est, "estimators_") else est.theta_)
    starts = est.starts_ if isinstance(est.starts_[0], dict) else \
        [s for per_class in est.starts_ for s in per_class]
    trajectory = [r["fun"] for s in starts for r in s["trajectory"]]
    return (_h(theta), _h(np.atleast_1d(est.log_evidence_)), _h(np.atleast_1d(est.n_iter_)),
            len(starts), _h(trajectory)) + out


def _resumed(make, X, y, at=2):
    """A fit resumed from the state recorded after evaluation ``at`` of its
    first start, with the evaluations up to there replayed."""
    seen = []

    def keep(k, rec, state):
        seen.append((k, rec, state))

    make().fit(X, y, callback=keep)
    k, _, state = seen[at]
    records = [rec for j, rec, _ in seen[:at + 1] if j == k]
    theta0 = records[0]["theta"]
    return make().fit(X, y, init={"theta": theta0, "state": state, "evaluations": records})


def _bsvr_prints(out):
    X, y = _reg()
    Xt = np.random.default_rng(9).uniform(-2.0, 2.0, (9, 2))
    out["bsvr_default"] = _print(BayesianSVR().fit(X, y), Xt)
    out["bsvr_one_start"] = _print(BayesianSVR(n_starts=1).fit(X, y), Xt)
    out["bsvr_coarse"] = _print(BayesianSVR(init_subsample=60).fit(X, y), Xt)
    X3, y3 = _reg(d=3, seed=1)
    Xt3 = np.random.default_rng(8).uniform(-2.0, 2.0, (9, 3))
    out["bsvr_ard"] = _print(BayesianSVR(ard=True, n_starts=1).fit(X3, y3), Xt3)
    out["bsvr_ard_isotropic"] = _print(
        BayesianSVR(ard=True, ard_init="isotropic", optimizer_options={"maxiter": 8}).fit(X3, y3),
        Xt3)
    out["bsvr_kappa0"] = _print(BayesianSVR(kappa0="evidence", n_starts=1).fit(X, y), Xt)
    out["bsvr_matrix_free"] = _print(
        BayesianSVR(evidence_method="matrix_free", n_starts=1).fit(X, y), Xt)
    out["bsvr_resumed"] = _print(_resumed(lambda: BayesianSVR(n_starts=1), X, y), Xt)
    first = BayesianSVR(n_starts=1).fit(X[:120], y[:120])
    out["bsvr_retrain"] = _print(BayesianSVR(warm_start_from=first).fit(X, y), Xt)


def _btsvc_prints(out):
    X, y = _cls()
    Xt = np.random.default_rng(9).normal(size=(9, 2))
    out["btsvc_default"] = _print(BayesianSVC().fit(X, y), Xt)
    out["btsvc_coarse"] = _print(BayesianSVC(init_subsample=60).fit(X, y), Xt)
    X3, y3 = _cls(d=3, seed=1)
    Xt3 = np.random.default_rng(8).normal(size=(9, 3))
    out["btsvc_ard"] = _print(BayesianSVC(ard=True, n_starts=1).fit(X3, y3), Xt3)
    out["btsvc_ard_isotropic"] = _print(
        BayesianSVC(ard=True, ard_init="isotropic", optimizer_options={"maxiter": 8}).fit(X3, y3),
        Xt3)
    out["btsvc_matrix_free"] = _print(
        BayesianSVC(evidence_method="matrix_free", n_starts=1).fit(X, y), Xt)
    out["btsvc_resumed"] = _print(_resumed(lambda: BayesianSVC(n_starts=1), X, y), Xt)
    first = BayesianSVC(n_starts=1).fit(X[:120], y[:120])
    out["btsvc_retrain"] = _print(BayesianSVC(warm_start_from=first).fit(X, y), Xt)
    rng = np.random.default_rng(1)
    yk = np.repeat([0, 1, 2], 40)
    Xk = np.array([[0, 0], [2.5, 0], [0, 2.5]])[yk] + 0.8 * rng.standard_normal((120, 2))
    out["btsvc_three_classes"] = _print(BayesianSVC(n_starts=1, multi_class="ovr").fit(Xk, yk), Xt)


def fingerprints():
    """Every fingerprint (see the module docstring)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _bsvr_prints(out)
        _btsvc_prints(out)
    return out


#: :func:`fingerprints` of the code as recorded (see the module docstring)
REFERENCE = {'bsvr_ard': ('45bc82070bbc5e38249ba132',
                          'cc218d46d8a02a47868f8a10',
                          'a45492f71ef3148ab140aa99',
                          1,
                          'fa124f00c78377c6d79e75da',
                          'b1f63791e34cc7656a60452f',
                          'c4bf70ba084aee437d8c5e1f'),
             'bsvr_ard_isotropic': ('52e53b122fc43128f8713c00',
                                    '3644c9cdc7b2998ee4d6f085',
                                    '2315ba1549caae109f289e31',
                                    3,
                                    'a7ac06d6f63da52a80888107',
                                    '5846dbd18a244eeedbd49645',
                                    '43e5d20fb8aab2bd84035fa5'),
             'bsvr_coarse': ('cc85e0c0695d4b0db0ad695a',
                             '77644cc7c83d7c0ed800c92b',
                             '722af7ec9702e4d4c58d1c8e',
                             2,
                             '0b343ee1941d8d8029f9d5ae',
                             '3bca73101d678a5af3338e1c',
                             '29ff9da318b289ccf13f3889'),
             'bsvr_default': ('92eb298a0b58038a5df68fc5',
                              '5a1abbec6cd899b7c329c9fd',
                              'b70524963ae9cf500131388e',
                              2,
                              'a47ed182a6c5cdffbf0d3387',
                              '1ec0df713f93ac898c84feaf',
                              'f3cd8c9f56639b02b46f2999'),
             'bsvr_kappa0': ('bcb992d07cd90f65cb70f13a',
                             '45bc49e87be7bab6543cb893',
                             '67da134f7f9ffdde7b465992',
                             1,
                             'a275d85e14a25045279f6b86',
                             'd3bcdedb596e94e61fb708e6',
                             'b83840ec13140830021e0022'),
             'bsvr_matrix_free': ('4e41616c579112103309725d',
                                  '8dc7cfde2576a1ac0455f63a',
                                  'b70524963ae9cf500131388e',
                                  1,
                                  'bd9ddc3ada7ec3c754501b32',
                                  '3acc8d19f1fadfd00ae164b4',
                                  '710ff3ce8eebf0aa5f1d665c'),
             'bsvr_one_start': ('92eb298a0b58038a5df68fc5',
                                '5a1abbec6cd899b7c329c9fd',
                                'b70524963ae9cf500131388e',
                                1,
                                '977e0123a4c5412968ce755b',
                                '1ec0df713f93ac898c84feaf',
                                'f3cd8c9f56639b02b46f2999'),
             'bsvr_resumed': ('92eb298a0b58038a5df68fc5',
                              '5a1abbec6cd899b7c329c9fd',
                              'b70524963ae9cf500131388e',
                              1,
                              '977e0123a4c5412968ce755b',
                              '1ec0df713f93ac898c84feaf',
                              'f3cd8c9f56639b02b46f2999'),
             'bsvr_retrain': ('54a7d3807320be3cb561ebd3',
                              '9e49899297475f8eb5e2dd33',
                              'b54ee5fbcf17b0f4d4dfe1b2',
                              1,
                              '469ecd5e68933f17433baed9',
                              '69afb3f2c6ce12bc9e57adee',
                              'aa3544a1dfabb9a7f9a553b1'),
             'btsvc_ard': ('5100effc3acb70b4351e7470',
                           'f97ce93b8326158d0f4ff318',
                           '7be50883671c3c85a0aba64a',
                           1,
                           'a47a0ce3fb5c590c4d266c50',
                           'db7ead11898046bbf125345c'),
             'btsvc_ard_isotropic': ('ad5d237072615389090d81d3',
                                     '89515c3d82d54c49ccb07805',
                                     '69c1b070ce443e5e6dca7019',
                                     3,
                                     '9d3b6ab874ae07238c22f39b',
                                     '768f3d909cc2b1e95cc355ff'),
             'btsvc_coarse': ('e82670907a1aeafeafd55958',
                              '0e894daa9b8f298d59e3ecb6',
                              '4f03ddaf3b81f03d4927a6dd',
                              2,
                              '13c2adb0d78b3829d8b1a853',
                              '87ac99961081ff748da246ae'),
             'btsvc_default': ('4f9da4bf97893278276a3b8f',
                               'aeaf5035a279f6fb008bbeab',
                               'ad595fbfdef5a3615a8ac501',
                               2,
                               '2b46b2dd1099f88161f3560a',
                               '1afd6e06405548fef0ff1922'),
             'btsvc_matrix_free': ('2ac2f057a0b3b665cc6c9f34',
                                   '6f562690d747c05cb07643bd',
                                   'ed2f2bcc135b233e5f0c7907',
                                   1,
                                   '46ebb1d8f021454dbdc6395e',
                                   '80275202bc1f9672c1996cd6'),
             'btsvc_resumed': ('4c2995ddc1e92d23dc125106',
                               '05a207700f638b12aae2aa26',
                               '39652b5f1eeb791af9b416ce',
                               1,
                               '44acce695034be5feaab9676',
                               'e23d0fa265eee748567de2b3'),
             'btsvc_retrain': ('d6024fe9f13a2fefb8cb7d7b',
                               '6add05376d4660abb5bb0be3',
                               '030562aacd3743409a551f1f',
                               1,
                               'db381a08e832772f130d2529',
                               '3ff9ff2902fa1c10dc339ee4'),
             'btsvc_three_classes': ('931c57a6405bb852a08a4737',
                                     '736b4de11873508f3c254ac4',
                                     '05b75f88294e9c549533bff3',
                                     3,
                                     'e23f86cfc6ce2a3b2b906ab4',
                                     '9149e1e9e85c03e911e00caa')}


def test_search_results_are_unchanged():
    got = fingerprints()
    assert got.keys() == REFERENCE.keys()
    changed = {k: (got[k], REFERENCE[k]) for k in got if got[k] != REFERENCE[k]}
    assert not changed, pprint.pformat(changed)


if __name__ == "__main__":
    pprint.pprint(fingerprints(), width=100)
