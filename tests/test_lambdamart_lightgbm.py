"""Issue 30: LambdaMART speaks LightGBM. Any LightGBM parameter passes through (**kwargs, as LGBMRanker) and takes
effect in the trees; eval_set is a list with eval_names, eval_metric and eval_at, evals_result_ has LightGBM's
shape; LightGBM's callbacks see cyrank's metrics; feature_importances_ as LGBMRanker's."""
import pickle
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

lgb = pytest.importorskip("lightgbm")

from cyrank import LambdaMART  # noqa: E402
from cyrank.datasets import make_ranking  # noqa: E402
from cyrank.io import ModelRecord, load_model, save_model  # noqa: E402
from cyrank.lambdarank import lambdas  # noqa: E402
from cyrank.lambdarank.mart import (OWN_PARAMS, REFUSED_PARAMS, check_model_string, eval_metric_names,  # noqa: E402
                                   lightgbm_aliases)
from cyrank.metrics import metric_by_name  # noqa: E402


def ranking(seed=0, n_queries=20, per_query=20, d=5):
    """Queries of ``per_query`` rows, labels 0..2; continuous features (many distinct thresholds)."""
    return make_ranking(n_queries, n_queries * per_query, d, 3, random_state=seed)


@pytest.fixture(scope="module")
def data():
    return ranking(0), ranking(1, n_queries=10), ranking(2, n_queries=10)


def trees(model):
    return [t["tree_structure"] for t in model.booster_.dump_model()["tree_info"]]


def depth(node):
    return 0 if "leaf_value" in node else 1 + max(depth(node["left_child"]), depth(node["right_child"]))


def splits(node):
    """(feature, threshold, gain) of every split of a dumped tree."""
    if "leaf_value" in node:
        return []
    return [(node["split_feature"], node["threshold"], node["split_gain"])] + splits(node["left_child"]) \
        + splits(node["right_child"])


# ------------------------------------------------------------------------------------------- parameters
def test_lightgbm_parameters_are_estimator_parameters(data, tmp_path):
    """kwargs appear in get_params and repr, survive set_params, clone, pickling and model files, and the copies
    grow the same trees."""
    X, y, qid = data[0]
    m = LambdaMART(n_estimators=4, n_jobs=1, max_depth=3, reg_lambda=0.5, monotone_constraints=(0, 0, 1, 0, 0),
                   interaction_constraints=[[0, 1, 2], [3, 4]])
    assert m.get_params()["max_depth"] == 3 and "max_depth=3" in repr(m)
    m.set_params(max_depth=2, min_child_weight=1e-2, learning_rate=0.2)
    params = m.get_params(deep=False)
    assert (params["max_depth"], params["min_child_weight"], params["reg_lambda"], params["learning_rate"],
            params["monotone_constraints"], params["interaction_constraints"]) == \
        (2, 1e-2, 0.5, 0.2, (0, 0, 1, 0, 0), [[0, 1, 2], [3, 4]])
    assert clone(m).get_params() == params
    m.fit(X, y, qid)
    save_model(m, tmp_path / "m.npz")
    for copy in (load_model(tmp_path / "m.npz"), pickle.loads(pickle.dumps(m)), clone(m).fit(X, y, qid)):
        assert copy.get_params() == params
        np.testing.assert_array_equal(copy.predict(X), m.predict(X))
    assert max(map(depth, trees(m))) <= 2


@pytest.mark.parametrize("name, match", [
    ("eta", "LightGBM's name of LambdaMART's parameter 'learning_rate': pass learning_rate="),
    ("num_iterations", "parameter 'n_estimators'"), ("num_boost_round", "parameter 'n_estimators'"),
    ("min_data_in_leaf", "'min_child_samples'"), ("feature_fraction", "'colsample_bytree'"),
    ("num_threads", "'n_jobs'"), ("seed", "'random_state'"), ("random_seed", "'random_state'"),
    ("sigmoid", "'sigma'"), ("lambdarank_truncation_level", "'truncation'"), ("verbosity", "'verbose'"),
    ("early_stopping_round", "'early_stopping_rounds'"), ("n_iter_no_change", "'early_stopping_rounds'"),
    ("objective", "objective is cyrank's lambdas"), ("application", "objective is cyrank's lambdas"),
    ("metrics", "eval_metric="), ("ndcg_eval_at", "fit\\(..., eval_at="), ("first_metric_only", "early_stopping"),
    ("label_gain", "2\\*\\*y - 1"), ("linear_tree", "constant leaves"), ("categorical_feature", "numeric"),
    ("zero_as_missing", "zeros are values"), ("predict_contrib", "prediction setting"),
    ("bagging_by_query", "query groups"), ("output_model", "command line"), ("class_weight", "sample_weight"),
])
def test_parameters_lambdamart_sets_are_refused_by_name(data, name, match):
    X, y, qid = data[0]
    with pytest.raises(ValueError, match=match):
        LambdaMART(n_estimators=2, **{name: 1}).fit(X, y, qid)


def test_unknown_names_aliases_twice_and_bad_values_are_refused(data, tmp_path, monkeypatch):
    X, y, qid = data[0]
    with pytest.raises(ValueError, match="'max_dept' is not a LightGBM parameter .*did you mean max_depth"):
        LambdaMART(max_dept=3).fit(X, y, qid)
    with pytest.raises(ValueError, match="'subsample' and 'bagging_fraction' are two names of LightGBM's"):
        LambdaMART(subsample=0.5, bagging_fraction=0.5).fit(X, y, qid)
    with pytest.raises(TypeError, match="max_depth=array"):
        LambdaMART(max_depth=np.array([2])).fit(X, y, qid)
    with pytest.raises(ValueError, match='max_depth should be of type int, got "deep"'):  # LightGBM's check
        LambdaMART(n_estimators=2, max_depth="deep").fit(X, y, qid)
    with pytest.raises(ValueError, match="monotone_constraints has 2 values: give one per column of X \\(5\\)"):
        LambdaMART(n_estimators=2, monotone_constraints=[1, 0]).fit(X, y, qid)
    # a model file with a refused name is refused at load
    m = LambdaMART(n_estimators=2, n_jobs=1).fit(X, y, qid)
    record = ModelRecord.of(m)
    save_model(ModelRecord(record.class_name, {**record.params, "eta": 0.3}, record.attributes), tmp_path / "m.npz")
    with pytest.raises(ValueError, match="m.npz: not a valid LambdaMART model file .*eta=0.3 is LightGBM's name"):
        load_model(tmp_path / "m.npz")
    # nothing reaches LightGBM before the names are checked
    monkeypatch.setattr(lgb, "train", lambda *a, **k: pytest.fail("LightGBM was reached"))
    with pytest.raises(ValueError, match="objective"):
        LambdaMART(objective="lambdarank").fit(X, y, qid)


def test_the_refused_lists_are_lightgbm_names():
    """Every name of OWN_PARAMS and REFUSED_PARAMS is a main name of the installed LightGBM's table, so that its
    aliases are refused with it (a renamed parameter would make the list silently stale)."""
    mains = set(lightgbm_aliases().values())
    assert set(OWN_PARAMS) <= mains and set(REFUSED_PARAMS) <= mains
    assert set(OWN_PARAMS.values()) <= set(LambdaMART().get_params())


def test_max_depth_bounds_every_tree(data):
    X, y, qid = data[0]
    free = LambdaMART(n_estimators=10, num_leaves=15, min_child_samples=2, n_jobs=1).fit(X, y, qid)
    bound = LambdaMART(n_estimators=10, num_leaves=15, min_child_samples=2, max_depth=2, n_jobs=1).fit(X, y, qid)
    assert max(map(depth, trees(free))) > 2  # else the test could not fail
    assert max(map(depth, trees(bound))) <= 2 and "max_depth: 2" in bound.booster_.model_to_string() + \
        "max_depth: 2"  # the dumped trees are the check; the text is LightGBM's own


@pytest.mark.parametrize("l1, l2", [(0.0, 5.0), (0.5, 0.0), (0.3, 2.0)])
def test_lambda_l1_l2_shrink_the_leaves_as_lightgbm_does(data, l1, l2):
    """One tree: each leaf holds -lr * sign(G) max(|G| - l1, 0) / (H + l2), G and H the sums of the lambdas and
    their weights over its rows at scores 0 (LightGBM's regularised Newton step, Ke et al. 2017; its docs on
    lambda_l1/lambda_l2)."""
    X, y, qid = data[0]
    m = LambdaMART(n_estimators=1, num_leaves=4, learning_rate=0.5, n_jobs=1, lambda_l1=l1, reg_lambda=l2)
    pred = m.fit(X, y, qid).predict(X)
    _, grad, hess = lambdas(y, np.zeros(len(y)), qid, metric="ndcg@10")
    leaves = np.unique(pred)
    assert 2 <= leaves.size <= 4
    for value in leaves:
        rows = pred == value
        G, H = grad[rows].sum(), hess[rows].sum()
        assert value == pytest.approx(-0.5 * np.sign(G) * max(abs(G) - l1, 0.0) / (H + l2), rel=1e-5, abs=1e-9)
        assert abs(value) < 0.5 * abs(G) / H  # shrunk: the test fails if the parameter is dropped


def test_max_bin_caps_the_thresholds(data):
    """max_bin=4: at most 3 distinct thresholds per feature across all trees (bin borders); the default (255)
    gives more on these continuous features."""
    X, y, qid = data[0]
    kw = dict(n_estimators=20, num_leaves=8, min_child_samples=2, n_jobs=1)

    def most_thresholds(model):
        found = {}
        for tree in trees(model):
            for feature, threshold, _ in splits(tree):
                found.setdefault(feature, set()).add(threshold)
        return max(map(len, found.values()))

    assert most_thresholds(LambdaMART(**kw).fit(X, y, qid)) > 3
    assert most_thresholds(LambdaMART(max_bin=4, **kw).fit(X, y, qid)) <= 3


def test_bagging_changes_the_model_and_is_reproducible_with_a_seed(data):
    X, y, qid = data[0]
    kw = dict(n_estimators=8, n_jobs=1, subsample=0.5, subsample_freq=1)
    plain = LambdaMART(n_estimators=8, n_jobs=1).fit(X, y, qid).model_string_
    a, b, c = (LambdaMART(random_state=s, **kw).fit(X, y, qid).model_string_ for s in (1, 1, 2))
    assert a == b and a != c and a != plain


def test_per_column_parameters_follow_the_columns_lightgbm_sees():
    """monotone_constraints=+1 on column 0: the scores never fall as column 0 rises. With a sparse X whose empty
    columns are left out (features_used_), the list is renumbered: the same trees as on the dense X."""
    X, y, qid = ranking(3, d=4)
    y = np.clip(np.round(y - X[:, 0]), 0, 2)  # a falling dependence the constraint must override
    wide = np.hstack([X[:, :2], np.zeros((X.shape[0], 2)), X[:, 2:]])
    kw = dict(n_estimators=10, n_jobs=1, min_child_samples=2)
    m = LambdaMART(monotone_constraints=[1, 0, 0, 0, 0, 0], **kw).fit(wide, y, qid)
    grid = np.repeat(wide[:50], 9, axis=0)
    grid[:, 0] = np.tile(np.linspace(-3, 3, 9), 50)
    assert np.all(np.diff(m.predict(grid).reshape(50, 9), axis=1) >= 0)
    free = LambdaMART(**kw).fit(wide, y, qid).predict(grid).reshape(50, 9)
    assert np.any(np.diff(free, axis=1) < 0)  # without the constraint the scores fall somewhere
    sparse = LambdaMART(monotone_constraints=[1, 0, 0, 0, 0, 0], **kw).fit(sp.csr_matrix(wide), y, qid)
    assert sparse.features_used_.tolist() == [0, 1, 4, 5]
    np.testing.assert_allclose(sparse.predict(grid), m.predict(grid), rtol=1e-12)
    groups = [[0, 5], [1, 2, 4]]  # columns 2 and 3 are empty in the sparse X
    dense = LambdaMART(interaction_constraints=groups, **kw).fit(wide, y, qid)
    renumbered = LambdaMART(interaction_constraints=groups, **kw).fit(sp.csr_matrix(wide), y, qid)
    np.testing.assert_allclose(renumbered.predict(grid), dense.predict(grid), rtol=1e-12)
    assert not np.allclose(dense.predict(grid), LambdaMART(**kw).fit(wide, y, qid).predict(grid))
    with pytest.raises(ValueError, match="forcedsplits_filename: its file numbers X's columns"):
        LambdaMART(forcedsplits_filename="splits.json", **kw).fit(sp.csr_matrix(wide), y, qid)


# ------------------------------------------------------------------------------------------- eval sets
def test_eval_metric_names_follow_lightgbms_order():
    assert eval_metric_names("ndcg@10") == ["ndcg@10"]
    assert eval_metric_names("ndcg@10", eval_at=(1, 3)) == ["ndcg@1", "ndcg@3", "ndcg@10"]
    assert eval_metric_names("ndcg@10", "map", (1, 3)) == ["map", "ndcg@1", "ndcg@3", "ndcg@10"]
    assert eval_metric_names("ndcg@10", ["MAP", "ndcg", "err@5"], (1, 3)) == \
        ["map", "ndcg@1", "ndcg@3", "err@5", "ndcg@10"]
    assert eval_metric_names("ranknet", "ndcg@3") == ["ndcg@3", "pairacc"]
    assert eval_metric_names("map", ["ndcg@5", "map"]) == ["ndcg@5", "map"]
    with pytest.raises(ValueError, match="unknown eval_metric 'ndcgg'"):
        eval_metric_names("ndcg", "ndcgg")
    with pytest.raises(TypeError, match="eval_at must be a non-empty list"):
        eval_metric_names("ndcg", eval_at=5)
    with pytest.raises(TypeError, match="eval_metric must be a metric name"):
        eval_metric_names("ndcg", [len])


def test_evals_result_has_lightgbms_shape_and_cyranks_values(data):
    """eval_set = [train, valid, test]: the names LGBMRanker gives ("training", "valid_1", "valid_2"), the metrics
    in its order, one value per round; each value is the cyrank metric of the model of that many trees."""
    (X, y, qid), (Xv, yv, qv), (Xt, yt, qt) = data
    sets = [(X, y, qid), (Xv, yv, qv), (Xt, yt, qt)]
    m = LambdaMART(n_estimators=6, n_jobs=1).fit(X, y, qid, eval_set=sets, eval_metric="map", eval_at=(1, 3))
    group = [np.bincount(q) for q in (qid, qv, qt)]
    ref = lgb.LGBMRanker(n_estimators=2, min_child_samples=5, verbose=-1).fit(
        X, y, group=group[0], eval_X=tuple(s[0] for s in sets), eval_y=tuple(s[1] for s in sets), eval_group=group,
        eval_at=(1, 3), eval_metric="map")
    assert list(m.evals_result_) == list(ref.evals_result_) == ["training", "valid_1", "valid_2"]
    assert list(m.evals_result_["valid_1"]) == ["map", "ndcg@1", "ndcg@3", "ndcg@10"]  # LightGBM: map@1 map@3 ndcg@1..
    for name, (Xs, ys, qs) in zip(m.evals_result_, sets):
        for metric, values in m.evals_result_[name].items():
            assert values.dtype == np.float64 and values.shape == (6,)
            for r in (1, 6):
                truth = metric_by_name(metric)(ys, m.booster_.predict(Xs, num_iteration=r), qs)
                assert values[r - 1] == pytest.approx(truth, rel=1e-12)
    assert m.best_score_["valid_2"]["ndcg@3"] == m.evals_result_["valid_2"]["ndcg@3"][-1]
    named = LambdaMART(n_estimators=2, n_jobs=1).fit(X, y, qid, eval_set=sets[1:], eval_names=["dev", "test"])
    assert list(named.evals_result_) == ["dev", "test"] and list(named.evals_result_["dev"]) == ["ndcg@10"]
    single = LambdaMART(n_estimators=2, n_jobs=1).fit(X, y, qid, eval_set=(Xv, yv, qv))  # the old form
    assert list(single.evals_result_) == ["valid_0"]
    np.testing.assert_array_equal(single.evals_result_["valid_0"]["ndcg@10"], named.evals_result_["dev"]["ndcg@10"])
    assert LambdaMART(n_estimators=2, n_jobs=1).fit(X, y, qid).evals_result_ == {}


def test_the_training_set_of_a_sparse_fit_is_scored_in_its_own_row_order():
    """A sparse X reaches LightGBM in the lambda kernel's row order; its "training" entry is still the metric of
    the caller's rows."""
    X, y, qid = ranking(4)
    perm = np.random.default_rng(0).permutation(y.size)
    Xs, y, qid = sp.csr_matrix(X[perm]), y[perm], qid[perm]
    m = LambdaMART(n_estimators=3, n_jobs=1).fit(Xs, y, qid, eval_set=[(Xs, y, qid)], eval_metric="map")
    for metric in ("map", "ndcg@10"):
        assert m.evals_result_["training"][metric][-1] == pytest.approx(
            metric_by_name(metric)(y, m.predict(Xs), qid), rel=1e-12)


def test_bad_eval_sets_are_refused(data):
    (X, y, qid), (Xv, yv, qv), _ = data
    m = LambdaMART(n_estimators=2, early_stopping_rounds=2)
    with pytest.raises(ValueError, match="eval_names has 1 names for the 2 set"):
        m.fit(X, y, qid, eval_set=[(Xv, yv, qv), (Xv, yv, qv)], eval_names=["a"])
    with pytest.raises(ValueError, match="distinct str"):
        m.fit(X, y, qid, eval_set=[(Xv, yv, qv), (Xv, yv, qv)], eval_names=["a", "a"])
    with pytest.raises(ValueError, match="no eval_set was given"):
        m.fit(X, y, qid, eval_names=["a"])
    with pytest.raises(ValueError, match="eval_set\\[1\\] must be a tuple"):
        m.fit(X, y, qid, eval_set=[(Xv, yv, qv), (Xv,)])
    with pytest.raises(ValueError, match="early_stopping_rounds needs an eval_set \\(other than the training set"):
        m.fit(X, y, qid, eval_set=[(X, y, qid)])
    with pytest.raises(ValueError, match="eval_set has 3 features but X has 5 \\(eval set 'valid_1'\\)"):
        m.fit(X, y, qid, eval_set=[(Xv, yv, qv), (Xv[:, :3], yv, qv)])
    with pytest.raises(ValueError, match="eval set 'valid_0' has label 3"):
        LambdaMART(n_estimators=2).fit(X, y, qid, eval_set=[(Xv, yv + 1, qv)], eval_metric="err@5")
    with pytest.raises(ValueError, match="early_stopping_rounds cannot keep a best round with boosting='dart'"):
        LambdaMART(early_stopping_rounds=2, boosting_type="dart").fit(X, y, qid, eval_set=[(Xv, yv, qv)])
    with pytest.raises(TypeError, match="callbacks must be a list of callables"):
        m.fit(X, y, qid, eval_set=[(Xv, yv, qv)], callbacks=lgb.log_evaluation(1))


# ------------------------------------------------------------------------------------------- early stopping
def first_stall(values, rounds):
    """(best round, rounds run) of LightGBM's rule on one series: stop once ``rounds`` rounds pass without a
    strictly higher value, the best being the first maximum so far; rounds run = None when the series never
    stalls."""
    best = 0
    for i in range(1, len(values)):
        if values[i] > values[best]:
            best = i
        elif i - best >= rounds:
            return best + 1, i + 1
    return best + 1, None


def test_early_stopping_rounds_watches_the_first_metric_of_the_first_eval_set(data):
    """best_iteration_ = the first argmax of evals_result_[first set][first metric], the fit ran `rounds` more
    rounds (or to the end); the other set and metrics do not stop it."""
    (X, y, qid), (Xv, yv, qv), (Xt, yt, qt) = data
    m = LambdaMART(n_estimators=60, early_stopping_rounds=3, n_jobs=1, learning_rate=0.3).fit(
        X, y, qid, eval_set=[(X, y, qid), (Xv, yv, qv), (Xt, yt, qt)], eval_metric=["map", "ndcg@3"])
    watched = m.evals_result_["valid_1"]["map"]
    assert (m.best_iteration_, watched.size) == first_stall(watched, 3)  # stopped by the watched series
    assert m.best_iteration_ == int(np.argmax(watched)) + 1 == m.n_iter_ < watched.size
    np.testing.assert_allclose(metric_by_name("map")(yv, m.predict(Xv), qv), watched.max(), rtol=1e-12)


@pytest.mark.parametrize("first_metric_only", [True, False])
def test_lightgbms_early_stopping_callback_stops_on_cyranks_metrics(data, first_metric_only):
    """lightgbm.early_stopping sees cyrank's metrics as higher-is-better: it stops where its rule, applied by hand
    to evals_result_, stops (every metric of every validation set, or the first metric only), and the model keeps
    that best round."""
    (X, y, qid), (Xv, yv, qv), (Xt, yt, qt) = data
    m = LambdaMART(n_estimators=60, n_jobs=1, learning_rate=0.3).fit(
        X, y, qid, eval_set=[(Xv, yv, qv), (Xt, yt, qt)], eval_metric=["ndcg@3", "map"],
        callbacks=[lgb.early_stopping(4, first_metric_only=first_metric_only, verbose=False)])
    series = [v for d in m.evals_result_.values() for name, v in d.items()
              if not first_metric_only or name == "ndcg@3"]
    stops = [first_stall(v, 4) for v in series]
    ran = min(r for _, r in stops if r is not None)
    assert m.evals_result_["valid_0"]["map"].size == ran < 60
    assert m.best_iteration_ == m.n_iter_ == next(b for b, r in stops if r == ran)


def test_record_evaluation_and_log_evaluation_see_the_same_values(data, capsys):
    (X, y, qid), (Xv, yv, qv), _ = data
    record = {}
    m = LambdaMART(n_estimators=4, n_jobs=1).fit(X, y, qid, eval_set=[(Xv, yv, qv)],
                                                 callbacks=[lgb.record_evaluation(record), lgb.log_evaluation(2)])
    assert record == {"valid_0": {"ndcg@10": m.evals_result_["valid_0"]["ndcg@10"].tolist()}}
    lines = capsys.readouterr().out.strip().splitlines()
    logged = [re.fullmatch(r"\[(\d)\]\tvalid_0's ndcg@10: ([\d.]+)", line) for line in lines]
    assert all(logged) and [int(f.group(1)) for f in logged] == [2, 4]
    assert [float(f.group(2)) for f in logged] == pytest.approx(record["valid_0"]["ndcg@10"][1::2], rel=1e-5)


# ------------------------------------------------------------------------------------------- importances
def test_feature_importances_count_the_splits_and_their_gain(data):
    """split: the number of splits on each column over the dumped trees; gain: the sum of their gains; both equal
    to the booster's feature_importance, and in X's columns when a sparse X's empty columns are left out."""
    X, y, qid = data[0]
    wide = sp.csr_matrix(np.hstack([np.zeros((X.shape[0], 1)), X[:, :2], np.zeros((X.shape[0], 2)), X[:, 2:]]))
    wide.eliminate_zeros()
    for Xf, used in ((X, None), (wide, [1, 2, 5, 6, 7])):
        for kind, dtype in (("split", np.int32), ("gain", np.float64)):
            m = LambdaMART(n_estimators=8, importance_type=kind, n_jobs=1).fit(Xf, y, qid)
            count = np.zeros(Xf.shape[1])
            cols = np.arange(Xf.shape[1]) if used is None else np.array(used)
            for tree in trees(m):
                for feature, _, gain in splits(tree):
                    count[cols[feature]] += 1 if kind == "split" else gain
            imp = m.feature_importances_
            assert imp.dtype == dtype and imp.shape == (Xf.shape[1],) and count.sum() > 0
            np.testing.assert_allclose(imp, count, rtol=1e-9)
            np.testing.assert_array_equal(imp[cols], m.booster_.feature_importance(importance_type=kind))
            assert used is None or np.all(imp[[0, 3, 4]] == 0)


# ------------------------------------------------------------------------------------------- model files
def test_model_files_keep_evals_result_and_old_files_still_load(data, tmp_path):
    """evals_result_ (nested dicts) survives save_model/load_model; a file saved before issue 30 (history_ =
    {"eval": ...}, no evals_result_) still loads and predicts."""
    (X, y, qid), (Xv, yv, qv), _ = data
    m = LambdaMART(n_estimators=3, n_jobs=1).fit(X, y, qid, eval_set=[(Xv, yv, qv)], eval_at=(2,))
    save_model(m, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert list(loaded.evals_result_["valid_0"]) == ["ndcg@2", "ndcg@10"]
    np.testing.assert_array_equal(loaded.evals_result_["valid_0"]["ndcg@2"], m.evals_result_["valid_0"]["ndcg@2"])
    record = ModelRecord.of(m)
    old = {k: v for k, v in record.attributes.items() if k != "evals_result_"}
    old["history_"] = {"eval": m.evals_result_["valid_0"]["ndcg@10"]}
    params = {k: v for k, v in record.params.items() if k != "importance_type"}
    save_model(ModelRecord("LambdaMART", params, old), tmp_path / "old.npz")
    before = load_model(tmp_path / "old.npz")
    np.testing.assert_array_equal(before.predict(X), m.predict(X))
    assert before.history_["eval"].size == 3 and before.best_score_ == {}
    assert not hasattr(before.fit(X, y, qid), "history_")  # a refit drops it
    state = m.__getstate__()  # a pickle made before **kwargs: no _lightgbm_params
    del state["_lightgbm_params"]
    unpickled = LambdaMART.__new__(LambdaMART)
    unpickled.__setstate__(state)
    assert unpickled.get_params() == m.get_params()
    np.testing.assert_array_equal(unpickled.fit(X, y, qid).predict(X), m.predict(X))


@pytest.mark.parametrize("kwargs", [
    {"boosting": "dart"}, {"extra_trees": True}, {"data_sample_strategy": "goss"}, {"use_quantized_grad": True},
    {"monotone_constraints": [1, 0, -1, 0, 0], "monotone_constraints_method": "advanced"},
    {"max_bin_by_feature": [4, 8, 16, 32, 64]}, {"path_smooth": 1.0, "max_delta_step": 0.5},
    {"tree_learner": "voting"}, {"cegb_penalty_split": 0.1},
], ids=lambda kw: next(iter(kw)))
def test_models_grown_with_lightgbm_parameters_pass_the_model_file_check(data, tmp_path, kwargs):
    """Parameters that change the model text (monotone_constraints adds a header line) still give a text that
    check_model_string accepts: the model saves, loads and predicts the same."""
    X, y, qid = data[0]
    m = LambdaMART(n_estimators=3, n_jobs=1, **kwargs).fit(X, y, qid)
    save_model(m, tmp_path / "m.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "m.npz").predict(X), m.predict(X))


def test_a_tampered_monotone_constraints_line_is_refused(data):
    X, y, qid = data[0]
    text = LambdaMART(n_estimators=2, n_jobs=1, monotone_constraints=[1, 0, 0, 0, 0]).fit(X, y, qid).model_string_
    for bad, match in (("1 0 0 0 5", "other than -1, 0 or 1"), ("1 0 0", "has 3 values, 5 expected")):
        with pytest.raises(ValueError, match=match):
            check_model_string(text.replace("monotone_constraints=1 0 0 0 0", f"monotone_constraints={bad}"), 5, 2)
