"""Cross-validated grid search for the classical SVM baselines.

The protocol of the thesis experiments (``docs/protocols.md``, R2 and C1): a
coarse 7 x 7 grid in ``(log10 C, log10 kappa)`` over a box, then a fine 9 x 9
grid spaced 0.1 (in log10 units) centred on the best coarse point. The score
is the cross-validation loss pooled over all held-out cases -- mean squared
error for regression, error rate for classification -- estimated by k-fold or
leave-one-out cross-validation. Ties are broken towards fewer support vectors
(mean over the folds), then towards smaller ``C`` and smaller ``kappa``
(the smoother model).

Default boxes: ``[-0.5, 2.5] x [-2.5, 0.5]`` for regression (R2) and
``[0, 3] x [-3, 0]`` for classification (C1).

Every (fold, grid point) pair is one call of the pure function
:func:`cv_task`, run serially or, when a ``dask.distributed.Client`` is given,
as Dask tasks through the package's one scheduling helper
(:func:`bsvm_scale._util.scheduling.map_tasks`: the data are scattered once).
Results are identical either way.

Case weights (``sample_weight``) go to every fit -- the training part of
each fold gets its slice, the refit all of them -- and weight the score: the
pooled loss is ``sum_i w_i loss_i / sum_i w_i`` over the held-out cases (a
weight-0 case then counts for nothing anywhere, and an integer weight counts
as that many copies of the case). The folds themselves are drawn as without
weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone, is_regressor
from sklearn.model_selection import KFold, LeaveOneOut, StratifiedKFold
from sklearn.utils.validation import has_fit_parameter

from .._util.scheduling import map_tasks
from .._util.validation import check_sample_weight

__all__ = ["GridSearchResult", "grid_search_cv", "cv_task", "log_grid",
           "R2_BOX", "C1_BOX"]

R2_BOX = ((-0.5, 2.5), (-2.5, 0.5))   # (log10 C, log10 kappa) for SVR, experiments R2
C1_BOX = ((0.0, 3.0), (-3.0, 0.0))    # for SVC, experiments C1


@dataclass
class GridSearchResult:
    """Outcome of :func:`grid_search_cv`.

    Attributes
    ----------
    best_params : dict
        ``{param_x: value, param_y: value}`` (natural, not log, units).
    best_score : float
        Cross-validation loss at the best point (MSE or error rate; weighted
        by ``sample_weight`` when given).
    best_n_sv : float
        Mean number of support vectors over the folds at the best point.
    table : dict of ndarray
        One entry per evaluated grid point: ``stage`` (0 coarse, 1 fine),
        ``log10_<param_x>``, ``log10_<param_y>``, ``score``, ``n_sv``.
    best_estimator : estimator
        Clone of the input estimator with ``best_params`` refitted on all data
        (``None`` when ``refit=False``).
    n_folds : int
    scoring : str
        ``"mse"`` or ``"error_rate"``.
    """

    best_params: dict
    best_score: float
    best_n_sv: float
    table: dict
    best_estimator: object = None
    n_folds: int = 0
    scoring: str = ""
    params: tuple = field(default=("C", "kappa"))


def log_grid(lo, hi, points):
    """``points`` equally spaced values from ``lo`` to ``hi`` (inclusive)."""
    if points < 1:
        raise ValueError(f"grid points must be >= 1; got {points!r}.")
    if points == 1:
        return np.array([0.5 * (lo + hi)])
    return np.linspace(lo, hi, points)


def cv_task(X, y, estimator, train, test, params, scoring, sample_weight=None):
    """Fit ``clone(estimator).set_params(**params)`` on ``train``, score on ``test``.

    A pure function of its arguments (the unit of work of the grid search;
    the data come first, as the arguments every task shares).

    Parameters
    ----------
    X, y : ndarray
        All the data.
    estimator : estimator
        Template, cloned.
    train, test : ndarray of int
        Rows of the fold.
    params : dict
        Parameters set on the clone.
    scoring : {"mse", "error_rate"}
    sample_weight : ndarray of shape (n,), optional
        Case weights of all rows: ``sample_weight[train]`` goes to ``fit``
        and ``sample_weight[test]`` weights the held-out losses.

    Returns
    -------
    loss_sum : float
        Sum of squared errors (``scoring="mse"``) or number of
        misclassifications (``"error_rate"``) over ``test``, each case
        multiplied by its weight when ``sample_weight`` is given.
    n_sv : int
        Number of support vectors of the fitted model.
    """
    est = clone(estimator).set_params(**params)
    if sample_weight is None:
        est.fit(X[train], y[train])
    else:
        est.fit(X[train], y[train], sample_weight=sample_weight[train])
    pred = est.predict(X[test])
    w = None if sample_weight is None else sample_weight[test]
    if scoring == "mse":
        r = np.asarray(pred, dtype=float) - y[test]
        loss = float(np.dot(r, r)) if w is None else float(np.dot(w, r * r))
    else:
        wrong = pred != y[test]
        loss = float(np.sum(wrong)) if w is None else float(np.sum(w[wrong]))
    return loss, int(len(est.support_))


def _cv_task_weighted(X, y, sample_weight, estimator, train, test, params, scoring):
    """:func:`cv_task` with the case weights among the shared (scattered) data."""
    return cv_task(X, y, estimator, train, test, params, scoring, sample_weight)


def _folds(cv, X, y, classification, shuffle, random_state):
    n = X.shape[0]
    if isinstance(cv, str):
        if cv.lower() != "loo":
            raise ValueError(f"cv must be an integer >= 2 or 'loo'; got {cv!r}.")
        splitter = LeaveOneOut()
    else:
        if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
            raise ValueError(f"cv must be an integer >= 2 or 'loo'; got {cv!r}.")
        if cv > n:
            raise ValueError(f"cv={cv} folds need at least {cv} samples; got {n}.")
        if cv == n:
            splitter = LeaveOneOut()
        elif classification:
            _, counts = np.unique(y, return_counts=True)
            if counts.min() >= cv:
                splitter = StratifiedKFold(cv, shuffle=shuffle,
                                           random_state=random_state if shuffle else None)
            else:
                splitter = KFold(cv, shuffle=shuffle, random_state=random_state if shuffle else None)
        else:
            splitter = KFold(cv, shuffle=shuffle, random_state=random_state if shuffle else None)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y)]


def _check_box(name, box):
    try:
        lo, hi = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high) of log10 values; got {box!r}.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
        raise ValueError(f"{name} must be a finite pair with low <= high; got {box!r}.")
    return lo, hi


def _pick_best(lx, ly, score, nsv, rtol=1e-12):
    """Lowest score; ties (within ``rtol``) go to fewer SVs, then smaller x, y."""
    best = np.min(score)
    tie = score <= best + rtol * max(1.0, abs(best))
    idx = np.flatnonzero(tie)
    order = np.lexsort((ly[idx], lx[idx], nsv[idx]))
    return int(idx[order[0]])


def grid_search_cv(estimator, X, y, *, log10_C=None, log10_kappa=None, coarse_points=7,
                   fine_points=9, fine_step=0.1, cv=5, client=None, shuffle=True,
                   random_state=0, refit=True, params=("C", "kappa"), sample_weight=None):
    """Two-stage cross-validated grid search over ``(log10 C, log10 kappa)``.

    Parameters
    ----------
    estimator : SVR or SVC (or any estimator with ``support_`` after fit)
        Template; its other parameters (``epsilon``, ``tol``, ...) are kept.
    X : array of shape (n, d)
    y : array of shape (n,)
    log10_C, log10_kappa : (low, high), optional
        Box of the coarse grid in log10 units; defaults to
        ``[-0.5, 2.5] x [-2.5, 0.5]`` for regressors (R2) and
        ``[0, 3] x [-3, 0]`` for classifiers (C1).
    coarse_points : int, default=7
        Coarse grid is ``coarse_points x coarse_points``.
    fine_points : int, default=9
        Fine grid ``fine_points x fine_points`` spaced ``fine_step`` and
        centred on the best coarse point (0 skips the fine stage).
    fine_step : float, default=0.1
    cv : int or "loo", default=5
        Number of folds (stratified for classifiers when every class has
        enough members) or leave-one-out.
    client : dask.distributed.Client, optional
        Run the (fold, grid point) fits as Dask tasks.
    shuffle : bool, default=True
        Shuffle before splitting into folds (k-fold only).
    random_state : int, default=0
        Seed of the fold assignment.
    refit : bool, default=True
        Refit the best model on all data.
    params : (str, str), default=("C", "kappa")
        Names of the two parameters searched in log10 units (e.g.
        ``("kappa0", "kappa")`` for :class:`~bsvm_scale.baselines.svm.TSVC`).
    sample_weight : array-like of shape (n,), optional
        Case weights (finite, >= 0, not all zero) for an estimator whose
        ``fit`` takes ``sample_weight``: each fold's fit gets the weights of
        its training rows, the refit all of them, and the score is the
        weighted pooled loss ``sum_i w_i loss_i / sum_i w_i``. The folds are
        the same as without weights.

    Returns
    -------
    GridSearchResult
    """
    X, y, regression = _check_data(estimator, X, y)
    sample_weight = _check_weights(estimator, sample_weight, X.shape[0])
    _check_grid(estimator, params, coarse_points, fine_points, fine_step)
    bx, by = _boxes(regression, log10_C, log10_kappa)
    grid = _Grid(estimator, X, y, _folds(cv, X, y, not regression, shuffle, random_state),
                 tuple(params), "mse" if regression else "error_rate", client, sample_weight)
    rows, best_row = _two_stages(grid, bx, by, coarse_points, fine_points, fine_step)
    best_params = {params[0]: float(10.0 ** best_row[1]), params[1]: float(10.0 ** best_row[2])}
    best_est = _refit(estimator, best_params, X, y, sample_weight) if refit else None
    return GridSearchResult(best_params=best_params, best_score=float(best_row[3]),
                            best_n_sv=float(best_row[4]), table=_table(rows, params),
                            best_estimator=best_est,
                            n_folds=len(grid.folds), scoring=grid.scoring, params=tuple(params))


def _two_stages(grid, bx, by, coarse_points, fine_points, fine_step):
    """The coarse grid over the boxes, then the fine grid around its best
    point: ``(every row, the best row of the last stage)``."""
    rows = grid.evaluate(log_grid(*bx, coarse_points), log_grid(*by, coarse_points), 0)
    best_row = _best_row(rows)
    if fine_points > 0:
        offs = (np.arange(fine_points) - (fine_points - 1) / 2.0) * fine_step
        fine = grid.evaluate(best_row[1] + offs, best_row[2] + offs, 1)
        rows, best_row = rows + fine, _best_row(fine)
    return rows, best_row


def _boxes(regression, log10_C, log10_kappa):
    """The coarse grid's boxes: the given ones, checked, or the protocol's."""
    default = R2_BOX if regression else C1_BOX
    return (_check_box("log10_C", default[0] if log10_C is None else log10_C),
            _check_box("log10_kappa", default[1] if log10_kappa is None else log10_kappa))


def _refit(estimator, best_params, X, y, sample_weight):
    """The best grid point refitted on all the data (with their weights)."""
    est = clone(estimator).set_params(**best_params)
    return est.fit(X, y) if sample_weight is None else est.fit(X, y, sample_weight=sample_weight)


def _table(rows, params):
    """The ``table`` of :class:`GridSearchResult` from the evaluated rows."""
    arr = np.array(rows, dtype=float)
    return {"stage": arr[:, 0].astype(int), f"log10_{params[0]}": arr[:, 1],
            f"log10_{params[1]}": arr[:, 2], "score": arr[:, 3], "n_sv": arr[:, 4]}


def _check_data(estimator, X, y):
    """``(X, y, regression)`` validated for the grid search."""
    from ..inference.covariance import as_float_matrix

    X = as_float_matrix(X, "X")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-D with one entry per row of X; got shape {y.shape}.")
    regression = is_regressor(estimator)
    if regression:
        y = np.asarray(y, dtype=float)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values.")
    return X, y, regression


def _check_weights(estimator, sample_weight, n):
    """Validated case weights (None stays None); the estimator must take them."""
    if sample_weight is None:
        return None
    if not has_fit_parameter(estimator, "sample_weight"):
        raise ValueError(f"sample_weight was given but {type(estimator).__name__}.fit takes no "
                         "sample_weight; drop the weights or use an estimator that accepts them.")
    return check_sample_weight(estimator, sample_weight, n)


def _check_grid(estimator, params, coarse_points, fine_points, fine_step):
    """Validate the searched parameter names and the grid sizes."""
    if len(params) != 2 or not all(isinstance(p, str) for p in params):
        raise ValueError(f"params must be two parameter names; got {params!r}.")
    valid = estimator.get_params()
    for p in params:
        if p not in valid:
            raise ValueError(f"params: {type(estimator).__name__} has no parameter {p!r}.")
    for name, v in (("coarse_points", coarse_points), ("fine_points", fine_points)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (1 if name == "coarse_points" else 0):
            raise ValueError(f"{name} must be a non-negative integer (coarse >= 1); got {v!r}.")
    if not (np.isfinite(fine_step) and fine_step > 0):
        raise ValueError(f"fine_step must be positive; got {fine_step!r}.")


def _best_row(rows):
    """The row of ``rows`` (stage, log10 x, log10 y, loss, n_sv) :func:`_pick_best` picks."""
    arr = np.array(rows, dtype=float)
    return arr[_pick_best(arr[:, 1], arr[:, 2], arr[:, 3], arr[:, 4])]


@dataclass
class _Grid:
    """One grid search's fixed parts: the template, the data, the folds."""

    estimator: object
    X: np.ndarray
    y: np.ndarray
    folds: list
    params: tuple
    scoring: str
    client: object = None
    sample_weight: np.ndarray = None

    def evaluate(self, gx, gy, stage):
        """Rows ``(stage, a, b, pooled loss, mean n_sv)`` of the grid ``gx x gy``
        (log10 values), every (point, fold) fit one :func:`cv_task`; the
        pooled loss divides by ``n`` or, with weights, by their sum."""
        px, py = self.params
        pts = [(a, b) for a in gx for b in gy]
        items = [(self.estimator, tr, te, {px: float(10.0 ** a), py: float(10.0 ** b)},
                  self.scoring) for a, b in pts for tr, te in self.folds]
        if self.sample_weight is None:
            res = map_tasks(cv_task, items, shared=(self.X, self.y), client=self.client)
            total = self.X.shape[0]
        else:
            res = map_tasks(_cv_task_weighted, items,
                            shared=(self.X, self.y, self.sample_weight), client=self.client)
            total = float(np.sum(self.sample_weight))
        k = len(self.folds)
        out = []
        for g, (a, b) in enumerate(pts):
            chunk = res[g * k:(g + 1) * k]
            out.append((stage, a, b, sum(r[0] for r in chunk) / total,
                        sum(r[1] for r in chunk) / k))
        return out
