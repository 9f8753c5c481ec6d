"""One MAP solve on real data at scale, side by side (a diagnostic, not a test).

The first diamonds partition of pipelines/repro_r5_diamonds_reduced.toml (50,000
training cases, 9 inputs) at the hyperparameters of the first full-data evaluation of
its BSVR start 0 (C = 14.91, epsilon = 0.0526, kappa = 0.0578, kappa_b = 60.0,
kappa0 = var(y)): BSVR's SMO (cold start, default beta = 300 / n) against LIBSVM's SVR
(scikit-learn) at C * kappa0, epsilon, gamma = kappa / 2 on the same standardised inputs;
tolerance 1e-3 and a 256 MiB cache on both sides.

Measured 2026-11-26 on the idle 2-core machine: BSVR 367 s (568,237 SMO iterations,
28,188 SVs), LIBSVM 313 s (506,960 iterations, 28,095 SVs), ratio 1.17. The problem
itself is slow to solve: more than half of the cases are support vectors. With a 2 GiB
cache on both sides (``python3 benchmarks/diag_diamonds_map.py 2048``, 2026-11-27, idle):
BSVR 146 s (563,401 iterations), LIBSVM 140 s, ratio 1.04; BSVR alone with 256 MiB took
258 s in the same session (a 50,000-case row is 400 kB: 256 MiB hold 670 rows).

Usage (writes the data set into runs/repro_r5_diamonds_reduced/data if missing)::

    python3 benchmarks/diag_diamonds_map.py [CACHE_MB]      # default 256 on both sides
"""
import sys, time, json
import numpy as np
from pathlib import Path
from sklearn.svm import SVR
from bsvm_scale import BayesianSVR
from bsvm_scale.pipeline.spec.config import load_pipeline
from bsvm_scale.pipeline.run.executor import prepare_data

HERE = Path(__file__).resolve().parents[1]
p = load_pipeline(HERE / "pipelines" / "repro_r5_diamonds_reduced.toml")
data = prepare_data(p, Path(p.run_dir))
d = data["diamonds"]
tr, te = d["partitions"][0]
X, y = d["X"][tr], d["y"][tr]
C, eps, kappa, kb = 14.9119, 0.0526, 0.0578, 60.0363
k0 = float(np.var(y))
cache_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 256.0
BayesianSVR(optimize=False, C=C, epsilon=eps, kappa=kappa, kappa_b=kb,
            kappa0=k0).fit(X[:300], y[:300])  # compile
t = time.perf_counter()
m = BayesianSVR(optimize=False, C=C, epsilon=eps, kappa=kappa, kappa_b=kb, kappa0=k0,
                tol=1e-3, cache_mb=cache_mb).fit(X, y)
t_ours = time.perf_counter() - t
print(json.dumps({"side": "bsvr", "s": t_ours, "n_sv": int(m.support_.size),
                  "n_iter": int(m.n_iter_), "beta": m.hyperparameters_["beta"], "kappa0": k0,
                  "cache_mb": cache_mb}),
      flush=True)
Xs = (X - X.mean(0)) / X.std(0)
t = time.perf_counter()
r = SVR(C=C * k0, epsilon=eps, gamma=kappa / 2, tol=1e-3, cache_size=cache_mb).fit(Xs, y)
t_ref = time.perf_counter() - t
print(json.dumps({"side": "libsvm", "s": t_ref, "n_sv": int(r.support_.size),
                  "n_iter": int(np.sum(r.n_iter_)), "ratio_bsvr_over_libsvm": t_ours / t_ref}),
      flush=True)
