"""Elementwise kernel functions applied in place to a Gram block G = A B' (computed by BLAS), in one parallel
pass over memory:

    rbf   K_ij = exp(-gamma max(0, ||a_i||^2 + ||b_j||^2 - 2 G_ij))
    poly  K_ij = (gamma G_ij + coef0)^degree
"""
from libc.math cimport exp, pow

from cython.parallel cimport prange

from cyrank._typedefs cimport intp_t


def rbf_from_gram(double[:, ::1] G, const double[::1] a_sqnorm, const double[::1] b_sqnorm, double gamma):
    """G <- exp(-gamma * squared distances), the distances recovered from the Gram block G and the squared norms."""
    cdef intp_t n = G.shape[0], m = G.shape[1], i, j
    cdef double dist
    if a_sqnorm.shape[0] != n or b_sqnorm.shape[0] != m:
        raise ValueError("norms do not match the block")
    with nogil:
        for i in prange(n, schedule="static"):
            for j in range(m):
                dist = a_sqnorm[i] + b_sqnorm[j] - 2.0 * G[i, j]
                if dist < 0.0:  # rounding
                    dist = 0.0
                G[i, j] = exp(-gamma * dist)


def poly_from_gram(double[:, ::1] G, double gamma, double coef0, int degree):
    """G <- (gamma G + coef0)^degree."""
    cdef intp_t n = G.shape[0], m = G.shape[1], i, j
    with nogil:
        for i in prange(n, schedule="static"):
            for j in range(m):
                G[i, j] = pow(gamma * G[i, j] + coef0, degree)
