"""Comparisons and automatic checks shared by the sections (repro/compare.py)."""

import numpy as np

from repro.compare import nll_notes, paired_tests, peak_memory_by_size


def test_peak_memory_table_names_its_scope():
    class FakeRun:
        def __init__(self, scope):
            self.scope = scope

        def entries(self, ds, m):
            return [{"task": {"peak_rss_mb": 100.0 + k, "peak_rss_scope": self.scope}}
                    for k in range(3)]

    for scope, words in (("task", "the task's own peak"),
                         ("worker process", "the worker process's lifetime peak")):
        mem, lines = peak_memory_by_size(FakeRun(scope), {10: "d10", 20: "d20"}, ["A"])
        assert mem == {"A": [101.0, 101.0]} and words in lines[0], lines[0]


class Stub:
    """A run with one data set ``d`` and the given metric per model and partition."""

    def __init__(self, values, n_sv=1):
        self.values, self.n_sv = values, n_sv

    def datasets(self):
        return ["d"]

    def models(self, ds):
        return list(self.values)

    def metric(self, ds, m, name):
        return np.asarray(self.values[m], dtype=float)

    def entries(self, ds, m):
        return [{"n_sv": self.n_sv, "task": {"n_train": 10}}]


def test_nll_note_needs_a_real_margin():
    """BTSVC's test NLL is called worse than GPC's only beyond NLL_NOTE_REL (1%)."""
    for b, g, said in ((1051.4, 1050.9, False), (1000.0, 995.0, False), (1100.0, 1000.0, True)):
        notes = []
        nll_notes(Stub({"BTSVC": [b], "GPC": [g]}), "C3", notes)
        assert any("NLL" in n for n in notes) == said, (b, g)
    notes = []
    nll_notes(Stub({"BTSVC": [1.0], "GPC": [1.0]}, n_sv=9), "C1", notes)
    assert notes == ["C1 d: BTSVC keeps 90% of the training cases as SVs, not the sparse "
                     "solution the trigonometric loss promises."]


def test_paired_tests_note_only_significant_excess():
    rng = np.random.default_rng(0)
    base = rng.normal(0.1, 0.01, 20)
    notes = []
    lines = paired_tests(Stub({"A": base + 0.02, "B": base, "C": base - 0.001}), "error_rate",
                         ["A"], notes, "C3")
    assert lines[0].startswith("Paired t-tests on the test error_rate")
    assert [ln.split("|")[2].strip() for ln in lines[4:6]] == ["A - B", "A - C"]
    assert len(notes) == 2 and notes[0].startswith("C3 d: A has a significantly higher test "
                                                   "error_rate than B (paired t = ")
