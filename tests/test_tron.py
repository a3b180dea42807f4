"""TRON (cyrank.optim.tron) on problems with known minimisers, with and without a metric."""
import warnings

import numpy as np
import pytest

from cyrank.optim.smooth import SmoothProblem
from cyrank.optim.tron import tron


class Quadratic(SmoothProblem):
    """f(x) = x'Ax / 2 - b'x: minimiser A^-1 b."""

    def __init__(self, A, b):
        self.A, self.b = A, b
        self.n_fun = self.n_grad = 0
        super().__init__()

    def new_state(self):
        return None

    def evaluate(self, x, Mx, state):
        self.n_fun += 1
        return 0.5 * x @ self.A @ x - self.b @ x, self.A @ x - self.b

    def grad(self, x):
        self.n_grad += 1
        return super().grad(x)

    def hessian_product(self, state, v, Mv):
        return self.A @ v


class Logistic(SmoothProblem):
    """f(w) = ||w||^2 / 2 + C sum log(1 + exp(-y_i x_i.w)), its gradient and Hessian products at the last grad."""

    def __init__(self, X, y, C):
        self.X, self.y, self.C = X, y, C
        self.grad_points = []
        super().__init__()

    def new_state(self):
        return {}

    def evaluate(self, w, Mw, state):
        z = self.y * (self.X @ w)
        s = 1 / (1 + np.exp(z))
        state["D"], state["w"] = s * (1 - s), w.copy()
        return 0.5 * w @ w + self.C * np.logaddexp(0, -z).sum(), w - self.C * self.X.T @ (self.y * s)

    def grad(self, w):
        g = super().grad(w)
        self.grad_points.append(self.state["w"])
        return g

    def hessian_product(self, state, v, Mv):
        return v + self.C * self.X.T @ (state["D"] * (self.X @ v))


class KernelLogistic(SmoothProblem):
    """g(beta) = beta'Q beta / 2 + C sum log(1 + exp(-y_i (Q beta)_i)) in the inner product a'Qb (metric)."""

    def __init__(self, Q, y, C):
        self.Q, self.y, self.C = Q, y, C
        self.n_metric = 0
        super().__init__()

    def metric(self, v):
        self.n_metric += 1
        return self.Q @ v

    def new_state(self):
        return {}

    def evaluate(self, beta, Qbeta, state):
        assert np.allclose(Qbeta, self.Q @ beta, atol=1e-9)   # TRON's recurrences keep M x exact
        z = self.y * Qbeta
        s = 1 / (1 + np.exp(z))
        state["D"] = s * (1 - s)
        # representative: Q (beta - C y s) is the gradient
        return 0.5 * beta @ Qbeta + self.C * np.logaddexp(0, -z).sum(), beta - self.C * self.y * s

    def hessian_product(self, state, v, Qv):
        assert np.allclose(Qv, self.Q @ v, atol=1e-9)
        return v + self.C * state["D"] * Qv


def spd(rng, n, cond):
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (U * np.geomspace(1, cond, n)) @ U.T


@pytest.mark.parametrize("cond", [1.0, 1e3, 1e6])
def test_quadratic_minimiser(cond):
    rng = np.random.default_rng(0)
    A, b = spd(rng, 30, cond), rng.normal(size=30)
    res = tron(Quadratic(A, b), np.zeros(30), tol=1e-10, max_iter=200)
    assert res.converged and res.optimality <= 1e-10
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), rtol=1e-6, atol=1e-8)
    assert res.info["grad_norm"] == pytest.approx(np.linalg.norm(A @ res.x - b))


def test_logistic_matches_scipy_and_stops_at_relative_gradient():
    from scipy.optimize import minimize

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 8))
    y = np.sign(X @ rng.normal(size=8) + rng.normal(size=200))
    prob = Logistic(X, y, C=2.0)
    g0 = np.linalg.norm(prob.grad(np.zeros(8)))
    for tol in (1e-2, 1e-8):
        res = tron(Logistic(X, y, 2.0), np.zeros(8), tol=tol)
        assert res.converged and res.info["grad_norm"] <= tol * g0 and res.info["grad_norm0"] == pytest.approx(g0)
    ref = minimize(prob.fun, np.zeros(8), jac=prob.grad, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15})
    assert res.objective <= ref.fun + 1e-9 * abs(ref.fun)
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-5, atol=1e-6)


def test_hess_vec_is_taken_at_the_last_accepted_point():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 5))
    y = np.sign(X @ rng.normal(size=5))
    prob = Logistic(X, y, C=10.0)
    res = tron(prob, np.zeros(5), tol=1e-9)
    # grad is only ever called at accepted iterates: x0 plus one per accepted step, the last being the result
    assert len(prob.grad_points) == len(res.history["fun"])
    np.testing.assert_array_equal(prob.grad_points[-1], res.x)


def test_metric_gives_the_same_minimum_on_a_singular_kernel():
    """Q of rank 6 in dimension 40: the Q inner product (one Q product per CG step) reaches the optimum that the
    Euclidean run on the factor L (Q = L L') reaches."""
    rng = np.random.default_rng(3)
    F = rng.normal(size=(40, 6))
    Q = F @ F.T
    y = np.sign(F @ rng.normal(size=6) + 0.5 * rng.normal(size=40))
    kprob = KernelLogistic(Q, y, C=1.5)
    res = tron(kprob, np.zeros(40), tol=1e-10)
    primal = tron(Logistic(F, y, C=1.5), np.zeros(6), tol=1e-12)
    assert res.converged
    assert res.objective == pytest.approx(primal.objective, rel=1e-12)
    np.testing.assert_allclose(Q @ res.x, F @ primal.x, atol=1e-7)  # same scores
    # one Q product per CG step, one per accepted Newton step (the gradient norm), none for x + s
    assert kprob.n_metric == res.n_inner + len(res.history["fun"])


def test_reports_max_iter_without_warning():
    """The optimiser is below the estimators: it reports why it stopped, the estimators warn."""
    rng = np.random.default_rng(4)
    A, b = spd(rng, 50, 1e8), rng.normal(size=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = tron(Quadratic(A, b), np.zeros(50), tol=1e-12, max_iter=2, max_cg=3, name="Q")
    assert not res.converged and res.n_iter == 2 and res.optimality > 1e-12
    assert res.message.startswith("Q: reached max_iter=2 Newton iterations")


def test_already_optimal_start_does_nothing():
    A = np.eye(3)
    b = np.array([1.0, 2.0, 3.0])
    prob = Quadratic(A, b)
    res = tron(prob, b.copy(), tol=1e-3, grad_norm0=1.0)
    assert res.converged and res.n_iter == 0 and prob.n_fun == 1


def test_a_rejected_trial_point_never_changes_the_hessian():
    """SmoothProblem's protocol: fun at a trial point fills the trial state only; grad commits it."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    prob = Logistic(X, np.sign(rng.normal(size=40)), C=3.0)
    w, v = rng.normal(size=3), rng.normal(size=3)
    prob.fun(w)
    prob.grad(w)
    before = prob.hess_vec(v)
    prob.fun(10 * rng.normal(size=3))       # rejected: no grad call
    np.testing.assert_array_equal(prob.hess_vec(v), before)
    z = 10 * rng.normal(size=3)
    prob.fun(z)
    prob.grad(z)                            # accepted
    assert not np.allclose(prob.hess_vec(v), before)


def test_tron_refuses_an_object_outside_the_contract():
    with pytest.raises(TypeError, match="SmoothProblem"):
        tron(object(), np.zeros(2))
