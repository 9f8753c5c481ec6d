"""The Bayesian support vector machines: :class:`~bsvm_scale.models.bsvr.BayesianSVR`
(BSVR, thesis ch. 4) and :class:`~bsvm_scale.models.btsvc.BayesianSVC` (BTSVC,
ch. 5), thin scikit-learn estimators over the inference engines and the
optimiser; ``warm_start`` reads the earlier model a retraining starts from."""
