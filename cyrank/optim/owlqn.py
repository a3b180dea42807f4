"""Orthant-wise limited-memory quasi-Newton (OWL-QN): Andrew & Gao, "Scalable Training of L1-Regularized
Log-Linear Models", ICML 2007, sections 3.1-3.3.

Minimises F(x) = f(x) + lam1 ||x||_1 with f convex and differentiable, given only f and its gradient g:

- the pseudo-gradient p (the minimum-norm element of the subdifferential of F, negated where it matters):
  p_r = g_r + lam1 sign(x_r) for x_r != 0; for x_r = 0, g_r + lam1 if that is < 0, g_r - lam1 if that is > 0,
  else 0. So ||p||_inf is exactly the KKT violation of x, and p = 0 at the optimum;
- the direction d = -H p by the L-BFGS two-loop recursion on the last ``memory`` pairs (s, y) of steps and
  differences of g (the smooth part only), with H0 = s'y / y'y. Andrew & Gao then set d_r = 0 wherever
  d_r p_r >= 0 (d must agree with the steepest descent direction -p); that is done here only when d is no descent
  direction in the orthant (p'd >= 0 over the coordinates that can move): applied always, it stops every
  coordinate whose quasi-Newton step goes against its own pseudo-gradient, and on correlated features that
  multiplies the iterations (measured: 5,000+ against 660 on a quadratic of condition 1e4);
- the orthant xi_r = sign(x_r), or sign(-p_r) where x_r = 0; trial points x(t) = pi(x + t d; xi), pi zeroing every
  coordinate that leaves the orthant;
- backtracking from t = 1 (t = 1 / ||p||_inf at the first iteration) until
  F(x(t)) <= F(x) + ARMIJO p'(x(t) - x).
  When the decrease is below the rounding error of F (about NOISE_REL |F|) the change of F is measured by the
  trapezoid rule on gradients, as TRON does, so the method still converges to tight tolerances. When no step
  along the quasi-Newton direction is accepted, the pairs are dropped and the steepest descent direction -p tried.

With lam1 = 0 this is plain L-BFGS (Liu & Nocedal, "On the limited memory BFGS method for large scale
optimization", Math. Programming 1989): p = g, no orthant, no sign projection, and a line search as careful as
L-BFGS-B's (Nocedal & Wright, sections 3.1 and 3.5): the first step is 1 / ||g||_2; an Armijo failure is followed by
the minimiser of the quadratic through F(0), its slope and F(t) (within [0.1 t, 0.5 t]); and the step must also meet
the curvature condition g(x(t))'d >= WOLFE g'd (weak Wolfe): a step still on a steep descent is lengthened to the
secant minimiser of the directional derivative (at most EXTRAPOLATE times; exact on a quadratic), or the bracket
[short, too long] is bisected. With backtracking by halves from 1 / ||g||_inf instead, the first step overshot and
the first pair was a poor sample of the curvature (measured: 8 evaluations against scipy L-BFGS-B's 6 on a dense
problem of 100 features; now the same iterates as L-BFGS-B to 10 digits).

Stops when max_r (|p_r| - noise) <= tol_abs (``noise``: the caller's bound on the rounding error of g), after
``max_iter`` iterations, or when no step decreases F any more (``stalled``). One evaluation of f and g per trial
point; O(memory n) work per iteration besides.
"""
import math

import numpy as np

from .._validation import check_param
from .certificate import pseudo_gradient
from .result import OptimResult, gap_target
from .tron import NOISE_REL

ARMIJO = 1e-4
WOLFE = 0.9
EXTRAPOLATE = 100.0
MAX_BACKTRACKS = 40


def _two_loop(p, S, Y, rho):
    """H p for the L-BFGS inverse Hessian H of the pairs (S[i], Y[i]), oldest first (Nocedal & Wright, Alg. 7.4)."""
    q = p.copy()
    alpha = np.empty(len(S))
    for i in range(len(S) - 1, -1, -1):
        alpha[i] = rho[i] * (S[i] @ q)
        q -= alpha[i] * Y[i]
    if S:
        q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1])
    for i in range(len(S)):
        beta = rho[i] * (Y[i] @ q)
        q += (alpha[i] - beta) * S[i]
    return q


def owlqn(fun_grad, x0, lam1, *, tol_abs, max_iter, noise=0.0, memory=10, callback=None, certify=None,
          gap_tol=None, precond=None, _stop_uncertified=False):
    """Minimise fun_grad's f plus lam1 ||x||_1 from x0 (module docstring); ``fun_grad(x) -> (f, g)``.

    ``callback(x, F)`` is called after every accepted step. With ``certify(x, g, F) -> (gap, gap_kind)`` (a bound
    or estimate of F - F*, cyrank.optim.certificate) and ``gap_tol``, the KKT rule is not enough: it must also hold
    that gap <= gap_tol * max(1, |F|); when it does not, the KKT target is lowered (by sqrt(target / gap), at
    least 2x: the gap falls as the square of the gradient) and the iterations go on. Returns an
    :class:`cyrank.optim.result.OptimResult` (optimality: the KKT violation; info: stalled).

    ``precond``: a positive diagonal close to the Hessian's (cyrank.optim.certificate.jacobi_diagonal), by which
    the method runs in the variables v = sqrt(precond) x (f(v / D) + sum_r lam1 / D_r |v_r|, the initial inverse
    Hessian of L-BFGS being diag(1 / precond) up to its scalar): a feature on a scale of 1e9 then costs no more
    iterations than a standardised one. Everything reported (x, the KKT violation, the callbacks) is in x.
    ``precond`` may also be a function of x returning such a diagonal or None, called only when the KKT rule holds
    but the gap does not, or the steps stall: the method is then continued from there in the scaled variables
    (as tron's; well-scaled problems pay nothing for it).
    """
    memory = check_param("memory (the number of L-BFGS pairs kept; Options.owlqn_memory of "
                         "cyrank.domination)", memory, low=1, integer=True)
    if callable(precond):
        common = dict(noise=noise, memory=memory, callback=callback, certify=certify, gap_tol=gap_tol)
        first = owlqn(fun_grad, x0, lam1, tol_abs=tol_abs, max_iter=max_iter, _stop_uncertified=True, **common)
        if first.converged or not first.info["uncertified"]:
            return first
        rest = owlqn(fun_grad, first.x, lam1, tol_abs=tol_abs, max_iter=max_iter - first.n_iter,
                     precond=precond(first.x), **common)
        rest.n_iter += first.n_iter
        rest.n_fun += first.n_fun
        rest.history["fun"] = np.concatenate([first.history["fun"], rest.history["fun"]])
        return rest
    smooth = not np.any(lam1)  # plain L-BFGS (lam1: a number, or one weight per coordinate)
    if precond is not None:  # the variables v = D x (D a power of 2 when precond is: no rounding)
        scale = np.sqrt(np.asarray(precond, dtype=np.float64))
        inv, user_fun_grad, user_callback, user_certify = 1.0 / scale, fun_grad, callback, certify
        lam1 = lam1 * inv

        def fun_grad(v):
            f, g = user_fun_grad(v * inv)
            return f, g * inv

        callback = None if user_callback is None else (lambda v, F: user_callback(v * inv, F))
        certify = None if user_certify is None else (lambda v, g, F: user_certify(v * inv, g * scale, F))
        x = np.array(x0, dtype=np.float64) * scale
    else:
        scale, inv = 1.0, 1.0
        x = np.array(x0, dtype=np.float64)
    f, g = fun_grad(x)
    F = f + float(np.sum(lam1 * np.abs(x)))
    S, Y, rho = [], [], []
    n_fun, n_iter, stalled = 1, 0, False
    objective = []

    def kkt(p):
        return float(np.max(np.abs(p) * scale - noise, initial=0.0))  # in x

    p = g if smooth else pseudo_gradient(g, x, lam1)
    gap, gap_kind, converged, certified_at, uncertified = math.inf, "", False, None, False
    while True:
        if kkt(p) <= tol_abs:
            if certify is None:
                converged = True
                break
            if certified_at is not x:  # (a restart with no pairs comes back here at the same x)
                gap, gap_kind = certify(x, g, F)
                certified_at = x
            if gap <= gap_target(gap_tol, F):
                converged = True
                break
            if _stop_uncertified and n_iter < max_iter:
                uncertified = True
                break
            if kkt(p) == 0.0:  # nothing left to move along at this precision
                stalled = True
                break
            tol_abs = min(tol_abs, kkt(p)) * min(max(math.sqrt(gap_target(gap_tol, F) / gap), 1e-3), 0.5)
        if n_iter >= max_iter:
            break
        d = -_two_loop(p, S, Y, rho)
        if not smooth and float(p @ np.where((x == 0) & (d * p >= 0), 0.0, d)) >= 0:
            d[d * p >= 0] = 0.0  # not a descent direction inside the orthant
        if not np.any(d):  # the quasi-Newton direction lost every descent coordinate: steepest descent
            S, Y, rho = [], [], []
            d = -p
        orthant = None if smooth else np.where(x != 0, np.sign(x), -np.sign(p))
        # first step (no pairs): 1 / ||p||_inf; 1 / ||g||_2 without l1, as L-BFGS-B (shorter: fewer overshoots)
        t = 1.0 if S else 1.0 / max(float(np.linalg.norm(p) if smooth else np.max(np.abs(p))), 1e-300)
        slope = float(p @ d) if smooth else 0.0  # the directional derivative at t = 0 (curvature test only)
        accepted, short, too_long = False, None, np.inf  # short: (t, point, f, g, F, step) meeting Armijo only
        for _ in range(MAX_BACKTRACKS):
            trial = x + t * d
            if not smooth:
                trial[np.sign(trial) != orthant] = 0.0
            step = trial - x
            f_trial, g_trial = fun_grad(trial)
            n_fun += 1
            F_trial = f_trial if smooth else f_trial + float(np.sum(lam1 * np.abs(trial)))
            decrease = float(p @ step)  # < 0: the predicted first-order change
            if decrease >= 0:  # every coordinate that moved was clipped back: nothing left along d
                break
            if -decrease >= NOISE_REL * abs(F):
                accepted = F_trial <= F + ARMIJO * decrease
            else:  # at the rounding level of F: the change by the trapezoid rule on gradients (exact for quadratics)
                # = lam1 (||trial||_1 - ||x||_1), without cancellation
                l1_change = 0.0 if smooth else float(np.sum(lam1 * orthant * step))
                accepted = 0.5 * float((g + g_trial) @ step) + l1_change <= ARMIJO * decrease
            if not accepted:
                too_long = t
                if short:
                    t = 0.5 * (short[0] + t)
                elif smooth and -decrease >= NOISE_REL * abs(F):
                    # minimiser of the quadratic through F, its slope at 0 and F(t) (Nocedal & Wright, eq. 3.57),
                    # kept within [0.1 t, 0.5 t]
                    t *= min(max(0.5 * decrease / (decrease - (F_trial - F)), 0.1), 0.5)
                else:
                    t *= 0.5
                continue
            slope_t = float(g_trial @ d) if smooth else 0.0
            if not smooth or slope_t >= WOLFE * slope:
                break
            short = (t, trial, f_trial, g_trial, F_trial, step)  # still descending steeply: a longer step
            if too_long < np.inf:
                t = 0.5 * (t + too_long)
            else:
                t *= min(slope / (slope - slope_t), EXTRAPOLATE) if slope_t > slope else EXTRAPOLATE
            accepted = False
        if not accepted and short is not None:  # the longest step meeting Armijo, short of the curvature condition
            _, trial, f_trial, g_trial, F_trial, step = short
            accepted = True
        if not accepted:
            if S:  # the quasi-Newton direction failed: forget the pairs, try the (scaled) steepest descent
                S, Y, rho = [], [], []
                continue
            stalled = True
            uncertified = _stop_uncertified and n_iter < max_iter
            break
        n_iter += 1
        y = g_trial - g
        sy = float(step @ y)
        if sy > 1e-12 * float(y @ y):  # keep the inverse Hessian positive definite
            if len(S) == memory:
                S.pop(0), Y.pop(0), rho.pop(0)
            S.append(step), Y.append(y), rho.append(1.0 / sy)
        x, f, g, F = trial, f_trial, g_trial, F_trial
        p = g if smooth else pseudo_gradient(g, x, lam1)
        objective.append(F)
        if callback is not None:
            callback(x, F)
    return OptimResult(x=x * inv, objective=F, n_iter=n_iter, converged=converged, optimality=kkt(p),
                       optimality_name="KKT violation", gap=gap, gap_kind=gap_kind, n_fun=n_fun,
                       history={"fun": np.asarray(objective)},
                       info={"stalled": stalled and not converged, "uncertified": uncertified})


def owlqn_penalized(problem, penalty, x0, *, tol_abs, max_iter, noise=0.0, memory=10, callback=None, certify=None,
                    gap_tol=None, precond=None, start=None):
    """:func:`owlqn` on F = f + lam1 ||x||_1 with f a :class:`~cyrank.optim.smooth.SmoothProblem` (the loss plus the
    penalty's ridge lam2 ||x||^2) and lam1 that of ``penalty`` (a :class:`~cyrank.optim.penalties.Penalty`; one
    weight per coordinate allowed); lam1 = 0 is plain L-BFGS.

    ``certify(x, g, F)`` and a callable ``precond(x)`` are called with the problem's Hessian state at x (evaluated
    there first when needed). ``start``: (f, g) at x0 when the problem's state is already at x0 (one evaluation
    saved). Returns :func:`owlqn`'s OptimResult."""
    track = {"last": x0 if start is not None else None, "start": start}

    def fun_grad(x):
        if track["start"] is not None:
            f, g = track["start"]
            track["start"] = None
            return f, g
        f = problem.fun(x)
        track["last"] = x
        return f, problem.grad(x)

    def at(x):
        last = track["last"]
        if last is not x and (last is None or not np.array_equal(last, x)):
            problem.fun(x)
            problem.grad(x)
        track["last"] = x

    def certify_x(x, g, F):
        at(x)
        return certify(x, g, F)

    def precond_x(x):
        at(x)
        return precond(x)

    return owlqn(fun_grad, x0, penalty.lam1, tol_abs=tol_abs, max_iter=max_iter, noise=noise, memory=memory,
                 callback=callback, certify=None if certify is None else certify_x, gap_tol=gap_tol,
                 precond=precond_x if callable(precond) else precond)
