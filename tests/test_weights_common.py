"""sample_weight across every estimator (README, "Weights"): the same signature and the same refusals of bad
weights everywhere, None equal to unit weights, a weight on a whole query equal to repeating the query, scikit-learn
metadata routing of sample_weight, and ``cyrank fit --weights FILE``. Each family's weighted objective is checked
against its cvxpy reference in its own tests/test_<family>_weights.py."""
import importlib.util
import inspect
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV

from cyrank import _registry
from cyrank.cli import main
from cyrank.datasets import make_ranking
from cyrank.io import dump_svmlight, load_model, load_weights
from cyrank.labelrank import LabelRankBoost
from cyrank.lambdarank import LambdaRank, RankNet
from cyrank.domination import DominationRank
from cyrank.mlr import MLR
from cyrank.model_selection import QueryKFold
from cyrank.ranksvm import RankSVM

LIGHTGBM = importlib.util.find_spec("lightgbm") is not None
RANKERS = [
    DominationRank(alpha=0.5, tol=1e-10), DominationRank(penalty="l1", alpha=0.5, tol=1e-10),
    RankSVM(C=0.5, tol=1e-10), RankSVM(loss="hinge", C=0.5, tol=1e-8), RankSVM(kernel="rbf", C=0.5, tol=1e-10),
    RankNet(alpha=0.5, tol=1e-10), LambdaRank(alpha=1.0, max_iter=5),
]


def ranking(seed=0, n_queries=6):
    return make_ranking(n_queries, 15 * n_queries, 4, 3, binning="global", shuffle=True, random_state=seed)


def quiet_fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LambdaRank's iteration cap on this tiny problem
        return est.fit(*args, **kwargs)


@pytest.mark.parametrize("spec", _registry.TABLE, ids=lambda s: s.class_name)
def test_every_fit_takes_sample_weight(spec):
    if spec.extra and importlib.util.find_spec(spec.extra) is None:
        pytest.skip(f"{spec.extra} is not installed")
    fit = inspect.signature(spec.estimator_class.fit).parameters
    assert "sample_weight" in fit and fit["sample_weight"].default is None
    if spec.solve:
        assert "sample_weight" in inspect.signature(spec.solve_function).parameters


def _fit_args(est, seed=0):
    if isinstance(est, MLR):
        rng = np.random.default_rng(seed)
        return (rng.normal(size=(30, 3)), rng.integers(0, 3, size=30)), 30
    if isinstance(est, LabelRankBoost):
        rng = np.random.default_rng(seed)
        return (rng.normal(size=(30, 3)), (rng.random((30, 4)) > 0.5).astype(int)), 30
    X, y, qid = ranking(seed)
    return (X, y, qid), y.shape[0]


def _all_estimators():
    extra = [MLR(C=1.0), LabelRankBoost(alpha=0.5)]
    if LIGHTGBM:
        from cyrank import LambdaMART

        extra.append(LambdaMART(n_estimators=3, min_child_samples=2))
    return RANKERS + extra


@pytest.mark.parametrize("est", _all_estimators(), ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("bad, message", [
    (lambda n: -np.ones(n), "sample_weight must be >= 0"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "sample_weight contains NaN"),
    (lambda n: np.ones(n - 1), "sample_weight has .* entries but X has .* rows"),
    (lambda n: np.zeros(n), "sample_weight is 0 on every (row|instance|query)"),
])
def test_bad_weights_are_refused_with_the_shared_message(est, bad, message):
    args, n = _fit_args(est)
    with pytest.raises(ValueError, match=message):
        quiet_fit(est, *args, sample_weight=bad(n))


@pytest.mark.parametrize("est", [e for e in RANKERS if not isinstance(e, LambdaRank)], ids=repr)
def test_weight_zero_on_every_preferred_row_is_refused(est):
    X, y, qid = ranking(1)
    w = np.ones_like(y)
    for q in np.unique(qid):
        rows = qid == q
        w[rows & (y > y[rows].min())] = 0.0  # only the rows of the lowest label of each query keep a weight
    with pytest.raises(ValueError, match="0 on every row that is preferred"):
        est.fit(X, y, qid, sample_weight=w)


@pytest.mark.parametrize("est", _all_estimators(), ids=lambda e: type(e).__name__)
def test_unit_weights_equal_no_weights(est):
    args, n = _fit_args(est, seed=2)
    plain = quiet_fit(sklearn.base.clone(est), *args)
    ones = quiet_fit(sklearn.base.clone(est), *args, sample_weight=np.ones(n))
    f = (lambda m: m.transform(args[0])) if isinstance(est, MLR) else (lambda m: m.predict(args[0]))
    scale = np.abs(f(plain)).max()
    np.testing.assert_allclose(f(ones), f(plain), rtol=1e-7, atol=1e-9 * scale)


@pytest.mark.parametrize("est", [e for e in RANKERS if not isinstance(e, LambdaRank)], ids=repr)
def test_a_query_weight_equals_the_query_repeated(est):
    """Integer weights constant within each query give the objective and the model of the data with each query
    repeated that many times (the repeated copies under new query ids)."""
    X, y, qid = ranking(3)
    ids = np.unique(qid)
    times = dict(zip(ids.tolist(), [1, 2, 3, 1, 0, 2]))
    w = np.array([times[q] for q in qid.tolist()], dtype=float)
    Xr, yr, qr = [], [], []
    for q in ids.tolist():
        rows = qid == q
        for copy in range(times[q]):
            Xr.append(X[rows]), yr.append(y[rows]), qr.append(np.full(rows.sum(), 10 * q + copy))
    repeated = sklearn.base.clone(est).fit(np.vstack(Xr), np.concatenate(yr), np.concatenate(qr))
    weighted = sklearn.base.clone(est).fit(X, y, qid, sample_weight=w)
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-6)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-4,
                               atol=1e-4 * np.abs(repeated.predict(X)).max())


def test_label_rank_boost_integer_weights_equal_repeated_instances():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(40, 3)), (rng.random((40, 5)) > 0.5).astype(int)
    times = rng.integers(0, 4, size=40)
    repeated = LabelRankBoost(alpha=0.5, tol=1e-10).fit(np.repeat(X, times, axis=0), np.repeat(Y, times, axis=0))
    weighted = LabelRankBoost(alpha=0.5, tol=1e-10).fit(X, Y, sample_weight=times)
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-8)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-5, atol=1e-7)


def test_metadata_routing_passes_sample_weight_to_fit():
    """GridSearchCV with metadata routing hands each fold's qid and sample_weight to fit and score: the best model
    refitted by the search equals a direct weighted fit, and the fold scores are the weighted scores."""
    X, y, qid = ranking(5, n_queries=8)
    w = np.random.default_rng(5).integers(1, 4, size=y.shape[0]).astype(float)
    with sklearn.config_context(enable_metadata_routing=True):
        est = RankSVM(tol=1e-10).set_fit_request(qid=True, sample_weight=True)
        est.set_score_request(qid=True, sample_weight=True)
        search = GridSearchCV(est, {"C": [0.1, 1.0]}, cv=QueryKFold(n_splits=2))
        search.fit(X, y, qid=qid, sample_weight=w)
    direct = RankSVM(C=search.best_params_["C"], tol=1e-10).fit(X, y, qid, sample_weight=w)
    np.testing.assert_allclose(search.best_estimator_.coef_, direct.coef_, rtol=1e-10)
    train, test = next(QueryKFold(n_splits=2).split(X, y, qid=qid))
    fold = RankSVM(C=0.1, tol=1e-10).fit(X[train], y[train], qid[train], sample_weight=w[train])
    assert search.cv_results_["split0_test_score"][0] == pytest.approx(
        fold.score(X[test], y[test], qid[test], sample_weight=w[test]), rel=1e-10)


@pytest.mark.parametrize("solver, params", [("ranksvm", {"C": 0.5}), ("ranknet", {"alpha": 0.5}),
                                            ("domination", {"alpha": 0.5})])
def test_cli_fit_with_a_weight_file(tmp_path, capsys, solver, params):
    X, y, qid = ranking(6)
    w = np.random.default_rng(6).integers(0, 4, size=y.shape[0]).astype(float)
    dump_svmlight(X, y, tmp_path / "train.svm", qid=qid)
    np.savetxt(tmp_path / "train.weight", w)
    argv = ["fit", solver, str(tmp_path / "train.svm"), "-o", str(tmp_path / "m.npz"),
            "--weights", str(tmp_path / "train.weight")] + sum([["-p", f"{k}={v}"] for k, v in params.items()], [])
    assert main(argv) == 0
    est = _registry.get(solver).make(**params).fit(X, y, qid, sample_weight=w)
    loaded = load_model(tmp_path / "m.npz")
    np.testing.assert_allclose(loaded.coef_, est.coef_, rtol=1e-12)
    assert loaded.objective_ == est.objective_


@pytest.mark.parametrize("content, message", [
    ("1\n2\n", "has 2 weights but the data file .* has 90 rows"),
    ("1\n\n" + "1\n" * 88, "line 2: a blank line"),
    ("1\nabc\n" + "1\n" * 88, "line 2: 'abc' is not a number"),
    ("-1\n" + "1\n" * 89, "must be >= 0"),
])
def test_cli_weight_file_errors_name_the_line(tmp_path, capsys, content, message):
    X, y, qid = ranking(6)
    dump_svmlight(X, y, tmp_path / "train.svm", qid=qid)
    (tmp_path / "w.txt").write_text(content)
    assert main(["fit", "ranksvm", str(tmp_path / "train.svm"), "--weights", str(tmp_path / "w.txt")]) == 2
    assert __import__("re").search(message, capsys.readouterr().err)


def test_load_weights_reads_one_weight_per_line(tmp_path):
    (tmp_path / "w").write_text("1\n0.5\n2e-1\n")
    np.testing.assert_array_equal(load_weights(tmp_path / "w", 3), [1.0, 0.5, 0.2])


def test_fit_many_passes_shared_and_per_task_weights():
    from cyrank.many import fit_many

    X, y, qid = ranking(8)
    rng = np.random.default_rng(8)
    Y = np.c_[y, rng.integers(0, 3, size=y.shape[0])]
    W = rng.integers(0, 3, size=Y.shape).astype(float) + np.eye(Y.shape[0], 2)  # no column all 0
    shared = fit_many(RankSVM(C=0.5, tol=1e-10), X, Y, qid, sample_weight=W[:, 0])
    per_task = fit_many(RankSVM(C=0.5, tol=1e-10), X, Y, qid, sample_weight=W)
    for t in range(2):
        np.testing.assert_array_equal(shared.estimators_[t].coef_,
                                      RankSVM(C=0.5, tol=1e-10).fit(X, Y[:, t], qid, sample_weight=W[:, 0]).coef_)
        np.testing.assert_array_equal(per_task.estimators_[t].coef_,
                                      RankSVM(C=0.5, tol=1e-10).fit(X, Y[:, t], qid, sample_weight=W[:, t]).coef_)
    with pytest.raises(ValueError, match="one column per task"):
        fit_many(RankSVM(), X, Y, qid, sample_weight=np.ones((Y.shape[0], 3)))


def test_validation_path_fits_and_scores_with_the_weights():
    from cyrank.metrics import ndcg_score
    from cyrank.model_selection import validation_path

    X, y, qid = ranking(9, n_queries=8)
    w = np.random.default_rng(9).integers(1, 4, size=y.shape[0]).astype(float)
    splits = list(QueryKFold(n_splits=2).split(X, y, qid=qid))
    _, scores = validation_path(RankSVM(tol=1e-10), "C", [0.1, 1.0], X, y, qid, cv=splits, sample_weight=w)
    _, plain = validation_path(RankSVM(tol=1e-10), "C", [0.1, 1.0], X, y, qid, cv=splits)
    assert not np.allclose(scores, plain)
    for i, C in enumerate([0.1, 1.0]):
        for j, (train, test) in enumerate(splits):
            model = RankSVM(C=C, tol=1e-10).fit(X[train], y[train], qid[train], sample_weight=w[train])
            assert scores[i, j] == pytest.approx(model.score(X[test], y[test], qid[test], sample_weight=w[test]),
                                                 rel=1e-6)
    # the weighted score is the mean over queries weighted by their mean row weight
    model = RankSVM(tol=1e-10).fit(X, y, qid)
    _, per_query = ndcg_score(y, model.predict(X), qid, k=10, return_per_query=True)
    qw = np.array([w[qid == q].mean() for q in np.unique(qid)])
    kept = ~np.isnan(per_query)
    assert model.score(X, y, qid, sample_weight=w) == pytest.approx(np.average(per_query[kept], weights=qw[kept]))


@pytest.mark.parametrize("solver", ["ranksvm", "ranknet", "domination"])
def test_cli_verify_with_a_weight_file(tmp_path, capsys, solver):
    """cyrank verify --weights: the fast solver and the cvxpy reference on the same weighted objective."""
    X, y, qid = ranking(10, n_queries=3)
    w = np.random.default_rng(10).integers(0, 4, size=y.shape[0]).astype(float)
    dump_svmlight(X, y, tmp_path / "small.svm", qid=qid)
    np.savetxt(tmp_path / "small.weight", w)
    assert main(["verify", solver, str(tmp_path / "small.svm"), "--weights", str(tmp_path / "small.weight")]) == 0
    out = capsys.readouterr().out
    assert "weighted" in out
    est = _registry.get(solver).make(**_registry.get(solver).small_params).fit(X, y, qid, sample_weight=w)
    assert f"{est.objective_:.10g}"[:8] in out
