"""Linear RankNet's loss, gradient and Hessian products, query by query in one pass over X (Burges, "From RankNet
to LambdaRank to LambdaMART: An Overview", MSR-TR-2010-82, section 1):

    L(w) = sum_q sum_{i, j in q, y_i > y_j} c_i log(1 + exp(-sigma (s_i - s_j))),   s = X w,
    dL/ds_i = -sum_j c_i sigma rho_ij + sum_j c_j sigma rho_ji,   rho_ij = 1 / (1 + exp(sigma (s_i - s_j))),
    (H t)_i = sum over i's pairs (i, j) of c sigma^2 rho_ij (1 - rho_ij) (t_i - t_j), c the preferred row's weight,
    gradient X' dL/ds, products X' H X v.

c_i is the sample weight of the preferred row (Joachims, Swaminathan & Schnabel, WSDM 2017: inverse propensity
weighting), 1 without weights (``Rows.w`` None: the same operations with sigma in place of c_i sigma, so the same
bits and the same time). Row i being the preferred row of all its pairs in the loops below (i above j in label
order), c_i sigma and c_i sigma^2 are taken once per row: a weighted pass costs what an unweighted one does.

Layout (:class:`Rows`): sorted position k holds data row rows[k]; query q owns positions offsets[q]:offsets[q+1],
labels ascending inside it. X itself is never copied or reordered (dense C-ordered or CSR, float32 or float64,
read in its own precision through cyrank/_rows.pxd, sums in float64). A query's rows are read while in cache:
the scores X w for them, the pairs, then X' for them, so an evaluation or a Hessian product is one pass over X.

Pairs without an exponential each: per query, e_k = exp(sigma (s_k - max_q s)) (one exp per row, kept in the
state for the Hessian products), then rho_ij = e_j / (e_i + e_j) and 1 - rho_ij = e_i / (e_i + e_j): one division
per pair; row i's costs log(1 + e_j / e_i) = -log(1 - rho_ij) are summed as the log of their product (one log per
row). rho is then exact to about 2 sigma (max s - min s) ulps of its query (the rounding of the exponents), where
one exponential per pair is exact to sigma |s_i - s_j| ulps. A query whose spread puts an e_k below TINY (a
score gap of hundreds) takes exp(-|sigma (s_i - s_j)|) per pair instead.

Queries run in parallel (OpenMP) in a fixed partition of contiguous chunks balanced by positions
(cyrank/_parallel.pxd), each with its own accumulator of X' g and of the loss, summed in chunk order: the same
bits for every thread count, and, the positions being in an order fixed by the rows' content, for every order of
the input rows. ``dot`` and ``rdot`` are the plain products in the sorted order (linear LambdaRank's weighted
pairs are evaluated by _lambdas.Reference on the sorted scores).
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, M_LN2, exp, frexp, log

from cyrank._math cimport log1pexp, pair_sigmoid
from cyrank._parallel cimport (MAX_CHUNKS, Interrupt, balanced_chunks, check_interrupt, chunk_accumulators,
                              chunk_count, interrupt_init, keep_going, product_threads, sum_chunks, sum_ordered,
                              zero_row)
from cyrank._rows cimport prefetch_row, row_axpy, row_dot
from cyrank._sort cimport KeyIndex, introsort
from cyrank._typedefs cimport floating, index_t, intp_t

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
    of each query), ``y`` (the labels at the positions, ascending inside a query), ``row_work`` (entries of an average
    row: a position's work in the chunk balance and the signal checks), the thread count of the passes (one below
    ``parallel_min_rows`` positions; -1: the shared default), the chunk accumulators (``acc``) and ``w`` (the sample
    weights at the positions, float64, or None: unweighted)."""
    cdef public object rows, offsets, y, acc, w
    cdef public intp_t n_positions, n_queries, n_threads, n_data_rows, row_work

    def __init__(self, rows, offsets, y, intp_t n_data_rows, intp_t row_work=1, intp_t parallel_min_rows=-1,
                 w=None):
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.w = None if w is None else np.ascontiguousarray(w, dtype=np.float64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.n_positions, self.n_queries, self.n_data_rows = self.rows.shape[0], self.offsets.shape[0] - 1, n_data_rows
        if (self.n_queries < 0 or self.offsets[0] != 0 or self.offsets[self.n_queries] != self.n_positions
                or np.any(np.diff(self.offsets) < 0) or self.y.shape[0] != self.n_positions
                or (self.n_positions and (self.rows.min() < 0 or self.rows.max() >= n_data_rows))
                or (self.w is not None and self.w.shape[0] != self.n_positions)):
            raise ValueError("Rows: inconsistent layout")
        self.n_threads = product_threads(self.n_positions, self.n_queries, parallel_min_rows)
        self.row_work = max(1, row_work)
        self.acc = None


# ------------------------------------------------------------------------------------------------ one query
cdef inline bint _exps(const double* s, intp_t n, double sigma, double* ex) noexcept nogil:
    """ex[k] = exp(sigma (s_k - max s)) (in (0, 1]; the difference taken first, so its rounding is relative to the
    query's spread, not to the scores' offset); True when every one is above TINY."""
    cdef intp_t k
    cdef double top = -INFINITY, low = INFINITY
    for k in range(n):
        top = max(top, s[k])
        low = min(low, s[k])
    for k in range(n):
        ex[k] = exp(sigma * (s[k] - top))
    return exp(sigma * (low - top)) > TINY


cdef double _query_loss(const double* s, const double* y, const double* c, intp_t n, double sigma, double* ex,
                        double* g) noexcept nogil:
    """One query's loss at the scores s; g = dL/ds, ex = the rows' exponentials, c the rows' weights or NULL
    (module docstring).

    Row i's costs log(1 + e_j / e_i) = -log(rho1_ij), rho1_ij = e_i / (e_i + e_j), are summed as the log of their
    product (kept in [1e-30, 1] by exact power-of-two rescaling): one log per row instead of one per pair, each
    pair's cost off by at most an ulp of 1 (1.1e-16 absolute) where log1p would be exact to an ulp of itself."""
    cdef intp_t i, j, lo_end = 0
    cdef double loss = 0.0, exi, inv, rho, rho1, g_i, gij, prod, ci, sigma_i
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
        ci = 1.0 if c == NULL else c[i]  # row i is the preferred row of every pair below
        sigma_i = sigma if c == NULL else ci * sigma
        if fast:
            prod = 1.0
            scale = 0
            for j in range(lo_end):
                inv = 1.0 / (exi + ex[j])
                gij = sigma_i * (ex[j] * inv)
                g_i -= gij
                g[j] += gij
                prod *= exi * inv
                if prod < 1e-30:  # a factor is at least TINY / 2: the next product stays a normal number
                    prod = frexp(prod, &e)
                    scale += e
            loss -= ci * (log(prod) + scale * LN2)
        else:
            for j in range(lo_end):
                rho = pair_sigmoid(sigma * (s[j] - s[i]), &rho1)
                loss += ci * log1pexp(sigma * (s[j] - s[i]))
                gij = sigma_i * rho
                g_i -= gij
                g[j] += gij
        g[i] += g_i
    return loss


cdef void _query_hess(const double* s, const double* ex, const double* y, const double* cw, intp_t n, double sigma,
                      const double* t, double* u) noexcept nogil:
    """u = H t on one query at the state (s, ex) of an evaluation; cw the rows' weights or NULL."""
    cdef intp_t i, j, lo_end = 0
    cdef double s2 = sigma * sigma, s2i, exi, ti, u_i, u_1, inv, inv1, rho, rho1, c, c1, low = INFINITY
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
        s2i = s2 if cw == NULL else cw[i] * s2  # row i is the preferred row of every pair below
        if low > TINY:  # two pairs at a time: independent divisions and sums the CPU can overlap (SSE2 pairs)
            j = 0
            u_1 = 0.0
            while j + 2 <= lo_end:
                inv = 1.0 / (exi + ex[j])
                inv1 = 1.0 / (exi + ex[j + 1])
                c = s2i * (exi * inv) * (ex[j] * inv) * (ti - t[j])
                c1 = s2i * (exi * inv1) * (ex[j + 1] * inv1) * (ti - t[j + 1])
                u_i += c
                u_1 += c1
                u[j] -= c
                u[j + 1] -= c1
                j += 2
            if j < lo_end:
                inv = 1.0 / (exi + ex[j])
                c = s2i * (exi * inv) * (ex[j] * inv) * (ti - t[j])
                u_i += c
                u[j] -= c
            u_i += u_1
        else:
            for j in range(lo_end):
                rho = pair_sigmoid(sigma * (s[j] - s[i]), &rho1)
                c = s2i * rho * rho1 * (ti - t[j])
                u_i += c
                u[j] -= c
        u[i] += u_i


# ------------------------------------------------------------------------------------------------ the passes
def _pass(int mode, const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
          intp_t n_features, Rows lay, const double[::1] x, double sigma, double[::1] s, double[::1] ex,
          double[::1] t, double[::1] u, double[::1] out):
    """One pass over the queries (``mode``: EVALUATE, HESSIAN, DOT or RDOT; module docstring). Returns the loss
    (EVALUATE) or 0."""
    cdef intp_t d = n_features, nq = lay.n_queries, nt = lay.n_threads, n = lay.n_positions
    cdef intp_t q, k, start, stop, tid, c, n_ch, rw
    cdef const intp_t[::1] rows = lay.rows, offsets = lay.offsets
    cdef const double[::1] y = lay.y
    cdef const double[::1] cw
    cdef const double* cw_p = NULL  # the weights at the positions, NULL: unweighted
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef double loss_c[MAX_CHUNKS]
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind_p = &indices[0]
    cdef const index_t* ptr_p = &indptr[0]
    cdef double* a
    cdef double* dst
    cdef double[:, ::1] acc
    cdef bint accumulate = mode != DOT
    if x.shape[0] != (n if mode == RDOT else d) or out.shape[0] != (n if mode == DOT else d) or (
            mode <= HESSIAN and (s.shape[0] != n or ex.shape[0] != n or t.shape[0] != n or u.shape[0] != n)):
        raise ValueError("_ranknet pass: wrong array sizes")
    if nq == 0 or n == 0:
        out[:] = 0.0
        return 0.0
    if lay.w is not None:
        cw = lay.w
        cw_p = &cw[0]
    rw = lay.row_work
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
                dst = &s[0] if mode == EVALUATE else (&t[0] if mode == HESSIAN else &out[0])
                if mode != RDOT:  # the scores (X w or X v) at the query's positions
                    for k in range(start, stop):
                        if k + AHEAD < n:
                            prefetch_row(X, ind_p, ptr_p, dense, d, rows[k + AHEAD])
                        dst[k] = row_dot(X, ind_p, ptr_p, dense, d, rows[k], &x[0])
                if mode == EVALUATE:
                    loss_c[c] += _query_loss(&s[start], &y[start], cw_p + start if cw_p != NULL else NULL,
                                             stop - start, sigma, &ex[start], &u[start])
                elif mode == HESSIAN:
                    _query_hess(&s[start], &ex[start], &y[start], cw_p + start if cw_p != NULL else NULL,
                                stop - start, sigma, &t[start], &u[start])
                elif mode == DOT:
                    continue
                a = <double*> &x[0] if mode == RDOT else &u[0]
                for k in range(start, stop):  # X' a over the query's rows (in cache, but for RDOT)
                    if mode == RDOT and k + AHEAD < n:
                        prefetch_row(X, ind_p, ptr_p, dense, d, rows[k + AHEAD])
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
    cdef double a0, a1, a2, a3
    cdef double acc[4]
    cdef const floating* x
    with nogil:
        for i in range(n_rows):
            a0 = a1 = a2 = a3 = 0.0
            if dense:
                x = &data[i * d]
                j = 0
                while j + 4 <= d:
                    a0 += x[j] * r[j]
                    a1 += x[j + 1] * r[j + 1]
                    a2 += x[j + 2] * r[j + 2]
                    a3 += x[j + 3] * r[j + 3]
                    j += 4
                while j < d:  # the last columns: lanes 0, 1, 2 by j mod 4
                    if j % 4 == 0:
                        a0 += x[j] * r[j]
                    elif j % 4 == 1:
                        a1 += x[j] * r[j]
                    else:
                        a2 += x[j] * r[j]
                    j += 1
            else:  # the lane by the column (no branch: the lanes of a sparse row follow no pattern)
                acc[0] = acc[1] = acc[2] = acc[3] = 0.0
                for k in range(indptr[i], indptr[i + 1]):
                    j = indices[k]
                    acc[j & 3] += data[k] * r[j]
                a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
            out[i] = (a0 + a1) + (a2 + a3)


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


# ------------------------------------------------------------------------------- the separable split (prototype)
# Pairs more than FAR / sigma apart in score are separable to rounding: with u = sigma (s_i - s_j) > FAR,
# log(1 + e^-u) < e^-37 < eps / 2 and rho_ij < e^-37 (a well-ordered pair: nothing); with u < -FAR, rho_ij rounds
# to 1 and the cost is -u (1 + e^u / |u| relative: a misordered pair costs sigma (s_j - s_i) and pulls with
# sigma). Per query: sort each label level by score, sweep the rows of each level in score order with two
# pointers per lower level (the first score >= s_i - W and the first > s_i + W, W = FAR / sigma): the misordered
# far pairs of row i are a suffix of a lower level, summed by suffix sums of the scores (their counts handed to
# the lower rows by a difference array); only the window in between is enumerated. O(n L + close pairs) after an
# O(n log n) sort (L levels). The Gauss-Newton diagonal of far pairs (< e^-37 sigma^2) is dropped.
cdef double FAR = 37.0


cdef double _query_split(const double* s, const double* y, intp_t n, double sigma, KeyIndex* rec, double* suf,
                         double* cnt, double* g, double* h) noexcept nogil:
    """One query's loss, gradient (g) and Gauss-Newton diagonal (h) by the split (above); rec, suf, cnt: n each.
    (The close pairs by the rows' exponentials, as the pair loop, measured 0.9-2.6x the pair loop's time: their
    rho is then exact to |sigma (s - max s)| ulps, not to 1e-15.)"""
    cdef intp_t a, b, m_a, m_b, l_a, l_b, k, j, lo, hi, i, jj
    cdef double loss = 0.0, W = FAR / sigma, s2 = sigma * sigma, si, rho, rho1, c0, run, gij
    for k in range(n):
        g[k] = 0.0
        h[k] = 0.0
    if n < 2 or y[0] == y[n - 1]:
        return 0.0
    c0 = 0.5 * (s[0] + s[n - 1])  # a score of the query: sums of s - c0 keep small numbers
    a = 0
    while a < n:  # each level (a run of equal labels) sorted by score; suffix sums of s - c0, counts zeroed
        b = a + 1
        while b < n and y[b] == y[a]:
            b += 1
        for k in range(a, b):
            rec[k].key = s[k]
            rec[k].index = k
        introsort(rec + a, b - a)
        run = 0.0
        for k in range(b - 1, a - 1, -1):  # suffix sums: suf[k] = sum of s - c0 over the level's rows k..b-1
            run += rec[k].key - c0
            suf[k] = run
            cnt[k] = 0.0
        a = b
    # sweep: each level m (rows m_a..m_b) against every lower level l (l_a..l_b), both in score order
    m_a = 0
    while m_a < n:
        m_b = m_a + 1
        while m_b < n and y[m_b] == y[m_a]:
            m_b += 1
        l_a = 0
        while l_a < m_a:
            l_b = l_a + 1
            while l_b < m_a and y[l_b] == y[l_a]:
                l_b += 1
            lo = l_a
            hi = l_a
            for k in range(m_a, m_b):
                i = rec[k].index
                si = s[i]
                while lo < l_b and rec[lo].key < si - W:
                    lo += 1
                while hi < l_b and rec[hi].key <= si + W:
                    hi += 1
                if hi < l_b:  # misordered far: rows hi..l_b-1 of level l
                    loss += sigma * (suf[hi] - (l_b - hi) * (si - c0))
                    g[i] -= sigma * (l_b - hi)
                    cnt[hi] += 1.0
                for j in range(lo, hi):  # close pairs: exact (one exponential each, as the full pair sum)
                    jj = rec[j].index
                    rho = pair_sigmoid(sigma * (s[jj] - si), &rho1)
                    loss += log1pexp(sigma * (s[jj] - si))
                    gij = sigma * rho
                    g[i] -= gij
                    g[jj] += gij
                    h[i] += s2 * rho * rho1
                    h[jj] += s2 * rho * rho1
            l_a = l_b
        m_a = m_b
    a = 0
    while a < n:  # the lower rows' share of the far misordered pairs: a running count over each level
        b = a + 1
        while b < n and y[b] == y[a]:
            b += 1
        run = 0.0
        for k in range(a, b):
            run += cnt[k]
            g[rec[k].index] += sigma * run
        a = b
    return loss


def split_lambdas(const double[::1] s, const double[::1] y, const intp_t[::1] offsets, double sigma, double[::1] g,
                  double[::1] h):
    """The RankNet loss of every query (rows offsets[q]:offsets[q+1], labels ascending) by the separable split,
    its gradient into g and Gauss-Newton diagonal into h (far pairs' < e^-37 sigma^2 dropped). One thread."""
    cdef intp_t n = s.shape[0], nq = offsets.shape[0] - 1, q, m = 1
    cdef double loss = 0.0
    if y.shape[0] != n or g.shape[0] != n or h.shape[0] != n or offsets[nq] != n:
        raise ValueError("split_lambdas: wrong array sizes")
    for q in range(nq):
        m = max(m, offsets[q + 1] - offsets[q])
    cdef KeyIndex[::1] rec = np.zeros(m + 1, dtype=[("key", np.float64), ("index", np.int64)])
    cdef double[::1] suf = np.zeros(m + 1), cnt = np.zeros(m + 1)
    with nogil:
        for q in range(nq):
            loss += _query_split(&s[offsets[q]], &y[offsets[q]], offsets[q + 1] - offsets[q], sigma, &rec[0],
                                 &suf[0], &cnt[0], &g[offsets[q]], &h[offsets[q]])
    return loss


def pair_lambdas(const double[::1] s, const double[::1] y, const intp_t[::1] offsets, double sigma, double[::1] g):
    """The RankNet loss and gradient by the solver's pair loop (_query_loss), for comparison. One thread."""
    cdef intp_t n = s.shape[0], nq = offsets.shape[0] - 1, q
    cdef double loss = 0.0
    cdef double[::1] ex = np.empty(max(n, 1))
    if y.shape[0] != n or g.shape[0] != n or offsets[nq] != n:
        raise ValueError("pair_lambdas: wrong array sizes")
    with nogil:
        for q in range(nq):
            loss += _query_loss(&s[offsets[q]], &y[offsets[q]], NULL, offsets[q + 1] - offsets[q], sigma,
                                &ex[offsets[q]], &g[offsets[q]])
    return loss


def sort_runs(const intp_t[::1] order, const intp_t[::1] bounds, const double[::1] key):
    """``order`` with each run order[bounds[r]:bounds[r+1]] sorted by key[row] (equal keys by row index): a
    segmented sort, O(n log run)."""
    cdef intp_t n = order.shape[0], nr = bounds.shape[0] - 1, r, k
    if bounds[0] != 0 or bounds[nr] != n:
        raise ValueError("sort_runs: bounds must run from 0 to len(order)")
    out = np.empty(n, dtype=np.int64)
    cdef intp_t[::1] o = out
    cdef KeyIndex[::1] rec = np.empty(max(n, 1), dtype=[("key", np.float64), ("index", np.int64)])
    with nogil:
        for k in range(n):
            rec[k].key = key[order[k]]
            rec[k].index = order[k]
        for r in range(nr):
            if bounds[r + 1] - bounds[r] > 1:
                introsort(&rec[bounds[r]], bounds[r + 1] - bounds[r])
        for k in range(n):
            o[k] = rec[k].index
    return out
