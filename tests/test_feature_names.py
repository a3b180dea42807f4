"""feature_names_in_ (scikit-learn's convention, cyrank._base): every estimator fitted on a DataFrame with string
column names keeps them; predict / transform / score then refuse other, missing or reordered columns, warn when
names appear or disappear, and the names survive clone-free copies (pickle, model files). The check of
scikit-learn itself runs in tests/test_common.py; these are the cases it does not cover."""
import pickle
import warnings

import numpy as np
import pytest

from cyrank import MissingQidWarning
from cyrank.domination import DominationRank
from cyrank.io import load_model, save_model
from cyrank.labelrank import LabelRankBoost
from cyrank.lambdarank import LambdaRank, RankNet
from cyrank.mlr import MLR
from cyrank.ranksvm import RankSVM

pd = pytest.importorskip("pandas")

RANKERS = [DominationRank(max_iter=50), RankSVM(max_iter=50), RankSVM(kernel="rbf", max_iter=30),
           RankNet(max_iter=30), LambdaRank(max_iter=5)]
NAMES = ["clicks", "bm25", "timestamp", "pagerank"]


def ranking_frame(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(NAMES)))
    y = rng.integers(0, 3, n).astype(float)
    qid = np.repeat(np.arange(n // 10), 10)
    return pd.DataFrame(X, columns=NAMES), y, qid


def fitted(estimator, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(*args, **kwargs)


@pytest.fixture(params=RANKERS + ["LambdaMART"], ids=repr)
def ranker(request):
    if request.param == "LambdaMART":
        pytest.importorskip("lightgbm")
        from cyrank import LambdaMART

        return LambdaMART(n_estimators=3, min_child_samples=2, n_jobs=1)
    return request.param


def test_a_dataframe_fit_keeps_the_names_and_predicts_as_the_array(ranker):
    X, y, qid = ranking_frame()
    model = fitted(ranker, X, y, qid=qid)
    assert model.feature_names_in_.dtype == object and list(model.feature_names_in_) == NAMES
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_frame = model.predict(X)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        from_array = model.predict(X.to_numpy())
    np.testing.assert_array_equal(from_frame, from_array)


@pytest.mark.parametrize("columns, says", [
    (NAMES[::-1], "must be in the same order as they were in fit"),
    (["clicks", "bm25", "time", "pagerank"], "unseen at fit time:\n- time\n.*yet now missing:\n- timestamp"),
    (NAMES[:3], "yet now missing:\n- pagerank"),
])
def test_other_columns_are_refused_with_the_difference_and_the_fix(ranker, columns, says):
    X, y, qid = ranking_frame()
    model = fitted(ranker, X, y, qid=qid)
    bad = pd.DataFrame(np.ones((5, len(columns))), columns=columns)
    for method in (model.predict, lambda Z: model.score(Z, np.zeros(5), np.zeros(5, int))):
        with pytest.raises(ValueError, match=f"(?s)should match those that were passed during fit.*{says}.*"
                                             r"X\[est\.feature_names_in_\]"):
            method(bad)


def test_names_come_and_go_with_the_fit(ranker):
    X, y, qid = ranking_frame()
    model = fitted(ranker, X.to_numpy(), y, qid=qid)
    assert not hasattr(model, "feature_names_in_")
    with pytest.warns(UserWarning, match="X has feature names, but .* was fitted without feature names"):
        model.predict(X)
    fitted(model, X, y, qid=qid)
    assert list(model.feature_names_in_) == NAMES
    fitted(model, X.to_numpy(), y, qid=qid)  # a refit on an array forgets the names of the earlier fit
    assert not hasattr(model, "feature_names_in_")


def test_integer_column_labels_are_no_names_and_mixed_labels_are_refused():
    X, y, qid = ranking_frame()
    model = fitted(RankSVM(), pd.DataFrame(X.to_numpy()), y, qid=qid)  # columns 0..3, as pd.DataFrame(array)
    assert not hasattr(model, "feature_names_in_")
    mixed = pd.DataFrame(X.to_numpy(), columns=["a", 1, "c", 2])
    with pytest.raises(TypeError, match=r"mixed types \['int', 'str'\].*astype\(str\)"):
        RankSVM().fit(mixed, y, qid=qid)
    assert not hasattr(RankSVM(), "coef_")


def test_the_names_survive_pickle_and_model_files_and_a_bad_file_is_refused(tmp_path):
    X, y, qid = ranking_frame()
    model = fitted(RankNet(), X, y, qid=qid)
    for copy in (pickle.loads(pickle.dumps(model)), load_model(save_model(model, tmp_path / "m.npz") or
                                                              tmp_path / "m.npz")):
        assert copy.feature_names_in_.dtype == object and list(copy.feature_names_in_) == NAMES
        with pytest.raises(ValueError, match="same order"):
            copy.predict(X[NAMES[::-1]])
    model.feature_names_in_ = np.array(NAMES[:3], dtype=object)  # fewer names than features
    save_model(model, tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="not a valid RankNet model file.*feature_names_in_ has shape"):
        load_model(tmp_path / "bad.npz")


def test_label_ranking_and_mlr_keep_the_names():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(40, 4)), columns=NAMES)
    Y = (rng.random((40, 3)) < 0.4).astype(int)
    Y[Y.sum(1) == 0, 0] = 1
    model = fitted(LabelRankBoost(alpha=0.1, max_iter=30), X, Y)
    assert list(model.feature_names_in_) == NAMES
    with pytest.raises(ValueError, match="same order"):
        model.predict(X[NAMES[::-1]])
    classes = np.repeat([0, 1, 2, 3], 10)
    metric = fitted(MLR(C=1.0), X, classes)
    assert list(metric.feature_names_in_) == NAMES
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        from_array = metric.transform(X.to_numpy())
    np.testing.assert_array_equal(metric.transform(X), from_array)
    with pytest.raises(ValueError, match="unseen at fit time"):
        metric.transform(X.rename(columns={"bm25": "BM25"}))
    pairs = np.stack([X.to_numpy()[:5], X.to_numpy()[5:10]], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # pairs are arrays by definition: no feature-name warning
        metric.pair_distance(pairs)


def test_quiet_fit_warnings_are_not_swallowed():
    """The wrapper adds no warning of its own to a DataFrame fit (MissingQidWarning still comes when qid is
    missing, and only once)."""
    X, y, _ = ranking_frame()
    with pytest.warns(MissingQidWarning) as record:
        RankNet(max_iter=5).fit(X, y)
    assert [w.category for w in record] == [MissingQidWarning]
