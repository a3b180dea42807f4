"""Reading and writing LETOR/SVMlight text, and safe model files.

SVMlight/LETOR text, one example per line (blank and comment-only lines are skipped)::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

* :func:`load_svmlight` returns ``(X, y, qid)``: X a ``scipy.sparse.csr_matrix`` (float64 or float32) with int64
  ``indices``/``indptr`` and sorted indices, y float64 labels, qid int64 (zeros when the file has no qid).
  The default engine is cyrank's own one-pass Cython reader (:mod:`cyrank._svmlight`, about 15x faster);
  ``engine="sklearn"`` uses scikit-learn's ``load_svmlight_file(..., query_id=True)``. Both give the same
  arrays, bit for bit; ours also names the line of the first malformed token.
* :func:`dump_svmlight` writes a file that :func:`load_svmlight` reads back exactly (shortest round-trip floats).

Model files (:func:`save_model` / :func:`load_model`) are ``.npz`` archives holding a JSON header and plain
numeric arrays: no pickle anywhere, so opening a model file never runs code. Only classes decorated with
:func:`register_model` can be saved and loaded.
"""
import bz2
import gzip
import importlib
import json
import locale
import numbers
import os
import re
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

from ._validation import check_option, check_param, check_ranking_data

__all__ = ["load_svmlight", "dump_svmlight", "save_model", "load_model", "register_model"]

_FLOAT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


# ------------------------------------------------------------------------------------------------ reading
def _check_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float64 or float32, got {dtype!r}") from None
    if dt not in _FLOAT_DTYPES:
        raise ValueError(f"dtype must be float64 or float32, got {dt}")
    return dt


def _check_zero_based(zero_based):
    if isinstance(zero_based, (bool, np.bool_)):
        return bool(zero_based)
    if isinstance(zero_based, str) and zero_based == "auto":
        return "auto"
    raise ValueError(f"zero_based must be True, False or 'auto'; got {zero_based!r}")


def _decompress(raw, name):
    """gzip/bz2 data (by file extension or magic bytes) -> bytes; plain text is returned as it is."""
    lower = name.lower()
    try:
        if lower.endswith(".gz") or raw[:2] == b"\x1f\x8b":
            return gzip.decompress(raw)
        if lower.endswith(".bz2") or raw[:3] == b"BZh":
            return bz2.decompress(raw)
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise ValueError(f"{name}: could not decompress ({exc})") from None
    return raw


def _read_bytes(source):
    """Return ``(bytes, name)`` from a path (str / PathLike) or a binary file object; decompress .gz/.bz2."""
    if hasattr(source, "read"):
        raw = source.read()
        name = str(getattr(source, "name", "<file>"))
        if isinstance(raw, str):
            raise TypeError(f"{name}: the file object is in text mode; open it with 'rb'")
    elif isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        with open(name, "rb") as fh:
            raw = fh.read()
    else:
        raise TypeError(f"expected a path or a binary file object, got {type(source).__name__}")
    return bytes(_decompress(raw, name)), name


def _decimal_point():
    """The C locale's decimal point as one byte, or None if it is not a single byte."""
    dp = locale.localeconv().get("decimal_point", ".").encode("utf-8", "replace")
    return dp if len(dp) == 1 else None


def _cython_reader():
    try:
        from . import _svmlight
    except ImportError:
        return None
    return _svmlight


def _make_csr(values, indices, indptr, n_features):
    """CSR matrix sharing the given arrays (int64 indices/indptr kept; scipy would otherwise narrow them)."""
    shape = (indptr.shape[0] - 1, int(n_features))
    X = sp.csr_matrix(sp.csr_array((values, indices, indptr), shape=shape), copy=False)
    X.has_sorted_indices = True
    return X


def _load_cyrank(raw, name, n_features, dtype, zero_based, reader, dp):
    try:
        values, indices, indptr, labels, qid, lo, hi = reader.parse_svmlight(
            raw, dtype == np.float32, zero_based is not False, dp
        )
    except ValueError as exc:
        raise ValueError(f"{name}, {exc}") from None
    # sklearn's rule: one-based unless zero_based=True, or "auto" and some index is 0 (or no feature at all)
    if zero_based is False or (zero_based == "auto" and indices.size and lo > 0):
        indices -= 1
        hi -= 1
    n_found = hi + 1 if indices.size else 1
    if n_features is None:
        n_features = n_found
    elif n_features < n_found:
        raise ValueError(f"n_features was set to {n_features}, but {name} contains {n_found} features")
    X = _make_csr(values, indices, indptr, n_features)
    X.has_canonical_format = True  # indices strictly increase along each row
    if qid is None:
        qid = np.zeros(labels.shape[0], dtype=np.int64)
    return X, labels, qid


def _load_sklearn(raw, name, n_features, dtype, zero_based):
    import io as _stdio

    from sklearn.datasets import load_svmlight_file

    try:
        X, y, qid = load_svmlight_file(
            _stdio.BytesIO(raw), n_features=n_features, dtype=dtype, zero_based=zero_based, query_id=True
        )
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"{name}: {exc}") from None
    n = X.shape[0]
    if qid.shape[0] == 0:
        qid = np.zeros(n, dtype=np.int64)
    elif qid.shape[0] != n:
        raise ValueError(f"{name}: {qid.shape[0]} of {n} lines have a qid; give every line a qid or none")
    X = sp.csr_matrix(X, copy=False)
    X = _make_csr(X.data, X.indices.astype(np.int64, copy=False), X.indptr.astype(np.int64, copy=False),
                  X.shape[1])
    return X, np.asarray(y, dtype=np.float64), np.asarray(qid, dtype=np.int64)


def _load_bytes(raw, name, *, n_features=None, dtype=np.float64, zero_based="auto", engine="auto"):
    """:func:`load_svmlight` on text already in memory (``name`` prefixes error messages)."""
    dtype = _check_dtype(dtype)
    zero_based = _check_zero_based(zero_based)
    engine = check_option("engine", engine, ("auto", "cyrank", "sklearn"))
    if n_features is not None:
        n_features = check_param("n_features", n_features, low=1, integer=True)
    if engine != "sklearn":
        reader, dp = _cython_reader(), _decimal_point()
        if reader is not None and dp is not None:
            return _load_cyrank(raw, name, n_features, dtype, zero_based, reader, dp)
        if engine == "cyrank":
            why = ("the compiled extension cyrank._svmlight is missing (build it: python setup.py build_ext "
                   "--inplace)" if reader is None else "the C locale's decimal point is not a single byte")
            raise RuntimeError(f"engine='cyrank' is unavailable: {why}; use engine='sklearn'")
    return _load_sklearn(raw, name, n_features, dtype, zero_based)


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto", engine="auto"):
    """Read a LETOR/SVMlight file into ``(X, y, qid)``.

    Format (one example per line; ``#`` starts a comment; blank lines are skipped)::

        <label> [qid:<int>] <index>:<value> ... [# comment]

    Parameters
    ----------
    path : str, PathLike or binary file object. ``.gz`` and ``.bz2`` files (by extension or content) are
        decompressed first.
    n_features : int, optional. Number of columns of X; default: the largest index in the file (+1 when
        zero-based). Pass it when reading a test file whose last features are all zero.
    dtype : float64 (default) or float32, the dtype of X (values are parsed as float64, then rounded once).
    zero_based : True, False or "auto". With "auto" (scikit-learn's rule) indices are one-based and shifted
        down by 1, unless some index is 0 (or the file has no feature at all).
    engine : "auto" (cyrank's Cython reader when built, else scikit-learn), "cyrank" or "sklearn".

    Returns
    -------
    X : scipy.sparse.csr_matrix (n, n_features), int64 indices/indptr, sorted indices, explicit zeros kept.
    y : float64 (n,) labels.
    qid : int64 (n,) query ids; all zeros when the file has no qid. A file where only some lines have a qid
        is refused.

    Raises ``ValueError`` naming the line for malformed input: a label or value that is not a number, a
    feature without ``:``, a non-integer, negative (or 0 with ``zero_based=False``), repeated or decreasing
    index, a bad ``qid:`` token. The result equals ``sklearn.datasets.load_svmlight_file(path,
    query_id=True, ...)`` for every file both accept (ours refuses ``_`` inside numbers and any ``qid...:``
    token other than ``qid:<int>`` right after the label).
    """
    raw, name = _read_bytes(path)
    return _load_bytes(raw, name, n_features=n_features, dtype=dtype, zero_based=zero_based, engine=engine)


# ------------------------------------------------------------------------------------------------ writing
def _py_repr(v):
    r = repr(float(v))
    return r[:-2] if r.endswith(".0") else r


def _format_rows_py(values, indices, indptr, labels, qid, has_qid, offset, start, stop):
    """Pure-Python twin of ``_svmlight.format_rows`` (used when the extension is not built)."""
    lines = []
    for i in range(start, stop):
        parts = [_py_repr(labels[i])]
        if has_qid:
            parts.append(f"qid:{int(qid[i])}")
        parts.extend(f"{int(indices[k]) + offset}:{_py_repr(values[k])}" for k in range(indptr[i], indptr[i + 1]))
        lines.append(" ".join(parts) + "\n")
    return "".join(lines).encode("ascii")


def _open_for_writing(path):
    name = os.fspath(path)
    lower = name.lower() if isinstance(name, str) else os.fsdecode(name).lower()
    if lower.endswith(".gz"):
        return gzip.open(name, "wb")
    if lower.endswith(".bz2"):
        return bz2.open(name, "wb")
    return open(name, "wb")


def dump_svmlight(X, y, path, qid=None, zero_based=False):
    """Write ``X, y[, qid]`` as LETOR/SVMlight text: ``label [qid:q] index:value ...`` per row.

    Only the stored entries of sparse X are written (explicit zeros included); dense X writes its non-zeros.
    Numbers use the shortest decimal that reads back as exactly the same float64 (float32 X is written as
    its exact float64 value), so :func:`load_svmlight` returns the same arrays. Indices are one-based
    unless ``zero_based=True``; read a zero-based file back with ``zero_based=True``, and pass
    ``n_features`` when the last columns are all zero. ``path``: str/PathLike (``.gz``/``.bz2`` compress) or a
    binary file object. ``qid=None`` writes no qid.
    """
    has_qid = qid is not None
    X, y, qid = check_ranking_data(X, y, qid)
    zero_based = _check_zero_based(zero_based)
    if zero_based == "auto":
        raise ValueError("zero_based must be True or False when writing")
    if sp.issparse(X):
        Xc = sp.csr_matrix(X, copy=True)
        Xc.sum_duplicates()
    else:
        Xc = sp.csr_matrix(X)
    values = np.ascontiguousarray(Xc.data, dtype=np.float64)
    indices = np.ascontiguousarray(Xc.indices, dtype=np.int64)
    indptr = np.ascontiguousarray(Xc.indptr, dtype=np.int64)
    reader = _cython_reader()
    fmt = reader.format_rows if reader is not None else _format_rows_py
    offset = 0 if zero_based else 1
    own = not hasattr(path, "write")
    fh = _open_for_writing(path) if own else path
    try:
        n, chunk = X.shape[0], 4096
        for start in range(0, n, chunk):
            fh.write(fmt(values, indices, indptr, y, qid, has_qid, offset, start, min(n, start + chunk)))
    finally:
        if own:
            fh.close()


# ------------------------------------------------------------------------------------------- model files
FORMAT_NAME = "cyrank-model"
FORMAT_VERSION = 1
_HEADER_KEY = "cyrank_header"
_TAG = "__cyrank__"
_MAX_DEPTH = 32
_ARRAY_KINDS = "biufcU"   # numeric, bool and unicode arrays: all stored by np.save without pickle

_MODEL_REGISTRY = {}


def register_model(cls):
    """Class decorator: allow :func:`save_model`/:func:`load_model` for this estimator class.

    The class is looked up by its ``__name__`` when a model file is loaded; nothing else is ever
    instantiated from a file. It needs ``get_params()`` and a constructor accepting those parameters.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_model decorates a class, got {cls!r}")
    if not callable(getattr(cls, "get_params", None)):
        raise TypeError(f"{cls.__name__} has no get_params(); only scikit-learn style estimators can be registered")
    old = _MODEL_REGISTRY.get(cls.__name__)
    if old is not None and old is not cls and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"a different model class named {cls.__name__!r} is already registered "
                         f"(from {old.__module__}); class names must be unique")
    _MODEL_REGISTRY[cls.__name__] = cls
    return cls


def registered_models():
    """Names of the classes registered with :func:`register_model`."""
    return sorted(_MODEL_REGISTRY)


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
                m = cls[0](tuple(parts), shape=tuple(shape))
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
    """Save a fitted (or unfitted) registered estimator to one ``.npz`` file, without pickle.

    The archive holds ``cyrank_header`` (JSON as uint8: format "cyrank-model", format version, cyrank version,
    class name, ``get_params()``, the names and kinds of the fitted attributes) and one array per stored array.
    Saved: ``get_params(deep=False)`` and every public attribute ending in ``_``. Allowed values: numeric/bool/str
    numpy arrays (object arrays only if all str), numpy scalars, CSR/CSC matrices, int, float, bool, str,
    None, and lists/tuples/dicts (str keys) of these. Anything else raises ``TypeError``, as does an
    unregistered class. ``path`` is used exactly as given (no ``.npz`` is appended).
    """
    cls = type(est)
    if _MODEL_REGISTRY.get(cls.__name__) is not cls:
        raise TypeError(f"{cls.__name__} is not registered with cyrank.io.register_model, so it could not be "
                        "loaded back; decorate the class with @register_model")
    enc = _Encoder()
    params = enc.encode(dict(est.get_params(deep=False)), "parameters")
    names = sorted(k for k in vars(est) if k.endswith("_") and not k.startswith("_"))
    attributes, kinds = [], {}
    for name in names:
        node = enc.encode(getattr(est, name), f"attribute {name}")
        attributes.append([name, node])
        kinds[name] = node[_TAG] if isinstance(node, dict) else ("list" if isinstance(node, list) else "json")
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "cyrank_version": _cyrank_version(),
        "class": cls.__name__,
        "module": cls.__module__,
        "params": params,
        "attributes": attributes,
        "attribute_kinds": kinds,
        "arrays": sorted(enc.arrays),
    }
    blob = np.frombuffer(json.dumps(header, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    with open(os.fspath(path), "wb") as fh:
        np.savez(fh, **{_HEADER_KEY: blob}, **enc.arrays)


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


def _registered_class(header):
    """The registered class named in the header. If it is missing and the header names a module inside the
    cyrank package, that module is imported first (it registers its estimators); nothing else is imported."""
    name, module = header.get("class"), header.get("module")
    if not isinstance(name, str):
        return None
    if name not in _MODEL_REGISTRY and isinstance(module, str) and re.fullmatch(r"cyrank(\.[A-Za-z_]\w*)+", module):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    return _MODEL_REGISTRY.get(name)


def load_model(path):
    """Load an estimator saved by :func:`save_model` (``np.load(allow_pickle=False)``, registered classes only).

    Raises ``ValueError`` for a file that is not an ``.npz`` archive, is truncated or corrupt, is a foreign
    ``.npz``, has an unknown format version, names a class that is not registered, or holds object arrays.
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
        header = _read_header(npz, path)
        dec = _Decoder(npz, path)
        name = header.get("class")
        cls = _registered_class(header)
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
    for attr, value in values:
        setattr(est, attr, value)
    return est
