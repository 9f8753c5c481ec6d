"""HDF5 storage of fitted estimators: :func:`save_model` / :func:`load_model`.

Every estimator of the package (BayesianSVR, BayesianSVC including its
binary ``estimators_`` (one-versus-rest or one-versus-one), SVR, SVC, TSVC, GPR, GPC, RVR, RVC) is
stored without pickling: the constructor parameters and every attribute the
fit set (public fitted attributes ending in ``_`` such as ``dual_coef_``,
sklearn's ``n_features_in_``/``classes_``, and the private state a model
needs to predict, e.g. ``SVR._kappa``) are written as HDF5 datasets, groups
and attributes, recursively:

* ``dict`` -> group (``kind='dict'``). Its scalar entries (None, bool, int,
  float, complex, strings up to 512 characters, NumPy numeric scalars) are kept
  in one JSON attribute ``scalars``: a list of ``[key, kind, value]`` in dict
  order, where ``[key, null, child]`` marks an entry stored as the child
  ``child`` (named by the key, or ``__key<i>`` when the key is an int or not a
  valid HDF5 name). Format 1 wrote every entry as a child (the key of a renamed
  child in its ``key``/``key_type`` attributes); both are read.
* ``list`` / ``tuple`` -> group (``kind='list'``/``'tuple'``) with children
  ``0, 1, ...``;
* a nested estimator -> group (``kind='estimator'``, ``class`` = its class
  name) laid out like the root;
* ``Standardizer`` -> group (``kind='standardizer'``) with ``mean``, ``scale``;
* :class:`~bsvm_scale.tables.TableEncoder` (the coding of a model fitted on a
  table, ``encoder_``) -> a text dataset (``kind='table_encoder'``) holding its
  JSON (:meth:`~bsvm_scale.tables.TableEncoder.to_json`);
* other leaves -> datasets with ``kind`` in ``none, bool, int, float, complex, str,
  npscalar, ndarray`` so that the exact Python/NumPy type comes back.

File layout::

    /                attrs: library='bsvm_scale', library_version, format_version=2,
                            estimator=<class name>, params=<JSON of get_params()>
    /params          the parameters, recursively (exact types)
    /attributes      every fitted attribute, recursively

Writes are atomic (temporary file in the target directory, fsync,
:func:`os.replace`). Loading validates the file and reports any problem (not
HDF5, truncated, another format version, not a model) as a
:class:`ModelFileError` (a ``ValueError``) naming the file. A loaded model
predicts bitwise what the saved one did: arrays are stored losslessly with
their dtype and memory layout (C or Fortran order).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._util.atomic import atomic_path
from ._util.hdf5 import decode_text
from .tables import TableEncoder

__all__ = ["save_model", "load_model", "model_feature_names", "ModelFileError", "FORMAT_VERSION", "ESTIMATORS",
           "encode", "decode"]

FORMAT_VERSION = 2
#: format versions :func:`load_model` reads (1: no ``scalars`` attributes)
READ_VERSIONS = (1, 2)
LIBRARY = "bsvm_scale"


class ModelFileError(ValueError):
    """A model file that cannot be read (names the file and the problem)."""


def _estimator_classes():
    """The storable classes by name, through the package's public names (storage
    sits below the estimators and imports none of them)."""
    import bsvm_scale

    return {name: getattr(bsvm_scale, name) for name in ESTIMATORS}


#: names of the estimator classes that can be stored
ESTIMATORS = ("BayesianSVR", "BayesianSVC", "SVR", "SVC", "TSVC", "GPR", "GPC", "RVR", "RVC")


def _json_default(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return repr(obj)


# ----------------------------------------------------------------- encoding
def _child_name(key, index):
    """HDF5-safe child name for a dict key (the original key is kept as attr)."""
    if isinstance(key, str) and key and "/" not in key and key not in (".", ".."):
        return key
    return f"__key{index}"


def encode(group, name, value, where="model"):
    """Write ``value`` under ``group[name]`` (recursively, no pickling)."""
    if _encode_container(group, name, value, where):
        return
    if isinstance(value, np.ndarray):
        _encode_array(group, name, value, where)
        return
    if isinstance(value, TableEncoder):
        import h5py

        ds = group.create_dataset(name, data=value.to_json(), dtype=h5py.string_dtype())
        ds.attrs["kind"] = "table_encoder"
        return
    data, kind, dtype = _scalar_leaf(value, f"{where}.{name}")
    ds = group.create_dataset(name, data=data, dtype=dtype)
    ds.attrs["kind"] = kind


def _encode_container(group, name, value, where):
    """Write an estimator, Standardizer, dict, list or tuple as a group;
    False for any other value."""
    from sklearn.base import BaseEstimator

    from ._util.base import Standardizer

    if isinstance(value, BaseEstimator):
        kind = "estimator"
    elif isinstance(value, Standardizer):
        kind = "standardizer"
    elif isinstance(value, dict):
        kind = "dict"
    elif isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
    else:
        return False
    g = group.create_group(name, track_order=True)
    g.attrs["kind"] = kind
    if kind == "estimator":
        _write_estimator(g, value, f"{where}.{name}")
    elif kind == "standardizer":
        encode(g, "mean", value.mean, where)
        encode(g, "scale", value.scale, where)
    elif kind == "dict":
        _encode_items(g, value, f"{where}.{name}")
    else:
        g.attrs["length"] = np.int64(len(value))
        for i, v in enumerate(value):
            encode(g, str(i), v, f"{where}.{name}[{i}]")
    return True


def _scalar_leaf(value, where):
    """``(data, kind, dtype)`` of a scalar leaf dataset (dtype None: NumPy's)."""
    import h5py

    if value is None:
        return np.int8(0), "none", None
    if isinstance(value, (bool, np.bool_)):
        return np.bool_(value), ("bool" if isinstance(value, bool) else "npscalar"), None
    if isinstance(value, int):
        if not -2**63 <= value < 2**63:
            raise TypeError(f"{where}: integer {value} does not fit in 64 bits")
        return np.int64(value), "int", None
    if isinstance(value, float):
        return np.float64(value), "float", None
    if isinstance(value, complex):
        return np.complex128(value), "complex", None
    if isinstance(value, str):
        return value, "str", h5py.string_dtype()
    if isinstance(value, np.generic):
        if value.dtype.kind in "OUSV":
            raise TypeError(f"{where}: unsupported numpy scalar dtype {value.dtype}")
        return value, "npscalar", None
    raise TypeError(f"{where}: cannot store an object of type "
                    f"{type(value).__module__}.{type(value).__name__}")


def _encode_array(group, name, value, where):
    """Write an ndarray losslessly: dtype, shape and memory order (a
    Fortran-ordered array is stored transposed and flagged)."""
    import h5py

    text_objects = value.dtype.kind == "O" and all(isinstance(v, str) for v in value.ravel())
    if value.dtype.kind in "OV" and not text_objects:
        raise TypeError(f"{where}.{name}: arrays of dtype {value.dtype} cannot be stored")
    if value.dtype.kind in "US" or text_objects:
        flat = np.array([str(v) for v in value.ravel()], dtype=object)
        ds = group.create_dataset(name, data=flat, dtype=h5py.string_dtype())
        ds.attrs["kind"] = "strarray"
        ds.attrs["shape"] = np.array(value.shape, dtype=np.int64)
        ds.attrs["dtype"] = value.dtype.str
        return
    fortran = bool(value.ndim > 1 and value.flags.f_contiguous and not value.flags.c_contiguous)
    data = np.ascontiguousarray(value.T if fortran else value)
    if data.size == 0:
        ds = group.create_dataset(name, shape=data.shape, dtype=data.dtype)
    else:
        ds = group.create_dataset(name, data=data)
    ds.attrs["kind"] = "ndarray"
    ds.attrs["fortran"] = fortran


#: longest string kept inline in a dict's ``scalars`` attribute; longer ones
#: (pipeline text, tracebacks) become datasets
_INLINE_STR_MAX = 512
#: the ``scalars`` attribute stays below HDF5's 64 KiB compact-attribute limit
_INLINE_JSON_MAX = 48 * 1024


def _inline_scalar(value):
    """``[kind, json_value]`` of a scalar leaf that can live in the ``scalars``
    attribute, else ``None`` (arrays, containers, long strings, odd dtypes)."""
    if value is None:
        return ["none", None]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value] if -2**63 <= value < 2**63 else None
    if isinstance(value, float):
        return ["float", value]
    if isinstance(value, complex):
        return ["complex", [value.real, value.imag]]
    if isinstance(value, str):
        return ["str", value] if len(value) <= _INLINE_STR_MAX else None
    if (isinstance(value, np.generic) and value.dtype.kind in "biufc"
            and value.dtype.itemsize <= (16 if value.dtype.kind == "c" else 8)):
        v = value.item()
        return ["npscalar", [value.dtype.str, [v.real, v.imag] if isinstance(v, complex) else v]]
    return None


def _encode_items(g, items, where):
    """Write the entries of a dict into group ``g``.

    Scalar leaves go into one JSON attribute ``scalars`` (a list of ``[key,
    kind, value]`` and, for entries stored as children, ``[key, None,
    child_name]``, in dict order): one attribute read per dict instead of a
    dataset and two attribute reads per scalar. JSON writes floats with
    ``repr`` (exact) and NaN/Infinity as Python's json module does. A dict
    whose list would exceed ``_INLINE_JSON_MAX`` is written as children only.
    """
    plan = []
    for i, (k, v) in enumerate(items.items()):
        if not isinstance(k, (str, int)) or isinstance(k, bool):
            raise TypeError(f"{where}: dict key {k!r} is not a str or int")
        plan.append((k, v, _inline_scalar(v), _child_name(k, i)))
    text = json.dumps([[k, *leaf] if leaf else [k, None, cn] for k, _, leaf, cn in plan])
    inline = len(text) <= _INLINE_JSON_MAX and any(leaf for _, _, leaf, _ in plan)
    for k, v, leaf, cn in plan:
        if inline and leaf:
            continue
        encode(g, cn, v, f"{where}[{k!r}]")
        if not inline and cn != k:  # children only: a renamed child keeps its key
            g[cn].attrs["key"] = k if isinstance(k, str) else np.int64(k)
            g[cn].attrs["key_type"] = "str" if isinstance(k, str) else "int"
    if inline:
        g.attrs["scalars"] = text


_INLINE_KINDS = ("none", "bool", "int", "float", "complex", "str", "npscalar")


def _decode_inline(kind, v, where):
    if kind not in _INLINE_KINDS:
        raise ValueError(f"{where}: unknown inline scalar kind {kind!r}")
    try:
        if kind == "complex":
            return complex(v[0], v[1])
        if kind == "npscalar":
            dtype, x = np.dtype(v[0]), v[1]
            return dtype.type(complex(x[0], x[1]) if isinstance(x, list) else x)
    except (TypeError, IndexError, OverflowError) as exc:
        raise ValueError(f"{where}: malformed {kind} value {v!r}: {exc}") from None
    return v  # none, bool, int, float, str: JSON gives back the Python type


def _inline_entries(node, where):
    """The parsed ``scalars`` attribute of a dict group (ValueError if malformed)."""
    entries = json.loads(_attr_str(node, "scalars"))  # JSONDecodeError is a ValueError
    if not isinstance(entries, list) or not all(isinstance(e, list) and len(e) == 3
                                                and isinstance(e[0], (str, int)) for e in entries):
        raise ValueError(f"{where}: malformed 'scalars' attribute")
    return entries


def _decode_items(node, where):
    """Inverse of :func:`_encode_items` (also reads the children-only layout)."""
    if "scalars" in node.attrs:
        out = {}
        for key, kind, v in _inline_entries(node, where):
            out[key] = (decode(node[v], f"{where}[{key!r}]") if kind is None
                        else _decode_inline(kind, v, f"{where}[{key!r}]"))
        return out
    out = {}
    for cn in node:
        child = node[cn]
        if "key" in child.attrs:
            key = _attr_str(child, "key")
            key = int(key) if _attr_str(child, "key_type") == "int" else str(key)
        else:
            key = cn
        out[key] = decode(child, f"{where}[{key!r}]")
    return out


def _attr_str(obj, key):
    return decode_text(obj.attrs.get(key))


def decode(node, where="model"):
    """Inverse of :func:`encode` for one node."""
    import h5py

    kind = _attr_str(node, "kind")
    if isinstance(node, h5py.Group):
        if kind == "estimator":
            return _read_estimator(node, where)
        if kind == "standardizer":
            from ._util.base import Standardizer

            return Standardizer(decode(node["mean"]), decode(node["scale"]))
        if kind == "dict":
            return _decode_items(node, where)
        if kind in ("list", "tuple"):
            n = int(node.attrs["length"])
            items = [decode(node[str(i)], f"{where}[{i}]") for i in range(n)]
            return items if kind == "list" else tuple(items)
        raise ValueError(f"{where}: unknown group kind {kind!r}")
    if kind == "none":
        return None
    if kind == "bool":
        return bool(node[()])
    if kind == "int":
        return int(node[()])
    if kind == "float":
        return float(node[()])
    if kind == "complex":
        return complex(node[()])
    if kind == "str":
        v = node[()]
        return v.decode("utf-8") if isinstance(v, bytes) else str(v)
    if kind == "npscalar":
        return node[()]
    if kind == "table_encoder":
        v = node[()]
        return TableEncoder.from_json(v.decode("utf-8") if isinstance(v, bytes) else str(v))
    if kind == "strarray":
        shape = tuple(int(s) for s in node.attrs["shape"])
        vals = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in node[()]]
        return np.array(vals, dtype=_attr_str(node, "dtype")).reshape(shape)
    if kind == "ndarray":
        data = node[()] if node.size else np.empty(node.shape, dtype=node.dtype)
        data = np.asarray(data)
        if bool(node.attrs.get("fortran", False)):
            data = np.asfortranarray(data.T)
        return data
    raise ValueError(f"{where}: unknown dataset kind {kind!r}")


def _write_estimator(g, model, where):
    from . import __version__

    params = model.get_params(deep=False)
    g.attrs["class"] = type(model).__name__
    g.attrs["module"] = type(model).__module__
    g.attrs["params_json"] = json.dumps(params, default=_json_default, sort_keys=True)
    pg = g.create_group("params", track_order=True)
    pg.attrs["kind"] = "dict"
    _encode_items(pg, params, f"{where}.params")
    ag = g.create_group("attributes", track_order=True)
    ag.attrs["kind"] = "dict"
    fitted = {k: v for k, v in vars(model).items() if k not in params}
    _encode_items(ag, fitted, where)
    g.attrs["library_version"] = __version__


#: parameters added since models were first saved, with the value that reproduces
#: how a file lacking them was fitted (not the new default)
LEGACY_PARAMS = {"BayesianSVR": {"ard_init": "start"},
                 "BayesianSVC": {"ard_init": "start", "multi_class": "ovr"},
                 "SVC": {"class_weight": None}, "TSVC": {"class_weight": None}}


def _read_estimator(g, where):
    name = _attr_str(g, "class")
    classes = _estimator_classes()
    if name not in classes:
        raise ValueError(f"{where}: unknown estimator class {name!r}; known: {', '.join(classes)}")
    if "params" not in g or "attributes" not in g:
        raise ValueError(f"{where}: estimator group lacks 'params' or 'attributes'")
    params = {**LEGACY_PARAMS.get(name, {}), **decode(g["params"], f"{where}.params")}
    model = classes[name](**params)
    for k, v in decode(g["attributes"], f"{where}.attributes").items():
        setattr(model, k, v)
    return model


# ----------------------------------------------------------------- public API
def save_model(model, path, *, feature_names=None):
    """Write the (fitted) ``model`` to ``path`` atomically; returns the path.

    ``feature_names`` (one per input column, optional) are stored with the
    model so that scoring (:mod:`bsvm_scale.pipeline.run.scoring`) can match input
    columns by name; :func:`model_feature_names` reads them back.

    Raises ``TypeError`` for an estimator class this module does not know or
    an attribute that cannot be stored, ``ValueError`` for feature names that
    do not match the model's input count.
    """
    import h5py

    from . import __version__

    name = type(model).__name__
    if name not in _estimator_classes() or type(model) is not _estimator_classes()[name]:
        raise TypeError(f"save_model: {type(model).__module__}.{name} is not a bsvm_scale "
                        f"estimator ({', '.join(ESTIMATORS)})")
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write model to {str(path)!r}: it is a directory")
    names = _checked_names(model, feature_names)
    with atomic_path(path, what="model file") as tmp:
        with h5py.File(tmp, "w", track_order=True) as f:
            f.attrs["library"] = LIBRARY
            f.attrs["library_version"] = __version__
            f.attrs["format_version"] = np.int64(FORMAT_VERSION)
            f.attrs["estimator"] = name
            f.attrs["kind"] = "estimator"
            _write_estimator(f, model, name)
            f.attrs["params"] = f.attrs["params_json"]
            if names is not None:
                f.attrs["feature_names"] = json.dumps(names)
    return path


def _checked_names(model, feature_names):
    if feature_names is None:
        return None
    names = [str(v) for v in feature_names]
    d = getattr(model, "n_features_in_", None)
    if d is not None and len(names) != int(d):
        raise ValueError(f"feature_names has {len(names)} entries; the model takes {d} inputs.")
    if len(set(names)) != len(names):
        raise ValueError(f"feature_names must be distinct; got {names}.")
    return names


def model_feature_names(path):
    """The feature names stored with the model file at ``path``, or None."""
    import h5py

    with h5py.File(path, "r") as f:
        text = f.attrs.get("feature_names")
    if text is None:
        return None
    return list(json.loads(text.decode() if isinstance(text, bytes) else text))


def load_model(path):
    """Read a model written by :func:`save_model`.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ModelFileError (ValueError)
        Not an HDF5 file, truncated/corrupted, another format version, or an
        HDF5 file that is not a bsvm_scale model; the message names the file.
    """
    import h5py

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"model file {str(p)!r} does not exist")
    if p.is_dir():
        raise ModelFileError(f"{str(p)!r} is a directory, not a model file")
    if not h5py.is_hdf5(p):
        raise ModelFileError(f"model file {str(p)!r} is not an HDF5 file (no HDF5 signature)")
    try:
        try:
            f = h5py.File(p, "r", locking=False)
        except (TypeError, ValueError):
            f = h5py.File(p, "r")
    except OSError as exc:
        raise ModelFileError(f"model file {str(p)!r} cannot be opened as HDF5 "
                             f"(truncated or corrupted?): {exc}") from None
    try:
        with f:
            if _attr_str(f, "library") != LIBRARY or "estimator" not in f.attrs:
                raise ModelFileError(f"{str(p)!r} is an HDF5 file but not a bsvm_scale model "
                                     "(missing library='bsvm_scale' / estimator attributes)")
            version = f.attrs.get("format_version")
            try:
                version = int(version)
            except (TypeError, ValueError):
                version = None
            if version not in READ_VERSIONS:
                raise ModelFileError(f"model file {str(p)!r} has format_version "
                                     f"{f.attrs.get('format_version')!r}; this bsvm_scale reads "
                                     f"format_version {' and '.join(map(str, READ_VERSIONS))}")
            try:
                return _read_estimator(f, str(p))
            except ModelFileError:
                raise
            except (KeyError, ValueError, TypeError, OSError, RuntimeError, AttributeError) as exc:
                raise ModelFileError(f"model file {str(p)!r} is damaged or incomplete: "
                                     f"{exc}") from None
    except ModelFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError, AttributeError) as exc:
        # damage in the file's own metadata (attributes, object headers)
        raise ModelFileError(f"model file {str(p)!r} cannot be read (truncated or "
                             f"corrupted?): {exc}") from None
