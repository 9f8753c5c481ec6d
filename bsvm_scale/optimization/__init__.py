"""Evidence maximisation shared by every Bayesian model (BSVR, BTSVC, GPR, GPC).

``driver``: the trust-region quasi-Newton search of one start
(:func:`~bsvm_scale.optimization.driver.run_start`) and its pieces;
``trust_region``: the model step, the BFGS update and the radius rule;
``starts``: plans of several starts (coarse-to-fine, isotropic-to-ARD,
committee weights); ``records``: the one ``starts_`` record layout.
"""
