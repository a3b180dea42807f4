# Rows of X for the row-oriented kernels (RankSVM's pair losses, the domination loss's Newton products):
# dense X is C-ordered with d columns, sparse X is CSR. Inline, noexcept nogil.
from cyrank._typedefs cimport floating, index_t, intp_t

cdef extern from *:
    """
    /* Dense row products, compiled twice where the compiler can (GCC on x86-64 Linux): for AVX2 and for the
       baseline, chosen once at load time by the CPU. AVX2 without FMA, and the same operations in the same order
       in both (eight accumulators, no reassociation), so every CPU gets the same bits. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && __GNUC__ >= 8
    #define CYRANK_WIDE __attribute__((target_clones("avx2", "default")))
    #else
    #define CYRANK_WIDE
    #endif
    #define CYRANK_DENSE_DOT(NAME, T) \
    static CYRANK_WIDE double NAME(const T* x, const double* w, Py_ssize_t d) { \
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0; \
        Py_ssize_t k = 0; \
        for (; k + 8 <= d; k += 8) { \
            s0 += (double) x[k] * w[k]; s1 += (double) x[k + 1] * w[k + 1]; \
            s2 += (double) x[k + 2] * w[k + 2]; s3 += (double) x[k + 3] * w[k + 3]; \
            s4 += (double) x[k + 4] * w[k + 4]; s5 += (double) x[k + 5] * w[k + 5]; \
            s6 += (double) x[k + 6] * w[k + 6]; s7 += (double) x[k + 7] * w[k + 7]; } \
        for (; k < d; k++) s0 += (double) x[k] * w[k]; \
        return ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7)); }
    #define CYRANK_DENSE_AXPY(NAME, T) \
    static CYRANK_WIDE void NAME(const T* x, double a, double* out, Py_ssize_t d) { \
        for (Py_ssize_t k = 0; k < d; k++) out[k] += a * (double) x[k]; }
    CYRANK_DENSE_DOT(cyrank_dense_dot_f, float)
    CYRANK_DENSE_DOT(cyrank_dense_dot_d, double)
    CYRANK_DENSE_AXPY(cyrank_dense_axpy_f, float)
    CYRANK_DENSE_AXPY(cyrank_dense_axpy_d, double)
    """
    double dense_dot_f "cyrank_dense_dot_f"(const float* x, const double* w, intp_t d) noexcept nogil
    double dense_dot_d "cyrank_dense_dot_d"(const double* x, const double* w, intp_t d) noexcept nogil
    void dense_axpy_f "cyrank_dense_axpy_f"(const float* x, double a, double* out, intp_t d) noexcept nogil
    void dense_axpy_d "cyrank_dense_axpy_d"(const double* x, double a, double* out, intp_t d) noexcept nogil


cdef inline double row_dot(const floating* data, const index_t* indices, const index_t* indptr, bint dense,
                           intp_t d, intp_t r, const double* w) noexcept nogil:
    """x_r . w in double precision (dense X is C-ordered with d columns; sparse X is CSR)."""
    cdef intp_t k, stop
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    if dense:  # eight accumulators, AVX2 where the CPU has it (the C helpers above)
        if floating is float:
            return dense_dot_f(data + r * d, w, d)
        else:
            return dense_dot_d(data + r * d, w, d)
    k = indptr[r]
    stop = indptr[r + 1]
    while k + 4 <= stop:
        s0 += data[k] * w[indices[k]]
        s1 += data[k + 1] * w[indices[k + 1]]
        s2 += data[k + 2] * w[indices[k + 2]]
        s3 += data[k + 3] * w[indices[k + 3]]
        k += 4
    while k < stop:
        s0 += data[k] * w[indices[k]]
        k += 1
    return (s0 + s1) + (s2 + s3)


cdef extern from *:
    """
    /* a macro: written as a Cython inline function, the prefetches were compiled out of the OpenMP loops (gcc -O3;
       no prefetch instruction in the module) */
    #define CYRANK_PREFETCH_SPAN(a, b) do { const char* p_ = (const char*)(a); \
        for (; p_ < (const char*)(b); p_ += 64) __builtin_prefetch(p_, 0, 3); } while (0)
    """
    void prefetch_span "CYRANK_PREFETCH_SPAN"(const void* start, const void* stop) noexcept nogil


cdef inline void prefetch_row(const floating* data, const index_t* indices, const index_t* indptr, bint dense,
                              intp_t d, intp_t r) noexcept nogil:
    """Request row r of X (its values, and its column indices when sparse), a cache line (64 bytes) at a time:
    kernels that visit rows out of storage order (sorted by score or label) call it a few rows ahead, which the
    hardware prefetcher cannot do."""
    if dense:
        prefetch_span(data + r * d, data + (r + 1) * d)
    else:
        prefetch_span(data + indptr[r], data + indptr[r + 1])
        prefetch_span(indices + indptr[r], indices + indptr[r + 1])


cdef inline void row_axpy(const floating* data, const index_t* indices, const index_t* indptr, bint dense,
                          intp_t d, intp_t r, double a, double* out) noexcept nogil:
    """out += a x_r."""
    cdef intp_t k
    if dense:
        if floating is float:
            dense_axpy_f(data + r * d, a, out, d)
        else:
            dense_axpy_d(data + r * d, a, out, d)
        return
    for k in range(indptr[r], indptr[r + 1]):
        out[indices[k]] += a * data[k]


# Contiguous row blocks (rows start:stop of X): dense float64 X goes through BLAS (one dgemv per block).
from scipy.linalg.cython_blas cimport dgemv


cdef inline void block_dot(const floating* data, const index_t* indices, const index_t* indptr, bint dense,
                           intp_t d, intp_t start, intp_t stop, const double* w, double* out) noexcept nogil:
    """out[p] = x_p . w for p in start:stop."""
    cdef int n_cols = <int> d, n_rows = <int> (stop - start), inc = 1
    cdef double one = 1.0, zero = 0.0
    cdef intp_t p
    if floating is double:
        if dense and n_rows > 0 and n_cols > 0:
            dgemv("T", &n_cols, &n_rows, &one, <double*> (data + start * d), &n_cols, <double*> w, &inc,
                  &zero, out + start, &inc)
            return
    for p in range(start, stop):
        out[p] = row_dot(data, indices, indptr, dense, d, p, w)


cdef inline void block_axpy(const floating* data, const index_t* indices, const index_t* indptr, bint dense,
                            intp_t d, intp_t start, intp_t stop, const double* a, double* out) noexcept nogil:
    """out += sum_{p in start:stop} a[p] x_p."""
    cdef int n_cols = <int> d, n_rows = <int> (stop - start), inc = 1
    cdef double one = 1.0
    cdef intp_t p
    if floating is double:
        if dense and n_rows > 0 and n_cols > 0:
            dgemv("N", &n_cols, &n_rows, &one, <double*> (data + start * d), &n_cols, <double*> (a + start),
                  &inc, &one, out, &inc)
            return
    for p in range(start, stop):
        if a[p] != 0.0:
            row_axpy(data, indices, indptr, dense, d, p, a[p], out)
