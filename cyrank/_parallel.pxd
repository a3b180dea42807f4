# OpenMP's thread count for the kernels that split work over queries (prange); 1 for a serial build.
cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int cyrank_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int cyrank_omp_max_threads(void) { return 1; }
    #endif
    """
    int cyrank_omp_max_threads() noexcept nogil


cdef inline int max_threads() noexcept nogil:
    """OpenMP's thread count (OMP_NUM_THREADS), 1 for a serial build."""
    cdef int n = cyrank_omp_max_threads()
    return n if n > 0 else 1


cdef inline void sum_threads(const double[:, ::1] acc, double[::1] out) noexcept nogil:
    """out = sum of the per-thread rows of acc (the private accumulators of a prange region)."""
    cdef Py_ssize_t t, j
    for j in range(out.shape[0]):
        out[j] = 0.0
        for t in range(acc.shape[0]):
            out[j] += acc[t, j]
