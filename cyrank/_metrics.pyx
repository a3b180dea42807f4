"""Cython kernels of :mod:`cyrank.metrics`: one loop per metric family over rank-ordered queries.

Conventions shared by every kernel (the Python side establishes them once):

* ``offsets`` (int64, n_queries + 1): rows ``offsets[q]:offsets[q + 1]`` hold query q.
* Rows of a query arrive in rank order, best first. The Python side sorted them once with
  ``np.lexsort``, so the order already encodes the deterministic tie rule ("pessimistic",
  "optimistic" or "input").
* ``average``: if true, each maximal run of equal ``score`` is a *tie group*, and every kernel returns
  the exact expectation over the uniformly random orders of its tie groups; rows of a tie group
  arrive sorted by increasing label. If false, every row is a group of its own and the same formulas
  reduce to the metric of the given order. So each formula below is written once, per tie group.
* ``out[q]`` is NaN where the metric is undefined for query q (no relevant item, no preference
  pair); the Python side then applies its ``empty=`` rule.
* ``k <= 0`` means "all documents".
* A query may have no row (a TREC query that retrieved nothing); every kernel handles it.
* ``n_rel[q]`` (binary metrics, ERR): the number of relevant documents of query q, from the judgements: the
  retrieved rows for array input, the qrels for TREC dicts (where relevant documents may be unretrieved).
  ``n_rel[q] == 0`` makes the query undefined (NaN).

Every loop runs without the GIL; counts are int64.
"""
from libc.math cimport log2, NAN, INFINITY
from libc.stdint cimport int64_t

from ._math cimport discount, imin
from ._typedefs cimport intp_t


# ---------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------
cdef inline intp_t group_end(const double[::1] score, intp_t i, intp_t end, bint average) noexcept nogil:
    """End (exclusive) of the tie group that starts at row i: just i + 1 unless ``average``."""
    cdef intp_t j = i + 1
    if average:
        while j < end and score[j] == score[i]:
            j += 1
    return j


cdef inline double group_sum(const double[::1] x, intp_t a, intp_t b) noexcept nogil:
    cdef double s = 0.0
    cdef intp_t i
    for i in range(a, b):
        s += x[i]
    return s


cdef inline int64_t pairs_of(int64_t m) noexcept nogil:
    return m * (m - 1) // 2


cdef int64_t sort_count(double* a, double* w, intp_t n) noexcept nogil:
    """Sort ``a[0:n]`` ascending (``w``: scratch of n) and return the number of pairs i < j with
    a[i] < a[j] in the original order. Bottom-up merge sort, O(n log n)."""
    cdef double* src = a
    cdef double* dst = w
    cdef double* t
    cdef intp_t width = 1, lo, mid, hi, i, j, o
    cdef int64_t count = 0
    while width < n:
        lo = 0
        while lo < n:
            mid = imin(lo + width, n)
            hi = imin(lo + 2 * width, n)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                if src[i] < src[j]:          # a left element strictly below src[j]: passes first
                    dst[o] = src[i]
                    i += 1
                else:                        # src[j] <= every left element still waiting
                    dst[o] = src[j]
                    count += i - lo
                    j += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                count += mid - lo
                j += 1
                o += 1
            lo = hi
        t = src
        src = dst
        dst = t
        width *= 2
    if src != a:
        for i in range(n):
            a[i] = src[i]
    return count


# ---------------------------------------------------------------------------------------------
# rank order: each query's rows sorted once (the Python side then gathers values in this order)
# ---------------------------------------------------------------------------------------------
cdef inline bint ranks_before(const double* score, const double* key, intp_t i, intp_t j) noexcept nogil:
    """Row i goes strictly before row j: higher score, or equal score and lower tie key."""
    return score[i] > score[j] or (score[i] == score[j] and key[i] < key[j])


cdef void merge_sort_rows(const double* score, const double* key, intp_t* rows, intp_t* tmp,
                          intp_t n) noexcept nogil:
    """Stable sort of ``rows[0:n]`` by ``ranks_before``: insertion sort of runs of 16, then bottom-up merges
    (``tmp``: scratch of n)."""
    cdef intp_t run = 16, lo, hi, i, j, o, mid, v, width
    cdef intp_t* src = rows
    cdef intp_t* dst = tmp
    cdef intp_t* t
    lo = 0
    while lo < n:
        hi = imin(lo + run, n)
        for i in range(lo + 1, hi):
            v = src[i]
            j = i
            while j > lo and ranks_before(score, key, v, src[j - 1]):
                src[j] = src[j - 1]
                j -= 1
            src[j] = v
        lo = hi
    width = run
    while width < n:
        lo = 0
        while lo < n:
            mid = imin(lo + width, n)
            hi = imin(lo + 2 * width, n)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                if ranks_before(score, key, src[j], src[i]):   # only a strictly better right row passes first
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
            lo = hi
        t = src
        src = dst
        dst = t
        width *= 2
    if src != rows:
        for i in range(n):
            rows[i] = src[i]


def rank_order(const double[::1] score, const double[::1] key, const intp_t[::1] offsets, intp_t[::1] order,
               intp_t[::1] scratch):
    """``order[offsets[q]:offsets[q + 1]]``: query q's rows by decreasing score, then increasing ``key``, then
    input order (a stable merge sort, O(m log m) per query of m rows; ``scratch``: at least the largest query)."""
    cdef intp_t q, start, m, i
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            m = offsets[q + 1] - start
            for i in range(m):
                order[start + i] = start + i
            merge_sort_rows(&score[0], &key[0], &order[start], &scratch[0], m)


cdef enum:
    QUICKSORT_SMALL = 15      # numba's SMALL_QUICKSORT: shorter ranges go to insertion sort
    QUICKSORT_STACK = 100     # numba's MAX_STACK


cdef void quicksort_rows(const double* a, intp_t* r, intp_t n, intp_t* stack_lo, intp_t* stack_hi) noexcept nogil:
    """Sort ``r[0:n]`` (row numbers) by increasing ``a[r]`` with the permutation numba's ``np.argsort`` (its
    default, kind="quicksort"; numba/misc/quicksort.py) gives, ties included: ranges of 16 or more are split by
    a median-of-three partition (the pivot parked at the range's end during the scan), the larger part pushed,
    the smaller iterated; shorter ranges are insertion-sorted. Equal keys end up in an order that depends on
    these moves, which is what ranx's Run keeps as its ranking."""
    cdef intp_t sp = 1, low, high, mid, i, j, k, t
    cdef double pivot, v
    if n < 2:
        return
    stack_lo[0] = 0
    stack_hi[0] = n - 1
    while sp > 0:
        sp -= 1
        low = stack_lo[sp]
        high = stack_hi[sp]
        while high - low >= QUICKSORT_SMALL:
            mid = (low + high) >> 1
            if a[r[mid]] < a[r[low]]:
                r[low], r[mid] = r[mid], r[low]
            if a[r[high]] < a[r[mid]]:
                r[high], r[mid] = r[mid], r[high]
            if a[r[mid]] < a[r[low]]:
                r[low], r[mid] = r[mid], r[low]
            pivot = a[r[mid]]
            r[high], r[mid] = r[mid], r[high]
            i = low
            j = high - 1
            while True:
                while i < high and a[r[i]] < pivot:
                    i += 1
                while j >= low and pivot < a[r[j]]:
                    j -= 1
                if i >= j:
                    break
                r[i], r[j] = r[j], r[i]
                i += 1
                j -= 1
            r[i], r[high] = r[high], r[i]
            if high - i > i - low:
                if high > i:
                    stack_lo[sp] = i + 1
                    stack_hi[sp] = high
                    sp += 1
                high = i - 1
            else:
                if i > low:
                    stack_lo[sp] = low
                    stack_hi[sp] = i - 1
                    sp += 1
                low = i + 1
        for i in range(low + 1, high + 1):
            k = r[i]
            v = a[k]
            j = i
            while j > low and v < a[r[j - 1]]:
                r[j] = r[j - 1]
                j -= 1
            r[j] = k


def ranx_order(const double[::1] neg_score, const intp_t[::1] offsets, intp_t[::1] order):
    """``order[offsets[q]:offsets[q + 1]]``: query q's rows in the order ranx's ``Run`` ranks them: numba's
    quicksort argsort of the negated scores in input order (``neg_score`` = -score)."""
    cdef intp_t q, start, m, i
    cdef intp_t stack_lo[QUICKSORT_STACK]
    cdef intp_t stack_hi[QUICKSORT_STACK]
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            m = offsets[q + 1] - start
            for i in range(m):
                order[start + i] = i
            quicksort_rows(&neg_score[start], &order[start], m, stack_lo, stack_hi)
            for i in range(m):
                order[start + i] += start


# ---------------------------------------------------------------------------------------------
# DCG family: NDCG@k (standard or LETOR 4.0 discount), LETOR "MeanNDCG", precision@k
# ---------------------------------------------------------------------------------------------
def ndcg_kernel(const double[::1] gain, const double[::1] ideal, const double[::1] score,
                const intp_t[::1] offsets, const intp_t[::1] ideal_offsets, intp_t k, bint letor, bint mean_over_k,
                bint average, double[::1] out):
    """NDCG per query. ``gain``: gains in rank order; ``ideal[ideal_offsets[q]:ideal_offsets[q + 1]]``: the gains
    of query q's judged documents sorted decreasingly (for array input the same rows as ``gain``; for TREC dicts
    the qrels, retrieved or not). A tie group's positions all get its mean gain (DCG is linear in the gains, so
    this is the exact expectation). ``letor``: LETOR 4.0 discount, and NDCG@k = 0 for a query with fewer than k
    documents. ``mean_over_k``: the mean of NDCG@j over j = 1..n (k is ignored)."""
    cdef intp_t q, start, end, n, top, a, b, r, i0, n_ideal
    cdef double dcg, idcg, g, d, total
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            i0 = ideal_offsets[q]
            n_ideal = ideal_offsets[q + 1] - i0
            if n_ideal == 0 or ideal[i0] <= 0.0:        # ideal DCG = 0: no relevant document
                out[q] = NAN
                continue
            if mean_over_k:
                if n == 0:
                    out[q] = 0.0
                    continue
                dcg = 0.0
                idcg = 0.0
                total = 0.0
                a = start
                while a < end:
                    b = group_end(score, a, end, average)
                    g = group_sum(gain, a, b) / (b - a)
                    for r in range(a, b):
                        d = discount(r - start + 1, letor)
                        dcg += g * d
                        if r - start < n_ideal:
                            idcg += ideal[i0 + r - start] * d
                        total += dcg / idcg
                    a = b
                out[q] = total / n
                continue
            if letor and 0 < k and n < k:              # LETOR 4.0: a short query scores 0 at k
                out[q] = 0.0
                continue
            top = start + (n if k <= 0 or k > n else k)
            dcg = 0.0
            idcg = 0.0
            a = start
            while a < top:
                b = group_end(score, a, end, average)
                g = group_sum(gain, a, b) / (b - a)
                for r in range(a, imin(b, top)):
                    dcg += g * discount(r - start + 1, letor)
                a = b
            # the ideal ranking's cut-off: k, or (k = all) as many places as the ranking has (array input: the
            # same rows; TREC dicts: every judged document, as trec_eval's ndcg and ranx's ndcg without @k)
            for r in range(n_ideal if k <= 0 else imin(k, n_ideal)):
                idcg += ideal[i0 + r] * discount(r + 1, letor)
            out[q] = dcg / idcg


def precision_kernel(const double[::1] rel, const double[::1] score, const intp_t[::1] offsets,
                     const double[::1] n_rel, intp_t k, bint average, double[::1] out):
    """P@k = (number of relevant documents in the first k) / k; ``rel`` is 0/1 in rank order.
    A tie group cut by the k-th position contributes its fraction of relevant documents per place."""
    cdef intp_t q, start, end, n, kk, top, a, b
    cdef double hits
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            if n_rel[q] == 0.0:
                out[q] = NAN
                continue
            kk = n if k <= 0 else k
            if kk == 0:                                   # k = all rows of a query that retrieved nothing
                out[q] = 0.0
                continue
            top = start + imin(kk, n)
            hits = 0.0
            a = start
            while a < top:
                b = group_end(score, a, end, average)
                hits += group_sum(rel, a, b) * (imin(b, top) - a) / (b - a)
                a = b
            out[q] = hits / kk


# ---------------------------------------------------------------------------------------------
# binary relevance: average precision, reciprocal rank
# ---------------------------------------------------------------------------------------------
def average_precision_kernel(const double[::1] rel, const double[::1] score, const intp_t[::1] offsets,
                             const double[::1] n_rel, bint average, double[::1] out):
    """AP = (1/R) sum_{r relevant} P@r, R = ``n_rel[q]`` (relevant documents, retrieved or not). In a tie
    group of m rows holding p relevant ones, with
    `before` relevant rows ranked above the group, the row at place t of the group (rank a + t)
    contributes E[rel * (number relevant up to it)] / (a + t)
    = ((p/m) (1 + before) + (t - 1) p (p - 1) / (m (m - 1))) / (a + t)   (McSherry & Najork 2008)."""
    cdef intp_t q, start, end, a, b, m, t
    cdef double before, p, e1, e2, s
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            end = offsets[q + 1]
            if n_rel[q] == 0.0:
                out[q] = NAN
                continue
            s = 0.0
            before = 0.0
            a = start
            while a < end and before < n_rel[q]:
                b = group_end(score, a, end, average)
                m = b - a
                p = group_sum(rel, a, b)
                if p > 0.0:
                    e1 = p / m * (1.0 + before)
                    e2 = p * (p - 1.0) / (m * (m - 1.0)) if m > 1 else 0.0
                    for t in range(1, m + 1):
                        s += (e1 + (t - 1) * e2) / (a - start + t)
                before += p
                a = b
            out[q] = s / n_rel[q]


def reciprocal_rank_kernel(const double[::1] rel, const double[::1] score, const intp_t[::1] offsets,
                           const double[::1] n_rel, bint average, double[::1] out):
    """RR = 1 / rank of the first relevant row (0 if no relevant document is retrieved). If it lies in a tie
    group of m rows with p relevant ones after a rows, its place T in the group has
    P(T = t) = C(m - t, p - 1) / C(m, p), and RR = sum_t P(T = t) / (a + t)."""
    cdef intp_t q, start, end, a, b, m, t, p
    cdef double prob, s
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            end = offsets[q + 1]
            out[q] = NAN if n_rel[q] == 0.0 else 0.0
            a = start
            while a < end:
                b = group_end(score, a, end, average)
                m = b - a
                p = <intp_t>group_sum(rel, a, b)
                if p > 0:
                    prob = <double>p / m                    # P(T = 1)
                    s = 0.0
                    for t in range(1, m - p + 2):
                        s += prob / (a - start + t)
                        if t < m - p + 1:
                            prob *= <double>(m - t - p + 1) / (m - t)
                    out[q] = s
                    break
                a = b


# ---------------------------------------------------------------------------------------------
# cascade: expected reciprocal rank
# ---------------------------------------------------------------------------------------------
def err_kernel(const double[::1] R, const double[::1] score, const intp_t[::1] offsets, const double[::1] n_rel,
               intp_t k, bint average, double[::1] out, double[::1] mu):
    """ERR@k = sum_{r <= k} (1/r) R_r prod_{i<r} (1 - R_i); ``R`` in rank order.

    Ties: the product over a whole tie group does not depend on its order, so groups are independent.
    For a group of m rows at ranks a+1..a+m, with x = 1 - R, let mu_j = mean over the j-subsets of
    the group of prod x (mu_0 = 1): the probability that the user reaches the group's t-th place
    and stops there is mu_{t-1} - mu_t. The mu_j follow from the stable recursion (all terms >= 0)
    mu_j <- ((i - j) mu_j + j x_i mu_{j-1}) / i over the rows i = 1..m of the group; only j <= k - a
    is needed, so a group costs O(m min(m, k - a)) (``mu``: scratch of length >= n + 1)."""
    cdef intp_t q, start, end, n, top, a, b, m, T, i, j, t
    cdef double err, reach, stay, x
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            if n_rel[q] == 0.0:                          # no relevant document
                out[q] = NAN
                continue
            top = start + (n if k <= 0 or k > n else k)
            err = 0.0
            reach = 1.0                                   # P(user gets past every group so far)
            a = start
            while a < top:
                b = group_end(score, a, end, average)
                m = b - a
                T = imin(b, top) - a
                mu[0] = 1.0
                for j in range(1, T + 1):
                    mu[j] = 0.0
                stay = 1.0
                for i in range(1, m + 1):
                    x = 1.0 - R[a + i - 1]
                    stay *= x
                    for j in range(imin(i, T), 0, -1):
                        mu[j] = ((i - j) * mu[j] + j * x * mu[j - 1]) / i
                for t in range(1, T + 1):
                    err += reach * (mu[t - 1] - mu[t]) / (a - start + t)
                reach *= stay
                a = b
            out[q] = err


# ---------------------------------------------------------------------------------------------
# pairwise: disagreement over preference pairs (pairwise accuracy = 1 - it; AUC on binary labels)
# ---------------------------------------------------------------------------------------------
def pairwise_kernel(const double[::1] lab, const double[::1] score, const intp_t[::1] offsets,
                    bint average, double[::1] out, double[::1] buf, double[::1] scratch):
    """Fraction of preference pairs (y_i > y_j) ranked wrongly: j above i; a pair inside a tie group
    counts 1/2 when ``average``. Discordant pairs are counted by a merge sort, O(n log n) per query.
    Rows of a tie group arrive with increasing labels, so the merge sort counts every preference pair
    of a group as discordant; the kernel then replaces those counts by 1/2."""
    cdef intp_t q, start, end, n, i, run, a, b
    cdef int64_t discordant, n_pairs, tied
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            for i in range(n):
                buf[i] = lab[start + i]
            discordant = sort_count(&buf[0], &scratch[0], n)
            n_pairs = pairs_of(n)                         # minus the pairs of equal labels
            run = 1
            for i in range(1, n + 1):
                if i < n and buf[i] == buf[i - 1]:
                    run += 1
                else:
                    n_pairs -= pairs_of(run)
                    run = 1
            if n_pairs == 0:
                out[q] = NAN
                continue
            tied = 0
            if average:
                a = start
                while a < end:
                    b = group_end(score, a, end, True)
                    tied += pairs_of(b - a)
                    run = 1
                    for i in range(a + 1, b + 1):
                        if i < b and lab[i] == lab[i - 1]:
                            run += 1
                        else:
                            tied -= pairs_of(run)
                            run = 1
                    a = b
            out[q] = (<double>(discordant - tied) + 0.5 * tied) / n_pairs


# ---------------------------------------------------------------------------------------------
# label-ranking errors of Dekel, Manning & Singer (2003): zero-one, domination, dominated
# ---------------------------------------------------------------------------------------------
cdef enum:
    KIND_ZERO_ONE = 0
    KIND_DOMINATION = 1
    KIND_DOMINATED = 2

ZERO_ONE = KIND_ZERO_ONE          # Python names of the ``kind`` argument
DOMINATION = KIND_DOMINATION
DOMINATED = KIND_DOMINATED


def label_ranking_kernel(const double[::1] lab, const double[::1] score, const intp_t[::1] offsets,
                         int kind, bint average, double[::1] out, double[::1] suffix_max):
    """Per query (one instance, rows = labels, edge i -> j iff y_i > y_j); an edge is violated when
    j is ranked above i. Each tie group is walked by runs of equal labels [u, v), with c_lo = u - a
    rows of lower and c_hi = b - v rows of higher label in the same group [a, b):

    * zero-one: 1 if an edge is violated; with random tie orders, 1 - prod over groups of
      P(the group comes out sorted by decreasing label) = 1 - prod_g prod_l c_{g,l}! / m_g!
      (0-1 exactly when a lower label is ranked strictly above a higher one).
    * domination: over the rows with outgoing edges (y > min y), the fraction that are not ranked
      above all the rows of lower label. A row with no such row strictly above it fails only
      through its group, with probability c_lo / (c_lo + 1).
    * dominated: over the rows with incoming edges (y < max y), the fraction not ranked below all
      the rows of higher label; tie part c_hi / (c_hi + 1).

    ``suffix_max``: scratch of length >= n + 1."""
    cdef intp_t q, start, end, n, i, a, b, u, v, c_lo, c_hi
    cdef double lo, hi, prefix_min, after_max, total, p_sorted, L
    cdef int64_t n_vertices
    cdef bint violated
    with nogil:
        for q in range(offsets.shape[0] - 1):
            start = offsets[q]
            end = offsets[q + 1]
            n = end - start
            lo = INFINITY
            hi = -INFINITY
            for i in range(start, end):
                if lab[i] < lo:
                    lo = lab[i]
                if lab[i] > hi:
                    hi = lab[i]
            if n == 0 or lo == hi:                        # no edge
                out[q] = NAN
                continue
            if kind == KIND_DOMINATED:
                suffix_max[n] = -INFINITY
                for i in range(n - 1, -1, -1):
                    suffix_max[i] = lab[start + i] if lab[start + i] > suffix_max[i + 1] else suffix_max[i + 1]
            prefix_min = INFINITY                         # lowest label ranked above the group
            total = 0.0
            n_vertices = 0
            p_sorted = 1.0
            violated = False
            a = start
            while a < end and not violated:
                b = group_end(score, a, end, average)
                after_max = suffix_max[b - start] if kind == KIND_DOMINATED else -INFINITY
                u = a
                while u < b:
                    v = u + 1
                    while v < b and lab[v] == lab[u]:
                        v += 1
                    L = lab[u]
                    c_lo = u - a
                    c_hi = b - v
                    if kind == KIND_ZERO_ONE:
                        if prefix_min < L:
                            violated = True
                            break
                        for i in range(1, v - u + 1):    # (v - u)! / (places u+1-a .. v-a)
                            p_sorted *= <double>i / (u - a + i)
                    elif kind == KIND_DOMINATION and L > lo:
                        n_vertices += v - u
                        if prefix_min < L:
                            total += v - u
                        else:
                            total += (v - u) * (<double>c_lo / (c_lo + 1))
                    elif kind == KIND_DOMINATED and L < hi:
                        n_vertices += v - u
                        if after_max > L:
                            total += v - u
                        else:
                            total += (v - u) * (<double>c_hi / (c_hi + 1))
                    u = v
                if lab[a] < prefix_min:                   # the group's lowest label comes first
                    prefix_min = lab[a]
                a = b
            if kind == KIND_ZERO_ONE:
                out[q] = 1.0 if violated else 1.0 - p_sorted
            else:
                out[q] = total / n_vertices
