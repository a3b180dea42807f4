"""LabelRankBoost with the shared penalties (issue 27): "l1" and "elasticnet" over every parameter (coef and
joint_coef) against cvxpy (reference.labelrank), the public loss object (cyrank.labelrank.loss) and its
additivity over rows, and the regularisation path (cyrank.labelrank.path)."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from cyrank.io import load_model, save_model
from cyrank.labelrank import LabelRankBoost, LabelRankLoss, PreferenceGraphs, loss, objective, path, solve
from cyrank.optim.datafit import Datafit, minimise
from cyrank.optim.penalties import make_penalty

ref = pytest.importorskip("reference.labelrank")

TOL = 1e-10


def _data(seed=0, n=30, d=5, L=4, density=1.0, joint=False):
    """Gaussian X (entries kept with probability ``density``), label grades 0, 0, 1, 1 per instance from a noisy
    linear score (ties inside each grade; not separable), and with ``joint`` two joint features per label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if density < 1.0:
        X *= rng.random((n, d)) < density
    score = X @ rng.normal(size=(d, L)) + 1.5 * rng.normal(size=(n, L))
    J = rng.normal(size=(n, L, 2)) if joint else None
    if J is not None:
        score += J @ rng.normal(size=2)
    R = np.argsort(np.argsort(score, axis=1), axis=1) // 2
    return X, PreferenceGraphs.from_relevance(R), J


def _alpha_max(X, G, J=None, decomposition="domination"):
    """max_r |dL/dw_r| at w = 0 by plain loops over the subgraphs (reference.labelrank.subgraphs): at S = 0 each
    edge of a subgraph of k edges has weight 1 / (1 + k), so dL/dS[i, term e] += 1 / ((1 + k) s_i) and
    dL/dS[i, init e] -= the same; then the gradient is X' dS per label and sum_(i,y) J[i, y] dS[i, y]."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n, L = X.shape[0], G.n_labels
    dS = np.zeros((n, L))
    for i in range(n):
        lo, hi = G.edge_ptr[i], G.edge_ptr[i + 1]
        init, term = G.init[lo:hi], G.term[lo:hi]
        parts = ref.subgraphs(init, term, decomposition)
        for part in parts:
            for e in part:
                dS[i, term[e]] += 1.0 / ((1 + len(part)) * len(parts))
                dS[i, init[e]] -= 1.0 / ((1 + len(part)) * len(parts))
    grad = [(X.T @ dS).ravel()]
    if J is not None:
        grad.append(np.einsum("iyj,iy->j", J, dS))
    return float(np.max(np.abs(np.concatenate(grad))))


def _alpha(share, penalty, l1_ratio, a_max):
    """share * the alpha_max of the penalty (a_max / l1_ratio for "elasticnet", a_max when l1_ratio = 0)."""
    return share * a_max / (l1_ratio if penalty == "elasticnet" and l1_ratio > 0 else 1.0)


def _relative_excess(F, F_ref):
    return (F - F_ref) / max(1.0, abs(F_ref))


def _reference(X, G, J, params, **kw):
    sol = ref.solve(X, G, "domination", joint=J, **params, **kw)
    theta = sol["joint_coef"] if J is not None else None
    return sol, ref.objective(X, G, sol["coef"], joint=J, joint_coef=theta, **params)


# ------------------------------------------------------------------------------------------------ against cvxpy
CASES = [("l1", 0.5, 0.2), ("l1", 0.5, 0.02), ("elasticnet", 0.5, 0.1), ("elasticnet", 0.0, 0.1),
         ("elasticnet", 1.0, 0.2)]


@pytest.mark.parametrize("penalty,l1_ratio,share", CASES)
@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("with_joint", [False, True])
def test_solve_and_estimator_reach_the_cvxpy_optimum(penalty, l1_ratio, share, storage, dtype, with_joint):
    """l1 / elastic net (l1_ratio 0, 1/2, 1) at 1e-6 of cvxpy's optimum (relative objective), the gap within tol,
    exact zeros where the reference is zero (when the optimum is unique), the estimator = solve."""
    X, G, J = _data(seed=1, density=0.7, joint=with_joint)
    X = X.astype(dtype)
    X64 = X.astype(np.float64)  # the values cyrank sees, for the reference
    Xf = sp.csr_matrix(X) if storage == "sparse" else X
    params = dict(penalty=penalty, l1_ratio=l1_ratio,
                  alpha=_alpha(share, penalty, l1_ratio, _alpha_max(X64, G, J)))
    res = solve(Xf, G, joint=J, tol=TOL, **params)
    sol, F_ref = _reference(X64, G, J, params)
    F = ref.objective(X64, G, res.coef, joint=J, joint_coef=res.joint_coef, **params)
    assert _relative_excess(F, F_ref) <= 1e-6
    assert res.converged and res.message == "" and res.solver == "newton"
    assert res.gap is not None and res.gap <= TOL * max(1.0, abs(F))
    assert res.objective == pytest.approx(F, rel=1e-10)
    assert objective(Xf, G, res.coef, joint=J, joint_coef=res.joint_coef, **params) == pytest.approx(F, rel=1e-10)
    w, w_ref = (np.r_[res.coef.ravel(), res.joint_coef], np.r_[sol["coef"].ravel(), sol["joint_coef"]]) \
        if with_joint else (res.coef.ravel(), sol["coef"].ravel())
    if penalty == "l1" and share >= 0.2:
        assert (w == 0).any()  # a strong l1 term: exact zeros
    if penalty == "elasticnet" and l1_ratio < 1:  # strictly convex: one optimum
        assert np.all(np.abs(w_ref[w == 0]) <= 1e-5)
        np.testing.assert_allclose(w, w_ref, atol=1e-4 * np.abs(w_ref).max())
    est = LabelRankBoost(tol=TOL, **params).fit(Xf, G, joint=J)
    np.testing.assert_array_equal(est.coef_, res.coef)
    assert est.objective_ == res.objective and est.objective(Xf, G, J) == pytest.approx(F, rel=1e-10)


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.4)])
def test_estimator_on_class_labels_and_a_multilabel_indicator(penalty, l1_ratio):
    """y as class labels (any values; Fig. 1a graphs over the sorted classes) and as an indicator matrix (relevant
    labels preferred to the others): the reference's optimum on the same graphs."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 4))
    score = X @ rng.normal(size=(4, 3)) + rng.normal(size=(40, 3))
    y = np.array(["b", "a", "c"])[np.argmax(score, axis=1)]
    idx = np.searchsorted(["a", "b", "c"], y)
    Gc = PreferenceGraphs.from_classes(idx, 3)
    params = dict(penalty=penalty, l1_ratio=l1_ratio, alpha=_alpha(0.1, penalty, l1_ratio, _alpha_max(X, Gc)))
    est = LabelRankBoost(tol=TOL, **params).fit(X, y)
    assert list(est.classes_) == ["a", "b", "c"] and est.converged_
    _, F_ref = _reference(X, Gc, None, params)
    assert _relative_excess(ref.objective(X, Gc, est.coef_, **params), F_ref) <= 1e-6
    assert est.objective(X, y) == pytest.approx(est.objective_, rel=1e-12)

    Y = (score > np.median(score, axis=1, keepdims=True)).astype(int)
    Y[:, 0] |= Y.sum(axis=1) == 0
    est = LabelRankBoost(tol=TOL, **params).fit(sp.csr_matrix(X), Y)
    _, F_ref = _reference(X, Y, None, params)
    assert est.converged_ and _relative_excess(ref.objective(X, Y, est.coef_, **params), F_ref) <= 1e-6


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.6)])
@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_badly_scaled_columns(penalty, l1_ratio, storage):
    """One column x 1e9 and one x 1e-3: cvxpy's optimum (solved in rescaled coordinates, feature_scale) at 1e-6,
    and converged_ only with the gap within tol (the default tol)."""
    X, G, J = _data(seed=3, joint=True)
    scale = np.ones(X.shape[1])
    scale[0], scale[2] = 1e9, 1e-3
    Xs = X * scale
    # the penalty acts on the weights: alpha picked on the unscaled problem's scale
    params = dict(penalty=penalty, l1_ratio=l1_ratio, alpha=_alpha(0.1, penalty, l1_ratio, _alpha_max(X, G, J)))
    est = LabelRankBoost(**params).fit(sp.csr_matrix(Xs) if storage == "sparse" else Xs, G, joint=J)
    _, F_ref = _reference(Xs, G, J, params, feature_scale=scale)
    F = ref.objective(Xs, G, est.coef_, joint=J, joint_coef=est.joint_coef_, **params)
    assert est.converged_ and est.gap_ is not None and est.gap_ <= 1e-6 * max(1.0, abs(F))
    assert _relative_excess(F, F_ref) <= 1e-6
    assert est.objective_ == pytest.approx(F, rel=1e-10)


@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet"])
@pytest.mark.parametrize("factor", [1e6, 1e9])
def test_a_constant_column_on_a_far_scale(penalty, factor):
    """A constant column (a bias per label, which the loss sees) x 1e6 or 1e9 beside one x 1e-3: the Hessian's
    diagonal scales as the column's uncentred squares; with the centred ones (0 for a constant column) the
    preconditioner missed it and "l2" stopped "converged" 0.6% (1e6) and 19% (1e9) above the optimum."""
    X, G, _ = _data(seed=21, n=40, d=4)
    X[:, 0] = 1.0
    scale = np.array([factor, 1.0, 1e-3, 1.0])
    Xs = X * scale
    params = dict(penalty=penalty, alpha=0.5, l1_ratio=0.5)
    est = LabelRankBoost(**params).fit(Xs, G)
    _, F_ref = _reference(Xs, G, None, params, feature_scale=scale)
    F = ref.objective(Xs, G, est.coef_, **params)
    assert est.converged_ and _relative_excess(F, F_ref) <= 1e-6


def test_the_certified_gap_bounds_the_distance_to_the_optimum():
    """Elastic net at a loose tol: the gap is certified by the strong convexity 2 alpha (1 - l1_ratio), and it
    bounds objective - optimum (cvxpy's); with "l1" alone (no strong convexity) converged means within tol."""
    X, G, J = _data(seed=4, joint=True)
    a_max = _alpha_max(X, G, J)
    for penalty, l1_ratio, tol in [("elasticnet", 0.5, 1e-3), ("elasticnet", 0.2, 1e-5), ("l1", 0.5, 1e-6)]:
        params = dict(penalty=penalty, l1_ratio=l1_ratio, alpha=_alpha(0.1, penalty, l1_ratio, a_max))
        res = solve(X, G, joint=J, tol=tol, **params)
        _, F_ref = _reference(X, G, J, params)
        assert res.converged and res.gap <= tol * max(1.0, abs(res.objective))
        if penalty == "elasticnet":
            assert res.gap_kind == "strong convexity"
        assert res.objective - F_ref <= res.gap + 1e-8 * max(1.0, abs(F_ref))


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.5)])
def test_row_permutation_gives_the_same_model(penalty, l1_ratio):
    X, G, J = _data(seed=5, density=0.8, joint=True)
    params = dict(penalty=penalty, l1_ratio=l1_ratio, alpha=_alpha(0.1, penalty, l1_ratio, _alpha_max(X, G, J)))
    a = solve(X, G, joint=J, tol=TOL, **params)
    perm = np.random.default_rng(6).permutation(X.shape[0])
    b = solve(sp.csr_matrix(X[perm]), G[perm], joint=J[perm], tol=TOL, **params)
    assert a.converged and b.converged
    assert b.objective == pytest.approx(a.objective, rel=1e-10)
    if penalty == "elasticnet":  # unique optimum; under "l1" a flat direction (a shift of every label's weights)
        np.testing.assert_allclose(b.coef, a.coef, rtol=1e-7, atol=1e-9 * np.abs(a.coef).max())
        np.testing.assert_allclose(b.joint_coef, a.joint_coef, rtol=1e-7, atol=1e-9 * np.abs(a.joint_coef).max())


# ------------------------------------------------------------------------------------------------ path
@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.6)])
def test_zero_exactly_from_alpha_max_on(penalty, l1_ratio):
    """alpha_max = max_r |dL/dw_r at 0| (/ l1_ratio): w = 0 exactly at alpha >= alpha_max, not below."""
    X, G, J = _data(seed=7, joint=True)
    top = _alpha_max(X, G, J) / (l1_ratio if penalty == "elasticnet" else 1.0)
    p = path(X, G, joint=J, penalty=penalty, l1_ratio=l1_ratio, n_alphas=2, eps=0.5)
    assert p.alpha_max == pytest.approx(top, rel=1e-12) and p.alphas[0] == p.alpha_max
    assert p.coefs[:, 0].nnz == 0 and p.coefs[:, 1].nnz > 0
    for alpha in (p.alpha_max, 1.0001 * top, 10 * top):
        res = solve(X, G, joint=J, penalty=penalty, l1_ratio=l1_ratio, alpha=alpha)
        assert res.converged and not res.coef.any() and not res.joint_coef.any()
        assert res.objective == pytest.approx(objective(X, G, np.zeros_like(res.coef), joint=J,
                                                        joint_coef=np.zeros(2)), rel=1e-15)
    below = solve(X, G, joint=J, penalty=penalty, l1_ratio=l1_ratio, alpha=0.99 * top)
    assert below.converged and (below.coef.any() or below.joint_coef.any())


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.6)])
def test_path_matches_independent_solves_and_cvxpy(penalty, l1_ratio):
    X, G, J = _data(seed=8, density=0.8, joint=True)
    Xs = sp.csr_matrix(X)
    p = path(Xs, G, joint=J, penalty=penalty, l1_ratio=l1_ratio, n_alphas=5, eps=0.01, tol=TOL)
    assert p.converged.all() and p.coefs.shape == (X.shape[1] * G.n_labels + 2, 5)
    assert np.all(np.diff(p.alphas) < 0) and np.all(np.diff(p.objectives) < 0)
    layout = loss(Xs, G, joint=J)
    for k, alpha in enumerate(p.alphas):
        params = dict(penalty=penalty, l1_ratio=l1_ratio, alpha=alpha)
        coef, theta = layout.coefficients(p.coefs[:, k].toarray().ravel())
        alone = solve(Xs, G, joint=J, tol=TOL, **params)
        assert p.objectives[k] == pytest.approx(alone.objective, rel=1e-9)
        assert p.objectives[k] == pytest.approx(objective(X, G, coef, joint=J, joint_coef=theta, **params),
                                                rel=1e-12)
        if penalty == "elasticnet":
            np.testing.assert_allclose(coef, alone.coef, atol=1e-6 * np.abs(alone.coef).max())
            np.testing.assert_allclose(theta, alone.joint_coef, atol=1e-6 * np.abs(alone.coef).max())
        if k in (1, 3):
            _, F_ref = _reference(X, G, J, params)
            assert _relative_excess(ref.objective(X, G, coef, joint=J, joint_coef=theta, **params), F_ref) <= 1e-6


def test_path_with_given_alphas_and_its_errors():
    X, G, _ = _data(seed=9)
    p = path(X, G, penalty="l2", alphas=[0.1, 1.0], tol=TOL)
    assert p.alpha_max is None and list(p.alphas) == [1.0, 0.1]
    for k, alpha in enumerate(p.alphas):
        assert p.objectives[k] == pytest.approx(solve(X, G, alpha=alpha, tol=TOL).objective, rel=1e-10)
    with pytest.raises(ValueError, match="alphas"):
        path(X, G, penalty="l2")
    with pytest.raises(ValueError, match="n_alphas"):
        path(X, G, n_alphas=0)
    with pytest.raises(ValueError, match="eps"):
        path(X, G, eps=1.0)
    with pytest.raises(ValueError, match="penalty"):
        path(X, G, penalty="lasso")


# ------------------------------------------------------------------------------------------------ solve
def test_warm_start_from_the_solution():
    X, G, J = _data(seed=10, joint=True)
    params = dict(penalty="l1", alpha=_alpha(0.1, "l1", 0.5, _alpha_max(X, G, J)))
    res = solve(X, G, joint=J, tol=TOL, **params)
    warm = solve(X, G, joint=J, tol=TOL, coef_init=(res.coef, res.joint_coef), **params)
    assert warm.converged and warm.n_iter <= 1
    assert warm.objective <= res.objective + 1e-12 * abs(res.objective)
    # from a point elsewhere: the same optimum
    far = solve(X, G, joint=J, tol=TOL, coef_init=(np.ones_like(res.coef), -np.ones(2)), **params)
    assert far.converged and far.objective == pytest.approx(res.objective, rel=1e-9)


def test_l2_is_unchanged_and_l1_ratio_ends_are_the_pure_penalties():
    """penalty="l2" (the default) and "elasticnet" with l1_ratio=0 are the same ridge fit (TRON, same iterates),
    for "newton" and "boost"; l1_ratio=1 is "l1"."""
    X, G, _ = _data(seed=11)
    for solver in ("newton", "boost"):
        a = solve(X, G, solver=solver, alpha=0.3)
        b = solve(X, G, solver=solver, alpha=0.3, penalty="elasticnet", l1_ratio=0.0)
        c = solve(X, G, solver=solver, alpha=0.3, penalty="l2", l1_ratio=0.9)
        for other in (b, c):
            np.testing.assert_array_equal(other.coef, a.coef)
            assert (other.n_iter, other.n_cg_iter, other.objective) == (a.n_iter, a.n_cg_iter, a.objective)
    a = solve(X, G, alpha=0.3, penalty="l1")
    b = solve(X, G, alpha=0.3, penalty="elasticnet", l1_ratio=1.0)
    np.testing.assert_array_equal(a.coef, b.coef)


def test_alpha_zero_still_reports_no_minimiser_and_l1_makes_it_finite():
    """Separable preferences: with alpha = 0 (penalty "l1" or not) the loss has no minimiser and the fit says so;
    any alpha > 0 with "l1" gives a finite optimum (the l1 term is coercive), cvxpy's."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 3))
    G = PreferenceGraphs.from_classes(np.argmax(X @ rng.normal(size=(3, 3)), axis=1), 3)
    for penalty in ("l2", "l1", "elasticnet"):
        res = solve(X, G, penalty=penalty, alpha=0.0, max_iter=200)
        assert not res.converged and "no minimiser" in res.message
    params = dict(penalty="l1", alpha=0.05)
    res = solve(X, G, tol=TOL, **params)
    assert res.converged and np.all(np.isfinite(res.coef)) and res.message == ""
    _, F_ref = _reference(X, G, None, params)
    assert _relative_excess(ref.objective(X, G, res.coef, **params), F_ref) <= 1e-6


def test_bad_penalty_parameters_are_refused():
    X, G, _ = _data(seed=13, n=10)
    with pytest.raises(ValueError, match="solver='auto'"):
        solve(X, G, solver="boost", penalty="l1", alpha=0.1)
    with pytest.raises(ValueError, match="solver='auto'"):
        LabelRankBoost(solver="boost", penalty="elasticnet", alpha=0.1).fit(X, G)
    with pytest.raises(ValueError, match="penalty"):
        solve(X, G, penalty="l3", alpha=0.1)
    with pytest.raises(ValueError, match="penalty"):
        LabelRankBoost(penalty="ridge").fit(X, G)
    for bad in (1.5, -0.1, np.nan):
        with pytest.raises(ValueError, match="l1_ratio"):
            solve(X, G, penalty="elasticnet", alpha=0.1, l1_ratio=bad)
        with pytest.raises(ValueError, match="l1_ratio"):
            LabelRankBoost(penalty="elasticnet", l1_ratio=bad).fit(X, G)
    with pytest.raises(TypeError, match="l1_ratio"):
        solve(X, G, penalty="elasticnet", alpha=0.1, l1_ratio="half")
    with pytest.raises(ValueError, match="penalty"):
        objective(X, G, np.zeros((G.n_labels, X.shape[1])), penalty="l0")
    # boost without an l1 term is fine: alpha = 0, or l1_ratio = 0
    assert solve(X, G, solver="boost", penalty="elasticnet", l1_ratio=0.0, alpha=0.1, max_iter=5000).converged


def test_estimator_params_clone_pickle_and_model_file(tmp_path):
    X, G, J = _data(seed=14, joint=True)
    est = LabelRankBoost(penalty="l1", alpha=0.05, l1_ratio=0.3, tol=1e-8)
    params = est.get_params()
    assert params["penalty"] == "l1" and params["l1_ratio"] == 0.3
    assert clone(est).get_params() == params
    est.fit(X, G, joint=J)
    assert est.converged_ and (est.coef_ == 0).any()
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X, J), est.predict(X, J))
    save_model(est, tmp_path / "l1.npz")
    loaded = load_model(tmp_path / "l1.npz")
    assert loaded.get_params() == params
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    np.testing.assert_array_equal(loaded.joint_coef_, est.joint_coef_)
    np.testing.assert_array_equal(loaded.predict(X, J), est.predict(X, J))
    assert loaded.objective(X, G, J) == est.objective(X, G, J)


# ------------------------------------------------------------------------------------------------ the loss object
@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_losses_of_split_rows_add_up(storage):
    """loss(rows A) + loss(rows B) = loss(all rows): values, gradients, Hessian products and column squares (the
    shards of a distributed fit), with joint features; G as PreferenceGraphs and as an indicator matrix."""
    X, G, J = _data(seed=15, n=40, density=0.6, joint=True)
    Xf = sp.csr_matrix(X) if storage == "sparse" else X
    rng = np.random.default_rng(16)
    A = rng.permutation(40)[:17]
    B = np.setdiff1d(np.arange(40), A)
    Y = (rng.random((40, G.n_labels)) < 0.5).astype(int)
    for targets in (G, Y):
        full = loss(Xf, targets, joint=J)
        parts = [loss(Xf[rows], targets[rows], joint=J[rows]) for rows in (A, B)]
        assert full.ridge == 0.0 and full.n_rows == 40 and [p.n_rows for p in parts] == [17, 23]
        w, v = 0.5 * rng.normal(size=full.n_features), rng.normal(size=full.n_features)
        f = full.fun(w)
        g = full.grad(w)
        assert sum(p.fun(w) for p in parts) == pytest.approx(f, rel=1e-13)
        np.testing.assert_allclose(sum(p.grad(w) for p in parts), g, rtol=1e-12, atol=1e-13 * np.abs(g).max())
        Hv = full.hess_vec(v)
        np.testing.assert_allclose(sum(p.hess_vec(v) for p in parts), Hv, rtol=1e-12,
                                   atol=1e-13 * np.abs(Hv).max())
        # so are the column squares (the Jacobi scales: uncentred for X, centred within each instance for J)
        np.testing.assert_allclose(sum(p.column_squares() for p in parts), full.column_squares(), rtol=1e-12)
        # the Hessian product is that of the gradient (central differences)
        h = 1e-6
        fd = (full.grad(w + h * v) - full.grad(w - h * v)) / (2 * h)
        np.testing.assert_allclose(Hv, fd, rtol=1e-5, atol=1e-7 * np.abs(Hv).max())


def test_loss_layout_and_minimise():
    """The parameter vector: coef' (n_features x n_labels, C order), then joint_coef; coefficients/parameters
    invert each other; the loss is the unpenalised objective; minimise(loss, penalty) is solve."""
    X, G, J = _data(seed=17, joint=True)
    L, d = G.n_labels, X.shape[1]
    f = loss(X, G, joint=J)
    assert isinstance(f, LabelRankLoss) and isinstance(f, Datafit)
    assert (f.n_features, f.n_labels, f.n_features_in, f.n_joint) == (d * L + 2, L, d, 2)
    assert f.column_squares().shape == (f.n_features,)
    rng = np.random.default_rng(18)
    coef, theta = rng.normal(size=(L, d)), rng.normal(size=2)
    w = f.parameters(coef, theta)
    assert w[3 * L + 1] == coef[1, 3] and np.array_equal(w[d * L:], theta)
    back = f.coefficients(w)
    assert np.array_equal(back[0], coef) and np.array_equal(back[1], theta)
    assert f.fun(w) == pytest.approx(objective(X, G, coef, joint=J, joint_coef=theta), rel=1e-14)
    assert loss(X, G).coefficients(np.zeros(d * L))[1] is None
    with pytest.raises(ValueError, match="entries"):
        f.coefficients(np.zeros(3))
    with pytest.raises(ValueError, match="decomposition"):
        loss(X, G, decomposition="pairs")
    alpha = _alpha(0.1, "l1", 0.5, _alpha_max(X, G, J))
    res = minimise(f, make_penalty("l1", alpha), tol=TOL, max_iter=100)
    direct = solve(X, G, joint=J, penalty="l1", alpha=alpha, tol=TOL)
    back = f.result(res)
    assert back.converged and back.objective == direct.objective and back.grad_norm == direct.grad_norm
    np.testing.assert_array_equal(back.coef, direct.coef)
    np.testing.assert_array_equal(back.joint_coef, direct.joint_coef)
    assert (back.n_iter, back.n_cg_iter, back.gap_kind, back.n_labels, back.n_features_in) == (
        direct.n_iter, direct.n_cg_iter, direct.gap_kind, L, d)


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("with_joint", [False, True])
def test_hessian_block_is_the_hessian_by_products(storage, with_joint):
    """hessian_block(ws), formed from the per-instance Hessians in the scores, is H[ws, ws] column by column from
    Hessian products (ridge included), at a random point, for any working set order."""
    X, G, J = _data(seed=22, n=25, density=0.6, joint=with_joint)
    f = loss(sp.csr_matrix(X) if storage == "sparse" else X, G, joint=J)
    f.ridge = 0.3
    rng = np.random.default_rng(23)
    f.grad(rng.normal(size=f.n_features))  # the Hessian state there
    ws = rng.permutation(f.n_features)[:f.n_features - 3]
    H = np.empty((ws.size, ws.size))
    e = np.zeros(f.n_features)
    for k, r in enumerate(ws):
        e[r] = 1.0
        H[:, k] = f.hess_vec(e)[ws]
        e[r] = 0.0
    np.testing.assert_allclose(f.hessian_block(ws), H, rtol=0, atol=1e-13 * np.abs(H).max())


class _Shards(Datafit):
    """The sum of row shards' losses as one datafit (what a distributed fit minimises): each Hessian product
    evaluates the shards at the point of the last accepted ``grad`` first (their own states move with trials)."""

    def __init__(self, parts):
        self.parts = parts
        self.n_features, self.n_rows = parts[0].n_features, sum(p.n_rows for p in parts)
        super().__init__()

    def column_squares(self):
        return sum(p.column_squares() for p in self.parts)

    def new_state(self):
        return {}

    def evaluate(self, w, Mw, state):
        state["x"] = w.copy()
        value = sum(p.fun(w) for p in self.parts) + self.ridge * float(w @ w)
        return value, sum(p.grad(w) for p in self.parts) + 2.0 * self.ridge * w

    def hessian_product(self, state, v, Mv):
        for p in self.parts:
            p.grad(state["x"])
        return sum(p.hess_vec(v) for p in self.parts) + 2.0 * self.ridge * v


@pytest.mark.parametrize("penalty,l1_ratio", [("l2", 0.5), ("l1", 0.5), ("elasticnet", 0.7)])
def test_minimising_the_sum_of_row_shards_is_the_fit(penalty, l1_ratio):
    """minimise(sum of the shards' losses, penalty) reaches the optimum of solve on all rows, and the full loss
    object's ``result`` turns it into solve's SolveResult fields."""
    X, G, J = _data(seed=19, n=36, joint=True)
    rows = np.array_split(np.random.default_rng(20).permutation(36), 3)
    shards = _Shards([loss(X[r], G[r], joint=J[r]) for r in rows])
    alpha = _alpha(0.1, penalty, l1_ratio, _alpha_max(X, G, J)) if penalty != "l2" else 0.3
    # tol 1e-14: the models are compared, and a gap of tol |F| pins w only to sqrt(2 tol |F| / mu)
    res = minimise(shards, make_penalty(penalty, alpha, l1_ratio), tol=1e-14, max_iter=200)
    direct = solve(X, G, joint=J, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, tol=1e-14)
    out = loss(X, G, joint=J).result(res)
    assert out.converged and out.objective == pytest.approx(direct.objective, rel=1e-10)
    assert out.objective == pytest.approx(objective(X, G, out.coef, joint=J, joint_coef=out.joint_coef,
                                                    penalty=penalty, alpha=alpha, l1_ratio=l1_ratio), rel=1e-12)
    if penalty != "l1":
        np.testing.assert_allclose(out.coef, direct.coef, atol=1e-6 * np.abs(direct.coef).max())
