"""LabelRankBoost on float32 X (issue 28): X read in its own precision by the fused pass (cyrank/labelrank/_loss.pyx,
float64 sums), so float32 and its exact float64 widening give the same loss, gradient, Hessian products and fits,
dense and sparse; the whitened Newton on columns scaled by 1e9 and 1e-3 reaches cvxpy's optimum; no float64 copy
of X is made during a fit (tracemalloc)."""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from cyrank.labelrank import LabelRankBoost, PreferenceGraphs, loss, objective, solve
from cyrank.labelrank.whitening import WhitenedLoss, whitening_factor

ref = pytest.importorskip("reference.labelrank")


def _data(seed=0, n=40, d=6, L=5, density=1.0, dtype=np.float32):
    """Gaussian X (entries kept with probability ``density``) in ``dtype``, graded labels (pairs of labels share a
    grade: ties) from a noisy linear score."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    score = X @ rng.normal(size=(d, L)) + rng.normal(size=(n, L))
    R = np.argsort(np.argsort(score, axis=1), axis=1) // 2
    return X.astype(dtype), PreferenceGraphs.from_relevance(R)


def _store(X, storage):
    return sp.csr_matrix(X) if storage == "sparse" else X


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("decomposition", ["domination", "disagreement"])
def test_loss_gradient_and_hessian_products_of_float32_equal_float64(storage, decomposition):
    """The float32 values widen exactly to float64, and every sum runs in float64: the datafit's value, gradient
    and Hessian products agree to rounding (1e-13 relative), and with a brute-force evaluation in float64."""
    X, G = _data(seed=1, density=0.6 if storage == "sparse" else 1.0)
    X64 = X.astype(np.float64)
    f32, f64 = loss(_store(X, storage), G, decomposition=decomposition), loss(X64, G, decomposition=decomposition)
    rng = np.random.default_rng(2)
    w, v = rng.normal(size=f32.n_features), rng.normal(size=f32.n_features)
    assert f32.fun(w) == pytest.approx(f64.fun(w), rel=1e-13)
    np.testing.assert_allclose(f32.grad(w), f64.grad(w), rtol=1e-12, atol=1e-13 * np.abs(f64.grad(w)).max())
    f64.grad(w)
    Hv = f64.hess_vec(v)
    np.testing.assert_allclose(f32.hess_vec(v), Hv, rtol=1e-12, atol=1e-13 * np.abs(Hv).max())
    coef = w.reshape(X.shape[1], G.n_labels).T
    brute = ref.objective(X64, G, coef, decomposition=decomposition)
    assert f32.fun(w) == pytest.approx(brute, rel=1e-12)
    # the Hessian product against central differences of the gradient (brute force on the same loss)
    eps = 1e-6
    fd = (f64.grad(w + eps * v) - f64.grad(w - eps * v)) / (2 * eps)
    np.testing.assert_allclose(Hv, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("penalty", ["l2", "l1"])
def test_float32_fit_reaches_the_float64_fit_and_cvxpy(storage, penalty):
    """solve and the estimator on float32 X: the objective of the fit on its float64 widening within 1e-10
    (relative), cvxpy's optimum within 1e-6, dtype of X untouched."""
    X, G = _data(seed=3, density=0.7 if storage == "sparse" else 1.0)
    X64 = X.astype(np.float64)
    alpha = 0.05
    r32 = solve(_store(X, storage), G, penalty=penalty, alpha=alpha, tol=1e-10)
    r64 = solve(X64, G, penalty=penalty, alpha=alpha, tol=1e-10)
    assert r32.converged and r64.converged
    assert r32.objective == pytest.approx(r64.objective, rel=1e-10)
    F_ref = ref.objective(X64, G, ref.solve(X64, G, alpha=alpha, penalty=penalty)["coef"], alpha=alpha,
                          penalty=penalty)
    F = ref.objective(X64, G, r32.coef, alpha=alpha, penalty=penalty)
    assert (F - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
    est = LabelRankBoost(penalty=penalty, alpha=alpha, tol=1e-10).fit(_store(X, storage), G)
    assert est.objective_ == pytest.approx(r32.objective, rel=1e-12)
    assert X.dtype == np.float32


def test_badly_scaled_float32_columns_against_cvxpy():
    """A column times 1e9 and one times 1e-3 (float32): the whitened Newton (its factor built from the columns'
    correlations, free of their scales) converges with an honest gap, at 1e-6 of cvxpy's optimum (solved in
    rescaled variables) and of the same fit on the float64 widening."""
    X, G = _data(seed=4, n=60, d=5, L=4)
    X[:, 1] *= np.float32(1e9)
    X[:, 3] *= np.float32(1e-3)
    X64 = X.astype(np.float64)
    alpha = 1e-3
    res = solve(X, G, alpha=alpha)
    assert res.converged and res.gap <= 1e-6 * max(1.0, abs(res.objective))
    scale = np.abs(X64).max(axis=0)
    sol = ref.solve(X64, G, alpha=alpha, feature_scale=scale)
    F_ref = ref.objective(X64, G, sol["coef"], alpha=alpha)
    F = objective(X, G, res.coef, alpha=alpha)
    assert (F - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
    assert res.objective == pytest.approx(solve(X64, G, alpha=alpha).objective, rel=1e-6)


def test_whitened_loss_is_the_same_objective_and_strongly_convex_enough():
    """WhitenedLoss is F(T^-1 u), T = R (x) P + s I (x) J (P = I - J, J = 11'/L on the labels): same values at
    corresponding points, gradients related by T^-T, Hessian products by T^-T H T^-1 (dense matrices here);
    sigma_max(T) <= 1, which keeps minimise's strong-convexity certificate 2 ridge valid in u."""
    X, G = _data(seed=5, n=50, d=6, L=4)
    X[:, 2] *= np.float32(1e4)  # far-off scales: R is far from a multiple of I
    problem = loss(X, G)
    problem.ridge = 0.3
    d, L = X.shape[1], G.n_labels
    problem.grad(np.zeros(problem.n_features))
    R, s = whitening_factor(problem)
    J = np.full((L, L), 1.0 / L)
    T = np.kron(R, np.eye(L) - J) + s * np.kron(np.eye(d), J)
    assert np.linalg.norm(T, 2) <= 1.0 and 0 < s and not np.allclose(R, R[0, 0] * np.eye(d))
    white = WhitenedLoss(problem, R, s)
    white.ridge = 0.3
    rng = np.random.default_rng(6)
    u, v = rng.normal(size=problem.n_features), rng.normal(size=problem.n_features)
    w = white.to_w(u)
    np.testing.assert_allclose(w, np.linalg.solve(T, u), rtol=1e-8, atol=1e-10 * np.abs(w).max())
    np.testing.assert_allclose(white.to_u(w), u, rtol=1e-10, atol=1e-12)
    assert white.fun(u) == pytest.approx(problem.fun(w), rel=1e-13)
    gw = problem.grad(w)
    np.testing.assert_allclose(white.grad(u), np.linalg.solve(T.T, gw), rtol=1e-8, atol=1e-10 * np.abs(gw).max())
    Hw = problem.hess_vec(np.linalg.solve(T, v))
    np.testing.assert_allclose(white.hess_vec(v), np.linalg.solve(T.T, Hw), rtol=1e-8,
                               atol=1e-10 * np.abs(Hw).max())


def test_fit_on_float32_makes_no_copy_of_X():
    """tracemalloc: a whole fit on a float32 dense X (L - 1 = 3 edges per instance) allocates at most 0.3 of X's
    bytes beyond X, i.e. never a float64 (2x) or float32 (1x) copy of X; numpy's X @ W on a float32 X (the code
    before issue 28) converted X to a float64 temporary at every product."""
    rng = np.random.default_rng(7)
    n, d, L = 20000, 200, 4
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.argmax(X[:, :L] + rng.normal(size=(n, L)), axis=1)
    G = PreferenceGraphs.from_classes(y, L)
    tracemalloc.start()
    res = solve(X, G, alpha=1.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert res.converged
    assert peak <= 0.3 * X.nbytes, peak / X.nbytes


@pytest.mark.parametrize("joint", [False, True])
def test_hessian_products_stay_at_the_committed_point_after_a_trial(joint):
    """The loss keeps one buffer of membership weights for both states of the trial/commit protocol: after a
    trial evaluation elsewhere (a step TRON rejects), hess_vec and hessian_block are still those of the point of
    the last grad call, bit for bit (the weights are evaluated again there)."""
    X, G = _data(seed=8, n=30, d=4, L=4)
    J = np.random.default_rng(9).normal(size=(30, 4, 2)) if joint else None
    f = loss(X, G, joint=J)
    rng = np.random.default_rng(10)
    w1, w2, v = (rng.normal(size=f.n_features) for _ in range(3))
    f.grad(w1)
    Hv, block = f.hess_vec(v), f.hessian_block(np.arange(5))
    f.fun(w2)  # a trial point, never committed
    np.testing.assert_array_equal(f.hess_vec(v), Hv)
    np.testing.assert_array_equal(f.hessian_block(np.arange(5)), block)
    f.grad(w2)
    assert not np.array_equal(f.hess_vec(v), Hv)


def test_graphs_built_directly_equal_the_comparisons():
    """from_classes (edges written directly) and from_relevance (one Cython pass) against brute force: every
    pair (a, b) of an instance with R[a] > R[b], in (a, b) order, int32 labels; ties and absent labels included."""
    rng = np.random.default_rng(11)
    R = rng.integers(0, 3, size=(50, 6)).astype(float)
    y = rng.integers(0, 5, size=50)  # label 5 never occurs
    one_hot = np.zeros((50, 6))
    one_hot[np.arange(50), y] = 1
    for G, grades in ((PreferenceGraphs.from_relevance(R), R), (PreferenceGraphs.from_classes(y, 6), one_hot)):
        want = [(i, a, b) for i in range(50) for a in range(6) for b in range(6) if grades[i, a] > grades[i, b]]
        got = list(zip(G.instance_of_edge(), G.init, G.term))
        assert got == want and G.init.dtype == G.term.dtype == np.int32 and G.n_labels == 6


@pytest.mark.parametrize("decomposition", ["domination", "dominated", "disagreement", "zero_one"])
def test_mean_curvature_is_the_trace_of_the_score_hessians(decomposition):
    """The mean curvature (whitening's scale c, _loss.mean_curvature or _loss.level_mean_curvature) = sum_i
    trace(H_i) by brute force: the Hessian products in the scores along every unit label direction (graded labels
    with ties)."""
    X, G = _data(seed=12, n=30, d=4, L=5)
    f = loss(X, G, decomposition=decomposition)
    f.grad(np.random.default_rng(13).normal(size=f.n_features))
    D, p = f.data, f.weights(f.state)
    E, col, trace = np.zeros((30, 5)), np.empty((30, 5)), 0.0
    for y in range(5):
        E[:, y] = 1.0
        D.hess_scores(E, p, col)
        E[:, y] = 0.0
        trace += col[:, y].sum()
    got = D.mean_curvature(p)  # whitening.py's call: the level form's kernel or the edges'
    assert got == pytest.approx(trace, rel=1e-12) and trace > 0


def test_whitened_newton_gives_up_the_whitening_when_it_stops_paying(monkeypatch):
    """With at most 2 Hessian products per whitened Newton step, the solve leaves the whitened variables at the
    first longer step and goes on from its last accepted point unwhitened: same optimum (1e-10), converged with
    an honest gap, the products of both phases counted."""
    from cyrank.labelrank import whitening

    X, G = _data(seed=14, n=80, d=6, L=5)
    X = X + np.float32(3.0)  # positive features with a large common mean
    want = solve(X, G, alpha=0.01, tol=1e-10)
    calls = []
    real = whitening.minimise
    monkeypatch.setattr(whitening, "minimise", lambda problem, *a, **k: calls.append(problem) or real(problem, *a, **k))
    monkeypatch.setattr(whitening, "MAX_PRODUCTS_PER_STEP", 2)
    got = solve(X, G, alpha=0.01, tol=1e-10)
    assert [type(p).__name__ for p in calls] == ["WhitenedLoss", "LabelRankLoss"]  # the fallback ran
    assert got.converged and got.gap <= 1e-10 * max(1.0, abs(got.objective))
    assert got.objective == pytest.approx(want.objective, rel=1e-10)
    assert got.n_cg_iter > 2 and got.n_iter >= 1
