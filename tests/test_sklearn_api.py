"""Issue 26, the scikit-learn side: qid that never reaches fit or score, Pipeline.score under metadata routing,
string query ids, and the messages of random_state, options, owlqn_memory, QueryKFold.split, validation_path,
warm starts and ManyRankers.predict. One test per cause."""
import inspect
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler

from cyrank import MLR, DominationRank, LabelRankBoost, LambdaRank, RankNet, RankSVM
from cyrank import domination, labelrank, mlr, ranksvm
from cyrank._queries import QueryGroups
from cyrank._validation import MissingQidWarning, check_random_state, random_seed
from cyrank.many import fit_many
from cyrank.metrics import ndcg_score
from cyrank.model_selection import QueryKFold, validation_path
from cyrank.optim.owlqn import owlqn


def _data(n_queries=9, per_query=10, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, d))
    qid = np.repeat(np.arange(n_queries), per_query)
    y = np.clip(np.round(X @ np.arange(1.0, d + 1) / d + rng.normal(size=X.shape[0])), 0, 3)
    return X, y, qid


X, Y, QID = _data()


def _rankers():
    out = [RankSVM(), DominationRank(), RankNet(), LambdaRank(max_iter=20)]
    try:
        import lightgbm  # noqa: F401

        from cyrank import LambdaMART

        out.append(LambdaMART(n_estimators=3, min_child_samples=2, n_jobs=1))
    except ImportError:
        pass
    return out


# ------------------------------------------------------------------------------------------ qid reaches fit
def test_fitting_or_scoring_without_qid_is_silent():
    for model in _rankers():
        name = type(model).__name__
        with pytest.warns(MissingQidWarning, match=rf"{name}\.fit got no qid") as record:
            model.fit(X, Y)
        text = str(record[0].message)
        for fix in ("qid=qid", "sklearn.set_config(enable_metadata_routing=True)",
                    "set_fit_request(qid=True).set_score_request(qid=True)", "groups=qid reaches only the splitter"):
            assert fix in text, (name, fix)
        with pytest.warns(MissingQidWarning, match=rf"{name}\.score got no qid"):
            model.score(X, Y)
        with warnings.catch_warnings():
            warnings.simplefilter("error", MissingQidWarning)
            model.fit(X, Y, qid=QID).score(X, Y, qid=QID)
            model.fit(X, Y, QID)  # positional qid counts
    # label rankers have no queries (each instance ranks the labels): no qid to miss
    for cls in (LabelRankBoost, MLR):
        assert "qid" not in inspect.signature(cls.fit).parameters
    # GridSearchCV with groups only: the splitter gets them, fit does not, and it says so
    with pytest.warns(MissingQidWarning):
        GridSearchCV(RankSVM(), {"C": [0.1, 1.0]}, cv=QueryKFold(3)).fit(X, Y, groups=QID)
    # with metadata routing, qid reaches every fit and score (the docstring's way)
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("error", MissingQidWarning)
        model = RankSVM().set_fit_request(qid=True).set_score_request(qid=True)
        search = GridSearchCV(model, {"C": [0.1, 1.0]}, cv=QueryKFold(3)).fit(X, Y, qid=QID)
    best = RankSVM(C=search.best_params_["C"]).fit(X, Y, qid=QID)
    np.testing.assert_array_equal(search.best_estimator_.coef_, best.coef_)
    with pytest.warns(MissingQidWarning):
        one_query = RankSVM(C=search.best_params_["C"]).fit(X, Y)
    assert not np.allclose(one_query.coef_, best.coef_)


# ------------------------------------------------------------------------------------- Pipeline.score, routing
def test_pipeline_score_fails_under_metadata_routing():
    folds = list(QueryKFold(3).split(X, Y, qid=QID))
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(MaxAbsScaler(), RankSVM().set_fit_request(qid=True).set_score_request(qid=True))
        score = pipe.fit(X, Y, qid=QID).score(X, Y, qid=QID)
        scores = cross_val_score(pipe, X, Y, cv=QueryKFold(3), params={"qid": QID})
    assert np.isfinite(scores).all()
    want = []
    for train, test in folds:
        model = RankSVM().fit(MaxAbsScaler().fit(X[train]).transform(X[train]), Y[train], qid=QID[train])
        want.append(ndcg_score(Y[test], model.predict(X[test] / np.abs(X[train]).max(axis=0)), QID[test]))
    np.testing.assert_allclose(scores, want, rtol=1e-12)
    assert score == pytest.approx(ndcg_score(Y, pipe.predict(X), QID), rel=1e-12)
    # sample_weight: a query weighs the mean weight of its rows
    model = RankSVM().fit(X, Y, qid=QID)
    _, per_query = ndcg_score(Y, model.predict(X), QID, return_per_query=True)
    w_query = np.arange(1.0, 10.0)
    rows = w_query[QID] * np.tile([0.5, 1.5], 45)  # the rows of a query average w_query
    assert model.score(X, Y, QID, sample_weight=np.ones(90)) == pytest.approx(model.score(X, Y, QID), rel=1e-12)
    assert model.score(X, Y, QID, sample_weight=rows) == pytest.approx(w_query @ per_query / w_query.sum(), rel=1e-12)
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        model.score(X, Y, QID, sample_weight=-np.ones(90))


# ------------------------------------------------------------------------------------------- string qids
def test_string_qids_are_refused():
    names = np.array([f"q-{300 + 7 * (8 - q)}" for q in QID])  # TREC-like ids, in another order than QID
    codes = np.unique(names, return_inverse=True)[1]
    for make in (lambda: RankSVM(), lambda: DominationRank()):
        np.testing.assert_array_equal(make().fit(X, Y, qid=names).coef_, make().fit(X, Y, qid=codes).coef_)
    scores = RankSVM().fit(X, Y, qid=names).predict(X)
    a, per_a = ndcg_score(Y, scores, names, return_per_query=True)
    b, per_b = ndcg_score(Y, scores, codes, return_per_query=True)
    assert a == b and np.array_equal(per_a, per_b)
    assert RankSVM().fit(X, Y, qid=names).score(X, Y, qid=names.astype(object)) == a
    groups = QueryGroups(names, Y)
    assert list(groups.ids) == sorted(set(names.tolist()))  # the original ids, in the order of the groups
    assert [set(names[groups.order[s:e]]) for s, e in zip(groups.offsets[:-1], groups.offsets[1:])] == \
        [{i} for i in groups.ids]
    assert list(QueryGroups(np.array([b"b", b"a", b"b"])).ids) == [b"a", b"b"]
    with pytest.raises(ValueError, match="missing id"):
        RankSVM().fit(X, Y, qid=np.r_[names[:-1], None])
    with pytest.raises(ValueError, match="missing id"):
        RankSVM().fit(X, Y, qid=np.r_[QID[:-1].astype(object), np.nan])
    with pytest.raises(TypeError, match="mixes kinds of ids"):
        RankSVM().fit(X, Y, qid=np.array([*names[:-1], 7], dtype=object))
    with pytest.raises(TypeError, match="mixes kinds of ids"):  # a list numpy would turn into strings
        RankSVM().fit(X, Y, qid=[*names[:-1].tolist(), 7])


# ------------------------------------------------------------------------------------------ clear messages
def test_random_state_as_a_randomstate_or_a_str():
    DominationRank(neg_sample=0.5, random_state=np.random.RandomState(0)).fit(X, Y, qid=QID)
    DominationRank(neg_sample=0.5, random_state=np.random.default_rng(0)).fit(X, Y, qid=QID)
    for bad in ("abc", "5", 1.5, True):
        with pytest.raises(ValueError, match=r"random_state must be None, an int.*e\.g\. random_state=0"):
            DominationRank(random_state=bad).fit(X, Y, qid=QID)
        with pytest.raises(ValueError, match="random_state must be"):
            random_seed(bad)
    assert random_seed(None) == 0 and random_seed(7) == 7
    assert random_seed(np.random.RandomState(0)) == random_seed(np.random.RandomState(0))  # drawn from it
    with pytest.raises(ValueError, match=r"in \[0, 2147483647\]"):
        random_seed(2**31)
    assert isinstance(check_random_state(np.random.default_rng(1)), np.random.RandomState)


def test_options_that_is_not_an_options():
    cases = [(ranksvm.solve, "cyrank.ranksvm.Options"), (domination.solve, "cyrank.domination.Options")]
    for solve, name in cases:
        for bad in ({"stabilization": 0.0}, "fast", 3):
            with pytest.raises(TypeError, match=rf"options must be a {name} or None, got {type(bad).__name__}"):
                solve(X, Y, QID, options=bad)
    with pytest.raises(TypeError, match="options must be a cyrank.mlr.Options"):
        mlr.solve(X, (QID % 2), options={"truncate": 1})
    with pytest.raises(TypeError, match=r"options must be a cyrank.labelrank.Options or None, got dict; build one"):
        labelrank.solve(X, np.eye(3)[QID % 3], options={"parallel_min_rows": 1})
    with pytest.raises(TypeError, match="Options.owlqn_memory must be int"):
        domination.solve(X, Y, QID, options=domination.Options(owlqn_memory=2.5))


def test_owlqn_memory_0():
    with pytest.raises(ValueError, match=r"memory .*Options\.owlqn_memory.* must be >= 1, got 0"):
        domination.solve(X, Y, QID, penalty="l1", alpha=0.1, solver="owlqn",
                         options=domination.Options(owlqn_memory=0))
    with pytest.raises(ValueError, match="must be >= 1"):
        owlqn(lambda x: (float(x @ x), 2 * x), np.ones(2), 0.0, tol_abs=1e-8, max_iter=5, memory=0)


def test_query_kfold_split_none():
    by_x = list(QueryKFold(3).split(X, qid=QID))
    by_none = list(QueryKFold(3).split(None, qid=QID))
    assert all(np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(by_x, by_none))
    with pytest.raises(ValueError, match="QueryKFold needs the query ids"):
        next(QueryKFold(3).split(None))
    with pytest.raises(TypeError, match="X must be an array"):
        next(QueryKFold(3).split(5, qid=QID))


@pytest.mark.filterwarnings("ignore:The groups parameter is ignored by KFold")
def test_validation_path_with_lists_or_sklearn_splitters():
    est, Cs = RankSVM(), [0.01, 1.0]
    _, want = validation_path(est, "C", Cs, X, Y, QID, cv=QueryKFold(3))
    _, lists = validation_path(est, "C", Cs, X.tolist(), Y.tolist(), QID.tolist(), cv=3)
    np.testing.assert_array_equal(lists, want)
    folds = list(QueryKFold(3).split(X, Y, qid=QID))
    _, given = validation_path(est, "C", Cs, X, Y, QID, cv=folds)
    np.testing.assert_array_equal(given, want)
    _, group = validation_path(est, "C", Cs, X, Y, QID.astype(str), cv=GroupKFold(3))
    assert group.shape == (2, 3) and np.isfinite(group).all()
    with pytest.raises(ValueError, match="keep each query whole"):
        validation_path(est, "C", Cs, X, Y, QID, cv=KFold(4))
    with pytest.raises(TypeError, match="cv must be None, an int"):
        validation_path(est, "C", Cs, X, Y, QID, cv="folds")
    with pytest.raises(ValueError, match=r"row indices in \[0, 90\)"):
        validation_path(est, "C", Cs, X, Y, QID, cv=[(np.arange(80), np.arange(80, 95))])


def test_warm_start_with_a_changed_feature_count():
    for make in (lambda: DominationRank(warm_start=True), lambda: RankSVM(warm_start=True)):
        model = make().fit(X, Y, qid=QID)
        with pytest.raises(ValueError, match=r"coef_ of 4 features, but X has 3: the number of features changed "
                                             r"since the last fit\. Set warm_start=False"):
            model.fit(X[:, :3], Y, qid=QID)
        model.set_params(warm_start=False).fit(X[:, :3], Y, qid=QID)
        assert model.coef_.shape == (3,)


def test_many_rankers_predict_messages():
    many = fit_many(RankSVM(), X, np.column_stack([Y, Y[::-1]]), QID)
    assert many.predict(X).shape == (90, 2)
    with pytest.raises(ValueError, match="X has 3 features, but the tasks were fitted on 4"):
        many.predict(X[:, :3])
    with pytest.raises(ValueError, match="X must be 2-d"):
        many.predict(X[0])


def test_float_parameter_given_as_a_huge_python_int():
    """check_param raised numpy's "ufunc 'isfinite' not supported" for a real parameter given as 2**70."""
    from cyrank._validation import check_param

    assert check_param("threshold", 2 ** 70) == float(2 ** 70)
    with pytest.raises(ValueError, match="threshold must be finite"):
        check_param("threshold", 2 ** 1100)


def test_options_field_given_as_a_huge_python_int():
    """check_options tested finiteness with np.isfinite, which raises numpy's own TypeError ("ufunc 'isfinite' not
    supported") for an int beyond float64; it now says which field and what it must be, like any bad field."""
    from cyrank.domination import Options
    from cyrank._validation import check_options

    with pytest.raises(TypeError, match="Options.densify_share must be float like its default"):
        check_options(Options(densify_share=2 ** 1100), Options, "DominationRank")
    assert check_options(Options(densify_share=2 ** 70), Options, "DominationRank").densify_share == 2 ** 70


@pytest.mark.parametrize("cls", [DominationRank, RankSVM, RankNet])
def test_linear_predict_reads_float32_x_in_place(cls):
    """decision_function on a float32 X (dense and CSR) allocates well under a float64 copy of X (numpy's X @ coef_
    made one, 2x X's bytes) and gives X coef_ computed in float64 from the same values."""
    import tracemalloc

    import scipy.sparse as sp

    from cyrank.datasets import make_ranking

    X, y, qid = make_ranking(10, 2000, 20, 3, random_state=0)
    model = cls().fit(X, y, qid=qid)
    big = np.random.default_rng(1).standard_normal((50_000, 20)).astype(np.float32)
    for Xp in (big, sp.csr_matrix(big)):
        model.predict(Xp[:10])  # first-call allocations outside the measure
        tracemalloc.start()
        try:
            scores = model.predict(Xp)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert scores.dtype == np.float64
        np.testing.assert_allclose(scores, big.astype(np.float64) @ model.coef_, rtol=1e-12, atol=1e-12)
        stored = big.size if not sp.issparse(Xp) else Xp.nnz
        assert peak < 8 * 50_000 + 0.25 * 8 * stored, peak  # the scores, and far less than a float64 copy
