"""Kernel matrices of RankSVM: K(A, B) by BLAS plus one elementwise pass, Q stored or recomputed block-wise within
a memory budget (with the cost of a block-wise Q announced, or refused, before the fit).
"""
import time
import warnings

import numpy as np
import scipy.sparse as sp

from .._memory import check_memory
from .._validation import max_abs
from . import _kernel

MB = 1 << 20  # bytes in one of kernel_memory_mb's megabytes (MiB)
_MB = MB  # the former private name (ranksvm/solver.py)


# ------------------------------------------------------------------------------------------------- kernels
def kernel_matrix(A, B, kernel, gamma, degree, coef0, out=None, B_sqnorm=None):
    """K(A, B) as a dense float64 array (written into ``out`` when given): BLAS product A B', then one
    elementwise pass (_kernel.pyx). rbf: exp(-gamma ||a - b||^2); poly: (gamma a'b + coef0)^degree;
    linear: a'b. A and B are float64 (dense or CSR).
    """
    shape = (A.shape[0], B.shape[0])
    if out is None:
        out = np.empty(shape)
    elif out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous float64 array of the block's shape")
    if sp.issparse(A) or sp.issparse(B):
        AB = A @ B.T
        if sp.issparse(AB):
            AB.toarray(out=out)
        else:
            out[...] = AB
    else:
        np.dot(A, B.T, out=out)
    if kernel == "rbf":
        b2 = row_sqnorm(B) if B_sqnorm is None else B_sqnorm
        _kernel.rbf_from_gram(out, row_sqnorm(A), np.ascontiguousarray(b2, dtype=np.float64), float(gamma))
    elif kernel == "poly":
        _kernel.poly_from_gram(out, float(gamma), float(coef0), int(degree))
    if not np.isfinite(out).all():
        scale = max(max_abs(A), max_abs(B))
        raise ValueError(
            f"the {kernel} kernel overflows float64 (non-finite entries in K) with gamma={gamma:g}"
            + (f", degree={degree}, coef0={coef0:g}" if kernel == "poly" else "")
            + f" and features up to |x| = {scale:.3g}; scale X (e.g. sklearn.preprocessing.StandardScaler) or lower "
            + ("gamma or degree" if kernel == "poly" else "gamma"))
    return out


def row_sqnorm(A):
    if sp.issparse(A):
        return np.ascontiguousarray(np.asarray(A.multiply(A).sum(axis=1), dtype=np.float64).ravel())
    return np.einsum("ij,ij->i", A, A)


def check_symmetric(K, block=1024):
    """ValueError unless the square matrix K is symmetric (to 1e-8 of its largest entry), checked in blocks."""
    n = K.shape[0]
    scale = max(float(np.max(np.abs(K))), np.finfo(float).tiny)
    for start in range(0, n, block):
        stop = min(n, start + block)
        if not np.allclose(K[start:stop, :], K[:, start:stop].T, rtol=0, atol=1e-8 * scale):
            raise ValueError("kernel='precomputed' needs a symmetric (positive semi-definite) training kernel "
                             "matrix; the one given is not symmetric")


class StoredKernel:
    """Q held in memory (l x l float64); matvec is one BLAS gemv."""

    def __init__(self, Q):
        self.Q = Q
        self.n_matvec = 0

    def matvec(self, v):
        self.n_matvec += 1
        return self.Q @ v


class BlockedKernel:
    """Q = K(X, X) recomputed in row blocks at every product (when it does not fit ``kernel_memory_mb``)."""

    def __init__(self, X, kernel, gamma, degree, coef0, block_rows):
        self.X, self.kernel, self.gamma, self.degree, self.coef0 = X, kernel, gamma, degree, coef0
        self.block_rows = int(block_rows)
        self.sqnorm = row_sqnorm(X) if kernel == "rbf" else None
        self.n_matvec = 0
        n = X.shape[0]
        self._buf = np.empty((min(self.block_rows, n), n))

    def block_product(self, start, v):
        """Rows start:start + block_rows of Q v (the block of Q recomputed)."""
        stop = min(self.X.shape[0], start + self.block_rows)
        K = kernel_matrix(self.X[start:stop], self.X, self.kernel, self.gamma, self.degree, self.coef0,
                          out=self._buf[: stop - start], B_sqnorm=self.sqnorm)
        return K @ v

    def matvec(self, v):
        self.n_matvec += 1
        n = self.X.shape[0]
        out = np.empty(n)
        for start in range(0, n, self.block_rows):
            out[start:start + self.block_rows] = self.block_product(start, v)
        return out


def kernel_operator(Xk, kernel, gamma, degree, coef0, memory_mb, verbose, *, max_seconds=60.0, warn_seconds=1.0):
    """StoredKernel when Q fits in ``memory_mb`` (and in free memory), else BlockedKernel; clear errors first.

    ``memory_mb`` is what remains of ``kernel_memory_mb`` after the training rows (``Xk``, dense or sparse).
    A blocked Q costs a full recomputation per product: the first block is timed, and when one product is
    estimated above ``max_seconds`` the fit is refused before any further work, with the estimate and the
    options; above ``warn_seconds`` the estimate is given in a warning.
    """
    n = Xk.shape[0]
    budget = memory_mb * MB
    need = n * n * 8
    row_bytes = n * 8
    if row_bytes > budget:
        raise ValueError(
            f"kernel_memory_mb leaves {memory_mb:.3g} MB after the training rows, not even one row of the {n} x {n} "
            f"kernel matrix ({row_bytes / MB:.3g} MB per row); increase kernel_memory_mb")
    if need <= budget:
        check_memory(need, f"the {n} x {n} kernel matrix",
                     "lower kernel_memory_mb to recompute it block-wise instead")
        Q = np.empty((n, n))
        kernel_matrix(Xk, Xk, kernel, gamma, degree, coef0, out=Q)
        if verbose:
            print(f"RankSVM: kernel matrix {n} x {n} stored ({need / MB:.0f} MB)")
        return StoredKernel(Q)
    block = int(max(1, budget // row_bytes))
    op = BlockedKernel(Xk, kernel, gamma, degree, coef0, block)
    t0 = time.perf_counter()
    op.block_product(0, np.zeros(n))
    per_product = (time.perf_counter() - t0) * -(-n // block)
    estimate = (f"the {n} x {n} kernel matrix ({need / MB:.3g} MB) exceeds the kernel memory left "
                f"({memory_mb:.3g} MB), so it is recomputed in {-(-n // block)} blocks at every product: about "
                f"{per_product:.3g} s per product, and a fit takes tens to hundreds of products")
    options = ("raise kernel_memory_mb (to at least the matrix size, if the machine has it), fit on a subsample "
               "of the queries, or use kernel='linear'")
    if per_product > max_seconds:
        raise ValueError(f"RankSVM: {estimate}; refused (over {max_seconds:g} s per product). Options: "
                         f"{options}")
    if per_product > warn_seconds:
        warnings.warn(f"RankSVM: {estimate}. To go faster: {options}", UserWarning, stacklevel=4)
    if verbose:
        print(f"RankSVM: {estimate}")
    return op
