"""The 1-slack cutting-plane method (Joachims 2006; MLR seed Algorithm 1), written once for every structural
problem of the form

    min_w  R(w) + C xi   s.t.  xi >= Delta(y) - <w, Psi(y)>   for every output y,   xi >= 0,

where <.,.> is the Frobenius inner product (w and Psi may be vectors or matrices). Only the most violated
constraint at the current w is ever computed (the separation oracle), and a restricted problem over the
working set of constraints found so far is re-solved after each addition.

The caller supplies
    separate(w) -> (delta, psi)       the most violated constraint at w: argmax_y Delta(y) - <w, Psi(y)>
    solve_restricted(deltas, psis, w) -> (w, xi, n_inner)
                                      min_w R(w) + C xi over the working set (warm-started at w);
                                      deltas is a 1-d array, psis a list, n_inner its inner iterations
    regularizer(w) -> R(w)

The method stops when the new constraint is violated by at most ``epsilon`` more than the working set allows:
Delta - <w, Psi> <= xi + epsilon. The true slack at the returned w is xi_true = max(0, Delta - <w, Psi>) of the
last separation call, so ``objective = R(w) + C xi_true`` is exact and exceeds the restricted optimum (a lower
bound on the true optimum when the restricted problem is solved exactly) by at most C * epsilon.
"""
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning


@dataclass
class CuttingPlaneResult:
    """What :func:`cutting_plane` found: the solution and an honest account of how well it is solved."""

    w: np.ndarray
    objective: float        # R(w) + C * xi_true (exact primal value at w)
    xi: float               # true slack at w: max(0, Delta - <w, Psi>) of the most violated constraint
    xi_restricted: float    # slack of the restricted problem at w
    violation: float        # xi - xi_restricted (<= epsilon when converged)
    n_batches: int          # cutting-plane iterations (= constraints generated)
    n_inner: int            # total inner-solver iterations
    converged: bool
    history: dict = field(default_factory=dict)


def _inner(w, psi):
    return float(np.vdot(np.ravel(w), np.ravel(psi)))


def cutting_plane(separate, solve_restricted, regularizer, w0, *, C, epsilon, max_iter, verbose=0):
    """Run the 1-slack cutting-plane method from ``w0``; see the module docstring for the contract."""
    w = np.array(w0, dtype=np.float64, copy=True)
    deltas, psis = [], []
    xi_restricted, n_inner = 0.0, 0
    history = {"objective": [], "xi": [], "violation": []}
    converged = False
    for it in range(1, max_iter + 1):
        delta, psi = separate(w)
        xi = max(0.0, float(delta) - _inner(w, psi))
        violation = xi - xi_restricted
        objective = float(regularizer(w)) + C * xi
        history["objective"].append(objective)
        history["xi"].append(xi)
        history["violation"].append(violation)
        if verbose:
            print(f"cutting plane {it:4d}: objective {objective:.10g}  xi {xi:.6g}  violation {violation:.3g}  "
                  f"working set {len(deltas)}")
        if violation <= epsilon:
            converged = True
            break
        deltas.append(float(delta))
        psis.append(psi)
        w, xi_restricted, k = solve_restricted(np.asarray(deltas), psis, w)
        n_inner += int(k)
    else:
        # max_iter constraints were added: measure the final w honestly before reporting
        delta, psi = separate(w)
        xi = max(0.0, float(delta) - _inner(w, psi))
        violation = xi - xi_restricted
        objective = float(regularizer(w)) + C * xi
        warnings.warn(
            f"cutting plane stopped after max_iter={max_iter} constraints with violation {violation:.3g} > "
            f"epsilon={epsilon:g}; increase max_iter or epsilon",
            ConvergenceWarning,
            stacklevel=2,
        )
    return CuttingPlaneResult(
        w=w, objective=objective, xi=xi, xi_restricted=float(xi_restricted), violation=float(violation),
        n_batches=len(deltas), n_inner=n_inner, converged=converged, history=history,
    )
