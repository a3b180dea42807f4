"""DominationRank with sample_weight (issue 29): the objective sum_i s_i l_i + penalty, s_i weighing the loss term
of the dominating row i (Stevens, MIT thesis 2010, section 2, with a weight per term).

Every solver against the weighted cvxpy reference; the kernels (CD auxiliaries, curvature bounds, Newton products,
the matrix-free prox-Newton model) against brute force; the invariances (None == ones, row order, qid labels,
scale); what integer and zero weights equal (a query repeated, a top-label row repeated or deleted) and why a
general row repeated is not a weight; the errors fit raises.
"""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from cyrank.datasets import make_ranking
from cyrank.domination import DominationRank, Options, _cd, _model_cd, loss, objective, path, solve
from cyrank.domination.solver import _columns, _layout, _NewtonProblem, _rows_of
from reference import domination as ref

TOL = 1e-9
SOLVERS = [("cd", "l2"), ("cd", "l1"), ("cd", "elasticnet"), ("newton", "l2"), ("lbfgs", "l2"), ("auto", "l2"),
           ("prox_newton", "l1"), ("prox_newton", "elasticnet"), ("owlqn", "l1"), ("owlqn", "elasticnet"),
           ("auto", "l1")]
ALPHA = {"l2": 0.5, "l1": 1.0, "elasticnet": 1.0}


def make_problem(seed=0, n=48, d=5, n_queries=4, levels=4, density=0.6, offset=False):
    """Noisy graded labels with ties in shuffled queries, and weights in [0, 3) with some 0 (also on rows that
    dominate others)."""
    rng = np.random.default_rng(seed)
    X, y, qid = make_ranking(n_queries, n, d, levels, density=density, noise=1.5, binning="global", shuffle=True,
                             random_state=rng)
    o = rng.uniform(0.0, 1.0, size=n) * (y > 0) if offset else None
    sw = rng.uniform(0.0, 3.0, size=n)
    sw[rng.choice(n, n // 8, replace=False)] = 0.0
    return X, y, qid * 5 + 1, o, sw


def fit(X, y, qid, o, sw, **params):
    """The fitted estimator (tol TOL unless given)."""
    return DominationRank(**{"tol": TOL, "max_iter": 5000, **params}).fit(X, y, qid, o, sample_weight=sw)


_REF = {}


def reference(key, X, y, qid, o, sw, **params):
    if key not in _REF:
        _REF[key] = ref.solve(X, y, qid, o, sample_weight=sw, **params)
    return _REF[key]


def brute_terms(X, y, qid, o, w, *, binary=False):
    """l_i for every row (0 when it dominates nothing), plain loops."""
    labels = (y > 0).astype(float) if binary else y
    m = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64) @ w - (0.0 if o is None else o)
    out = np.zeros(y.shape[0])
    for i in range(y.shape[0]):
        D = np.flatnonzero((qid == qid[i]) & (labels < labels[i]))
        if D.size:
            t = np.r_[0.0, m[D] - m[i]]
            out[i] = t.max() + np.log(np.exp(t - t.max()).sum())
    return out


# ---------------------------------------------------------------------------------------------------------
# Every solver against the weighted reference
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver, penalty", SOLVERS)
@pytest.mark.parametrize("fmt", ["dense", "csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_optimum_matches_reference(solver, penalty, fmt, dtype):
    X, y, qid, o, sw = make_problem(seed=11)
    X = X.astype(dtype)
    Xf = {"dense": X, "csr": sp.csr_matrix(X), "csc": sp.csc_matrix(X)}[fmt]
    est = fit(Xf, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], l1_ratio=0.4, solver=solver)
    sol = reference((penalty, dtype), X.astype(np.float64), y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty],
                    l1_ratio=0.4)
    assert est.converged_
    if est.solver_ in ("newton", "lbfgs+newton"):  # Newton stops on the gap alone
        assert est.gap_ <= TOL * max(1.0, abs(est.objective_))
    else:
        assert est.kkt_violation_ <= TOL
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    assert est.objective_ >= sol.objective - 1e-7 * abs(sol.objective)
    np.testing.assert_allclose(est.coef_, sol["w"], atol=2e-3)
    # objective_ is the weighted objective at coef_
    assert est.objective_ == pytest.approx(ref.objective(X, y, qid, o, est.coef_, penalty=penalty,
                                                         alpha=ALPHA[penalty], l1_ratio=0.4, sample_weight=sw),
                                           rel=1e-10)
    h = est.history_["objective"]
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))


@pytest.mark.parametrize("solver, penalty", [("cd", "l2"), ("cd", "l1"), ("newton", "l2"), ("prox_newton", "l1"),
                                             ("owlqn", "elasticnet"), ("auto", "l2")])
@pytest.mark.parametrize("variant", [{"binary": True}, {"group_by_query": False}, {"offset": True}])
@pytest.mark.parametrize("sparse", [False, True])
def test_weighted_variants_match_reference(solver, penalty, variant, sparse):
    X, y, qid, o, sw = make_problem(seed=12, offset=variant.get("offset", False))
    params = {k: v for k, v in variant.items() if k != "offset"}
    est = fit(sp.csr_matrix(X) if sparse else X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty],
              solver=solver, **params)
    sol = reference((penalty, tuple(variant)), X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], **params)
    assert est.converged_
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)


@pytest.mark.parametrize("solver, penalty, options", [
    ("cd", "l1", Options(power_sum_rows=1)),          # every dominating layer keeps weighted power sums
    ("cd", "l2", Options(anderson=False)),
    ("prox_newton", "l1", Options(gram_budget=0.0)),  # the model applied in the scores (_model_cd.pyx)
    ("prox_newton", "elasticnet", Options(gram_budget=0.0)),
])
def test_weighted_solver_options_match_reference(solver, penalty, options):
    X, y, qid, o, sw = make_problem(seed=13, offset=True)
    res = solve(sp.csc_matrix(X), y, qid, o, penalty=penalty, alpha=ALPHA[penalty], solver=solver, tol=TOL,
                max_iter=5000, options=options, sample_weight=sw)
    sol = reference((penalty, "options"), X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty])
    assert res.converged and res.objective == pytest.approx(sol.objective, rel=1e-6)


@pytest.mark.parametrize("penalty", ["l2", "elasticnet"])
def test_weighted_cd_with_the_thesis_bound_matches_reference(penalty):
    X, y, qid, o, sw = make_problem(seed=13, offset=True)
    est = fit(sp.csc_matrix(X), y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], solver="cd",
              hessian_bound="max_sq")
    sol = reference((penalty, "options"), X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty])
    assert est.converged_ and est.objective_ == pytest.approx(sol.objective, rel=1e-6)


@pytest.mark.parametrize("solver", ["cd", "prox_newton"])
def test_weighted_feature_induction_matches_reference(solver):
    X, y, qid, o, sw = make_problem(seed=14, d=8)
    est = fit(X, y, qid, o, sw, penalty="l1", alpha=1.0, solver=solver, feature_induction=2)
    sol = reference(("l1", "induction"), X, y, qid, o, sw, penalty="l1", alpha=1.0)
    assert est.converged_ and est.objective_ == pytest.approx(sol.objective, rel=1e-6)


@pytest.mark.parametrize("solver, penalty", [("cd", "l2"), ("newton", "l2"), ("auto", "l2"), ("lbfgs", "l2"),
                                             ("prox_newton", "l1"), ("owlqn", "l1"), ("cd", "l1"), ("auto", "l1")])
def test_weighted_badly_scaled_columns_match_reference(solver, penalty):
    # columns on scales 1e6 and 1e-3 beside standardised ones, weights spanning 1e-2..1e2
    X, y, qid, o, sw = make_problem(seed=15, n=60, d=5)
    sw = sw * 10.0 ** np.random.default_rng(15).uniform(-2, 2, size=sw.shape[0])
    scale = np.array([1e6, 1e-3, 1.0, 1.0, 1.0])
    Xs = X * scale
    sol = reference((penalty, "scaled"), Xs, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty],
                    feature_scale=scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        est = fit(Xs, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], solver=solver,
                  max_iter=2000 if solver == "lbfgs" else 20000)
    assert np.isfinite(est.coef_).all()
    if solver == "lbfgs" and not est.converged_:
        # plain L-BFGS does not reach tol here (without weights either): it must say so, never claim convergence
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
        assert est.objective_ > sol.objective * (1 + TOL)
        return
    assert est.converged_
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)


def test_weighted_negative_sampling_optimises_the_weighted_sampled_objective():
    # the sampled rows are the lowest layer's, whose weights change nothing: the sampled objective, weighted
    X, y, qid, o, sw = make_problem(seed=16, n=80)
    est = fit(X, y, qid, o, sw, alpha=0.5, neg_sample=0.5, random_state=3)
    kept = est.sample_mask_
    assert not kept.all()
    sol = ref.solve(X[kept], y[kept], qid[kept], None, alpha=0.5, sample_weight=sw[kept])
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)


def test_weighted_path_starts_at_the_exact_alpha_max_and_ends_at_solve():
    X, y, qid, o, sw = make_problem(seed=17)
    res = path(X, y, qid, o, n_alphas=5, eps=0.05, tol=TOL, sample_weight=sw)
    assert res.coefs[:, 0].nnz == 0 and res.alphas[0] == res.alpha_max
    below = solve(X, y, qid, o, penalty="l1", alpha=res.alphas[0] * (1 - 1e-6), tol=TOL, sample_weight=sw)
    above = solve(X, y, qid, o, penalty="l1", alpha=res.alphas[0] * (1 + 1e-6), tol=TOL, sample_weight=sw)
    assert np.any(below.coef != 0) and not np.any(above.coef != 0)
    last = solve(X, y, qid, o, penalty="l1", alpha=res.alphas[-1], tol=TOL, sample_weight=sw)
    assert res.objectives[-1] == pytest.approx(last.objective, rel=1e-8)


def test_weighted_loss_object_and_objective_agree_with_the_reference():
    X, y, qid, o, sw = make_problem(seed=18, offset=True)
    w = np.random.default_rng(18).normal(size=X.shape[1])
    expected = ref.objective(X, y, qid, o, w, alpha=0.0, sample_weight=sw)
    assert loss(X, y, qid, o, sample_weight=sw).fun(w) == pytest.approx(expected, rel=1e-12)
    assert objective(sp.csr_matrix(X), y, qid, o, coef=w, alpha=0.0, sample_weight=sw) == pytest.approx(expected,
                                                                                                         rel=1e-12)
    est = DominationRank(penalty="elasticnet", alpha=0.3, binary=True)
    assert est.objective(X, y, qid, o, coef=w, sample_weight=sw) == pytest.approx(
        ref.objective(X, y, qid, o, w, penalty="elasticnet", alpha=0.3, binary=True, sample_weight=sw), rel=1e-12)


# ---------------------------------------------------------------------------------------------------------
# Kernels against brute force
# ---------------------------------------------------------------------------------------------------------

def brute_margin_hessian(u, labels, qid, sw):
    """Weighted loss, gradient and Hessian in the margins u, as matrices: row t of P is the softmax of u over
    S_i = {i} + D(q, i) for the t-th dominating row i (0 elsewhere); with s the weights of those rows,
    loss = s'(LSE_t - u_i), gradient = P's - sum_t s_t e_i, Hessian = diag(P's) - P' diag(s) P."""
    n = u.shape[0]
    dominating = [i for i in range(n) if np.any((qid == qid[i]) & (labels < labels[i]))]
    P, lse = np.zeros((len(dominating), n)), np.zeros(len(dominating))
    for t, i in enumerate(dominating):
        S = np.flatnonzero((qid == qid[i]) & (labels < labels[i]) | (np.arange(n) == i))
        top = u[S].max()
        lse[t] = top + np.log(np.exp(u[S] - top).sum())
        P[t, S] = np.exp(u[S] - lse[t])
    s = sw[dominating]
    grad = P.T @ s
    np.subtract.at(grad, dominating, s)
    return float(s @ (lse - u[dominating])), grad, np.diag(P.T @ s) - P.T @ (s[:, None] * P)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", [False, True])
def test_weighted_newton_products_and_model_match_brute_force(fmt, dtype, threads):
    X, y, qid, o, sw = make_problem(seed=41, n=70, d=6, n_queries=6, levels=5, offset=True)
    y[:12] = 2.0  # ties
    X = X.astype(dtype)
    layout, _ = _layout(y, qid, o, binary=False, group_by_query=True, sample_weight=sw)
    Xf = X if fmt == "dense" else sp.csr_matrix(X)
    problem = _NewtonProblem(_rows_of(Xf, Options(densify_share=2.0)), layout, 0.0, 6,
                             parallel_min_rows=0 if threads else -1)
    columns = _columns(Xf, layout.rows)
    X64 = X.astype(np.float64)
    rng = np.random.default_rng(42)
    for scale in (0.5, 3.0, 300.0):  # margins up to the thousands
        w = rng.normal(size=6) * scale
        f, grad, hess = brute_margin_hessian(X64 @ w - o, y, qid, sw)
        assert problem.fun(w) == pytest.approx(f, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(problem.grad(w), X64.T @ grad, rtol=1e-10, atol=1e-10)
        H = X64.T @ hess @ X64
        for _ in range(2):
            v = rng.normal(size=6)
            np.testing.assert_allclose(problem.hess_vec(v), H @ v, rtol=1e-8, atol=1e-10)
        # the matrix-free model of proximal Newton (_model_cd.pyx) on a working set
        cols = np.array([0, 2, 3, 5], dtype=np.intp)
        model = _model_cd.Model(layout, problem.state.smooth)
        diag, prod = np.empty(4), np.empty(4)
        v = rng.normal(size=4)
        _model_cd.model_diagonal(*columns, cols, model, diag)
        _model_cd.model_product(*columns, cols, model, v, prod)
        HW = H[np.ix_(cols, cols)]
        np.testing.assert_allclose(diag, np.diag(HW), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(prod, HW @ v, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("power_sum_rows", [0, 1])
@pytest.mark.parametrize("fmt", ["dense", "csc"])
def test_weighted_cd_gradient_bounds_and_incremental_state(power_sum_rows, fmt):
    # the CD kernel's gradient (incremental auxiliaries, power sums, rescaling, wide queries) against the brute
    # force; its curvature bounds hold along every coordinate
    rng = np.random.default_rng(9)
    n = 240
    X = np.c_[rng.normal(size=(n, 4)) * (rng.random((n, 4)) < 0.1), rng.normal(size=(n, 3))]
    y = np.digitize(X @ rng.normal(size=7) + rng.normal(size=n), [-0.5, 0.5, 1.0]).astype(float)
    qid = np.repeat(np.arange(3), n // 3)
    o = rng.uniform(0, 1, n)
    o[:10] += 800.0  # query 0 spans more than SAFE_SPAN: CD's log-domain derivatives (wide_query)
    sw = rng.uniform(0, 4, n) * (rng.random(n) < 0.85)
    layout, _ = _layout(y, qid, o, binary=False, group_by_query=True, sample_weight=sw)
    cols = _columns(X if fmt == "dense" else sp.csc_matrix(X), layout.rows)
    w0 = rng.normal(size=7) * 0.1
    _, grad, _ = brute_margin_hessian(X @ w0 - o, y, qid, sw)
    np.testing.assert_allclose(_cd.gradient(*cols, layout, w0, power_sum_rows), X.T @ grad, rtol=1e-9,
                               atol=1e-9 * np.abs(X.T @ grad).max())
    features = rng.integers(0, 7, size=200).astype(np.intp)
    deltas = rng.normal(size=200) * rng.choice([1e-4, 0.3], size=200)
    deltas[::40] *= 150.0
    inc, exact = _cd.incremental_gradient(*cols, layout, w0, features, deltas, power_sum_rows)
    np.testing.assert_allclose(inc, exact, rtol=1e-9, atol=1e-9 * np.abs(exact).max())
    for kind in (_cd.HESSIAN_POPOVICIU, _cd.HESSIAN_MAX_SQ):
        beta = _cd.hessian_bounds(*cols, layout, kind)
        for w in (w0, rng.normal(size=7)):
            for r in range(7):
                e = np.zeros(7)
                e[r] = 1e-4
                curv = (_cd.gradient(*cols, layout, w + e)[r] - _cd.gradient(*cols, layout, w - e)[r]) / 2e-4
                assert curv <= beta[r] * (1 + 1e-6) + 1e-9


def test_weighted_hessian_bounds_are_the_unweighted_ones_at_unit_weights_and_scale_with_them():
    X, y, qid, o, _ = make_problem(seed=7, density=0.5, offset=True)
    for Xf in (X, sp.csc_matrix(X)):
        for kind in (_cd.HESSIAN_POPOVICIU, _cd.HESSIAN_MAX_SQ):
            plain, _ = _layout(y, qid, o, binary=False, group_by_query=True)
            ones, _ = _layout(y, qid, o, binary=False, group_by_query=True, sample_weight=np.ones(y.shape[0]))
            threes, _ = _layout(y, qid, o, binary=False, group_by_query=True, sample_weight=np.full(y.shape[0], 3.))
            b = [_cd.hessian_bounds(*_columns(Xf, lay.rows), lay, kind) for lay in (plain, ones, threes)]
            np.testing.assert_array_equal(b[0], b[1])
            np.testing.assert_allclose(b[2], 3.0 * b[0], rtol=1e-14)


# ---------------------------------------------------------------------------------------------------------
# Invariances
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver, penalty", SOLVERS)
def test_none_equals_ones(solver, penalty):
    X, y, qid, o, _ = make_problem(seed=20, offset=True)
    a = fit(sp.csr_matrix(X), y, qid, o, None, penalty=penalty, alpha=ALPHA[penalty], solver=solver)
    b = fit(sp.csr_matrix(X), y, qid, o, np.ones(y.shape[0]), penalty=penalty, alpha=ALPHA[penalty], solver=solver)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_


@pytest.mark.parametrize("solver, penalty", [("cd", "l1"), ("auto", "l2"), ("prox_newton", "elasticnet")])
def test_weights_follow_a_row_permutation_and_qid_relabelling(solver, penalty):
    X, y, qid, o, sw = make_problem(seed=21, offset=True)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    relabel = {q: f"q-{(q * 37) % 101}" for q in np.unique(qid)}  # string ids in another order
    a = fit(X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], solver=solver)
    b = fit(X[perm], y[perm], np.array([relabel[q] for q in qid[perm]]), o[perm], sw[perm], penalty=penalty,
            alpha=ALPHA[penalty], solver=solver)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)
    # the weights did not stay in place: unpermuted weights give another optimum
    c = fit(X[perm], y[perm], qid[perm], o[perm], sw, penalty=penalty, alpha=ALPHA[penalty], solver=solver)
    assert abs(c.objective_ - a.objective_) > 1e-3 * abs(a.objective_)


@pytest.mark.parametrize("solver, penalty", [("cd", "l1"), ("newton", "l2"), ("prox_newton", "l1")])
def test_scaling_weights_and_alpha_together_keeps_the_model(solver, penalty):
    # the stopping rules are relative to the weighted gradient at 0: c s with c alpha is the same problem times c
    X, y, qid, o, sw = make_problem(seed=22)
    a = fit(X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], solver=solver, tol=1e-7)
    b = fit(X, y, qid, o, 1e4 * sw, penalty=penalty, alpha=1e4 * ALPHA[penalty], solver=solver, tol=1e-7)
    assert a.converged_ and b.converged_
    assert b.objective_ == pytest.approx(1e4 * a.objective_, rel=1e-6)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-4)
    # a number is that weight on every row: 2 with 2 alpha is twice the unweighted problem
    c = fit(X, y, qid, o, 2.0, penalty=penalty, alpha=2 * ALPHA[penalty], solver=solver, tol=1e-7)
    u = fit(X, y, qid, o, None, penalty=penalty, alpha=ALPHA[penalty], solver=solver, tol=1e-7)
    assert c.objective_ == pytest.approx(2.0 * u.objective_, rel=1e-6)
    np.testing.assert_allclose(c.coef_, u.coef_, atol=1e-4)


# ---------------------------------------------------------------------------------------------------------
# What integer and zero weights equal
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver, penalty", [("cd", "l1"), ("auto", "l2"), ("prox_newton", "elasticnet")])
def test_a_weight_constant_within_a_query_equals_repeating_the_query(solver, penalty):
    X, y, qid, o, _ = make_problem(seed=23, offset=True)
    ids = np.unique(qid)
    times = dict(zip(ids, [1, 3, 0, 2]))  # query -> its weight (0: left out)
    sw = np.array([times[q] for q in qid], dtype=float)
    parts = [(X[qid == q], y[qid == q], np.full((qid == q).sum(), 1000 * q + k), o[qid == q])
             for q in ids for k in range(times[q])]
    Xr, yr, qr, orr = (np.concatenate(p) for p in zip(*parts))
    a = fit(X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], solver=solver)
    b = fit(Xr, yr, qr, orr, None, penalty=penalty, alpha=ALPHA[penalty], solver=solver)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)


def test_integer_weights_on_top_label_rows_equal_repeating_them_and_zero_equals_deleting_them():
    # rows of the top label level of their query are in no D(q, j): repeating one adds its term l_i only
    X, y, qid, o, _ = make_problem(seed=24, offset=True, levels=3)
    top = np.zeros(y.shape[0], bool)
    for q in np.unique(qid):
        top |= (qid == q) & (y == y[qid == q].max())
    rng = np.random.default_rng(24)
    sw = np.ones(y.shape[0])
    sw[top] = rng.integers(0, 4, size=top.sum())
    assert (sw[top] == 0).any() and (sw[top] >= 2).any()
    rep = np.repeat(np.arange(y.shape[0]), sw.astype(int))  # each row sw_i times (0: deleted)
    for solver, penalty in (("cd", "l1"), ("newton", "l2"), ("owlqn", "elasticnet")):
        a = fit(X, y, qid, o, sw, penalty=penalty, alpha=ALPHA[penalty], solver=solver)
        b = fit(X[rep], y[rep], qid[rep], o[rep], None, penalty=penalty, alpha=ALPHA[penalty], solver=solver)
        assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)


def test_zero_weight_removes_exactly_the_rows_own_term():
    # a row of a middle level with weight 0 loses its term l_i and stays in the D(q, j) of the rows above it
    X, y, qid, o, _ = make_problem(seed=25, offset=True, levels=4)
    w = np.random.default_rng(25).normal(size=X.shape[1])
    terms = brute_terms(X, y, qid, o, w)
    middle = np.flatnonzero((terms > 0) & np.array([(y[qid == q] > yi).any() for q, yi in zip(qid, y)]))
    sw = np.ones(y.shape[0])
    sw[middle[:3]] = 0.0
    got = objective(X, y, qid, o, coef=w, alpha=0.0, sample_weight=sw)
    assert got == pytest.approx(terms.sum() - terms[middle[:3]].sum(), rel=1e-12)
    # deleting those rows instead also changes the terms of the rows above them
    keep = np.ones(y.shape[0], bool)
    keep[middle[:3]] = False
    deleted = objective(X[keep], y[keep], qid[keep], o[keep], coef=w, alpha=0.0)
    assert deleted < got - 1e-6


def test_why_repeating_a_general_row_is_not_an_integer_weight():
    # weight 2 on a row j that dominates some rows and is dominated by others doubles its term l_j; a copy of j
    # also enters D(q, i) of every row i above it, raising their terms. So the two objectives differ by exactly
    # those terms' increase: integer weights equal repetition only for rows at the top level of their query.
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    y = np.array([2.0, 1.0, 0.0])
    w = np.array([0.3, -0.2])
    sw = np.array([1.0, 2.0, 1.0])  # weight 2 on the middle row
    weighted = objective(X, y, None, None, coef=w, alpha=0.0, sample_weight=sw)
    repeated = objective(X[[0, 1, 1, 2]], y[[0, 1, 1, 2]], None, None, coef=w, alpha=0.0)
    m = X @ w
    l_top = np.log1p(np.exp(m[1] - m[0]) + np.exp(m[2] - m[0]))
    l_top_twice = np.log1p(2 * np.exp(m[1] - m[0]) + np.exp(m[2] - m[0]))  # the copy is in D(q, top)
    l_mid = np.log1p(np.exp(m[2] - m[1]))
    assert weighted == pytest.approx(l_top + 2 * l_mid, rel=1e-14)
    assert repeated == pytest.approx(l_top_twice + 2 * l_mid, rel=1e-14)
    assert repeated - weighted > 0.1, (
        f"repeating the middle row gives {repeated:.6f}, weight 2 on it gives {weighted:.6f}: the copy also enters "
        f"the top row's term ({l_top:.6f} -> {l_top_twice:.6f}); a weight weighs a row's own term only")


# ---------------------------------------------------------------------------------------------------------
# Errors, pickling, clone
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sw, match", [
    (lambda n: -np.ones(n), "must be >= 0"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "sample_weight"),
    (lambda n: np.ones(n - 1), "sample_weight"),
    (lambda n: np.zeros(n), "0 on every row"),
])
def test_bad_weights_are_refused_by_fit_objective_path_and_loss(sw, match):
    X, y, qid, o, _ = make_problem(seed=26)
    bad = sw(y.shape[0])
    with pytest.raises(ValueError, match=match):
        DominationRank().fit(X, y, qid, sample_weight=bad)
    with pytest.raises(ValueError, match=match):
        DominationRank().objective(X, y, qid, coef=np.zeros(X.shape[1]), sample_weight=bad)
    with pytest.raises(ValueError, match=match):
        path(X, y, qid, sample_weight=bad)
    with pytest.raises(ValueError, match=match):
        loss(X, y, qid, sample_weight=bad)


def test_weights_zero_on_every_dominating_row_are_refused():
    X, y, qid, o, _ = make_problem(seed=27)
    bottom = np.array([yi == y[qid == q].min() for q, yi in zip(qid, y)])
    with pytest.raises(ValueError, match="preferred to another row"):
        DominationRank().fit(X, y, qid, sample_weight=bottom.astype(float))


def test_pickle_and_clone_with_weights():
    X, y, qid, o, sw = make_problem(seed=28)
    est = fit(X, y, qid, o, sw, penalty="l1", alpha=1.0, solver="cd")
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    fresh = clone(est)
    assert not hasattr(fresh, "coef_") and fresh.get_params() == est.get_params()
    np.testing.assert_array_equal(fresh.fit(X, y, qid, o, sample_weight=sw).coef_, est.coef_)


@pytest.mark.parametrize("solver", ["cd", "auto", "prox_newton"])
def test_no_pair_with_weights_warns_and_gives_a_zero_model(solver):
    # no query with two label levels: nothing to weigh (the CD bounds see no layer at all)
    from cyrank import RankingDataWarning

    X = np.random.default_rng(29).normal(size=(6, 3))
    with pytest.warns(RankingDataWarning):
        est = DominationRank(solver=solver, penalty="l1" if solver == "prox_newton" else "l2").fit(
            X, np.ones(6), np.arange(6), sample_weight=np.arange(6.0))
    assert not np.any(est.coef_)


@pytest.mark.parametrize("solver, penalty", [("newton", "l2"), ("lbfgs", "l2"), ("prox_newton", "l1")])
def test_weighted_fit_is_the_same_bits_on_one_and_two_threads(solver, penalty):
    X, y, qid, o, sw = make_problem(seed=30, n=120, offset=True)
    runs = [solve(sp.csr_matrix(X), y, qid, o, penalty=penalty, alpha=ALPHA[penalty], solver=solver, tol=TOL,
                  n_jobs=n_jobs, options=Options(parallel_min_rows=0), sample_weight=sw) for n_jobs in (1, 2)]
    np.testing.assert_array_equal(runs[0].coef, runs[1].coef)
    assert runs[0].objective == runs[1].objective
