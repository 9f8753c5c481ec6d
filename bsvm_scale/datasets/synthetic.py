"""Seeded generators for every synthetic data set of the experiment protocols.

Every generator takes the number of cases ``n`` and a ``seed`` (a
non-negative int, or a :class:`numpy.random.Generator`), draws everything
from one ``numpy.random.default_rng(seed)`` stream, is vectorised (the
Mackey-Glass integrator is a compiled loop), and returns a
:class:`~bsvm_scale.datasets.Dataset` whose ``provenance`` records the
generator, its parameters, the seed and the library versions.  Same seed,
same data; bit for bit on the same numpy.

Regression sets carry the noise-free target in ``extra['f']`` (and the noise
draw in ``extra['noise']``) for test metrics against the truth.
"""

from __future__ import annotations

import math

import numpy as np

from ._dataset import Dataset, make_seed_rng

__all__ = [
    "sinc",
    "sinc_silf",
    "sinc_gauss",
    "robot_arm",
    "robot_arm6",
    "mackey_glass",
    "mackey_glass_series",
    "gauss1d",
    "gauss1d_posterior",
    "gauss2d",
    "gauss2d_posterior",
    "gauss2d_log_densities",
    "gauss2d_bayes_error",
    "twonorm",
    "ringnorm",
    "waveform",
    "waveform_bases",
    "friedman1",
    "friedman2",
    "friedman3",
]


def _check_n(n):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be a positive int; got {n!r}")
    if n < 1:
        raise ValueError(f"n must be positive; got {n}")
    return int(n)


def _prov(generator, seed_record, params, recipe, **more):
    from .. import __version__

    out = {
        "source": "synthetic",
        "generator": f"bsvm_scale.datasets.{generator}",
        "bsvm_scale_version": __version__,
        "numpy_version": np.__version__,
        "rng": "numpy.random.default_rng (PCG64)",
        "seed": seed_record,
        "params": params,
        "recipe": recipe,
    }
    out.update(more)
    return out


def sinc(x):
    """``sin|x| / |x|`` with the value 1 at 0."""
    return np.sinc(np.asarray(x, dtype=np.float64) / np.pi)


# --------------------------------------------------------------------- sinc


def sinc_silf(n, seed, *, C=10.0, epsilon=0.1, beta=0.3, low=-10.0, high=10.0):
    """R1: x ~ U[low, high], y = sinc(x) + SILF noise (density 2.31).

    The noise is drawn by inverting the SILF distribution function (Appendix
    F) with :func:`bsvm_scale.inference.losses.silf_sample`, using the same Generator
    stream after the inputs.  ``extra['f']`` is sinc(x), ``extra['noise']``
    the draw; ``provenance['noise_variance']`` is sigma_n^2 of (2.33).
    """
    from ..inference.losses import silf_noise_variance, silf_sample

    n = _check_n(n)
    if not high > low:
        raise ValueError(f"need low < high; got [{low}, {high}]")
    rng, seed_rec = make_seed_rng(seed)
    x = rng.uniform(low, high, size=n)
    noise = np.asarray(silf_sample(C, epsilon, beta, size=n, random_state=rng), dtype=np.float64)
    params = {"C": float(C), "epsilon": float(epsilon), "beta": float(beta),
              "low": float(low), "high": float(high)}
    how = ("x ~ U[low, high]; y = sin|x|/|x| + delta, delta ~ SILF(C, epsilon, beta) drawn by "
           "inverse CDF (thesis Appendix F) via bsvm_scale.inference.losses.silf_sample")
    return _sinc_dataset("sinc_silf", x, noise, _prov(
        "sinc_silf", seed_rec, params, how,
        noise_variance=float(silf_noise_variance(C, epsilon, beta))),
        "sinc(x) on [-10, 10] with SILF noise (R1)")


def _sinc_dataset(name, x, noise, provenance, description):
    """The one-input sinc data set ``y = sinc(x) + noise`` with ``f`` and the
    noise kept as extra columns."""
    f = sinc(x)
    return Dataset(X=x[:, None], y=f + noise, name=name, task="regression", feature_names=["x"],
                   provenance=provenance, extra={"f": f, "noise": noise},
                   description=description)


def sinc_gauss(n, seed, *, noise_variance=0.04, noise_free=False, low=-10.0, high=10.0):
    """R2: x ~ U[low, high], y = sinc(x) + N(0, noise_variance).

    ``noise_free=True`` gives y = sinc(x) exactly (the R2 test set); the
    Gaussian draw is still consumed so the inputs are identical either way.
    """
    n = _check_n(n)
    if noise_variance < 0:
        raise ValueError(f"noise_variance must be >= 0; got {noise_variance}")
    if not high > low:
        raise ValueError(f"need low < high; got [{low}, {high}]")
    rng, seed_rec = make_seed_rng(seed)
    x = rng.uniform(low, high, size=n)
    noise = math.sqrt(noise_variance) * rng.standard_normal(n)
    if noise_free:
        noise = np.zeros(n)
    params = {"noise_variance": float(noise_variance), "noise_free": bool(noise_free),
              "low": float(low), "high": float(high)}
    return _sinc_dataset("sinc_gauss", x, noise, _prov(
        "sinc_gauss", seed_rec, params,
        "x ~ U[low, high]; y = sin|x|/|x| + N(0, noise_variance) (zero noise if noise_free)",
        noise_variance=0.0 if noise_free else float(noise_variance)),
        "sinc(x) on [-10, 10] with Gaussian noise, variance 0.04 (R2)")


# ---------------------------------------------------------------- robot arm


def robot_arm(n, seed, *, output=1, noise_std=0.05, n_inputs=2):
    """R3: two-joint robot arm, y1 = 2cos x1 + 1.3cos(x1+x2), y2 = 2sin x1 + 1.3sin(x1+x2).

    x1 is uniform on [-1.932, -0.453] or [0.453, 1.932] (each interval with
    probability 1/2), x2 uniform on [0.534, 3.142]; Gaussian target noise of
    standard deviation ``noise_std``.  ``output`` (1 or 2) selects which
    output is ``y``; both noisy outputs are kept as ``extra['y1']``,
    ``extra['y2']`` and the noise-free ones as ``extra['f1']``, ``extra['f2']``
    (``extra['f']`` is the noise-free selected output).

    ``n_inputs=6`` adds x3 = x1 + 0.02 n3, x4 = x2 + 0.02 n4, x5 = n5, x6 = n6
    (standard normals).  These are drawn after everything else, so with the
    same seed the 6-input set extends the 2-input one (same x1, x2, y).
    """
    n = _check_n(n)
    if output not in (1, 2):
        raise ValueError(f"output must be 1 or 2; got {output!r}")
    if n_inputs not in (2, 6):
        raise ValueError(f"n_inputs must be 2 or 6; got {n_inputs!r}")
    if noise_std < 0:
        raise ValueError(f"noise_std must be >= 0; got {noise_std}")
    rng, seed_rec = make_seed_rng(seed)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    x1 = sign * rng.uniform(0.453, 1.932, size=n)
    x2 = rng.uniform(0.534, 3.142, size=n)
    e = noise_std * rng.standard_normal((n, 2))
    f1 = 2.0 * np.cos(x1) + 1.3 * np.cos(x1 + x2)
    f2 = 2.0 * np.sin(x1) + 1.3 * np.sin(x1 + x2)
    y1, y2 = f1 + e[:, 0], f2 + e[:, 1]
    cols, names = [x1, x2], ["x1", "x2"]
    if n_inputs == 6:
        z = rng.standard_normal((n, 4))
        cols += [x1 + 0.02 * z[:, 0], x2 + 0.02 * z[:, 1], z[:, 2], z[:, 3]]
        names += ["x3", "x4", "x5", "x6"]
    name = "robot_arm" if n_inputs == 2 else "robot_arm6"
    recipe = ("x1 ~ U([-1.932,-0.453] or [0.453,1.932]), x2 ~ U[0.534,3.142]; "
              "y1 = 2cos(x1)+1.3cos(x1+x2), y2 = 2sin(x1)+1.3sin(x1+x2), + N(0, noise_std^2)")
    if n_inputs == 6:
        recipe += "; x3 = x1+0.02 n3, x4 = x2+0.02 n4, x5 = n5, x6 = n6 (n ~ N(0,1))"
    return Dataset(
        X=np.column_stack(cols),
        y=y1 if output == 1 else y2,
        name=name,
        task="regression",
        feature_names=names,
        provenance=_prov(name, seed_rec,
                         {"output": int(output), "noise_std": float(noise_std),
                          "n_inputs": int(n_inputs)},
                         recipe, noise_variance=float(noise_std) ** 2),
        extra={"f": f1 if output == 1 else f2, "y1": y1, "y2": y2, "f1": f1, "f2": f2},
        description=f"robot arm kinematics, {n_inputs} inputs, output y{output} (R3)",
    )


def robot_arm6(n, seed, *, output=1, noise_std=0.05):
    """R3 six-input variant (two relevant inputs, two noisy copies, two noise inputs)."""
    return robot_arm(n, seed, output=output, noise_std=noise_std, n_inputs=6)


# ------------------------------------------------------------- Mackey-Glass

_MG_KERNEL = None


def _mg_kernel():
    """Compile (once, cached on disk) the RK4 loop of the delay equation."""
    global _MG_KERNEL
    if _MG_KERNEL is None:
        from numba import njit

        @njit(cache=True)
        def integrate(x, D, n_steps, h, a, b, p):  # pragma: no cover - compiled
            # x[0..D] holds the history on the grid t = -D h .. 0; fills the rest.
            half = 0.5 * h
            for i in range(D, D + n_steps):
                xi = x[i]
                d0 = x[i - D]
                d1 = x[i - D + 1]
                dm = 0.5 * (d0 + d1)
                g0 = a * d0 / (1.0 + d0 ** p)
                gm = a * dm / (1.0 + dm ** p)
                g1 = a * d1 / (1.0 + d1 ** p)
                k1 = g0 - b * xi
                k2 = gm - b * (xi + half * k1)
                k3 = gm - b * (xi + half * k2)
                k4 = g1 - b * (xi + h * k3)
                x[i + 1] = xi + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            return x

        _MG_KERNEL = integrate
    return _MG_KERNEL


def mackey_glass_series(length, seed, *, tau=17.0, a=0.2, b=0.1, power=10.0,
                        steps_per_unit=10, burn_in=1000.0, x0=1.2, history_jitter=0.2,
                        sample_step=1.0):
    """The Mackey-Glass series dx/dt = a x(t-tau) / (1 + x(t-tau)^power) - b x(t).

    Integrated by fourth-order Runge-Kutta with step ``1/steps_per_unit``
    (the delayed value at the half step is the mean of its two grid
    neighbours), from a history on [-tau, 0] equal to ``x0`` plus
    ``history_jitter * U(-1, 1)`` per grid point (the only use of the seed),
    then sampled every ``sample_step`` time units after ``burn_in`` units.
    Returns ``(t, s)`` of ``length`` samples.
    """
    rng, _ = make_seed_rng(seed)
    length = _check_n(length)
    D = tau * steps_per_unit
    if abs(D - round(D)) > 1e-9 or round(D) < 1:
        raise ValueError("tau * steps_per_unit must be a positive integer")
    D = int(round(D))
    every = sample_step * steps_per_unit
    if abs(every - round(every)) > 1e-9 or round(every) < 1:
        raise ValueError("sample_step * steps_per_unit must be a positive integer")
    every = int(round(every))
    first = int(round(burn_in * steps_per_unit))
    if first < 0:
        raise ValueError("burn_in must be >= 0")
    n_steps = first + (length - 1) * every
    x = np.empty(D + 1 + n_steps, dtype=np.float64)
    x[: D + 1] = x0 + history_jitter * rng.uniform(-1.0, 1.0, size=D + 1)
    x = _mg_kernel()(x, D, n_steps, 1.0 / steps_per_unit, float(a), float(b), float(power))
    s = x[D + first :: every][:length].copy()
    t = burn_in + sample_step * np.arange(length)
    return t, s


def mackey_glass(n, seed, *, n_lags=8, tau=17.0, burn_in=1000.0, steps_per_unit=10,
                 sample_step=1.0, noise_std=0.0, x0=1.2, history_jitter=0.2):
    """R4 substitute: one-step prediction of the Mackey-Glass series (tau = 17).

    Row i has inputs s[i], ..., s[i + n_lags - 1] and target s[i + n_lags]
    (``n + n_lags`` consecutive unit-step samples after the burn-in).  The
    rows are in time order, so a chronological split is the first rows for
    training and the following ones for testing.  ``noise_std > 0`` adds
    Gaussian observation noise to the series (drawn after the history);
    ``extra['f']`` is the noise-free target and ``extra['t']`` its time.
    """
    n = _check_n(n)
    if int(n_lags) < 1:
        raise ValueError(f"n_lags must be >= 1; got {n_lags}")
    n_lags = int(n_lags)
    rng, seed_rec = make_seed_rng(seed)
    t, s = mackey_glass_series(n + n_lags, rng, tau=tau, steps_per_unit=steps_per_unit,
                               burn_in=burn_in, x0=x0, history_jitter=history_jitter,
                               sample_step=sample_step)
    obs = s + noise_std * rng.standard_normal(s.shape) if noise_std > 0 else s
    win = np.lib.stride_tricks.sliding_window_view(obs, n_lags + 1)[:n]
    params = {"n_lags": n_lags, "tau": float(tau), "a": 0.2, "b": 0.1, "power": 10.0,
              "burn_in": float(burn_in), "steps_per_unit": int(steps_per_unit),
              "sample_step": float(sample_step), "noise_std": float(noise_std),
              "x0": float(x0), "history_jitter": float(history_jitter)}
    return Dataset(
        X=np.ascontiguousarray(win[:, :n_lags]),
        y=win[:, n_lags].copy(),
        name="mackey_glass",
        task="regression",
        feature_names=[f"s(t-{n_lags - j})" for j in range(n_lags)],
        provenance=_prov(
            "mackey_glass", seed_rec, params,
            "dx/dt = 0.2 x(t-tau)/(1+x(t-tau)^10) - 0.1 x(t); RK4, step 1/steps_per_unit; "
            "history x0 + history_jitter*U(-1,1) on [-tau,0] (seeded); sampled every "
            "sample_step after burn_in; inputs n_lags consecutive values, target the next",
            ordered=True,
        ),
        extra={"f": s[n_lags : n_lags + n].copy(), "t": t[n_lags : n_lags + n].copy()},
        description="Mackey-Glass (tau=17) one-step prediction from 8 lags (R4)",
    )


# ------------------------------------------------------ Gaussian class sets


def _balanced_labels(n, rng):
    """n//2 positives (rounded up), the rest negatives, in random order."""
    n_pos = (n + 1) // 2
    y = np.concatenate([np.ones(n_pos, dtype=np.int64), -np.ones(n - n_pos, dtype=np.int64)])
    return y[rng.permutation(n)]


def gauss1d(n, seed, *, outlier=False, mean=2.0, std=1.0):
    """C1: n/2 positives from N(-mean, std^2), n/2 negatives from N(+mean, std^2).

    Rows are in random order with exactly ``(n+1)//2`` positives.  With
    ``outlier=True`` one more negative at x = -mean is appended as the last
    row (``extra['outlier']`` marks it), giving n + 1 rows.
    """
    n = _check_n(n)
    rng, seed_rec = make_seed_rng(seed)
    y = _balanced_labels(n, rng)
    x = np.where(y > 0, -mean, mean) + std * rng.standard_normal(n)
    flag = np.zeros(n, dtype=np.int8)
    if outlier:
        x = np.append(x, -mean)
        y = np.append(y, -1)
        flag = np.append(flag, np.int8(1))
    return Dataset(
        X=x[:, None],
        y=y,
        name="gauss1d",
        task="classification",
        feature_names=["x"],
        provenance=_prov("gauss1d", seed_rec,
                         {"outlier": bool(outlier), "mean": float(mean), "std": float(std)},
                         "y=+1: x ~ N(-mean, std^2); y=-1: x ~ N(+mean, std^2); equal counts, "
                         "shuffled; outlier: extra negative at x=-mean as last row"),
        extra={"outlier": flag},
        description="1-D two Gaussians N(-2,1) vs N(2,1), optional outlier (C1)",
    )


def gauss1d_posterior(x, *, mean=2.0, std=1.0):
    """Bayes P(y=+1 | x) for :func:`gauss1d` without the outlier (equal priors)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    return 0.5 * (1.0 + np.tanh(-mean * x / std**2))  # sigmoid(-2 mean x / std^2)


_G2_MEAN_POS = np.array([-2.0, 0.0])
_G2_VAR_POS = np.array([1.0, 2.0])
_G2_MEAN_NEG = np.array([2.0, 0.0])
_G2_VAR_NEG = np.array([2.0, 1.0])


def gauss2d(n, seed):
    """C2: positives ~ N((-2,0), diag(1,2)), negatives ~ N((2,0), diag(2,1)).

    The diagonal entries are variances.  Equal priors: exactly
    ``(n+1)//2`` positives, rows in random order.  The optimal Bayes
    posterior is :func:`gauss2d_posterior`.
    """
    n = _check_n(n)
    rng, seed_rec = make_seed_rng(seed)
    y = _balanced_labels(n, rng)
    pos = (y > 0)[:, None]
    mean = np.where(pos, _G2_MEAN_POS, _G2_MEAN_NEG)
    sd = np.sqrt(np.where(pos, _G2_VAR_POS, _G2_VAR_NEG))
    X = mean + sd * rng.standard_normal((n, 2))
    return Dataset(
        X=X,
        y=y,
        name="gauss2d",
        task="classification",
        feature_names=["x1", "x2"],
        provenance=_prov("gauss2d", seed_rec, {},
                         "y=+1: N((-2,0), diag(1,2)); y=-1: N((2,0), diag(2,1)) "
                         "(variances); equal counts, shuffled"),
        description="2-D Gaussians N((-2,0),diag(1,2)) vs N((2,0),diag(2,1)) (C2)",
    )


def gauss2d_log_densities(X):
    """``(log p(x|+1), log p(x|-1))`` of the :func:`gauss2d` class densities."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    if X.shape[1] != 2:
        raise ValueError(f"X must have 2 columns; got shape {X.shape}")

    def logpdf(m, v):
        return (-0.5 * np.sum((X - m) ** 2 / v, axis=1)
                - math.log(2.0 * math.pi) - 0.5 * float(np.log(v).sum()))

    return logpdf(_G2_MEAN_POS, _G2_VAR_POS), logpdf(_G2_MEAN_NEG, _G2_VAR_NEG)


def gauss2d_posterior(X, *, prior_positive=0.5):
    """Optimal Bayes P(y=+1 | x) from the true :func:`gauss2d` densities."""
    lp, ln = gauss2d_log_densities(X)
    logit = lp - ln + math.log(prior_positive) - math.log1p(-prior_positive)
    return 0.5 * (1.0 + np.tanh(0.5 * logit))


def gauss2d_bayes_error(*, half_width=16.0, n_grid=1601):
    """Bayes error of :func:`gauss2d` by numerical integration.

    Integrates ``min(p(x|+1), p(x|-1)) / 2`` with the trapezoid rule on an
    ``n_grid x n_grid`` grid over ``[-half_width, half_width]^2`` (the mass
    outside is negligible).
    """
    from scipy.integrate import trapezoid

    g = np.linspace(-half_width, half_width, int(n_grid))
    total = np.empty(g.size)
    for i, a in enumerate(g):  # row by row keeps memory at O(n_grid)
        X = np.column_stack([np.full(g.size, a), g])
        lp, ln = gauss2d_log_densities(X)
        total[i] = trapezoid(0.5 * np.exp(np.minimum(lp, ln)), g)
    return float(trapezoid(total, g))


# ----------------------------------------------- Breiman's benchmark recipes


def twonorm(n, seed, *, d=20, a=None):
    """C3 twonorm (Breiman 1996): N(+a 1, I) for y=+1 and N(-a 1, I) for y=-1.

    ``a = 2 / sqrt(20)`` by default (for d = 20), labels equiprobable
    (drawn at random per case, as in Breiman's recipe).
    """
    n = _check_n(n)
    a = 2.0 / math.sqrt(20.0) if a is None else float(a)
    rng, seed_rec = make_seed_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int64)
    X = a * y[:, None].astype(np.float64) + rng.standard_normal((n, int(d)))
    return _breiman("twonorm", X, y, _prov(
        "twonorm", seed_rec, {"d": int(d), "a": a},
        "Breiman (1996): y=+1 ~ N(a*1, I), y=-1 ~ N(-a*1, I), a=2/sqrt(20), P(y=+1)=1/2"),
        "twonorm: 20-D Gaussians with means +-a(1,...,1) (C3)")


def _breiman(name, X, y, provenance, description):
    """A two-class data set of Breiman's (1996) recipes (inputs ``x1..xd``)."""
    return Dataset(X=X, y=y, name=name, task="classification",
                   feature_names=[f"x{j + 1}" for j in range(X.shape[1])],
                   provenance=provenance, description=description)


def ringnorm(n, seed, *, d=20, a=None):
    """C3 ringnorm (Breiman 1996): N(0, 4I) for y=+1 and N(a 1, I) for y=-1.

    ``a = 1 / sqrt(20)`` by default, labels equiprobable.
    """
    n = _check_n(n)
    a = 1.0 / math.sqrt(20.0) if a is None else float(a)
    rng, seed_rec = make_seed_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int64)
    Z = rng.standard_normal((n, int(d)))
    X = np.where(y[:, None] > 0, 2.0 * Z, a + Z)
    return _breiman("ringnorm", X, y, _prov(
        "ringnorm", seed_rec, {"d": int(d), "a": a},
        "Breiman (1996): y=+1 ~ N(0, 4I), y=-1 ~ N(a*1, I), a=1/sqrt(20), P(y=+1)=1/2"),
        "ringnorm: 20-D N(0,4I) vs N(a(1,...,1), I) (C3)")


def waveform_bases():
    """Breiman's three base waves on m = 1..21 as a (3, 21) array (h1, h2, h3).

    h1(m) = max(6 - |m - 11|, 0), h2(m) = h1(m - 4), h3(m) = h1(m + 4)
    (Breiman et al. 1984, CART section 2.6.2).
    """
    m = np.arange(1, 22, dtype=np.float64)
    h1 = np.maximum(6.0 - np.abs(m - 11.0), 0.0)
    h2 = np.maximum(6.0 - np.abs(m - 4.0 - 11.0), 0.0)
    h3 = np.maximum(6.0 - np.abs(m + 4.0 - 11.0), 0.0)
    return np.stack([h1, h2, h3])


def waveform(n, seed, *, noise_std=1.0):
    """C3 waveform (Breiman et al. 1984): 21 noisy convex mixtures of two of three waves.

    Class 0: u h1 + (1-u) h2, class 1: u h1 + (1-u) h3, class 2:
    u h2 + (1-u) h3, with u ~ U(0,1) per case, N(0,1) noise per component
    and equiprobable classes.  ``y`` is +1 for class 0 and -1 for classes 1
    and 2 (class 0 versus the rest); the 3-class label is ``extra['label3']``.
    """
    n = _check_n(n)
    rng, seed_rec = make_seed_rng(seed)
    H = waveform_bases()
    first = np.array([0, 0, 1])
    second = np.array([1, 2, 2])
    c = rng.integers(0, 3, size=n)
    u = rng.random(n)[:, None]
    X = u * H[first[c]] + (1.0 - u) * H[second[c]] + noise_std * rng.standard_normal((n, 21))
    return Dataset(
        X=X, y=np.where(c == 0, 1, -1).astype(np.int64), name="waveform",
        task="classification", feature_names=[f"x{j + 1}" for j in range(21)],
        provenance=_prov("waveform", seed_rec, {"noise_std": float(noise_std)},
                         "Breiman et al. (1984): class 0 = u h1+(1-u) h2, 1 = u h1+(1-u) h3, "
                         "2 = u h2+(1-u) h3, u~U(0,1), +N(0,1) per input; y=+1 iff class 0"),
        extra={"label3": c.astype(np.int64)},
        description="waveform: Breiman's 21-input three-wave data, class 0 vs rest (C3)",
    )


# ---------------------------------------------------------------- Friedman


def _sklearn_state(seed):
    rng, seed_rec = make_seed_rng(seed)
    return int(rng.integers(0, 2**32 - 1)), seed_rec


def _friedman(which, n, seed, noise, extra_params):
    import sklearn
    from sklearn import datasets as skd

    n = _check_n(n)
    if noise < 0:
        raise ValueError(f"noise must be >= 0; got {noise}")
    state, seed_rec = _sklearn_state(seed)
    maker = getattr(skd, f"make_friedman{which}")
    X, y = maker(n_samples=n, noise=float(noise), random_state=state, **extra_params)
    if which == 1:
        f = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
             + 10 * X[:, 3] + 5 * X[:, 4])
    elif which == 2:
        f = np.sqrt(X[:, 0] ** 2 + (X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) ** 2)
    else:
        f = np.arctan((X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) / X[:, 0])
    name = f"friedman{which}"
    return Dataset(
        X=X, y=y, name=name, task="regression",
        feature_names=[f"x{j + 1}" for j in range(X.shape[1])],
        provenance=_prov(name, seed_rec, {"noise": float(noise), **extra_params},
                         f"sklearn.datasets.make_friedman{which}(random_state=s) with s drawn "
                         "from numpy.random.default_rng(seed)",
                         sklearn_version=sklearn.__version__, sklearn_random_state=state,
                         noise_variance=float(noise) ** 2),
        extra={"f": f, "noise": y - f},
        description={1: "Friedman #1: 10 inputs (5 relevant), noise sd 1",
                     2: "Friedman #2: 4 inputs, impedance, noise sd 125",
                     3: "Friedman #3: 4 inputs, phase angle, noise sd 0.1"}[which],
    )


def friedman1(n, seed, *, noise=1.0, n_features=10):
    """Friedman #1 via :func:`sklearn.datasets.make_friedman1` (noise sd 1 by default)."""
    return _friedman(1, n, seed, noise, {"n_features": int(n_features)})


def friedman2(n, seed, *, noise=125.0):
    """Friedman #2 via :func:`sklearn.datasets.make_friedman2` (noise sd 125, SNR 3:1)."""
    return _friedman(2, n, seed, noise, {})


def friedman3(n, seed, *, noise=0.1):
    """Friedman #3 via :func:`sklearn.datasets.make_friedman3` (noise sd 0.1, SNR 3:1)."""
    return _friedman(3, n, seed, noise, {})
