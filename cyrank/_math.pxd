# Inline numerical helpers shared by the kernels: all noexcept nogil.
from libc.math cimport exp, log, log1p, log2, fabs, INFINITY

from cyrank._typedefs cimport intp_t


cdef inline double log1pexp(double x) noexcept nogil:
    """log(1 + exp(x)) without overflow."""
    if x > 0.0:
        return x + log1p(exp(-x))
    return log1p(exp(x))


cdef inline double sigmoid(double x) noexcept nogil:
    """1 / (1 + exp(-x)) without overflow."""
    cdef double e
    if x >= 0.0:
        return 1.0 / (1.0 + exp(-x))
    e = exp(x)
    return e / (1.0 + e)


cdef inline double pair_sigmoid(double x, double* rho1) noexcept nogil:
    """rho = 1 / (1 + exp(-x)), and 1 - rho into rho1, by one exponential of -|x|: no overflow and no 0/0 at any x
    (a pair of RankNet's scores hundreds apart)."""
    cdef double e = exp(-fabs(x))
    rho1[0] = e / (1.0 + e) if x >= 0.0 else 1.0 / (1.0 + e)
    return 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)


cdef inline double soft_threshold(double x, double t) noexcept nogil:
    """sign(x) * max(|x| - t, 0)."""
    if x > t:
        return x - t
    if x < -t:
        return x + t
    return 0.0


cdef inline double l1_violation(double grad, double z, double lam1) noexcept nogil:
    """dist(-grad, lam1 * subdifferential of |.| at z): the KKT violation of one coordinate of an l1 problem."""
    if z > 0.0:
        return fabs(grad + lam1)
    if z < 0.0:
        return fabs(grad - lam1)
    return max(fabs(grad) - lam1, 0.0)


cdef inline double fmax2(double a, double b) noexcept nogil:
    return a if a > b else b


cdef inline double fmin2(double a, double b) noexcept nogil:
    return a if a < b else b


cdef inline intp_t imin(intp_t a, intp_t b) noexcept nogil:
    return a if a < b else b


cdef inline intp_t imax(intp_t a, intp_t b) noexcept nogil:
    return a if a > b else b


cdef inline double discount(intp_t rank, bint letor) noexcept nogil:
    """DCG discount of a 1-based rank: 1 / log2(1 + rank); with ``letor`` (LETOR 4.0's Eval-Score and MLR's NDCG,
    McFee & Lanckriet 2010): 1 for ranks 1 and 2, 1 / log2(rank) after."""
    if letor:
        return 1.0 if rank <= 2 else 1.0 / log2(<double>rank)
    return 1.0 / log2(1.0 + <double>rank)
