"""The one place where X, y, qid and hyper-parameters are checked.

Every estimator, metric and CLI command calls these functions, so a bad input gets the same clear
``ValueError``/``TypeError`` everywhere. Conventions (also in README, "Data conventions"):

* ``X``: dense (n, d) array or scipy.sparse matrix (CSR/CSC, int32 or int64 indices), float32 or float64,
  finite, at least one row and one column. Object, string and complex dtypes are refused, never cast.
* ``y``: n finite real relevance labels (larger = better; equal = tie).
* ``qid``: n query ids: any integers, or strings (TREC topics "301", "q-12"), grouped by equality; rows of a
  query need not be contiguous. Floats are accepted only when every value is integral. ``qid=None`` means one
  query holding every row (the estimators then warn, :class:`MissingQidWarning`).
"""
import numbers
import os
import warnings

import numpy as np
import scipy.sparse as sp

from . import _sparse_check

FLOAT_DTYPES = (np.float64, np.float32)


class RankingDataWarning(UserWarning):
    """Data a ranker cannot use as the user probably meant: no query with two label levels (nothing to learn),
    or no qid (every row taken as one query)."""


class MissingQidWarning(RankingDataWarning):
    """A ranker's fit or score got no qid and took every row as one query."""


def _check_kind(a, name):
    """Refuse dtypes that numpy would otherwise cast silently (object, str, bytes, complex, void)."""
    kind = a.dtype.kind
    if kind in "OUSV":
        raise TypeError(f"{name} has dtype {a.dtype}; expected a numeric (int, float or bool) array")
    if kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {a.dtype}; ranking data must be real")


def _check_finite(values, name):
    """ValueError naming NaN or infinity in ``values``. A float array is judged first by its sum, one pass and no
    boolean temporary of its size: a NaN or an infinity makes the sum NaN or infinite (IEEE arithmetic), so a finite
    sum proves every value finite; an infinite sum (a bad value, or finite values that overflow together) is then
    checked value by value."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        if values.size == 0 or np.isfinite(np.add.reduce(values, axis=None)):
            return
    if not np.all(np.isfinite(values)):
        bad = "NaN" if np.isnan(values).any() else "infinity"
        raise ValueError(f"{name} contains {bad}; every value must be finite")


def _check_not_empty(shape):
    """Messages in sklearn's wording, so its estimator checks recognise them."""
    if shape[0] == 0:
        raise ValueError(f"X is empty: 0 sample(s) (shape={shape}) while a minimum of 1 is required.")
    if shape[1] == 0:
        raise ValueError(f"X is empty: 0 feature(s) (shape={shape}) while a minimum of 1 is required.")


_STRUCTURE_PROBLEMS = {
    _sparse_check.BAD_START: "{ptr}[0] is {value}, not 0",
    _sparse_check.DECREASING: "{ptr} decreases at position {pos} ({ptr}[{pos}] = {value} > {ptr}[{next}] = {after})",
    _sparse_check.PAST_END: "{ptr}[{pos}] = {value} points past the end of indices (length {nnz})",
    _sparse_check.INDEX_LOW: "indices[{pos}] = {index} is negative",
    _sparse_check.INDEX_HIGH: "indices[{pos}] = {index} is out of range for {n_minor} {minor}s",
}


def _as_index_array(a):
    """A 1-d int32/int64 contiguous view (or copy) of an index array, for the structure scan."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"sparse index arrays must be integers, got dtype {a.dtype}")
    if a.dtype not in (np.int32, np.int64):
        a = a.astype(np.int64)
    return np.ascontiguousarray(a)


def check_sparse_structure(X, name="X"):
    """Return ``X`` as a canonical scipy.sparse matrix (a copy when it was not canonical), or raise ValueError.

    CSR/CSC/BSR: ``indptr`` must have one entry per row (column) plus one, start at 0, never decrease and stay
    within ``len(indices)``; every index must lie in [0, n_columns) (rows for CSC). The arrays are scanned once in
    O(nnz) (:mod:`cyrank._sparse_check`) before anything reads them through the indices, and the message names
    the first bad position. COO: row and column indices inside the shape. Other formats (DOK, LIL, DIA) are
    built by scipy from checked Python structures and converted to COO first. Duplicate entries (scipy's meaning:
    summed) are summed and indices sorted on a copy, never in the caller's matrix; stored entries past
    ``indptr[-1]`` are dropped.
    """
    fmt = X.format
    if fmt not in ("csr", "csc", "bsr", "coo"):
        X = X.tocoo()
        fmt = "coo"
    if fmt == "coo":
        coords = getattr(X, "coords", None) or (X.row, X.col)
        for axis, idx in enumerate(coords):
            idx = np.asarray(idx)
            if idx.size and (idx.min() < 0 or idx.max() >= X.shape[axis]):
                what = ("row", "column")[axis]
                pos = int(np.flatnonzero((idx < 0) | (idx >= X.shape[axis]))[0])
                raise ValueError(f"{name} is a malformed COO matrix: entry {pos} has {what} index {int(idx[pos])}, "
                                 f"out of range for {X.shape[axis]} {what}s")
            if idx.shape[0] != np.shape(X.data)[0]:
                raise ValueError(f"{name} is a malformed COO matrix: {idx.shape[0]} indices but "
                                 f"{np.shape(X.data)[0]} values")
        return X
    ptr, minor = ("indptr", {"csr": "column", "bsr": "block column", "csc": "row"}[fmt])
    n_major, n_minor = (X.shape[0], X.shape[1]) if fmt != "csc" else (X.shape[1], X.shape[0])
    if fmt == "bsr":
        r, c = X.blocksize
        n_major, n_minor = n_major // r, n_minor // c
    indptr, indices = _as_index_array(X.indptr), _as_index_array(X.indices)
    if indptr.ndim != 1 or indices.ndim != 1 or indptr.shape[0] != n_major + 1:
        raise ValueError(f"{name} is a malformed {fmt.upper()} matrix: indptr has shape {indptr.shape}, expected "
                         f"({n_major + 1},) for shape {X.shape}")
    if np.shape(X.data)[0] != indices.shape[0]:
        raise ValueError(f"{name} is a malformed {fmt.upper()} matrix: {indices.shape[0]} indices but "
                         f"{np.shape(X.data)[0]} stored values")
    if indptr.dtype != indices.dtype:
        wide = np.promote_types(indptr.dtype, indices.dtype)
        indptr, indices = indptr.astype(wide), indices.astype(wide)
    code, pos, is_sorted, unique = _sparse_check.scan_compressed(indptr, indices, n_minor)
    if code != _sparse_check.OK:
        detail = _STRUCTURE_PROBLEMS[code].format(
            ptr=ptr, pos=pos, next=pos + 1, value=int(indptr[min(pos, n_major)]),
            after=int(indptr[min(pos + 1, n_major)]), nnz=indices.shape[0],
            index=int(indices[pos]) if code in (_sparse_check.INDEX_LOW, _sparse_check.INDEX_HIGH) else 0,
            n_minor=n_minor, minor=minor)
        raise ValueError(f"{name} is a malformed {fmt.upper()} matrix: {detail}; build it with "
                         "scipy.sparse.csr_matrix((data, indices, indptr), shape=...) from valid arrays, or call "
                         "X.check_format(full_check=True) to see scipy's own diagnosis")
    if fmt == "bsr":
        return X if is_sorted and unique else _canonical_copy(X)
    if not (is_sorted and unique and indptr[-1] == indices.shape[0]):
        X = _canonical_copy(X)
    X.has_sorted_indices = True
    return X


def _canonical_copy(X):
    """A copy of X with duplicates summed, indices sorted and entries past indptr[-1] dropped."""
    X = X.copy()
    X.prune()
    X.sum_duplicates()
    return X


def check_X(X, *, accept_sparse=("csr", "csc"), dtype=FLOAT_DTYPES, order=None, copy=False):
    """Return X as a finite float32/float64 2-d array or a CSR/CSC matrix with sorted indices.

    ``dtype`` is the tuple of accepted dtypes: X of another numeric dtype is converted to the first.
    Sparse X keeps its index width (int32 or int64); other sparse formats are converted to
    ``accept_sparse[0]``. ``order`` ("C" or "F") forces the memory layout of dense X.
    """
    if X is None:
        raise ValueError("X is None; expected a 2-d array or a sparse matrix")
    dtypes = tuple(np.dtype(d) for d in (dtype if isinstance(dtype, tuple) else (dtype,)))
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError("sparse X is not supported here; pass a dense array (X.toarray())")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d, got {X.ndim} dimensions")
        _check_kind(np.empty(0, X.dtype), "X")
        X = check_sparse_structure(X, "X")  # before scipy's own conversions read the index arrays
        fmt = X.format if X.format in accept_sparse else accept_sparse[0]
        X = X.asformat(fmt, copy=copy)
        if X.dtype not in dtypes:
            X = X.astype(dtypes[0])
        _check_not_empty(X.shape)
        _check_finite(X.data, "X")
        if X.indices.dtype != X.indptr.dtype:  # scipy may mix widths; kernels take one
            wide = np.promote_types(X.indices.dtype, X.indptr.dtype)
            X = X.copy()
            X.indices = X.indices.astype(wide)
            X.indptr = X.indptr.astype(wide)
        return X
    if isinstance(X, (list, tuple)) or not hasattr(X, "dtype"):
        try:
            X = np.asarray(X)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"X could not be read as a 2-d array: {exc}") from None
    X = np.asarray(X)
    _check_kind(X, "X")
    if X.ndim != 2:
        raise ValueError(
            f"X must be 2-d (n_samples, n_features), got {X.ndim} dimension(s) with shape {X.shape}"
            + ("; Reshape your data with X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a single row"
               if X.ndim == 1 else "")
        )
    _check_not_empty(X.shape)
    target = X.dtype if X.dtype in dtypes else dtypes[0]
    if order is None:
        X = np.array(X, dtype=target, copy=copy) if copy else np.asarray(X, dtype=target)
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
    else:
        X = np.array(X, dtype=target, order=order, copy=True) if copy else np.asarray(X, dtype=target, order=order)
    _check_finite(X, "X")
    return X


# Largest and smallest non-zero |x| a solver accepts: the objectives square products of features and weights
# (|x|^2 |w|^2 terms, ||w||^2 with |w| ~ 1 / |x|), which leave float64's range (1e-308 .. 1e308) well before
# |x| reaches 1e154 or 1e-154; beyond these limits a fit would return a wrong answer reported as converged.
FEATURE_SCALE = (1e-100, 1e100)


def max_abs(X):
    """max |x| over the stored entries of X (dense or sparse; 0 for none), without an |X| temporary."""
    data = X.data if sp.issparse(X) else X
    return max(float(data.max()), -float(data.min())) if data.size else 0.0


def check_feature_scale(X, who):
    """The largest |x| of X; ValueError when it lies outside FEATURE_SCALE (all-zero X is accepted)."""
    top = max_abs(X)
    low, high = FEATURE_SCALE
    if top > high or 0.0 < top < low:
        raise ValueError(f"{who}: the features of X reach |x| = {top:.3g}, outside [{low:g}, {high:g}], where the "
                         "objective's squared terms leave float64's range and the solution would be wrong; scale X "
                         "first (e.g. sklearn.preprocessing.StandardScaler or MaxAbsScaler)")
    return top


def feature_scale_spread(X):
    """max over columns of max |x| divided by its min over the columns with a non-zero entry (1.0 for none): how
    far apart the features' scales are. O(nnz)."""
    if sp.issparse(X):
        top = np.asarray(abs(X).max(axis=0).todense()).ravel()
    else:
        top = np.max(np.abs(X), axis=0, initial=0.0)
    top = top[top > 0]
    return float(top.max() / top.min()) if top.size else 1.0


def _as_1d(a, name, n=None, of="X"):
    """``a`` as a 1-d array of length ``n``; a mismatch names ``of``, the argument that set the length."""
    if a is None:
        raise ValueError(f"this estimator requires {name} to be passed, but the target {name} is None")
    a = np.asarray(a)
    _check_kind(a, name)
    if a.ndim == 2 and 1 in a.shape:
        a = a.ravel()
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} entries but {of} has {n} {'rows' if of == 'X' else 'entries'}; "
                         "lengths must match")
    return a


def check_y(y, n=None, *, name="y", of="X"):
    """Return finite float64 relevance labels of length ``n`` (the length of ``of``)."""
    y = _as_1d(y, name, n, of).astype(np.float64, copy=False)
    _check_finite(y, name)
    return y


def check_row_weights(values, n, *, name, default=0.0):
    """Return a finite, non-negative float64 per-row vector of length ``n`` (``default`` everywhere for None).

    For per-row margins and weights such as DominationRank's ``offset``.
    """
    if values is None:
        return np.full(n, default, dtype=np.float64)
    values = check_y(values, n, name=name)
    if np.any(values < 0):
        raise ValueError(f"{name} must be >= 0; found {values.min()!r}")
    return values


def check_sample_weight(sample_weight, n, *, of="X", what="row"):
    """``sample_weight`` as a float64 vector of ``n`` finite weights >= 0, not all 0 (a number: that weight on
    every row); None stays None (unweighted, the fast path of every solver).

    The one meaning of a weight across cyrank (README, "Weights"): a weight stands for that many copies. In the
    pairwise families the pair (i, j) with y_i > y_j counts with w_i, the preferred row's weight (inverse
    propensity weighting, Joachims, Swaminathan & Schnabel, WSDM 2017, section 4); DominationRank weighs the
    term l_i by w_i; LabelRankBoost weighs instances and MLR queries.
    """
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Number) and not isinstance(sample_weight, bool):
        sample_weight = np.full(n, sample_weight, dtype=np.float64)
    w = _as_1d(sample_weight, "sample_weight", n, of).astype(np.float64, copy=False)
    _check_finite(w, "sample_weight")
    if w.min() < 0:
        first = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"sample_weight must be >= 0; {what} {first} has {float(w[first])!r}. A weight counts "
                         f"its {what} that many times (0 leaves it out)")
    if not w.any():
        raise ValueError(f"sample_weight is 0 on every {what} (all weights zero), so nothing would be fitted; give "
                         f"some {what}s a positive weight (or pass sample_weight=None for equal weights)")
    return w


def has_weighted_pairs(sample_weight, groups):
    """Whether some preference pair of ``groups`` (QueryGroups with labels) has a positive weight: some row
    preferred to another row of its query (above its query's lowest label) has sample_weight > 0 (input row
    order; None: every pair weighs 1)."""
    if groups.n_pairs_possible == 0:
        return False
    if sample_weight is None:
        return True
    return bool(groups.sort(sample_weight)[groups.level_sorted > 0].any())


def check_preferred_weight(sample_weight, groups):
    """ValueError when ``sample_weight`` (input row order; None passes) is 0 on every row that is preferred to
    another row of its query (``groups``: QueryGroups with labels): every preference pair would weigh 0."""
    if groups.n_pairs_possible and not has_weighted_pairs(sample_weight, groups):
        raise ValueError("sample_weight is 0 on every row that is preferred to another row of its query, so every "
                         "preference pair weighs 0 (a pair (i, j) with y_i > y_j counts with the weight of row i); "
                         "give some rows above their query's lowest label a positive weight")


def check_class_labels(y, n, *, who="this estimator", min_count=1):
    """Return ``(classes, labels)``: the sorted distinct class labels of ``y`` (numbers or strings) and each row's
    index into them (int64). At least two classes, each with at least ``min_count`` members."""
    if y is None:
        raise ValueError(f"{who} requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.dtype.kind in "OUS":  # string or object labels: compared, never converted to numbers
        if y.ndim == 2 and 1 in y.shape:
            y = y.ravel()
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-d with one label per row of X ({n}); got shape {y.shape}")
    else:
        y = check_y(y, n, name="y")
    classes, labels, counts = np.unique(y, return_inverse=True, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"{who} needs at least 2 classes (got 1 class): with a single class no point is "
                         "irrelevant to any query")
    if np.any(counts < min_count):
        single = classes[counts < min_count][0]
        single = single.item() if isinstance(single, np.generic) else single  # plain number or str in the message
        raise ValueError(f"class {single!r} has {counts[counts < min_count][0]} member(s), fewer than {min_count}: "
                         f"{who} needs at least {min_count} points per class so that each query has a relevant point")
    return classes, labels.astype(np.int64)


# the largest display position LambdaMART's fit(position=) takes (it estimates a bias t+ and t- per position)
MAX_POSITION = 2**20 - 1


def check_position(position, n):
    """``position`` (fit's display positions, one integer >= 0 per row: 0 = top) as int64, or a ValueError /
    TypeError saying what is wrong."""
    if sp.issparse(position):
        raise TypeError("position must be a 1-d array of integers (one display position per row), not a sparse "
                        "matrix")
    a = np.asarray(position)
    if a.dtype.kind == "b" or a.dtype.kind not in "iuf":
        raise TypeError(f"position must hold integers (the display position of each row, 0 = top), got dtype "
                        f"{a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"position must be 1-d, one display position per row, got shape {a.shape}")
    if a.shape[0] != n:
        raise ValueError(f"position has {a.shape[0]} entries but X has {n} rows: give one display position per row")
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)):
            raise ValueError("position holds NaN or infinite values: give every row its display position (an "
                             "integer >= 0)")
        if np.any(a != np.floor(a)):
            bad = a[a != np.floor(a)][0]
            raise ValueError(f"position must hold integers (display positions 0, 1, 2, ...), found {bad!r}")
    if n and a.min() < 0:
        raise ValueError(f"position must be >= 0 (0 = the top position), found {a.min()!r}; with 1-based ranks "
                         "pass rank - 1")
    if n and a.max() > MAX_POSITION:
        raise ValueError(f"position must be at most {MAX_POSITION} (one bias per position is estimated), found "
                         f"{a.max()!r}; renumber the positions 0, 1, 2, ... from the top")
    return a.astype(np.int64)


def check_qid(qid, n, of="X"):
    """Return int64 query ids of length ``n``, the length of ``of`` (all zeros when ``qid`` is None).

    Integer arrays are taken as they are; float arrays only if every value is an integer. String ids (str or
    bytes arrays, or object arrays of str: TREC topics such as "301" or "q-12") are replaced by their index in
    the sorted distinct ids (:func:`factorize_qid` also returns the ids), which groups the rows the same way.
    """
    return factorize_qid(qid, n, of)[0]


def factorize_qid(qid, n, of="X"):
    """``(codes, ids)``: int64 query ids of length ``n`` as :func:`check_qid` returns them, and the original id
    of each code for string ids (``ids[codes[i]]`` is row i's id, ids sorted), or None for numeric ids (the
    codes are then the ids). Object arrays must hold one kind of id (all str, all bytes or all numbers);
    None, NaN or a mix of kinds is refused."""
    if qid is None:
        return np.zeros(n, dtype=np.int64), None
    a = np.asarray(qid)
    if a.dtype.kind in "US" and not hasattr(qid, "dtype"):  # a list: numpy turns [1, "a"] into strings silently
        _object_qid(np.asarray(qid, dtype=object).ravel())
    if a.dtype.kind == "O":
        a = _object_qid(a.ravel() if a.ndim == 2 and 1 in a.shape else a)
    if a.dtype.kind in "US":
        a = a.ravel() if a.ndim == 2 and 1 in a.shape else a
        if a.ndim != 1:
            raise ValueError(f"qid must be 1-d, got shape {a.shape}")
        if a.shape[0] == 0:
            raise ValueError("qid is empty")
        if n is not None and a.shape[0] != n:
            raise ValueError(f"qid has {a.shape[0]} entries but {of} has {n} "
                             f"{'rows' if of == 'X' else 'entries'}; lengths must match")
        ids, codes = np.unique(a, return_inverse=True)
        return codes.reshape(-1).astype(np.int64), ids
    return _numeric_qid(a, n, of), None


def _object_qid(a):
    """An object array of query ids as a str, bytes or numeric array (one kind only)."""
    if a.ndim != 1:
        raise ValueError(f"qid must be 1-d, got shape {a.shape}")
    for i, v in enumerate(a):
        if v is None or (isinstance(v, (float, np.floating)) and v != v):
            raise ValueError(f"qid has a missing id ({v!r}) at row {i}; every row needs a query id (drop or label "
                             "those rows first)")
    kinds = {"str" if isinstance(v, (str, np.str_)) else "bytes" if isinstance(v, (bytes, np.bytes_))
             else "number" if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
             else type(v).__name__ for v in a}
    if len(kinds) > 1 or not kinds <= {"str", "bytes", "number"}:
        raise TypeError(f"qid mixes kinds of ids ({', '.join(sorted(kinds))}); query ids must be all strings or "
                        "all integers: convert them first, e.g. qid = numpy.asarray(qid).astype(str)")
    if kinds == {"str"}:
        return a.astype(str)
    if kinds == {"bytes"}:
        return a.astype(bytes)
    values = a.tolist()
    return np.asarray(values, dtype=np.int64 if all(isinstance(v, numbers.Integral) and -2**63 <= v < 2**63
                                                    for v in values) else np.float64)


def _numeric_qid(qid, n, of):
    qid = _as_1d(qid, "qid", n, of)
    if qid.dtype.kind in "iub":
        if qid.dtype.kind == "u" and qid.dtype.itemsize == 8 and qid.size and qid.max() > np.iinfo(np.int64).max:
            raise ValueError("qid values exceed the int64 range")
        return qid.astype(np.int64, copy=False)
    _check_finite(qid, "qid")
    too_big = np.abs(qid) >= 2.0**63  # float64 holds -2**63 exactly, nothing larger than int64 in the other end
    if np.any(too_big & (qid != -(2.0**63))):
        bad = qid[too_big & (qid != -(2.0**63))][0]
        raise ValueError(f"qid value {float(bad)!r} is out of the int64 range [-2**63, 2**63 - 1]; query ids must be "
                         "64-bit integers (or strings)")
    as_int = qid.astype(np.int64)
    if not np.array_equal(as_int, qid):
        bad = qid[as_int != qid][0]
        raise ValueError(f"qid must hold integer (or string) query ids; found non-integer value {float(bad)!r}")
    return as_int


def check_ranking_data(X, y, qid=None, **x_kwargs):
    """Check a training set; return ``(X, y, qid)`` with X from :func:`check_X`, float64 y, int64 qid."""
    X = check_X(X, **x_kwargs)
    n = X.shape[0]
    return X, check_y(y, n), check_qid(qid, n)


def check_scores(y_true, y_score, qid=None):
    """Check the inputs of a metric; return float64 ``y_true``, float64 ``y_score`` and int64 ``qid``."""
    y_true = check_y(y_true, name="y_true")
    y_score = check_y(y_score, y_true.shape[0], name="y_score", of="y_true")
    return y_true, y_score, check_qid(qid, y_true.shape[0], of="y_true")


MAX_EXP_LABEL = 512  # 2**y - 1 summed over any realistic query stays far below the float64 range


def check_gain_labels(y, name, *, exponential=True, hint=""):
    """Relevance labels used as gains (NDCG, ERR): non-negative, and at most MAX_EXP_LABEL when the gain is
    2**y - 1 (beyond it the gains overflow and every result would be NaN). ``hint`` ends the message."""
    if y.size and y.min() < 0:
        raise ValueError(f"{name} needs non-negative relevance labels (gains); found {y.min()!r}")
    if exponential and y.size and y.max() > MAX_EXP_LABEL:
        raise ValueError(f"exponential gain 2**y - 1 overflows for labels above {MAX_EXP_LABEL} (found {y.max()!r})"
                         + hint)


def check_label_matrix(R, name):
    """A label matrix (instances x labels: indicator, graded relevance or label scores), dense or sparse, as a
    finite 2-d float64 array with at least one row and one column."""
    if R is None:
        raise ValueError(f"{name} is required")
    R = R.toarray() if sp.issparse(R) else np.asarray(R)
    _check_kind(R, name)
    if R.ndim != 2:
        raise ValueError(f"{name} must be a 2-d (instances x labels) matrix, got shape {R.shape}")
    if R.shape[0] == 0 or R.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {R.shape})")
    R = R.astype(np.float64, copy=False)
    _check_finite(R, name)
    return R


def check_joint_features(J, n, n_labels):
    """Joint label-ranking features: a finite float64 array of shape (n, n_labels, p), p >= 1."""
    J = np.asarray(J)
    _check_kind(J, "joint")
    if J.ndim != 3 or J.shape[:2] != (n, n_labels) or J.shape[2] == 0:
        raise ValueError(f"joint must have shape (n_instances, n_labels, n_joint_features) = ({n}, {n_labels}, p "
                         f">= 1); got {J.shape}")
    J = np.ascontiguousarray(J, dtype=np.float64)
    _check_finite(J, "joint")
    return J


def warn_no_preferences():
    """Label-ranking data with no preference edge at all: nothing to learn (the model stays 0)."""
    warnings.warn("no instance has a preference edge: the loss is 0 whatever the model, which stays at 0",
                  RankingDataWarning, stacklevel=3)


def check_preference_edges(edge_ptr, init, term, n_labels):
    """Flat preference graphs (cyrank.labelrank.graphs): edge_ptr (int64, from 0, non-decreasing, ending at the
    number of edges), init and term (labels in 0 .. n_labels - 1, int32), no self-loop, no repeated edge within an
    instance, edges sorted by (init, term) within each instance. Returns the arrays in those dtypes."""
    n_labels = check_param("n_labels", n_labels, low=1, integer=True)
    edge_ptr, init, term = np.asarray(edge_ptr), np.asarray(init), np.asarray(term)
    for name, a in (("edge_ptr", edge_ptr), ("init", init), ("term", term)):
        if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
            raise ValueError(f"{name} must be a 1-d integer array")
    if edge_ptr.size < 2:
        raise ValueError("preference graphs need at least one instance (edge_ptr of length >= 2)")
    if edge_ptr[0] != 0 or np.any(np.diff(edge_ptr) < 0) or edge_ptr[-1] != init.size or init.size != term.size:
        raise ValueError("edge_ptr must start at 0, never decrease and end at the number of edges (len(init) == "
                         "len(term))")
    for name, a in (("init", init), ("term", term)):
        if a.size and (a.min() < 0 or a.max() >= n_labels):
            bad = int(a[(a < 0) | (a >= n_labels)][0])
            raise ValueError(f"{name} holds label {bad}, out of range for n_labels={n_labels}")
    if np.any(init == term):
        e = int(np.flatnonzero(init == term)[0])
        raise ValueError(f"edge {e} is a self-loop ({int(init[e])} -> {int(term[e])}); preference graphs are simple")
    inst = np.repeat(np.arange(edge_ptr.size - 1), np.diff(edge_ptr))
    key = (inst * n_labels + init) * n_labels + term
    if key.size > 1 and not np.all(np.diff(key) > 0):
        bad = int(np.flatnonzero(np.diff(key) <= 0)[0]) + 1
        what = "repeats an edge" if key[bad] == key[bad - 1] else "is not sorted by (init, term)"
        raise ValueError(f"instance {int(inst[bad])} {what} at edge {bad}; build graphs with "
                         "PreferenceGraphs.from_edges, which sorts them and reports repeated edges")
    return (edge_ptr.astype(np.int64), init.astype(np.int32), term.astype(np.int32), n_labels)


def _finite_real(value):
    """Whether a real number is finite; a Python int too large for a float (2**1100) is not."""
    try:
        return bool(np.isfinite(float(value)))
    except OverflowError:
        return False


def check_param(name, value, *, low=None, high=None, low_open=False, high_open=False, integer=False, none_ok=False):
    """Return a checked scalar hyper-parameter: a finite real (or an integer) within the given bounds.

    ``low``/``high`` are inclusive unless ``low_open``/``high_open``; NaN, inf, booleans and
    non-numbers are refused with a message naming the parameter.
    """
    if value is None and none_ok:
        return None
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kind):
        what = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {what}, got {value!r} ({type(value).__name__})")
    if not integer and not _finite_real(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {value!r}")
    return int(value) if integer else float(value)


def check_n_jobs(n_jobs):
    """``n_jobs`` as None (the default thread count), an int >= 1, or -1 for every core."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, (bool, np.bool_)) and n_jobs == -1:
        return os.cpu_count() or 1
    return check_param("n_jobs", n_jobs, low=1, integer=True)


def check_verbose(verbose):
    """``verbose`` as an int >= 0; True and False count as 1 and 0 (as in scikit-learn)."""
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    return check_param("verbose", verbose, low=0, integer=True)


def check_random_state(random_state, name="random_state"):
    """A ``numpy.random.RandomState`` from None (numpy's global one), an int seed in [0, 2**32 - 1], a RandomState
    (returned as is, so successive fits draw different numbers: scikit-learn's semantics,
    ``sklearn.utils.check_random_state``) or a ``numpy.random.Generator`` (a seed is drawn from it). Anything
    else (a str, a float, a bool) is a ValueError naming the parameter."""
    if random_state is None or random_state is np.random:
        return np.random.mtrand._rand
    if isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.RandomState(int(random_state.integers(2**32)))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if 0 <= random_state < 2**32:
            return np.random.RandomState(int(random_state))
    raise ValueError(f"{name} must be None, an int in [0, 2**32 - 1], a numpy RandomState or Generator; got "
                     f"{random_state!r} ({type(random_state).__name__}); e.g. {name}=0 for a reproducible fit")


def random_seed(random_state, name="random_state", high=2**31 - 1):
    """An int seed in [0, high] for a library that takes a seed (LightGBM): None gives 0 (deterministic), an int
    in range is used as it is, and a RandomState or Generator draws one (so successive fits differ, as in
    scikit-learn). Anything else is the ValueError of :func:`check_random_state`."""
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)) \
            and not 0 <= random_state <= high:
        raise ValueError(f"{name} must be None, an int in [0, {high}], a numpy RandomState or Generator; got "
                         f"{random_state!r}; e.g. {name}=0 for a reproducible fit")
    rng = check_random_state(random_state, name)
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    return int(rng.randint(high + 1))


def check_options(options, cls, who):
    """``options`` as an instance of the dataclass ``cls`` (the ``Options`` of a solver module): None gives the
    defaults; another type is a TypeError saying how to build one. Each field must have the type of its default
    (an int field takes an int, a float field any real number, a bool field a bool)."""
    if options is None:
        return cls()
    if not isinstance(options, cls):
        name = f"{cls.__module__.replace('.solver', '')}.Options"
        raise TypeError(f"{who}: options must be a {name} or None, got {type(options).__name__}; build one with "
                        f"{name}(field=value, ...)" + (" (from a dict d: Options(**d))" if isinstance(options, dict)
                                                      else ""))
    for field in cls.__dataclass_fields__.values():
        value, default = getattr(options, field.name), field.default
        if isinstance(default, bool):
            ok = isinstance(value, (bool, np.bool_))
        elif isinstance(default, numbers.Integral):
            ok = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
        elif isinstance(default, numbers.Real):
            ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and _finite_real(value)
        else:
            ok = True
        if not ok:
            raise TypeError(f"{who}: Options.{field.name} must be {type(default).__name__} like its default "
                            f"{default!r}; got {value!r} ({type(value).__name__})")
    return options


def check_option(name, value, options):
    """Return ``value`` if it is one of ``options``, else raise a ValueError listing them."""
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return value


def warn_if_no_pairs(groups):
    """Warn (once per call) when no query of ``groups`` has two label levels: no preference pair exists."""
    if groups.n_pairs_possible == 0:
        warnings.warn(
            "no query has two different labels, so there is no preference pair to learn from; "
            "the model will be trivial",
            RankingDataWarning,
            stacklevel=3,
        )
        return True
    return False


def missing_qid_message(who, method, n_rows=None):
    """The text of :class:`MissingQidWarning`: what happened and the two ways to pass qid."""
    rows = "all rows" if n_rows is None else f"all {n_rows} rows"
    what = f"{rows} were taken as one query" if method != "score" else f"the score was computed on {rows} as one query"
    return (f"{who}.{method} got no qid, so {what}. Pass the query ids: {method}(X, y, qid=qid) "
            "(qid=numpy.zeros(len(y)) if the rows are one query; this also silences the warning). In GridSearchCV, "
            "cross_validate or a Pipeline, groups=qid reaches only the splitter: call "
            "sklearn.set_config(enable_metadata_routing=True), request qid with "
            f"{who}().set_fit_request(qid=True).set_score_request(qid=True), and pass qid=qid to search.fit(...) "
            "or params={'qid': qid} to cross_validate")


def check_coef(coef, d, name="coef"):
    """``coef`` as a finite float64 vector of d weights (one per column of X; a (d, 1) or (1, d) array is
    flattened), a new contiguous array, or a ValueError saying what it must be."""
    try:
        w = np.array(coef, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-d array of {d} real weights (one per feature of X), got "
                         f"{type(coef).__name__}") from None
    if w.ndim == 2 and 1 in w.shape and w.size == d:
        w = w.ravel()
    if w.shape != (d,):
        raise ValueError(f"{name} must be a 1-d array of {d} weights (one per feature of X), got shape {w.shape}; "
                         f"pass the fitted model's coef_ or a vector of length {d}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} has NaN or infinite entries; pass finite weights")
    return np.ascontiguousarray(w)
