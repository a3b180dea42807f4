"""A data matrix prepared once for the products of the linear models' solvers: ``X.dot(w)`` = X w and
``X.rdot(v)`` = X' v in float64, X read in its own precision (float32 stays float32) by the kernels of
cyrank/_products.pyx, with no copy of X per product."""
import numpy as np
import scipy.sparse as sp

from . import _products

INT_MAX = 2**31 - 1


def product_parts(X):
    """(data, indices, indptr, dense, n_rows, n_features) of X for cyrank/_products.pyx: a dense X C-ordered
    (copied once only if it is not), a sparse X as CSR (converted once if it is another format; never made dense),
    float32 or float64 data as given (other dtypes converted to float64), indices and indptr of one width."""
    n, d = X.shape
    if sp.issparse(X):
        X = X.tocsr() if X.format != "csr" else X
        data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
        itype = np.promote_types(X.indices.dtype, X.indptr.dtype)
        if itype not in (np.int32, np.int64):
            itype = np.dtype(np.int64)
        return (np.ascontiguousarray(data), np.ascontiguousarray(X.indices, dtype=itype),
                np.ascontiguousarray(X.indptr, dtype=itype), False, int(n), int(d))
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got {X.ndim} dimension(s)")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if d > INT_MAX:
        raise ValueError(f"a dense X with {d} columns (above 2**31 - 1) cannot go through BLAS; pass it as a "
                         f"scipy.sparse CSR matrix")
    X = np.ascontiguousarray(X)
    dummy = np.zeros(1, dtype=np.int64)
    return (X.reshape(-1), dummy, dummy, True, int(n), int(d))


class LinearX:
    """X (dense or sparse, float32 or float64) prepared once (:func:`product_parts`) for X w and X' v.

    ``parallel_min_rows``: products over fewer rows run on one thread (< 0: the kernels' default). Results have
    the same bits for every thread count (cyrank/_products.pyx). One product at a time per object (it keeps the
    accumulators of X' v between calls)."""

    def __init__(self, X, parallel_min_rows=-1):
        self.parts = product_parts(X)
        self.shape = (self.parts[4], self.parts[5])
        self.dtype = self.parts[0].dtype
        self.parallel_min_rows = int(parallel_min_rows)
        self.acc = None  # the chunk accumulators of rdot, reused from call to call

    def dot(self, w, out=None):
        """X w in float64 (into ``out``, a float64 array of n_rows, when given)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if out is None:
            out = np.empty(self.shape[0])
        return _products.matvec(self.parts, w, out, self.parallel_min_rows)

    def rdot(self, v, out=None):
        """X' v in float64 (into ``out``, a float64 array of n_features, when given)."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        if out is None:
            out = np.empty(self.shape[1])
        return _products.rmatvec(self.parts, v, out, self.parallel_min_rows, self)
