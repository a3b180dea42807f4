"""RankSVM loss, gradient and Hessian-vector products through the order-statistic sums of _ostree.pyx
(Kuo, Lee & Lin, SDM 2014, section 3.2 and Appendix B).

With scores f, the active pairs SV = {(i, j) in P : f_i - f_j < 1} and the per-document sums l_i^-, l_i^+
(counts) and alpha_i^- , alpha_i^+ (sums of partner scores) of _ostree.pyx:

squared hinge   L(f) = sum_SV (1 - f_i + f_j)^2 = f'A'Af - 2 e'Af + |SV|          (B.1, A restricted to SV)
                     = sum_i f_i [(l_i^+ + l_i^-) f_i - alpha_i^+ - alpha_i^-] - 2 sum_i (l_i^- - l_i^+) f_i + sum_i l_i^-
                dL/df_i = 2 [ l_i^+ (1 + f_i) - alpha_i^+ - l_i^- (1 - f_i) - alpha_i^- ]             (B.2)
                (generalised) d2L/df2 t = 2 A'A t,  (A'A t)_i = (l_i^+ + l_i^-) t_i - gamma_i^+ - gamma_i^-   (B.3)
hinge           L(f) = sum_SV (1 - f_i + f_j) = sum_i l_i^- (1 - f_i) + alpha_i^-
                a subgradient: dL/df_i = l_i^+ - l_i^-

where gamma are the sums of t over the active partners. Row weights (sample_weight, w_i of the preferred row:
L(f) = sum_SV w_i loss(1 - f_i + f_j); Joachims, Swaminathan & Schnabel, WSDM 2017) change none of these formulas:
the sweeps return the weighted sums instead (l_i^- and alpha_i^- times w_i; l_i^+, alpha_i^+ and gamma_i^+
summing w_j and w_j z_j over the partners above; _ostree.pyx), and every pair is still visited through the
order-statistic sums only. Linear model: f = X w, so the gradient is X' dL/df and
the Hessian-vector product 2 X'A'A X v. Kernel model: f = Q beta, handled by the ``scores_*`` functions (Q
products are done by the caller with BLAS).

Data layout. Documents are visited through ``rows``: sorted position k (queries contiguous, queries with a
single label level left out) holds data row rows[k]; query q owns positions offsets[q]:offsets[q+1];
rank[k] is the dense label rank of position k inside its query. X itself is never copied or reordered.

State. A function evaluation sorts every query by score and keeps that order (``perm``) and the centered
scores (``f``); Hessian-vector products at the same point reuse both, so a CG step costs one pass over X
(the rows of one query are read while in cache: X v for them, the sweep, then X' for them) plus
O(l log n_levels). Queries are processed in parallel (OpenMP) in a fixed partition of contiguous chunks
balanced by positions (cyrank/_parallel.pxd), each chunk accumulating its own share of X'z and of the loss,
summed in chunk order: the same input gives bit-identical results whichever thread runs which chunk.
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from scipy.linalg.cython_blas cimport dgemm

from cyrank._rows cimport prefetch_row, row_axpy, row_dot
from cyrank._typedefs cimport floating, index_t, intp_t
from cyrank._parallel cimport (MAX_CHUNKS, Interrupt, balanced_chunks, check_interrupt, chunk_accumulators,
                              chunk_count, interrupt_init, keep_going, padded_width, product_threads, sum_chunks,
                              sum_ordered, zero_row)
from cyrank.ranksvm._ostree cimport KeyIndex, center_segment, query_sweep, sort_by_key
from cyrank.ranksvm._ostree import KEY_INDEX_DTYPE


# rows whose entries are requested ahead of the one read by the linear passes: with the hardware prefetcher alone,
# a dense 2e5 x 136 float32 loss-and-gradient pass took 36.7 ms and a Hessian product 31.5 ms, 30.4 and 24.8 ms with
# the next rows requested (float64: 41.8 / 35.3 -> 36.8 / 31.1 ms; one thread)
cdef intp_t AHEAD = 2


# --------------------------------------------------------------------------------------- one query, scores
cdef double _query_loss(intp_t start, intp_t stop, double* f, intp_t* perm, const intp_t* rank, intp_t n_levels,
                        bint squared, intp_t* fen_cnt, double* fen_sum, double* cm, double* sm, double* cp,
                        double* sp, double* gf, double* n_active, double* active_weight, KeyIndex* scratch,
                        const double* weight) noexcept nogil:
    """Sort one query by f (scores at its positions), center f, and return its loss; dL/df goes to gf. Adds the
    query's active pairs to n_active and their weight (sum of w_i; their count without weights) to active_weight."""
    cdef intp_t k
    cdef double loss = 0.0, act = 0.0, fk
    for k in range(start, stop):
        perm[k] = k
    sort_by_key(perm + start, stop - start, f, scratch + start)
    center_segment(start, stop, perm, f)
    n_active[0] += query_sweep(start, stop, f, perm, rank, f + start, 1, n_levels, fen_cnt, fen_sum, cm + start,
                               sm + start, cp + start, sp + start, weight)
    for k in range(start, stop):
        fk = f[k]
        act += cm[k]
        if squared:
            loss += fk * ((cp[k] + cm[k]) * fk - sp[k] - sm[k]) - 2.0 * (cm[k] - cp[k]) * fk + cm[k]
            gf[k] = 2.0 * (cp[k] * (1.0 + fk) - sp[k] - cm[k] * (1.0 - fk) - sm[k])
        else:
            loss += cm[k] * (1.0 - fk) + sm[k]
            gf[k] = cp[k] - cm[k]
    active_weight[0] += act
    return loss


cdef void _query_hess(intp_t start, intp_t stop, const double* f, const intp_t* perm, const intp_t* rank,
                      intp_t n_levels, double* t, intp_t* fen_cnt, double* fen_sum, double* cm, double* sm,
                      double* cp, double* sp, const double* weight) noexcept nogil:
    """t <- A'WA t on one query (t given at its positions; centered first), with the active set of f (W: the
    pairs' weights, NULL: none)."""
    cdef intp_t k
    center_segment(start, stop, perm, t)
    query_sweep(start, stop, f, perm, rank, t + start, 1, n_levels, fen_cnt, fen_sum, cm + start, sm + start,
                cp + start, sp + start, weight)
    for k in range(start, stop):
        t[k] = (cp[k] + cm[k]) * t[k] - sp[k] - sm[k]


def _check_layout(const intp_t[::1] rows, const intp_t[::1] offsets, const intp_t[::1] rank,
                  const intp_t[::1] n_levels, intp_t n_data_rows):
    cdef intp_t n = rows.shape[0], nq = offsets.shape[0] - 1, q, k, max_lev = 1
    if nq < 0 or offsets[0] != 0 or offsets[nq] != n or rank.shape[0] != n or n_levels.shape[0] != nq:
        raise ValueError("inconsistent query layout")
    for q in range(nq):
        if offsets[q + 1] < offsets[q] or n_levels[q] < 1:
            raise ValueError("inconsistent query layout")
        max_lev = max(max_lev, n_levels[q])
        for k in range(offsets[q], offsets[q + 1]):
            if rank[k] < 0 or rank[k] >= n_levels[q] or rows[k] < 0 or rows[k] >= n_data_rows:
                raise ValueError("inconsistent query layout")
    return max_lev


cdef class Layout:
    """Sorted positions of the documents that take part in pairs, and the scratch memory of the kernels.

    rows[k]: data row of position k; offsets: positions of each query; rank: label rank of each position;
    n_levels: label levels of each query (>= 2); weight: None (unweighted) or the weight of each position (the
    pair (i, j), i preferred, counts with weight[i]), float64 >= 0. ``pair_weight_sum``: sum over the pairs of
    the preferred position's weight (their number without weights).
    Products run on one thread below ``parallel_min_rows`` positions (-1: the shared default,
    cyrank/_parallel.pxd).
    """
    cdef public object rows, offsets, rank, n_levels, weight
    cdef public intp_t n_positions, n_queries, max_levels, n_threads, n_data_rows
    cdef public double pair_weight_sum
    cdef object fen_cnt, fen_sum, work, scratch
    cdef const double* wt  # weight's data, or NULL: the kernels' unweighted path
    cdef public object acc  # the chunk accumulators of the linear products (_parallel.chunk_accumulators)

    def __init__(self, rows, offsets, rank, n_levels, n_data_rows, intp_t parallel_min_rows=-1, weight=None):
        cdef const double[::1] wv
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.rank = np.ascontiguousarray(rank, dtype=np.int64)
        self.n_levels = np.ascontiguousarray(n_levels, dtype=np.int64)
        self.n_data_rows = n_data_rows
        self.max_levels = _check_layout(self.rows, self.offsets, self.rank, self.n_levels, n_data_rows)
        self.n_positions = self.rows.shape[0]
        self.n_queries = self.offsets.shape[0] - 1
        self.wt = NULL
        self.weight = None
        if weight is not None:
            self.weight = np.ascontiguousarray(weight, dtype=np.float64)
            if self.weight.shape != (self.n_positions,):
                raise ValueError("inconsistent query layout: one weight per position")
            if self.n_positions:
                wv = self.weight
                self.wt = &wv[0]
        below = _positions_below(self.offsets, self.rank)
        self.pair_weight_sum = float(below.sum() if self.weight is None else below @ self.weight)
        self.n_threads = product_threads(self.n_positions, self.n_queries, parallel_min_rows)
        # one Fenwick tree per thread, each row on cache lines of its own (padded_width: no false sharing); with
        # weights the sums are followed by a tree of weights (query_sweep)
        self.fen_cnt = np.zeros((self.n_threads, padded_width(self.max_levels + 1)), dtype=np.int64)
        self.fen_sum = np.zeros((self.n_threads, padded_width(2 * (self.max_levels + 1))), dtype=np.float64)
        self.work = np.zeros((5, self.n_positions), dtype=np.float64)
        self.scratch = np.zeros(max(1, self.n_positions), dtype=KEY_INDEX_DTYPE)
        self.acc = None

    def new_state(self):
        """(f, perm): centered scores and per-query sort order of a point, for hess_vec."""
        return np.zeros(self.n_positions, dtype=np.float64), np.arange(self.n_positions, dtype=np.int64)


def _positions_below(offsets, rank):
    """Per position of a layout, the number of positions of its query with a lower label rank (its pairs as the
    preferred position), in O(n): the counts of each (query, rank), summed before each rank."""
    n = rank.shape[0]
    start = np.repeat(offsets[:offsets.shape[0] - 1], np.diff(offsets))  # no negative index: wraparound is off
    key = start + rank  # (query, rank) as one index below n: a query of l positions has ranks below l
    counts = np.bincount(key, minlength=n)
    before = np.cumsum(counts) - counts
    return before[key] - start


# --------------------------------------------------------------------------------------------- linear model
cdef intp_t _row_work(const index_t[::1] indptr, bint dense, intp_t d, intp_t n_data_rows) noexcept nogil:
    """Entries of an average row: the work unit of a position in the chunk balance and the signal checks."""
    cdef intp_t nnz
    if dense:
        return d if d > 0 else 1
    nnz = indptr[indptr.shape[0] - 1] // (n_data_rows if n_data_rows > 0 else 1)
    return nnz if nnz > 0 else 1


def linear_fun_grad(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                    intp_t n_features, Layout lay, const double[::1] w, bint squared,
                    double[::1] f, intp_t[::1] perm, double[::1] xg):
    """Loss L(Xw) and xg = X' dL/df (the loss part of the gradient); f, perm receive the state at w.

    Returns (loss, number of active pairs, their weight: the sum of w_i over them, their number without weights).
    ``squared`` selects the squared hinge, else the hinge (with the subgradient l^+ - l^-).
    """
    cdef intp_t d = n_features, nq = lay.n_queries, nt = lay.n_threads, n_pos = lay.n_positions
    cdef intp_t q, k, start, stop, tid, c, n_ch, rw
    cdef const intp_t[::1] rows = lay.rows, offsets = lay.offsets, rank = lay.rank, nlev = lay.n_levels
    cdef intp_t[:, ::1] fen_cnt = lay.fen_cnt
    cdef double[:, ::1] fen_sum = lay.fen_sum, work = lay.work
    cdef KeyIndex[::1] scratch = lay.scratch
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef double loss_c[MAX_CHUNKS]
    cdef double act_c[MAX_CHUNKS]
    cdef double actw_c[MAX_CHUNKS]
    cdef Interrupt intr
    cdef double* gf
    cdef const double* wt = lay.wt
    cdef const index_t* ind_p = &indices[0]
    cdef const index_t* ptr_p = &indptr[0]
    if w.shape[0] != d or f.shape[0] != lay.n_positions or perm.shape[0] != lay.n_positions or xg.shape[0] != d:
        raise ValueError("linear_fun_grad: wrong array sizes")
    if nq == 0:
        xg[:] = 0.0
        return 0.0, 0, 0.0
    rw = _row_work(indptr, dense, d, lay.n_data_rows)
    n_ch = chunk_count(nq, d, lay.n_positions * rw, nt)
    balanced_chunks(&offsets[0], nq, n_ch, bounds)
    cdef double[:, ::1] acc = chunk_accumulators(lay, n_ch, d)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            loss_c[c] = 0.0
            act_c[c] = 0.0
            actw_c[c] = 0.0
            zero_row(&acc[c, 0], acc.shape[1])
            for q in range(bounds[c], bounds[c + 1]):
                start = offsets[q]
                stop = offsets[q + 1]
                if not keep_going(&intr, tid, (stop - start) * rw):
                    break
                for k in range(start, stop):
                    if k + AHEAD < n_pos:
                        prefetch_row(&data[0], ind_p, ptr_p, dense, d, rows[k + AHEAD])
                    f[k] = row_dot(&data[0], ind_p, ptr_p, dense, d, rows[k], &w[0])
                gf = &work[4, 0]
                loss_c[c] += _query_loss(start, stop, &f[0], &perm[0], &rank[0], nlev[q], squared,
                                         &fen_cnt[tid, 0], &fen_sum[tid, 0], &work[0, 0], &work[1, 0],
                                         &work[2, 0], &work[3, 0], gf, &act_c[c], &actw_c[c], &scratch[0], wt)
                for k in range(start, stop):
                    if gf[k] != 0.0:
                        row_axpy(&data[0], ind_p, ptr_p, dense, d, rows[k], gf[k], &acc[c, 0])
    check_interrupt(&intr)
    sum_chunks(acc, xg)
    return sum_ordered(loss_c, n_ch), int(round(sum_ordered(act_c, n_ch))), sum_ordered(actw_c, n_ch)


def linear_hess(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                intp_t n_features, Layout lay, const double[::1] f, const intp_t[::1] perm,
                const double[::1] v, double[::1] out):
    """out = X'A'WA X v with the active set of the state (f, perm) (W: the pairs' weights); the Hessian is
    I + 2C out."""
    cdef intp_t d = n_features, nq = lay.n_queries, nt = lay.n_threads, n_pos = lay.n_positions
    cdef intp_t q, k, start, stop, tid, c, n_ch, rw
    cdef const intp_t[::1] rows = lay.rows, offsets = lay.offsets, rank = lay.rank, nlev = lay.n_levels
    cdef intp_t[:, ::1] fen_cnt = lay.fen_cnt
    cdef double[:, ::1] fen_sum = lay.fen_sum, work = lay.work
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef Interrupt intr
    cdef double* t
    cdef const double* wt = lay.wt
    cdef const index_t* ind_p = &indices[0]
    cdef const index_t* ptr_p = &indptr[0]
    if v.shape[0] != d or out.shape[0] != d or f.shape[0] != lay.n_positions:
        raise ValueError("linear_hess: wrong array sizes")
    if nq == 0:
        out[:] = 0.0
        return
    rw = _row_work(indptr, dense, d, lay.n_data_rows)
    n_ch = chunk_count(nq, d, lay.n_positions * rw, nt)
    balanced_chunks(&offsets[0], nq, n_ch, bounds)
    cdef double[:, ::1] acc = chunk_accumulators(lay, n_ch, d)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            zero_row(&acc[c, 0], acc.shape[1])
            for q in range(bounds[c], bounds[c + 1]):
                start = offsets[q]
                stop = offsets[q + 1]
                if not keep_going(&intr, tid, (stop - start) * rw):
                    break
                t = &work[4, 0]
                for k in range(start, stop):
                    if k + AHEAD < n_pos:
                        prefetch_row(&data[0], ind_p, ptr_p, dense, d, rows[k + AHEAD])
                    t[k] = row_dot(&data[0], ind_p, ptr_p, dense, d, rows[k], &v[0])
                _query_hess(start, stop, &f[0], &perm[0], &rank[0], nlev[q], t, &fen_cnt[tid, 0],
                            &fen_sum[tid, 0], &work[0, 0], &work[1, 0], &work[2, 0], &work[3, 0], wt)
                for k in range(start, stop):
                    if t[k] != 0.0:
                        row_axpy(&data[0], ind_p, ptr_p, dense, d, rows[k], t[k], &acc[c, 0])
    check_interrupt(&intr)
    sum_chunks(acc, out)


# ------------------------------------------------------------------------------- linear model, Hessian block
# a query's gathered columns (and their image under A'A) take at most this many doubles each per thread: the rows
# of a very long query are taken in blocks of columns
cdef intp_t BLOCK_DOUBLES = 1 << 17


cdef void _gather_columns(const floating* data, const index_t* ind, const index_t* ptr, bint dense, intp_t d,
                          const intp_t* rows, intp_t start, intp_t stop, const intp_t* perm, const intp_t* cols,
                          const intp_t* col_pos, intp_t c0, intp_t c1, double* T) noexcept nogil:
    """T[k - start, j - c0] = x_{rows[k], cols[j]} (float64, row-major) for the positions k of one query and
    j in c0:c1, each column centred at the query's middle sorted position (as _query_hess centres t).
    col_pos[r]: the index of feature r in cols, or -1 (sparse X)."""
    cdef intp_t mb = c1 - c0, k, j, p, r, mid = perm[start + (stop - start) // 2] - start
    cdef double* row
    for k in range(start, stop):
        if k + AHEAD < stop:
            prefetch_row(data, ind, ptr, dense, d, rows[k + AHEAD])
        row = T + (k - start) * mb
        r = rows[k]
        if dense:
            for j in range(mb):
                row[j] = data[r * d + cols[c0 + j]]
        else:
            for j in range(mb):
                row[j] = 0.0
            for p in range(ptr[r], ptr[r + 1]):
                j = col_pos[ind[p]]
                if c0 <= j < c1:
                    row[j - c0] += data[p]
    for k in range(stop - start):
        if k != mid:
            row = T + k * mb
            for j in range(mb):
                row[j] -= T[mid * mb + j]
    for j in range(mb):
        T[mid * mb + j] = 0.0


cdef void _query_hess_block(const floating* data, const index_t* ind, const index_t* ptr, bint dense, intp_t d,
                            const intp_t* rows, intp_t start, intp_t stop, const double* f, const intp_t* perm,
                            const intp_t* rank, intp_t n_levels, const intp_t* cols, const intp_t* col_pos,
                            intp_t m, intp_t mb, intp_t* fen_cnt, double* fen_sum, double* cnt_minus,
                            double* cnt_plus, double* Tb, double* LT, double* Gp, double* Ta,
                            double* acc, const double* weight) noexcept nogil:
    """acc (m x m, row-major) += X_c' A'WA X_c over the rows of one query, in blocks of mb columns: T_b = X_c[:, b]
    gathered, A'WA T_b = (l^- + l^+) T_b - Gamma^- - Gamma^+ by one pair of sweeps for all its columns
    (query_sweep, weighted sums with ``weight``), then acc[a, b] += T_a' (A'WA T_b) by dgemm."""
    cdef intp_t b0 = 0, b1, a0, a1, k, a, w
    cdef int M, N, K = <int> (stop - start), ldc = <int> m
    cdef double one = 1.0, c
    cdef double* Tq
    while b0 < m:
        b1 = b0 + mb if b0 + mb < m else m
        w = b1 - b0
        _gather_columns(data, ind, ptr, dense, d, rows, start, stop, perm, cols, col_pos, b0, b1, Tb)
        query_sweep(start, stop, f, perm, rank, Tb, w, n_levels, fen_cnt, fen_sum, cnt_minus, LT, cnt_plus, Gp,
                    weight)
        for k in range(stop - start):
            c = cnt_minus[k] + cnt_plus[k]
            for a in range(k * w, (k + 1) * w):
                LT[a] = c * Tb[a] - LT[a] - Gp[a]
        a0 = 0
        while a0 < m:
            a1 = a0 + mb if a0 + mb < m else m
            Tq = Tb
            if a0 != b0:
                _gather_columns(data, ind, ptr, dense, d, rows, start, stop, perm, cols, col_pos, a0, a1, Ta)
                Tq = Ta
            M = <int> w
            N = <int> (a1 - a0)
            # column-major view: C (M x N, at acc[a0, b0], ldc m) += LT' (M x K) times Tq (K x N)
            dgemm("N", "T", &M, &N, &K, &one, LT, &M, Tq, &N, &one, acc + a0 * m + b0, &ldc)
            a0 = a1
        b0 = b1


def linear_hess_block(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                      intp_t n_features, Layout lay, const double[::1] f, const intp_t[::1] perm,
                      const intp_t[::1] cols, double[:, ::1] out):
    """out = X_c'A'WA X_c for the columns c = ``cols`` of X: the block [c, c] of the matrix X'A'WA X whose products
    linear_hess gives, with the active set of the state (f, perm), in one pass over the queries for all of c.

    Per query: its rows of X_c gathered (float64, centred), A'WA applied to all columns by one pair of sweeps, and
    X_c'(A'A X_c) added by BLAS dgemm; O(l |c| log n_levels + l |c|^2) per query of l documents instead of |c|
    passes over X. Queries longer than BLOCK_DOUBLES / |c| documents go in blocks of columns. One |c| x |c|
    accumulator per chunk of queries, summed in chunk order: deterministic.
    """
    cdef intp_t d = n_features, nq = lay.n_queries, nt = lay.n_threads, m = cols.shape[0]
    cdef intp_t q, j, start, stop, tid, c, n_ch, l_max = 1, mb, n_blocks, fen_width
    cdef const intp_t[::1] rows = lay.rows, offsets = lay.offsets, rank = lay.rank, nlev = lay.n_levels
    cdef intp_t[:, ::1] fen_cnt = lay.fen_cnt
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef Interrupt intr
    cdef const double* wt = lay.wt
    cdef const index_t* ind_p = &indices[0]
    cdef const index_t* ptr_p = &indptr[0]
    if out.shape[0] != m or out.shape[1] != m or f.shape[0] != lay.n_positions or perm.shape[0] != lay.n_positions:
        raise ValueError("linear_hess_block: wrong array sizes")
    for j in range(m):
        if cols[j] < 0 or cols[j] >= d:
            raise ValueError("linear_hess_block: a column index is out of range")
    out[:, :] = 0.0
    if nq == 0 or m == 0:
        return
    for q in range(nq):
        l_max = max(l_max, offsets[q + 1] - offsets[q])
    mb = max(1, BLOCK_DOUBLES // l_max)
    n_blocks = (m + mb - 1) // mb  # blocks of columns of about equal width mb
    mb = (m + n_blocks - 1) // n_blocks
    fen_width = padded_width((lay.max_levels + 1) * (mb + 1))  # the sums, then (weights) the tree of weights
    col_pos_a = np.full(d, -1, dtype=np.int64)
    col_pos_a[np.asarray(cols)] = np.arange(m)
    cdef const intp_t[::1] col_pos = col_pos_a
    cdef double[:, ::1] fen_sum = np.empty((nt, fen_width))
    cdef double[:, :, ::1] count = np.empty((nt, 2, padded_width(l_max)))
    # per thread: T_b, A'A T_b (Gamma^- first), Gamma^+ and (with several blocks) T_a
    cdef double[:, :, ::1] buf = np.empty((nt, 3 if n_blocks == 1 else 4, padded_width(l_max * mb)))
    # accumulators within 1/64 of the gathered entries (the dgemm work per query is |c| times that)
    n_ch = chunk_count(nq, m * m, lay.n_positions * m // 8, nt)
    balanced_chunks(&offsets[0], nq, n_ch, bounds)
    cdef double[:, ::1] acc = np.empty((n_ch, padded_width(m * m)))
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            zero_row(&acc[c, 0], m * m)
            for q in range(bounds[c], bounds[c + 1]):
                start = offsets[q]
                stop = offsets[q + 1]
                if not keep_going(&intr, tid, (stop - start) * m * (m // mb + 1)):
                    break
                _query_hess_block(&data[0], ind_p, ptr_p, dense, d, &rows[0], start, stop, &f[0], &perm[0],
                                  &rank[0], nlev[q], &cols[0], &col_pos[0], m, mb, &fen_cnt[tid, 0],
                                  &fen_sum[tid, 0], &count[tid, 0, 0], &count[tid, 1, 0], &buf[tid, 0, 0],
                                  &buf[tid, 1, 0], &buf[tid, 2, 0], &buf[tid, buf.shape[1] - 1, 0], &acc[c, 0],
                                  wt)
    check_interrupt(&intr)
    sum_chunks(acc, np.asarray(out).reshape(-1))


# --------------------------------------------------------------------------------------------- given scores
# work units charged per position by the signal checks of the score kernels (a sort and a sweep)
cdef intp_t SCORE_WORK = 16


def scores_fun_grad(const double[::1] scores, Layout lay, bint squared, double[::1] f, intp_t[::1] perm,
                    double[::1] gf_out):
    """Loss L(scores) and gf_out = dL/dscores (indexed like ``scores``, i.e. by data row; rows outside the
    layout get 0); f, perm receive the state. Returns (loss, number of active pairs, their weight) as
    linear_fun_grad."""
    cdef intp_t nq = lay.n_queries, nt = lay.n_threads, q, k, start, stop, tid, c, n_ch
    cdef const intp_t[::1] rows = lay.rows, offsets = lay.offsets, rank = lay.rank, nlev = lay.n_levels
    cdef intp_t[:, ::1] fen_cnt = lay.fen_cnt
    cdef double[:, ::1] fen_sum = lay.fen_sum, work = lay.work
    cdef KeyIndex[::1] scratch = lay.scratch
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef double loss_c[MAX_CHUNKS]
    cdef double act_c[MAX_CHUNKS]
    cdef double actw_c[MAX_CHUNKS]
    cdef Interrupt intr
    cdef double* gf
    cdef const double* wt = lay.wt
    if scores.shape[0] != lay.n_data_rows or gf_out.shape[0] != lay.n_data_rows or f.shape[0] != lay.n_positions:
        raise ValueError("scores_fun_grad: wrong array sizes")
    gf_out[:] = 0.0
    if nq == 0:
        return 0.0, 0, 0.0
    n_ch = chunk_count(nq, 0, 0, nt)
    balanced_chunks(&offsets[0], nq, n_ch, bounds)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            loss_c[c] = 0.0
            act_c[c] = 0.0
            actw_c[c] = 0.0
            for q in range(bounds[c], bounds[c + 1]):
                start = offsets[q]
                stop = offsets[q + 1]
                if not keep_going(&intr, tid, (stop - start) * SCORE_WORK):
                    break
                for k in range(start, stop):
                    f[k] = scores[rows[k]]
                gf = &work[4, 0]
                loss_c[c] += _query_loss(start, stop, &f[0], &perm[0], &rank[0], nlev[q], squared,
                                         &fen_cnt[tid, 0], &fen_sum[tid, 0], &work[0, 0], &work[1, 0],
                                         &work[2, 0], &work[3, 0], gf, &act_c[c], &actw_c[c], &scratch[0], wt)
                for k in range(start, stop):
                    gf_out[rows[k]] = gf[k]
    check_interrupt(&intr)
    return sum_ordered(loss_c, n_ch), int(round(sum_ordered(act_c, n_ch))), sum_ordered(actw_c, n_ch)


def scores_hess(const double[::1] t_in, Layout lay, const double[::1] f, const intp_t[::1] perm, double[::1] out):
    """out = A'WA t_in (indexed by data row; rows outside the layout get 0) with the active set of (f, perm)."""
    cdef intp_t nq = lay.n_queries, nt = lay.n_threads, q, k, start, stop, tid, c, n_ch
    cdef const intp_t[::1] rows = lay.rows, offsets = lay.offsets, rank = lay.rank, nlev = lay.n_levels
    cdef intp_t[:, ::1] fen_cnt = lay.fen_cnt
    cdef double[:, ::1] fen_sum = lay.fen_sum, work = lay.work
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef Interrupt intr
    cdef double* t
    cdef const double* wt = lay.wt
    if t_in.shape[0] != lay.n_data_rows or out.shape[0] != lay.n_data_rows or f.shape[0] != lay.n_positions:
        raise ValueError("scores_hess: wrong array sizes")
    out[:] = 0.0
    if nq == 0:
        return
    n_ch = chunk_count(nq, 0, 0, nt)
    balanced_chunks(&offsets[0], nq, n_ch, bounds)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            for q in range(bounds[c], bounds[c + 1]):
                start = offsets[q]
                stop = offsets[q + 1]
                if not keep_going(&intr, tid, (stop - start) * SCORE_WORK):
                    break
                t = &work[4, 0]
                for k in range(start, stop):
                    t[k] = t_in[rows[k]]
                _query_hess(start, stop, &f[0], &perm[0], &rank[0], nlev[q], t, &fen_cnt[tid, 0],
                            &fen_sum[tid, 0], &work[0, 0], &work[1, 0], &work[2, 0], &work[3, 0], wt)
                for k in range(start, stop):
                    out[rows[k]] = t[k]
    check_interrupt(&intr)
