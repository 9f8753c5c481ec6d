"""Trial points beyond the end of a trust-region search.

The evidence of BSVR (4.38) and BTSVC (5.37) jumps where a case moves between
pieces of the loss, and the gradient (4.39)-(4.42), (5.38)-(5.40) follows the
smooth piece; a search that converged on one piece can end next to a better
point across a jump. Two ways of looking for it, each one function that
evaluates through the driver's recorder (so that replay stays exact) and
returns the better point or None; :mod:`bsvm_scale.optimization.driver`
continues the search from it:

- :func:`probe_neighbours`: the ``2 p`` axis neighbours of the best point;
- :func:`slope_trial`: one step along the slope the evaluated values explain
  around the best point (:func:`fitted_slope`), jumps included.
"""

from __future__ import annotations

import numpy as np

from .trust_region import model_step

__all__ = ["fitted_slope", "slope_trial", "probe_neighbours"]


def fitted_slope(records, best, B, reach):
    """The slope at ``best["theta"]`` that the values explain, jumps included.

    The model gradient follows the smooth piece of the evidence; across the
    jumps the values can fall the other way. With the model curvature ``B``
    fixed, the slope ``g`` minimises the weighted squared misfit of
    ``f_i - f_b = g'd_i + d_i'B d_i / 2`` over the finite ``records`` within
    ``reach`` (max-norm) of the best point, ``d_i = theta_i - theta_b``, with
    weights ``1 / (0.1 + |d_i|_inf)`` (the nearer points say more about the
    slope at ``theta_b``). None when fewer than ``p + 1`` points are near
    enough to determine it. Exact for a quadratic with Hessian ``B``.
    """
    xb, fb = best["theta"], best["fun"]
    near = [r for r in records if r is not best and np.isfinite(r["fun"])
            and 0.0 < np.max(np.abs(r["theta"] - xb)) <= reach]
    if len(near) < xb.size + 1:
        return None
    D = np.array([r["theta"] - xb for r in near])
    misfit = np.array([r["fun"] for r in near]) - fb - 0.5 * np.einsum("ij,jk,ik->i", D, B, D)
    w = 1.0 / (0.1 + np.max(np.abs(D), axis=1))
    g, _, rank, _ = np.linalg.lstsq(D * w[:, None], misfit * w, rcond=None)
    return g if rank == xb.size else None


def slope_trial(rec, best, B, radius, box):
    """Evaluate, through the recorder ``rec`` (the record flagged ``slope``),
    the model step from the best point with the slope the values explain
    (:func:`fitted_slope`, the evaluated points within ``4 radius``) inside the
    trust box of half-width ``radius``; return it when it is lower than
    ``best``, else None (also when the slope cannot be fitted or promises no
    decrease)."""
    lo, hi = box
    xb = best["theta"]
    g = fitted_slope(rec.trajectory, best, B, 4.0 * radius)
    if g is None:
        return None
    s, pred = model_step(g, B, np.maximum(lo - xb, -radius), np.minimum(hi - xb, radius))
    if pred <= 0.0 or not np.any(s):
        return None
    trial = rec(np.clip(xb + s, lo, hi), radius)
    trial["slope"] = True
    return trial if np.isfinite(trial["grad_norm"]) and trial["fun"] < best["fun"] else None


def probe_neighbours(rec, best, step, box):
    """Evaluate the axis neighbours ``best["theta"] +- step e_k`` (inside the
    box; coordinates at a bound probe one side) through the recorder ``rec``
    (their records flagged ``probe``) and return the best finite one if it is
    lower than ``best``, else None."""
    lo, hi = box
    found = None
    for k in range(best["theta"].size):
        for sign in (1.0, -1.0):
            theta = best["theta"].copy()
            theta[k] = np.clip(theta[k] + sign * step, lo[k], hi[k])
            if theta[k] == best["theta"][k]:
                continue
            trial = rec(theta, step)
            trial["probe"] = True
            if np.isfinite(trial["grad_norm"]) and trial["fun"] < (best if found is None
                                                                   else found)["fun"]:
                found = trial
    return found
