"""RankNet and LambdaRank gradients ("lambdas") per document (Burges, "From RankNet to LambdaRank to LambdaMART:
An Overview", MSR-TR-2010-82, sections 2-4).

Rows come grouped by query and, inside a query, in increasing label order. For every pair (i, j) of a query with
y_i > y_j and score gap u = s_i - s_j, with rho = 1 / (1 + exp(sigma u)) (a sigmoid, stable for any gap):

    cost      C_ij = |dZ_ij| log(1 + exp(-sigma u))        (RankNet: |dZ_ij| = 1)
    gradient  dC/ds_i = -sigma rho |dZ_ij|,  dC/ds_j = +sigma rho |dZ_ij|   (summed per document: lambda)
    weight    sigma^2 rho (1 - rho) |dZ_ij| added to both documents (the diagonal of the Gauss-Newton Hessian,
              the "hessian" LightGBM's custom objectives take)

|dZ_ij| is the change of the query's metric when i and j swap places in the current ranking. Positions: sort by
decreasing score, equal scores by increasing label (pessimistic ties, as cyrank.metrics), 0-based r_i:

- NDCG@k: |g_i - g_j| |D(r_i) - D(r_j)| / IDCG@k, g = 2^y - 1, D(r) = 1 / log2(r + 2) for r < k, else 0; IDCG
  from the label order, once per query. O(1) per pair.
- ERR@k: R_r = (2^y - 1) / 2^max_rel at position r, p_r = prod_{t<r} (1 - R_t), w_r = 1/(r + 1) for r < k, else 0,
  ERR = sum_r R_r p_r w_r. Swapping positions a < b changes the terms a..b only:
  dERR = (R_b - R_a) p_a w_a + ((1 - R_b)/(1 - R_a) - 1) sum_{a<r<b} R_r p_r w_r
         + (R_a (1 - R_b)/(1 - R_a) - R_b) p_b w_b,
  exact, O(1) per pair with prefix sums of R_r p_r w_r (O(n) per query).
- AP (MAP): relevant = y > threshold, n_rel of them, c_r = relevant documents at positions <= r. A relevant
  document at a and an irrelevant one at b > a: dAP = (c_b/(b+1) - c_a/(a+1) - sum_{a<r<b relevant} 1/(r+1)) / n_rel;
  the irrelevant one above (at a, the relevant at b): dAP = ((c_a + 1)/(a+1) + sum_{a<r<b relevant} 1/(r+1) -
  c_b/(b+1)) / n_rel. O(1) per pair with prefix sums; 0 when both are (ir)relevant.

``truncation`` > 0 keeps only the pairs with one document in the top ``truncation`` positions (LightGBM's
lambdarank_truncation_level). Cost per query: O(n log n) for the sort plus O(pairs). Queries run in parallel
(OpenMP), each writing only its own rows; the loss is summed in query order.
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, exp, fabs, log1p, log2, pow

from cyrank._math cimport sigmoid
from cyrank._parallel cimport product_threads
from cyrank._sort cimport KeyIndex, introsort
from cyrank._typedefs cimport intp_t

RANKNET, NDCG, ERR, AP = 0, 1, 2, 3
cdef double TINY = 1e-250  # below it, exp(sigma s - max) has lost digits: the per-pair exponential instead

cdef enum:
    _RANKNET = 0
    _NDCG = 1
    _ERR = 2
    _AP = 3


cdef double err_after_swap(const double* R, double p_a, intp_t a, intp_t b, intp_t k) noexcept nogil:
    """sum_{a<=r<=b, r<k} R'_r p'_r / (r + 1) after positions a and b swap (R' = R with R_a, R_b exchanged),
    p'_a = p_a; O(b - a)."""
    cdef intp_t r
    cdef double p = p_a, total = 0.0, rr
    for r in range(a, min(b + 1, k)):
        rr = R[b] if r == a else (R[a] if r == b else R[r])
        total = total + rr * p / (r + 1.0)
        p = p * (1.0 - rr)
    return total


cdef double query_lambdas(const double* s, const double* y, const intp_t* tie, intp_t n, int metric, intp_t k,
                          intp_t truncation, double sigma, double max_rel, double threshold, bint norm,
                          bint with_cost, double* lam, double* hess, KeyIndex* rec, intp_t* pos, intp_t* inv,
                          double* val, double* pre, double* cnt, double* ex) noexcept nogil:
    """Lambdas of one query (rows 0..n-1, labels ascending) into lam and hess; returns its cost (0 unless
    ``with_cost``)."""
    cdef intp_t t, r, i, j, a, b, lo_end
    cdef double idcg = 0.0, loss = 0.0, delta, x, e, rho, rho1, p, n_rel = 0.0, ra, rb, ratio, mid, wa, wb
    cdef double top = -INFINITY, low = INFINITY, total = 0.0, factor, inv_idcg, inv_sum, g, h
    cdef double si, vi, di, exi, lam_i, hess_i
    cdef intp_t pi
    cdef bint fast
    for t in range(n):
        lam[t] = 0.0
        hess[t] = 0.0
    if n < 2 or y[0] == y[n - 1]:
        return 0.0
    for t in range(n):
        rec[t].key = -s[t]
        rec[t].index = t if tie == NULL else tie[t]  # equal scores: by label (rows are label-ascending) or tie[t]
        if tie != NULL:
            inv[tie[t]] = t
    introsort(rec, n)
    for r in range(n):
        pos[rec[r].index if tie == NULL else inv[rec[r].index]] = r
    if metric == _NDCG:
        # val[t] = gain of row t; pre[r] = discount of position r (0 beyond k): O(n) powers and logs per query
        for t in range(n):
            val[t] = pow(2.0, y[t]) - 1.0
        for r in range(n):
            pre[r] = 1.0 / log2(r + 2.0) if r < k else 0.0
        for r in range(min(n, k)):  # ideal order: labels descending = rows n-1, n-2, ...
            idcg = idcg + val[n - 1 - r] * pre[r]
        if idcg <= 0.0:
            return 0.0
    elif metric == _ERR:
        # val[r] = R at position r; pre[r] = sum_{t<r} R_t p_t w_t; cnt[r] = p_r
        p = 1.0
        pre[0] = 0.0
        for r in range(n):
            val[r] = pow(2.0, y[rec[r].index] - max_rel) - pow(2.0, -max_rel)  # (2^y - 1) / 2^max_rel
            cnt[r] = p
            pre[r + 1] = pre[r] + (val[r] * p / (r + 1.0) if r < k else 0.0)
            p = p * (1.0 - val[r])
    elif metric == _AP:
        # cnt[r] = relevant at positions <= r; pre[r] = sum_{t<r relevant} 1/(t+1)
        pre[0] = 0.0
        for r in range(n):
            i = rec[r].index
            n_rel = n_rel + (1.0 if y[i] > threshold else 0.0)
            cnt[r] = n_rel
            pre[r + 1] = pre[r] + (1.0 / (r + 1.0) if y[i] > threshold else 0.0)
        if n_rel == 0.0:
            return 0.0
    # ex[t] = exp(sigma s_t - max): then rho = ex_j / (ex_i + ex_j) needs no exponential per pair
    for t in range(n):
        top = max(top, sigma * s[t])
        low = min(low, sigma * s[t])
    for t in range(n):
        ex[t] = exp(sigma * s[t] - top)
    # pairs: i above (larger label) j; rows are label-ascending, so j < lo_end = the first row of i's label
    lo_end = 0
    inv_idcg = 1.0 / idcg if idcg > 0.0 else 0.0
    fast = (metric == _NDCG or metric == _RANKNET) and not with_cost
    for i in range(1, n):
        if y[i] != y[i - 1]:
            lo_end = i
        # row i's values in registers: the stores into lam and hess below could alias them otherwise
        pi = pos[i]
        si = s[i]
        vi = val[i]
        di = pre[pi] if metric == _NDCG else 0.0
        exi = ex[i]
        lam_i = 0.0
        hess_i = 0.0
        if fast:  # NDCG or RankNet weights without cost: LambdaMART's call (also with LightGBM's settings)
            for j in range(lo_end):
                if truncation > 0 and pi >= truncation and pos[j] >= truncation:
                    continue
                delta = fabs((vi - val[j]) * (di - pre[pos[j]])) * inv_idcg if metric == _NDCG else 1.0
                if delta == 0.0:  # both beyond k (most pairs of a long query at NDCG@k)
                    continue
                if norm and top > low:
                    delta = delta / (0.01 + fabs(si - s[j]))
                if exi > TINY and ex[j] > TINY:
                    inv_sum = 1.0 / (exi + ex[j])
                    rho = ex[j] * inv_sum
                    rho1 = exi * inv_sum
                else:
                    x = sigma * (s[j] - si)
                    e = exp(-fabs(x))
                    rho = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
                    rho1 = e / (1.0 + e) if x >= 0.0 else 1.0 / (1.0 + e)
                g = sigma * rho * delta
                h = sigma * sigma * rho * rho1 * delta
                lam_i -= g
                lam[j] += g
                hess_i += h
                hess[j] += h
                total = total + 2.0 * g
            lam[i] += lam_i
            hess[i] += hess_i
            continue
        for j in range(lo_end):
            a = min(pi, pos[j])
            b = max(pi, pos[j])
            if truncation > 0 and a >= truncation:
                continue
            if metric == _RANKNET:
                delta = 1.0
            elif metric == _NDCG:
                delta = fabs((vi - val[j]) * (di - pre[pos[j]])) * inv_idcg
            elif metric == _ERR:
                if a >= k:
                    continue
                ra = val[a]
                rb = val[b]
                wa = 1.0 / (a + 1.0)
                wb = 1.0 / (b + 1.0) if b < k else 0.0
                if ra < 1.0:
                    ratio = (1.0 - rb) / (1.0 - ra)
                    mid = pre[min(b, k)] - pre[a + 1] if min(b, k) > a + 1 else 0.0
                    delta = fabs((rb - ra) * cnt[a] * wa + (ratio - 1.0) * mid + (ra * ratio - rb) * cnt[b] * wb)
                else:  # R_a = 1 in floating point (labels of 54 and more): nothing below a counted; sum directly
                    delta = fabs(err_after_swap(val, cnt[a], a, b, k) - ra * cnt[a] * wa)
            else:  # AP
                if (y[i] > threshold) == (y[j] > threshold):
                    continue
                mid = pre[b] - pre[a + 1]
                if pi < pos[j]:  # the relevant one (i) above
                    delta = (cnt[b] / (b + 1.0) - cnt[a] / (a + 1.0) - mid) / n_rel
                else:
                    delta = ((cnt[a] + 1.0) / (a + 1.0) + mid - cnt[b] / (b + 1.0)) / n_rel
                delta = fabs(delta)
            if delta == 0.0:
                continue
            if norm and top > low:  # LightGBM's lambdarank_norm: the pair's weight over its score distance
                delta = delta / (0.01 + fabs(si - s[j]))
            # rho = sigmoid(x) and 1 - rho, x = sigma (s_j - s_i); cost log(1 + e^x)
            if exi > TINY and ex[j] > TINY:
                inv_sum = 1.0 / (exi + ex[j])
                rho = ex[j] * inv_sum
                rho1 = exi * inv_sum
                if with_cost:
                    loss = loss + delta * log1p(ex[j] / exi)
            else:  # a gap of hundreds: one exponential of -|x| (no overflow, no 0/0)
                x = sigma * (s[j] - si)
                e = exp(-fabs(x))
                rho = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
                rho1 = e / (1.0 + e) if x >= 0.0 else 1.0 / (1.0 + e)
                if with_cost:
                    loss = loss + delta * ((x if x > 0.0 else 0.0) + log1p(e))
            g = sigma * rho * delta
            h = sigma * sigma * rho * rho1 * delta
            lam_i -= g
            lam[j] += g
            hess_i += h
            hess[j] += h
            total = total + 2.0 * g
        lam[i] += lam_i
        hess[i] += hess_i
    if norm and total > 0.0:  # ... and the query's lambdas scaled by log2(1 + S) / S, S = 2 sum |lambda_ij|
        factor = log2(1.0 + total) / total
        for t in range(n):
            lam[t] *= factor
            hess[t] *= factor
    return loss


def lambdas(const double[::1] s, const double[::1] y, const intp_t[::1] offsets, int metric, intp_t k,
            intp_t truncation, double sigma, double max_rel, double threshold, double[::1] lam, double[::1] hess,
            intp_t parallel_min_rows=-1, bint with_cost=True, bint norm=False, const intp_t[::1] tie=None):
    """Lambdas and weights of every query (rows offsets[q]:offsets[q+1], labels ascending inside a query; module
    docstring) into lam and hess; returns the total cost (0 unless ``with_cost``: a log per pair less).
    k <= 0 means every position. ``tie`` (optional): per row a distinct rank inside its query (0 .. n_q - 1) that
    orders equal scores instead of the label (e.g. the input order, as LightGBM). ``norm``: LightGBM's
    lambdarank_norm, each pair's |dZ| divided by 0.01 + |s_i - s_j| (when the query's scores are not all equal)
    and the query's lambdas and weights scaled by log2(1 + S) / S, S = sum over pairs of 2 sigma rho |dZ|."""
    cdef intp_t n = s.shape[0], nq = offsets.shape[0] - 1, q, m = 0, tid
    cdef int nt = <int> product_threads(n, nq, parallel_min_rows)
    if y.shape[0] != n or lam.shape[0] != n or hess.shape[0] != n or offsets[nq] != n:
        raise ValueError("lambdas: wrong array sizes")
    if metric < _RANKNET or metric > _AP:
        raise ValueError(f"lambdas: unknown metric code {metric}")
    if k <= 0:
        k = n + 1
    for q in range(nq):
        m = max(m, offsets[q + 1] - offsets[q])
    cdef double[::1] loss = np.zeros(max(nq, 1))
    cdef KeyIndex[:, ::1] rec = np.zeros((max(nt, 1), max(m, 1)), dtype=[("key", np.float64), ("index", np.int64)])
    cdef intp_t[:, ::1] pos = np.zeros((max(nt, 1), 2 * max(m, 1)), dtype=np.int64)
    cdef const intp_t* tie_p = NULL
    if tie is not None:
        if tie.shape[0] != n:
            raise ValueError("lambdas: tie must have one entry per row")
        tie_p = &tie[0] if n else NULL
    cdef double[:, ::1] work = np.zeros((max(nt, 1), 4 * max(m, 1) + 1))
    tid = 0
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        for q in prange(nq, schedule="dynamic", chunksize=16):
            loss[q] = query_lambdas(&s[offsets[q]], &y[offsets[q]], tie_p + offsets[q] if tie_p != NULL else NULL,
                                    offsets[q + 1] - offsets[q], metric, k, truncation, sigma, max_rel, threshold,
                                    norm, with_cost, &lam[offsets[q]], &hess[offsets[q]], &rec[tid, 0],
                                    &pos[tid, 0], &pos[tid, m], &work[tid, 0], &work[tid, m],
                                    &work[tid, 2 * m + 1], &work[tid, 3 * m + 1])
    return float(np.sum(loss))


def ranknet_hess_vec(const double[::1] s, const double[::1] y, const intp_t[::1] offsets, double sigma,
                     const double[::1] v, double[::1] out, intp_t parallel_min_rows=-1):
    """out = H v, H the Hessian in the scores of the RankNet cost sum_{y_i > y_j} log(1 + exp(-sigma (s_i - s_j))):
    each pair adds sigma^2 rho (1 - rho) (v_i - v_j) to out_i and subtracts it from out_j. O(pairs)."""
    cdef intp_t n = s.shape[0], nq = offsets.shape[0] - 1, q, i, j, lo, hi, lo_end
    cdef int nt = <int> product_threads(n, nq, parallel_min_rows)
    cdef double rho, c
    if y.shape[0] != n or v.shape[0] != n or out.shape[0] != n:
        raise ValueError("ranknet_hess_vec: wrong array sizes")
    with nogil:
        for q in prange(nq, num_threads=nt, schedule="dynamic", chunksize=16):
            lo = offsets[q]
            hi = offsets[q + 1]
            for i in range(lo, hi):
                out[i] = 0.0
            lo_end = lo
            for i in range(lo + 1, hi):
                if y[i] != y[i - 1]:
                    lo_end = i
                for j in range(lo, lo_end):
                    rho = sigmoid(-sigma * (s[i] - s[j]))
                    c = sigma * sigma * rho * (1.0 - rho) * (v[i] - v[j])
                    out[i] += c
                    out[j] -= c
