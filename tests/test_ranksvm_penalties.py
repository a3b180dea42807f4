"""Linear RankSVM (squared hinge) with penalty="l1" | "elasticnet": R(w) + C sum_P max(0, 1 - w'(x_i - x_j))^2 with
R = ||w||_1 or l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2, against cvxpy (reference.ranksvm); the public
datafit cyrank.ranksvm.loss, the functional objective, and the path over C from C_min."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from cyrank import RankSVM
from cyrank.datasets import make_ranking
from cyrank.io import load_model, save_model
from cyrank.ranksvm import loss, objective, path, solve

ref = pytest.importorskip("reference.ranksvm")


def _data(seed=0, storage="dense", dtype=np.float64, n_features=10):
    """8 queries, 120 rows, 3 grades; sparse: half the entries zero."""
    return make_ranking(8, 120, n_features, 3, density=0.5 if storage == "sparse" else 1.0,
                        sparse=storage == "sparse", dtype=dtype, random_state=seed)


def _top(X, y, qid):
    """max_r |dL/dw_r at 0| of the unit-C loss, by the plain pair loop: dL/dw at 0 = -2 sum_P (x_i - x_j)."""
    i, j = ref.preference_pairs(y, qid)
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    return float(np.max(np.abs(2.0 * (Xd[i].astype(np.float64) - Xd[j]).sum(axis=0))))


def _F(X, y, qid, w, **params):
    return ref.objective(X, y, qid, w, **params)


def _check_against_reference(est, X, y, qid, params, sol, tol):
    """The fitted est reaches cvxpy's optimum to 1e-6 (relative), reports its objective, and says converged with
    a certified or estimated gap within tol max(1, |F|)."""
    F_ref = _F(X, y, qid, sol["w"], **params)
    F = _F(X, y, qid, est.coef_, **params)
    assert (F - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
    assert est.objective_ == pytest.approx(F, rel=1e-10)
    assert est.objective(X, y, qid) == pytest.approx(F, rel=1e-10)
    assert est.converged_ and est.gap_ is not None and est.gap_ <= tol * max(1.0, abs(F))
    return F


CASES = [("l1", 0.5, 2.0), ("l1", 0.5, 30.0), ("elasticnet", 0.3, 2.0), ("elasticnet", 0.7, 30.0),
         ("elasticnet", 1.0, 2.0), ("elasticnet", 0.0, 2.0)]


@pytest.mark.parametrize("penalty,l1_ratio,factor", CASES)
@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_penalties_match_cvxpy(penalty, l1_ratio, factor, storage, dtype):
    """C = factor / max_r |dL/dw_r at 0| (factor times C_min of "l1"): near C_min the l1 model is sparse, with
    exact zeros where cvxpy's is (numerically) zero; the functional solve gives the estimator's model."""
    X, y, qid = _data(1, storage, dtype)
    C = factor / _top(X, y, qid)
    params = dict(C=C, penalty=penalty, l1_ratio=l1_ratio)
    est = RankSVM(tol=1e-10, **params).fit(X, y, qid)
    sol = ref.solve(X, y, qid, **params)
    _check_against_reference(est, X, y, qid, params, sol, 1e-10)
    zeros = est.coef_ == 0
    if factor <= 2.0 and l1_ratio > 0:
        assert zeros.any() and (~zeros).any()  # a strong l1 term: exact zeros, and not only zeros
    assert np.all(np.abs(sol["w"][zeros]) <= 1e-6 * max(1.0, np.abs(sol["w"]).max()))
    res = solve(X, y, qid, tol=1e-10, **params)
    assert np.array_equal(res.coef, est.coef_) and res.gap <= 1e-10 * max(1.0, abs(res.objective))
    assert est.grad_norm_ == res.grad_norm and est.n_pairs_ == ref.preference_pairs(y, qid)[0].size


def test_edge_ratios_are_l1_and_l2():
    """l1_ratio = 1 is "l1" and l1_ratio = 0 is "l2" (TRON, today's objective): the same models bit for bit."""
    X, y, qid = _data(2)
    C = 3.0 / _top(X, y, qid)
    a, b = RankSVM(C=C, penalty="l1").fit(X, y, qid), RankSVM(C=C, penalty="elasticnet", l1_ratio=1.0).fit(X, y, qid)
    assert np.array_equal(a.coef_, b.coef_) and a.objective_ == b.objective_
    a, b = RankSVM(C=C).fit(X, y, qid), RankSVM(C=C, penalty="elasticnet", l1_ratio=0.0).fit(X, y, qid)
    assert np.array_equal(a.coef_, b.coef_) and a.n_cg_iter_ == b.n_cg_iter_ and a.objective_ == b.objective_
    assert a.objective_ == pytest.approx(_F(X, y, qid, a.coef_, C=C), rel=1e-12)


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.6)])
@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_badly_scaled_columns_permuted_rows_and_relabelled_queries(penalty, l1_ratio, storage):
    """One column x 1e9 and one x 1e-3: the l1 / elastic-net model still reaches cvxpy's optimum (solved in the
    rescaled coordinates v = s w) to 1e-6, reports converged_ only with its gap within tol, and agrees with the
    reference in those coordinates; permuting the rows and relabelling the queries gives the same model."""
    X, y, qid = _data(3, storage)
    scale = np.ones(X.shape[1])
    scale[0], scale[2] = 1e9, 1e-3
    Xs = sp.csr_matrix(X.multiply(scale)) if storage == "sparse" else X * scale
    C = 5.0 / _top(X, y, qid)  # the penalty acts on w: C picked on the unscaled problem's scale
    params = dict(C=C, penalty=penalty, l1_ratio=l1_ratio)
    est = RankSVM(tol=1e-10, **params).fit(Xs, y, qid)
    sol = ref.solve(Xs, y, qid, feature_scale=scale, **params)
    _check_against_reference(est, Xs, y, qid, params, sol, 1e-10)
    v, v_ref = est.coef_ * scale, sol["w"] * scale
    assert np.allclose(v, v_ref, atol=1e-4 * np.abs(v_ref).max())
    perm = np.random.default_rng(8).permutation(X.shape[0])
    moved = RankSVM(tol=1e-10, **params).fit(Xs[perm], y[perm], 100 - 3 * qid[perm])
    assert np.array_equal(moved.coef_ == 0, est.coef_ == 0)
    assert np.allclose(moved.coef_ * scale, v, rtol=1e-7, atol=1e-9 * np.abs(v).max())


def test_invariance_to_row_order_and_query_ids(ranking_data):
    """The conftest data (unsorted, non-contiguous qids): shuffled rows and other qid labels, same l1 model."""
    X, y, qid = ranking_data
    C = 4.0 / _top(X, y, qid)
    a = RankSVM(C=C, penalty="l1", tol=1e-10).fit(X, y, qid)
    perm = np.random.default_rng(1).permutation(X.shape[0])
    labels = {q: f"q{k}" for k, q in enumerate(np.unique(qid)[::-1])}
    b = RankSVM(C=C, penalty="l1", tol=1e-10).fit(X[perm], y[perm], np.array([labels[q] for q in qid[perm]]))
    assert np.array_equal(a.coef_ == 0, b.coef_ == 0)
    assert np.allclose(a.coef_, b.coef_, rtol=1e-8, atol=1e-12 * np.abs(a.coef_).max())
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-12)


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.4)])
def test_zero_exactly_up_to_C_min(penalty, l1_ratio):
    """w = 0 is optimal iff C max_r |dL/dw_r at 0| <= lam1 (KKT at 0; the l2 part has no gradient there):
    C_min = lam1 / max_r |...| from the pair loop; exactly zero at C_min and below, not above."""
    X, y, qid = _data(4)
    lam1 = 1.0 if penalty == "l1" else l1_ratio
    C_min = lam1 / _top(X, y, qid)
    params = dict(penalty=penalty, l1_ratio=l1_ratio, tol=1e-10)
    for C in (C_min, 0.999 * C_min, 1e-3 * C_min):
        res = solve(X, y, qid, C=C, **params)
        assert not np.any(res.coef) and res.converged and res.objective == _F(X, y, qid, res.coef, C=C)
    res = solve(X, y, qid, C=1.001 * C_min, **params)
    assert np.count_nonzero(res.coef) >= 1 and res.converged
    p = path(X, y, qid, penalty=penalty, l1_ratio=l1_ratio, n_Cs=2, eps=0.5)
    assert p.C_min == pytest.approx(C_min, rel=1e-12) and p.Cs[0] == p.C_min and p.coefs[:, 0].nnz == 0


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 0.5), ("elasticnet", 0.6)])
def test_path_matches_independent_solves_and_cvxpy(penalty, l1_ratio):
    """The path: C increasing geometrically from C_min to C_min / eps, alphas = 1 / Cs, each point the optimum of
    an independent solve at that C, and cvxpy's at two of them."""
    X, y, qid = _data(5)
    p = path(X, y, qid, penalty=penalty, l1_ratio=l1_ratio, n_Cs=5, eps=0.01, tol=1e-10)
    assert np.allclose(p.Cs, p.C_min * np.geomspace(1.0, 100.0, 5), rtol=1e-12) and np.all(np.diff(p.Cs) > 0)
    assert np.array_equal(p.alphas, 1.0 / p.Cs) and p.alpha_max == 1.0 / p.C_min
    assert p.converged.all() and np.all(p.kkt_violations <= 1e-10)
    nnz = np.diff(p.coefs.indptr)
    assert nnz[0] == 0 and nnz[-1] > nnz[1] > 0
    for k, C in enumerate(p.Cs):
        params = dict(C=C, penalty=penalty, l1_ratio=l1_ratio)
        w = p.coefs[:, k].toarray().ravel()
        alone = solve(X, y, qid, tol=1e-10, **params)
        assert p.objectives[k] == pytest.approx(alone.objective, rel=1e-9)
        assert p.objectives[k] == pytest.approx(_F(X, y, qid, w, **params), rel=1e-10)
        if k in (1, 3):
            F_ref = _F(X, y, qid, ref.solve(X, y, qid, **params)["w"], **params)
            assert (p.objectives[k] - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
    # given Cs (any order), "l2" included; without Cs, "l2" and l1_ratio = 0 have no C_min
    q = path(X, y, qid, Cs=[p.Cs[2], p.Cs[1]], penalty=penalty, l1_ratio=l1_ratio, tol=1e-10)
    assert np.array_equal(q.Cs, p.Cs[1:3]) and q.C_min is None
    assert np.allclose(q.objectives, p.objectives[1:3], rtol=1e-9)
    C = float(p.Cs[-1])
    l2 = path(X, y, qid, Cs=[C], penalty="l2")
    assert np.array_equal(l2.coefs[:, 0].toarray().ravel(), solve(X, y, qid, C=C).coef)
    for bad in (dict(penalty="l2"), dict(penalty="elasticnet", l1_ratio=0.0)):
        with pytest.raises(ValueError, match="Cs="):
            path(X, y, qid, **bad)
    with pytest.raises(ValueError, match="Cs must be"):
        path(X, y, qid, Cs=[1.0, -1.0])
    with pytest.raises(ValueError, match="n_Cs"):
        path(X, y, qid, n_Cs=0)


def test_path_without_pairs_needs_Cs():
    X, y, qid = _data(6)
    with pytest.warns(Warning, match="no preference pair"), pytest.raises(ValueError, match="no C_min"):
        path(X, np.zeros_like(y), qid)


@pytest.mark.parametrize("penalty", ["l1", "elasticnet"])
def test_warm_start(penalty):
    """warm_start (estimator) and coef_init (functional): a refit at the optimum takes at most one iteration, and a
    warm path of C values ends where cold fits do."""
    X, y, qid = _data(7)
    C = 5.0 / _top(X, y, qid)
    est = RankSVM(C=C, penalty=penalty, tol=1e-10, warm_start=True).fit(X, y, qid)
    first = est.coef_.copy()
    est.fit(X, y, qid)
    assert est.n_iter_ <= 1 and est.objective_ <= _F(X, y, qid, first, C=C, penalty=penalty) * (1 + 1e-12)
    est.set_params(C=4 * C).fit(X, y, qid)
    cold = RankSVM(C=4 * C, penalty=penalty, tol=1e-10).fit(X, y, qid)
    assert est.converged_ and est.objective_ == pytest.approx(cold.objective_, rel=1e-9)
    assert np.allclose(est.coef_, cold.coef_, atol=1e-6 * np.abs(cold.coef_).max())
    res = solve(X, y, qid, C=4 * C, penalty=penalty, tol=1e-10, coef_init=cold.coef_)
    assert res.n_iter <= 1 and res.objective <= cold.objective_ * (1 + 1e-12)


def test_errors_name_what_to_use():
    X, y, qid = _data(8)
    for kw in (dict(kernel="rbf"), dict(kernel="poly"), dict(loss="hinge")):
        with pytest.raises(ValueError, match="kernel='linear'.*loss='squared_hinge'"):
            RankSVM(penalty="l1", **kw).fit(X, y, qid)
        with pytest.raises(ValueError, match="penalty='l2'"):
            solve(X, y, qid, penalty="elasticnet", **kw)
    with pytest.raises(ValueError, match="penalty"):
        RankSVM(penalty="l0").fit(X, y, qid)
    with pytest.raises(ValueError, match="l1_ratio"):
        RankSVM(penalty="elasticnet", l1_ratio=1.5).fit(X, y, qid)
    with pytest.raises(ValueError, match="l1_ratio"):
        solve(X, y, qid, penalty="elasticnet", l1_ratio=np.nan)
    with pytest.raises(ValueError, match="loss='squared_hinge'"):
        objective(X, y, qid, coef=np.zeros(X.shape[1]), loss="hinge", penalty="l1")
    with pytest.raises(ValueError, match="coef"):
        objective(X, y, qid, coef=np.zeros(3))
    with pytest.raises(ValueError, match="coef_init"):
        solve(X, y, qid, penalty="l1", coef_init=np.full(X.shape[1], np.inf))


def test_dask_ranksvm_refuses_l1():
    pytest.importorskip("dask")
    from cyrank.dask import DaskRankSVM

    with pytest.raises(ValueError, match="l2 objective only"):
        DaskRankSVM(penalty="l1")._check_params()
    DaskRankSVM()._check_params()


def test_params_clone_pickle_and_model_file(tmp_path):
    X, y, qid = _data(9, "sparse")
    C = 3.0 / _top(X, y, qid)
    est = RankSVM(C=C, penalty="elasticnet", l1_ratio=0.25, tol=1e-8)
    params = est.get_params()
    assert params["penalty"] == "elasticnet" and params["l1_ratio"] == 0.25
    assert clone(est).get_params() == params
    est.fit(X, y, qid)
    l1 = RankSVM(C=C, penalty="l1", tol=1e-8).fit(X, y, qid)
    assert np.any(l1.coef_ == 0)
    save_model(l1, tmp_path / "l1.npz")
    for back, model in ((pickle.loads(pickle.dumps(est)), est), (load_model(tmp_path / "l1.npz"), l1)):
        assert back.get_params() == model.get_params()
        assert np.array_equal(back.coef_, model.coef_) and back.objective_ == model.objective_
        assert np.array_equal(back.decision_function(X), model.decision_function(X))
        assert back.objective(X, y, qid) == model.objective(X, y, qid)


def test_public_loss_is_the_datafit():
    """cyrank.ranksvm.loss: C sum_P max(0, 1 - w'(x_i - x_j))^2 and its gradient by the pair loop; minimised with
    the regulariser as a Penalty by cyrank.optim.datafit.minimise, the model solve returns."""
    from cyrank.optim.certificate import group_column_squares
    from cyrank.optim.datafit import Datafit, minimise
    from cyrank.optim.penalties import Penalty

    X, y, qid = _data(10, "sparse")
    C = 0.3
    fit = loss(X, y, qid, C=C)
    assert isinstance(fit, Datafit) and fit.ridge == 0.0 and fit.n_features == X.shape[1]
    i, j = ref.preference_pairs(y, qid)
    D = (X[i] - X[j]).toarray()
    w = np.random.default_rng(0).standard_normal(X.shape[1])
    t = np.maximum(1.0 - D @ w, 0.0)
    assert fit.fun(w) == pytest.approx(C * float(t @ t), rel=1e-12)
    assert np.allclose(fit.grad(w), -2.0 * C * (D.T @ t), rtol=1e-11, atol=1e-11 * np.abs(D.T @ t).max())
    v = np.random.default_rng(1).standard_normal(X.shape[1])
    active = t > 0
    assert np.allclose(fit.hess_vec(v), 2.0 * C * D[active].T @ (D[active] @ v), rtol=1e-10, atol=1e-10)
    # column squares over the rows of queries with two grades (all of them here)
    order = np.argsort(qid, kind="stable")
    offsets = np.r_[0, np.cumsum(np.bincount(qid)[np.unique(qid)])]
    assert fit.n_rows == X.shape[0]
    assert np.allclose(fit.column_squares(), group_column_squares(X[order], offsets), rtol=1e-12)
    res = minimise(fit, Penalty(1.0, 0.0), tol=1e-10, max_iter=100)
    assert np.array_equal(res.x, solve(X, y, qid, C=C, penalty="l1", tol=1e-10, max_iter=100).coef)
    with pytest.raises(ValueError, match="C"):
        loss(X, y, qid, C=0.0)


def test_max_iter_is_warned_and_not_converged():
    from sklearn.exceptions import ConvergenceWarning

    X, y, qid = _data(11)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        est = RankSVM(C=1.0, penalty="l1", max_iter=1, tol=1e-12).fit(X, y, qid)
    assert not est.converged_ and est.n_iter_ == 1 and est.grad_norm_ > 1e-12
    res = solve(X, y, qid, C=1.0, penalty="elasticnet", max_iter=1, tol=1e-12)
    assert not res.converged and "max_iter" in res.message
