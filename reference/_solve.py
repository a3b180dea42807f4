"""The one way every reference model is solved: Clarabel first, SCS as fallback, status always checked.

A result is accepted only when cvxpy reports ``optimal``; ``optimal_inaccurate``, ``infeasible``,
``unbounded`` or a solver failure raise :class:`ReferenceSolverError`, so a test can never compare against
a wrong "optimum" silently.
"""
import warnings
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

DEFAULT_SOLVERS = ("CLARABEL", "SCS")

# Tight defaults: the reference must be far more accurate than the tolerances the tests use.
SOLVER_OPTIONS = {
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "max_iter": 500},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}


class ReferenceSolverError(RuntimeError):
    """cvxpy did not return a certified optimum."""


@dataclass
class Solution:
    """An exact optimum: ``objective`` value, the primal ``variables`` by name and the ``solver`` used."""

    objective: float
    variables: dict = field(default_factory=dict)
    solver: str = ""
    status: str = ""

    def __getitem__(self, name):
        return self.variables[name]


def feature_scale_vector(feature_scale, d):
    """None, or ``feature_scale`` as a positive finite float64 vector of length ``d`` (ValueError otherwise).

    The ``feature_scale=s`` of the linear reference solvers: the problem is unchanged, but cvxpy sees it in the
    coordinates v = s * w of the columns X / s (penalties written in v), so a column on a far-off scale (a
    timestamp, a tiny ratio) does not leave the conic solver badly conditioned; :func:`unscale` returns the
    solution in the original coordinates w = v / s.
    """
    if feature_scale is None:
        return None
    s = np.asarray(feature_scale, dtype=np.float64)
    if s.shape != (d,) or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"feature_scale must be {d} positive finite numbers, one per feature; got {feature_scale!r}")
    return s


def unscale(solution, s, *names):
    """``solution`` with its variables ``names`` divided by ``s`` along their last axis (v = s * w back to w);
    unchanged when ``s`` is None."""
    if s is not None:
        for name in names:
            solution.variables[name] = solution.variables[name] / s
    return solution


def solve_problem(problem, variables, *, solvers=DEFAULT_SOLVERS, verbose=False, **options):
    """Solve a cvxpy ``problem``; return a :class:`Solution` holding ``variables`` (a name -> Variable dict).

    Tries each solver of ``solvers`` in turn and keeps the first that reports ``optimal``; ``options``
    override :data:`SOLVER_OPTIONS` for every solver tried.
    """
    errors = []
    for name in solvers:
        if name not in cp.installed_solvers():
            errors.append(f"{name}: not installed")
            continue
        opts = {**SOLVER_OPTIONS.get(name, {}), **options}
        try:
            # cvxpy warns "Solution may be inaccurate" for optimal_inaccurate; that status is refused below anyway
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=name, verbose=verbose, **opts)
        except cp.error.SolverError as exc:
            errors.append(f"{name}: {exc}")
            continue
        if problem.status == cp.OPTIMAL:
            values = {k: np.asarray(v.value, dtype=np.float64) for k, v in variables.items()}
            return Solution(float(problem.value), values, name, problem.status)
        errors.append(f"{name}: status {problem.status}")
    raise ReferenceSolverError("no solver certified an optimum: " + "; ".join(errors))
