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
import io
import json
import locale
import numbers
import os
import re
import tempfile
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

from ._validation import check_option, check_param, check_ranking_data, check_sparse_structure

__all__ = ["load_svmlight", "dump_svmlight", "load_svmlight_multilabel", "dump_svmlight_multilabel", "save_model",
           "save_fitted", "load_model", "register_model"]

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


# Bounds on what a data file may expand to or imply (both can be raised by the caller):
# a compressed file may expand to DECOMPRESS_RATIO times its size, and to DECOMPRESS_MIN bytes whatever its size
# (LETOR text compresses 3-10 times; a few megabytes expanding to gigabytes is a decompression bomb);
# a feature index may imply at most MAX_FEATURES columns (a dense float64 vector of 2**28 entries, such as a
# linear model's coef_, is 2 GiB, and a solver keeps several).
DECOMPRESS_RATIO = 64
DECOMPRESS_MIN = 1 << 30
MAX_FEATURES = 1 << 28
_CHUNK = 1 << 24


def _decompress_stream(raw, make, limit, name):
    """Every member of a gzip/bz2 stream, expanded chunk by chunk; ValueError past ``limit`` bytes."""
    out, total, size = [], 0, len(raw)
    while raw:
        d = make()
        data = raw
        while True:
            piece = d.decompress(data, _CHUNK)
            total += len(piece)
            if total > limit:
                raise ValueError(f"{name}: expands to more than {limit / 2**20:.0f} MB (a {size / 2**20:.1f} MB "
                                 "compressed file); refused as a possible decompression bomb. Pass "
                                 "max_bytes=... to load_svmlight for a genuine larger file")
            out.append(piece)
            if d.eof:
                break
            data = getattr(d, "unconsumed_tail", b"")
            if not data and getattr(d, "needs_input", True):
                raise ValueError(f"{name}: could not decompress (the compressed stream is truncated)")
        raw = d.unused_data
    return b"".join(out)


def _decompress(raw, name, max_bytes=None):
    """gzip/bz2 data (by file extension or magic bytes) -> bytes, at most ``max_bytes`` of them (default:
    DECOMPRESS_RATIO times the compressed size, at least DECOMPRESS_MIN); plain text is returned as it is."""
    lower = name.lower()
    if lower.endswith(".gz") or raw[:2] == b"\x1f\x8b":
        make = lambda: zlib.decompressobj(wbits=31)  # noqa: E731  (one gzip member)
    elif lower.endswith(".bz2") or raw[:3] == b"BZh":
        make = bz2.BZ2Decompressor
    else:
        return raw
    limit = max(DECOMPRESS_RATIO * len(raw), DECOMPRESS_MIN) if max_bytes is None else max_bytes
    try:
        return _decompress_stream(bytes(raw), make, limit, name)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{name}: could not decompress ({exc})") from None


def _read_bytes(source, max_bytes=None):
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
    return bytes(_decompress(raw, name, max_bytes)), name


def _data_line_number(raw, row):
    """The 1-based line number of data row ``row`` of the text (blank and comment-only lines skipped, as the
    reader does). Slow (a Python pass over the lines): for error messages only."""
    count, pos, lineno = -1, 0, 0
    while pos <= len(raw):
        end = raw.find(b"\n", pos)
        end = len(raw) if end < 0 else end
        lineno += 1
        if raw[pos:end].split(b"#", 1)[0].strip():
            count += 1
            if count == row:
                return lineno
        pos = end + 1
    return lineno


def _check_feature_count(X, raw, name, max_features):
    """ValueError naming the index and its line when X's column count exceeds ``max_features``."""
    if X.shape[1] <= max_features:
        return
    k = int(np.argmax(X.indices >= max_features))
    row = int(np.searchsorted(X.indptr, k, side="right")) - 1
    index = int(X.indices[k])
    raise ValueError(f"{name}, line {_data_line_number(raw, row)}: feature index {index} implies {X.shape[1]} "
                     f"features, more than max_features={max_features} (one dense float64 vector of them would take "
                     f"{8 * X.shape[1] / 2**30:.3g} GiB); pass max_features=... to load_svmlight if this is intended")


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


def _load_bytes(raw, name, *, n_features=None, dtype=np.float64, zero_based="auto", engine="auto",
                max_features=MAX_FEATURES):
    """:func:`load_svmlight` on text already in memory (``name`` prefixes error messages)."""
    dtype = _check_dtype(dtype)
    zero_based = _check_zero_based(zero_based)
    engine = check_option("engine", engine, ("auto", "cyrank", "sklearn"))
    max_features = check_param("max_features", max_features, low=1, integer=True)
    if n_features is not None:
        n_features = check_param("n_features", n_features, low=1, integer=True)
        max_features = max(max_features, n_features)  # asked for explicitly
    if engine != "sklearn":
        reader, dp = _cython_reader(), _decimal_point()
        if reader is not None and dp is not None:
            X, y, qid = _load_cyrank(raw, name, n_features, dtype, zero_based, reader, dp)
            _check_feature_count(X, raw, name, max_features)
            return X, y, qid
        if engine == "cyrank":
            why = ("the compiled extension cyrank._svmlight is missing (build it: python setup.py build_ext "
                   "--inplace)" if reader is None else "the C locale's decimal point is not a single byte")
            raise RuntimeError(f"engine='cyrank' is unavailable: {why}; use engine='sklearn'")
    X, y, qid = _load_sklearn(raw, name, n_features, dtype, zero_based)
    _check_feature_count(X, raw, name, max_features)
    return X, y, qid


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto", engine="auto",
                  max_features=MAX_FEATURES, max_bytes=None):
    """Read a LETOR/SVMlight file into ``(X, y, qid)``.

    Format (one example per line; ``#`` starts a comment; blank lines are skipped)::

        <label> [qid:<int>] <index>:<value> ... [# comment]

    Parameters
    ----------
    path : str, PathLike or binary file object
        ``.gz`` and ``.bz2`` files (by extension or content) are decompressed first.
    n_features : int, optional
        Number of columns of X; default: the largest index in the file (+1 when zero-based). Pass it when
        reading a test file whose last features are all zero.
    dtype : {float64, float32}, default=float64
        The dtype of X (values are parsed as float64, then rounded once).
    zero_based : {True, False, "auto"}, default="auto"
        With "auto" (scikit-learn's rule) indices are one-based and shifted down by 1, unless some index is 0
        (or the file has no feature at all).
    engine : {"auto", "cyrank", "sklearn"}, default="auto"
        "auto": cyrank's Cython reader when built, else scikit-learn.
    max_features : int, default=2**28
        A feature index implying more columns is refused, naming the index and its line (a dense float64
        vector of 2**28 features, such as a linear model's coef_, is 2 GiB). ``n_features``, when given, raises
        the limit to itself.
    max_bytes : int, optional
        The most bytes a .gz/.bz2 file may expand to, checked while it is decompressed chunk by chunk; default
        64 times the compressed size and at least 1 GiB.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n, n_features)
        int64 indices/indptr, sorted indices, explicit zeros kept.
    y : ndarray of shape (n,)
        float64 labels.
    qid : ndarray of shape (n,)
        int64 query ids; all zeros when the file has no qid. A file where only some lines have a qid is refused.

    Raises
    ------
    ValueError
        Naming the line, for malformed input: a label or value that is not a number, a feature without
        ``:``, a non-integer, negative (or 0 with ``zero_based=False``), repeated or decreasing index, a bad
        ``qid:`` token.

    Notes
    -----
    The result equals ``sklearn.datasets.load_svmlight_file(path, query_id=True, ...)`` for every file both
    accept (ours refuses ``_`` inside numbers and any ``qid...:`` token other than ``qid:<int>`` right after the
    label).
    """
    if max_bytes is not None:
        max_bytes = check_param("max_bytes", max_bytes, low=1, integer=True)
    raw, name = _read_bytes(path, max_bytes)
    return _load_bytes(raw, name, n_features=n_features, dtype=dtype, zero_based=zero_based, engine=engine,
                       max_features=max_features)


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


def atomic_write(path, write):
    """Call ``write(fh)`` on a new temporary file beside ``path``, flush and fsync it, then move it over ``path``
    (``os.replace``, atomic on POSIX and Windows): an existing file is never left truncated by a failure or an
    interrupt mid-write, and the temporary file is removed on any exception (KeyboardInterrupt included).
    A missing or read-only directory is an ``OSError`` naming it. The new file keeps the mode of the file it
    replaces (else the usual mode under the process umask)."""
    path = os.fsdecode(os.fspath(path))
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OSError(f"cannot write {path}: the directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OSError(f"cannot write {path}: the directory {directory} is not writable (permission denied)")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not str(exc).startswith("cannot write"):
            kept = "the existing file is left as it was" if os.path.exists(path) else "no file was written"
            err = OSError(f"cannot write {path}: {exc.strerror or exc} ({type(exc).__name__}"
                          f"{f', errno {exc.errno}' if exc.errno else ''}); {kept}. Free some space, raise the "
                          "file-size limit (ulimit -f) or write elsewhere")
            err.errno = exc.errno
            raise err from None
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _compressor(name, fh):
    """A writer compressing into ``fh`` by the extension of ``name`` (.gz, .bz2), else ``fh`` itself."""
    lower = name.lower()
    if lower.endswith(".gz"):
        return gzip.GzipFile(filename=os.path.basename(name)[:-3], mode="wb", fileobj=fh)
    if lower.endswith(".bz2"):
        return bz2.BZ2File(fh, "wb")
    return None


def dump_svmlight(X, y, path, qid=None, zero_based=False):
    """Write ``X, y[, qid]`` as LETOR/SVMlight text: ``label [qid:q] index:value ...`` per row.

    Only the stored entries of sparse X are written (explicit zeros included); dense X writes its non-zeros.
    Numbers use the shortest decimal that reads back as exactly the same float64 (float32 X is written as
    its exact float64 value), so :func:`load_svmlight` returns the same arrays. Indices are one-based
    unless ``zero_based=True``; read a zero-based file back with ``zero_based=True``, and pass
    ``n_features`` when the last columns are all zero. ``path``: str/PathLike (``.gz``/``.bz2`` compress) or a
    binary file object. ``qid=None`` writes no qid. A path is written atomically (:func:`atomic_write`): an
    existing file is replaced only once the new one is complete.
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

    def write(fh):
        n, chunk = X.shape[0], 4096
        for start in range(0, n, chunk):
            fh.write(fmt(values, indices, indptr, y, qid, has_qid, offset, start, min(n, start + chunk)))

    if hasattr(path, "write"):
        write(path)
        return

    def write_file(fh):
        packed = _compressor(os.fsdecode(os.fspath(path)), fh)
        if packed is None:
            write(fh)
            return
        with packed:
            write(packed)

    atomic_write(path, write_file)


# ----------------------------------------------------------------------------------- multilabel files
def _split_labels(raw, name, limit=None, limit_name="max_labels"):
    """(text with every label list replaced by 0, the label lists): LIBSVM's multilabel lines ``l1,l2,... idx:val
    ...``, where a line starting with a feature (``idx:val``) or with blanks has no label. Blank and comment-only
    lines are kept as they are (the reader skips them). A label id >= ``limit`` is refused, naming its line."""
    lines, labels = raw.split(b"\n"), []
    for number, line in enumerate(lines, 1):
        if not line.split(b"#", 1)[0].strip():
            continue
        head, sep, rest = line.partition(b" ") if not line[:1].isspace() else (b"", b" ", line)
        if b"\t" in head:
            head, _, more = head.partition(b"\t")
            rest = more + sep + rest
        if b":" in head:  # the first token is a feature: no label
            rest, head = line, b""
        try:
            ids = [int(t) for t in head.split(b",")] if head else []
        except ValueError:
            raise ValueError(f"{name}, line {number}: labels must be comma-separated non-negative integers, got "
                             f"{head.decode(errors='replace')!r}") from None
        if any(i < 0 for i in ids):
            raise ValueError(f"{name}, line {number}: negative label in {head.decode(errors='replace')!r}")
        if limit is not None and ids and max(ids) >= limit:
            top = max(ids)
            if limit_name == "n_labels":
                raise ValueError(f"{name}, line {number}: label {top} is out of range for n_labels={limit} (labels "
                                 f"are 0 .. {limit - 1})")
            raise ValueError(f"{name}, line {number}: label {top} implies {top + 1} labels, more than "
                             f"max_labels={limit}; label ranking keeps arrays of n_samples x n_labels scores and up to "
                             "n_labels**2 preference pairs, so a few lines would ask for "
                             f"{(top + 1) ** 2 / 2**30:.3g} GiB. Renumber the labels 0 .. k - 1 (or, in Python, pass "
                             "max_labels=... to load_svmlight_multilabel if this many labels is intended)")
        labels.append(ids)
        lines[number - 1] = b"0 " + rest
    return b"\n".join(lines), labels


MAX_LABELS = 1 << 14


def load_svmlight_multilabel(path, *, n_features=None, n_labels=None, dtype=np.float64, zero_based="auto",
                             max_bytes=None, max_labels=MAX_LABELS, max_features=MAX_FEATURES):
    """Read a multilabel SVMlight file (LIBSVM's multilabel sets) into ``(X, Y)``.

    Format, one example per line: ``l1,l2,... idx:val idx:val ... [# comment]`` with labels non-negative
    integers as written (0-based); a line starting with a feature or with blanks has no relevant label.
    ``X``: as :func:`load_svmlight` (CSR, float64 or float32). ``Y``: the 0/1 indicator as a CSR int8 matrix of
    shape (n, n_labels), n_labels = the largest label + 1 unless given (a larger label is refused); pass it to
    ``PreferenceGraphs.from_indicator`` or straight to LabelRankBoost. ``qid`` tokens are refused (labels are
    per instance, not per query).

    ``max_labels`` (default 2**14) bounds the label ids when ``n_labels`` is not given: a label id implies that
    many labels, and label ranking keeps n_samples x n_labels scores and up to n_labels**2 preference pairs, so a
    two-line file naming label 10**9 would otherwise ask for gigabytes. A larger id is a ValueError naming its line
    (renumber the labels, or raise ``max_labels``). ``max_features``: as in :func:`load_svmlight`."""
    max_labels = check_param("max_labels", max_labels, low=1, integer=True)
    if n_labels is not None:
        n_labels = check_param("n_labels", n_labels, low=1, integer=True)
    raw, name = _read_bytes(path, max_bytes)
    text, labels = _split_labels(raw, name, *((n_labels, "n_labels") if n_labels is not None else (max_labels,)))
    X, _, qid = _load_bytes(text, name, n_features=n_features, dtype=dtype, zero_based=zero_based,
                            max_features=max_features)
    if np.any(qid != 0):
        raise ValueError(f"{name}: qid tokens in a multilabel file; labels belong to instances, not queries")
    top = max((max(ids) for ids in labels if ids), default=-1) + 1
    if n_labels is None:
        n_labels = max(top, 1)
    n_labels = check_param("n_labels", n_labels, low=1, integer=True)
    if top > n_labels:
        raise ValueError(f"{name}: label {top - 1} is out of range for n_labels={n_labels}")
    indptr = np.r_[0, np.cumsum([len(set(ids)) for ids in labels])].astype(np.int64)
    indices = np.concatenate([np.unique(ids) for ids in labels]).astype(np.int64) if labels else np.zeros(0, np.int64)
    Y = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(len(labels), n_labels))
    return X, Y


def dump_svmlight_multilabel(X, Y, path, zero_based=False):
    """Write ``X`` and the multilabel indicator ``Y`` (dense or sparse, 0/1) as multilabel SVMlight lines.

    Each line is ``l1,l2 idx:val ...`` (features one-based unless ``zero_based``; labels 0-based as LIBSVM's
    multilabel sets), readable by :func:`load_svmlight_multilabel`; written atomically as :func:`dump_svmlight`."""
    from ._validation import check_label_matrix

    Y = check_label_matrix(Y, "Y")
    if not np.isin(Y, (0, 1)).all():
        raise ValueError("Y must be a 0/1 indicator matrix")
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y has {Y.shape[0]} rows but X has {X.shape[0]}; lengths must match")
    buffer = io.BytesIO()
    dump_svmlight(X, np.zeros(X.shape[0]), buffer, zero_based=zero_based)
    lines = buffer.getvalue().split(b"\n")
    out = []
    first = b"0:0" if zero_based is True else b"1:0"
    for row, line in zip(Y, lines):
        label = b",".join(str(j).encode() for j in np.flatnonzero(row))
        rest = line[1:]  # the written label "0" replaced by the list (the space after it kept)
        if not label and not rest.strip():
            rest = b" " + first  # neither label nor feature: an explicit zero keeps the line from being blank
        out.append(label + rest)
    text = b"\n".join(out) + b"\n"
    if hasattr(path, "write"):
        path.write(text)
        return
    atomic_write(path, lambda fh: fh.write(text))


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
    """Names of the classes registered with :func:`register_model` (the package's own estimators included, even
    before their first use)."""
    import cyrank

    return sorted(set(_MODEL_REGISTRY) | set(cyrank.ESTIMATORS))


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
    """Save a fitted (or unfitted) registered estimator to one ``.npz`` file, without pickle.

    The archive holds ``cyrank_header`` (JSON as uint8: format "cyrank-model", format version, cyrank version,
    class name, ``get_params()``, the names and kinds of the fitted attributes) and one array per stored array.
    Saved: ``get_params(deep=False)`` and every public attribute ending in ``_``. Allowed values: numeric/bool/str
    numpy arrays (object arrays only if all str), numpy scalars, CSR/CSC matrices, int, float, bool, str,
    None, and lists/tuples/dicts (str keys) of these. Anything else raises ``TypeError``, as does an
    unregistered class. ``path`` is used exactly as given (no ``.npz`` is appended) and written atomically
    (:func:`atomic_write`): an existing model file is replaced only once the new one is complete.
    """
    cls = type(est)
    if _MODEL_REGISTRY.get(cls.__name__) is not cls:
        raise TypeError(f"{cls.__name__} is not registered with cyrank.io.register_model, so it could not be "
                        "loaded back; decorate the class with @register_model")
    attributes = {k: getattr(est, k) for k in vars(est) if k.endswith("_") and not k.startswith("_")}
    _write_model(cls.__name__, cls.__module__, dict(est.get_params(deep=False)), attributes, path)


def save_fitted(class_name, params, attributes, path):
    """Save a model given as data, without creating the estimator (so without importing scikit-learn): the file
    :func:`save_model` writes for an estimator of ``class_name`` (one of ``cyrank.ESTIMATORS``) with the
    parameters ``params`` (the others keep their defaults when loaded) and the fitted ``attributes`` (name ->
    value, names ending in ``_``; e.g. ``SolveResult.fitted_attributes()`` of the functional layer). The command
    line writes its models this way; :func:`load_model` checks the result as any model file."""
    import cyrank

    if class_name not in cyrank.ESTIMATORS:
        raise TypeError(f"{class_name!r} is not one of cyrank's estimators ({', '.join(sorted(cyrank.ESTIMATORS))})")
    bad = [k for k in attributes if not (k.isidentifier() and k.endswith("_") and not k.startswith("_"))]
    if bad:
        raise ValueError(f"fitted attribute names must end in '_': {bad}")
    _write_model(class_name, cyrank.ESTIMATORS[class_name], dict(params), dict(attributes), path)


def _write_model(class_name, module, params, attributes, path):
    """The model file of save_model and save_fitted."""
    enc = _Encoder()
    params = enc.encode(params, "parameters")
    encoded, kinds = [], {}
    for name in sorted(attributes):
        node = enc.encode(attributes[name], f"attribute {name}")
        encoded.append([name, node])
        kinds[name] = node[_TAG] if isinstance(node, dict) else ("list" if isinstance(node, list) else "json")
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "cyrank_version": _cyrank_version(),
        "class": class_name,
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


def _registered_class(header):
    """The class named in the header, looked up in the registry (a name-to-class table) and nowhere else: no
    module named in a file is ever imported. The package's own estimators (cyrank.ESTIMATORS, a fixed table) are
    imported, and so registered, on first use."""
    import cyrank

    name = header.get("class")
    if not isinstance(name, str):
        return None
    if name not in _MODEL_REGISTRY and name in cyrank.ESTIMATORS:
        getattr(cyrank, name)
    return _MODEL_REGISTRY.get(name)


# ------------------------------------------------------------------------------------ model-file schema
# A registered class may declare ``_model_schema``: fitted attribute name -> rule. A rule is a spec string (the
# attribute is required in a fitted model) or a function of the parameters returning the spec, or None when the
# attribute must be absent for those parameters. A spec ending in "?" may be absent. Specs:
#   "float", "int", "bool", "str", optionally ">= v" / "> v" (scalars, finite)
#   "float[d]", "int[m, d]", "bool[*]", "any[c]": arrays (float arrays float64 and finite; any = numbers or
#       strings); each
#       dimension is a number, "*", or a symbol bound on first use and equal everywhere after it ("d" is
#       n_features_in_); "or csr" also admits a CSR matrix (structure checked); "in [0, d)" bounds the values
#   "dict": str keys, 1-d numeric arrays as values;  "...|None": None is also allowed
_SPEC = re.compile(r"(?P<kind>float|int|bool|str|any|dict)(?:\[(?P<dims>[^\]]*)\])?(?P<csr> or csr)?"
                   r"(?: *(?P<op>>=|>) *(?P<low>[-+.\de]+))?(?: in \[0, (?P<high>\w+)\))?"
                   r"(?P<none>\|None)?(?P<optional>\?)?$")
_ARRAY_KIND = {"float": "f", "int": "iu", "bool": "b", "any": "biufU"}


def _schema_rules(cls, params):
    """{name: (spec match, optional)} of ``cls`` for these parameters (None: the class declares no schema)."""
    schema = getattr(cls, "_model_schema", None)
    if schema is None:
        return None
    rules = {}
    for name, rule in schema.items():
        spec = rule(params) if callable(rule) else rule
        if spec is not None:
            m = _SPEC.match(spec)
            if m is None:
                raise TypeError(f"{cls.__name__}._model_schema[{name!r}]: bad spec {spec!r}")
            rules[name] = m
    return rules


def _check_attribute(name, value, m, dims, bad):
    """Check one loaded attribute against its spec match ``m``; ``dims`` binds the dimension symbols."""
    kind = m["kind"]
    if value is None:
        if m["none"]:
            return
        raise bad(f"attribute {name} is None")
    if kind == "dict":
        if not (isinstance(value, dict) and all(isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "biuf"
                                                for v in value.values())):
            raise bad(f"attribute {name} must be a dict of 1-d numeric arrays")
        return
    if m["dims"] is None:  # scalar
        ok = {"float": lambda v: isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
                      and np.isfinite(v),
              "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)),
              "bool": lambda v: isinstance(v, (bool, np.bool_)),
              "str": lambda v: isinstance(v, str)}[kind]
        if not ok(value):
            raise bad(f"attribute {name} = {value!r:.60} is not a{'n' if kind == 'int' else ''} {kind}")
        values = np.asarray([value], dtype=np.float64) if kind in ("float", "int") else None
    else:
        if sp.issparse(value):
            if not m["csr"] or value.format != "csr":
                raise bad(f"attribute {name} is a sparse {value.format} matrix; expected {m.string.rstrip('?')}")
            try:
                check_sparse_structure(value, f"attribute {name}")
            except ValueError as exc:
                raise bad(str(exc)) from None
            values = value.data
        elif isinstance(value, np.ndarray):
            if value.dtype.kind not in _ARRAY_KIND[kind] or (kind == "float" and value.dtype != np.float64):
                raise bad(f"attribute {name} has dtype {value.dtype}; expected {kind}"
                          f"{'64' if kind == 'float' else ''} values")
            values = value
        else:
            raise bad(f"attribute {name} is a {type(value).__name__}; expected an array")
        shape = [t.strip() for t in m["dims"].split(",")]
        if len(shape) != value.ndim:
            raise bad(f"attribute {name} has shape {value.shape}; expected [{m['dims']}]")
        for axis, (sym, size) in enumerate(zip(shape, value.shape)):
            want = int(sym) if sym.isdigit() else dims.setdefault(sym, size) if sym != "*" else size
            if size != want:
                raise bad(f"attribute {name} has shape {value.shape}: axis {axis} ({sym}) should be {want}, as in "
                          "the other attributes")
        if kind == "float" and not np.all(np.isfinite(values)):
            raise bad(f"attribute {name} holds NaN or infinity")
    if m["low"] is not None and values is not None and values.size:
        low = float(m["low"])
        if np.any(values < low) or (m["op"] == ">" and np.any(values == low)):
            raise bad(f"attribute {name} must be {m['op']} {m['low']}")
    if m["high"] is not None and values is not None and values.size:
        high = dims.get(m["high"])
        if high is None or np.any(values < 0) or np.any(values >= high):
            raise bad(f"attribute {name} must lie in [0, {m['high']}) = [0, {high})")


def _check_against_schema(est, values, path):
    """Refuse a model whose parameters are invalid or whose attributes do not fit the class's schema."""
    cls = type(est)

    def bad(msg):
        return ValueError(f"{path}: not a valid {cls.__name__} model file ({msg})")

    check = getattr(est, "_check_params", None)
    if callable(check):
        try:
            check()
        except (ValueError, TypeError) as exc:
            raise bad(f"invalid parameter: {exc}") from None
    rules = _schema_rules(cls, est.get_params(deep=False))
    if rules is None or not values:  # no schema declared, or an unfitted estimator
        return
    extra = sorted(set(values) - set(rules))
    if extra:
        raise bad(f"unknown attribute(s) {', '.join(extra)} for these parameters")
    missing = sorted(n for n, m in rules.items() if n not in values and not m["optional"])
    if missing:
        raise bad(f"missing attribute(s) {', '.join(missing)}")
    dims = {}
    if "n_features_in_" in values:
        _check_attribute("n_features_in_", values["n_features_in_"], rules["n_features_in_"], dims, bad)
        dims["d"] = int(values["n_features_in_"])
    for name, value in values.items():
        _check_attribute(name, value, rules[name], dims, bad)
    consistent = getattr(cls, "_check_model_attributes", None)  # relations the specs cannot state
    if callable(consistent):
        try:
            consistent(values)
        except (ValueError, TypeError) as exc:
            raise bad(str(exc)) from None


MODEL_SIZE_RATIO = 16
MODEL_SIZE_MIN = 256 << 20


def _size_limit(path, max_bytes):
    """The most uncompressed bytes a model file may declare: ``max_bytes``, or by default 16 times the file's
    size and at least 256 MB (save_model stores arrays uncompressed, so a genuine file declares about its own
    size; a few megabytes declaring gigabytes is a decompression bomb)."""
    if max_bytes is not None:
        return check_param("max_bytes", max_bytes, low=1, integer=True)
    return max(MODEL_SIZE_RATIO * os.path.getsize(path), MODEL_SIZE_MIN)


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
    _check_against_schema(est, dict(values), path)
    for attr, value in values:
        setattr(est, attr, value)
    return est
