"""LETOR/SVMlight text: :func:`load_svmlight` / :func:`dump_svmlight`, and LIBSVM's multilabel files
(:func:`load_svmlight_multilabel` / :func:`dump_svmlight_multilabel`). The one-pass reader and the row formatter
are the Cython module :mod:`cyrank._svmlight`; this module checks the arguments, decompresses, bounds what a file
may imply and falls back to scikit-learn (or to Python formatting) when the extension is not built."""
import bz2
import gzip
import io
import locale
import os
import sys
import zlib

import numpy as np
import scipy.sparse as sp

from .._validation import check_option, check_param, check_ranking_data
from ._atomic import atomic_write


def _setting(name):
    """``name`` as currently set on the cyrank.io package: the public limits (cyrank.io.DECOMPRESS_MIN etc.) may be
    changed there."""
    return getattr(sys.modules[__package__], name)


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
    limit = (max(_setting("DECOMPRESS_RATIO") * len(raw), _setting("DECOMPRESS_MIN")) if max_bytes is None
             else max_bytes)
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


def _feature_beyond(X, raw, limit):
    """(line number, index) of the first stored feature index >= ``limit`` in the CSR matrix X read from ``raw``."""
    k = int(np.argmax(X.indices >= limit))
    row = int(np.searchsorted(X.indptr, k, side="right")) - 1
    return _data_line_number(raw, row), int(X.indices[k])


def feature_beyond(path, X, limit):
    """(file name, line number, index) of the first stored feature index >= ``limit`` in the CSR matrix X that
    :func:`load_svmlight` read from ``path`` (the file is read again: for error messages); None when X stores
    none."""
    if not np.any(np.asarray(X.indices) >= limit):
        return None
    raw, name = _read_bytes(path)
    line, index = _feature_beyond(X, raw, limit)
    return name, line, index


def _check_feature_count(X, raw, name, max_features):
    """ValueError naming the index and its line when X's column count exceeds ``max_features``."""
    if X.shape[1] <= max_features:
        return
    line, index = _feature_beyond(X, raw, max_features)
    raise ValueError(f"{name}, line {line}: feature index {index} implies {X.shape[1]} "
                     f"features, more than max_features={max_features} (one dense float64 vector of them would take "
                     f"{8 * X.shape[1] / 2**30:.3g} GiB); pass max_features=... to load_svmlight if this is intended")


def _decimal_point():
    """The C locale's decimal point as one byte, or None if it is not a single byte."""
    dp = locale.localeconv().get("decimal_point", ".").encode("utf-8", "replace")
    return dp if len(dp) == 1 else None


def _cython_reader():
    try:
        from .. import _svmlight  # the compiled reader, cyrank/_svmlight.pyx
    except ImportError:
        return None
    return _svmlight


def _make_csr(values, indices, indptr, n_features):
    """CSR matrix sharing the given arrays (int64 indices/indptr kept; scipy would otherwise narrow them)."""
    shape = (indptr.shape[0] - 1, int(n_features))
    X = sp.csr_matrix(sp.csr_array((values, indices, indptr), shape=shape), copy=False)
    X.has_sorted_indices = True
    return X


def _load_cyrank(raw, name, n_features, dtype, zero_based, reader, dp, row_ends=False):
    try:
        values, indices, indptr, labels, qid, lo, hi, row_end = reader.parse_svmlight(
            raw, dtype == np.float32, zero_based is not False, dp, row_ends
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
    return X, labels, qid, row_end


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
                max_features=MAX_FEATURES, row_ends=False):
    """:func:`load_svmlight` on text already in memory (``name`` prefixes error messages): ``(X, y, qid)``, and
    with ``row_ends`` the byte offset where each row's data ends (its comment's ``#``; cyrank's reader only)."""
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
            X, y, qid, row_end = _load_cyrank(raw, name, n_features, dtype, zero_based, reader, dp, row_ends)
            _check_feature_count(X, raw, name, max_features)
            return (X, y, qid, row_end) if row_ends else (X, y, qid)
        if engine == "cyrank" or row_ends:
            why = ("the compiled extension cyrank._svmlight is missing (build it: python setup.py build_ext "
                   "--inplace)" if reader is None else "the C locale's decimal point is not a single byte")
            if row_ends:
                raise RuntimeError(f"reading the comments (return_doc_ids, return_comments) needs cyrank's reader, "
                                   f"which is unavailable: {why}")
            raise RuntimeError(f"engine='cyrank' is unavailable: {why}; use engine='sklearn'")
    if row_ends:
        raise ValueError("return_doc_ids and return_comments read the comments with cyrank's reader: use "
                         "engine='auto' or 'cyrank'")
    X, y, qid = _load_sklearn(raw, name, n_features, dtype, zero_based)
    _check_feature_count(X, raw, name, max_features)
    return X, y, qid


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto", engine="auto",
                  max_features=MAX_FEATURES, max_bytes=None, return_doc_ids=False, return_comments=False):
    """Read a LETOR/SVMlight file into ``(X, y, qid)`` (and the document ids and comments, when asked).

    Format (one example per line; ``#`` starts a comment; blank lines are skipped)::

        <label> [qid:<int>] <index>:<value> ... [# comment]

    Parameters
    ----------
    path : str, PathLike or binary file object
        ``.gz`` and ``.bz2`` files (by extension or content) are decompressed first. Text already in memory:
        pass ``io.BytesIO(data)``.
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
    return_doc_ids : bool, default=False
        Also return the document ids of the ``#docid = X`` comments (LETOR 3.0 and 4.0 write
        ``#docid = GX029-35-5894638 inc = 0.0119881192468859 prob = 0.139842``; OHSUMED ``#docid = 244338``).
        Every row must have one: a row without is a ValueError naming its line (MSLR-WEB, Yahoo! LTR and Istella
        files carry no comments, hence no document ids).
    return_comments : bool, default=False
        Also return every ``key = value`` pair of the comments (read as :func:`_comment_columns` says): a dict
        from key to a str array with one value per row ("" where a row lacks the key); ``docid`` included.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n, n_features)
        int64 indices/indptr, sorted indices, explicit zeros kept.
    y : ndarray of shape (n,)
        float64 labels.
    qid : ndarray of shape (n,)
        int64 query ids; all zeros when the file has no qid. A file where only some lines have a qid is refused.
    doc_ids : ndarray of str, shape (n,), only if ``return_doc_ids``
    comments : dict, only if ``return_comments``
        {key: ndarray of str, shape (n,)}, every ``key = value`` pair of the comments ("" where a row lacks the
        key); returned after doc_ids when both are asked.

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
    with_comments = bool(return_doc_ids) or bool(return_comments)
    loaded = _load_bytes(raw, name, n_features=n_features, dtype=dtype, zero_based=zero_based, engine=engine,
                         max_features=max_features, row_ends=with_comments)
    if not with_comments:
        return loaded
    X, y, qid, row_end = loaded
    columns = _comment_columns(raw, row_end, name, only=None if return_comments else "docid")
    extra = ()
    if return_doc_ids:
        extra += (_doc_ids(columns, raw, row_end, name),)
    if return_comments:
        extra += (columns,)
    return (X, y, qid, *extra)


# ----------------------------------------------------------------------------------------------- comments
def _comment_columns(raw, row_end, name="<data>", only=None):
    """Every ``key = value`` pair of the rows' comments as columns: ``{key: str array, one value per row}`` ("" where
    a row lacks the key), keys in order of first appearance (only the key ``only`` when given). ``row_end``: where
    each row's data ends (from the reader). Parsed in C (:func:`cyrank._svmlight.comment_pairs`): a pair is
    ``key = value`` (blanks around ``=`` optional), pairs are separated by whitespace, and free text ends a row's
    pairs."""
    reader = _cython_reader()
    try:
        keys, start, stop = reader.comment_pairs(raw, row_end)
    except ValueError as exc:
        raise ValueError(f"{name}, {exc}") from None
    names = [key.decode("utf-8", "backslashreplace") for key in keys]
    return {key: reader.span_strings(raw, start[j], stop[j]) for j, key in enumerate(names)
            if only is None or key == only}


def _line_of(raw, row_end, row):
    """The 1-based line of data row ``row`` (from where its data ends)."""
    return raw.count(b"\n", 0, int(row_end[row])) + 1


def _doc_ids(columns, raw, row_end, name):
    """The ``docid`` column; ValueError naming the first line without one."""
    ids = columns.get("docid")
    missing = np.flatnonzero(ids == "") if ids is not None else np.arange(min(1, row_end.shape[0]))
    if missing.size:
        raise ValueError(f"{name}, line {_line_of(raw, row_end, missing[0])}: no '#docid = ...' comment; reading "
                         "document ids needs one on every line (LETOR 4.0: '#docid = GX029-35-5894638 inc = ... prob "
                         "= ...'); MSLR-WEB, Yahoo! and Istella files have no document ids")
    return ids if ids is not None else np.zeros(0, dtype=str)


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


def _compressor(name, fh):
    """A writer compressing into ``fh`` by the extension of ``name`` (.gz, .bz2), else ``fh`` itself."""
    lower = name.lower()
    if lower.endswith(".gz"):
        return gzip.GzipFile(filename=os.path.basename(name)[:-3], mode="wb", fileobj=fh)
    if lower.endswith(".bz2"):
        return bz2.BZ2File(fh, "wb")
    return None


def _comment_suffixes(n, doc_ids, comments):
    """Each row's `` #docid = X key = value ...`` comment as UTF-8 bytes (b"" for a row without any pair; an empty
    value leaves its pair out, as the reader returns "" for a missing key)."""
    from ._trec import _check_ids

    columns = [] if doc_ids is None else [("docid", doc_ids)]
    if comments is not None:
        if not isinstance(comments, dict):
            raise TypeError(f"comments must be a dict {{key: one value per row}}, got {type(comments).__name__}")
        if doc_ids is not None and "docid" in comments:
            raise ValueError("give the document ids once: doc_ids=... or comments['docid'], not both")
        columns += comments.items()
    pieces = []
    for key, values in columns:
        values = np.asarray(values).astype(str)
        if values.shape != (n,):
            raise ValueError(f"{key}: {values.shape[0] if values.ndim == 1 else values.shape} values for {n} rows; "
                             "give one per row")
        _check_ids([key], "comment key", "comments")
        if "=" in key:
            raise ValueError(f"comment key {key!r} holds '='")
        present = values != ""
        if key == "docid" and not present.all():
            raise ValueError(f"doc_ids: row {int(np.argmin(present))} has an empty document id")
        _check_ids(np.unique(values[present]).tolist(), key, "doc_ids" if key == "docid" else "comments")
        pieces.append(np.where(present, np.char.add(f"{key} = ", values), ""))
    rows = zip(*(p.tolist() for p in pieces))
    return [(" #" + " ".join(filter(None, row))).encode("utf-8") if any(row) else b"" for row in rows]


def dump_svmlight(X, y, path, qid=None, zero_based=False, *, doc_ids=None, comments=None):
    """Write ``X, y[, qid]`` as LETOR/SVMlight text: ``label [qid:q] index:value ...`` per row.

    Only the stored entries of sparse X are written (explicit zeros included); dense X writes its non-zeros.
    Numbers use the shortest decimal that reads back as exactly the same float64 (float32 X is written as
    its exact float64 value), so :func:`load_svmlight` returns the same arrays. Indices are one-based
    unless ``zero_based=True``; read a zero-based file back with ``zero_based=True``, and pass
    ``n_features`` when the last columns are all zero. ``path``: str/PathLike (``.gz``/``.bz2`` compress) or a
    binary file object. ``qid=None`` writes no qid. A path is written atomically (:func:`atomic_write`): an
    existing file is replaced only once the new one is complete.

    ``doc_ids`` (one str per row) writes LETOR's ``#docid = X`` comment, and ``comments`` (``{key: one value per
    row}``, as ``load_svmlight(..., return_comments=True)`` returns) the other ``key = value`` pairs after it, so
    ``load_svmlight(..., return_doc_ids=True, return_comments=True)`` reads them back. Ids, keys and values hold no
    whitespace; an empty value leaves its pair out of that row.
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
    suffixes = (None if doc_ids is None and comments is None
                else _comment_suffixes(X.shape[0], doc_ids, comments))

    def write(fh):
        n, chunk = X.shape[0], 4096
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            text = fmt(values, indices, indptr, y, qid, has_qid, offset, start, stop)
            if suffixes is not None:
                text = b"".join(line + tail + b"\n"
                                for line, tail in zip(text.split(b"\n"), suffixes[start:stop]))
            fh.write(text)

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
    from .._validation import check_label_matrix

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
