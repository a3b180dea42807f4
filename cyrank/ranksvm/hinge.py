"""The hinge RankSVM as a 1-slack structural problem for cyrank.optim.cutting_plane (Joachims 2006), with its
restricted problem solved exactly in the dual over a working set (cyrank.optim._simplex_qp).
"""
import numpy as np

from ..optim._simplex_qp import solve_simplex_qp
from ..optim.cutting_plane import cutting_plane
from . import _pairloss


# ------------------------------------------------------------------------------------------ hinge: 1-slack
class _WorkingSet:
    """The constraints of the restricted problem: Delta_k, the vectors Psi_k (rows), their Gram matrix, optional
    companion rows (Q Psi_k for a kernel model), and for each the number of consecutive restricted solves in
    which it had zero weight. Capacity doubles as constraints arrive; idle ones can be dropped."""

    def __init__(self, m, companion=False):
        self.rows = np.empty((8, m))
        self.extra = np.empty((8, m)) if companion else None
        self.G = np.empty((8, 8))
        self.delta = np.empty(8)
        self.lam = np.empty(8)
        self.idle = np.zeros(8, dtype=np.int64)
        self.K = 0

    def add(self, delta, psi, gram_row, extra=None):
        k = self.K
        if k == self.rows.shape[0]:
            self._resize(2 * k)
        self.rows[k] = psi
        if self.extra is not None:
            self.extra[k] = extra
        self.G[k, : k + 1] = gram_row
        self.G[: k + 1, k] = gram_row
        self.delta[k], self.lam[k], self.idle[k] = delta, 0.0, 0
        self.K += 1

    def _resize(self, cap):
        k = self.K
        for name in ("rows", "extra"):
            old = getattr(self, name)
            if old is not None:
                new = np.empty((cap, old.shape[1]))
                new[:k] = old[:k]
                setattr(self, name, new)
        G = np.empty((cap, cap))
        G[:k, :k] = self.G[:k, :k]
        self.G = G
        for name in ("delta", "lam", "idle"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[:k] = old[:k]
            setattr(self, name, new)

    def drop_idle(self, limit):
        """Remove the constraints with zero weight in the last ``limit`` solves (never the newest)."""
        K = self.K
        if K == 0:
            return
        keep = self.idle[:K] < limit
        keep[K - 1] = True
        if keep.all():
            return
        idx = np.flatnonzero(keep)
        n = idx.size
        self.rows[:n] = self.rows[idx]
        if self.extra is not None:
            self.extra[:n] = self.extra[idx]
        self.G[:n, :n] = self.G[np.ix_(idx, idx)]
        for name in ("delta", "lam", "idle"):
            arr = getattr(self, name)
            arr[:n] = arr[idx]
        self.K = n


# constraints with zero weight in this many consecutive restricted solves leave the working set (they may be
# found again by the separation oracle); keeps the restricted problem small when C |P| is large
IDLE_LIMIT = 50


class LinearHinge:
    """The hinge rankSVM with w in feature space: a constraint is Psi(s) = X'(l^- - l^+), stored as that vector."""

    companion = None

    def __init__(self, parts, layout):
        self.parts, self.layout, self.m = parts, layout, parts[-1]

    def separate(self, w):
        """(number of active pairs at w, s) with Psi = s the most violated constraint (before scaling by 1/|P|)."""
        f, perm = self.layout.new_state()
        xg = np.empty(self.m)
        _, n_active = _pairloss.linear_fun_grad(*self.parts, self.layout, w, False, f, perm, xg)
        return n_active, -xg

    def gram_row(self, psi_new, ws):
        """[<psi_k, psi_new> for the stored k] + [<psi_new, psi_new>]."""
        return np.r_[ws.rows[: ws.K] @ psi_new, psi_new @ psi_new]

    def combine(self, a, ws):
        """(w, [<w, psi_k>]) for w = sum_k a_k psi_k."""
        w = a @ ws.rows[: ws.K]
        return w, ws.rows[: ws.K] @ w

    def regularizer(self, w):
        return 0.5 * float(w @ w)


class KernelHinge:
    """The hinge rankSVM in function space: w is represented by its training scores f = Q beta and a constraint
    Psi = sum_m c_m phi(x_m) by its coefficients c, so <w, Psi> = f'c; each stored constraint keeps Q c beside it
    (``companion``), and ``beta`` is the coefficient vector of the last combined w."""

    def __init__(self, Q, layout):
        self.Q, self.layout, self.m = Q, layout, layout.n_data_rows
        self.beta, self.f, self._qc = np.zeros(self.m), None, None

    def separate(self, f):
        fs, perm = self.layout.new_state()
        gf = np.empty(self.m)
        _, n_active = _pairloss.scores_fun_grad(f, self.layout, False, fs, perm, gf)
        return n_active, -gf

    def gram_row(self, c_new, ws):
        self._qc = self.Q.matvec(c_new)
        return np.r_[ws.rows[: ws.K] @ self._qc, c_new @ self._qc]

    def companion(self, c_new):
        """Q c of the constraint just passed to gram_row."""
        return self._qc

    def combine(self, a, ws):
        self.beta = a @ ws.rows[: ws.K]
        self.f = a @ ws.extra[: ws.K]
        return self.f, ws.rows[: ws.K] @ self.f

    def regularizer(self, f):
        """beta'Q beta / 2 of the last combined w (the cutting plane measures only points it was given)."""
        return 0.0 if self.f is None else 0.5 * float(self.beta @ self.f)


def one_slack(model, C, n_pairs, tol, max_iter, verbose):
    """Run cyrank.optim.cutting_plane on the 1-slack form of the hinge rankSVM described by ``model``
    (:class:`LinearHinge` or :class:`KernelHinge`), from w = 0.

    The restricted problem is solved exactly in its dual (cyrank.optim._simplex_qp) over the working set;
    constraints idle for IDLE_LIMIT solves are dropped (the restricted problem then relaxes, so its dual value
    stays a lower bound of the optimum). Returns the CuttingPlaneResult and the last restricted dual value.
    """
    Ce = C * n_pairs
    ws = _WorkingSet(model.m, companion=model.companion is not None)
    last = {"dual": 0.0}

    def separate(w):
        n_active, s = model.separate(w)
        return n_active / n_pairs, s / n_pairs

    def solve_restricted(deltas, psis, w):
        psi_new = psis[-1]
        ws.drop_idle(IDLE_LIMIT)
        ws.add(deltas[-1], psi_new, model.gram_row(psi_new, ws),
               None if model.companion is None else model.companion(psi_new))
        K = ws.K
        lam = np.ascontiguousarray(ws.lam[:K])
        delta = np.ascontiguousarray(ws.delta[:K])
        steps, gap, dual = solve_simplex_qp(np.ascontiguousarray(ws.G[:K, :K]), delta, Ce, lam, 1e-3 * tol,
                                            max(100_000, 200 * K))
        ws.lam[:K] = lam
        ws.idle[:K] = np.where(lam > 0, 0, ws.idle[:K] + 1)
        last["dual"] = dual
        w_new, w_dot_psi = model.combine(Ce * lam, ws)
        xi = max(0.0, float(np.max(delta - w_dot_psi)))
        return w_new, xi, steps, dual  # the dual value of any feasible lam bounds the optimum from below

    res = cutting_plane(separate, solve_restricted, model.regularizer, np.zeros(model.m), C=Ce, epsilon=tol,
                        max_iter=max_iter, verbose=verbose)
    return res, last["dual"]
