"""RankSVM with sample_weight: the pair (i, j), y_i > y_j in one query, counts with w_i, the preferred row's weight
(Joachims, Swaminathan & Schnabel, WSDM 2017), in R(w) + C sum_P w_i loss(1 - w'(x_i - x_j)) and in the kernel
objective.

Checked against: explicit pair enumeration (the weighted order-statistic sums, loss, gradient, Hessian products and
Hessian block), the weighted cvxpy reference (reference.ranksvm, 1e-6 relative, every loss and penalty, dense and
sparse, float32 and float64, the rbf kernel, columns scaled 1e-3..1e6), and the meaning of a weight: None equals
ones, weights follow the rows, a per-query weight is that query repeated, an integer weight on a top-label row is
that row repeated and weight 0 deletes it, and (the one test that says why) a weight is NOT the replication of a row
that is also the less preferred row of some pair.
"""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from cyrank import ranksvm
from cyrank.datasets import make_ranking
from cyrank.io import load_model, save_model
from cyrank.ranksvm import Options, RankSVM, objective, path, solve
from cyrank.ranksvm import _ostree
from cyrank.ranksvm.problems import LinearSquaredHinge, make_layout
from reference import ranksvm as ref

TIGHT = 1e-10         # squared hinge: relative gradient norm
HINGE_TOL = 1e-8      # hinge: mean hinge loss per unit of pair weight


def make_problem(seed=0, n=40, d=5, n_queries=4, levels=3):
    """Graded labels in shuffled queries with a one-document query and a single-level query, and weights in
    [0, 3) with a few exact zeros."""
    X, y, qid = make_ranking(n_queries, n, d, levels, binning="global", shuffle=True, random_state=seed)
    qid = qid * 5 + 2
    qid[0] = 999
    qid[1:4] = 777
    y[1:4] = 1.0
    rng = np.random.default_rng(seed + 100)
    sw = rng.uniform(0.0, 3.0, n)
    sw[rng.choice(n, 4, replace=False)] = 0.0
    return X, y, qid, sw


def as_variant(X, sparse, dtype):
    X = X.astype(dtype)
    if sparse:
        return sp.csr_matrix(X * (np.abs(X) > 0.8))   # about 42% non-zeros: the kernels read it as CSR
    return X


def pair_terms(X, y, qid, sw, w):
    """(pair weights, pair differences D = x_i - x_j, margins 1 - D w) by enumerating the pairs."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    I, J = ref.preference_pairs(y, qid)
    D = X[I] - X[J]
    return sw[I], D, 1.0 - D @ w


# ----------------------------------------------------------------------------------- order-statistic sums
@pytest.mark.parametrize("seed", range(4))
def test_weighted_sums_equal_pair_enumeration(seed):
    """l^- = w_i #{j below, active}, gamma^- = w_i sum z_j; l^+ = sum w_j, gamma^+ = sum w_j z_j over the active
    partners above; scores on a grid of 1/4 (pairs exactly on the margin, tied scores), ties in labels."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, size=8)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    n = int(offsets[-1])
    f = rng.integers(-8, 9, n) / 4.0
    y = rng.integers(0, [2, 3, 7, 20][seed], n).astype(float)
    vals = rng.integers(-8, 9, n) / 8.0
    wt = rng.uniform(0.0, 2.0, n)
    wt[::5] = 0.0
    rank = np.empty(n, np.int64)
    levels = []
    for q in range(sizes.size):
        seg = slice(offsets[q], offsets[q + 1])
        u, inv = np.unique(y[seg], return_inverse=True)
        rank[seg], _ = inv, levels.append(u.size)
    want = [np.zeros(n) for _ in range(4)]
    for q in range(sizes.size):
        for i in range(offsets[q], offsets[q + 1]):
            for j in range(offsets[q], offsets[q + 1]):
                if y[i] > y[j] and f[i] - f[j] < 1:        # i above j
                    want[0][i] += wt[i]
                    want[1][i] += wt[i] * vals[j]
                if y[j] > y[i] and f[j] - f[i] < 1:        # i below j
                    want[2][i] += wt[j]
                    want[3][i] += wt[j] * vals[j]
    got = _ostree.pair_sums(f, rank, offsets, np.array(levels, np.int64), vals, weights=wt)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    unweighted = _ostree.pair_sums(f, rank, offsets, np.array(levels, np.int64), vals)
    ones = _ostree.pair_sums(f, rank, offsets, np.array(levels, np.int64), vals, weights=np.ones(n))
    for a, b in zip(unweighted, ones):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_fun_grad_hess_equal_pair_enumeration(sparse, dtype):
    X, y, qid, sw = make_problem(seed=1, n=60, d=6, levels=4)
    X = as_variant(X, sparse, dtype)
    layout, n_pairs = make_layout(y, qid, sample_weight=sw)
    pw, D, _ = pair_terms(X, y, qid, sw, np.zeros(6))
    assert n_pairs == pw.size and layout.pair_weight_sum == pytest.approx(pw.sum(), rel=1e-14)
    prob = LinearSquaredHinge(X, layout, C=0.8)
    rng = np.random.default_rng(2)
    for scale in (0.0, 0.3, 1.0):
        w = rng.normal(size=6) * scale
        pw, D, t = pair_terms(X, y, qid, sw, w)
        act = t > 0
        assert prob.fun(w) == pytest.approx(0.5 * w @ w + 0.8 * pw[act] @ t[act] ** 2, rel=1e-12)
        np.testing.assert_allclose(prob.grad(w), w - 1.6 * D[act].T @ (pw[act] * t[act]), rtol=1e-10, atol=1e-10)
        H = np.eye(6) + 1.6 * (D[act].T * pw[act]) @ D[act]
        v = rng.normal(size=6)
        np.testing.assert_allclose(prob.hess_vec(v), H @ v, rtol=1e-10, atol=1e-10)
        ws = np.array([4, 0, 2])
        np.testing.assert_allclose(prob.hessian_block(ws), H[np.ix_(ws, ws)], rtol=1e-10, atol=1e-10)
    loss, n_active = prob.loss(w, squared=False)
    assert loss == pytest.approx(pw[act] @ t[act], rel=1e-12) and n_active == np.count_nonzero(act)


# --------------------------------------------------------------------------------- against the reference
LINEAR_CASES = [("squared_hinge", "l2", 0.5), ("squared_hinge", "l1", 0.5), ("squared_hinge", "elasticnet", 0.3),
                ("hinge", "l2", 0.5)]


@pytest.mark.parametrize("loss, penalty, l1_ratio", LINEAR_CASES)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_linear_equals_reference(loss, penalty, l1_ratio, sparse, dtype):
    X, y, qid, sw = make_problem(seed=3)
    Xv = as_variant(X, sparse, dtype)
    Xd = np.asarray(Xv.toarray() if sparse else Xv, dtype=np.float64)
    C = 0.3
    params = dict(C=C, loss=loss, penalty=penalty, l1_ratio=l1_ratio)
    est = RankSVM(tol=TIGHT if loss == "squared_hinge" else HINGE_TOL, max_iter=5000, **params)
    est.fit(Xv, y, qid, sample_weight=sw)
    sol = ref.solve(Xd, y, qid, sample_weight=sw, **params)
    assert est.converged_
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    assert est.objective_ == pytest.approx(ref.objective(Xd, y, qid, est.coef_, sample_weight=sw, **params), rel=1e-12)
    assert est.objective(Xv, y, qid, sample_weight=sw) == pytest.approx(est.objective_, rel=1e-12)
    np.testing.assert_allclose(est.coef_, sol["w"], atol=1e-4 * np.abs(sol["w"]).max())
    if loss == "hinge":   # certified: objective_ - optimum <= duality_gap_ <= tol C sum_P w_i
        assert est.objective_ - sol.objective <= est.duality_gap_ + 1e-9 * sol.objective
        assert est.duality_gap_ <= HINGE_TOL * C * est.pair_weight_sum_ * (1 + 1e-9)


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_weighted_rbf_kernel_equals_reference(loss):
    X, y, qid, sw = make_problem(seed=4, n=36)
    params = dict(C=2.0, loss=loss, kernel="rbf", gamma=0.3)
    est = RankSVM(tol=TIGHT if loss == "squared_hinge" else HINGE_TOL, max_iter=5000, **params)
    est.fit(X, y, qid, sample_weight=sw)
    sol = ref.solve(X, y, qid, sample_weight=sw, **params)
    assert est.converged_
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    beta = np.zeros(X.shape[0])
    beta[est.support_] = est.beta_
    assert est.objective_ == pytest.approx(ref.objective(X, y, qid, beta=beta, sample_weight=sw, **params), rel=1e-10)


@pytest.mark.parametrize("loss, penalty", [("squared_hinge", "l2"), ("squared_hinge", "l1"),
                                           ("squared_hinge", "elasticnet")])
def test_weighted_badly_scaled_columns_equal_reference(loss, penalty):
    """Columns on scales 1e-3 .. 1e6; cvxpy solves in the rescaled coordinates (feature_scale). The hinge is left
    out: its cutting plane's Gram matrix loses the small columns at this spread, weighted or not (the solver says
    so in its message and the README advises standardising)."""
    X, y, qid, sw = make_problem(seed=5, d=4)
    scale = np.array([1e-3, 1.0, 1e3, 1e6])
    Xs = X * scale
    C = 0.2
    est = RankSVM(C=C, loss=loss, penalty=penalty, tol=TIGHT if loss == "squared_hinge" else HINGE_TOL,
                  max_iter=5000).fit(Xs, y, qid, sample_weight=sw)
    sol = ref.solve(Xs, y, qid, C=C, loss=loss, penalty=penalty, sample_weight=sw, feature_scale=scale)
    assert est.converged_
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-6)
    np.testing.assert_allclose(est.coef_ * scale, sol["w"] * scale, atol=1e-4 * np.abs(sol["w"] * scale).max())


# ------------------------------------------------------------------------------------- what a weight means
@pytest.mark.parametrize("loss, kernel", [("squared_hinge", "linear"), ("hinge", "linear"),
                                          ("squared_hinge", "rbf")])
def test_none_equals_ones_and_a_number_scales_C(loss, kernel):
    """Unit weights take the weighted path and give the unweighted model bit for bit; a number c on every row is
    C times c."""
    X, y, qid, _ = make_problem(seed=6)
    est = RankSVM(C=0.4, loss=loss, kernel=kernel, gamma=0.3, tol=1e-6)
    a = clone(est).fit(X, y, qid)
    b = clone(est).fit(X, y, qid, sample_weight=np.ones(y.size))
    assert a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
    assert b.pair_weight_sum_ == a.pair_weight_sum_ == a.n_pairs_
    c = clone(est).set_params(tol=1e-9, max_iter=5000).fit(X, y, qid, sample_weight=2.5)
    d = clone(est).set_params(C=1.0, tol=1e-9, max_iter=5000).fit(X, y, qid)
    assert c.objective_ == pytest.approx(d.objective_, rel=1e-6)
    assert c.pair_weight_sum_ == 2.5 * c.n_pairs_


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_weights_follow_a_row_permutation_and_a_qid_relabelling(loss):
    X, y, qid, sw = make_problem(seed=7)
    tol = TIGHT if loss == "squared_hinge" else HINGE_TOL
    a = RankSVM(C=0.5, loss=loss, tol=tol, max_iter=5000).fit(X, y, qid, sample_weight=sw)
    perm = np.random.default_rng(8).permutation(y.size)
    relabel = {q: f"q-{k}" for k, q in enumerate(np.unique(qid)[::-1])}
    qid2 = np.array([relabel[q] for q in qid[perm]])
    b = RankSVM(C=0.5, loss=loss, tol=tol, max_iter=5000).fit(X[perm], y[perm], qid2, sample_weight=sw[perm])
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-9)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-5, atol=1e-6 * np.abs(a.coef_).max())
    assert b.pair_weight_sum_ == pytest.approx(a.pair_weight_sum_, rel=1e-14)


@pytest.mark.parametrize("loss, kernel", [("squared_hinge", "linear"), ("hinge", "linear"),
                                          ("squared_hinge", "rbf")])
def test_per_query_weights_equal_repeated_queries(loss, kernel):
    """An integer weight constant within a query equals that query repeated (under new query ids), 0 deleting it;
    the default gamma of the rbf kernel ("scale") counts the rows as many times as their weight."""
    X, y, qid, _ = make_problem(seed=9)
    queries = np.unique(qid)
    times = dict(zip(queries, np.arange(queries.size) % 4))   # 0 (deleted) to 3 copies
    sw = np.array([times[q] for q in qid], dtype=np.float64)
    blocks = [(X[qid == q], y[qid == q], np.full((qid == q).sum(), 10_000 * c + q))
              for q in queries for c in range(times[q])]
    Xr, yr, qr = (np.concatenate(parts) for parts in zip(*blocks))
    tol = TIGHT if loss == "squared_hinge" else HINGE_TOL
    est = RankSVM(C=0.5, loss=loss, kernel=kernel, tol=tol, max_iter=5000)   # gamma="scale": weighted variance
    weighted = clone(est).fit(X, y, qid, sample_weight=sw)
    repeated = clone(est).fit(Xr, yr, qr)
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-6)
    assert weighted.pair_weight_sum_ == repeated.n_pairs_
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X), rtol=1e-4,
                               atol=1e-4 * np.abs(repeated.decision_function(X)).max())


def _binary_problem(seed):
    """Binary labels (clicked = 1): a clicked row is never the less preferred row of a pair."""
    X, y, qid, _ = make_problem(seed=seed, levels=2)
    y = (y > 0).astype(np.float64)
    return X, y, qid


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_top_label_rows_weighted_equal_replicated_and_zero_equals_deleted(loss):
    X, y, qid = _binary_problem(seed=10)
    rng = np.random.default_rng(11)
    top = np.flatnonzero(y == 1)
    sw = np.ones(y.size)
    copies = rng.integers(0, 4, top.size)                    # 0 (deleted) to 3 copies of each clicked row
    copies[0] = 2                                            # at least one replication ...
    copies[1] = 0                                            # ... and one deletion
    sw[top] = copies
    rows = np.r_[np.flatnonzero(y == 0), np.repeat(top, copies)]
    tol = TIGHT if loss == "squared_hinge" else HINGE_TOL
    weighted = RankSVM(C=0.5, loss=loss, tol=tol, max_iter=5000).fit(X, y, qid, sample_weight=sw)
    replicated = RankSVM(C=0.5, loss=loss, tol=tol, max_iter=5000).fit(X[rows], y[rows], qid[rows])
    assert weighted.objective_ == pytest.approx(replicated.objective_, rel=1e-6)
    np.testing.assert_allclose(weighted.coef_, replicated.coef_, atol=1e-4 * np.abs(replicated.coef_).max())
    assert weighted.pair_weight_sum_ == replicated.n_pairs_


def _middle_row(y, qid):
    """A row with labels both above and below it in its query."""
    for i in range(y.size):
        others = y[qid == qid[i]]
        if others.min() < y[i] < others.max():
            return i
    raise AssertionError("no middle-level row")


def test_zero_weight_removes_exactly_the_pairs_where_the_row_is_preferred():
    """On graded labels, w_i = 0 for a middle-level row i drops its pairs (i, j) and keeps its pairs (k, i)."""
    X, y, qid, _ = make_problem(seed=12, levels=3)
    middle = _middle_row(y, qid)
    sw = np.ones(y.size)
    sw[middle] = 0.0
    w = np.random.default_rng(13).normal(size=X.shape[1])
    I, J = ref.preference_pairs(y, qid)
    keep = I != middle
    assert np.any(J[keep] == middle) and not np.all(keep)     # it is both preferred and less preferred
    t = np.maximum(1.0 - (X[I[keep]] - X[J[keep]]) @ w, 0.0)
    for loss, brute in (("squared_hinge", t @ t), ("hinge", t.sum())):
        got = objective(X, y, qid, coef=w, C=0.7, loss=loss, sample_weight=sw)
        assert got == pytest.approx(0.5 * w @ w + 0.7 * brute, rel=1e-12)


def test_general_row_replication_differs_from_its_weight():
    """Why an integer weight is not the replication of any row: a copy of a middle-level row i is preferred to the
    rows below it (which the weight w_i counts) AND less preferred than the rows above it (which w_i, the weight of
    the preferred row only, does not count). Replication counts the pairs (k, i) k times, the weight once. This is
    the inverse-propensity convention (Joachims et al. 2017), not a defect to fix."""
    X, y, qid, _ = make_problem(seed=14, levels=3)
    middle = _middle_row(y, qid)
    sw = np.ones(y.size)
    sw[middle] = 3.0
    rows = np.r_[np.arange(y.size), middle, middle]
    w = 0.01 * np.random.default_rng(15).normal(size=X.shape[1])   # small: every pair active
    weighted = objective(X, y, qid, coef=w, C=1.0, sample_weight=sw)
    replicated = objective(X[rows], y[rows], qid[rows], coef=w, C=1.0)
    I, J = ref.preference_pairs(y, qid)
    above = np.maximum(1.0 - (X[I] - X[J]) @ w, 0.0) ** 2 @ (J == middle)   # the pairs (k, middle)
    assert above > 0
    assert replicated - weighted == pytest.approx(2.0 * above, rel=1e-10), (
        f"weight 3 on a middle-level row: objective {weighted:.6g}; the row repeated 3 times: {replicated:.6g}; "
        f"the difference {replicated - weighted:.6g} is twice its loss as the less preferred row ({above:.6g}), "
        "which replication triples and the preferred-row weight does not touch")


@pytest.mark.parametrize("sparse", [False, True])
def test_default_gamma_counts_rows_by_weight(sparse):
    """gamma="scale" = 1 / (n_features * variance), the variance with row i counted w_i times (the reference's,
    written with numpy's weighted covariance); unweighted it is scikit-learn's X.var()."""
    X, y, qid, sw = make_problem(seed=24)
    Xv = as_variant(X, sparse, np.float64)
    Xd = Xv.toarray() if sparse else Xv
    est = RankSVM(kernel="rbf", tol=1e-4).fit(Xv, y, qid, sample_weight=sw)
    assert est.gamma_ == pytest.approx(ref.resolve_gamma("scale", Xd, sw), rel=1e-12)
    assert est.gamma_ != pytest.approx(ref.resolve_gamma("scale", Xd), rel=1e-3)
    plain = RankSVM(kernel="rbf", tol=1e-4).fit(Xv, y, qid)
    assert plain.gamma_ == pytest.approx(1.0 / (X.shape[1] * Xd.var()), rel=1e-12)


def test_scaling_every_weight_scales_C():
    X, y, qid, sw = make_problem(seed=16)
    a = solve(X, y, qid, C=0.2, sample_weight=5.0 * sw, tol=TIGHT)
    b = solve(X, y, qid, C=1.0, sample_weight=sw, tol=TIGHT)
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-6, atol=1e-8)
    assert a.converged and a.gap <= TIGHT * max(1.0, abs(a.objective))


# ------------------------------------------------------------------------------------------ invariances
def test_weighted_dense_sparse_float32_and_threads_agree():
    X, y, qid, sw = make_problem(seed=17, n=80)
    base = solve(X, y, qid, C=0.5, sample_weight=sw, tol=TIGHT)
    for Xv in (as_variant(X, True, np.float64), X.astype(np.float32)):
        other = solve(Xv, y, qid, C=0.5, sample_weight=sw, tol=TIGHT)
        Xd = np.asarray(Xv.toarray() if sp.issparse(Xv) else Xv, dtype=np.float64)
        want = solve(Xd, y, qid, C=0.5, sample_weight=sw, tol=TIGHT)
        assert other.objective == pytest.approx(want.objective, rel=1e-10)
    one, two = (solve(X, y, qid, C=0.5, sample_weight=sw, tol=TIGHT, n_jobs=t,
                      options=Options(parallel_min_rows=1)) for t in (1, 2))
    assert np.array_equal(one.coef, two.coef) and one.objective == two.objective == base.objective


def test_weighted_path_starts_at_the_weighted_C_min():
    X, y, qid, sw = make_problem(seed=18)
    res = path(X, y, qid, n_Cs=4, eps=1e-2, sample_weight=sw, tol=1e-8)
    grad0 = ranksvm.loss(X, y, qid, sample_weight=sw).grad(np.zeros(X.shape[1]))
    assert res.C_min == pytest.approx(1.0 / np.abs(grad0).max(), rel=1e-12)
    assert not np.any(res.coefs[:, 0].toarray())
    last = solve(X, y, qid, C=res.Cs[-1], penalty="l1", sample_weight=sw, tol=1e-8)
    assert res.objectives[-1] == pytest.approx(last.objective, rel=1e-7)


def test_loss_builder_takes_sample_weight():
    """cyrank.ranksvm.loss (the datafit cyrank.dask sums over shards): C sum_P w_i loss, no ridge."""
    X, y, qid, sw = make_problem(seed=19)
    w = np.random.default_rng(20).normal(size=X.shape[1])
    datafit = ranksvm.loss(X, y, qid, C=0.7, sample_weight=sw)
    want = objective(X, y, qid, coef=w, C=0.7, sample_weight=sw) - 0.5 * w @ w
    assert datafit.fun(w) == pytest.approx(want, rel=1e-12)
    assert datafit.loss(w)[0] * 0.7 == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("bad, match", [
    (lambda n: -np.ones(n), "must be >= 0"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "sample_weight contains NaN"),
    (lambda n: np.r_[np.inf, np.ones(n - 1)], "sample_weight contains infinity"),
    (lambda n: np.ones(n - 1), "sample_weight has .* entries but X has"),
    (lambda n: np.zeros(n), "0 on every row"),
])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_bad_weights_are_refused_by_fit(bad, match, kernel):
    X, y, qid, _ = make_problem(seed=21)
    with pytest.raises(ValueError, match=match):
        RankSVM(kernel=kernel).fit(X, y, qid, sample_weight=bad(y.size))
    with pytest.raises(ValueError, match=match):
        objective(X, y, qid, coef=np.zeros(X.shape[1]), sample_weight=bad(y.size))


def test_weights_zero_on_every_preferred_row_are_refused():
    X, y, qid = _binary_problem(seed=22)
    sw = (y == 0).astype(np.float64)          # positive only on rows that are never preferred
    with pytest.raises(ValueError, match="every preference pair weighs 0"):
        RankSVM().fit(X, y, qid, sample_weight=sw)
    with pytest.raises(ValueError, match="every preference pair weighs 0"):
        path(X, y, qid, sample_weight=sw)


def test_clone_pickle_and_model_files_keep_the_weighted_fit(tmp_path):
    X, y, qid, sw = make_problem(seed=23)
    est = RankSVM(C=0.5, loss="hinge", tol=1e-6).fit(X, y, qid, sample_weight=sw)
    assert clone(est).get_params() == est.get_params()
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.decision_function(X), est.decision_function(X))
    save_model(est, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert loaded.pair_weight_sum_ == est.pair_weight_sum_ and loaded.n_pairs_ == est.n_pairs_
    assert np.array_equal(loaded.decision_function(X), est.decision_function(X))
