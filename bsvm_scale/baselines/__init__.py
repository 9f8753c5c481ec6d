"""The baselines users compare with: classical SVR / SVC / TSVC by SMO
(``svm``), exact Gaussian-process regression and Laplace classification
(``gp``, ``gpc``), relevance vector machines (``rvm``), and the
cross-validation grid that tunes the classical machines (``model_selection``)."""
