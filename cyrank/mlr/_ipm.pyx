"""MLR's restricted interior-point method (cyrank/mlr/_inner.py, ``_ipm``): start, loop and purification in Cython.

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

Predictor: K = -W Z (so K Z^-1 = -W exactly), kl = -x zl; corrector: K Z^-1 = sigma mu Z^-1 - W - dWa dZa Z^-1,
kl = sigma mu - x zl - dxa dzla, sigma = (mu_a / mu)^3 clipped to [0, 1], mu_a the duality measure after the
predictor's steps.

Schur complement: with W = Lw Lw' and Z^-1 = Lz^-T Lz^-1 (Cholesky factors; Lz^-1 by dtrtri),
M_st = <B_s, B_t> for B_t' = Lz^-1 Psi_t Lw: one dgemm over the stacked [Psi_1 | ... | Psi_T] (Lw' Psi_t), a
transposition of each d x d block (Psi_t Lw), a second dgemm (Lz^-1 .), and B'B by a third (4 T d^3 + 2 T^2 d^2
flops, all level 3; OpenBLAS's triangular routines are several times slower at these sizes). For the diagonal
cone, M = P diag(w / z) P' = (P diag(sqrt(w / z)))(...)'.

Step lengths: the largest a with X + a dX PSD (X = L L' positive definite) is -1 / lambda_min(L^-1 dX L^-T)
(infinite when lambda_min >= 0). The step taken is min(1, s a) with a = min(a_X, a_v) (a_v the ratio test of
x or zl) and s = 1 (predictor) or 0.98 (corrector), so a_X matters only when it is below cap = min(a_v, 1 / s):
if X + cap dX is positive definite (Cholesky), a_X >= cap and no eigenvalue is computed (most dual steps);
otherwise L^-1 dX L^-T is formed with two dgemm (L^-1 from dtrtri), reduced to tridiagonal form by Householder
reflections in plain loops, and its smallest eigenvalue found below -1 / cap by Sturm multisection (8 counts
per sweep). The dual step is then halved (at most 40 times) until the new y has y > 0, sum y < C and I - G(y)
positive definite by Cholesky (z > 0 for the diagonal): the dual iterate stays exactly feasible, so Delta'y is a
certified lower bound at every iteration. The stopping rule is the certified gap P(W) - Delta'y <= tol,
P(W) = tr(W) + C max(0, max_t Delta_t - <Psi_t, W>), and the iterate of smallest gap is returned. The loop stops
early (keeping that iterate) when W or Z stops being positive definite in floating point, or M cannot be
factored even after a 1e-12 tr(M) / T ridge.

Start: y = C / (2T) shrunk until G(y) <= I / 2, W = x = scale (cold), blended with the previous solution
(warm); lambda_max(G(y)) is computed only when a Cholesky test says it exceeds the bound.

Matrices are dense d x d column-major arrays (every Psi_t is symmetrised on entry, so row- and column-major
agree); for the diagonal cone the "matrices" are the length-d vectors of entries and every product is
entrywise. All buffers live in an :class:`IPMWorkspace`, reused across calls and grown with T. On WDBC MLR-AUC
(d = 30) an iteration costs about 0.1 ms, against 0.67 ms for the numpy loop it replaces.
"""
import numpy as np

from libc.float cimport DBL_EPSILON, DBL_MIN
from libc.math cimport INFINITY, NAN, fabs, isnan, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemm, dgemv
from scipy.linalg.cython_lapack cimport dpotrf, dpotrs, dsyevr, dtrtri

from .._typedefs cimport intp_t


cdef struct Work:
    int d, dd, T              # dd = d * d (trace) or d (diagonal); T = constraints of the current call
    bint diagonal
    double* W                 # d x d (dd) buffers
    double* Z
    double* Lz
    double* Zi
    double* Lw
    double* Lzinv
    double* Lwinv
    double* KZi
    double* dW
    double* dZ
    double* dWa
    double* dZa
    double* t1
    double* t2
    double* S
    double* S2
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
    double* marg
    double* M                 # T x T
    double* Mc
    double* F                 # T x dd: the symmetrised Psi_t, one per row
    double* BB
    double* BB2
    double* tdiag             # d: the tridiagonal form of a step matrix (diagonal, off-diagonal), scratch
    double* toff
    double* tau
    double* eig


cdef class IPMWorkspace:
    """Preallocated buffers of the interior-point loop for T <= capacity constraints in dimension d (grown on
    demand); one per :class:`cyrank.mlr._inner.RestrictedSolver`, reused across its solves."""
    cdef Work w
    cdef double* mem
    cdef intp_t cap, dim, size

    def __cinit__(self):
        self.mem = NULL
        self.cap = -1
        self.dim = -1
        self.size = -1

    def __dealloc__(self):
        free(self.mem)

    @property
    def capacity(self):
        """``(T, d)`` the buffers are sized for."""
        return int(self.cap), int(self.dim)

    cdef int reserve(self, intp_t T, intp_t d, bint diagonal) except -1:
        """Buffers for T constraints in dimension d, matrices of dd = d * d entries (d for ``diagonal``);
        reallocated when T exceeds the capacity or the shape changes."""
        cdef intp_t cap, dd = d if diagonal else d * d
        cdef double* p
        if T <= self.cap and d == self.dim and dd == self.size:
            return 0
        cap = T if (d != self.dim or dd != self.size) else max(T, self.cap + self.cap // 2)
        cap = max(cap, 8)
        free(self.mem)
        self.mem = <double*>malloc((16 * dd + 9 * (cap + 1) + 6 * cap + 2 * cap * cap + 3 * cap * dd + 4 * d)
                                   * sizeof(double))
        if self.mem == NULL:
            self.cap = -1
            raise MemoryError()
        p = self.mem
        self.w.W = p; p += dd
        self.w.Z = p; p += dd
        self.w.Lz = p; p += dd
        self.w.Zi = p; p += dd
        self.w.Lw = p; p += dd
        self.w.Lzinv = p; p += dd
        self.w.Lwinv = p; p += dd
        self.w.KZi = p; p += dd
        self.w.dW = p; p += dd
        self.w.dZ = p; p += dd
        self.w.dWa = p; p += dd
        self.w.dZa = p; p += dd
        self.w.t1 = p; p += dd
        self.w.t2 = p; p += dd
        self.w.S = p; p += dd
        self.w.S2 = p; p += dd
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
        self.w.marg = p; p += cap
        self.w.M = p; p += cap * cap
        self.w.Mc = p; p += cap * cap
        self.w.F = p; p += cap * dd
        self.w.BB = p; p += cap * dd
        self.w.BB2 = p; p += cap * dd
        self.w.tdiag = p; p += d
        self.w.toff = p; p += d
        self.w.tau = p; p += d
        self.w.eig = p
        self.cap, self.dim, self.size = cap, d, dd
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


cdef bint cholesky(const double* A, double* L, int n) noexcept nogil:
    """L := lower Cholesky factor of A (upper part left as A's); False when A is not positive definite."""
    cdef int info = 0
    memcpy(L, A, n * n * sizeof(double))
    dpotrf(b"L", &n, L, &n, &info)
    return info == 0


cdef bint factor(const double* A, double* L, double* Linv, int d, bint factored) noexcept nogil:
    """L := lower Cholesky factor of A (unless ``factored``: L holds it already) and Linv := L^-1, both with
    zero upper triangles; False when A is not positive definite."""
    cdef int info = 0
    cdef intp_t i, j
    if not factored and not cholesky(A, L, d):
        return False
    for j in range(d):
        for i in range(j):
            L[i + j * d] = 0.0
    memcpy(Linv, L, d * d * sizeof(double))
    dtrtri(b"L", b"N", &d, Linv, &d, &info)
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


cdef void tridiagonalize(double* A, int n, double* dg, double* off, double* v, double* p) noexcept nogil:
    """Householder reduction of the symmetric n x n A (lower triangle read, and overwritten) to the symmetric
    tridiagonal matrix (diagonal dg, off-diagonal off) with the same eigenvalues (Golub & Van Loan, Matrix
    Computations, 4th ed., 2013, section 8.3.1). Plain loops: at n <= 30 LAPACK's dsytrd spends most of its time
    in the overhead of its level-2 BLAS calls."""
    cdef intp_t k, i, j, m
    cdef double x0, sigma, mu, v0, beta, s, c, vj, pj
    cdef double* a
    cdef double* col
    for k in range(n - 2):
        m = n - k - 1
        col = A + k * n + k + 1                   # column k below the diagonal (length m)
        a = A + (k + 1) * n + k + 1               # the trailing m x m block, column-major with leading dim n
        dg[k] = A[k * n + k]
        x0 = col[0]
        sigma = 0.0
        for i in range(1, m):
            sigma += col[i] * col[i]
        if sigma == 0.0:
            off[k] = x0
            continue
        mu = sqrt(x0 * x0 + sigma)
        v0 = x0 - mu if x0 <= 0 else -sigma / (x0 + mu)
        beta = 2.0 * v0 * v0 / (sigma + v0 * v0)
        v[0] = 1.0
        for i in range(1, m):
            v[i] = col[i] / v0
        off[k] = mu                               # (I - beta v v') col = mu e1
        for i in range(m):                        # p = beta A22 v from the lower triangle
            p[i] = 0.0
        for j in range(m):
            col = a + j * n
            vj = v[j]
            s = col[j] * vj
            for i in range(j + 1, m):
                s = s + col[i] * v[i]
                p[i] += col[i] * vj
            p[j] += s
        s = 0.0
        for i in range(m):
            p[i] *= beta
            s += p[i] * v[i]
        c = 0.5 * beta * s
        for i in range(m):                        # w = p - (beta / 2) (p'v) v
            p[i] -= c * v[i]
        for j in range(m):                        # A22 -= v w' + w v' (lower triangle)
            col = a + j * n
            vj = v[j]
            pj = p[j]
            for i in range(j, m):
                col[i] -= v[i] * pj + p[i] * vj
    if n >= 2:
        dg[n - 2] = A[(n - 2) * n + n - 2]
        off[n - 2] = A[(n - 2) * n + n - 1]
    dg[n - 1] = A[(n - 1) * n + n - 1]


cdef enum:
    SECTIONS = 8                                  # Sturm counts evaluated together (independent divisions)


cdef double smallest_below(const double* dg, const double* off, double* e2, int n, double bound) noexcept nogil:
    """min(lambda_min, bound) for the symmetric tridiagonal (dg, off): ``bound`` when no eigenvalue is below it
    (one Sturm count), else lambda_min to full accuracy by multisection: Sturm counts (the signs of the pivots
    of T - x I; Golub & Van Loan, section 8.4.1, with LAPACK's pivmin guard) at SECTIONS points of the bracket
    at once, which divides it by SECTIONS + 1 per sweep at about the cost of one count."""
    cdef intp_t i, k
    cdef double lo = INFINITY, hi = -INFINITY, r, tnorm, pivmin, e2max = 0.0, width, q0
    cdef double x[SECTIONS]
    cdef double q[SECTIONS]
    cdef double neg[SECTIONS]
    cdef int first, sweeps
    for i in range(n - 1):
        e2[i] = off[i] * off[i]
        e2max = max(e2max, e2[i])
    for i in range(n):                            # Gershgorin bounds
        r = 0.0
        if i > 0:
            r += fabs(off[i - 1])
        if i < n - 1:
            r += fabs(off[i])
        lo = min(lo, dg[i] - r)
        hi = max(hi, dg[i] + r)
    tnorm = max(fabs(lo), fabs(hi))
    pivmin = DBL_MIN * max(1.0, e2max)
    # no eigenvalue below bound: a single count
    q0 = dg[0] - bound
    first = q0 <= pivmin
    if fabs(q0) <= pivmin:
        q0 = -pivmin
    for i in range(1, n):
        q0 = dg[i] - bound - e2[i - 1] / q0
        if fabs(q0) <= pivmin:
            q0 = -pivmin
        first = first or q0 < 0
    if not first:
        return bound
    hi = bound
    lo = lo - 2.0 * DBL_EPSILON * tnorm - 2.0 * pivmin          # below every eigenvalue
    for sweeps in range(64):
        width = hi - lo
        if width <= 2.0 * DBL_EPSILON * max(fabs(lo), fabs(hi)) + pivmin:
            break
        for k in range(SECTIONS):
            x[k] = lo + width * (k + 1) / (SECTIONS + 1)
            q[k] = dg[0] - x[k]
            q[k] = -pivmin if fabs(q[k]) <= pivmin else q[k]
            neg[k] = q[k] < 0
        for i in range(1, n):                     # SECTIONS independent recurrences: no wait on each division
            for k in range(SECTIONS):
                r = dg[i] - x[k] - e2[i - 1] / q[k]
                q[k] = -pivmin if fabs(r) <= pivmin else r
                neg[k] += q[k] < 0
        first = SECTIONS                          # the first point with an eigenvalue below it
        for k in range(SECTIONS - 1, -1, -1):
            if neg[k] > 0:
                first = k
        for k in range(SECTIONS):
            if k == first and x[k] < hi:
                hi = x[k]
            if k == first - 1 and x[k] > lo:
                lo = x[k]
        if hi - lo >= width:                      # no progress left in floating point
            break
    r = 0.5 * (lo + hi)
    if bound - r <= 2.0 * DBL_EPSILON * max(fabs(r), fabs(bound)) + 2.0 * pivmin:
        return bound                              # lambda_min = bound within the accuracy
    return r


cdef double smallest_eigenvalue(Work* w, double* A, double bound) noexcept nogil:
    """min(lambda_min(A), bound) for the symmetric d x d A (lower triangle read, A overwritten):
    tridiagonalize, then :func:`smallest_below`."""
    tridiagonalize(A, w.d, w.tdiag, w.toff, w.tau, w.eig)
    return smallest_below(w.tdiag, w.toff, w.tau, w.d, bound)


cdef double lambda_min(Work* w, const double* Linv, const double* dX, double bound) noexcept nogil:
    """min(lambda_min(Linv dX Linv'), bound) (dX symmetric), the matrix formed with two products."""
    cdef int d = w.d
    cdef double pone = 1.0, zero = 0.0
    dgemm(b"N", b"N", &d, &d, &d, &pone, <double*>Linv, &d, <double*>dX, &d, &zero, w.S2, &d)
    dgemm(b"N", b"T", &d, &d, &d, &pone, w.S2, &d, <double*>Linv, &d, &zero, w.S, &d)
    return smallest_eigenvalue(w, w.S, bound)


cdef void shrink_dual(Work* w, double* y, double top) noexcept nogil:
    """y := y top / lambda_max(G(y)) when lambda_max(G(y)) > top (the largest entry of G(y) for the diagonal
    cone). When top I - G(y) is positive definite (Cholesky) y is left alone with no eigenvalue computed."""
    cdef intp_t i
    cdef int d = w.d, dd = w.dd, T = w.T, info = 0, one = 1
    cdef double lam = -INFINITY, pone = 1.0, zero = 0.0
    dgemv(b"N", &dd, &T, &pone, w.F, &dd, y, &one, &zero, w.S, &one)                  # S = G(y)
    if w.diagonal:
        for i in range(dd):
            lam = max(lam, w.S[i])
    else:
        symmetrize(w.S, d)
        for i in range(dd):
            w.S2[i] = -w.S[i]
            w.S[i] = -w.S[i]
        for i in range(d):
            w.S2[i * (d + 1)] += top
        dpotrf(b"L", &d, w.S2, &d, &info)                                                 # top I - G(y) PD?
        if info == 0:
            return
        lam = -smallest_eigenvalue(w, w.S, -top)                                          # of -G(y)
    if lam > top:
        for i in range(T):
            y[i] *= top / lam


cdef void start_point(Work* w, const double* deltas, double C, const double* W0, const double* x0,
                      const double* y0, double theta) noexcept nogil:
    """The first iterate (w.W, w.x, w.y). Cold: y = C / (2 T) shrunk until G(y) <= I / 2, W = scale I (or
    scale 1), x = scale, scale = max(1, C max(Delta) / (d + T + 1)). Warm (W0 not NULL): the previous point
    (W0, x0, y0) -- y0 first shrunk until G(y0) <= I, as it may violate it on this constraint set -- blended
    with the cold one, weight theta on the cold one."""
    cdef intp_t i, T = w.T
    cdef double scale, top = deltas[0]
    for i in range(T):
        w.y[i] = C / (2.0 * T)
        top = max(top, deltas[i])
    shrink_dual(w, w.y, 0.5)
    scale = max(1.0, C * top / (w.d + T + 1))
    for i in range(w.dd):
        w.W[i] = 0.0
    if w.diagonal:
        for i in range(w.dd):
            w.W[i] = scale
    else:
        for i in range(w.d):
            w.W[i * (w.d + 1)] = scale
    for i in range(T + 1):
        w.x[i] = scale
    if W0 == NULL:
        return
    memcpy(w.ynew, y0, T * sizeof(double))
    shrink_dual(w, w.ynew, 1.0)
    for i in range(w.dd):
        w.W[i] = (1 - theta) * W0[i] + theta * w.W[i]
    for i in range(T + 1):
        w.x[i] = (1 - theta) * x0[i] + theta * w.x[i]
    for i in range(T):
        w.y[i] = (1 - theta) * w.ynew[i] + theta * w.y[i]


cdef double step_lp(const double* x, const double* dx, intp_t n) noexcept nogil:
    """Largest a with x + a dx >= 0 (x > 0); inf when dx >= 0."""
    cdef intp_t i
    cdef double a = INFINITY
    for i in range(n):
        if dx[i] < 0 and -x[i] / dx[i] < a:
            a = -x[i] / dx[i]
    return a


cdef double step(Work* w, const double* X, const double* Linv, const double* dX, const double* v,
                 const double* dv, double scale) noexcept nogil:
    """min(1, scale a) for the largest a keeping X + a dX in the cone (PSD: X = L L', Linv = L^-1) and
    v + a dv >= 0; NaN on failure.

    PSD: a_X = -1 / lambda_min(Linv dX Linv'). That eigenvalue is computed only when it matters: with
    a_v = step_lp(v, dv) and cap = min(a_v, 1 / scale), if X + cap dX is positive definite (Cholesky) then
    a_X >= cap and the answer is min(1, scale a_v) whatever a_X."""
    cdef intp_t i
    cdef int d = w.d, info = 0
    cdef double a = step_lp(v, dv, w.T + 1), cap, lam
    if w.diagonal:
        return min(1.0, scale * min(a, step_lp(X, dX, w.dd)))
    cap = min(a, 1.0 / scale)
    for i in range(w.dd):
        w.S[i] = X[i] + cap * dX[i]
    dpotrf(b"L", &d, w.S, &d, &info)
    if info != 0:                                 # X + cap dX not PD: the PSD bound may bind
        lam = lambda_min(w, Linv, dX, -1.0 / cap)
        if isnan(lam):
            return NAN
        if lam < -1.0 / cap:
            a = min(a, -1.0 / lam)
    return min(1.0, scale * a)


cdef bint schur(Work* w, const double* flat) noexcept nogil:
    """Mc := Cholesky factor of M (module docstring), with a 1e-12 tr(M) / T ridge if needed; False if it fails.
    Needs Lw, Lzinv (PSD cone) or W, Zi (diagonal) and D.

    PSD cone: M_st = <B_s, B_t> with B_t' = Lz^-1 Psi_t Lw, from two products over the stacked
    [Psi_1 | ... | Psi_T] and a transposition of each block."""
    cdef int d = w.d, dd = w.dd, T = w.T, Td = w.T * w.d, info = 0
    cdef intp_t t, i, j
    cdef double pone = 1.0, zero = 0.0, tr = 0.0, ridge
    cdef double* src
    cdef double* dst
    if w.diagonal:
        for i in range(dd):
            w.t1[i] = sqrt(w.W[i] * w.Zi[i])
        for t in range(T):
            for i in range(dd):
                w.BB[t * dd + i] = flat[t * dd + i] * w.t1[i]
    else:
        dgemm(b"T", b"N", &d, &Td, &d, &pone, w.Lw, &d, <double*>flat, &d, &zero, w.BB, &d)   # Lw' Psi_t
        for t in range(T):                                                                     # Psi_t Lw
            src = w.BB + t * dd
            dst = w.BB2 + t * dd
            for j in range(d):
                for i in range(d):
                    dst[j + i * d] = src[i + j * d]
        dgemm(b"N", b"N", &d, &Td, &d, &pone, w.Lzinv, &d, w.BB2, &d, &zero, w.BB, &d)        # Lz^-1 Psi_t Lw
    dgemm(b"T", b"N", &T, &T, &dd, &pone, w.BB, &dd, w.BB, &dd, &zero, w.M, &T)                # M = B'B
    for j in range(T):
        for i in range(j + 1, T):
            w.M[i + j * T] = 0.5 * (w.M[i + j * T] + w.M[j + i * T]) + w.D[0]
        w.M[j + j * T] += w.D[0] + w.D[1 + j]
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


# ---------------------------------------------------------------------------------------- the loop
cdef intp_t ipm_loop(Work* w, const double* deltas, const double* flat, double C, double tol, intp_t max_iter,
                     double* Wb, double* xb, double* yb, double* gap_out) noexcept nogil:
    """Iterate from (w.W, w.x, w.y); the iterate of smallest certified gap goes to (Wb, xb, yb), its gap to
    gap_out. Returns the number of iterations."""
    cdef int d = w.d, dd = w.dd, T = w.T, one = 1
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
            if not factor(w.Z, w.Lz, w.Lzinv, d, z_ready):
                break
            dgemm(b"T", b"N", &d, &d, &d, &pone, w.Lzinv, &d, w.Lzinv, &d, &zero, w.Zi, &d)   # Z^-1
            symmetrize(w.Zi, d)
            if not factor(w.W, w.Lw, w.Lwinv, d, False):      # W no longer positive definite in floating point
                break
        if not schur(w, flat):
            break
        # predictor (sigma = 0): K Z^-1 = -W, kl = -x zl
        for i in range(dd):
            w.KZi[i] = -w.W[i]
        for i in range(T + 1):
            w.kl[i] = -w.x[i] * w.zl[i]
        direction(w, flat, w.KZi, w.kl, w.dWa, w.dZa, w.dya, w.dxa, w.dzla)
        ap = step(w, w.W, w.Lwinv, w.dWa, w.x, w.dxa, 1.0)
        ad = step(w, w.Z, w.Lzinv, w.dZa, w.zl, w.dzla, 1.0)
        if isnan(ap) or isnan(ad):
            break
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
        ap = step(w, w.W, w.Lwinv, w.dW, w.x, w.dx, 0.98)
        ad = step(w, w.Z, w.Lzinv, w.dZ, w.zl, w.dzl, 0.98)
        if isnan(ap) or isnan(ad):
            break
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


def ipm(IPMWorkspace work, deltas, psis, double C, bint diagonal, double tol, intp_t max_iter, start=None,
        double theta=0.01):
    """The interior-point method of the module docstring on (Delta_t, Psi_t), t = 1..T.

    ``psis``: (T, d, d), or the (T, d) diagonals for ``diagonal``. ``start = (W0, x0, y0)``: warm start
    (x0 = (xi, s)), blended with the cold start (weight ``theta`` on the cold one). Returns the iterate of
    smallest certified gap and its gap, ``(W, x, y, gap, iterations)``.
    """
    cdef double[::1] dl = np.ascontiguousarray(deltas, dtype=np.float64)
    cdef const double[:, ::1] ps
    cdef double[::1] W0v, x0v, y0v, Wv, xv, yv
    cdef const double* W0p = NULL
    cdef const double* x0p = NULL
    cdef const double* y0p = NULL
    cdef intp_t T = dl.shape[0], d, dd, it = 0, t, i, j
    cdef double gap = INFINITY
    cdef Work* w
    psis = np.asarray(psis, dtype=np.float64)
    if T < 1 or psis.shape[0] != T or psis.ndim != (2 if diagonal else 3) or (
            not diagonal and psis.shape[1] != psis.shape[2]):
        raise ValueError("psis must be (T, d, d), or (T, d) for the diagonal")
    if not (np.isfinite(dl).all() and np.isfinite(psis).all()):
        raise ValueError("deltas and psis must be finite")
    d = psis.shape[1]
    dd = d if diagonal else d * d
    ps = np.ascontiguousarray(psis.reshape(T, dd))
    W = np.empty(dd)
    x = np.empty(T + 1)
    y = np.empty(T)
    Wv, xv, yv = W, x, y
    if start is not None:
        W0v = np.ascontiguousarray(start[0], dtype=np.float64).reshape(-1)
        x0v = np.ascontiguousarray(start[1], dtype=np.float64).reshape(-1)
        y0v = np.ascontiguousarray(start[2], dtype=np.float64).reshape(-1)
        if W0v.shape[0] != dd or x0v.shape[0] != T + 1 or y0v.shape[0] != T:
            raise ValueError("start does not match the problem")
        W0p, x0p, y0p = &W0v[0], &x0v[0], &y0v[0]
    work.reserve(T, d, diagonal)
    w = &work.w
    w.d, w.dd, w.T, w.diagonal = <int>d, <int>dd, <int>T, diagonal
    with nogil:
        if diagonal:
            memcpy(w.F, &ps[0, 0], T * dd * sizeof(double))
        else:
            for t in range(T):                    # the symmetric part: every kernel assumes Psi_t = Psi_t'
                for j in range(d):
                    for i in range(d):
                        w.F[t * dd + i + j * d] = 0.5 * (ps[t, i + j * d] + ps[t, j + i * d])
        start_point(w, &dl[0], C, W0p, x0p, y0p, theta)
        it = ipm_loop(w, &dl[0], w.F, C, tol, max_iter, &Wv[0], &xv[0], &yv[0], &gap)
    return (W if diagonal else W.reshape(d, d)), x, y, gap, int(it)


def max_step(const double[:, ::1] X, const double[:, ::1] dX):
    """The largest a with X + a dX PSD (X symmetric positive definite, dX symmetric; inf when dX is PSD):
    -1 / lambda_min(L^-1 dX L^-T), L the Cholesky factor of X, computed as in the loop. Raises ValueError when
    X is not positive definite."""
    cdef intp_t d = X.shape[0]
    cdef double lam = 0.0
    cdef bint ok
    cdef IPMWorkspace work = IPMWorkspace()
    cdef Work* w
    if X.shape[1] != d or dX.shape[0] != d or dX.shape[1] != d or d < 1:
        raise ValueError("X and dX must be square of one size")
    work.reserve(1, d, False)
    w = &work.w
    w.d, w.dd, w.T, w.diagonal = <int>d, <int>(d * d), 1, False
    memcpy(w.Z, &X[0, 0], d * d * sizeof(double))
    memcpy(w.dZ, &dX[0, 0], d * d * sizeof(double))
    with nogil:
        ok = factor(w.Z, w.Lz, w.Lzinv, w.d, False)
        if ok:
            lam = lambda_min(w, w.Lzinv, w.dZ, 0.0)
    if not ok:
        raise ValueError("X is not positive definite")
    if isnan(lam):
        raise ValueError("eigenvalue computation failed")
    return -1.0 / lam if lam < 0 else INFINITY


# ---------------------------------------------------------------------------------------- purification
cdef double objective(const double* deltas, const double* flat, intp_t T, int dd, const double* W, double reg_value,
                      double C, double* marg, double* xi) noexcept nogil:
    """P(W) = R(W) + C xi, xi = max(0, max_t Delta_t - <Psi_t, W>), given R(W) = reg_value."""
    cdef int one = 1, Ti = <int>T
    cdef double pone = 1.0, zero = 0.0
    cdef intp_t t
    dgemv(b"T", &dd, &Ti, &pone, <double*>flat, &dd, <double*>W, &one, &zero, marg, &one)
    xi[0] = 0.0
    for t in range(T):
        xi[0] = max(xi[0], deltas[t] - marg[t])
    return reg_value + C * xi[0]


def purify(W, deltas, psis, double C, bint diagonal, taus=(INFINITY, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10)):
    """Drop the relatively tiny eigen-components of W (entries for ``diagonal``) when that does not raise P(W).

    With W = sum_i lam_i v_i v_i' (the symmetric part of W; LAPACK dsyevr), the truncations
    W_tau = sum_{lam_i > tau max(lam)} lam_i v_i v_i' are tried in the order of ``taus`` (inf: W = 0), each kept
    when its P is <= the best so far (P(W) to begin with). ``psis``: (T, d, d), or (T, d) diagonals. Returns
    ``(W, P(W), xi)`` for the W kept (a new array), P evaluated exactly at it.
    """
    cdef double[::1] dl = np.ascontiguousarray(deltas, dtype=np.float64)
    cdef intp_t T = dl.shape[0], i, j, k, k0, last_k0 = -1, ntau = len(taus)
    cdef int d, dd, n, m = 0, info = 0, lwork, liwork, il = 0, r
    cdef double vl = 0.0, vu = 0.0, abstol = 0.0, best, val, xi = 0.0, best_xi, top, reg_value, pone = 1.0
    cdef double zero = 0.0, thr
    cdef double[:, ::1] ps
    cdef double[::1] Wv, A, lam, V, U, cand, kept, marg, work, tv
    cdef int[::1] iwork, isuppz
    W = np.array(W, dtype=np.float64)
    d = <int>W.shape[0]
    dd = d if diagonal else d * d
    ps = np.ascontiguousarray(np.asarray(psis, dtype=np.float64).reshape(T, dd))
    Wv = W.reshape(-1)
    marg = np.empty(max(T, 1))
    tv = np.asarray(taus, dtype=np.float64)
    reg_value = 0.0
    for i in range(d):
        reg_value += Wv[i] if diagonal else Wv[i * (d + 1)]
    best = objective(&dl[0], &ps[0, 0], T, dd, &Wv[0], reg_value, C, &marg[0], &best_xi)
    kept = Wv.copy()
    cand = np.empty(dd)
    if diagonal:
        lam = Wv
    else:
        n = d
        A = np.empty(dd)
        for j in range(d):
            for i in range(d):
                A[i + j * d] = 0.5 * (Wv[i + j * d] + Wv[j + i * d])
        lam = np.empty(d)
        V = np.empty(dd)
        U = np.empty(dd)
        isuppz = np.empty(2 * d, dtype=np.intc)
        lwork, liwork = 26 * d, 10 * d
        work = np.empty(lwork)
        iwork = np.empty(liwork, dtype=np.intc)
        dsyevr(b"V", b"A", b"L", &n, &A[0], &n, &vl, &vu, &il, &il, &abstol, &m, &lam[0], &V[0], &n,
               &isuppz[0], &work[0], &lwork, &iwork[0], &liwork, &info)
        if info != 0:
            raise np.linalg.LinAlgError("dsyevr failed")
    top = -INFINITY
    for i in range(d):
        top = max(top, lam[i])
    if d == 0 or top <= 0:
        return W, best, best_xi
    for k in range(ntau):
        thr = tv[k] * top
        reg_value = 0.0
        if diagonal:
            for i in range(d):
                cand[i] = lam[i] if lam[i] > thr else 0.0
                reg_value += cand[i]
        else:
            k0 = d                                # lam ascending: the kept components are k0, ..., d - 1
            while k0 > 0 and lam[k0 - 1] > thr:
                k0 -= 1
            if k0 == last_k0:                     # the same truncation as the previous tau: the same value
                continue
            last_k0 = k0
            r = d - <int>k0
            for j in range(r):                    # U = V_K diag(lam_K), cand = sym(U V_K')
                reg_value += lam[k0 + j]
                for i in range(d):
                    U[i + j * d] = V[i + (k0 + j) * d] * lam[k0 + j]
            if r > 0:
                dgemm(b"N", b"T", &d, &d, &r, &pone, &U[0], &d, &V[k0 * d], &d, &zero, &cand[0], &d)
                symmetrize(&cand[0], d)
            else:
                cand[:] = 0.0
        val = objective(&dl[0], &ps[0, 0], T, dd, &cand[0], reg_value, C, &marg[0], &xi)
        if val <= best:
            best, best_xi = val, xi
            kept[:] = cand
    return np.asarray(kept).reshape(W.shape).copy(), best, best_xi
