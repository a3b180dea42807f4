"""sample_weight in RankNet, LambdaRank and the lambdas: the pair (i, j), y_i > y_j, counts with c_i, the weight
of its preferred row (Joachims, Swaminathan & Schnabel, WSDM 2017). The lambda kernel against a brute-force pair
loop, weighted RankNet and LambdaRank's inner weighted RankNet against the weighted cvxpy reference, and the
replication, deletion, permutation and error rules of issue 29."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from cyrank.datasets import make_ranking
from cyrank.lambdarank import (LambdaRank, Lambdas, RankNet, lambdas, loss, objective, path, solve,
                               solve_lambdarank, solve_weighted_ranknet)
from cyrank.lambdarank.solver import _Pairs
from reference import ranknet as ref
from test_lambdarank import brute_pair_weights, brute_weights_of_reference_pairs


def random_queries(seed, n=40, n_queries=6, levels=4, scores="normal"):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, levels, n).astype(float)
    qid = rng.integers(0, n_queries, n) * 5 + 2
    s = {"normal": rng.normal(size=n), "tied": rng.integers(0, 4, n).astype(float), "zero": np.zeros(n)}[scores]
    c = rng.uniform(0.0, 3.0, n)
    c[rng.random(n) < 0.25] = 0.0
    return y, s, qid, c


def brute_weighted_lambdas(metric, y, s, qid, c, sigma=1.0, truncation=None, ties="pessimistic", norm=False):
    """(cost, gradient, weight) by a plain loop over the pairs y_i > y_j of each query: |dZ_ij| from
    test_lambdarank.brute_pair_weights times c_i, -/+ sigma rho on both documents, sigma^2 rho (1 - rho) added to
    both; with ``norm``, |dZ| over 0.01 + |gap| and the query scaled by log2(1 + S) / S, S = sum 2 sigma rho |dZ|."""
    cost, grad, hess = 0.0, np.zeros(y.size), np.zeros(y.size)
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        g, h, total = np.zeros(y.size), np.zeros(y.size), 0.0
        for (a, b), dz in brute_pair_weights(metric, y[idx], s[idx], ties, truncation, max_rel=y.max()).items():
            i, j = idx[a], idx[b]
            u = s[i] - s[j]
            if norm and np.ptp(s[idx]) > 0:
                dz = dz / (0.01 + abs(u))
            dz = dz * c[i]
            rho = 0.5 * (1.0 - np.tanh(0.5 * sigma * u))
            g[i] -= sigma * rho * dz
            g[j] += sigma * rho * dz
            h[[i, j]] += sigma ** 2 * rho * (1.0 - rho) * dz
            total += 2.0 * sigma * rho * dz
            cost += dz * np.logaddexp(0.0, -sigma * u)
        factor = np.log2(1.0 + total) / total if norm and total > 0 else 1.0
        grad += g * factor
        hess += h * factor
    return cost, grad, hess


# --------------------------------------------------------------------------------------------- the lambdas
@pytest.mark.parametrize("metric", ["ranknet", "ndcg", "ndcg@3", "err@2", "map"])
@pytest.mark.parametrize("scores", ["normal", "tied", "zero"])
@pytest.mark.parametrize("truncation", [None, 2])
def test_weighted_lambdas_equal_the_brute_force(metric, scores, truncation):
    """Gradient, Gauss-Newton weight and cost with weights (a quarter of them 0) against the plain pair loop, on
    queries with tied labels and tied (or all equal: LambdaMART's first round) scores; with a cut-off (ndcg@3,
    truncation) the kernel's O(k n) loop over runs of interchangeable rows, whose weights differ."""
    y, s, qid, c = random_queries(3, scores=scores)
    cost, grad, hess = lambdas(y, s, qid, metric=metric, sigma=1.3, truncation=truncation, sample_weight=c)
    want = brute_weighted_lambdas(metric, y, s, qid, c, sigma=1.3, truncation=truncation)
    np.testing.assert_allclose(grad, want[1], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(hess, want[2], rtol=1e-12, atol=1e-13)
    assert cost == pytest.approx(want[0], rel=1e-12, abs=1e-13)
    unweighted = lambdas(y, s, qid, metric=metric, sigma=1.3, truncation=truncation)
    assert not np.allclose(grad, unweighted[1])  # the weights matter: this test can fail


@pytest.mark.parametrize("metric, ties", [("ndcg@3", "average"), ("ranknet", "average"), ("ndcg", "input")])
@pytest.mark.parametrize("norm", [False, True])
def test_weighted_lambdas_other_tie_rules_and_lightgbm_norm(metric, ties, norm):
    """ties="average" and "input", and norm=True (S summed with the weights), against the brute force."""
    y, s, qid, c = random_queries(8, scores="tied")
    if ties == "input":  # the brute force orders equal scores by input order only when rows are in query order
        order = np.argsort(qid, kind="stable")
        y, s, qid, c = y[order], s[order], qid[order], c[order]
    cost, grad, hess = lambdas(y, s, qid, metric=metric, truncation=3, ties=ties, norm=norm, sample_weight=c)
    want = brute_weighted_lambdas(metric, y, s, qid, c, truncation=3, ties=ties, norm=norm)
    np.testing.assert_allclose(grad, want[1], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(hess, want[2], rtol=1e-12, atol=1e-13)
    assert cost == pytest.approx(want[0], rel=1e-12, abs=1e-13)


def test_lambdas_weights_none_ones_number_permutation_and_prepared_object():
    y, s, qid, c = random_queries(4, scores="tied")
    for metric in ("ndcg@3", "err", "ranknet"):
        plain = lambdas(y, s, qid, metric=metric)
        for ones in (np.ones(y.size), 1.0):
            same = lambdas(y, s, qid, metric=metric, sample_weight=ones)
            for a, b in zip(plain, same):
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
        twice = lambdas(y, s, qid, metric=metric, sample_weight=2.0)
        for a, b in zip(plain, twice):
            np.testing.assert_allclose(2 * np.asarray(a), b, rtol=1e-13, atol=1e-15)
        weighted = lambdas(y, s, qid, metric=metric, sample_weight=c)
        prepared = Lambdas(y, qid, metric=metric, sample_weight=c)
        for a, b in zip(weighted, prepared(s)):
            assert np.array_equal(a, b)
        assert all(np.array_equal(a, b) for a, b in zip(weighted[1:], prepared.gradient(s)))
        perm = np.random.default_rng(1).permutation(y.size)
        moved = lambdas(y[perm], s[perm], qid[perm] * 7 + 3, metric=metric, sample_weight=c[perm])
        assert moved[0] == pytest.approx(weighted[0], rel=1e-13)
        np.testing.assert_allclose(moved[1], weighted[1][perm], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(moved[2], weighted[2][perm], rtol=1e-13, atol=1e-15)


def test_reference_pair_weights_are_dz_times_the_preferred_weight():
    """_lambdas.Reference (linear LambdaRank's weights): every pair's weight = brute-force |dZ_ij| times c_i."""
    rng = np.random.default_rng(5)
    for metric in ("ndcg@2", "err@3", "map", "ranknet"):
        for _ in range(20):
            n = int(rng.integers(2, 8))
            y = np.sort(rng.integers(0, 4, n)).astype(float)
            s = rng.integers(0, 3, n).astype(float)
            c = rng.uniform(0, 2, n)
            pairs = _Pairs(y, None, metric=metric, max_rel=3.0, sample_weight=c)
            I, J, W = pairs.reference(s).pair_weights()
            want = brute_pair_weights(metric, y, s, max_rel=3.0)
            for i, j, w in zip(I, J, W):
                assert w == pytest.approx(want[i, j] * c[i], rel=1e-12, abs=1e-14)


# ------------------------------------------------------------------------------------------ weighted RankNet
def make_problem(seed=0, n=72, d=5, density=1.0):
    X, y, qid = make_ranking(6, n, d, 4, density=density, binning="global", shuffle=True, random_state=seed)
    c = np.random.default_rng(seed).uniform(0.0, 3.0, y.size)
    c[np.random.default_rng(seed + 1).random(y.size) < 0.2] = 0.0
    return X, y, qid * 3 + 1, c


def formats(X):
    return {"dense": X, "csr": sp.csr_matrix(X), "dense32": X.astype(np.float32),
            "csr32": sp.csr_matrix(X.astype(np.float32))}


@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet"])
@pytest.mark.parametrize("fmt", ["dense", "csr", "dense32", "csr32"])
def test_weighted_ranknet_reaches_the_weighted_reference_optimum(penalty, fmt):
    X, y, qid, c = make_problem(5, density=0.7)
    Xf = formats(X)[fmt]
    Xr = X.astype(np.float32).astype(np.float64) if fmt.endswith("32") else X
    sol = ref.solve(Xr, y, qid, 1.0, 0.7, penalty=penalty, sample_weight=c)
    res = solve(Xf, y, qid, alpha=0.7, penalty=penalty, tol=1e-10, sample_weight=c)
    assert res.converged
    assert res.objective == pytest.approx(sol.objective, rel=1e-6)
    assert res.objective >= sol.objective - 1e-7 * abs(sol.objective)
    assert objective(Xf, y, qid, coef=res.coef, alpha=0.7, penalty=penalty, sample_weight=c) == pytest.approx(
        ref.objective(Xr, y, qid, res.coef, alpha=0.7, penalty=penalty, sample_weight=c), rel=1e-12)
    unweighted = ref.objective(Xr, y, qid, res.coef, alpha=0.7, penalty=penalty)
    assert abs(unweighted - res.objective) > 1e-3 * abs(res.objective)  # the weights matter


def test_weighted_ranknet_with_a_badly_scaled_column():
    """Columns on scales 1e-3 .. 1e6: the weighted optimum of cvxpy (solved in rescaled coordinates)."""
    X, y, qid, c = make_problem(9)
    scales = np.array([1e-3, 1.0, 1e2, 1e6, 1.0])
    Xs = X * scales
    sol = ref.solve(Xs, y, qid, 1.0, 0.3, feature_scale=scales, sample_weight=c)
    for Xf in (Xs, sp.csr_matrix(Xs)):
        res = solve(Xf, y, qid, alpha=0.3, tol=1e-10, sample_weight=c)
        assert res.converged
        assert res.objective == pytest.approx(sol.objective, rel=1e-6)


def test_weighted_ranknet_loss_object_and_path():
    """The loss builder of cyrank/dask.py and the path take the weights too."""
    X, y, qid, c = make_problem(2)
    w = np.random.default_rng(0).normal(size=X.shape[1])
    datafit = loss(X, y, qid, sample_weight=c)
    assert datafit.fun(w) == pytest.approx(ref.objective(X, y, qid, w, alpha=0.0, sample_weight=c), rel=1e-12)
    p = path(X, y, qid, n_alphas=3, penalty="l1", tol=1e-9, sample_weight=c)
    last = solve(X, y, qid, penalty="l1", alpha=p.alphas[-1], tol=1e-9, sample_weight=c)
    assert p.objectives[-1] == pytest.approx(last.objective, rel=1e-7)


def test_ranknet_weights_none_equal_ones_and_follow_the_rows():
    X, y, qid, c = make_problem(3)
    plain = RankNet(alpha=0.3, tol=1e-10).fit(X, y, qid)
    ones = RankNet(alpha=0.3, tol=1e-10).fit(X, y, qid, sample_weight=np.ones(y.size))
    assert np.array_equal(plain.coef_, ones.coef_)  # the same operations: c_i sigma = sigma
    est = RankNet(alpha=0.3, tol=1e-10).fit(X, y, qid, sample_weight=c)
    perm = np.random.default_rng(0).permutation(y.size)
    moved = RankNet(alpha=0.3, tol=1e-10).fit(X[perm], y[perm], qid[perm] * 11 - 4, sample_weight=c[perm])
    assert np.array_equal(est.coef_, moved.coef_)  # the rows in an order fixed by content: the same bits
    assert est.objective(X, y, qid, sample_weight=c) == pytest.approx(est.objective_, rel=1e-12)
    assert not np.allclose(est.coef_, plain.coef_)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert clone(est).get_params() == est.get_params()


def duplicated(X, y, qid, c, rows):
    """The data with ``rows`` repeated once more (in a copy of their own query: the same qid)."""
    return (np.vstack([X, X[rows]]), np.r_[y, y[rows]], np.r_[qid, qid[rows]],
            None if c is None else np.r_[c, c[rows]])


def top_label_rows(y, qid):
    return np.array([i for i in range(y.size) if y[i] == y[qid == qid[i]].max() and np.ptp(y[qid == qid[i]]) > 0])


def test_ranknet_weight_replication_rules():
    """(1) weight 2 constant on a query = the query given twice (under a new qid); (2) weight 2 on rows of their
    query's top label = those rows given twice; (3) weight 0 on such rows = deleting them. Objectives to 1e-12,
    coefficients to 1e-7."""
    X, y, qid, _ = make_problem(4)
    fit = dict(alpha=0.5, tol=1e-11)
    q0 = qid == qid[0]
    c = np.where(q0, 2.0, 1.0)
    rows = np.flatnonzero(q0)
    Xd, yd, qd = np.vstack([X, X[rows]]), np.r_[y, y[rows]], np.r_[qid, np.full(rows.size, qid.max() + 1)]
    a, b = solve(X, y, qid, sample_weight=c, **fit), solve(Xd, yd, qd, **fit)
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-7, atol=1e-9)
    top = top_label_rows(y, qid)[::2]
    c = np.ones(y.size)
    c[top] = 2.0
    a, b = solve(X, y, qid, sample_weight=c, **fit), solve(*duplicated(X, y, qid, None, top)[:3], **fit)
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-7, atol=1e-9)
    c[top] = 0.0
    keep = np.setdiff1d(np.arange(y.size), top)
    a, b = solve(X, y, qid, sample_weight=c, **fit), solve(X[keep], y[keep], qid[keep], **fit)
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-7, atol=1e-9)


def test_a_row_weight_is_not_a_row_repeated_when_the_row_is_also_less_preferred():
    """Why general row replication differs (do not "fix" it): a row k of a middle label weighted 2 doubles the
    pairs where k is preferred, but a copy of k also doubles the pairs where k is the LESS preferred row (weighted
    by the other rows' weights); the weighted objective equals the duplicated one only minus those pairs."""
    X, y, qid, _ = make_problem(4)
    levels = [i for i in range(y.size) if y[(qid == qid[i])].min() < y[i] < y[(qid == qid[i])].max()]
    k = levels[0]
    w = np.random.default_rng(0).normal(size=X.shape[1])
    c = np.ones(y.size)
    c[k] = 2.0
    weighted = objective(X, y, qid, coef=w, alpha=0.0, sample_weight=c)
    repeated = objective(*duplicated(X, y, qid, None, [k])[:3], coef=w, alpha=0.0)
    below = (qid == qid[k]) & (y > y[k])  # the rows preferred to k: their pairs with k
    extra = float(np.sum(np.logaddexp(0.0, -(X[below] - X[k]) @ w)))
    assert abs(repeated - weighted) > 1e-3, (
        f"row {k} (label {y[k]} of {sorted(set(y[qid == qid[k]]))}) weighted 2: objective {weighted:.6f}; "
        f"repeated: {repeated:.6f}; the difference {repeated - weighted:.6f} is the {int(below.sum())} pairs where "
        f"the copy is less preferred")
    assert repeated - weighted == pytest.approx(extra, rel=1e-10), (repeated, weighted, extra)


@pytest.mark.parametrize("make", [lambda: RankNet(), lambda: LambdaRank(max_iter=2)])
def test_bad_weights_reach_the_user_from_fit(make):
    X, y, qid, c = make_problem(1)
    bad = {"must be >= 0": np.where(np.arange(y.size) == 3, -1.0, 1.0), "NaN": np.where(np.arange(y.size) == 2,
                                                                                        np.nan, 1.0),
           "sample_weight": np.ones(y.size - 1), "0 on every row": np.zeros(y.size)}
    for message, weights in bad.items():
        with pytest.raises(ValueError, match=message):
            make().fit(X, y, qid, sample_weight=weights)
    lowest = np.array([y[i] == y[qid == qid[i]].min() for i in range(y.size)], dtype=float)
    with pytest.raises(ValueError, match="every row that is preferred"):
        make().fit(X, y, qid, sample_weight=lowest)


# --------------------------------------------------------------------------------------- weighted LambdaRank
@pytest.mark.parametrize("metric", ["ndcg@3", "err@5", "map"])
def test_weighted_inner_solve_reaches_the_weighted_reference_optimum(metric):
    """solve_weighted_ranknet with sample_weight: the cvxpy optimum of sum c_i |dZ_ij| log(1 + e^-u) + alpha
    ||w||^2, |dZ| by the brute force at the ranking of a fixed w_prev, c_i on the preferred row."""
    X, y, qid, c = make_problem(7)
    w_prev = np.random.default_rng(7).normal(size=X.shape[1])
    dz = brute_weights_of_reference_pairs(metric, X, y, qid, coef=w_prev)
    for Xf in (X, sp.csr_matrix(X.astype(np.float32))):
        Xr = X if Xf is X else X.astype(np.float32).astype(np.float64)
        sol = ref.solve(Xr, y, qid, 1.0, 0.4, pair_weight=dz, sample_weight=c)
        ours = solve_weighted_ranknet(Xf, y, qid, reference_scores=X @ w_prev, metric=metric, alpha=0.4, tol=1e-10,
                                      sample_weight=c)
        assert ours.converged
        assert ours.objective == pytest.approx(sol.objective, rel=1e-6)


def test_weighted_lambdarank_query_weight_is_the_query_repeated_and_none_is_ones():
    X, y, qid, c = make_problem(6)
    est = LambdaRank(metric="ndcg@5", alpha=1.0, max_iter=5)
    plain = solve_lambdarank(X, y, qid, metric="ndcg@5", max_iter=5)
    ones = solve_lambdarank(X, y, qid, metric="ndcg@5", max_iter=5, sample_weight=np.ones(y.size))
    np.testing.assert_allclose(plain.coef, ones.coef, rtol=1e-9, atol=1e-12)
    q0 = qid == qid[0]
    rows = np.flatnonzero(q0)
    a = clone(est).fit(X, y, qid, sample_weight=np.where(q0, 2.0, 1.0))
    b = clone(est).fit(np.vstack([X, X[rows]]), np.r_[y, y[rows]], np.r_[qid, np.full(rows.size, qid.max() + 1)])
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    weighted = clone(est).fit(X, y, qid, sample_weight=c)
    assert not np.allclose(weighted.coef_, a.coef_)
    perm = np.random.default_rng(2).permutation(y.size)
    moved = clone(est).fit(X[perm], y[perm], qid[perm], sample_weight=c[perm])
    assert np.array_equal(moved.coef_, weighted.coef_)


def test_weighted_kernels_give_the_same_bits_on_one_and_on_every_thread():
    """parallel_min_rows=0 (OpenMP's threads, one query each) against one thread: the weighted lambdas and the
    weighted RankNet solve are the same bits (queries write their own rows; chunk sums in a fixed order)."""
    from cyrank.lambdarank.solver import SortedX, _solve_sorted

    X, y, qid, c = make_problem(8, n=300)
    s = np.random.default_rng(0).normal(size=y.size)
    out = []
    for min_rows in (0, 10**9):
        pairs = _Pairs(y, qid, metric="ndcg@3", X=X, sample_weight=c, parallel_min_rows=min_rows)
        lam, hess = np.empty(y.size), np.empty(y.size)
        cost = pairs.lambdas(s[pairs.order], lam, hess)
        ranknet = pairs.ranknet()
        res = _solve_sorted(SortedX(X, ranknet), ranknet, 0.0, 0.5, np.zeros(X.shape[1]), tol=1e-8, max_iter=100,
                            verbose=0)
        out.append((cost, lam, hess, res.coef))
    for a, b in zip(*out):
        assert np.array_equal(a, b)
