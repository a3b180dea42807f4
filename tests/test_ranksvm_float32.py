"""RankSVM on float32 X: the working-set Hessian block (problems.LinearSquaredHinge.hessian_block) against
column-by-column Hessian products; float32 fits against float64 fits of the same values (every linear penalty, the
hinge, a kernel) and against cvxpy with badly scaled float32 columns; a float32 fit allocates far less than one
float64 copy of X (X is read as float32 by the pair kernels, never converted)."""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from cyrank.datasets import make_ranking
from cyrank.optim.prox_newton import hessian_block as hessian_block_by_products
from cyrank.ranksvm import objective, solve
from cyrank.ranksvm.problems import LinearSquaredHinge, make_layout

ref = pytest.importorskip("reference.ranksvm")


def _data(storage, dtype, seed=0, n_queries=8, n_docs=160, n_features=10, levels=3):
    """Graded data; labels on 3 levels (tied labels in every query); sparse: 70% of the entries zero, so that the
    kernels read it as CSR (at half or more they would read a dense copy, problems._linear_parts)."""
    return make_ranking(n_queries, n_docs, n_features, levels, density=0.3 if storage == "sparse" else 1.0,
                        sparse=storage == "sparse", dtype=dtype, random_state=seed)


def _rounded(X):
    """X with entries on a grid of 0.5 (many equal scores: ties in the sweeps' order)."""
    if sp.issparse(X):
        X = X.copy()
        X.data = np.round(2 * X.data) / 2
        return X
    return np.round(2 * X) / 2


# ----------------------------------------------------------------------------------------- Hessian block
@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("ties", [False, True])
def test_hessian_block_equals_hessian_products(storage, dtype, ties):
    """H[ws, ws] formed in one pass (A'A on all columns of X_ws at once) equals |ws| Hessian products, at points
    where most pairs are active (w = 0: every pair, every score tied) and where some are not; ws unsorted."""
    X, y, qid = _data(storage, dtype, seed=2)
    X = _rounded(X) if ties else X
    if storage == "sparse" and ties:  # int64 indices too
        X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    layout, _ = make_layout(y, qid)
    d = X.shape[1]
    ws = np.array([7, 0, 3, 9, 4, 1])
    rng = np.random.default_rng(0)
    for C, ridge in ((0.7, 0.5), (3.0, 0.0)):
        obj = LinearSquaredHinge(X, layout, C, regularize=ridge > 0)
        for w in (np.zeros(d), 0.2 * rng.normal(size=d), rng.normal(size=d)):
            assert obj.parts[3] == (storage == "dense")  # the CSR path is the one tested for sparse X
            obj.grad(w)
            assert 0 < obj.state.n_active
            H = obj.hessian_block(ws)
            H_ref = hessian_block_by_products(obj, ws, d)
            np.testing.assert_allclose(H, H_ref, rtol=1e-12, atol=1e-12 * np.abs(H_ref).max())
            assert np.array_equal(obj.hessian_block(np.arange(d)), obj.hessian_block(np.arange(d)))  # deterministic


def test_hessian_block_of_a_long_query_in_column_blocks():
    """One query of 3,000 documents and 100 columns passes the per-thread buffer (BLOCK_DOUBLES), so the block is
    formed from blocks of columns: it still equals the products."""
    X, y, qid = make_ranking(1, 3000, 100, 50, dtype=np.float32, random_state=3)
    layout, _ = make_layout(y, qid)
    obj = LinearSquaredHinge(X, layout, 1e-3)
    obj.grad(0.01 * np.random.default_rng(1).normal(size=100))
    ws = np.random.default_rng(2).permutation(100)
    H_ref = hessian_block_by_products(obj, ws, 100)
    np.testing.assert_allclose(obj.hessian_block(ws), H_ref, rtol=1e-11, atol=1e-12 * np.abs(H_ref).max())


def test_l1_fit_uses_the_block_not_products(monkeypatch):
    """Proximal Newton's working-set model comes from the block: an l1 fit calls no Hessian product per coordinate
    (a handful for the floor and the certificate, against |ws| per iteration before)."""
    X, y, qid = _data("dense", np.float32, seed=4, n_features=30)
    calls = {"products": 0}
    product = LinearSquaredHinge.hessian_product

    def counted(self, state, s, Ms):
        calls["products"] += 1
        return product(self, state, s, Ms)

    monkeypatch.setattr(LinearSquaredHinge, "hessian_product", counted)
    res = solve(X, y, qid, C=0.05, penalty="l1", tol=1e-8)
    assert res.converged and res.n_iter >= 2
    assert calls["products"] < 30


# --------------------------------------------------------------------------------- float32 against float64
LINEAR = [("squared_hinge", "l2", 1.0), ("squared_hinge", "l1", 0.05), ("squared_hinge", "elasticnet", 0.05),
          ("hinge", "l2", 0.1)]


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("loss,penalty,C", LINEAR)
def test_float32_fit_equals_float64_fit_of_the_same_values(storage, loss, penalty, C):
    """float32 X and the same values in float64 give the same objective (to 1e-9 relative: the kernels read X in
    its own precision and sum in float64, so only the order of float32-to-float64 widening differs, i.e. nothing)."""
    X32, y, qid = _data(storage, np.float32, seed=5)
    X64 = X32.astype(np.float64)
    params = dict(C=C, loss=loss, penalty=penalty, tol=1e-8, max_iter=3000)
    a, b = solve(X32, y, qid, **params), solve(X64, y, qid, **params)
    assert a.converged and b.converged
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert objective(X32, y, qid, coef=a.coef, C=C, loss=loss, penalty=penalty) == pytest.approx(a.objective,
                                                                                                  rel=1e-10)


def test_float32_kernel_fit_equals_float64_fit():
    X32, y, qid = _data("dense", np.float32, seed=6, n_docs=120)
    a = solve(X32, y, qid, kernel="rbf", gamma=0.1, tol=1e-8)
    b = solve(X32.astype(np.float64), y, qid, kernel="rbf", gamma=0.1, tol=1e-8)
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    np.testing.assert_allclose(a.beta, b.beta, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("penalty,l1_ratio", [("l2", 0.5), ("l1", 0.5), ("elasticnet", 0.6)])
@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_float32_badly_scaled_columns_reach_cvxpy(penalty, l1_ratio, storage):
    """float32 X with one column x 1e9 and one x 1e-3 (float32 keeps 7 digits of each, the float64 sums keep the
    products): cvxpy's optimum (solved in the rescaled coordinates) to 1e-6 relative."""
    X, y, qid = _data(storage, np.float64, seed=7, n_docs=120)
    scale = np.ones(X.shape[1])
    scale[0], scale[2] = 1e9, 1e-3
    Xs = (sp.csr_matrix(X.multiply(scale)) if storage == "sparse" else X * scale).astype(np.float32)
    i, j = ref.preference_pairs(y, qid)
    Xd = X.toarray() if sp.issparse(X) else X
    C = 5.0 / float(np.max(np.abs(2.0 * (Xd[i] - Xd[j]).sum(axis=0))))
    params = dict(C=C, penalty=penalty, l1_ratio=l1_ratio)
    res = solve(Xs, y, qid, tol=1e-10, max_iter=5000, **params)
    sol = ref.solve(Xs, y, qid, feature_scale=scale, **params)
    F_ref = ref.objective(Xs, y, qid, sol["w"], **params)
    F = ref.objective(Xs, y, qid, res.coef, **params)
    assert res.converged and (F - F_ref) / max(1.0, abs(F_ref)) <= 1e-6
    assert res.objective == pytest.approx(F, rel=1e-8)


# ------------------------------------------------------------------------------------------------- memory
@pytest.mark.parametrize("penalty", ["l2", "l1"])
@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_float32_fit_allocates_far_less_than_a_float64_copy(penalty, storage):
    """Peak allocations of a whole float32 fit (tracemalloc) stay well below one float64 copy of X (which a
    conversion alone would reach): the layout and the per-fit buffers are O(rows), the Hessian block's buffers
    O(|ws| (longest query + |ws|)). Measured: 0.13 (l2) and 0.29 (l1) dense, 0.25 and 0.37 sparse."""
    sparse = storage == "sparse"
    X, y, qid = make_ranking(160 if sparse else 40, 16000 if sparse else 4000, 120, 5, density=0.3 if sparse else 1.0,
                             sparse=sparse, dtype=np.float32, random_state=8)
    copy64 = (X.nnz * 12 + X.indptr.nbytes) if sparse else X.size * 8
    solve(X[:400], y[:400], qid[:400], C=1e-3, penalty=penalty)  # first-call imports and caches out of the count
    tracemalloc.start()
    try:
        res = solve(X, y, qid, C=1e-3, penalty=penalty, tol=1e-4)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.converged
    assert peak < 0.5 * copy64, peak / copy64
