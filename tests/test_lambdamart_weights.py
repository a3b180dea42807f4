"""LambdaMART with sample_weight: lambda_ij and its hessian term times c_i, the preferred row's weight, on both
documents (issue 29), which with c_i = 1 / propensity of clicked rows is Unbiased LambdaMART's IPS-weighted lambdas
(Hu et al., WWW 2019, the propensities given)."""
import numpy as np
import pytest
import scipy.sparse as sp

lgb = pytest.importorskip("lightgbm")

from cyrank import LambdaMART  # noqa: E402
from cyrank.datasets import make_ranking  # noqa: E402
from test_lambdarank_weights import brute_weighted_lambdas  # noqa: E402


def small_data(seed=0, n_queries=12, n_docs=6, d=3, levels=3):
    """``n_queries`` of ``n_docs`` rows. Features rounded to the integers -2..2 (each value on many rows, so LightGBM's bins do not move when rows
    are repeated or removed), labels 0..levels-1."""
    X, y, qid = make_ranking(n_queries, n_queries * n_docs, d, levels, random_state=seed)
    X = np.clip(np.round(X), -2, 2)
    c = np.random.default_rng(seed).uniform(0.0, 3.0, y.size)
    c[np.random.default_rng(seed + 1).random(y.size) < 0.2] = 0.0
    return X, y, qid, c


def splits(model):
    """The trees' structure: split features and thresholds, line by line."""
    return [line for line in model.model_string_.split("\n") if line.startswith(("split_feature=", "threshold="))]


@pytest.mark.parametrize("metric, truncation", [("ndcg@3", None), ("err", None), ("ranknet", 2), ("map", None)])
def test_the_gradients_handed_to_lightgbm_are_the_weighted_brute_force(monkeypatch, metric, truncation):
    """The custom objective LightGBM calls, at scores 0 (every score tied) and at random scores: per row the
    brute-force sum over its pairs of -/+ sigma rho c_i |dZ_ij| and sigma^2 rho (1 - rho) c_i |dZ_ij| (in the
    float32 LightGBM keeps)."""
    X, y, qid, c = small_data(1)
    seen = []
    train = lgb.train

    def spy(params, *args, **kwargs):
        for s in (np.zeros(y.size), np.random.default_rng(3).normal(size=y.size)):
            grad, hess = params["objective"](s.copy(), None)
            seen.append((s, np.array(grad, dtype=np.float64), np.array(hess, dtype=np.float64)))
        return train(params, *args, **kwargs)

    monkeypatch.setattr(lgb, "train", spy)
    LambdaMART(metric=metric, n_estimators=2, sigma=1.5, truncation=truncation, n_jobs=1).fit(X, y, qid,
                                                                                               sample_weight=c)
    assert len(seen) == 2
    for s, grad, hess in seen:
        _, want_g, want_h = brute_weighted_lambdas(metric, y, s, qid, c, sigma=1.5, truncation=truncation)
        np.testing.assert_allclose(grad, want_g, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hess, want_h, rtol=1e-6, atol=1e-7)
        assert np.any(grad[c == 0] != 0)  # rows of weight 0 keep the pairs where they are less preferred


@pytest.mark.parametrize("metric", ["ndcg", "ndcg@3", "ranknet"])
def test_a_query_weight_grows_the_trees_of_the_query_repeated(metric):
    """Weight 2 on every row of some queries = those queries given twice (under new qids): the same splits and,
    the lambdas being exactly doubled, the same leaf values."""
    X, y, qid, _ = small_data(2, n_queries=20, n_docs=10)
    heavy = np.isin(qid, np.unique(qid)[:5])
    rows = np.flatnonzero(heavy)
    params = dict(metric=metric, n_estimators=8, num_leaves=6, min_child_samples=1, n_jobs=1)
    a = LambdaMART(**params).fit(X, y, qid, sample_weight=np.where(heavy, 2.0, 1.0))
    b = LambdaMART(**params).fit(np.vstack([X, X[rows]]), np.r_[y, y[rows]], np.r_[qid, qid[rows] + 1000])
    assert splits(a) == splits(b)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-9)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    plain = LambdaMART(**params).fit(X, y, qid)
    assert not np.allclose(plain.predict(X), a.predict(X))  # the weights matter


def test_weight_zero_on_top_label_rows_is_deleting_them():
    """RankNet's lambdas (|dZ| = 1): weight 0 on rows of their query's top label (never less preferred) removes
    exactly their pairs, so the trees are those grown without the rows. (With NDCG, ERR or MAP a row of weight 0
    still holds its position in the ranking, so the other pairs' |dZ| and IDCG still count it: only the pairs it
    is preferred in go; test_the_gradients_handed_to_lightgbm_are_the_weighted_brute_force checks that.)"""
    X, y, qid, _ = small_data(3, n_queries=20, n_docs=8)
    top = np.array([y[i] == y[qid == qid[i]].max() and np.ptp(y[qid == qid[i]]) > 0 for i in range(y.size)])
    drop = top & (np.arange(y.size) % 2 == 0)
    params = dict(metric="ranknet", n_estimators=8, num_leaves=6, min_child_samples=1, n_jobs=1)
    a = LambdaMART(**params).fit(X, y, qid, sample_weight=np.where(drop, 0.0, 1.0))
    b = LambdaMART(**params).fit(X[~drop], y[~drop], qid[~drop])
    assert splits(a) == splits(b)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-9, atol=1e-12)


def test_weights_none_equal_ones_follow_the_rows_and_sparse_equals_dense():
    X, y, qid, c = small_data(4, n_queries=20, n_docs=8)
    params = dict(metric="ndcg@3", n_estimators=6, num_leaves=5, n_jobs=1)
    plain = LambdaMART(**params).fit(X, y, qid).predict(X)
    ones = LambdaMART(**params).fit(X, y, qid, sample_weight=np.ones(y.size)).predict(X)
    np.testing.assert_allclose(ones, plain, rtol=1e-6, atol=1e-9)
    weighted = LambdaMART(**params).fit(X, y, qid, sample_weight=c)
    perm = np.random.default_rng(0).permutation(y.size)
    moved = LambdaMART(**params).fit(X[perm], y[perm], qid[perm] * 3 + 7, sample_weight=c[perm])
    assert splits(moved) == splits(weighted)
    np.testing.assert_allclose(moved.predict(X), weighted.predict(X), rtol=1e-9, atol=1e-12)
    sparse = LambdaMART(**params).fit(sp.csr_matrix(X), y, qid, sample_weight=c)
    np.testing.assert_allclose(sparse.predict(X), weighted.predict(X), rtol=1e-9, atol=1e-12)
    assert not np.allclose(weighted.predict(X), plain)


def test_unbiased_lambdamart_from_clicks_is_the_ips_weighted_fit():
    """Clicks of a position-based model (examination 1 / rank) on a logging ranking: sample_weight = 1 /
    propensity of each clicked row's rank (1 elsewhere: unclicked rows are never preferred, their weight is
    unused). The objective handed to LightGBM is then the IPS-weighted lambdas: the same model as any other
    weight on the unclicked rows."""
    X, y, qid, _ = small_data(5, n_queries=30, n_docs=8)
    rng = np.random.default_rng(5)
    rank = np.empty(y.size, dtype=int)
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        rank[idx] = rng.permutation(idx.size)
    propensity = 1.0 / (rank + 1.0)
    clicks = (rng.random(y.size) < propensity * (y + 0.1) / (y.max() + 0.1)).astype(float)
    keep = np.isin(qid, qid[clicks > 0])
    X, clicks, qid, propensity = X[keep], clicks[keep], qid[keep], propensity[keep]
    ips = np.where(clicks > 0, 1.0 / propensity, 1.0)
    other = np.where(clicks > 0, 1.0 / propensity, rng.uniform(0, 5, clicks.size))
    params = dict(metric="ndcg@5", n_estimators=5, num_leaves=4, n_jobs=1)
    a = LambdaMART(**params).fit(X, clicks, qid, sample_weight=ips)
    b = LambdaMART(**params).fit(X, clicks, qid, sample_weight=other)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    naive = LambdaMART(**params).fit(X, clicks, qid)
    assert not np.allclose(naive.predict(X), a.predict(X))


def test_bad_weights_reach_the_user_from_fit():
    X, y, qid, _ = small_data(6)
    n = y.size
    bad = {"must be >= 0": np.where(np.arange(n) == 3, -1.0, 1.0),
           "NaN": np.where(np.arange(n) == 2, np.nan, 1.0), "sample_weight": np.ones(n - 1),
           "0 on every row": np.zeros(n),
           "every row that is preferred": np.array([float(y[i] == y[qid == qid[i]].min()) for i in range(n)])}
    for message, weights in bad.items():
        with pytest.raises(ValueError, match=message):
            LambdaMART(n_estimators=1).fit(X, y, qid, sample_weight=weights)
