"""cyrank.optim.certificate: the gap measures behind converged_, the Jacobi preconditioner, and TRON / OWL-QN run
in its variables, checked against brute force and exact solutions."""
import numpy as np
import pytest
import scipy.sparse as sp

from cyrank.optim.certificate import (PRECONDITION_SPREAD, certify, group_column_squares, jacobi_diagonal,
                                      newton_decrement, pseudo_gradient, worth_preconditioning)
from cyrank.optim.owlqn import owlqn
from cyrank.optim.result import gap_target
from cyrank.optim.smooth import SmoothProblem
from cyrank.optim.tron import tron


def brute_squares(X, offsets, rows):
    out = np.zeros(X.shape[1])
    for k in range(len(offsets) - 1):
        B = np.asarray(X[rows[offsets[k]:offsets[k + 1]]], dtype=np.float64)
        if len(B):
            out += ((B - B.mean(axis=0)) ** 2).sum(axis=0)
    return out


@pytest.mark.parametrize("fmt", ["dense", "fortran", "csr", "csr32", "float32"])
def test_group_column_squares_equal_brute_force(fmt):
    """Groups of any size (empty, single rows), rows in any order, some rows in no group, zeros and ties, a column
    on a timestamp scale that is nearly constant within groups."""
    rng = np.random.default_rng(3)
    X = rng.integers(-2, 3, size=(60, 5)).astype(np.float64)  # ties and zeros
    X[:, 1] *= 1e9
    X[:, 2] += 1.7e9
    X[:, 4] = 0.0
    rows = rng.permutation(60)[:50]
    offsets = np.array([0, 10, 25, 25, 26, 50])
    if fmt == "float32":
        X = X.astype(np.float32)
    Xin = {"dense": X, "fortran": np.asfortranarray(X), "csr": sp.csr_matrix(X),
           "csr32": sp.csr_matrix(X.astype(np.float32)), "float32": X}[fmt]
    ref = brute_squares(X.astype(np.float32) if fmt == "csr32" else X, offsets, rows)
    np.testing.assert_allclose(group_column_squares(Xin, offsets, rows), ref, rtol=1e-12, atol=1e-6)
    np.testing.assert_allclose(group_column_squares(Xin), brute_squares(np.asarray(
        Xin.toarray() if sp.issparse(Xin) else Xin, np.float64), [0, 60], np.arange(60)), rtol=1e-12)


def random_spd(rng, d, scales):
    A = rng.normal(size=(3 * d, d)) * scales
    return A.T @ A + np.diag(scales ** 2) * 1e-2


@pytest.mark.parametrize("precond", [False, True])
def test_newton_decrement_is_g_hinv_g_over_2(precond):
    rng = np.random.default_rng(1)
    scales = 10.0 ** rng.uniform(-3, 6, size=12)
    H = random_spd(rng, 12, scales)
    g = rng.normal(size=12) * scales
    exact = 0.5 * g @ np.linalg.solve(H, g)
    half, products, _ = newton_decrement(lambda v: H @ v, g, precond=np.diag(H) if precond else None, rtol=1e-10,
                                      max_cg=500)
    assert half == pytest.approx(exact, rel=1e-8) and products >= 1
    # restricted to an active set: the decrement of H_AA
    active = np.arange(12) % 3 != 0
    exact_a = 0.5 * g[active] @ np.linalg.solve(H[np.ix_(active, active)], g[active])
    half_a, _, _ = newton_decrement(lambda v: H @ v, g, precond=np.diag(H), active=active, rtol=1e-10, max_cg=500)
    assert half_a == pytest.approx(exact_a, rel=1e-8)
    # the default (looser) CG is a lower estimate within a few per cent with the Jacobi preconditioner
    loose, _, _ = newton_decrement(lambda v: H @ v, g, precond=np.diag(H))
    assert 0.9 * exact <= loose <= exact * (1 + 1e-12)


def test_newton_decrement_without_curvature_is_infinite():
    H = np.diag([1.0, 0.0])
    assert newton_decrement(lambda v: H @ v, np.array([1.0, 1.0]))[0] == np.inf


def test_decrement_with_strong_convexity_certifies_after_a_few_steps():
    """half + ||r||^2 / (2 mu) bounds p'H^-1 p / 2 when H >= mu I: returned, certified, once below the target."""
    rng = np.random.default_rng(6)
    H = random_spd(rng, 20, np.ones(20))
    mu = float(np.linalg.eigvalsh(H)[0])
    g = rng.normal(size=20)
    exact = 0.5 * g @ np.linalg.solve(H, g)
    value, products, certified = newton_decrement(lambda v: H @ v, g, strong_convexity=mu, target=2 * exact)
    assert certified and exact <= value <= 2 * exact and products < 20
    value, _, certified = newton_decrement(lambda v: H @ v, g, strong_convexity=mu, target=0.5 * exact)
    assert not certified and value <= exact * (1 + 1e-12)
    # an unpreconditioned estimate is refused until the columns' scales are known (trust=False)
    f = 1.0
    assert certify(lambda v: H @ v, np.zeros(20), g, f, 1e-12, precond=None, trust=False)[:2] == (
        np.inf, "needs preconditioning")


def test_certify_uses_the_strong_convexity_bound_then_the_decrement():
    """On a quadratic F = x'Hx/2 - b'x + lam1 |x|_1 with H >= mu I, F - F* <= ||p||^2 / (2 mu) (certified), and the
    decrement is exact for a quadratic without l1."""
    rng = np.random.default_rng(2)
    H = random_spd(rng, 6, np.ones(6))
    mu = float(np.linalg.eigvalsh(H)[0])
    b = rng.normal(size=6)
    x = rng.normal(size=6)
    f = 0.5 * x @ H @ x - b @ x
    f_star = -0.5 * b @ np.linalg.solve(H, b)
    gap, kind, _ = certify(lambda v: H @ v, x, H @ x - b, f, 1e9, strong_convexity=mu)
    assert kind == "strong convexity" and f - f_star <= gap
    gap, kind, _ = certify(lambda v: H @ v, x, H @ x - b, f, 1e-12, strong_convexity=mu)
    assert kind == "newton decrement" and gap == pytest.approx(f - f_star, rel=5e-2)  # CG to a 0.1 residual
    # with l1: the bound with the minimum-norm subgradient still holds
    lam1 = 0.3
    p = pseudo_gradient(H @ x - b, x, lam1)
    gap, kind, _ = certify(lambda v: H @ v, x, H @ x - b, f + lam1 * np.abs(x).sum(), 1e9, lam1=lam1,
                           strong_convexity=mu)
    assert gap == pytest.approx(p @ p / (2 * mu))


def test_jacobi_diagonal_only_when_scales_are_far_apart():
    H = np.diag([4.0, 9.0, 16.0])
    assert jacobi_diagonal(lambda v: H @ v, np.array([1.0, 2.0, 3.0]), 0.0) is None
    assert jacobi_diagonal(lambda v: H @ v, np.array([1.0, 2.0, 3.0]), 0.0, n_rows=2) is None
    # X as a whole on a scale of 1e12 (squares 1e24 per row): preconditioned, though the columns agree
    assert jacobi_diagonal(lambda v: H @ v, np.array([1.0, 2.0, 3.0]) * 1e24, 0.0, n_rows=2) is not None
    assert worth_preconditioning(np.array([1.0, 2.0, 3.0]) * 1e-10, n_rows=2)
    assert not worth_preconditioning(np.array([0.0, 0.0]), n_rows=2)
    squares = np.array([1.0, 1.0, 10 * PRECONDITION_SPREAD])
    diag = jacobi_diagonal(lambda v: np.diag(squares * 2.0 + 0.5) @ v, squares, 0.5)
    # c = 2 recovered from one product, rounded to even powers of 2 (a power-of-2 square root: exact scaling)
    assert np.all(np.log2(diag) % 2 == 0)
    assert np.all(np.abs(np.log2(diag / (2.0 * squares + 0.5))) <= 1.0)


class Quadratic(SmoothProblem):
    def __init__(self, H, b):
        self.H, self.b = H, b
        super().__init__()

    def new_state(self):
        return None

    def evaluate(self, x, Mx, state):
        return 0.5 * x @ self.H @ x - self.b @ x, self.H @ x - self.b

    def hessian_product(self, state, v, Mv):
        return self.H @ v


def test_tron_with_precond_is_invariant_to_rescaling_a_variable():
    """x -> D x with D a power of 2 leaves TRON's preconditioned iterates unchanged (same counts, same objective),
    and the gap rule brings it to the optimum where the gradient rule alone stops early."""
    rng = np.random.default_rng(4)
    H, b = random_spd(rng, 8, np.ones(8)), rng.normal(size=8)
    D = 2.0 ** np.array([0, 30, -10, 0, 0, 5, 0, 0])
    Hs, bs = H / np.outer(D, D), b / D  # the problem in y = D x
    a = tron(Quadratic(H, b), np.zeros(8), tol=1e-8, precond=np.diag(H), gap_tol=1e-12)
    c = tron(Quadratic(Hs, bs), np.zeros(8), tol=1e-8, precond=np.diag(Hs), gap_tol=1e-12)
    assert a.converged and c.converged and a.n_iter == c.n_iter and a.n_inner == c.n_inner
    assert c.objective == pytest.approx(a.objective, rel=1e-12)
    np.testing.assert_allclose(c.x / D, a.x, rtol=1e-8)
    f_star = -0.5 * b @ np.linalg.solve(H, b)
    assert a.objective - f_star <= gap_target(1e-12, f_star) and a.gap_kind == "newton decrement"
    # without the gap rule, the relative gradient rule is met far from the optimum on the rescaled problem
    loose = tron(Quadratic(Hs, bs), np.zeros(8), tol=1e-3)
    assert loose.converged and loose.objective - f_star > 1e3 * gap_target(1e-12, f_star)


def test_owlqn_with_precond_reaches_the_optimum_of_a_badly_scaled_l1_problem():
    rng = np.random.default_rng(5)
    H, b = random_spd(rng, 10, np.ones(10)), 3 * rng.normal(size=10)
    D = 10.0 ** np.array([0, 6, -3, 0, 0, 0, 2, 0, 0, 0])
    Hs, bs = H / np.outer(D, D), b / D  # the problem in y = D x, with lam1 |y_r| = lam1 D_r |x_r|
    lam1 = 0.5

    def fun_grad(y):
        return 0.5 * y @ Hs @ y - bs @ y, Hs @ y - bs

    # reference: the same problem in x by OWL-QN on the well-scaled form with weights lam1 * D (per coordinate)
    ref = owlqn(lambda x: (0.5 * x @ H @ x - b @ x, H @ x - b), np.zeros(10), lam1 * D, tol_abs=1e-12,
                max_iter=5000)
    assert ref.converged
    res = owlqn(fun_grad, np.zeros(10), lam1, tol_abs=1e-10, max_iter=5000, precond=np.diag(Hs))
    assert res.converged and res.n_iter < 200
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
