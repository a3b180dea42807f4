"""Order-statistic sums over the preference pairs of a query in O(l log l) (Kuo, Lee & Lin, SDM 2014, section 3.2,
Appendix B; Airola et al. 2011, Lee & Lin 2014).

For the scores f of the l documents of one query, with labels y, a pair (i, j) with y_i > y_j is *active*
(a support pair, SV in the seed) when its margin is below one::

    f_i - f_j < 1        (tested as  f_j - f_i > -1 , the difference rounded once)

For every document i and values z (the scores themselves, or any vector in a Hessian-vector product) this
module computes

    l_i^-   = |{j : y_j < y_i, (i, j) active}|      gamma_i^- = sum of z_j over those j      (i ranked above j)
    l_i^+   = |{j : y_j > y_i, (j, i) active}|      gamma_i^+ = sum of z_j over those j      (i ranked below j)

without enumerating pairs. With row weights w (sample_weight: the pair (i, j), i preferred, counts with w_i;
Joachims, Swaminathan & Schnabel, WSDM 2017) the same sweeps give the weighted sums

    l_i^-   = w_i |{j : y_j < y_i, (i, j) active}|     gamma_i^- = w_i * (sum of z_j over those j)
    l_i^+   = sum of w_j over {j : y_j > y_i, (j, i) active}     gamma_i^+ = sum of w_j z_j over those j

(the trees carry weights and weighted sums in the second sweep; the first is scaled by w_i afterwards), and every
formula of _pairloss.pyx holds with them unchanged.

Sort the query by f once. Visiting documents by decreasing f, the set
{j : f_j - f_i > -1} only grows, so a pointer inserts each document once into a Fenwick tree indexed by
label rank (0 .. n_levels-1) holding counts and sums of z; l_i^- and gamma_i^- are then a prefix query
over the ranks below y_i. Visiting by increasing f gives l_i^+ and gamma_i^+ as suffix queries over the
ranks above y_i. Each insertion and query costs O(log n_levels), the sort O(l log l). The same sweeps serve m
vectors z at once (nodes of m sums, O(m log n_levels) per step): the working-set Hessian of _pairloss.pyx.

Why a Fenwick tree over label ranks rather than a balanced order-statistic tree (AVL / red-black) keyed by
label: the key set (the label levels of the query) is known before the sweep, so no rebalancing or node
allocation is needed; the tree is one flat array of n_levels + 1 (count, sum) entries, reset in O(n_levels)
per query and cache resident; insert and prefix query are a handful of additions in O(log n_levels)
<= O(log l). With 3 levels it costs about what direct counting costs; with thousands of real-valued levels it
keeps the O(l log l) bound that direct counting (O(l k)) loses. A balanced BST gives the same bound with
pointer chasing and a larger constant. The order of the sweep (the sort by f) is the only O(l log l) part;
Hessian-vector products reuse it, so a CG step costs O(l log n_levels) here.

Scores are centered per query (minus the median score) before the sums are formed, so that large common
offsets of f do not cancel catastrophically in expressions such as l_i f_i - sum f_j; a pair is active
when the centered difference f_j - f_i exceeds -1.

All counts are int64 (a query of 1e5 documents has up to 5e9 pairs).
"""
import numpy as np

from cyrank._sort cimport introsort
from cyrank._typedefs cimport intp_t

# numpy dtype of the KeyIndex struct (scratch memory of sort_by_key)
KEY_INDEX_DTYPE = np.dtype([("key", np.float64), ("index", np.int64)])


# ------------------------------------------------------------------------------------------------ sorting
cdef void sort_by_key(intp_t* a, intp_t n, const double* key, KeyIndex* scratch) noexcept nogil:
    """Sort the indices a[0:n] by increasing key[a[k]], equal keys by increasing index (the shared introsort of
    cyrank/_sort.pxd), O(n log n) worst case; scratch holds n records."""
    cdef intp_t k
    for k in range(n):
        scratch[k].key = key[a[k]]
        scratch[k].index = a[k]
    introsort(scratch, n)
    for k in range(n):
        a[k] = scratch[k].index


cdef void center_segment(intp_t start, intp_t stop, const intp_t* perm, double* values) noexcept nogil:
    """values[perm[k]] -= values[perm[mid]] for k in start:stop (mid = the middle sorted position)."""
    cdef intp_t k
    cdef double c
    if stop <= start:
        return
    c = values[perm[start + (stop - start) // 2]]
    for k in range(start, stop):
        values[perm[k]] -= c


# ------------------------------------------------------------------------------------------- Python access
def pair_sums(const double[::1] f, const intp_t[::1] rank, const intp_t[::1] offsets,
              const intp_t[::1] n_levels, const double[::1] vals=None, bint center=False,
              const double[::1] weights=None):
    """Per document: (l_minus, gamma_minus, l_plus, gamma_plus) for query-contiguous data (testing and benchmarks).

    f: scores; rank: dense label rank of each document within its query; offsets: query q holds
    documents offsets[q]:offsets[q+1]; n_levels: number of label levels of each query; vals: the summed
    values (default: f itself). ``center=True`` centers f per query first (as the solvers do).
    Counts are returned as int64; with ``weights`` (one per document) the weighted sums of the module docstring,
    the counts then float64.
    """
    cdef intp_t n = f.shape[0], nq = offsets.shape[0] - 1, q, k, max_lev = 1
    cdef const double* wt = NULL
    if rank.shape[0] != n or (vals is not None and vals.shape[0] != n) or n_levels.shape[0] != nq or (
            weights is not None and weights.shape[0] != n):
        raise ValueError("f, rank, vals and weights must have the same length; n_levels one entry per query")
    if nq < 0 or offsets[0] != 0 or offsets[nq] != n:
        raise ValueError("offsets must run from 0 to len(f)")
    for q in range(nq):
        if n_levels[q] > max_lev:
            max_lev = n_levels[q]
    for k in range(n):
        if rank[k] < 0:
            raise ValueError("label ranks must be >= 0")
    fc = np.array(f, dtype=np.float64, copy=True)
    vc = fc if vals is None else np.array(vals, dtype=np.float64, copy=True)
    perm = np.arange(n, dtype=np.int64)
    out = np.zeros((4, n), dtype=np.float64)
    fen_cnt = np.zeros(max_lev + 1, dtype=np.int64)
    fen_sum = np.zeros(2 * (max_lev + 1), dtype=np.float64)
    cdef double[::1] fv = fc, vv = vc
    cdef intp_t[::1] pv = perm, fc_v = fen_cnt
    cdef double[::1] fs_v = fen_sum
    cdef double[:, ::1] o = out
    scratch = np.zeros(max(n, 1), dtype=KEY_INDEX_DTYPE)
    cdef KeyIndex[::1] sc = scratch
    count_type = np.int64 if weights is None else np.float64
    if n == 0:
        z = np.zeros(0)
        return z.astype(count_type), z, z.astype(count_type), z
    if weights is not None:
        wt = &weights[0]
    with nogil:
        for q in range(nq):
            if offsets[q + 1] < offsets[q]:
                continue
            sort_by_key(&pv[offsets[q]], offsets[q + 1] - offsets[q], &fv[0], &sc[0])
            if center:
                center_segment(offsets[q], offsets[q + 1], &pv[0], &fv[0])
            k = offsets[q]
            query_sweep(k, offsets[q + 1], &fv[0], &pv[0], &rank[0], &vv[0] + k, 1, n_levels[q], &fc_v[0],
                        &fs_v[0], &o[0, 0] + k, &o[1, 0] + k, &o[2, 0] + k, &o[3, 0] + k, wt)
    return out[0].astype(count_type), out[1], out[2].astype(count_type), out[3]


def argsort_segments(const double[::1] key, const intp_t[::1] offsets):
    """Indices sorting key[offsets[q]:offsets[q+1]] for every q, with the introsort the solvers use."""
    cdef intp_t n = key.shape[0], nq = offsets.shape[0] - 1, q
    perm = np.arange(n, dtype=np.int64)
    if n == 0:
        return perm
    scratch = np.zeros(n, dtype=KEY_INDEX_DTYPE)
    cdef KeyIndex[::1] sc = scratch
    cdef intp_t[::1] pv = perm
    with nogil:
        for q in range(nq):
            sort_by_key(&pv[offsets[q]], offsets[q + 1] - offsets[q], &key[0], &sc[0])
    return perm
