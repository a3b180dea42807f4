"""A seeded generator of graded learning-to-rank data: :func:`make_ranking`."""
import numbers

import numpy as np
import scipy.sparse as sp

__all__ = ["make_ranking"]


def _positive_int(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def _quantile_bins(score, n_levels):
    """Grades 0..n_levels-1: the index of ``score`` among the ``n_levels``-quantiles of ``score`` (ties stay tied)."""
    return np.digitize(score, np.quantile(score, np.linspace(0.0, 1.0, n_levels + 1)[1:-1]))


def make_ranking(n_queries=10, n_docs=100, n_features=5, n_levels=3, *, density=1.0, sparse=False,
                 dtype=np.float64, noise=1.0, binning="query", feature_scales=None, string_qid=False,
                 shuffle=False, random_state=None):
    """Random graded ranking data ``(X, y, qid)``: labels from a noisy linear score binned into grades.

    X is standard normal, ``n_docs x n_features``; each entry is kept with probability ``density`` (the rest are
    zeros). The score is ``X @ w + noise * e`` with ``w, e`` standard normal, and the label of a document is the
    index of its score among the ``n_levels``-quantiles of the scores of its query (``binning="query"``: every
    query of two or more documents gets several grades) or of all documents (``binning="global"``: a query may
    have a single grade). Ties are possible.

    Parameters
    ----------
    n_queries : int
        Number of query ids drawn from; with an integer ``n_docs`` the documents are assigned to them uniformly
        at random (so the query sizes vary and a query may be empty).
    n_docs : int or sequence of int
        The total number of documents, or the size of each of the ``n_queries`` queries.
    n_features : int
    n_levels : int
        Number of label grades, ``y`` in ``0..n_levels-1`` (float64).
    density : float in (0, 1]
        Share of the entries of X kept non-zero.
    sparse : bool
        Return X as a CSR matrix.
    dtype : float64 or float32
        The dtype of X (drawn in float64, then cast).
    noise : float
        Scale of the noise added to the linear score (0: the labels are a function of ``X @ w``).
    binning : "query" or "global"
        Where the quantiles of the grades are taken.
    feature_scales : None or array-like of shape (n_features,)
        Multiplies column j of X by ``feature_scales[j]`` after the labels are drawn (badly scaled columns: the
        labels depend on the scaled column as they did on the unscaled one).
    string_qid : bool
        Query ids ``"q0", "q1", ...`` (a numpy str array) instead of int64 ``0, 1, ...``.
    shuffle : bool
        False: the rows are grouped by query, queries in increasing id. True: the rows of different queries are
        interleaved in random order.
    random_state : None, int or numpy.random.Generator
        Seed; a Generator is drawn from (so a caller can keep drawing from it after the call).

    Returns
    -------
    X : ndarray or csr_matrix, shape (n_docs, n_features)
    y : ndarray of float64, shape (n_docs,)
    qid : ndarray of int64 (or str), shape (n_docs,)

    Examples
    --------
    >>> from cyrank.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=3, n_docs=12, n_features=2, random_state=0)
    >>> X.shape
    (12, 2)
    >>> sorted(set(y.tolist()))
    [0.0, 1.0, 2.0]
    >>> qid.tolist()
    [0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2]
    """
    n_queries = _positive_int("n_queries", n_queries)
    n_features = _positive_int("n_features", n_features)
    n_levels = _positive_int("n_levels", n_levels)
    if np.ndim(n_docs) == 0:
        n = _positive_int("n_docs", n_docs)
        sizes = None
    else:
        sizes = np.asarray(n_docs)
        if sizes.shape != (n_queries,) or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 0).any():
            raise ValueError(f"n_docs must be an integer or a sequence of n_queries={n_queries} non-negative "
                             f"integers (the query sizes); got {n_docs!r}")
        n = int(sizes.sum())
        if n < 1:
            raise ValueError("n_docs: the query sizes sum to 0; give at least one document")
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1]; got {density!r}")
    if binning not in ("query", "global"):
        raise ValueError(f"binning must be 'query' or 'global'; got {binning!r}")
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise TypeError(f"dtype must be float64 or float32; got {dtype}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0; got {noise!r}")
    if feature_scales is not None:
        feature_scales = np.asarray(feature_scales, dtype=np.float64)
        if feature_scales.shape != (n_features,) or not np.isfinite(feature_scales).all():
            raise ValueError(f"feature_scales must be None or {n_features} finite numbers (one per column); got "
                             f"shape {feature_scales.shape}")
    rng = np.random.default_rng(random_state)

    X = rng.normal(size=(n, n_features))
    if density < 1.0:
        X *= rng.random((n, n_features)) < density
    score = X @ rng.normal(size=n_features) + noise * rng.normal(size=n)
    if sizes is None:
        qid = rng.integers(0, n_queries, size=n)
        perm = None if shuffle else np.argsort(qid, kind="stable")
    else:
        qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
        perm = rng.permutation(n) if shuffle else None
    if binning == "global":
        y = _quantile_bins(score, n_levels)
    else:
        y = np.empty(n, dtype=np.int64)
        for q in np.unique(qid):
            rows = np.flatnonzero(qid == q)
            y[rows] = _quantile_bins(score[rows], n_levels)
    y = y.astype(np.float64)
    if perm is not None:
        X, y, qid = X[perm], y[perm], qid[perm]
    if feature_scales is not None:
        X *= feature_scales
    X = X.astype(dtype, copy=False)
    if sparse:
        X = sp.csr_matrix(X)
    qid = qid.astype(np.int64, copy=False)
    if string_qid:
        qid = np.array([f"q{q}" for q in qid])
    return X, y, qid
