"""reference: exact solutions of cyrank's convex objectives with cvxpy (Clarabel by default).

Slow by design and meant for small problems: every fast solver in cyrank is tested against these.
Each module exposes ``solve(...)`` returning a :class:`reference.Solution`.
"""
from ._solve import ReferenceSolverError, Solution, solve_problem

__all__ = ["ReferenceSolverError", "Solution", "solve_problem"]
