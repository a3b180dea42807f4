"""The 1-slack cutting-plane method (Joachims 2006; McFee & Lanckriet, ICML 2010, Algorithm 1), written once for every structural
problem of the form

    min_w  f(w) = R(w) + C xi(w),   xi(w) = max(0, max_y Delta(y) - <w, Psi(y)>),

where <.,.> is the Frobenius inner product (w and Psi may be vectors or matrices). Only the most violated
constraint at a query point is ever computed (the separation oracle), and a restricted problem over the
working set of constraints found so far (the cutting-plane model of xi) is re-solved after each addition.

The caller supplies
    separate(w) -> (delta, psi)       the most violated constraint at w: argmax_y Delta(y) - <w, Psi(y)>
    solve_restricted(deltas, psis, w) -> (w, xi, n_inner) or (w, xi, n_inner, lower)
                                      min_w R(w) + C xi over the working set (warm-started at w);
                                      deltas is a 1-d array, psis a list, n_inner its inner iterations and
                                      lower a lower bound on the restricted optimum (e.g. its dual value)
    regularizer(w) -> R(w)

Every separation call measures f exactly at its query point: xi(w) = max(0, Delta - <w, Psi>).

``stabilize = 0`` (default): Kelley's method, as in McFee & Lanckriet's Algorithm 1. The query point is the restricted solution w_k;
stop when the new constraint is violated by at most ``epsilon`` more than the working set allows,
Delta - <w_k, Psi> <= xi_k + epsilon. Then f(w_k) exceeds the restricted objective (a lower bound on the optimum
when the restricted problem is solved exactly) by at most C * epsilon. When ``solve_restricted`` returns a lower
bound L, the stop also requires the certified gap f(w_k) - L <= C * epsilon, so that an inexact restricted
solve (badly scaled data: large C |x|^2) never passes for a certified one.

``stabilize = alpha`` in (0, 1): in-out separation (Ben-Ameur & Neto 2007), which damps Kelley's
oscillation. With c the best point so far (the stability centre, f(c) = min of the measured f), the query point
is z = alpha c + (1 - alpha) w_k. If its constraint does not cut off w_k (Delta - <w_k, Psi> <= xi_k), then
f(z) <= alpha f(c) + (1 - alpha) P_k (R convex, the constraint linear; P_k the restricted objective at w_k), so
the centre still improves, and the next query point is w_k itself (a Kelley step). The method stops when the
certified gap f(c) - L <= C * epsilon, L the best lower bound returned by ``solve_restricted`` (required
here), and returns c.
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class CuttingPlaneResult:
    """What :func:`cutting_plane` found: the solution and an honest account of how well it is solved."""

    w: np.ndarray
    objective: float        # R(w) + C * xi_true (exact primal value at w)
    xi: float               # true slack at w: max(0, Delta - <w, Psi>) of the most violated constraint
    xi_restricted: float    # slack of the working set at w
    violation: float        # xi - xi_restricted (Kelley) or the certified gap (objective - lower_bound) / C
                            # (in-out); <= epsilon when converged
    n_batches: int          # constraints generated (= cutting-plane iterations when stabilize = 0)
    n_inner: int            # total inner-solver iterations
    converged: bool
    lower_bound: float = -np.inf    # best lower bound returned by solve_restricted (-inf if none)
    n_separations: int = 0          # separation-oracle calls
    history: dict = field(default_factory=dict)
    message: str = ""               # why it stopped short ("" when converged)


def _inner(w, psi):
    return float(np.vdot(np.ravel(w), np.ravel(psi)))


def _model_slack(w, deltas, psis):
    """Slack of the working set at w: max(0, max_t Delta_t - <w, Psi_t>)."""
    return max([0.0] + [d - _inner(w, p) for d, p in zip(deltas, psis)])


def cutting_plane(separate, solve_restricted, regularizer, w0, *, C, epsilon, max_iter, verbose=0,
                  stabilize=0.0):
    """Run the 1-slack cutting-plane method from ``w0``; see the module docstring for the contract.
    ``max_iter`` bounds the constraints added (Kelley) or the separation calls (in-out)."""
    if not 0.0 <= stabilize < 1.0:
        raise ValueError(f"stabilize must be in [0, 1), got {stabilize!r}")
    w = np.array(w0, dtype=np.float64, copy=True)
    deltas, psis = [], []
    n_inner, n_sep, lower = 0, 0, -np.inf
    history = {"objective": [], "xi": [], "violation": []}

    def measure(w):
        nonlocal n_sep
        delta, psi = separate(w)
        n_sep += 1
        xi = max(0.0, float(delta) - _inner(w, psi))
        return float(delta), psi, xi, float(regularizer(w)) + C * xi

    def restrict(w):
        nonlocal n_inner, lower
        out = solve_restricted(np.asarray(deltas), psis, w)
        n_inner += int(out[2])
        if len(out) > 3:
            lower = max(lower, float(out[3]))
        return out[0], float(out[1])

    def record(objective, xi, violation, gap):
        history["objective"].append(objective)
        history["xi"].append(xi)
        history["violation"].append(violation)
        if verbose:
            print(f"cutting plane {n_sep:4d}: objective {objective:.10g}  xi {xi:.6g}  violation {violation:.3g}"
                  f"  gap {gap:.3g}  working set {len(deltas)}")

    converged = False
    if stabilize == 0.0:
        xi_restricted = 0.0
        for _ in range(max_iter):
            delta, psi, xi, objective = measure(w)
            violation = xi - xi_restricted
            record(objective, xi, violation, objective - lower)
            certified = lower == -np.inf or objective - lower <= C * epsilon  # -inf: no lower bound returned
            if violation <= epsilon and certified:
                converged = True
                break
            deltas.append(delta)
            psis.append(psi)
            w, xi_restricted = restrict(w)
        else:
            # max_iter constraints were added: measure the final w honestly before reporting
            delta, psi, xi, objective = measure(w)
            violation = xi - xi_restricted
    else:
        centre, model, xi_model, z = None, None, 0.0, w
        for _ in range(max_iter):
            delta, psi, xi, objective = measure(z)
            if centre is None or objective < f_centre:
                centre, f_centre, xi_centre = z, objective, xi
            record(objective, xi, xi - _model_slack(z, deltas, psis), f_centre - lower)
            if f_centre - lower <= C * epsilon:
                converged = True
                break
            if model is None or delta - _inner(model, psi) > xi_model:
                deltas.append(delta)
                psis.append(psi)
                model, xi_model = restrict(model if model is not None else w)
                z = stabilize * centre + (1.0 - stabilize) * model
            else:                                                   # no cut at the model: a Kelley step
                z = model
        w, objective, xi = centre, f_centre, xi_centre
        xi_restricted = _model_slack(w, deltas, psis)
        violation = (objective - lower) / C
    if not converged:
        what = "constraints with violation" if stabilize == 0.0 else "separations with gap / C"
        certificate = (f" and certified gap / C {(objective - lower) / C:.3g}"
                       if stabilize == 0.0 and lower > -np.inf else "")
        message = (f"cutting plane stopped after max_iter={max_iter} {what} {violation:.3g}{certificate} > "
                   f"epsilon={epsilon:g}; increase max_iter or epsilon")
    else:
        message = ""
    return CuttingPlaneResult(
        w=w, objective=objective, xi=xi, xi_restricted=float(xi_restricted), violation=float(violation),
        n_batches=len(deltas), n_inner=n_inner, converged=converged, lower_bound=float(lower),
        n_separations=n_sep, history=history, message=message,
    )
