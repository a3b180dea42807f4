"""RankNet and LambdaRank gradients ("lambdas") per document (Burges, "From RankNet to LambdaRank to LambdaMART:
An Overview", MSR-TR-2010-82, sections 2-4), and the pair-weighted RankNet loss of linear LambdaRank (the M-step of
Wang, Li, Golbandi, Bendersky & Najork, "The LambdaLoss Framework for Ranking Metric Optimization", CIKM 2018).

Rows come grouped by query and, inside a query, in increasing label order. For every pair (i, j) of a query with
y_i > y_j and score gap u = s_i - s_j, with rho = 1 / (1 + exp(sigma u)) (a sigmoid, stable for any gap):

    cost      C_ij = |dZ_ij| log(1 + exp(-sigma u))        (RankNet: |dZ_ij| = 1)
    gradient  dC/ds_i = -sigma rho |dZ_ij|,  dC/ds_j = +sigma rho |dZ_ij|   (summed per document: lambda)
    weight    sigma^2 rho (1 - rho) |dZ_ij| added to both documents (the diagonal of the Gauss-Newton Hessian,
              the "hessian" LightGBM's custom objectives take)

Sample weights (``weight``; Joachims, Swaminathan & Schnabel, WSDM 2017, inverse propensity weighting): the pair
(i, j), y_i > y_j, counts with c_i, the weight of its preferred row i, in the cost, in both documents' gradients
and in both weights (|dZ_ij| -> c_i |dZ_ij| above). The ranking and |dZ_ij| are those of every row, weight 0 or
not (a row of weight 0 still holds its position: weight 0 removes exactly the pairs it is preferred in). Without
weights (NULL) the kernel runs the same operations as before they existed.

|dZ_ij| is the change of the query's metric when i and j swap places in the ranking by decreasing score. With
distinct scores the ranking is unique; 0-based positions r_i:

- NDCG@k: |g_i - g_j| |D(r_i) - D(r_j)| / IDCG@k, g = 2^y - 1, D(r) = 1 / log2(r + 2) for r < k, else 0; IDCG
  from the label order, once per query. O(1) per pair.
- ERR@k: R_r = (2^y - 1) / 2^max_rel at position r, x_r = 1 - R_r, p_r = prod_{t<r} x_t, w_r = 1/(r + 1) for r < k,
  else 0, ERR = sum_r R_r p_r w_r (Chapelle, Metzler, Zhang & Grinspan 2009). Swapping positions a < b changes the
  terms a..b only; with E_r = sum_{t>=r} R_t w_t prod_{r<=v<t} x_v (E_r = R_r w_r + x_r E_{r+1}) and
  u_r = w_r - E_{r+1}, and using R_a x_b - R_b x_a = R_a - R_b and x_b - x_a = R_a - R_b:
  dERR = p_a (R_b - R_a) (u_a - prod_{a<t<=b} x_t u_b),
  exact and O(1) per pair with no division by 1 - R (which is 2^-max_rel at the top label: 0 in floating point from
  max_rel = 54 on). p_r is kept as a mantissa and an integer exponent (cnt, pre), so the products of tiny
  x = 2^-max_rel neither underflow nor lose digits at any label scale; O(n) per query.
- AP (MAP): relevant = y > threshold, n_rel of them, c_r = relevant documents at positions <= r. A relevant
  document at a and an irrelevant one at b > a: dAP = (c_b/(b+1) - c_a/(a+1) - sum_{a<r<b relevant} 1/(r+1)) / n_rel;
  the irrelevant one above (at a, the relevant at b): dAP = ((c_a + 1)/(a+1) + sum_{a<r<b relevant} 1/(r+1) -
  c_b/(b+1)) / n_rel. O(1) per pair with prefix sums; 0 when both are (ir)relevant.

Tied scores (``ties``). |dZ_ij| is the expectation of the above over the orders of the rows whose places a rule
leaves open, each order equally likely, so it never depends on the order of the input rows:

- PESSIMISTIC: equal scores are ranked by increasing label (the worst case, as cyrank.metrics); the rows of one
  (score, label) block are interchangeable and every order of them counts. In this order the label at every
  position is fixed, and a pair's two blocks A (above) and B (below) never overlap, so the sign of dZ is the same
  for all placements (moving the better document down never raises NDCG, AP or ERR) and the expectation is the
  mean of dZ over a in A, b in B. Each formula above is a sum of a term in a and a term in b (the labels of A and
  B being constant), so that mean is O(1) per pair from per-block sums, O(n) per query. The lambdas equal the
  pessimistic order's lambdas averaged over the rows of each block. (ERR: for every a in A, p_a prod_{a<t<=b} x_t
  = p_pA prod_{pA<t<pB} x_t x_B^(b-pB+1), pA and pB the blocks' first positions, so the mean needs the block sums
  sum_{a<T} x_A^(a-pA) u_a and sum_b x_B^(b-pB+1) u_b.)
- AVERAGE (NDCG and RankNet only): the rows of a tie group G (equal scores, any labels) in uniformly random
  order. Two groups A above B: E|D(r_i) - D(r_j)| = mean D over A - mean D over B; i and j in one group of m
  rows at positions p..p+m-1: E|D(r_i) - D(r_j)| = 2/(m(m-1)) sum_{u<v} (D_{p+u} - D_{p+v}), O(m) per group.
  For ERR and MAP this expectation has no cheap closed form (AP and ERR are not sums over positions of a
  function of one label).
- INPUT: equal scores in a given order (``tie``: the input order, as LightGBM), every block a single row.

``truncation`` > 0 keeps only the pairs with one document in the top ``truncation`` positions (LightGBM's
lambdarank_truncation_level); with ties, the expectation of |dZ_ij| times that indicator (1{position of the
upper document < truncation}, a term in a alone). Only pairs with one side in the top positions carry a weight:
with L = min(k, truncation) for NDCG and ERR (D(r) = 0 and w_r = 0 from k on), L = truncation for RankNet and MAP,
a pair whose upper block starts at L or below has |dZ| = 0, so the kernel visits, by position, the rows of the
blocks that start before L (a block straddling L whole) against every row below them (weighted_top): O(L n) pairs,
as LightGBM's top positions x n, instead of O(n^2). Without a cut-off, every pair of different labels in label
order. Cost per query: the ranking (up to SMALL_SORT_MAX = 32 rows, 16 with a tie order, the positions are
counted, n^2 comparisons without a branch; then the introsort up to 32 rows; from 33, _sort.pxd's radix sort, O(n)
passes and an introsort of the runs of equal top bits: the same total order each way) plus those pairs. Queries run
in parallel (OpenMP), each writing only its own rows; the loss is summed in query order.

:class:`Reference` keeps the weights |dZ_ij| of one ranking (the reference scores s0: positions, blocks and the
per-block sums, O(n) memory, no per-pair storage) and evaluates the convex pair-weighted RankNet loss
sum_P |dZ_ij(s0)| log(1 + exp(-sigma (s_i - s_j))) at other scores s, its gradient, Gauss-Newton diagonal and
Hessian-vector products, over the same pairs (O(L n) with a cut-off) each.
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, M_LN2, exp, exp2, expm1, fabs, frexp, ldexp, log1p, log2, pow
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from cyrank._math cimport log1pexp, pair_sigmoid
from cyrank._parallel cimport product_threads
from cyrank._sort cimport KeyIndex, introsort, radix_sort
from cyrank._typedefs cimport floating, index_t, intp_t

RANKNET, NDCG, ERR, AP = 0, 1, 2, 3
PESSIMISTIC, AVERAGE, INPUT = 0, 1, 2
cdef double LN2 = M_LN2
cdef double ZERO_FACTOR_EXPONENT = -2048.0  # a factor 1 - R below 2^-1074 (0.0): its exponent in a product
cdef double TINY = 1e-250  # below it, exp(sigma s - max) has lost digits: the per-pair exponential instead

# D(r) = 1 / log2(r + 2) of the first positions, computed once (the same expression, so the same bits)
cdef enum:
    N_DISCOUNTS = 256
cdef double DISCOUNT[N_DISCOUNTS]
for _r in range(N_DISCOUNTS):
    DISCOUNT[_r] = 1.0 / log2(_r + 2.0)

# NDCG's gain 2^y - 1 of the integer labels 0..N_GAINS-1, computed once (the same expression, so the same bits)
cdef enum:
    N_GAINS = 64
cdef double GAIN[N_GAINS]
for _r in range(N_GAINS):
    GAIN[_r] = exp2(<double> _r) - 1.0

cdef enum:
    _RANKNET = 0
    _NDCG = 1
    _ERR = 2
    _AP = 3

cdef enum:
    _PESSIMISTIC = 0
    _AVERAGE = 1
    _INPUT = 2

cdef enum:
    NF = 5  # per-row fields of a query's reference (QueryRef.f)
    NX = 14  # per-row scratch doubles of query_pairs (ex; top_pairs' runs)
    SMALL_SORT_MAX = 32  # queries of at most this many rows are ranked by counting (small_positions), not sorted
    SMALL_TIE_SORT_MAX = 16  # the same with a tie order (ties="input": the count after a permutation; measured
                             # 10% slower than the introsort at 30 rows)
    RADIX_SORT_MIN = 33  # queries of at least this many rows: the radix sort (_sort.pxd; faster than the introsort
                         # from about 33 rows, 1.3x the whole kernel at queries of 1,000)


cdef struct Unweighted:
    char unused
cdef struct Weighted:
    const double* w  # the sample weights of the query's rows


# The pair loops are compiled twice (Cython fused specialisation): for Unweighted the weight code is not there at
# all, so the unweighted path runs exactly the loops it ran before weights existed.
ctypedef fused Weights:
    Unweighted
    Weighted


cdef inline Unweighted unweighted() noexcept nogil:
    cdef Unweighted W
    W.unused = 0
    return W


cdef inline Weighted weighted(const double* w) noexcept nogil:
    cdef Weighted W
    W.w = w
    return W


cdef struct QueryRef:
    # One query's ranking (rows 0..n-1 of the query, labels ascending) and what the pair weights need.
    intp_t* pos    # position of row t (0 = top)
    intp_t* bst    # first position of row t's block (ties: see the module docstring)
    intp_t* bsz    # rows in that block
    intp_t* bct    # of them, positions before the truncation level (bsz without truncation)
    intp_t* ord    # row at position r
    double* f      # NF fields per row, f[NF t + c]: its block's sums (query_reference)
    double* val    # per position: ERR u_r, NDCG the discount D(r)
    double* cnt    # per position: ERR the mantissa of p_r, AP c_r
    double* pre    # per position, n + 1 entries: ERR the exponent of p_r, AP sum_{t<r relevant} 1/(t+1)
    double norm    # NDCG 1/IDCG, AP n_rel, else 1; 0: no pair of the query has a weight


cdef inline double err_R(double y, double max_rel) noexcept nogil:
    """R(y) = (2^y - 1) / 2^max_rel = 2^(y - max_rel) - 2^-max_rel, without overflow at any label."""
    return pow(2.0, y - max_rel) - pow(2.0, -max_rel)


cdef inline double err_x(double y, double max_rel) noexcept nogil:
    """1 - R(y) = 1 - 2^(y - max_rel) + 2^-max_rel to full relative precision (2^-max_rel at y = max_rel, where
    1 - R(y) computed from R(y) would round to 0 for max_rel >= 54). 0 only below 2^-1074 (max_rel > 1074)."""
    return -expm1((y - max_rel) * LN2) + pow(2.0, -max_rel)


cdef inline double scaled(double m, double e) noexcept nogil:
    """m 2^e (e an integer held in a double, clamped: beyond +-4000 the result is 0 or inf anyway)."""
    if e < -4000.0:
        return 0.0
    return ldexp(m, <int> (e if e < 4000.0 else 4000.0))


cdef inline bint small_positions(const double* s, const intp_t* tie, intp_t n, intp_t* pos, intp_t* ord,
                                 double* tmp) noexcept nogil:
    """The positions of a short query without a sort: pos[t] = the rows before row t in the order of decreasing
    score, equal scores by increasing row (tie NULL: rows are label-ascending) or tie[t], the introsort's total
    order, counted (O(n^2) comparisons, no branch: faster than the sort up to SMALL_SORT_MAX rows); ord its
    inverse. With tie (a permutation of 0..n-1), the scores are first put in tie order into tmp (n doubles), where
    the count is the same two loops without a branch. False when the counts are not a permutation (a NaN score):
    the caller sorts instead."""
    cdef intp_t t, u, c, tt
    cdef double st
    for t in range(n):
        ord[t] = -1
    if tie != NULL:
        for t in range(n):
            tmp[tie[t]] = s[t]
    for t in range(n):
        st = s[t]
        c = 0
        if tie == NULL:  # rows u < t come first at equal scores
            for u in range(t):
                c += s[u] >= st
            for u in range(t + 1, n):
                c += s[u] > st
        else:  # in tie order: the rows of tie rank below tie[t] come first at equal scores
            tt = tie[t]
            for u in range(tt):
                c += tmp[u] >= st
            for u in range(tt + 1, n):
                c += tmp[u] > st
        pos[t] = c
        ord[c] = t
    for t in range(n):
        if ord[t] < 0:
            return False
    return True


cdef double query_reference(const double* s, const double* y, const intp_t* tie, intp_t n, int metric, intp_t k,
                            intp_t truncation, double max_rel, double threshold, int ties, KeyIndex* rec,
                            QueryRef* Q) noexcept nogil:
    """Rank one query (rows 0..n-1, labels ascending) by the scores s and fill Q (positions, blocks, per-position
    arrays, per-block sums in every row's fields); returns Q.norm (0: no pair of the query has a weight).
    k >= n means no cut-off; truncation <= 0 none."""
    cdef intp_t t, r, p, m, c, e, cT, T = truncation if truncation > 0 else n
    cdef double idcg = 0.0, n_rel = 0.0, x0, x1, x2, x3, x4, g, suffix, d, w, x, R, mx, mm
    cdef int ex, em
    cdef double y_r
    cdef bint same
    cdef intp_t* ord = Q.ord
    cdef KeyIndex* srt = rec
    Q.norm = 0.0
    if n < 2 or y[0] == y[n - 1]:
        return 0.0
    if n > (SMALL_SORT_MAX if tie == NULL else SMALL_TIE_SORT_MAX) or not small_positions(s, tie, n, Q.pos, ord,
                                                                                         Q.val):
        for t in range(n):
            rec[t].key = -s[t]
            rec[t].index = t if tie == NULL else tie[t]  # equal scores: by label (rows are label-ascending) or tie[t]
            if tie != NULL:
                ord[tie[t]] = t
        if n >= RADIX_SORT_MIN:  # rec has room for 2 n records: the second half is the radix sort's scratch
            srt = radix_sort(rec, rec + n, n)
        else:
            introsort(rec, n)
        for r in range(n):
            t = srt[r].index if tie == NULL else ord[srt[r].index]
            Q.pos[t] = r
        for t in range(n):
            ord[Q.pos[t]] = t
    # blocks: runs of equal scores (AVERAGE), of equal (score, label) (PESSIMISTIC), single rows (INPUT)
    p = 0
    while p < n:
        e = p + 1
        while e < n and ties != _INPUT and s[ord[e]] == s[ord[p]] and (ties == _AVERAGE or y[ord[e]] == y[ord[p]]):
            e += 1
        cT = min(max(T - p, 0), e - p)
        for r in range(p, e):
            t = ord[r]
            Q.bst[t] = p
            Q.bsz[t] = e - p
            Q.bct[t] = cT
        p = e
    if metric == _RANKNET:
        for p in range(n):  # fields 3 = share of the block before T, 4 = P(min position < T) in one group
            if Q.bst[ord[p]] != p:
                continue
            m = Q.bsz[ord[p]]
            cT = Q.bct[ord[p]]
            x3 = cT / <double> m
            x4 = 0.0
            if m > 1:
                for c in range(cT):
                    x4 = x4 + (m - 1 - c)
                x4 = x4 / (0.5 * m * (m - 1.0))
            for r in range(p, p + m):
                Q.f[NF * ord[r] + 3] = x3
                Q.f[NF * ord[r] + 4] = x4
        Q.norm = 1.0
        return 1.0
    if metric == _NDCG:
        # val[r] = D(r); per row: 0 gain, 1 mean D of its block, 2 (1/m) sum_{a<T} D_a, 3 share before T,
        # 4 (one group of m >= 2 rows) E|D(r_i) - D(r_j)| 1{min < T} over random distinct positions
        for r in range(n):
            Q.val[r] = (DISCOUNT[r] if r < N_DISCOUNTS else 1.0 / log2(r + 2.0)) if r < k else 0.0
        g = 0.0
        for t in range(n):  # integer labels: the table, every row (no branch on the label changes, which are
            y_r = y[t]     # random); others: one exp2 per label level (rows are label-ascending)
            if 0.0 <= y_r < N_GAINS and y_r == <int> y_r:
                g = GAIN[<int> y_r]
            elif t == 0 or y_r != y[t - 1]:
                g = exp2(y_r) - 1.0
            Q.f[NF * t] = g
        for r in range(min(n, k)):  # ideal order: labels descending = rows n-1, n-2, ...
            idcg = idcg + Q.f[NF * (n - 1 - r)] * Q.val[r]
        if idcg <= 0.0:
            return 0.0
        for p in range(n):
            t = ord[p]
            if Q.bst[t] != p:
                continue
            m = Q.bsz[t]
            cT = Q.bct[t]
            if m == 1:  # a single row (no tie): its discount
                Q.f[NF * t + 1] = Q.val[p]
                Q.f[NF * t + 2] = Q.val[p] if cT else 0.0
                Q.f[NF * t + 3] = 1.0 if cT else 0.0
                Q.f[NF * t + 4] = 0.0
                continue
            x1 = 0.0
            x2 = 0.0
            for r in range(p, p + m):
                x1 = x1 + Q.val[r]
                if r - p < cT:
                    x2 = x2 + Q.val[r]
            x4 = 0.0
            if m > 1:  # sum_{u<v, u<cT} (D_u - D_v) = sum_{u<cT} ((m-1-u) D_u - sum_{v>u} D_v)
                suffix = 0.0
                for c in range(m - 1, -1, -1):
                    d = Q.val[p + c]
                    if c < cT:
                        x4 = x4 + ((m - 1 - c) * d - suffix)
                    suffix = suffix + d
                x4 = x4 / (0.5 * m * (m - 1.0))
            for r in range(p, p + m):
                t = ord[r]
                Q.f[NF * t + 1] = x1 / m
                Q.f[NF * t + 2] = x2 / m
                Q.f[NF * t + 3] = cT / <double> m
                Q.f[NF * t + 4] = x4
        Q.norm = 1.0 / idcg
        return Q.norm
    if metric == _ERR:
        # p_r = cnt[r] 2^pre[r] (mantissa, integer exponent: no underflow at any label scale); val[r] = u_r =
        # w_r - E_{r+1}, E_r = sum_{t>=r} R_t w_t prod_{r<=v<t} x_v (x = 1 - R) from E_r = R_r w_r + x_r E_{r+1}
        Q.cnt[0] = 0.5
        Q.pre[0] = 1.0
        suffix = 0.0
        for r in range(n - 1, -1, -1):
            y_r = y[ord[r]]
            w = 1.0 / (r + 1.0) if r < k else 0.0
            Q.val[r] = w - suffix
            suffix = err_R(y_r, max_rel) * w + err_x(y_r, max_rel) * suffix
        for r in range(n - 1):
            x = err_x(y[ord[r]], max_rel)
            if x > 0.0:
                mx = frexp(x, &ex)
                mm = frexp(Q.cnt[r] * mx, &em)
                Q.cnt[r + 1] = mm
                Q.pre[r + 1] = Q.pre[r] + ex + em
            else:
                Q.cnt[r + 1] = Q.cnt[r]
                Q.pre[r + 1] = Q.pre[r] + ZERO_FACTOR_EXPONENT
    else:  # AP: cnt[r] = relevant at positions <= r; pre[r] = sum_{t<r relevant} 1/(t+1)
        Q.pre[0] = 0.0
        for r in range(n):
            n_rel = n_rel + (1.0 if y[ord[r]] > threshold else 0.0)
            Q.cnt[r] = n_rel
            Q.pre[r + 1] = Q.pre[r] + (1.0 / (r + 1.0) if y[ord[r]] > threshold else 0.0)
        if n_rel == 0.0 or n_rel == n:
            return 0.0
    for p in range(n):  # per block: the sums over its positions of the terms in a (upper, a < T) and in b (lower)
        if Q.bst[ord[p]] != p:
            continue
        m = Q.bsz[ord[p]]
        cT = Q.bct[ord[p]]
        x0 = x1 = x2 = x3 = x4 = 0.0
        if metric == _ERR:  # 0 R, 1 sum_{a<T} x^(a-p) u_a, 2 sum_b x^(b-p+1) u_b (x = 1 - R: the block's label)
            x0 = err_R(y[ord[p]], max_rel)
            x = err_x(y[ord[p]], max_rel)
            g = 1.0
            for r in range(p, p + m):
                if r - p < cT:
                    x1 = x1 + g * Q.val[r]
                g = g * x
                x2 = x2 + g * Q.val[r]
            x3 = x
        else:  # AP: 0 sum_{a<T} c_a/(a+1), 1 sum_{a<T} (c_a+1)/(a+1), 2 sum_{a<T} pre[a+1], 3 sum c_b/(b+1), 4 pre[b]
            for r in range(p, p + m):
                if r - p < cT:
                    x0 = x0 + Q.cnt[r] / (r + 1.0)
                    x1 = x1 + (Q.cnt[r] + 1.0) / (r + 1.0)
                    x2 = x2 + Q.pre[r + 1]
                x3 = x3 + Q.cnt[r] / (r + 1.0)
                x4 = x4 + Q.pre[r]
        for r in range(p, p + m):
            t = ord[r]
            Q.f[NF * t] = x0
            Q.f[NF * t + 1] = x1
            Q.f[NF * t + 2] = x2
            Q.f[NF * t + 3] = x3
            Q.f[NF * t + 4] = x4
    Q.norm = n_rel if metric == _AP else 1.0
    return Q.norm


cdef inline double fast_weight(const QueryRef* Q, intp_t a, intp_t b, int metric) noexcept nogil:
    """pair_weight for NDCG and RankNet, rows a and b (either label order) of different labels: one tie group
    (AVERAGE), else |g_a - g_b| (mean_{u in A, u<T} D_u - P(u<T) mean_B D) / IDCG, A the upper block."""
    cdef const double* fa = Q.f + NF * a
    cdef const double* fb = Q.f + NF * b
    cdef const double* fu
    cdef const double* fl
    cdef double c
    cdef bint up
    if Q.bst[a] == Q.bst[b]:
        c = fa[4]
    else:  # the upper block's fields and the lower's, selected without a branch (which block is above is random)
        up = Q.bst[a] < Q.bst[b]
        fu = fa if up else fb
        fl = fb if up else fa
        c = fu[2] - fu[3] * fl[1] if metric == _NDCG else fu[3]
    return fabs(fa[0] - fb[0]) * c * Q.norm if metric == _NDCG else c


cdef inline double pair_weight(const QueryRef* Q, const double* y, intp_t i, intp_t j, int metric, intp_t k,
                               intp_t truncation, double threshold) noexcept nogil:
    """|dZ_ij| of the pair y_i > y_j of a query ranked by query_reference (the expectation over the orders the
    tie rule leaves open; module docstring)."""
    cdef intp_t u, l, a, b, nA, nB, cA
    cdef const double* fu
    cdef const double* fl
    cdef double S, mid, wa, wb, delta
    if metric == _RANKNET or metric == _NDCG:
        return fast_weight(Q, i, j, metric)
    if metric == _AP and (y[i] > threshold) == (y[j] > threshold):
        return 0.0
    if metric == _AP and Q.bsz[i] == 1 and Q.bsz[j] == 1:  # two single rows (no tie): the swap of a < b
        a = min(Q.pos[i], Q.pos[j])
        b = max(Q.pos[i], Q.pos[j])
        if truncation > 0 and a >= truncation:
            return 0.0
        mid = Q.pre[b] - Q.pre[a + 1]
        if a == Q.pos[i]:  # the relevant one (i) above
            delta = (Q.cnt[b] / (b + 1.0) - Q.cnt[a] / (a + 1.0) - mid) / Q.norm
        else:
            delta = ((Q.cnt[a] + 1.0) / (a + 1.0) + mid - Q.cnt[b] / (b + 1.0)) / Q.norm
        return fabs(delta)
    # blocks A (above) and B (below) (single rows or not): the mean over their positions (block sums)
    if Q.bst[i] < Q.bst[j]:
        u = i
        l = j
    else:
        u = j
        l = i
    fu = Q.f + NF * u
    fl = Q.f + NF * l
    nA = Q.bsz[u]
    nB = Q.bsz[l]
    cA = Q.bct[u]
    if metric == _AP:
        if u == i:
            S = (cA * fl[3] - nB * fu[0]) - (cA * fl[4] - nB * fu[2])
        else:
            S = (nB * fu[1] + (cA * fl[4] - nB * fu[2])) - cA * fl[3]
        return fabs(S) / (<double> nA * nB) / Q.norm
    # ERR: dERR(a, b) = p_a (R_B - R_A) (u_a - x_B prod_{a<t<b} x_t u_b), summed over a in A (a < T), b in B:
    # p_a prod_{a<t<=b} x_t = p_pA prod_{pA<t<pB} x_t x_B^(b-pB+1) for every a in A (the module docstring)
    a = Q.bst[u]
    b = Q.bst[l]
    if cA == 0 or a >= k:
        return 0.0
    wa = scaled(Q.cnt[a], Q.pre[a])  # p_pA
    wb = scaled(Q.cnt[a] * Q.cnt[b] / Q.cnt[a + 1], Q.pre[a] + Q.pre[b] - Q.pre[a + 1])  # p_pA prod_{pA<t<pB} x_t
    S = (fl[0] - fu[0]) * (nB * wa * fu[1] - cA * wb * fl[2])
    return fabs(S) / (<double> nA * nB)


cdef inline intp_t weighted_top(const QueryRef* Q, intp_t n, int metric, intp_t k, intp_t truncation) noexcept nogil:
    """u: the positions 0..u-1 of the blocks that start before L = min(k, truncation) (NDCG, ERR) or L =
    truncation (RankNet, MAP); n without a cut-off. A pair whose upper block starts at L or below has |dZ| = 0
    (both positions beyond k: D = 0, w = 0; upper beyond the truncation: excluded), so every pair of nonzero
    weight has a row among them: O(u n) pairs instead of O(n^2). A block straddling L is kept whole (its pairs'
    expectations count the share of its positions before L)."""
    cdef intp_t L = truncation if 0 < truncation < n else n
    cdef intp_t t
    if metric == _NDCG or metric == _ERR:
        L = min(L, k)
    if L >= n:
        return n
    if L <= 0:
        return 0
    t = Q.ord[L - 1]
    return Q.bst[t] + Q.bsz[t]


cdef inline double pair_rho(double exh, double exl, double x, double* rho1) noexcept nogil:
    """rho = 1 / (1 + exp(-x)) and 1 - rho (into rho1), x = sigma (s_l - s_h) (the lower-labelled row's score less
    the higher's), from ex = exp(sigma s - max) (no exponential per pair); a gap of hundreds (an ex below TINY):
    one exponential of -|x| (no overflow, no 0/0)."""
    cdef double inv_sum
    if exh > TINY and exl > TINY:
        inv_sum = 1.0 / (exh + exl)
        rho1[0] = exh * inv_sum
        return exl * inv_sum
    return pair_sigmoid(x, rho1)


cdef inline double pair_cost(double exh, double exl, double x) noexcept nogil:
    """log(1 + exp(x)), x = sigma (s_l - s_h), as pair_rho."""
    if exh > TINY and exl > TINY:
        return log1p(exl / exh)
    return log1pexp(x)


cdef inline double weight_of(const QueryRef* Q, const double* y, intp_t a, intp_t b, int metric, intp_t k,
                             intp_t truncation, double threshold) noexcept nogil:
    """|dZ| of the pair of rows a and b (either label order); 0 for equal labels (not a pair)."""
    if y[a] == y[b]:
        return 0.0
    if metric == _NDCG or metric == _RANKNET:
        return fast_weight(Q, a, b, metric)
    if y[a] > y[b]:
        return pair_weight(Q, y, a, b, metric, k, truncation, threshold)
    return pair_weight(Q, y, b, a, metric, k, truncation, threshold)


cdef inline intp_t pair_range(const QueryRef* Q, const double* y, intp_t r, intp_t u, intp_t n, intp_t* lo_end,
                              intp_t* a, const intp_t** cand) noexcept nogil:
    """The pairs of the r-th row visited: row a and the rows cand[0..count) (count returned; cand NULL: rows
    0..count-1). Without a cut-off (u = n), rows in label order: row r and the rows of lower labels (lo_end);
    with one, positions: the row at position r < u and every row below it."""
    if u == n:
        if r > 0 and y[r] != y[r - 1]:
            lo_end[0] = r
        a[0] = r
        cand[0] = NULL
        return lo_end[0]
    a[0] = Q.ord[r]
    cand[0] = Q.ord + r + 1
    return n - r - 1


cdef double top_pairs(const QueryRef* Q, const double* s, const double* y, Weights W, intp_t n, intp_t u,
                      int metric, double sigma, double top, bint norm, bint with_cost, double* lam, double* hess,
                      double* P, double* total) noexcept nogil:
    """query_pairs for NDCG and RankNet when a cut-off leaves u < n top positions. The rows, in position order,
    are grouped into runs of equal score, label and block: interchangeable rows, whose pairs with any other row
    are equal, so a run counts once with its multiplicity (LambdaMART's first rounds, where few scores differ,
    cost O(runs above L x runs) instead of O(L n)); a pair inside a run has equal labels (weight 0). The runs'
    values go into consecutive arrays (P: NX n doubles), so that the inner loop reads and writes consecutive
    memory with no branch on the labels (a pair of equal labels adds 0: equal gains for NDCG, a 0/1 factor for
    RankNet). Returns the cost (0 unless ``with_cost``), S = 2 sum |lambda_ij| into total (NULL: not needed).

    Weights (Weighted W.w) do not split the runs: a pair of runs (h preferred, l) weighs W_h m_l in all (W the
    sum of a run's weights, m its rows); each row t of l gets the pair term times W_h, each row t of h the term
    times m_l times its own weight w_t, kept per unit of weight (Plw, Phw) and multiplied by w_t at the end."""
    cdef double* Ps = P            # per run: score
    cdef double* Pe = P + n        # exp(sigma s - top)
    cdef double* Py = P + 2 * n    # label
    cdef double* Pg = P + 3 * n    # NDCG gain
    cdef double* Pd = P + 4 * n    # NDCG mean discount of the block
    cdef double* Pb = P + 5 * n    # first position of the block
    cdef double* Pm = P + 6 * n    # rows in the run
    cdef double* Pt = P + 7 * n    # its first row
    cdef double* Pl = P + 8 * n    # lambda of each of its rows
    cdef double* Ph = P + 9 * n    # weight of each of its rows
    cdef double* Pr = P + 10 * n   # per position: its run
    cdef double* Pw = P + 11 * n   # weighted: the sum of the run's weights
    cdef double* Plw = P + 12 * n  # weighted: lambda of each row of the run per unit of its weight
    cdef double* Phw = P + 13 * n  # weighted: its weight (hessian) per unit of its weight
    cdef intp_t r, c, t, a, runs = 0, top_runs = 0
    cdef double ya, sa, ea, ga, ba, ma, fa2, fa3, fa4, yb, eb, eh, el, x, delta, rho, rho1, g, h, lam_a, hess_a
    cdef double wa, lamw_a, hessw_a, cost, pairs
    cdef double loss = 0.0, qn = Q.norm
    cdef bint ndcg = metric == _NDCG
    for r in range(n):
        t = Q.ord[r]
        if runs == 0 or s[t] != Ps[runs - 1] or y[t] != Py[runs - 1] or Q.bst[t] != Pb[runs - 1]:
            Ps[runs] = s[t]
            Pe[runs] = exp(sigma * s[t] - top)
            Py[runs] = y[t]
            Pg[runs] = Q.f[NF * t] if ndcg else 0.0
            Pd[runs] = Q.f[NF * t + 1] if ndcg else 0.0
            Pb[runs] = <double> Q.bst[t]
            Pm[runs] = 0.0
            Pt[runs] = <double> t
            Pl[runs] = 0.0
            Ph[runs] = 0.0
            if Weights is Weighted:
                Pw[runs] = 0.0
                Plw[runs] = 0.0
                Phw[runs] = 0.0
            runs += 1
        Pm[runs - 1] += 1.0
        if Weights is Weighted:
            Pw[runs - 1] += W.w[t]
        Pr[r] = runs - 1
        if r < u:  # u ends a block, so a run
            top_runs = runs
    for a in range(top_runs):
        t = <intp_t> Pt[a]
        ya, sa, ea, ga, ba, ma = Py[a], Ps[a], Pe[a], Pg[a], Pb[a], Pm[a]
        fa2, fa3, fa4 = Q.f[NF * t + 2], Q.f[NF * t + 3], Q.f[NF * t + 4]
        wa = Pw[a] if Weights is Weighted else ma
        lam_a = 0.0
        hess_a = 0.0
        lamw_a = 0.0
        hessw_a = 0.0
        for c in range(a + 1, runs):
            yb = Py[c]
            # pair_weight with the upper block at run a: the same block (AVERAGE) f4, else f2 - f3 D_B (NDCG)
            if ndcg:
                delta = fabs(ga - Pg[c]) * (fa4 if Pb[c] == ba else fa2 - fa3 * Pd[c]) * qn
            else:
                delta = (fa4 if Pb[c] == ba else fa3) * (1.0 if ya != yb else 0.0)
            if norm:
                delta = delta / (0.01 + fabs(sa - Ps[c]))
            # the higher-labelled row h, the lower l: rho = sigmoid(sigma (s_l - s_h)), cost log(1 + e^x)
            eb = Pe[c]
            eh = ea if ya > yb else eb
            el = eb if ya > yb else ea
            x = sigma * (Ps[c] - sa) if ya > yb else sigma * (sa - Ps[c])
            rho = pair_rho(eh, el, x, &rho1)
            if Weights is Unweighted:
                if with_cost:
                    loss = loss + delta * pair_cost(eh, el, x) * (ma * Pm[c])
                g = sigma * rho * delta
                h = sigma * sigma * rho * rho1 * delta
                if total != NULL:
                    total[0] += 2.0 * g * (ma * Pm[c])
                g = g * (1.0 - 2.0 * (ya <= yb))  # -g below (exactly), without a branch: the labels are random
                lam_a -= g * Pm[c]  # dC/ds_h = -g, dC/ds_l = +g, per pair of rows
                Pl[c] += g * ma
                hess_a += h * Pm[c]
                Ph[c] += h * ma
            else:
                g = sigma * rho * delta
                h = sigma * sigma * rho * rho1 * delta
                if ya > yb:  # run a preferred: each row of a by its own weight, each row of c by W_a
                    pairs = wa * Pm[c]
                    lamw_a -= g * Pm[c]
                    hessw_a += h * Pm[c]
                    Pl[c] += g * wa
                    Ph[c] += h * wa
                else:  # run c preferred (equal labels: g = h = 0)
                    pairs = Pw[c] * ma
                    lam_a += g * Pw[c]
                    hess_a += h * Pw[c]
                    Plw[c] -= g * ma
                    Phw[c] += h * ma
                if with_cost:
                    loss = loss + delta * pair_cost(eh, el, x) * pairs
                if total != NULL:
                    total[0] += 2.0 * g * pairs
        Pl[a] += lam_a
        Ph[a] += hess_a
        if Weights is Weighted:
            Plw[a] += lamw_a
            Phw[a] += hessw_a
    for r in range(n):
        t = Q.ord[r]
        c = <intp_t> Pr[r]
        if Weights is Unweighted:
            lam[t] = Pl[c]
            hess[t] = Ph[c]
        else:
            lam[t] = Pl[c] + W.w[t] * Plw[c]
            hess[t] = Ph[c] + W.w[t] * Phw[c]
    return loss


cdef inline double label_pairs(const QueryRef* Q, const double* s, const double* y, intp_t n, bint ndcg,
                               double sigma, bint norm, bint with_cost, double* lam, double* hess, const double* ex,
                               double* total) noexcept nogil:
    """query_pairs' loop without a cut-off (every pair of different labels, in label order), unweighted, for NDCG
    (ndcg) and RankNet, with the metric known (the caller passes a constant): the same operations in the same
    order as the general loop, so the same bits, with its branches on the metric, the weights and the label order
    taken out (row a's candidates b < lo_end all have lower labels: a is the preferred row h)."""
    cdef intp_t r, b, lo_end = 0
    cdef const double* fa
    cdef const double* fb
    cdef const double* fu
    cdef const double* fl
    cdef const intp_t* bst = Q.bst
    cdef intp_t ba
    cdef double loss = 0.0, qn = Q.norm, c, delta, x, rho, rho1, g, h, sa, exa, exl, inv_sum, lam_a, hess_a
    cdef double tot = total[0]
    cdef bint up
    for r in range(1, n):
        if y[r] != y[r - 1]:
            lo_end = r
        if lo_end == 0:
            continue
        fa = Q.f + NF * r
        ba = bst[r]
        sa = s[r]
        exa = ex[r]
        lam_a = 0.0
        hess_a = 0.0
        for b in range(lo_end):
            fb = Q.f + NF * b
            # fast_weight
            if bst[b] == ba:
                c = fa[4]
            else:
                up = ba < bst[b]
                fu = fa if up else fb
                fl = fb if up else fa
                c = fu[2] - fu[3] * fl[1] if ndcg else fu[3]
            delta = fabs(fa[0] - fb[0]) * c * qn if ndcg else c
            if delta == 0.0:
                continue
            if norm:
                delta = delta / (0.01 + fabs(sa - s[b]))
            exl = ex[b]
            x = sigma * (s[b] - sa)
            if exa > TINY and exl > TINY:  # pair_rho
                inv_sum = 1.0 / (exa + exl)
                rho1 = exa * inv_sum
                rho = exl * inv_sum
            else:
                rho = pair_sigmoid(x, &rho1)
            if with_cost:
                loss = loss + delta * pair_cost(exa, exl, x)
            g = sigma * rho * delta
            h = sigma * sigma * rho * rho1 * delta
            tot = tot + 2.0 * g
            lam_a -= g
            lam[b] += g
            hess_a += h
            hess[b] += h
        lam[r] += lam_a
        hess[r] += hess_a
    total[0] = tot
    return loss


cdef double query_pairs(const QueryRef* Q, const double* s, const double* y, Weights W, intp_t n, int metric,
                        intp_t k, intp_t truncation, double sigma, double threshold, bint norm, bint with_cost,
                        double* lam, double* hess, double* ex) noexcept nogil:
    """Lambdas and weights of one query ranked in Q, at the scores s (which need not be Q's), into lam and hess;
    returns its cost (0 unless ``with_cost``). W: the rows' sample weights, or none (module docstring). ``norm``:
    LightGBM's lambdarank_norm (lambdas()). Only the pairs with a row among the top positions weighted_top are
    visited: O(k n) with a cut-off k."""
    cdef intp_t t, r, c, a, b, u, lo_end = 0, count, rows
    cdef const intp_t* cand
    cdef double loss = 0.0, delta, x, rho, rho1, top = -INFINITY, low = INFINITY, total = 0.0, factor
    cdef double g, h, sa, exa, ya, exh, exl, lam_a, hess_a
    for t in range(n):
        lam[t] = 0.0
        hess[t] = 0.0
    if Q.norm == 0.0:
        return 0.0
    # ex[t] = exp(sigma s_t - max): then rho = ex_j / (ex_i + ex_j) needs no exponential per pair
    for t in range(n):
        top = max(top, sigma * s[t])
        low = min(low, sigma * s[t])
    u = weighted_top(Q, n, metric, k, truncation)
    if u < n and (metric == _NDCG or metric == _RANKNET):
        loss = top_pairs(Q, s, y, W, n, u, metric, sigma, top, norm and top > low, with_cost, lam, hess, ex,
                         &total if norm else NULL)
        u = 0  # done
    else:
        for t in range(n):
            ex[t] = exp(sigma * s[t] - top)
        if Weights is Unweighted and u == n and (metric == _NDCG or metric == _RANKNET):
            if metric == _NDCG:
                loss = label_pairs(Q, s, y, n, True, sigma, norm and top > low, with_cost, lam, hess, ex, &total)
            else:
                loss = label_pairs(Q, s, y, n, False, sigma, norm and top > low, with_cost, lam, hess, ex, &total)
            u = 0  # done
    for r in range(u):
        count = pair_range(Q, y, r, u, n, &lo_end, &a, &cand)
        # row a's values in registers: the stores into lam and hess below could alias them otherwise
        sa = s[a]
        exa = ex[a]
        ya = y[a]
        lam_a = 0.0
        hess_a = 0.0
        for c in range(count):
            b = cand[c] if cand != NULL else c
            delta = weight_of(Q, y, a, b, metric, k, truncation, threshold)
            if Weights is Weighted:  # the preferred row's weight
                delta = delta * (W.w[a] if ya > y[b] else W.w[b])
            if delta == 0.0:  # equal labels, or e.g. both beyond k in a block straddling it, or truncated
                continue
            if norm and top > low:  # LightGBM's lambdarank_norm: the pair's weight over its score distance
                delta = delta / (0.01 + fabs(sa - s[b]))
            # the higher-labelled row h, the lower l: rho = sigmoid(sigma (s_l - s_h)), cost log(1 + e^x)
            if ya > y[b]:
                exh, exl, x = exa, ex[b], sigma * (s[b] - sa)
            else:
                exh, exl, x = ex[b], exa, sigma * (sa - s[b])
            rho = pair_rho(exh, exl, x, &rho1)
            if with_cost:
                loss = loss + delta * pair_cost(exh, exl, x)
            g = sigma * rho * delta
            h = sigma * sigma * rho * rho1 * delta
            total = total + 2.0 * g
            if ya < y[b]:
                g = -g
            lam_a -= g  # dC/ds_h = -g, dC/ds_l = +g
            lam[b] += g
            hess_a += h
            hess[b] += h
        lam[a] += lam_a
        hess[a] += hess_a
    if norm and total > 0.0:  # ... and the query's lambdas scaled by log2(1 + S) / S, S = 2 sum |lambda_ij|
        factor = log2(1.0 + total) / total
        for t in range(n):
            lam[t] *= factor
            hess[t] *= factor
    return loss


cdef void query_hess_vec(const QueryRef* Q, const double* s, const double* y, Weights W, intp_t n, int metric,
                         intp_t k, intp_t truncation, double sigma, double threshold, const double* v, double* out,
                         double* ex) noexcept nogil:
    """out = H v on one query: each pair adds c_i |dZ_ij| sigma^2 rho (1 - rho) (v_i - v_j) to out_i, subtracts
    it from out_j (the pairs of query_pairs, O(k n) with a cut-off; c_i the preferred row's weight in W, 1 when
    unweighted)."""
    cdef intp_t t, r, c, a, b, u, lo_end = 0, count
    cdef const intp_t* cand
    cdef double top = -INFINITY, delta, x, rho, rho1, w, exa, ya, sa, va, out_a
    for t in range(n):
        out[t] = 0.0
    if Q.norm == 0.0:
        return
    for t in range(n):
        top = max(top, sigma * s[t])
    for t in range(n):
        ex[t] = exp(sigma * s[t] - top)
    u = weighted_top(Q, n, metric, k, truncation)
    for r in range(u):
        count = pair_range(Q, y, r, u, n, &lo_end, &a, &cand)
        sa = s[a]
        exa = ex[a]
        ya = y[a]
        va = v[a]
        out_a = 0.0
        for c in range(count):
            b = cand[c] if cand != NULL else c
            delta = weight_of(Q, y, a, b, metric, k, truncation, threshold)
            if Weights is Weighted:
                delta = delta * (W.w[a] if ya > y[b] else W.w[b])
            if delta == 0.0:
                continue
            if ya > y[b]:
                rho = pair_rho(exa, ex[b], sigma * (s[b] - sa), &rho1)
            else:
                rho = pair_rho(ex[b], exa, sigma * (sa - s[b]), &rho1)
            w = sigma * sigma * rho * rho1 * delta * (va - v[b])  # symmetric in the pair's label order
            out_a += w
            out[b] -= w
        out[a] += out_a


cdef inline void set_ref(QueryRef* Q, intp_t* ib, double* fb, intp_t n_total, intp_t off, intp_t q) noexcept nogil:
    """Q's pointers into the arrays of a whole data set (5 x n_total ints, (NF + 2) x n_total + n_q doubles, the
    pre arrays n + 1 long each: query q's at off + q)."""
    Q.pos = ib + off
    Q.bst = ib + n_total + off
    Q.bsz = ib + 2 * n_total + off
    Q.bct = ib + 3 * n_total + off
    Q.ord = ib + 4 * n_total + off
    Q.f = fb + NF * off
    Q.val = fb + NF * n_total + off
    Q.cnt = fb + (NF + 1) * n_total + off
    Q.pre = fb + (NF + 2) * n_total + off + q


cdef inline void set_scratch(QueryRef* Q, intp_t* ib, double* fb, intp_t m) noexcept nogil:
    """Q's pointers into one thread's scratch for queries of at most m rows (the same layout, one query)."""
    set_ref(Q, ib, fb, m, 0, 0)


cdef double lambdas_query(const double* s, const double* y, const double* w, const intp_t* tie, intp_t n, int metric,
                          intp_t k,
                          intp_t truncation, double sigma, double max_rel, double threshold, int ties, bint norm,
                          bint with_cost, double* lam, double* hess, KeyIndex* rec, intp_t* ib,
                          double* fb, double* ex, intp_t m) noexcept nogil:
    cdef QueryRef Q
    set_scratch(&Q, ib, fb, m)
    query_reference(s, y, tie, n, metric, k, truncation, max_rel, threshold, ties, rec, &Q)
    if w == NULL:
        return query_pairs(&Q, s, y, unweighted(), n, metric, k, truncation, sigma, threshold, norm, with_cost, lam,
                           hess, ex)
    return query_pairs(&Q, s, y, weighted(w), n, metric, k, truncation, sigma, threshold, norm, with_cost, lam, hess,
                       ex)


cdef double lambdas_query_ordered(const double* s_all, const intp_t* order, const double* y, const double* w,
                                  const intp_t* tie, intp_t n, int metric, intp_t k, intp_t truncation, double sigma,
                                  double max_rel, double threshold, int ties, bint norm, bint with_cost,
                                  double* lam_all, double* hess_all, KeyIndex* rec, intp_t* ib, double* fb,
                                  double* ex, double* sq, intp_t m) noexcept nogil:
    """lambdas_query on the rows order[0..n) of s_all, the lambdas and weights written to those rows of lam_all and
    hess_all (sq: 3 m scratch doubles)."""
    cdef intp_t t
    cdef double loss
    for t in range(n):
        sq[t] = s_all[order[t]]
    loss = lambdas_query(sq, y, w, tie, n, metric, k, truncation, sigma, max_rel, threshold, ties, norm, with_cost,
                         sq + m, sq + 2 * m, rec, ib, fb, ex, m)
    for t in range(n):
        lam_all[order[t]] = sq[m + t]
        hess_all[order[t]] = sq[2 * m + t]
    return loss


def _positions(const double[::1] s, const intp_t[::1] tie=None, bint counting=True, bint radix=False):
    """For tests: the positions query_reference gives the rows of one query (decreasing score, equal scores by
    increasing row or tie), by counting (small_positions, any length) or by the introsort (counting False) or the
    radix sort (radix True)."""
    cdef intp_t n = s.shape[0], t, r
    cdef const intp_t* tie_p = &tie[0] if tie is not None and n else NULL
    pos = np.zeros(n, dtype=np.int64)
    ord_ = np.zeros(n, dtype=np.int64)
    cdef intp_t[::1] P = pos, O = ord_
    cdef double[::1] T = np.zeros(max(n, 1))
    cdef KeyIndex[::1] rec = np.zeros(max(2 * n, 1), dtype=[("key", np.float64), ("index", np.int64)])
    cdef KeyIndex* srt = &rec[0]
    if tie is not None and tie.shape[0] != n:
        raise ValueError("_positions: tie must have one entry per row")
    if n == 0:
        return pos
    if counting:
        if not small_positions(&s[0], tie_p, n, &P[0], &O[0], &T[0]):
            return None
        return pos
    for t in range(n):
        rec[t].key = -s[t]
        rec[t].index = t if tie_p == NULL else tie_p[t]
        if tie_p != NULL:
            O[tie_p[t]] = t
    if radix:
        srt = radix_sort(&rec[0], &rec[n], n)
    else:
        introsort(&rec[0], n)
    for r in range(n):
        t = srt[r].index if tie_p == NULL else O[srt[r].index]
        P[t] = r
    return pos


def _check_codes(int metric, int ties):
    if metric < _RANKNET or metric > _AP:
        raise ValueError(f"unknown metric code {metric}")
    if ties < _PESSIMISTIC or ties > _INPUT:
        raise ValueError(f"unknown ties code {ties}")
    if ties == _AVERAGE and (metric == _ERR or metric == _AP):
        raise ValueError("ties='average' is available for NDCG and RankNet only (ERR and MAP: 'pessimistic')")


def lambdas(const double[::1] s, const double[::1] y, const intp_t[::1] offsets, int metric, intp_t k,
            intp_t truncation, double sigma, double max_rel, double threshold, double[::1] lam, double[::1] hess,
            intp_t parallel_min_rows=-1, bint with_cost=True, bint norm=False, const intp_t[::1] tie=None,
            int ties=PESSIMISTIC, const double[::1] weight=None, const intp_t[::1] order=None):
    """Lambdas and weights of every query (rows offsets[q]:offsets[q+1], labels ascending inside a query; module
    docstring) into lam and hess; returns the total cost (0 unless ``with_cost``: a log per pair less).
    k <= 0 means every position. ``ties``: PESSIMISTIC or AVERAGE (module docstring); ``tie`` (optional, then
    INPUT): per row a distinct rank inside its query (0 .. n_q - 1) that orders equal scores (e.g. the input
    order, as LightGBM). ``norm``: LightGBM's lambdarank_norm, each pair's |dZ| divided by 0.01 + |s_i - s_j|
    (when the query's scores are not all equal) and the query's lambdas and weights scaled by log2(1 + S) / S,
    S = sum over pairs of 2 sigma rho |dZ| (with the weights: each pair's term times its weight, so that weight 0
    removes the pair from S too). ``weight``: the rows' sample weights (module docstring), None: unweighted.
    ``order`` (optional): s, lam and hess are in another order, the row at sorted position t being order[t] (a
    permutation of 0..n-1, as _Pairs.order): each query's scores are gathered and its lambdas scattered in the
    query loop (the same bits as reordering around the call, without the two passes over n)."""
    cdef intp_t n = s.shape[0], nq = offsets.shape[0] - 1, q, m = 0, tid
    cdef int nt = <int> product_threads(n, nq, parallel_min_rows)
    if y.shape[0] != n or lam.shape[0] != n or hess.shape[0] != n or offsets[nq] != n:
        raise ValueError("lambdas: wrong array sizes")
    cdef const intp_t* ord_p = NULL
    if order is not None:
        if order.shape[0] != n:
            raise ValueError("lambdas: order must have one entry per row")
        ord_p = &order[0] if n else NULL
    cdef const intp_t* tie_p = NULL
    if tie is not None:
        if tie.shape[0] != n:
            raise ValueError("lambdas: tie must have one entry per row")
        tie_p = &tie[0] if n else NULL
        ties = _INPUT
    elif ties == _INPUT:
        raise ValueError("lambdas: ties=INPUT needs the tie array")
    cdef const double* w_p = NULL
    if weight is not None:
        if weight.shape[0] != n:
            raise ValueError("lambdas: weight must have one entry per row")
        w_p = &weight[0] if n else NULL
    _check_codes(metric, ties)
    if k <= 0:
        k = n + 1
    for q in range(nq):
        m = max(m, offsets[q + 1] - offsets[q])
    m = max(m, 1)
    cdef double[::1] loss = np.zeros(max(nq, 1))
    cdef KeyIndex[:, ::1] rec = np.zeros((max(nt, 1), 2 * m), dtype=[("key", np.float64), ("index", np.int64)])
    cdef intp_t[:, ::1] ib = np.zeros((max(nt, 1), 5 * m), dtype=np.int64)  # 5 m QueryRef ints
    # f, val, cnt, pre (m + 1), ex; with order, the query's scores, lambdas and weights (3 m)
    cdef double[:, ::1] fb = np.zeros((max(nt, 1), (NF + 3 + NX + (3 if ord_p != NULL else 0)) * m + 1))
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for q in prange(nq, schedule="dynamic", chunksize=16):
            if ord_p == NULL:
                loss[q] = lambdas_query(&s[offsets[q]], &y[offsets[q]], w_p + offsets[q] if w_p != NULL else NULL,
                                        tie_p + offsets[q] if tie_p != NULL else NULL,
                                        offsets[q + 1] - offsets[q], metric, k, truncation, sigma, max_rel,
                                        threshold, ties, norm, with_cost, &lam[offsets[q]], &hess[offsets[q]],
                                        &rec[tid, 0], &ib[tid, 0], &fb[tid, 0], &fb[tid, (NF + 3) * m + 1], m)
            else:
                loss[q] = lambdas_query_ordered(&s[0], ord_p + offsets[q], &y[offsets[q]],
                                                w_p + offsets[q] if w_p != NULL else NULL,
                                                tie_p + offsets[q] if tie_p != NULL else NULL,
                                                offsets[q + 1] - offsets[q], metric, k, truncation, sigma, max_rel,
                                                threshold, ties, norm, with_cost, &lam[0], &hess[0], &rec[tid, 0],
                                                &ib[tid, 0], &fb[tid, 0], &fb[tid, (NF + 3) * m + 1],
                                                &fb[tid, (NF + 3 + NX) * m + 1], m)
    return float(np.sum(loss))


cdef class Reference:
    """The pair weights |dZ_ij| of the ranking by the reference scores s0 (module docstring), for the convex
    pair-weighted RankNet loss at other scores: ``loss`` (value, gradient and Gauss-Newton diagonal), ``hess_vec``
    (exact Hessian products) and ``pair_weights`` (every pair, for tests). O(n) memory. ``weight``: the rows'
    sample weights (each pair's |dZ_ij| times its preferred row's), None: unweighted."""

    cdef const double[::1] y
    cdef const double[::1] w
    cdef const intp_t[::1] offsets
    cdef intp_t[::1] ib
    cdef double[::1] fb
    cdef double[::1] qnorm
    cdef readonly int metric, ties
    cdef readonly intp_t k, truncation, n, nq, m
    cdef readonly double threshold, max_rel
    cdef intp_t parallel_min_rows

    def __init__(self, const double[::1] s0, const double[::1] y, const intp_t[::1] offsets, int metric, intp_t k,
                 intp_t truncation, double max_rel, double threshold, int ties=PESSIMISTIC,
                 const intp_t[::1] tie=None, intp_t parallel_min_rows=-1, const double[::1] weight=None):
        cdef intp_t n = s0.shape[0], nq = offsets.shape[0] - 1, q, m = 0, tid, mm
        cdef int nt = <int> product_threads(n, nq, parallel_min_rows)
        cdef const intp_t* tie_p = NULL
        cdef QueryRef Q
        if y.shape[0] != n or offsets[nq] != n:
            raise ValueError("Reference: wrong array sizes")
        if tie is not None:
            if tie.shape[0] != n:
                raise ValueError("Reference: tie must have one entry per row")
            tie_p = &tie[0] if n else NULL
            ties = _INPUT
        elif ties == _INPUT:
            raise ValueError("Reference: ties=INPUT needs the tie array")
        _check_codes(metric, ties)
        if weight is not None and weight.shape[0] != n:
            raise ValueError("Reference: weight must have one entry per row")
        self.y, self.offsets, self.metric, self.ties, self.w = y, offsets, metric, ties, weight
        self.k = k if k > 0 else n + 1
        self.truncation, self.threshold, self.max_rel = truncation, threshold, max_rel
        self.n, self.nq, self.parallel_min_rows = n, nq, parallel_min_rows
        for q in range(nq):
            m = max(m, offsets[q + 1] - offsets[q])
        self.m = mm = max(m, 1)
        self.ib = np.zeros(5 * n, dtype=np.int64)
        self.fb = np.zeros((NF + 3) * n + nq + 1)  # f (NF n), val, cnt, pre (n + nq)
        self.qnorm = np.zeros(max(nq, 1))
        cdef KeyIndex[:, ::1] rec = np.zeros((max(nt, 1), 2 * mm), dtype=[("key", np.float64), ("index", np.int64)])
        cdef intp_t* ibp = &self.ib[0] if n else NULL
        cdef double* fbp = &self.fb[0]
        cdef intp_t kk = self.k
        cdef double[::1] qnorm = self.qnorm
        tid = 0
        with nogil, parallel(num_threads=nt):
            tid = threadid()
            for q in prange(nq, schedule="dynamic", chunksize=16):
                qnorm[q] = _reference_query(&s0[offsets[q]], &y[offsets[q]],
                                                 tie_p + offsets[q] if tie_p != NULL else NULL,
                                                 offsets[q + 1] - offsets[q], metric, kk, truncation, max_rel,
                                                 threshold, ties, &rec[tid, 0], ibp, fbp, n,
                                                 offsets[q], q)

    def same_weights(self, Reference other):
        """True when ``other`` has the same blocks (hence the same pair weights) on the same data."""
        return (self.n == other.n and self.metric == other.metric and self.ties == other.ties
                and np.array_equal(np.asarray(self.ib)[self.n:3 * self.n], np.asarray(other.ib)[other.n:3 * other.n])
                and np.array_equal(np.asarray(self.qnorm), np.asarray(other.qnorm)))

    def active_queries(self):
        """Number of queries with a pair of nonzero weight (norm > 0)."""
        return int(np.count_nonzero(np.asarray(self.qnorm)[:self.nq]))

    def loss(self, const double[::1] s, double sigma, double[::1] lam, double[::1] hess, bint with_cost=True):
        """sum_P |dZ_ij| log(1 + exp(-sigma (s_i - s_j))) (0 unless ``with_cost``), its gradient in s into lam and
        the Gauss-Newton diagonal into hess."""
        cdef intp_t n = self.n, nq = self.nq, q, tid, m = self.m
        cdef int nt = <int> product_threads(n, nq, self.parallel_min_rows)
        if s.shape[0] != n or lam.shape[0] != n or hess.shape[0] != n:
            raise ValueError("Reference.loss: wrong array sizes")
        cdef double[::1] loss = np.zeros(max(nq, 1))
        cdef double[:, ::1] ex = np.zeros((max(nt, 1), NX * m))
        cdef intp_t* ibp = &self.ib[0] if n else NULL
        cdef double* fbp = &self.fb[0]
        cdef const double* yp = &self.y[0] if n else NULL
        cdef const double* wp = &self.w[0] if self.w is not None and n else NULL
        cdef const intp_t[::1] off = self.offsets
        cdef const double[::1] qnorm = self.qnorm
        cdef int metric = self.metric
        cdef intp_t k = self.k, truncation = self.truncation
        cdef double threshold = self.threshold
        tid = 0
        with nogil, parallel(num_threads=nt):
            tid = threadid()
            for q in prange(nq, schedule="dynamic", chunksize=16):
                loss[q] = _loss_query(&s[off[q]], yp, wp, ibp, fbp, n, off[q], q, off[q + 1] - off[q], qnorm[q],
                                      metric, k, truncation, sigma, threshold, with_cost, &lam[off[q]], &hess[off[q]],
                                      &ex[tid, 0])
        return float(np.sum(loss))

    def hess_vec(self, const double[::1] s, double sigma, const double[::1] v, double[::1] out):
        """out = H v, H the Hessian in the scores of the weighted loss at s."""
        cdef intp_t n = self.n, nq = self.nq, q, tid, m = self.m
        cdef int nt = <int> product_threads(n, nq, self.parallel_min_rows)
        if s.shape[0] != n or v.shape[0] != n or out.shape[0] != n:
            raise ValueError("Reference.hess_vec: wrong array sizes")
        cdef double[:, ::1] ex = np.zeros((max(nt, 1), m))
        cdef intp_t* ibp = &self.ib[0] if n else NULL
        cdef double* fbp = &self.fb[0]
        cdef const double* yp = &self.y[0] if n else NULL
        cdef const double* wp = &self.w[0] if self.w is not None and n else NULL
        cdef const intp_t[::1] off = self.offsets
        cdef const double[::1] qnorm = self.qnorm
        cdef int metric = self.metric
        cdef intp_t k = self.k, truncation = self.truncation
        cdef double threshold = self.threshold
        tid = 0
        with nogil, parallel(num_threads=nt):
            tid = threadid()
            for q in prange(nq, schedule="dynamic", chunksize=16):
                _hess_vec_query(&s[off[q]], yp, wp, ibp, fbp, n, off[q], q, off[q + 1] - off[q], qnorm[q], metric,
                                k, truncation, sigma, threshold, &v[off[q]], &out[off[q]], &ex[tid, 0])

    def pair_weights(self):
        """(i, j, w): every pair y_i > y_j of a query (row indices of the data as given, in the kernel's order)
        and its weight |dZ_ij| (times row i's sample weight)."""
        cdef intp_t q, i, j, lo, hi, lo_end, c = 0, total = 0
        cdef QueryRef Q
        for q in range(self.nq):
            lo, hi = self.offsets[q], self.offsets[q + 1]
            lo_end = lo
            for i in range(lo + 1, hi):
                if self.y[i] != self.y[i - 1]:
                    lo_end = i
                total += lo_end - lo
        I = np.empty(total, dtype=np.int64)
        J = np.empty(total, dtype=np.int64)
        W = np.empty(total)
        cdef intp_t[::1] Iv = I, Jv = J
        cdef double[::1] Wv = W
        for q in range(self.nq):
            lo, hi = self.offsets[q], self.offsets[q + 1]
            set_ref(&Q, &self.ib[0], &self.fb[0], self.n, lo, q)
            Q.norm = self.qnorm[q]
            lo_end = lo
            for i in range(lo + 1, hi):
                if self.y[i] != self.y[i - 1]:
                    lo_end = i
                for j in range(lo, lo_end):
                    Iv[c] = i
                    Jv[c] = j
                    Wv[c] = 0.0 if Q.norm == 0.0 else pair_weight(&Q, &self.y[lo], i - lo, j - lo, self.metric,
                                                                   self.k, self.truncation, self.threshold)
                    if self.w is not None:
                        Wv[c] *= self.w[i]
                    c += 1
        return I, J, W


cdef double _reference_query(const double* s, const double* y, const intp_t* tie, intp_t n, int metric, intp_t k,
                             intp_t truncation, double max_rel, double threshold, int ties, KeyIndex* rec,
                             intp_t* ib, double* fb, intp_t n_total, intp_t off,
                             intp_t q) noexcept nogil:
    cdef QueryRef Q
    set_ref(&Q, ib, fb, n_total, off, q)
    return query_reference(s, y, tie, n, metric, k, truncation, max_rel, threshold, ties, rec, &Q)


cdef double _loss_query(const double* s, const double* y, const double* w, intp_t* ib, double* fb, intp_t n_total,
                        intp_t off, intp_t q, intp_t n, double qnorm, int metric, intp_t k, intp_t truncation,
                        double sigma, double threshold, bint with_cost, double* lam, double* hess,
                        double* ex) noexcept nogil:
    cdef QueryRef Q
    set_ref(&Q, ib, fb, n_total, off, q)
    Q.norm = qnorm
    if w == NULL:
        return query_pairs(&Q, s, y + off, unweighted(), n, metric, k, truncation, sigma, threshold, False, with_cost,
                           lam, hess, ex)
    return query_pairs(&Q, s, y + off, weighted(w + off), n, metric, k, truncation, sigma, threshold, False,
                       with_cost, lam, hess, ex)


cdef void _hess_vec_query(const double* s, const double* y, const double* w, intp_t* ib, double* fb, intp_t n_total,
                          intp_t off, intp_t q, intp_t n, double qnorm, int metric, intp_t k, intp_t truncation,
                          double sigma, double threshold, const double* v, double* out, double* ex) noexcept nogil:
    cdef QueryRef Q
    set_ref(&Q, ib, fb, n_total, off, q)
    Q.norm = qnorm
    if w == NULL:
        query_hess_vec(&Q, s, y + off, unweighted(), n, metric, k, truncation, sigma, threshold, v, out, ex)
    else:
        query_hess_vec(&Q, s, y + off, weighted(w + off), n, metric, k, truncation, sigma, threshold, v, out, ex)


cdef inline uint64_t _mix(uint64_t h, uint64_t x) noexcept nogil:
    """One step of a 64-bit hash of a sequence (x through the splitmix64 finaliser, then combined with h)."""
    x = x + <uint64_t> 0x9E3779B97F4A7C15
    x = (x ^ (x >> 30)) * <uint64_t> 0xBF58476D1CE4E5B9
    x = (x ^ (x >> 27)) * <uint64_t> 0x94D049BB133111EB
    x = x ^ (x >> 31)
    return (h ^ x) * <uint64_t> 0x100000001B3 + (h >> 29)


cdef inline uint64_t _bits(double v) noexcept nogil:
    cdef uint64_t b
    v = v + 0.0  # -0.0 -> +0.0
    memcpy(&b, &v, sizeof(double))
    return b


def _dense_row_hashes(const floating[:, :] D, uint64_t[::1] o):
    """row_hashes of a dense X (any strides: C or Fortran order, no copy) in its own precision (a float32 value
    widens to double exactly)."""
    cdef intp_t n = D.shape[0], d = D.shape[1], i, j
    cdef uint64_t h
    with nogil:
        for i in range(n):
            h = <uint64_t> 0xCBF29CE484222325
            for j in range(d):
                if D[i, j] != 0:
                    h = _mix(_mix(h, <uint64_t> j), _bits(<double> D[i, j]))
            o[i] = h


def _sparse_row_hashes(const floating[::1] val, const index_t[::1] ind, const index_t[::1] ptr, uint64_t[::1] o):
    """row_hashes of a CSR X with sorted indices, in its own precision and index width."""
    cdef intp_t n = ptr.shape[0] - 1, i, p
    cdef uint64_t h
    with nogil:
        for i in range(n):
            h = <uint64_t> 0xCBF29CE484222325
            for p in range(ptr[i], ptr[i + 1]):
                if val[p] != 0:
                    h = _mix(_mix(h, <uint64_t> ind[p]), _bits(<double> val[p]))
            o[i] = h


def row_hashes(X):
    """A 64-bit hash per row of X (dense or scipy.sparse) of its non-zero entries (column, value) in column
    order: equal rows, dense or sparse, float32 or float64, explicit zeros or not, get equal hashes. Rows of one
    (query, label) run are put in hash order, so a permutation of the input rows does not change the data the
    kernels see. X is read in its own precision (float32 and float64 data, int32 and int64 indices) and layout:
    no copy unless X is neither dense nor CSR with sorted indices, or has another dtype."""
    import scipy.sparse as sp

    out = np.empty(X.shape[0], dtype=np.uint64)
    if sp.issparse(X):
        C = X if X.format == "csr" else sp.csr_matrix(X)
        if not C.has_sorted_indices:
            C = C.sorted_indices()
        val = C.data if C.data.dtype in (np.float32, np.float64) else C.data.astype(np.float64)
        itype = np.promote_types(C.indices.dtype, C.indptr.dtype)
        if itype not in (np.int32, np.int64):
            itype = np.dtype(np.int64)
        _sparse_row_hashes(np.ascontiguousarray(val), np.ascontiguousarray(C.indices, dtype=itype),
                           np.ascontiguousarray(C.indptr, dtype=itype), out)
    else:
        D = np.asarray(X)
        if D.dtype not in (np.float32, np.float64):
            D = D.astype(np.float64)
        _dense_row_hashes(D, out)
    return out
