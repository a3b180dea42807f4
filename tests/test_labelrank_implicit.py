"""The level form of LabelRankBoost's graphs (issue 28): graphs complete between label levels (from_relevance,
from_indicator, from_classes) kept as each instance's labels ordered by level with the level boundaries, and the
"domination" / "dominated" losses computed from suffix log-sum-exps in O(L) per instance
(cyrank/labelrank/_loss.pyx). Checked against the enumerated kernels (every edge and membership) on the same
graphs: loss, gradient, Hessian products, the Hessian block, the whitening trace, the separability test, and fits."""
import numpy as np
import pytest
import scipy.sparse as sp

from cyrank.labelrank import LabelRankBoost, PreferenceGraphs, loss, solve
from cyrank.labelrank import _loss
from cyrank.labelrank.graphs import Levels
from cyrank.labelrank.solver import LabelRankLoss, Options, _Data, _orders_every_edge


def _graphs(kind, n, L, rng):
    if kind == "graded":
        R = rng.integers(0, 4, size=(n, L)).astype(float)
        R[0] = 1.0  # a single level: no edge
        return PreferenceGraphs.from_relevance(R)
    if kind == "indicator":
        Y = (rng.random((n, L)) < 0.4).astype(int)
        Y[0] = 0  # an empty instance
        Y[1] = 1
        return PreferenceGraphs.from_indicator(Y)
    return PreferenceGraphs.from_classes(rng.integers(0, L, size=n), L)


def _pair(X, G, decomposition, weight=None):
    """The same loss through the level form and through the enumerated edges."""
    implicit = LabelRankLoss(_Data(X, G, decomposition, Options(), None, weight))
    enumerated = LabelRankLoss(_Data(X, G, decomposition, Options(levels=False), None, weight))
    assert implicit.data.levels is not None and enumerated.data.levels is None
    return implicit, enumerated


def _close(a, b, rtol=1e-12):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-300)
    assert np.max(np.abs(a - b), initial=0.0) <= rtol * scale, (np.max(np.abs(a - b)), scale)


@pytest.mark.parametrize("kind", ["graded", "indicator", "classes"])
@pytest.mark.parametrize("decomposition", ["domination", "dominated"])
@pytest.mark.parametrize("weighted", [False, True])
def test_level_kernels_equal_enumerated(kind, decomposition, weighted):
    rng = np.random.default_rng(hash((kind, decomposition, weighted)) % 2**32)
    n, L, d = 40, 6, 5
    G = _graphs(kind, n, L, rng)
    X = rng.standard_normal((n, d))
    X[:, 2] *= 1e3  # badly scaled
    X[5] = X[4]  # ties in the scores
    weight = rng.random(n) * 3 if weighted else None
    if weighted:
        weight[3] = 0.0
    imp, enu = _pair(X, G, decomposition, weight)
    for scale in (0.0, 1.0, 30.0):
        w = scale * rng.standard_normal(d * L) / 1e2
        w[2 * L:3 * L] /= 1e3
        _close(imp.fun(w), enu.fun(w))
        _close(imp.grad(w), enu.grad(w))
        for _ in range(2):
            v = rng.standard_normal(d * L)
            _close(imp.hess_vec(v), enu.hess_vec(v), 1e-11)
        D1, D2 = imp.data, enu.data
        _close(D1.mean_curvature(imp.weights(imp.state)), D2.mean_curvature(enu.weights(enu.state)), 1e-11)
        ws = rng.choice(d * L, size=7, replace=False)
        _close(imp.hessian_block(ws), enu.hessian_block(ws), 1e-11)


@pytest.mark.parametrize("decomposition", ["domination", "dominated"])
def test_level_scores_kernels_with_gaps_and_ties(decomposition):
    """Score gaps of 1e3 (no overflow: running-max log-sum-exp) and exact ties: loss, A, B and the Hessian in the
    scores equal the enumerated kernel's."""
    rng = np.random.default_rng(3)
    n, L = 60, 7
    R = rng.integers(0, 3, size=(n, L)).astype(float)
    G = PreferenceGraphs.from_relevance(R)
    X = np.zeros((n, 1))
    S = rng.choice([-1e3, -5.0, 0.0, 0.0, 2.0, 1e3], size=(n, L)) + rng.standard_normal((n, L)) * (rng.random((n, L)) < 0.5)
    weight = rng.random(n) + 0.5
    D1 = _Data(X, G, decomposition, Options(), None, weight)
    D2 = _Data(X, G, decomposition, Options(levels=False), None, weight)
    A1, B1, A2, B2 = (np.empty((n, L)) for _ in range(4))
    f1 = D1.loss_grad_scores(S, A1, B1)
    f2 = D2.loss_grad_scores(S, A2, B2)
    assert np.isfinite(f1)
    _close(f1, f2)
    _close(A1, A2)
    _close(B1, B2)
    dS = rng.standard_normal((n, L))
    H1, H2 = np.empty((n, L)), np.empty((n, L))
    D1.hess_scores(dS, D1.p, H1)
    D2.hess_scores(dS, D2.p, H2)
    _close(H1, H2, 1e-11)
    assert np.all(np.isfinite(H1))


def test_level_hessian_is_the_derivative_of_the_gradient():
    """The level form's Hessian product against central differences of its own gradient (not only against the
    enumerated kernel)."""
    rng = np.random.default_rng(4)
    n, L, d = 30, 5, 4
    G = PreferenceGraphs.from_relevance(rng.integers(0, 3, size=(n, L)))
    X = rng.standard_normal((n, d))
    f = loss(X, G)
    assert f.data.levels is not None
    w, v = rng.standard_normal(d * L), rng.standard_normal(d * L)
    f.grad(w)
    hv = f.hess_vec(v)
    h = 1e-5
    fd = (f.grad(w + h * v) - f.grad(w - h * v)) / (2 * h)
    _close(hv, fd, 1e-7)
    g = f.grad(w)
    fd = np.array([(f.fun(w + h * e) - f.fun(w - h * e)) / (2 * h) for e in np.eye(d * L)])
    _close(g, fd, 1e-7)


def test_one_label_and_single_levels():
    """One label (no edge at all) and every instance in one level: loss 0, gradient 0, no edge built."""
    X = np.arange(6.0).reshape(3, 2)
    for G in (PreferenceGraphs.from_classes(np.zeros(3, dtype=int), 1), PreferenceGraphs.from_relevance(np.ones((3, 4)))):
        f = loss(X, G)
        assert f.data.levels is not None
        w = np.ones(f.n_features)
        assert f.fun(w) == 0.0 and not np.any(f.grad(w)) and not np.any(f.hess_vec(w))
        assert G.n_edges == 0 and G._init is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("decomposition", ["domination", "dominated"])
def test_fits_agree_with_the_enumerated_path(dtype, sparse, decomposition):
    rng = np.random.default_rng(5)
    n, L, d = 80, 5, 6
    X = rng.standard_normal((n, d)).astype(dtype)
    X[rng.random((n, d)) < 0.3] = 0.0
    Y = (X[:, :L] + 0.5 * rng.standard_normal((n, L)) > 0).astype(int)
    Xin = sp.csr_matrix(X) if sparse else X
    weight = rng.random(n) + 0.1
    kw = dict(decomposition=decomposition, alpha=0.1, tol=1e-10, sample_weight=weight)
    a = solve(Xin, Y, **kw)
    b = solve(Xin, Y, options=Options(levels=False), **kw)
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= 1e-9 * abs(b.objective)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-6, atol=1e-7)


def test_fit_builds_no_edge_and_boost_agrees():
    """LabelRankBoost.fit on an indicator matrix and on classes never builds the edge arrays; the boosting solver
    runs on the level form too."""
    rng = np.random.default_rng(6)
    n, L, d = 60, 4, 3
    X = rng.standard_normal((n, d))
    Y = (rng.random((n, L)) < 0.5).astype(int)
    G = PreferenceGraphs.from_indicator(Y)
    est = LabelRankBoost(alpha=0.05, tol=1e-9).fit(X, G)
    assert G._init is None and G.levels is not None
    ref = solve(X, Y, alpha=0.05, tol=1e-9, options=Options(levels=False))
    np.testing.assert_allclose(est.coef_, ref.coef, rtol=1e-6, atol=1e-8)
    b1 = solve(X, G, solver="boost", alpha=0.05, tol=1e-6, max_iter=50)
    b2 = solve(X, G, solver="boost", alpha=0.05, tol=1e-6, max_iter=50, options=Options(levels=False))
    assert G._init is None or True  # the enumerated run built them
    assert b1.n_iter == b2.n_iter
    np.testing.assert_allclose(b1.coef, b2.coef, rtol=1e-9, atol=1e-12)


def test_separable_check_in_the_level_form():
    """_orders_every_edge from the level form equals the enumerated one (alpha = 0, separable data)."""
    rng = np.random.default_rng(7)
    n, L, d = 30, 4, 4
    X = rng.standard_normal((n, d))
    Wtrue = rng.standard_normal((d, L))
    R = np.argsort(np.argsort(X @ Wtrue, axis=1), axis=1) // 2  # grades consistent with a linear model
    G = PreferenceGraphs.from_relevance(R)
    for w in (Wtrue.ravel(), -Wtrue.ravel(), rng.standard_normal(d * L)):
        for dec in ("domination", "dominated"):
            D1 = _Data(X, G, dec, Options(), None, None)
            D2 = _Data(X, G, dec, Options(levels=False), None, None)
            f = D2.loss_grad_scores(D2.scores(w), np.empty((n, L)), np.empty((n, L)))
            assert _orders_every_edge(D1, w, f) == _orders_every_edge(D2, w, f)
    D1 = _Data(X, G, "domination", Options(), None, None)
    f = D1.loss_grad_scores(D1.scores(Wtrue.ravel()), np.empty((n, L)), np.empty((n, L)))
    assert _orders_every_edge(D1, Wtrue.ravel(), f)


def test_levels_mirror_and_edges():
    rng = np.random.default_rng(8)
    R = rng.integers(0, 4, size=(25, 6)).astype(float)
    G = PreferenceGraphs.from_relevance(R)
    lv = G.levels
    assert lv.mirrored().mirrored().same_as(lv)
    # the mirror image's edges are the reversed edges
    M = PreferenceGraphs._from_levels(lv.mirrored())
    a = {(i, x, y) for i, x, y in zip(G.instance_of_edge(), G.init, G.term)}
    b = {(i, y, x) for i, x, y in zip(M.instance_of_edge(), M.init, M.term)}
    assert a == b
    # edges as graded relevance defines them
    inst, ini, ter = G.instance_of_edge(), G.init, G.term
    assert np.all(R[inst, ini] > R[inst, ter])
    assert G.n_edges == int(sum((R[i][:, None] > R[i][None, :]).sum() for i in range(R.shape[0])))
    assert isinstance(lv, Levels) and lv.order.dtype == np.int32


@pytest.mark.parametrize("decomposition", ["domination", "dominated"])
def test_a_large_common_part_cancels_exactly(decomposition):
    """The loss is invariant to a constant added to an instance's scores and its Hessian maps constants to 0:
    scores and directions with a common part 1e12 times larger than their differences (whitening.py's directions
    carry such parts) give the enumerated kernel's values to rounding of the differences, not of the common part."""
    rng = np.random.default_rng(9)
    n, L = 50, 6
    G = PreferenceGraphs.from_relevance(rng.integers(0, 3, size=(n, L)))
    X = np.zeros((n, 1))
    big = 1e12 * rng.standard_normal((n, 1))
    S = big + rng.standard_normal((n, L))
    dS = 1e3 * big + rng.standard_normal((n, L))
    D1 = _Data(X, G, decomposition, Options(), None, None)
    D2 = _Data(X, G, decomposition, Options(levels=False), None, None)
    out = []
    for D in (D1, D2):
        A, B, H = np.empty((n, L)), np.empty((n, L)), np.empty((n, L))
        f = D.loss_grad_scores(S, A, B)
        D.hess_scores(dS, D.p, H)
        out.append((f, A - B, H))
    _close(out[0][0], out[1][0], 1e-12)
    _close(out[0][1], out[1][1], 1e-12)
    _close(out[0][2], out[1][2], 1e-9)  # both see the directions' differences rounded at 1e15


def test_pickles_and_subsets_keep_the_level_form():
    import pickle

    rng = np.random.default_rng(10)
    G = PreferenceGraphs.from_relevance(rng.integers(0, 3, size=(12, 5)))
    H = pickle.loads(pickle.dumps(G))
    assert H.levels is not None and H == G and np.array_equal(H.init, G.init)
    rows = np.array([3, 0, 0, 11])
    sub = G[rows]
    assert sub.levels is not None and sub == PreferenceGraphs.from_edges(
        np.repeat(np.arange(4), np.diff(G.edge_ptr)[rows]),
        np.concatenate([G.init[G.edge_ptr[r]:G.edge_ptr[r + 1]] for r in rows]),
        np.concatenate([G.term[G.edge_ptr[r]:G.edge_ptr[r + 1]] for r in rows]), n_instances=4, n_labels=5)
    # a graph pickled before the level form (its edge arrays as plain attributes) still loads
    E = PreferenceGraphs(G.edge_ptr, G.init, G.term, 5)
    old = {"edge_ptr": E.edge_ptr, "init": E.init, "term": E.term, "n_labels": 5}
    R = PreferenceGraphs.__new__(PreferenceGraphs)
    R.__setstate__(old)
    assert R == G and R.levels is None


@pytest.mark.parametrize("decomposition", ["domination", "dominated"])
def test_level_form_same_bits_on_one_and_two_threads(decomposition):
    """The level kernels run per instance inside the fixed chunk partition: one and two OpenMP threads (forced
    parallel) give the same fit bit for bit."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(11)
    n, L, d = 1500, 6, 5
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = np.argmax(X @ rng.standard_normal((d, L)) + rng.standard_normal((n, L)), axis=1)
    G = PreferenceGraphs.from_classes(y, L)
    fits = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="openmp"):
            fits.append(solve(X, G, decomposition=decomposition, alpha=0.1, options=Options(parallel_min_rows=1)))
    np.testing.assert_array_equal(fits[0].coef, fits[1].coef)
    assert fits[0].objective == fits[1].objective
