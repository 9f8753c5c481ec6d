"""Figure rules of the page (repro/figures.py): words, file names, ticks."""

import numpy as np
import pytest

from repro.figures import Figures, log_axes, model_words, pyplot


def test_model_labels_in_words():
    assert model_words("BSVR") == "BSVR (this project)"
    assert model_words("sklearn-GPR") == "GPR, scikit-learn"
    assert model_words("LIBSVM-SVR-CV") == "SVR, LIBSVM via scikit-learn, CV-tuned"
    assert model_words("SVR-CV") == "SVR (this project), CV-tuned"
    assert model_words("Bayes (true densities)") == "Bayes (true densities)"


def _labels(axis):
    return [t.get_text() for t in axis.get_ticklabels() if t.get_text()]


def test_log_axes_label_decades_or_plain_numbers():
    plt = pyplot()
    fig, ax = plt.subplots(1, 2)
    ax[0].loglog([1e-3, 1.0], [0.13, 2.7])
    log_axes(ax[0])
    ax[1].loglog([1e4, 5e4], [225.0, 495.0])
    log_axes(ax[1])
    fig.canvas.draw()
    assert all("10^{" in s or "10^" in s for s in _labels(ax[0].xaxis))  # three decades
    assert {"0.2", "0.5", "1", "2"} <= set(_labels(ax[0].yaxis))
    assert {"10,000", "20,000", "50,000"} <= set(_labels(ax[1].xaxis))
    assert {"300", "400"} <= set(_labels(ax[1].yaxis))
    assert ax[0].yaxis.get_minor_formatter()(0.3) == ""
    plt.close(fig)


def test_figures_are_named_once(tmp_path):
    plt = pyplot()
    figs = Figures(tmp_path)
    fig, _ = plt.subplots()
    assert figs.save(fig, "c3_twonorm_evidence", "alt") == [
        "![alt](figures/c3_twonorm_evidence.png)", ""]
    with pytest.raises(ValueError, match="written twice"):
        figs.save(plt.subplots()[0], "c3_twonorm_evidence", "alt")
    (tmp_path / "figures" / "old.png").write_bytes(np.zeros(3).tobytes())
    assert figs.remove_others() == ["old.png"]
    assert [p.name for p in (tmp_path / "figures").iterdir()] == ["c3_twonorm_evidence.png"]
