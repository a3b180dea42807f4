"""Domination loss, gradient and Hessian-vector products in O(nnz + rows): the products of the Newton solver
(DominationRank(solver="newton"), for the smooth l2 penalty; Stevens, MIT thesis 2010, sections 2-4).

Rows are visited in the (query, label) order of estimator._layout: query q owns query-layers
q_ptr[q]:q_ptr[q+1] (ascending label) and query-layer k owns sorted rows lay_ptr[k]:lay_ptr[k+1]. With
margins u_p = x_p.w - o_p and D_k the rows of the layers below k:

    LZ_k = log sum_{j in D_k} exp(u_j)                       (log domain: no overflow, no underflow)
    l_i  = log(1 + exp(LZ_k - u_i)) = softplus(LZ_k - u_i)     for i in layer k >= 1 of its query
    s_i  = sigmoid(LZ_k - u_i),  A_k = sum_{i in k} s_i

Gradient (in u):  g_j = E_j T_l - s_j   with l the layer of j, E_j = exp(u_j - LZ_{l+1}) <= 1 and
T_l = sum_{k > l} A_k exp(LZ_{l+1} - LZ_k) = A_{l+1} + rho_{l+1} T_{l+1},  rho_k = exp(LZ_k - LZ_{k+1}) <= 1
(LZ_k increases with k because the D_k are nested; s_j = 0 in the lowest layer, E_j = 0 in the top one).

Hessian (in u): l_i is log-sum-exp over S_i = {i} + D_k minus u_i, so its Hessian is diag(p) - p p' with
p_i = 1 - s_i and p_j = s_i exp(u_j - LZ_k). With V_k = sum_{j in D_k} exp(u_j - LZ_k) v_j (bottom-up:
V_{k+1} = rho_k V_k + sum_{j in layer k} E_j v_j) and t_i = p.v over S_i = (1 - s_i) v_i + s_i V_k:

    (H v)_j = (1 - s_j) s_j (v_j - V_l) + E_j (v_j T_l - U_l),   U_l = B_{l+1} + rho_{l+1} U_{l+1},
    B_k = sum_{i in k} s_i t_i.

Sample weights (w_i weighs l_i; estimator._layout's ``weight``): the loss is sum_i w_i l_i, and the formulas hold
with w_i s_i in place of s_i in A_k, in g_j's own term and in B_k, and w_j (1 - s_j) s_j in (H v)_j's own term
(E, rho, V and T need no change: T and U take the weights through A and B). Unweighted, the kernels read no
weight (a NULL pointer: the fast path).

Every factor is a probability or a ratio <= 1, so margins of any size are safe. The linear model's gradient
and Hessian product are X' g and X' H X v. X is the caller's array, never copied or converted: dense C-ordered or
CSR, float32 or float64, read in its own precision with float64 sums (fused types); sorted row p is row rows[p]
of X. Per query: X_q w, the query sweep, then X_q' z while the query's rows are in cache. When every query's rows
fill a block lo:hi of X of at most twice its rows, blocks disjoint (X grouped by query, the usual case), the
products go through the block (cyrank/_rows.pxd: BLAS dgemv for dense float64, row loops otherwise) and a
per-thread buffer in X's row order; otherwise row by row through ``rows``. Only E, s (rows) and the layer arrays are kept
per state; the margins, derivatives and product vectors of a query live in per-thread buffers of the largest
query's size. Queries run in parallel (OpenMP) in a fixed partition of contiguous chunks balanced by rows
(cyrank/_parallel.pxd), each chunk with its own share of X'z and of the loss, summed in chunk order: the same
input gives bit-identical results whichever thread runs which chunk.
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport exp, log, INFINITY

from cyrank._math cimport log1pexp, sigmoid
from cyrank._parallel cimport (MAX_CHUNKS, Interrupt, balanced_chunks, check_interrupt, chunk_accumulators,
                              chunk_count, interrupt_init, keep_going, padded_width, product_threads, sum_chunks,
                              sum_ordered, zero_row)
from cyrank._rows cimport block_axpy, block_dot, row_axpy, row_dot
from scipy.linalg.cython_blas cimport dgemm
from cyrank._typedefs cimport floating, index_t, intp_t


# gram_hessian: rows of consecutive queries gathered into one block per dgemm (at most this many, or one query)
cdef intp_t GRAM_BATCH_ROWS = 256
# ... and the symmetric product Z'(HZ) formed in column blocks of this width, on and above the diagonal only
cdef intp_t GRAM_BLOCK = 64


cdef inline double logaddexp(double a, double b) noexcept nogil:
    if a == -INFINITY:
        return b
    if a >= b:
        return a + log(1.0 + exp(b - a))
    return b + log(1.0 + exp(a - b))


# ---------------------------------------------------------------------------------------- one query, margins
cdef double query_grad(intp_t k0, intp_t k1, const intp_t* lay_ptr, const double* u, const double* wt, double* E,
                       double* s, double* g, double* rho, double* T) noexcept nogil:
    """Loss of one query (layers k0:k1) at margins u, rows weighted by wt (NULL: unweighted); fills E, s, g (rows)
    and rho, T (layers)."""
    cdef intp_t k, p, top = k1 - 1
    cdef double lz = -INFINITY, lz_new, lz_below, m, acc, scale, x, loss = 0.0, T_above = 0.0
    # bottom-up: LZ_{k+1} from LZ_k and layer k; E_j = exp(u_j - LZ_{k+1}); rho_k = exp(LZ_k - LZ_{k+1})
    for k in range(k0, top):
        m = -INFINITY
        for p in range(lay_ptr[k], lay_ptr[k + 1]):
            if u[p] > m:
                m = u[p]
        acc = 0.0
        for p in range(lay_ptr[k], lay_ptr[k + 1]):
            E[p] = exp(u[p] - m)
            acc += E[p]
        lz_new = logaddexp(lz, m + log(acc))
        rho[k] = exp(lz - lz_new)  # 0 for the lowest layer (LZ = -inf), never used there
        scale = exp(m - lz_new)
        for p in range(lay_ptr[k], lay_ptr[k + 1]):
            E[p] *= scale
        lz = lz_new
        T[k + 1] = lz  # LZ_{k+1}, kept in T until the top-down pass below overwrites it
    for p in range(lay_ptr[top], lay_ptr[k1]):
        E[p] = 0.0
    for p in range(lay_ptr[k0], lay_ptr[k0 + 1]):
        s[p] = 0.0
    # losses, s_i and A_k of every dominating layer, then T top-down (T_l needs A_{l+1} and T_{l+1} only)
    lz = T[top]
    for k in range(top, k0, -1):
        lz_below = T[k - 1]  # LZ_{k-1}, read before T_{k-1} replaces it
        acc = 0.0
        if wt == NULL:
            for p in range(lay_ptr[k], lay_ptr[k + 1]):
                x = lz - u[p]
                loss += log1pexp(x)
                s[p] = sigmoid(x)
                acc += s[p]
        else:
            for p in range(lay_ptr[k], lay_ptr[k + 1]):
                x = lz - u[p]
                loss += wt[p] * log1pexp(x)
                s[p] = sigmoid(x)
                acc += wt[p] * s[p]
        T[k - 1] = acc + (rho[k] * T_above if k < top else 0.0)  # T_{k-1} = A_k + rho_k T_k, T_top = 0
        T_above = T[k - 1]
        lz = lz_below
    T[top] = 0.0
    for k in range(k0, k1):
        if wt == NULL:
            for p in range(lay_ptr[k], lay_ptr[k + 1]):
                g[p] = E[p] * T[k] - s[p]
        else:
            for p in range(lay_ptr[k], lay_ptr[k + 1]):
                g[p] = E[p] * T[k] - wt[p] * s[p]
    return loss


cdef void query_hess(intp_t k0, intp_t k1, const intp_t* lay_ptr, const double* wt, const double* E,
                     const double* s, const double* rho, const double* T, const double* v, double* h, double* V,
                     double* U) noexcept nogil:
    """h = H v for one query (layers k0:k1), with the weights wt (NULL: unweighted) and the state (E, s, rho, T)
    of query_grad."""
    cdef intp_t k, p, top = k1 - 1
    cdef double acc, t, B, ws
    # bottom-up V_k (V[k0] unused)
    acc = 0.0
    for k in range(k0, top):
        acc = (rho[k] * acc if k > k0 else 0.0)
        for p in range(lay_ptr[k], lay_ptr[k + 1]):
            acc += E[p] * v[p]
        V[k + 1] = acc
    # own terms and B_k, then U top-down: U_{k-1} = B_k + rho_k U_k
    U[top] = 0.0
    for k in range(top, k0, -1):
        B = 0.0
        for p in range(lay_ptr[k], lay_ptr[k + 1]):
            ws = s[p] if wt == NULL else wt[p] * s[p]
            t = (1.0 - s[p]) * v[p] + s[p] * V[k]
            B += ws * t
            h[p] = (1.0 - s[p]) * ws * (v[p] - V[k])
        U[k - 1] = B + (rho[k] * U[k] if k < top else 0.0)
    for p in range(lay_ptr[k0], lay_ptr[k0 + 1]):
        h[p] = 0.0
    for k in range(k0, top):
        for p in range(lay_ptr[k], lay_ptr[k + 1]):
            h[p] += E[p] * (v[p] * T[k] - U[k])


# ------------------------------------------------------------------------------------------ linear model
cdef class State:
    """Layout arrays (see the module docstring; ``weight``: the sorted sample weights, empty when unweighted),
    the per-row / per-layer state of the last gradient (E, s; rho, T) and the scratch of hess_vec (V, U per
    layer). rows[p]: X's row of sorted row p; q_rows[q]: first sorted row of query q (the work measure of the chunk
    partition); lo, hi: the blocks of X's rows of the queries (layout.query_blocks(), _layout.py); work: one row
    of buffers per thread (margins / X v, derivatives / H X v, and a block in X's row order), shared with the State
    ``like`` when given (the trial and current states of one problem). Products run on one thread below
    ``parallel_min_rows`` rows (-1: the shared default, cyrank/_parallel.pxd)."""
    cdef public object q_ptr, lay_ptr, offset, weight, q_rows, rows, lo, hi, work
    cdef public intp_t n_rows, n_layers, n_queries, n_threads, max_rows
    cdef public object E, s, rho, T, V, U, acc

    def __init__(self, layout, intp_t parallel_min_rows=-1, State like=None):
        self.q_ptr = np.ascontiguousarray(layout.q_ptr, dtype=np.int64)
        self.lay_ptr = np.ascontiguousarray(layout.lay_ptr, dtype=np.int64)
        self.offset = np.ascontiguousarray(layout.offset, dtype=np.float64)
        self.weight = np.zeros(0) if layout.weight is None else np.ascontiguousarray(layout.weight, np.float64)
        self.n_rows = self.offset.shape[0]
        self.n_layers = self.lay_ptr.shape[0] - 1
        self.n_queries = self.q_ptr.shape[0] - 1
        self.q_rows = np.ascontiguousarray(self.lay_ptr[self.q_ptr], dtype=np.int64)
        self.n_threads = product_threads(self.n_rows, self.n_queries, parallel_min_rows)
        self.max_rows = int(np.max(np.diff(self.q_rows), initial=0))
        if like is None:
            self.rows = np.ascontiguousarray(layout.rows, dtype=np.int64)
            self.lo, self.hi = (np.ascontiguousarray(b, dtype=np.int64) for b in layout.query_blocks())
            span = int(np.max(self.hi - self.lo, initial=0))
            self.work = np.zeros((max(1, self.n_threads), 2 * self.max_rows + span + 1))
        else:
            self.rows, self.lo, self.hi, self.work = like.rows, like.lo, like.hi, like.work
        self.E, self.s = np.zeros(self.n_rows), np.zeros(self.n_rows)
        for name in ("rho", "T", "V", "U"):
            setattr(self, name, np.zeros(self.n_layers + 1))
        self.acc = None  # the chunk accumulators of fun_grad and hess_vec (_parallel.chunk_accumulators)


cdef inline void rows_dot(const floating* X, const index_t* ind, const index_t* ptr, bint dense, intp_t d,
                          const intp_t* rows, intp_t p0, intp_t p1, intp_t lo, intp_t hi, const double* w,
                          double* block, double* out) noexcept nogil:
    """out[p - p0] = x_{rows[p]} . w for the sorted rows p0:p1: through X's block lo:hi (block_dot into ``block``,
    in X's row order) when lo >= 0, else row by row."""
    cdef intp_t p
    if lo >= 0:
        block_dot(X, ind, ptr, dense, d, lo, hi, w, block - lo)
        for p in range(p0, p1):
            out[p - p0] = block[rows[p] - lo]
    else:
        for p in range(p0, p1):
            out[p - p0] = row_dot(X, ind, ptr, dense, d, rows[p], w)


cdef inline void rows_axpy(const floating* X, const index_t* ind, const index_t* ptr, bint dense, intp_t d,
                           const intp_t* rows, intp_t p0, intp_t p1, intp_t lo, intp_t hi, const double* a,
                           double* block, double* acc) noexcept nogil:
    """acc += sum_{p in p0:p1} a[p - p0] x_{rows[p]}, through X's block lo:hi when lo >= 0 (rows_dot)."""
    cdef intp_t p
    if lo >= 0:
        for p in range(hi - lo):
            block[p] = 0.0
        for p in range(p0, p1):
            block[rows[p] - lo] = a[p - p0]
        block_axpy(X, ind, ptr, dense, d, lo, hi, block - lo, acc)
    else:
        for p in range(p0, p1):
            if a[p - p0] != 0.0:
                row_axpy(X, ind, ptr, dense, d, rows[p], a[p - p0], acc)


cdef intp_t _chunks(State st, const index_t[::1] indptr, bint dense, intp_t d, intp_t* rw,
                    intp_t* bounds) except -1:
    """Fixed partition of the queries (bounds) for accumulators of d doubles; rw: entries of an average row."""
    cdef intp_t n_ch, nnz = st.n_rows * d if dense else indptr[indptr.shape[0] - 1]
    cdef const intp_t[::1] q_rows = st.q_rows
    rw[0] = max(1, nnz // max(1, st.n_rows))
    n_ch = chunk_count(st.n_queries, d, nnz, st.n_threads)
    balanced_chunks(&q_rows[0], st.n_queries, n_ch, bounds)
    return n_ch


def fun_grad(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
             intp_t n_features, State st, const double[::1] w, double[::1] xg):
    """Loss at w (no penalty); xg = X' dL/du. Keeps the state for hess_vec.

    X is the data matrix the layout was made from (dense C-ordered or CSR parts; sorted row p is its row
    st.rows[p]).
    """
    cdef intp_t d = n_features, nq = st.n_queries, nt = st.n_threads, q, p, p0, p1, tid, c, n_ch, rw
    cdef const intp_t[::1] q_ptr = st.q_ptr, lay_ptr = st.lay_ptr, rows = st.rows, lo = st.lo, hi = st.hi
    cdef const double[::1] off = st.offset, weight = st.weight
    cdef const double* wt = &weight[0] if weight.shape[0] else NULL
    cdef double[::1] E = st.E, s = st.s, rho = st.rho, T = st.T
    cdef double[:, ::1] work = st.work
    cdef intp_t m = st.max_rows
    cdef double* u
    cdef double* g
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef double loss_c[MAX_CHUNKS]
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind_p = &indices[0] if indices.shape[0] else NULL
    cdef const index_t* ptr_p = &indptr[0]
    if w.shape[0] != d or xg.shape[0] != d:
        raise ValueError("fun_grad: wrong array sizes")
    xg[:] = 0.0
    if nq == 0:
        return 0.0
    n_ch = _chunks(st, indptr, dense, d, &rw, bounds)
    cdef double[:, ::1] acc = chunk_accumulators(st, n_ch, d)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        u = &work[tid, 0]
        g = u + m
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            loss_c[c] = 0.0
            zero_row(&acc[c, 0], acc.shape[1])
            for q in range(bounds[c], bounds[c + 1]):
                p0 = lay_ptr[q_ptr[q]]
                p1 = lay_ptr[q_ptr[q + 1]]
                if not keep_going(&intr, tid, (p1 - p0) * rw):
                    break
                rows_dot(X, ind_p, ptr_p, dense, d, &rows[0], p0, p1, lo[q], hi[q], &w[0], g + m, u)
                for p in range(p0, p1):
                    u[p - p0] = u[p - p0] - off[p]
                # the sweep indexes rows by their sorted position: the buffers shifted by p0
                loss_c[c] += query_grad(q_ptr[q], q_ptr[q + 1], &lay_ptr[0], u - p0, wt, &E[0], &s[0], g - p0,
                                        &rho[0], &T[0])
                rows_axpy(X, ind_p, ptr_p, dense, d, &rows[0], p0, p1, lo[q], hi[q], g, g + m, &acc[c, 0])
    check_interrupt(&intr)
    sum_chunks(acc, xg)
    return sum_ordered(loss_c, n_ch)


def hess_vec(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
             intp_t n_features, State st, const double[::1] v, double[::1] out):
    """out = X' H X v, H the Hessian in u at the point of the last fun_grad (X as in fun_grad)."""
    cdef intp_t d = n_features, nq = st.n_queries, nt = st.n_threads, q, p0, p1, tid, c, n_ch, rw
    cdef const intp_t[::1] q_ptr = st.q_ptr, lay_ptr = st.lay_ptr, rows = st.rows, lo = st.lo, hi = st.hi
    cdef double[::1] E = st.E, s = st.s, rho = st.rho, T = st.T, V = st.V, U = st.U
    cdef const double[::1] weight = st.weight
    cdef const double* wt = &weight[0] if weight.shape[0] else NULL
    cdef double[:, ::1] work = st.work
    cdef intp_t m = st.max_rows
    cdef double* xv
    cdef double* h
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind_p = &indices[0] if indices.shape[0] else NULL
    cdef const index_t* ptr_p = &indptr[0]
    if v.shape[0] != d or out.shape[0] != d:
        raise ValueError("hess_vec: wrong array sizes")
    out[:] = 0.0
    if nq == 0:
        return
    n_ch = _chunks(st, indptr, dense, d, &rw, bounds)
    cdef double[:, ::1] acc = chunk_accumulators(st, n_ch, d)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        xv = &work[tid, 0]
        h = xv + m
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            zero_row(&acc[c, 0], acc.shape[1])
            for q in range(bounds[c], bounds[c + 1]):
                p0 = lay_ptr[q_ptr[q]]
                p1 = lay_ptr[q_ptr[q + 1]]
                if not keep_going(&intr, tid, (p1 - p0) * rw):
                    break
                rows_dot(X, ind_p, ptr_p, dense, d, &rows[0], p0, p1, lo[q], hi[q], &v[0], h + m, xv)
                query_hess(q_ptr[q], q_ptr[q + 1], &lay_ptr[0], wt, &E[0], &s[0], &rho[0], &T[0], xv - p0,
                           h - p0, &V[0], &U[0])
                rows_axpy(X, ind_p, ptr_p, dense, d, &rows[0], p0, p1, lo[q], hi[q], h, h + m, &acc[c, 0])
    check_interrupt(&intr)
    sum_chunks(acc, out)


def gram_hessian(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                 intp_t n_features, State st, const intp_t[::1] cols, const intp_t[::1] pos, double[:, ::1] out):
    """out = X_W' H X_W (|W| x |W|), the Hessian of the loss in the coefficients of the columns W = ``cols``, at
    the point of the last fun_grad (X as in fun_grad). ``pos[r]`` = position of column r in ``cols``, -1 if absent.

    The W columns of the rows of consecutive queries, up to GRAM_BATCH_ROWS rows (or one whole query), are
    gathered into a dense block Z (rows x |W|, column-major), H (block diagonal over the queries) is applied to
    each column (query_hess: O(rows) each) and Z'(HZ) is accumulated by BLAS dgemm: O(rows |W|^2). Batching the
    small queries of LETOR-like data gives each dgemm more rows (measured on 3,005 rows in 201 queries, |W| = 300:
    17.8 -> 16.2 ms), and as Z'(HZ) is symmetric only its blocks on and above the diagonal are formed, in column
    blocks of GRAM_BLOCK (-> 12.9 ms), the lower triangle mirrored at the end. Queries run in parallel in a fixed
    partition (chunks whose m x m accumulators hold at most an eighth of X_W's entries); the chunk sums are added
    in chunk order.
    """
    cdef intp_t d = n_features, m = cols.shape[0], nq = st.n_queries, nt = st.n_threads
    cdef intp_t q, p, p0, p1, i, c, k, r, tid, n_ch, rw, entries, max_rows = 0
    cdef const intp_t[::1] q_ptr = st.q_ptr, lay_ptr = st.lay_ptr, rows = st.rows
    cdef double[::1] E = st.E, s = st.s, rho = st.rho, T = st.T, V = st.V, U = st.U
    cdef const double[::1] weight = st.weight
    cdef const double* wt = &weight[0] if weight.shape[0] else NULL
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind_p = &indices[0] if indices.shape[0] else NULL
    cdef const index_t* ptr_p = &indptr[0]
    cdef double* Z
    cdef double* HZ
    cdef int mm = <int> m, nr, one_i = 1
    cdef double one = 1.0
    if out.shape[0] != m or out.shape[1] != m or pos.shape[0] != d:
        raise ValueError("gram_hessian: wrong array sizes")
    out[:, :] = 0.0
    if nq == 0 or m == 0:
        return
    for q in range(nq):
        max_rows = max(max_rows, lay_ptr[q_ptr[q + 1]] - lay_ptr[q_ptr[q]])
    cdef const intp_t[::1] q_rows = st.q_rows
    # the work measure is the entries of X_W read (not the flops; sparse X: its stored entries, the W share of them):
    # the chunks' m x m accumulators then take at most 1 / ACC_WORK_RATIO of them in doubles, memory of the order
    # of X's, whatever the number of rows
    entries = st.n_rows * m if dense else (indptr[indptr.shape[0] - 1] - indptr[0]) * m // max(1, d)
    n_ch = chunk_count(nq, m * m, entries, nt)
    balanced_chunks(&q_rows[0], nq, n_ch, bounds)
    cdef double[:, ::1] acc = np.zeros((n_ch, padded_width(m * m)))
    cdef double[::1] flat = np.asarray(out).reshape(-1)
    cdef intp_t batch = max(max_rows, GRAM_BATCH_ROWS), b0, b1, qb, j0, j1
    cdef int mj, nj
    cdef double[:, ::1] work = np.zeros((max(1, nt), 2 * batch * m))
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        Z = &work[tid, 0]
        HZ = Z + batch * m
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            q = bounds[c]
            while q < bounds[c + 1]:
                # a batch: the consecutive queries q:qb whose rows b0:b1 fit in ``batch`` rows (at least one query)
                b0 = lay_ptr[q_ptr[q]]
                qb = q + 1
                while qb < bounds[c + 1] and lay_ptr[q_ptr[qb + 1]] - b0 <= batch:
                    qb = qb + 1
                b1 = lay_ptr[q_ptr[qb]]
                nr = <int> (b1 - b0)
                if not keep_going(&intr, tid, nr * m * m):
                    break
                for i in range(nr * m):
                    Z[i] = 0.0
                for i in range(nr):
                    p = rows[b0 + i]  # X's row of sorted row b0 + i
                    if dense:
                        for k in range(m):
                            Z[k * nr + i] = X[p * d + cols[k]]
                    else:
                        for r in range(ptr_p[p], ptr_p[p + 1]):
                            k = pos[ind_p[r]]
                            if k >= 0:
                                Z[k * nr + i] = X[r]
                for k in range(m):
                    # query_hess reads v[p] and writes h[p] for a query's rows: shift the pointers by b0
                    for p in range(q, qb):
                        query_hess(q_ptr[p], q_ptr[p + 1], &lay_ptr[0], wt, &E[0], &s[0], &rho[0], &T[0],
                                   Z + k * nr - b0, HZ + k * nr - b0, &V[0], &U[0])
                # Z'(HZ) is symmetric: only the blocks on and above the diagonal, column block by column block
                # (C[0:j1, j0:j1] += Z[:, 0:j1]' HZ[:, j0:j1]; C column-major): about half the flops of one dgemm
                j0 = 0
                while j0 < m:
                    j1 = min(j0 + GRAM_BLOCK, m)
                    mj = <int> j1
                    nj = <int> (j1 - j0)
                    dgemm("T", "N", &mj, &nj, &nr, &one, Z, &nr, HZ + j0 * nr, &nr, &one, &acc[c, j0 * m], &mm)
                    j0 = j1
                q = qb
    check_interrupt(&intr)
    sum_chunks(acc, flat)
    for i in range(m):  # entry (i, j), i <= j, of the column-major upper triangle is out[j, i]: mirror it
        for k in range(i + 1, m):
            out[i, k] = out[k, i]
