"""The lambda kernel (RankNet and LambdaRank gradients) against finite differences and brute-force metric swaps,
and linear RankNet against the exact cvxpy optimum."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from conftest import graded_problem
from cyrank import metrics
from cyrank.io import load_model, save_model
from cyrank.lambdarank import LambdaRank, RankNet, lambdas, objective, parse_metric, solve, solve_lambdarank
from reference import ranknet as ref


def random_queries(seed, n=70, n_queries=6, levels=4, tied_scores=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, levels, n).astype(float)
    qid = rng.integers(0, n_queries, n) * 5 + 2
    s = rng.integers(0, 5, n).astype(float) if tied_scores else rng.normal(size=n)
    return y, s, qid


def _ranking(y, s):
    """Positions by decreasing score, equal scores by increasing label (pessimistic), then input order."""
    return np.lexsort((np.arange(y.size), y, -s))


def _metric_of_order(name, k, y_q, order, max_rel):
    """The metric of the ranking ``order`` (row indices, best first) of one query, through cyrank.metrics."""
    scores = np.empty(y_q.size)
    scores[order] = -np.arange(y_q.size, dtype=float)  # distinct scores in that order
    if name == "ndcg":
        return metrics.ndcg_score(y_q, scores, k=k, empty="zero")
    if name == "err":
        return metrics.err_score(y_q, scores, k=k, max_rel=max_rel, empty="zero")
    return metrics.average_precision(y_q, scores, empty="zero")


def brute_lambdas(metric, y, s, qid, sigma=1.0, truncation=None):
    """Per document sum over pairs y_i > y_j of the gradient -/+ sigma rho |dZ|, dZ = the metric change when i and j
    swap places in the pessimistic ranking (computed by cyrank.metrics on the swapped ranking)."""
    name, k = parse_metric(metric)
    grad, cost = np.zeros(y.size), 0.0
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        order = _ranking(y[idx], s[idx])
        place = np.empty(idx.size, int)
        place[order] = np.arange(idx.size)
        base = None if name == "ranknet" else _metric_of_order(name, k, y[idx], order, y.max())
        for a in range(idx.size):
            for b in range(idx.size):
                if y[idx[a]] <= y[idx[b]]:
                    continue
                if truncation is not None and min(place[a], place[b]) >= truncation:
                    continue
                if name == "ranknet":
                    dz = 1.0
                else:
                    swapped = order.copy()
                    swapped[place[a]], swapped[place[b]] = b, a
                    dz = abs(_metric_of_order(name, k, y[idx], swapped, y.max()) - base)
                u = s[idx[a]] - s[idx[b]]
                rho = 0.5 * (1.0 - np.tanh(0.5 * sigma * u))  # 1 / (1 + e^(sigma u)) without overflow
                grad[idx[a]] -= sigma * rho * dz
                grad[idx[b]] += sigma * rho * dz
                cost += dz * np.logaddexp(0.0, -sigma * u)
    return cost, grad


@pytest.mark.parametrize("metric", ["ranknet", "ndcg", "ndcg@1", "ndcg@3", "ndcg@100", "err", "err@2", "err@5",
                                    "map"])
@pytest.mark.parametrize("tied_scores", [False, True])
@pytest.mark.parametrize("truncation", [None, 2])
def test_lambdas_equal_brute_force_metric_swaps(metric, tied_scores, truncation):
    """Every |dZ| against the metric recomputed on the swapped ranking (cyrank.metrics conventions), on queries
    with tied labels and tied scores, k smaller and larger than the queries."""
    y, s, qid = random_queries(1, tied_scores=tied_scores)
    cost, grad, _ = lambdas(y, s, qid, metric=metric, sigma=1.7, truncation=truncation)
    want_cost, want = brute_lambdas(metric, y, s, qid, sigma=1.7, truncation=truncation)
    np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-13)
    assert cost == pytest.approx(want_cost, rel=1e-12, abs=1e-13)


def test_input_order_ties_and_lightgbm_normalisation():
    """ties="input": equal scores keep the input order (the brute force ranks them so); norm=True: each pair's
    |dZ| over 0.01 + |gap|, then per query the scale log2(1 + S) / S with S = sum of 2 sigma rho |dZ|."""
    y, s, qid = random_queries(14, tied_scores=True)
    _, grad, weight = lambdas(y, s, qid, metric="ndcg", ties="input", norm=True, sigma=1.5)
    want_g, want_w = np.zeros(y.size), np.zeros(y.size)
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        order = np.lexsort((np.arange(idx.size), -s[idx]))  # scores descending, input order
        place = np.empty(idx.size, int)
        place[order] = np.arange(idx.size)
        base = _metric_of_order("ndcg", None, y[idx], order, y.max())
        g, w, total = np.zeros(idx.size), np.zeros(idx.size), 0.0
        for a in range(idx.size):
            for b in range(idx.size):
                if y[idx[a]] <= y[idx[b]]:
                    continue
                swapped = order.copy()
                swapped[place[a]], swapped[place[b]] = b, a
                dz = abs(_metric_of_order("ndcg", None, y[idx], swapped, y.max()) - base)
                if s[idx].max() > s[idx].min():
                    dz /= 0.01 + abs(s[idx[a]] - s[idx[b]])
                rho = 0.5 * (1.0 - np.tanh(0.75 * (s[idx[a]] - s[idx[b]])))
                g[a] -= 1.5 * rho * dz
                g[b] += 1.5 * rho * dz
                w[[a, b]] += 2.25 * rho * (1 - rho) * dz
                total += 2 * 1.5 * rho * dz
        factor = np.log2(1 + total) / total if total > 0 else 1.0
        want_g[idx], want_w[idx] = g * factor, w * factor
    np.testing.assert_allclose(grad, want_g, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(weight, want_w, rtol=1e-12, atol=1e-13)


def test_ranknet_lambdas_and_weights_are_the_gradient_and_gauss_newton_diagonal():
    y, s, qid = random_queries(2)
    cost, grad, weight = lambdas(y, s, qid, sigma=1.3)
    h = 1e-6
    fd = [(lambdas(y, s + h * e, qid, sigma=1.3)[0] - lambdas(y, s - h * e, qid, sigma=1.3)[0]) / (2 * h)
          for e in np.eye(y.size)]
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    fd2 = [(lambdas(y, s + h * e, qid, sigma=1.3)[1] - lambdas(y, s - h * e, qid, sigma=1.3)[1])[i] / (2 * h)
           for i, e in enumerate(np.eye(y.size))]
    np.testing.assert_allclose(weight, fd2, rtol=1e-5, atol=1e-8)  # RankNet: the exact Hessian diagonal


def test_lambdas_are_finite_at_score_gaps_of_1e3():
    y, s, qid = random_queries(3)
    s = np.where(y > 1, 1e3, -1e3) * np.random.default_rng(0).choice([-1, 1], y.size)
    for metric in ("ranknet", "ndcg@10", "err@10", "map"):
        cost, grad, weight = lambdas(y, s, qid, metric=metric)
        assert np.isfinite(cost) and np.all(np.isfinite(grad)) and np.all(np.isfinite(weight))
        want_cost, want = brute_lambdas(metric, y, s, qid)
        np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-12)
        assert cost == pytest.approx(want_cost, rel=1e-12)


def test_lambdas_reject_bad_input():
    y, s, qid = random_queries(4)
    with pytest.raises(ValueError, match="metric"):
        lambdas(y, s, qid, metric="ndcg@0")
    with pytest.raises(ValueError, match="metric"):
        lambdas(y, s, qid, metric="map@3")
    with pytest.raises(ValueError, match="sigma"):
        lambdas(y, s, qid, sigma=0.0)
    with pytest.raises(ValueError, match="non-negative relevance labels"):
        lambdas(y - 2, s, qid, metric="ndcg")
    with pytest.raises(ValueError, match="NaN"):
        lambdas(y, np.where(s > 0, np.nan, s), qid)
    with pytest.raises(ValueError, match="lengths must match"):
        lambdas(y, s[:-1], qid)


# ----------------------------------------------------------------------------------------------- linear RankNet
def make_problem(seed=0, n=72, d=5, density=1.0):
    _, X, y, qid = graded_problem(seed, n, d, 6, 4, noise=1.0, qid_stride=3, qid_shift=1, density=density)
    return X, y, qid


@pytest.mark.parametrize("fmt", ["dense", "csr", "csr32"])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_ranknet_reaches_the_reference_optimum(fmt, alpha, sigma):
    X, y, qid = make_problem(5, density=0.7)
    Xr = X.astype(np.float32).astype(np.float64) if fmt == "csr32" else X
    Xf = sp.csr_matrix(X.astype(np.float32)) if fmt == "csr32" else (sp.csr_matrix(X) if fmt == "csr" else X)
    sol = ref.solve(Xr, y, qid, sigma, alpha)
    res = solve(Xf, y, qid, sigma=sigma, alpha=alpha, tol=1e-10)
    assert res.converged and res.grad_norm <= 1e-10
    assert res.objective == pytest.approx(sol.objective, rel=1e-6)
    assert res.objective >= sol.objective - 1e-7 * abs(sol.objective)
    assert objective(Xf, y, qid, coef=res.coef, sigma=sigma, alpha=alpha) == pytest.approx(
        ref.objective(Xr, y, qid, res.coef, sigma=sigma, alpha=alpha), rel=1e-12)


def test_ranknet_estimator():
    X, y, qid = make_problem(6)
    est = RankNet(alpha=0.3).fit(X, y, qid)
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)
    assert est.objective(X, y, qid) == pytest.approx(est.objective_, rel=1e-12)
    assert est.score(X, y, qid) > metrics.ndcg_score(y, np.zeros(y.size), qid, k=10)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        RankNet(max_iter=1, tol=1e-12).fit(X, y, qid)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))


def test_ranknet_model_file_round_trip(tmp_path):
    X, y, qid = make_problem(7)
    est = RankNet(sigma=2.0, alpha=0.1).fit(sp.csr_matrix(X), y, qid)
    save_model(est, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


def test_ranknet_unsorted_qid_is_the_same_problem():
    X, y, qid = make_problem(8)
    perm = np.random.default_rng(0).permutation(y.size)
    a = solve(X, y, qid, alpha=0.2, tol=1e-10)
    b = solve(X[perm], y[perm], qid[perm], alpha=0.2, tol=1e-10)
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-8, atol=1e-10)


EXPECTED_FAILED = {
    "check_dtype_object": "cyrank._validation refuses object arrays instead of casting them, by design",
}


@parametrize_with_checks([RankNet(max_iter=50, tol=1e-4)], expected_failed_checks=lambda e: EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# ----------------------------------------------------------------------------------------------- linear LambdaRank
def test_lambdarank_descends_its_cost_with_the_lambdas_as_gradient():
    """The cost is piecewise smooth; where the ranking does not change, the lambdas are its exact gradient."""
    from cyrank.lambdarank.solver import _Pairs

    X, y, qid = make_problem(9)
    res = solve_lambdarank(X, y, qid, metric="ndcg@5", max_iter=30)
    assert res.history["objective"][-1] < res.history["objective"][0]
    pairs = _Pairs(y, qid, metric="ndcg@5")
    Xs = X[pairs.order]
    lam, hess = np.empty(y.size), np.empty(y.size)
    cost = pairs.lambdas(Xs @ res.coef, lam, hess) + 1e-3 * res.coef @ res.coef
    assert res.objective == pytest.approx(cost, rel=1e-12)
    # at a point with distinct scores (L-BFGS-B may stop at a kink, where two scores tie)
    w, v = np.random.default_rng(0).normal(size=(2, res.coef.size))
    h = 1e-7  # small enough that no two scores swap
    f = lambda t: pairs.lambdas(Xs @ (w + t * v), lam, hess) + 1e-3 * (w + t * v) @ (w + t * v)
    grad = np.asarray(Xs.T @ (pairs.lambdas(Xs @ w, lam, hess) * 0 + lam)) + 2e-3 * w
    assert grad @ v == pytest.approx((f(h) - f(-h)) / (2 * h), rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("metric", ["ndcg@10", "err@10", "map"])
def test_lambdarank_learns_a_ranking_that_a_linear_model_can_express(metric):
    """Labels from a noiseless linear score: the trained ranking's metric on fresh queries approaches 1."""
    rng = np.random.default_rng(10)
    w_true = rng.normal(size=4)
    X, Xt = rng.normal(size=(300, 4)), rng.normal(size=(300, 4))
    y, yt = (np.digitize(Z @ w_true, [-1.0, 0.0, 1.0]).astype(float) for Z in (X, Xt))
    qid = qt = np.repeat(np.arange(30), 10)
    est = LambdaRank(metric=metric, alpha=1e-4, max_iter=300).fit(X, y, qid, eval_set=(Xt, yt, qt))
    from cyrank.lambdarank.solver import metric_value

    ideal = metric_value(metric, yt, Xt @ w_true, qt, 3.0)
    assert metric_value(metric, yt, est.predict(Xt), qt, 3.0) >= 0.97 * ideal
    assert metric_value(metric, yt, est.predict(Xt), qt, 3.0) == pytest.approx(est.history_["eval"][-1], rel=1e-12)


def test_lambdarank_early_stopping_keeps_the_best_iterate():
    X, y, qid = make_problem(11, n=150)
    Xv, yv, qv = make_problem(12, n=150)
    est = LambdaRank(metric="ndcg@5", early_stopping_rounds=3, max_iter=500).fit(X, y, qid, eval_set=(Xv, yv, qv))
    from cyrank.lambdarank.solver import metric_value

    best = est.history_["eval"]
    assert est.converged_ and est.best_iteration_ == int(np.argmax(best)) + 1
    assert est.n_iter_ - est.best_iteration_ <= 3
    assert metric_value("ndcg@5", yv, est.predict(Xv), qv) == pytest.approx(best.max(), rel=1e-12)
    with pytest.raises(ValueError, match="needs an eval_set"):
        LambdaRank(early_stopping_rounds=3).fit(X, y, qid)
    with pytest.raises(ValueError, match="metric"):
        LambdaRank(metric="dcg").fit(X, y, qid)


def test_lambdarank_warns_at_max_iter_and_round_trips(tmp_path):
    X, y, qid = make_problem(13)
    with pytest.warns(ConvergenceWarning, match="LambdaRank stopped after 2 iterations"):
        est = LambdaRank(max_iter=2).fit(X, y, qid)
    save_model(est, tmp_path / "m.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "m.npz").predict(X), est.predict(X))


@parametrize_with_checks([LambdaRank(max_iter=20)], expected_failed_checks=lambda e: EXPECTED_FAILED)
def test_lambdarank_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_huge_labels_are_refused_for_ndcg_and_exact_for_err():
    y, s, qid = random_queries(15)
    y = y * 300.0  # labels up to 900: 2^y overflows
    with pytest.raises(ValueError, match="overflows for labels above 512"):
        lambdas(y, s, qid, metric="ndcg@10")
    cost, grad, weight = lambdas(y, s, qid, metric="err@5")
    assert np.isfinite(cost) and np.all(np.isfinite(grad)) and np.all(np.isfinite(weight))
    np.testing.assert_allclose(grad, brute_lambdas("err@5", y, s, qid)[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("metric", ["ranknet", "ndcg", "ndcg@3"])
@pytest.mark.parametrize("ties, norm, truncation", [("pessimistic", False, None), ("input", True, 4),
                                                    ("pessimistic", True, None), ("input", False, 2)])
def test_the_branch_light_loop_equals_the_general_one(metric, ties, norm, truncation):
    """Without the cost, NDCG and RankNet weights take a second pair loop (LambdaMART's call): same lambdas."""
    from cyrank.lambdarank.solver import _Pairs

    y, s, qid = random_queries(16, tied_scores=True)
    pairs = _Pairs(y, qid, metric=metric, ties=ties, norm=norm, truncation=truncation, sigma=1.3)
    scores = np.ascontiguousarray(s[pairs.order])
    out = [(np.empty(y.size), np.empty(y.size)) for _ in range(2)]
    pairs.lambdas(scores, *out[0], with_cost=True)
    pairs.lambdas(scores, *out[1], with_cost=False)
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12, atol=1e-15)
