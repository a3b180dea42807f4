"""MLR with query weights (issue 29): xi = sum_q v_q xi_q / sum_q v_q, the weighted mean of the queries' slacks
(1-slack margin rescaling: the cutting plane is the weighted mean of the queries' psi differences and losses).
Against the exact SDP (reference.mlr with sample_weight) for every loss and regulariser within the 1e-3 of
tests/test_mlr.py; an integer weight = the query repeated as a query (reference.mlr's ``queries``, the points once
in the database); unit weights = unweighted; weight 0 = the query left out; weights follow a permutation of the
points; the weighted batch = the weighted mean of the single-query batches; the shared errors from fit."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone

import reference.mlr as rm
from cyrank.mlr import MLR, solve
from cyrank.mlr._constraints import Separation

C, EPS = 10.0, 1e-4


def tiny(seed=1, labels=(0, 0, 0, 1, 1, 1, 1)):
    """tests/test_mlr.py's 7 points in 3-d, and weights with a 0, a fraction and integers."""
    rng = np.random.default_rng(seed)
    y = np.array(labels)
    X = rng.normal(size=(len(y), 3))
    X[:, 0] *= 2
    X[y == 1, 1] += 1.5
    return X, y, np.array([2.0, 0.0, 1.0, 3.0, 1.0, 0.5, 1.0])


def assert_near_optimum(m, ref_objective):
    """tests/test_mlr.py's promise: never below the optimum, within 1e-3 (relative) and C eps of it, a certified
    lower bound below it."""
    assert m.converged_
    assert ref_objective - 1e-7 <= m.objective_ <= ref_objective * (1 + 1e-3)
    assert m.objective_ - ref_objective <= C * EPS * 1.01 + 1e-9
    assert m.lower_bound_ <= ref_objective + 1e-7


@pytest.mark.parametrize("loss", rm.LOSSES)
@pytest.mark.parametrize("reg", rm.REGULARIZERS)
def test_weighted_fit_reaches_the_weighted_sdp_optimum(loss, reg):
    X, y, w = tiny()
    ref = rm.solve(X, y, loss=loss, k=3, C=C, regularizer=reg, sample_weight=w)
    m = MLR(loss=loss, k=3, C=C, regularizer=reg, tol=EPS).fit(X, y, sample_weight=w)
    assert m.objective_ == pytest.approx(rm.objective(m.W_, X, y, loss=loss, k=3, C=C, regularizer=reg,
                                                      sample_weight=w), rel=1e-9)
    assert_near_optimum(m, ref.objective)
    assert m.n_queries_ == 6  # the active queries of positive weight


def test_weights_change_the_optimum():
    """The test above can fail: the unweighted fit is off the weighted optimum by far more than 1e-3."""
    X, y, w = tiny()
    ref = rm.solve(X, y, loss="auc", C=C, sample_weight=w)
    m = MLR(loss="auc", C=C, tol=EPS).fit(X, y)
    assert rm.objective(m.W_, X, y, loss="auc", C=C, sample_weight=w) > ref.objective * (1 + 1e-2)


@pytest.mark.parametrize("loss,reg", [("auc", "trace"), ("map", "frobenius"), ("ndcg", "diagonal")])
def test_an_integer_weight_is_the_query_repeated(loss, reg):
    """v_q = 3 is query q listed three times among the queries (its point once in the database): the same exact
    optimum in the reference, and cyrank's weighted fit within 1e-3 of it with its exact objective."""
    X, y, _ = tiny()
    w = np.array([3.0, 1.0, 0.0, 2.0, 1.0, 1.0, 1.0])
    queries = np.repeat(np.arange(7), w.astype(int))  # query 0 three times, query 2 never, query 3 twice
    repeated = rm.solve(X, y, loss=loss, C=C, regularizer=reg, queries=queries)
    weighted = rm.solve(X, y, loss=loss, C=C, regularizer=reg, sample_weight=w)
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-6)
    m = MLR(loss=loss, C=C, regularizer=reg, tol=EPS).fit(X, y, sample_weight=w)
    assert m.objective_ == pytest.approx(rm.objective(m.W_, X, y, loss=loss, C=C, regularizer=reg,
                                                      queries=queries), rel=1e-9)
    assert_near_optimum(m, repeated.objective)


def test_unit_weights_are_the_unweighted_problem():
    """Unit weights: the same operations, so the same model bit for bit; a constant weight (a number): the same
    problem, reached along slightly different rounding."""
    X, y, _ = tiny()
    for loss, reg in (("auc", "trace"), ("mrr", "diagonal"), ("prec@k", "frobenius")):
        a = MLR(loss=loss, C=C, regularizer=reg, tol=EPS).fit(X, y)
        b = MLR(loss=loss, C=C, regularizer=reg, tol=EPS).fit(X, y, sample_weight=np.ones(7))
        np.testing.assert_array_equal(b.W_, a.W_)
        assert b.objective_ == a.objective_ and b.n_queries_ == a.n_queries_
        c = MLR(loss=loss, C=C, regularizer=reg, tol=EPS).fit(X, y, sample_weight=2.5)  # a number: every query
        assert_near_optimum(c, rm.solve(X, y, loss=loss, C=C, regularizer=reg).objective)


def test_weight_zero_leaves_the_query_out_not_its_point():
    """v_q = 0 is query q without relevant points (explicit sets): the point still ranks for the other queries."""
    X, y, _ = tiny()
    w = np.ones(7)
    w[4] = 0.0
    rel = [[i for i in range(7) if i != q and y[i] == y[q]] for q in range(7)]
    irr = [[i for i in range(7) if y[i] != y[q]] for q in range(7)]
    rel_out = [r if q != 4 else [] for q, r in enumerate(rel)]
    a = MLR(loss="map", C=C, tol=EPS).fit(X, y, sample_weight=w)
    b = MLR(loss="map", C=C, tol=EPS).fit(X, relevance=rel_out, irrelevant=irr)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6) and a.n_queries_ == b.n_queries_ == 6
    # explicit sets with weights: the same problem once more
    c = MLR(loss="map", C=C, tol=EPS).fit(X, relevance=rel, irrelevant=irr, sample_weight=w)
    assert c.objective_ == pytest.approx(a.objective_, rel=1e-6)
    ref = rm.solve(X, relevance=rel_out, irrelevant=irr, loss="map", C=C)
    assert_near_optimum(a, ref.objective)


def test_weights_follow_a_permutation_of_the_points():
    X, y, w = tiny(seed=2)
    perm = np.array([3, 6, 0, 5, 1, 4, 2])
    a = MLR(loss="auc", C=C, tol=EPS).fit(X, y, sample_weight=w)
    b = MLR(loss="auc", C=C, tol=EPS).fit(X[perm], y[perm], sample_weight=w[perm])
    ref = rm.solve(X, y, loss="auc", C=C, sample_weight=w).objective
    assert_near_optimum(a, ref)
    assert_near_optimum(b, ref)
    c = MLR(loss="auc", C=C, tol=EPS).fit(X[perm], y[perm], sample_weight=w)  # weights left behind: another problem
    assert abs(rm.objective(c.W_, X[perm], y[perm], loss="auc", C=C, sample_weight=w) - c.objective_) < 1e-9
    assert c.objective_ > ref * (1 + 1e-2) or c.objective_ < ref * (1 - 1e-2)


@pytest.mark.parametrize("loss", ["auc", "ndcg"])
def test_weighted_batch_is_the_weighted_mean_of_single_query_batches(loss):
    """Separation with weights v: (Delta, Psi, H) = sum_q v_q (Delta_q, Psi_q, H_q) / sum v over the active
    queries, each single-query batch computed unweighted (explicit sets with only that query active)."""
    rng = np.random.default_rng(3)
    n, d = 25, 4
    X = rng.normal(size=(n, d))
    labels = rng.integers(0, 3, size=n).astype(np.int64)
    labels[:2] = [0, 1]
    v = rng.uniform(0.0, 3.0, size=n)
    v[[2, 5]] = 0.0
    L = rng.normal(size=(d, d))
    W = L @ L.T
    delta, Psi, H = Separation(X, ("labels", labels), loss, 3, weight=v)(W)
    rel = [np.flatnonzero((labels == labels[q]) & (np.arange(n) != q)) for q in range(n)]
    irr = [np.flatnonzero(labels != labels[q]) for q in range(n)]
    total, acc_delta, acc_psi, acc_h = 0.0, 0.0, np.zeros((d, d)), 0.0
    empty = np.zeros(0, dtype=np.int64)
    for q in range(n):
        if rel[q].size == 0 or irr[q].size == 0:
            continue
        ptr_r = np.r_[np.zeros(q + 1), np.full(n - q, rel[q].size)].astype(np.int64)
        ptr_i = np.r_[np.zeros(q + 1), np.full(n - q, irr[q].size)].astype(np.int64)
        one = Separation(X, ("sets", ptr_r, rel[q].astype(np.int64), ptr_i, irr[q].astype(np.int64)), loss, 3)
        dq, Pq, hq = one(W)
        total += v[q]
        acc_delta += v[q] * dq
        acc_psi += v[q] * Pq
        acc_h += v[q] * hq
    assert empty.size == 0 and total > 0
    assert delta == pytest.approx(acc_delta / total, rel=1e-12)
    assert H == pytest.approx(acc_h / total, rel=1e-10)
    np.testing.assert_allclose(Psi, acc_psi / total, rtol=1e-10, atol=1e-12 * np.abs(Psi).max())


def test_solve_takes_sample_weight_and_the_estimator_pickles():
    X, y, w = tiny()
    res = solve(X, y, loss="auc", C=C, tol=EPS, sample_weight=w)
    m = MLR(loss="auc", C=C, tol=EPS).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(res.W, m.W_)
    assert clone(m).get_params() == m.get_params()
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).transform(X), m.transform(X))


@pytest.mark.parametrize("bad,message", [
    (-np.ones(7), "sample_weight must be >= 0; query 0"),
    (np.r_[np.nan, np.ones(6)], "sample_weight contains NaN"),
    (np.ones(6), "sample_weight"),
    (np.zeros(7), "sample_weight is 0 on every query"),
])
def test_bad_weights_reach_the_user_from_fit(bad, message):
    X, y, _ = tiny()
    with pytest.raises(ValueError, match=message):
        MLR().fit(X, y, sample_weight=bad)


def test_weights_zero_on_every_active_query_are_refused():
    X, y, _ = tiny()
    rel = [[1], [], [], [], [], [], []]  # only query 0 is active
    w = np.r_[0.0, np.ones(6)]
    with pytest.raises(ValueError, match="0 on every query with a relevant and an irrelevant point"):
        MLR().fit(X, relevance=rel, sample_weight=w)


def test_repeating_a_row_is_not_weighting_its_query():
    """Why scikit-learn's check_sample_weight_equivalence (which repeats rows) cannot hold for MLR, so nobody
    "fixes" it: a repeated row is also a second database point, relevant to its copy at distance 0, which every
    query then ranks too. v_q = 2 repeats query q only (its point stays once): another problem."""
    X, y, _ = tiny()
    w = np.ones(7)
    w[3] = 2.0
    weighted = rm.solve(X, y, loss="auc", C=C, sample_weight=w).objective
    rows = np.r_[np.arange(7), 3]
    repeated_row = rm.solve(X[rows], y[rows], loss="auc", C=C).objective
    assert abs(weighted - repeated_row) > 1e-2 * weighted, (
        f"weight 2 on query 3: optimum {weighted:.6f}; row 3 repeated (query and database point): "
        f"{repeated_row:.6f}")
    m = MLR(loss="auc", C=C, tol=EPS).fit(X, y, sample_weight=w)
    assert_near_optimum(m, weighted)
