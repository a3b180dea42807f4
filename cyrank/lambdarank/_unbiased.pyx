"""The lambdas of Unbiased LambdaMART with position biases at both ends of a pair (Hu, Wang, Peng & Li, "Unbiased
LambdaMART: An Unbiased Pairwise Learning-to-Rank Algorithm", WWW 2019, sections 3-4), and the per-position losses
from which the biases are estimated.

Rows come grouped by query (a session) and, inside a query, in increasing label order; ``position[i]`` is the
display position of row i (0 = top), an index into ``t_plus`` and ``t_minus``. For every pair (i, j) of a query
with y_i > y_j (clicked i, unclicked j with click labels), score gap u = s_i - s_j, rho = 1 / (1 + exp(sigma u))
and the pair factor f_ij = c_i / (t+_{p(i)} t-_{p(j)}) (c_i the sample weight of the preferred row, 1 without):

    loss      L_ij = c_i |dZ_ij| log(1 + exp(-sigma u))
    gradient  dC/ds_i = -sigma rho |dZ_ij| f_ij,  dC/ds_j = +sigma rho |dZ_ij| f_ij   (summed per row: lambda)
    weight    sigma^2 rho (1 - rho) |dZ_ij| f_ij added to both rows (the Gauss-Newton diagonal)
    cost      sum_ij L_ij / (t+_{p(i)} t-_{p(j)})                     (the return value)
    per position (the sums of Hu et al.'s bias update, section 4):
              loss_plus[k]  = sum over pairs with p(i) = k of L_ij / t-_{p(j)}
              loss_minus[k] = sum over pairs with p(j) = k of L_ij / t+_{p(i)}

|dZ_ij| is 1 for RankNet and, for NDCG@k, |g_i - g_j| |D_i - D_j| / IDCG@k (g = 2^y - 1, D(r) = 1 / log2(r + 2) for
0-based r < k, else 0; k = 0: every position) on the ranking by decreasing score with equal scores ranked by
increasing label, D_i the mean of D over the positions of row i's block (the rows of its query with its score and
its label). That is the expectation of |dZ_ij| over the orders of each block (a pair's two blocks never overlap,
so the sign of D_i - D_j is the same for every order): the "pessimistic" tie rule of cyrank.lambdarank._lambdas,
whose lambdas these equal when t+ = t- = 1.

``norm`` (LightGBM's lambdarank_norm, as _lambdas): once the query's scores are not all equal, |dZ_ij| is divided
by 0.01 + |s_i - s_j| (in the lambdas and in L_ij); and the query's lambdas and weights are scaled by log2(1 + S) /
S, S = sum over its pairs of 2 sigma rho |dZ_ij| f_ij (the debiased lambdas, as XGBoost's lambdarank_normalization
sums them; the cost and the per-position losses are not scaled).

Cost O(n_q log n_q) to rank a query plus one O(1) step per pair (O(n_q^2) pairs at most; click sessions are
short). Parallel over a fixed partition of the queries into chunks (cyrank._parallel): each chunk accumulates its
per-position sums and cost query by query, in the given order, each query's pairs in label order, and the chunks'
sums are added in chunk order, so the result does not depend on the number of threads.
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport exp2, log2
from libc.stdlib cimport free, malloc

from cyrank._math cimport log1pexp, pair_sigmoid
from cyrank._parallel cimport (balanced_chunks, chunk_count, padded_width, product_threads, sum_chunks,
                               zero_row)
from cyrank._sort cimport KeyIndex, introsort
from cyrank._typedefs cimport intp_t

cdef enum:  # the metric codes of cyrank.lambdarank._lambdas
    _RANKNET = 0
    _NDCG = 1
RANKNET, NDCG = _RANKNET, _NDCG


cdef inline double _discount(intp_t r, intp_t k) noexcept nogil:
    """D(r) = 1 / log2(r + 2) for r < k, else 0 (the expression of _lambdas, so the same bits)."""
    if r < k:
        return 1.0 / log2(r + 2.0)
    return 0.0


cdef double _query(const double* s, const double* y, const intp_t* pos, const double* w, intp_t n,
                   const double* t_plus, const double* t_minus, int metric, intp_t k, double sigma, bint norm,
                   double* lam, double* hess, double* loss_plus, double* loss_minus, KeyIndex* rec,
                   double* dbar, double* gain) noexcept nogil:
    """One query's lambdas, weights and per-position losses (arrays at its first row); its cost. ``rec``,
    ``dbar`` and ``gain``: work arrays of the query's length."""
    cdef intp_t i, j, a, b, r, run, kk = k if k > 0 else n
    cdef double idcg = 0.0, mean, c, dz, u, rho, rho1, cost, factor, lam_ij, h_ij, total = 0.0
    cdef double top = s[0], low = s[0], sum_lambda = 0.0
    cdef bint distance
    for i in range(n):
        lam[i] = 0.0
        hess[i] = 0.0
        top = s[i] if s[i] > top else top
        low = s[i] if s[i] < low else low
    distance = norm and top > low  # LightGBM's score distance only once the query's scores differ
    if n < 2 or y[0] == y[n - 1]:
        return 0.0
    if metric == _NDCG:
        for i in range(n):
            gain[i] = exp2(y[i]) - 1.0
        for r in range(n if kk > n else kk):  # the ideal ranking: the label order reversed
            idcg += gain[n - 1 - r] * _discount(r, kk)
        if idcg <= 0.0:
            return 0.0
        # the ranking: decreasing score, equal scores by increasing label (the rows' order), so that the rows of a
        # (score, label) block are contiguous; each row gets its block's mean discount
        for i in range(n):
            rec[i].key = -s[i]
            rec[i].index = i
        introsort(rec, n)
        a = 0
        while a < n:
            b = a + 1
            while b < n and rec[b].key == rec[a].key and y[rec[b].index] == y[rec[a].index]:
                b += 1
            mean = 0.0
            for r in range(a, b):
                mean += _discount(r, kk)
            mean /= <double> (b - a)
            for r in range(a, b):
                dbar[rec[r].index] = mean
            a = b
    run = 0  # the first row of row i's label
    for i in range(n):
        if y[i] != y[run]:
            run = i
        c = 1.0 if w == NULL else w[i]
        if run == 0 or c == 0.0:
            continue
        for j in range(run):
            u = s[i] - s[j]
            dz = 1.0
            if metric == _NDCG:
                dz = (gain[i] - gain[j]) * (dbar[i] - dbar[j] if dbar[i] >= dbar[j] else dbar[j] - dbar[i]) / idcg
            if distance:
                dz = dz / (0.01 + (u if u >= 0.0 else -u))
            rho = pair_sigmoid(-sigma * u, &rho1)
            factor = c / (t_plus[pos[i]] * t_minus[pos[j]])
            lam_ij = sigma * rho * dz * factor
            h_ij = sigma * sigma * rho * rho1 * dz * factor
            lam[i] -= lam_ij
            lam[j] += lam_ij
            hess[i] += h_ij
            hess[j] += h_ij
            sum_lambda += 2.0 * lam_ij
            cost = c * dz * log1pexp(-sigma * u)
            loss_plus[pos[i]] += cost / t_minus[pos[j]]
            loss_minus[pos[j]] += cost / t_plus[pos[i]]
            total += cost / (t_plus[pos[i]] * t_minus[pos[j]])
    if norm and sum_lambda > 0.0:
        factor = log2(1.0 + sum_lambda) / sum_lambda
        for i in range(n):
            lam[i] *= factor
            hess[i] *= factor
    return total


def joint_lambdas(const double[::1] scores, const double[::1] y, const intp_t[::1] offsets,
                  const intp_t[::1] position, const double[::1] t_plus, const double[::1] t_minus, weight,
                  int metric, intp_t k, double sigma, bint norm, double[::1] lam, double[::1] hess,
                  double[::1] loss_plus, double[::1] loss_minus, intp_t parallel_min_rows=-1):
    """Fill ``lam``, ``hess`` (per row) and ``loss_plus``, ``loss_minus`` (per position) as the module docstring
    says; return the cost. ``weight``: None or c per row (float64). ``metric``: RANKNET or NDCG; ``k``: NDCG's
    cut-off (0: none); ``norm``: LightGBM's lambdarank_norm (module docstring); ``parallel_min_rows``: fewer rows
    run on one thread (< 0: cyrank._parallel's default). The caller guarantees the layout: rows grouped by
    ``offsets`` (int64, from 0 to n), labels increasing inside a query, 0 <= position < len(t_plus) = len(t_minus)
    = len(loss_plus) = len(loss_minus), t+ and t- > 0."""
    cdef intp_t n = scores.shape[0], n_q = offsets.shape[0] - 1, n_pos = t_plus.shape[0], q, c, m, longest = 1
    cdef intp_t width = 2 * n_pos + 1, n_threads, n_chunks, tid
    cdef const double[::1] w_view
    cdef const double* w = NULL
    cdef const double* w_q
    cdef double* row
    cdef KeyIndex* rec
    cdef double* dbar
    cdef double* gain
    if not (y.shape[0] == n and position.shape[0] == n and lam.shape[0] == n and hess.shape[0] == n
            and t_minus.shape[0] == n_pos and loss_plus.shape[0] == n_pos and loss_minus.shape[0] == n_pos
            and n_q >= 0 and offsets[0] == 0 and offsets[n_q] == n):
        raise ValueError("joint_lambdas: inconsistent array lengths")
    if metric != _RANKNET and metric != _NDCG:
        raise ValueError(f"joint_lambdas: metric code {metric} is neither RANKNET nor NDCG")
    if weight is not None:
        w_view = weight
        if w_view.shape[0] != n:
            raise ValueError("joint_lambdas: weight has the wrong length")
        w = &w_view[0] if n else NULL
    for q in range(n_q):
        m = offsets[q + 1] - offsets[q]
        if m > longest:
            longest = m
    n_threads = product_threads(n, n_q, parallel_min_rows)
    n_chunks = chunk_count(n_q, width, n, n_threads)
    # chunk c: queries bounds[c]:bounds[c + 1], balanced by rows; acc[c]: its loss_plus, loss_minus and cost
    cdef intp_t[::1] bounds = np.empty(n_chunks + 1, dtype=np.int64)
    cdef double[:, ::1] acc = np.empty((n_chunks, padded_width(width)))
    balanced_chunks(&offsets[0], n_q, n_chunks, &bounds[0])
    rec = <KeyIndex*> malloc(n_threads * longest * sizeof(KeyIndex))
    dbar = <double*> malloc(n_threads * longest * sizeof(double))
    gain = <double*> malloc(n_threads * longest * sizeof(double))
    if rec == NULL or dbar == NULL or gain == NULL:
        free(rec)
        free(dbar)
        free(gain)
        raise MemoryError()
    tid = 0
    try:
        with nogil, parallel(num_threads=n_threads):
            tid = threadid()
            for c in prange(n_chunks, schedule="dynamic", chunksize=1):
                row = &acc[c, 0]
                zero_row(row, width)
                for q in range(bounds[c], bounds[c + 1]):
                    m = offsets[q]
                    w_q = NULL
                    if w != NULL:
                        w_q = w + m
                    row[2 * n_pos] += _query(&scores[m], &y[m], &position[m], w_q, offsets[q + 1] - m, &t_plus[0],
                                             &t_minus[0], metric, k, sigma, norm, &lam[m], &hess[m], row,
                                             row + n_pos, rec + tid * longest, dbar + tid * longest,
                                             gain + tid * longest)
    finally:
        free(rec)
        free(dbar)
        free(gain)
    cdef double[::1] sums = np.empty(width)
    sum_chunks(acc, sums)  # in chunk order
    loss_plus[:] = sums[:n_pos]
    loss_minus[:] = sums[n_pos:2 * n_pos]
    return sums[2 * n_pos]
