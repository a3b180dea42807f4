# Inline numerical helpers shared by the kernels: all noexcept nogil.
from libc.math cimport exp, log, log1p, fabs, INFINITY


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


cdef inline double soft_threshold(double x, double t) noexcept nogil:
    """sign(x) * max(|x| - t, 0)."""
    if x > t:
        return x - t
    if x < -t:
        return x + t
    return 0.0


cdef inline double fmax2(double a, double b) noexcept nogil:
    return a if a > b else b


cdef inline double fmin2(double a, double b) noexcept nogil:
    return a if a < b else b
