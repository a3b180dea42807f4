"""cyrank.optim.penalties: value, prox and subdifferential distance against their definitions, by brute force;
the shared optimisers (proximal Newton, OWL-QN, the path) over a SmoothProblem plus a penalty, and RankNet's
l1 / elastic-net penalties, against cvxpy."""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from cyrank.optim.penalties import (ElasticNet, L1, L2, Penalty, kkt_excess, l1_change, make_penalty,
                                    penalty_weights)
from cyrank.optim.smooth import SmoothProblem

PENALTIES = [L2(0.7), L1(1.3), ElasticNet(2.0, 0.3), L1(0.5, weights=np.linspace(0.0, 2.0, 12)),
             Penalty(np.linspace(0.1, 1.0, 12), 0.4)]


def _lam1(pen, r):
    return pen.lam1 if np.ndim(pen.lam1) == 0 else pen.lam1[r]


@pytest.mark.parametrize("pen", PENALTIES, ids=repr)
def test_value_is_the_formula(pen):
    w = np.random.default_rng(0).standard_normal(12)
    lam1 = pen.lam1 if np.ndim(pen.lam1) else np.full(12, pen.lam1)
    assert pen.value(w) == pytest.approx(float(np.sum(lam1 * np.abs(w)) + pen.lam2 * np.sum(w * w)), rel=1e-14)


@pytest.mark.parametrize("pen", PENALTIES, ids=repr)
@pytest.mark.parametrize("step", [0.05, 1.0, 7.0])
def test_prox_minimises_the_prox_objective(pen, step):
    """prox(w, step) = argmin_z ||z - w||^2 / (2 step) + penalty(z): the penalty is separable, so each coordinate is
    checked against a bounded scalar minimisation and against every point of a fine grid."""
    rng = np.random.default_rng(1)
    w = 3.0 * rng.standard_normal(12)
    w[:3] = [0.0, 1e-3, -1e-3]
    z = pen.prox(w, step)
    for r in range(12):
        lam1 = _lam1(pen, r)

        def h(t):
            return (t - w[r]) ** 2 / (2 * step) + lam1 * np.abs(t) + pen.lam2 * t * t

        best = minimize_scalar(h, bounds=(-abs(w[r]) - 1, abs(w[r]) + 1), method="bounded",
                               options={"xatol": 1e-12}).x
        assert h(z[r]) <= h(best) + 1e-12
        assert z[r] == pytest.approx(best, abs=1e-6)
        grid = np.linspace(-abs(w[r]) - 1, abs(w[r]) + 1, 20001)
        assert h(z[r]) <= np.min(h(grid)) + 1e-12
    # the l1 part alone: soft-thresholding
    zl1 = pen.prox_l1(w, step)
    lam1 = pen.lam1 if np.ndim(pen.lam1) else np.full(12, pen.lam1)
    assert np.allclose(zl1, np.where(np.abs(w) > step * lam1, w - np.sign(w) * step * lam1, 0.0), atol=1e-15)


@pytest.mark.parametrize("pen", PENALTIES, ids=repr)
def test_subdifferential_distance_is_its_definition(pen):
    """dist(-g, d penalty(w)) per coordinate: d penalty(w)_r = 2 lam2 w_r + lam1_r sign(w_r) when w_r != 0, else
    the interval lam1_r [-1, 1]; the distance to an interval is checked by minimising over it."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal(12)
    w[::3] = 0.0
    g = 2.0 * rng.standard_normal(12)
    dist = pen.subdiff_distance(g, w)
    for r in range(12):
        lam1 = _lam1(pen, r)
        if w[r] != 0:
            expected = abs(-g[r] - (2 * pen.lam2 * w[r] + lam1 * np.sign(w[r])))
        else:
            ts = np.linspace(-1.0, 1.0, 200001)
            expected = float(np.min(np.abs(-g[r] - lam1 * ts)))
        assert dist[r] == pytest.approx(expected, abs=1e-5 * (1 + lam1))
    # with the gradient of the smooth part (ridge included), the same measure; the pseudo-gradient's size is it
    G = g + 2 * pen.lam2 * w
    assert np.array_equal(pen.kkt_excess(G, w), dist)
    assert np.allclose(np.abs(pen.pseudo_gradient(G, w)), dist, atol=1e-14)
    # noise: the excess beyond it
    assert np.allclose(pen.kkt_excess(G, w, noise=0.1), np.maximum(dist - 0.1, 0.0))


def test_subdifferential_distance_vanishes_at_the_prox_fixed_point():
    """z = prox(z - step g, step) iff 0 lies in g + d penalty(z): the stopping measure is 0 exactly there."""
    rng = np.random.default_rng(3)
    pen = ElasticNet(1.5, 0.6)
    z = pen.prox(3 * rng.standard_normal(20), 0.5)
    # a gradient that makes z optimal: -g in d penalty(z)
    g = -(2 * pen.lam2 * z + pen.lam1 * np.where(z != 0, np.sign(z), rng.uniform(-1, 1, 20)))
    assert np.max(pen.subdiff_distance(g, z)) <= 1e-14
    assert np.allclose(pen.prox(z - 0.3 * g, 0.3), z, atol=1e-14)


def test_l1_change_without_cancellation():
    rng = np.random.default_rng(4)
    w = rng.standard_normal(50)
    w[::5] = 0.0
    s = rng.standard_normal(50)
    assert l1_change(w, s, 0.7) == pytest.approx(0.7 * (np.abs(w + s).sum() - np.abs(w).sum()), rel=1e-12)
    lam = rng.uniform(0, 2, 50)
    assert l1_change(w, s, lam) == pytest.approx(np.sum(lam * (np.abs(w + s) - np.abs(w))), rel=1e-12)
    pen = Penalty(lam, 0.0)
    assert pen.l1_change(w[5:9], s[5:9], coords=np.arange(5, 9)) == pytest.approx(
        np.sum(lam[5:9] * (np.abs(w[5:9] + s[5:9]) - np.abs(w[5:9]))), rel=1e-12)
    # a step far below the rounding of ||w||_1: the difference of norms loses it, l1_change keeps it exactly
    w = np.array([1e8, -3.0])
    s = np.array([-1e-9, 1e-9])
    assert l1_change(w, s, 1.0) == pytest.approx(-2e-9, rel=1e-12)


def test_names_and_weights():
    assert penalty_weights("l1", 2.0, 0.3) == (2.0, 0.0)
    assert penalty_weights("l2", 2.0, 0.3) == (0.0, 2.0)
    assert penalty_weights("elasticnet", 2.0, 0.25) == (0.5, 1.5)
    pen = make_penalty("elasticnet", 2.0, 0.25)
    assert (pen.lam1, pen.lam2, pen.ridge, pen.strong_convexity, pen.smooth) == (0.5, 1.5, 1.5, 3.0, False)
    assert make_penalty("l2", 1.0).smooth
    with pytest.raises(ValueError, match="penalty"):
        make_penalty("l3", 1.0)
    with pytest.raises(ValueError, match="alpha"):
        make_penalty("l1", -1.0)
    with pytest.raises(ValueError, match="l1_ratio"):
        make_penalty("elasticnet", 1.0, 1.5)
    with pytest.raises(ValueError, match="lam1"):
        Penalty(np.array([1.0, -1.0]))
    assert np.array_equal(kkt_excess(np.array([0.5, -2.0]), np.zeros(2), 1.0), [0.0, 1.0])


# ------------------------------------------------------------------------------- RankNet with the shared penalties
def _ranknet_data(seed=0, n_queries=8, rows=15, d=12):
    rng = np.random.default_rng(seed)
    n = n_queries * rows
    X = rng.standard_normal((n, d))
    w_true = np.r_[rng.standard_normal(3), np.zeros(d - 3)]
    y = np.clip(np.round(X @ w_true + 0.7 * rng.standard_normal(n)), -1, 2) + 1
    return X, y, np.repeat(np.arange(n_queries), rows)


def _alpha_max(X, y, qid):
    """max_r |dL/dw_r| at w = 0 for sigma = 1, by the plain pair loop of reference.ranksvm: sum_P -(x_i - x_j) / 2."""
    from reference.ranksvm import preference_pairs

    i, j = preference_pairs(y, qid)
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
    return float(np.max(np.abs(0.5 * (Xd[i] - Xd[j]).sum(axis=0))))


@pytest.mark.parametrize("penalty,share,l1_ratio", [("l1", 0.3, 0.5), ("l1", 0.02, 0.5), ("elasticnet", 0.3, 0.7),
                                                     ("elasticnet", 0.05, 0.2)])
@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ranknet_penalties_match_cvxpy(penalty, share, l1_ratio, storage, dtype):
    """RankNet's objective with an l1 / elastic-net penalty reaches cvxpy's optimum to 1e-6 (relative), with exact
    zeros where the reference is (numerically) zero, and says its gap was measured."""
    import scipy.sparse as sp

    ref = pytest.importorskip("reference.ranknet")
    from cyrank import RankNet

    X, y, qid = _ranknet_data(seed=3)
    if storage == "sparse":
        X = sp.csr_matrix(X * (np.random.default_rng(4).random(X.shape) < 0.5))
    X = X.astype(dtype)
    alpha = share * _alpha_max(X, y, qid) / (l1_ratio if penalty == "elasticnet" else 1.0)
    params = dict(penalty=penalty, alpha=alpha, l1_ratio=l1_ratio)
    est = RankNet(tol=1e-10, **params).fit(X, y, qid)
    sol = ref.solve(X, y, qid, **params)
    F_ref = ref.objective(X, y, qid, sol["w"], **params)
    F = ref.objective(X, y, qid, est.coef_, **params)
    assert (F - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
    assert est.objective_ == pytest.approx(F, rel=1e-10)
    assert est.objective(X, y, qid) == pytest.approx(F, rel=1e-10)
    assert est.converged_ and est.gap_ is not None and est.gap_ <= 1e-10 * max(1.0, abs(F))
    zeros = est.coef_ == 0
    if share >= 0.3:
        assert zeros.any()  # a strong l1 term: exact zeros
    assert np.all(np.abs(sol["w"][zeros]) <= 1e-5)


def test_ranknet_l2_penalty_is_the_old_objective():
    """penalty="l2" (the default) and "elasticnet" with l1_ratio=0 are the ridge RankNet, TRON path, same model."""
    from cyrank import RankNet

    X, y, qid = _ranknet_data(seed=5)
    a = RankNet(alpha=0.7).fit(X, y, qid)
    b = RankNet(alpha=0.7, penalty="elasticnet", l1_ratio=0.0).fit(X, y, qid)
    assert np.array_equal(a.coef_, b.coef_) and a.n_cg_iter_ == b.n_cg_iter_


def test_ranknet_l1_zero_at_alpha_max_and_warm_start():
    """At alpha >= max_r |grad_r at 0| the l1 optimum is w = 0 (KKT at 0); below it, not; coef_init warm-starts."""
    from cyrank.lambdarank.solver import solve

    X, y, qid = _ranknet_data(seed=6)
    top = _alpha_max(X, y, qid)
    assert not np.any(solve(X, y, qid, penalty="l1", alpha=1.0001 * top).coef)
    res = solve(X, y, qid, penalty="l1", alpha=0.5 * top, tol=1e-10)
    assert np.any(res.coef) and res.converged
    warm = solve(X, y, qid, penalty="l1", alpha=0.5 * top, tol=1e-10, coef_init=res.coef)
    assert warm.n_iter <= 1 and warm.objective <= res.objective + 1e-12 * abs(res.objective)


def test_ranknet_penalty_errors():
    from cyrank import RankNet

    X, y, qid = _ranknet_data()
    with pytest.raises(ValueError, match="penalty"):
        RankNet(penalty="l0").fit(X, y, qid)
    with pytest.raises(ValueError, match="l1_ratio"):
        RankNet(penalty="elasticnet", l1_ratio=2.0).fit(X, y, qid)


def test_dask_ranknet_refuses_l1():
    pytest.importorskip("dask")
    from cyrank.dask import DaskRankNet

    with pytest.raises(ValueError, match="smooth objective only"):
        DaskRankNet(penalty="l1")._check_params()


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.6)])
def test_ranknet_path_matches_cvxpy_and_starts_at_alpha_max(penalty, l1_ratio):
    """RankNet's path: alpha_max is exact (w = 0 there, not just below), and every point is cvxpy's optimum."""
    ref = pytest.importorskip("reference.ranknet")
    from cyrank.lambdarank.solver import path, solve

    X, y, qid = _ranknet_data(seed=7)
    p = path(X, y, qid, penalty=penalty, l1_ratio=l1_ratio, n_alphas=4, eps=0.01, tol=1e-10)
    top = _alpha_max(X, y, qid) / (l1_ratio if penalty == "elasticnet" else 1.0)
    assert p.alpha_max == pytest.approx(top, rel=1e-12) and p.alphas[0] == p.alpha_max
    assert p.coefs[:, 0].nnz == 0 and p.converged.all()
    assert np.any(solve(X, y, qid, penalty=penalty, l1_ratio=l1_ratio, alpha=0.99 * p.alpha_max).coef)
    for k, alpha in enumerate(p.alphas[1:], start=1):
        params = dict(penalty=penalty, alpha=alpha, l1_ratio=l1_ratio)
        F_ref = ref.objective(X, y, qid, ref.solve(X, y, qid, **params)["w"], **params)
        F = ref.objective(X, y, qid, p.coefs[:, k].toarray().ravel(), **params)
        assert (F - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
        assert p.objectives[k] == pytest.approx(F, rel=1e-10)
    with pytest.raises(ValueError, match="alphas"):
        path(X, y, qid, penalty="l2")


# ------------------------------------------------------------------ the shared optimisers on any SmoothProblem
class _LeastSquares(SmoothProblem):
    """0.5 ||A w - b||^2 + lam2 ||w||^2 as a SmoothProblem (the smallest datafit: a test of the optimisers alone)."""

    def __init__(self, A, b, lam2):
        self.A, self.b, self.lam2 = A, b, lam2
        super().__init__()

    def new_state(self):
        return None

    def evaluate(self, w, Mw, state):
        r = self.A @ w - self.b
        return 0.5 * float(r @ r) + self.lam2 * float(w @ w), self.A.T @ r + 2 * self.lam2 * w

    def hessian_product(self, state, v, Mv):
        return self.A.T @ (self.A @ v) + 2 * self.lam2 * v


def _lasso_reference(A, b, lam1, lam2):
    cp = pytest.importorskip("cvxpy")
    w = cp.Variable(A.shape[1])
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(A @ w - b) + cp.sum(cp.multiply(lam1, cp.abs(w)))
                           + lam2 * cp.sum_squares(w))).solve(solver="CLARABEL")
    return w.value


@pytest.mark.parametrize("lam2", [0.0, 0.5])
def test_prox_newton_and_owlqn_on_any_smooth_problem(lam2):
    """cyrank.optim.prox_newton (model formed by Hessian products) and owlqn_penalized (per-coordinate l1 weights)
    minimise a least-squares SmoothProblem plus a penalty: cvxpy's optimum to 1e-8 (relative)."""
    from cyrank.optim.certificate import certify
    from cyrank.optim.owlqn import owlqn_penalized
    from cyrank.optim.prox_newton import GramModel, prox_newton

    rng = np.random.default_rng(8)
    A = rng.standard_normal((60, 15))
    b = A @ np.r_[rng.standard_normal(4), np.zeros(11)] + 0.1 * rng.standard_normal(60)
    top = float(np.max(np.abs(A.T @ b)))
    pen = Penalty(0.2 * top, lam2)
    problem = _LeastSquares(A, b, lam2)

    def certify_at(x, g, F):
        return certify(problem.hess_vec, x, g, F, 1e-12, lam1=pen.lam1, strong_convexity=pen.strong_convexity)[:2]

    def F(w):
        return 0.5 * float(np.sum((A @ w - b) ** 2)) + pen.value(w)

    w_ref = _lasso_reference(A, b, np.full(15, pen.lam1), lam2)
    w = np.zeros(15)
    problem.grad(w)  # the Hessian state at w
    res = prox_newton(problem, pen, w, tol=1e-12, max_iter=100, scale=top, certify=certify_at,
                      make_model=lambda ws: GramModel.from_products(problem, ws, 15, np.zeros(ws.size)))
    assert res.converged and (F(res.x) - F(w_ref)) / max(1, F(w_ref)) <= 1e-8
    assert np.max(pen.subdiff_distance(A.T @ (A @ res.x - b), res.x)) <= 1e-9 * top
    # per-coordinate weights: OWL-QN over the same SmoothProblem
    weights = np.linspace(0.05, 0.4, 15) * top
    wpen = Penalty(weights, lam2)
    res = owlqn_penalized(problem, wpen, np.zeros(15), tol_abs=1e-10 * top, max_iter=1000)
    w_ref = _lasso_reference(A, b, weights, lam2)
    Fw = lambda w: 0.5 * float(np.sum((A @ w - b) ** 2)) + wpen.value(w)  # noqa: E731
    assert res.converged and (Fw(res.x) - Fw(w_ref)) / max(1, Fw(w_ref)) <= 1e-8
    with pytest.raises(ValueError, match="one l1 weight"):
        prox_newton(problem, wpen, np.zeros(15), tol=1e-6, max_iter=5, scale=top, certify=certify_at,
                    make_model=None)


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.6)])
def test_ranknet_penalties_with_badly_scaled_columns_and_permuted_rows(penalty, l1_ratio):
    """One column x 1e9 and one x 1e-3 (a timestamp and a rate in one X): the l1 / elastic-net RankNet still
    reaches cvxpy's optimum (solved in rescaled coordinates) to 1e-6 and reports converged_ only with its gap
    within tol; permuting the rows and relabelling the queries gives the same model."""
    ref = pytest.importorskip("reference.ranknet")
    from cyrank import RankNet

    X, y, qid = _ranknet_data(seed=7)
    scale = np.ones(X.shape[1])
    scale[0], scale[2] = 1e9, 1e-3
    Xs = X * scale
    alpha = 0.1 * _alpha_max(X, y, qid)  # the penalty acts on w; alpha picked on the unscaled problem's scale
    params = dict(penalty=penalty, alpha=alpha, l1_ratio=l1_ratio)
    est = RankNet(tol=1e-10, **params).fit(Xs, y, qid)
    sol = ref.solve(Xs, y, qid, feature_scale=scale, **params)
    F_ref = ref.objective(Xs, y, qid, sol["w"], **params)
    F = ref.objective(Xs, y, qid, est.coef_, **params)
    assert (F - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
    assert est.converged_ and est.gap_ is not None and est.gap_ <= 1e-10 * max(1.0, abs(F))
    perm = np.random.default_rng(8).permutation(X.shape[0])
    moved = RankNet(tol=1e-10, **params).fit(Xs[perm], y[perm], 100 - 3 * qid[perm])
    assert np.allclose(moved.coef_, est.coef_, rtol=1e-7, atol=1e-12 * np.abs(est.coef_).max())
