"""Linear RankNet's loss, gradient and Hessian products, query by query in one pass over X (Burges, "From RankNet
to LambdaRank to LambdaMART: An Overview", MSR-TR-2010-82, section 1):

    L(w) = sum_q sum_{i, j in q, y_i > y_j} log(1 + exp(-sigma (s_i - s_j))),   s = X w,
    dL/ds_i = -sum_j sigma rho_ij + sum_j sigma rho_ji,   rho_ij = 1 / (1 + exp(sigma (s_i - s_j))),
    (H t)_i = sum over i's pairs of sigma^2 rho_ij (1 - rho_ij) (t_i - t_j),   gradient X' dL/ds, products X' H X v.

Layout (:class:`Rows`): sorted position k holds data row rows[k]; query q owns positions offsets[q]:offsets[q+1],
labels ascending inside it. X itself is never copied or reordered (dense C-ordered or CSR, float32 or float64,
read in its own precision through cyrank/_rows.pxd, sums in float64). A query's rows are read while in cache:
the scores X w for them, the pairs, then X' for them, so an evaluation or a Hessian product is one pass over X.

Pairs without an exponential each: per query, e_k = exp(sigma s_k - max_q sigma s) (one exp per row, kept in the
state for the Hessian products), then rho_ij = e_j / (e_i + e_j), 1 - rho_ij = e_i / (e_i + e_j) and the loss
log1p(e_j / e_i): one division and (evaluations only) one log per pair. A row with e_k below TINY (a score gap
of hundreds) has lost digits; its pairs take exp(-|sigma (s_i - s_j)|) instead, exactly as before.

Queries run in parallel (OpenMP) in a fixed partition of contiguous chunks balanced by positions
(cyrank/_parallel.pxd), each with its own accumulator of X' g and of the loss, summed in chunk order: the same
bits for every thread count, and, the positions being in an order fixed by the rows' content, for every order of
the input rows. ``dot`` and ``rdot`` are the plain products in the sorted order (linear LambdaRank's weighted
pairs are evaluated by _lambdas.Reference on the sorted scores).
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, M_LN2, exp, fabs, frexp, log, log1p

from cyrank._parallel cimport (MAX_CHUNKS, Interrupt, balanced_chunks, check_interrupt, chunk_accumulators,
                              chunk_count, interrupt_init, keep_going, product_threads, sum_chunks, sum_ordered,
                              zero_row)
from cyrank._rows cimport row_axpy, row_dot
from cyrank._typedefs cimport floating, index_t, intp_t

cdef extern from *:
    """
    #define CYRANK_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 3)
    """
    void CYRANK_PREFETCH(const void* p) noexcept nogil

cdef double TINY = 1e-250  # below it, exp(sigma s - max) has lost digits: the per-pair exponential instead
cdef double LN2 = M_LN2

cdef enum:
    AHEAD = 2     # rows prefetched ahead of the one being read

cdef enum:
    EVALUATE = 0  # s = X w, the loss, g = dL/ds, out = X' g
    HESSIAN = 1   # t = X v, u = H t, out = X' u
    DOT = 2       # out = X w (positions)
    RDOT = 3      # out = X' v (v at positions)


cdef class Rows:
    """Sorted positions of X's rows (module docstring): ``rows`` (data row of each position), ``offsets`` (positions
    of each query), ``y`` (the labels at the positions, ascending inside a query), the thread count of the passes
    (one below ``parallel_min_rows`` positions; -1: the shared default) and the chunk accumulators (``acc``)."""
    cdef public object rows, offsets, y, acc
    cdef public intp_t n_positions, n_queries, n_threads, n_data_rows

    def __init__(self, rows, offsets, y, intp_t n_data_rows, intp_t parallel_min_rows=-1):
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.n_positions, self.n_queries, self.n_data_rows = self.rows.shape[0], self.offsets.shape[0] - 1, n_data_rows
        if (self.n_queries < 0 or self.offsets[0] != 0 or self.offsets[self.n_queries] != self.n_positions
                or np.any(np.diff(self.offsets) < 0) or self.y.shape[0] != self.n_positions
                or (self.n_positions and (self.rows.min() < 0 or self.rows.max() >= n_data_rows))):
            raise ValueError("Rows: inconsistent layout")
        self.n_threads = product_threads(self.n_positions, self.n_queries, parallel_min_rows)
        self.acc = None


# ------------------------------------------------------------------------------------------------ one query
cdef inline bint _exps(const double* s, intp_t n, double sigma, double* ex) noexcept nogil:
    """ex[k] = exp(sigma s_k - max_k sigma s_k) (in (0, 1]); True when every one is above TINY."""
    cdef intp_t k
    cdef double top = -INFINITY, low = INFINITY
    for k in range(n):
        top = max(top, sigma * s[k])
        low = min(low, sigma * s[k])
    for k in range(n):
        ex[k] = exp(sigma * s[k] - top)
    return exp(low - top) > TINY


cdef inline void _far_pair(double x, double* rho, double* rho1, double* cost) noexcept nogil:
    """rho = 1 / (1 + e^-x), 1 - rho and log(1 + e^x) for x = sigma (s_j - s_i) by one exponential of -|x| (no
    overflow, no 0/0: a gap of hundreds)."""
    cdef double e = exp(-fabs(x))
    rho[0] = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
    rho1[0] = e / (1.0 + e) if x >= 0.0 else 1.0 / (1.0 + e)
    cost[0] = (x if x > 0.0 else 0.0) + log1p(e)


cdef double _query_loss(const double* s, const double* y, intp_t n, double sigma, double* ex,
                        double* g) noexcept nogil:
    """One query's loss at the scores s; g = dL/ds, ex = the rows' exponentials (module docstring).

    Row i's costs log(1 + e_j / e_i) = -log(rho1_ij), rho1_ij = e_i / (e_i + e_j), are summed as the log of their
    product (kept in [1e-30, 1] by exact power-of-two rescaling): one log per row instead of one per pair, each
    pair's cost off by at most an ulp of 1 (1.1e-16 absolute) where log1p would be exact to an ulp of itself."""
    cdef intp_t i, j, lo_end = 0
    cdef double loss = 0.0, exi, inv, rho, rho1, cost, g_i, gij, prod
    cdef int e, scale
    cdef bint fast
    for i in range(n):
        g[i] = 0.0
    if n < 2 or y[0] == y[n - 1]:
        return 0.0
    fast = _exps(s, n, sigma, ex)
    for i in range(1, n):  # i above (larger label) j < lo_end, the first row of i's label
        if y[i] != y[i - 1]:
            lo_end = i
        exi = ex[i]
        g_i = 0.0
        if fast:
            prod = 1.0
            scale = 0
            for j in range(lo_end):
                inv = 1.0 / (exi + ex[j])
                gij = sigma * (ex[j] * inv)
                g_i -= gij
                g[j] += gij
                prod *= exi * inv
                if prod < 1e-30:  # a factor is at least TINY / 2: the next product stays a normal number
                    prod = frexp(prod, &e)
                    scale += e
            loss -= log(prod) + scale * LN2
        else:
            for j in range(lo_end):
                _far_pair(sigma * (s[j] - s[i]), &rho, &rho1, &cost)
                loss += cost
                gij = sigma * rho
                g_i -= gij
                g[j] += gij
        g[i] += g_i
    return loss


cdef void _query_hess(const double* s, const double* ex, const double* y, intp_t n, double sigma, const double* t,
                      double* u) noexcept nogil:
    """u = H t on one query at the state (s, ex) of an evaluation."""
    cdef intp_t i, j, lo_end = 0
    cdef double s2 = sigma * sigma, exi, ti, u_i, inv, rho, rho1, cost, c, low = INFINITY
    for i in range(n):
        u[i] = 0.0
        low = min(low, ex[i])
    if n < 2 or y[0] == y[n - 1]:
        return
    for i in range(1, n):
        if y[i] != y[i - 1]:
            lo_end = i
        exi = ex[i]
        ti = t[i]
        u_i = 0.0
        if low > TINY:
            for j in range(lo_end):
                inv = 1.0 / (exi + ex[j])
                c = s2 * (exi * inv) * (ex[j] * inv) * (ti - t[j])
                u_i += c
                u[j] -= c
        else:
            for j in range(lo_end):
                _far_pair(sigma * (s[j] - s[i]), &rho, &rho1, &cost)
                c = s2 * rho * rho1 * (ti - t[j])
                u_i += c
                u[j] -= c
        u[i] += u_i


# ------------------------------------------------------------------------------------------------ the passes
cdef inline void _prefetch_row(const floating* X, const index_t* ind, const index_t* ptr, bint dense, intp_t d,
                               intp_t r) noexcept nogil:
    """Ask for row r of X ahead of its use: the positions visit X's rows out of their storage order, which the
    hardware prefetcher does not follow (a dense 1e5 x 136 pass ran at half of numpy's bandwidth without it)."""
    cdef const char* a
    cdef const char* b
    cdef const char* p
    if dense:
        a = <const char*> (X + r * d)
        b = <const char*> (X + (r + 1) * d)
    else:
        a = <const char*> (X + ptr[r])
        b = <const char*> (X + ptr[r + 1])
        p = <const char*> (ind + ptr[r])
        while p < <const char*> (ind + ptr[r + 1]):
            CYRANK_PREFETCH(p)
            p += 64
    while a < b:
        CYRANK_PREFETCH(a)
        a += 64


cdef intp_t _row_work(const index_t[::1] indptr, bint dense, intp_t d, intp_t n_data_rows) noexcept nogil:
    """Entries of an average row: the work unit of a position in the chunk balance and the signal checks."""
    cdef intp_t nnz
    if dense:
        return d if d > 0 else 1
    nnz = indptr[indptr.shape[0] - 1] // (n_data_rows if n_data_rows > 0 else 1)
    return nnz if nnz > 0 else 1


def _pass(int mode, const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
          intp_t n_features, Rows lay, const double[::1] x, double sigma, double[::1] s, double[::1] ex,
          double[::1] t, double[::1] u, double[::1] out):
    """One pass over the queries (``mode``: EVALUATE, HESSIAN, DOT or RDOT; module docstring). Returns the loss
    (EVALUATE) or 0."""
    cdef intp_t d = n_features, nq = lay.n_queries, nt = lay.n_threads, n = lay.n_positions
    cdef intp_t q, k, start, stop, tid, c, n_ch, rw
    cdef const intp_t[::1] rows = lay.rows, offsets = lay.offsets
    cdef const double[::1] y = lay.y
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef double loss_c[MAX_CHUNKS]
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind_p = &indices[0]
    cdef const index_t* ptr_p = &indptr[0]
    cdef double* a
    cdef double[:, ::1] acc
    cdef bint accumulate = mode != DOT
    if x.shape[0] != (n if mode == RDOT else d) or out.shape[0] != (n if mode == DOT else d) or (
            mode <= HESSIAN and (s.shape[0] != n or ex.shape[0] != n or t.shape[0] != n or u.shape[0] != n)):
        raise ValueError("_ranknet pass: wrong array sizes")
    if nq == 0 or n == 0:
        out[:] = 0.0
        return 0.0
    rw = _row_work(indptr, dense, d, lay.n_data_rows)
    n_ch = chunk_count(nq, d if accumulate else 0, n * rw, nt)
    balanced_chunks(&offsets[0], nq, n_ch, bounds)
    acc = chunk_accumulators(lay, n_ch, d if accumulate else 0)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            loss_c[c] = 0.0
            if accumulate:
                zero_row(&acc[c, 0], acc.shape[1])
            for q in range(bounds[c], bounds[c + 1]):
                start = offsets[q]
                stop = offsets[q + 1]
                if not keep_going(&intr, tid, (stop - start) * rw):
                    break
                if mode == EVALUATE:
                    for k in range(start, stop):
                        if k + AHEAD < n:
                            _prefetch_row(X, ind_p, ptr_p, dense, d, rows[k + AHEAD])
                        s[k] = row_dot(X, ind_p, ptr_p, dense, d, rows[k], &x[0])
                    loss_c[c] += _query_loss(&s[start], &y[start], stop - start, sigma, &ex[start], &u[start])
                    a = &u[0]
                elif mode == HESSIAN:
                    for k in range(start, stop):
                        if k + AHEAD < n:
                            _prefetch_row(X, ind_p, ptr_p, dense, d, rows[k + AHEAD])
                        t[k] = row_dot(X, ind_p, ptr_p, dense, d, rows[k], &x[0])
                    _query_hess(&s[start], &ex[start], &y[start], stop - start, sigma, &t[start], &u[start])
                    a = &u[0]
                elif mode == DOT:
                    for k in range(start, stop):
                        if k + AHEAD < n:
                            _prefetch_row(X, ind_p, ptr_p, dense, d, rows[k + AHEAD])
                        out[k] = row_dot(X, ind_p, ptr_p, dense, d, rows[k], &x[0])
                    continue
                else:
                    a = <double*> &x[0]
                    for k in range(start, stop):
                        if k + AHEAD < n:
                            _prefetch_row(X, ind_p, ptr_p, dense, d, rows[k + AHEAD])
                        if a[k] != 0.0:
                            row_axpy(X, ind_p, ptr_p, dense, d, rows[k], a[k], &acc[c, 0])
                    continue
                for k in range(start, stop):
                    if a[k] != 0.0:
                        row_axpy(X, ind_p, ptr_p, dense, d, rows[k], a[k], &acc[c, 0])
    check_interrupt(&intr)
    if accumulate:
        sum_chunks(acc, out)
    return sum_ordered(loss_c, n_ch) if mode == EVALUATE else 0.0


def evaluate(parts, Rows lay, const double[::1] w, double sigma, double[::1] s, double[::1] ex, double[::1] g,
             double[::1] grad):
    """L(w) (module docstring); grad = X' dL/ds, s = X w and ex = the rows' exponentials at the positions (the
    state of :func:`hess_vec`), g = dL/ds."""
    data, indices, indptr, dense, _, d = parts
    return _pass(EVALUATE, data, indices, indptr, dense, d, lay, w, sigma, s, ex, s, g, grad)


def hess_vec(parts, Rows lay, const double[::1] v, double sigma, double[::1] s, double[::1] ex, double[::1] t,
             double[::1] u, double[::1] out):
    """out = X' H X v at the state (s, ex) of :func:`evaluate`; t, u: work vectors of n_positions."""
    data, indices, indptr, dense, _, d = parts
    _pass(HESSIAN, data, indices, indptr, dense, d, lay, v, sigma, s, ex, t, u, out)


def dot(parts, Rows lay, const double[::1] w, double[::1] out):
    """out[k] = x_{rows[k]} . w for every position k."""
    data, indices, indptr, dense, _, d = parts
    _pass(DOT, data, indices, indptr, dense, d, lay, w, 0.0, out, out, out, out, out)


def rdot(parts, Rows lay, const double[::1] v, double[::1] out):
    """out = sum_k v_k x_{rows[k]} (v at the positions), summed in chunk order."""
    data, indices, indptr, dense, _, d = parts
    _pass(RDOT, data, indices, indptr, dense, d, lay, v, 0.0, out, out, out, out, out)


# ------------------------------------------------------------------------------------------------ row keys
def _row_keys(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
              intp_t n_rows, intp_t n_features, const double[::1] r, double[::1] out):
    cdef intp_t i, j, k, d = n_features
    cdef double acc[4]
    with nogil:
        for i in range(n_rows):
            acc[0] = acc[1] = acc[2] = acc[3] = 0.0
            if dense:
                for j in range(d):
                    acc[j & 3] += data[i * d + j] * r[j]
            else:
                for k in range(indptr[i], indptr[i + 1]):
                    j = indices[k]
                    acc[j & 3] += data[k] * r[j]
            out[i] = (acc[0] + acc[1]) + (acc[2] + acc[3])


def row_keys(X, const double[::1] r):
    """x_i . r for every row of X (dense or scipy.sparse), column j added into accumulator j mod 4 in column order
    and the four summed as (a0 + a1) + (a2 + a3): a function of the row's non-zero entries alone (the same bits,
    up to the sign of a zero, whatever the row's position, dense or sparse, float32 or float64, explicit zeros or
    not). X is read in place when it is C-ordered dense or CSR with sorted indices."""
    import scipy.sparse as sp

    from cyrank._linear import product_parts

    if sp.issparse(X):
        X = X.tocsr()
        if not X.has_sorted_indices:
            X = X.sorted_indices()
    data, indices, indptr, dense, n, d = product_parts(X)
    out = np.empty(n)
    if r.shape[0] != d:
        raise ValueError("row_keys: r must have one entry per column")
    _row_keys(data, indices, indptr, dense, n, d, r, out)
    return out
