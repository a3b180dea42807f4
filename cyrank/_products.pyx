"""Products of a data matrix X with vectors, for every family: out = X w (:func:`matvec`) and out = X' v
(:func:`rmatvec`).

X is given by its parts (data, indices, indptr, dense, n_rows, n_features): dense C-ordered (data = the rows one
after another) or CSR, data float32 or float64, indices int32 or int64 (fused types: each kernel is compiled for
every combination). X is read in its own precision and every sum is accumulated in float64, so a float32 X is
never copied to float64 (numpy's ``X @ w`` with X float32 and w float64 converts the whole of X at every call).
Dense float64 blocks go through BLAS dgemv, other rows through the row loops of cyrank/_rows.pxd.

Rows are cut into a fixed partition of contiguous chunks that depends only on X's shape and non-zeros, never on
the thread count: X w is computed chunk by chunk (each entry of the result by one row's dot product), X' v with
one float64 accumulator per chunk, the chunks' accumulators summed in chunk order (cyrank/_parallel.pxd). Chunks
run in parallel (OpenMP) above ``parallel_min_rows`` rows; the result has the same bits for every thread count.
"""
from cython.parallel cimport parallel, prange, threadid

from cyrank._parallel cimport (MAX_CHUNKS, Interrupt, check_interrupt, chunk_accumulators, chunk_count,
                              interrupt_init, keep_going, product_threads, sum_chunks, zero_row)
from cyrank._rows cimport block_axpy, block_dot
from cyrank._typedefs cimport floating, index_t, intp_t

# rows handed to one block_dot / block_axpy call at most (one BLAS call: its int sizes stay far from 2^31)
cdef intp_t BLOCK_ROWS = 1 << 16
# entries of X a chunk holds at least (smaller chunks cost more in scheduling than they save)
cdef intp_t MIN_CHUNK_WORK = 1 << 14


cdef intp_t _n_chunks(intp_t n_rows, intp_t work) noexcept nogil:
    """Chunks of the fixed partition of n_rows rows holding ``work`` entries: one per MIN_CHUNK_WORK entries,
    between 1 and min(MAX_CHUNKS, n_rows)."""
    cdef intp_t c = work // MIN_CHUNK_WORK
    if c > MAX_CHUNKS:
        c = MAX_CHUNKS
    if c > n_rows:
        c = n_rows
    return c if c > 0 else 1


cdef void _row_bounds(const index_t* indptr, bint dense, intp_t n_rows, intp_t n_chunks,
                      intp_t* bounds) noexcept nogil:
    """bounds[0..n_chunks]: contiguous row ranges of about equal entries (dense: equal rows; CSR: by indptr)."""
    cdef intp_t c, lo, hi, mid
    cdef double target, total
    bounds[0] = 0
    if dense:
        for c in range(1, n_chunks):
            bounds[c] = (n_rows * c) // n_chunks
    else:
        total = <double> (indptr[n_rows] - indptr[0])
        for c in range(1, n_chunks):
            target = indptr[0] + total * c / n_chunks
            lo = bounds[c - 1]
            hi = n_rows
            while lo < hi:  # first row whose start reaches the target
                mid = lo + (hi - lo) // 2
                if indptr[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid
            bounds[c] = lo
    bounds[n_chunks] = n_rows


cdef intp_t _work(const index_t* indptr, bint dense, intp_t n_rows, intp_t d) noexcept nogil:
    return n_rows * d if dense else <intp_t> (indptr[n_rows] - indptr[0])


cdef bint _dot_chunk(const floating* X, const index_t* ind, const index_t* ptr, bint dense, intp_t d,
                     intp_t start, intp_t stop, intp_t rw, const double* w, double* out, Interrupt* intr,
                     int tid) noexcept nogil:
    """out[p] = x_p . w for the rows start:stop, in blocks of BLOCK_ROWS; False when interrupted."""
    cdef intp_t p = start, q
    while p < stop:
        q = p + BLOCK_ROWS if stop - p > BLOCK_ROWS else stop
        if not keep_going(intr, tid, (q - p) * rw):
            return False
        block_dot(X, ind, ptr, dense, d, p, q, w, out)
        p = q
    return True


cdef bint _axpy_chunk(const floating* X, const index_t* ind, const index_t* ptr, bint dense, intp_t d,
                      intp_t start, intp_t stop, intp_t rw, const double* v, double* acc, Interrupt* intr,
                      int tid) noexcept nogil:
    """acc += sum_{p in start:stop} v_p x_p, in blocks of BLOCK_ROWS; False when interrupted."""
    cdef intp_t p = start, q
    while p < stop:
        q = p + BLOCK_ROWS if stop - p > BLOCK_ROWS else stop
        if not keep_going(intr, tid, (q - p) * rw):
            return False
        block_axpy(X, ind, ptr, dense, d, p, q, v, acc)
        p = q
    return True


def _matvec(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
            intp_t n_rows, intp_t n_features, const double[::1] w, double[::1] out, intp_t parallel_min_rows):
    cdef intp_t d = n_features, n_ch, nt, c, rw
    cdef int tid
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind = &indices[0] if indices.shape[0] else NULL
    cdef const index_t* ptr = &indptr[0] if indptr.shape[0] else NULL
    if n_rows == 0:
        return
    if d == 0 or (not dense and indptr[n_rows] == indptr[0]):
        out[:] = 0.0
        return
    rw = max(1, _work(ptr, dense, n_rows, d) // n_rows)
    n_ch = _n_chunks(n_rows, _work(ptr, dense, n_rows, d))
    _row_bounds(ptr, dense, n_rows, n_ch, bounds)
    nt = product_threads(n_rows, n_ch, parallel_min_rows)
    interrupt_init(&intr)
    if nt == 1:
        with nogil:
            for c in range(n_ch):
                if not _dot_chunk(X, ind, ptr, dense, d, bounds[c], bounds[c + 1], rw, &w[0], &out[0], &intr, 0):
                    break
    else:
        tid = 0
        with nogil, parallel(num_threads=nt):
            tid = threadid()
            for c in prange(n_ch, schedule="dynamic", chunksize=1):
                _dot_chunk(X, ind, ptr, dense, d, bounds[c], bounds[c + 1], rw, &w[0], &out[0], &intr, tid)
    check_interrupt(&intr)


def _rmatvec(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
             intp_t n_rows, intp_t n_features, const double[::1] v, double[::1] out, object holder,
             intp_t parallel_min_rows):
    cdef intp_t d = n_features, n_ch, nt, c, rw, work
    cdef int tid
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind = &indices[0] if indices.shape[0] else NULL
    cdef const index_t* ptr = &indptr[0] if indptr.shape[0] else NULL
    cdef double[:, ::1] acc
    if d == 0:
        return
    out[:] = 0.0
    if n_rows == 0:
        return
    work = _work(ptr, dense, n_rows, d)
    if work == 0:
        return
    rw = max(1, work // n_rows)
    # accumulators: at most chunk_count's budget (a fixed number: it is given one thread, so it never depends
    # on the thread count)
    n_ch = min(_n_chunks(n_rows, work), chunk_count(n_rows, d, work, 1))
    _row_bounds(ptr, dense, n_rows, n_ch, bounds)
    nt = product_threads(n_rows, n_ch, parallel_min_rows)
    interrupt_init(&intr)
    if n_ch == 1:
        with nogil:
            _axpy_chunk(X, ind, ptr, dense, d, 0, n_rows, rw, &v[0], &out[0], &intr, 0)
        check_interrupt(&intr)
        return
    acc = chunk_accumulators(holder, n_ch, d)
    if nt == 1:
        with nogil:
            for c in range(n_ch):
                zero_row(&acc[c, 0], acc.shape[1])
                if not _axpy_chunk(X, ind, ptr, dense, d, bounds[c], bounds[c + 1], rw, &v[0], &acc[c, 0],
                                   &intr, 0):
                    break
    else:
        tid = 0
        with nogil, parallel(num_threads=nt):
            tid = threadid()
            for c in prange(n_ch, schedule="dynamic", chunksize=1):
                zero_row(&acc[c, 0], acc.shape[1])
                _axpy_chunk(X, ind, ptr, dense, d, bounds[c], bounds[c + 1], rw, &v[0], &acc[c, 0], &intr, tid)
    check_interrupt(&intr)
    with nogil:
        sum_chunks(acc, out)


class _Accumulators:
    """Holder of the chunk accumulators of :func:`rmatvec` between calls (``acc``: cyrank/_parallel.pxd)."""

    def __init__(self):
        self.acc = None


def _unpack(parts, name):
    """The parts (module docstring), their sizes checked against each other (not the CSR indices' range: X_parts
    come from cyrank._linear.product_parts, which builds them from a valid matrix)."""
    if not isinstance(parts, tuple) or len(parts) != 6:
        raise ValueError(f"{name}: X_parts must be a tuple (data, indices, indptr, dense, n_rows, n_features); "
                         f"build it with cyrank._linear.product_parts(X)")
    data, indices, indptr, dense, n_rows, n_features = parts
    n_rows, n_features = int(n_rows), int(n_features)
    if n_rows < 0 or n_features < 0:
        raise ValueError(f"{name}: negative shape ({n_rows}, {n_features}) in X_parts")
    if dense:
        if data.ndim != 1 or data.shape[0] != n_rows * n_features:
            raise ValueError(f"{name}: dense data of {data.size} entries for a {n_rows} x {n_features} X")
    elif (indptr.ndim != 1 or indptr.shape[0] != n_rows + 1 or indptr[0] < 0 or indptr[n_rows] > data.shape[0]
          or indptr[n_rows] > indices.shape[0]):
        raise ValueError(f"{name}: CSR indptr of {indptr.size} entries (ending at {indptr[-1] if indptr.size else None}) "
                         f"does not fit {n_rows} rows with {data.size} stored entries")
    return data, indices, indptr, bool(dense), n_rows, n_features


def _check_vectors(x, out, n_in, n_out, name):
    if x.ndim != 1 or x.shape[0] != n_in:
        raise ValueError(f"{name}: the vector has shape {x.shape}, X needs ({n_in},)")
    if out.ndim != 1 or out.shape[0] != n_out:
        raise ValueError(f"{name}: out has shape {out.shape}, X needs ({n_out},)")


def matvec(X_parts, w, out, parallel_min_rows=-1):
    """out = X w (float64 ``w`` of n_features, float64 ``out`` of n_rows), X = ``X_parts`` (module docstring),
    accumulated in float64; ``parallel_min_rows``: one thread below that many rows (< 0: the default, 20,000).
    Returns ``out``."""
    data, indices, indptr, dense, n_rows, n_features = _unpack(X_parts, "matvec")
    _check_vectors(w, out, n_features, n_rows, "matvec")
    _matvec(data, indices, indptr, dense, n_rows, n_features, w, out, parallel_min_rows)
    return out


def rmatvec(X_parts, v, out, parallel_min_rows=-1, holder=None):
    """out = X' v (float64 ``v`` of n_rows, float64 ``out`` of n_features), X = ``X_parts`` (module docstring),
    accumulated in float64, the chunks' sums added in chunk order. ``holder``: an object whose ``acc`` attribute
    keeps the chunk accumulators from call to call (None: fresh ones). Returns ``out``."""
    data, indices, indptr, dense, n_rows, n_features = _unpack(X_parts, "rmatvec")
    _check_vectors(v, out, n_rows, n_features, "rmatvec")
    _rmatvec(data, indices, indptr, dense, n_rows, n_features, v, out,
             _Accumulators() if holder is None else holder, parallel_min_rows)
    return out
