"""The ``Options`` knobs that no default fit changes: each test sets one to a non-default value and checks the
code path it selects (threads on small data, the BLAS-thread rule, a memory budget, the inner tolerance, the rank
kept) against the default path or the documented effect."""
import numpy as np
import pytest

from cyrank import labelrank, mlr, ranksvm


def _ranking(seed=0, n=400, d=8, n_queries=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.digitize(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n), [-1.0, 0.0, 1.0]).astype(float)
    return X, y, rng.integers(0, n_queries, size=n)


def test_ranksvm_parallel_min_rows_threads_small_data_bit_for_bit():
    """parallel_min_rows=0 runs the pair sums on two threads even on 400 rows: the model is the serial one, bit for
    bit (README: the same model whatever the thread count)."""
    X, y, qid = _ranking()
    serial = ranksvm.solve(X, y, qid, C=0.1, tol=1e-8, n_jobs=1)
    threaded = ranksvm.solve(X, y, qid, C=0.1, tol=1e-8, n_jobs=2, options=ranksvm.Options(parallel_min_rows=0))
    assert serial.converged and threaded.converged
    np.testing.assert_array_equal(threaded.coef, serial.coef)
    assert threaded.n_iter == serial.n_iter


def test_ranksvm_small_kernel_rows_blas_threads_same_optimum():
    """small_kernel_rows=0 keeps every BLAS thread for the products with Q (the default gives 300 rows one): the
    same optimum, to the tolerance."""
    X, y, qid = _ranking(n=300)
    params = dict(C=0.1, kernel="rbf", gamma=0.1, tol=1e-9)
    one = ranksvm.solve(X, y, qid, **params)
    every = ranksvm.solve(X, y, qid, **params, options=ranksvm.Options(small_kernel_rows=0))
    assert one.converged and every.converged
    assert every.objective == pytest.approx(one.objective, rel=1e-8)


def test_labelrank_parallel_min_rows_threads_small_data_same_optimum():
    """parallel_min_rows=0 runs the loss kernels threaded on 200 instances: the same optimum as the default."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6))
    Y = (X @ rng.normal(size=(6, 5)) + rng.normal(size=(200, 5)) > 0.5).astype(int)
    Y[Y.sum(1) == 0, 0] = 1
    default = labelrank.solve(X, Y, alpha=0.1, tol=1e-10)
    threaded = labelrank.solve(X, Y, alpha=0.1, tol=1e-10, options=labelrank.Options(parallel_min_rows=0))
    assert default.converged and threaded.converged
    assert threaded.objective == pytest.approx(default.objective, rel=1e-10)
    np.testing.assert_allclose(threaded.coef, default.coef, rtol=1e-6, atol=1e-8)


def _wine_like(seed=2, n=60, d=5):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, d)) + y[:, None] * rng.normal(size=d)
    return X, y


def test_mlr_metric_matrices_is_the_memory_check():
    """metric_matrices is the number of d x d matrices the memory check counts: a budget no machine has is refused
    before the fit, naming the fix."""
    X, y = _wine_like()
    with pytest.raises(MemoryError, match="regularizer='diagonal'"):
        mlr.solve(X, y, C=10.0, options=mlr.Options(metric_matrices=10**18))


def test_mlr_rank_tol_sets_the_components_kept():
    """rank_tol keeps the eigen-components of W above that share of the largest: W is the same, and
    ``components`` (L with L'L = W at the default) keeps only the top one at rank_tol just below 1."""
    X, y = _wine_like()
    full = mlr.solve(X, y, C=10.0)
    top = mlr.solve(X, y, C=10.0, options=mlr.Options(rank_tol=1 - 1e-9))
    np.testing.assert_array_equal(top.W, full.W)
    lam = np.linalg.eigvalsh(full.W)
    assert full.components.shape[0] == int((lam > 1e-8 * lam.max()).sum()) >= 2
    assert top.components.shape[0] == 1
    np.testing.assert_allclose(full.components.T @ full.components, full.W, atol=1e-8 * np.abs(full.W).max())


@pytest.mark.parametrize("options", [dict(inner_tol=0.05), dict(patience=1)])
def test_mlr_inner_tol_and_patience_leave_the_certified_optimum(options):
    """The inner tolerance (restricted problems solved to inner_tol * C * tol) and the idle-constraint patience
    change the path, not the certificate: both fits stop with objective - lower bound <= C tol, so their objectives
    are within C tol of each other."""
    X, y = _wine_like()
    C, tol = 10.0, 0.01
    default = mlr.solve(X, y, C=C, tol=tol)
    other = mlr.solve(X, y, C=C, tol=tol, options=mlr.Options(**options))
    assert default.converged and other.converged
    assert abs(other.objective - default.objective) <= C * tol


def test_domination_parallel_min_rows_threads_small_data_bit_for_bit():
    """parallel_min_rows=0 runs Newton's products on two threads on 400 rows: the serial model, bit for bit."""
    from cyrank import domination

    X, y, qid = _ranking(seed=3)
    params = dict(penalty="l2", alpha=1.0, solver="newton", tol=1e-10)
    serial = domination.solve(X, y, qid, n_jobs=1, **params)
    threaded = domination.solve(X, y, qid, n_jobs=2, options=domination.Options(parallel_min_rows=0), **params)
    assert serial.converged and threaded.converged
    np.testing.assert_array_equal(threaded.coef, serial.coef)


def test_domination_densify_max_bytes_caps_the_dense_copy():
    """densify_share=0 densifies any sparse X for Newton's products unless the copy exceeds densify_max_bytes:
    with a cap of 0 bytes the sparse products run instead, to the same optimum."""
    import scipy.sparse as sp

    from cyrank import domination

    X, y, qid = _ranking(seed=4)
    X[np.abs(X) < 1.0] = 0.0
    Xs = sp.csr_matrix(X)
    params = dict(penalty="l2", alpha=1.0, solver="newton", tol=1e-10)
    dense = domination.solve(Xs, y, qid, options=domination.Options(densify_share=0.0), **params)
    sparse = domination.solve(Xs, y, qid, options=domination.Options(densify_share=0.0, densify_max_bytes=0),
                              **params)
    assert dense.converged and sparse.converged
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-12)
    np.testing.assert_allclose(sparse.coef, dense.coef, rtol=1e-7, atol=1e-9)
