"""The one place where X, y, qid and hyper-parameters are checked.

Every estimator, metric and CLI command calls these functions, so a bad input gets the same clear
``ValueError``/``TypeError`` everywhere. Conventions (DESIGN.md, "Data conventions"):

* ``X``: dense (n, d) array or scipy.sparse matrix (CSR/CSC, int32 or int64 indices), float32 or float64,
  finite, at least one row and one column. Object, string and complex dtypes are refused, never cast.
* ``y``: n finite real relevance labels (larger = better; equal = tie).
* ``qid``: n integer query ids (any integers; rows of a query need not be contiguous). Floats are accepted
  only when every value is integral. ``qid=None`` means one query holding every row.
"""
import numbers
import warnings

import numpy as np
import scipy.sparse as sp

FLOAT_DTYPES = (np.float64, np.float32)


class RankingDataWarning(UserWarning):
    """Training data from which a pairwise ranker can learn nothing (no query with two label levels)."""


def _check_kind(a, name):
    """Refuse dtypes that numpy would otherwise cast silently (object, str, bytes, complex, void)."""
    kind = a.dtype.kind
    if kind in "OUSV":
        raise TypeError(f"{name} has dtype {a.dtype}; expected a numeric (int, float or bool) array")
    if kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {a.dtype}; ranking data must be real")


def _check_finite(values, name):
    if not np.all(np.isfinite(values)):
        bad = "NaN" if np.isnan(values).any() else "infinity"
        raise ValueError(f"{name} contains {bad}; every value must be finite")


def _check_not_empty(shape):
    """Messages in sklearn's wording, so its estimator checks recognise them."""
    if shape[0] == 0:
        raise ValueError(f"X is empty: 0 sample(s) (shape={shape}) while a minimum of 1 is required.")
    if shape[1] == 0:
        raise ValueError(f"X is empty: 0 feature(s) (shape={shape}) while a minimum of 1 is required.")


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
        fmt = X.format if X.format in accept_sparse else accept_sparse[0]
        X = X.asformat(fmt, copy=copy)
        if X.dtype not in dtypes:
            X = X.astype(dtypes[0])
        _check_not_empty(X.shape)
        _check_finite(X.data, "X")
        if not X.has_sorted_indices:
            X = X.copy()  # never reorder the caller's matrix in place
            X.sort_indices()
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


def _as_1d(a, name, n=None):
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
        raise ValueError(f"{name} has {a.shape[0]} entries but X has {n} rows; lengths must match")
    return a


def check_y(y, n=None, *, name="y"):
    """Return finite float64 relevance labels of length ``n``."""
    y = _as_1d(y, name, n).astype(np.float64, copy=False)
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


def check_qid(qid, n):
    """Return int64 query ids of length ``n`` (all zeros when ``qid`` is None).

    Integer arrays are taken as they are; float arrays only if every value is an integer.
    """
    if qid is None:
        return np.zeros(n, dtype=np.int64)
    qid = _as_1d(qid, "qid", n)
    if qid.dtype.kind in "iub":
        if qid.dtype.kind == "u" and qid.dtype.itemsize == 8 and qid.size and qid.max() > np.iinfo(np.int64).max:
            raise ValueError("qid values exceed the int64 range")
        return qid.astype(np.int64, copy=False)
    _check_finite(qid, "qid")
    as_int = qid.astype(np.int64)
    if not np.array_equal(as_int, qid):
        bad = qid[as_int != qid][0]
        raise ValueError(f"qid must hold integer query ids; found non-integer value {bad!r}")
    return as_int


def check_ranking_data(X, y, qid=None, **x_kwargs):
    """Check a training set; return ``(X, y, qid)`` with X from :func:`check_X`, float64 y, int64 qid."""
    X = check_X(X, **x_kwargs)
    n = X.shape[0]
    return X, check_y(y, n), check_qid(qid, n)


def check_scores(y_true, y_score, qid=None):
    """Check the inputs of a metric; return float64 ``y_true``, float64 ``y_score`` and int64 ``qid``."""
    y_true = check_y(y_true, name="y_true")
    y_score = check_y(y_score, y_true.shape[0], name="y_score")
    return y_true, y_score, check_qid(qid, y_true.shape[0])


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
    if not integer and not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {value!r}")
    return int(value) if integer else float(value)


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


def check_has_pairs(groups, who="this ranker"):
    """ValueError when no query of ``groups`` (with labels) has two label levels: no preference pair exists."""
    if groups.n_pairs_possible == 0:
        raise ValueError(
            "no query has two different labels, so there is no preference pair to learn from "
            f"({groups.n_queries} quer{'y' if groups.n_queries == 1 else 'ies'}, {groups.n_samples} sample(s)); "
            f"{who} needs at least one query whose documents have different labels"
        )
