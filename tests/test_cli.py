"""Tests of the bsvm-scale command line (datasets list / generate / info)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bsvm_scale.cli import CLIError, build_parser, main, parse_param
from bsvm_scale.datasets import generate, list_datasets, read_dataset


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("bsvm-scale: error:") or "error:" in lines[-1]
    assert "Traceback" not in err


def test_parse_param():
    assert parse_param("beta=0.1") == ("beta", 0.1)
    assert parse_param("output=2") == ("output", 2)
    assert parse_param("noise_free=true") == ("noise_free", True)
    assert parse_param("outlier=False") == ("outlier", False)
    assert parse_param("a=none") == ("a", None)
    assert parse_param("name=abc") == ("name", "abc")
    with pytest.raises(CLIError):
        parse_param("novalue")
    with pytest.raises(CLIError):
        parse_param("1bad=3")


def test_list(capsys):
    code, out, err = _run(capsys, "datasets", "list")
    assert code == 0 and not err
    for e in list_datasets():
        assert e.name in out
    code, out, _ = _run(capsys, "datasets", "list", "--kind", "real", "--json")
    rows = json.loads(out)
    assert code == 0 and {r["name"] for r in rows} == {e.name for e in list_datasets("real")}
    assert all(r["kind"] == "real" for r in rows)


def test_generate_and_info(tmp_path, capsys):
    out_file = tmp_path / "sub" / "sinc.h5"  # parent created on demand
    code, out, err = _run(capsys, "datasets", "generate", "sinc_silf", "--n", "500", "--seed",
                          "3", "--out", str(out_file), "--param", "beta=0.1")
    assert code == 0, err
    assert "n=500" in out
    ds = read_dataset(out_file)
    ref = generate("sinc_silf", 500, 3, beta=0.1)
    assert np.array_equal(ds.X, ref.X) and np.array_equal(ds.y, ref.y)
    assert ds.provenance["params"]["beta"] == 0.1

    code, out, err = _run(capsys, "datasets", "info", str(out_file))
    assert code == 0 and "sinc_silf" in out and "n=500, d=1" in out
    code, out, err = _run(capsys, "datasets", "info", str(out_file), "--json")
    info = json.loads(out)
    assert info["n_samples"] == 500 and info["format_version"] == 1


def test_generate_with_splits_and_real(tmp_path, capsys):
    f = tmp_path / "tw.h5"
    code, _, err = _run(capsys, "datasets", "generate", "twonorm", "--n", "600", "--out", str(f),
                        "--splits", "5", "--n-train", "400")
    assert code == 0, err
    ds = read_dataset(f)
    assert ds.n_splits == 5 and all(len(tr) == 400 and len(te) == 200 for tr, te in ds.splits)
    f = tmp_path / "titanic.h5"
    code, _, err = _run(capsys, "datasets", "generate", "titanic", "--out", str(f))
    assert code == 0, err
    assert read_dataset(f).X.shape == (2201, 3)


def test_generate_overwrite_policy(tmp_path, capsys):
    f = tmp_path / "g.h5"
    assert _run(capsys, "datasets", "generate", "gauss2d", "--n", "10", "--out", str(f))[0] == 0
    assert _run(capsys, "datasets", "generate", "gauss2d", "--n", "20", "--out", str(f))[0] == 0
    assert read_dataset(f).n_samples == 20
    code, _, err = _run(capsys, "datasets", "generate", "gauss2d", "--n", "30", "--out", str(f),
                        "--no-overwrite")
    assert code == 2 and "exists" in err
    assert read_dataset(f).n_samples == 20


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["datasets", "generate", "no_such_set", "--out", "{tmp}/x.h5"], "unknown data set"),
        (["datasets", "generate", "sinc_silf", "--n", "0", "--out", "{tmp}/x.h5"], "positive"),
        (["datasets", "generate", "sinc_silf", "--n", "-5", "--out", "{tmp}/x.h5"], "positive"),
        (["datasets", "generate", "sinc_silf", "--n", "ten", "--out", "{tmp}/x.h5"], "positive"),
        (["datasets", "generate", "sinc_silf", "--param", "bogus=1", "--out", "{tmp}/x.h5"],
         "unknown parameter"),
        (["datasets", "generate", "sinc_silf", "--param", "beta=7", "--out", "{tmp}/x.h5"],
         "beta"),
        (["datasets", "generate", "sinc_silf", "--param", "beta", "--out", "{tmp}/x.h5"],
         "key=value"),
        (["datasets", "generate", "sinc_silf", "--out", "{tmp}/afile/x.h5"], "afile"),
        (["datasets", "generate", "sinc_silf", "--out", "{tmp}"], "directory"),
        (["datasets", "generate", "twonorm", "--splits", "3", "--out", "{tmp}/x.h5"], "n-train"),
        (["datasets", "generate", "twonorm", "--n", "50", "--splits", "3", "--n-train", "80",
          "--out", "{tmp}/x.h5"], "cannot split"),
        (["datasets", "info", "{tmp}/missing.h5"], "does not exist"),
        (["datasets", "info", "{tmp}/afile"], "not an HDF5 file"),
        (["datasets", "generate"], "NAME"),
        (["datasets"], "SUBCOMMAND"),
        (["frobnicate"], "invalid choice"),
        (["run", "{tmp}/missing.toml"], "does not exist"),
        (["run", "{tmp}/missing.toml", "--workers", "0"], "positive integer"),
        (["run", "{tmp}/missing.toml", "--scheduler", "tcp://h:8786", "--workers", "2"],
         "--workers: not allowed with argument --scheduler"),
        (["report", "{tmp}/missing.h5", "--out", "{tmp}/rep"], "does not exist"),
        (["report", "{tmp}/afile", "--out", "{tmp}/rep"], "not a readable"),
        (["results", "{tmp}/missing", "--out", "{tmp}/rep"], "does not exist"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv, needle):
    (tmp_path / "afile").write_text("plain text, not HDF5\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].count("error:") == 1
    assert not (tmp_path / "x.h5").exists()


def test_truncated_file_info(tmp_path, capsys):
    f = tmp_path / "t.h5"
    assert _run(capsys, "datasets", "generate", "waveform", "--n", "300", "--out", str(f))[0] == 0
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    code, _, err = _run(capsys, "datasets", "info", str(f))
    assert code == 2 and str(f) in err
    _one_line_error(err)


def test_help_and_version(capsys):
    assert main(["--help"]) == 0
    assert "datasets" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert main(["datasets", "generate", "--help"]) == 0
    assert "--param" in capsys.readouterr().out


def test_parser_is_extensible():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "datasets" in sub.choices


def test_console_entry_point_subprocess(tmp_path):
    f = tmp_path / "g.h5"
    cmd = [sys.executable, "-m", "bsvm_scale.cli"]
    ok = subprocess.run(cmd + ["datasets", "generate", "gauss1d", "--seed", "4", "--param",
                               "outlier=true", "--out", str(f)],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert read_dataset(f).n_samples == 101
    bad = subprocess.run(cmd + ["datasets", "generate", "nope", "--out", str(f)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    bad = subprocess.run(cmd + ["datasets", "info", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
