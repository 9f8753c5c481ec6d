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
REFERENCE = {'bsvr_ard': ('fa92b01196835717522fb56e',
                          'c7c46bfadb0039a0b551d6d4',
                          '161f4c0b1a18a0501127332c',
                          1,
                          'b571b1428822e4b6a45aa0b5',
                          'f563c88cddeba4e9859729cc',
                          '0ab7a037a05637c9f889d9ef'),
             'bsvr_ard_isotropic': ('f8ebd319757613ab23bc3f2c',
                                    '43b1208fcc97293c4aa07224',
                                    '2d311251337c35e4d3628720',
                                    3,
                                    '68aff074088a51c0e4aad0b7',
                                    '93644d5bdb7044fc2b6c165e',
                                    'd1bb9295d29d76996858de28'),
             'bsvr_ard_kappa0': ('fa92b01196835717522fb56e',
                                 'c7c46bfadb0039a0b551d6d4',
                                 '161f4c0b1a18a0501127332c',
                                 1,
                                 'b571b1428822e4b6a45aa0b5',
                                 'f563c88cddeba4e9859729cc',
                                 '0ab7a037a05637c9f889d9ef'),
             'bsvr_coarse': ('19a05703d74ce26e79d192db',
                             '32c10bb53668282b9217468c',
                             '6c3c396ed6b5c36dcae17227',
                             2,
                             '46e16a3d02a5069fddf38389',
                             'af3b0a96eeb6daa68e54f95d',
                             '4ac6d3517d05d056737242c9'),
             'bsvr_default': ('95761fe536e0b4cdd10329c9',
                              '4035fbfa323f410a4f99fffb',
                              '6c3c396ed6b5c36dcae17227',
                              2,
                              'ebd7ae9f0fef8267f64cc0d4',
                              '3094472dd01424314aa6fb2b',
                              '5f265262e24bbd3bb6f74163'),
             'bsvr_kappa0': ('35b61a1791fe02f2f4b0e6f8',
                             'aa25813af6d50a530b049398',
                             '161f4c0b1a18a0501127332c',
                             1,
                             '84d868dd48bb7bf01304e433',
                             'c3e754b4833395e21bdda6d9',
                             '80f1a51a22ebb7a7ae77322b'),
             'bsvr_matrix_free': ('069bcb21f9854c5da6bd2e66',
                                  '1fb75c4227a52e806f672beb',
                                  '161f4c0b1a18a0501127332c',
                                  1,
                                  'eb7ba2aa1a70d5bc9a53c9d6',
                                  '7d713a358a7377797b673457',
                                  'a4c35227a9c834bc3929f49f'),
             'bsvr_one_start': ('35b61a1791fe02f2f4b0e6f8',
                                'aa25813af6d50a530b049398',
                                '161f4c0b1a18a0501127332c',
                                1,
                                '84d868dd48bb7bf01304e433',
                                'c3e754b4833395e21bdda6d9',
                                '80f1a51a22ebb7a7ae77322b'),
             'bsvr_resumed': ('35b61a1791fe02f2f4b0e6f8',
                              'aa25813af6d50a530b049398',
                              '161f4c0b1a18a0501127332c',
                              1,
                              '84d868dd48bb7bf01304e433',
                              'c3e754b4833395e21bdda6d9',
                              '80f1a51a22ebb7a7ae77322b'),
             'bsvr_retrain': ('601740b2175dc846d024c133',
                              '52c80aae64d1669180d9737e',
                              '400c52dd5bd0047d64c0582a',
                              1,
                              'f9586fc77f2259825d3e7ac0',
                              '459165c3df9d9dcba49a8531',
                              'eb40190ee7a333434f8253eb'),
             'btsvc_ard': ('65dd3b97d1adc466624b7e04',
                           '28c20cc3a8475fde7cc5cb96',
                           'ba681c5bd513e4e62475e025',
                           1,
                           'f5442acfcb8971474cd33c77',
                           '9588b8572370f35633575420'),
             'btsvc_ard_isotropic': ('fb7140707d5394a52e396486',
                                     '722bec59d749b5dc4210dd5d',
                                     '3cbaba135da5f2697a787bd7',
                                     3,
                                     'ac086da2193efe40ac792484',
                                     'b7e06fdb9b4cda96df66efea'),
             'btsvc_coarse': ('ed1372d6ffe86f470b5e9be8',
                              '85c228d27b15710324677d8c',
                              '4f03ddaf3b81f03d4927a6dd',
                              2,
                              '22d7d5a68855e5c08077f882',
                              '1ac31f0bb022e78940beb241'),
             'btsvc_default': ('32a9395ac5201f05c3b62dc2',
                               '56aab67b13647197d8e52a98',
                               'ad595fbfdef5a3615a8ac501',
                               2,
                               'b14ddc4bf3e451a18af71b80',
                               'e69904a71743f5a6a59bf3eb'),
             'btsvc_matrix_free': ('00c57ccbfc609030ed9dac09',
                                   'ff7d399c22d1df537164cac2',
                                   'ed2f2bcc135b233e5f0c7907',
                                   1,
                                   'b28c71c5856dac6347f81d0a',
                                   '8e60fd67774145a6622d7a6d'),
             'btsvc_resumed': ('6e6cb0ae12d09e73c221ef08',
                               '11204e3ed46fc0daf6c99e6a',
                               '39652b5f1eeb791af9b416ce',
                               1,
                               'e3d3e0e648fc7180874999e5',
                               '0ecb4e6fd099994bd8e5ed92'),
             'btsvc_retrain': ('516d9aa684b75ec8f11a03b2',
                               'ff984403a474b5f039d1c502',
                               '030562aacd3743409a551f1f',
                               1,
                               'cd0d854ceedc91cc7099d6ca',
                               '61473136afc1bea30a2acfc1'),
             'btsvc_three_classes': ('22acb83ba490a1011f805726',
                                     '2f08786cd2df0cdabab2b273',
                                     '05b75f88294e9c549533bff3',
                                     3,
                                     'cab318e1e549284cca4993ae',
                                     '47e546ee4b3cb93893fdc1b4')}


def test_search_results_are_unchanged():
    got = fingerprints()
    assert got.keys() == REFERENCE.keys()
    changed = {k: (got[k], REFERENCE[k]) for k in got if got[k] != REFERENCE[k]}
    assert not changed, pprint.pformat(changed)


if __name__ == "__main__":
    pprint.pprint(fingerprints(), width=100)
