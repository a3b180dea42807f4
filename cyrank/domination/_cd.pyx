"""Coordinate-descent kernel for the domination loss (Stevens, "Efficient Coordinate Descent for Ranking with Domination Loss", MEng thesis, MIT 2010, sections 2-7).

Layout. Rows are sorted by (query, label). The label levels of a query are its layers G_0 < G_1 < ...
(section 3); the rows of one layer of one query are contiguous. With margins m_j = w.x_j - o_j (section 4)
the loss is

    L(w) = sum_q sum_{k >= 1} sum_{i in G_k} log(Z_k + e^{m_i}) - m_i,    Z_k = sum_{j in G_0..G_{k-1}} e^{m_j}.

Sample weights (the term of dominating row i counts w_i times; 1 unweighted, kept in the row's state) enter A_k
and the row's own term only: with A_k = sum_{i in G_k} w_i / (Z_k + e_i), the derivative below is
c_j = e_j S_k - w_j Z_k / (Z_k + e_j), the power sums are Q_p = sum_i w_i v_i^p, and the curvature bounds beta_r
sum over dominating rows with their weights (hessian_bounds).

Auxiliaries, kept per query q with a shift c_q ~ max_j m_j so that no exponential overflows (section 6;
a query whose margins span more than SAFE_SPAN = 500 would underflow them, so it keeps instead the derivatives
c_j below computed in the log domain, recomputed in O(rows) whenever a step touches it: wide_query):

    e_j = exp(m_j - c_q)                     per row
    E_k = sum_{j in G_k} e_j                  per layer; Z_k = E_0 + ... + E_{k-1}
    A_k = sum_{i in G_k} 1 / (Z_k + e_i)      (k >= 1; the only sum over a whole layer)
    S_k = A_{k+1} + A_{k+2} + ...

With them the derivative of L in the margin of row j of layer k is c_j = e_j S_k - Z_k / (Z_k + e_j), and
g_r = sum_j x_jr c_j runs over the stored entries of column r only. This is the thesis's
sum_k sum_{i in G_k} (mu_{k,r} - Z_k x_ir) / (Z_k + e^{m_i}) (Alg. 4) regrouped by row, so mu_{k,r} is never
stored. After w_r += delta each touched query updates E (Alg. 6), recomputes Z and A for the layers above
the lowest touched one and updates A of that layer in O(1) per entry: an update costs the column's
non-zeros plus the dominating rows of the queries it touches, never O(n d). Every sweep ends with an exact
recomputation of margins and auxiliaries, so incremental drift never accumulates.

Each coordinate step minimises the quadratic upper bound L(w) + g delta + beta_r / 2 delta^2 plus the exact
penalty lam1 |w_r + delta| + lam2 (w_r + delta)^2 (section 5): w_r <- soft(beta_r w_r - g, lam1) / (beta_r + 2 lam2).
beta_r bounds the curvature of L along e_r at every w, so the objective never increases.

Large layers (sparse X): when a column touches a few rows of a large query, recomputing A_k row by row
would cost the whole layer. Such a layer keeps instead, around a centre Z0 and with v_i = s / (Z0 + e_i)
(s = min_i (Z0 + e_i), so v_i <= 1 when centred), the power sums Q_p = sum_i v_i^p, p = 1..8, updated in O(8)
per changed row; then A(Z) = (1 / s) sum_p (-(Z - Z0) / s)^(p - 1) Q_p, truncated while
|Z - Z0| / s * max_i v_i <= 0.01 (relative error <= 1e-16), recomputed and re-centred beyond. Columns holding
at least 1/8 of the rows sum the layers they touch row by row instead (cheaper for them).

Sweeps are cyclic. Every 6 sweeps the Anderson extrapolation of the last 6 iterates is tried (as in skglm)
and kept only if it lowers the objective.

Ctrl-C: the column loops (sweeps, gradients, margin recomputation) charge their entries to a signal check
(cyrank/_parallel.pxd, about every 50 ms); once a handler raises, every loop returns at once and the entry
point propagates the exception (KeyboardInterrupt) with w left at the last step taken.

State is stored as arrays of small structs (Row, Layer, Query) so that one random access brings in all
the state of a row or of a layer: on sparse data the kernel is bound by cache misses.
"""
from libc.math cimport exp, log, log1p, fabs, INFINITY
from libc.stdint cimport uintptr_t
from libc.stdlib cimport qsort

from cyrank._typedefs cimport floating, index_t, intp_t
from cyrank._math cimport soft_threshold, fmax2, fmin2, sigmoid
from cyrank._parallel cimport Interrupt, check_interrupt, interrupt_init, interrupted

import numpy as np

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define CYRANK_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define CYRANK_PREFETCH(p) ((void)0)
    #endif
    """
    void prefetch "CYRANK_PREFETCH"(const void* p) noexcept nogil

# Entries ahead of the current one whose row state is prefetched (sparse columns hit random rows; dense
# columns read the rows in order, which the hardware prefetches by itself).
cdef intp_t PREFETCH_AHEAD = 8

# Rescale a query once a margin exceeds its shift by this much (e_j <= e^30: sums stay far from overflow).
cdef double RESCALE_AT = 30.0
# A query whose margins span more than this (natural-log units) keeps its derivatives in the log domain
# (wide_query); the others keep every e_j in [e^-SAFE_SPAN, e^RESCALE_AT], so no denominator nears DENOM_MIN.
cdef double SAFE_SPAN = 500.0
# A denominator Z_k + e_i below this means the margins inside one query span more than ~640: reported as
# an error rather than computed wrongly.
cdef double DENOM_MIN = 1e-280
cdef double TINY = 1e-300
# Power sums of large layers: A(Z) is evaluated from up to N_POWERS moments while the relative move of Z stays
# below POWER_RADIUS (truncation error <= POWER_RADIUS^N_POWERS = 1e-16 relative); beyond it, the layer is
# recomputed and re-centred.
cdef enum:
    N_POWERS = 8
    POWER_BLOCK = N_POWERS + 4   # Z0, scale, vmax, 1 / scale, Q_1..Q_8 (add_powers and powers_A spell out 8)
cdef double POWER_RADIUS = 0.01
# ... used only for columns holding fewer than this share of the rows.
cdef double DIRECT_SHARE = 0.125
# Feature induction solves each round's active set to this fraction of the round's starting violation.
cdef double INNER_TOL_RATIO = 0.3

cdef enum:
    BOUND_POPOVICIU = 0
    BOUND_MAX_SQ = 1

HESSIAN_POPOVICIU = BOUND_POPOVICIU
HESSIAN_MAX_SQ = BOUND_MAX_SQ

UNDERFLOW_MESSAGE = (
    "domination loss: the margins inside one query span more than ~640 (natural-log units), beyond the "
    "range of coordinate descent's per-query shifted exponentials; use solver='prox_newton' (any penalty) or "
    "solver='newton' / 'lbfgs' (l2), which work in the log domain and have no such limit, or rescale the "
    "features or offsets, or increase alpha"
)


cdef struct Row:          # 32 bytes
    double m              # margin w.x - o
    double e              # exp(m - shift of its query)
    intp_t layer
    double wt             # sample weight of the row's loss term (1 unweighted)


cdef struct Layer:
    double E
    double Z
    double A
    double S
    intp_t start          # its rows: start:stop
    intp_t stop
    intp_t query
    intp_t bottom         # 1 for the lowest layer of its query (dominates nothing)
    intp_t powers         # offset of its power-sum block in Work.P, or -1 (A summed row by row)


cdef struct Query:
    double shift
    intp_t first          # its layers: first:last
    intp_t last
    intp_t wide           # 1: margins span more than SAFE_SPAN, derivatives kept in the log domain (wide_query)


cdef struct Work:
    Row* rows
    Layer* layers
    Query* queries
    double* P             # power-sum blocks of the large layers
    intp_t n
    intp_t n_queries
    const double* offset
    double* w
    const double* beta
    double lam1
    double lam2
    int underflow
    Interrupt intr        # signal check of the column loops (intr.raised: stop, the exception is set)


cdef inline bint stopped(const Work* s) noexcept nogil:
    """Underflow or a signal handler raised: every loop returns at once."""
    return s.underflow != 0 or s.intr.raised != 0


# ---------------------------------------------------------------------------------------------------------
# Auxiliaries
# ---------------------------------------------------------------------------------------------------------

cdef inline void suffix_sums(Work* s, const Query* Q) noexcept nogil:
    """S_k = A_{k+1} + ... for the layers of one query."""
    cdef intp_t k = Q.last - 1
    s.layers[k].S = 0.0
    while k > Q.first:
        s.layers[k - 1].S = s.layers[k].S + s.layers[k].A
        k -= 1


cdef inline double layer_A(Work* s, const Layer* L, double z) noexcept nogil:
    """A_k = sum_{i in layer} w_i / (z + e_i)."""
    cdef intp_t i
    cdef double d, a = 0.0, dmin = INFINITY
    for i in range(L.start, L.stop):
        d = z + s.rows[i].e
        dmin = fmin2(dmin, d)
        a += s.rows[i].wt / d
    if dmin < DENOM_MIN:
        s.underflow = 1
    return a


cdef inline void add_powers(double* Q, double v, double sign) noexcept nogil:
    """Q[p - 1] += sign * v^p for p = 1..8, the powers formed in three dependent multiplications (sign: +- the
    row's weight)."""
    cdef double v2 = v * v, v3, v4
    v3 = v2 * v
    v4 = v2 * v2
    Q[0] += sign * v
    Q[1] += sign * v2
    Q[2] += sign * v3
    Q[3] += sign * v4
    Q[4] += sign * (v4 * v)
    Q[5] += sign * (v4 * v2)
    Q[6] += sign * (v4 * v3)
    Q[7] += sign * (v4 * v4)


cdef void recenter(Work* s, Layer* L) noexcept nogil:
    """Weighted power sums of a large layer around Z0 = its current Z; sets A."""
    cdef double* B = s.P + L.powers
    cdef double* Q = B + 4
    cdef double z0 = L.Z, scale = INFINITY
    cdef intp_t i, p
    for i in range(L.start, L.stop):
        scale = fmin2(scale, z0 + s.rows[i].e)
    if scale < DENOM_MIN:
        s.underflow = 1
    B[0] = z0
    B[1] = scale
    B[2] = 1.0
    B[3] = 1.0 / scale
    for p in range(N_POWERS):
        Q[p] = 0.0
    for i in range(L.start, L.stop):
        add_powers(Q, scale / (z0 + s.rows[i].e), s.rows[i].wt)
    L.A = Q[0] * B[3]


cdef inline void powers_A(Work* s, Layer* L) noexcept nogil:
    """A(Z) = (1 / s) sum_p x^(p-1) Q_p, x = (Z0 - Z) / s, or re-centred if Z moved too far.

    The series is cut where the rest is below 1e-16 relative (t = |x| max v: 2 terms for t <= 1e-8, 4 for
    t <= 1e-4, all 8 up to POWER_RADIUS) and evaluated by Estrin's scheme (short dependency chains).
    """
    cdef double* B = s.P + L.powers
    cdef const double* Q = B + 4
    cdef double x = (B[0] - L.Z) * B[3], t = fabs(x) * B[2], x2, acc
    if B[2] == INFINITY or t > POWER_RADIUS:
        recenter(s, L)
        return
    if t <= 1e-8:
        acc = Q[0] + x * Q[1]
    else:
        x2 = x * x
        acc = (Q[0] + x * Q[1]) + x2 * (Q[2] + x * Q[3])
        if t > 1e-4:
            acc += (x2 * x2) * ((Q[4] + x * Q[5]) + x2 * (Q[6] + x * Q[7]))
    L.A = acc * B[3]


cdef inline void powers_update(Work* s, Layer* L, double e_old, double e_new, double wt) noexcept nogil:
    """Q_p += wt (v_new^p - v_old^p) for one row (weight wt) of a large layer whose e changed."""
    cdef double* B = s.P + L.powers
    cdef double v_new
    if B[2] == INFINITY:  # already due for re-centring
        return
    v_new = B[1] / (B[0] + e_new)
    if v_new > 2.0 or B[0] + e_new < DENOM_MIN:  # outside the range the sums were built for
        B[2] = INFINITY
        return
    B[2] = fmax2(B[2], v_new)
    add_powers(B + 4, v_new, wt)
    add_powers(B + 4, B[1] / (B[0] + e_old), -wt)


cdef inline double logaddexp(double a, double b) noexcept nogil:
    """log(exp(a) + exp(b)) without overflow (a or b may be -inf)."""
    if a < b:
        a, b = b, a
    if b == -INFINITY:
        return a
    return a + log1p(exp(b - a))


cdef void wide_query(Work* s, intp_t q) noexcept nogil:
    """Derivatives of the loss in the margins of query q computed in the log domain, for any span (as
    _smooth.pyx: LZ_k = log sum_{j below k} e^{m_j}, s_i = sigmoid(LZ_k - m_i), E_j = e^{m_j - LZ_{l+1}} <= 1,
    T_l = A'_{l+1} + e^{LZ_{l+1} - LZ_{l+2}} T_{l+1} with A'_k = sum_{i in k} w_i s_i; c_j = E_j T_l - w_j s_j). c_j is
    stored in rows[j].e and every layer gets S = 1, Z = 0, so that coord_grad's e_j S_k - Z_k / (Z_k + e_j) reads
    c_j. Layer fields E and A hold LZ_k and A'_k meanwhile; power sums are marked stale."""
    cdef Query* Q = &s.queries[q]
    cdef Layer* L
    cdef intp_t k, i
    cdef double lz = -INFINITY, a, T = 0.0, E
    for k in range(Q.first, Q.last):
        L = &s.layers[k]
        L.E = lz
        for i in range(L.start, L.stop):
            lz = logaddexp(lz, s.rows[i].m)
    for k in range(Q.first, Q.last):
        L = &s.layers[k]
        a = 0.0
        if not L.bottom:
            for i in range(L.start, L.stop):
                a += s.rows[i].wt * sigmoid(L.E - s.rows[i].m)
        L.A = a
    for k in range(Q.last - 1, Q.first - 1, -1):
        L = &s.layers[k]
        if k < Q.last - 1:
            T = s.layers[k + 1].A + (exp(s.layers[k + 1].E - s.layers[k + 2].E) * T if k + 2 < Q.last else 0.0)
        for i in range(L.start, L.stop):
            E = exp(s.rows[i].m - s.layers[k + 1].E) if k < Q.last - 1 else 0.0
            s.rows[i].e = E * T - (0.0 if L.bottom else s.rows[i].wt * sigmoid(L.E - s.rows[i].m))
    for k in range(Q.first, Q.last):
        L = &s.layers[k]
        L.S = 1.0
        L.Z = 0.0
        if L.powers >= 0:
            s.P[L.powers + 2] = INFINITY


cdef void recompute_query(Work* s, intp_t q) noexcept nogil:
    """Exact shift, e, E, Z, A, S of query q from its margins (log-domain derivatives when they span more than
    SAFE_SPAN: wide_query)."""
    cdef Query* Q = &s.queries[q]
    cdef Layer* L
    cdef intp_t k, i
    cdef double c = -INFINITY, lo = INFINITY, z = 0.0, esum, ei
    for i in range(s.layers[Q.first].start, s.layers[Q.last - 1].stop):
        c = fmax2(c, s.rows[i].m)
        lo = fmin2(lo, s.rows[i].m)
    Q.shift = c
    Q.wide = c - lo > SAFE_SPAN
    if Q.wide:
        # charged to the signal check (about 8 transcendental functions per row): a sweep over wide queries
        # recomputes them at every step that touches them
        interrupted(&s.intr, 8 * (s.layers[Q.last - 1].stop - s.layers[Q.first].start))
        wide_query(s, q)
        return
    for k in range(Q.first, Q.last):
        L = &s.layers[k]
        esum = 0.0
        for i in range(L.start, L.stop):
            ei = exp(s.rows[i].m - c)
            s.rows[i].e = ei
            esum += ei
        L.Z = z
        L.E = esum
        if L.bottom:
            L.A = 0.0
        elif L.powers >= 0:
            recenter(s, L)
        else:
            L.A = layer_A(s, L, z)
        z += esum
    suffix_sums(s, Q)


cdef inline void finish_query(Work* s, intp_t q, intp_t kmin, bint rescale, bint direct) noexcept nogil:
    """Refresh query q after rows of its layers >= kmin changed (E already updated; A of layer kmin too,
    unless its power sums are in use). direct: the update summed every layer row by row."""
    cdef Query* Q = &s.queries[q]
    cdef Layer* L
    cdef intp_t k
    if rescale:
        recompute_query(s, q)
        return
    for k in range(kmin, Q.last):
        L = &s.layers[k]
        if k > kmin:
            L.Z = s.layers[k - 1].Z + s.layers[k - 1].E
        if L.bottom:
            continue
        if L.powers >= 0 and not direct:
            powers_A(s, L)
        elif k > kmin:
            L.A = layer_A(s, L, L.Z)
            if L.powers >= 0:
                s.P[L.powers + 2] = INFINITY  # its power sums are stale: re-centre when next used
    suffix_sums(s, Q)


cdef void recompute_margins(Work* s, const floating* data, const index_t* indices, const index_t* indptr,
                            bint dense, intp_t d) noexcept nogil:
    """m = X w - o, accumulated column by column in float64."""
    cdef intp_t i, r, p, start, nnz
    cdef double wr
    cdef const index_t* idx
    for i in range(s.n):
        s.rows[i].m = -s.offset[i]
    for r in range(d):
        wr = s.w[r]
        if wr == 0.0:
            continue
        start = indptr[r]
        nnz = indptr[r + 1] - start
        if interrupted(&s.intr, nnz + 1):
            return
        idx = indices if dense else indices + start
        for p in range(nnz):
            s.rows[idx[p]].m += wr * data[start + p]


cdef void recompute_all(Work* s, const floating* data, const index_t* indices, const index_t* indptr,
                        bint dense, intp_t d) noexcept nogil:
    cdef intp_t q
    recompute_margins(s, data, indices, indptr, dense, d)
    for q in range(s.n_queries):
        if interrupted(&s.intr, s.layers[s.queries[q].last - 1].stop - s.layers[s.queries[q].first].start + 1):
            return
        recompute_query(s, q)


# ---------------------------------------------------------------------------------------------------------
# One coordinate: gradient, step, update
# ---------------------------------------------------------------------------------------------------------

cdef inline double coord_grad(Work* s, const floating* data, const index_t* indices, const index_t* indptr,
                              bint dense, intp_t r) noexcept nogil:
    """g_r = sum_j x_jr (e_j S_k - w_j Z_k / (Z_k + e_j)) over the stored entries of column r."""
    cdef intp_t p, start = indptr[r], nnz = indptr[r + 1] - indptr[r]
    cdef const index_t* idx = indices if dense else indices + start
    cdef const floating* vals = data + start
    cdef const Row* R
    cdef const Layer* L
    cdef double g = 0.0
    for p in range(nnz):
        if not dense and p + PREFETCH_AHEAD < nnz:
            prefetch(&s.rows[idx[p + PREFETCH_AHEAD]])
            prefetch(&s.layers[s.rows[idx[p + PREFETCH_AHEAD // 2]].layer])
        R = &s.rows[idx[p]]
        L = &s.layers[R.layer]
        g += vals[p] * (R.e * L.S - R.wt * L.Z / (L.Z + R.e + TINY))
    return g


cdef void apply_step(Work* s, const floating* data, const index_t* indices, const index_t* indptr,
                     bint dense, intp_t r, double delta) noexcept nogil:
    """Margins of column r's rows += delta x_jr; auxiliaries of the touched queries refreshed (Alg. 6).

    A column holding at least DIRECT_SHARE of the rows updates every layer row by row: power sums would cost
    more than summing the layers it touches.
    """
    cdef intp_t p, k, q, cur = -1, kmin = 0, start = indptr[r], nnz = indptr[r + 1] - indptr[r]
    cdef const index_t* idx = indices if dense else indices + start
    cdef const floating* vals = data + start
    cdef Row* R
    cdef Layer* L
    cdef double t, e_old, e_new, d
    cdef bint rescale = False, direct = nnz >= DIRECT_SHARE * s.n
    cdef const Layer* ahead
    for p in range(nnz):
        if not dense and p + PREFETCH_AHEAD < nnz:  # row state 8 ahead, its layer 4 ahead, power sums 2 ahead
            prefetch(&s.rows[idx[p + PREFETCH_AHEAD]])
            prefetch(&s.layers[s.rows[idx[p + PREFETCH_AHEAD // 2]].layer])
            ahead = &s.layers[s.rows[idx[p + PREFETCH_AHEAD // 4]].layer]
            if ahead.powers >= 0:
                prefetch(s.P + ahead.powers)
                prefetch(s.P + ahead.powers + 8)
        R = &s.rows[idx[p]]
        k = R.layer
        L = &s.layers[k]
        q = L.query
        if q != cur:
            if cur >= 0:
                finish_query(s, cur, kmin, rescale, direct)
            cur = q
            kmin = k  # entries are sorted by row, so a query's first entry is in its lowest touched layer
            rescale = False
        R.m += delta * vals[p]
        if rescale:
            continue
        t = R.m - s.queries[q].shift
        if t > RESCALE_AT or t < -SAFE_SPAN or s.queries[q].wide:  # recomputed (and maybe made wide) at the end
            rescale = True
            continue
        e_old = R.e
        e_new = exp(t)
        R.e = e_new
        L.E += e_new - e_old
        if L.bottom:
            continue
        if L.powers >= 0 and not direct:
            powers_update(s, L, e_old, e_new, R.wt)
        elif k == kmin:
            d = L.Z + e_new
            if d < DENOM_MIN:
                s.underflow = 1
            L.A += R.wt * (1.0 / d - 1.0 / (L.Z + e_old))
            if L.powers >= 0:
                s.P[L.powers + 2] = INFINITY
    if cur >= 0:
        finish_query(s, cur, kmin, rescale, direct)


cdef inline double prox_step(double w, double g, double beta, double lam1, double lam2) noexcept nogil:
    """argmin_v g (v - w) + beta / 2 (v - w)^2 + lam1 |v| + lam2 v^2   (section 5)."""
    return soft_threshold(beta * w - g, lam1) / (beta + 2.0 * lam2)


cdef inline double kkt_dist(double g, double w, double lam1, double lam2) noexcept nogil:
    """Distance of -g to the subdifferential of lam1 |w| + lam2 w^2."""
    if w > 0.0:
        return fabs(g + lam1 + 2.0 * lam2 * w)
    if w < 0.0:
        return fabs(g - lam1 + 2.0 * lam2 * w)
    return fmax2(fabs(g) - lam1, 0.0)


cdef double sweep(Work* s, const floating* data, const index_t* indices, const index_t* indptr, bint dense,
                  const intp_t* feats, intp_t n_feats) noexcept nogil:
    """One cyclic pass over feats; returns the largest KKT violation seen before each step."""
    cdef intp_t t, r
    cdef double g, w_new, viol = 0.0
    for t in range(n_feats):
        r = feats[t]
        if interrupted(&s.intr, indptr[r + 1] - indptr[r] + 1):
            break
        g = coord_grad(s, data, indices, indptr, dense, r)
        viol = fmax2(viol, kkt_dist(g, s.w[r], s.lam1, s.lam2))
        w_new = prox_step(s.w[r], g, s.beta[r], s.lam1, s.lam2)
        if w_new != s.w[r]:
            apply_step(s, data, indices, indptr, dense, r, w_new - s.w[r])
            s.w[r] = w_new
            if s.underflow:
                break
    return viol


cdef double max_violation(Work* s, const floating* data, const index_t* indices, const index_t* indptr,
                          bint dense, const intp_t* feats, intp_t n_feats, double* grad) noexcept nogil:
    """Exact KKT violation over feats at the current w (gradients stored in grad[r])."""
    cdef intp_t t, r
    cdef double viol = 0.0
    for t in range(n_feats):
        r = feats[t]
        if interrupted(&s.intr, indptr[r + 1] - indptr[r] + 1):
            break
        grad[r] = coord_grad(s, data, indices, indptr, dense, r)
        viol = fmax2(viol, kkt_dist(grad[r], s.w[r], s.lam1, s.lam2))
    return viol


# ---------------------------------------------------------------------------------------------------------
# Objective, evaluated from the margins alone (independent of the shifted auxiliaries)
# ---------------------------------------------------------------------------------------------------------

cdef double loss_from_margins(const Work* s) noexcept nogil:
    """Sum over dominating rows of w_i (log(sum_{j in D(i) + i} e^{m_j}) - m_i), each term with its own shift."""
    cdef intp_t q, k, i
    cdef const Layer* L
    cdef double loss = 0.0, P, z, mi, lm
    for q in range(s.n_queries):
        P = -INFINITY  # max margin of the layers below the current one
        z = 0.0        # sum of e^{m_j - P} over those layers
        for k in range(s.queries[q].first, s.queries[q].last):
            L = &s.layers[k]
            if not L.bottom:
                for i in range(L.start, L.stop):
                    mi = s.rows[i].m
                    if mi <= P:
                        loss += s.rows[i].wt * ((P - mi) + log(z + exp(mi - P)))
                    else:
                        loss += s.rows[i].wt * log1p(z * exp(P - mi))
            lm = -INFINITY
            for i in range(L.start, L.stop):
                lm = fmax2(lm, s.rows[i].m)
            if lm > P:
                z = z * exp(P - lm) if z > 0.0 else 0.0
                P = lm
            for i in range(L.start, L.stop):
                z += exp(s.rows[i].m - P)
    return loss


cdef inline double penalty(const double* w, intp_t d, double lam1, double lam2) noexcept nogil:
    cdef intp_t r
    cdef double p1 = 0.0, p2 = 0.0
    for r in range(d):
        p1 += fabs(w[r])
        p2 += w[r] * w[r]
    return lam1 * p1 + lam2 * p2


cdef intp_t count_nonzero(const double* w, intp_t d) noexcept nogil:
    cdef intp_t r, k = 0
    for r in range(d):
        if w[r] != 0.0:
            k += 1
    return k


# ---------------------------------------------------------------------------------------------------------
# Feature induction helpers (Alg. 7)
# ---------------------------------------------------------------------------------------------------------

cdef struct Candidate:
    double gain
    intp_t feature


cdef int by_gain_desc(const void* a, const void* b) noexcept nogil:
    """Largest gain first; ties by feature index, so the order is deterministic."""
    cdef const Candidate* ca = <const Candidate*> a
    cdef const Candidate* cb = <const Candidate*> b
    if ca.gain != cb.gain:
        return -1 if ca.gain > cb.gain else 1
    return (ca.feature > cb.feature) - (ca.feature < cb.feature)


cdef inline double guaranteed_decrease(double g, double w, double beta, double lam1, double lam2) noexcept nogil:
    """F(w) - F(w + delta e_r) >= -(g delta + beta/2 delta^2 + P(w + delta) - P(w)) for the bound's minimiser."""
    cdef double v = prox_step(w, g, beta, lam1, lam2), delta = v - w
    return -(g * delta + 0.5 * beta * delta * delta
             + lam1 * (fabs(v) - fabs(w)) + lam2 * (v * v - w * w))


# ---------------------------------------------------------------------------------------------------------
# Anderson extrapolation of the sweeps (Bertrand & Massias 2021, as in skglm), accepted only if it helps
# ---------------------------------------------------------------------------------------------------------

cdef enum:
    ANDERSON_M = 5   # extrapolate from the last ANDERSON_M + 1 iterates


cdef bint solve_small(double* C, double* z, intp_t k) noexcept nogil:
    """Solve C z = 1 (k x k, row-major, overwritten) by Gaussian elimination with partial pivoting."""
    cdef intp_t i, j, r, piv
    cdef double big, f, tmp
    for i in range(k):
        z[i] = 1.0
    for i in range(k):
        piv = i
        for r in range(i + 1, k):
            if fabs(C[r * k + i]) > fabs(C[piv * k + i]):
                piv = r
        if fabs(C[piv * k + i]) < 1e-300:
            return False
        if piv != i:
            for j in range(k):
                tmp = C[i * k + j]
                C[i * k + j] = C[piv * k + j]
                C[piv * k + j] = tmp
            tmp = z[i]
            z[i] = z[piv]
            z[piv] = tmp
        for r in range(i + 1, k):
            f = C[r * k + i] / C[i * k + i]
            for j in range(i, k):
                C[r * k + j] -= f * C[i * k + j]
            z[r] -= f * z[i]
    for i in range(k - 1, -1, -1):
        for j in range(i + 1, k):
            z[i] -= C[i * k + j] * z[j]
        z[i] /= C[i * k + i]
    return True


cdef double extrapolate(Work* s, const floating* data, const index_t* indices, const index_t* indptr,
                        bint dense, intp_t d, const double* W, double* w_prev, double obj) noexcept nogil:
    """Anderson extrapolation of the iterates W[0..M] (rows of length d); keeps it if the objective drops.

    Returns the new objective (auxiliaries recomputed) or obj when the extrapolation is rejected (w and the
    margins restored; the auxiliaries were never changed).
    """
    cdef double C[ANDERSON_M * ANDERSON_M]
    cdef double z[ANDERSON_M]
    cdef double ridge = 0.0, zsum = 0.0, acc, new_obj
    cdef intp_t t, u, r, q
    for t in range(ANDERSON_M):
        for u in range(t, ANDERSON_M):
            acc = 0.0
            for r in range(d):
                acc += (W[(t + 1) * d + r] - W[t * d + r]) * (W[(u + 1) * d + r] - W[u * d + r])
            C[t * ANDERSON_M + u] = acc
            C[u * ANDERSON_M + t] = acc
        ridge += C[t * ANDERSON_M + t]
    if ridge == 0.0:
        return obj
    for t in range(ANDERSON_M):
        C[t * ANDERSON_M + t] += 1e-10 * ridge
    if not solve_small(C, z, ANDERSON_M):
        return obj
    for t in range(ANDERSON_M):
        zsum += z[t]
    if zsum == 0.0 or zsum != zsum:
        return obj
    for r in range(d):
        w_prev[r] = s.w[r]
        acc = 0.0
        for t in range(ANDERSON_M):
            acc += z[t] / zsum * W[(t + 1) * d + r]
        s.w[r] = acc
    recompute_margins(s, data, indices, indptr, dense, d)
    if stopped(s):
        return obj
    new_obj = loss_from_margins(s) + penalty(s.w, d, s.lam1, s.lam2)
    if new_obj < obj:
        for q in range(s.n_queries):
            recompute_query(s, q)
        return new_obj
    for r in range(d):
        s.w[r] = w_prev[r]
    recompute_margins(s, data, indices, indptr, dense, d)
    return obj


# ---------------------------------------------------------------------------------------------------------
# Python entry points
# ---------------------------------------------------------------------------------------------------------

cdef void* aligned(unsigned char[::1] buf) noexcept:
    """First 64-byte aligned address of buf (allocated 64 bytes larger than needed)."""
    return <void*> ((<uintptr_t> &buf[0] + 63) & ~(<uintptr_t> 63))


class _State:
    """Owner of the kernel state buffers for one layout (rows, layers, queries as arrays of structs)."""

    def __init__(self, layout, w, beta, lam1, lam2, power_sum_rows=0):
        """power_sum_rows > 0: dominating layers with at least that many rows keep power sums."""
        self.layout = layout
        self.w = w
        self.beta = beta
        self.lam = (float(lam1), float(lam2))
        n, n_layers, n_queries = layout.row_qk.shape[0], layout.qk_q.shape[0], layout.q_ptr.shape[0] - 1
        self.n, self.n_layers, self.n_queries = n, n_layers, n_queries
        self.row_buf = np.zeros(n * sizeof(Row) + 64, np.uint8)
        self.layer_buf = np.zeros(n_layers * sizeof(Layer) + 64, np.uint8)
        self.query_buf = np.zeros(n_queries * sizeof(Query) + 64, np.uint8)
        bottom = np.zeros(n_layers, dtype=bool)
        bottom[layout.q_ptr[:n_queries]] = True
        large = ~bottom & (np.diff(layout.lay_ptr) >= power_sum_rows) if power_sum_rows > 0 else bottom & False
        self.powers = np.where(large, (np.cumsum(large) - 1) * POWER_BLOCK, -1).astype(np.intp)
        self.P = np.zeros(max(int(large.sum()), 1) * POWER_BLOCK)


def _row_weights(layout):
    """The sorted rows' sample weights: the layout's, or ones when it is unweighted."""
    return np.ones(layout.row_qk.shape[0]) if layout.weight is None else np.ascontiguousarray(layout.weight,
                                                                                               np.float64)


cdef Work make_work(state) except *:
    """Work view of a _State, with the layout copied into the structs."""
    cdef Work s
    layout = state.layout
    cdef const intp_t[::1] q_ptr = layout.q_ptr
    cdef const intp_t[::1] lay_ptr = layout.lay_ptr
    cdef const intp_t[::1] row_qk = layout.row_qk
    cdef const intp_t[::1] qk_q = layout.qk_q
    cdef const double[::1] offset = layout.offset
    cdef const double[::1] weight = _row_weights(layout)
    cdef double[::1] w = state.w
    cdef const double[::1] beta = state.beta
    cdef const intp_t[::1] powers = state.powers
    cdef double[::1] P = state.P
    cdef intp_t i, k, q
    s.P = &P[0]
    s.rows = <Row*> aligned(state.row_buf)
    s.layers = <Layer*> aligned(state.layer_buf)
    s.queries = <Query*> aligned(state.query_buf)
    s.n = state.n
    s.n_queries = state.n_queries
    s.offset = &offset[0] if s.n else NULL
    s.w = &w[0] if w.shape[0] else NULL
    s.beta = &beta[0] if beta.shape[0] else NULL
    s.lam1, s.lam2 = state.lam
    s.underflow = 0
    interrupt_init(&s.intr)
    for i in range(s.n):
        s.rows[i].layer = row_qk[i]
        s.rows[i].wt = weight[i]
    for k in range(state.n_layers):
        s.layers[k].start = lay_ptr[k]
        s.layers[k].stop = lay_ptr[k + 1]
        s.layers[k].query = qk_q[k]
        s.layers[k].bottom = k == q_ptr[qk_q[k]]
        s.layers[k].powers = powers[k]
    for q in range(s.n_queries):
        s.queries[q].first = q_ptr[q]
        s.queries[q].last = q_ptr[q + 1]
    return s


def hessian_bounds(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                   bint dense, layout, int kind):
    """beta_r, a bound on d^2 L / dw_r^2 valid at every w.

    kind HESSIAN_MAX_SQ (the thesis, section 2): sum_q m_q max_{j in q} x_jr^2, m_q = the weight of the
    dominating rows of q (their number when unweighted).
    kind HESSIAN_POPOVICIU: sum over dominating rows i of w_i (max - min)^2 / 4 of x_r over D(q, i) + {i}, since
    the curvature of l_i along e_r is a variance of x_r over that set (Popoviciu's inequality).
    """
    cdef intp_t d = indptr.shape[0] - 1
    cdef const intp_t[::1] q_ptr = layout.q_ptr
    cdef const intp_t[::1] lay_ptr = layout.lay_ptr
    cdef const intp_t[::1] row_qk = layout.row_qk
    cdef const intp_t[::1] qk_q = layout.qk_q
    weights = _row_weights(layout)
    n_layers, n_queries = layout.qk_q.shape[0], layout.q_ptr.shape[0] - 1
    lay_weights = np.add.reduceat(weights, layout.lay_ptr[:n_layers]) if n_layers else np.zeros(0)
    # the weight of each query's dominating rows (float64 also when there is no row: bincount gives int64 then)
    dom_weights = np.bincount(layout.qk_q, weights=lay_weights, minlength=n_queries).astype(np.float64)
    dom_weights -= lay_weights[layout.q_ptr[:n_queries]]  # (the bottom layers dominate nothing)
    cdef const double[::1] wt = weights, lay_w = lay_weights, dom_w = dom_weights
    out = np.zeros(d)
    cdef double[::1] beta = out
    cdef intp_t r, p, pe, pl, q, qk, k0, k1, size, cnt, u, start, nnz
    cdef const index_t* idx
    cdef const floating* vals
    cdef double lo, hi, x, t, xmax, stored
    cdef Interrupt intr
    if data.shape[0] == 0:
        return out
    interrupt_init(&intr)
    with nogil:
        for r in range(d):
            start = indptr[r]
            nnz = indptr[r + 1] - start
            if interrupted(&intr, nnz + 1):
                break
            idx = &indices[0] if dense else &indices[0] + start
            vals = &data[0] + start
            p = 0
            while p < nnz:
                q = qk_q[row_qk[idx[p]]]
                pe = p
                while pe < nnz and qk_q[row_qk[idx[pe]]] == q:
                    pe += 1
                k0 = q_ptr[q]
                k1 = q_ptr[q + 1]
                if kind == BOUND_MAX_SQ:
                    xmax = 0.0
                    for u in range(p, pe):
                        xmax = fmax2(xmax, vals[u] * vals[u])
                    beta[r] += dom_w[q] * xmax
                else:
                    lo = INFINITY  # range of the layers below, implicit zeros included
                    hi = -INFINITY
                    t = 0.0
                    pl = p
                    for qk in range(k0, k1):
                        size = lay_ptr[qk + 1] - lay_ptr[qk]
                        u = pl
                        while u < pe and row_qk[idx[u]] == qk:
                            u += 1
                        cnt = u - pl
                        if qk > k0:
                            stored = 0.0  # weight of the rows with an entry
                            for u in range(pl, pl + cnt):
                                x = vals[u]
                                t += wt[idx[u]] * (fmax2(hi, x) - fmin2(lo, x)) ** 2
                                stored += wt[idx[u]]
                            if cnt < size:  # the layer's implicit zeros, with the weight of their rows
                                t += fmax2(lay_w[qk] - stored, 0.0) * (fmax2(hi, 0.0) - fmin2(lo, 0.0)) ** 2
                        for u in range(pl, pl + cnt):
                            lo = fmin2(lo, vals[u])
                            hi = fmax2(hi, vals[u])
                        if cnt < size:
                            lo = fmin2(lo, 0.0)
                            hi = fmax2(hi, 0.0)
                        pl += cnt
                    beta[r] += 0.25 * t
                p = pe
    check_interrupt(&intr)
    return out


def objective(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
              layout, const double[::1] w, double lam1, double lam2):
    """(loss, penalty) at w in float64: margins recomputed from X, each loss term with its own shift."""
    cdef intp_t d = indptr.shape[0] - 1
    w_copy = np.array(w, dtype=np.float64)
    state = _State(layout, w_copy, np.zeros(d), lam1, lam2)
    cdef Work s = make_work(state)
    cdef double loss, pen
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    with nogil:
        recompute_margins(&s, X, &indices[0], &indptr[0], dense, d)
        loss = loss_from_margins(&s)
        pen = penalty(s.w, d, lam1, lam2)
    check_interrupt(&s.intr)
    return loss, pen


def gradient(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
             layout, const double[::1] w, intp_t power_sum_rows=0):
    """Gradient of the loss (no penalty) at w, through the same auxiliaries as the solver."""
    cdef intp_t d = indptr.shape[0] - 1, r
    w_copy = np.array(w, dtype=np.float64)
    state = _State(layout, w_copy, np.zeros(d), 0.0, 0.0, power_sum_rows)
    cdef Work s = make_work(state)
    grad = np.zeros(d)
    cdef double[::1] g = grad
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    with nogil:
        recompute_all(&s, X, &indices[0], &indptr[0], dense, d)
        for r in range(d):
            g[r] = coord_grad(&s, X, &indices[0], &indptr[0], dense, r)
    check_interrupt(&s.intr)
    if s.underflow:
        raise FloatingPointError(UNDERFLOW_MESSAGE)
    return grad


def incremental_gradient(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                         bint dense, layout, const double[::1] w, const intp_t[::1] features,
                         const double[::1] deltas, intp_t power_sum_rows=0):
    """For tests: after each update w[features[t]] += deltas[t], the loss gradient read from the incremental
    auxiliaries (never recomputed) and the same gradient recomputed from scratch; two (n_steps, d) arrays."""
    cdef intp_t d = indptr.shape[0] - 1, r, t, n_steps = features.shape[0]
    w_inc = np.array(w, dtype=np.float64)
    w_exact = np.array(w, dtype=np.float64)
    state = _State(layout, w_inc, np.zeros(d), 0.0, 0.0, power_sum_rows)
    fresh = _State(layout, w_exact, np.zeros(d), 0.0, 0.0, power_sum_rows)
    cdef Work s = make_work(state)
    cdef Work e = make_work(fresh)
    incremental = np.zeros((n_steps, d))
    exact = np.zeros((n_steps, d))
    cdef double[:, ::1] g_inc = incremental
    cdef double[:, ::1] g_exact = exact
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    with nogil:
        recompute_all(&s, X, &indices[0], &indptr[0], dense, d)
        for t in range(n_steps):
            apply_step(&s, X, &indices[0], &indptr[0], dense, features[t], deltas[t])
            s.w[features[t]] += deltas[t]
            e.w[features[t]] += deltas[t]
            recompute_all(&e, X, &indices[0], &indptr[0], dense, d)
            for r in range(d):
                g_inc[t, r] = coord_grad(&s, X, &indices[0], &indptr[0], dense, r)
                g_exact[t, r] = coord_grad(&e, X, &indices[0], &indptr[0], dense, r)
    check_interrupt(&s.intr)
    check_interrupt(&e.intr)
    if s.underflow or e.underflow:
        raise FloatingPointError(UNDERFLOW_MESSAGE)
    return incremental, exact


def _grown(double[::1] hist_obj, intp_t[::1] hist_nnz):
    """The history buffers with twice the room (at least 16), their entries kept."""
    n = hist_obj.shape[0]
    obj, nnz = np.zeros(max(2 * n, 16)), np.zeros(max(2 * n, 16), dtype=np.intp)
    obj[:n] = hist_obj
    nnz[:n] = hist_nnz[:n]
    return obj, nnz


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
          layout, double[::1] w, const double[::1] beta, double lam1, double lam2, double tol,
          intp_t max_iter, intp_t induction_step, int verbose, double[::1] hist_obj, intp_t[::1] hist_nnz,
          intp_t power_sum_rows=0, bint anderson=True):
    """Minimise L(w) + lam1 ||w||_1 + lam2 ||w||_2^2 by cyclic coordinate descent, in place on w.

    Stops when the largest distance of -grad to the penalty's subdifferential is <= tol * scale, scale being
    the largest |dL/dw_r| at w = 0 (tol is relative). induction_step > 0 runs feature induction (Alg. 7):
    add the induction_step inactive features with the largest guaranteed decrease, train the active set to
    convergence (to max(tol, 0.3 x the round's starting violation)), repeat until every feature meets the
    tolerance. Features with beta_r == 0 have a zero gradient at every w and are skipped (w_r left as given).

    power_sum_rows > 0: dominating layers of at least that many rows keep power sums (see module docstring).
    anderson: every 6 sweeps, try the Anderson extrapolation of the last 6 iterates; kept only if it lowers
    the objective, so the objective still never increases.

    hist_obj, hist_nnz: buffers for the objective and the non-zeros after each sweep, of any length (as short as
    0): they grow as sweeps are made (doubling), so max_iter bounds the time, never the memory.

    Returns (n_iter, converged, violation, scale, underflow, objectives, non-zeros); violation is absolute
    (divide by scale); the last two hold the n_iter sweeps' history.
    """
    cdef intp_t d = indptr.shape[0] - 1, r, t, n_useful, n_active = 0, n_cand, ep = 0
    state = _State(layout, w, beta, lam1, lam2, power_sum_rows)
    cdef Work s = make_work(state)
    useful_arr = np.flatnonzero(np.asarray(beta) > 0).astype(np.intp)
    active_arr = np.zeros(d + 1, dtype=np.intp)
    in_active_arr = np.zeros(d + 1, dtype=np.uint8)
    cand_buf = np.zeros((d + 1) * sizeof(Candidate) + 64, dtype=np.uint8)
    grad_arr = np.zeros(d + 1)
    w_start = np.array(w, dtype=np.float64)
    cdef const intp_t[::1] useful = np.r_[useful_arr, 0].astype(np.intp)
    cdef intp_t[::1] active = active_arr
    cdef unsigned char[::1] in_active = in_active_arr
    cdef Candidate* cand = <Candidate*> aligned(cand_buf)
    cdef double[::1] grad_view = grad_arr
    cdef double* grad = &grad_view[0]
    cdef double[::1] w0 = w_start
    W_arr = np.zeros((ANDERSON_M + 1) * d + 1)
    w_prev_arr = np.zeros(d + 1)
    cdef double[::1] W_view = W_arr
    cdef double[::1] w_prev_view = w_prev_arr
    cdef double* W = &W_view[0]
    cdef double* w_prev = &w_prev_view[0]
    cdef intp_t n_stored
    cdef double inner_tol
    cdef double new_obj
    cdef const floating* X = &data[0] if data.shape[0] else NULL
    cdef const index_t* ind = &indices[0]
    cdef const index_t* ptr = &indptr[0]
    cdef double scale = 0.0, tol_abs, viol = INFINITY, obj
    cdef bint converged = False
    n_useful = useful_arr.shape[0]

    with nogil:
        # scale: the largest |dL/dw_r| at w = 0
        for r in range(d):
            s.w[r] = 0.0
        recompute_all(&s, X, ind, ptr, dense, d)
        for t in range(n_useful):
            if interrupted(&s.intr, ptr[useful[t] + 1] - ptr[useful[t]] + 1):
                break
            scale = fmax2(scale, fabs(coord_grad(&s, X, ind, ptr, dense, useful[t])))
        for r in range(d):
            s.w[r] = w0[r]
        if scale == 0.0:
            scale = 1.0
        tol_abs = tol * scale
        recompute_all(&s, X, ind, ptr, dense, d)

        inner_tol = tol_abs
        if induction_step <= 0:
            for t in range(n_useful):
                active[t] = useful[t]
            n_active = n_useful
        else:
            for t in range(n_useful):
                if s.w[useful[t]] != 0.0:
                    active[n_active] = useful[t]
                    in_active[useful[t]] = 1
                    n_active += 1

        while not stopped(&s):
            if induction_step > 0:
                # rank the inactive features by the decrease one bound-minimising step guarantees (Alg. 7)
                viol = max_violation(&s, X, ind, ptr, dense, &useful[0], n_useful, grad)
                if viol <= tol_abs or ep >= max_iter or stopped(&s):
                    break
                # the round's active set is solved to a fraction of the current violation (as working-set
                # solvers do): exact enough to rank the next candidates, and tightened as viol shrinks
                inner_tol = fmax2(tol_abs, INNER_TOL_RATIO * viol)
                n_cand = 0
                for t in range(n_useful):
                    r = useful[t]
                    if not in_active[r] and kkt_dist(grad[r], s.w[r], lam1, lam2) > tol_abs:
                        cand[n_cand].gain = guaranteed_decrease(grad[r], s.w[r], s.beta[r], lam1, lam2)
                        cand[n_cand].feature = r
                        n_cand += 1
                qsort(cand, n_cand, sizeof(Candidate), by_gain_desc)
                for t in range(min(n_cand, induction_step)):
                    active[n_active] = cand[t].feature
                    in_active[cand[t].feature] = 1
                    n_active += 1
                if verbose:
                    with gil:
                        print(f"[DominationRank] feature induction: {n_active} active features "
                              f"({n_cand} candidates), violation {viol / scale:.3e}")
            # train the active features to convergence (all useful features without induction)
            converged = False
            n_stored = 0
            while ep < max_iter and not stopped(&s):
                viol = sweep(&s, X, ind, ptr, dense, &active[0], n_active)
                recompute_all(&s, X, ind, ptr, dense, d)
                if s.intr.raised:
                    break
                obj = loss_from_margins(&s) + penalty(s.w, d, lam1, lam2)
                for r in range(d):
                    W[n_stored * d + r] = s.w[r]
                n_stored += 1
                if n_stored == ANDERSON_M + 1 and anderson:
                    new_obj = extrapolate(&s, X, ind, ptr, dense, d, W, w_prev, obj)
                    if new_obj < obj:
                        obj = new_obj
                        viol = INFINITY  # the sweep's violation no longer describes w
                if n_stored == ANDERSON_M + 1:
                    n_stored = 0
                if s.intr.raised:
                    break
                if ep >= hist_obj.shape[0] or ep >= hist_nnz.shape[0]:
                    with gil:
                        hist_obj, hist_nnz = _grown(hist_obj[:min(hist_obj.shape[0], hist_nnz.shape[0])],
                                                    hist_nnz)
                hist_obj[ep] = obj
                hist_nnz[ep] = count_nonzero(s.w, d)
                ep += 1
                if verbose:
                    with gil:
                        print(f"[DominationRank] epoch {ep}: objective {obj:.12g}, "
                              f"nonzeros {hist_nnz[ep - 1]}, sweep violation {viol / scale:.3e}")
                if viol <= inner_tol:
                    viol = max_violation(&s, X, ind, ptr, dense, &active[0], n_active, grad)
                    if viol <= inner_tol and not s.intr.raised:
                        converged = True
                        break
            if induction_step <= 0 or not converged:
                break
        # final, exact violation over every useful feature
        if not stopped(&s):
            viol = max_violation(&s, X, ind, ptr, dense, &useful[0], n_useful, grad)
            converged = viol <= tol_abs
    check_interrupt(&s.intr)
    return (ep, bool(converged), viol, scale, bool(s.underflow), np.asarray(hist_obj)[:ep].copy(),
            np.asarray(hist_nnz)[:ep].copy())
