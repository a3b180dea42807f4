"""Every documented bad input gets its documented error; good input passes through unchanged in meaning."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from cyrank import QueryGroups, RankingDataWarning
from cyrank._validation import (
    check_option,
    check_param,
    check_qid,
    check_ranking_data,
    check_scores,
    check_X,
    warn_if_no_pairs,
)

rng = np.random.default_rng(0)
X_GOOD = rng.normal(size=(6, 3))
Y_GOOD = np.array([0, 1, 2, 0, 1, 1.0])
Q_GOOD = np.array([3, 3, 1, 1, 3, 1])


@pytest.mark.parametrize(
    "X, exc, match",
    [
        (np.array([[1.0, np.nan], [0, 1]]), ValueError, "NaN"),
        (np.array([[1.0, np.inf], [0, 1]]), ValueError, "infinity"),
        (sp.csr_matrix(np.array([[1.0, np.nan], [0, 1]])), ValueError, "NaN"),
        (np.zeros((0, 3)), ValueError, "empty"),
        (np.zeros((3, 0)), ValueError, "empty"),
        (np.zeros((2, 2, 2)), ValueError, "2-d"),
        (np.zeros(4), ValueError, "Reshape your data"),
        (np.array([["a", "b"]], dtype=object), TypeError, "dtype object"),
        (np.array([["a", "b"]]), TypeError, "numeric"),
        (np.ones((2, 2), dtype=complex), ValueError, "Complex data not supported"),
        (sp.dok_matrix(np.array([[1.0, np.nan], [0, 1]])), ValueError, "NaN"),
        (sp.lil_matrix(np.array([[1.0, np.inf], [0, 1]])), ValueError, "infinity"),
        (None, ValueError, "None"),
    ],
)
def test_bad_X(X, exc, match):
    with pytest.raises(exc, match=match):
        check_X(X)


def test_bad_y_and_qid():
    with pytest.raises(ValueError, match="NaN"):
        check_ranking_data(X_GOOD, np.r_[Y_GOOD[:-1], np.nan], Q_GOOD)
    with pytest.raises(ValueError, match="lengths must match"):
        check_ranking_data(X_GOOD, Y_GOOD[:-1], Q_GOOD)
    with pytest.raises(ValueError, match="lengths must match"):
        check_ranking_data(X_GOOD, Y_GOOD, Q_GOOD[:-1])
    with pytest.raises(ValueError, match="non-integer"):
        check_ranking_data(X_GOOD, Y_GOOD, Q_GOOD + 0.5)
    with pytest.raises(TypeError, match="mixes kinds of ids"):  # string ids are accepted, a mix is not
        check_ranking_data(X_GOOD, Y_GOOD, np.array([*Q_GOOD[:-1].astype(str), 1], dtype=object))
    with pytest.raises(TypeError, match="dtype object"):
        check_ranking_data(X_GOOD, Y_GOOD.astype(object), Q_GOOD)
    with pytest.raises(ValueError, match="finite"):
        check_qid(np.array([1.0, np.nan]), 2)
    with pytest.raises(ValueError, match="empty"):
        check_scores([], [])


def test_good_data_kept():
    X, y, qid = check_ranking_data(X_GOOD.astype(np.float32), Y_GOOD.astype(int), Q_GOOD.astype(float))
    assert X.dtype == np.float32 and np.array_equal(X, X_GOOD.astype(np.float32))
    assert y.dtype == np.float64 and np.array_equal(y, Y_GOOD)
    assert qid.dtype == np.int64 and np.array_equal(qid, Q_GOOD)
    # integer X is converted to float64, never refused
    assert check_X(np.arange(6).reshape(3, 2)).dtype == np.float64
    # qid=None means one query
    assert np.array_equal(check_qid(None, 4), np.zeros(4, np.int64))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_formats_and_index_width(fmt, index_dtype):
    A = sp.random(20, 7, density=0.3, format="csr", random_state=1)
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    B = check_X(A.asformat(fmt), accept_sparse=("csc", "csr"))
    assert B.format == (fmt if fmt != "coo" else "csc")
    assert B.indices.dtype == B.indptr.dtype
    assert np.array_equal(B.toarray(), A.toarray())


def test_sparse_refused_when_not_accepted():
    with pytest.raises(TypeError, match="dense"):
        check_X(sp.csr_matrix(X_GOOD), accept_sparse=())


@pytest.mark.parametrize(
    "value, kwargs, exc, match",
    [
        (-1.0, dict(low=0), ValueError, ">= 0"),
        (float("nan"), dict(low=0), ValueError, "finite"),
        (float("inf"), dict(), ValueError, "finite"),
        (0.0, dict(low=0, low_open=True), ValueError, "> 0"),
        (1.5, dict(low=0, high=1), ValueError, "<= 1"),
        ("1", dict(), TypeError, "real number"),
        (True, dict(), TypeError, "real number"),
        (2.5, dict(integer=True), TypeError, "integer"),
        (None, dict(), TypeError, "real number"),
    ],
)
def test_bad_params(value, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_param("alpha", value, **kwargs)


def test_good_params():
    assert check_param("alpha", 0, low=0) == 0.0
    assert check_param("k", np.int64(3), low=1, integer=True) == 3
    assert check_param("k", None, none_ok=True) is None
    assert check_option("ties", "average", ("pessimistic", "average")) == "average"
    with pytest.raises(ValueError, match="'pessimistic', 'average'"):
        check_option("ties", "random", ("pessimistic", "average"))


def test_query_groups_unsorted_qid():
    qid = np.array([5, 2, 5, 9, 2, 2, 9, 5])
    y = np.array([1, 0, 1, 3, 2, 1, 3, 0.0])
    g = QueryGroups(qid, y)
    assert np.array_equal(g.ids, [2, 5, 9])
    assert np.array_equal(g.offsets, [0, 3, 6, 8])
    # stable: rows of a query keep their input order
    assert np.array_equal(g.order, [1, 4, 5, 0, 2, 7, 3, 6])
    assert np.array_equal(g.n_levels, [3, 2, 1])
    # pairs with different labels: q2 labels {0,2,1} -> 3; q5 {1,1,0} -> 2; q9 {3,3} -> 0
    assert np.array_equal(g.n_pairs, [3, 2, 0])
    assert g.n_pairs_possible == 5
    a = np.arange(8.0) * 10
    assert np.array_equal(g.unsort(g.sort(a)), a)
    assert np.array_equal(g.query_index(), [1, 0, 1, 2, 0, 0, 2, 1])
    # (query, label) runs, stable inside a run: q2 labels 0 | 1 | 2, q5 0 | 1 1, q9 3 3
    assert np.array_equal(g.label_order, [1, 5, 4, 7, 0, 2, 3, 6])
    assert np.array_equal(g.label_runs, [0, 1, 2, 3, 4, 6, 8])
    assert np.array_equal(g.run_query, [0, 0, 0, 1, 1, 2])
    assert np.array_equal(g.level_sorted, [0, 2, 1, 1, 1, 0, 0, 0])


def test_query_groups_pair_count_brute_force():
    r = np.random.default_rng(3)
    qid = r.integers(0, 30, size=500)
    y = r.integers(0, 4, size=500).astype(float)
    g = QueryGroups(qid, y)
    for q, ident in enumerate(g.ids):
        yq = y[qid == ident]
        assert g.n_pairs[q] == sum(int(a > b) for a in yq for b in yq)
        assert g.n_levels[q] == len(set(yq))
    # label runs: every run is one (query, label) in ascending label order, rows in input order
    for r in range(g.run_query.size):
        rows = g.label_order[g.label_runs[r]:g.label_runs[r + 1]]
        assert np.all(np.diff(rows) > 0) and np.all(qid[rows] == g.ids[g.run_query[r]])
        assert np.unique(y[rows]).size == 1
        if r > 0 and g.run_query[r - 1] == g.run_query[r]:
            assert y[g.label_order[g.label_runs[r - 1]]] < y[rows[0]]
    levels = np.array([np.searchsorted(np.unique(y[qid == qid[i]]), y[i]) for i in range(500)])
    np.testing.assert_array_equal(g.level_sorted, levels[g.order])


def test_warning_when_no_query_has_two_levels():
    g = QueryGroups(np.array([1, 1, 2, 2]), np.array([1.0, 1.0, 0.0, 0.0]))
    with pytest.warns(RankingDataWarning, match="two different labels"):
        assert warn_if_no_pairs(g)
    g = QueryGroups(np.array([1, 1, 2, 2]), np.array([1.0, 0.0, 0.0, 0.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_if_no_pairs(g)


def test_row_weights():
    from cyrank._validation import check_row_weights

    assert np.array_equal(check_row_weights(None, 3, name="offset"), np.zeros(3))
    assert np.array_equal(check_row_weights([0, 2.5, 1], 3, name="offset"), [0, 2.5, 1])
    with pytest.raises(ValueError, match="offset must be >= 0"):
        check_row_weights([0, -1.0, 1], 3, name="offset")
    with pytest.raises(ValueError, match="offset has 2 entries"):
        check_row_weights([0, 1.0], 3, name="offset")
    with pytest.raises(ValueError, match="NaN"):
        check_row_weights([0, np.nan, 1], 3, name="offset")


def test_query_groups_without_qid_is_one_query():
    g = QueryGroups(None, np.array([2.0, 0.0, 1.0]))
    assert g.n_queries == 1 and g.n_pairs_possible == 3


def test_class_labels():
    from cyrank._validation import check_class_labels

    classes, labels = check_class_labels(np.array(["b", "a", "b", "a"]), 4)
    assert list(classes) == ["a", "b"] and np.array_equal(labels, [1, 0, 1, 0])
    classes, labels = check_class_labels([3.0, 1.0, 3.0], 3)
    assert np.array_equal(classes, [1.0, 3.0]) and labels.dtype == np.int64
    with pytest.raises(ValueError, match="at least 2 classes"):
        check_class_labels([1, 1, 1], 3)
    with pytest.raises(ValueError, match=r"class 2.0 has 1 member\(s\), fewer than 2"):
        check_class_labels([1, 1, 2], 3, min_count=2)
    with pytest.raises(ValueError, match="one label per row"):
        check_class_labels(np.array(["a", "b"]), 3)
    with pytest.raises(ValueError, match="NaN"):
        check_class_labels([1.0, np.nan, 1.0], 3)


def test_verbose_accepts_bools_everywhere(capsys):
    """verbose=True/False works in every estimator (it raised TypeError in DominationRank and RankSVM)."""
    from cyrank import MLR, DominationRank, RankSVM

    X = rng.normal(size=(30, 3))
    y = np.arange(30) % 3
    for make in (DominationRank, RankSVM, MLR):
        make(verbose=False).fit(X, y)
        assert capsys.readouterr().out == ""
        make(verbose=True).fit(X, y)
        assert capsys.readouterr().out != ""
    with pytest.raises(ValueError, match="verbose must be >= 0"):
        RankSVM(verbose=-1).fit(X, y)


def test_n_jobs_on_every_estimator():
    """n_jobs sets the OpenMP threads of DominationRank and RankSVM (MLR: its oracles); the deterministic chunked
    sums give the same model, bit for bit, whatever the count; bad values are refused by name."""
    from threadpoolctl import threadpool_info

    from cyrank import MLR, DominationRank, RankSVM

    if not any(lib["user_api"] == "openmp" for lib in threadpool_info()):
        pytest.skip("serial build: no OpenMP runtime loaded")
    r = np.random.default_rng(3)
    X = r.normal(size=(30000, 6))
    y = np.clip(np.round(X @ r.normal(size=6) + r.normal(size=30000)), -1, 1)
    qid = np.repeat(np.arange(300), 100)
    for make in (lambda j: DominationRank(solver="newton", n_jobs=j), lambda j: RankSVM(C=1e-3, n_jobs=j)):
        coefs = [make(j).fit(X, y, qid).coef_ for j in (1, 2, -1, None)]
        assert all(np.array_equal(coefs[0], c) for c in coefs[1:])
    for make in (DominationRank, RankSVM, MLR):
        with pytest.raises(ValueError, match="n_jobs must be >= 1"):
            make(n_jobs=0).fit(X[:30], np.arange(30) % 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_finiteness_check_of_x_allocates_nothing_of_x_size_and_still_finds_nan_and_infinity(dtype):
    """check_ranking_data judges X's finiteness by its sum: less than 5% of X's bytes allocated (np.isfinite
    made an n x d boolean array, 25% of a float32 X, the only excess left in a RankNet fit), a single NaN or
    infinity anywhere is still refused with its name (also beside values whose sum overflows), and finite values
    whose sum overflows are accepted."""
    import tracemalloc

    rng = np.random.default_rng(0)
    X = rng.standard_normal((20_000, 40)).astype(dtype)
    y, qid = rng.integers(0, 3, 20_000).astype(float), np.repeat(np.arange(200), 100)
    tracemalloc.start()
    try:
        check_ranking_data(X, y, qid, dtype=(np.float64, np.float32))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.05 * X.nbytes
    for value, word in ((np.nan, "NaN"), (np.inf, "infinity"), (-np.inf, "infinity")):
        bad = X.copy()
        bad[12_345, 17] = value
        with pytest.raises(ValueError, match=f"X contains {word}"):
            check_ranking_data(bad, y, qid, dtype=(np.float64, np.float32))
    huge = X.copy()
    huge[:, 3] = np.finfo(dtype).max  # finite, but their sum is infinite
    check_ranking_data(huge, y, qid, dtype=(np.float64, np.float32))
    huge[7, 5] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        check_ranking_data(huge, y, qid, dtype=(np.float64, np.float32))
