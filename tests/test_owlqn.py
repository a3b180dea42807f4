"""OWL-QN (cyrank.optim.owlqn) against cvxpy on quadratic + l1 and logistic + l1 problems, well and badly
conditioned, and its pseudo-gradient against the definition (the minimum-norm subgradient) with ties at 0."""
import cvxpy as cp
import numpy as np
import pytest

from cyrank.optim.certificate import pseudo_gradient
from cyrank.optim.owlqn import EXTRAPOLATE, owlqn
from reference import solve_problem


def brute_pseudo_gradient(g, x, lam1):
    """The element of g + lam1 d||x||_1 of least magnitude, coordinate by coordinate (a fine grid of the
    subdifferential at 0 plus its end points)."""
    out = np.empty_like(g)
    for r in range(g.size):
        if x[r] != 0:
            out[r] = g[r] + lam1 * np.sign(x[r])
        else:
            cands = g[r] + lam1 * np.r_[np.linspace(-1, 1, 2001), -1.0, 1.0]
            out[r] = cands[np.argmin(np.abs(cands))]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_pseudo_gradient_is_the_least_subgradient(seed):
    rng = np.random.default_rng(seed)
    g = rng.choice([-1.5, -1.0, -0.3, 0.0, 0.3, 1.0, 1.5], size=40)  # |g| = lam1 and g = 0: the ties
    x = rng.choice([-2.0, 0.0, 0.0, 1.0], size=40)
    p = pseudo_gradient(g, x, 1.0)
    np.testing.assert_allclose(p, brute_pseudo_gradient(g, x, 1.0), atol=1e-12)


def quadratic(seed, m, cond):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    H = (Q * np.geomspace(1.0, 1.0 / cond, m)) @ Q.T
    return 0.5 * (H + H.T), rng.normal(size=m)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("cond", [1e1, 1e4])
@pytest.mark.parametrize("lam1", [0.0, 0.05, 0.5])
def test_quadratic_plus_l1_matches_cvxpy(seed, cond, lam1):
    H, c = quadratic(seed, 15, cond)
    res = owlqn(lambda x: (0.5 * x @ H @ x + c @ x, H @ x + c), np.zeros(15), lam1, tol_abs=1e-10, max_iter=5000)
    x = cp.Variable(15)
    best = solve_problem(cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(H)) + c @ x
                                                + lam1 * cp.norm1(x))), {"x": x}).objective
    assert res.converged and res.optimality <= 1e-10 and not res.info["stalled"]
    assert res.objective == pytest.approx(best, rel=1e-7, abs=1e-9)
    assert res.objective >= best - 1e-7 * max(1.0, abs(best))
    h = res.history["fun"]
    assert h.shape == (res.n_iter,) and np.all(np.diff(h) <= 1e-12 * max(1.0, np.abs(h).max()))  # rounding of F


@pytest.mark.parametrize("start", ["zero", "random"])
def test_logistic_plus_l1_matches_cvxpy_and_is_sparse(start):
    rng = np.random.default_rng(3)
    A = rng.normal(size=(60, 20))
    b = np.sign(A[:, :3].sum(axis=1) + 0.5 * rng.normal(size=60))

    def fun_grad(w):
        m = -b * (A @ w)
        return float(np.logaddexp(0, m).sum()), A.T @ (-b / (1 + np.exp(-m)))

    x0 = np.zeros(20) if start == "zero" else rng.normal(size=20)
    res = owlqn(fun_grad, x0, 3.0, tol_abs=1e-9, max_iter=5000)
    w = cp.Variable(20)
    best = solve_problem(cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(b, A @ w))) + 3.0 * cp.norm1(w))),
                         {"w": w}).objective
    assert res.converged and res.objective == pytest.approx(best, rel=1e-7)
    assert 0 < np.count_nonzero(res.x) < 20  # exact zeros, not tiny values


def test_max_iter_and_callback():
    H, c = quadratic(1, 15, 1e4)
    seen = []
    res = owlqn(lambda x: (0.5 * x @ H @ x + c @ x, H @ x + c), np.zeros(15), 0.05, tol_abs=1e-12, max_iter=3,
                callback=lambda x, F: seen.append(F))
    assert res.n_iter == 3 and not res.converged and not res.info["stalled"] and len(seen) == 3 and seen[-1] == res.objective


def test_without_l1_it_is_plain_lbfgs_crossing_zero_freely():
    """lam1 = 0: no orthant. On f = ||x||^2 / 2 + c'x from x0 = c (every coordinate must change sign) L-BFGS needs
    at most two iterations; an orthant-bound method stops each coordinate at 0 first (three iterations)."""
    c = np.random.default_rng(0).uniform(0.5, 2.0, size=30) * np.where(np.arange(30) % 2, 1.0, -1.0)
    res = owlqn(lambda x: (0.5 * x @ x + c @ x, x + c), c.copy(), 0.0, tol_abs=1e-12, max_iter=50)
    assert res.converged and res.n_iter <= 2
    np.testing.assert_allclose(res.x, -c, rtol=0, atol=1e-12)


def test_without_l1_a_short_first_step_is_extended_to_the_line_minimiser():
    """The first step 1 / ||g||_2 from 0 on f = ||x||^2 / 2 + c'x (10 < ||c|| < EXTRAPOLATE) meets Armijo but not
    the curvature condition; the secant step on the directional derivative is then the exact line minimiser, here
    x* = -c: one iteration, three evaluations (0, the short step, x*)."""
    c = np.random.default_rng(1).uniform(5.0, 20.0, size=30)
    assert 10 < np.linalg.norm(c) < EXTRAPOLATE
    res = owlqn(lambda x: (0.5 * x @ x + c @ x, x + c), np.zeros(30), 0.0, tol_abs=1e-12, max_iter=50)
    assert res.converged and res.n_iter == 1 and res.n_fun == 3
    np.testing.assert_allclose(res.x, -c, rtol=0, atol=1e-12)
