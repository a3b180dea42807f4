"""RankSVM against explicit pair enumeration, finite differences and the cvxpy reference (reference.ranksvm).

Problems are small and seeded (a few hundred pairs), with shuffled non-contiguous query ids, ties in the labels,
a one-document query and a query with a single label level.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from cyrank.datasets import make_ranking
from cyrank.io import load_model, save_model
from cyrank.metrics import ndcg_score
from cyrank.ranksvm import RankSVM
from cyrank.ranksvm.kernels import StoredKernel
from cyrank.ranksvm.problems import KernelSquaredHinge, LinearSquaredHinge, make_layout
from reference import ranksvm as ref

TIGHT = 1e-9          # squared hinge: relative gradient norm
HINGE_TOL = 1e-7      # hinge: cutting-plane epsilon (mean hinge loss per pair)


def make_problem(seed=0, n=40, d=5, n_queries=4, levels=3):
    """Noisy graded labels in shuffled queries, plus a one-document query and a single-level query."""
    X, y, qid = make_ranking(n_queries, n, d, levels, binning="global", shuffle=True, random_state=seed)
    qid = qid * 5 + 2
    qid[0] = 999                                         # a one-document query
    qid[1:4] = 777
    y[1:4] = 1.0                                         # a query with one label level
    return X, y, qid


def as_variant(X, sparse, dtype):
    X = X.astype(dtype)
    if sparse:
        X = X * (np.abs(X) > 0.8)   # 42% non-zeros: stays sparse in the kernels (see _linear_parts)
        return sp.csr_matrix(X)
    return X


def explicit(X, y, qid, w, C, squared=True):
    """Objective, gradient and generalised Hessian of the linear problem by enumerating the pairs."""
    X = X.toarray() if sp.issparse(X) else X
    X = X.astype(np.float64)
    I, J = ref.preference_pairs(y, qid)
    D = X[I] - X[J]
    t = 1.0 - D @ w
    act = t > 0
    if squared:
        obj = 0.5 * w @ w + C * np.sum(t[act] ** 2)
        grad = w - 2 * C * D[act].T @ t[act]
        H = np.eye(len(w)) + 2 * C * D[act].T @ D[act]
        return obj, grad, H
    obj = 0.5 * w @ w + C * np.sum(t[act])
    return obj, w - C * D[act].sum(axis=0), None


# -------------------------------------------------------------------------------------- loss, gradient, Hv
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_fun_grad_hv_equal_pair_enumeration(sparse, dtype):
    X, y, qid = make_problem(seed=1, n=60, d=6, levels=4)
    X = as_variant(X, sparse, dtype)
    layout, n_pairs = make_layout(y, qid)
    assert n_pairs == len(ref.preference_pairs(y, qid)[0])
    prob = LinearSquaredHinge(X, layout, C=0.8)
    rng = np.random.default_rng(2)
    for scale in (0.0, 0.3, 1.0):
        w = rng.normal(size=X.shape[1]) * scale
        obj, grad, H = explicit(X, y, qid, w, 0.8)
        assert prob.fun(w) == pytest.approx(obj, rel=1e-12)
        np.testing.assert_allclose(prob.grad(w), grad, rtol=1e-10, atol=1e-10)
        v = rng.normal(size=X.shape[1])
        np.testing.assert_allclose(prob.hess_vec(v), H @ v, rtol=1e-10, atol=1e-10)
    # hinge loss and its subgradient
    loss, n_active = prob.loss(w, squared=False)
    obj_h, grad_h, _ = explicit(X, y, qid, w, 0.8, squared=False)
    assert 0.5 * w @ w + 0.8 * loss == pytest.approx(obj_h, rel=1e-12)
    I, J = ref.preference_pairs(y, qid)
    Xd = X.toarray() if sp.issparse(X) else X
    assert n_active == np.sum(1.0 - (Xd[I] - Xd[J]).astype(float) @ w > 0)


def test_hv_equals_finite_differences_of_the_gradient():
    X, y, qid = make_problem(seed=3, n=50, d=4, levels=5)
    layout, _ = make_layout(y, qid)
    prob = LinearSquaredHinge(X, layout, C=2.0)
    w = np.random.default_rng(4).normal(size=4) * 0.5
    prob.fun(w)
    g0 = prob.grad(w).copy()
    Hv = None
    for k in range(4):
        v = np.eye(4)[k]
        prob.fun(w)
        prob.grad(w)
        Hv = prob.hess_vec(v)
        h = 1e-7   # small enough that no pair crosses its margin
        prob.fun(w + h * v)
        g1 = prob.grad(w + h * v)
        np.testing.assert_allclose((g1 - g0) / h, Hv, rtol=1e-6, atol=1e-6)


def test_kernel_fun_grad_hv_equal_pair_enumeration():
    X, y, qid = make_problem(seed=5, n=45, levels=4)
    Q = ref.kernel_matrix(X, X, "rbf", gamma=0.2)
    layout, _ = make_layout(y, qid)
    rows = layout.rows
    from cyrank.ranksvm._pairloss import Layout
    klay = Layout(np.arange(rows.size), layout.offsets, layout.rank, layout.n_levels, rows.size)
    Qs = Q[np.ix_(rows, rows)]
    prob = KernelSquaredHinge(StoredKernel(Qs), klay, C=1.3)
    rng = np.random.default_rng(6)
    beta = rng.normal(size=rows.size) * 0.3
    # explicit: f = Q beta, pairs in the sorted layout
    ys, qs = y[rows], qid[rows]
    I, J = ref.preference_pairs(ys, qs)
    f = Qs @ beta
    t = 1 - f[I] + f[J]
    act = t > 0
    A = np.zeros((act.sum(), rows.size))
    A[np.arange(act.sum()), I[act]] = 1
    A[np.arange(act.sum()), J[act]] = -1
    obj = 0.5 * beta @ f + 1.3 * np.sum(t[act] ** 2)
    grad = f + 2 * 1.3 * Qs @ (A.T @ (A @ f - 1))            # (B.2)
    v = rng.normal(size=rows.size)
    Hv = Qs @ v + 2 * 1.3 * Qs @ (A.T @ (A @ (Qs @ v)))       # (B.3)
    assert prob.fun(beta, Qs @ beta) == pytest.approx(obj, rel=1e-12)
    # representatives in the Q inner product: Q times them is the usual gradient / Hessian product
    np.testing.assert_allclose(Qs @ prob.grad(beta), grad, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(Qs @ prob.hess_vec(v, Qs @ v), Hv, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------------------------ reference optimum
LINEAR_VARIANTS = [(s, dt) for s in (False, True) for dt in (np.float64, np.float32)]


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("sparse, dtype", LINEAR_VARIANTS)
def test_linear_matches_reference(loss, sparse, dtype):
    X, y, qid = make_problem(seed=7)
    X = as_variant(X, sparse, dtype)
    C = 0.5
    tol = TIGHT if loss == "squared_hinge" else HINGE_TOL
    est = RankSVM(C=C, loss=loss, tol=tol, max_iter=2000).fit(X, y, qid)
    sol = ref.solve(X, y, qid, C=C, loss=loss)
    assert est.converged_
    rel = 1e-6 if loss == "squared_hinge" else 1e-4
    assert est.objective_ == pytest.approx(sol.objective, rel=rel)
    # objective_ is the exact objective at coef_, and coef_ is the optimum
    assert est.objective_ == pytest.approx(ref.objective(X, y, qid, est.coef_, C=C, loss=loss), rel=1e-12)
    np.testing.assert_allclose(est.coef_, sol["w"], atol=1e-3 if loss == "hinge" else 1e-5)
    if loss == "hinge":
        # the certificate: objective_ - optimum <= duality_gap_
        assert -1e-7 * sol.objective <= est.objective_ - sol.objective <= est.duality_gap_ + 1e-7 * sol.objective
        assert est.duality_gap_ <= HINGE_TOL * C * est.n_pairs_ * 1.01
        h = est.history_  # per cutting plane: bounds on the optimum from both sides
        assert h["objective"].size == est.n_iter_  # one record per separation
        assert np.all(h["lower_bound"] <= sol.objective * (1 + 1e-7)) and np.all(np.diff(h["lower_bound"]) >= 0)
        assert np.all(h["objective"] >= sol.objective * (1 - 1e-7))
        best = np.minimum.accumulate(h["objective"])  # the gap certifies the best point so far (in-out's centre)
        assert np.all(h["gap"] >= best - sol.objective - 1e-7 * sol.objective)
    else:
        assert est.gap_ <= TIGHT * max(1.0, abs(est.objective_))


KERNELS = [
    ("rbf", {"gamma": 0.3}),
    ("rbf", {"gamma": "scale"}),
    ("poly", {"gamma": 0.4, "degree": 3, "coef0": 1.0}),
    ("poly", {"gamma": "auto", "degree": 2, "coef0": 0.5}),
    ("precomputed", {}),
]


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("kernel, params", KERNELS)
def test_kernel_matches_reference(kernel, params, loss):
    X, y, qid = make_problem(seed=8, n=36)
    if kernel == "precomputed":
        F = ref.kernel_matrix(X, X, "rbf", gamma=0.5)
        X = F
    C = 2.0
    tol = TIGHT if loss == "squared_hinge" else HINGE_TOL
    est = RankSVM(C=C, loss=loss, kernel=kernel, tol=tol, max_iter=3000, **params).fit(X, y, qid)
    sol = ref.solve(X, y, qid, C=C, loss=loss, kernel=kernel, **params)
    assert est.converged_
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6 if loss == "squared_hinge" else 1e-4)
    # objective_ is the exact objective of (beta_, retained rows), computed independently
    beta = np.zeros(X.shape[0])
    beta[est.support_] = est.beta_
    assert est.objective_ == pytest.approx(
        ref.objective(X, y, qid, beta=beta, C=C, loss=loss, kernel=kernel, **params), rel=1e-10)
    # predictions on the training rows are the training scores Q beta
    Q = X if kernel == "precomputed" else ref.kernel_matrix(
        X, X, kernel, ref.resolve_gamma(params.get("gamma"), X), params.get("degree", 3), params.get("coef0", 1.0))
    np.testing.assert_allclose(est.decision_function(X), Q @ beta, rtol=1e-10, atol=1e-10)


def test_sparse_and_float32_input_for_a_kernel():
    X, y, qid = make_problem(seed=9, n=30)
    Xs = sp.csr_matrix((X * (np.abs(X) > 0.5)).astype(np.float32))
    est = RankSVM(C=1.0, kernel="rbf", gamma=0.25, tol=TIGHT).fit(Xs, y, qid)
    sol = ref.solve(Xs, y, qid, C=1.0, kernel="rbf", gamma=0.25)
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    np.testing.assert_allclose(est.decision_function(Xs), est.decision_function(Xs.toarray().astype(np.float64)),
                               rtol=1e-12)


def test_blockwise_kernel_equals_stored_kernel():
    X, y, qid = make_problem(seed=10, n=60)
    stored = RankSVM(kernel="rbf", gamma=0.3, tol=1e-8).fit(X, y, qid)
    row_mb = X.shape[0] * 8 / 2**20
    blocked = RankSVM(kernel="rbf", gamma=0.3, tol=1e-8, kernel_memory_mb=7.5 * row_mb).fit(X, y, qid)
    assert blocked.objective_ == pytest.approx(stored.objective_, rel=1e-12)
    np.testing.assert_allclose(blocked.decision_function(X), stored.decision_function(X), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="kernel_memory_mb"):
        RankSVM(kernel="rbf", kernel_memory_mb=0.5 * row_mb).fit(X, y, qid)


def test_kernel_matrix_larger_than_free_memory_is_refused_before_allocating(monkeypatch):
    import cyrank._memory as memory_mod
    import cyrank.ranksvm.kernels as est_mod

    X, y, qid = make_problem(seed=23, n=60)
    monkeypatch.setattr(memory_mod, "available_memory", lambda: 1000)
    allocated = []
    monkeypatch.setattr(est_mod, "StoredKernel", lambda Q: allocated.append(Q))
    with pytest.raises(MemoryError, match="lower kernel_memory_mb"):
        RankSVM(kernel="rbf").fit(X, y, qid)
    assert not allocated


def test_restricted_dual_qp_matches_cvxpy():
    """The SMO solver of the cutting-plane restricted problem (cyrank.optim._simplex_qp) against cvxpy."""
    import cvxpy as cp

    from cyrank.optim._simplex_qp import solve_simplex_qp
    from reference import solve_problem

    rng = np.random.default_rng(20)
    for K, C in ((1, 0.5), (6, 3.0), (25, 40.0)):
        P = rng.normal(size=(K, 4)) / 3                        # rank-deficient Gram for K > 4
        G = P @ P.T
        delta = rng.random(K)
        lam = np.zeros(K)
        steps, gap, dual = solve_simplex_qp(G, delta, C, lam, 1e-12, 10**6)
        a = cp.Variable(K)
        sol = solve_problem(cp.Problem(cp.Maximize(a @ delta - 0.5 * cp.sum_squares(P.T @ a)),
                                       [a >= 0, cp.sum(a) <= C]), {"a": a})
        assert gap <= 1e-12 and np.all(lam >= 0) and lam.sum() <= 1 + 1e-12
        assert dual == pytest.approx(sol.objective, rel=1e-8, abs=1e-10)
        # primal value at w = C P'lam equals the dual value (strong duality at the optimum)
        w = C * P.T @ lam
        primal = 0.5 * w @ w + C * max(0.0, np.max(delta - P @ w))
        assert primal == pytest.approx(dual, rel=1e-8, abs=1e-10)


def test_one_query_of_a_hundred_thousand_documents():
    """5e9 pairs (int64 counts) through the estimator: the objective at w = 0 is C |P| exactly."""
    rng = np.random.default_rng(21)
    n = 100_000
    X = rng.random((n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=n)      # distinct real labels: n levels
    layout, n_pairs = make_layout(y, None)
    assert n_pairs == n * (n - 1) // 2 > 2**32
    prob = LinearSquaredHinge(X, layout, C=1e-6)
    assert prob.fun(np.zeros(3)) == 1e-6 * n_pairs
    est = RankSVM(C=1e-6).fit(X, y)
    assert est.converged_ and est.n_pairs_ == n_pairs and est.objective_ < 1e-6 * n_pairs
    assert np.corrcoef(est.coef_, [1.0, -2.0, 0.5])[0, 1] > 0.99


# ------------------------------------------------------------------------------------------ behaviour
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("kernel", ["linear", "rbf", "precomputed"])
def test_no_query_with_two_levels_warns_and_fits_the_zero_model(tmp_path, loss, kernel):
    """As DominationRank (and the data conventions): a RankingDataWarning, and the exact optimum of the objective
    that is left, the regulariser alone: every score 0."""
    from cyrank import RankingDataWarning

    X, _, qid = make_problem(seed=11)
    y = np.round(qid / 10.0)      # constant inside every query
    Xk = X @ X.T if kernel == "precomputed" else X
    with pytest.warns(RankingDataWarning, match="no query has two different labels"):
        model = RankSVM(kernel=kernel, loss=loss).fit(Xk, y, qid)
    assert model.objective_ == 0.0 and model.converged_ and model.n_pairs_ == 0
    assert np.array_equal(model.predict(Xk), np.zeros(X.shape[0]))
    save_model(model, tmp_path / "m.npz")
    assert np.array_equal(load_model(tmp_path / "m.npz").predict(Xk), np.zeros(X.shape[0]))


def test_row_order_and_single_level_queries_do_not_matter():
    X, y, qid = make_problem(seed=12, n=50)
    a = RankSVM(C=0.7, tol=1e-10).fit(X, y, qid)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    b = RankSVM(C=0.7, tol=1e-10).fit(X[perm], y[perm], qid[perm])
    extra = np.random.default_rng(1).normal(size=(5, X.shape[1]))    # a new single-level query
    c = RankSVM(C=0.7, tol=1e-10).fit(np.r_[X, extra], np.r_[y, np.full(5, 2.0)], np.r_[qid, np.full(5, -4)])
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12) == c.objective_
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
    np.testing.assert_allclose(a.coef_, c.coef_, atol=1e-9)
    assert a.n_pairs_ == len(ref.preference_pairs(y, qid)[0])


def test_sparse_input_dense_enough_is_solved_densely_with_the_same_result():
    from cyrank.ranksvm import loss

    X, y, qid = make_problem(seed=22, n=40)
    Xs = sp.csr_matrix(X)
    # the public loss object's kernel arrays: dense for Xs (every entry stored), sparse for a sparse variant
    assert loss(Xs, y, qid).parts[3] and not loss(as_variant(X, True, np.float64), y, qid).parts[3]
    a = RankSVM(tol=1e-10).fit(X, y, qid)
    b = RankSVM(tol=1e-10).fit(Xs, y, qid)
    assert a.objective_ == b.objective_
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_qid_none_is_one_query():
    X, y, _ = make_problem(seed=13, n=30)
    a = RankSVM(tol=1e-9).fit(X, y)
    b = RankSVM(tol=1e-9).fit(X, y, np.zeros(30, int))
    assert a.objective_ == b.objective_ and a.n_pairs_ == len(ref.preference_pairs(y)[0])


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_convergence_warning_at_max_iter(loss):
    X, y, qid = make_problem(seed=14, n=60)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        est = RankSVM(C=10.0, loss=loss, tol=1e-12, max_iter=1).fit(X, y, qid)
    assert not est.converged_ and est.n_iter_ == 1
    # the reported objective is still the exact objective at the returned model
    assert est.objective_ == pytest.approx(ref.objective(X, y, qid, est.coef_, C=10.0, loss=loss), rel=1e-12)


def test_default_tolerance_is_relative_gradient():
    X, y, qid = make_problem(seed=15, n=80)
    est = RankSVM(C=1.0).fit(X, y, qid)
    assert est.converged_ and est.grad_norm_ <= 1e-3 and est.n_iter_ >= 1 and est.n_cg_iter_ >= est.n_iter_


def test_precomputed_predict_uses_test_kernel_columns():
    X, y, qid = make_problem(seed=16, n=40)
    Xt = np.random.default_rng(2).normal(size=(7, X.shape[1]))
    rbf = RankSVM(kernel="rbf", gamma=0.3, tol=1e-9).fit(X, y, qid)
    pre = RankSVM(kernel="precomputed", tol=1e-9).fit(ref.kernel_matrix(X, X, "rbf", 0.3), y, qid)
    np.testing.assert_allclose(pre.decision_function(ref.kernel_matrix(Xt, X, "rbf", 0.3)),
                               rbf.decision_function(Xt), rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="square"):
        RankSVM(kernel="precomputed").fit(X, y, qid)
    K = ref.kernel_matrix(X, X, "rbf", 0.3)
    K[0, 1] += 1e-3
    with pytest.raises(ValueError, match="not symmetric"):
        RankSVM(kernel="precomputed").fit(K, y, qid)
    with pytest.raises(ValueError, match="one column per training row"):
        pre.decision_function(Xt)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_predict_checks_the_number_of_features(kernel):
    X, y, qid = make_problem(seed=19, n=20)
    est = RankSVM(kernel=kernel).fit(X, y, qid)
    assert est.n_features_in_ == X.shape[1]
    for method in (est.predict, est.decision_function, lambda Z: est.score(Z, y, qid)):
        with pytest.raises(ValueError, match="X has 4 features"):
            method(X[:, :4])


@pytest.mark.parametrize("params, match", [
    ({"C": 0.0}, "C must be"), ({"C": -1.0}, "C must be"), ({"loss": "l1"}, "loss must be"),
    ({"kernel": "sigmoid"}, "kernel must be"), ({"gamma": "big"}, "gamma must be"), ({"gamma": -1.0}, "gamma"),
    ({"degree": 0}, "degree"), ({"tol": 0.0}, "tol"), ({"max_iter": 0}, "max_iter"),
    ({"kernel_memory_mb": 0}, "kernel_memory_mb"), ({"C": float("nan")}, "C must be finite"),
])
def test_bad_parameters(params, match):
    X, y, qid = make_problem(seed=17, n=20)
    with pytest.raises((ValueError, TypeError), match=match):
        RankSVM(**params).fit(X, y, qid)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "precomputed"])
def test_save_load_and_pickle_roundtrip(tmp_path, kernel):
    import pickle

    X, y, qid = make_problem(seed=18, n=30)
    Xf = ref.kernel_matrix(X, X, "rbf", 0.2) if kernel == "precomputed" else X
    est = RankSVM(C=0.3, kernel=kernel, loss="hinge", tol=1e-4).fit(Xf, y, qid)
    path = tmp_path / "m.npz"
    save_model(est, path)
    for back in (load_model(path), pickle.loads(pickle.dumps(est))):
        assert back.get_params() == est.get_params()
        np.testing.assert_array_equal(back.predict(Xf), est.predict(Xf))
        assert back.duality_gap_ == est.duality_gap_


def test_learns_the_embedded_real_data():
    from cyrank.datasets import load_lightgbm_rank

    Xtr, ytr, qtr = load_lightgbm_rank("train")
    Xte, yte, qte = load_lightgbm_rank("test")
    est = RankSVM(C=0.01).fit(Xtr, ytr, qtr)
    rand = ndcg_score(yte, np.random.default_rng(0).random(len(yte)), qte, k=10)
    assert est.converged_ and est.score(Xte, yte, qte) > rand + 0.1


def test_clone_keeps_parameters():
    est = RankSVM(C=3.0, loss="hinge", kernel="poly", gamma=0.1, degree=2, coef0=0.0, tol=1e-5, max_iter=7,
                  kernel_memory_mb=10, verbose=0)
    assert clone(est).get_params() == est.get_params()


@pytest.mark.parametrize("stabilization", [0.0, 0.95])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_hinge_stopping_exactly_at_max_iter_is_converged(kernel, stabilization):
    """A fit whose last allowed separation meets the stopping rule is converged, with the same model as the
    unbounded fit; one separation fewer is not (Kelley's method and the in-out default)."""
    from cyrank.ranksvm import Options, solve

    X, y, qid = make_problem(seed=7)
    opts = Options(stabilization=stabilization)
    free = solve(X, y, qid, C=0.5, loss="hinge", kernel=kernel, tol=1e-4, max_iter=2000, options=opts)
    optimum = ref.solve(X, y, qid, C=0.5, loss="hinge", kernel=kernel).objective  # both engines certify it
    assert optimum - 1e-7 * optimum <= free.objective <= optimum + free.duality_gap * (1 + 1e-9) + 1e-9
    tight = solve(X, y, qid, C=0.5, loss="hinge", kernel=kernel, tol=1e-4, max_iter=free.n_iter, options=opts)
    assert free.converged and tight.converged and not tight.message
    assert tight.objective == free.objective and tight.duality_gap == free.duality_gap
    short = solve(X, y, qid, C=0.5, loss="hinge", kernel=kernel, tol=1e-4, max_iter=free.n_iter - 1, options=opts)
    assert not short.converged and short.message


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("sparse", [False, True])
def test_warm_start_along_C_reaches_each_reference_optimum(loss, sparse):
    """warm_start=True: each fit of a C path starts from the previous coef_ and still reaches the exact optimum
    for its own C, under the same stopping rule; a warm start at the optimum stops at once."""
    X, y, qid = make_problem(seed=7)
    X = as_variant(X, sparse, np.float64)
    tol = TIGHT if loss == "squared_hinge" else HINGE_TOL
    est = RankSVM(loss=loss, tol=tol, max_iter=2000, warm_start=True)
    for C in (0.05, 0.5, 2.0):
        est.set_params(C=C).fit(X, y, qid)
        sol = ref.solve(X, y, qid, C=C, loss=loss)
        assert est.converged_
        assert est.objective_ == pytest.approx(sol.objective, rel=1e-6 if loss == "squared_hinge" else 1e-4)
    cold = RankSVM(C=2.0, loss=loss, tol=tol, max_iter=2000).fit(X, y, qid)
    assert est.objective_ == pytest.approx(cold.objective_, rel=1e-6 if loss == "squared_hinge" else 1e-4)
    if loss == "squared_hinge":  # the same certified gap: already met at the optimum
        again = est.fit(X, y, qid)
        assert again.n_iter_ == 0 and again.gap_ <= tol * max(1.0, abs(again.objective_))
    with pytest.raises(ValueError, match="linear models only"):
        from cyrank.ranksvm import solve
        solve(X, y, qid, kernel="rbf", coef_init=np.zeros(X.shape[1]))


@pytest.mark.parametrize("stabilization", [0.0, 0.5, 0.95])
@pytest.mark.parametrize("C", [0.02, 0.5, 20.0])
@pytest.mark.parametrize("sparse, dtype", LINEAR_VARIANTS)
def test_hinge_engines_certify_the_reference_optimum(stabilization, C, sparse, dtype):
    """Kelley's and the in-out cutting planes, over two decades of C and every data variant: the objective is
    within 1e-4 of cvxpy's optimum and duality_gap_ is a true bound on objective - optimum."""
    from cyrank.ranksvm import Options, solve

    X, y, qid = make_problem(seed=9)
    Xv = as_variant(X, sparse, dtype)
    res = solve(Xv, y, qid, C=C, loss="hinge", tol=HINGE_TOL, max_iter=5000, options=Options(stabilization=stabilization))
    dense = Xv.toarray() if sparse else Xv
    sol = ref.solve(np.asarray(dense, dtype=np.float64), y, qid, C=C, loss="hinge")
    assert res.converged
    assert res.objective == pytest.approx(sol.objective, rel=1e-4)
    assert -1e-7 * sol.objective <= res.objective - sol.objective <= res.duality_gap + 1e-7 * sol.objective
    assert res.duality_gap <= HINGE_TOL * C * res.n_pairs * (1 + 1e-9)
