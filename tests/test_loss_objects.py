"""The public loss objects (cyrank.optim.datafit.Datafit) of the smooth families: cyrank.domination.loss,
cyrank.lambdarank.loss (RankNet), cyrank.ranksvm.loss (squared hinge) and cyrank.labelrank.loss.

Each is checked on random data with tied labels: its value against a brute-force sum over the pairs (or the
family's ``objective`` minus its penalty), its gradient against finite differences of the value, its Hessian
products against differences of gradients; additivity over a split of the data by whole queries (instances for
label ranking), which is what a distributed fit sums; invariance to the row order and to the query ids' labels;
and minimise(loss, penalty) reaching the family's ``solve`` objective, dense and sparse, float32 and float64, with
a column x 1e9 and one x 1e-3.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from cyrank import domination, labelrank, lambdarank, ranksvm
from cyrank.datasets import make_ranking
from cyrank.optim.datafit import Datafit, minimise
from cyrank.optim.penalties import Penalty

SIGMA, C = 1.7, 0.4
SCALES = np.array([1e9, 1e-3, 1.0, 1.0, 1.0])


# ------------------------------------------------------------------------------------------- the families
def ranking_data(seed, *, sparse=False, dtype=np.float64, scaled=False):
    """(X, y, qid): 120 rows, 5 features, 4 grades binned globally (ties, and some single-grade queries), 8
    interleaved queries with ids 3 q + 1."""
    X, y, qid = make_ranking(8, 120, 5, 4, binning="global", shuffle=True, density=0.7 if sparse else 1.0,
                             sparse=sparse, dtype=dtype, feature_scales=SCALES if scaled else None,
                             random_state=seed)
    return X, y, 3 * qid + 1


def label_data(seed, *, sparse=False, dtype=np.float64, scaled=False):
    """(X, Y, None): 90 instances, 5 features, a 0/1 indicator of 4 labels from a noisy linear score."""
    X, _, _ = make_ranking(1, 90, 5, 2, density=0.7 if sparse else 1.0, sparse=sparse, dtype=dtype,
                           feature_scales=SCALES if scaled else None, random_state=seed)
    rng = np.random.default_rng(seed)
    Xd = X.toarray() if sp.issparse(X) else X
    Y = ((Xd / (SCALES if scaled else 1.0)) @ rng.normal(size=(5, 4)) + rng.normal(size=(90, 4)) > 0.3)
    return X, Y.astype(np.int8), None


def _pairs(y, qid):
    i, j = np.nonzero((qid[:, None] == qid[None, :]) & (y[:, None] > y[None, :]))
    return i, j


def brute_ranknet(X, y, qid, w):
    s = np.asarray(X @ w, dtype=np.float64).ravel()
    i, j = _pairs(y, qid)
    return float(np.sum(np.logaddexp(0.0, -SIGMA * (s[i] - s[j]))))


def brute_squared_hinge(X, y, qid, w):
    s = np.asarray(X @ w, dtype=np.float64).ravel()
    i, j = _pairs(y, qid)
    return C * float(np.sum(np.maximum(0.0, 1.0 - (s[i] - s[j])) ** 2))


def brute_domination(X, y, qid, w):
    s = np.asarray(X @ w, dtype=np.float64).ravel()
    total = 0.0
    for i in range(s.size):
        D = np.flatnonzero((qid == qid[i]) & (y < y[i]))
        if D.size:
            total += float(np.logaddexp.reduce(np.r_[0.0, s[D] - s[i]]))
    return total


class Family:
    """One public loss: how to build it, its value by brute force (or None), its ``objective`` minus the penalty,
    and the family's ``solve`` objective for a penalty (lam1, lam2) minimise can take."""

    def __init__(self, name, data, build, brute, objective_minus_penalty, solve_objective, penalties):
        self.name, self.data, self.build, self.brute = name, data, build, brute
        self.objective_minus_penalty, self.solve_objective, self.penalties = (
            objective_minus_penalty, solve_objective, penalties)

    def __repr__(self):
        return self.name


def _labelrank_objective(X, Y, qid, w):
    L = labelrank.loss(X, Y)
    coef, _ = L.coefficients(w)
    return labelrank.objective(X, Y, coef, alpha=0.7) - 0.7 * float(w @ w)


FAMILIES = [
    Family("domination", ranking_data, lambda X, y, q: domination.loss(X, y, q), brute_domination,
           lambda X, y, q, w: domination.objective(X, y, q, coef=w, alpha=0.7) - 0.7 * float(w @ w),
           {"l2": lambda X, y, q: domination.solve(X, y, q, alpha=0.5, tol=1e-10).objective,
            "l1": lambda X, y, q: domination.solve(X, y, q, penalty="l1", alpha=2.0, tol=1e-10).objective},
           {"l2": Penalty(0.0, 0.5), "l1": Penalty(2.0, 0.0)}),
    Family("ranknet", ranking_data, lambda X, y, q: lambdarank.loss(X, y, q, sigma=SIGMA), brute_ranknet,
           lambda X, y, q, w: (lambdarank.objective(X, y, q, coef=w, sigma=SIGMA, alpha=0.7)
                               - 0.7 * float(w @ w)),
           {"l2": lambda X, y, q: lambdarank.solve(X, y, q, sigma=SIGMA, alpha=0.3, tol=1e-10).objective,
            "l1": lambda X, y, q: lambdarank.solve(X, y, q, sigma=SIGMA, penalty="l1", alpha=2.0,
                                                   tol=1e-10).objective},
           {"l2": Penalty(0.0, 0.3), "l1": Penalty(2.0, 0.0)}),
    Family("ranksvm", ranking_data, lambda X, y, q: ranksvm.loss(X, y, q, C=C), brute_squared_hinge,
           lambda X, y, q, w: ranksvm.objective(X, y, q, coef=w, C=C) - 0.5 * float(w @ w),
           {"l2": lambda X, y, q: ranksvm.solve(X, y, q, C=C, tol=1e-10).objective},
           {"l2": Penalty(0.0, 0.5)}),
    Family("labelrank", label_data, lambda X, Y, q: labelrank.loss(X, Y), None, _labelrank_objective,
           {"l2": lambda X, Y, q: labelrank.solve(X, Y, alpha=0.2, tol=1e-10).objective},
           {"l2": Penalty(0.0, 0.2)}),
]
QUERY_FAMILIES = [f for f in FAMILIES if f.name != "labelrank"]


def _point(loss, seed, scale=1.0):
    return np.random.default_rng(seed).normal(size=loss.n_features) * scale


def _at(loss, w):
    """(value, gradient) at w, leaving the Hessian state there."""
    f = loss.fun(w)
    return f, loss.grad(w).copy()


# ------------------------------------------------------------------------------------------- value, derivatives
@pytest.mark.parametrize("family", FAMILIES, ids=repr)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_value_is_the_brute_force_sum_and_the_objective_minus_the_penalty(family, sparse, dtype):
    X, y, qid = family.data(1, sparse=sparse, dtype=dtype)
    loss = family.build(X, y, qid)
    assert isinstance(loss, Datafit) and loss.ridge == 0.0
    for scale in (0.1, 1.0, 30.0):  # margins up to the hundreds
        w = _point(loss, 2, scale)
        f = loss.fun(w)
        if family.brute is not None:
            assert f == pytest.approx(family.brute(X.astype(np.float64), y, qid, w), rel=1e-11)
        assert f == pytest.approx(family.objective_minus_penalty(X, y, qid, w), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("family", QUERY_FAMILIES, ids=repr)
def test_value_with_badly_scaled_columns(family):
    """A column x 1e9 and one x 1e-3: the value is still the pair sum (w scaled back so margins stay O(1))."""
    X, y, qid = family.data(3, scaled=True)
    loss = family.build(X, y, qid)
    w = _point(loss, 4) / SCALES
    assert loss.fun(w) == pytest.approx(family.brute(X, y, qid, w), rel=1e-9)
    assert loss.fun(w) == pytest.approx(family.objective_minus_penalty(X, y, qid, w), rel=1e-12)


@pytest.mark.parametrize("family", FAMILIES, ids=repr)
@pytest.mark.parametrize("sparse", [False, True])
def test_gradient_is_the_finite_difference_of_the_value(family, sparse):
    X, y, qid = family.data(5, sparse=sparse)
    loss = family.build(X, y, qid)
    w = _point(loss, 6)
    _, g = _at(loss, w)
    h = 1e-6
    fd = np.empty_like(g)
    for r in range(w.size):
        e = np.zeros_like(w)
        e[r] = h
        fd[r] = (loss.fun(w + e) - loss.fun(w - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * np.abs(g).max())


@pytest.mark.parametrize("family", FAMILIES, ids=repr)
@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_products_are_differences_of_gradients(family, sparse):
    X, y, qid = family.data(7, sparse=sparse)
    loss = family.build(X, y, qid)
    rng = np.random.default_rng(8)
    w = _point(loss, 9)
    h = 1e-6
    for _ in range(3):
        v = rng.normal(size=w.size)
        diff = (_at(loss, w + h * v)[1] - _at(loss, w - h * v)[1]) / (2 * h)
        _at(loss, w)
        loss.fun(w + rng.normal(size=w.size))  # a trial point never committed: the Hessian stays at w
        Hv = loss.hess_vec(v)
        np.testing.assert_allclose(Hv, diff, rtol=1e-5, atol=1e-6 * np.abs(diff).max())
        assert float(v @ Hv) >= 0.0  # convex


@pytest.mark.parametrize("family", FAMILIES, ids=repr)
def test_the_ridge_minimise_sets_is_added(family):
    """ridge r adds r ||w||^2, 2 r w and 2 r v, nothing else."""
    X, y, qid = family.data(10)
    bare, ridged = family.build(X, y, qid), family.build(X, y, qid)
    ridged.ridge = 0.35
    w, v = _point(bare, 11), _point(bare, 12)
    f0, g0 = _at(bare, w)
    f1, g1 = _at(ridged, w)
    assert f1 == pytest.approx(f0 + 0.35 * float(w @ w), rel=1e-14)
    np.testing.assert_allclose(g1, g0 + 0.7 * w, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ridged.hess_vec(v), bare.hess_vec(v) + 0.7 * v, rtol=1e-13, atol=1e-13)


# ------------------------------------------------------------------------------------------- additivity, invariance
def _split(family, X, y, qid):
    """Two parts of the data, whole queries each (instances for label ranking), and their row masks."""
    if qid is None:
        part = np.arange(X.shape[0]) % 3 == 0
    else:
        ids = np.unique(qid)
        part = np.isin(qid, ids[::2])
    return [(X[m], y[m], None if qid is None else qid[m]) for m in (part, ~part)]


@pytest.mark.parametrize("family", FAMILIES, ids=repr)
@pytest.mark.parametrize("sparse", [False, True])
def test_additive_over_whole_queries(family, sparse):
    """loss on queries A + loss on queries B = loss on all: value, gradient, Hessian products (what cyrank.dask
    sums over partitions), n_rows and the column squares."""
    X, y, qid = family.data(13, sparse=sparse)
    whole = family.build(X, y, qid)
    parts = [family.build(*p) for p in _split(family, X, y, qid)]
    rng = np.random.default_rng(14)
    for _ in range(2):
        w, v = rng.normal(size=whole.n_features), rng.normal(size=whole.n_features)
        f, g = _at(whole, w)
        at_parts = [_at(p, w) for p in parts]
        assert f == pytest.approx(sum(a[0] for a in at_parts), rel=1e-12)
        np.testing.assert_allclose(g, sum(a[1] for a in at_parts), rtol=1e-10, atol=1e-12 * np.abs(g).max())
        Hv = whole.hess_vec(v)
        np.testing.assert_allclose(Hv, sum(p.hess_vec(v) for p in parts), rtol=1e-10, atol=1e-12 * np.abs(Hv).max())
    assert all(p.n_features == whole.n_features for p in parts)
    assert whole.n_rows == sum(p.n_rows for p in parts)
    # the Jacobi scales too (within-query centred squares; label ranking: uncentred), so a sum over shards
    # preconditions as the whole data do
    np.testing.assert_allclose(whole.column_squares(), sum(p.column_squares() for p in parts), rtol=1e-12)


@pytest.mark.parametrize("family", FAMILIES, ids=repr)
@pytest.mark.parametrize("sparse", [False, True])
def test_invariant_to_row_order_and_qid_labels(family, sparse):
    X, y, qid = family.data(15, sparse=sparse)
    base = family.build(X, y, qid)
    perm = np.random.default_rng(16).permutation(X.shape[0])
    if qid is None:
        moved = family.build(X[perm], y[perm], None)
    else:
        relabel = {q: f"topic-{k}" for k, q in enumerate(np.unique(qid)[::-1])}  # other ids, other order
        moved = family.build(X[perm], y[perm], np.array([relabel[q] for q in qid[perm]]))
    assert moved.n_features == base.n_features and moved.n_rows == base.n_rows
    rng = np.random.default_rng(17)
    w, v = rng.normal(size=base.n_features), rng.normal(size=base.n_features)
    f0, g0 = _at(base, w)
    f1, g1 = _at(moved, w)
    assert f1 == pytest.approx(f0, rel=1e-12)
    np.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-12 * np.abs(g0).max())
    np.testing.assert_allclose(moved.hess_vec(v), base.hess_vec(v), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(moved.column_squares(), base.column_squares(), rtol=1e-12)


# ------------------------------------------------------------------------------------------- minimise
@pytest.mark.parametrize("family", FAMILIES, ids=repr)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scaled", [False, True])
def test_minimise_reaches_the_family_solve_objective(family, sparse, dtype, scaled):
    """minimise(loss, penalty) is the family's solve: the same optimum (with a column x 1e9 and one x 1e-3 too)."""
    X, y, qid = family.data(18, sparse=sparse, dtype=dtype, scaled=scaled)
    for name, penalty in family.penalties.items():
        if scaled and name == "l1":
            continue  # the l1 weight is not scale-free: the penalties' own tests cover l1 with scaled columns
        res = minimise(family.build(X, y, qid), penalty, tol=1e-10, max_iter=1000)
        assert res.converged, res.message
        expected = family.solve_objective[name](X, y, qid)
        assert res.objective == pytest.approx(expected, rel=1e-8, abs=1e-10), name


@pytest.mark.parametrize("family", QUERY_FAMILIES, ids=repr)
def test_a_loss_without_pairs_is_zero_and_warns(family):
    X, y, qid = family.data(19)
    with pytest.warns(Warning, match="no preference pair"):
        loss = family.build(X, np.zeros_like(y), qid)
    w = _point(loss, 20)
    assert loss.fun(w) == 0.0 and not np.any(loss.grad(w)) and not np.any(loss.hess_vec(w))


def test_domination_options_of_the_loss():
    """binary (labels y > 0), group_by_query=False (one query) and offsets (separable margins) reach the loss as
    they reach ``objective``."""
    X, y, qid = ranking_data(21)
    o = np.random.default_rng(22).uniform(0, 1, size=y.size)
    w = _point(domination.loss(X, y, qid), 23)
    for kwargs in ({"binary": True}, {"group_by_query": False}, {}):
        loss = domination.loss(X, y, qid, o, **kwargs)
        assert loss.fun(w) == pytest.approx(domination.objective(X, y, qid, o, coef=w, alpha=0.0, **kwargs),
                                            rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        domination.loss(X, y, qid)  # pairs: no warning


def test_the_loss_is_checked_as_solve_checks_the_data():
    X, y, qid = ranking_data(24)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        domination.loss(X, y, qid)
    with pytest.raises(ValueError, match="NaN"):
        lambdarank.loss(X, y, qid)
    with pytest.raises(ValueError, match="sigma"):
        lambdarank.loss(np.ones((4, 2)), np.arange(4.0), sigma=0.0)
