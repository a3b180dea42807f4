"""Linear ListNet and ListMLE (cyrank.listwise, issue 31) against the exact optima of reference.listwise (cvxpy +
Clarabel) at 1e-6 relative objective: each loss, target, tie rule and top_k, l2 / l1 / elastic net, dense and CSR,
float32 and float64, sample_weight, a column scaled 1.7e9 beside one scaled 1e-3; invariances (row permutation,
string qids, dense vs sparse, threads); clone, pickle and model files; parameter errors; eval_set and early
stopping."""
import functools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from cyrank.io import load_model, save_model
from cyrank.io._model import register_model
from cyrank.listwise import ListMLE, ListNet, loss, objective, solve
from reference import listwise as ref

REL = 1e-6          # the estimators' objective against the exact optimum, relative to max(1, |f*|)
REF_ACCURACY = 1e-7  # the reference's own accuracy (Clarabel)

CONFIGS = {
    "listnet-exp": (ListNet, dict(target="exp"), dict(loss="listnet", target="exp")),
    "listnet-gain": (ListNet, dict(target="gain"), dict(loss="listnet", target="gain")),
    "listnet-xendcg": (ListNet, dict(target="xendcg", random_state=5),
                       dict(loss="listnet", target="xendcg", random_state=5)),
    "listmle-efron": (ListMLE, dict(ties="efron"), dict(loss="listmle", ties="efron")),
    "listmle-breslow": (ListMLE, dict(ties="breslow"), dict(loss="listmle", ties="breslow")),
    "listmle-top3": (ListMLE, dict(top_k=3), dict(loss="listmle", top_k=3)),
}
PENALTIES = {"l2": dict(penalty="l2", alpha=0.3), "l1": dict(penalty="l1", alpha=0.3),
             "elasticnet": dict(penalty="elasticnet", alpha=0.3, l1_ratio=0.4)}


@functools.lru_cache(maxsize=None)
def ranking_data(n=150, d=6, seed=31):
    """n rows in unsorted, non-contiguous queries (one of a single row, one of equal labels), labels 0..3 tied."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    qid = rng.integers(0, 14, n) * 3 + 2
    qid[0] = 1000
    y = np.clip(np.round(1.2 + X @ rng.normal(size=d) * 0.8 + 0.8 * rng.normal(size=n)), 0, 3)
    y[qid == qid[1]] = 1.0
    return X, y, qid


def as_format(X, fmt):
    dtype = np.float32 if fmt.endswith("32") else np.float64
    X = X.astype(dtype)
    return sp.csr_matrix(X) if fmt.startswith("csr") else X


def check_optimal(est, f_star, tol=1e-6):
    gap = (est.objective_ - f_star) / max(1.0, abs(f_star))
    assert -REF_ACCURACY <= gap <= REL, gap
    return gap


def fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return est.fit(*args, **kwargs)


@functools.lru_cache(maxsize=None)
def reference(config, pen, weighted=False, scale=None):
    X, y, qid = ranking_data()
    _, _, ref_kw = CONFIGS[config]
    sw = weights() if weighted else None
    s = None
    if scale is not None:
        s = np.ones(X.shape[1])
        s[1], s[4] = scale
        X = X * s
    return ref.solve(X, y, qid, **ref_kw, **PENALTIES[pen], sample_weight=sw, feature_scale=s)


def weights():
    w = np.random.default_rng(3).uniform(0.0, 3.0, ranking_data()[0].shape[0])
    w[:10] = 0.0
    return w


# ------------------------------------------------------------------------------------------------ optima
@pytest.mark.parametrize("pen", list(PENALTIES))
@pytest.mark.parametrize("config", list(CONFIGS))
def test_optimum_matches_cvxpy(config, pen):
    X, y, qid = ranking_data()
    cls, params, ref_kw = CONFIGS[config]
    est = fit(cls(**params, **PENALTIES[pen]), X, y, qid)
    sol = reference(config, pen)
    assert est.converged_
    check_optimal(est, sol.objective)
    # objective_ is the objective at coef_, by the estimator, the functional layer and the reference's numpy
    assert est.objective(X, y, qid) == pytest.approx(est.objective_, rel=1e-12)
    assert ref.objective(est.coef_, X, y, qid, **ref_kw, **PENALTIES[pen]) == pytest.approx(est.objective_,
                                                                                            rel=1e-10)


@pytest.mark.parametrize("fmt", ["csr-float64", "dense-float32", "csr-float32"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_formats(config, fmt):
    X, y, qid = ranking_data()
    cls, params, _ = CONFIGS[config]
    pen = "l2" if fmt != "csr-float32" else "elasticnet"
    Xf = as_format(X, fmt)
    est = fit(cls(**params, **PENALTIES[pen]), Xf, y, qid)
    if fmt.endswith("32"):  # the optimum of the float32 data (its values exactly in float64)
        X64 = as_format(X, "dense-float32").astype(np.float64)
        f_star = ref.solve(X64, y, qid, **CONFIGS[config][2], **PENALTIES[pen]).objective
    else:
        f_star = reference(config, pen).objective
    assert est.converged_
    check_optimal(est, f_star)


@pytest.mark.parametrize("pen", ["l2", "l1"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_sample_weight(config, pen):
    X, y, qid = ranking_data()
    cls, params, _ = CONFIGS[config]
    est = fit(cls(**params, **PENALTIES[pen]), X, y, qid, sample_weight=weights())
    assert est.converged_
    check_optimal(est, reference(config, pen, weighted=True).objective)
    # weights of 1 are no weights; a weight of 0 on a one-row query changes nothing
    a = fit(cls(**params, **PENALTIES[pen]), X, y, qid, sample_weight=1.0)
    b = fit(cls(**params, **PENALTIES[pen]), X, y, qid)
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("pen", ["l2", "elasticnet"])
@pytest.mark.parametrize("config", ["listnet-exp", "listmle-efron", "listmle-top3"])
def test_badly_scaled_columns_converged_is_honest(config, pen):
    """A column x1.7e9 beside one x1e-3: converged_ True only within tol of the optimum, else a warning."""
    X, y, qid = ranking_data()
    Xs = X.copy()
    Xs[:, 1] *= 1.7e9
    Xs[:, 4] *= 1e-3
    cls, params, _ = CONFIGS[config]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = cls(**params, **PENALTIES[pen]).fit(Xs, y, qid)
    f_star = reference(config, pen, scale=(1.7e9, 1e-3)).objective
    gap = (est.objective_ - f_star) / max(1.0, abs(f_star))
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    if est.converged_:
        assert not warned and -REF_ACCURACY <= gap <= REL, gap
    else:
        assert warned
    assert est.converged_, "expected the preconditioned solver to reach the optimum here"


def test_xendcg_noise_is_the_contract_draw_and_reproducible():
    X, y, qid = ranking_data()
    a = fit(ListNet(target="xendcg"), X, y, qid)
    b = fit(ListNet(target="xendcg"), X, y, qid)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = fit(ListNet(target="xendcg", random_state=0), X, y, qid)
    np.testing.assert_array_equal(a.coef_, c.coef_)  # None means seed 0
    d = fit(ListNet(target="xendcg", random_state=1), X, y, qid)
    assert not np.allclose(a.coef_, d.coef_)
    sol = ref.solve(X, y, qid, loss="listnet", target="xendcg", random_state=1)
    check_optimal(d, sol.objective)
    e = fit(ListNet(random_state=1), X, y, qid)  # random_state unused by target="exp"
    np.testing.assert_array_equal(e.coef_, fit(ListNet(random_state=2), X, y, qid).coef_)


def test_functional_layer():
    X, y, qid = ranking_data()
    res = solve(X, y, qid, loss="listmle", alpha=0.3)
    assert res.converged and res.gap is not None and res.gap_kind
    w = res.coef
    assert loss(X, y, qid, loss="listmle").fun(w) == pytest.approx(
        objective(w, X, y, qid, loss="listmle", alpha=0.0), rel=1e-13)
    assert objective(w, X, y, qid, loss="listmle", alpha=0.3) == pytest.approx(res.objective, rel=1e-12)
    # warm start from the optimum: no Newton step needed
    again = solve(X, y, qid, loss="listmle", alpha=0.3, coef_init=w)
    assert again.n_iter <= 1 and again.converged


# ------------------------------------------------------------------------------------------------ invariances
@pytest.mark.parametrize("cls, params", [(ListNet, {}), (ListMLE, {}), (ListMLE, dict(top_k=2, penalty="l1",
                                                                                     alpha=0.2))])
def test_invariances(cls, params):
    X, y, qid = ranking_data()
    base = fit(cls(**params), X, y, qid)
    perm = np.random.default_rng(4).permutation(X.shape[0])
    p = fit(cls(**params), X[perm], y[perm], qid[perm])
    np.testing.assert_allclose(p.coef_, base.coef_, rtol=1e-8, atol=1e-11)
    names = np.array([f"query-{(97 * int(q)) % 1009:04d}" for q in qid])  # other order of the queries
    s = fit(cls(**params), X, y, names)
    np.testing.assert_allclose(s.coef_, base.coef_, rtol=1e-8, atol=1e-11)
    c = fit(cls(**params), sp.csr_matrix(X), y, qid)
    np.testing.assert_allclose(c.coef_, base.coef_, rtol=1e-8, atol=1e-11)
    f = fit(cls(**params), X.astype(np.float32), y, qid)
    f64 = fit(cls(**params), X.astype(np.float32).astype(np.float64), y, qid)
    np.testing.assert_allclose(f.coef_, f64.coef_, rtol=1e-8, atol=1e-11)


def test_threads_same_bits():
    rng = np.random.default_rng(6)
    n, d = 24000, 5  # above the kernels' parallel threshold (20000 rows)
    X = rng.normal(size=(n, d))
    y = np.clip(np.round(1 + X @ rng.normal(size=d) + rng.normal(size=n)), 0, 3)
    qid = np.repeat(np.arange(n // 40), 40)
    for cls in (ListNet, ListMLE):
        with threadpool_limits(1, user_api="openmp"):
            one = fit(cls(), X, y, qid)
        with threadpool_limits(2, user_api="openmp"):
            two = fit(cls(), X, y, qid)
        np.testing.assert_array_equal(one.coef_, two.coef_)
        assert one.objective_ == two.objective_


# ------------------------------------------------------------------------------------------------ sklearn
@pytest.mark.parametrize("est", [ListNet(target="gain", alpha=0.5), ListMLE(ties="breslow", top_k=4)])
def test_clone_pickle_model_files(est, tmp_path):
    X, y, qid = ranking_data()
    assert clone(est).get_params() == est.get_params()
    fit(est, X, y, qid)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    register_model(type(est))
    path = tmp_path / "model.npz"
    save_model(est, path)
    loaded = load_model(path)
    assert type(loaded) is type(est) and loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert loaded.converged_ == est.converged_ and loaded.gap_kind_ == est.gap_kind_
    assert 0.0 <= est.score(X, y, qid) <= 1.0


def test_warm_start():
    X, y, qid = ranking_data()
    est = fit(ListNet(alpha=0.3, warm_start=True), X, y, qid)
    n_first = est.n_iter_
    est.fit(X, y, qid)
    assert est.n_iter_ <= 1 < n_first
    with pytest.raises(ValueError, match="number of features changed"):
        est.fit(X[:, :3], y, qid)


@pytest.mark.parametrize("make, message", [
    (lambda: ListNet(target="softmax"), "target must be one of"),
    (lambda: ListNet(alpha=-1.0), "alpha must be >= 0"),
    (lambda: ListNet(penalty="l3"), "penalty must be one of"),
    (lambda: ListNet(penalty="elasticnet", l1_ratio=2.0), "l1_ratio must be <= 1"),
    (lambda: ListNet(random_state="seed"), "random_state must be None, an int"),
    (lambda: ListNet(tol=0.0), "tol must be > 0"),
    (lambda: ListMLE(ties="exact"), "ties must be one of"),
    (lambda: ListMLE(top_k=0), "top_k must be >= 1"),
    (lambda: ListMLE(max_iter=0), "max_iter must be >= 1"),
    (lambda: ListMLE(early_stopping_rounds=0), "early_stopping_rounds must be >= 1"),
    (lambda: ListMLE(early_stopping_rounds=2), "early_stopping_rounds needs an eval_set"),
    (lambda: ListMLE(early_stopping_rounds=2, penalty="l1"), "early_stopping_rounds needs penalty='l2'"),
])
def test_bad_parameters(make, message):
    X, y, qid = ranking_data()
    with pytest.raises((ValueError, TypeError), match=message):
        make().fit(X, y, qid)


def test_bad_data():
    X, y, qid = ranking_data()
    with pytest.raises(ValueError, match="non-negative"):
        ListNet(target="gain").fit(X, y - 1.0, qid)
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        ListMLE().fit(X, y, qid, sample_weight=-np.ones(y.shape[0]))
    with pytest.raises(ValueError, match="eval_set has 2 features but X has 6"):
        ListMLE().fit(X, y, qid, eval_set=(X[:, :2], y, qid))
    with pytest.raises(ValueError, match="eval_set must be a tuple"):
        ListMLE().fit(X, y, qid, eval_set=X)
    with pytest.raises(TypeError, match="top_k must be an integer"):
        ListMLE(top_k=2.5).fit(X, y, qid)


# ------------------------------------------------------------------------------------------------ eval_set
def letor(seed, n, d=10, q=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.random.default_rng(0).normal(size=d)
    y = np.clip(np.round(X @ w / 2 + rng.normal(size=n)), 0, 4)
    return X, y, np.repeat(np.arange(n // q), q)


def test_eval_set_history_and_early_stopping():
    X, y, qid = letor(0, 2000)
    Xv, yv, qv = letor(1, 400)
    full = fit(ListNet(alpha=1e-4, tol=1e-12), X, y, qid, eval_set=(Xv, yv, qv))
    h = full.history_["eval"]
    assert h.shape == (full.n_iter_ + 1,) and full.converged_
    assert full.best_iteration_ == int(np.argmax(h))
    assert h[-1] == pytest.approx(full.score(Xv, yv, qv), abs=1e-12)
    assert np.argmax(h) < full.n_iter_  # this data's eval NDCG@10 peaks before the optimum
    with pytest.warns(ConvergenceWarning, match="stopped early on purpose"):
        early = ListNet(alpha=1e-4, tol=1e-12, early_stopping_rounds=1).fit(X, y, qid, eval_set=(Xv, yv, qv))
    assert not early.converged_
    assert early.best_iteration_ == int(np.argmax(early.history_["eval"]))
    assert early.n_iter_ == early.best_iteration_ + 1 < full.n_iter_
    np.testing.assert_array_equal(early.history_["eval"], h[:early.n_iter_ + 1])
    assert early.score(Xv, yv, qv) == pytest.approx(h.max(), abs=1e-12)  # the best iterate is kept
    assert early.objective(X, y, qid) == pytest.approx(early.objective_, rel=1e-12)
    # rounds that are never reached change nothing
    late = fit(ListNet(alpha=1e-4, tol=1e-12, early_stopping_rounds=1000), X, y, qid, eval_set=(Xv, yv, qv))
    np.testing.assert_array_equal(late.coef_, full.coef_)
    # no eval_set: an empty history
    plain = fit(ListMLE(), X, y, qid)
    assert plain.history_["eval"].size == 0 and plain.best_iteration_ == plain.n_iter_


@pytest.mark.parametrize("kw", [dict(loss="listnet"), dict(loss="listmle"), dict(loss="listmle", penalty="l1",
                                                                                 alpha=0.3)])
def test_columns_spread_over_orders_of_magnitude(kw):
    """Raw LETOR-like columns scaled by 10^U(-2, 4): the Jacobi preconditioner from the first step (before it,
    TRON's trust region shrank to 1e-3 and 40 Newton steps left |g|/|g0| at 0.08 on 1e4 x 136; here 6-7 steps
    against 28-41)."""
    rng = np.random.default_rng(12)
    n, d = 400, 20
    X = rng.normal(size=(n, d))
    y = np.clip(np.round(1.5 + X @ rng.normal(size=d) / 3 + rng.normal(size=n)), 0, 4)
    qid = np.repeat(np.arange(n // 40), 40)
    s = 10.0 ** rng.uniform(-2, 4, d)
    res = solve(X * s, y, qid, **kw)
    assert res.converged and res.n_iter <= 15  # 28 (ListNet) and 41 (ListMLE) Newton steps without it
    sol = ref.solve(X * s, y, qid, **kw, feature_scale=s)
    assert -REF_ACCURACY <= (res.objective - sol.objective) / max(1.0, abs(sol.objective)) <= REL


@pytest.mark.parametrize("cls", [ListNet, ListMLE])
def test_no_order_to_learn(cls):
    """Every query of one label (or one row): a RankingDataWarning and w = 0, converged."""
    X, _, qid = ranking_data()
    from cyrank import RankingDataWarning

    with pytest.warns(RankingDataWarning, match="no query has two different labels.*w = 0 is optimal"):
        est = fit(cls(), X, np.ones(X.shape[0]), qid)
    assert est.converged_ and not np.any(est.coef_) and est.objective_ >= 0.0


def test_functional_layers_name_the_estimator_parameters():
    """solve_listnet / solve_listmle (the estimators' _solve, for the command line) take every parameter by name."""
    import inspect

    from cyrank.listwise import solve_listmle, solve_listnet

    for cls, fn in ((ListNet, solve_listnet), (ListMLE, solve_listmle)):
        names = set(inspect.signature(fn).parameters)
        assert set(cls().get_params()) - {"warm_start"} <= names
        assert {"sample_weight", "coef_init", "eval_set"} <= names
    X, y, qid = ranking_data()
    a = solve_listmle(X, y, qid, top_k=3)
    b = solve(X, y, qid, loss="listmle", top_k=3)
    np.testing.assert_array_equal(a.coef, b.coef)
