"""Bit-for-bit guard of the evidence searches of BSVR and BTSVC.

The fits below cover every route of a search: several starts, the subsample
phase of coarse-to-fine starts, the isotropic-to-ARD continuation, an
inferred ``kappa0`` (with and without ARD), the matrix-free evidence, a resumed start (``init`` with
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
    out["bsvr_ard_kappa0"] = _print(  # kappa0 held by the isotropic stage, freed for ARD
        BayesianSVR(ard=True, n_starts=1, kappa0="evidence").fit(X3, y3), Xt3)
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
REFERENCE = {'bsvr_ard': ('9954eac5e2139cc97603da11',
              '528fd876f30066bc74e7caf1',
              '6c3c396ed6b5c36dcae17227',
              1,
              'de1f4ca5005c836b748c5b19',
              '3ed7dd98b306498ae30015fb',
              '8cccbad083005bb55f426fb4'),
 'bsvr_ard_isotropic': ('f8ebd319757613ab23bc3f2c',
                        '43b1208fcc97293c4aa07224',
                        '2d311251337c35e4d3628720',
                        3,
                        '232a4e85a7874d3146fdba74',
                        '93644d5bdb7044fc2b6c165e',
                        'd1bb9295d29d76996858de28'),
 'bsvr_ard_kappa0': ('9954eac5e2139cc97603da11',
                     '528fd876f30066bc74e7caf1',
                     '6c3c396ed6b5c36dcae17227',
                     1,
                     'de1f4ca5005c836b748c5b19',
                     '3ed7dd98b306498ae30015fb',
                     '8cccbad083005bb55f426fb4'),
 'bsvr_coarse': ('6b00dd75e05da0e205230e12',
                 'a06e46929c458bc191be3c7a',
                 '6c3c396ed6b5c36dcae17227',
                 2,
                 '27ca16344e681ce27adecfec',
                 '1963806fec94a3ba7e22ae1c',
                 '4403897ec6c4784e7d48794b'),
 'bsvr_default': ('88731169ac32392da0f37847',
                  '5e0f16decfcc9dff5e88f387',
                  '6c3c396ed6b5c36dcae17227',
                  2,
                  '0880b36a2f4afdc56b5f5157',
                  'f541bf4e2c8d37f7fd679d60',
                  '2d1f9b75e455db61510ac9cb'),
 'bsvr_kappa0': ('a07a1ac2fd3c56a3dc874487',
                 'b38cef6130f147906024d61b',
                 '161f4c0b1a18a0501127332c',
                 1,
                 '6c4e6875af0c9c6f446ecc0e',
                 'e78b7f945c729fe67a80d812',
                 '39fbf1d2e80e71a74be4e198'),
 'bsvr_matrix_free': ('5b3827c1d6e4386702030e33',
                      'f251b48f6edcc7e8e5d0201d',
                      '6c3c396ed6b5c36dcae17227',
                      1,
                      '5a1b3316278a0a83e3d885cc',
                      '3ac4425f20c4cf2275c6d5c9',
                      '41fef68660c1f5fcf0dc6acb'),
 'bsvr_one_start': ('a07a1ac2fd3c56a3dc874487',
                    'b38cef6130f147906024d61b',
                    '161f4c0b1a18a0501127332c',
                    1,
                    '6c4e6875af0c9c6f446ecc0e',
                    'e78b7f945c729fe67a80d812',
                    '39fbf1d2e80e71a74be4e198'),
 'bsvr_resumed': ('a07a1ac2fd3c56a3dc874487',
                  'b38cef6130f147906024d61b',
                  '161f4c0b1a18a0501127332c',
                  1,
                  '6c4e6875af0c9c6f446ecc0e',
                  'e78b7f945c729fe67a80d812',
                  '39fbf1d2e80e71a74be4e198'),
 'bsvr_retrain': ('1dc5eb3e401226018a22da60',
                  '0032bdfe11724ca564ce20a7',
                  'f52df18731eea8d020801fe2',
                  1,
                  'ad9e06298f4d2e9ee720b5dc',
                  '2a030dd7085d7fd4e276f085',
                  '737d512bae1868e8273b2045'),
 'btsvc_ard': ('c59fb3bab7e9b9a4f0270dff',
               'b053b7fb718edb3c12d768ec',
               'ba681c5bd513e4e62475e025',
               1,
               '72c7e4ab70b6eea4efb876a9',
               '5fbb8f2b94a86b98f8799e41'),
 'btsvc_ard_isotropic': ('3a18e4568943120c3160e15d',
                         '6d5c7e61215008ee272c955b',
                         '3cbaba135da5f2697a787bd7',
                         3,
                         '28b66aefb66912603fa57ab8',
                         '3674ed88de487ca617b06166'),
 'btsvc_coarse': ('8b3f489d95a2e9cdbf52f69e',
                  'e6e1cde9eafefeff2f230e33',
                  '4f03ddaf3b81f03d4927a6dd',
                  2,
                  '2384370ba57b1e5c5d223a20',
                  '6ac51b3d169cf55435e7a10b'),
 'btsvc_default': ('c6a3987bf23c512e5c592858',
                   '8468f3a808e8d0749abbe71c',
                   'ad595fbfdef5a3615a8ac501',
                   2,
                   '75a51b16780dc88549c058f5',
                   '36fca087284f21a8360cbcf2'),
 'btsvc_matrix_free': ('75c13c7d07382a130b5d1445',
                       '42e11c74ed77c52e9f253f50',
                       '6a747ec6ab374ac291bcf247',
                       1,
                       '5b65938fecaca4e5483e1d0f',
                       '8d1170fe6701aa57c11a32ca'),
 'btsvc_resumed': ('e9ce866284aadd48d61cd0aa',
                   '56281069e30e774f260163de',
                   '39652b5f1eeb791af9b416ce',
                   1,
                   'e59514f2857cdb4ca421ecfd',
                   '8190fa8f4a96ba86ba7bdd69'),
 'btsvc_retrain': ('8baca249a0619a186fccee0e',
                   '4eabcd15d7ba47c609eabda1',
                   '030562aacd3743409a551f1f',
                   1,
                   '545ea0845201109a22abd7aa',
                   'c16d777e043bb474ecffd3f0'),
 'btsvc_three_classes': ('bb5d20e91043e5c9929f9bae',
                         '0a0c12144db84a1f71dea39c',
                         '05b75f88294e9c549533bff3',
                         3,
                         'a3010be718033bcce73c4bbf',
                         '8851d7eef99fa44b5aba7b9e')}


def test_search_results_are_unchanged():
    got = fingerprints()
    assert got.keys() == REFERENCE.keys()
    changed = {k: (got[k], REFERENCE[k]) for k in got if got[k] != REFERENCE[k]}
    assert not changed, pprint.pformat(changed)


if __name__ == "__main__":
    pprint.pprint(fingerprints(), width=100)
