"""The interior-point loop of MLR's restricted solver (cyrank/mlr/_inner.py, ``_ipm``) in one nogil call.

Problem (conic form of the trace / diagonal restricted problem, T constraints, W d x d):

    min <I, W> + C xi   s.t.  <Psi_t, W> + xi - s_t = Delta_t  (t = 1..T),  W PSD (or w >= 0),  x = (xi, s) >= 0
    max Delta'y         s.t.  Z = I - G(y) PSD (or z = 1 - diag G(y) >= 0),  zl = (C - sum y, y) >= 0,

G(y) = sum_t y_t Psi_t. Mehrotra's predictor-corrector (Mehrotra, SIAM J. Optim. 1992, section 2) with the HKM
direction (Helmberg, Rendl, Vanderbei & Wolkowicz, SIAM J. Optim. 1996, section 3): for a target K (the
complementarity residual of W Z) and kl (that of x zl),

    M dy = rp - A(sym(K Z^-1)) - (dx0_0 - dx0_t),   dx0 = kl / zl,   rp = Delta - A(W) - xi + s,
    dZ = -G(dy),  dW = sym((K - W dZ) Z^-1),  dx = dx0 - (x / zl) dzl,  dzl = (-sum dy, dy),

with A(W)_t = <Psi_t, W> and the Schur complement

    M_st = tr(Psi_s W Psi_t Z^-1) + (x_t / y_t) [s = t] + xi / (C - sum y).

With W = Lw Lw' and Z = Lz Lz' (Cholesky), M_st = <B_s, B_t> for B_t = Lw' Psi_t Lz^-T: one triangular product
over the stacked [Psi_1 | ... | Psi_T], T triangular solves and one dsyrk (2 T d^3 + T^2 d^2 flops; M is PSD
by construction). For the diagonal cone, M = P diag(w / z) P' = (P diag(sqrt(w / z)))(...)', one dsyrk.
Predictor: K = -W Z (so sym(K Z^-1) = -W exactly), kl = -x zl; corrector: K = sigma mu I - W Z - dWa dZa,
kl = sigma mu - x zl - dxa dzla, sigma = (mu_a / mu)^3 clipped to [0, 1].

Step lengths: the largest a with X + a dX PSD (X = L L' positive definite) is -1 / lambda_min(L^-1 dX L^-T)
(infinite when lambda_min >= 0): dsygst forms L^-1 dX L^-T from the Cholesky factor already computed (W's for
the primal, Z's for the dual), dsyevr computes its smallest eigenvalue only. The primal step is
min(1, 0.98 a_P), the dual one min(1, 0.98 a_D); the dual step is then halved (at most 40 times) until the new y
has y > 0, sum y < C and I - G(y) positive definite by Cholesky (z > 0 for the diagonal): the dual iterate stays
exactly feasible, so Delta'y is a certified lower bound at every iteration. The stopping rule is the certified
gap P(W) - Delta'y <= tol, P(W) = tr(W) + C max(0, max_t Delta_t - <Psi_t, W>), and the iterate of smallest gap
is returned. The loop stops early (keeping that iterate) when W or Z stops being positive definite in floating
point, or M cannot be factored even after a 1e-12 tr(M) / T ridge.

Matrices are dense d x d column-major arrays (every input matrix is symmetric, so the row-major numpy arrays
are the same); for the diagonal cone the "matrices" are the length-d vectors of entries and every product is
entrywise. All buffers live in an :class:`IPMWorkspace`, reused across calls and grown with T.
"""
import numpy as np

from libc.math cimport INFINITY, NAN, isnan, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemm, dgemv, dsyrk, dtrmm, dtrsm
from scipy.linalg.cython_lapack cimport dpotrf, dpotri, dpotrs, dsyevr, dsygst

from .._typedefs cimport intp_t


cdef struct Work:
    int d, dd, T              # dd = d * d (trace) or d (diagonal); T = constraints of the current call
    bint diagonal
    double* W                 # d x d (dd) buffers
    double* Z
    double* Lz
    double* Zi
    double* Lw
    double* KZi
    double* dW
    double* dZ
    double* dWa
    double* dZa
    double* t1
    double* t2
    double* S
    double* x                 # T + 1 (xi, s) and the matching dual (C - sum y, y)
    double* zl
    double* dx
    double* dxa
    double* dzl
    double* dzla
    double* D
    double* kl
    double* dx0
    double* y                 # T
    double* dy
    double* dya
    double* ynew
    double* rp
    double* rhs
    double* marg
    double* M                 # T x T
    double* Mc
    double* BB                # T x dd
    double* eig               # d
    double* work              # dsyevr
    int* iwork
    int* isuppz
    int lwork, liwork


cdef class IPMWorkspace:
    """Preallocated buffers of the interior-point loop for T <= capacity constraints in dimension d (grown on
    demand); one per :class:`cyrank.mlr._inner.RestrictedSolver`, reused across its solves."""
    cdef Work w
    cdef double* mem
    cdef int* imem
    cdef intp_t cap, dim

    def __cinit__(self):
        self.mem = NULL
        self.imem = NULL
        self.cap = -1
        self.dim = -1

    def __dealloc__(self):
        free(self.mem)
        free(self.imem)

    @property
    def capacity(self):
        """``(T, d)`` the buffers are sized for."""
        return int(self.cap), int(self.dim)

    cdef int reserve(self, intp_t T, intp_t d) except -1:
        """Buffers for T constraints in dimension d (reallocated when T exceeds the capacity or d changes)."""
        cdef intp_t cap, dd = d * d, nd, nt, nm, total
        cdef double* p
        cdef int n = <int>d, lwork = -1, liwork = -1, il = 1, m = 0, info = 0, ione = 1, iopt = 0
        cdef double vl = 0.0, vu = 0.0, abstol = 0.0, wopt = 0.0, dummy = 0.0
        if T <= self.cap and d == self.dim:
            return 0
        cap = T if d != self.dim else max(T, self.cap + self.cap // 2)
        cap = max(cap, 8)
        # dsyevr's workspace for an n x n problem (query), at least its documented minimum 26 n / 10 n
        dsyevr(b"N", b"I", b"L", &n, &dummy, &n, &vl, &vu, &il, &il, &abstol, &m, &dummy, &dummy, &ione,
               &iopt, &wopt, &lwork, &iopt, &liwork, &info)
        lwork = max(<int>wopt, 26 * n, 1)
        liwork = max(iopt, 10 * n, 1)
        nd, nt, nm = 13 * dd, 9 * (cap + 1) + 7 * cap, 2 * cap * cap + cap * dd
        total = nd + nt + nm + d + lwork
        free(self.mem)
        free(self.imem)
        self.mem = <double*>malloc(total * sizeof(double))
        self.imem = <int*>malloc((liwork + 2 * d) * sizeof(int))
        if self.mem == NULL or self.imem == NULL:
            free(self.mem)
            free(self.imem)
            self.mem = NULL
            self.imem = NULL
            self.cap = -1
            raise MemoryError()
        p = self.mem
        self.w.W = p; p += dd
        self.w.Z = p; p += dd
        self.w.Lz = p; p += dd
        self.w.Zi = p; p += dd
        self.w.Lw = p; p += dd
        self.w.KZi = p; p += dd
        self.w.dW = p; p += dd
        self.w.dZ = p; p += dd
        self.w.dWa = p; p += dd
        self.w.dZa = p; p += dd
        self.w.t1 = p; p += dd
        self.w.t2 = p; p += dd
        self.w.S = p; p += dd
        self.w.x = p; p += cap + 1
        self.w.zl = p; p += cap + 1
        self.w.dx = p; p += cap + 1
        self.w.dxa = p; p += cap + 1
        self.w.dzl = p; p += cap + 1
        self.w.dzla = p; p += cap + 1
        self.w.D = p; p += cap + 1
        self.w.kl = p; p += cap + 1
        self.w.dx0 = p; p += cap + 1
        self.w.y = p; p += cap
        self.w.dy = p; p += cap
        self.w.dya = p; p += cap
        self.w.ynew = p; p += cap
        self.w.rp = p; p += cap
        self.w.rhs = p; p += cap
        self.w.marg = p; p += cap
        self.w.M = p; p += cap * cap
        self.w.Mc = p; p += cap * cap
        self.w.BB = p; p += cap * dd
        self.w.eig = p; p += d
        self.w.work = p
        self.w.lwork = lwork
        self.w.liwork = liwork
        self.w.iwork = self.imem
        self.w.isuppz = self.imem + liwork
        self.cap, self.dim = cap, d
        return 0


# ---------------------------------------------------------------------------------------- small helpers
cdef inline double dot(const double* a, const double* b, intp_t n) noexcept nogil:
    cdef intp_t i
    cdef double s = 0.0
    for i in range(n):
        s += a[i] * b[i]
    return s


cdef inline void symmetrize(double* A, int d) noexcept nogil:
    """A := (A + A') / 2 (exactly symmetric)."""
    cdef intp_t i, j
    cdef double v
    for j in range(d):
        for i in range(j + 1, d):
            v = 0.5 * (A[i + j * d] + A[j + i * d])
            A[i + j * d] = v
            A[j + i * d] = v


cdef inline void fill_upper(double* A, int d) noexcept nogil:
    """Copy the lower triangle onto the upper one."""
    cdef intp_t i, j
    for j in range(d):
        for i in range(j + 1, d):
            A[j + i * d] = A[i + j * d]


cdef bint cholesky(const double* A, double* L, int n) noexcept nogil:
    """L := lower Cholesky factor of A (upper part left as A's); False when A is not positive definite."""
    cdef int info = 0
    memcpy(L, A, n * n * sizeof(double))
    dpotrf(b"L", &n, L, &n, &info)
    return info == 0


cdef void dual_slack(Work* w, const double* flat, const double* y, double* Z) noexcept nogil:
    """Z := I - G(y) (exactly symmetric), or z := 1 - diag G(y)."""
    cdef int dd = w.dd, T = w.T, one = 1
    cdef double mone = -1.0, pone = 1.0
    cdef intp_t i
    for i in range(dd):
        Z[i] = 0.0
    if w.diagonal:
        for i in range(dd):
            Z[i] = 1.0
    else:
        for i in range(w.d):
            Z[i * (w.d + 1)] = 1.0
    dgemv(b"N", &dd, &T, &mone, <double*>flat, &dd, <double*>y, &one, &pone, Z, &one)
    if not w.diagonal:
        symmetrize(Z, w.d)


cdef bint dual_interior(Work* w, const double* flat, const double* y) noexcept nogil:
    """Z := I - G(y) and, for the PSD cone, Lz its Cholesky factor; whether Z is positive definite."""
    cdef intp_t i
    dual_slack(w, flat, y, w.Z)
    if w.diagonal:
        for i in range(w.dd):
            if not w.Z[i] > 0:
                return False
        return True
    return cholesky(w.Z, w.Lz, w.d)


cdef double step_psd(Work* w, const double* L, const double* dX) noexcept nogil:
    """Largest a with L L' + a dX PSD: -1 / lambda_min(L^-1 dX L^-T), inf if that is >= 0; NaN on failure."""
    cdef int d = w.d, itype = 1, il = 1, m = 0, info = 0, one = 1
    cdef double vl = 0.0, vu = 0.0, abstol = 4.450147717014403e-308     # 2 x the smallest normal double
    memcpy(w.S, dX, w.dd * sizeof(double))
    dsygst(&itype, b"L", &d, w.S, &d, <double*>L, &d, &info)
    if info != 0:
        return NAN
    dsyevr(b"N", b"I", b"L", &d, w.S, &d, &vl, &vu, &il, &il, &abstol, &m, w.eig, w.t2, &one, w.isuppz,
           w.work, &w.lwork, w.iwork, &w.liwork, &info)
    if info != 0 or m != 1:
        return NAN
    return -1.0 / w.eig[0] if w.eig[0] < 0 else INFINITY


cdef double step_lp(const double* x, const double* dx, intp_t n) noexcept nogil:
    """Largest a with x + a dx >= 0 (x > 0); inf when dx >= 0."""
    cdef intp_t i
    cdef double a = INFINITY
    for i in range(n):
        if dx[i] < 0 and -x[i] / dx[i] < a:
            a = -x[i] / dx[i]
    return a


cdef bint schur(Work* w, const double* flat) noexcept nogil:
    """Mc := Cholesky factor of M (module docstring), with a 1e-12 tr(M) / T ridge if needed; False if it fails.
    Needs Lw, Lz (PSD cone) or W, Zi (diagonal) and D."""
    cdef int d = w.d, dd = w.dd, T = w.T, Td = w.T * w.d, info = 0
    cdef intp_t t, i, j
    cdef double pone = 1.0, zero = 0.0, tr = 0.0, ridge
    memcpy(w.BB, flat, T * dd * sizeof(double))
    if w.diagonal:
        for i in range(dd):
            w.t1[i] = sqrt(w.W[i] * w.Zi[i])
        for t in range(T):
            for i in range(dd):
                w.BB[t * dd + i] *= w.t1[i]
    else:
        dtrmm(b"L", b"L", b"T", b"N", &d, &Td, &pone, w.Lw, &d, w.BB, &d)            # Lw' Psi_t, all t
        for t in range(T):
            dtrsm(b"R", b"L", b"T", b"N", &d, &d, &pone, w.Lz, &d, w.BB + t * dd, &d)  # ... Lz^-T
    dsyrk(b"L", b"T", &T, &dd, &pone, w.BB, &dd, &zero, w.M, &T)                     # M = B'B (lower)
    for j in range(T):
        for i in range(j, T):
            w.M[i + j * T] += w.D[0]
        w.M[j + j * T] += w.D[1 + j]
        tr += w.M[j + j * T]
    memcpy(w.Mc, w.M, T * T * sizeof(double))
    dpotrf(b"L", &T, w.Mc, &T, &info)
    if info == 0:
        return True
    ridge = 1e-12 * tr / T
    memcpy(w.Mc, w.M, T * T * sizeof(double))
    for j in range(T):
        w.Mc[j + j * T] += ridge
    dpotrf(b"L", &T, w.Mc, &T, &info)
    return info == 0


cdef void direction(Work* w, const double* flat, const double* KZi, const double* kl, double* dW, double* dZ,
                    double* dy, double* dx, double* dzl) noexcept nogil:
    """The HKM direction for the target (K, kl), given KZi = K Z^-1 (module docstring)."""
    cdef int d = w.d, dd = w.dd, T = w.T, one = 1, info = 0
    cdef intp_t i, t
    cdef double pone = 1.0, mone = -1.0, zero = 0.0, s = 0.0
    for i in range(T + 1):
        w.dx0[i] = kl[i] / w.zl[i]
    dgemv(b"T", &dd, &T, &mone, <double*>flat, &dd, <double*>KZi, &one, &zero, dy, &one)   # -A(K Z^-1)
    for t in range(T):
        dy[t] += w.rp[t] - (w.dx0[0] - w.dx0[1 + t])
    dpotrs(b"L", &T, &one, w.Mc, &T, dy, &T, &info)
    dgemv(b"N", &dd, &T, &mone, <double*>flat, &dd, dy, &one, &zero, dZ, &one)              # dZ = -G(dy)
    if w.diagonal:
        for i in range(dd):
            dW[i] = KZi[i] - w.W[i] * dZ[i] * w.Zi[i]
    else:
        symmetrize(dZ, d)
        dgemm(b"N", b"N", &d, &d, &d, &pone, w.W, &d, dZ, &d, &zero, w.t1, &d)              # W dZ
        dgemm(b"N", b"N", &d, &d, &d, &pone, w.t1, &d, w.Zi, &d, &zero, w.t2, &d)           # W dZ Z^-1
        for i in range(dd):
            dW[i] = KZi[i] - w.t2[i]
        symmetrize(dW, d)
    for t in range(T):
        s += dy[t]
        dzl[1 + t] = dy[t]
    dzl[0] = -s
    for i in range(T + 1):
        dx[i] = w.dx0[i] - w.D[i] * dzl[i]


cdef bint steps(Work* w, const double* dW, const double* dx, const double* dZ, const double* dzl,
                double* ap, double* ad) noexcept nogil:
    """The largest primal and dual steps keeping (W, x) and (Z, zl) in their cones; False on failure."""
    cdef intp_t n = w.T + 1
    if w.diagonal:
        ap[0] = step_lp(w.W, dW, w.dd)
        ad[0] = step_lp(w.Z, dZ, w.dd)
    else:
        ap[0] = step_psd(w, w.Lw, dW)
        ad[0] = step_psd(w, w.Lz, dZ)
        if isnan(ap[0]) or isnan(ad[0]):
            return False
    ap[0] = min(ap[0], step_lp(w.x, dx, n))
    ad[0] = min(ad[0], step_lp(w.zl, dzl, n))
    return True


# ---------------------------------------------------------------------------------------- the loop
cdef intp_t ipm_loop(Work* w, const double* deltas, const double* flat, double C, double tol, intp_t max_iter,
                     double* Wb, double* xb, double* yb, double* gap_out) noexcept nogil:
    """Iterate from (w.W, w.x, w.y); the iterate of smallest certified gap goes to (Wb, xb, yb), its gap to
    gap_out. Returns the number of iterations."""
    cdef int d = w.d, dd = w.dd, T = w.T, one = 1, info = 0
    cdef intp_t i, t, k, it = 0
    cdef double nu = d + T + 1, best = INFINITY, pone = 1.0, mone = -1.0, zero = 0.0
    cdef double primal, dual, xi, gap, mu, mu_a, sigma, ap, ad, s, v
    cdef bint z_ready = False, ok
    while True:
        if not z_ready:
            dual_slack(w, flat, w.y, w.Z)
        s = 0.0
        for t in range(T):
            s += w.y[t]
            w.zl[1 + t] = w.y[t]
        w.zl[0] = C - s
        dgemv(b"T", &dd, &T, &pone, <double*>flat, &dd, w.W, &one, &zero, w.marg, &one)   # A(W)
        xi = 0.0
        dual = 0.0
        for t in range(T):
            xi = max(xi, deltas[t] - w.marg[t])
            dual += deltas[t] * w.y[t]
        primal = 0.0
        if w.diagonal:
            for i in range(dd):
                primal += w.W[i]
        else:
            for i in range(d):
                primal += w.W[i * (d + 1)]
        primal += C * xi
        gap = primal - dual
        if gap < best:
            best = gap
            memcpy(Wb, w.W, dd * sizeof(double))
            memcpy(xb, w.x, (T + 1) * sizeof(double))
            memcpy(yb, w.y, T * sizeof(double))
        if gap <= tol or it >= max_iter:
            break
        it += 1
        mu = (dot(w.W, w.Z, dd) + dot(w.x, w.zl, T + 1)) / nu
        for t in range(T):
            w.rp[t] = deltas[t] - w.marg[t] - w.x[0] + w.x[1 + t]
        for i in range(T + 1):
            w.D[i] = w.x[i] / w.zl[i]
        if w.diagonal:
            ok = True
            for i in range(dd):
                ok = ok and w.Z[i] > 0
                w.Zi[i] = 1.0 / w.Z[i]
            if not ok:
                break
        else:
            if not z_ready and not cholesky(w.Z, w.Lz, d):
                break
            memcpy(w.Zi, w.Lz, dd * sizeof(double))
            dpotri(b"L", &d, w.Zi, &d, &info)
            if info != 0:
                break
            fill_upper(w.Zi, d)
            if not cholesky(w.W, w.Lw, d):        # W no longer positive definite in floating point
                break
        if not schur(w, flat):
            break
        # predictor (sigma = 0): K Z^-1 = -W, kl = -x zl
        for i in range(dd):
            w.KZi[i] = -w.W[i]
        for i in range(T + 1):
            w.kl[i] = -w.x[i] * w.zl[i]
        direction(w, flat, w.KZi, w.kl, w.dWa, w.dZa, w.dya, w.dxa, w.dzla)
        if not steps(w, w.dWa, w.dxa, w.dZa, w.dzla, &ap, &ad):
            break
        ap = min(1.0, ap)
        ad = min(1.0, ad)
        mu_a = 0.0
        for i in range(dd):
            mu_a += (w.W[i] + ap * w.dWa[i]) * (w.Z[i] + ad * w.dZa[i])
        for i in range(T + 1):
            mu_a += (w.x[i] + ap * w.dxa[i]) * (w.zl[i] + ad * w.dzla[i])
        mu_a /= nu
        sigma = min(1.0, max(0.0, mu_a / mu))
        sigma = sigma * sigma * sigma
        # corrector: K Z^-1 = sigma mu Z^-1 - W - dWa dZa Z^-1, kl = sigma mu - x zl - dxa dzla
        if w.diagonal:
            for i in range(dd):
                w.KZi[i] = sigma * mu * w.Zi[i] - w.W[i] - w.dWa[i] * w.dZa[i] * w.Zi[i]
        else:
            dgemm(b"N", b"N", &d, &d, &d, &pone, w.dZa, &d, w.Zi, &d, &zero, w.t1, &d)
            dgemm(b"N", b"N", &d, &d, &d, &mone, w.dWa, &d, w.t1, &d, &zero, w.KZi, &d)
            for i in range(dd):
                w.KZi[i] += sigma * mu * w.Zi[i] - w.W[i]
        for i in range(T + 1):
            w.kl[i] = sigma * mu - w.x[i] * w.zl[i] - w.dxa[i] * w.dzla[i]
        direction(w, flat, w.KZi, w.kl, w.dW, w.dZ, w.dy, w.dx, w.dzl)
        if not steps(w, w.dW, w.dx, w.dZ, w.dzl, &ap, &ad):
            break
        ap = min(1.0, 0.98 * ap)
        ad = min(1.0, 0.98 * ad)
        for i in range(dd):
            w.W[i] += ap * w.dW[i]
        for i in range(T + 1):
            w.x[i] += ap * w.dx[i]
        # the dual stays exactly feasible: halve its step while rounding breaks y > 0, sum y < C, I - G(y) PD
        ok = False
        for k in range(40):
            s = 0.0
            ok = True
            for t in range(T):
                v = w.y[t] + ad * w.dy[t]
                w.ynew[t] = v
                s += v
                ok = ok and v > 0
            ok = ok and s < C
            if ok:
                ok = dual_interior(w, flat, w.ynew)
            if ok:
                break
            ad *= 0.5
        if not ok:
            break
        memcpy(w.y, w.ynew, T * sizeof(double))
        z_ready = True              # Z (and Lz) computed at the new y by dual_interior
    gap_out[0] = best
    return it


def ipm(IPMWorkspace work, const double[::1] deltas, const double[:, ::1] flat, double C, bint diagonal,
        double tol, intp_t max_iter, double[::1] W, double[::1] x, double[::1] y):
    """Run the interior-point loop (module docstring) from the interior point (W, x, y) in place.

    ``flat``: (T, d*d) symmetric Psi_t row by row ((T, d) diagonals for ``diagonal``); W: the flattened d x d
    matrix (length d for ``diagonal``), x = (xi, s) (T + 1), y (T). On return (W, x, y) is the iterate of
    smallest certified gap. Returns ``(gap, iterations)``.
    """
    cdef intp_t T = deltas.shape[0], dd = flat.shape[1], d, it
    cdef double gap = INFINITY
    cdef Work* w
    d = dd if diagonal else <intp_t>(sqrt(<double>dd) + 0.5)
    if flat.shape[0] != T or (not diagonal and d * d != dd) or W.shape[0] != dd or x.shape[0] != T + 1 \
            or y.shape[0] != T or T < 1:
        raise ValueError("inconsistent shapes")
    work.reserve(T, d)
    w = &work.w
    w.d, w.dd, w.T, w.diagonal = <int>d, <int>dd, <int>T, diagonal
    memcpy(w.W, &W[0], dd * sizeof(double))
    memcpy(w.x, &x[0], (T + 1) * sizeof(double))
    memcpy(w.y, &y[0], T * sizeof(double))
    with nogil:
        it = ipm_loop(w, &deltas[0], &flat[0, 0], C, tol, max_iter, &W[0], &x[0], &y[0], &gap)
    return gap, int(it)


def max_step(const double[:, ::1] X, const double[:, ::1] dX):
    """The largest a with X + a dX PSD (X symmetric positive definite, dX symmetric; inf when dX is PSD), by
    the Cholesky factor of X, dsygst and dsyevr as in the loop. Raises ValueError when X is not positive
    definite."""
    cdef intp_t d = X.shape[0]
    cdef double a
    cdef IPMWorkspace work = IPMWorkspace()
    cdef Work* w
    if X.shape[1] != d or dX.shape[0] != d or dX.shape[1] != d or d < 1:
        raise ValueError("X and dX must be square of one size")
    work.reserve(1, d)
    w = &work.w
    w.d, w.dd, w.T, w.diagonal = <int>d, <int>(d * d), 1, False
    memcpy(w.Z, &X[0, 0], d * d * sizeof(double))
    memcpy(w.dZ, &dX[0, 0], d * d * sizeof(double))
    with nogil:
        if cholesky(w.Z, w.Lz, w.d):
            a = step_psd(w, w.Lz, w.dZ)
        else:
            a = -1.0
    if a == -1.0:
        raise ValueError("X is not positive definite")
    if isnan(a):
        raise ValueError("eigenvalue computation failed")
    return a
