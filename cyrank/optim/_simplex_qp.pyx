"""The restricted problem of the 1-slack cutting-plane method with regulariser ||w||^2 / 2, solved in its dual.

Primal over a working set of K constraints (Delta_k, Psi_k):

    min_w  ||w||^2 / 2 + C xi    s.t.  xi >= Delta_k - <w, Psi_k>  (k = 1..K),  xi >= 0.

Dual, with a = C lam and G_kl = <Psi_k, Psi_l>:

    max  D(lam) = C (lam'Delta - C lam'G lam / 2)    s.t.  lam >= 0,  sum(lam) <= 1,      w = C sum_k lam_k Psi_k.

Adding a slack lam_0 = 1 - sum(lam) (with Delta_0 = 0, Psi_0 = 0) makes the feasible set a simplex, on which
this solver runs SMO: minimise h(lam) = C lam'G lam / 2 - lam'Delta by moving mass between the coordinate of
smallest gradient and the coordinate of largest gradient among those with positive mass, with an exact line
search. It stops when that gradient gap (the KKT violation on the simplex) is <= tol; since
h(lam) - min h <= gap, the dual value is then within C * tol of the restricted optimum.
Each step costs O(K). Used by cyrank.ranksvm for the hinge loss. Ctrl-C stops the steps (KeyboardInterrupt).
"""
import numpy as np

from cyrank._parallel cimport Interrupt, check_interrupt, interrupt_init, interrupted
from cyrank._typedefs cimport intp_t


# multiple of the float64 epsilon in the gradient's rounding floor (see solve_simplex_qp)
cdef double GRAD_ROUNDING = 16 * 2.220446049250313e-16


def solve_simplex_qp(const double[:, ::1] G, const double[::1] delta, double C, double[::1] lam, double tol,
                     intp_t max_steps):
    """SMO on the dual above, warm-started from ``lam`` (modified in place; must be feasible).

    Returns ``(n_steps, gap, dual_value)``; ``gap <= tol`` unless ``max_steps`` was reached. A ``tol`` below the
    gradient's rounding error (16 eps C max_k G_kk) is raised to it. ``lam`` summing to at most 1 + 1e-6 (rounding
    drift) is scaled back onto the simplex.
    """
    cdef intp_t K = delta.shape[0], k, i, j, steps = 0
    cdef double lam0, t, curv, gi, gj, gap, s = 0.0, Gii, Gjj, Gij, Gmax = 0.0
    if G.shape[0] != K or G.shape[1] != K or lam.shape[0] != K:
        raise ValueError("G must be K x K and lam of length K")
    if C <= 0:
        raise ValueError("C must be > 0")
    for k in range(K):
        if lam[k] < 0:
            raise ValueError("lam must be >= 0")
        s += lam[k]
    if s > 1.0 + 1e-6:
        raise ValueError(f"sum(lam) must be <= 1, got {s!r}")
    if s > 1.0:  # rounding drift of a previous solve's many small steps: back onto the simplex
        for k in range(K):
            lam[k] /= s
        s = 1.0
    # the gradient C G lam - Delta is computed with an absolute error of about eps C max|G_kk| (sum(lam) <= 1):
    # a smaller gap cannot be certified, so it is not asked for (it would only burn max_steps)
    for k in range(K):
        if G[k, k] > Gmax:
            Gmax = G[k, k]
    tol = max(tol, GRAD_ROUNDING * C * Gmax)
    grad_arr = np.empty(K, dtype=np.float64)
    cdef double[::1] grad = grad_arr
    cdef Interrupt intr
    interrupt_init(&intr)
    with nogil:
        lam0 = 1.0 - s
        if lam0 < 0.0:
            lam0 = 0.0
        for k in range(K):  # grad of h: C G lam - Delta; the slack's gradient is 0
            t = 0.0
            for i in range(K):
                t = t + G[k, i] * lam[i]
            grad[k] = C * t - delta[k]
        while True:
            # i: smallest gradient (slack = -1 has gradient 0); j: largest gradient with positive mass
            i = -1
            gi = 0.0
            j = -1
            gj = 0.0 if lam0 > 0.0 else -1e300
            for k in range(K):
                if grad[k] < gi:
                    gi = grad[k]
                    i = k
                if lam[k] > 0.0 and grad[k] > gj:
                    gj = grad[k]
                    j = k
            gap = gj - gi
            if gap <= tol or steps >= max_steps or i == j or interrupted(&intr, 2 * K + 1):
                break
            steps += 1
            Gii = G[i, i] if i >= 0 else 0.0
            Gjj = G[j, j] if j >= 0 else 0.0
            Gij = G[i, j] if (i >= 0 and j >= 0) else 0.0
            curv = C * (Gii + Gjj - 2.0 * Gij)
            t = lam[j] if j >= 0 else lam0
            if curv > 0.0 and gap / curv < t:
                t = gap / curv
            if i >= 0:
                lam[i] += t
            else:
                lam0 += t
            if j >= 0:
                lam[j] -= t
                if lam[j] < 0.0:
                    lam[j] = 0.0
            else:
                lam0 -= t
                if lam0 < 0.0:
                    lam0 = 0.0
            for k in range(K):
                grad[k] += C * t * ((G[k, i] if i >= 0 else 0.0) - (G[k, j] if j >= 0 else 0.0))
    check_interrupt(&intr)
    # dual value D = C (lam'Delta - C lam'G lam / 2), recomputed from scratch (no drift of the updates)
    lam_np = np.asarray(lam)
    G_np = np.asarray(G)
    dual = C * (float(lam_np @ np.asarray(delta)) - 0.5 * C * float(lam_np @ (G_np @ lam_np)))
    return int(steps), float(gap), dual
