"""MLR (cyrank.mlr.MLR): the whole algorithm and its inner solver against the exact SDP optimum (reference.mlr),
the metric-learn / scikit-learn API, input checks and convergence reporting."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier

import reference.mlr as rm
from cyrank.io import load_model, save_model
from cyrank.mlr import MLR
from cyrank.mlr._constraints import Separation
from cyrank.mlr._inner import _frobenius_ipm, solve_inner

LOSSES = rm.LOSSES
REGULARIZERS = rm.REGULARIZERS


def tiny(seed=1, labels=(0, 0, 0, 1, 1, 1, 1)):
    """7 points in 3-d, one large noisy feature, one informative; the optimum is neither W = 0 nor xi = 0 for
    every loss and regularizer at C = 10 (seed 1)."""
    rng = np.random.default_rng(seed)
    y = np.array(labels)
    X = rng.normal(size=(len(y), 3))
    X[:, 0] *= 2
    X[y == 1, 1] += 1.5
    return X, y


def assert_psd(W):
    assert np.allclose(W, W.T, atol=1e-12)
    assert np.linalg.eigvalsh(W)[0] >= -1e-10


# ---------------------------------------------------------------------------------------- exact optimum
# every loss and regularizer stabilised (the default); plain Kelley (alpha = 0) for every loss with the trace and
# for every regularizer with AUC
SDP_CASES = [(loss, reg, 0.7) for loss in LOSSES for reg in REGULARIZERS] + [
    (loss, reg, 0.0) for loss in LOSSES for reg in REGULARIZERS if reg == "trace" or loss == "auc"]


@pytest.mark.parametrize("loss, reg, alpha", SDP_CASES)
def test_reaches_sdp_optimum(loss, reg, alpha):
    """Both engines: in-out stabilised (certified gap <= C eps) and plain Kelley (alpha = 0)."""
    X, y = tiny()
    C, eps = 10.0, 1e-4
    ref = rm.solve(X, y, loss=loss, k=3, C=C, regularizer=reg)
    m = MLR(loss=loss, k=3, C=C, regularizer=reg, tol=eps, stabilization=alpha).fit(X, y)
    assert m.converged_ and m.violation_ <= eps
    assert_psd(m.W_)
    if reg == "diagonal":
        assert np.count_nonzero(m.W_ - np.diag(np.diag(m.W_))) == 0
    # objective_ is the exact objective at W_ (oracle exactness), never below the optimum, within eps of it
    assert m.objective_ == pytest.approx(rm.objective(m.W_, X, y, loss=loss, k=3, C=C, regularizer=reg), rel=1e-9)
    assert ref.objective - 1e-7 <= m.objective_ <= ref.objective * (1 + 1e-3)
    assert m.objective_ - ref.objective <= C * eps * 1.01 + 1e-9
    # the certified lower bound really is one, and the reported gap keeps its promise (C eps stabilised,
    # 1.5 C epsilon for Kelley)
    assert m.lower_bound_ <= ref.objective + 1e-7
    promise = (1.0 if alpha > 0 else 1.5) * C * eps
    assert m.gap_ == pytest.approx(m.objective_ - m.lower_bound_) and m.gap_ <= promise * (1 + 1e-9)
    assert m.n_separations_ >= m.n_batches_ + (alpha == 0)
    # history_: every recorded lower bound is below the optimum, every objective (the exact objective at a
    # feasible W) above it, and the gap is what the stopping rule tested
    h = m.history_
    assert h["objective"].shape == h["lower_bound"].shape == h["gap"].shape and h["gap"].size >= 1
    assert np.all(h["lower_bound"] <= ref.objective + 1e-7) and np.all(np.diff(h["lower_bound"]) >= 0)
    assert np.all(h["objective"] >= ref.objective - 1e-7)
    assert h["gap"][-1] <= C * eps * (1 + 1e-9) or alpha == 0


def test_reaches_optimum_three_classes_and_explicit_sets():
    X, y = tiny(3, labels=(0, 0, 1, 1, 2, 2, 2))
    C = 5.0
    for loss in ("knn", "map"):
        ref = rm.solve(X, y, loss=loss, k=3, C=C)
        m = MLR(loss=loss, k=3, C=C, tol=1e-4).fit(X, y)
        assert ref.objective - 1e-7 <= m.objective_ <= ref.objective * (1 + 1e-3)
    # explicit relevance sets, some queries with a partial irrelevant set and one inactive query
    rel = [[1, 2], [0], [0, 1], [], [5, 6], [4], [4, 5]]
    irr = [[3, 4], [2, 3, 4, 5], [4, 5, 6], [0], [0, 1], [0, 2, 3], [1]]
    ref = rm.solve(X, relevance=rel, irrelevant=irr, loss="auc", C=C)
    m = MLR(loss="auc", C=C, tol=1e-4).fit(X, relevance=rel, irrelevant=irr)
    assert m.n_queries_ == 6
    assert ref.objective - 1e-7 <= m.objective_ <= ref.objective * (1 + 1e-3)
    # relevance alone: irrelevant = everything else
    rel = [[i for i in range(7) if i != q and y[i] == y[q]] for q in range(7)]
    m2 = MLR(loss="auc", C=C, tol=1e-4).fit(X, relevance=rel)
    m3 = MLR(loss="auc", C=C, tol=1e-4).fit(X, y)
    assert m2.objective_ == pytest.approx(m3.objective_, rel=1e-12)


@pytest.mark.parametrize("reg", REGULARIZERS)
def test_inner_solver_matches_sdp(reg):
    """Working sets collected from real separation calls at random W; the inner solver's certified value must
    be the restricted optimum (cold start, and through the warm-started active-set wrapper)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    y = rng.integers(0, 3, size=30)
    sep = Separation(X, ("labels", y.astype(np.int64)), "map", 3)
    deltas, psis = [], []
    for _ in range(8):
        L = rng.normal(size=(4, 4)) * rng.uniform(0.1, 2.0)
        W = L @ L.T if reg != "diagonal" else np.diag(rng.uniform(0, 2, size=4))
        dl, Psi, _ = sep(W)
        deltas.append(dl)
        psis.append(Psi)
    deltas, psis = np.array(deltas), np.array(psis)
    for C in (0.5, 50.0):
        ref = rm.solve_restricted(deltas, psis, C=C, regularizer=reg)
        tol = 1e-6 * max(1.0, ref.objective)
        arg = np.einsum("taa->ta", psis) if reg == "diagonal" else psis
        res = solve_inner(deltas, arg, C, reg, tol=tol)
        assert res.converged and res.gap <= tol
        assert res.dual - 1e-7 <= ref.objective <= res.primal + 1e-7
        assert res.primal == pytest.approx(ref.objective, abs=2 * tol)
        W = np.diag(res.W) if reg == "diagonal" else res.W
        assert_psd(W)


def unscaled(seed):
    """A small two-class problem whose columns have standard deviations between 1e-2 and 1e2 (some entries 0)."""
    rng = np.random.default_rng(seed)
    n, d = rng.integers(6, 9), rng.integers(3, 6)
    y = np.r_[0, 0, 1, 1, rng.integers(0, 2, n - 4)]
    X = rng.normal(size=(n, d)) * 10 ** np.linspace(-2, 2, d)
    X[rng.random((n, d)) < 0.2] = 0.0
    return X, y


@pytest.mark.parametrize("seed, C", [(0, 10.0), (4, 1e3), (9, 0.1)])
def test_inner_solver_frobenius_on_unscaled_columns(seed, C):
    """Working sets from separations at random W on columns scaled 1e-2 .. 1e2 (Psi entries up to ~1e4, W* near
    1e-5): a certified gap of 1e-8 relative within 100 iterations (the dual Newton method's 50, then the interior
    point's), at the cvxpy optimum (the dual Newton method alone stopped short after 200 steps on such sets)."""
    X, y = unscaled(seed)
    rng = np.random.default_rng(seed)
    sep = Separation(X, ("labels", y.astype(np.int64)), "auc", 3)
    deltas, psis = [], []
    for _ in range(6):
        L = rng.normal(size=(X.shape[1],) * 2) * 10.0 ** rng.uniform(-6, 0)
        dl, Psi, _ = sep(L @ L.T)
        deltas.append(dl)
        psis.append(Psi)
    deltas, psis = np.array(deltas), np.array(psis)
    assert np.abs(psis).max() > 1e3
    ref = rm.solve_restricted(deltas, psis, C=C, regularizer="frobenius")
    tol = 1e-8 * max(1.0, ref.objective)
    res = solve_inner(deltas, psis, C, "frobenius", tol=tol, max_iter=100)
    assert res.converged and res.gap <= tol
    assert res.dual - 1e-7 <= ref.objective <= res.primal + 1e-7
    assert_psd(res.W)
    # the interior point alone, from its cold start: the same optimum within 40 iterations
    W, _, dual, gap, iterations = _frobenius_ipm(deltas, psis, C, tol, 40)
    assert gap <= tol and iterations <= 40
    assert dual - 1e-7 <= ref.objective <= dual + gap + 1e-7
    assert_psd(W)


@pytest.mark.parametrize("loss", ["auc", "mrr", "ndcg"])
def test_frobenius_reaches_the_optimum_on_unscaled_columns(loss):
    """MLR with the Frobenius regulariser on count-like columns (standard deviations 34-115): converged within
    100 cutting planes, its objective within its certified gap of cvxpy's optimum (before the interior-point inner
    solver, AUC at C = 10 ran 1000 separations and stopped with gap / C 0.09)."""
    rng = np.random.default_rng(0)
    n, d = rng.integers(4, 9), rng.integers(1, 6)
    y = np.r_[0, 0, 1, 1, rng.integers(0, 2, n - 4)]
    X = rng.normal(size=(n, d)) * 10 ** rng.uniform(1.5, 2.2, d)
    for C in (10.0, 1e3):
        ref = rm.solve(X, y, loss=loss, k=3, C=C, regularizer="frobenius")
        m = MLR(loss=loss, k=3, C=C, regularizer="frobenius", tol=1e-4, max_iter=100).fit(X, y)
        assert m.converged_
        assert ref.objective - 1e-7 * max(1.0, ref.objective) <= m.objective_ <= ref.objective + m.gap_ + 1e-9
        assert m.lower_bound_ <= ref.objective + 1e-7 * max(1.0, ref.objective)
        assert_psd(m.W_)


@pytest.mark.parametrize("weighted", [False, True])
def test_frobenius_with_a_column_times_1e9_reports_honestly(weighted):
    """One column x 1e9 (batch matrices ~1e18; cvxpy fails on it): where the Frobenius interior point's
    factorisations break down it ends on its best certified iterate instead of raising (it raised LinAlgError
    unweighted); the fit either certifies its gap or stops at max_iter saying so (ConvergenceWarning,
    converged_ False); the objective is finite, exact at W_ and above the certified lower bound; W PSD."""
    X, y = tiny(labels=(0, 0, 0, 1, 1, 1, 0, 1))
    X[:, 2] *= 1e9
    w = np.random.default_rng(0).uniform(0.5, 2.0, y.size) if weighted else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = MLR(C=10.0, regularizer="frobenius", tol=1e-4, max_iter=10).fit(X, y, sample_weight=w)
    stopped = [x for x in caught if issubclass(x.category, ConvergenceWarning) and "max_iter=10" in str(x.message)]
    if m.converged_:
        assert m.gap_ <= 10.0 * 1e-4 * (1 + 1e-9) and not stopped
    else:
        assert m.gap_ > 10.0 * 1e-4 and stopped
    assert np.isfinite(m.objective_) and m.lower_bound_ <= m.objective_
    assert m.gap_ == pytest.approx(m.objective_ - m.lower_bound_)
    assert m.objective_ == pytest.approx(rm.objective(m.W_, X, y, loss="auc", k=3, C=10.0, regularizer="frobenius",
                                                      sample_weight=w), rel=1e-9)
    assert_psd(m.W_)


def test_inner_solver_warns_when_stopped_early():
    X, y = tiny()
    sep = Separation(X, ("labels", y.astype(np.int64)), "auc", 3)
    dl, Psi, _ = sep(np.eye(3))
    dl2, Psi2, _ = sep(np.zeros((3, 3)))
    res = solve_inner([dl, dl2], [Psi, Psi2], 10.0, "trace", tol=1e-12, max_iter=1)
    assert not res.converged and res.gap > 1e-12


def test_warns_on_max_iter():
    X, y = tiny()
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        m = MLR(C=10.0, tol=1e-6, max_iter=2).fit(X, y)
    # 2 separations by the engine, then at most one per truncation threshold
    assert not m.converged_ and m.violation_ > 1e-6 and 2 <= m.n_separations_ <= 5 and 1 <= m.n_batches_ <= 2
    assert m.violation_ == pytest.approx(m.gap_ / 10.0)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        m = MLR(C=10.0, tol=1e-6, max_iter=2, stabilization=0.0).fit(X, y)
    assert not m.converged_ and m.violation_ > 1e-6 and m.n_batches_ == 2 and m.n_separations_ == 3


# ---------------------------------------------------------------------------------------- behaviour
def test_learns_the_informative_direction(rng):
    """Seed Figure 1: a large noisy feature hides the informative one; MLR must find the latter."""
    n = 80
    y = rng.integers(0, 2, size=n)
    X = np.column_stack([rng.normal(size=n) * 10, y + 0.15 * rng.normal(size=n)])
    Xt = np.column_stack([rng.normal(size=n) * 10, (yt := rng.integers(0, 2, size=n)) + 0.15 * rng.normal(size=n)])
    m = MLR(loss="auc", C=10.0).fit(X, y)
    eig, vec = np.linalg.eigh(m.W_)
    assert abs(vec[1, -1]) > 0.99 and eig[0] <= 1e-3 * eig[-1]          # rank one, along the informative axis
    knn = KNeighborsClassifier(3)
    assert knn.fit(m.transform(X), y).score(m.transform(Xt), yt) >= 0.95
    assert knn.fit(X, y).score(Xt, yt) < 0.8                              # Euclidean fails


def test_transform_and_metric_api():
    X, y = tiny()
    m = MLR(loss="map", C=10.0).fit(X, y)
    Z = m.transform(X)
    assert Z.shape == (7, m.components_.shape[0]) and m.components_.shape[0] <= 3
    for i in range(7):
        for j in range(7):
            dx = X[i] - X[j]
            assert np.sum((Z[i] - Z[j]) ** 2) == pytest.approx(dx @ m.W_ @ dx, rel=1e-8, abs=1e-12)
    assert np.allclose(m.get_mahalanobis_matrix(), m.W_, atol=1e-10 * np.abs(m.W_).max())
    pairs = np.stack([X[:4], X[3:]], axis=1)
    dist = np.sqrt(np.einsum("pa,ab,pb->p", pairs[:, 0] - pairs[:, 1], m.W_, pairs[:, 0] - pairs[:, 1]))
    assert np.allclose(m.pair_distance(pairs), dist)
    assert np.allclose(m.pair_score(pairs), -dist)
    with pytest.warns(FutureWarning, match="score_pairs is deprecated"):
        assert np.allclose(m.score_pairs(pairs), dist)
    metric = m.get_metric()
    assert metric(X[0], X[3]) == pytest.approx(dist[0])
    knn_metric = KNeighborsClassifier(1, metric=metric).fit(X, y)
    knn_embed = KNeighborsClassifier(1).fit(Z, y)
    assert np.array_equal(knn_metric.kneighbors(X[:3], 3)[1], knn_embed.kneighbors(Z[:3], 3)[1])
    assert list(m.get_feature_names_out()) == [f"mlr{i}" for i in range(Z.shape[1])]
    with pytest.raises(ValueError, match="is expecting 3 features"):
        m.transform(X[:, :2])
    with pytest.raises(ValueError, match="pairs must have shape"):
        m.pair_distance(X)


def test_trace_is_low_rank_and_diagonal_is_diagonal():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 8))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    m = MLR(C=5.0).fit(X, y)
    assert m.components_.shape[0] < 8
    d = MLR(C=5.0, regularizer="diagonal").fit(X, y)
    assert np.array_equal(d.W_, np.diag(np.diag(d.W_))) and np.all(np.diag(d.W_) >= 0)
    assert np.argmax(np.diag(d.W_)) == 0
    assert np.allclose(d.components_.T @ d.components_, d.W_, rtol=0, atol=1e-8 * d.W_.max())


def test_stabilised_solution_is_truncated():
    """The stabilised engine returns a convex combination of iterates (full rank); dropping its tiny
    eigen-components (entries for "diagonal") must lower the rank without raising the exact objective."""
    from cyrank.mlr import Options, solve

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 8))
    y = (X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=60) > 0).astype(int)
    for reg in ("trace", "diagonal"):
        m = MLR(C=100.0, regularizer=reg).fit(X, y)
        full = solve(X, y, C=100.0, regularizer=reg, options=Options(truncate=()))
        assert m.n_separations_ > full.n_separations
        assert m.components_.shape[0] < full.components.shape[0]
        assert m.objective_ <= full.objective and m.gap_ <= m.C * m.tol
        dl, Psi, _ = Separation(X, ("labels", y.astype(np.int64)), "auc", 3)(m.W_)
        assert m.objective_ == pytest.approx(np.trace(m.W_) + 100.0 * max(0.0, dl - np.vdot(m.W_, Psi)), rel=1e-9)


def test_a_fit_runs_blas_on_one_thread(monkeypatch):
    """Every separation of a fit runs with BLAS on one thread, whatever the caller's limit (its products are
    n x n x d: with BLAS's own threads WDBC's separations took 33 ms instead of 9 on 2 cores)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    if not any(i["user_api"] == "blas" for i in threadpool_info()):
        pytest.skip("threadpoolctl finds no BLAS library")
    seen = []
    original = Separation.__call__

    def spy(self, W):
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return original(self, W)

    monkeypatch.setattr(Separation, "__call__", spy)
    X, y = tiny()
    with threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        MLR(C=10.0).fit(X, y)
        after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert seen and set(seen) == {1}
    assert after == before                     # the caller's limit is back after the fit


def test_threads_dtypes_and_save_load(tmp_path):
    X, y = tiny()
    a = MLR(loss="ndcg", C=10.0).fit(X, y)
    b = MLR(loss="ndcg", C=10.0, n_jobs=2).fit(X, y)
    c = MLR(loss="ndcg", C=10.0).fit(X.astype(np.float32), y)
    assert np.array_equal(a.W_, b.W_) and a.n_batches_ == b.n_batches_
    assert c.objective_ == pytest.approx(a.objective_, rel=1e-5)
    s = MLR(loss="ndcg", C=10.0).fit(X, np.array(["a", "a", "a", "b", "b", "b", "b"]))
    assert np.allclose(s.W_, a.W_) and list(s.classes_) == ["a", "b"]
    save_model(a, tmp_path / "mlr.npz")
    a2 = load_model(tmp_path / "mlr.npz")
    assert a2.get_params() == a.get_params()
    assert np.array_equal(a2.transform(X), a.transform(X))


# ---------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, err, match", [
    ({"C": -1.0}, ValueError, "C must be > 0"),
    ({"C": 0.0}, ValueError, "C must be > 0"),
    ({"k": 0}, ValueError, "k must be >= 1"),
    ({"k": 2.5}, TypeError, "k must be an integer"),
    ({"loss": "ndcg@k"}, ValueError, "loss must be one of"),
    ({"regularizer": "l1"}, ValueError, "regularizer must be one of"),
    ({"tol": 0.0}, ValueError, "tol must be > 0"),
    ({"max_iter": 0}, ValueError, "max_iter must be >= 1"),
    ({"n_jobs": 0}, ValueError, "n_jobs must be >= 1"),
    ({"stabilization": 1.0}, ValueError, "stabilization must be < 1"),
    ({"stabilization": -0.1}, ValueError, "stabilization must be >= 0"),
])
def test_bad_parameters(params, err, match):
    X, y = tiny()
    with pytest.raises(err, match=match):
        MLR(**params).fit(X, y)


def test_bad_data():
    X, y = tiny()
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MLR().fit(Xn, y)
    with pytest.raises(ValueError, match="lengths must match"):
        MLR().fit(X, y[:-1])
    with pytest.raises(ValueError, match="1 class"):
        MLR().fit(X, np.zeros(7))
    with pytest.raises(ValueError, match=r"has 1 member\(s\), fewer than 2"):
        MLR().fit(X, [0, 0, 0, 1, 1, 1, 2])
    with pytest.raises(ValueError, match="target y is None"):
        MLR().fit(X)
    with pytest.raises(ValueError, match="not both"):
        MLR().fit(X, y, relevance=[[1]] * 7)
    with pytest.raises(ValueError, match="7 rows"):
        MLR().fit(X, relevance=[[1]] * 6)
    with pytest.raises(ValueError, match="outside"):
        MLR().fit(X, relevance=[[9]] + [[0]] * 6)
    with pytest.raises(ValueError, match="query 0 itself"):
        MLR().fit(X, relevance=[[0]] + [[0]] * 6)
    with pytest.raises(ValueError, match="share an index"):
        MLR().fit(X, relevance=[[(q + 1) % 7] for q in range(7)],
                  irrelevant=[[1]] + [[(q + 2) % 7] for q in range(1, 7)])
    with pytest.raises(ValueError, match="no query"):
        MLR().fit(X, relevance=[[]] * 7)
    import scipy.sparse as sp
    with pytest.raises(TypeError, match="sparse"):
        MLR().fit(sp.csr_matrix(X), y)


def test_epsilon_is_a_deprecated_name_of_tol():
    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30) % 2
    new = MLR(C=1.0, tol=0.05).fit(X, y)
    with pytest.warns(FutureWarning, match="epsilon was renamed tol"):
        old = MLR(C=1.0, epsilon=0.05).fit(X, y)
    assert old.objective_ == new.objective_ and np.array_equal(old.W_, new.W_)
