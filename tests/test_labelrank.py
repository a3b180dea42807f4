"""LabelRankBoost (Dekel, Manning & Singer 2003): the solvers against the exact cvxpy optimum, the boosting
update against Fig. 3 and Theorem 1, the kernels against finite differences, and the estimator conventions."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from cyrank.io import load_model, save_model
from cyrank.labelrank import DECOMPOSITIONS, LabelRankBoost, PreferenceGraphs, objective, solve
from cyrank.labelrank import loss as labelrank_loss
from reference import labelrank as ref

TOL = 1e-9


def make_problem(seed=0, n=36, d=4, L=4, density=1.0, graded=True):
    """Gaussian X (optionally sparse) and label grades that depend on X plus noise (non-separable, every label on
    both sides of some edge)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if density < 1.0:
        X *= rng.random((n, d)) < density
    score = X @ rng.normal(size=(d, L)) + 1.5 * rng.normal(size=(n, L))
    if graded:
        R = np.argsort(np.argsort(score, axis=1), axis=1) // 2  # 0, 0, 1, 1: ties inside each row
        return X, PreferenceGraphs.from_relevance(R)
    return X, PreferenceGraphs.from_indicator((score > np.median(score, axis=1, keepdims=True)).astype(int))


_REF = {}


def reference(seed, decomposition, alpha, **kw):
    key = (seed, decomposition, alpha, tuple(sorted(kw.items())))
    if key not in _REF:
        X, G = make_problem(seed, **kw)
        _REF[key] = ref.solve(X, G, decomposition, alpha)
    return _REF[key]


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS)
@pytest.mark.parametrize("solver", ["newton", "boost"])
@pytest.mark.parametrize("fmt", ["dense", "csr", "csr32"])
@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_solvers_reach_the_reference_optimum(decomposition, solver, fmt, alpha):
    X, G = make_problem(1, density=0.7)
    sol = reference(1, decomposition, alpha, density=0.7)
    if fmt == "csr32":
        X = X.astype(np.float32)  # the reference solves the float64 copy of the same float32 values
        sol = ref.solve(X.astype(np.float64), G, decomposition, alpha)
    Xf = X if fmt == "dense" else sp.csr_matrix(X)
    res = solve(Xf, G, decomposition=decomposition, solver=solver, alpha=alpha, tol=TOL, max_iter=100_000)
    assert res.converged and res.gap <= TOL * max(1.0, abs(res.objective)) and res.solver == solver
    assert res.objective == pytest.approx(sol.objective, rel=1e-6)
    assert res.objective >= sol.objective - 1e-7 * abs(sol.objective)
    assert objective(Xf, G, res.coef, decomposition=decomposition, alpha=alpha) == pytest.approx(res.objective,
                                                                                                rel=1e-12)
    if alpha > 0:  # unique optimum
        np.testing.assert_allclose(res.coef, sol["coef"], atol=1e-4 * np.abs(sol["coef"]).max())


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS)
def test_bipartite_graphs_from_an_indicator_matrix(decomposition):
    """Multilabel data (Fig. 1b), the indicator matrix passed directly."""
    X, G = make_problem(2, graded=False)
    Y = np.zeros((G.n_instances, G.n_labels), dtype=int)
    Y[G.instance_of_edge(), G.init] = 1
    sol = ref.solve(X, Y, decomposition, 0.1)
    res = solve(X, Y, decomposition=decomposition, alpha=0.1, tol=TOL)
    assert res.converged and res.objective == pytest.approx(sol.objective, rel=1e-6)


def test_user_decomposition():
    """A callable decomposition: all pairs of edges of an instance (overlapping subgraphs)."""
    def pairs(init, term, n_labels):
        E = len(init)
        return [np.array([a, b]) for a in range(E) for b in range(a + 1, E)] or [np.arange(E)]

    X, G = make_problem(3, n=20, L=3)
    sol = ref.solve(X, G, pairs, 0.2)
    for solver in ("newton", "boost"):
        res = solve(X, G, decomposition=pairs, solver=solver, alpha=0.2, tol=TOL, max_iter=100_000)
        assert res.converged and res.objective == pytest.approx(sol.objective, rel=1e-6)


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS)
@pytest.mark.parametrize("solver", ["newton", "boost"])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_shared_joint_features_reach_the_reference_optimum(decomposition, solver, fmt):
    """f(x_i, y) = coef[y] . x_i + theta . joint[i, y] (joint features shared by every label)."""
    X, G = make_problem(16, n=24, d=3, density=0.7)
    J = np.random.default_rng(3).normal(size=(24, G.n_labels, 2))
    sol = ref.solve(X, G, decomposition, 0.2, joint=J)
    res = solve(X if fmt == "dense" else sp.csr_matrix(X), G, joint=J, decomposition=decomposition, solver=solver,
                alpha=0.2, tol=TOL, max_iter=200_000)
    assert res.converged and res.objective == pytest.approx(sol.objective, rel=1e-6)
    np.testing.assert_allclose(res.joint_coef, sol["joint_coef"], atol=1e-4 * np.abs(sol["joint_coef"]).max())
    assert objective(X, G, res.coef, joint=J, joint_coef=res.joint_coef, decomposition=decomposition,
                     alpha=0.2) == pytest.approx(ref.objective(X, G, res.coef, joint=J, joint_coef=res.joint_coef,
                                                               decomposition=decomposition, alpha=0.2), rel=1e-12)


def test_estimator_with_joint_features():
    X, G = make_problem(17, n=30)
    J = np.random.default_rng(4).normal(size=(30, G.n_labels, 3))
    est = LabelRankBoost(alpha=0.1).fit(X, G, joint=J)
    assert est.joint_coef_.shape == (3,)
    np.testing.assert_allclose(est.predict(X, J), X @ est.coef_.T + J @ est.joint_coef_)
    assert est.objective(X, G, J) == pytest.approx(est.objective_, rel=1e-12)
    with pytest.raises(ValueError, match="joint features"):
        est.predict(X)
    with pytest.raises(ValueError, match="joint must have shape"):
        LabelRankBoost().fit(X, G, joint=J[:, :2])
    with pytest.raises(ValueError, match="without joint features"):
        LabelRankBoost(alpha=0.1).fit(X, G).predict(X, J)


def test_objective_matches_the_reference_formula_at_random_points():
    for seed in range(3):
        X, G = make_problem(seed, density=0.5)
        coef = np.random.default_rng(seed).normal(scale=3.0, size=(G.n_labels, X.shape[1]))
        for dec in DECOMPOSITIONS:
            assert objective(sp.csr_matrix(X), G, coef, decomposition=dec, alpha=0.7) == pytest.approx(
                ref.objective(X, G, coef, decomposition=dec, alpha=0.7), rel=1e-12)


def test_loss_is_stable_at_huge_margins():
    """Margins of 1e4 in both directions: finite loss (about the largest margin), exact against the formula."""
    X, G = make_problem(4, n=10)
    coef = np.random.default_rng(0).normal(scale=1e4, size=(G.n_labels, X.shape[1]))
    for dec in DECOMPOSITIONS:
        value = objective(X, G, coef, decomposition=dec)
        assert np.isfinite(value) and value == pytest.approx(ref.objective(X, G, coef, decomposition=dec), rel=1e-12)


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS)
@pytest.mark.parametrize("with_joint", [False, True])
def test_gradient_and_hessian_products_match_finite_differences(decomposition, with_joint):
    X, G = make_problem(5, n=15, density=0.6)
    J = np.random.default_rng(2).normal(size=(15, G.n_labels, 3)) if with_joint else None
    loss = labelrank_loss(X, G, joint=J, decomposition=decomposition)  # the public loss object
    rng = np.random.default_rng(1)
    w, v = rng.normal(size=loss.n_features), rng.normal(size=loss.n_features)
    loss.fun(w)
    grad = loss.grad(w).copy()
    h = 1e-6
    fd = (loss.fun(w + h * v) - loss.fun(w - h * v)) / (2 * h)
    assert float(grad @ v) == pytest.approx(fd, rel=1e-6, abs=1e-8)
    g_plus = loss.grad(w + h * v).copy()
    g_minus = loss.grad(w - h * v).copy()
    loss.fun(w)
    loss.grad(w)  # the Hessian state at w (the kernel's hess_scores with the subgraph probabilities there)
    np.testing.assert_allclose(loss.hess_vec(v), (g_plus - g_minus) / (2 * h), rtol=1e-5, atol=1e-7)


def _fig3_weights(X, G, decomposition, coef, J=None, theta=None):
    """q, W+, W- and rho of Fig. 3 by their definitions: base functions h_(j,y)(x, y') = x_j [y' = y] and
    h_j(x_i, y') = J[i, y', j], pi_(i,e,j) = h_j(x_i, term e) - h_j(x_i, init e). W+ and W- are returned flat:
    the label-specific ones (d x L, C order), then the joint ones."""
    n, d = X.shape
    L = G.n_labels
    p = 0 if J is None else J.shape[2]
    S = X @ coef.T + (J @ theta if p else 0.0)
    Wp, Wm, rho = np.zeros(d * L + p), np.zeros(d * L + p), 0.0
    for i in range(n):
        lo, hi = G.edge_ptr[i], G.edge_ptr[i + 1]
        init, term = G.init[lo:hi], G.term[lo:hi]
        parts = ref.subgraphs(init, term, decomposition)
        q = np.zeros(hi - lo)
        for part in parts:
            z = 1.0 + sum(np.exp(S[i, term[e]] - S[i, init[e]]) for e in part)
            for e in part:
                q[e] += np.exp(S[i, term[e]] - S[i, init[e]]) / z
        for e in range(hi - lo):
            pi = np.zeros((d, L))
            pi[:, term[e]] += X[i]
            pi[:, init[e]] -= X[i]
            pi = np.r_[pi.ravel(), (J[i, term[e]] - J[i, init[e]]) if p else []]
            rho = max(rho, np.abs(pi).sum())
            Wp += np.where(pi > 0, q[e] * pi, 0.0) / len(parts)
            Wm += np.where(pi < 0, -q[e] * pi, 0.0) / len(parts)
    return Wp, Wm, rho


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS)
@pytest.mark.parametrize("with_joint", [False, True])
def test_boosting_is_figure_3_and_keeps_theorem_1(decomposition, with_joint):
    """Each boosting iterate is lambda - Lambda / rho with q, W+, W- and rho computed by their definitions (over
    the label-specific and the joint base functions), and the decrease of the loss is at least
    (1/rho) sum (sqrt W+ - sqrt W-)^2 (Theorem 1)."""
    X, G = make_problem(6, n=14, d=3, L=3)
    J = np.random.default_rng(5).normal(size=(14, 3, 2)) if with_joint else None
    d, L = X.shape[1], G.n_labels
    coef, theta = np.zeros((L, d)), np.zeros(2) if with_joint else None
    f = objective(X, G, coef, joint=J, joint_coef=theta, decomposition=decomposition)
    for t in range(1, 8):
        Wp, Wm, rho = _fig3_weights(X, G, decomposition, coef, J, theta)
        step = 0.5 * np.log(Wp / Wm) / rho
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve(X, G, joint=J, decomposition=decomposition, solver="boost", max_iter=t, tol=1e-300)
        np.testing.assert_allclose(res.coef, coef - step[:d * L].reshape(d, L).T, rtol=1e-10, atol=1e-12)
        if with_joint:
            np.testing.assert_allclose(res.joint_coef, theta - step[d * L:], rtol=1e-10, atol=1e-12)
        bound = float(np.sum((np.sqrt(Wp) - np.sqrt(Wm)) ** 2)) / rho
        assert f - res.objective >= bound * (1 - 1e-9) and bound > 0
        coef, theta, f = res.coef, res.joint_coef, res.objective


def test_boosting_with_a_penalty_never_raises_the_objective():
    X, G = make_problem(7, n=20)
    values = [solve(X, G, solver="boost", alpha=0.5, max_iter=t, tol=1e-300).objective for t in range(1, 30)]
    assert np.all(np.diff(values) <= 1e-12 * abs(values[0]))


def test_boosting_smooths_a_coordinate_with_edges_of_one_sign():
    """Label 3 is never preferred (always a term): with x >= 0 its weights meet edges of one sign, the loss has no
    minimiser, and boost says so instead of producing inf; alpha > 0 gives the reference optimum."""
    rng = np.random.default_rng(8)
    X = np.abs(rng.normal(size=(20, 3)))
    R = rng.integers(1, 3, size=(20, 4))
    R[:, 3] = 0
    G = PreferenceGraphs.from_relevance(R)
    res = solve(X, G, solver="boost", max_iter=50)
    assert np.all(np.isfinite(res.coef)) and "no minimiser" in res.message
    res = solve(X, G, solver="boost", alpha=0.1, tol=TOL, max_iter=100_000)
    assert res.converged and res.objective == pytest.approx(ref.solve(X, G, "domination", 0.1).objective, rel=1e-6)


def test_instances_without_edges_contribute_nothing():
    X, G = make_problem(9, n=12)
    keep = np.r_[0:5, 7:12]
    inst = G.instance_of_edge()
    mask = np.isin(inst, keep)
    G2 = PreferenceGraphs.from_edges(inst[mask], G.init[mask], G.term[mask], n_instances=12, n_labels=G.n_labels)
    a = solve(X, G2, alpha=0.2, tol=TOL)
    b = solve(X[keep], G[keep], alpha=0.2, tol=TOL)
    # the same objective: each fit within its certified gap of the one optimum, so within the gaps of each other,
    # and (strong convexity mu = 2 alpha: ||w - w*||^2 <= 2 gap / mu) its coefficients too
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= a.gap + b.gap
    assert np.linalg.norm(a.coef - b.coef) <= np.sqrt(2 * a.gap / 0.4) + np.sqrt(2 * b.gap / 0.4)


def test_bad_input_is_refused():
    X, G = make_problem(10, n=8)
    with pytest.raises(ValueError, match="instances but X has"):
        solve(X[:5], G)
    with pytest.raises(ValueError, match="alpha"):
        solve(X, G, alpha=-1.0)
    with pytest.raises(ValueError, match="decomposition"):
        solve(X, G, decomposition="pairs")
    with pytest.raises(ValueError, match="solver"):
        solve(X, G, solver="sgd")
    with pytest.raises(ValueError, match="NaN"):
        solve(np.where(X > 1, np.nan, X), G)
    with pytest.raises(TypeError, match="PreferenceGraphs"):
        solve(X, "labels")
    with pytest.raises(ValueError, match="coef_init"):
        solve(X, G, coef_init=np.zeros(3))


def test_max_iter_reports_without_convergence():
    X, G = make_problem(11)
    res = solve(X, G, solver="boost", max_iter=3)
    assert not res.converged and "max_iter=3" in res.message and res.n_iter == 3
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        LabelRankBoost(solver="boost", max_iter=3).fit(X, G)


# ------------------------------------------------------------------------------------------------ estimator
def test_estimator_predicts_rankings_and_scores_the_chosen_error():
    X, G = make_problem(12, n=60)
    est = LabelRankBoost(alpha=0.1).fit(X, G)
    scores = est.predict(X)
    np.testing.assert_allclose(scores, X @ est.coef_.T)
    ranking = est.predict_ranking(X)
    assert np.all(np.take_along_axis(scores, ranking, axis=1)[:, :-1] >= np.take_along_axis(scores, ranking,
                                                                                             axis=1)[:, 1:])
    from cyrank.metrics import label_ranking_error

    assert est.score(X, G) == pytest.approx(1.0 - label_ranking_error(G, scores, "domination"))
    assert est.score(X, G) > 1.0 - label_ranking_error(G, np.zeros_like(scores), "domination")
    assert est.objective(X, G) == pytest.approx(est.objective_, rel=1e-12)


def test_estimator_on_class_labels():
    """1-d labels (any values) are single-label graphs over the sorted classes (Fig. 1a)."""
    rng = np.random.default_rng(13)
    X = rng.normal(size=(40, 3))
    y = np.array(["b", "a", "c"])[np.argmax(X @ rng.normal(size=(3, 3)) + rng.normal(size=(40, 3)), axis=1)]
    est = LabelRankBoost(alpha=0.1, tol=TOL).fit(X, y)
    assert list(est.classes_) == ["a", "b", "c"]
    idx = np.searchsorted(est.classes_, y)
    sol = ref.solve(X, PreferenceGraphs.from_classes(idx, 3), "domination", 0.1)
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    assert est.score(X, y) == pytest.approx(np.mean(np.argmax(est.predict(X), axis=1) == idx))


def test_pickle_and_model_file_round_trip(tmp_path):
    X, G = make_problem(14)
    est = LabelRankBoost(decomposition="disagreement", alpha=0.2).fit(sp.csr_matrix(X), G)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    save_model(est, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


def test_warm_start_free_refit_and_clone():
    X, G = make_problem(15)
    est = LabelRankBoost(alpha=0.3, solver="newton")
    assert clone(est).get_params() == est.get_params()
    a = est.fit(X, G).coef_.copy()
    np.testing.assert_array_equal(est.fit(X, G).coef_, a)


def test_graphs_without_any_edge_warn_and_leave_the_model_at_zero():
    from cyrank import RankingDataWarning

    X = np.random.default_rng(18).normal(size=(6, 2))
    G = PreferenceGraphs.from_indicator(np.ones((6, 3), dtype=int))  # every label relevant: no preference
    with pytest.warns(RankingDataWarning, match="no instance has a preference edge"):
        res = solve(X, G, alpha=0.1)
    assert res.converged and res.objective == 0.0 and not res.coef.any()
