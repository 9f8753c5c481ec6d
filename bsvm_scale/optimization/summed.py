"""Independent evidences that share their hyperparameters: one objective.

When several models with the same covariance are fitted to disjoint or
overlapping data sets that are modelled as independent (the binary models of
a multi-class classifier with one kernel, thesis Appendix H), the evidence of
the whole is the product of theirs,

    ln P(D_1, ..., D_K | theta) = sum_k ln P(D_k | theta),

and so are the Laplace approximations (5.35) and their gradients (5.36),
(5.37): each term is evaluated at its own MAP solution, and the MAP problems
are independent given ``theta``. :class:`SummedObjective` makes any list of
objectives (the contract of :mod:`bsvm_scale.optimization.objective`) one
objective of that sum, so the one search of
:mod:`bsvm_scale.optimization.search` optimises it unchanged.

Its dual vector is the parts' dual vectors end to end; its best point is the
point of the lowest sum, and every part keeps as *its* best point its own
evaluation there, so that the final evaluation (and a resumed run) re-solves
each part from the solution it had at the summed optimum.
"""

from __future__ import annotations

import numpy as np

from .._util.threads import thread_map
from .objective import BestPoint, Evaluation, Warm

__all__ = ["SummedObjective", "combine_info"]

#: info entries that add up over the parts (seconds: summed over the parts,
#: which may have run on several threads); of the rest only ``smo_violation``
#: (the largest), ``method`` (the first part's) and ``rejected`` are kept
_ADDITIVE = ("n_sv", "smo_iter", "error", "map_s", "evidence_s")


def combine_info(infos):
    """One evaluation's diagnostics from its parts': counts, error bounds and
    seconds summed, the largest SMO violation, the first part's method; only
    numbers and strings (a record must be storable in HDF5)."""
    out = {"n_parts": len(infos)}
    for key in _ADDITIVE:
        if any(key in i for i in infos):
            out[key] = sum(i.get(key, 0) for i in infos)
    if any("smo_violation" in i for i in infos):
        out["smo_violation"] = max(float(i.get("smo_violation", 0.0)) for i in infos)
    if "method" in infos[0]:
        out["method"] = str(infos[0]["method"])
    if any("rejected" in i for i in infos):
        out["rejected"] = next(str(i["rejected"]) for i in infos if "rejected" in i)
    return out


def _evaluated(part, theta, need_grad, kw):
    """``part.evaluate`` (``need_grad`` None: ``part.final``), then its caches
    dropped: they hold kernel rows of this ``theta`` only, and with them kept
    every part would hold its cache at once."""
    ev = part.final(theta) if need_grad is None else part.evaluate(theta, need_grad, **kw)
    part.release()
    return ev


class SummedObjective:
    """``theta -> sum_k (-ln P(D_k | theta))`` over the objectives ``parts``.

    Parameters
    ----------
    parts : list of Objective
        One objective per data set, all on the same ``theta``.
    sizes : list of int
        The length of each part's dual vector (its training cases).
    n_jobs : int or None, default=None
        Threads the parts of one evaluation run on
        (:func:`~bsvm_scale._util.threads.thread_map`); the result does not
        depend on it.

    Attributes
    ----------
    best : BestPoint or None
        The lowest sum evaluated: its value, point and the parts' dual
        vectors end to end.
    """

    def __init__(self, parts, sizes, n_jobs=None):
        if len(parts) == 0 or len(parts) != len(sizes):
            raise ValueError(f"SummedObjective needs one size per part and at least one part; "
                             f"got {len(parts)} parts and {len(sizes)} sizes.")
        self.parts = list(parts)
        self.bounds = np.cumsum([0] + [int(s) for s in sizes])
        self.n_jobs = n_jobs
        self.best = None

    @property
    def smo_limit_hits(self):
        """MAP solves of all parts that stopped at their iteration limit."""
        return sum(int(getattr(p, "smo_limit_hits", 0)) for p in self.parts)

    def split(self, dual):
        """The parts' slices of a dual vector of the whole."""
        dual = np.asarray(dual, dtype=np.float64)
        if dual.shape != (self.bounds[-1],):
            raise ValueError(f"a dual vector of the summed objective must hold "
                             f"{self.bounds[-1]} values (the parts' cases end to end); got "
                             f"shape {dual.shape}.")
        return [dual[a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:])]

    def __call__(self, theta):
        return self.evaluate(theta).as_tuple()

    def evaluate(self, theta, need_grad=True, **kw):
        """The :class:`Evaluation` of the sum at ``theta`` (keywords go to
        every part's ``evaluate``); its ``detail`` is the list of the parts'
        evaluations."""
        theta = np.array(theta, dtype=float)
        kept = [p.best for p in self.parts]
        for p in self.parts:  # each part's best becomes this evaluation
            p.best = None
        try:
            parts = thread_map(lambda p: _evaluated(p, theta, need_grad, kw), self.parts,
                               self.n_jobs)
        except BaseException:
            for p, b in zip(self.parts, kept):
                p.best = b
            raise
        value = float(sum(e.value for e in parts))
        grad = None
        if need_grad and all(e.grad is not None for e in parts):
            grad = np.sum([np.asarray(e.grad, dtype=float) for e in parts], axis=0)
        dual = self._joined([e.dual for e in parts])
        if np.isfinite(value) and (self.best is None or value < self.best.value):
            self.best = BestPoint(value, theta.copy(), None if dual is None else dual.copy())
        else:
            for p, b in zip(self.parts, kept):
                p.best = b
        f = self._joined([e.f for e in parts])
        return Evaluation(theta, value, grad, combine_info([e.info for e in parts]), dual, f,
                          parts)

    @staticmethod
    def _joined(arrays):
        if any(a is None for a in arrays):
            return None
        return np.concatenate([np.asarray(a, dtype=np.float64) for a in arrays])

    def final(self, theta):
        """Every part's final evaluation at ``theta`` (at the summed best
        point, from each part's solution there), summed."""
        theta = np.array(theta, dtype=float)
        parts = thread_map(lambda p: _evaluated(p, theta, None, None), self.parts, self.n_jobs)
        value = float(sum(e.value for e in parts))
        return Evaluation(theta, value, None, combine_info([e.info for e in parts]),
                          self._joined([e.dual for e in parts]),
                          self._joined([e.f for e in parts]), parts)

    def restart(self, warm=None):
        """Every part begins another run from its slice of ``warm.dual``
        (None: as it is), with ``warm.slope``."""
        if warm is None or warm.dual is None:
            slope = None if warm is None else warm.slope
            for p in self.parts:
                p.restart(None if slope is None else Warm(None, slope))
            return
        for p, d in zip(self.parts, self.split(warm.dual)):
            p.restart(Warm(d, warm.slope))

    def get_state(self):
        """The parts' states, keys ``part<k>.<key>``, and the best sum."""
        state = {}
        for k, p in enumerate(self.parts):
            state.update({f"part{k}.{key}": v for key, v in p.get_state().items()})
        if self.best is not None:
            state.update(best_value=self.best.value, best_theta=self.best.theta.copy())
        return state

    def set_state(self, state):
        """Restore a :meth:`get_state` dict, or begin from a bare dual vector
        of the whole (``{"dual": ...}``)."""
        if "dual" in state and not any(k.startswith("part") for k in state):
            self.best = None
            self.restart(Warm(state["dual"]))
            return
        for k, p in enumerate(self.parts):
            prefix = f"part{k}."
            own = {key[len(prefix):]: v for key, v in state.items() if key.startswith(prefix)}
            if not own:
                raise ValueError(f"the state of a search over {len(self.parts)} data sets must "
                                 f"hold the keys part<k>.* of each; part{k}.* are missing (got "
                                 f"{sorted(state)[:5]!r}...). Pass the state recorded for the "
                                 "same model and data.")
            p.set_state(own)
        self.best = None
        if "best_value" in state:
            duals = [None if p.best is None else p.best.dual for p in self.parts]
            self.best = BestPoint(float(state["best_value"]),
                                  np.asarray(state["best_theta"], dtype=float).copy(),
                                  self._joined(duals))

    def release(self):
        for p in self.parts:
            p.release()

    def carry(self):
        """The best point's dual vectors end to end."""
        return Warm(None if self.best is None else self.best.dual)
