"""Issue 28: DominationRank keeps a float32 X float32 and never copies X on its smooth solvers' paths.

* float32 and float64 fits of the same values reach the same objective (1e-6 relative) with every solver, dense
  and CSR, l2 and l1, and the reference (cvxpy, Clarabel) optimum on a float32 problem with columns scaled by 1e9
  and 1e-3;
* the Newton products read X in place in either order of its rows (a query's contiguous block, or row by row when
  the queries are interleaved) and give the same values as on the float64 copy;
* memory (tracemalloc): a fit on float32 X allocates well under one float64 copy of X (the code before issue 28
  copied X's sorted rows, 1.25x the float32 X's bytes at 136 features: it fails the bound); coordinate descent
  keeps its one column copy, in X's dtype.
"""
import functools
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from cyrank.datasets import make_ranking
from cyrank.domination import solve
from cyrank.domination.solver import _layout, _NewtonProblem, _rows_of
from reference import domination as ref

SOLVERS_L2 = ["auto", "lbfgs", "newton", "prox_newton", "owlqn", "cd"]
SOLVERS_L1 = ["auto", "prox_newton", "owlqn", "cd"]
AGREE = 1e-6          # float32 fit against float64 fit of the same values, relative
REF_ACCURACY = 1e-7   # a reference optimum (Clarabel), relative
TOL = 1e-9


@functools.lru_cache(maxsize=None)
def data(scaled=False):
    """160 rows in 8 interleaved queries, 6 features, labels 0..3 with ties; X exactly representable in float32
    (the float64 copy holds the same values). ``scaled``: column 1 times 1e9, column 4 times 1e-3."""
    X, y, qid = make_ranking(8, 160, 6, 4, binning="global", shuffle=True, noise=1.5, random_state=28)
    if scaled:
        X[:, 1] *= 1e9
        X[:, 4] *= 1e-3
    X32 = X.astype(np.float32)
    return X32, X32.astype(np.float64), y, qid


def storage(X, fmt):
    return sp.csr_matrix(X) if fmt == "csr" else X


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("penalty, solver", [("l2", s) for s in SOLVERS_L2] + [("l1", s) for s in SOLVERS_L1])
def test_float32_fit_reaches_the_float64_objective(fmt, penalty, solver):
    X32, X64, y, qid = data()
    fits = [solve(storage(X, fmt), y, qid, penalty=penalty, alpha=0.5, solver=solver, tol=TOL, max_iter=20000)
            for X in (X32, X64)]
    assert all(f.converged for f in fits), [f.message for f in fits]
    f32, f64 = (f.objective for f in fits)
    assert abs(f32 - f64) <= AGREE * max(1.0, abs(f64)), (f32, f64)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("penalty, solver", [("l2", "auto"), ("l2", "newton"), ("l2", "cd"), ("l1", "auto"),
                                             ("l1", "owlqn"), ("l1", "cd")])
def test_float32_with_badly_scaled_columns_reaches_the_reference_optimum(fmt, penalty, solver):
    X32, X64, y, qid = data(scaled=True)
    scale = np.ones(6)
    scale[1], scale[4] = 1e9, 1e-3
    sol = ref.solve(X64, y, qid, penalty=penalty, alpha=1.0, feature_scale=scale)
    assert sol.status == "optimal"
    fstar = sol.objective
    fit = solve(storage(X32, fmt), y, qid, penalty=penalty, alpha=1.0, solver=solver, tol=1e-8, max_iter=50000)
    recomputed = ref.objective(X64, y, qid, None, fit.coef, penalty=penalty, alpha=1.0)
    assert abs(recomputed - fit.objective) <= 1e-9 * max(1.0, abs(fstar))
    assert fit.objective - fstar <= AGREE * max(1.0, abs(fstar)) + REF_ACCURACY * max(1.0, abs(fstar)), \
        (fit.objective, fstar, fit.message)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_read_x_in_place_in_either_row_order(fmt, dtype):
    """The loss, gradient and Hessian product with X grouped by query (each query read as one block of X) equal
    those with the same rows interleaved (read row by row) and those on the float64 values."""
    X, y, qid = make_ranking(30, [40] * 30, 7, 4, noise=1.0, random_state=5)
    X = X.astype(dtype)
    w = np.random.default_rng(1).standard_normal(7) * 0.3
    v = np.random.default_rng(2).standard_normal(7)
    shuffled = np.random.default_rng(3).permutation(y.size)
    values = []
    for rows, Xd in ((np.arange(y.size), X), (shuffled, X), (np.arange(y.size), X.astype(np.float64))):
        layout, _ = _layout(y[rows], qid[rows], np.zeros(y.size), binary=False, group_by_query=True)
        lo, _ = layout.query_blocks()
        assert np.all(lo >= 0) == (rows is not shuffled)  # the block path and the row path are both taken
        problem = _NewtonProblem(_rows_of(storage(Xd[rows], fmt)), layout, 0.0, 7)
        f = problem.fun(w)
        values.append((f, problem.grad(w).copy(), problem.hess_vec(v).copy()))
    for f, g, hv in values[1:]:
        assert f == pytest.approx(values[0][0], rel=1e-13)
        np.testing.assert_allclose(g, values[0][1], rtol=1e-11, atol=1e-11 * np.max(np.abs(values[0][1])))
        np.testing.assert_allclose(hv, values[0][2], rtol=1e-11, atol=1e-11 * np.max(np.abs(values[0][2])))


def peak_allocated(fn):
    """Peak bytes traced by tracemalloc while ``fn()`` runs."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@functools.lru_cache(maxsize=None)
def large():
    """8,000 rows x 120 dense float32 features in queries of 40 (X: 3.8 MB; its float64 copy 7.7 MB)."""
    X, y, qid = make_ranking(200, [40] * 200, 120, 4, dtype=np.float32, random_state=7)
    return X, y, qid


@pytest.mark.parametrize("penalty, solver", [("l2", "auto"), ("l2", "lbfgs"), ("l2", "newton"),
                                             ("l1", "prox_newton"), ("l1", "owlqn")])
def test_smooth_solvers_allocate_well_under_a_float64_copy(penalty, solver):
    """Before issue 28 these fits copied X's sorted rows (1x the float32 X) and kept 12 float64 arrays per row:
    a peak of 1.25x X's bytes (0.63 of a float64 copy), above the 0.4 bound; now the per-row state is 2 x 2
    float64 arrays and the layout's (about 0.1-0.2x X at 120 features)."""
    X, y, qid = large()
    solve(X[:400], y[:400], qid[:400], penalty=penalty, solver=solver)  # imports and first allocations
    peak = peak_allocated(lambda: solve(X, y, qid, penalty=penalty, alpha=1.0, solver=solver))
    assert peak < 0.4 * X.size * 8, peak / X.nbytes


def test_coordinate_descent_keeps_one_copy_in_x_dtype():
    """Coordinate descent reads columns in the sorted rows' order: its one copy of X, float32 for a float32 X and
    made a block of columns at a time (before: X[rows] and its Fortran copy at once, 2x X)."""
    X, y, qid = large()
    solve(X[:400], y[:400], qid[:400], solver="cd")
    peak = peak_allocated(lambda: solve(X, y, qid, penalty="l2", alpha=1.0, solver="cd", max_iter=5))
    assert peak < 1.4 * X.nbytes, peak / X.nbytes
