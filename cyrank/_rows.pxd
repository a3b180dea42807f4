# Rows of X for the row-oriented kernels (RankSVM's pair losses, the domination loss's Newton products):
# dense X is C-ordered with d columns, sparse X is CSR. Inline, noexcept nogil.
from cyrank._typedefs cimport floating, index_t, intp_t

cdef inline double row_dot(const floating* data, const index_t* indices, const index_t* indptr, bint dense,
                           intp_t d, intp_t r, const double* w) noexcept nogil:
    """x_r . w in double precision (dense X is C-ordered with d columns; sparse X is CSR)."""
    cdef intp_t k, stop
    cdef const floating* x
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0
    if dense:
        x = data + r * d
        k = 0
        # eight accumulators: independent additions the CPU overlaps, in pairs the compiler packs into vectors
        # (a float32 row converted two values per instruction: 1e5 x 136 rows in 8.8 ms against 12.7 ms with four
        # accumulators, float64 11.7 ms; the same order of operations for both precisions, so a float32 X and its
        # float64 widening give the same bits)
        while k + 8 <= d:
            s0 += x[k] * w[k]
            s1 += x[k + 1] * w[k + 1]
            s2 += x[k + 2] * w[k + 2]
            s3 += x[k + 3] * w[k + 3]
            s4 += x[k + 4] * w[k + 4]
            s5 += x[k + 5] * w[k + 5]
            s6 += x[k + 6] * w[k + 6]
            s7 += x[k + 7] * w[k + 7]
            k += 8
        while k < d:
            s0 += x[k] * w[k]
            k += 1
        return ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7))
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
    cdef const floating* x
    if dense:
        x = data + r * d
        for k in range(d):
            out[k] += a * x[k]
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
