"""The restricted problem of the MLR cutting-plane method, solved to a certified duality gap.

Over a working set of T batches (Delta_t, Psi_t) the restricted problem is

    P(W) = R(W) + C max(0, max_t (Delta_t - <W, Psi_t>)),   W in K,

with R(W) = tr(W) and K the PSD cone ("trace"), R(W) = 0.5 ||W||_F^2 and K the PSD cone ("frobenius"), or
R(W) = sum(w) and K = {diag(w): w >= 0} ("diagonal"). With G(y) = sum_t y_t Psi_t and
S = {y >= 0, sum(y) <= C}, its Lagrange dual is

    trace:      max Delta'y   s.t. y in S, I - G(y) PSD
    diagonal:   max Delta'y   s.t. y in S, 1 - diag(G(y)) >= 0
    frobenius:  max Delta'y - 0.5 ||Pi_+(G(y))||_F^2   s.t. y in S        (Pi_+: projection on the PSD cone)

Solvers (T, the number of cutting planes, is small; d x d matrices are dense):

* trace and diagonal: a primal-dual interior-point method (Mehrotra predictor-corrector with the HKM direction;
  Helmberg, Rendl, Vanderbei & Wolkowicz 1996) on the conic form
  min <I, W> + C xi  s.t.  <Psi_t, W> + xi - s_t = Delta_t,  W PSD (or w >= 0), xi >= 0, s >= 0.
  Each iteration solves one T x T Schur-complement system, O(T d^3 + T^2 d^2); step lengths come from the
  smallest eigenvalue of L^-1 dX L^-T (L the Cholesky factor of X = W or Z). The dual iterate is kept exactly
  feasible (Z = I - G(y) is recomputed from y and checked by Cholesky), so Delta'y is always a valid lower bound.
  The start and the whole loop run in Cython without the GIL on buffers reused across calls
  (cyrank/mlr/_ipm.pyx: formulas, BLAS calls, costs), as does the purification below; the active set and the
  warm start stay here.
* frobenius: the dual is smooth in y, with W = Pi_+(G(y)) exact; it is maximised by a log-barrier
  path-following Newton method on S (the generalised Hessian of 0.5 ||Pi_+(G)||^2 is the Loewner divided-
  difference operator; the central-path gap is mu (T + 1)), warm-started, for at most NEWTON_STEPS steps. On
  unscaled features (Psi entries ~1e4, W* ~1e-5) it crawls along the kink of Pi_+ at the optimum's nearly-zero
  eigenvalue, so when it has not reached tol by then a primal-dual interior point on min 0.5 ||W||_F^2 + C xi
  takes over (Mehrotra predictor-corrector, Nesterov-Todd direction, numpy, from a start scaled to the data;
  9-14 iterations on the working sets where the Newton method stopped short; :func:`_frobenius_ipm`).

Every solver stops on the *certified* gap P(W) - D(y) <= tol, where P(W) is evaluated exactly at a PSD (or
nonnegative diagonal) W and D(y) at a dual-feasible y; D(y) is a lower bound on the restricted optimum and hence
on the full problem's optimum. Before returning, eigen-components of W of relative size below 1e-2 .. 1e-10
(interior-point residue on directions the optimum does not use), or all of them, are dropped when that does not
increase P(W), so W comes out low-rank (trace) or sparse (diagonal) (cyrank.mlr._ipm.purify). Not reaching tol
within ``max_iter`` iterations is reported (``converged`` False, the gap actually reached; :class:`RestrictedSolver`
counts such solves in ``n_unsolved``), never warned here: the outer certificate holds whatever the inner accuracy,
since any dual-feasible y bounds the optimum.

Across cutting-plane iterations, :class:`RestrictedSolver` warm-starts from the previous solution (see its
docstring); the certificate is for the whole working set.
"""
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ._ipm import IPMWorkspace, ipm, max_step, purify

REGULARIZERS = ("trace", "frobenius", "diagonal")
# Newton steps of the warm-started Frobenius dual method before the interior point takes over
NEWTON_STEPS = 50


@dataclass
class InnerResult:
    """Solution of the restricted problem: W (d x d; the vector w for "diagonal"), its slack
    xi = max(0, max_t Delta_t - <W, Psi_t>), the primal value P(W), the dual lower bound, gap = primal - dual,
    iterations, whether gap <= tol, and the dual variables y."""

    W: np.ndarray
    xi: float
    primal: float
    dual: float
    gap: float
    n_iter: int
    converged: bool
    y: np.ndarray


def regularizer_value(W, regularizer):
    """R(W): tr(W), 0.5 ||W||_F^2, or sum(w) (W given as the vector w for "diagonal")."""
    if regularizer == "trace":
        return float(np.trace(W))
    if regularizer == "frobenius":
        return 0.5 * float(np.vdot(W, W))
    return float(np.sum(W))


def restricted_objective(W, deltas, psis, C, regularizer):
    """``(P(W), xi)`` over the working set; psis is (T, d, d), or (T, d) diagonals for "diagonal"."""
    deltas = np.asarray(deltas, dtype=np.float64)
    if len(deltas) == 0:
        return regularizer_value(W, regularizer), 0.0
    margins = np.asarray(psis).reshape(len(deltas), -1) @ np.ravel(W)
    xi = max(0.0, float(np.max(deltas - margins)))
    return regularizer_value(W, regularizer) + C * xi, xi


def _sym(A):
    return 0.5 * (A + A.T)


def spectrum(W, diagonal):
    """``(lam, V)``: the eigenvalues (ascending) and eigenvectors of the symmetric part of W, or for a diagonal
    metric its entries and None (no eigendecomposition). The one decomposition behind every truncation of W."""
    if diagonal:
        return np.asarray(W, dtype=np.float64), None
    return np.linalg.eigh(_sym(W))


def keep_large(lam, V, tau):
    """W rebuilt from the components with lam > tau * max(lam) (tau = inf: W = 0), as a matrix, or as the
    vector of entries when V is None (diagonal)."""
    top = float(np.max(lam)) if lam.size else 0.0
    keep = lam > tau * top
    if V is None:
        return np.where(keep, lam, 0.0)
    return _sym((V[:, keep] * lam[keep]) @ V[:, keep].T)


def _ipm(deltas, psis, C, diagonal, tol, max_iter, start=None, theta=0.01, work=None):
    """Primal-dual interior point (Mehrotra predictor-corrector, HKM direction) for the trace / diagonal
    restricted problem; see the module docstring. ``start = (W, x, y)`` (x = (xi, s)) is blended with the
    cold start (weight ``theta``) to warm-start from the previous working set's solution. Runs in Cython
    (:func:`cyrank.mlr._ipm.ipm`, where the formulas are) on the buffers of ``work`` (an
    :class:`~cyrank.mlr._ipm.IPMWorkspace`; a new one if None).
    Returns the iterate of smallest certified gap ``(W, x, y, gap, iterations)``."""
    return ipm(IPMWorkspace() if work is None else work, deltas, psis, C, diagonal, tol, max_iter, start, theta)


def _gram(y, flat, d):
    """G(y) = sum_t y_t Psi_t (symmetrised), ``flat`` the (T, d * d) stack of the Psi_t."""
    return _sym((y @ flat).reshape(d, d))


def _frobenius_dual(y, deltas, flat, d):
    """A lower bound on D(y) = Delta'y - 0.5 ||Pi_+(G(y))||_F^2 that rounding cannot push above it, and
    Pi_+(G(y)), for y in S. Each computed eigenvalue of G(y) is raised by delta = 4 (d + T + 1) eps
    sum_t |y_t| ||Psi_t||_F before its positive part is squared: the rounding of G(y) and eigh's backward error
    move no eigenvalue by more (Weyl). Negligible on scaled data; with a column x 1e9 (Psi ~1e18) it is what
    keeps D(y) a bound (unraised, the bound passed the objective of a known W by 1.7)."""
    lam, Q = np.linalg.eigh(_gram(y, flat, d))
    lp = np.maximum(lam, 0.0)
    delta = 4.0 * (d + len(y) + 1) * np.finfo(np.float64).eps * float(np.abs(y) @ np.linalg.norm(flat, axis=1))
    return float(y @ deltas) - 0.5 * float(np.sum(np.maximum(lam + delta, 0.0) ** 2)), _sym((Q * lp) @ Q.T)


def _frobenius_newton(deltas, psis, C, tol, max_iter, y_start=None, theta=0.01, sigma=0.2):
    """Log-barrier path following on the smooth Frobenius dual, warm-started at ``y_start``; W = Pi_+(G(y)) is
    exact at every y. Returns the iterate of smallest certified gap ``(W, y, dual, gap, newton_steps)``."""
    T = len(deltas)
    d = psis.shape[1]
    flat = psis.reshape(T, -1)

    def phi(y, mu):
        s = C - np.sum(y)
        if np.any(y <= 0) or s <= 0:
            return None
        lam = np.linalg.eigvalsh(_gram(y, flat, d))
        return float(y @ deltas) - 0.5 * float(np.sum(np.maximum(lam, 0) ** 2)) + mu * (
            float(np.sum(np.log(y))) + np.log(s))

    y = np.full(T, C / (2.0 * T))
    if y_start is not None:
        y = (1 - theta) * y_start + theta * y
    mu = max(C * float(np.mean(deltas)) / (T + 1), 1e-300)
    best = None
    n_iter = 0
    for _ in range(200):
        f = phi(y, mu)
        while n_iter < max_iter:
            lam, Q = np.linalg.eigh(_gram(y, flat, d))
            lp = np.maximum(lam, 0.0)
            Pt = Q.T @ psis @ Q                                                    # Psi_t in G's eigenbasis
            s = C - np.sum(y)
            grad = deltas - np.einsum("tii,i->t", Pt, lp) + mu / y - mu / s
            diff = lam[:, None] - lam[None, :]
            same = np.abs(diff) <= 1e-14 * max(1.0, float(np.max(np.abs(lam))))
            gamma = np.where(same, (lam[:, None] > 0) * 1.0, (lp[:, None] - lp[None, :]) / np.where(same, 1.0, diff))
            Pf = Pt.reshape(T, -1)
            H = (Pf * gamma.ravel()) @ Pf.T + np.diag(mu / y ** 2) + mu / s ** 2   # Loewner derivative
            try:
                step = cho_solve(cho_factor(_sym(H)), grad)
            except LinAlgError:
                step = np.linalg.lstsq(H, grad, rcond=None)[0]
            dec = float(grad @ step)
            if not np.isfinite(dec) or dec <= 0.1 * mu:
                break
            tau = 1.0
            while tau > 1e-12:
                f_new = phi(y + tau * step, mu)
                if f_new is not None and f_new >= f + 0.25 * tau * dec:
                    break
                tau *= 0.5
            else:
                break
            y = y + tau * step
            f = f_new
            n_iter += 1
        dual, W = _frobenius_dual(y, deltas, flat, d)
        gap = restricted_objective(W, deltas, psis, C, "frobenius")[0] - dual
        if best is None or gap < best[3]:
            best = (W, y.copy(), dual, gap)
        if gap <= tol or n_iter >= max_iter or mu < 1e-300:
            break
        mu *= sigma
    return (*best, n_iter)


def _frobenius(deltas, psis, C, tol, max_iter, y_start=None):
    """The Frobenius restricted problem: the warm-started dual Newton method (:func:`_frobenius_newton`, a few
    steps when the previous working set's y is close), and when it has not reached ``tol`` within NEWTON_STEPS
    steps the interior point (:func:`_frobenius_ipm`, cold); the better certified result ``(W, y, dual,
    iterations)``, iterations counting both."""
    W, y, dual, gap, k = _frobenius_newton(deltas, psis, C, tol, min(max_iter, NEWTON_STEPS), y_start)
    if gap <= tol or k >= max_iter:
        return W, y, dual, k
    W2, y2, dual2, gap2, k2 = _frobenius_ipm(deltas, psis, C, tol, max_iter - k)
    return (W2, y2, dual2, k + k2) if gap2 < gap else (W, y, dual, k + k2)


def _max_step(X, dX):
    """The largest alpha with X + alpha dX PSD (cyrank.mlr._ipm.max_step), 0 if X is not numerically positive
    definite."""
    try:
        return max_step(X, dX)
    except ValueError:
        return 0.0


def _positive_step(x, dx):
    """The largest alpha with x + alpha dx >= 0 (x > 0)."""
    neg = dx < 0
    return float(np.min(-x[neg] / dx[neg])) if neg.any() else np.inf


def _nt_iteration(deltas, psis, C, W, Z, xi, nu, s, y):
    """One Mehrotra predictor-corrector iteration of :func:`_frobenius_ipm` (its docstring has the system) from
    the interior point (W, Z, xi, nu, s, y); the next one, in that order. LinAlgError when a factorisation
    fails, ValueError when scipy meets a non-finite value."""
    T, d = len(deltas), psis.shape[1]
    flat = psis.reshape(T, -1)
    n = d + 1 + T

    def A(W):
        return flat @ W.ravel()

    r_p = deltas - A(W) - xi + s                  # primal residual
    R_d = _gram(y, flat, d) + Z - W               # dual residual (matrix)
    r_xi = C - y.sum() - nu                       # dual residual of xi
    mu = (float(np.vdot(W, Z)) + xi * nu + float(s @ y)) / n
    lw, Qw = np.linalg.eigh(W)
    W_half = (Qw * np.sqrt(np.maximum(lw, 1e-300))) @ Qw.T
    lm, Qm = np.linalg.eigh(_sym(W_half @ Z @ W_half))
    N = _sym(W_half @ ((Qm / np.sqrt(np.maximum(lm, 1e-300))) @ Qm.T) @ W_half)
    sig, Qn = np.linalg.eigh(N)
    sig = np.maximum(sig, 1e-300)
    gain = np.outer(sig, sig)
    gain /= gain + 1.0                             # (I + N^-1 (.) N^-1)^-1 in N's eigenbasis
    N_inv = (Qn / sig) @ Qn.T
    Z_inv = np.linalg.inv(Z)
    Pt = np.einsum("ji,tjk,kl->til", Qn, psis, Qn).reshape(T, -1)
    M = (Pt * gain.ravel()) @ Pt.T + xi / nu + np.diag(s / y)
    factor = cho_factor(_sym(M))

    def direction(target):
        B = _sym(N_inv @ (target * Z_inv - W) @ N_inv)
        LR = Qn @ ((Qn.T @ (R_d + B) @ Qn) * gain) @ Qn.T
        dy = cho_solve(factor, r_p - A(LR) - (target - xi * nu - xi * r_xi) / nu + (target - s * y) / y)
        dW = _sym(LR + Qn @ ((Qn.T @ _gram(dy, flat, d) @ Qn) * gain) @ Qn.T)
        dZ = _sym(N_inv @ (target * Z_inv - W - dW) @ N_inv)
        dnu = r_xi - dy.sum()
        return dW, dZ, (target - xi * nu - xi * dnu) / nu, dnu, (target - s * y) / y - (s / y) * dy, dy

    def steps(dW, dZ, dxi, dnu, ds, dy):
        primal = min(1.0, _max_step(W, dW), _positive_step(np.array([xi]), np.array([dxi])),
                     _positive_step(s, ds))
        dual = min(1.0, _max_step(Z, dZ), _positive_step(np.array([nu]), np.array([dnu])),
                   _positive_step(y, dy))
        return primal, dual

    aff = direction(0.0)                           # predictor: the affine-scaling direction
    ap, ad = steps(*aff)
    mu_aff = (float(np.vdot(W + ap * aff[0], Z + ad * aff[1])) + (xi + ap * aff[2]) * (nu + ad * aff[3])
              + float((s + ap * aff[4]) @ (y + ad * aff[5]))) / n
    dW, dZ, dxi, dnu, ds, dy = step = direction(min(1.0, mu_aff / mu) ** 3 * mu)
    ap, ad = steps(*step)
    ap, ad = 0.95 * ap, 0.95 * ad
    return _sym(W + ap * dW), _sym(Z + ad * dZ), xi + ap * dxi, nu + ad * dnu, s + ap * ds, y + ad * dy


def _frobenius_ipm(deltas, psis, C, tol, max_iter):
    """Primal-dual interior point for the Frobenius restricted problem (module docstring), Mehrotra
    predictor-corrector with the Nesterov-Todd direction (Todd, Toh & Tutuncu, SIAM J. Optim. 1998):

        min 0.5 ||W||_F^2 + C xi  s.t.  <Psi_t, W> + xi - s_t = Delta_t,  W PSD,  xi >= 0,  s >= 0,

    dual multipliers y (of the equalities), Z = W - G(y) (of W PSD), nu = C - sum(y) (of xi). With N the NT scaling
    (N Z N = W), eliminating dZ = N^-1 (mu Z^-1 - W - dW) N^-1 leaves (I + N^-1 (.) N^-1) dW = R + G(dy), diagonal
    in N's eigenbasis (factor 1 + 1 / (sigma_i sigma_j)), and a T x T Schur complement in dy, O(T d^3 + T^2 d^2)
    per iteration. The start is scaled to the data (W = |Delta|_max / |Psi|_max I, Z = C |Psi|_max / T I). Measured:
    9-14 iterations on the working sets where the dual Newton method stopped short (small problems, columns of
    standard deviation 34-115), 8-115 alone on WDBC's raw columns (where the Newton method needs no help).
    Every iterate is certified: P at the PSD part of W (or at Pi_+(G(y)) when smaller) against D(y) at y clipped
    to S; a failed factorisation or a non-finite iterate (e.g. a column scaled by 1e9) ends the loop.
    Returns the certified iterate of smallest gap (W = 0, y = 0 at worst) ``(W, y, dual, gap, iterations)``."""
    T, d = len(deltas), psis.shape[1]
    flat = psis.reshape(T, -1)

    def certify(W, y):
        y = np.maximum(y, 0.0)
        if y.sum() > C:
            y *= C / y.sum()
        dual, W_dual = _frobenius_dual(y, deltas, flat, d)
        lam, Q = np.linalg.eigh(W)
        W_primal = _sym((Q * np.maximum(lam, 0.0)) @ Q.T)
        candidates = [restricted_objective(V, deltas, psis, C, "frobenius")[0] for V in (W_dual, W_primal)]
        W = W_dual if candidates[0] <= candidates[1] else W_primal
        return min(candidates) - dual, W, y, dual

    big = max(float(np.max(np.linalg.norm(flat, axis=1))), 1e-300)
    W = max(float(np.max(np.abs(deltas))), 1e-3) / big * np.eye(d)
    Z = max(C * big / T, 1e-3) * np.eye(d)
    xi, nu, s, y = 1.0, 0.5 * C, np.ones(T), np.full(T, C / (2.0 * T))
    zero = np.zeros((d, d))                           # W = 0, y = 0: certified with D = 0 whatever happens
    best = (restricted_objective(zero, deltas, psis, C, "frobenius")[0], zero, np.zeros(T), 0.0)
    for it in range(max_iter + 1):
        try:
            gap, W_cert, y_cert, dual = certify(W, y)
            if gap < best[0]:
                best = (gap, W_cert, y_cert, dual)
            if gap <= tol or it == max_iter:
                break
            with np.errstate(all="ignore"):           # overflow is caught below, as a non-finite point
                point = _nt_iteration(deltas, psis, C, W, Z, xi, nu, s, y)
        except (LinAlgError, ValueError):             # singular or non-finite: keep the best certified iterate
            break
        if not all(np.all(np.isfinite(v)) for v in point):
            break
        W, Z, xi, nu, s, y = point
    return best[1], best[2], best[3], best[0], it


class RestrictedSolver:
    """``solve_restricted`` for :func:`cyrank.optim.cutting_plane.cutting_plane`, with memory across calls.

    Each call solves the restricted problem over the engine's working set (a
    :class:`cyrank.optim.cutting_plane.WorkingSet`, which MLR never shrinks) to a certified gap ``tol``:

    * active set, from the engine's aging: a constraint idle (zero weight) in ``patience`` consecutive solves is
      left out of the interior-point solve (as SVM-struct retires constraints); retired constraints violated at the
      result beyond the subset's slack come back and the subset is re-solved, until P(W) over the *whole* working
      set is within ``tol`` of the subset's dual bound (a valid lower bound for the whole set, whose constraints
      are more);
    * warm start: the previous primal-dual point, blended with the cold start (interior-point methods need
      an interior point); the dual point is kept here in full (the working set keeps the zeroed weights). The
      Frobenius interior point, when the warm-started Newton method hands over, starts cold (:func:`_frobenius`).

    The weights returned are the dual variables of the constraints tight at the solution
    (Delta_t - <W, Psi_t> >= xi - ``margin``; at least the smallest positive float, also for a tight constraint
    outside the subset) and 0 for the others (an interior-point method never gives an exact 0). ``psis`` are d x d
    matrices ("trace", "frobenius") or length-d diagonals ("diagonal"). After a call,
    ``last`` holds the :class:`InnerResult` (for the whole working set) and ``n_iter`` counts all iterations;
    ``work`` holds the interior-point buffers (:class:`~cyrank.mlr._ipm.IPMWorkspace`), reused by every call.
    """

    def __init__(self, C, regularizer, tol, max_iter=200, warm_start=True, margin=0.0, patience=5):
        self.C, self.regularizer, self.tol, self.max_iter = C, regularizer, tol, max_iter
        self.warm_start, self.margin, self.patience = warm_start, margin, patience
        self.state = None          # (W, xi) of the last interior iterate
        self.last = None
        self.n_iter = 0
        self.n_unsolved = 0   # restricted solves that stopped on max_iter short of tol
        self.n_calls = 0
        self.y = np.zeros(0)       # the full dual point of the last call (MLR's working set only grows)
        self.work = IPMWorkspace()  # the interior-point buffers, reused across calls

    def __call__(self, ws):
        y_start = np.zeros(ws.K)
        y_start[: min(ws.K, self.y.size)] = self.y[: ws.K]
        res = self.solve(ws.deltas, ws.psis, y_start, ws.idle < self.patience)
        self.y = res.y
        # active = tight at the solution, whether or not it was in the interior-point subset (a tight retired
        # constraint comes back next time): its weight, or the smallest positive number if that is 0
        tight = ws.deltas - ws.flat @ np.ravel(res.W) >= res.xi - self.margin
        return res.W, res.xi, res.n_iter, res.dual, np.where(tight, np.maximum(res.y, np.finfo(float).tiny), 0.0)

    def solve(self, deltas, psis, y_start=None, subset=None):
        """The restricted problem over (deltas, psis), warm-started at the weights ``y_start``, with the
        interior-point solves on ``subset`` (a boolean mask; default all) and violated constraints re-admitted."""
        C, reg, tol = self.C, self.regularizer, self.tol
        deltas = np.asarray(deltas, dtype=np.float64)
        psis = np.asarray(psis, dtype=np.float64)
        T = len(deltas)
        self.n_calls += 1
        y_all = np.zeros(T) if y_start is None else np.array(y_start, dtype=np.float64)
        if T == 0 or float(np.max(deltas)) <= 0.0:
            zero = np.zeros(psis.shape[1] if reg == "diagonal" else psis.shape[1:])
            p0, xi0 = restricted_objective(zero, deltas, psis, C, reg)
            self.last = InnerResult(zero, xi0, p0, 0.0, p0, 0, True, np.zeros(T))
            return self.last
        flat = psis.reshape(T, -1)
        subset = np.ones(T, dtype=bool) if subset is None else np.array(subset, dtype=bool)
        n_iter = 0
        for _ in range(T + 1):
            idx = np.flatnonzero(subset)
            dl, ps = (deltas, psis) if idx.size == T else (deltas[idx], psis[idx])    # no copy when all
            if reg == "frobenius":
                ys = y_all[idx] if (self.warm_start and np.any(y_all[idx] > 0) and np.sum(y_all[idx]) < C) else None
                W, ys, dual, k = _frobenius(dl, ps, C, tol, self.max_iter - n_iter, ys)
            else:
                start = None
                if self.warm_start and self.state is not None:
                    Wp, xip = self.state
                    s = np.maximum((flat @ np.ravel(Wp))[idx] + xip - dl, 0.0)
                    start = (Wp, np.concatenate(([xip], s)), y_all[idx])
                W, x, ys, gap, k = _ipm(dl, ps, C, reg == "diagonal", tol, self.max_iter - n_iter, start,
                                        work=self.work)
                self.state = (W, float(x[0]))
                dual = float(ys @ dl)
            n_iter += k
            y_all = np.zeros(T)
            y_all[idx] = ys
            viol = deltas - flat @ np.ravel(W)
            xi_sub = max(0.0, float(np.max(viol[idx])))
            primal = regularizer_value(W, reg) + C * max(0.0, float(np.max(viol)))
            missing = (~subset) & (viol > xi_sub + 1e-12 * max(1.0, abs(xi_sub)))
            if primal - dual <= tol or not np.any(missing) or n_iter >= self.max_iter:
                break
            subset |= missing
        if reg != "frobenius":
            W = purify(W, deltas, psis, C, reg == "diagonal")[0]
        primal, xi = restricted_objective(W, deltas, psis, C, reg)   # as __call__ evaluates the margins
        gap = primal - dual
        self.n_iter += n_iter
        self.last = InnerResult(W, xi, primal, dual, gap, n_iter, gap <= tol, y_all)
        self.n_unsolved += int(gap > tol)
        return self.last


def solve_inner(deltas, psis, C, regularizer="trace", *, tol, max_iter=200):
    """Solve one restricted problem from a cold start to a certified gap ``P(W) - D(y) <= tol``.

    ``psis``: (T, d, d) stack of the batch matrices, or the (T, d) stack of their diagonals for "diagonal".
    ``max_iter`` bounds the interior-point iterations; reaching it before
    ``tol`` gives ``converged`` False.
    """
    return RestrictedSolver(C, regularizer, tol, max_iter, warm_start=False).solve(deltas, psis)
