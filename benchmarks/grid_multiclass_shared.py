"""One kernel for every pairwise model (issue 35, item 3), on a grid: digits
partition 0, 45 one-versus-one BTSVCs at fixed ``(kappa, kappa0)``,
``kappa_b = 100``; the summed ln evidence, the test error and the test NLL of
both couplings for each grid point.

    python3 benchmarks/grid_multiclass_shared.py
"""
import itertools
import os
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_multiclass as B  # noqa: E402
from bsvm_scale import BayesianSVC
name, Xtr, Xte, ytr, yte = next(B.data_sets([]))
res = []
for kappa, k0 in itertools.product([0.0003, 0.001, 0.002, 0.003, 0.006, 0.01], [3.0, 10.0, 30.0, 100.0]):
    m = BayesianSVC(optimize=False, kappa=kappa, kappa0=k0, kappa_b=100.0, n_jobs=1).fit(Xtr, ytr)
    ev = float(np.sum(m.log_evidence_))
    s = B.score(m.classes_, m.predict_proba(Xte), yte)
    m.set_params(coupling="wu_lin_weng"); s2 = B.score(m.classes_, m.predict_proba(Xte), yte)
    res.append((ev, kappa, k0, s["error"], s["nll"], s2["nll"]))
    print(f"kappa {kappa:7.4f} k0 {k0:6.1f} sum ln ev {ev:9.1f} err {s['error']:.4f} nll {s['nll']:.4f} wlw nll {s2['nll']:.4f}", flush=True)
best = max(res); print("best evidence", best)
