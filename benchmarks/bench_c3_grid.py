"""How far the BTSVC evidence search ends from the best point of the C3
contour grid (docs/protocols.md, C3: a 13 x 13 grid over (kappa0, kappa) around
the fitted point, kappa_b fixed), on the first partition of each C3 data set.

``gap = -ln evidence of the fit - the grid's lowest -ln evidence`` (positive:
the grid found a better point)::

    python3 benchmarks/bench_c3_grid.py [--probe STEP] [--partitions N] [--out FILE.json]

``--options JSON`` passes other optimizer options (e.g. the first trust-region
version's stall rule, ``'{"stall_evals": 5, "stall_atol": 0, "slope_rounds": 0}'``).
``--partitions N`` measures the three synthetic sets on their first ``N``
partitions (keys ``twonorm``, ``twonorm_p1``, ...); one gap is one draw of a
jumpy function's minimum, so several partitions show the typical gap.

``--probe STEP`` fits with ``optimizer_options={"probe_step": STEP}`` (the
neighbour probe of :func:`bsvm_scale.optimization.trials.probe_neighbours`);
the evaluations of each fit are reported too.
"""

import argparse
import json
import warnings

import numpy as np


def _gap(X, y, Xt, yt, options=None):
    from bsvm_scale import BayesianSVC
    from bsvm_scale.pipeline.run.evidence_grid import GRID_DEFAULTS, compute_grid

    m = BayesianSVC(n_starts=1, optimizer_options=options).fit(X, y)
    ev = compute_grid(X, y, Xt, yt, m.hyperparameters_, GRID_DEFAULTS)["neg_log_evidence"]
    fit = -float(m.log_evidence_)
    return {"fit": fit, "grid_best": float(ev.min()), "gap": fit - float(ev.min()),
            "evaluations": sum(len(s["trajectory"]) for s in m.starts_)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", type=float, default=0.0)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--options", default=None,
                    help="optimizer options of the fits as JSON (merged under --probe)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    options = {**json.loads(args.options or "{}"),
               **({"probe_step": args.probe} if args.probe else {})} or None
    from bsvm_scale import datasets

    warnings.simplefilter("ignore")
    out = {}
    for name in ("twonorm", "ringnorm", "waveform"):
        n, n_test = (5000, 4600) if name == "waveform" else (7400, 7000)
        ds = getattr(datasets, name)(n, 31)
        splits = datasets.random_splits(n, 400, args.partitions, 31, n_test)
        for k, (tr, te) in enumerate(splits):
            key = name if k == 0 else f"{name}_p{k}"
            out[key] = _gap(ds.X[tr], ds.y[tr], ds.X[te], ds.y[te], options)
            print(key, json.dumps(out[key]), flush=True)
    for name in ("titanic", "pima", "breast_cancer"):
        tr, te = datasets.load_real(name).split(0)
        out[name] = _gap(tr.X, tr.y, te.X, te.y, options)
        print(name, json.dumps(out[name]), flush=True)
    print("largest gap", max(v["gap"] for v in out.values()))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
