"""Inference engines of the Bayesian models.

The covariance function (thesis 4.3, ARD 4.42) and the kernel-row cache
(``covariance``), the loss functions and noise models (``losses``: soft
insensitive loss 2.2, trigonometric loss 5.1), the evidence and its gradients
with a dense support-vector block or matrix-free (``evidence_silf`` for BSVR
4.38-4.42, ``evidence_trig`` for BTSVC 5.35-5.37, ``evidence_lowrank`` for the
pivoted-Cholesky / Lanczos pieces), the low-rank Newton start of the MAP
solves (``map_lowrank``) and the objectives the optimiser calls
(``objective_silf``, ``objective_trig``: MAP solve by SMO, then the evidence).
"""
