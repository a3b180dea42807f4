"""The listwise losses in the scores f, query by query: value, gradient, Hessian-vector product and Hessian
diagonal, for ListNet / softmax cross-entropy and ListMLE (Efron's or Breslow's ties, top k).

ListNet (Cao, Qin, Liu, Tsai & Li, ICML 2007, section 4; Bruch, Wang, Bendersky & Najork, ICTIR 2019), with
c_i = w_i p_i the weighted target of row i (fixed for a fit) and C = sum_i c_i:

    L_q = sum_i c_i (LSE(f) - f_i),   dL/df_i = C s_i - c_i,   H = C (diag(s) - s s'),   s = softmax(f).

ListMLE (Xia, Liu, Wang, Zhang & Li, ICML 2008, section 3) with ties (Efron 1977): the rows sorted by
decreasing label into tie groups; position t = start(G) + r of group G (size m, weight sum W_G):

    D_t = B_G + a_r S_G,   B_G = sum_{j below G} e^{f_j},   S_G = sum_{j in G} e^{f_j},
    a_r = 1 - r / m (Efron) or 1 (Breslow),   l_t = (W_G / m) log D_t - (1 / m) sum_{j in G} w_j f_j,

summed over the positions t < top_k. With c_t = W_G / m and q_t the distribution a_{t,j} e^{f_j} / D_t over
the rows (a_{t,j} = 1 below G, a_r in G, 0 above), the gradient is sum_t c_t q_t minus the linear part and the
Hessian sum_t c_t (diag(q_t) - q_t q_t'): a row j of group H sees a_{t,j} = 1 for every t of a group above H
and a_r for the t of its own group, so prefix sums over the groups give the gradient, H u and diag(H) in O(n).

Newton series (for tree learners): with H = D - O a ListNet query's Hessian, D = diag(H) = C diag(s (1 - s)) and
O_kj = C s_k s_j (k != j), the Newton direction H^+ g expands formally as D^-1 sum_t (O D^-1)^t g. A tree's leaf
value -sum g / sum h with h = diag(H) is a Newton step on the diagonal; handing the trees the truncated series
g~ = sum_{t < T} (O D^-1)^t g instead makes it an approximate step on the query's whole Hessian. Term t + 1 is
s_k sum_{j != k} (term t)_j / (1 - s_j) (C cancels), O(n) per query and term. With T = 3, unit weights and the
xendcg target this is the gradient LightGBM's rank_xendcg hands its trees (src/objective/rank_objective.hpp,
RankXENDCG: "first / second / third order terms"; XE-NDCG is Bruch, "An Alternative Cross Entropy Loss for
Learning-to-Rank", WWW 2021, arXiv:1911.09798).

Stability: every exponential is taken relative to the running maximum of its risk set. Going up from the last
group, M_G = max f over G and below (non-increasing downward), ex_j = e^{f_j - M_G} for j in G, and B_G, S_G are
stored scaled by e^{-M_G} (so D~_t = D_t e^{-M_G} >= 1 / m); going down, the prefix sums over the groups above
are carried scaled by e^{M_H} (multiplied by e^{M_H - M_prev} <= 1 at each group). No exponential exceeds 1 and
no sum overflows, whatever the score gaps (tested with gaps of 1e3).

Layout (:class:`Layout`, built once per fit): position k holds row perm[k]; query q owns positions
offsets[q]:offsets[q+1], labels decreasing; gstart[k] / gend[k] the first / one-past-last position of k's tie
group; coef[k] = c (ListNet: w_i p_i; ListMLE: w_i) of the row at k. The per-query kernels work on arrays indexed
by position.

The solver's passes (:func:`evaluate_x`, :func:`hess_vec_x`) read X (dense C-ordered or CSR, float32 or float64,
never copied; cyrank/_rows.pxd, sums in float64) query by query, rows perm[k]: the query's scores X w, its loss and
gradient (or H t), then X' of that gradient while the rows are in cache, so an evaluation or a Hessian product is
one pass over X. Queries run in parallel (OpenMP) in a fixed partition of contiguous chunks with one accumulator
of X' g each, summed in chunk order (cyrank/_parallel.pxd); each query's loss goes to qloss[q], summed in query
order: the same bits for any thread count. :func:`evaluate`, :func:`hess_vec` and :func:`hess_diag` are the same
kernels on scores in the input row order, without X (the tree learners' gradients, the tests).
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, exp, log

from cyrank._parallel cimport (MAX_CHUNKS, Interrupt, balanced_chunks, check_interrupt, chunk_accumulators,
                              chunk_count, interrupt_init, keep_going, product_threads, sum_chunks, sum_ordered,
                              zero_row)
from cyrank._rows cimport prefetch_row, row_axpy, row_dot
from cyrank._typedefs cimport floating, index_t, intp_t

cdef enum:
    AHEAD = 2     # rows prefetched ahead of the one being read

cdef enum:
    KIND_LISTNET = 0
    KIND_LISTMLE = 1

LISTNET = KIND_LISTNET
LISTMLE = KIND_LISTMLE


cdef class Layout:
    """Positions of the rows (module docstring): ``perm``, ``offsets``, ``gstart``, ``gend``, ``coef``, the loss
    (``kind``: LISTNET or LISTMLE), ``efron`` (ListMLE's tie rule), ``top_k`` (0: every position) and the
    thread count of the passes (one below ``parallel_min_rows`` rows; < 0: the shared default)."""
    cdef public object perm, offsets, gstart, gend, coef, acc
    cdef public intp_t n, n_queries, top_k, n_threads
    cdef public int kind
    cdef public bint efron

    def __init__(self, perm, offsets, gstart, gend, coef, int kind, bint efron=True, intp_t top_k=0,
                 intp_t parallel_min_rows=-1):
        self.perm = np.ascontiguousarray(perm, dtype=np.int64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.gstart = np.ascontiguousarray(gstart, dtype=np.int64)
        self.gend = np.ascontiguousarray(gend, dtype=np.int64)
        self.coef = np.ascontiguousarray(coef, dtype=np.float64)
        self.n = self.perm.shape[0]
        self.n_queries = self.offsets.shape[0] - 1
        n = self.n
        if (self.n_queries < 0 or self.offsets[0] != 0 or self.offsets[self.n_queries] != n
                or np.any(np.diff(self.offsets) < 0) or self.gstart.shape[0] != n or self.gend.shape[0] != n
                or self.coef.shape[0] != n or kind not in (LISTNET, LISTMLE) or top_k < 0
                or (n and (self.perm.min() < 0 or self.perm.max() >= n
                           or np.any(self.gstart > np.arange(n)) or np.any(self.gend <= np.arange(n))))):
            raise ValueError("listwise Layout: inconsistent arrays")
        self.kind, self.efron, self.top_k = kind, efron, top_k
        self.acc = None  # the chunk accumulators of the passes over X (cyrank/_parallel.pxd), reused
        self.n_threads = product_threads(n, self.n_queries, parallel_min_rows)


cdef class State:
    """What a Hessian product needs at a point: per position ex (e^{f - M} of its group), and at each group's
    first position gm (M_G), gb (B~_G) and gs (S~_G); ListNet uses the query's first position (M, 0, Z). f: the
    scores at the positions (written by :func:`evaluate_x`)."""
    cdef public object f, ex, gm, gb, gs

    def __init__(self, intp_t n):
        self.f, self.ex, self.gm, self.gb, self.gs = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)


# ------------------------------------------------------------------------------------------------ ListNet
cdef double _listnet_eval(intp_t a, intp_t b, const double* coef, const double* f, double* g, double* ex,
                          double* gm, double* gs) noexcept nogil:
    cdef intp_t k
    cdef double M = -INFINITY, Z = 0.0, C = 0.0, lin = 0.0, inv
    for k in range(a, b):
        C += coef[k]
        M = f[k] if f[k] > M else M
    if C == 0.0:  # no target: the query contributes nothing
        for k in range(a, b):
            g[k] = 0.0
            ex[k] = 0.0
        gm[a] = M
        gs[a] = 1.0
        return 0.0
    for k in range(a, b):
        ex[k] = exp(f[k] - M)
        Z += ex[k]
        lin += coef[k] * (M - f[k])
    gm[a] = M
    gs[a] = Z
    inv = C / Z
    for k in range(a, b):
        g[k] = inv * ex[k] - coef[k]
    return lin + C * log(Z)


cdef void _listnet_hess(intp_t a, intp_t b, const double* coef, const double* ex, const double* gs,
                        const double* u, double* out, bint diag) noexcept nogil:
    cdef intp_t k
    cdef double C = 0.0, su = 0.0, Z = gs[a], s
    for k in range(a, b):
        C += coef[k]
        if not diag:
            su += ex[k] * u[k]
    su /= Z
    for k in range(a, b):
        s = ex[k] / Z
        if diag:
            out[k] = C * s * (1.0 - s)
        else:
            out[k] = C * s * (u[k] - su)


cdef void _listnet_series(intp_t a, intp_t b, const double* ex, const double* gs, const double* g, double* out,
                          double* work, intp_t terms) noexcept nogil:
    """out = sum_{t < terms} (O D^-1)^t g over one ListNet query (module docstring, "Newton series"), from the
    state of :func:`_listnet_eval`: s_k = ex_k / Z, Z = gs[a]. Only the first row at the maximum (ex = 1, "top")
    can have s > 1/2, so only its 1 / (1 - s) is large: its 1 - s is taken from the other rows' sum of ex, and the
    sums over j != k are formed without it (the others' sum, plus its u for k != top), so that nothing cancels
    when the query's mass sits on one row. A row with 1 - s_k = 0 (every other row's exponential underflows) has
    no Newton term: its u_k is 0."""
    cdef intp_t k, t, top = -1
    cdef double Z = gs[a], inv = 1.0 / gs[a], rest = 0.0, others, zo, u_top
    for k in range(a, b):
        out[k] = g[k]
        if top < 0 and ex[k] == 1.0:
            top = k
        else:
            rest += ex[k]
    for t in range(1, terms):  # work: the previous term, then u_k = term_k / (1 - s_k), then the next term
        others = 0.0
        u_top = 0.0
        for k in range(a, b):
            zo = rest if k == top else Z - ex[k]  # Z (1 - s_k)
            work[k] = ((g[k] if t == 1 else work[k]) * Z / zo) if zo > 0.0 else 0.0
            if k == top:
                u_top = work[k]
            else:
                others += work[k]
        for k in range(a, b):  # next term_k = s_k sum_{j != k} u_j
            work[k] = ex[k] * inv * (others if k == top else u_top + (others - work[k]))
            out[k] += work[k]


# ------------------------------------------------------------------------------------------------ ListMLE
cdef inline intp_t _kept(intp_t top_k, intp_t offset, intp_t m) noexcept nogil:
    """Positions of a group of m rows starting ``offset`` positions into its query that lie within top_k."""
    if top_k == 0:
        return m
    if offset >= top_k:
        return 0
    return top_k - offset if top_k - offset < m else m


cdef inline double _a(bint efron, intp_t r, intp_t m) noexcept nogil:
    return 1.0 - (<double> r) / m if efron else 1.0


cdef void _mle_backward(intp_t a, intp_t b, const intp_t* gstart, const double* f,
                        double* ex, double* gm, double* gb, double* gs) noexcept nogil:
    """Bottom-up over the groups: M_G, ex, B~_G, S~_G (module docstring)."""
    cdef intp_t e = b, s, k
    cdef double Mnext = -INFINITY, R = 0.0, mg, below, S
    while e > a:
        s = gstart[e - 1]
        mg = Mnext
        for k in range(s, e):
            mg = f[k] if f[k] > mg else mg
        below = R * exp(Mnext - mg) if R > 0.0 else 0.0
        S = 0.0
        for k in range(s, e):
            ex[k] = exp(f[k] - mg)
            S += ex[k]
        gm[s] = mg
        gb[s] = below
        gs[s] = S
        R = below + S
        Mnext = mg
        e = s


cdef double _mle_eval(intp_t a, intp_t b, const intp_t* gend, const double* coef,
                      const double* f, bint efron, intp_t top_k, double* g, double* ex, const double* gm,
                      const double* gb, const double* gs) noexcept nogil:
    """Top-down: the loss and the gradient (written at the rows) from the backward pass's state."""
    cdef intp_t s = a, e, k, r, m, R
    cdef double A = 0.0, Mprev = gm[a], mg, W, c, own, below, logs, lin, D, ar, frac, loss = 0.0
    while s < b:
        e = gend[s]
        m = e - s
        mg = gm[s]
        A *= exp(mg - Mprev)
        R = _kept(top_k, s - a, m)
        W = 0.0
        lin = 0.0
        for k in range(s, e):
            W += coef[k]
            lin += coef[k] * (mg - f[k])
        c = W / m
        own = 0.0
        below = 0.0
        logs = 0.0
        for r in range(R):
            ar = _a(efron, r, m)
            D = gb[s] + ar * gs[s]
            own += c * ar / D
            below += c / D
            logs += log(D)
        frac = (<double> R) / m
        loss += frac * lin + c * logs
        for k in range(s, e):
            g[k] = ex[k] * (A + own) - frac * coef[k]
        A += below
        Mprev = mg
        s = e
    return loss


cdef void _mle_hess(intp_t a, intp_t b, const intp_t* gstart, const intp_t* gend,
                    const double* coef, bint efron, intp_t top_k, const double* ex, const double* gm,
                    const double* gb, const double* gs, const double* u, double* out, double* work,
                    bint diag) noexcept nogil:
    """out = H u (or diag(H) with ``diag``) at the rows; work: per position, B~u of the group (at its start)."""
    cdef intp_t s, e, k, r, m, R
    cdef double Mnext = -INFINITY, U = 0.0, mg, Ub, SU, W, c, D, ar, qu, scale
    cdef double Bsum = 0.0, Gsum = 0.0, ownB, ownG, belowB, belowG, Mprev
    if not diag:  # bottom-up: sum_{j below G} e^{f_j - M_G} u_j
        e = b
        while e > a:
            s = gstart[e - 1]
            mg = gm[s]
            Ub = U * exp(Mnext - mg) if U != 0.0 else 0.0
            SU = 0.0
            for k in range(s, e):
                SU += ex[k] * u[k]
            work[s] = Ub
            U = Ub + SU
            Mnext = mg
            e = s
    s = a
    Mprev = gm[a]
    while s < b:
        e = gend[s]
        m = e - s
        mg = gm[s]
        scale = exp(mg - Mprev)
        Bsum *= scale
        Gsum *= (scale * scale) if diag else scale
        R = _kept(top_k, s - a, m)
        W = 0.0
        SU = 0.0
        for k in range(s, e):
            W += coef[k]
            if not diag:
                SU += ex[k] * u[k]
        c = W / m
        ownB = ownG = belowB = belowG = 0.0
        for r in range(R):
            ar = _a(efron, r, m)
            D = gb[s] + ar * gs[s]
            ownB += c * ar / D
            belowB += c / D
            if diag:  # sum_t c_t a^2 / D_t^2
                ownG += c * ar * ar / (D * D)
                belowG += c / (D * D)
            else:
                qu = (work[s] + ar * SU) / D
                ownG += c * ar * qu / D
                belowG += c * qu / D
        for k in range(s, e):
            if diag:
                out[k] = max(ex[k] * (Bsum + ownB) - ex[k] * ex[k] * (Gsum + ownG), 0.0)
            else:
                out[k] = ex[k] * (u[k] * (Bsum + ownB) - (Gsum + ownG))
        Bsum += belowB
        Gsum += belowG
        Mprev = mg
        s = e


# ------------------------------------------------------------------------------------------------ the passes
cdef inline double _query(int kind, bint efron, intp_t top_k, intp_t a, intp_t b, const intp_t* gstart,
                          const intp_t* gend, const double* coef, const double* f, double* g, double* ex, double* gm,
                          double* gb, double* gs) noexcept nogil:
    """One query's loss at the position scores f; g = dL/df at the positions; the state (ex, gm, gb, gs)."""
    if a == b:
        return 0.0
    if kind == KIND_LISTNET:
        return _listnet_eval(a, b, coef, f, g, ex, gm, gs)
    _mle_backward(a, b, gstart, f, ex, gm, gb, gs)
    return _mle_eval(a, b, gend, coef, f, efron, top_k, g, ex, gm, gb, gs)


cdef inline void _query_hess(int kind, bint efron, intp_t top_k, intp_t a, intp_t b, const intp_t* gstart,
                             const intp_t* gend, const double* coef, const double* ex, const double* gm,
                             const double* gb, const double* gs, const double* u, double* out, double* work,
                             bint diag) noexcept nogil:
    if a == b:
        return
    if kind == KIND_LISTNET:
        _listnet_hess(a, b, coef, ex, gs, u, out, diag)
    else:
        _mle_hess(a, b, gstart, gend, coef, efron, top_k, ex, gm, gb, gs, u, out, work, diag)


def _positions(Layout lay, int mode, State st, const double[::1] x, double[::1] y, double[::1] work,
               double[::1] qloss, intp_t terms=1):
    """Every query on position arrays, no X: mode 0 the loss (f = x, g = y; returns the sum), 1 y = H x, 2
    y = diag(H), 3 y = the Newton series of the gradient x to ``terms`` terms (ListNet)."""
    cdef intp_t n = lay.n, nq = lay.n_queries, nt = lay.n_threads, q
    cdef const intp_t[::1] offsets = lay.offsets, gstart = lay.gstart, gend = lay.gend
    cdef const double[::1] coef = lay.coef
    cdef double[::1] ex = st.ex, gm = st.gm, gb = st.gb, gs = st.gs
    cdef int kind = lay.kind
    cdef bint efron = lay.efron
    cdef intp_t top_k = lay.top_k
    cdef double total = 0.0
    if x.shape[0] != n or y.shape[0] != n or work.shape[0] != n or ex.shape[0] != n or qloss.shape[0] != nq:
        raise ValueError("listwise kernel: wrong array sizes")
    if n == 0:
        return 0.0
    with nogil:
        for q in prange(nq, schedule="dynamic", chunksize=16, num_threads=nt):
            if mode == 0:
                qloss[q] = _query(kind, efron, top_k, offsets[q], offsets[q + 1], &gstart[0], &gend[0], &coef[0],
                                  &x[0], &y[0], &ex[0], &gm[0], &gb[0], &gs[0])
            elif mode == 3:
                _listnet_series(offsets[q], offsets[q + 1], &ex[0], &gs[0], &x[0], &y[0], &work[0], terms)
            else:
                _query_hess(kind, efron, top_k, offsets[q], offsets[q + 1], &gstart[0], &gend[0], &coef[0], &ex[0],
                            &gm[0], &gb[0], &gs[0], &x[0], &y[0], &work[0], mode == 2)
        if mode == 0:
            total = sum_ordered(&qloss[0], nq)
    return total


def evaluate(Layout lay, const double[::1] f, double[::1] g, State st, double[::1] qloss):
    """The loss sum_q L_q at the scores f (input row order); g = dL/df (input row order), the state of
    :func:`hess_vec` in ``st``, each query's loss in qloss (n_queries). Queries in parallel; the sum in order."""
    perm = lay.perm
    fp = np.take(f, perm)
    gp = np.empty(lay.n)
    total = _positions(lay, 0, st, fp, gp, gp, qloss)
    g_arr = np.asarray(g)
    g_arr[perm] = gp
    return total


def hess_vec(Layout lay, State st, const double[::1] u, double[::1] out, double[::1] work):
    """out = H u (input row order) at the state of the last :func:`evaluate` into ``st``; work: n doubles."""
    perm = lay.perm
    up = np.take(u, perm)
    op = np.empty(lay.n)
    _positions(lay, 1, st, up, op, work, np.empty(lay.n_queries))
    np.asarray(out)[perm] = op


def hess_diag(Layout lay, State st, double[::1] out):
    """out = diag(H) (input row order) at the state of the last :func:`evaluate` into ``st``."""
    op = np.empty(lay.n)
    _positions(lay, 2, st, op, op, op, np.empty(lay.n_queries))
    np.asarray(out)[lay.perm] = op


def newton_series(Layout lay, State st, double[::1] g, intp_t terms):
    """g <- sum_{t < terms} (O D^-1)^t g in place (input row order; module docstring, "Newton series"), g the
    ListNet gradient of the last :func:`evaluate` into ``st``; terms=1 leaves g as it is."""
    if lay.kind != LISTNET:
        raise ValueError("the Newton series of the gradient is defined for ListNet (softmax cross-entropy) only")
    if terms < 1:
        raise ValueError(f"terms must be >= 1, got {terms}")
    if g.shape[0] != lay.n:
        raise ValueError("listwise kernel: wrong array sizes")
    if terms == 1 or lay.n == 0:
        return
    perm = lay.perm
    gp = np.take(np.asarray(g), perm)
    op = np.empty(lay.n)
    _positions(lay, 3, st, gp, op, np.empty(lay.n), np.empty(lay.n_queries), terms)
    np.asarray(g)[perm] = op


# ------------------------------------------------------------------------------------------------ fused with X
def _pass(int mode, const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
          intp_t d, intp_t rw, Layout lay, const double[::1] x, State st, double[::1] t, double[::1] u,
          double[::1] work, double[::1] qloss, double[::1] out):
    """One pass over X query by query, each query's rows read once while in cache: t = X x at its positions, then
    (mode 0) the loss and u = dL/df, or (mode 1) u = H t, then out += X' u, one accumulator per chunk of queries
    (a partition fixed by X's shape, summed in chunk order: cyrank/_parallel.pxd)."""
    cdef intp_t n = lay.n, nq = lay.n_queries, nt = lay.n_threads, q, k, a, b, c, n_ch, tid
    cdef const intp_t[::1] perm = lay.perm, offsets = lay.offsets, gstart = lay.gstart, gend = lay.gend
    cdef const double[::1] coef = lay.coef
    cdef double[::1] ex = st.ex, gm = st.gm, gb = st.gb, gs = st.gs
    cdef int kind = lay.kind
    cdef bint efron = lay.efron
    cdef intp_t top_k = lay.top_k
    cdef intp_t bounds[MAX_CHUNKS + 1]
    cdef double[:, ::1] acc
    cdef Interrupt intr
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind_p = &indices[0]
    cdef const index_t* ptr_p = &indptr[0]
    cdef double total = 0.0
    if (x.shape[0] != d or out.shape[0] != d or t.shape[0] != n or u.shape[0] != n or work.shape[0] != n
            or ex.shape[0] != n or qloss.shape[0] != nq):
        raise ValueError("listwise pass: wrong array sizes")
    if n == 0:
        out[:] = 0.0
        return 0.0
    n_ch = chunk_count(nq, d, n * rw, nt)
    balanced_chunks(&offsets[0], nq, n_ch, bounds)
    acc = chunk_accumulators(lay, n_ch, d)
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for c in prange(n_ch, schedule="dynamic", chunksize=1):
            zero_row(&acc[c, 0], acc.shape[1])
            for q in range(bounds[c], bounds[c + 1]):
                a = offsets[q]
                b = offsets[q + 1]
                if not keep_going(&intr, tid, (b - a) * rw):
                    break
                for k in range(a, b):
                    if k + AHEAD < n:
                        prefetch_row(X, ind_p, ptr_p, dense, d, perm[k + AHEAD])
                    t[k] = row_dot(X, ind_p, ptr_p, dense, d, perm[k], &x[0])
                if mode == 0:
                    qloss[q] = _query(kind, efron, top_k, a, b, &gstart[0], &gend[0], &coef[0], &t[0], &u[0],
                                      &ex[0], &gm[0], &gb[0], &gs[0])
                else:
                    _query_hess(kind, efron, top_k, a, b, &gstart[0], &gend[0], &coef[0], &ex[0], &gm[0], &gb[0],
                                &gs[0], &t[0], &u[0], &work[0], False)
                for k in range(a, b):
                    if u[k] != 0.0:
                        row_axpy(X, ind_p, ptr_p, dense, d, perm[k], u[k], &acc[c, 0])
    check_interrupt(&intr)
    sum_chunks(acc, out)
    if mode == 0:
        total = sum_ordered(&qloss[0], nq)
    return total


def evaluate_x(parts, Layout lay, const double[::1] w, State st, double[::1] g, double[::1] qloss,
               double[::1] grad):
    """L(w) = sum_q L_q(X w); grad = X' dL/df; st.f = X w and g = dL/df at the positions (the state of
    :func:`hess_vec_x`). ``parts``: cyrank._linear.product_parts(X)."""
    data, indices, indptr, dense, n_rows, d = parts
    rw = d if dense else max(1, (int(indptr[n_rows]) - int(indptr[0])) // max(n_rows, 1))
    return _pass(0, data, indices, indptr, dense, d, rw, lay, w, st, st.f, g, g, qloss, grad)


def hess_vec_x(parts, Layout lay, const double[::1] v, State st, double[::1] t, double[::1] u, double[::1] work,
               double[::1] out):
    """out = X' H X v at the state of the last :func:`evaluate_x` into ``st``; t, u, work: n doubles."""
    data, indices, indptr, dense, n_rows, d = parts
    rw = d if dense else max(1, (int(indptr[n_rows]) - int(indptr[0])) // max(n_rows, 1))
    _pass(1, data, indices, indptr, dense, d, rw, lay, v, st, t, u, work, np.empty(lay.n_queries), out)
