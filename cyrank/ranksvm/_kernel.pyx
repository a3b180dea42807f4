"""Elementwise kernel functions applied in place to a Gram block G = A B' (computed by BLAS), in one parallel
pass over memory:

    rbf   K_ij = exp(-gamma max(0, ||a_i||^2 + ||b_j||^2 - 2 G_ij))
    poly  K_ij = (gamma G_ij + coef0)^degree

Each row writes only itself (deterministic for any thread count). Ctrl-C skips the remaining rows and raises
KeyboardInterrupt (a block can hold a gigabyte of entries).
"""
from libc.math cimport exp, pow

from cython.parallel cimport parallel, prange, threadid

from cyrank._parallel cimport Interrupt, check_interrupt, interrupt_init, keep_going
from cyrank._typedefs cimport intp_t


def rbf_from_gram(double[:, ::1] G, const double[::1] a_sqnorm, const double[::1] b_sqnorm, double gamma):
    """G <- exp(-gamma * squared distances), the distances recovered from the Gram block G and the squared norms."""
    cdef intp_t n = G.shape[0], m = G.shape[1], i, j
    cdef int tid
    cdef double dist
    cdef Interrupt intr
    if a_sqnorm.shape[0] != n or b_sqnorm.shape[0] != m:
        raise ValueError("norms do not match the block")
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel():
        tid = threadid()
        for i in prange(n, schedule="dynamic", chunksize=16):
            if not keep_going(&intr, tid, 8 * m):
                continue
            for j in range(m):
                dist = a_sqnorm[i] + b_sqnorm[j] - 2.0 * G[i, j]
                if dist < 0.0:  # rounding
                    dist = 0.0
                G[i, j] = exp(-gamma * dist)
    check_interrupt(&intr)


def poly_from_gram(double[:, ::1] G, double gamma, double coef0, int degree):
    """G <- (gamma G + coef0)^degree."""
    cdef intp_t n = G.shape[0], m = G.shape[1], i, j
    cdef int tid
    cdef Interrupt intr
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel():
        tid = threadid()
        for i in prange(n, schedule="dynamic", chunksize=16):
            if not keep_going(&intr, tid, 8 * m):
                continue
            for j in range(m):
                G[i, j] = pow(gamma * G[i, j] + coef0, degree)
    check_interrupt(&intr)
