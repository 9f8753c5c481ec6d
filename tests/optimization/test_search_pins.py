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
REFERENCE = {'bsvr_ard': ('afcb3e04540bf698383d36b5',
              'aa96420640d87ccd4a779eb4',
              '829f14aeeba2d084489beb86',
              1,
              '16e6998ffa384c99588ac040',
              'c6f611567ef107ac22bf666e',
              'ef93a1fefdf3fbcfb404289b'),
 'bsvr_ard_isotropic': ('f6b39c159ba6caa6e05e41bd',
                        '9ca6714ca75c3058ccc847ae',
                        '7f4c2ba367bb2d97b82cdc2b',
                        3,
                        '9022663700f7ebcb2d93f3eb',
                        'e04782be8610aa0137653dc8',
                        '9101bcf90347c3d2ef5477e4'),
 'bsvr_coarse': ('dfdd4cfb96216b96e2197664',
                 'fed8ad320a9034a321d5378c',
                 'b484e41d4863501677f6e1c4',
                 2,
                 '6450b75c9f9b9b2eb45f2f76',
                 'ccbb4043032b1c96978b9fad',
                 'd3dfbdf029d81eb043f1cd68'),
 'bsvr_default': ('492aca4ee518737a12204b51',
                  '25ef6b695eb41a6aea87885b',
                  '7f4ff09ec7afc2f6c5799fd1',
                  2,
                  'b451fa1d977a9840214c942d',
                  '4c9cf927c5219d00afac8a58',
                  'e8be7970498dd08648ef08c9'),
 'bsvr_kappa0': ('216412c5121eed3729415d42',
                 'f477aab330656e63573ba7e2',
                 '606ecda9813958644ab35765',
                 1,
                 '7de117b1220b30a9014e59b3',
                 '532e819b7aac38dcabdee5d1',
                 'b9055b3b637ceae9a683b788'),
 'bsvr_matrix_free': ('168561899cfc6ffb1264a9c1',
                      '4fee04286b989ba73d3dc6f1',
                      '0820a375e596c47ddd3140f6',
                      1,
                      'd715c89a7ff7b084035fb4e3',
                      '6996cc8edd0682e2d01fb868',
                      '9a49ca322b85ad8fa9f49653'),
 'bsvr_one_start': ('492aca4ee518737a12204b51',
                    '25ef6b695eb41a6aea87885b',
                    '7f4ff09ec7afc2f6c5799fd1',
                    1,
                    '91bf9fe6d444af19af396f3e',
                    '4c9cf927c5219d00afac8a58',
                    'e8be7970498dd08648ef08c9'),
 'bsvr_resumed': ('492aca4ee518737a12204b51',
                  '25ef6b695eb41a6aea87885b',
                  '7f4ff09ec7afc2f6c5799fd1',
                  1,
                  '91bf9fe6d444af19af396f3e',
                  '4c9cf927c5219d00afac8a58',
                  'e8be7970498dd08648ef08c9'),
 'bsvr_retrain': ('b0d112f748e110385edc0234',
                  'db981d70320d2cfb3d7ee676',
                  '663e3307e15029a0314d2d35',
                  1,
                  'c9a8cb466d69e5e402056f97',
                  '0688f1a12be59ab1b37e4ae1',
                  'a1ce84a96595ceba1128326f'),
 'btsvc_ard': ('b601cf1174be4c0b5874b011',
               'b3f43ec13edaf56b3d1a1e88',
               '7be50883671c3c85a0aba64a',
               1,
               'f662340dfe81cdbaffe01cac',
               '26935a1866f56f9fa249cbe7'),
 'btsvc_ard_isotropic': ('9908253b0d0b46911a139d61',
                         '3ea95b4b2257610c04ba8868',
                         '69c1b070ce443e5e6dca7019',
                         3,
                         'a22156cab706dabf15edde42',
                         '1d0c0cf339ce43225993e125'),
 'btsvc_coarse': ('776bdac4477bb8a47709e200',
                  '475e8f95b6e0e49c747f925f',
                  '4f03ddaf3b81f03d4927a6dd',
                  2,
                  '7d55a0e010347add3bd07914',
                  'da258d1f4ed036e517ae8f7b'),
 'btsvc_default': ('b11f8a46760195cac675b18f',
                   '1a023d8d2eef685e07a98818',
                   'ad595fbfdef5a3615a8ac501',
                   2,
                   'a08e827ee557021dc5b699f6',
                   '87749877ed718dd051dc3054'),
 'btsvc_matrix_free': ('3b577d698d4a538023423fae',
                       '967a67b27aacbde70f908a99',
                       'ed2f2bcc135b233e5f0c7907',
                       1,
                       '1ee833cbd4ff94008531cbb9',
                       '0cf73e38ec7b80a78c2bf2ce'),
 'btsvc_resumed': ('2732651e0ce2c10980d91fb9',
                   '9274ab41874f6ac94fa51bd5',
                   '39652b5f1eeb791af9b416ce',
                   1,
                   '9918d7a4cbf7296f537c4282',
                   '6b74ef0a37676cee88742ea1'),
 'btsvc_retrain': ('fcc6e29c25dada43d3f351e7',
                   '172cb4f2de0b1422834f7649',
                   '030562aacd3743409a551f1f',
                   1,
                   '7ce39c3e4f6803b739f4202c',
                   '2a91fb8e79ea3c1c90c47551'),
 'btsvc_three_classes': ('82a0b78472661e0e338714c7',
                         '0dc49c7f5e7670fa545c5a9e',
                         '05b75f88294e9c549533bff3',
                         3,
                         'f9bfffecb59977c706b9d667',
                         'ebbf4b7e7c4137d2bcd85546')}


def test_search_results_are_unchanged():
    got = fingerprints()
    assert got.keys() == REFERENCE.keys()
    changed = {k: (got[k], REFERENCE[k]) for k in got if got[k] != REFERENCE[k]}
    assert not changed, pprint.pformat(changed)


if __name__ == "__main__":
    pprint.pprint(fingerprints(), width=100)
