"""The inner solver of proximal Newton (cyrank.optim._quadratic_l1) against cvxpy on random quadratic + l1 models,
well and badly conditioned, with zero and non-zero starting points w."""
import cvxpy as cp
import numpy as np
import pytest

from cyrank.optim._quadratic_l1 import minimise_quadratic_l1, model_violation, solve_quadratic_l1
from reference import solve_problem


def model(seed, m, cond):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    H = (Q * np.geomspace(1.0, 1.0 / cond, m)) @ Q.T
    H = 0.5 * (H + H.T)
    g = rng.normal(size=m)
    w = rng.normal(size=m) * (rng.random(m) < 0.5)
    return H, g, w


def exact(H, g, w, lam1):
    d = cp.Variable(H.shape[0])
    prob = cp.Problem(cp.Minimize(g @ d + 0.5 * cp.quad_form(d, cp.psd_wrap(H)) + lam1 * cp.norm1(w + d)))
    return solve_problem(prob, {"d": d}).objective


def q(H, g, w, lam1, d):
    return float(g @ d + 0.5 * d @ H @ d + lam1 * np.abs(w + d).sum())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cond", [1e1, 1e6])
@pytest.mark.parametrize("lam1", [0.0, 0.05, 0.5])
def test_minimiser_matches_cvxpy(seed, cond, lam1):
    H, g, w = model(seed, 12, cond)
    d, sweeps, viol = minimise_quadratic_l1(H, g, w, lam1, 1e-10)
    assert viol <= 1e-10 and viol == pytest.approx(model_violation(H, g, w, lam1, d), abs=1e-13)
    best = exact(H, g, w, lam1)
    assert q(H, g, w, lam1, d) == pytest.approx(best, rel=1e-7, abs=1e-9)
    assert q(H, g, w, lam1, d) <= best + 1e-9 * max(1.0, abs(best))


def test_feature_sign_search_beats_plain_cd_when_ill_conditioned():
    """cond(H) = 1e8: the solution has entries near 1e8, so a violation of 1e-8 is the floating-point floor."""
    H, g, w = model(7, 30, 1e8)
    d_cd = np.zeros(30)
    sweeps, viol_cd = solve_quadratic_l1(H, g, w, 0.05, d_cd, 1e-8, 200)
    d, sweeps_total, viol = minimise_quadratic_l1(H, g, w, 0.05, 1e-8)
    assert viol <= 1e-8 < viol_cd
    assert q(H, g, w, 0.05, d) <= q(H, g, w, 0.05, d_cd)


def test_zero_curvature_coordinate_is_left_alone():
    H = np.diag([2.0, 0.0])
    g = np.array([1.0, 0.0])
    d = np.zeros(2)
    sweeps, viol = solve_quadratic_l1(H, g, np.zeros(2), 0.1, d, 1e-12, 50)
    assert d[1] == 0.0 and d[0] == pytest.approx(-0.45) and viol <= 1e-12
