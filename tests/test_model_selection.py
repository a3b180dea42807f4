"""Cross-validation by query (cyrank.model_selection) and many models at once (cyrank.many.fit_many)."""
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.model_selection import GridSearchCV, cross_validate

from cyrank import DominationRank, RankSVM
from cyrank.many import fit_many
from cyrank.metrics import average_precision, ndcg_score
from cyrank.datasets import make_ranking
from cyrank.model_selection import QueryKFold, ranking_scorer, validation_path


def problem(seed=0, n_queries=24):
    X, y, qid = make_ranking(9, n_queries * 9, 6, 3, binning="global", shuffle=True, random_state=seed)
    qid = qid * 7 + 3
    rng = np.random.default_rng(seed)
    perm = rng.permutation(y.size)  # unsorted, interleaved query ids
    return X[perm], y[perm], qid[perm]


@pytest.fixture
def routing():
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=False)


@pytest.mark.parametrize("shuffle", [False, True])
def test_query_kfold_keeps_queries_whole_and_balances_rows(shuffle):
    X, y, qid = problem()
    sizes = np.random.default_rng(1).integers(1, 30, size=40)
    qid = np.repeat(np.random.default_rng(2).permutation(1000)[:40], sizes)  # uneven queries
    X = np.zeros((qid.size, 2))
    cv = QueryKFold(4, shuffle=shuffle, random_state=0)
    tests = []
    for train, test in cv.split(X, qid=qid):
        assert np.intersect1d(qid[train], qid[test]).size == 0           # no query on both sides
        assert np.union1d(train, test).size == qid.size and np.intersect1d(train, test).size == 0
        tests.append(test)
    assert np.sort(np.concatenate(tests)).tolist() == list(range(qid.size))  # the folds partition the rows
    fold_rows = [t.size for t in tests]
    assert max(fold_rows) - min(fold_rows) <= sizes.max()                 # greedy balance
    again = [t for _, t in QueryKFold(4, shuffle=shuffle, random_state=0).split(X, groups=qid)]
    assert all(np.array_equal(a, b) for a, b in zip(tests, again))        # deterministic; groups = qid


def test_query_kfold_errors():
    X = np.zeros((6, 1))
    with pytest.raises(ValueError, match="query ids"):
        next(QueryKFold(2).split(X))
    with pytest.raises(ValueError, match="more than the 2 queries"):
        next(QueryKFold(3).split(X, qid=[0, 0, 0, 1, 1, 1]))
    with pytest.raises(ValueError, match="n_splits"):
        next(QueryKFold(1).split(X, qid=[0, 0, 0, 1, 1, 1]))
    with pytest.raises(ValueError, match="qid"):
        next(QueryKFold(2).split(X, qid=[0, 0.5, 0, 1, 1, 1]))


def test_grid_search_with_routing_scores_every_fold_by_query(routing):
    X, y, qid = problem(3)
    est = RankSVM().set_fit_request(qid=True).set_score_request(qid=True)
    scoring = {"ndcg@10": ranking_scorer("ndcg@10"), "map": ranking_scorer("map")}
    search = GridSearchCV(est, {"C": [1e-3, 1e-1]}, cv=QueryKFold(3), scoring=scoring, refit="ndcg@10")
    search.fit(X, y, qid=qid)
    for i, C in enumerate([1e-3, 1e-1]):  # by hand: the same folds, fits and per-query metrics
        ndcg, ap = [], []
        for train, test in QueryKFold(3).split(X, qid=qid):
            s = RankSVM(C=C).fit(X[train], y[train], qid[train]).predict(X[test])
            ndcg.append(ndcg_score(y[test], s, qid[test], k=10))
            ap.append(average_precision(y[test], s, qid[test]))
        assert search.cv_results_["mean_test_ndcg@10"][i] == pytest.approx(np.mean(ndcg), abs=1e-12)
        assert search.cv_results_["mean_test_map"][i] == pytest.approx(np.mean(ap), abs=1e-12)
    res = cross_validate(est, X, y, params={"qid": qid}, cv=QueryKFold(3))  # the estimator's own score
    assert res["test_score"].shape == (3,)


def test_scorer_refuses_to_score_without_qid():
    X, y, qid = problem(4)
    est = RankSVM().fit(X, y, qid)
    with pytest.raises(ValueError, match="needs qid"):
        ranking_scorer("err@5")(est, X, y)
    with pytest.raises(ValueError, match="unknown metric"):
        ranking_scorer("foo")


def test_validation_path_warm_starts_to_the_cold_solutions():
    X, y, qid = problem(5)
    alphas = [8.0, 2.0, 0.5]
    values, scores = validation_path(DominationRank(penalty="l1", tol=1e-10), "alpha", alphas, X, y, qid,
                                     cv=QueryKFold(3), scoring="ndcg@5")
    assert scores.shape == (3, 3)
    for j, (train, test) in enumerate(QueryKFold(3).split(X, qid=qid)):
        for i, a in enumerate(alphas):
            cold = DominationRank(penalty="l1", alpha=a, tol=1e-10).fit(X[train], y[train], qid[train])
            assert scores[i, j] == pytest.approx(ndcg_score(y[test], cold.predict(X[test]), qid[test], k=5),
                                                 abs=1e-9)


# ------------------------------------------------------------------------------------------------ fit_many
def tasks(seed=6, n_tasks=5):
    X, y, qid = problem(seed)
    rng = np.random.default_rng(seed)
    Y = np.column_stack([np.clip(y + rng.integers(-1, 2, size=y.size), 0, 3) for _ in range(n_tasks)])
    return X, Y, qid


@pytest.mark.slow
@pytest.mark.parametrize("sparse", [False, True])
def test_fit_many_equals_serial_fits_on_threads_and_processes(sparse):
    X, Y, qid = tasks()
    Xf = sp.csr_matrix(X) if sparse else X
    serial = [RankSVM(C=0.1).fit(Xf, Y[:, t], qid).coef_ for t in range(Y.shape[1])]
    for backend in ("threading", "loky"):
        with joblib.parallel_backend(backend, n_jobs=2):
            many = fit_many(RankSVM(C=0.1), Xf, Y, qid)
        coef = many.coef_.toarray() if sparse else many.coef_
        assert sp.issparse(many.coef_) == sparse and many.n_tasks_ == Y.shape[1]
        np.testing.assert_array_equal(coef, np.vstack(serial))
        np.testing.assert_allclose(many.predict(Xf), Xf @ np.vstack(serial).T, rtol=1e-12)
        assert all(e.n_jobs == 1 for e in many.estimators_)  # the tasks share the cores


def test_fit_many_without_linear_coefficients_and_bad_input():
    X, Y, qid = tasks(7, 2)
    many = fit_many(RankSVM(C=0.1, kernel="rbf"), X, Y, qid)
    assert not hasattr(many, "coef_")
    np.testing.assert_array_equal(many.predict(X)[:, 1], many.estimators_[1].predict(X))
    with pytest.raises(ValueError, match="2-d"):
        fit_many(RankSVM(), X, Y[:, 0], qid)
    with pytest.raises(ValueError, match="rows"):
        fit_many(RankSVM(), X, Y[:-1], qid)


@pytest.mark.slow
def test_fit_many_on_dask_equals_serial():
    distributed = pytest.importorskip("distributed")
    X, Y, qid = tasks(8, 4)
    serial = np.vstack([DominationRank(alpha=0.5).fit(X, Y[:, t], qid).coef_ for t in range(Y.shape[1])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # distributed's own start-up chatter (ports, resources)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
                as cluster, distributed.Client(cluster):
            with joblib.parallel_backend("dask"):
                many = fit_many(DominationRank(alpha=0.5), X, Y, qid)
    np.testing.assert_array_equal(many.coef_, serial)
