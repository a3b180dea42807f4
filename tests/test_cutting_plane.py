"""The shared 1-slack cutting-plane engine on a problem with a known optimum: the linear hinge-loss SVM.

0.5 ||w||^2 + (C/n) sum_i max(0, 1 - y_i w.x_i) equals the 1-slack problem with
Delta(c) = mean(c), Psi(c) = mean(c_i y_i x_i) over c in {0,1}^n (Joachims 2006), so the engine's objective must
come within C * epsilon of the cvxpy optimum of the hinge form.
"""
import warnings

import cvxpy as cp
import numpy as np
import pytest

from cyrank.optim.cutting_plane import cutting_plane
from reference import solve_problem


def svm_problem(seed=0, n=40, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sign(X @ rng.normal(size=d) + 0.8 * rng.normal(size=n))
    return X, y


def engine_parts(X, y, C):
    n = len(y)

    def separate(w):
        c = (1 - y * (X @ w) > 0).astype(float)
        return c.mean(), (c * y) @ X / n

    def solve_restricted(ws):
        # dual of the restricted problem: max a.delta - 0.5 ||P'a||^2, a >= 0, sum a <= C; w = P'a
        deltas, P = ws.deltas, ws.flat
        a = cp.Variable(len(deltas))
        sol = solve_problem(cp.Problem(cp.Maximize(a @ deltas - 0.5 * cp.sum_squares(P.T @ a)), [a >= 0, cp.sum(a) <= C]), {"a": a})
        a = np.maximum(sol["a"], 0.0)
        a *= min(1.0, C / max(a.sum(), 1e-300))              # exactly dual feasible, so the bound is valid
        w = P.T @ a
        lower = float(a @ deltas) - 0.5 * float(w @ w)
        return w, max(0.0, float(np.max(deltas - P @ w))), 1, lower, a

    return separate, solve_restricted, lambda w: 0.5 * w @ w


@pytest.mark.slow
@pytest.mark.parametrize("seed, C", [(0, 1.0), (1, 10.0)])
def test_reaches_hinge_svm_optimum(seed, C):
    X, y = svm_problem(seed)
    eps = 1e-4
    res = cutting_plane(*engine_parts(X, y, C), np.zeros(X.shape[1]), C=C, epsilon=eps, max_iter=200)
    w = cp.Variable(X.shape[1])
    ref = solve_problem(cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C / len(y) * cp.sum(cp.pos(1 - cp.multiply(y, X @ w))))), {"w": w})
    assert res.converged and res.optimality <= eps
    # the engine's objective is the exact primal value at its w: never below the optimum, at most C*eps above
    exact = 0.5 * res.x @ res.x + C * np.mean(np.maximum(0, 1 - y * (X @ res.x)))
    assert res.objective == pytest.approx(exact, rel=1e-12)
    assert ref.objective - 1e-8 <= res.objective <= ref.objective + C * eps + 1e-8
    assert res.n_iter == len(res.history["objective"]) - 1


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.3, 0.7, 0.9])
@pytest.mark.parametrize("seed, C", [(0, 1.0), (1, 10.0), (3, 100.0)])
def test_in_out_stabilisation_certifies_the_gap(seed, C, alpha):
    """stabilize = alpha: the returned w is the best measured point, its objective exact and within C eps of
    the optimum, certified by the lower bound."""
    X, y = svm_problem(seed)
    eps = 1e-4
    res = cutting_plane(*engine_parts(X, y, C), np.zeros(X.shape[1]), C=C, epsilon=eps, max_iter=200,
                        stabilize=alpha)
    w = cp.Variable(X.shape[1])
    ref = solve_problem(cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C / len(y) * cp.sum(cp.pos(1 - cp.multiply(y, X @ w))))), {"w": w})
    exact = 0.5 * res.x @ res.x + C * np.mean(np.maximum(0, 1 - y * (X @ res.x)))
    assert res.converged and res.objective == pytest.approx(exact, rel=1e-12)
    assert res.objective == min(res.history["objective"])
    assert res.info["lower_bound"] <= ref.objective + 1e-8
    assert ref.objective - 1e-8 <= res.objective <= res.info["lower_bound"] + C * eps
    assert res.optimality == pytest.approx((res.objective - res.info["lower_bound"]) / C) and res.optimality <= eps
    assert res.info["n_separations"] == len(res.history["objective"]) >= res.n_iter


def test_bad_stabilize():
    X, y = svm_problem(0)
    with pytest.raises(ValueError, match="stabilize"):
        cutting_plane(*engine_parts(X, y, 1.0), np.zeros(3), C=1.0, epsilon=1e-3, max_iter=5, stabilize=1.0)


def test_reports_max_iter_without_warning():
    """The engine is below the estimators: it reports why it stopped, the estimators warn."""
    X, y = svm_problem(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = cutting_plane(*engine_parts(X, y, 10.0), np.zeros(X.shape[1]), C=10.0, epsilon=1e-8, max_iter=2)
    assert not res.converged and res.optimality > 1e-8 and "max_iter=2" in res.message


def test_working_set_keeps_gram_and_companions_through_aging():
    """The shared WorkingSet: rows, Gram matrix and companion rows stay consistent while constraints idle for
    ``patience`` solves are dropped (never the newest); weights are kept as a warm start."""
    from cyrank.optim.cutting_plane import WorkingSet

    rng = np.random.default_rng(5)
    ws = WorkingSet(4, gram=lambda psi, ws: np.r_[ws.flat @ psi, psi @ psi], companion=lambda psi: 2 * psi,
                    patience=2)
    rows = rng.normal(size=(12, 4))
    for t, row in enumerate(rows):
        ws.retire()
        ws.add(float(t), row)
        weights = np.zeros(ws.K)
        weights[ws.deltas % 3 == 0] = 1.0          # constraints 0, 3, 6, 9 stay active
        ws.record(weights)
        np.testing.assert_allclose(ws.G, ws.flat @ ws.flat.T)
        np.testing.assert_array_equal(ws.extra, 2 * ws.flat)
        np.testing.assert_array_equal(ws.flat, rows[ws.deltas.astype(int)])
        assert ws.deltas[-1] == t                  # the newest is never dropped
    kept = set(ws.deltas.astype(int))
    assert {0, 3, 6, 9} <= kept and not ({1, 2, 4, 5, 7} & kept)
    assert ws.psis.shape == (ws.K, 4) and np.all(ws.weights[ws.deltas % 3 == 0] == 1.0)
