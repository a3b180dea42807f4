"""LabelRankBoost with instance weights (issue 29): F = sum_i w_i (1/s_i) sum_k L_ik + penalty. Against cvxpy
(reference.labelrank with sample_weight) at 1e-6 for every penalty and solver, dense and sparse, float32 and
float64, and a badly scaled column; None = ones; a number = that weight everywhere; weights follow a permutation
of the instances; integer weights = the instances repeated, exactly, for any instance (every solver, path and
the public loss); weight 0 = the instance deleted; the shared errors from fit."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from cyrank.labelrank import LabelRankBoost, PreferenceGraphs, loss, objective, path, solve

ref = pytest.importorskip("reference.labelrank")

TOL = 1e-10


def _data(seed=0, n=30, d=4, L=4, joint=False):
    """Gaussian X, label grades 0, 0, 1, 1 per instance from a noisy linear score (not separable), integer
    weights 0..3 with some zeros and some non-integer ones, and with ``joint`` two joint features per label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X @ rng.normal(size=(d, L)) + 1.5 * rng.normal(size=(n, L))
    J = rng.normal(size=(n, L, 2)) if joint else None
    R = np.argsort(np.argsort(score, axis=1), axis=1) // 2
    w = rng.integers(0, 4, size=n).astype(np.float64)
    w[:3] = [0.0, 0.25, 2.5]
    return X, PreferenceGraphs.from_relevance(R), J, w


def _relative_excess(F, F_ref):
    return (F - F_ref) / max(1.0, abs(F_ref))


def _store(X, storage, dtype=np.float64):
    X = np.asarray(X, dtype=dtype)
    return sp.csr_matrix(X) if storage == "sparse" else X


# ------------------------------------------------------------------------------------------------ against cvxpy
CASES = [("l2", 0.0, "newton"), ("l2", 0.0, "boost"), ("l1", 0.0, "newton"), ("elasticnet", 0.5, "newton")]


@pytest.mark.parametrize("penalty,l1_ratio,solver", CASES)
@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_solve_reaches_the_weighted_cvxpy_optimum(penalty, l1_ratio, solver, storage, dtype):
    """Every penalty and solver: the weighted objective at 1e-6 of cvxpy's weighted optimum, the reported
    objective = the reference's weighted objective at the coefficients, converged with an honest gap."""
    X, G, _, w = _data(seed=1)
    X64 = X.astype(dtype).astype(np.float64)  # the values cyrank sees
    params = dict(penalty=penalty, l1_ratio=l1_ratio, alpha=0.1 if penalty == "l2" else 0.05)
    res = solve(_store(X, storage, dtype), G, tol=TOL, solver=solver, max_iter=100000, sample_weight=w, **params)
    F_ref = ref.objective(X64, G, ref.solve(X64, G, sample_weight=w, **params)["coef"], sample_weight=w, **params)
    F = ref.objective(X64, G, res.coef, sample_weight=w, **params)
    assert res.converged and res.solver == solver
    assert _relative_excess(F, F_ref) <= 1e-6
    assert res.gap <= TOL * max(1.0, abs(F))
    assert res.objective == pytest.approx(F, rel=1e-10)
    # the unweighted optimum is another one (the test can fail)
    assert _relative_excess(ref.objective(X64, G, solve(X64, G, tol=TOL, **params).coef, sample_weight=w,
                                          **params), F_ref) > 1e-4


@pytest.mark.parametrize("decomposition", ["zero_one", "disagreement", "dominated"])
def test_every_decomposition_weighted_against_cvxpy(decomposition):
    """The other decompositions (domination above): Newton on sparse float32 and boosting, at 1e-6."""
    X, G, _, w = _data(seed=13)
    X64 = X.astype(np.float32).astype(np.float64)
    params = dict(alpha=0.1, decomposition=decomposition)
    F_ref = ref.objective(X64, G, ref.solve(X64, G, sample_weight=w, **params)["coef"], sample_weight=w, **params)
    for solver, Xs in (("newton", _store(X, "sparse", np.float32)), ("boost", X64)):
        res = solve(Xs, G, tol=TOL, solver=solver, max_iter=100000, sample_weight=w, **params)
        F = ref.objective(X64, G, res.coef, sample_weight=w, **params)
        assert res.converged and _relative_excess(F, F_ref) <= 1e-6


def test_joint_features_weighted_against_cvxpy():
    """Joint features (shared theta): the weighted optimum, Newton and boosting."""
    X, G, J, w = _data(seed=2, joint=True)
    params = dict(penalty="l2", alpha=0.1)
    sol = ref.solve(X, G, joint=J, sample_weight=w, **params)
    F_ref = ref.objective(X, G, sol["coef"], joint=J, joint_coef=sol["joint_coef"], sample_weight=w, **params)
    for solver in ("newton", "boost"):
        res = solve(X, G, joint=J, tol=TOL, solver=solver, max_iter=100000, sample_weight=w, **params)
        F = ref.objective(X, G, res.coef, joint=J, joint_coef=res.joint_coef, sample_weight=w, **params)
        assert res.converged and _relative_excess(F, F_ref) <= 1e-6


@pytest.mark.parametrize("penalty", ["l2", "l1"])
@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_badly_scaled_columns_weighted(penalty, storage):
    """Columns on scales 1e-3 .. 1e6 with weights: cvxpy's weighted optimum (solved in rescaled variables) at
    1e-6, converged_ with the gap within the default tol."""
    X, G, _, w = _data(seed=3, d=5)
    scale = np.array([1e6, 1.0, 1e-3, 1e3, 1e-1])
    Xs = X * scale
    params = dict(penalty=penalty, alpha=0.1)
    est = LabelRankBoost(**params).fit(_store(Xs, storage), G, sample_weight=w)
    sol = ref.solve(Xs, G, feature_scale=scale, sample_weight=w, **params)
    F_ref = ref.objective(Xs, G, sol["coef"], sample_weight=w, **params)
    F = ref.objective(Xs, G, est.coef_, sample_weight=w, **params)
    assert est.converged_ and est.gap_ <= 1e-6 * max(1.0, abs(F))
    assert _relative_excess(F, F_ref) <= 1e-6


# ------------------------------------------------------------------------------------------------ invariances
def test_none_equals_ones_and_a_number_equals_that_weight_everywhere():
    X, G, _, _ = _data(seed=4)
    n = X.shape[0]
    for penalty in ("l2", "l1"):
        base = solve(X, G, alpha=0.1, penalty=penalty, tol=TOL)
        ones = solve(X, G, alpha=0.1, penalty=penalty, tol=TOL, sample_weight=np.ones(n))
        np.testing.assert_allclose(ones.coef, base.coef, rtol=1e-9, atol=1e-12)
        assert ones.objective == pytest.approx(base.objective, rel=1e-12)
        three = solve(X, G, alpha=0.1, penalty=penalty, tol=TOL, sample_weight=3)
        full = solve(X, G, alpha=0.1, penalty=penalty, tol=TOL, sample_weight=np.full(n, 3.0))
        np.testing.assert_array_equal(three.coef, full.coef)
    coef = base.coef
    assert objective(X, G, coef, alpha=0.1, sample_weight=np.ones(n)) == pytest.approx(
        objective(X, G, coef, alpha=0.1), rel=1e-14)
    # the loss is linear in the weights: 3 x the unpenalised loss
    assert objective(X, G, coef, sample_weight=3.0) == pytest.approx(3.0 * objective(X, G, coef), rel=1e-14)


@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_weights_follow_a_permutation_of_the_instances(storage):
    X, G, _, w = _data(seed=5)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    for penalty, solver in (("l2", "newton"), ("l1", "newton"), ("l2", "boost")):
        kw = dict(alpha=0.1, penalty=penalty, solver=solver, tol=TOL, max_iter=100000)
        a = solve(_store(X, storage), G, sample_weight=w, **kw)
        b = solve(_store(X[perm], storage), G[perm], sample_weight=w[perm], **kw)
        assert b.objective == pytest.approx(a.objective, rel=1e-10)
        if penalty == "l2":  # strictly convex: one optimum (with "l1" a constant added to a feature's weights
            np.testing.assert_allclose(b.coef, a.coef, rtol=1e-7, atol=1e-9)  # of every label may not change F)
        # and the weights are really attached to their instances: unpermuted weights give another model
        c = solve(_store(X[perm], storage), G[perm], sample_weight=w, **kw)
        assert np.abs(c.coef - a.coef).max() > 1e-3


def _repeated(X, G, J, w):
    """Each instance i repeated w_i times (integer weights; 0: deleted)."""
    rows = np.repeat(np.arange(X.shape[0]), w.astype(np.int64))
    return X[rows], G[rows], (None if J is None else J[rows])


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("penalty,solver", [("l2", "newton"), ("l1", "newton"), ("elasticnet", "newton"),
                                            ("l2", "boost")])
def test_integer_weights_are_the_instances_repeated(storage, penalty, solver):
    """Any instance, any integer weight (0 = deleted): the same problem, solved along the same iterates (the
    whitening, preconditioning and stopping scales are sums over instances too), so the same objective to
    rounding and, where the optimum is unique (a ridge term), the same model and iteration counts. With "l1" the
    optimum need not be unique (a constant added to one feature's weights of every label changes no margin), and
    the two sums round differently, so only the objectives are compared."""
    X, G, _, w = _data(seed=6)
    w = np.random.default_rng(1).integers(0, 4, size=X.shape[0]).astype(np.float64)
    Xr, Gr, _ = _repeated(X, G, None, w)
    kw = dict(alpha=0.05, penalty=penalty, solver=solver, tol=1e-9, max_iter=100000)
    a = solve(_store(X, storage), G, sample_weight=w, **kw)
    b = solve(_store(Xr, storage), Gr, **kw)
    assert a.converged and b.converged
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    keep = w > 0  # weight 0 is deletion
    c = solve(_store(X[keep], storage), G[keep], sample_weight=w[keep], **kw)
    assert c.objective == pytest.approx(a.objective, rel=1e-12)
    if penalty != "l1":  # newton stops on its certified gap, which pins w only to sqrt(2 gap / mu)
        rtol = 1e-6 if solver == "newton" else 1e-8
        np.testing.assert_allclose(a.coef, b.coef, rtol=rtol, atol=1e-10)
        np.testing.assert_allclose(a.coef, c.coef, rtol=rtol, atol=1e-10)
        assert a.n_iter == b.n_iter == c.n_iter


def test_integer_weights_with_joint_features_and_the_public_loss():
    """The public datafit (cyrank.labelrank.loss, which cyrank.dask sums over shards): value, gradient and Hessian
    products of the weighted loss = those of the repeated instances, and weighted shards sum to the whole."""
    X, G, J, _ = _data(seed=7, joint=True)
    w = np.random.default_rng(2).integers(0, 4, size=X.shape[0]).astype(np.float64)
    Xr, Gr, Jr = _repeated(X, G, J, w)
    a, b = loss(X, G, joint=J, sample_weight=w), loss(Xr, Gr, joint=Jr)
    assert a.n_rows == b.n_rows == w.sum()
    rng = np.random.default_rng(3)
    x, v = rng.normal(size=a.n_features), rng.normal(size=a.n_features)
    assert a.fun(x) == pytest.approx(b.fun(x), rel=1e-12)
    np.testing.assert_allclose(a.grad(x), b.grad(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.hess_vec(v), b.hess_vec(v), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.column_squares(), b.column_squares(), rtol=1e-12)
    half = np.arange(X.shape[0]) < 12
    parts = [loss(X[m], G[m], joint=J[m], sample_weight=w[m]) for m in (half, ~half)]
    assert sum(p.fun(x) for p in parts) == pytest.approx(a.fun(x), rel=1e-12)
    np.testing.assert_allclose(sum(p.grad(x) for p in parts), a.grad(x), rtol=1e-10, atol=1e-12)
    for solver in ("newton", "boost"):
        r1 = solve(X, G, joint=J, alpha=0.1, solver=solver, tol=1e-9, max_iter=100000, sample_weight=w)
        r2 = solve(Xr, Gr, joint=Jr, alpha=0.1, solver=solver, tol=1e-9, max_iter=100000)
        np.testing.assert_allclose(r1.coef, r2.coef, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(r1.joint_coef, r2.joint_coef, rtol=1e-8, atol=1e-10)


def test_path_with_integer_weights_is_the_path_of_the_repeated_instances():
    X, G, _, _ = _data(seed=8)
    w = np.random.default_rng(4).integers(0, 4, size=X.shape[0]).astype(np.float64)
    Xr, Gr, _ = _repeated(X, G, None, w)
    a = path(X, G, n_alphas=5, tol=1e-9, sample_weight=w)
    b = path(Xr, Gr, n_alphas=5, tol=1e-9)
    np.testing.assert_allclose(a.alphas, b.alphas, rtol=1e-12)
    np.testing.assert_allclose(a.objectives, b.objectives, rtol=1e-10)
    assert np.all(a.converged) and np.all(b.converged)
    u = path(X, G, n_alphas=5, tol=1e-9)
    assert abs(u.alphas[0] - a.alphas[0]) > 1e-3 * a.alphas[0]  # the weights move alpha_max


def test_the_separable_warning_looks_at_positively_weighted_instances_only():
    """alpha = 0: instances of weight 0 do not count. Data separable except for one instance whose graph contradicts
    the others: with that instance at weight 0 the fit has no minimiser (reported), with weight 1 it has one."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(20, 2))
    Y = np.c_[X[:, 0] > 0, X[:, 0] <= 0].astype(int)
    X[0], Y[0] = [3.0, 0.0], [0, 1]  # the contradiction
    w = np.ones(20)
    assert solve(X, Y, alpha=0.0, sample_weight=w, max_iter=200).converged
    w[0] = 0.0
    with np.errstate(over="ignore"):
        res = solve(X, Y, alpha=0.0, sample_weight=w, max_iter=200)
    assert not res.converged and "no minimiser" in res.message


# ------------------------------------------------------------------------------------------------ the estimator
def test_estimator_fit_objective_score_with_weights_and_pickling():
    X, G, _, w = _data(seed=10)
    est = LabelRankBoost(alpha=0.1, tol=TOL).fit(X, G, sample_weight=w)
    res = solve(X, G, alpha=0.1, tol=TOL, sample_weight=w)
    np.testing.assert_array_equal(est.coef_, res.coef)
    assert est.objective(X, G, sample_weight=w) == pytest.approx(est.objective_, rel=1e-12)
    assert est.objective(X, G) != pytest.approx(est.objective_, rel=1e-3)
    # score: the weighted mean of the per-instance errors
    from cyrank.labelrank import label_ranking_error

    per = label_ranking_error(G, est.decision_function(X), "domination", return_per_instance=True)[1]
    kept = ~np.isnan(per)
    assert est.score(X, G, sample_weight=w) == pytest.approx(1 - w[kept] @ per[kept] / w[kept].sum(), rel=1e-12)
    assert est.score(X, G, sample_weight=np.ones(X.shape[0])) == pytest.approx(est.score(X, G), rel=1e-12)
    # class labels: sample_weight is passed through
    y = np.argmax(X[:, :3], axis=1)
    a = LabelRankBoost(alpha=0.1, tol=TOL).fit(X, y, sample_weight=w)
    b = LabelRankBoost(alpha=0.1, tol=TOL).fit(X, PreferenceGraphs.from_classes(y, 3), sample_weight=w)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # clone and pickle unaffected
    assert clone(est).get_params() == est.get_params()
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))


@pytest.mark.parametrize("bad,message", [
    (lambda n: -np.ones(n), "sample_weight must be >= 0"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "sample_weight contains NaN"),
    (lambda n: np.ones(n + 1), "sample_weight"),
    (lambda n: np.zeros(n), "sample_weight is 0 on every instance"),
])
def test_bad_weights_reach_the_user_from_fit(bad, message):
    X, G, _, _ = _data(seed=11)
    with pytest.raises(ValueError, match=message):
        LabelRankBoost(alpha=0.1).fit(X, G, sample_weight=bad(X.shape[0]))
    with pytest.raises(ValueError, match=message):
        loss(X, G, sample_weight=bad(X.shape[0]))


def test_weights_zero_on_every_instance_with_preferences_are_refused():
    X, _, _, _ = _data(seed=12)
    R = np.zeros((X.shape[0], 3))
    R[:5, 0] = 1.0  # only the first five instances have edges
    w = np.r_[np.zeros(5), np.ones(X.shape[0] - 5)]
    with pytest.raises(ValueError, match="0 on every instance with a preference edge"):
        LabelRankBoost(alpha=0.1).fit(X, PreferenceGraphs.from_relevance(R), sample_weight=w)


def test_weighted_kernels_give_the_same_bits_on_one_and_two_threads():
    """The kernels' fixed chunk partition: a weighted fit on 1 and on 2 OpenMP threads (forced parallel) gives the
    same model bit for bit, with and without joint features (enough rows that the partition has more chunks than
    threads: on fewer it depends on the thread count, cyrank/_parallel.pxd, weights or not)."""
    from threadpoolctl import threadpool_limits

    from cyrank.labelrank import Options

    X, G, J, _ = _data(seed=14, n=1500, joint=True)
    w = np.random.default_rng(5).uniform(0.0, 3.0, size=X.shape[0])
    fits = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="openmp"):
            fits.append([solve(X, G, joint=joint, alpha=0.1, tol=TOL, sample_weight=w,
                               options=Options(parallel_min_rows=1)).coef for joint in (None, J)])
    for a, b in zip(*fits):
        np.testing.assert_array_equal(a, b)
