"""X w and X' v (cyrank/_products.pyx through cyrank._linear.LinearX): against numpy in float64, for dense and CSR
X (int32 and int64 indices), float32 X read in place and summed in float64, the same bits for every thread count,
and RankNet on float32 X without a float64 copy of X per evaluation."""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from cyrank import lambdarank
from cyrank._linear import LinearX, product_parts
from cyrank._products import matvec, rmatvec
from cyrank.datasets import make_ranking
from cyrank.optim.datafit import minimise
from cyrank.optim.penalties import Penalty


def _layouts(X64, dtype):
    """X64 (float64 dense, exactly representable in dtype) as dense and as CSR with int32 and int64 indices."""
    dense = np.ascontiguousarray(X64.astype(dtype))
    csr32 = sp.csr_matrix(dense)
    csr32.indices, csr32.indptr = csr32.indices.astype(np.int32), csr32.indptr.astype(np.int32)
    csr64 = sp.csr_matrix(dense)
    csr64.indices, csr64.indptr = csr64.indices.astype(np.int64), csr64.indptr.astype(np.int64)
    return {"dense": dense, "csr32": csr32, "csr64": csr64}


def _data(rng, n, d, dtype):
    """n x d with a zero share, empty rows, one column x 1e9 and one x 1e-3 (when d allows), exact in dtype."""
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    if n > 3:
        X[[1, n // 2, n - 1]] = 0.0  # empty rows, the last one too
    if d >= 3:
        X[:, 0] *= 1e9
        X[:, 2] *= 1e-3
    return X.astype(dtype).astype(np.float64)


def _assert_close(got, X, x, rel):
    """|got - X x| <= rel (|X| |x|) entrywise: the rounding bound of a float64 dot product, scale-free."""
    ref = X @ x
    bound = rel * (np.abs(X) @ np.abs(x))
    assert np.all(np.abs(got - ref) <= bound), float(np.max(np.abs(got - ref) - bound))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["dense", "csr32", "csr64"])
@pytest.mark.parametrize("shape", [(300, 7), (5000, 40), (40, 1), (0, 5), (6, 0)])
def test_products_match_numpy_in_float64(dtype, layout, shape, rng):
    """float64 X: numpy's products to rounding; float32 X: the products of its float64 cast (the same values) to
    rounding, 1e-12 relative, so the sums are float64 ones (float32 sums would be off by 1e-7)."""
    n, d = shape
    X64 = _data(rng, n, d, dtype)
    X = _layouts(X64, dtype)[layout]
    w, v = rng.normal(size=d), rng.normal(size=n)
    lin = LinearX(X)
    assert lin.dtype == dtype and lin.shape == (n, d)
    assert lin.parts[0].dtype == dtype  # read in place: X's own precision
    _assert_close(lin.dot(w), X64, w, 1e-12)
    _assert_close(lin.rdot(v), X64.T, v, 1e-12)
    # the module's functions on the parts, into given buffers
    out = np.full(n, np.nan)
    assert matvec(lin.parts, w, out) is out
    np.testing.assert_array_equal(out, lin.dot(w))
    out = np.full(d, np.nan)
    assert rmatvec(lin.parts, v, out) is out
    np.testing.assert_array_equal(out, lin.rdot(v))


def test_float32_sums_are_float64(rng):
    """A float32 X whose float32 dot products would lose the small terms: 1 + 1e-9 * k sums exactly in float64."""
    n = 1000
    X = np.ones((n, 2), dtype=np.float32)
    X[:, 1] = 1e-9
    v = np.ones(n)
    for M in (X, sp.csr_matrix(X)):
        got = LinearX(M).rdot(v)
        np.testing.assert_allclose(got, [n, n * float(np.float32(1e-9))], rtol=1e-13)
        np.testing.assert_allclose(LinearX(M).dot(np.array([1.0, 1.0])), 1.0 + float(np.float32(1e-9)), rtol=1e-15)


@pytest.mark.parametrize("layout", ["dense", "csr32"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_bits_for_every_thread_count(layout, dtype, rng):
    """One thread (parallel_min_rows above n) and all of OpenMP's threads (0) give the same bits: the chunks are
    fixed by X alone and their sums added in chunk order."""
    X64 = _data(rng, 20000, 30, dtype)
    X = _layouts(X64, dtype)[layout]
    w, v = rng.normal(size=30), rng.normal(size=20000)
    one, many = LinearX(X, parallel_min_rows=10**9), LinearX(X, parallel_min_rows=0)
    np.testing.assert_array_equal(one.dot(w), many.dot(w))
    np.testing.assert_array_equal(one.rdot(v), many.rdot(v))
    np.testing.assert_array_equal(many.rdot(v), many.rdot(v))  # reused accumulators


def test_bad_sizes_are_refused(rng):
    lin = LinearX(rng.normal(size=(10, 3)))
    with pytest.raises(ValueError, match="vector has shape"):
        lin.dot(np.ones(4))
    with pytest.raises(ValueError, match="out has shape"):
        lin.rdot(np.ones(10), out=np.empty(2))
    with pytest.raises(ValueError, match="X_parts must be"):
        matvec(lin.parts[:5], np.ones(3), np.empty(10))


def test_parts_keep_x_as_given(rng):
    """Dense C-ordered X is used in place; CSC becomes CSR (never dense); mixed index widths become one."""
    X = rng.normal(size=(20, 4)).astype(np.float32)
    assert np.shares_memory(product_parts(X)[0], X)
    S = sp.random(50, 6, density=0.3, format="csc", random_state=0, dtype=np.float32)
    data, indices, indptr, dense, n, d = product_parts(S)
    assert not dense and (n, d) == (50, 6) and data.dtype == np.float32 and indices.dtype == indptr.dtype
    C = sp.csr_matrix(S)
    C.indptr = C.indptr.astype(np.int64)
    assert product_parts(C)[1].dtype == np.int64


def _ranking32(n_queries=40, n_docs=20000, d=50, sparse=False):
    X, y, qid = make_ranking(n_queries, n_docs, d, 4, dtype=np.float32, sparse=sparse, density=0.7 if sparse else 1.0,
                             random_state=3)
    return X, y, qid


def _x_bytes_float64(X):
    return (X.nnz if sp.issparse(X) else X.size) * 8


def test_ranknet_evaluations_do_not_copy_float32_x():
    """fun, grad and Hessian products of the RankNet datafit on a float32 X (4 MB) allocate far less than a float64
    copy of X (8 MB): before, numpy's X @ w made one at every call."""
    X, y, qid = _ranking32()
    problem = lambdarank.loss(X, y, qid)
    assert problem.X.dtype == np.float32  # the datafit reads the caller's X in its own dtype
    w = np.full(X.shape[1], 0.01)
    problem.fun(w)  # first call: anything allocated once per datafit
    tracemalloc.start()
    try:
        for _ in range(3):
            problem.fun(w)
            problem.grad(w)
            problem.hess_vec(np.ones(X.shape[1]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.1 * _x_bytes_float64(X), peak


@pytest.mark.parametrize("sparse", [False, True])
def test_ranknet_minimise_on_float32_x_allocates_no_copy_of_x(sparse):
    """A whole TRON minimisation of the RankNet datafit on float32 X (dense and CSR) allocates far less than a
    float64 copy of X: work vectors only."""
    X, y, qid = _ranking32(sparse=sparse)
    problem = lambdarank.loss(X, y, qid)
    assert problem.X.dtype == np.float32  # the datafit reads the caller's X in its own dtype
    tracemalloc.start()
    try:
        res = minimise(problem, Penalty(0.0, 1.0), np.zeros(X.shape[1]), tol=1e-8, max_iter=100)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.converged and res.n_iter >= 2
    assert peak < 0.1 * _x_bytes_float64(X), (peak, _x_bytes_float64(X))


def test_ranknet_solve_on_float32_x_peaks_below_a_float64_copy():
    """lambdarank.solve on a dense float32 X reads X in place (issue 28): its peak is O(n) work vectors, 0.25 of a
    float64 copy of X here. A row-sorted float32 copy held through the fit (0.5, until issue 28), or a float64 copy
    per evaluation (as numpy's X @ w made) or once (as _lambdas.row_hashes made to hash the rows), exceeds 0.4."""
    X, y, qid = _ranking32()
    lambdarank.solve(X[:200], y[:200], qid[:200])  # imports and first-call allocations outside the measure
    tracemalloc.start()
    try:
        res = lambdarank.solve(X, y, qid, alpha=1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.converged
    assert peak < 0.4 * _x_bytes_float64(X), (peak, _x_bytes_float64(X))


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_and_float64_ranknet_fits_agree(sparse):
    """The same values stored as float32 and as float64: the fits reach the same objective to 1e-6 relative (to
    rounding, in fact) and about the same coefficients; badly scaled columns included."""
    X, y, qid = make_ranking(30, 3000, 8, 4, dtype=np.float32, sparse=sparse, density=0.6 if sparse else 1.0,
                             random_state=7)
    scale = np.ones(8, dtype=np.float32)
    scale[0], scale[1] = 1e9, 1e-3
    X = (X @ sp.diags(scale)).tocsr().astype(np.float32) if sparse else X * scale
    X64 = X.astype(np.float64)
    for penalty in ("l2", "l1"):
        f32 = lambdarank.solve(X, y, qid, alpha=0.5, penalty=penalty, tol=1e-9)
        f64 = lambdarank.solve(X64, y, qid, alpha=0.5, penalty=penalty, tol=1e-9)
        assert f32.converged and f64.converged
        assert abs(f32.objective - f64.objective) <= 1e-6 * abs(f64.objective)
        # objective of each on the float64 data
        o32 = lambdarank.objective(X64, y, qid, coef=f32.coef, alpha=0.5, penalty=penalty)
        assert abs(o32 - f64.objective) <= 1e-6 * abs(f64.objective)


@pytest.mark.parametrize("sparse", [False, True])
def test_row_hashes_read_x_in_its_own_precision(sparse):
    """_lambdas.row_hashes (the row order inside a (query, label) run) gives the same hash to a row whatever its
    storage: float32 or float64, dense or CSR, int32 or int64 indices, explicit zeros; different rows differ. It
    reads X as given: hashing a float32 X allocates far less than a float64 copy of it."""
    import scipy.sparse as sp

    from cyrank.lambdarank import _lambdas

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 30)).astype(np.float32)
    X[rng.random(X.shape) < 0.5] = 0
    X[7] = X[3]
    ref = _lambdas.row_hashes(X.astype(np.float64))
    assert ref[7] == ref[3] and len(set(ref.tolist())) == 399
    variants = [X, X.astype(np.float64), sp.csr_matrix(X), sp.csr_matrix(X.astype(np.float64))]
    big = sp.csr_matrix(X)
    big.indices, big.indptr = big.indices.astype(np.int64), big.indptr.astype(np.int64)
    with_zero = sp.csr_matrix(X)
    with_zero.data[0] = 0.0  # an explicit zero: hashed as if absent
    variants += [big, sp.csc_matrix(X)]
    for V in variants:
        np.testing.assert_array_equal(_lambdas.row_hashes(V), ref)
    Z = X.copy()
    Z[np.unravel_index(np.flatnonzero(X)[0], X.shape)] = 0
    np.testing.assert_array_equal(_lambdas.row_hashes(with_zero), _lambdas.row_hashes(Z))
    Xbig = np.repeat(X, 50, axis=0)
    Xin = sp.csr_matrix(Xbig) if sparse else Xbig
    tracemalloc.start()
    try:
        _lambdas.row_hashes(Xin)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * Xbig.astype(np.float64).nbytes, peak


def _eight_lane_dot(x, w):
    """x . w in _rows.pxd's order: column k into accumulator k mod 8 (the columns past the last multiple of 8 into
    accumulator 0), each accumulated in column order, combined as ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7))."""
    p = x.astype(np.float64) * w
    s = [0.0] * 8
    m = (len(p) // 8) * 8
    for k in range(m):
        s[k % 8] += p[k]
    for k in range(m, len(p)):
        s[0] += p[k]
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]))


@pytest.mark.parametrize("d", [1, 7, 8, 13, 136])
def test_dense_float32_row_products_follow_the_documented_order_bit_for_bit(d):
    """The dense row product is compiled for AVX2 and for the baseline (chosen by the CPU at load time) with the
    same operations in the same order, so both give the bits of the documented order; checked here on whichever
    this CPU runs, on values whose sums round differently in any other order."""
    rng = np.random.default_rng(d)
    X = (rng.standard_normal((40, d)) * 10.0 ** rng.integers(-8, 9, (40, d))).astype(np.float32)
    w = rng.standard_normal(d) * 10.0 ** rng.integers(-8, 9, d)
    got = LinearX(X).dot(w)
    want = np.array([_eight_lane_dot(X[i], w) for i in range(X.shape[0])])
    np.testing.assert_array_equal(got, want)
