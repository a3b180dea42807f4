"""DominationRank against the cvxpy reference, an independent numpy objective, and optimality conditions.

Problems are small and seeded. Every problem has a finite optimum: the l2 and elastic-net terms make it
so; for l1 the labels are noisy functions of X (no direction separates every query), and alpha is large
enough that the l1 optimum is attained (checked by the reference solver's "optimal" status).
"""
import itertools
import pickle
import types

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from cyrank import RankingDataWarning
from cyrank.domination import DominationRank, Options, _cd, _model_cd, _smooth, path, solve
from cyrank.domination import loss as domination_loss
from cyrank.domination.solver import _columns, _layout, _NewtonProblem, _rows_of, _ScoreModel
from cyrank.datasets import make_ranking
from cyrank.io import load_model, save_model
from cyrank.optim._quadratic_l1 import minimise_quadratic_l1, model_violation
from cyrank.metrics import ndcg_score
from reference import domination as ref

TOL = 1e-9  # solver tolerance used against the reference (relative KKT violation)


def make_problem(seed=0, n=48, d=5, n_queries=4, levels=4, density=1.0, offset=False):
    """Noisy graded labels (with ties) in shuffled queries; optional sparsity and offsets."""
    rng = np.random.default_rng(seed)
    X, y, qid = make_ranking(n_queries, n, d, levels, density=density, noise=1.5, binning="global", shuffle=True,
                             random_state=rng)
    qid = qid * 7 + 3
    o = rng.uniform(0.0, 1.0, size=n) * (y > 0) if offset else None
    return X, y, qid, o


def fit(X, y, qid=None, o=None, options=None, **params):
    """The fitted estimator, or, with solver ``options``, the functional layer's result as attributes."""
    params = {"tol": TOL, "max_iter": 5000, **params}
    if options is None:
        return DominationRank(**params).fit(X, y, qid, o)
    return types.SimpleNamespace(**solve(X, y, qid, o, options=options, **params).fitted_attributes())


# ---------------------------------------------------------------------------------------------------------
# The objective and its gradient
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("group_by_query", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_objective_matches_numpy(binary, group_by_query, sparse):
    X, y, qid, o = make_problem(seed=1, n=60, d=6, n_queries=9, levels=5, density=0.6, offset=True)
    y[:10] = 2.0  # many ties
    w = np.random.default_rng(2).normal(size=X.shape[1])
    est = DominationRank(penalty="elasticnet", alpha=0.7, l1_ratio=0.3, binary=binary, group_by_query=group_by_query)
    got = est.objective(sp.csr_matrix(X) if sparse else X, y, qid, o, coef=w)
    expected = ref.objective(X, y, qid, o, w, penalty="elasticnet", alpha=0.7, l1_ratio=0.3, binary=binary,
                             group_by_query=group_by_query)
    assert got == pytest.approx(expected, rel=1e-12)


def test_objective_at_large_margins_is_finite_and_exact():
    X, y, qid, o = make_problem(seed=3)
    w = np.random.default_rng(4).normal(size=X.shape[1]) * 300.0  # margins in the thousands
    got = DominationRank(alpha=0.0).objective(X, y, qid, o, coef=w)
    assert np.isfinite(got)
    assert got == pytest.approx(ref.objective(X, y, qid, o, w, alpha=0.0), rel=1e-12)


@pytest.mark.parametrize("binary", [False, True])
def test_gradient_matches_finite_differences(binary):
    X, y, qid, o = make_problem(seed=5, density=0.7, offset=True)
    est = DominationRank(alpha=0.0, binary=binary)  # loss only
    layout, _ = _layout(y, qid, o, binary=binary, group_by_query=True)
    data, indices, indptr, dense = _columns(sp.csc_matrix(X), layout.rows)
    w = np.random.default_rng(6).normal(size=X.shape[1])
    grad = _cd.gradient(data, indices, indptr, dense, layout, w)
    h = 1e-6
    for r in range(X.shape[1]):
        e = np.zeros_like(w)
        e[r] = h
        fd = (est.objective(X, y, qid, o, coef=w + e) - est.objective(X, y, qid, o, coef=w - e)) / (2 * h)
        assert grad[r] == pytest.approx(fd, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("power_sum_rows", [0, 1, 16])
@pytest.mark.parametrize("fmt", ["dense", "csc"])
def test_incremental_auxiliaries_match_recomputation(power_sum_rows, fmt):
    # many coordinate updates through the incremental state (Z, A, S, power sums, rescaling) without the
    # per-sweep recomputation; the gradient read from that state must equal the one recomputed from scratch
    rng = np.random.default_rng(9)
    n = 300
    X = np.c_[rng.normal(size=(n, 6)) * (rng.random((n, 6)) < 0.05),   # sparse columns: power sums
              rng.normal(size=(n, 4)) * (rng.random((n, 4)) < 0.6)]    # dense columns: row by row
    y = np.digitize(X @ rng.normal(size=10) + rng.normal(size=n), [-0.5, 0.5, 1.0]).astype(float)
    qid = np.repeat(np.arange(3), n // 3)
    layout, _ = _layout(y, qid, rng.uniform(0, 1, n), binary=False, group_by_query=True)
    cols = _columns(X if fmt == "dense" else sp.csc_matrix(X), layout.rows)
    features = rng.integers(0, 10, size=400).astype(np.intp)
    deltas = rng.normal(size=400) * rng.choice([1e-4, 0.3], size=400)  # small steps keep stale sums in range
    deltas[::50] *= 150.0  # large steps: margins jump past the per-query shift and force rescaling
    w0 = rng.normal(size=10) * 0.1
    inc, exact = _cd.incremental_gradient(*cols, layout, w0, features, deltas, power_sum_rows)
    np.testing.assert_allclose(inc, exact, rtol=1e-9, atol=1e-9 * np.abs(exact).max())  # after every step


@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_bounds_are_valid_and_popoviciu_is_tighter(sparse):
    X, y, qid, o = make_problem(seed=7, density=0.5 if sparse else 1.0, offset=True)
    layout, _ = _layout(y, qid, o, binary=False, group_by_query=True)
    cols = _columns(sp.csr_matrix(X) if sparse else X, layout.rows)
    pop = _cd.hessian_bounds(*cols, layout, _cd.HESSIAN_POPOVICIU)
    thesis = _cd.hessian_bounds(*cols, layout, _cd.HESSIAN_MAX_SQ)
    assert np.all(pop <= thesis * (1 + 1e-12)) and np.all(pop > 0)
    rng = np.random.default_rng(8)
    h = 1e-4
    for _ in range(5):  # the curvature along every coordinate stays below the bound, anywhere
        w = rng.normal(size=X.shape[1]) * rng.choice([0.1, 1.0, 5.0])
        for r in range(X.shape[1]):
            e = np.zeros_like(w)
            e[r] = h
            g_plus = _cd.gradient(*cols, layout, w + e)[r]
            g_minus = _cd.gradient(*cols, layout, w - e)[r]
            assert (g_plus - g_minus) / (2 * h) <= pop[r] * (1 + 1e-6) + 1e-9


def brute_margin_loss(u, labels, qid):
    """Loss, gradient and Hessian in the margins u, term by term: l_i = LSE(u over {i} + D(q, i)) - u_i."""
    n = u.shape[0]
    loss, grad, hess = 0.0, np.zeros(n), np.zeros((n, n))
    for i in range(n):
        D = np.flatnonzero((qid == qid[i]) & (labels < labels[i]))
        if D.size == 0:
            continue
        S = np.r_[i, D]
        z = u[S] - u[S].max()
        p = np.exp(z) / np.exp(z).sum()
        loss += u[S].max() + np.log(np.exp(z).sum()) - u[i]
        gi = p.copy()
        gi[0] -= 1.0
        grad[S] += gi
        hess[np.ix_(S, S)] += np.diag(p) - np.outer(p, p)
    return loss, grad, hess


@pytest.mark.parametrize("fmt", ["dense", "csr", "csr_densified"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("binary, group_by_query", [(False, True), (True, True), (False, False)])
@pytest.mark.parametrize("threads", [False, True])
def test_newton_products_match_brute_force(fmt, dtype, binary, group_by_query, threads):
    options = Options(densify_share=0.5 if fmt == "csr_densified" else 2.0)
    X, y, qid, o = make_problem(seed=41, n=70, d=6, n_queries=6, levels=5, density=0.6, offset=True)
    y[:12] = 2.0  # ties
    X = X.astype(dtype)
    labels = (y > 0).astype(float) if binary else y
    groups = qid if group_by_query else np.zeros_like(qid)
    layout, _ = _layout(y, qid, o, binary=binary, group_by_query=group_by_query)
    d = X.shape[1]
    rows = _rows_of(X if fmt == "dense" else sp.csr_matrix(X), options)
    assert rows[3] == (fmt != "csr")
    # threads: the parallel (OpenMP) path even on a small problem
    problem = _NewtonProblem(rows, layout, 0.0, d, parallel_min_rows=0 if threads else -1)
    rng = np.random.default_rng(42)
    for scale in (0.5, 3.0, 300.0):  # margins up to the thousands: no overflow, no underflow
        w = rng.normal(size=d) * scale
        u = X.astype(np.float64) @ w - o
        loss, grad, hess = brute_margin_loss(u, labels, groups)
        assert problem.fun(w) == pytest.approx(loss, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(problem.grad(w), X.T.astype(np.float64) @ grad, rtol=1e-10, atol=1e-10)
        problem.fun(rng.normal(size=d))  # a rejected trial point (no grad call) keeps the Hessian at w
        for _ in range(3):
            v = rng.normal(size=d)
            np.testing.assert_allclose(problem.hess_vec(v), X.T.astype(np.float64) @ (hess @ (X @ v)),
                                       rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------------------------------------
# The optimum, against cvxpy, for every variant
# ---------------------------------------------------------------------------------------------------------

_REF_CACHE = {}


def reference_optimum(penalty, binary, offset, dtype, alpha, seed=11, l1_ratio=0.4):
    key = (penalty, binary, offset, dtype, alpha, seed, l1_ratio)
    if key not in _REF_CACHE:
        X, y, qid, o = make_problem(seed=seed, density=0.6, offset=offset)
        X = X.astype(dtype).astype(np.float64)
        _REF_CACHE[key] = ref.solve(X, y, qid, o, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, binary=binary)
    return _REF_CACHE[key]


ALPHA = {"l2": 0.5, "l1": 1.0, "elasticnet": 1.0}


@pytest.mark.parametrize("binary", [False, True])
def test_reference_optimum_is_the_formula_at_its_minimiser(binary):
    X, y, qid, o = make_problem(seed=11, density=0.6, offset=True)
    sol = ref.solve(X, y, qid, o, penalty="elasticnet", alpha=1.0, l1_ratio=0.4, binary=binary)
    at_w = ref.objective(X, y, qid, o, sol["w"], penalty="elasticnet", alpha=1.0, l1_ratio=0.4, binary=binary)
    assert sol.objective == pytest.approx(at_w, rel=1e-8)


@pytest.mark.parametrize("penalty, solver", [("l2", "cd"), ("l2", "newton"), ("l1", "cd"), ("elasticnet", "cd"),
                                             ("l1", "prox_newton"), ("elasticnet", "prox_newton"),
                                             ("l1", "owlqn"), ("elasticnet", "owlqn"), ("l2", "lbfgs"),
                                             ("l2", "auto")])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("offset", [False, True])
@pytest.mark.parametrize("fmt", ["dense_c", "dense_f", "csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_optimum_matches_reference(penalty, solver, binary, offset, fmt, dtype):
    # csc: through the functional layer, with Newton products on CSR rows (csr: densified, density 0.6 >
    # densify_share)
    options = Options(densify_share=2.0) if fmt == "csc" else None
    X, y, qid, o = make_problem(seed=11, density=0.6, offset=offset)
    X = X.astype(dtype)
    Xf = {"dense_c": np.ascontiguousarray, "dense_f": np.asfortranarray, "csr": sp.csr_matrix,
          "csc": sp.csc_matrix}[fmt](X)
    est = fit(Xf, y, qid, o, options, penalty=penalty, alpha=ALPHA[penalty], l1_ratio=0.4, binary=binary,
              solver=solver)
    sol = reference_optimum(penalty, binary, offset, dtype, ALPHA[penalty])
    assert est.solver_ in ((solver,) if solver != "auto" else ("lbfgs", "lbfgs+newton"))
    assert est.converged_
    if est.solver_ in ("newton", "lbfgs+newton"):  # Newton stops on the gap alone
        assert est.gap_ <= TOL * max(1.0, abs(est.objective_))
    else:
        assert est.kkt_violation_ <= TOL
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    assert est.objective_ >= sol.objective - 1e-7 * abs(sol.objective)  # the reference is the minimum
    assert est.coef_.dtype == np.float64 and est.coef_.shape == (X.shape[1],)
    np.testing.assert_allclose(est.coef_, sol["w"], atol=2e-3)
    h = est.history_["objective"]
    assert h.shape == (est.n_iter_,) and np.all(np.diff(h) <= 1e-12 * abs(h[0]))


@pytest.mark.parametrize("penalty", ["l2", "l1"])
@pytest.mark.parametrize("binary", [False, True])
def test_power_sums_of_large_layers_match_reference(penalty, binary):
    # every dominating layer keeps power sums (normally only layers of >= power_sum_rows rows, sparse X)
    X, y, qid, o = make_problem(seed=11, density=0.6, offset=True)
    est = fit(sp.csc_matrix(X), y, qid, o, Options(power_sum_rows=1), penalty=penalty, alpha=ALPHA[penalty],
              binary=binary, solver="cd")
    sol = reference_optimum(penalty, binary, True, np.float64, ALPHA[penalty], l1_ratio=0.5)
    assert est.converged_ and est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    h = est.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))


def test_power_sums_on_one_large_query_equal_the_direct_sums():
    # one query of 400 rows; sparse columns use the power sums, the dense ones (>= 1/8 of the rows) sum
    # row by row and leave the power sums to be re-centred
    rng = np.random.default_rng(30)
    X = sp.hstack([sp.random(400, 24, density=0.05, random_state=30),
                   sp.random(400, 6, density=0.5, random_state=31)], format="csc")
    y = np.digitize(X @ rng.normal(size=30) + rng.normal(size=400), [0.5, 1.5]).astype(float)
    results = {}
    for rows in (16, 0):
        for penalty in ("l1", "l2"):
            results[rows, penalty] = fit(X, y, None, None, Options(power_sum_rows=rows), penalty=penalty,
                                         alpha=0.5, solver="cd")
    for penalty in ("l1", "l2"):
        a, b = results[16, penalty], results[0, penalty]
        assert a.converged_ and b.converged_
        assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)
        h = a.history_["objective"]
        assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))
    assert results[16, "l1"].objective_ == pytest.approx(ref.solve(X, y, penalty="l1", alpha=0.5).objective,
                                                          rel=1e-6)


def test_anderson_extrapolation_changes_speed_not_the_optimum():
    X, y, qid, o = make_problem(seed=31, n=120, d=8, offset=True)
    a = fit(X, y, qid, o, penalty="l1", alpha=0.5, solver="cd")
    b = fit(X, y, qid, o, Options(anderson=False), penalty="l1", alpha=0.5, solver="cd")
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-10)
    assert a.n_iter_ < b.n_iter_


def test_l1_gives_exact_zeros_and_matches_reference():
    X, y, qid, _ = make_problem(seed=12, d=8)
    X[:, 5:] = np.random.default_rng(0).normal(size=(X.shape[0], 3)) * 0.05  # near-useless features
    est = fit(X, y, qid, penalty="l1", alpha=3.0)
    sol = ref.solve(X, y, qid, penalty="l1", alpha=3.0)
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    assert np.count_nonzero(est.coef_) < X.shape[1]
    np.testing.assert_array_equal(est.coef_ == 0, np.abs(sol["w"]) < 1e-6)


def test_group_by_query_false_is_one_query():
    X, y, qid, o = make_problem(seed=13, offset=True)
    a = fit(X, y, qid, o, group_by_query=False)
    b = fit(X, y, None, o)
    sol = ref.solve(X, y, qid, o, group_by_query=False)
    assert a.objective_ == pytest.approx(sol.objective, rel=1e-6)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)


def test_row_order_does_not_matter():
    X, y, qid, o = make_problem(seed=14, offset=True)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    a = fit(X, y, qid, o)
    b = fit(X[perm], y[perm], qid[perm], o[perm])
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)


def test_large_features_and_offsets_converge_to_reference():
    X, y, qid, _ = make_problem(seed=15, density=0.7)
    X[:, 0] *= 1e3
    X[:, 1] *= 1e-3
    o = np.where(y >= 2, 50.0, 0.0)
    sol = ref.solve(X, y, qid, o, alpha=0.5)
    for Xf, solver in itertools.product((X, sp.csc_matrix(X)), ("cd", "newton", "prox_newton")):
        est = fit(Xf, y, qid, o, alpha=0.5, max_iter=20000, solver=solver)
        assert est.converged_ and np.isfinite(est.coef_).all()
        assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)


def test_margins_beyond_the_exponential_range_in_every_solver():
    # rows b and j (the only members of D(b) + {b}) sit 1000 below the query's maximum margin: beyond CD's shifted
    # exponentials, so CD keeps that query's derivatives in the log domain (wide_query in _cd.pyx)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.5]])
    y = np.array([1.0, 1.0, 0.0])
    o = np.array([0.0, 1000.0, 1000.0])
    for solver, penalty in (("cd", "l2"), ("cd", "l1"), ("newton", "l2"), ("prox_newton", "l2"),
                            ("prox_newton", "l1")):
        est = fit(X, y, None, o, alpha=0.1, solver=solver, penalty=penalty)
        assert est.converged_ and est.coef_[1] > 0.1
        sol = ref.solve(X, y, None, o, alpha=0.1, penalty=penalty)
        assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)


# ---------------------------------------------------------------------------------------------------------
# Convergence behaviour
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bound", ["popoviciu", "max_sq"])
@pytest.mark.parametrize("penalty", ["l2", "l1"])
def test_objective_never_increases(bound, penalty):
    X, y, qid, o = make_problem(seed=16, n=120, d=10, n_queries=6, density=0.5, offset=True)
    est = fit(X, y, qid, o, penalty=penalty, alpha=0.3, hessian_bound=bound, tol=1e-12, solver="cd")
    h = est.history_["objective"]
    assert est.n_iter_ > 5
    assert np.all(np.diff(h) <= 1e-13 * abs(h[0]))
    assert h[-1] == pytest.approx(est.objective_, rel=1e-14)


def test_popoviciu_needs_fewer_epochs_to_the_same_optimum():
    X, y, qid, o = make_problem(seed=17, n=120, d=8, n_queries=6, offset=True)
    a = fit(X, y, qid, o, hessian_bound="popoviciu", solver="cd")
    b = fit(X, y, qid, o, hessian_bound="max_sq", solver="cd")
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    assert a.n_iter_ < b.n_iter_


@pytest.mark.parametrize("solver, penalty", [("cd", "l2"), ("newton", "l2"), ("prox_newton", "l1"), ("lbfgs", "l2"),
                                             ("auto", "l2")])
def test_max_iter_warns_and_reports_not_converged(solver, penalty):
    X, y, qid, _ = make_problem(seed=18)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        est = DominationRank(max_iter=2, tol=1e-12, solver=solver, penalty=penalty).fit(X, y, qid)
    assert est.n_iter_ == 2 and not est.converged_ and est.kkt_violation_ > 1e-12


@pytest.mark.parametrize("solver, penalty", [("cd", "l2"), ("newton", "l2"), ("prox_newton", "l1")])
def test_warm_start_continues_from_coef(solver, penalty):
    X, y, qid, _ = make_problem(seed=19)
    est = fit(X, y, qid, warm_start=True, solver=solver, penalty=penalty)
    first = est.n_iter_
    est.fit(X, y, qid)
    assert est.n_iter_ <= 1 < first and est.converged_


@pytest.mark.parametrize("solver, penalty", [("cd", "l2"), ("newton", "l2"), ("prox_newton", "l1"),
                                             ("prox_newton", "elasticnet")])
def test_zero_column_and_constant_feature_get_zero_weight(solver, penalty):
    X, y, qid, _ = make_problem(seed=20)
    X = np.c_[X, np.zeros(X.shape[0]), np.ones(X.shape[0])]
    est = fit(X, y, qid, solver=solver, penalty=penalty)
    # the constant feature's weight is held only by the ridge: it is 0 to within the gradient tolerance
    assert est.coef_[-2] == 0.0 and abs(est.coef_[-1]) <= 1e-9
    assert est.objective_ == pytest.approx(ref.solve(X, y, qid, penalty=penalty).objective, rel=1e-6)


def test_newton_objective_decreases_and_needs_few_iterations():
    X, y, qid, o = make_problem(seed=16, n=120, d=10, n_queries=6, density=0.5, offset=True)
    newton = fit(X, y, qid, o, alpha=0.3, tol=1e-12, solver="newton")
    cd = fit(X, y, qid, o, alpha=0.3, tol=1e-12, solver="cd")
    h = newton.history_["objective"]
    assert h.shape == newton.history_["n_nonzero"].shape and h.size >= 2
    assert np.all(np.diff(h) <= 1e-13 * abs(h[0]))
    assert h[-1] == pytest.approx(newton.objective_, rel=1e-14)
    assert newton.objective_ == pytest.approx(cd.objective_, rel=1e-12)
    assert newton.n_iter_ < 20 < cd.n_iter_ and newton.n_cg_iter_ > newton.n_iter_ and cd.n_cg_iter_ == 0


@pytest.mark.parametrize("params, solver", [
    ({}, "lbfgs"),
    ({"penalty": "elasticnet", "l1_ratio": 0.0}, "lbfgs"),
    ({"penalty": "elasticnet", "l1_ratio": 0.3}, "prox_newton"),
    ({"penalty": "l1"}, "prox_newton"),
    ({"feature_induction": 2}, "prox_newton"),
    ({"penalty": "l1", "gram_budget": 0.0}, "owlqn"),       # a model on all features too large to form
    ({"penalty": "elasticnet", "gram_budget": 0.0}, "owlqn"),
    ({"penalty": "l1", "gram_budget": 0.0, "feature_induction": 2}, "prox_newton"),
])
def test_auto_solver_is_lbfgs_then_newton_for_smooth_objectives_else_prox_newton_or_owlqn(params, solver):
    X, y, qid, o = make_problem(seed=32, offset=True)
    params = dict(params)
    options = Options(gram_budget=params.pop("gram_budget")) if "gram_budget" in params else None
    est = fit(X, y, qid, o, options, **params)
    assert est.solver_ in ((solver, "lbfgs+newton") if solver == "lbfgs" else (solver,))
    sol = ref.solve(X, y, qid, o, penalty=params.get("penalty", "l2"), alpha=1.0, l1_ratio=params.get("l1_ratio", 0.5))
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)


# ---------------------------------------------------------------------------------------------------------
# Feature induction (Alg. 7) and negative sampling (section 8.2)
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("step", [1, 3])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", ["cd", "prox_newton"])
def test_feature_induction_reaches_the_plain_l1_optimum(step, sparse, solver):
    X, y, qid, o = make_problem(seed=21, n=80, d=12, density=0.5, offset=True)
    Xf = sp.csc_matrix(X) if sparse else X
    plain = fit(Xf, y, qid, o, penalty="l1", alpha=4.0, solver="cd")
    induced = fit(Xf, y, qid, o, penalty="l1", alpha=4.0, feature_induction=step, solver=solver)
    assert induced.converged_ and induced.kkt_violation_ <= TOL
    assert induced.objective_ == pytest.approx(plain.objective_, rel=1e-9)
    np.testing.assert_array_equal(induced.coef_ == 0, plain.coef_ == 0)
    assert 0 < np.count_nonzero(induced.coef_) < X.shape[1]
    nnz = induced.history_["n_nonzero"]
    assert nnz[0] <= step  # sparse from the start: one round adds at most `step` features
    h = induced.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))


def test_feature_induction_with_l2_matches_reference():
    X, y, qid, _ = make_problem(seed=22, d=6)
    est = fit(X, y, qid, feature_induction=2)
    assert est.objective_ == pytest.approx(ref.solve(X, y, qid).objective, rel=1e-6)


@pytest.mark.parametrize("binary", [False, True])
def test_negative_sampling_optimises_the_sampled_objective(binary):
    X, y, qid, o = make_problem(seed=23, n=80, offset=True)
    est = fit(X, y, qid, o, neg_sample=0.4, random_state=0, binary=binary)
    mask = est.sample_mask_
    assert mask.dtype == bool and mask.shape == y.shape
    labels = (y > 0).astype(float) if binary else y
    for q in np.unique(qid):  # ceil(0.4 n_0) of the lowest layer kept in every query, other rows all kept
        in_q = qid == q
        bottom = in_q & (labels == labels[in_q].min())
        assert mask[bottom].sum() == np.ceil(0.4 * bottom.sum())
        assert mask[in_q & ~bottom].all()
    sol = ref.solve(X[mask], y[mask], qid[mask], o[mask], binary=binary)
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    again = fit(X, y, qid, o, neg_sample=0.4, random_state=0, binary=binary)
    np.testing.assert_array_equal(again.sample_mask_, mask)
    other = fit(X, y, qid, o, neg_sample=0.4, random_state=1, binary=binary)
    assert not np.array_equal(other.sample_mask_, mask)


def test_neg_sample_one_is_the_full_objective():
    X, y, qid, _ = make_problem(seed=24)
    a = fit(X, y, qid, neg_sample=1.0)
    b = fit(X, y, qid)
    assert a.sample_mask_.all() and b.sample_mask_ is None
    assert a.objective_ == b.objective_


# ---------------------------------------------------------------------------------------------------------
# Estimator API
# ---------------------------------------------------------------------------------------------------------

def test_predict_score_and_objective_method():
    X, y, qid, _ = make_problem(seed=25)
    est = fit(X, y, qid)
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)
    np.testing.assert_allclose(est.decision_function(sp.csr_matrix(X)), X @ est.coef_)
    assert est.score(X, y, qid) == pytest.approx(ndcg_score(y, X @ est.coef_, qid, k=10))
    assert est.objective(X, y, qid) == pytest.approx(est.objective_, rel=1e-14)
    assert est.score(X, y, qid) > ndcg_score(y, -X @ est.coef_, qid, k=10)


@pytest.mark.parametrize("params", [{"penalty": "l1", "alpha": 1.0, "feature_induction": 2, "solver": "cd"},
                                    {"penalty": "l1", "alpha": 1.0},                     # prox_newton
                                    {"penalty": "l2", "alpha": 1.0}])                    # newton
def test_pickle_and_safe_save_load(tmp_path, params):
    X, y, qid, _ = make_problem(seed=26)
    est = fit(X, y, qid, **params)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    save_model(est, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert type(loaded) is DominationRank and loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    np.testing.assert_array_equal(loaded.history_["objective"], est.history_["objective"])
    assert (loaded.solver_, loaded.n_iter_, loaded.n_cg_iter_) == (est.solver_, est.n_iter_, est.n_cg_iter_)


@pytest.mark.parametrize("params, error, match", [
    ({"alpha": -1.0}, ValueError, "alpha"),
    ({"alpha": np.nan}, ValueError, "alpha"),
    ({"penalty": "l3"}, ValueError, "penalty"),
    ({"penalty": "elasticnet", "l1_ratio": 1.5}, ValueError, "l1_ratio"),
    ({"penalty": "elasticnet", "l1_ratio": -0.1}, ValueError, "l1_ratio"),
    ({"feature_induction": 0}, ValueError, "feature_induction"),
    ({"feature_induction": 1.5}, TypeError, "feature_induction"),
    ({"neg_sample": 0.0}, ValueError, "neg_sample"),
    ({"neg_sample": 1.5}, ValueError, "neg_sample"),
    ({"max_iter": 0}, ValueError, "max_iter"),
    ({"tol": 0.0}, ValueError, "tol"),
    ({"hessian_bound": "exact"}, ValueError, "hessian_bound"),
    ({"solver": "bfgs"}, ValueError, "solver"),
    ({"solver": "lbfgs", "penalty": "l1"}, ValueError, "smooth"),
    ({"solver": "newton", "penalty": "l1"}, ValueError, "smooth"),
    ({"solver": "newton", "penalty": "elasticnet"}, ValueError, "smooth"),
    ({"solver": "newton", "feature_induction": 2}, ValueError, "feature_induction"),
    ({"binary": "yes"}, ValueError, "binary"),
])
def test_bad_parameters(params, error, match):
    X, y, qid, _ = make_problem(seed=27)
    with pytest.raises(error, match=match):
        DominationRank(**params).fit(X, y, qid)


def test_bad_data():
    X, y, qid, _ = make_problem(seed=28)
    est = DominationRank()
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(bad, y, qid)
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        est.fit(sp.csr_matrix(bad), y, qid)
    with pytest.raises(ValueError, match="lengths must match"):
        est.fit(X, y[:-1], qid)
    with pytest.raises(ValueError, match="lengths must match"):
        est.fit(X, y, qid[:-1])
    with pytest.raises(ValueError, match="empty"):
        est.fit(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValueError, match="non-integer"):
        est.fit(X, y, qid + 0.5)
    with pytest.raises(TypeError, match="dtype"):
        est.fit(X.astype(str), y, qid)
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.fit(X + 1j, y, qid)
    with pytest.raises(ValueError, match="offset must be >= 0"):
        est.fit(X, y, qid, -np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="offset"):
        est.fit(X, y, qid, np.ones(3))
    est.fit(X, y, qid)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :-1])


def test_no_pairs_warns_and_gives_zero_model():
    X, _, qid, _ = make_problem(seed=29)
    with pytest.warns(RankingDataWarning):
        est = DominationRank().fit(X, np.ones(X.shape[0]), qid)
    assert np.all(est.coef_ == 0) and est.objective_ == 0.0 and est.converged_


def test_clone_keeps_parameters():
    est = DominationRank(penalty="l1", alpha=2.0, feature_induction=3, neg_sample=0.5, random_state=4)
    assert clone(est).get_params() == est.get_params()


# ---------------------------------------------------------------------------------------------------------
# Proximal Newton (issue 11): its Hessian block, every layering, and the regularisation path
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("sizes", [None, (3, 300, 50, 120, 7, 200, 20, 2)])
def test_gram_hessian_is_the_hessian_restricted_to_the_working_set(fmt, dtype, threads, sizes):
    """X_W'HX_W from _smooth.gram_hessian against the columns of the full Hessian from hess_vec; ``sizes``: queries
    batched together into blocks of up to GRAM_BATCH_ROWS = 256 rows and one query larger than a batch."""
    n = 90 if sizes is None else sum(sizes)
    X, y, qid, o = make_problem(seed=43, n=n, d=9, n_queries=5, levels=4, density=0.5, offset=True)
    if sizes is not None:
        qid = np.random.default_rng(0).permutation(np.repeat(np.arange(len(sizes)) * 7 + 3, sizes))
    y[:15] = 1.0  # ties
    X = X.astype(dtype)
    layout, _ = _layout(y, qid, o, binary=False, group_by_query=True)
    rows = _rows_of(X if fmt == "dense" else sp.csr_matrix(X), Options(densify_share=2.0))
    problem = _NewtonProblem(rows, layout, 0.0, 9, parallel_min_rows=0 if threads else -1)
    w = np.random.default_rng(44).normal(size=9)
    problem.fun(w)
    problem.grad(w)
    full = np.column_stack([problem.hess_vec(e) for e in np.eye(9)])
    for cols in ([0], [8, 3, 5], list(range(9))):
        cols = np.array(cols, dtype=np.int64)
        pos = np.full(9, -1, dtype=np.int64)
        pos[cols] = np.arange(cols.size)
        out = np.empty((cols.size, cols.size))
        _smooth.gram_hessian(*rows, 9, problem.state.smooth, cols, pos, out)
        np.testing.assert_allclose(out, full[np.ix_(cols, cols)], rtol=1e-11, atol=1e-11 * np.abs(full).max())


@pytest.mark.parametrize("l1_ratio", [0.1, 0.9, 1.0])          # 1.0: the l1 penalty
@pytest.mark.parametrize("binary, group_by_query", [(False, True), (True, True), (False, False)])
@pytest.mark.parametrize("fmt", ["dense", "csr32"])
def test_prox_newton_elastic_net_matches_reference(l1_ratio, binary, group_by_query, fmt):
    X, y, qid, o = make_problem(seed=45, density=0.6, offset=True)
    Xf = sp.csr_matrix(X.astype(np.float32)) if fmt == "csr32" else X
    est = fit(Xf, y, qid, o, penalty="elasticnet", alpha=1.5, l1_ratio=l1_ratio, binary=binary,
              group_by_query=group_by_query)
    assert est.solver_ == "prox_newton" and est.converged_ and est.kkt_violation_ <= TOL
    Xr = X.astype(np.float32).astype(np.float64) if fmt == "csr32" else X
    sol = ref.solve(Xr, y, qid if group_by_query else None, o, penalty="elasticnet", alpha=1.5, l1_ratio=l1_ratio,
                    binary=binary)
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    assert est.objective_ >= sol.objective - 1e-7 * abs(sol.objective)


def test_prox_newton_on_collinear_and_query_constant_features():
    """A duplicated column and a column constant within each query make the working-set Hessian singular; the
    solver still reaches the reference optimum (its model carries a tiny ridge)."""
    X, y, qid, o = make_problem(seed=46, offset=True)
    const = np.array([{q: i for i, q in enumerate(np.unique(qid))}[q] for q in qid], dtype=float)
    X = np.c_[X, X[:, 0], const]
    est = fit(X, y, qid, o, penalty="l1", alpha=0.3)
    assert est.solver_ == "prox_newton" and est.converged_
    assert est.objective_ == pytest.approx(ref.solve(X, y, qid, o, penalty="l1", alpha=0.3).objective, rel=1e-6)


@pytest.mark.parametrize("penalty, l1_ratio", [("l1", 0.5), ("elasticnet", 0.3)])
def test_path_starts_at_the_exact_alpha_max(penalty, l1_ratio):
    X, y, qid, o = make_problem(seed=47, d=8, offset=True)
    p = path(X, y, qid, o, penalty=penalty, l1_ratio=l1_ratio, n_alphas=6, eps=1e-2, tol=TOL)
    assert p.alphas[0] == p.alpha_max and p.coefs[:, 0].nnz == 0 and p.kkt_violations[0] == 0.0
    assert np.all(np.diff(p.alphas) < 0) and p.converged.all() and np.all(p.kkt_violations <= TOL)
    below = solve(X, y, qid, o, penalty=penalty, l1_ratio=l1_ratio, alpha=0.99 * p.alpha_max, tol=TOL)
    assert np.count_nonzero(below.coef) > 0  # any smaller alpha moves away from 0
    # every point of the path is the optimum of its alpha (cold solve and cvxpy)
    for j in (1, 5):
        cold = solve(X, y, qid, o, penalty=penalty, l1_ratio=l1_ratio, alpha=p.alphas[j], tol=TOL)
        assert p.objectives[j] == pytest.approx(cold.objective, rel=1e-9)
        sol = ref.solve(X, y, qid, o, penalty=penalty, l1_ratio=l1_ratio, alpha=p.alphas[j])
        assert p.objectives[j] == pytest.approx(sol.objective, rel=1e-6)
    assert np.all(np.diff(np.diff(p.coefs.indptr)) >= -1)  # supports grow (almost) monotonically


def test_bad_coef_init_is_refused():
    X, y, qid, _ = make_problem(seed=51)
    with pytest.raises(ValueError, match="coef_init has shape"):
        solve(X, y, qid, coef_init=np.zeros(3))
    with pytest.raises(ValueError, match="coef_init"):
        solve(X, y, qid, coef_init=np.full(X.shape[1], np.nan))


def test_path_is_also_cyrank_domination_path():
    import cyrank

    assert cyrank.domination_path is path and "domination_path" in dir(cyrank)


def test_path_with_given_alphas_and_the_estimator_warm_start_agree():
    X, y, qid, o = make_problem(seed=48, d=6, offset=True)
    alphas = [3.0, 1.0, 0.3]
    p = path(X, y, qid, o, alphas=alphas, penalty="l2", tol=TOL)
    est = DominationRank(penalty="l2", warm_start=True, tol=TOL)
    for j, alpha in enumerate(p.alphas):
        est.set_params(alpha=alpha).fit(X, y, qid, o)
        assert est.objective_ == pytest.approx(p.objectives[j], rel=1e-9)
        np.testing.assert_allclose(est.coef_, p.coefs[:, j].toarray().ravel(), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="alphas="):
        path(X, y, qid, o, penalty="l2")
    with pytest.raises(ValueError, match="alphas"):
        path(X, y, qid, o, alphas=[1.0, -1.0])


@pytest.mark.parametrize("fmt", ["dense", "csr", "csr32"])
@pytest.mark.parametrize("levels", [2, 3, 6])  # the two- and three-layer shortcuts of query_sums, and the loop
def test_matrix_free_model_is_the_gram_model(fmt, levels):
    """_model_cd's diagonal, product and model value equal those of the formed X_W'HX_W, and its CD reaches the
    exact minimiser of the model (the feature-sign search on the formed matrix), with tied labels."""
    X, y, qid, o = make_problem(seed=52, n=90, d=9, n_queries=5, levels=levels, density=0.5, offset=True)
    y[:12] = y[0]  # ties
    X = X.astype(np.float32) if fmt == "csr32" else X
    Xf = X if fmt == "dense" else sp.csr_matrix(X)
    layout, _ = _layout(y, qid, o, binary=False, group_by_query=True)
    rows = _rows_of(Xf, Options(densify_share=2.0))
    problem = _NewtonProblem(rows, layout, 0.0, 9)
    rng = np.random.default_rng(53)
    w = rng.normal(size=9)
    w[[1, 4]] = 0.0
    problem.fun(w)
    g = problem.grad(w)
    cols = np.array([8, 0, 3, 4, 5, 1], dtype=np.int64)
    pos = np.full(9, -1, dtype=np.int64)
    pos[cols] = np.arange(cols.size)
    H = np.empty((cols.size, cols.size))
    _smooth.gram_hessian(*rows, 9, problem.state.smooth, cols, pos, H)
    columns = _columns(Xf, layout.rows)
    model = _model_cd.Model(layout, problem.state.smooth)
    problem.fun(rng.normal(size=9))  # the model keeps its own copy of the state at w
    diag, prod, v = np.empty(cols.size), np.empty(cols.size), rng.normal(size=cols.size)
    _model_cd.model_diagonal(*columns, cols, model, diag)
    _model_cd.model_product(*columns, cols, model, v, prod)
    scale = np.abs(H).max()
    np.testing.assert_allclose(diag, np.diag(H), rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(prod, H @ v, rtol=1e-12, atol=1e-12 * scale * np.abs(v).max())
    lam1 = 0.2 * np.abs(g[cols]).max()
    ridge = 1e-3 * scale * np.linspace(0.5, 1.5, cols.size)  # a ridge per coordinate
    gw, ww = g[cols], w[cols]
    _, _, value = _model_cd.solve_model(*columns, cols, model, diag, gw, ww, lam1, ridge, v.copy(), 0.0, 0,
                                        np.empty((0, cols.size)))
    Hr = H + np.diag(ridge)
    assert value == pytest.approx(gw @ v + 0.5 * v @ Hr @ v + lam1 * np.abs(ww + v).sum(), rel=1e-12)
    d = np.zeros(cols.size)
    history = np.empty((5000, cols.size))
    sweeps, viol, _ = _model_cd.solve_model(*columns, cols, model, diag, gw, ww, lam1, ridge, d, 1e-10 * scale, 5000,
                                            history)
    assert viol <= 1e-10 * scale and 0 < sweeps < 5000 and np.array_equal(history[sweeps - 1], d)
    exact, _, _ = minimise_quadratic_l1(Hr, gw, ww, lam1, 1e-13 * scale)
    np.testing.assert_allclose(d, exact, atol=1e-8 * np.abs(exact).max())


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_matrix_free_model_minimiser_with_orthant_newton_steps_is_exact(fmt, monkeypatch):
    """Nearly collinear features make CD on the model slow, so _ScoreModel alternates CD rounds with Newton
    steps on the orthant; the result is the model's exact minimiser (feature-sign search on the formed matrix)."""
    rng = np.random.default_rng(54)
    X, y, qid, o = make_problem(seed=54, n=120, d=8, n_queries=6, levels=3, offset=True)
    X = X[:, :1] + 0.03 * X  # every column close to the first
    Xf = X if fmt == "dense" else sp.csr_matrix(X)
    layout, _ = _layout(y, qid, o, binary=False, group_by_query=True)
    rows = _rows_of(Xf, Options(densify_share=2.0))
    problem = _NewtonProblem(rows, layout, 0.0, 8)
    w = rng.normal(size=8)
    problem.fun(w)
    g = problem.grad(w)
    ws = np.arange(8, dtype=np.int64)
    model = _ScoreModel(layout, _columns(Xf, layout.rows), problem, ws, 0.0, np.linspace(0.5, 2.0, 8))  # any floor
    H = np.empty((8, 8))
    _smooth.gram_hessian(*rows, 8, problem.state.smooth, ws, np.arange(8, dtype=np.int64), H)
    H[np.diag_indices_from(H)] += model.ridge
    calls = []
    orthant_step = _ScoreModel._orthant_step
    monkeypatch.setattr(_ScoreModel, "_orthant_step", lambda self, *a: calls.append(1) or orthant_step(self, *a))
    lam1 = 0.05 * np.abs(g).max()
    tol = 1e-10 * np.abs(g).max()
    d, work = model.minimise(g, w, lam1, 0.0, tol)
    exact, _, _ = minimise_quadratic_l1(H, g, w, lam1, 1e-3 * tol)
    assert calls and work < 100
    assert model_violation(H, g, w, lam1, d) <= 10 * tol
    np.testing.assert_allclose(d, exact, rtol=1e-6, atol=1e-8 * np.abs(exact).max())


@pytest.mark.parametrize("penalty", ["l1", "elasticnet"])
@pytest.mark.parametrize("binary, group_by_query", [(False, True), (True, True), (False, False)])
@pytest.mark.parametrize("fmt", ["dense", "csr32"])
def test_prox_newton_with_the_matrix_free_model_matches_reference(penalty, binary, group_by_query, fmt):
    """gram_budget=0: every working set takes the matrix-free model (_model_cd.pyx: CD rounds and Newton steps on
    the orthant), as large sparse problems do; the optimum is the reference's."""
    X, y, qid, o = make_problem(seed=49, density=0.6, offset=True)
    Xf = sp.csr_matrix(X.astype(np.float32)) if fmt == "csr32" else X
    res = solve(Xf, y, qid if group_by_query else None, o, penalty=penalty, alpha=0.5, binary=binary, tol=TOL,
                solver="prox_newton", options=Options(gram_budget=0.0))
    assert res.solver == "prox_newton" and res.converged and res.kkt_violation <= TOL
    Xr = X.astype(np.float32).astype(np.float64) if fmt == "csr32" else X
    sol = ref.solve(Xr, y, qid if group_by_query else None, o, penalty=penalty, alpha=0.5, binary=binary)
    assert res.objective == pytest.approx(sol.objective, rel=1e-6)
    assert res.objective >= sol.objective - 1e-7 * abs(sol.objective)
    assert res.history["objective"].shape == (res.n_iter,)


@pytest.mark.parametrize("solver, penalty, gram_budget", [
    ("prox_newton", "l1", 1500.0), ("prox_newton", "elasticnet", 1500.0), ("auto", "l1", 1500.0),
    ("prox_newton", "l1", 0.0), ("owlqn", "l1", 1500.0), ("owlqn", "elasticnet", 1500.0), ("auto", "l1", 0.0),
    ("newton", "l2", 1500.0), ("lbfgs", "l2", 1500.0), ("auto", "l2", 1500.0)])
def test_log_domain_solvers_on_margins_spanning_1e4(solver, penalty, gram_budget):
    """Offsets of 0, 5e3 and 1e4 inside each query: the log-domain solvers reach the reference optimum. Proximal Newton needs its damping
    here: the loss is nearly piecewise linear at such margins, so the undamped model overshoots."""
    X, y, qid, _ = make_problem(seed=50)
    o = np.random.default_rng(1).choice([0.0, 5e3, 1e4], size=y.size) * (y > 0)
    res = solve(X, y, qid, o, penalty=penalty, alpha=0.5, solver=solver, tol=TOL, options=Options(gram_budget=gram_budget))
    assert res.converged and res.gap <= TOL * max(1.0, abs(res.objective))
    sol = ref.solve(X, y, qid, o, penalty=penalty, alpha=0.5)
    assert res.objective == pytest.approx(sol.objective, rel=1e-8)



@pytest.mark.parametrize("penalty", ["l1", "elasticnet"])
def test_auto_hands_an_unconverged_owlqn_to_prox_newton(penalty, monkeypatch):
    """solver="auto" on data too large for the formed model: OWL-QN for AUTO_OWLQN_ITERATIONS iterations (3 here),
    then proximal Newton from its point; both counted, the optimum is the reference's."""
    import cyrank.domination.solver as dsolver
    monkeypatch.setattr(dsolver, "AUTO_OWLQN_ITERATIONS", 3)
    X, y, qid, o = make_problem(seed=51, density=0.6, offset=True)
    res = solve(sp.csr_matrix(X), y, qid, o, penalty=penalty, alpha=0.5, tol=TOL, options=Options(gram_budget=0.0))
    assert res.solver == "owlqn+prox_newton" and res.converged and res.kkt_violation <= TOL and res.n_iter > 3
    assert res.history["objective"].shape == (res.n_iter,)
    sol = ref.solve(X, y, qid, o, penalty=penalty, alpha=0.5)
    assert res.objective == pytest.approx(sol.objective, rel=1e-8)


@pytest.mark.parametrize("penalty", ["l2", "elasticnet", "l1"])
@pytest.mark.parametrize("sparse", [False, True])
def test_cd_on_margins_spanning_1e4(penalty, sparse):
    """CD keeps a query whose margins span more than 500 in the log domain: its gradients, read from the
    incremental state, equal the log-domain Newton products' at any span, and it reaches the reference optimum."""
    X, y, qid, _ = make_problem(seed=50)
    o = np.random.default_rng(1).choice([0.0, 5e3, 1e4], size=y.size) * (y > 0)
    Xf = sp.csc_matrix(X) if sparse else X
    layout, _ = _layout(y, qid, o, binary=False, group_by_query=True)
    cols = _columns(Xf, layout.rows)
    problem = domination_loss(Xf, y, qid, o)  # the public loss: the same layout, the log-domain Newton products
    rng = np.random.default_rng(2)
    for scale in (1.0, 3000.0):
        w = rng.normal(size=X.shape[1]) * scale
        problem.fun(w)
        np.testing.assert_allclose(_cd.gradient(*cols, layout, w), problem.grad(w), rtol=1e-12, atol=1e-10)
    inc, fresh = _cd.incremental_gradient(*cols, layout, np.zeros(X.shape[1]),
                                          rng.integers(0, X.shape[1], 30).astype(np.intp), rng.normal(size=30) * 300)
    np.testing.assert_allclose(inc, fresh, rtol=1e-10, atol=1e-9)
    sol = ref.solve(X, y, qid, o, penalty=penalty, alpha=0.5)
    # l1: the optimum has |w| ~ 3000 on a nearly linear loss, which CD's bounded steps approach only linearly
    # (1e-4 relative after 1e5 sweeps); started from proximal Newton's solution it confirms the optimum
    start = solve(Xf, y, qid, o, penalty=penalty, alpha=0.5, solver="prox_newton", tol=TOL).coef if penalty == "l1" \
        else None
    res = solve(Xf, y, qid, o, penalty=penalty, alpha=0.5, solver="cd", tol=TOL, max_iter=100000, coef_init=start)
    assert res.converged and res.kkt_violation <= TOL
    assert res.objective == pytest.approx(sol.objective, rel=1e-8)
    h = res.history["objective"]
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))
