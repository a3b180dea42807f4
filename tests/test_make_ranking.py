"""cyrank.datasets.make_ranking: seeded, and each option does what its docstring says."""
import numpy as np
import pytest
import scipy.sparse as sp

from cyrank.datasets import make_ranking


def assert_same(a, b):
    for u, v in zip(a, b):
        u = u.toarray() if sp.issparse(u) else u
        v = v.toarray() if sp.issparse(v) else v
        np.testing.assert_array_equal(u, v)


def test_seeded_and_generator_draws_continue():
    assert_same(make_ranking(random_state=3), make_ranking(random_state=3))
    X0, _, _ = make_ranking(random_state=3)
    X1, _, _ = make_ranking(random_state=4)
    assert not np.array_equal(X0, X1)
    # a Generator is drawn from: the same stream as an int seed, and the caller can keep drawing
    rng = np.random.default_rng(3)
    assert_same(make_ranking(random_state=rng), make_ranking(random_state=3))
    X2, _, _ = make_ranking(random_state=rng)
    assert not np.array_equal(X0, X2)


@pytest.mark.parametrize("n_levels", [1, 2, 5])
def test_shapes_dtypes_and_label_levels(n_levels):
    X, y, qid = make_ranking(n_queries=7, n_docs=90, n_features=4, n_levels=n_levels, random_state=0)
    assert X.shape == (90, 4) and X.dtype == np.float64 and isinstance(X, np.ndarray)
    assert y.shape == (90,) and y.dtype == np.float64
    assert qid.shape == (90,) and qid.dtype == np.int64
    assert set(np.unique(qid)) <= set(range(7))
    assert set(np.unique(y)) == set(range(n_levels))


def test_per_query_binning_gives_every_query_every_grade():
    X, y, qid = make_ranking(n_queries=30, n_docs=300, n_levels=4, noise=5.0, random_state=1)
    sizes = np.bincount(qid)
    for q in np.flatnonzero(sizes >= 5):
        assert set(y[qid == q]) == {0.0, 1.0, 2.0, 3.0}
    # the same draw binned over all documents: balanced overall, but some query misses a grade
    Xg, yg, qg = make_ranking(n_queries=30, n_docs=300, n_levels=4, noise=5.0, binning="global", random_state=1)
    np.testing.assert_array_equal(Xg, X)
    np.testing.assert_array_equal(qg, qid)
    assert np.ptp(np.bincount(yg.astype(int))) <= 1
    assert any(len(set(yg[qg == q])) < 4 for q in np.flatnonzero(sizes >= 5))


def test_noise_controls_how_linear_the_labels_are():
    def r2(noise):
        X, y, qid = make_ranking(n_queries=1, n_docs=2000, n_features=3, n_levels=10, noise=noise, random_state=2)
        A = np.c_[X, np.ones(len(y))]
        resid = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        return 1 - resid.var() / y.var()
    assert r2(0.0) > 0.9 > 0.3 > r2(10.0)


def test_density_sparse_and_dtype():
    X, y, qid = make_ranking(n_docs=400, n_features=10, density=0.3, random_state=5)
    assert 0.2 < np.mean(X != 0) < 0.4
    Xs, ys, qs = make_ranking(n_docs=400, n_features=10, density=0.3, sparse=True, dtype=np.float32,
                              random_state=5)
    assert sp.isspmatrix_csr(Xs) and Xs.dtype == np.float32 and Xs.nnz == np.count_nonzero(X)
    np.testing.assert_array_equal(Xs.toarray(), X.astype(np.float32))
    np.testing.assert_array_equal(ys, y)
    np.testing.assert_array_equal(qs, qid)


def test_feature_scales_scale_the_columns_and_keep_the_labels():
    X, y, qid = make_ranking(n_features=3, random_state=6)
    scales = [1.7e9, 1.0, 1e-3]
    Xs, ys, qs = make_ranking(n_features=3, feature_scales=scales, random_state=6)
    np.testing.assert_array_equal(Xs, X * np.array(scales))
    np.testing.assert_array_equal(ys, y)
    np.testing.assert_array_equal(qs, qid)


def test_string_qid():
    _, y, qid = make_ranking(random_state=7)
    _, ys, qs = make_ranking(string_qid=True, random_state=7)
    assert qs.dtype.kind == "U"
    np.testing.assert_array_equal(qs, np.array([f"q{q}" for q in qid]))
    np.testing.assert_array_equal(ys, y)


def test_shuffle_interleaves_the_same_rows():
    X, y, qid = make_ranking(n_queries=8, n_docs=80, random_state=8)
    assert np.all(np.diff(qid) >= 0)  # grouped by query, increasing ids
    Xs, ys, qs = make_ranking(n_queries=8, n_docs=80, shuffle=True, random_state=8)
    assert np.any(np.diff(qs) < 0)
    order = np.argsort(qs, kind="stable")
    assert_same((Xs[order], ys[order], qs[order]), (X, y, qid))


def test_query_sizes():
    X, y, qid = make_ranking(n_queries=3, n_docs=[4, 1, 6], n_levels=2, random_state=9)
    np.testing.assert_array_equal(qid, [0] * 4 + [1] + [2] * 6)
    assert X.shape == (11, 5)
    Xs, ys, qs = make_ranking(n_queries=3, n_docs=[4, 1, 6], n_levels=2, shuffle=True, random_state=9)
    np.testing.assert_array_equal(np.bincount(qs), [4, 1, 6])
    assert np.any(np.diff(qs) < 0)
    a, b = np.lexsort((Xs[:, 0], qs)), np.lexsort((X[:, 0], qid))  # the same rows, in another order
    assert_same((Xs[a], ys[a], qs[a]), (X[b], y[b], qid[b]))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_queries": 0}, ValueError, "n_queries must be a positive integer"),
    ({"n_docs": 2.5}, ValueError, "n_docs must be a positive integer"),
    ({"n_docs": [3, 4]}, ValueError, "sequence of n_queries=10"),
    ({"n_levels": True}, ValueError, "n_levels must be a positive integer"),
    ({"density": 0.0}, ValueError, r"density must be in \(0, 1\]"),
    ({"binning": "per-query"}, ValueError, "binning must be 'query' or 'global'"),
    ({"dtype": np.int32}, TypeError, "dtype must be float64 or float32"),
    ({"noise": -1.0}, ValueError, "noise must be a finite number >= 0"),
    ({"feature_scales": [1.0, 2.0]}, ValueError, "one per column"),
])
def test_invalid_arguments_say_what_to_give(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_ranking(**kwargs)
