"""Coordinate descent for a quadratic model plus an l1 term, the inner problem of proximal Newton (Yuan, Ho & Lin,
"An Improved GLMNET for L1-regularized Logistic Regression", JMLR 2012, section 3; Tseng & Yun 2009):

    min_d  q(d) = g'd + d'H d / 2 + lam1 ||w + d||_1

over the m coordinates of a working set, H dense symmetric positive semi-definite (m x m, C-ordered). Each
coordinate step minimises q exactly in d_r (soft-thresholding with the exact curvature H_rr) and keeps Hd up to
date (one row of H), so a sweep costs O(m^2). The stopping measure is the model's KKT violation,
max_r dist(-(g + H d)_r, lam1 * subdifferential of |w_r + d_r|).
"""

import numpy as np

from cyrank._math cimport l1_violation
from cyrank._typedefs cimport intp_t


def solve_quadratic_l1(const double[:, ::1] H, const double[::1] g, const double[::1] w, double lam1,
                       double[::1] d, double tol, intp_t max_sweeps):
    """Minimise q(d) (module docstring) by cyclic coordinate descent from the given ``d``, in place.

    Returns (sweeps, final KKT violation of the model). Coordinates with H_rr = 0 are left where they are (q is
    then linear in them: only a zero gradient is optimal, which the violation reports).
    """
    cdef intp_t m = g.shape[0], r, k, sweep = 0
    cdef double grad, z, z_new, delta, thresh, viol = 0.0
    if H.shape[0] != m or H.shape[1] != m or w.shape[0] != m or d.shape[0] != m:
        raise ValueError("solve_quadratic_l1: wrong array sizes")
    if m == 0:
        return 0, 0.0
    cdef double[::1] Hd = np.zeros(m)
    with nogil:
        for r in range(m):
            if d[r] != 0.0:
                for k in range(m):
                    Hd[k] += d[r] * H[r, k]
        while True:
            viol = 0.0
            for r in range(m):
                viol = max(viol, l1_violation(g[r] + Hd[r], w[r] + d[r], lam1))
            if viol <= tol or sweep >= max_sweeps:
                break
            sweep += 1
            for r in range(m):
                if H[r, r] <= 0.0:
                    continue
                grad = g[r] + Hd[r]
                z = w[r] + d[r]
                z_new = z - grad / H[r, r]
                thresh = lam1 / H[r, r]
                if z_new > thresh:
                    z_new -= thresh
                elif z_new < -thresh:
                    z_new += thresh
                else:
                    z_new = 0.0
                delta = z_new - z
                if delta != 0.0:
                    d[r] += delta
                    for k in range(m):
                        Hd[k] += delta * H[r, k]
    return sweep, viol


def model_violation(H, g, w, lam1, d):
    """The KKT violation of the model at d (numpy; for tests and the refinement below)."""
    grad = g + H @ d
    z = w + d
    return float(np.max(np.where(z > 0, np.abs(grad + lam1), np.where(z < 0, np.abs(grad - lam1),
                                                                      np.maximum(np.abs(grad) - lam1, 0.0))),
                        initial=0.0))


def _newton_on(H, rhs, A):
    """x_A solving H_AA x_A = rhs (least squares when H_AA is singular: collinear features)."""
    HA = H[np.ix_(A, A)]
    try:
        x = np.linalg.solve(HA, rhs)
        if np.all(np.isfinite(x)):
            return x
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(HA, rhs, rcond=None)[0]


def minimise_quadratic_l1(H, g, w, double lam1, double tol, intp_t max_sweeps=10, intp_t max_steps=0):
    """Minimise q(d) (module docstring) to a model KKT violation <= ``tol``, returning (d, sweeps, violation).

    A few sweeps of coordinate descent (at most ``max_sweeps``) find a support; then the feature-sign search of
    Lee, Battle, Raina & Ng ("Efficient sparse coding algorithms", NIPS 2006) in z = w + d, exact in finitely many
    steps whatever the conditioning of H (CD alone is slow on an ill-conditioned H): with the active set A and
    signs theta, z_A <- the minimiser of the smooth quadratic b'z + z'Hz/2 + lam1 theta'z on A (b = g - H w), and
    the best point of the segment to it among its end and its sign changes (coordinates that reach 0 leave A);
    when A is optimal, the zero coordinate violating KKT most joins A with the sign that decreases q. At most
    ``max_steps`` (default 2 m + 20: about one change of the support per coordinate) steps; the caller gets the
    violation reached."""
    cdef intp_t m = g.shape[0], sweeps = 0, steps = 0
    d = np.zeros(m)
    if m == 0:
        return d, 0, 0.0
    sweeps, viol = solve_quadratic_l1(H, g, w, lam1, d, tol, max_sweeps)
    if viol <= tol:
        return d, sweeps, viol
    b = g - H @ w
    z = w + d

    def phi(z):
        return float(b @ z + 0.5 * z @ (H @ z) + lam1 * np.abs(z).sum())

    limit = max_steps or 2 * m + 20
    while steps < limit:
        grad = b + H @ z
        A = np.flatnonzero(z)
        theta = np.sign(z[A])
        # optimality on A first; else add the worst zero coordinate
        on_A = np.abs(grad[A] + lam1 * theta) if A.size else np.zeros(0)
        if not A.size or np.max(on_A) <= tol:
            off = np.where(z == 0, np.abs(grad) - lam1, -np.inf)
            j = int(np.argmax(off))
            if off[j] <= tol:
                break
            A = np.sort(np.r_[A, j])
            theta = np.sign(np.where(np.arange(m) == j, -grad, z))[A]
        steps += 1
        target = np.zeros(m)
        target[A] = _newton_on(H, -(b[A] + lam1 * theta), A)
        # candidates on the segment z -> target: its end and every sign change of a coordinate of A
        delta = target - z
        cross = [1.0]
        for i in A:
            if z[i] != 0.0 and np.sign(target[i]) != np.sign(z[i]) and delta[i] != 0.0:
                t = -z[i] / delta[i]
                if 0.0 < t < 1.0:
                    cross.append(t)
        best, best_z = phi(z), z
        for t in sorted(cross):
            cand = z + t * delta
            if t < 1.0:
                cand[np.abs(cand) <= 1e-14 * np.maximum(np.abs(z), np.abs(target))] = 0.0
            val = phi(cand)
            if val < best:
                best, best_z = val, cand
        if best_z is z:  # no progress in floating point
            break
        z = best_z
    d = z - w
    return d, sweeps, model_violation(H, g, w, lam1, d)
