"""Model files: ``.npz`` archives holding a JSON header and plain numeric arrays, no pickle (:func:`save_model`,
:func:`load_model`; :class:`ModelRecord` is what a file holds), and the classes they may hold: cyrank's own
estimators (the table cyrank._registry.TABLE) and third-party ones (:func:`register_model`).
The attributes a class's file may hold are checked by its schema (``_schema.py``)."""
import json
import numbers
import os
import sys
import zipfile
import zlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .. import _registry
from .._validation import check_param, check_sparse_structure
from ._atomic import atomic_write
from ._schema import _check_against_schema


def _setting(name):
    """``name`` as currently set on the cyrank.io package: the public limits (cyrank.io.MODEL_SIZE_MIN etc.) may be
    changed there."""
    return getattr(sys.modules[__package__], name)


# ------------------------------------------------------------------------------------------- model files
FORMAT_NAME = "cyrank-model"
FORMAT_VERSION = 1
_HEADER_KEY = "cyrank_header"
_TAG = "__cyrank__"
_MAX_DEPTH = 32
_ARRAY_KINDS = "biufcU"   # numeric, bool and unicode arrays: all stored by np.save without pickle

# Third-party classes allowed in model files. cyrank's own estimators are not listed here: they are those of the one
# table of estimators (cyrank._registry.TABLE, imported on first use), so a class cannot be forgotten or listed twice.
_THIRD_PARTY_MODELS = {}


def register_model(cls):
    """Class decorator: allow :func:`save_model`/:func:`load_model` for a third-party estimator class.

    The class is looked up by its ``__name__`` when a model file is loaded; nothing else is ever
    instantiated from a file. It needs ``get_params()`` and a constructor accepting those parameters.
    cyrank's own estimators need no decorator (they are allowed by the table of estimators); on one of them the
    decorator only checks that the class is the one the table names.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_model decorates a class, got {cls!r}")
    if not callable(getattr(cls, "get_params", None)):
        raise TypeError(f"{cls.__name__} has no get_params(); only scikit-learn style estimators can be registered")
    own = _registry.ESTIMATORS.get(cls.__name__)
    if own is not None:
        if (cls.__module__, cls.__qualname__) != (own.module, own.class_name):
            raise ValueError(f"a different model class named {cls.__name__!r} is already registered (cyrank's "
                             f"own, from {own.module}); class names must be unique")
        return cls
    old = _THIRD_PARTY_MODELS.get(cls.__name__)
    if old is not None and old is not cls and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"a different model class named {cls.__name__!r} is already registered "
                         f"(from {old.__module__}); class names must be unique")
    _THIRD_PARTY_MODELS[cls.__name__] = cls
    return cls


def registered_models():
    """Names of the classes a model file may hold: cyrank's own estimators (even before their first use) and
    those registered with :func:`register_model`."""
    return sorted(set(_THIRD_PARTY_MODELS) | set(_registry.ESTIMATORS))


def _model_class(name):
    """The class named ``name`` in a model file: one of cyrank's own estimators (the table names its module,
    imported on first use) or a registered third-party class; None otherwise. No other module is ever imported."""
    if not isinstance(name, str):
        return None
    if name in _registry.ESTIMATORS:
        return _registry.model_class(name)
    return _THIRD_PARTY_MODELS.get(name)


@dataclass(frozen=True)
class ModelRecord:
    """What a model file holds: the estimator's class name, its parameters (the others keep their defaults when
    loaded) and its fitted attributes (name -> value, names ending in ``_``).

    :func:`save_model` writes an estimator through its record (:meth:`of`); a record built directly writes the same
    file without creating the estimator, so without importing scikit-learn: the command line saves the result of
    the functional layer this way (``ModelRecord(name, params, result.fitted_attributes())``).
    """

    class_name: str
    params: dict
    attributes: dict = field(default_factory=dict)

    @classmethod
    def of(cls, est):
        """The record of estimator ``est``: ``get_params(deep=False)`` and every public attribute ending in ``_``."""
        attributes = {k: getattr(est, k) for k in vars(est) if k.endswith("_") and not k.startswith("_")}
        return cls(type(est).__name__, dict(est.get_params(deep=False)), attributes)


class _Encoder:
    """Turn parameters/attributes into JSON plus a dict of arrays (leaves: see :func:`save_model`)."""

    def __init__(self):
        self.arrays = {}

    def _store(self, arr):
        key = f"a{len(self.arrays)}"
        self.arrays[key] = arr
        return key

    def _array(self, arr, what):
        if arr.dtype.kind == "O":
            if all(isinstance(v, str) for v in arr.flat):  # e.g. feature_names_in_
                a = arr.astype(str) if arr.size else np.zeros(arr.shape, dtype="<U1")
                return {_TAG: "object_str_array", "key": self._store(a), "dtype": a.dtype.str, "shape": list(a.shape)}
            raise TypeError(f"{what} is an object array; only numeric, bool and str arrays can be saved")
        if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields is not None:
            raise TypeError(f"{what} has dtype {arr.dtype}; only numeric, bool and str arrays can be saved")
        return {_TAG: "ndarray", "key": self._store(arr), "dtype": arr.dtype.str, "shape": list(arr.shape)}

    def encode(self, v, what, depth=0):
        if depth > _MAX_DEPTH:
            raise TypeError(f"{what} is nested too deeply (or contains itself)")
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.generic):
            if v.dtype.kind not in "biufc":
                raise TypeError(f"{what} is a numpy scalar of dtype {v.dtype}; cannot be saved")
            a = np.asarray(v)
            return {_TAG: "npscalar", "key": self._store(a), "dtype": a.dtype.str, "shape": []}
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, float):
            return v if np.isfinite(v) else {_TAG: "float", "value": repr(v)}
        if isinstance(v, np.ndarray):
            return self._array(v, what)
        if sp.issparse(v):
            if v.format not in ("csr", "csc"):
                raise TypeError(f"{what} is a sparse {v.format} matrix; convert it to CSR to save it")
            parts = {p: self._array(np.asarray(getattr(v, p)), f"{what}.{p}") for p in ("data", "indices", "indptr")}
            return {_TAG: "sparse", "format": v.format, "matrix": bool(sp.isspmatrix(v)),
                    "shape": [int(s) for s in v.shape], **parts}
        if isinstance(v, (list, tuple)):
            items = [self.encode(x, f"{what}[{i}]", depth + 1) for i, x in enumerate(v)]
            return items if isinstance(v, list) else {_TAG: "tuple", "items": items}
        if isinstance(v, dict):
            for k in v:
                if not isinstance(k, str):
                    raise TypeError(f"{what} has a non-string key {k!r}; cannot be saved")
            return {_TAG: "dict", "items": [[k, self.encode(x, f"{what}[{k!r}]", depth + 1)] for k, x in v.items()]}
        raise TypeError(
            f"{what} has type {type(v).__name__}, which a cyrank model file cannot hold (allowed: numeric/bool/str "
            "numpy arrays and scalars, CSR/CSC matrices, int, float, bool, str, None, and lists/tuples/dicts of these)"
        )


class _Decoder:
    def __init__(self, npz, path):
        self.npz = npz
        self.path = path
        self.used = set()

    def bad(self, msg):
        return ValueError(f"{self.path}: corrupt cyrank model file ({msg})")

    def _array(self, node):
        key = node.get("key")
        if not isinstance(key, str) or key not in self.npz.files:
            raise self.bad(f"missing array {key!r}")
        try:
            arr = self.npz[key]
        except ValueError as exc:
            if "pickle" in str(exc).lower():
                raise ValueError(f"{self.path}: holds a pickled object array; refused (cyrank model files never "
                                 "need pickle, so this file was not written by save_model)") from None
            raise self.bad(f"array {key!r} unreadable: {exc}") from None
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise self.bad(f"array {key!r} unreadable: {exc}") from None
        if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.str != node.get("dtype") or list(arr.shape) != node.get("shape"):
            raise self.bad(f"array {key!r} has dtype {arr.dtype} and shape {arr.shape}, the header says "
                           f"{node.get('dtype')} and {node.get('shape')}")
        self.used.add(key)
        return arr

    def decode(self, node, depth=0):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if depth > _MAX_DEPTH + 1:
            raise self.bad("values nested too deeply")
        if isinstance(node, list):
            return [self.decode(x, depth + 1) for x in node]
        if not isinstance(node, dict):
            raise self.bad(f"unexpected JSON value {node!r}")
        tag = node.get(_TAG)
        if tag == "ndarray":
            return self._array(node)
        if tag == "object_str_array":
            return self._array(node).astype(object)
        if tag == "npscalar":
            return self._array(node)[()]
        if tag == "float":
            if node.get("value") not in ("nan", "inf", "-inf"):
                raise self.bad(f"bad float {node.get('value')!r}")
            return float(node["value"])
        if tag == "tuple":
            return tuple(self.decode(x, depth + 1) for x in self._items(node))
        if tag == "dict":
            out = {}
            for pair in self._items(node):
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise self.bad("bad dict entry")
                out[pair[0]] = self.decode(pair[1], depth + 1)
            return out
        if tag == "sparse":
            fmt, shape = node.get("format"), node.get("shape")
            if fmt not in ("csr", "csc") or not (isinstance(shape, list) and len(shape) == 2):
                raise self.bad("bad sparse matrix entry")
            parts = [self._array(node.get(p) or {}) for p in ("data", "indices", "indptr")]
            cls = {"csr": (sp.csr_array, sp.csr_matrix), "csc": (sp.csc_array, sp.csc_matrix)}[fmt]
            try:
                m = check_sparse_structure(cls[0](tuple(parts), shape=tuple(shape)), "a stored sparse matrix")
            except (ValueError, TypeError) as exc:
                raise self.bad(f"bad sparse matrix: {exc}") from None
            return cls[1](m, copy=False) if node.get("matrix") else m
        raise self.bad(f"unknown entry {node!r}"[:200])

    def _items(self, node):
        items = node.get("items")
        if not isinstance(items, list):
            raise self.bad("bad container entry")
        return items


def _cyrank_version():
    import cyrank

    return str(getattr(cyrank, "__version__", "unknown"))


def save_model(est, path):
    """Save a fitted (or unfitted) estimator to one ``.npz`` file, without pickle.

    ``est`` is one of cyrank's estimators or a class registered with :func:`register_model`, or a
    :class:`ModelRecord` (the same file, written without the estimator). The archive holds ``cyrank_header``
    (JSON as uint8: format "cyrank-model", format version, cyrank version, class name, ``get_params()``, the names
    and kinds of the fitted attributes) and one array per stored array. Saved: ``get_params(deep=False)`` and
    every public attribute ending in ``_``. Allowed values: numeric/bool/str numpy arrays (object arrays only if
    all str), numpy scalars, CSR/CSC matrices, int, float, bool, str, None, and lists/tuples/dicts (str keys) of
    these. Anything else raises ``TypeError``, as does a class :func:`load_model` could not find. ``path`` is
    used exactly as given (no ``.npz`` is appended) and written atomically (:func:`atomic_write`): an existing
    model file is replaced only once the new one is complete.
    """
    if isinstance(est, ModelRecord):  # the class is not imported (the command line saves without scikit-learn)
        record = est
        own = _registry.ESTIMATORS.get(record.class_name) if isinstance(record.class_name, str) else None
        module = own.module if own is not None else getattr(_model_class(record.class_name), "__module__", None)
        if module is None:
            raise TypeError(f"{record.class_name!r} is neither one of cyrank's estimators nor registered with "
                            f"cyrank.io.register_model (known: {', '.join(registered_models())})")
    else:
        cls = type(est)
        if _model_class(cls.__name__) is not cls:
            raise TypeError(f"{cls.__name__} is not registered with cyrank.io.register_model, so it could not be "
                            "loaded back; decorate the class with @register_model")
        record, module = ModelRecord.of(est), cls.__module__
    bad = [k for k in record.attributes if not (isinstance(k, str) and k.isidentifier() and k.endswith("_")
                                                 and not k.startswith("_"))]
    if bad:
        raise ValueError(f"fitted attribute names must end in '_' (and not start with it): {bad}")
    enc = _Encoder()
    params = enc.encode(dict(record.params), "parameters")
    encoded, kinds = [], {}
    for name in sorted(record.attributes):
        node = enc.encode(record.attributes[name], f"attribute {name}")
        encoded.append([name, node])
        kinds[name] = node[_TAG] if isinstance(node, dict) else ("list" if isinstance(node, list) else "json")
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "cyrank_version": _cyrank_version(),
        "class": record.class_name,
        "module": module,
        "params": params,
        "attributes": encoded,
        "attribute_kinds": kinds,
        "arrays": sorted(enc.arrays),
    }
    blob = np.frombuffer(json.dumps(header, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    atomic_write(path, lambda fh: np.savez(fh, **{_HEADER_KEY: blob}, **enc.arrays))


def _read_header(npz, path):
    if _HEADER_KEY not in npz.files:
        raise ValueError(f"{path}: not a cyrank model file (an .npz archive without a '{_HEADER_KEY}' entry)")
    try:
        blob = npz[_HEADER_KEY]
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f"{path}: corrupt cyrank model file (unreadable header: {exc})") from None
    if blob.dtype != np.uint8 or blob.ndim != 1:
        raise ValueError(f"{path}: corrupt cyrank model file (header has dtype {blob.dtype})")
    try:
        header = json.loads(blob.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: corrupt cyrank model file (header is not JSON: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ValueError(f"{path}: not a cyrank model file (format {header.get('format') if isinstance(header, dict) else None!r})")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"{path}: corrupt cyrank model file (format version {version!r})")
    if version > FORMAT_VERSION:
        raise ValueError(f"{path}: model file format version {version} was written by a newer cyrank "
                         f"({header.get('cyrank_version')}); this cyrank reads version {FORMAT_VERSION}")
    return header


MODEL_SIZE_RATIO = 16
MODEL_SIZE_MIN = 256 << 20


def _size_limit(path, max_bytes):
    """The most uncompressed bytes a model file may declare: ``max_bytes``, or by default 16 times the file's
    size and at least 256 MB (save_model stores arrays uncompressed, so a genuine file declares about its own
    size; a few megabytes declaring gigabytes is a decompression bomb)."""
    if max_bytes is not None:
        return check_param("max_bytes", max_bytes, low=1, integer=True)
    return max(_setting("MODEL_SIZE_RATIO") * os.path.getsize(path), _setting("MODEL_SIZE_MIN"))


def load_model(path, *, max_bytes=None):
    """Load an estimator saved by :func:`save_model` (``np.load(allow_pickle=False)``, registered classes only).

    Raises ``ValueError`` for a file that is not an ``.npz`` archive, is truncated or corrupt, is a foreign
    ``.npz``, has an unknown format version, names a class that is not registered (classes are found in the
    registry only; no module named in a file is imported), holds object arrays, declares more than
    ``max_bytes`` of arrays (default: 16 times the file's size, at least 256 MB; checked before any array is
    read), or does not fit the class: invalid parameters, unknown or missing attributes, wrong dtypes, shapes
    inconsistent with ``n_features_in_`` and with each other, non-finite values, malformed sparse matrices
    (the class's ``_model_schema``).
    """
    path = os.fspath(path)
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"PK\x03\x04":
        raise ValueError(f"{path}: not a cyrank model file (not an .npz archive)")
    try:
        npz = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f"{path}: corrupt cyrank model file ({exc})") from None
    with npz:
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise ValueError(f"{path}: not a cyrank model file (not an .npz archive)")
        declared = sum(info.file_size for info in npz.zip.infolist())
        limit = _size_limit(path, max_bytes)
        if declared > limit:
            raise ValueError(f"{path}: the archive declares {declared / 2**20:.1f} MB of arrays, more than the limit "
                             f"of {limit / 2**20:.0f} MB for a {os.path.getsize(path) / 2**20:.1f} MB file; refused "
                             "before reading (pass load_model(..., max_bytes=...) for a genuine larger model)")
        header = _read_header(npz, path)
        dec = _Decoder(npz, path)
        name = header.get("class")
        cls = _model_class(name)
        if cls is None:
            known = ", ".join(registered_models()) or "none"
            raise ValueError(f"{path}: model class {name!r} is not registered with cyrank.io.register_model "
                             f"(registered: {known}); import the module that defines it first")
        params = dec.decode(header.get("params"))
        attributes = header.get("attributes")
        if not isinstance(params, dict) or not isinstance(attributes, list):
            raise dec.bad("parameters or attributes missing")
        values = []
        for pair in attributes:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise dec.bad("bad attribute entry")
            attr = pair[0]
            if not (attr.isidentifier() and attr.endswith("_") and not attr.startswith("_")):
                raise dec.bad(f"attribute name {attr!r} is not a public fitted attribute")
            values.append((attr, dec.decode(pair[1])))
        extra = set(npz.files) - dec.used - {_HEADER_KEY}
        if extra:
            raise dec.bad(f"unexpected entries {sorted(extra)[:5]}")
    try:
        est = cls(**params)
    except TypeError as exc:
        raise ValueError(f"{path}: the saved parameters do not fit {cls.__name__} ({exc}); "
                         f"saved by cyrank {header.get('cyrank_version')}") from None
    _check_against_schema(est, dict(values), path)
    for attr, value in values:
        setattr(est, attr, value)
    return est
