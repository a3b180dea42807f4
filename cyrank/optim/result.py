"""The one result every optimiser of cyrank.optim returns (TRON, L-BFGS / OWL-QN, the cutting plane).

``gap`` is what ``converged`` rests on: a bound or an estimate of objective - optimum at ``x``, named by
``gap_kind``:

- ``"strong convexity"``: certified, F(x) - F* <= ||s||^2 / (2 mu) for any subgradient s of a mu-strongly convex F
  (Nesterov 2004, theorem 2.1.10); the ridge alpha ||w||^2 makes mu = 2 alpha;
- ``"duality gap"``: certified, the primal value minus a lower bound from a dual point (cutting plane);
- ``"newton decrement"``: the estimate lambda^2 / 2 = g'H^-1 g / 2 (Boyd & Vandenberghe 2004, section 9.5.1),
  exact for a quadratic and accurate to second order near the optimum; with an l1 term, the decrement of the
  smooth part on the orthant of the pseudo-gradient (the proximal Newton decrement of Lee, Sun & Saunders 2014
  when no sign changes). Invariant to any rescaling of the variables;
- ``""``: not measured (the solver stopped before it could be).

``optimality`` is the solver's own stopping measure (relative gradient norm, KKT violation, constraint violation),
named by ``optimality_name``; ``message`` says why the solver stopped short ("" when it converged).
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class OptimResult:
    """Outcome of an optimiser: the iterate, its objective, the work done and the evidence of optimality."""

    x: np.ndarray
    objective: float
    n_iter: int
    converged: bool
    optimality: float
    optimality_name: str
    gap: float = np.inf
    gap_kind: str = ""
    message: str = ""
    n_fun: int = 0          # objective evaluations
    n_inner: int = 0        # inner iterations (CG steps = Hessian products, inner solver iterations)
    history: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)  # what only this optimiser knows (e.g. grad_norm0, lower_bound)


def gap_target(tol, objective):
    """The largest gap ``converged`` accepts: tol * max(1, |objective|)."""
    return tol * max(1.0, abs(float(objective)))
