"""Figures of the page: file names, words for series, readable axes.

Every figure is written to ``<out>/figures/<name>.png`` and shown on the page
as ``figures/<name>.png``; ``<name>`` is the run's short name (``repro_``
left out) and what the figure shows, e.g. ``r1_large_beta_sweep`` or
``c3_twonorm_evidence``. Legends and titles name models and quantities in
words (:func:`model_words`), and logarithmic axes label their decades only.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["Figures", "pyplot", "model_words", "log_axes", "DPI"]

#: resolution of the PNG files
DPI = 90


def pyplot():
    """matplotlib.pyplot with the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def model_words(label):
    """A model label of the pipelines in words, for legends and titles.

    ``sklearn-GPR`` -> ``GPR, scikit-learn``; ``LIBSVM-SVR-CV`` -> ``SVR, LIBSVM
    via scikit-learn, CV-tuned``; ``SVR-CV`` -> ``SVR (this project), CV-tuned``;
    ``Bayes ...`` unchanged; any other label is one of this project's models.
    """
    label = str(label)
    if label.startswith("Bayes"):
        return label
    tuned = label.endswith("-CV")
    base = label[:-3] if tuned else label
    if base.startswith("sklearn-"):
        words = f"{base[len('sklearn-'):]}, scikit-learn"
    elif base.startswith("LIBSVM-"):
        words = f"{base[len('LIBSVM-'):]}, LIBSVM via scikit-learn"
    else:
        words = f"{base} (this project)"
    return words + (", CV-tuned" if tuned else "")


def _plain(v, _pos=None):
    """A tick label without exponents: ``20,000``, ``0.5``."""
    return f"{v:,.0f}" if v >= 10 else f"{v:g}"


def log_axes(ax, x=True, y=True):
    """Readable tick labels on the logarithmic axes of ``ax`` (call after plotting).

    An axis showing two powers of ten or more labels them only (minor tick
    labels such as ``3 x 10^-1`` would overlap); a shorter one labels 1, 2 and
    5 times a power of ten (spanning less than 0.6 decades also 1.5, 3, 4, 6
    and 8), in plain numbers.
    """
    import numpy as np
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axes = ([ax.xaxis] if x else []) + ([ax.yaxis] if y else [])
    for axis in axes:
        if axis.get_scale() != "log":
            continue
        lo, hi = sorted(axis.get_view_interval())
        span = np.log10(hi / lo) if lo > 0 else np.inf
        powers = np.floor(np.log10(hi)) - np.ceil(np.log10(lo)) + 1 if lo > 0 else np.inf
        if powers >= 2:
            axis.set_major_locator(LogLocator(base=10.0, numticks=8))
        else:
            subs = (1.0, 2.0, 5.0) if span >= 0.6 else (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
            axis.set_major_locator(LogLocator(base=10.0, subs=subs, numticks=12))
            axis.set_major_formatter(FuncFormatter(_plain))
        axis.set_minor_formatter(NullFormatter())


class Figures:
    """The figures written for one page: ``<out>/figures/<name>.png``.

    Parameters
    ----------
    out : path
        The page's folder.
    """

    def __init__(self, out):
        self.dir = Path(out) / "figures"
        self.written = []

    def save(self, fig, name, alt):
        """Write ``fig`` as ``<name>.png`` (closing it); returns the page's lines.

        The figure is laid out by its maker (``tight_layout``); ``alt`` is the
        image's text on the page.

        Raises
        ------
        ValueError
            When a figure of that name was already written for this page.
        """
        if name in self.written:
            raise ValueError(f"figure {name!r} written twice for one page; give the second "
                             "another name")
        self.dir.mkdir(parents=True, exist_ok=True)
        fig.savefig(self.dir / f"{name}.png", dpi=DPI)
        pyplot().close(fig)
        self.written.append(name)
        return [f"![{alt}](figures/{name}.png)", ""]

    def remove_others(self):
        """Delete the PNG files of ``figures/`` this page did not write (figures of
        runs or benchmarks no longer on it); returns their names."""
        stale = sorted(p for p in self.dir.glob("*.png") if p.stem not in self.written) \
            if self.dir.is_dir() else []
        for p in stale:
            p.unlink()
        return [p.name for p in stale]
