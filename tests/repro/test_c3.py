"""The C3 section reads the evidence grids of the run (repro/c3.py)."""

from repro import write_results
from bsvm_scale.pipeline.outputs.report import grid_optima
from repro.runs import Run


def test_c3_section_reads_the_grid_tasks(tiny_c3, tmp_path, monkeypatch):
    """The statement and figure of each data set's grid come from the run's
    grid tasks: nothing is fitted while the page is written."""
    import bsvm_scale.models.btsvc as btsvc

    def no_fit(*args, **kwargs):
        raise AssertionError("the page fitted a model")

    monkeypatch.setattr(btsvc.BayesianSVC, "fit", no_fit)
    out = tmp_path / "docs"
    page = write_results([tiny_c3], out).read_text()
    g = Run(tiny_c3).grid("twonorm", "BTSVC")
    (jb, ib), (je, ie) = grid_optima(g)
    a, b, err = g["log10_kappa0"], g["log10_kappa"], g["error_rate"]
    want = (f"Evidence against test error on twonorm, partition 0 (60 training cases), kappa_b = "
            f"{g['kappa_b']:.3g} fixed: the grid's evidence optimum (kappa0 = {10 ** a[ib]:.3g}, "
            f"kappa = {10 ** b[jb]:.3g}) has test error {err[jb, ib]:.4f}; the grid's lowest test "
            f"error is {err.min():.4f} (kappa0 = {10 ** a[ie]:.3g}, kappa = {10 ** b[je]:.3g}).")
    assert want in page
    assert ("![C3: evidence and test-error contours, twonorm]"
            "(figures/c3_tiny_twonorm_evidence.png)") in page
    assert (out / "figures" / "c3_tiny_titanic_evidence.png").stat().st_size > 1000
    csv = (out / "results" / "c3_tiny_evidence_grid.csv").read_text().splitlines()
    assert csv[0] == ("dataset,model,partition,log10_kappa0,log10_kappa,kappa_b,"
                      "neg_log_evidence,error_rate,n_sv")
    assert len(csv) == 1 + 2 * 9
    assert "## C3. Benchmark partitions" in page and "Paired t-tests on the test error_rate" in page
