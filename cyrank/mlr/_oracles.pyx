"""Separation oracles of MLR (McFee & Lanckriet, "Metric Learning to Rank", ICML 2010,
sections 2.2, 3.2 and 4).

For a query q with relevant set X+ (P points) and irrelevant set X- (N points), and scores
s(i) = <W, phi(q, i)> = -||q - i||_W^2 (higher = closer), an oracle finds the ranking y that maximises

    H(y) = Delta(y*, y) + <W, psi(q, y) - psi(q, y*)>
         = Delta(y*, y) - (2 / (P N)) sum_{i in X+, j in X-, j before i in y} (s(i) - s(j)),

psi the partial-order feature map normalised by P N (eq. 3), so psi(y*) - psi(y) counts every swapped pair
twice. H(y*) = 0, so max_y H >= 0.

Interleavings. Every loss here depends only on which positions hold relevant points, so an optimal y lists
the relevant points by decreasing score r_1 >= ... >= r_P and the irrelevant ones by decreasing score
u_1 >= ... >= u_N (exchange argument, section 4). Such a y is the vector k_1 <= ... <= k_P, k_i = number of
irrelevant points ranked above the i-th relevant point, whose position is i + k_i. With U_k = u_1 + ... + u_k,

    H(k) = Delta(k) + (2 / (P N)) sum_i (U_{k_i} - k_i r_i).

F_i(k) = U_k - k r_i is concave in k with its maximum at c_i = #{j: u_j > r_i}, and c_i is nondecreasing in i.

Losses (Delta = Score(y*) - Score(y), which is 1 - Score(y) whenever the perfect ranking scores 1):
  auc    Score = 1 - (swapped pairs) / (P N); Delta = sum_i k_i / (P N). Per pair: k_i = #{j: u_j > r_i - 1/2}.
         O(P + N) after sorting (Joachims 2005).
  prec@k Score = (relevant points in the top k) / k (denominator k even when P < k or P + N < k).
         For every count a of relevant points in the top k, the best ranking puts r_1..r_a and u_1..u_{k-a} in
         the top k, each part in score order: k_i = min(c_i, k - a) for i <= a, max(c_i, k - a) for i > a.
         All k + 1 counts are evaluated in O(1) each from prefix sums: O(P + N + k log P).
  knn    Score = 1 if more than half of the top k are relevant (2 a > k), else 0: the binary kNN rule
         (exactly the kNN classifier's correctness for two classes and odd k; stricter "majority" rule
         otherwise). Same count enumeration as prec@k.
  map    Score = AP = (1/P) sum_i i / (i + k_i). H is separable, H = sum_i g_i(k_i) with every g_i concave, so
         the chain-constrained maximum is a dynamic programme over i whose value functions stay concave; each
         stage's maximiser is found by galloping + bisection on closed-form increments: O(P log N log P) after
         sorting at worst (below the O(P N) of Yue et al.'s greedy and of a plain dynamic programme).
  mrr    Score = 1 / (1 + k_1). For each of the N + 1 values of k_1 = t the rest is k_i = max(t, c_i);
         O(P + N) with prefix sums.
  ndcg   Score = DCG@k / IDCG@k with binary gains and D(1) = 1, D(p) = 1/log2(p) for p >= 2 (NOT the
         1/log2(1 + p) of cyrank.metrics), IDCG = sum_{p <= min(k, P)} D(p). Exact dynamic programme over the
         first m = min(k, P) relevant points with state k_i in [0, min(N, max(k, c_m))] (a larger k_m never
         helps), plus the closed-form tail k_i = max(k_m, c_i) for i > m: O(m N) worst case. (The k + 1
         candidate construction of prec@k -- a relevant points in the top k, each part in score order -- is
         NOT exact for NDCG: checked against brute force it is suboptimal in 11% of random cases with
         P + N <= 7; for prec@k it is exact in all of them.)

Ties in scores: items are sorted by decreasing score, equal scores by increasing index; a tie between a
relevant and an irrelevant point changes H by 0 whichever comes first, so every oracle returns a ranking of
maximal H (the maximising ranking itself is not unique then).

Sorting (most of the oracle time: every query sorts its P + N scores at every separation): a bucket sort by value
(buckets monotone in the score under rounding, then one insertion sort), 4 m buckets, straight into the sorted
arrays (``_bucket_sort_into``), from BUCKET_MIN items; an introsort below. The result is
exactly the order of the introsort alone. AUC needs no sort in the block kernel: its coefficients only count the
pairs u_j > r_i - 1/2, which value buckets on one grid count in O(P + N) (``_auc_unsorted``; the sorted path when
the buckets are degenerate or too full). On WDBC (one thread, the W's of a fit) this makes the AUC oracle 2.4x and
the MAP oracle (with the search of each stage from the previous stage's optimum) 2.5x faster than the radix sort
did, with the same coefficients bit for bit.

The constraint of a ranking is carried by its coefficients a (one per corpus point, sum a = 0):

    psi(q, y*) - psi(q, y) = sum_i a_i phi(q, i),   a_i = (2/(P N)) k_i (relevant),
                                                    a_j = -(2/(P N)) #{i: k_i >= j} (irrelevant),

from which the estimator forms the d x d batch matrix with matrix products (section 3.2).
"""
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport isfinite, log2, INFINITY
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memset

import numpy as np

from .._sort cimport INSERTION_MAX, KeyIndex, introsort, radix_sort, sort_records
from .._parallel cimport Interrupt, check_interrupt, interrupt_init, keep_going
from .._math cimport discount, imax, imin
from .._typedefs cimport intp_t


cdef enum:
    LOSS_AUC = 0
    LOSS_PREC = 1
    LOSS_MAP = 2
    LOSS_MRR = 3
    LOSS_NDCG = 4
    LOSS_KNN = 5

LOSSES = {"auc": LOSS_AUC, "prec@k": LOSS_PREC, "map": LOSS_MAP, "mrr": LOSS_MRR, "ndcg": LOSS_NDCG,
          "knn": LOSS_KNN}

cdef enum:
    # _bucket_sort_into from this many items, an introsort below (on Wine's lists of 48-70 points the MAP oracle
    # is 18% faster than with the threshold at RADIX_MIN = 64)
    BUCKET_MIN = 32

# relevance modes of oracle_block
MODE_LABELS = 0     # relevant = same label (not the query), irrelevant = other labels
MODE_SETS = 1       # explicit relevant / irrelevant index lists (CSR)


cdef struct Workspace:
    intp_t cap
    KeyIndex* pairs       # cap        sort buffer (relevant points)
    KeyIndex* pairs2      # cap        sort buffer (irrelevant points)
    KeyIndex* tmp         # cap        radix-sort scratch
    double* r         # cap        relevant scores, decreasing
    double* u         # cap        irrelevant scores, decreasing
    intp_t* ridx      # cap        corpus index of each sorted relevant point
    intp_t* uidx      # cap        corpus index of each sorted irrelevant point
    intp_t* kc        # cap        the answer: irrelevant points above each relevant point
    intp_t* c         # cap        c_i = #{j: u_j > r_i}
    intp_t* K         # cap        MAP: optimal prefix of each stage
    intp_t* stK       # cap        MAP: stack of (prefix, stage), prefixes increasing
    intp_t* stI       # cap
    double* H         # cap + 2    harmonic numbers H_m = 1 + 1/2 + ... + 1/m
    double* U         # cap + 1    prefix sums of u
    double* PR        # cap + 1    prefix sums of r
    double* PF        # cap + 1    prefix sums of F_i(c_i)
    double* D1        # cap + 1    dynamic-programme rows
    double* D2        # cap + 1
    intp_t* arg       # NDCG back-pointers, grown on demand
    intp_t arg_cap
    intp_t* bkt       # 2 cap      bucket of each item (bucket sort; AUC: relevant then irrelevant points)
    intp_t* ST        # 4 cap + 2  bucket offsets (bucket sorts; AUC: of the thresholds r_i - 1/2)
    intp_t* SU        # 4 cap + 2  AUC: bucket offsets of the irrelevant scores
    double* tb        # cap        AUC: thresholds r_i - 1/2 grouped by bucket
    double* ub        # cap        AUC: irrelevant scores grouped by bucket
    double* inv       # cap + 2    inv[m] = 1 / m


cdef Workspace* _ws_new(intp_t cap) noexcept nogil:
    cdef intp_t i
    cdef Workspace* ws = <Workspace*>malloc(sizeof(Workspace))
    if ws == NULL:
        return NULL
    if cap < 1:
        cap = 1
    ws.cap = cap
    ws.pairs = <KeyIndex*>malloc(cap * sizeof(KeyIndex))
    ws.pairs2 = <KeyIndex*>malloc(cap * sizeof(KeyIndex))
    ws.tmp = <KeyIndex*>malloc(cap * sizeof(KeyIndex))
    ws.r = <double*>malloc(cap * sizeof(double))
    ws.u = <double*>malloc(cap * sizeof(double))
    ws.ridx = <intp_t*>malloc(cap * sizeof(intp_t))
    ws.uidx = <intp_t*>malloc(cap * sizeof(intp_t))
    ws.kc = <intp_t*>malloc(cap * sizeof(intp_t))
    ws.c = <intp_t*>malloc(cap * sizeof(intp_t))
    ws.K = <intp_t*>malloc(cap * sizeof(intp_t))
    ws.stK = <intp_t*>malloc(cap * sizeof(intp_t))
    ws.stI = <intp_t*>malloc(cap * sizeof(intp_t))
    ws.H = <double*>malloc((cap + 2) * sizeof(double))
    ws.U = <double*>malloc((cap + 1) * sizeof(double))
    ws.PR = <double*>malloc((cap + 1) * sizeof(double))
    ws.PF = <double*>malloc((cap + 1) * sizeof(double))
    ws.D1 = <double*>malloc((cap + 1) * sizeof(double))
    ws.D2 = <double*>malloc((cap + 1) * sizeof(double))
    ws.arg = NULL
    ws.arg_cap = 0
    ws.bkt = <intp_t*>malloc(2 * cap * sizeof(intp_t))
    ws.ST = <intp_t*>malloc((4 * cap + 2) * sizeof(intp_t))
    ws.SU = <intp_t*>malloc((4 * cap + 2) * sizeof(intp_t))
    ws.tb = <double*>malloc(cap * sizeof(double))
    ws.ub = <double*>malloc(cap * sizeof(double))
    ws.inv = <double*>malloc((cap + 2) * sizeof(double))
    if (ws.pairs == NULL or ws.pairs2 == NULL or ws.tmp == NULL or ws.r == NULL or ws.u == NULL
            or ws.bkt == NULL or ws.ST == NULL or ws.SU == NULL or ws.tb == NULL or ws.ub == NULL or ws.inv == NULL
            or ws.ridx == NULL or ws.uidx == NULL or ws.kc == NULL or ws.c == NULL or ws.K == NULL or ws.U == NULL or ws.PR == NULL
            or ws.PF == NULL or ws.D1 == NULL or ws.D2 == NULL or ws.stK == NULL or ws.stI == NULL
            or ws.H == NULL):
        _ws_free(ws)
        return NULL
    ws.H[0] = 0.0
    ws.inv[0] = INFINITY
    for i in range(1, cap + 2):
        ws.inv[i] = 1.0 / i
        ws.H[i] = ws.H[i - 1] + ws.inv[i]
    return ws


cdef void _ws_free(Workspace* ws) noexcept nogil:
    if ws == NULL:
        return
    free(ws.pairs); free(ws.pairs2); free(ws.tmp); free(ws.r); free(ws.u); free(ws.ridx); free(ws.uidx)
    free(ws.kc); free(ws.c)
    free(ws.K); free(ws.U); free(ws.PR); free(ws.PF); free(ws.D1); free(ws.D2); free(ws.arg)
    free(ws.stK); free(ws.stI); free(ws.H)
    free(ws.bkt); free(ws.ST); free(ws.SU); free(ws.tb); free(ws.ub); free(ws.inv)
    free(ws)


cdef inline intp_t count_below(const intp_t* c, intp_t P, intp_t J) noexcept nogil:
    """#{i: c[i] < J} for nondecreasing c (binary search)."""
    cdef intp_t lo = 0, hi = P, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if c[mid] < J:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef void _prepare(Workspace* ws, intp_t P, intp_t N, bint full) noexcept nogil:
    """Prefix sums U, and if ``full`` (every loss but AUC) PR, PF and the unconstrained maximisers c_i (two
    pointers over the sorted lists)."""
    cdef intp_t i, j
    cdef double* r = ws.r
    cdef double* u = ws.u
    ws.U[0] = 0.0
    for j in range(N):
        ws.U[j + 1] = ws.U[j] + u[j]
    if not full:
        return
    j = 0
    ws.PR[0] = 0.0
    ws.PF[0] = 0.0
    for i in range(P):
        while j < N and u[j] > r[i]:
            j += 1
        ws.c[i] = j
        ws.PR[i + 1] = ws.PR[i] + r[i]
        ws.PF[i + 1] = ws.PF[i] + (ws.U[j] - j * r[i])


cdef void _oracle_auc(Workspace* ws, intp_t P, intp_t N) noexcept nogil:
    cdef intp_t i, j = 0
    for i in range(P):
        while j < N and ws.u[j] > ws.r[i] - 0.5:
            j += 1
        ws.kc[i] = j


cdef void _oracle_count(Workspace* ws, int loss, intp_t kk, intp_t P, intp_t N) noexcept nogil:
    """prec@k and knn: enumerate a = number of relevant points in the top kk."""
    cdef intp_t a, amin, amax, best_a, J, t, i, mP = imin(kk, P)
    cdef double s = 2.0 / (<double>P * <double>N)
    cdef double val, best = -INFINITY, top, bot, lossval
    cdef double* U = ws.U
    cdef double* PR = ws.PR
    cdef double* PF = ws.PF
    amin = imax(0, kk - N)
    amax = mP
    if amin > amax:          # P + N < kk: every point is in the top kk
        amin = P
        amax = P
    best_a = amin
    for a in range(amin, amax + 1):
        J = imin(kk - a, N)
        t = count_below(ws.c, P, J)
        top = PF[imin(a, t)]
        if a > t:
            top += (a - t) * U[J] - J * (PR[a] - PR[t])
        bot = PF[P] - PF[imax(a, t)]
        if t > a:
            bot += (t - a) * U[J] - J * (PR[t] - PR[a])
        if loss == LOSS_PREC:
            lossval = <double>(mP - a) / <double>kk
        else:
            lossval = (1.0 if 2 * mP > kk else 0.0) - (1.0 if 2 * a > kk else 0.0)
        val = lossval + s * (top + bot)
        if val > best:
            best = val
            best_a = a
    J = imin(kk - best_a, N)
    for i in range(P):
        if i < best_a:
            ws.kc[i] = imin(ws.c[i], J)
        else:
            ws.kc[i] = imax(ws.c[i], J)


cdef inline double _map_increment(Workspace* ws, intp_t t, intp_t i, intp_t k, double invP,
                                  double s) noexcept nogil:
    """sum_{i' = t+1}^{i} (g_i'(k) - g_i'(k-1)) in closed form (1-based stages i', k >= 1), where
    g_i(k) - g_i(k-1) = (1/P) i/((i+k)(i+k-1)) + s (u_k - r_i). Since i/((i+k)(i+k-1)) = k/(i+k) - (k-1)/(i+k-1),
    the AP part telescopes to (H_{i+k} - H_{t+k}) + (k-1) (1/(i+k) - 1/(t+k))."""
    cdef double ap = (ws.H[i + k] - ws.H[t + k]) + (k - 1) * (ws.inv[i + k] - ws.inv[t + k])
    return invP * ap + s * ((i - t) * ws.u[k - 1] - (ws.PR[i] - ws.PR[t]))


cdef inline intp_t _last_stage_below(Workspace* ws, intp_t top, intp_t k) noexcept nogil:
    """Stage of the topmost stack entry with K < k (0 if none); the stack's K increase upwards."""
    cdef intp_t a = 0, b = top, m
    if top > 0 and ws.stK[top - 1] < k:     # the top entry (the previous stage, mostly)
        return ws.stI[top - 1]
    if top > 1 and ws.stK[top - 2] < k:     # the one below (k = K_{i-1}, mostly)
        return ws.stI[top - 2]
    while a < b:
        m = (a + b) // 2
        if ws.stK[m] < k:
            a = m + 1
        else:
            b = m
    return ws.stI[a - 1] if a > 0 else 0


cdef inline bint _map_rises(Workspace* ws, intp_t top, intp_t i, intp_t k, double invP, double s) noexcept nogil:
    """V_i increases from k - 1 to k (stage i, 1 <= k <= N)."""
    return _map_increment(ws, _last_stage_below(ws, top, k), i, k, invP, s) > 0.0


cdef void _oracle_map(Workspace* ws, intp_t P, intp_t N) noexcept nogil:
    """Chain dynamic programme over concave stages g_i (AP part + score part of relevant point i).

    V_i = g_i + M_{i-1}, M_i(k) = max_{k' <= k} V_i(k'); every V_i is concave, so K_i = argmax V_i is the last k
    with a positive increment. The increment of V_i at k is the sum of the increments of g_{t+1} .. g_i at k,
    t the last earlier stage with K_t < k (M_t is flat beyond K_t): t comes from a stack of (K, stage) with
    increasing K, the sum in closed form. K_i >= c_i (every increment up to c_i is positive), so K_i lies in
    [c_i, N]; it is searched from the guess g = K_{i-1} (clipped to [c_i, N]; on WDBC K_i = K_{i-1} at 70-80% of
    the stages): one increment at g says on which side K_i is, then galloping away from g and bisection:
    O(P log N log P) at worst, two increments per stage mostly. (V_i is strictly concave: its increments change
    sign once, so the search order does not change K_i, save for an increment within rounding of 0.)
    Backtracking: k_P = K_P, k_i = min(K_i, k_{i+1})."""
    cdef intp_t i, lo, hi, mid, step, g, f, top = 0
    cdef double s = 2.0 / (<double>P * <double>N), invP = 1.0 / <double>P
    for i in range(1, P + 1):
        lo = ws.c[i - 1]                      # the increment at lo is > 0 (or lo = 0)
        g = imin(imax(ws.K[i - 2], lo), N) if i > 1 else lo
        if g > lo and not _map_rises(ws, top, i, g, invP, s):
            step = 1                          # K_i < g: gallop down from g (f: an increment <= 0)
            f = g
            while f - step > lo:
                if _map_rises(ws, top, i, f - step, invP, s):
                    lo = f - step
                    break
                f -= step
                step *= 2
            hi = f - 1
        else:                                 # K_i >= g: gallop up from g
            lo = g
            step = 1
            while lo + step <= N and _map_rises(ws, top, i, lo + step, invP, s):
                lo += step
                step *= 2
            hi = imin(lo + step - 1, N)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _map_rises(ws, top, i, mid, invP, s):
                lo = mid
            else:
                hi = mid - 1
        ws.K[i - 1] = lo
        while top > 0 and ws.stK[top - 1] >= lo:
            top -= 1
        ws.stK[top] = lo
        ws.stI[top] = i
        top += 1
    ws.kc[P - 1] = ws.K[P - 1]
    i = P - 2
    while i >= 0:
        ws.kc[i] = imin(ws.K[i], ws.kc[i + 1])
        i -= 1


cdef inline double _tail(Workspace* ws, intp_t m, intp_t P, intp_t t, intp_t cnt) noexcept nogil:
    """sum_{i >= m} F_i(max(t, c_i)) (0-based i), given cnt = #{i: c_i < t}."""
    cdef double v = ws.PF[P] - ws.PF[m]
    if cnt > m:
        v += (cnt - m) * ws.U[t] - t * (ws.PR[cnt] - ws.PR[m]) - (ws.PF[cnt] - ws.PF[m])
    return v


cdef void _oracle_mrr(Workspace* ws, intp_t P, intp_t N) noexcept nogil:
    cdef intp_t t, cnt = 0, best_t = 0, i
    cdef double s = 2.0 / (<double>P * <double>N)
    cdef double val, best = -INFINITY
    for t in range(N + 1):
        while cnt < P and ws.c[cnt] < t:
            cnt += 1
        val = (1.0 - 1.0 / (1.0 + t)) + s * ((ws.U[t] - t * ws.r[0]) + _tail(ws, 1, P, t, cnt))
        if val > best:
            best = val
            best_t = t
    ws.kc[0] = best_t
    for i in range(1, P):
        ws.kc[i] = imax(best_t, ws.c[i])


cdef int _oracle_ndcg(Workspace* ws, intp_t kk, intp_t P, intp_t N) noexcept nogil:
    cdef intp_t m = imin(kk, P), Kmax, i, k, t, cnt, best_t, b, width
    cdef double s = 2.0 / (<double>P * <double>N), idcg = 0.0, v, best, lossp, ri, di
    cdef double* prev = ws.D1
    cdef double* cur = ws.D2
    cdef intp_t* arg
    cdef size_t need
    for i in range(1, m + 1):
        idcg += discount(i, True)
    Kmax = imin(N, imax(kk, ws.c[m - 1]))
    width = Kmax + 1
    need = <size_t>((m - 1) * width) if m > 1 else 1
    if <size_t>ws.arg_cap < need:
        arg = <intp_t*>realloc(ws.arg, need * sizeof(intp_t))
        if arg == NULL:
            return -1
        ws.arg = arg
        ws.arg_cap = <intp_t>need
    arg = ws.arg
    for k in range(width):
        prev[k] = 0.0
    for i in range(m):
        ri = ws.r[i]
        di = discount(i + 1, True)
        for k in range(width):
            lossp = di
            if i + 1 + k <= kk:
                lossp -= discount(i + 1 + k, True)
            cur[k] = lossp / idcg + s * (ws.U[k] - k * ri) + prev[k]
        if i < m - 1:
            best = cur[0]
            b = 0
            for k in range(width):
                if cur[k] > best:
                    best = cur[k]
                    b = k
                prev[k] = best
                arg[i * width + k] = b
    # cur holds V_m; add the tail i >= m with k_i = max(t, c_i)
    best = -INFINITY
    best_t = 0
    cnt = 0
    for t in range(width):
        while cnt < P and ws.c[cnt] < t:
            cnt += 1
        v = cur[t] + s * _tail(ws, m, P, t, cnt)
        if v > best:
            best = v
            best_t = t
    ws.kc[m - 1] = best_t
    i = m - 2
    while i >= 0:
        ws.kc[i] = arg[i * width + ws.kc[i + 1]]
        i -= 1
    for i in range(m, P):
        ws.kc[i] = imax(best_t, ws.c[i])
    return 0


cdef double _delta(Workspace* ws, int loss, intp_t kk, intp_t P, intp_t N) noexcept nogil:
    """Delta of the ranking ws.kc, straight from the definition of each loss (not from the optimiser)."""
    cdef intp_t i, a = 0, pos, mP = imin(kk, P)
    cdef double acc = 0.0, idcg = 0.0
    if loss == LOSS_AUC:
        for i in range(P):
            acc += ws.kc[i]
        return acc / (<double>P * <double>N)
    if loss == LOSS_MAP:
        for i in range(P):
            acc += (i + 1.0) / (i + 1.0 + ws.kc[i])
        return 1.0 - acc / P
    if loss == LOSS_MRR:
        return 1.0 - 1.0 / (1.0 + ws.kc[0])
    if loss == LOSS_NDCG:
        for i in range(1, mP + 1):
            idcg += discount(i, True)
        for i in range(P):
            pos = i + 1 + ws.kc[i]
            if pos <= kk:
                acc += discount(pos, True)
        return 1.0 - acc / idcg
    for i in range(P):
        if i + 1 + ws.kc[i] <= kk:
            a += 1
    if loss == LOSS_PREC:
        return <double>(mP - a) / <double>kk
    return (1.0 if 2 * mP > kk else 0.0) - (1.0 if 2 * a > kk else 0.0)


cdef int _solve_sorted(Workspace* ws, int loss, intp_t kk, intp_t P, intp_t N,
                       double* delta, double* value) noexcept nogil:
    """Run the oracle on ws.r[:P], ws.u[:N] (already sorted); set ws.kc, Delta and H = max value."""
    cdef intp_t i
    cdef double acc = 0.0
    _prepare(ws, P, N, loss != LOSS_AUC)
    if loss == LOSS_AUC:
        _oracle_auc(ws, P, N)
    elif loss == LOSS_PREC or loss == LOSS_KNN:
        _oracle_count(ws, loss, kk, P, N)
    elif loss == LOSS_MAP:
        _oracle_map(ws, P, N)
    elif loss == LOSS_MRR:
        _oracle_mrr(ws, P, N)
    else:
        if _oracle_ndcg(ws, kk, P, N) != 0:
            return -1
    for i in range(P):
        acc += ws.U[ws.kc[i]] - ws.kc[i] * ws.r[i]
    delta[0] = _delta(ws, loss, kk, P, N)
    value[0] = delta[0] + 2.0 * acc / (<double>P * <double>N)
    return 0


cdef bint _bucket_sort_into(Workspace* ws, const KeyIndex* a, intp_t m, double lo, double hi, intp_t nb,
                           intp_t* S, double* keys_out, intp_t* idx_out) noexcept nogil:
    """Sort a[:m] (keys in [lo, hi]) by decreasing key, equal keys by increasing index, straight into keys_out /
    idx_out, by value: nb buckets floor((hi - key) nb / (hi - lo)), non-increasing in the key because every IEEE
    operation rounds monotonically, so the buckets are already in order; a scatter into the outputs, an introsort
    of every bucket of more than INSERTION_MAX items (through ws.tmp), one insertion sort. The order is exactly
    the introsort's. S: nb + 1 offsets of scratch. False (nothing written) when the range is degenerate: the
    caller sorts the records then. (The oracles use nb = 4 m: on the scores of WDBC's fits as fast as 2 m, 10-25%
    faster than 2 m on peaked ones, e.g. a random rank-5 W.)"""
    cdef intp_t i, j, b, c, e, idx, start, big = 0
    cdef double scale, key
    cdef intp_t* bkt = ws.bkt
    if not (hi > lo and isfinite(hi - lo)):
        return False
    scale = nb / (hi - lo)
    if not isfinite(scale):
        return False
    memset(S, 0, (nb + 1) * sizeof(intp_t))
    for i in range(m):
        b = <intp_t>((hi - a[i].key) * scale)
        if b >= nb:
            b = nb - 1
        elif b < 0:
            b = 0
        bkt[i] = b
        S[b + 1] += 1
    for b in range(nb):                   # S[b] = first slot of bucket b
        c = S[b + 1]
        if c > big:
            big = c
        S[b + 1] = S[b] + c
    for i in range(m):                    # afterwards S[b] = end of bucket b
        b = bkt[i]
        keys_out[S[b]] = a[i].key
        idx_out[S[b]] = a[i].index
        S[b] += 1
    if big > INSERTION_MAX:
        start = 0
        for b in range(nb):
            c = S[b] - start
            if c > INSERTION_MAX:         # the records' introsort on the negated keys
                for e in range(c):
                    ws.tmp[e].key = -keys_out[start + e]
                    ws.tmp[e].index = idx_out[start + e]
                introsort(ws.tmp, c)
                for e in range(c):
                    keys_out[start + e] = -ws.tmp[e].key
                    idx_out[start + e] = ws.tmp[e].index
            start = S[b]
    for i in range(1, m):                 # items never cross a bucket boundary
        key = keys_out[i]
        idx = idx_out[i]
        j = i - 1
        while j >= 0 and (keys_out[j] < key or (keys_out[j] == key and idx_out[j] > idx)):
            keys_out[j + 1] = keys_out[j]
            idx_out[j + 1] = idx_out[j]
            j -= 1
        keys_out[j + 1] = key
        idx_out[j + 1] = idx
    return True


cdef void _sort_into(Workspace* ws, KeyIndex* pairs, intp_t m, double lo, double hi, double* keys_out,
                     intp_t* idx_out) noexcept nogil:
    """Sort pairs[:m] (keys between lo and hi) by decreasing key, equal keys by increasing index, into keys_out /
    idx_out: ``_bucket_sort_into`` with 4 m buckets from BUCKET_MIN items, else (or when it declines) the sort of
    cyrank/_sort.pxd on the negated keys."""
    cdef intp_t i
    if m >= BUCKET_MIN and _bucket_sort_into(ws, pairs, m, lo, hi, 4 * m, ws.ST, keys_out, idx_out):
        return
    for i in range(m):
        pairs[i].key = -pairs[i].key
    pairs = sort_records(pairs, ws.tmp, m)
    for i in range(m):
        keys_out[i] = -pairs[i].key
        idx_out[i] = pairs[i].index


cdef void _coefficients(Workspace* ws, intp_t P, intp_t N, double* arow) noexcept nogil:
    """a_i = s k_i for relevant points, a_j = -s #{i: k_i >= j} for irrelevant points (s = 2/(P N))."""
    cdef intp_t i, j, above = P
    cdef double s = 2.0 / (<double>P * <double>N)
    cdef intp_t* cnt = ws.SU              # cnt[k] = #{i: k_i = k}
    memset(cnt, 0, (N + 1) * sizeof(intp_t))
    for i in range(P):
        arow[ws.ridx[i]] = s * ws.kc[i]
        cnt[ws.kc[i]] += 1
    for j in range(1, N + 1):             # above = #{i: k_i >= j}
        above -= cnt[j - 1]
        arow[ws.uidx[j - 1]] = -s * above


cdef inline intp_t _bucket(double x, double lo, double scale, intp_t m) noexcept nogil:
    """floor((x - lo) * scale) clipped to [0, m - 1]: non-decreasing in x."""
    cdef intp_t b = <intp_t>((x - lo) * scale)
    if b >= m:
        return m - 1
    if b < 0:
        return 0
    return b


cdef int _auc_unsorted(Workspace* ws, intp_t P, intp_t N, double rlo, double rhi, double ulo, double uhi,
                       double* arow, double* delta, double* value) noexcept nogil:
    """The AUC oracle without sorting, on the unsorted ws.pairs[:P] (relevant scores r) and ws.pairs2[:N]
    (irrelevant scores u), each between its lo and hi.

    With the thresholds t_i = r_i - 1/2 (rounded as the sorted oracle rounds them), k_i = #{j: u_j > t_i} and
    a_j = -s #{i: t_i < u_j} for the irrelevant point j, since #{i: k_i >= rank of j} counts the same pairs: both
    are counts of the pairs u_j > t_i. The t's and u's go into m = 2 (P + N) buckets of equal width on one grid,
    b(x) = floor((x - lo) m / (hi - lo)), non-decreasing in x, so a pair in different buckets compares as its
    buckets do and only the pairs inside a bucket are compared: O(P + N + sum_b T_b U_b) (T_b, U_b: the t's
    and u's in bucket b). Writes the same coefficients and Delta as the sorted oracle, H up to the rounding of
    its sum. Returns 1 (writing nothing) when the range is degenerate or the buckets too full (sum_b T_b U_b >
    2 m): the caller sorts then."""
    cdef intp_t m = 2 * (P + N), i, b, e, k, cnt, sumk = 0, work = 0
    cdef intp_t* bt = ws.bkt              # bucket of each threshold
    cdef intp_t* bu = ws.bkt + P          # bucket of each irrelevant score
    cdef intp_t* ST = ws.ST               # after the scatter: thresholds of bucket b in tb[ST[b]:ST[b + 1]]
    cdef intp_t* SU = ws.SU               # irrelevant scores of bucket b in ub[SU[b]:SU[b + 1]]
    cdef double lo = rlo - 0.5, hi = rhi - 0.5, scale, t, x, acc = 0.0
    cdef double s = 2.0 / (<double>P * <double>N)
    if ulo < lo:
        lo = ulo
    if uhi > hi:
        hi = uhi
    if not (hi > lo and isfinite(hi - lo)):
        return 1
    scale = m / (hi - lo)
    if not isfinite(scale):
        return 1
    memset(ST, 0, (m + 2) * sizeof(intp_t))
    memset(SU, 0, (m + 2) * sizeof(intp_t))
    for i in range(P):
        b = _bucket(ws.pairs[i].key - 0.5, lo, scale, m)
        bt[i] = b
        ST[b + 2] += 1
    for i in range(N):
        b = _bucket(ws.pairs2[i].key, lo, scale, m)
        bu[i] = b
        SU[b + 2] += 1
    for b in range(m):                    # ST[b + 1] = first slot of bucket b
        work += ST[b + 2] * SU[b + 2]
        ST[b + 2] += ST[b + 1]
        SU[b + 2] += SU[b + 1]
    if work > 2 * m:
        return 1
    for i in range(P):                    # scatter; afterwards ST[b + 1] = end of bucket b
        b = bt[i]
        ws.tb[ST[b + 1]] = ws.pairs[i].key - 0.5
        ST[b + 1] += 1
    for i in range(N):
        b = bu[i]
        ws.ub[SU[b + 1]] = ws.pairs2[i].key
        SU[b + 1] += 1
    for i in range(P):                    # k_i = u's in higher buckets + u's above t_i in its bucket
        b = bt[i]
        t = ws.pairs[i].key - 0.5
        k = N - SU[b + 1]
        for e in range(SU[b], SU[b + 1]):
            k += ws.ub[e] > t
        arow[ws.pairs[i].index] = s * k
        sumk += k
        acc -= k * ws.pairs[i].key
    for i in range(N):                    # t's in lower buckets + t's below u_j in its bucket
        b = bu[i]
        x = ws.pairs2[i].key
        cnt = ST[b]
        for e in range(ST[b], ST[b + 1]):
            cnt += ws.tb[e] < x
        arow[ws.pairs2[i].index] = -s * cnt
        acc += cnt * x
    delta[0] = <double>sumk / (<double>P * <double>N)
    value[0] = delta[0] + 2.0 * acc / (<double>P * <double>N)
    return 0


cdef int _process_query(Workspace* ws, const double* g, const double* rsq, intp_t n, intp_t q, int mode,
                        const intp_t* labels, const intp_t* rel_ptr, const intp_t* rel_idx,
                        const intp_t* irr_ptr, const intp_t* irr_idx, int loss, intp_t kk,
                        double* arow, double* delta, double* value) noexcept nogil:
    cdef intp_t i, P = 0, N = 0, idx, lab = 0
    cdef double key, rlo = INFINITY, rhi = -INFINITY, ulo = INFINITY, uhi = -INFINITY
    delta[0] = 0.0
    value[0] = 0.0
    # scores s(i) = 2 x_q' W x_i - x_i' W x_i (= -||q - i||_W^2 up to a constant of q), and their ranges
    if mode == 0:
        lab = labels[q]
        for i in range(n):
            key = 2.0 * g[i] - rsq[i]
            if labels[i] != lab:
                ws.pairs2[N].key = key
                ws.pairs2[N].index = i
                ulo = key if key < ulo else ulo
                uhi = key if key > uhi else uhi
                N += 1
            elif i != q:
                ws.pairs[P].key = key
                ws.pairs[P].index = i
                rlo = key if key < rlo else rlo
                rhi = key if key > rhi else rhi
                P += 1
    else:
        for i in range(rel_ptr[q], rel_ptr[q + 1]):
            idx = rel_idx[i]
            key = 2.0 * g[idx] - rsq[idx]
            ws.pairs[P].key = key
            ws.pairs[P].index = idx
            rlo = key if key < rlo else rlo
            rhi = key if key > rhi else rhi
            P += 1
        for i in range(irr_ptr[q], irr_ptr[q + 1]):
            idx = irr_idx[i]
            key = 2.0 * g[idx] - rsq[idx]
            ws.pairs2[N].key = key
            ws.pairs2[N].index = idx
            ulo = key if key < ulo else ulo
            uhi = key if key > uhi else uhi
            N += 1
    if mode == 0 and P > 0 and N > 0:
        arow[q] = 0.0                     # every other entry is written below
    else:
        memset(arow, 0, n * sizeof(double))
    if P == 0 or N == 0:
        return 0
    if loss == LOSS_AUC and _auc_unsorted(ws, P, N, rlo, rhi, ulo, uhi, arow, delta, value) == 0:
        return 0
    _sort_into(ws, ws.pairs, P, rlo, rhi, ws.r, ws.ridx)
    _sort_into(ws, ws.pairs2, N, ulo, uhi, ws.u, ws.uidx)
    if _solve_sorted(ws, loss, kk, P, N, delta, value) != 0:
        return -1
    _coefficients(ws, P, N, arow)
    return 0


def oracle_block(const double[:, ::1] G, const double[::1] rsq, intp_t q0, int mode,
                 const intp_t[::1] labels, const intp_t[::1] rel_ptr, const intp_t[::1] rel_idx,
                 const intp_t[::1] irr_ptr, const intp_t[::1] irr_idx, int loss, intp_t kk,
                 double[:, ::1] A, double[::1] delta, double[::1] value, int n_threads=1):
    """Most violated ranking of the queries q0 .. q0 + B - 1 (B = G.shape[0]).

    G[b, i] = x_q' W x_i for q = q0 + b, rsq[i] = x_i' W x_i. Relevance: ``mode`` MODE_LABELS (``labels``:
    relevant = same label except q) or MODE_SETS (CSR lists ``rel_ptr/rel_idx`` and ``irr_ptr/irr_idx``,
    indexed by q). Writes A[b] (the coefficients a of the ranking; zero for a query with no relevant or no
    irrelevant point), delta[b] = Delta and value[b] = H = max_y Delta + <W, psi(y) - psi(y*)>.
    Queries are shared among ``n_threads`` OpenMP threads; each writes only its own outputs, so the result does
    not depend on the threads. Ctrl-C stops the block within a query or so (KeyboardInterrupt).
    """
    cdef intp_t B = G.shape[0], n = G.shape[1], b
    cdef Workspace* ws = NULL
    cdef int failed = 0, tid
    cdef int* failp = &failed
    cdef Interrupt intr
    if rsq.shape[0] != n or A.shape[0] != B or A.shape[1] != n or delta.shape[0] < B or value.shape[0] < B:
        raise ValueError("oracle_block: inconsistent array shapes")
    if mode == 0 and labels.shape[0] != n:
        raise ValueError("oracle_block: labels must have one entry per corpus point")
    if mode != 0 and (rel_ptr.shape[0] < q0 + B + 1 or irr_ptr.shape[0] < q0 + B + 1):
        raise ValueError("oracle_block: relevance lists do not cover the queries")
    if loss < 0 or loss > 5:
        raise ValueError(f"unknown loss code {loss}")
    if kk < 1:
        raise ValueError("k must be >= 1")
    if B == 0:
        return
    if n_threads < 1:
        n_threads = 1
    # raw pointers of the relevance arrays of the mode in use (the others may be empty)
    cdef const intp_t* lab_p = &labels[0] if mode == 0 else NULL
    cdef const intp_t* rp_p = &rel_ptr[0] if mode != 0 else NULL
    cdef const intp_t* ri_p = &rel_idx[0] if mode != 0 and rel_idx.shape[0] > 0 else NULL
    cdef const intp_t* ip_p = &irr_ptr[0] if mode != 0 else NULL
    cdef const intp_t* ii_p = &irr_idx[0] if mode != 0 and irr_idx.shape[0] > 0 else NULL
    interrupt_init(&intr)
    tid = 0
    with nogil, parallel(num_threads=n_threads):
        tid = threadid()
        ws = _ws_new(n)
        if ws == NULL:
            failp[0] = 1
        for b in prange(B, schedule="dynamic"):
            # a query sorts its n scores: charged 16 n to the signal check; after Ctrl-C the rest are skipped
            if ws != NULL and keep_going(&intr, tid, 16 * n):
                if _process_query(ws, &G[b, 0], &rsq[0], n, q0 + b, mode, lab_p, rp_p, ri_p, ip_p, ii_p,
                                  loss, kk, &A[b, 0], &delta[b], &value[b]) != 0:
                    failp[0] = 1
        _ws_free(ws)
    check_interrupt(&intr)
    if failed:
        raise MemoryError("MLR oracle: out of memory")


def query_oracle(loss, intp_t k, rel_scores, irr_scores):
    """The oracle on one query, given the scores s(i) = -||q - i||_W^2 of its relevant and irrelevant points.

    Returns ``(value, delta, n_before, rel_order, irr_order)``: value = max_y H(y), delta = Delta of the
    maximiser, rel_order / irr_order the points of each set by decreasing score (ties by index), and
    n_before[i] the number of irrelevant points ranked above the relevant point rel_order[i]. (For tests and
    throughput measurements; the estimator uses :func:`oracle_block`.)
    """
    cdef int code
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))}; got {loss!r}")
    code = LOSSES[loss]
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    cdef const double[::1] r = np.ascontiguousarray(rel_scores, dtype=np.float64).ravel()
    cdef const double[::1] u = np.ascontiguousarray(irr_scores, dtype=np.float64).ravel()
    cdef intp_t P = r.shape[0], N = u.shape[0], i
    cdef double lo = INFINITY, hi = -INFINITY
    if P == 0 or N == 0:
        raise ValueError("a query needs at least one relevant and one irrelevant point")
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(u))):
        raise ValueError("scores must be finite")
    cdef Workspace* ws = _ws_new(P + N)
    cdef double delta = 0.0, value = 0.0
    cdef int rc
    if ws == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(P):
                ws.pairs[i].key = r[i]
                ws.pairs[i].index = i
                lo = r[i] if r[i] < lo else lo
                hi = r[i] if r[i] > hi else hi
            _sort_into(ws, ws.pairs, P, lo, hi, ws.r, ws.ridx)
            lo = INFINITY
            hi = -INFINITY
            for i in range(N):
                ws.pairs[i].key = u[i]
                ws.pairs[i].index = i
                lo = u[i] if u[i] < lo else lo
                hi = u[i] if u[i] > hi else hi
            _sort_into(ws, ws.pairs, N, lo, hi, ws.u, ws.uidx)
            rc = _solve_sorted(ws, code, k, P, N, &delta, &value)
        if rc != 0:
            raise MemoryError()
        n_before = np.array([ws.kc[i] for i in range(P)], dtype=np.int64)
        rel_order = np.array([ws.ridx[i] for i in range(P)], dtype=np.int64)
        irr_order = np.array([ws.uidx[i] for i in range(N)], dtype=np.int64)
    finally:
        _ws_free(ws)
    return value, delta, n_before, rel_order, irr_order


def sort_order(keys, radix=None, intp_t buckets=0):
    """The permutation that orders ``keys`` (finite doubles) the way the oracles do: decreasing key, equal
    keys (-0.0 == +0.0) by increasing index. ``buckets`` > 0: the oracles' bucket sort with that many buckets
    (the oracles' sort when it declines); else ``radix`` True = the radix sort, False = the introsort, None = the oracles' sort
    (``_sort_into``). (For tests of cyrank/_sort.pxd and of the oracles' sort.)"""
    cdef const double[::1] k = np.ascontiguousarray(keys, dtype=np.float64).ravel()
    cdef intp_t n = k.shape[0], i
    cdef double lo = INFINITY, hi = -INFINITY
    if not np.all(np.isfinite(k)):
        raise ValueError("keys must be finite")
    cdef int method = 3 if buckets > 0 else (2 if radix is None else (1 if radix else 0))
    cdef Workspace* ws = _ws_new(n)
    cdef KeyIndex* out
    cdef intp_t* start = <intp_t*>malloc((buckets + 1) * sizeof(intp_t))
    order = np.empty(n, dtype=np.int64)
    cdef intp_t[::1] o = order
    if ws == NULL or start == NULL:
        _ws_free(ws)
        free(start)
        raise MemoryError()
    with nogil:
        for i in range(n):
            ws.pairs[i].key = -k[i]
            ws.pairs[i].index = i
            lo = ws.pairs[i].key if ws.pairs[i].key < lo else lo
            hi = ws.pairs[i].key if ws.pairs[i].key > hi else hi
        if method >= 2:
            for i in range(n):
                ws.pairs[i].key = k[i]
            if method == 2 or not _bucket_sort_into(ws, ws.pairs, n, -hi, -lo, buckets, start, ws.r, ws.ridx):
                _sort_into(ws, ws.pairs, n, -hi, -lo, ws.r, ws.ridx)
            out = ws.pairs
            for i in range(n):
                out[i].index = ws.ridx[i]
        elif method == 1:
            out = radix_sort(ws.pairs, ws.tmp, n)
        else:
            introsort(ws.pairs, n)
            out = ws.pairs
        for i in range(n):
            o[i] = out[i].index
    _ws_free(ws)
    free(start)
    return order
