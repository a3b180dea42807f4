"""The log-linear label-ranking loss over preference subgraphs, its gradient and Hessian products in the label
scores, and the weights of the boosting update (Dekel, Manning & Singer, NIPS 2003, sections 2-3, Fig. 3).

Scores S (n x L) with S[i, y] = f(x_i, y). Edge e of instance i (init -> term) has the margin
m_e = S[i, term e] - S[i, init e] (negative = agrees). Subgraph k of instance i (s_i subgraphs, members E_ik):

    L_ik = log(1 + sum_{e in E_ik} exp(m_e)),   loss = sum_i (1/s_i) sum_k L_ik          (natural log)

computed as M + log(exp(-M) + sum exp(m_e - M)), M = max(0, max m_e): no overflow for any finite margins.
With p_ke = exp(m_e) / (1 + sum_{e' in E_ik} exp(m_e')) (one per membership), the boosting weight of an edge is
q_e = sum_{k: e in E_ik} p_ke (Fig. 3), and the gradient in the scores is

    G[i, y] = (1/s_i) (sum_{e: term e = y} q_e - sum_{e: init e = y} q_e) = A[i, y] - B[i, y].

Hessian of L_ik in its margins: diag(p) - p p', so for a direction dS (dm_e = dS[i, term] - dS[i, init])
h_ke = p_ke (dm_e - sum_{e'} p_ke' dm_e') and dG[i, y] = (1/s_i)(sum_{term = y} h - sum_{init = y} h).
Each call is O(memberships + n L); instances run in parallel (OpenMP), each writing only its own rows.
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport exp, log

from cyrank._parallel cimport product_threads
from cyrank._typedefs cimport floating, index_t, intp_t


cdef double subgraph_weights(const double* S_i, const int* init, const int* term, const intp_t* members,
                             intp_t m0, intp_t m1, double* p) noexcept nogil:
    """L_ik of one subgraph (members[m0:m1]) and its membership weights p[m0:m1]."""
    cdef intp_t t, e
    cdef double big = 0.0, z, m
    for t in range(m0, m1):
        e = members[t]
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


def loss_grad(const double[:, ::1] S, const intp_t[::1] edge_ptr, const int[::1] init, const int[::1] term,
              const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr, const intp_t[::1] members,
              double[::1] p, double[:, ::1] A, double[:, ::1] B, intp_t parallel_min_rows=-1):
    """The loss at scores S; fills p (per membership), A and B (n x L, module docstring; G = A - B)."""
    cdef intp_t n = S.shape[0], L = S.shape[1], i, k, t, e, s_i
    cdef int nt = <int> product_threads(n, n, parallel_min_rows)
    cdef double[::1] loss_i = np.zeros(n)
    cdef double inv, acc
    if A.shape[0] != n or B.shape[0] != n or A.shape[1] != L or B.shape[1] != L or p.shape[0] != members.shape[0]:
        raise ValueError("loss_grad: wrong array sizes")
    if sub_ptr.shape[0] != n + 1 or edge_ptr.shape[0] != n + 1:
        raise ValueError("loss_grad: the graphs do not have one entry per row of S")
    with nogil:
        for i in prange(n, num_threads=nt, schedule="static"):
            A[i, :] = 0.0
            B[i, :] = 0.0
            s_i = sub_ptr[i + 1] - sub_ptr[i]
            if s_i == 0:
                continue
            inv = 1.0 / s_i
            acc = 0.0
            for k in range(sub_ptr[i], sub_ptr[i + 1]):
                acc = acc + subgraph_weights(&S[i, 0], &init[0], &term[0], &members[0], member_ptr[k],
                                             member_ptr[k + 1], &p[0])
                for t in range(member_ptr[k], member_ptr[k + 1]):
                    e = members[t]
                    A[i, term[e]] += inv * p[t]
                    B[i, init[e]] += inv * p[t]
            loss_i[i] = inv * acc
    return float(np.sum(loss_i))


def hess_scores(const double[:, ::1] dS, const intp_t[::1] edge_ptr, const int[::1] init, const int[::1] term,
                const intp_t[::1] sub_ptr, const intp_t[::1] member_ptr, const intp_t[::1] members,
                const double[::1] p, double[:, ::1] dG, intp_t parallel_min_rows=-1):
    """dG = the Hessian of the loss in the scores (at the point of the p given) times dS (module docstring)."""
    cdef intp_t n = dS.shape[0], L = dS.shape[1], i, k, t, e, s_i
    cdef int nt = <int> product_threads(n, n, parallel_min_rows)
    cdef double inv, pdm, h
    if dG.shape[0] != n or dG.shape[1] != L or p.shape[0] != members.shape[0] or sub_ptr.shape[0] != n + 1:
        raise ValueError("hess_scores: wrong array sizes")
    with nogil:
        for i in prange(n, num_threads=nt, schedule="static"):
            dG[i, :] = 0.0
            s_i = sub_ptr[i + 1] - sub_ptr[i]
            if s_i == 0:
                continue
            inv = 1.0 / s_i
            for k in range(sub_ptr[i], sub_ptr[i + 1]):
                pdm = 0.0
                for t in range(member_ptr[k], member_ptr[k + 1]):
                    e = members[t]
                    pdm = pdm + p[t] * (dS[i, term[e]] - dS[i, init[e]])
                for t in range(member_ptr[k], member_ptr[k + 1]):
                    e = members[t]
                    h = inv * p[t] * (dS[i, term[e]] - dS[i, init[e]] - pdm)
                    dG[i, term[e]] += h
                    dG[i, init[e]] -= h


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
