"""Proximal Newton with working sets for F(w) = f(w) + lam1 ||w||_1, f a :class:`~cyrank.optim.smooth.SmoothProblem`
(the loss plus the penalty's ridge lam2 ||w||^2) and lam1 the l1 weight of a :class:`~cyrank.optim.penalties.Penalty`
(Yuan, Ho & Lin, "An Improved GLMNET for L1-regularized Logistic Regression", JMLR 2012, sections 3-4).

Each iteration at w, with the full gradient G of f:

- stop when max_r KKT_r / scale <= tol (KKT_r: the penalty's subdifferential distance beyond the gradient's
  rounding error ``noise``; ``scale``: the caller's reference, e.g. max_r |df/dw_r| at 0) and the gap
  (``certify(w, G, F)``) is <= tol * max(1, |F|); when only the first holds, its target is lowered (the gap falls as
  the square of the gradient) and the iterations go on;
- the working set W = the non-zero coordinates plus the zero ones with the largest KKT violations (as many as
  there are non-zeros, at least 10; with ``feature_induction`` = a, at most a);
- the direction d on W minimises G_W'd + d'H_W d / 2 + lam1 ||w_W + d||_1 (H_W from ``make_model(ws)``, an
  object with ``minimise(g, w, lam1, damping, tol) -> (d, inner sweeps)``; :class:`GramModel` is the formed one)
  to a KKT violation of min(0.1, sqrt(violation)) times the current one;
- w += t d with t = 1, 1/2, ... (at most SHORT_STEPS halvings) the first step with
  F(w + t d) <= F(w) + ARMIJO t (G_W'd + lam1 (||w_W + d||_1 - ||w_W||_1)) (:func:`line_search`); when none is
  found the model is damped (Levenberg-Marquardt, + mu (diag(H) + floor)) and solved again.
"""
import numpy as np

from .._threads import one_blas_thread
from ._quadratic_l1 import minimise_quadratic_l1
from .result import OptimResult, gap_target
from .tron import NOISE_REL

# Armijo constant of the line search and its largest number of halvings (Yuan, Ho & Lin 2012)
ARMIJO = 0.01
# ... at most SHORT_STEPS halvings, then the model is damped (H + mu (diag(H) + floor), mu x 100, at least
# DAMPING_MIN) and solved again, at most MAX_DAMPINGS times per iteration
SHORT_STEPS, MAX_DAMPINGS, DAMPING_MIN = 10, 30, 1e-6
RIDGE = 1e-10  # relative ridge of the model, per coordinate (see GramModel)


def hessian_block(problem, ws, d):
    """H[ws, ws] of a SmoothProblem on d variables at its committed state, by |ws| Hessian products."""
    H = np.empty((ws.size, ws.size))
    e = np.zeros(d)
    for k, r in enumerate(ws):
        e[r] = 1.0
        H[:, k] = np.asarray(problem.hess_vec(e))[ws]
        e[r] = 0.0
    return H


class GramModel:
    """The model's Hessian formed on W: H_W (the smooth part's, symmetrised) + ``ridge`` I + RIDGE (diag(H_W) + floor)
    (newGLMNET's nu, relative per coordinate: the loss of a ranking is flat along per-query constant scores, so
    H is singular whenever a feature is constant within queries; ``floor`` a curvature that does not vanish where
    the loss turns piecewise linear), minimised by cyrank/optim/_quadratic_l1.pyx (CD, then the feature-sign search:
    exact)."""

    def __init__(self, H, floor, ridge=0.0):
        H = 0.5 * (H + H.T)
        diagonal = np.diag(H) + floor
        H[np.diag_indices_from(H)] += ridge + RIDGE * diagonal
        self.H, self.diagonal = H, diagonal

    @classmethod
    def from_products(cls, problem, ws, d, floor):
        """H_W by |W| Hessian products of ``problem`` (a SmoothProblem whose Hessian state is at the current w)."""
        return cls(hessian_block(problem, ws, d), floor)

    def minimise(self, g, w, lam1, damping, tol):
        """(d, inner sweeps): the model's minimiser on W, plus damping/2 d'(diag(H) + floor)d (Marquardt's scaling),
        to a KKT violation <= tol."""
        H = self.H
        if damping > 0:
            H = H.copy()
            H[np.diag_indices_from(H)] += damping * self.diagonal
        with one_blas_thread():  # small dense solves: more BLAS threads only wait on each other
            step, sweeps, _ = minimise_quadratic_l1(H, g, w, lam1, tol)
        return step, sweeps


def line_search(problem, penalty, w, ws, step, decrease, f, G, noise):
    """Armijo backtracking along ``step`` (on the coordinates ws) from w for F = problem + penalty's l1 term, at most
    SHORT_STEPS halvings: (accepted, t, trial point, F there, its gradient if already computed else None). When the
    predicted decrease is below the rounding error of F, the change is measured by the trapezoid rule on gradients
    (exact for a quadratic, as TRON does), and at the rounding level of the gradients a step that lowers the KKT
    measure itself is accepted."""
    t = 1.0
    for _ in range(SHORT_STEPS):
        trial = w.copy()
        trial[ws] += t * step
        f_trial = problem.fun(trial) + penalty.l1_value(trial)
        if -t * decrease >= NOISE_REL * abs(f):
            if f_trial <= f + ARMIJO * t * decrease:
                return True, t, trial, f_trial, None
        else:
            G_trial = problem.grad(trial)
            dw = trial[ws] - w[ws]
            change = float(np.sum(0.5 * (G[ws] + G_trial[ws]) * dw)) + penalty.l1_change(w[ws], dw, ws)
            if change <= ARMIJO * t * decrease or (np.max(penalty.kkt_excess(G_trial, trial, noise), initial=0.0)
                                                   < np.max(penalty.kkt_excess(G, w, noise), initial=0.0)):
                return True, t, trial, f_trial, G_trial
            problem.fun(w)
            problem.grad(w)  # back to the Hessian state of w
        t *= 0.5
    return False, t, None, None, None


def prox_newton(problem, penalty, w, *, tol, max_iter, scale, make_model, certify, noise=0.0,
                feature_induction=None, verbose=0, name="prox_newton", f=None, G=None):
    """Proximal Newton (module docstring) in place on w; the problem's Hessian state must be at w (its last ``grad``),
    ``f`` and ``G`` F and the smooth gradient there (None: computed). ``penalty.lam1`` must be a number (the model's kernel).
    Returns an :class:`~cyrank.optim.result.OptimResult` (optimality: the relative KKT violation; n_inner: the
    model's inner sweeps; history "objective" and "n_nonzero" per iteration; info: stalled)."""
    lam1 = penalty.lam1
    if np.ndim(lam1) != 0:
        raise ValueError("proximal Newton takes one l1 weight (a number); use OWL-QN (cyrank.optim.owlqn) for "
                         "per-coordinate weights")
    hist_obj, hist_nnz = [], []
    n_inner, n_iter, converged, stalled, damping = 0, 0, False, False, 0.0
    if f is None or G is None:
        f = problem.fun(w) + penalty.l1_value(w)
        G = problem.grad(w)
    gap, gap_kind, tol_kkt = np.inf, "", tol
    while True:
        excess = penalty.kkt_excess(G, w, noise)
        violation = float(np.max(excess, initial=0.0)) / scale
        if violation <= tol_kkt:
            gap, gap_kind = certify(w, G, f)
            if gap <= gap_target(tol, f):
                converged = True
                break
            if violation == 0.0:
                stalled = True
                break
            tol_kkt = min(tol_kkt, violation) * min(max(np.sqrt(gap_target(tol, f) / gap), 1e-3), 0.5)
        if n_iter >= max_iter:
            break
        n_iter += 1
        nonzero = np.flatnonzero(w)
        zero_viol = np.where(w == 0, excess, 0.0)
        k = max(10, nonzero.size) if feature_induction is None else int(feature_induction)
        candidates = np.flatnonzero(zero_viol > 0)
        if candidates.size > k:
            candidates = candidates[np.argsort(-zero_viol[candidates], kind="stable")[:k]]
        ws = np.sort(np.concatenate([nonzero, candidates])).astype(np.int64)
        model = make_model(ws)
        g_ws, w_ws = np.ascontiguousarray(G[ws]), np.ascontiguousarray(w[ws])
        accepted = False
        for _ in range(MAX_DAMPINGS):
            # forcing term min(0.1, sqrt(violation)): the inner accuracy tightens as w converges (superlinear),
            # never beyond half the outer tolerance (a model solved finer than that buys nothing)
            step, sweeps = model.minimise(g_ws, w_ws, lam1, damping,
                                          max(min(0.1, np.sqrt(violation)) * violation, 0.5 * tol_kkt) * scale)
            n_inner += sweeps
            decrease = float(np.sum(g_ws * step)) + penalty.l1_change(w_ws, step, ws)
            if not decrease < 0.0:  # no descent left at this precision
                break
            accepted, t, trial, f_trial, G_trial = line_search(problem, penalty, w, ws, step, decrease, f, G, noise)
            if accepted:
                # a full step: the model is good, trust it more; a shortened one: damp the next model
                damping = damping * 0.1 if t == 1.0 else max(10.0 * damping, DAMPING_MIN)
                break
            # no acceptable step within SHORT_STEPS halvings: the quadratic model is poor (e.g. a loss that is
            # nearly piecewise linear at huge margins); damp it (Levenberg-Marquardt) and solve it again
            damping = max(100.0 * damping, DAMPING_MIN)
        if not accepted:  # no decrease at this precision: the iteration did not happen
            n_iter -= 1
            stalled = True
            break
        w[:] = trial
        f = f_trial
        G = G_trial if G_trial is not None else problem.grad(w)
        hist_obj.append(f)
        hist_nnz.append(int(np.count_nonzero(w)))
        if verbose:
            print(f"{name} iter {n_iter:4d}: f {f:.12g}  KKT {violation:.3e}  working set {ws.size}  "
                  f"inner sweeps {sweeps}  step {t:g}")
    excess = penalty.kkt_excess(G, w, noise)
    violation = float(np.max(excess, initial=0.0)) / scale
    return OptimResult(x=w, objective=float(f), n_iter=int(n_iter), converged=bool(converged),
                       optimality=float(violation), optimality_name="kkt_violation", gap=float(gap),
                       gap_kind=gap_kind, n_inner=int(n_inner),
                       history={"objective": hist_obj, "n_nonzero": hist_nnz},
                       info={"stalled": bool(stalled and not converged)})
