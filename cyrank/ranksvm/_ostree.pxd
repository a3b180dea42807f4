# Order-statistic sums over the preference pairs of one query (see _ostree.pyx): the sweeps inline here, so that
# the one-vector callers (m = 1) compile without the inner loops.
from cyrank._sort cimport KeyIndex
from cyrank._typedefs cimport intp_t

cdef void sort_by_key(intp_t* a, intp_t n, const double* key, KeyIndex* scratch) noexcept nogil

cdef void center_segment(intp_t start, intp_t stop, const intp_t* perm, double* values) noexcept nogil


# ------------------------------------------------------------------------------------------- Fenwick tree
# 1-based arrays of n_levels + 1 nodes, each a count and m sums (row k of s: s[k m : (k + 1) m]); label rank r lives
# at node r + 1. Node 0 is unused by the tree (the second sweep keeps a running total there). The count is an
# integer (intp_t: unweighted) or a weight (double: with sample weights, the sums then weighted too); each fused
# specialisation compiles its own loops, so the unweighted one is what it was without weights.

ctypedef fused count_t:
    intp_t
    double


cdef inline void _fen_reset(intp_t n_levels, intp_t m, count_t* cnt, double* s) noexcept nogil:
    cdef intp_t k
    for k in range(n_levels + 1):
        cnt[k] = 0
    for k in range((n_levels + 1) * m):
        s[k] = 0.0


cdef inline void _fen_add(intp_t n_levels, intp_t m, count_t* cnt, double* s, intp_t r, count_t wt,
                          const double* v) noexcept nogil:
    """Insert one entry of label rank r with the m values v and the count wt (1: unweighted; a weight: the values
    enter times wt)."""
    cdef intp_t k = r + 1, a
    cdef double* node
    while k <= n_levels:
        cnt[k] += wt
        node = s + k * m
        for a in range(m):
            if count_t is double:
                node[a] += wt * v[a]
            else:
                node[a] += v[a]
        k += k & (-k)


cdef inline count_t _fen_prefix(intp_t m, const count_t* cnt, const double* s, intp_t r, double sign,
                                double* out) noexcept nogil:
    """Count (returned) of the inserted entries with label rank <= r; out += sign * the sum of their values."""
    cdef intp_t k = r + 1, a
    cdef count_t c = 0
    cdef const double* node
    while k > 0:
        c += cnt[k]
        node = s + k * m
        for a in range(m):
            out[a] += sign * node[a]
        k -= k & (-k)
    return c


cdef inline void _sweep_above(intp_t start, intp_t stop, const double* f, const intp_t* perm, const intp_t* rank,
                              const double* vals, intp_t m, intp_t n_levels, count_t* cnt, double* fen_sum,
                              double* cnt_plus, double* sum_plus, const double* weight) noexcept nogil:
    """The second sweep of query_sweep: l^+ and gamma^+ (i below j, y_j > y_i): partners j with f_j - f_i < 1, a
    prefix of the sorted order growing as f_i rises; the ranks above y_i are the total minus the prefix up to y_i.
    count_t double: each partner j counts weight[j] (weight unused otherwise)."""
    cdef intp_t l = stop - start, k, p = 0, i, j, a
    cdef double fi
    cdef double* row
    cdef double* total = fen_sum  # node 0: the running total
    cdef count_t wj = 1
    _fen_reset(n_levels, m, cnt, fen_sum)
    for k in range(l):
        i = perm[start + k]
        fi = f[i]
        while p < l:
            j = perm[start + p]
            if not (f[j] - fi < 1.0):
                break
            if count_t is double:
                wj = weight[j]
            _fen_add(n_levels, m, cnt, fen_sum, rank[j], wj, vals + (j - start) * m)
            cnt[0] += wj
            for a in range(m):
                if count_t is double:
                    total[a] += wj * vals[(j - start) * m + a]
                else:
                    total[a] += vals[(j - start) * m + a]
            p += 1
        row = sum_plus + (i - start) * m
        for a in range(m):
            row[a] = total[a]
        cnt_plus[i - start] = <double>(cnt[0] - _fen_prefix(m, cnt, fen_sum, rank[i], -1.0, row))


cdef inline double query_sweep(intp_t start, intp_t stop, const double* f, const intp_t* perm, const intp_t* rank,
                               const double* vals, intp_t m, intp_t n_levels, intp_t* fen_cnt, double* fen_sum,
                               double* cnt_minus, double* sum_minus, double* cnt_plus, double* sum_plus,
                               const double* weight) noexcept nogil:
    """l^-, gamma^-, l^+, gamma^+ (module docstring) of the documents at positions perm[start:stop], for m vectors of
    values at once (m = 1: one vector; the Hessian block of _pairloss.pyx: the m columns of a working set). Returns
    the number of active pairs of the query (a count, whatever the weights).

    Inline: a caller passing m = 1 gets the one-vector loops without the inner ones.

    perm[start:stop] lists the positions of one query by increasing f; f, rank (dense label ranks,
    0 .. n_levels-1) and ``weight`` are indexed by position. vals holds m values per position of the query,
    row-major from position start (vals[(k - start) m + a]); the sums are written the same way, the counts at
    k - start. fen_cnt: n_levels + 1 scratch entries; fen_sum: (n_levels + 1) m, or (n_levels + 1)(m + 1) with
    weights (their Fenwick tree of weights follows the sums).

    ``weight`` NULL: unweighted. Otherwise every pair (i, j), i preferred, counts with weight[i] (the module
    docstring's weighted sums): l_i^- and gamma_i^- are multiplied by weight[i] after the first sweep, and the
    second sweep inserts each partner j with its weight, so that l_i^+ = sum of weight[j] and gamma_i^+ = sum of
    weight[j] z_j over its active partners above.
    """
    cdef intp_t l = stop - start, k, p, i, j, a, c, active = 0
    cdef double fi, wi
    cdef double* row
    # i above j (y_j < y_i): partners j with f_j - f_i > -1, a suffix of the sorted order growing as f_i falls
    _fen_reset(n_levels, m, fen_cnt, fen_sum)
    p = l
    for k in range(l - 1, -1, -1):
        i = perm[start + k]
        fi = f[i]
        while p > 0:
            j = perm[start + p - 1]
            if not (f[j] - fi > -1.0):
                break
            _fen_add(n_levels, m, fen_cnt, fen_sum, rank[j], 1, vals + (j - start) * m)
            p -= 1
        row = sum_minus + (i - start) * m
        for a in range(m):
            row[a] = 0.0
        c = _fen_prefix(m, fen_cnt, fen_sum, rank[i] - 1, 1.0, row)
        cnt_minus[i - start] = <double>c
        active += c
    if weight == NULL:
        _sweep_above(start, stop, f, perm, rank, vals, m, n_levels, fen_cnt, fen_sum, cnt_plus, sum_plus, NULL)
        return <double>active
    _sweep_above(start, stop, f, perm, rank, vals, m, n_levels, fen_sum + (n_levels + 1) * m, fen_sum, cnt_plus,
                 sum_plus, weight)
    for i in range(start, stop):
        wi = weight[i]
        cnt_minus[i - start] *= wi
        row = sum_minus + (i - start) * m
        for a in range(m):
            row[a] *= wi
    return <double>active
