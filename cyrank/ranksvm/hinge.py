"""The hinge RankSVM as a 1-slack structural problem for cyrank.optim.cutting_plane (Joachims 2006), with its
restricted problem solved exactly in the dual over a working set (cyrank.optim._simplex_qp).

With pair weights (sample_weight: the pair (i, j) counts with w_i) a constraint is the weighted sum
sum_P w_i c_ij (1 - w'(x_i - x_j)) over a choice c_ij in {0, 1} per pair, and the most violated one takes the
pairs active at w (the separation oracle is the weighted loss and subgradient of _pairloss.pyx); the weights of
the active pairs sum to its offset.
"""
import numpy as np

from ..optim._simplex_qp import solve_simplex_qp
from ..optim.cutting_plane import WorkingSet, cutting_plane
from . import _pairloss


# ------------------------------------------------------------------------------------------ hinge: 1-slack
# constraints with zero weight in this many consecutive restricted solves leave the working set (they may be
# found again by the separation oracle); keeps the restricted problem small when C |P| is large
IDLE_LIMIT = 50


class LinearHinge:
    """The hinge rankSVM with w in feature space: a constraint is Psi(s) = X'(l^- - l^+), stored as that vector."""

    companion = None

    def __init__(self, parts, layout):
        self.parts, self.layout, self.m = parts, layout, parts[-1]
        self._state = layout.new_state()  # the sweeps' scores and order, reused by every separation

    def separate(self, w):
        """(sum of w_i over the pairs active at w, s) with Psi = s the most violated constraint (before scaling by
        1 / sum_P w_i)."""
        xg = np.empty(self.m)
        _, _, active_weight = _pairloss.linear_fun_grad(*self.parts, self.layout, w, False, *self._state, xg)
        return active_weight, -xg

    def gram_row(self, psi_new, ws):
        """[<psi_k, psi_new> for the stored k] + [<psi_new, psi_new>]."""
        return np.r_[ws.flat @ psi_new, psi_new @ psi_new]

    def combine(self, a, ws):
        """(w, [<w, psi_k>]) for w = sum_k a_k psi_k."""
        w = a @ ws.flat
        return w, ws.flat @ w

    def regularizer(self, w):
        return 0.5 * float(w @ w)


class KernelHinge:
    """The hinge rankSVM in function space: w is represented by its training scores f = Q beta and a constraint
    Psi = sum_m c_m phi(x_m) by its coefficients c, so <w, Psi> = f'c; each stored constraint keeps Q c beside it
    (``companion``), and ``beta`` is the coefficient vector of the last combined w."""

    def __init__(self, Q, layout):
        self.Q, self.layout, self.m = Q, layout, layout.n_data_rows
        self.beta, self.f, self._qc = np.zeros(self.m), None, None
        self._state = layout.new_state()

    def separate(self, f):
        gf = np.empty(self.m)
        _, _, active_weight = _pairloss.scores_fun_grad(f, self.layout, False, *self._state, gf)
        return active_weight, -gf

    def gram_row(self, c_new, ws):
        self._qc = self.Q.matvec(c_new)
        return np.r_[ws.flat @ self._qc, c_new @ self._qc]

    def companion(self, c_new):
        """Q c of the constraint just passed to gram_row."""
        return self._qc

    def combine(self, a, ws):
        self.beta = a @ ws.flat
        self.f = a @ ws.extra
        return self.f, ws.flat @ self.f

    def regularizer(self, f):
        """beta'Q beta / 2 of the last combined w (the cutting plane measures only points it was given)."""
        return 0.0 if self.f is None else 0.5 * float(self.beta @ self.f)


def one_slack(model, C, pair_weight, tol, max_iter, verbose, w0=None, stabilize=0.0):
    """Run cyrank.optim.cutting_plane on the 1-slack form of the hinge rankSVM described by ``model``
    (:class:`LinearHinge` or :class:`KernelHinge`), from ``w0`` (default 0), with the engine's in-out weight
    ``stabilize`` (0: Kelley's method).

    ``pair_weight`` = W = sum_P w_i (|P| without weights): constraints are scaled by 1 / W and C by W, so ``tol`` is
    in units of the mean weighted hinge loss per unit of pair weight (objective at 0 = C W).

    The restricted problem is solved exactly in its dual (cyrank.optim._simplex_qp) over the engine's working set,
    whose Gram matrix (and, for a kernel model, the rows Q c) the WorkingSet keeps; constraints with zero weight in
    IDLE_LIMIT consecutive solves leave it (the shared aging of cyrank.optim.cutting_plane). Returns the
    cutting plane's OptimResult; its ``info["lower_bound"]`` is the best restricted dual value (a lower bound on the
    optimum), and convergence needs the duality gap within tol * max(1, objective) as well as the slack rule.
    """
    Ce = C * pair_weight
    ws = WorkingSet(model.m, gram=model.gram_row, companion=model.companion, patience=IDLE_LIMIT)

    def separate(w):
        active_weight, s = model.separate(w)
        return active_weight / pair_weight, s / pair_weight

    def solve_restricted(ws):
        K = ws.K
        lam = np.array(ws.weights)        # the last solve's dual variables: the warm start
        delta = np.ascontiguousarray(ws.deltas)
        steps, gap, dual = solve_simplex_qp(np.ascontiguousarray(ws.G), delta, Ce, lam, 1e-3 * tol,
                                            max(100_000, 200 * K))
        w_new, w_dot_psi = model.combine(Ce * lam, ws)
        xi = max(0.0, float(np.max(delta - w_dot_psi)))
        # the dual value of any feasible lam bounds the optimum from below; lam are the constraints' weights
        return w_new, xi, steps, dual, lam

    res = cutting_plane(separate, solve_restricted, model.regularizer, np.zeros(model.m) if w0 is None else w0,
                        C=Ce, epsilon=tol, max_iter=max_iter, verbose=verbose, working_set=ws, stabilize=stabilize,
                        gap_tol=tol)
    return res
