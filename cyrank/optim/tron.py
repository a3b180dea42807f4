"""Trust-region Newton method with conjugate gradient (TRON): Lin & Moré 1999; Lin, Weng & Keerthi, JMLR 2008;
the method of Kuo, Lee & Lin, "Large-scale Kernel RankSVM", SDM 2014, section 4.1.

Minimises a convex, once-differentiable f whose (generalised) Hessian is available only through products.
At iterate x with gradient g it approximately solves the trust-region subproblem

    min_s  q(s) = <g, s> + <s, H s> / 2    subject to  ||s|| <= delta

by conjugate gradient (Steihaug): CG stops when the residual ||H s + g|| <= 0.1 ||g|| or when the step reaches
the trust-region boundary. The step is accepted when the actual reduction f(x) - f(x + s) exceeds eta0 times
the predicted reduction -q(s); delta is then updated by Lin & Moré's rules (shrunk after poor agreement,
enlarged after good agreement, using the minimiser alpha of the quadratic that interpolates f along s).

Stopping rule: with ``gap_tol``, the gap objective - optimum <= gap_tol * max(1, |f|), measured by a rule that does
not change when a variable is rescaled (cyrank.optim.certificate). Certified bounds stop TRON at any iterate: the
||g||^2 / (2 mu) of a mu-strongly convex f (free), and the Newton decrement of each step's own CG solve bounded as
-q(s) + ||r||^2 / (2 mu) (free too; x is then returned without the step). The decrement's estimate, which can be far
low on an ill-conditioned Hessian, counts only once ||g(x)|| <= tol * ||g0|| (||g0|| the gradient norm at a
reference point, by default x0), by a separate CG solve. Without ``gap_tol``, the relative gradient rule alone (as
LIBLINEAR). That rule is no measure of convergence: one feature on a scale of 1e9 dominates ||g0||, and
||g|| <= tol ||g0|| then holds far from the optimum; on well-scaled data it overshoots (at tol = 1e-6, relative gaps
of 1e-13). With ``precond`` (a diagonal close to diag(H)), TRON runs in the variables sqrt(precond) x, which is CG
preconditioned by that diagonal with the trust region in its norm (LIBLINEAR 2.20's preconditioned Newton; Hsia,
Chiang & Lin, ACML 2018): it reaches the optimum on such columns in about the iterations it needs on standardised
ones.
Near the optimum f(x) - f(x + s) falls below the rounding error of f itself (about ||g||^2 / ||H|| against
1e-16 |f|), which stalls function-based trust-region tests long before a tight tol; once the predicted reduction
is below 1e-9 |f| the actual reduction is therefore measured by the trapezoid rule on gradients,
-(<g(x), s> + <g(x + s), s>) / 2 (exact for a quadratic). TRON stops without convergence only at max_iter or when
the steps no longer change x in floating point; it then returns ``converged=False`` and says why in ``message``
(the estimators turn that into a ConvergenceWarning; this layer imports no scikit-learn).

Inner product. By default <a, b> = a'b. A problem may define another one, <a, b> = a'Mb with M symmetric
positive semi-definite given by ``metric(v) = M v``; gradients and Hessian products are then the
representatives in that inner product (M g = the usual gradient, M (H v) = the usual Hessian times v), and
norms, the trust region and CG all use it. This is CG preconditioned by M^-1 without ever solving with M:
the kernel rankSVM in beta with M = Q is Newton's method in the feature space (||s||_Q = ||w step||), its
Hessian I + 2C Q^1/2 A'A Q^1/2 is well conditioned whatever the spectrum of Q, and every CG step costs one
product with M (TRON keeps M x, M s and M d up to date by the same recurrences as x, s and d).

The problem is a :class:`cyrank.optim.smooth.SmoothProblem`, which owns the trial/commit protocol: f is
evaluated at trial points that may be rejected (``fun(x, Mx)``), ``grad(x)`` commits the state of an accepted
point, and ``hess_vec(v, Mv)`` multiplies by the Hessian of the last committed point; ``metric(v) = M v``.
"""
import math

import numpy as np

from .certificate import DECREMENT_RTOL, newton_decrement
from .result import OptimResult, gap_target
from .smooth import SmoothProblem

# acceptance and radius-update constants of Lin & Moré (1999)
ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0
CG_REL_TOL = 0.1
# CG steps past CG_REL_TOL to certify the current point (tron's almost_certified)
GO_ON_MAX_CG = 10
# below this predicted reduction (relative to |f|) the reduction is measured with gradients (trapezoid rule)
NOISE_REL = 1e-9


def _truncated_cg(problem, g, Mg, delta, max_cg, rel_tol=CG_REL_TOL, go_on=None):
    """Steihaug CG on H s = -g inside ||s|| <= delta, in the M inner product, until ||r|| <= rel_tol ||g|| and
    then, with ``go_on(s, Ms, r)``, for as long as that returns True (at most GO_ON_MAX_CG more steps, max_cg in
    all).

    Returns (s, Ms, r, it, interior) with r = -g - H s the final residual; ``interior``: CG met rel_tol inside
    the region (then -q(s) = -(g's + r's) / 2 is the Newton decrement lambda^2 / 2 to within r'H^-1 r / 2).
    """
    s = np.zeros_like(g)
    Ms = np.zeros_like(g)
    r, Mr = -g, -Mg
    d, Md = r.copy(), Mr.copy()
    rr = float(r @ Mr)
    stop = rel_tol * math.sqrt(max(rr, 0.0))
    it = extra = 0
    while it < max_cg:
        if math.sqrt(max(rr, 0.0)) <= stop:
            if go_on is None or extra >= GO_ON_MAX_CG or not go_on(s, Ms, r):
                break
            extra += 1
        it += 1
        Hd = problem.hess_vec(d, Md)
        dHd = float(Md @ Hd)
        if dHd <= 0.0:  # no curvature along d (possible only through rounding for a convex f): go to the boundary
            tau = _to_boundary(s, Ms, d, Md, delta)
            return s + tau * d, Ms + tau * Md, r - tau * Hd, it, False
        alpha = rr / dHd
        s_next, Ms_next = s + alpha * d, Ms + alpha * Md
        if float(s_next @ Ms_next) > delta * delta:
            tau = _to_boundary(s, Ms, d, Md, delta)
            return s + tau * d, Ms + tau * Md, r - tau * Hd, it, False
        s, Ms = s_next, Ms_next
        r = r - alpha * Hd
        Mr = problem.metric(r)
        rr_new = float(r @ Mr)
        beta = rr_new / rr
        d = r + beta * d
        Md = Mr + beta * Md
        rr = rr_new
    return s, Ms, r, it, math.sqrt(max(rr, 0.0)) <= stop


def _to_boundary(s, Ms, d, Md, delta):
    """tau >= 0 with ||s + tau d|| = delta (s inside the region)."""
    sd, dd, ss = float(s @ Md), float(d @ Md), float(s @ Ms)
    if dd <= 0.0:
        return 0.0
    rad = math.sqrt(max(sd * sd + dd * (delta * delta - ss), 0.0))
    # two algebraically equal forms; use the one without cancellation
    return (delta * delta - ss) / (sd + rad) if sd >= 0 else (rad - sd) / dd


class _Scaled(SmoothProblem):
    """problem in the variables v = D x (D = sqrt of a diagonal close to diag(H)): f(v / D), gradient g / D,
    Hessian D^-1 H D^-1. TRON on it is TRON with CG preconditioned by D^2 and the trust region in the D-norm, as
    LIBLINEAR's preconditioned Newton (Hsia, Chiang & Lin, ACML 2018): rescaling a feature column leaves its
    iterates unchanged."""

    def __init__(self, problem, inv_d):
        self.problem, self.inv_d = problem, inv_d
        super().__init__()

    def new_state(self):
        return self.problem.new_state()

    def evaluate(self, v, Mv, state):
        x = v * self.inv_d
        f, g = self.problem.evaluate(x, x, state)
        return f, np.asarray(g, dtype=np.float64) * self.inv_d

    def hessian_product(self, state, v, Mv):
        u = v * self.inv_d
        return np.asarray(self.problem.hessian_product(state, u, u), dtype=np.float64) * self.inv_d


def tron(problem, x0, *, tol=1e-3, max_iter=1000, grad_norm0=None, max_cg=None, callback=None, verbose=0,
         name="TRON", precond=None, gap_tol=None, strong_convexity=0.0, _stop_uncertified=False):
    """Minimise ``problem`` from ``x0`` by trust-region Newton-CG; see the module docstring.

    ``grad_norm0``: reference gradient norm of the rule ||g|| <= tol * grad_norm0 (default ||g(x0)||): the stopping
    rule without ``gap_tol``, else only when a separate decrement solve is worth its Hessian products.
    ``max_cg``: CG iterations per Newton step (default: the dimension). ``precond``: a positive diagonal close to
    diag(H) (cyrank.optim.certificate.jacobi_diagonal); TRON then runs in the variables sqrt(precond) x (_Scaled),
    the gradient rule still measured in x. ``gap_tol``: ``converged`` means the gap (objective - optimum, by
    cyrank.optim.certificate: a bound certified by ``strong_convexity`` at any iterate, or, once the gradient rule
    holds, the Newton decrement from CG run to DECREMENT_RTOL) is <= gap_tol * max(1, |f|). When ``max_iter``
    Newton iterations do not reach the tolerance, or no step can decrease f any more, the result has
    ``converged=False`` and the reason in ``message`` (prefixed with ``name``).
    ``precond`` may also be a function of x returning such a diagonal or None, asked only when needed: TRON first
    runs without it, and only if the gradient rule holds while the gap does not (the signature of a badly scaled
    variable), or the steps stall, is it called at that point and TRON continued from there (preconditioned when
    it returned a diagonal). Well-scaled problems then pay nothing for it.
    ``callback(x)`` is called after every accepted step. Returns a :class:`cyrank.optim.result.OptimResult`
    (optimality = ||g|| / grad_norm0; info: grad_norm, grad_norm0, n_cg).
    """
    if not isinstance(problem, SmoothProblem):
        raise TypeError(f"tron minimises a cyrank.optim.smooth.SmoothProblem, got {type(problem).__name__}")
    if callable(precond):
        common = dict(tol=tol, max_cg=max_cg, callback=callback, verbose=verbose, name=name, gap_tol=gap_tol,
                      strong_convexity=strong_convexity)
        first = tron(problem, x0, max_iter=max_iter, grad_norm0=grad_norm0, _stop_uncertified=True, **common)
        if first.converged or not first.info["uncertified"]:
            return first
        rest = tron(problem, first.x, max_iter=max_iter - first.n_iter, grad_norm0=first.info["grad_norm0"],
                    precond=precond(first.x), **common)
        rest.n_iter += first.n_iter
        rest.n_fun += first.n_fun
        rest.n_inner += first.n_inner
        rest.info["n_cg"] = rest.n_inner
        for key in ("fun", "grad_norm"):
            rest.history[key] = first.history[key] + rest.history[key][1:]
        rest.history["n_cg"] = first.history["n_cg"] + rest.history["n_cg"]
        return rest
    x = np.array(x0, dtype=np.float64, copy=True)
    scale = None  # D: x = v / D
    if precond is not None:
        if type(problem).metric is not SmoothProblem.metric:
            raise ValueError("tron: precond needs the Euclidean inner product (the problem defines its own metric)")
        scale = np.sqrt(np.asarray(precond, dtype=np.float64))
        if scale.shape != x.shape or not np.all(np.isfinite(scale) & (scale > 0)):
            raise ValueError("tron: precond must be a positive finite vector of the variables' shape")
        problem = _Scaled(problem, 1.0 / scale)
        x = x * scale
    original, p = problem if scale is None else problem.problem, problem

    def true_grad_norm(g, Mg):
        """||g|| in the caller's variables (g = D times the scaled gradient)."""
        if scale is None:
            return math.sqrt(max(float(g @ Mg), 0.0))
        return float(np.linalg.norm(g * scale))

    def unscaled(v):  # the very point _Scaled evaluates
        return v if scale is None else v * p.inv_d

    Mx = p.metric(x) if np.any(x) else np.zeros_like(x)
    max_cg = int(max_cg or max(1, x.size))
    f = float(p.fun(x, Mx))
    g = np.asarray(p.grad(x), dtype=np.float64)
    Mg = p.metric(g)
    gnorm_scaled = math.sqrt(max(float(g @ Mg), 0.0))
    gnorm = true_grad_norm(g, Mg)
    gnorm0 = gnorm if grad_norm0 is None else float(grad_norm0)
    n_fun, n_cg, n_iter = 1, 0, 0
    history = {"fun": [f], "grad_norm": [gnorm], "n_cg": []}
    delta = gnorm_scaled
    message, uncertified = "", False
    gap, gap_kind = math.inf, ""

    def certified():
        """Without gap_tol: the gradient rule. With it: the gap of cyrank.optim.certificate at the current point,
        the free strong-convexity bound first, the Newton decrement (Hessian products) once the gradient rule
        holds."""
        nonlocal gap, gap_kind, n_cg
        if gap_tol is None:
            return gnorm <= tol * gnorm0
        gap = gnorm ** 2 / (2.0 * strong_convexity) if strong_convexity > 0 else math.inf
        gap_kind = "strong convexity"
        if gap <= gap_target(gap_tol, f):
            return True
        if gnorm > tol * gnorm0:
            return False
        if gap > gap_target(gap_tol, f):
            # the Newton decrement (in the scaled variables: preconditioned) by cyrank.optim.certificate's CG, with
            # its strong-convexity bound on the rest (residual in the caller's variables); or -q(s) of an
            # unconstrained CG solve in the problem's own inner product. Unpreconditioned in a first, lazy pass
            # (_stop_uncertified), only a certified bound counts: an estimate is as good as its preconditioner
            target = gap_target(gap_tol, f)
            if type(p).metric is SmoothProblem.metric:
                decrement, it, bounded = newton_decrement(p.hess_vec, g, above=target,
                                                          strong_convexity=strong_convexity, target=target,
                                                          residual_scale=scale)
                if not bounded and _stop_uncertified:
                    decrement = math.inf
            else:
                s, Ms, r, it, interior = _truncated_cg(p, g, Mg, math.inf, max(max_cg, 50), DECREMENT_RTOL)
                decrement, bounded = (-0.5 * (float(g @ Ms) - float(r @ Ms)) if interior else math.inf), False
            n_cg += it
            if decrement < gap:
                gap, gap_kind = max(decrement, 0.0), "strong convexity" if bounded else "newton decrement"
        return gap <= gap_target(gap_tol, f)

    def residual_bound(r):
        """||r||^2 / (2 mu), r in the caller's variables: the most r'H^-1 r / 2 can be."""
        rs = r if scale is None else r * scale
        return float(rs @ rs) / (2.0 * strong_convexity)

    def almost_certified(s, Ms, r):
        """Whether CG, past its own tolerance, should go on to certify x: the estimate -q(s) already meets the
        target and only the residual's part of the bound does not (a CG step costs a Hessian product, less than
        the evaluation and CG solve of another Newton step)."""
        if gap_tol is None or strong_convexity <= 0 or type(p).metric is not SmoothProblem.metric:
            return False
        target = gap_target(gap_tol, f)
        half = -0.5 * (float(g @ Ms) - float(r @ Ms))
        return half <= target < half + residual_bound(r)

    def step_certifies(half, r):
        """The certified gap at x from the step's own CG, without another Hessian product: the Newton decrement
        lambda^2 / 2 = -q(s) + r'H^-1 r / 2 is at most half + ||r||^2 / (2 mu) under strong convexity mu (r in the
        caller's variables), cyrank.optim.certificate's bound. True when that meets the target (gap and gap_kind
        updated); x is then returned without the step. Only a certified bound stops TRON here: the estimate
        half alone can be far low on an ill-conditioned Hessian (CG stops at CG_REL_TOL before it has seen the
        small eigenvalues), which is why the estimate is only consulted once the gradient rule holds."""
        nonlocal gap, gap_kind
        if gap_tol is None or strong_convexity <= 0 or type(p).metric is not SmoothProblem.metric:
            return False
        bound = half + residual_bound(r)
        if bound < gap:
            gap, gap_kind = max(bound, 0.0), "strong convexity"
        return gap <= gap_target(gap_tol, f)

    converged = certified()
    if _stop_uncertified and not converged and gnorm <= tol * gnorm0:
        message, uncertified = "stopped to be preconditioned", True
    while not converged and not uncertified and n_iter < max_iter:
        s, Ms, r, cg_it, interior = _truncated_cg(p, g, Mg, delta, max_cg, go_on=almost_certified)
        n_cg += cg_it
        gs = float(g @ Ms)
        prered = -0.5 * (gs - float(r @ Ms))  # -q(s), since H s = -g - r
        if interior and step_certifies(prered, r):
            converged = True  # x is within the target: the step is not taken
            break
        n_iter += 1
        x_new, Mx_new = x + s, Mx + Ms
        f_new = float(p.fun(x_new, Mx_new))
        n_fun += 1
        actred = f - f_new
        g_new = None
        if 0 < prered < NOISE_REL * abs(f):
            # f(x) - f(x + s) is below the rounding error of f: measure it by the trapezoid rule on gradients,
            # -(<g(x), s> + <g(x + s), s>) / 2, exact for a quadratic (grad switches the Hessian state to x_new)
            g_new = np.asarray(p.grad(x_new), dtype=np.float64)
            actred = -0.5 * (gs + float(g_new @ Ms))
        snorm = math.sqrt(max(float(s @ Ms), 0.0))
        if n_iter == 1:
            delta = min(delta, snorm)
        # minimiser of the quadratic through f(x), <g, s> and f(x + s), as a multiple of s
        curv = -actred - gs
        alpha = SIGMA3 if curv <= 0 else max(SIGMA1, -0.5 * (gs / curv))
        if actred < ETA0 * prered:
            delta = min(max(alpha, SIGMA1) * snorm, SIGMA2 * delta)
        elif actred < ETA1 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
        elif actred < ETA2 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
        else:
            delta = max(delta, min(alpha * snorm, SIGMA3 * delta))
        accepted = actred > ETA0 * prered
        history["n_cg"].append(cg_it)
        if accepted:
            x, Mx, f = x_new, Mx_new, f_new
            g = g_new if g_new is not None else np.asarray(p.grad(x), dtype=np.float64)
            Mg = p.metric(g)
            gnorm_scaled = math.sqrt(max(float(g @ Mg), 0.0))
            gnorm = true_grad_norm(g, Mg)
            history["fun"].append(f)
            history["grad_norm"].append(gnorm)
            if callback is not None:
                callback(unscaled(x))
        elif g_new is not None:  # the Hessian state moved to the rejected point: move it back
            p.fun(x, Mx)
            p.grad(x)
            n_fun += 1
        if verbose:
            print(f"{name} iter {n_iter:4d}: f {f:.12g}  |g|/|g0| {gnorm / gnorm0 if gnorm0 else 0:.3e}  "
                  f"CG {cg_it:4d}  step {'accepted' if accepted else 'rejected'}  delta {delta:.3e}")
        if accepted and certified():
            converged = True
            break
        xnorm = math.sqrt(max(float(x @ Mx), 0.0))
        stalled = prered <= 0 or snorm <= 1e-15 * xnorm or delta <= 1e-15 * xnorm
        if _stop_uncertified and n_iter < max_iter and (stalled or (accepted and gnorm <= tol * gnorm0)):
            message, uncertified = "stopped to be preconditioned", True
            break
        if stalled:
            if gap_tol is not None and gnorm <= tol * gnorm0 and not math.isfinite(gap):
                certified()
            measured = (f"gap {gap:.3g} ({gap_kind}) > {gap_target(gap_tol, f):.3g}" if gap_tol is not None
                        else f"|g|/|g0| = {gnorm / gnorm0:.3g} > tol = {tol:g}")
            message = (f"steps no longer change x in floating point at {measured}: the objective cannot be "
                       "resolved further in float64 (a feature on a huge or tiny scale: standardise X)")
            break
    if not converged:
        if not message:
            shortfall = (f"gap {gap:.3g} ({gap_kind}) > {gap_target(gap_tol, f):.3g}" if gap_tol is not None
                         else f"|g|/|g0| = {gnorm / gnorm0 if gnorm0 else 0:.3g} > tol = {tol:g}")
            message = f"reached max_iter={max_iter} Newton iterations with {shortfall}; increase max_iter or tol"
        message = f"{name}: {message}"
    if scale is not None:
        original.adopt(p)  # the caller's problem holds the Hessian state at the returned x
    rel = gnorm / gnorm0 if gnorm0 > 0 else 0.0
    return OptimResult(x=unscaled(x), objective=f, n_iter=n_iter, converged=converged, optimality=rel,
                       optimality_name="relative gradient norm", gap=gap, gap_kind=gap_kind, message=message,
                       n_fun=n_fun, n_inner=n_cg, history=history,
                       info={"grad_norm": gnorm, "grad_norm0": gnorm0, "n_cg": n_cg, "uncertified": uncertified})
