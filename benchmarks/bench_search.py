"""Hyperparameter-search benchmark: evaluations per start and final evidence.

The evidence of BSVR and BTSVC is only piecewise smooth, so the optimiser's
cost is counted in evidence evaluations (each one MAP solve plus one evidence
and gradient). Cases (docs/protocols.md):

- ``r1``: BSVR, sinc + SILF noise (R1), 4,000 cases (up to 3 training sets), beta
  0.3, the two protocol starts;
- ``twonorm``, ``waveform`` (and ``ringnorm``): BTSVC on the first C3
  partitions (400 training cases, one start as in the C3 pipeline);
- ``boston``: BSVR-ARD (``--ard-init``, default ``continuation``; beta 0.3) on
  the first stored Boston splits (R5), with the test ASE.

Every fit reports, per full-data optimiser run, its evaluations and
``-ln evidence``, and the wall time of the fit::

    python3 benchmarks/bench_search.py [--cases r1 twonorm waveform boston]
        [--partitions 5] [--ard-init continuation] [--c3-ard] [--probe STEP] [--options JSON]
        [--out FILE.json]

``--c3-ard`` fits the C3 cases with ARD (route ``--ard-init``) and reports
their test error. ``--probe STEP`` gives the C3 fits the neighbour probe
(``optimizer_options={"probe_step": STEP}``); ``--options '{"name": value}'``
passes optimizer options to every fit (merged over the models' defaults).
"""

import argparse
import json
import time

import numpy as np


def _runs(model):
    """(evaluations, -ln evidence) of every full-data optimiser run of a fit,
    and the evaluations of its isotropic first stages and subsample phases."""
    runs, extra = [], 0
    for s in model.starts_:
        if s.get("trajectory"):
            runs.append((len(s["trajectory"]), float(s["neg_log_evidence"])))
        for key in ("isotropic", "subsample"):
            if isinstance(s.get(key), dict):
                extra += len(s[key].get("trajectory", []))
    return runs, extra


def _fit(est, X, y, test=None):
    t = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - t
    runs, extra = _runs(est)
    out = {"seconds": seconds, "evals_per_run": [r[0] for r in runs],
           "neg_log_evidence_per_run": [r[1] for r in runs], "other_evals": extra,
           "neg_log_evidence": -float(est.log_evidence_)}
    if test is not None and hasattr(est, "classes_"):
        out["test_error"] = float(np.mean(est.predict(test[0]) != test[1]))
    elif test is not None:
        out["test_ase"] = float(np.mean((est.predict(test.X) - test.y) ** 2))
    return out


def _r1(partitions, setting):
    from bsvm_scale import BayesianSVR
    from bsvm_scale.datasets import sinc_silf

    out = []
    for seed in range(1, 1 + min(partitions, 3)):  # at most 3 training sets
        ds = sinc_silf(4000, seed)
        out.append(_fit(BayesianSVR(beta=0.3, optimizer_options=setting["options"]),
                        ds.X, ds.y))
    return out


def _c3(name, partitions, setting):
    from bsvm_scale import BayesianSVC
    from bsvm_scale import datasets

    n, n_test = (5000, 4600) if name == "waveform" else (7400, 7000)
    ds = getattr(datasets, name)(n, 31)
    out = []
    for tr, te in datasets.random_splits(n, 400, partitions, 31, n_test):
        options = {**setting["options"], **setting["c3_options"]}
        ard = {"ard": True, "ard_init": setting["ard_init"]} if setting["c3_ard"] else {}
        out.append(_fit(BayesianSVC(n_starts=1, optimizer_options=options, **ard),
                        ds.X[tr], ds.y[tr], (ds.X[te], ds.y[te]) if ard else None))
    return out


def _boston(partitions, setting):
    from bsvm_scale import BayesianSVR
    from bsvm_scale.datasets import load_real

    ds = load_real("boston")
    out = []
    for k in range(partitions):
        train, test = ds.split(k)
        out.append(_fit(BayesianSVR(beta=0.3, ard=True, ard_init=setting["ard_init"],
                                    optimizer_options=setting["options"]),
                        train.X, train.y, test))
    return out


CASES = {"r1": _r1, "twonorm": lambda p, s: _c3("twonorm", p, s),
         "waveform": lambda p, s: _c3("waveform", p, s),
         "ringnorm": lambda p, s: _c3("ringnorm", p, s), "boston": _boston}


def summary(fits):
    """Medians over the fits of one case."""
    evals = [e for f in fits for e in f["evals_per_run"]]
    return {"fits": len(fits), "median_evals_per_run": float(np.median(evals)),
            "mean_evals_per_run": float(np.mean(evals)),
            "total_evals": int(sum(evals) + sum(f["other_evals"] for f in fits)),
            "mean_neg_log_evidence": float(np.mean([f["neg_log_evidence"] for f in fits])),
            "median_seconds": float(np.median([f["seconds"] for f in fits])),
            "total_seconds": float(sum(f["seconds"] for f in fits)),
            **{f"mean_{k}": float(np.mean([f[k] for f in fits]))
               for k in ("test_ase", "test_error") if k in fits[0]}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["r1", "twonorm", "waveform", "boston"],
                    choices=sorted(CASES))
    ap.add_argument("--partitions", type=int, default=5)
    ap.add_argument("--ard-init", default="continuation",
                    help="ard_init of the ARD fits: boston, and C3 with --c3-ard "
                         "(isotropic, continuation, start)")
    ap.add_argument("--probe", type=float, default=0.0,
                    help="probe_step of the C3 fits (0: no neighbour probe)")
    ap.add_argument("--c3-ard", action="store_true",
                    help="C3 fits with ARD (route --ard-init), reporting the test error")
    ap.add_argument("--options", type=json.loads, default={},
                    help="optimizer options of every fit, as a JSON object")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    setting = {"ard_init": args.ard_init, "options": args.options, "c3_ard": args.c3_ard,
               "c3_options": {"probe_step": args.probe} if args.probe else {}}
    result = {"options": args.options}
    for case in args.cases:
        fits = CASES[case](args.partitions, setting)
        result[case] = {"summary": summary(fits), "fits": fits}
        print(case, json.dumps(result[case]["summary"]), flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
