"""The log-linear label-ranking loss over preference subgraphs, its gradient and Hessian products in the label
scores, and the weights of the boosting update (Dekel, Manning & Singer, NIPS 2003, sections 2-3, Fig. 3).

Scores S (n x L) with S[i, y] = f(x_i, y). Edge e of instance i (init -> term) has the margin
m_e = S[i, term e] - S[i, init e] (negative = agrees). Subgraph k of instance i (s_i subgraphs, members E_ik):

    L_ik = log(1 + sum_{e in E_ik} exp(m_e)),   loss = sum_i (w_i/s_i) sum_k L_ik        (natural log)

computed as M + log(exp(-M) + sum exp(m_e - M)), M = max(0, max m_e): no overflow for any finite margins.
With p_ke = exp(m_e) / (1 + sum_{e' in E_ik} exp(m_e')) (one per membership), the boosting weight of an edge is
q_e = sum_{k: e in E_ik} p_ke (Fig. 3), and the gradient in the scores is

    G[i, y] = (w_i/s_i) (sum_{e: term e = y} q_e - sum_{e: init e = y} q_e) = A[i, y] - B[i, y].

Hessian of L_ik in its margins: diag(p) - p p', so for a direction dS (dm_e = dS[i, term] - dS[i, init])
h_ke = p_ke (dm_e - sum_{e'} p_ke' dm_e') and dG[i, y] = (w_i/s_i)(sum_{term = y} h - sum_{init = y} h).
w_i: the instance weights (``weight``, a float64 array of n; None or empty: every w_i = 1, the unweighted path
with the same operations as before). p is the same with and without weights.
Each call is O(memberships + n L); instances run in parallel (OpenMP), each writing only its own rows. An
empty ``members`` array stands for the identity (membership t is edge t).

Graphs complete between label levels (cyrank.labelrank.graphs.Levels) under "domination" or "dominated" have the
level_* kernels instead (level_loss_grad, level_hess_scores, level_fused_pass, level_mean_curvature): the same
loss, gradient and Hessian products from suffix log-sum-exps over the levels, O(L) per instance whatever the
number of edges, with the instance's scores (n x L) as the state in place of p (the derivation is above
level_grad below).

The products with X (n x d, dense C-ordered or CSR, float32 or float64 as given) are :func:`product_into`,
S = X W or X' G (W, G, S float64): dense X through BLAS dgemm (a float32 X widened to
double a block of rows at a time, so it is never copied whole), CSR X by loops over its entries, all summing
in double.
"""
import numpy as np

from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY, exp, fabs, log, log1p, signbit
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_blas cimport dgemm

from cyrank._parallel cimport chunk_accumulators, chunk_count, product_threads, sum_chunks
from cyrank._typedefs cimport floating, index_t, intp_t


# a float32 X is widened to double this many values (of whole rows) at a time for dgemm
cdef enum:
    BLOCK_VALUES = 65536
    # fused_pass: rows per block (their scores and gradients stay in cache between the two products)
    BLOCK_ROWS = 256


cdef void dense_product(const floating* X, intp_t n, intp_t d, const double* M, intp_t L, double* out,
                        bint transpose) noexcept nogil:
    """out = X M (X n x d, M d x L, out n x L) or, with ``transpose``, out = X' M (M n x L, out d x L); all
    C-ordered. In BLAS's column-major terms out' = M' X' (dgemm "N", "N") or out' = M' X ("N", "T")."""
    cdef int Li = <int> L, di = <int> d, rows
    cdef double one = 1.0, zero = 0.0, beta
    cdef intp_t block = max(1, BLOCK_VALUES // max(d, 1)), i0, k
    cdef double* buf
    if n == 0 or d == 0 or L == 0:
        if transpose:
            for k in range(d * L):
                out[k] = 0.0
        else:
            for k in range(n * L):
                out[k] = 0.0
        return
    if floating is double:
        rows = <int> n
        if transpose:
            dgemm("N", "T", &Li, &di, &rows, &one, M, &Li, X, &di, &zero, out, &Li)
        else:
            dgemm("N", "N", &Li, &rows, &di, &one, M, &Li, X, &di, &zero, out, &Li)
    else:
        buf = <double*> malloc(block * d * sizeof(double))
        i0 = 0
        while i0 < n:
            rows = <int> min(block, n - i0)
            for k in range(rows * d):
                buf[k] = X[i0 * d + k]
            if transpose:
                beta = zero if i0 == 0 else one
                dgemm("N", "T", &Li, &di, &rows, &one, M + i0 * L, &Li, buf, &di, &beta, out, &Li)
            else:
                dgemm("N", "N", &Li, &rows, &di, &one, M, &Li, buf, &di, &zero, out + i0 * L, &Li)
            i0 += rows
        free(buf)


cdef void csr_times(const floating* X, const index_t* indices, const index_t* indptr, intp_t i0, intp_t rows,
                    const double* V, intp_t L, double* S) noexcept nogil:
    """S (rows x L) = rows i0 .. i0 + rows - 1 of a CSR X times V (d x L)."""
    cdef intp_t r, q, j, y
    cdef double x
    for r in range(rows):
        for y in range(L):
            S[r * L + y] = 0.0
        for q in range(indptr[i0 + r], indptr[i0 + r + 1]):
            x = X[q]
            j = indices[q]
            for y in range(L):
                S[r * L + y] += x * V[j * L + y]


cdef void csr_transpose_add(const floating* X, const index_t* indices, const index_t* indptr, intp_t i0,
                            intp_t rows, const double* G, intp_t L, double* acc) noexcept nogil:
    """acc (d x L) += (rows i0 .. i0 + rows - 1 of a CSR X)' G (rows x L)."""
    cdef intp_t r, q, j, y
    cdef double x
    for r in range(rows):
        for q in range(indptr[i0 + r], indptr[i0 + r + 1]):
            x = X[q]
            j = indices[q]
            for y in range(L):
                acc[j * L + y] += x * G[r * L + y]


def product_into(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                 intp_t n, intp_t d, const double[:, ::1] M, double[:, ::1] out, bint transpose):
    """out = X M (M d x L, out n x L) or, with ``transpose``, out = X' M (M n x L, out d x L); X as
    cyrank._linear.product_parts gives it (dense C-ordered, or CSR)."""
    cdef intp_t L = M.shape[1], k
    if (M.shape[0] != (n if transpose else d) or out.shape[0] != (d if transpose else n) or out.shape[1] != L
            or (dense and data.shape[0] != n * d) or (not dense and indptr.shape[0] != n + 1)):
        raise ValueError("product_into: wrong array sizes")
    if out.shape[0] * L == 0:
        return
    with nogil:
        if dense:
            dense_product(&data[0] if n * d else NULL, n, d, &M[0, 0] if M.shape[0] * L else NULL, L,
                          &out[0, 0], transpose)
        elif transpose:
            for k in range(d * L):
                (&out[0, 0])[k] = 0.0
            csr_transpose_add(&data[0] if data.shape[0] else NULL, &indices[0], &indptr[0], 0, n, &M[0, 0], L,
                              &out[0, 0])
        else:
            csr_times(&data[0] if data.shape[0] else NULL, &indices[0], &indptr[0], 0, n, &M[0, 0], L,
                      &out[0, 0])


cdef inline const intp_t* _members(const intp_t[::1] members) noexcept:
    """The kernels' members pointer: NULL for an empty array, which means the identity (members[t] = t: the
    decompositions whose subgraphs are runs of consecutive edges, cyrank.labelrank.graphs.Subgraphs)."""
    return &members[0] if members.shape[0] else NULL


cdef inline const double* _weights(const double[::1] weight, intp_t n) except? NULL:
    """The kernels' weight pointer: NULL for None or an empty array (every instance weighs 1), else the array of
    n instance weights."""
    if weight is None or weight.shape[0] == 0:
        return NULL
    if weight.shape[0] != n:
        raise ValueError(f"instance weights: {weight.shape[0]} for {n} instances")
    return &weight[0]


cdef inline double _scale(const double* weight, intp_t i, intp_t s_i) noexcept nogil:
    """w_i / s_i (w_i = 1 without weights)."""
    return (1.0 if weight == NULL else weight[i]) / s_i


cdef bint _memberships_fit(const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr, const intp_t[::1] members,
                           intp_t n_p):
    """p has one entry per membership, and members lists them all (or is empty: the identity)."""
    cdef intp_t m = member_ptr[member_ptr.shape[0] - 1] if member_ptr.shape[0] else 0
    return n_p == m and (members.shape[0] == 0 or members.shape[0] == m) and member_ptr.shape[0] >= 1 and (
        sub_ptr.shape[0] == 0 or member_ptr.shape[0] == sub_ptr[sub_ptr.shape[0] - 1] + 1)


cdef double subgraph_weights(const double* S_i, const int* init, const int* term, const intp_t* members,
                             intp_t m0, intp_t m1, double* p) noexcept nogil:
    """L_ik of one subgraph (members[m0:m1]) and its membership weights p[m0:m1]."""
    cdef intp_t t, e
    cdef double big = 0.0, z, m
    for t in range(m0, m1):
        e = t if members == NULL else members[t]
        m = S_i[term[e]] - S_i[init[e]]
        p[t] = m
        if m > big:
            big = m
    z = exp(-big)
    for t in range(m0, m1):
        p[t] = exp(p[t] - big)
        z += p[t]
    for t in range(m0, m1):
        p[t] /= z
    return big + log(z)


cdef double instance_weights(const double* S_i, intp_t i, const int* init, const int* term, const intp_t* sub_ptr,
                             const intp_t* member_ptr, const intp_t* members, const double* weight, double* p,
                             intp_t L, double* A_i, double* B_i) noexcept nogil:
    """Instance i's loss (w_i/s_i) sum_k L_ik at its scores S_i; fills its membership weights p and its rows
    A_i, B_i (L each) of A and B."""
    cdef intp_t k, t, e, y, s_i = sub_ptr[i + 1] - sub_ptr[i]
    cdef double inv, acc = 0.0
    for y in range(L):
        A_i[y] = 0.0
        B_i[y] = 0.0
    if s_i == 0:
        return 0.0
    inv = _scale(weight, i, s_i)
    for k in range(sub_ptr[i], sub_ptr[i + 1]):
        acc += subgraph_weights(S_i, init, term, members, member_ptr[k], member_ptr[k + 1], p)
        for t in range(member_ptr[k], member_ptr[k + 1]):
            e = t if members == NULL else members[t]
            A_i[term[e]] += inv * p[t]
            B_i[init[e]] += inv * p[t]
    return inv * acc


cdef void instance_hessian(const double* dS_i, intp_t i, const int* init, const int* term, const intp_t* sub_ptr,
                           const intp_t* member_ptr, const intp_t* members, const double* weight, const double* p,
                           intp_t L, double* dG_i) noexcept nogil:
    """dG_i (L) = instance i's Hessian in its scores (weights p) times dS_i."""
    cdef intp_t k, t, e, y, s_i = sub_ptr[i + 1] - sub_ptr[i]
    cdef double inv, pdm, h
    for y in range(L):
        dG_i[y] = 0.0
    if s_i == 0:
        return
    inv = _scale(weight, i, s_i)
    for k in range(sub_ptr[i], sub_ptr[i + 1]):
        pdm = 0.0
        for t in range(member_ptr[k], member_ptr[k + 1]):
            e = t if members == NULL else members[t]
            pdm = pdm + p[t] * (dS_i[term[e]] - dS_i[init[e]])
        for t in range(member_ptr[k], member_ptr[k + 1]):
            e = t if members == NULL else members[t]
            h = inv * p[t] * (dS_i[term[e]] - dS_i[init[e]] - pdm)
            dG_i[term[e]] += h
            dG_i[init[e]] -= h



# ---------------------------------------------------------------------------------------------- the level form
# Graphs complete between levels (PreferenceGraphs.from_relevance / from_indicator / from_classes; graphs.Levels):
# instance i's labels in the order order[i, 0 .. L - 1], level k at the positions st[k] .. st[k + 1] - 1 (st the
# instance's level starts; the last level ends at L), every label preferred to every label of a later level. The
# domination subgraph of a label a of level k < K - 1 is a with the labels at positions >= st[k + 1], so with
# f the scores in position order and T_j = log sum_{t >= st[j]} exp(f_t) (one running-max log-sum-exp, bottom up)
#
#     L_a = log(1 + sum_{t >= st[k + 1]} exp(f_t - f_a)) = softplus(T_(k+1) - f_a),
#     P_a = sigmoid(T_(k+1) - f_a) (the subgraph's total weight), p_(a,b) = P_a exp(f_b - T_(k+1)),
#
# s_i = st[K - 1] (the labels above the last level) and c = w_i / s_i. Gradient: B[a] = c P_a (a's edges as init);
# A[y] (y in level m >= 1, as term) = c sum_(k < m) Q_k exp(f_y - T_(k+1)) = c exp(f_y - T_m) R_m with
# Q_k = sum_(a in level k) P_a and R_1 = Q_0, R_(m+1) = Q_m + exp(T_(m+1) - T_m) R_m (factors <= 1: no overflow).
# Hessian times a direction d (per label): with mu_k = sum_(t >= st[k+1]) exp(f_t - T_(k+1)) d_t,
#
#     dG[a] += c P_a (1 - P_a) (d_a - mu_k)                                      (a in level k < K - 1)
#     dG[y] += c exp(f_y - T_m) (d_y RQ_m - RU_m)                                (y in level m >= 1)
#
# RQ as R above and RU likewise with U_k = sum_(a in level k) P_a (P_a mu_k + (1 - P_a) d_a) in place of Q_k (from
# h_(a,b) = p_(a,b) (d_b - d_a - sum_b' p_(a,b') (d_b' - d_a))). "dominated" is the mirror image: the levels
# reversed and the scores negated (sign -1), which turns every dominated subgraph into a domination subgraph; the
# gradient in the scores changes sign (A and B swap) and the Hessian does not. O(L) per instance, exp and log
# per label; the state kept between the gradient and the Hessian products is f (n x L: the signed scores in
# position order, minus the first one's), except for instances of two levels (bipartite and single-label graphs),
# whose state is what their Hessian products need, computed once by the gradient: P_a of the first level (as its
# smaller half, P_a or 1 - P_a, the sign saying which: :func:`pair_state`) and exp(f_y - T_1) of the second, so
# their products take no exp at all. The loss is invariant to a constant added to an instance's scores, and
# its Hessian maps constants to 0: the kernels take every score and direction relative to the instance's first
# label, so a large common part cancels exactly (as in the enumerated kernels' edge differences) rather than to
# rounding (whitening.py's directions carry one of 1e10 and more).

cdef struct Graphs:
    # the enumerated form (levels False): edges, subgraphs and memberships (module docstring)
    const int* init
    const int* term
    const intp_t* sub_ptr
    const intp_t* member_ptr
    const intp_t* members
    # the level form (levels True)
    const int* order
    const intp_t* level_ptr
    const int* starts
    double sign
    bint levels
    const double* weight


cdef inline void lse_add(double* mx, double* sm, double x) noexcept nogil:
    """The running-max log-sum-exp: mx + log(sm) becomes log(exp(mx + log sm) + exp(x))."""
    if x > mx[0]:
        sm[0] = sm[0] * exp(mx[0] - x) + 1.0
        mx[0] = x
    else:
        sm[0] += exp(x - mx[0])


cdef inline void level_tops(const double* f, const int* st, intp_t K, intp_t L, double* T) noexcept nogil:
    """T[k] = log sum_(t >= st[k]) exp(f[t]) for k = K - 1 .. 1."""
    cdef double mx = -INFINITY, sm = 0.0
    cdef intp_t k, t, hi = L
    for k in range(K - 1, 0, -1):
        for t in range(st[k], hi):
            lse_add(&mx, &sm, f[t])
        T[k] = mx + log(sm)
        hi = st[k]


cdef inline double sigmoid_pair(double x, double* P, double* P1) noexcept nogil:
    """softplus(x) = log(1 + e^x); P = sigmoid(x), P1 = 1 - P (each without cancellation)."""
    cdef double e = exp(-fabs(x)), inv = 1.0 / (1.0 + e)
    if x > 0.0:
        P[0], P1[0] = inv, e * inv
        return x + log1p(e)
    P[0], P1[0] = e * inv, inv
    return log1p(e)


cdef inline double pair_state(double P, double P1) noexcept nogil:
    """A sigmoid pair (P, P1 = 1 - P) as one number, the smaller half kept exactly: P1 >= +0 when P >= P1, else
    -P <= -0 (the sign bit tells them apart, zeros included)."""
    return P1 if P >= P1 else -P


cdef inline void pair_of_state(double v, double* P, double* P1) noexcept nogil:
    if signbit(v):
        P[0], P1[0] = -v, 1.0 + v
    else:
        P[0], P1[0] = 1.0 - v, v


cdef double level_grad(const Graphs* g, const double* S_i, intp_t i, double* f, intp_t L, double* A_i,
                       double* B_i, double* T) noexcept nogil:
    """Instance i's loss c sum_a L_a in the level form; fills its state (f, or with two levels the Hessian's
    values: module comment above) and its rows A_i, B_i."""
    cdef intp_t l0 = g.level_ptr[i], K = g.level_ptr[i + 1] - l0, k, t, lo, hi
    cdef const int* order = g.order + i * L
    cdef const int* st = g.starts + l0
    cdef double c, P, P1, e, loss = 0.0, Q = 0.0, R = 0.0, ref = g.sign * S_i[order[0]]
    cdef double* up = B_i if g.sign > 0 else A_i  # a label's own subgraph (init sums; term sums when mirrored)
    cdef double* down = A_i if g.sign > 0 else B_i
    for t in range(L):  # relative to the first label: the loss sees differences only, computed once, exactly
        A_i[t] = 0.0
        B_i[t] = 0.0
        f[t] = g.sign * S_i[order[t]] - ref
    if K < 2:
        return 0.0
    c = _scale(g.weight, i, st[K - 1])
    level_tops(f, st, K, L, T)
    for k in range(K):
        lo = st[k]
        hi = st[k + 1] if k + 1 < K else L
        if k >= 1:
            R = Q if k == 1 else Q + exp(T[k] - T[k - 1]) * R
            for t in range(lo, hi):
                e = exp(f[t] - T[k])
                down[order[t]] = c * R * e
                if K == 2:
                    f[t] = e
        if k + 1 < K:
            Q = 0.0
            for t in range(lo, hi):
                loss += sigmoid_pair(T[k + 1] - f[t], &P, &P1)
                up[order[t]] = c * P
                Q += P
                if K == 2:
                    f[t] = pair_state(P, P1)
    return c * loss


cdef void level_hessian(const Graphs* g, const double* dS_i, intp_t i, const double* f, intp_t L, double* dG_i,
                        double* T, double* W, double* N) noexcept nogil:
    """dG_i (L) = instance i's Hessian in its scores (state f) times dS_i, in the level form."""
    cdef intp_t l0 = g.level_ptr[i], K = g.level_ptr[i + 1] - l0, k, t, lo, hi, y
    cdef const int* order = g.order + i * L
    cdef const int* st = g.starts + l0
    cdef double c, P, P1, d, mu, r, acc = 0.0, Q = 0.0, U = 0.0, RQ = 0.0, RU = 0.0
    cdef double dref = dS_i[order[0]]  # H 1 = 0: d - dref, so a direction's large common part cancels exactly
    for y in range(L):
        dG_i[y] = 0.0
    if K < 2:
        return
    c = _scale(g.weight, i, st[K - 1])
    if K == 2:  # the state holds the sigmoid pairs of level 0 and exp(f_y - T_1) of level 1
        for t in range(st[1], L):
            acc += f[t] * (dS_i[order[t]] - dref)
        for t in range(st[1]):
            pair_of_state(f[t], &P, &P1)
            d = dS_i[order[t]] - dref
            dG_i[order[t]] += c * P * P1 * (d - acc)
            Q += P
            U += P * (P * acc + P1 * d)
        for t in range(st[1], L):
            dG_i[order[t]] += c * f[t] * ((dS_i[order[t]] - dref) * Q - U)
        return
    level_tops(f, st, K, L, T)
    hi = L  # N[k] = sum_(t >= st[k]) exp(f_t - T_k) d_t, bottom up; W[t] = exp(f_t - T_(level of t))
    for k in range(K - 1, 0, -1):
        if k + 1 < K:
            acc *= exp(T[k + 1] - T[k])
        for t in range(st[k], hi):
            W[t] = exp(f[t] - T[k])
            acc += W[t] * (dS_i[order[t]] - dref)
        N[k] = acc
        hi = st[k]
    for k in range(K):
        lo = st[k]
        hi = st[k + 1] if k + 1 < K else L
        if k >= 1:
            if k == 1:
                RQ, RU = Q, U
            else:
                r = exp(T[k] - T[k - 1])
                RQ = Q + r * RQ
                RU = U + r * RU
            for t in range(lo, hi):
                dG_i[order[t]] += c * W[t] * ((dS_i[order[t]] - dref) * RQ - RU)
        if k + 1 < K:
            mu = N[k + 1]
            Q = 0.0
            U = 0.0
            for t in range(lo, hi):
                sigmoid_pair(T[k + 1] - f[t], &P, &P1)
                d = dS_i[order[t]] - dref
                dG_i[order[t]] += c * P * P1 * (d - mu)
                Q += P
                U += P * (P * mu + P1 * d)


cdef inline double instance_grad(const Graphs* g, const double* S_i, intp_t i, double* p, intp_t L, double* A_i,
                                 double* B_i, double* work) noexcept nogil:
    """Instance i's loss; fills its state (membership weights, or the level form's f) and its rows of A and B."""
    if g.levels:
        return level_grad(g, S_i, i, p + i * L, L, A_i, B_i, work)
    return instance_weights(S_i, i, g.init, g.term, g.sub_ptr, g.member_ptr, g.members, g.weight, p, L, A_i, B_i)


cdef inline void instance_hess(const Graphs* g, const double* dS_i, intp_t i, const double* p, intp_t L,
                               double* dG_i, double* work) noexcept nogil:
    """dG_i = instance i's Hessian in its scores (state p) times dS_i."""
    if g.levels:
        level_hessian(g, dS_i, i, p + i * L, L, dG_i, work, work + L, work + 2 * L)
    else:
        instance_hessian(dS_i, i, g.init, g.term, g.sub_ptr, g.member_ptr, g.members, g.weight, p, L, dG_i)


cdef Graphs edge_graphs(const intp_t[::1] edge_ptr, const int[::1] init, const int[::1] term,
                        const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr, const intp_t[::1] members,
                        const double[::1] weight, intp_t n, intp_t n_p, str name) except *:
    """The enumerated form's Graphs, its sizes checked (p: n_p memberships)."""
    cdef Graphs g
    if (sub_ptr.shape[0] != n + 1 or edge_ptr.shape[0] != n + 1
            or not _memberships_fit(sub_ptr, member_ptr, members, n_p)):
        raise ValueError(f"{name}: the graphs, subgraphs or weights p do not fit the {n} instances")
    g.init = &init[0] if init.shape[0] else NULL
    g.term = &term[0] if term.shape[0] else NULL
    g.sub_ptr, g.member_ptr, g.members = &sub_ptr[0], &member_ptr[0], _members(members)
    g.order, g.level_ptr, g.starts, g.sign, g.levels = NULL, NULL, NULL, 1.0, False
    g.weight = _weights(weight, n)
    return g


cdef Graphs level_graphs(const int[:, ::1] order, const intp_t[::1] level_ptr, const int[::1] starts, double sign,
                         const double[::1] weight, intp_t n, intp_t L, intp_t n_p, str name) except *:
    """The level form's Graphs, its sizes checked (p: the state, n * L)."""
    cdef Graphs g
    if (order.shape[0] != n or order.shape[1] != L or level_ptr.shape[0] != n + 1 or n_p != n * L
            or (n > 0 and starts.shape[0] != level_ptr[n])):
        raise ValueError(f"{name}: the levels or the state do not fit {n} instances of {L} labels")
    g.init, g.term, g.sub_ptr, g.member_ptr, g.members = NULL, NULL, NULL, NULL, NULL
    g.order = &order[0, 0] if n * L else NULL
    g.level_ptr = &level_ptr[0]
    g.starts = &starts[0] if starts.shape[0] else NULL
    g.sign, g.levels = (1.0 if sign >= 0 else -1.0), True
    g.weight = _weights(weight, n)
    return g


cdef double graphs_loss_grad(const Graphs* g, const double[:, ::1] S, double[::1] p, double[:, ::1] A,
                             double[:, ::1] B, intp_t parallel_min_rows) except? -1.0:
    cdef intp_t n = S.shape[0], L = S.shape[1], i
    cdef int nt = <int> product_threads(n, n, parallel_min_rows)
    cdef double[::1] loss_i = np.zeros(n)
    cdef double* work
    if A.shape[0] != n or B.shape[0] != n or A.shape[1] != L or B.shape[1] != L:
        raise ValueError("loss_grad: wrong array sizes")
    if n == 0 or L == 0:
        return 0.0
    with nogil, parallel(num_threads=nt):
        work = <double*> malloc(3 * L * sizeof(double))
        for i in prange(n, schedule="static"):
            loss_i[i] = instance_grad(g, &S[i, 0], i, &p[0] if p.shape[0] else NULL, L, &A[i, 0], &B[i, 0], work)
        free(work)
    return float(np.sum(loss_i))


cdef int graphs_hess(const Graphs* g, const double[:, ::1] dS, const double[::1] p, double[:, ::1] dG,
                     intp_t parallel_min_rows) except -1:
    cdef intp_t n = dS.shape[0], L = dS.shape[1], i
    cdef int nt = <int> product_threads(n, n, parallel_min_rows)
    cdef double* work
    if dG.shape[0] != n or dG.shape[1] != L:
        raise ValueError("hess_scores: wrong array sizes")
    if n == 0 or L == 0:
        return 0
    with nogil, parallel(num_threads=nt):
        work = <double*> malloc(3 * L * sizeof(double))
        for i in prange(n, schedule="static"):
            instance_hess(g, &dS[i, 0], i, &p[0] if p.shape[0] else NULL, L, &dG[i, 0], work)
        free(work)
    return 0


def loss_grad(const double[:, ::1] S, const intp_t[::1] edge_ptr, const int[::1] init, const int[::1] term,
              const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr, const intp_t[::1] members,
              double[::1] p, double[:, ::1] A, double[:, ::1] B, intp_t parallel_min_rows=-1,
              const double[::1] weight=None):
    """The loss at scores S; fills p (per membership), A and B (n x L, module docstring; G = A - B).
    ``weight``: the instance weights (None: 1)."""
    cdef Graphs g = edge_graphs(edge_ptr, init, term, sub_ptr, member_ptr, members, weight, S.shape[0], p.shape[0],
                                "loss_grad")
    return graphs_loss_grad(&g, S, p, A, B, parallel_min_rows)


def level_loss_grad(const double[:, ::1] S, const int[:, ::1] order, const intp_t[::1] level_ptr,
                    const int[::1] starts, double sign, double[::1] p, double[:, ::1] A, double[:, ::1] B,
                    intp_t parallel_min_rows=-1, const double[::1] weight=None):
    """:func:`loss_grad` in the level form (order, level_ptr, starts: graphs.Levels; ``sign`` -1 for the mirror
    image, "dominated"); p: the state, n * L."""
    cdef Graphs g = level_graphs(order, level_ptr, starts, sign, weight, S.shape[0], S.shape[1], p.shape[0],
                                 "level_loss_grad")
    return graphs_loss_grad(&g, S, p, A, B, parallel_min_rows)


def hess_scores(const double[:, ::1] dS, const intp_t[::1] edge_ptr, const int[::1] init, const int[::1] term,
                const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr, const intp_t[::1] members,
                const double[::1] p, double[:, ::1] dG, intp_t parallel_min_rows=-1,
                const double[::1] weight=None):
    """dG = the Hessian of the loss in the scores (at the point of the p given) times dS (module docstring).
    ``weight``: the instance weights (None: 1)."""
    cdef Graphs g = edge_graphs(edge_ptr, init, term, sub_ptr, member_ptr, members, weight, dS.shape[0],
                                p.shape[0], "hess_scores")
    graphs_hess(&g, dS, p, dG, parallel_min_rows)


def level_hess_scores(const double[:, ::1] dS, const int[:, ::1] order, const intp_t[::1] level_ptr,
                      const int[::1] starts, double sign, const double[::1] p, double[:, ::1] dG,
                      intp_t parallel_min_rows=-1, const double[::1] weight=None):
    """:func:`hess_scores` in the level form (p: the state of :func:`level_loss_grad`)."""
    cdef Graphs g = level_graphs(order, level_ptr, starts, sign, weight, dS.shape[0], dS.shape[1], p.shape[0],
                                 "level_hess_scores")
    graphs_hess(&g, dS, p, dG, parallel_min_rows)


def mean_curvature(const intp_t[::1] edge_ptr, const int[::1] init, const int[::1] term,
                   const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr, const intp_t[::1] members,
                   const double[::1] p, intp_t n_labels, const double[::1] weight=None):
    """trace(H_i) summed over the instances, H_i instance i's Hessian in its scores (membership weights p): with
    d_e = e_(term e) - e_(init e), trace(H_i) = (w_i/s_i) sum_k (sum_e 2 p_e - ||sum_e p_e d_e||^2) (``weight``:
    the instance weights w, None: 1). O(memberships + n L); the scale c of whitening.py is this / (sum_i w_i L).
    The level form's is :func:`level_mean_curvature`."""
    cdef intp_t n = sub_ptr.shape[0] - 1, L = n_labels, i, k, t, e, y
    cdef const intp_t* mem = _members(members)
    cdef const double* wt = _weights(weight, n)
    cdef double total = 0.0, part, sq
    cdef double* v
    if not _memberships_fit(sub_ptr, member_ptr, members, p.shape[0]) or edge_ptr.shape[0] != n + 1:
        raise ValueError("mean_curvature: wrong array sizes")
    if p.shape[0] == 0:
        return 0.0
    v = <double*> malloc(max(L, 1) * sizeof(double))
    with nogil:
        for i in range(n):
            if sub_ptr[i + 1] == sub_ptr[i]:
                continue
            part = 0.0
            for k in range(sub_ptr[i], sub_ptr[i + 1]):
                for y in range(L):
                    v[y] = 0.0
                for t in range(member_ptr[k], member_ptr[k + 1]):
                    e = t if mem == NULL else mem[t]
                    part += 2.0 * p[t]
                    v[term[e]] += p[t]
                    v[init[e]] -= p[t]
                sq = 0.0
                for y in range(L):
                    sq += v[y] * v[y]
                part -= sq
            total += part * _scale(wt, i, sub_ptr[i + 1] - sub_ptr[i])
    free(v)
    return total


def level_mean_curvature(const int[:, ::1] order, const intp_t[::1] level_ptr, const int[::1] starts, double sign,
                         const double[::1] p, const double[::1] weight=None):
    """:func:`mean_curvature` in the level form (state p): per subgraph a (level k), trace = 2 P_a - P_a^2
    (1 + sum_(t >= st[k+1]) exp(2 (f_t - T_(k+1)))) (the squared norm of p_a's edge vectors: P_a^2 for a, the
    p_(a,b)^2 for the rest), times c = w_i / s_i."""
    cdef intp_t n = order.shape[0], L = order.shape[1], i, k, t, K, hi
    cdef Graphs g = level_graphs(order, level_ptr, starts, sign, weight, n, L, p.shape[0], "level_mean_curvature")
    cdef const int* st
    cdef const double* f
    cdef double total = 0.0, part, acc, P, P1
    cdef double* T
    cdef double* E
    if n * L == 0:
        return 0.0
    T = <double*> malloc(2 * L * sizeof(double))
    E = T + L
    with nogil:
        for i in range(n):
            K = level_ptr[i + 1] - level_ptr[i]
            if K < 2:
                continue
            st = g.starts + level_ptr[i]
            f = &p[i * L]
            part = 0.0
            if K == 2:  # the two-level state (sigmoid pairs, then exp(f_t - T_1))
                acc = 0.0
                for t in range(st[1], L):
                    acc += f[t] * f[t]
                for t in range(st[1]):
                    pair_of_state(f[t], &P, &P1)
                    part += 2.0 * P - P * P * (1.0 + acc)
                total += part * _scale(g.weight, i, st[1])
                continue
            level_tops(f, st, K, L, T)
            hi, acc = L, 0.0
            for k in range(K - 1, 0, -1):
                if k + 1 < K:
                    acc *= exp(2.0 * (T[k + 1] - T[k]))
                for t in range(st[k], hi):
                    acc += exp(2.0 * (f[t] - T[k]))
                E[k] = acc
                hi = st[k]
            part = 0.0
            for k in range(K - 1):
                for t in range(st[k], st[k + 1]):
                    sigmoid_pair(T[k + 1] - f[t], &P, &P1)
                    part += 2.0 * P - P * P * (1.0 + E[k + 1])
            total += part * _scale(g.weight, i, st[K - 1])
    free(T)
    return total


def level_margins(const double[:, ::1] S, const int[:, ::1] order, const intp_t[::1] level_ptr,
                  const int[::1] starts, const unsigned char[::1] mask):
    """(the largest edge margin S[i, term] - S[i, init], the largest |margin|) over the edges of the instances
    with mask[i] (level form; -inf and 0 with no edge)."""
    cdef intp_t n = S.shape[0], L = S.shape[1], i, k, t, K, hi
    cdef const int* st
    cdef const int* o
    cdef double top = -INFINITY, low = INFINITY, bmax, bmin, x
    if order.shape[0] != n or order.shape[1] != L or level_ptr.shape[0] != n + 1 or mask.shape[0] != n:
        raise ValueError("level_margins: wrong array sizes")
    with nogil:
        for i in range(n):
            K = level_ptr[i + 1] - level_ptr[i]
            if K < 2 or not mask[i]:
                continue
            st = &starts[level_ptr[i]]
            o = &order[i, 0]
            bmax, bmin, hi = -INFINITY, INFINITY, L
            for k in range(K - 1, -1, -1):
                for t in range(st[k], hi):
                    x = S[i, o[t]]
                    if k + 1 < K:
                        top = max(top, bmax - x)
                        low = min(low, bmin - x)
                for t in range(st[k], hi):
                    x = S[i, o[t]]
                    bmax = max(bmax, x)
                    bmin = min(bmin, x)
                hi = st[k]
    if top == -INFINITY:
        return top, 0.0
    return top, max(abs(top), abs(low))


cdef void block_pass(const floating* X, const index_t* indices, const index_t* indptr, bint dense, intp_t d,
                     intp_t L, intp_t lo, intp_t hi, const double* V, const Graphs* g, double* p, bint hessian,
                     double* loss_i, double* acc) noexcept nogil:
    """Rows lo:hi of :func:`fused_pass`, BLOCK_ROWS at a time: S_b = X_b V, then per instance its gradient
    (``hessian`` False: its loss into loss_i and its state p filled) or its Hessian product in the scores, G_b,
    then acc (d x L, zeroed here) += X_b' G_b. A float32 X_b is widened into a buffer once for both products."""
    cdef intp_t block = max(1, min(<intp_t> BLOCK_ROWS, BLOCK_VALUES // max(d, 1)))
    cdef intp_t i0, r, i, y, k
    cdef int Li = <int> L, di = <int> d, rows
    cdef double one = 1.0, zero = 0.0
    cdef const double* Xb = NULL
    cdef double* xbuf = NULL
    cdef double* S = <double*> malloc(block * L * sizeof(double))
    cdef double* G = <double*> malloc(block * L * sizeof(double))
    cdef double* B = <double*> malloc(block * L * sizeof(double))
    cdef double* work = <double*> malloc(3 * L * sizeof(double))
    if dense and floating is float:
        xbuf = <double*> malloc(block * d * sizeof(double))
    for k in range(d * L):
        acc[k] = 0.0
    i0 = lo
    while i0 < hi:
        rows = <int> min(block, hi - i0)
        if dense:
            if floating is double:
                Xb = X + i0 * d
            else:
                for k in range(rows * d):
                    xbuf[k] = X[i0 * d + k]
                Xb = xbuf
            if d > 0:
                dgemm("N", "N", &Li, &rows, &di, &one, V, &Li, Xb, &di, &zero, S, &Li)
            else:
                for k in range(rows * L):
                    S[k] = 0.0
        else:
            csr_times(X, indices, indptr, i0, rows, V, L, S)
        for r in range(rows):
            i = i0 + r
            if hessian:
                instance_hess(g, S + r * L, i, p, L, G + r * L, work)
            else:
                loss_i[i] = instance_grad(g, S + r * L, i, p, L, G + r * L, B + r * L, work)
                for y in range(L):
                    G[r * L + y] -= B[r * L + y]
        if dense:
            if d > 0:
                dgemm("N", "T", &Li, &di, &rows, &one, G, &Li, Xb, &di, &one, acc, &Li)
        else:
            csr_transpose_add(X, indices, indptr, i0, rows, G, L, acc)
        i0 += rows
    free(S)
    free(G)
    free(B)
    free(work)
    free(xbuf)


cdef double graphs_fused(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                         bint dense, intp_t n, intp_t d, const double[:, ::1] V, const Graphs* g, intp_t work,
                         double[::1] p, bint hessian, double[::1] out, object holder,
                         intp_t parallel_min_rows) except? -1.0:
    cdef intp_t L = V.shape[1], c, n_ch, width = d * L
    cdef int nt = <int> product_threads(n, n, parallel_min_rows)
    cdef double[::1] loss_i = np.zeros(n if not hessian else 1)
    cdef double[:, ::1] acc
    cdef intp_t[::1] bounds
    if (V.shape[0] != d or out.shape[0] != width or (dense and data.shape[0] != n * d)
            or (not dense and indptr.shape[0] != n + 1)):
        raise ValueError("fused_pass: wrong array sizes")
    if n == 0 or width == 0:
        out[:] = 0.0
        return 0.0
    n_ch = chunk_count(n, width, n * max(d, 1) + work, nt)
    bounds = np.array([(n * c) // n_ch for c in range(n_ch + 1)], dtype=np.int64)
    acc = chunk_accumulators(holder, n_ch, width)
    with nogil:
        for c in prange(n_ch, num_threads=nt, schedule="dynamic", chunksize=1):
            block_pass(&data[0] if data.shape[0] else NULL, &indices[0], &indptr[0], dense, d, L, bounds[c],
                       bounds[c + 1], &V[0, 0], g, &p[0] if p.shape[0] else NULL, hessian,
                       &loss_i[0], &acc[c, 0])
        sum_chunks(acc, out)
    return 0.0 if hessian else float(np.sum(loss_i))


def fused_pass(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
               intp_t n, intp_t d, const double[:, ::1] V, const intp_t[::1] edge_ptr, const int[::1] init,
               const int[::1] term, const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr,
               const intp_t[::1] members, double[::1] p, bint hessian, double[::1] out, object holder,
               intp_t parallel_min_rows=-1, const double[::1] weight=None):
    """One pass over X (as :func:`product_into` takes it) in blocks of rows, never holding S or G whole:

    - ``hessian`` False: the loss at S = X V (returned; per-instance losses summed as :func:`loss_grad` sums
      them), p filled, out = X' G with G = A - B its gradient in the scores;
    - ``hessian`` True: out = X' (H (X V)), H the Hessian in the scores at the weights p.

    out: d * L entries (d x L, C order). Rows are cut into a fixed partition of chunks (cyrank/_parallel.pxd)
    whose accumulators are summed in chunk order: the same bits for every thread count. ``holder.acc`` keeps
    the accumulators from call to call. ``weight``: the instance weights (None: 1)."""
    cdef Graphs g = edge_graphs(edge_ptr, init, term, sub_ptr, member_ptr, members, weight, n, p.shape[0],
                                "fused_pass")
    return graphs_fused(data, indices, indptr, dense, n, d, V, &g, members.shape[0], p, hessian, out, holder,
                        parallel_min_rows)


def level_fused_pass(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                     intp_t n, intp_t d, const double[:, ::1] V, const int[:, ::1] order,
                     const intp_t[::1] level_ptr, const int[::1] starts, double sign, double[::1] p, bint hessian,
                     double[::1] out, object holder, intp_t parallel_min_rows=-1, const double[::1] weight=None):
    """:func:`fused_pass` in the level form (p: the state, n * L; :func:`level_loss_grad`)."""
    cdef Graphs g = level_graphs(order, level_ptr, starts, sign, weight, n, V.shape[1], p.shape[0],
                                 "level_fused_pass")
    return graphs_fused(data, indices, indptr, dense, n, d, V, &g, n * V.shape[1], p, hessian, out, holder,
                        parallel_min_rows)


def boost_weights(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                  intp_t n_features, const double[:, ::1] A, const double[:, ::1] B, double[:, ::1] Wp,
                  double[:, ::1] Wm):
    """W+ and W- of Fig. 3 for the label-specific base functions h_(j,y)(x, y') = x_j [y' = y] (d x L each):
    pi_(i,e,(j,y)) = x_ij ([term e = y] - [init e = y]), so with A, B of loss_grad (q / s_i summed by term and
    by init label)

        W+[j, y] = sum_i (x_ij)+ A[i, y] + (x_ij)- B[i, y],   W-[j, y] = sum_i (x_ij)+ B[i, y] + (x_ij)- A[i, y].

    X is CSR (data, indices, indptr) or dense C-ordered (``dense``: indices and indptr unused). O(nnz L)."""
    cdef intp_t n = A.shape[0], L = A.shape[1], d = n_features, i, r, j, y, r0, r1
    cdef double x
    if B.shape[0] != n or Wp.shape[0] != d or Wm.shape[0] != d or Wp.shape[1] != L or Wm.shape[1] != L:
        raise ValueError("boost_weights: wrong array sizes")
    with nogil:
        Wp[:, :] = 0.0
        Wm[:, :] = 0.0
        for i in range(n):
            r0 = i * d if dense else indptr[i]
            r1 = (i + 1) * d if dense else indptr[i + 1]
            for r in range(r0, r1):
                x = data[r]
                j = r - r0 if dense else indices[r]
                if x > 0.0:
                    for y in range(L):
                        Wp[j, y] += x * A[i, y]
                        Wm[j, y] += x * B[i, y]
                elif x < 0.0:
                    for y in range(L):
                        Wp[j, y] -= x * B[i, y]
                        Wm[j, y] -= x * A[i, y]
