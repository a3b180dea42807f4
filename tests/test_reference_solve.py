"""reference._solve: optimum returned only when certified; anything else raises."""
import cvxpy as cp
import numpy as np
import pytest

from reference import ReferenceSolverError, solve_problem


def test_optimum_of_known_problem():
    # min ||x - a||^2 + ||x||_1 has the closed form soft_threshold(a, 1/2)
    a = np.array([0.2, -1.0, 3.0, 0.7])
    x = cp.Variable(4)
    sol = solve_problem(cp.Problem(cp.Minimize(cp.sum_squares(x - a) + cp.norm1(x))), {"x": x})
    expected = np.sign(a) * np.maximum(np.abs(a) - 0.5, 0)
    assert sol.status == "optimal" and sol.solver == "CLARABEL"
    np.testing.assert_allclose(sol["x"], expected, atol=1e-7)
    assert sol.objective == pytest.approx(np.sum((expected - a) ** 2) + np.abs(expected).sum(), rel=1e-9)


def test_infeasible_raises():
    x = cp.Variable()
    with pytest.raises(ReferenceSolverError, match="infeasible"):
        solve_problem(cp.Problem(cp.Minimize(x), [x >= 1, x <= 0]), {"x": x})


def test_unbounded_raises():
    x = cp.Variable()
    with pytest.raises(ReferenceSolverError, match="unbounded"):
        solve_problem(cp.Problem(cp.Minimize(x)), {"x": x})


def test_missing_solver_reported():
    x = cp.Variable()
    with pytest.raises(ReferenceSolverError, match="NOT_A_SOLVER: not installed"):
        solve_problem(cp.Problem(cp.Minimize(cp.square(x))), {"x": x}, solvers=("NOT_A_SOLVER",))
