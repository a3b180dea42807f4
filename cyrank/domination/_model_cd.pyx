"""Matrix-free coordinate descent on the proximal Newton model of the domination loss (DominationRank,
solver="prox_newton" on large working sets; Yuan, Ho & Lin, JMLR 2012, section 3, with the score-space Hessian of
Stevens, MIT thesis 2010, sections 2-4):

    min_d  q(d) = g'd + d'(X_W' H X_W + c I) d / 2 + lam1 ||w + d||_1

over the columns W of X (the sorted rows of the layout, column by column: CSC, or dense Fortran-ordered with
``dense`` set, as solver._columns gives them), H the Hessian of the loss in the
margins at the point of the last _smooth.fun_grad. X_W' H X_W is never formed. With z = X_W d kept up to date and,
per query-layer k, the two sums of z the Hessian needs (notation of _smooth.pyx),

    a_k = sum_{p in k} E_p z_p,   b_k = sum_{p in k} s_p (1 - s_p) z_p,   S2_k = sum_{p in k} s_p^2,
    V_{k+1} = rho_k V_k + a_k (bottom-up),   U_{k-1} = b_k + S2_k V_k + rho_k U_k (top-down),
    (H z)_p = s_p (1 - s_p) (z_p - V_l) + E_p (z_p T_l - U_l)   for row p of layer l,

with the sample weights w_p of the layout (1 unweighted) in S2_k = sum_{p in k} w_p s_p^2 and in
c_p = w_p s_p (1 - s_p) in place of s_p (1 - s_p) (the weighted Hessian of _smooth.pyx; E, rho, T of its state
carry the weights already), the coordinate gradient (g + X_W'Hz + c d)_r is a sum over the stored entries of
column r, O(1) each, and a step in d_r moves a_k and b_k of its rows' layers and V, U of their queries:
O(nnz_r + layers of the queries it touches) per coordinate, the cost of a CD sweep on a linear model. The exact
curvatures (X_W'HX_W)_rr come from the same sums with z = x_r (model_diagonal). Queries are contiguous in the
sorted rows, so the stored entries of a column are grouped by query.
"""
import numpy as np

from libc.math cimport fabs

from cyrank._math cimport l1_violation, soft_threshold
from cyrank._parallel cimport Interrupt, check_interrupt, interrupt_init, interrupted
from cyrank._typedefs cimport floating, index_t, intp_t


cdef packed struct RowState:
    double z
    double c
    double E
    intp_t k

ROW_STATE = np.dtype([("z", np.float64), ("c", np.float64), ("E", np.float64), ("k", np.int64)])


cdef inline void query_sums(intp_t k0, intp_t k1, const double* rho, const double* a, const double* b,
                            const double* S2, double* V, double* U) noexcept nogil:
    """V and U of one query (layers k0:k1) from its layer sums a, b (module docstring); V[k0] = U[k1 - 1] = 0.
    Two and three layers (binary and 0-2 labels) written out: this runs once per query per coordinate step."""
    cdef intp_t k, top = k1 - 1
    cdef double acc, v1, v2, u1
    V[k0] = 0.0
    U[top] = 0.0
    if top == k0 + 1:
        v1 = a[k0]
        V[top] = v1
        U[k0] = b[top] + S2[top] * v1
        return
    if top == k0 + 2:
        v1 = a[k0]
        v2 = rho[k0 + 1] * v1 + a[k0 + 1]
        u1 = b[top] + S2[top] * v2
        V[k0 + 1] = v1
        V[top] = v2
        U[k0 + 1] = u1
        U[k0] = b[k0 + 1] + S2[k0 + 1] * v1 + rho[k0 + 1] * u1
        return
    acc = a[k0]
    V[k0 + 1] = acc
    for k in range(k0 + 1, top):
        acc = rho[k] * acc + a[k]
        V[k + 1] = acc
    U[top - 1] = b[top] + S2[top] * V[top]
    for k in range(top - 1, k0, -1):
        U[k - 1] = b[k] + S2[k] * V[k] + rho[k] * U[k]


cdef void set_direction(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                        const intp_t[::1] cols, const double[::1] v, const intp_t[::1] row_qk,
                        const intp_t[::1] q_ptr, const double[::1] E, const double[::1] c, const double[::1] rho,
                        const double[::1] S2, double* z, intp_t stride, double[::1] a, double[::1] b, double[::1] V,
                        double[::1] U) noexcept nogil:
    """z = X_W v (z[i * stride] for row i; z, a and b start at 0) and the layer sums a, b, V, U of z."""
    cdef intp_t r, j, p, i, k, q
    for r in range(cols.shape[0]):
        if v[r] != 0.0:
            j = cols[r]
            for p in range(indptr[j], indptr[j + 1]):
                i = p - indptr[j] if dense else indices[p]
                z[i * stride] += v[r] * data[p]
    for i in range(E.shape[0]):
        k = row_qk[i]
        a[k] += z[i * stride] * E[i]
        b[k] += z[i * stride] * c[i]
    for q in range(q_ptr.shape[0] - 1):
        query_sums(q_ptr[q], q_ptr[q + 1], &rho[0], &a[0], &b[0], &S2[0], &V[0], &U[0])


cdef class Model:
    """The layout and the Hessian state of one point: row_qk (query-layer of each sorted row), qk_q (query of each
    query-layer), q_ptr, lay_ptr; E, s, rho, T of _smooth.State; c_p = w_p s_p (1 - s_p) and
    S2_k = sum_{p in k} w_p s_p^2 (w: the layout's sample weights, 1 when unweighted)."""
    cdef public object row_qk, qk_q, q_ptr, lay_ptr, E, s, rho, T, c, S2

    def __init__(self, layout, state):
        self.row_qk = np.ascontiguousarray(layout.row_qk, dtype=np.int64)
        self.qk_q = np.ascontiguousarray(layout.qk_q, dtype=np.int64)
        self.q_ptr = np.ascontiguousarray(layout.q_ptr, dtype=np.int64)
        self.lay_ptr = np.ascontiguousarray(layout.lay_ptr, dtype=np.int64)
        # copies: the line search's evaluations overwrite the state
        self.E, self.s, self.rho, self.T = (np.array(state.E), np.array(state.s), np.array(state.rho),
                                            np.array(state.T))
        ws = self.s if layout.weight is None else layout.weight * self.s
        self.c = ws * (1.0 - self.s)
        starts = self.lay_ptr[:self.lay_ptr.shape[0] - 1]
        self.S2 = np.add.reduceat(ws * self.s, starts) if self.s.shape[0] else np.zeros(starts.shape[0])
        self.S2[np.diff(self.lay_ptr) == 0] = 0.0  # reduceat gives the next entry for an empty segment


def model_diagonal(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                   const intp_t[::1] cols, Model model, double[::1] out):
    """out[r] = x_r' H x_r for the columns r of ``cols`` (X column by column: CSC of the sorted rows, or dense
    Fortran-ordered with indices = arange(n), indptr = arange(d + 1) n); O(nnz + layers touched)."""
    cdef intp_t m = cols.shape[0], r, j, i, p, p0, p1, ps, pe, k, k0, k1, q, nl = model.lay_ptr.shape[0] - 1
    cdef const intp_t[::1] row_qk = model.row_qk, qk_q = model.qk_q, q_ptr = model.q_ptr
    cdef const double[::1] E = model.E, rho = model.rho, T = model.T, c = model.c, S2 = model.S2
    cdef double[::1] a = np.zeros(nl + 1), b = np.zeros(nl + 1), V = np.zeros(nl + 1), U = np.zeros(nl + 1)
    cdef double x, total
    cdef Interrupt intr
    if out.shape[0] != m:
        raise ValueError("model_diagonal: wrong array sizes")
    interrupt_init(&intr)
    with nogil:
        for r in range(m):
            j = cols[r]
            total = 0.0
            ps = indptr[j]
            pe = indptr[j + 1]
            p0 = ps
            while p0 < pe:  # one query's entries at a time
                q = qk_q[row_qk[p0 - ps if dense else indices[p0]]]
                k0 = q_ptr[q]
                k1 = q_ptr[q + 1]
                p1 = p0
                while p1 < pe:
                    i = p1 - ps if dense else indices[p1]
                    k = row_qk[i]
                    if qk_q[k] != q:
                        break
                    a[k] += data[p1] * E[i]
                    b[k] += data[p1] * c[i]
                    p1 += 1
                query_sums(k0, k1, &rho[0], &a[0], &b[0], &S2[0], &V[0], &U[0])
                for p in range(p0, p1):
                    x = data[p]
                    i = p - ps if dense else indices[p]
                    k = row_qk[i]
                    total += x * (c[i] * (x - V[k]) + E[i] * (x * T[k] - U[k]))
                for k in range(k0, k1):
                    a[k] = 0.0
                    b[k] = 0.0
                p0 = p1
            out[r] = total
            if interrupted(&intr, pe - ps + 1):
                break
    check_interrupt(&intr)


def solve_model(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                const intp_t[::1] cols, Model model, const double[::1] curvature, const double[::1] g,
                const double[::1] w, double lam1, const double[::1] ridge, double[::1] d, double tol,
                intp_t max_sweeps,
                double[:, ::1] history):
    """Minimise q(d) (module docstring, with ridge[r] d_r^2 / 2 in place of c d_r^2 / 2: a ridge per coordinate) by
    cyclic coordinate descent from the given d, in place.

    ``curvature[r]`` = (X_W'HX_W)_rr (model_diagonal); each step minimises q exactly in d_r (soft-thresholding with
    curvature[r] + ridge[r]). Stops when the largest KKT violation of the model met in a sweep (each coordinate's,
    before its step) is <= ``tol``, or after ``max_sweeps`` sweeps (0: only q(d) is computed). Row s of
    ``history`` (when it has rows) receives d after sweep s + 1 (the iterates of Anderson extrapolation).
    Returns (sweeps, that violation (inf without a sweep), q(d) at the end).
    """
    cdef intp_t m = cols.shape[0], n = model.E.shape[0], nl = model.lay_ptr.shape[0] - 1, nq = model.q_ptr.shape[0] - 1
    cdef intp_t r, j, i, p, p0, pe, k, q, sweep = 0
    cdef const intp_t[::1] row_qk = model.row_qk, qk_q = model.qk_q, q_ptr = model.q_ptr
    cdef const double[::1] rho = model.rho, S2 = model.S2, T = model.T, E = model.E, c = model.c
    # per row, side by side (one cache line): z_p, c_p, E_p and its layer l: (Hz)_p = z_p (c_p + E_p T_l) - ...
    cdef RowState[::1] R = np.zeros(n, dtype=ROW_STATE)
    cdef double[::1] a = np.zeros(nl + 1), b = np.zeros(nl + 1), V = np.zeros(nl + 1), U = np.zeros(nl + 1)
    cdef double grad, curv, old, new, delta, x, viol = np.inf, value = 0.0
    cdef RowState* Ri
    cdef Interrupt intr
    if (curvature.shape[0] != m or g.shape[0] != m or w.shape[0] != m or d.shape[0] != m or ridge.shape[0] != m
            or (history.shape[0] and (history.shape[0] < max_sweeps or history.shape[1] != m))):
        raise ValueError("solve_model: wrong array sizes")
    if m == 0:
        return 0, 0.0, 0.0
    np.asarray(R)["c"] = model.c
    np.asarray(R)["E"] = model.E
    np.asarray(R)["k"] = model.row_qk
    interrupt_init(&intr)
    with nogil:
        # z = X_W d and the layer sums of the warm start (z is the first field of RowState)
        set_direction(data, indices, indptr, dense, cols, d, row_qk, q_ptr, E, c, rho, S2, <double*> &R[0],
                      sizeof(RowState) // sizeof(double), a, b, V, U)
        while sweep < max_sweeps:
            sweep += 1
            viol = 0.0
            for r in range(m):
                j = cols[r]
                p0 = indptr[j]
                pe = indptr[j + 1]
                grad = g[r] + ridge[r] * d[r]
                for p in range(p0, pe):
                    i = p - p0 if dense else indices[p]
                    Ri = &R[i]
                    k = Ri.k
                    grad += data[p] * (Ri.c * (Ri.z - V[k]) + Ri.E * (Ri.z * T[k] - U[k]))
                old = w[r] + d[r]
                viol = max(viol, l1_violation(grad, old, lam1))
                curv = curvature[r] + ridge[r]
                if curv <= 0.0:
                    continue  # q is linear in d_r: left where it is (the violation reports it)
                new = soft_threshold(old - grad / curv, lam1 / curv)
                delta = new - old
                if delta == 0.0:
                    continue
                d[r] += delta
                q = -1
                for p in range(p0, pe):
                    x = delta * data[p]
                    i = p - p0 if dense else indices[p]
                    Ri = &R[i]
                    Ri.z += x
                    k = Ri.k
                    a[k] += x * Ri.E
                    b[k] += x * Ri.c
                    if qk_q[k] != q:  # a new query: the previous one's sums are complete
                        if q >= 0:
                            query_sums(q_ptr[q], q_ptr[q + 1], &rho[0], &a[0], &b[0], &S2[0], &V[0], &U[0])
                        q = qk_q[k]
                if q >= 0:
                    query_sums(q_ptr[q], q_ptr[q + 1], &rho[0], &a[0], &b[0], &S2[0], &V[0], &U[0])
                if interrupted(&intr, pe - p0 + 1):
                    break
            if history.shape[0]:
                for r in range(m):
                    history[sweep - 1, r] = d[r]
            if intr.raised or viol <= tol:
                break
        # q(d) = g'd + (z'Hz + sum_r ridge_r d_r^2) / 2 + lam1 ||w + d||_1
        for i in range(n):
            k = row_qk[i]
            value += 0.5 * R[i].z * (R[i].c * (R[i].z - V[k]) + R[i].E * (R[i].z * T[k] - U[k]))
        for r in range(m):
            value += g[r] * d[r] + 0.5 * ridge[r] * d[r] * d[r] + lam1 * fabs(w[r] + d[r])
    check_interrupt(&intr)
    return sweep, viol, value


def model_product(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr, bint dense,
                  const intp_t[::1] cols, Model model, const double[::1] v, double[::1] out):
    """out = X_W' H X_W v for the columns W = ``cols``: z = X_W v, then (Hz)_p from the layer sums of z (module
    docstring), then X_W'(Hz); O(nnz of X_W + rows)."""
    cdef intp_t m = cols.shape[0], n = model.E.shape[0], nl = model.lay_ptr.shape[0] - 1, nq = model.q_ptr.shape[0] - 1
    cdef intp_t r, j, i, p, k, q
    cdef const intp_t[::1] row_qk = model.row_qk, q_ptr = model.q_ptr
    cdef const double[::1] rho = model.rho, S2 = model.S2, E = model.E, c = model.c, T = model.T
    cdef double[::1] z = np.zeros(n), h = np.empty(n)
    cdef double[::1] a = np.zeros(nl + 1), b = np.zeros(nl + 1), V = np.zeros(nl + 1), U = np.zeros(nl + 1)
    cdef double acc
    if v.shape[0] != m or out.shape[0] != m:
        raise ValueError("model_product: wrong array sizes")
    with nogil:
        set_direction(data, indices, indptr, dense, cols, v, row_qk, q_ptr, E, c, rho, S2, &z[0], 1, a, b, V, U)
        for i in range(n):
            k = row_qk[i]
            h[i] = c[i] * (z[i] - V[k]) + E[i] * (z[i] * T[k] - U[k])
        for r in range(m):
            j = cols[r]
            acc = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                i = p - indptr[j] if dense else indices[p]
                acc += data[p] * h[i]
            out[r] = acc
