"""MLR's restricted interior-point solver in Cython (cyrank/mlr/_ipm.pyx, driven by cyrank/mlr/_inner.py): against
cvxpy's optimum of the restricted problem (reference.mlr.solve_restricted), against the previous numpy
implementation of the same iteration (kept below as the reference), its step length against the eigenvalues of the
pencil, its certificates (dual exactly feasible, dual <= optimum <= primal) and its workspace reuse."""

import numpy as np
import pytest
import scipy.linalg as sla
from scipy.linalg import LinAlgError, lapack

import reference.mlr as rm
from cyrank.mlr._constraints import Separation
from cyrank.mlr._inner import RestrictedSolver, _ipm, keep_large, restricted_objective, solve_inner, spectrum
from cyrank.mlr._ipm import IPMWorkspace, max_step, purify


# ---------------------------------------------------------------------------------------- working sets
def working_set(d, T, loss="map", diagonal=False, seed=0, n=40):
    """(deltas, psis) of T batches from real separation calls at random metrics W (random data in d dims,
    3 classes, ties in the features); psis (T, d, d), or their (T, d) diagonals for ``diagonal``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 0] = np.round(X[:, 0])                         # ties
    y = rng.integers(0, 3, size=n)
    sep = Separation(X, ("labels", y.astype(np.int64)), loss, 3)
    deltas, psis = [], []
    for _ in range(T):
        if diagonal:
            W = np.diag(rng.uniform(0.0, 2.0, size=d))
        else:
            L = rng.normal(size=(d, rng.integers(1, d + 1))) * rng.uniform(0.05, 2.0)
            W = L @ L.T
        dl, Psi, _ = sep(W)
        deltas.append(dl)
        psis.append(Psi)
    deltas, psis = np.array(deltas), np.array(psis)
    return deltas, (np.einsum("taa->ta", psis) if diagonal else psis)


def G(y, psis):
    g = np.tensordot(y, psis, axes=1)
    return g if g.ndim == 1 else 0.5 * (g + g.T)


def assert_dual_feasible(y, psis, C):
    """y > 0, sum y < C and I - G(y) positive definite (Cholesky; z > 0 for the diagonal): exactly what the
    solver promises, so Delta'y is a lower bound."""
    assert np.all(y > 0) and np.sum(y) < C
    Z = (1.0 if psis.ndim == 2 else np.eye(psis.shape[1])) - G(y, psis)
    if psis.ndim == 2:
        assert np.all(Z > 0)
    else:
        np.linalg.cholesky(Z)


def assert_in_cone(W):
    if W.ndim == 1:
        assert np.all(W >= 0)
    else:
        assert np.array_equal(W, W.T)
        assert np.linalg.eigvalsh(W)[0] >= -1e-10 * max(1.0, np.abs(W).max())


# ---------------------------------------------------------------------------------------- previous implementation
def _sym(A):
    return 0.5 * (A + A.T)


def _max_step_pencil(X, dX, diagonal):
    """The previous step length: the generalised eigenproblem dX v = lam X v (dsygvd)."""
    if diagonal:
        neg = dX < 0
        return float(np.min(-X[neg] / dX[neg])) if np.any(neg) else np.inf
    lam, _, info = lapack.dsygvd(dX, X, itype=1, jobz="N")
    if info != 0:
        raise LinAlgError("generalised eigenproblem failed")
    return -1.0 / lam[0] if lam[0] < 0 else np.inf


def _chol(A):
    L, info = lapack.dpotrf(A, lower=1, clean=1)
    return L if info == 0 else None


def _lp_step(x, dx):
    neg = dx < 0
    return float(np.min(-x[neg] / dx[neg])) if np.any(neg) else np.inf


def ipm_numpy(deltas, psis, C, diagonal, tol, max_iter, start=None, theta=0.01):
    """The interior-point method as it was written in numpy before the Cython port (same start, directions,
    steps, dual line search and stopping rule); returns ``(W, x, y, gap, iterations)``."""
    T, d = len(deltas), psis.shape[1]
    flat = psis.reshape(T, -1)
    eye = np.ones(d) if diagonal else np.eye(d)
    nu = d + T + 1
    reg = "diagonal" if diagonal else "trace"

    def G_(y):
        g = (y @ flat).reshape(psis.shape[1:])
        return g if diagonal else _sym(g)

    def top(g):
        return float(np.max(g)) if diagonal else float(np.linalg.eigvalsh(g)[-1])

    y = np.full(T, C / (2.0 * T))
    t = top(G_(y))
    if t > 0.5:
        y *= 0.5 / t
    scale = max(1.0, C * float(np.max(deltas)) / nu)
    W, x = eye * scale, np.full(T + 1, scale)
    if start is not None:
        ys = start[2]
        t = top(G_(ys))
        if t > 1.0:
            ys = ys / t
        W = (1 - theta) * start[0] + theta * W
        x = (1 - theta) * start[1] + theta * x
        y = (1 - theta) * ys + theta * y
    best, it = None, 0
    while True:
        Z = eye - G_(y)
        zl = np.concatenate(([C - np.sum(y)], y))
        primal, _ = restricted_objective(W, deltas, psis, C, reg)
        gap = primal - float(deltas @ y)
        if best is None or gap < best[3]:
            best = (W, x, y, gap)
        if gap <= tol or it >= max_iter:
            break
        it += 1
        mu = (float(np.vdot(W, Z)) + float(x @ zl)) / nu
        rp = deltas - flat @ np.ravel(W) - x[0] + x[1:]
        D = x / zl
        if diagonal:
            Zi = 1.0 / Z
            M = psis @ (psis * (W * Zi)).T
        else:
            Lz = _chol(Z)
            if Lz is None:
                break
            Zi = lapack.dpotrs(Lz, np.eye(d), lower=1)[0]
            Ph = psis.transpose(1, 0, 2).reshape(d, T * d)                          # [Psi_1 | ... | Psi_T]
            WP = (W @ Ph).reshape(d, T, d).transpose(1, 0, 2).reshape(T * d, d)      # W Psi_t, stacked
            M = flat @ (WP @ Zi).reshape(T, d * d).T                                 # tr(Psi_s W Psi_t Z^-1)
        M = _sym(M) + np.diag(D[1:]) + D[0]
        Mc = _chol(M)
        if Mc is None:
            Mc = _chol(M + 1e-12 * np.trace(M) / T * np.eye(T))
            if Mc is None:
                break

        def direction(K, kl):
            dW0 = K * Zi if diagonal else _sym(K @ Zi)
            dx0 = kl / zl
            dy = lapack.dpotrs(Mc, rp - flat @ np.ravel(dW0) - (dx0[0] - dx0[1:]), lower=1)[0]
            dZ = -G_(dy)
            dzl = np.concatenate(([-np.sum(dy)], dy))
            dW = dW0 - (W * dZ * Zi if diagonal else _sym(W @ dZ @ Zi))
            return dW, dx0 - D * dzl, dy, dZ, dzl

        def steps(dW, dx, dZ, dzl):
            return (min(_max_step_pencil(W, dW, diagonal), _lp_step(x, dx)),
                    min(_max_step_pencil(Z, dZ, diagonal), _lp_step(zl, dzl)))

        WZ = W * Z if diagonal else W @ Z
        dWa, dxa, dya, dZa, dzla = direction(-WZ, -x * zl)
        try:
            ap, ad = steps(dWa, dxa, dZa, dzla)
        except LinAlgError:
            break
        ap, ad = min(1.0, ap), min(1.0, ad)
        mu_a = (float(np.vdot(W + ap * dWa, Z + ad * dZa)) + float((x + ap * dxa) @ (zl + ad * dzla))) / nu
        sigma = min(1.0, max(0.0, mu_a / mu)) ** 3
        K = sigma * mu * eye - WZ - (dWa * dZa if diagonal else dWa @ dZa)
        dW, dx, dy, dZ, dzl = direction(K, sigma * mu - x * zl - dxa * dzla)
        try:
            ap, ad = steps(dW, dx, dZ, dzl)
        except LinAlgError:
            break
        ap, ad = min(1.0, 0.98 * ap), min(1.0, 0.98 * ad)
        W = W + ap * dW
        if not diagonal:
            W = _sym(W)
        x = x + ap * dx
        for _ in range(40):
            y_new = y + ad * dy
            ok = bool(np.all(y_new > 0)) and float(np.sum(y_new)) < C
            if ok:
                Zn = eye - G_(y_new)
                ok = bool(np.all(Zn > 0)) if diagonal else _chol(Zn) is not None
            if ok:
                break
            ad *= 0.5
        else:
            break
        y = y_new
    W, x, y, gap = best
    return W, x, y, gap, it


# ---------------------------------------------------------------------------------------- step length
@pytest.mark.parametrize("d", [1, 2, 5, 13, 30])
def test_max_step_is_the_pencil_eigenvalue(d):
    """max_step(X, dX) = -1 / lambda_min of the pencil (dX, X) (scipy's generalised eigh), inf when dX is PSD;
    X + a dX is singular there and positive definite just before."""
    rng = np.random.default_rng(d)
    for trial in range(30):
        A = rng.normal(size=(d, d))
        cond = 10.0 ** rng.uniform(0, 8)
        Q, _ = np.linalg.qr(A)
        X = (Q * np.geomspace(1.0, 1.0 / cond, d)) @ Q.T * 10.0 ** rng.uniform(-3, 3)
        X = _sym(X)
        B = rng.normal(size=(d, d)) * 10.0 ** rng.uniform(-3, 3)
        dX = _sym(B)
        if trial % 5 == 0:
            dX = B @ B.T                                # PSD direction: no limit
        a = max_step(X, dX)
        lam = sla.eigh(dX, X, eigvals_only=True)[0]
        if lam >= 0:                                    # always when dX is PSD
            assert a == np.inf
            continue
        assert trial % 5 and a == pytest.approx(-1.0 / lam, rel=1e-8)
        assert a == pytest.approx(_max_step_pencil(X, dX, False), rel=1e-8)
        if cond < 1e4:
            np.linalg.cholesky(X + 0.999 * a * dX)
            assert np.linalg.eigvalsh(X + a * dX)[0] <= 1e-8 * np.abs(X).max()
    # dX = -X: exactly 1; dX = 0: unlimited
    X = np.eye(d) * 3.0
    assert max_step(X, -X) == pytest.approx(1.0, rel=1e-14)
    assert max_step(X, np.zeros((d, d))) == np.inf
    with pytest.raises(ValueError):
        max_step(-X, X)


# ---------------------------------------------------------------------------------------- against cvxpy
CASES = [(reg, d, T, C) for reg in ("trace", "diagonal") for (d, T) in ((3, 4), (6, 20), (13, 40))
         for C in (0.5, 1e3)]


@pytest.mark.parametrize("reg, d, T, C", CASES)
def test_ipm_reaches_restricted_optimum(reg, d, T, C):
    """Cold start: certified gap <= tol, dual <= cvxpy optimum <= primal, y exactly dual feasible, W in the
    cone; then a warm start from the solution on the first T - 3 batches reaches the same optimum."""
    diagonal = reg == "diagonal"
    deltas, psis = working_set(d, T, diagonal=diagonal, seed=d * T)
    ref = rm.solve_restricted(deltas, np.array([np.diag(p) for p in psis]) if diagonal else psis, C=C,
                              regularizer=reg)
    tol = 1e-6 * max(1.0, ref.objective)
    W, x, y, gap, it = _ipm(deltas, psis, C, diagonal, tol, 200)
    primal, xi = restricted_objective(W, deltas, psis, C, reg)
    dual = float(deltas @ y)
    assert gap <= tol and primal - dual == pytest.approx(gap, rel=1e-9, abs=1e-9 * max(1.0, primal))
    assert dual - 1e-7 * max(1.0, ref.objective) <= ref.objective <= primal + 1e-7 * max(1.0, ref.objective)
    assert primal == pytest.approx(ref.objective, abs=2 * tol)
    assert_dual_feasible(y, psis, C)
    assert_in_cone(W)
    assert x.shape == (T + 1,) and np.all(x > 0) and 0 < it < 200
    # warm start
    W0, x0, y0, _, _ = _ipm(deltas[:-3], psis[:-3], C, diagonal, tol, 200)
    s = np.maximum(psis.reshape(T, -1) @ np.ravel(W0) + x0[0] - deltas, 0.0)
    Ww, xw, yw, gapw, itw = _ipm(deltas, psis, C, diagonal, tol, 200,
                                 start=(W0, np.concatenate(([x0[0]], s)), np.concatenate((y0, np.zeros(3)))))
    assert gapw <= tol
    assert restricted_objective(Ww, deltas, psis, C, reg)[0] == pytest.approx(ref.objective, abs=2 * tol)
    assert_dual_feasible(yw, psis, C)
    assert_in_cone(Ww)


@pytest.mark.slow
@pytest.mark.parametrize("reg", ["trace", "diagonal"])
def test_ipm_reaches_restricted_optimum_large(reg):
    """d = 30 and T = 60 (the size of WDBC's working sets), C small and large."""
    diagonal = reg == "diagonal"
    deltas, psis = working_set(30, 60, loss="auc", diagonal=diagonal, seed=7, n=60)
    for C in (1.0, 1e5):
        ref = rm.solve_restricted(deltas, np.array([np.diag(p) for p in psis]) if diagonal else psis, C=C,
                                  regularizer=reg)
        tol = 1e-6 * max(1.0, ref.objective)
        res = solve_inner(deltas, psis, C, reg, tol=tol)
        assert res.converged and res.gap <= tol
        assert res.dual - 1e-6 * ref.objective <= ref.objective <= res.primal + 1e-6 * ref.objective
        assert_dual_feasible(res.y, psis, C)
        assert_in_cone(res.W)


# ---------------------------------------------------------------------------------------- against numpy
@pytest.mark.parametrize("reg", ["trace", "diagonal"])
def test_ipm_reproduces_the_numpy_iteration(reg):
    """Same start, same iteration: the Cython loop and the numpy one take the same number of iterations
    (rounding may move one stop by an iteration) and end within the tolerance of each other, cold and warm,
    including a max_iter cut."""
    diagonal = reg == "diagonal"
    for d, T, C, seed in ((4, 6, 10.0, 1), (13, 25, 1e5, 2), (30, 15, 1e5, 3), (8, 50, 0.5, 4)):
        deltas, psis = working_set(d, T, loss="auc" if seed % 2 else "map", diagonal=diagonal, seed=seed)
        tol = 1e-5 * C * max(1.0, float(np.max(deltas)))
        for start in (None, "warm"):
            st = None
            if start == "warm":
                W0, x0, y0, _, _ = ipm_numpy(deltas[:-2], psis[:-2], C, diagonal, 10 * tol, 200)
                s = np.maximum(psis.reshape(T, -1) @ np.ravel(W0) + x0[0] - deltas, 0.0)
                st = (W0, np.concatenate(([x0[0]], s)), np.concatenate((y0, [0.0, 0.0])))
            a = ipm_numpy(deltas, psis, C, diagonal, tol, 200, st)
            b = _ipm(deltas, psis, C, diagonal, tol, 200, st)
            assert abs(a[4] - b[4]) <= 1 and a[3] <= tol and b[3] <= tol
            pa = restricted_objective(a[0], deltas, psis, C, reg)[0]
            pb = restricted_objective(b[0], deltas, psis, C, reg)[0]
            assert pb == pytest.approx(pa, abs=tol)
            assert float(deltas @ b[2]) == pytest.approx(float(deltas @ a[2]), abs=tol)
        # a cut after 3 iterations: the same iterate up to rounding
        a = ipm_numpy(deltas, psis, C, diagonal, 0.0, 3)
        b = _ipm(deltas, psis, C, diagonal, 0.0, 3)
        assert a[4] == b[4] == 3
        np.testing.assert_allclose(b[2], a[2], rtol=1e-6, atol=1e-9 * C)
        assert b[3] == pytest.approx(a[3], rel=1e-6)


# ---------------------------------------------------------------------------------------- workspace, edges
def test_workspace_reuse_gives_the_same_results():
    """One workspace across growing T, a change of d and of cone gives bit-identical results to fresh ones."""
    work = IPMWorkspace()
    for d, T, diagonal in ((5, 3, False), (5, 12, False), (5, 40, False), (9, 7, False), (9, 30, True),
                           (4, 2, False)):
        deltas, psis = working_set(d, T, diagonal=diagonal, seed=T)
        tol = 1e-6 * 100.0
        a = _ipm(deltas, psis, 100.0, diagonal, tol, 200, work=work)
        b = _ipm(deltas, psis, 100.0, diagonal, tol, 200)
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
        assert work.capacity[0] >= T and work.capacity[1] == d


def test_ipm_max_iter_zero_and_asymmetric_input():
    """max_iter = 0 returns the start and its gap; an asymmetric Psi is read through its symmetric part."""
    deltas, psis = working_set(4, 5, seed=3)
    W, x, y, gap, it = _ipm(deltas, psis, 10.0, False, 1e-9, 0)
    assert it == 0 and np.isfinite(gap)
    assert_dual_feasible(y, psis, 10.0)
    rng = np.random.default_rng(0)
    skew = rng.normal(size=psis.shape)
    skew = skew - skew.transpose(0, 2, 1)
    a = _ipm(deltas, psis, 10.0, False, 1e-6, 200)
    b = _ipm(deltas, psis + 1e-3 * skew, 10.0, False, 1e-6, 200)
    assert b[4] == a[4] and b[3] == pytest.approx(a[3], rel=1e-9, abs=1e-12)
    with pytest.raises(ValueError):
        _ipm(deltas, psis[:, :, :3], 10.0, False, 1e-6, 10)


def test_restricted_solver_sequence_keeps_its_certificates():
    """RestrictedSolver across a growing working set (warm starts, retired constraints): every call's dual is a
    lower bound of cvxpy's optimum over the whole set, its primal an upper bound within tol, and the returned
    weights are dual feasible."""
    deltas, psis = working_set(6, 24, loss="auc", seed=11)
    C = 1e3
    rs = RestrictedSolver(C, "trace", tol=1e-3, patience=2)
    y = np.zeros(0)
    for T in (2, 5, 9, 14, 19, 24):
        idle = np.zeros(T, dtype=int)
        idle[: max(0, T - 6)] = 3                     # older constraints retired from the interior-point solves
        res = rs.solve(deltas[:T], psis[:T], np.concatenate((y, np.zeros(T - y.size))), idle < 2)
        y = res.y
        ref = rm.solve_restricted(deltas[:T], psis[:T], C=C).objective
        assert res.dual - 1e-7 * ref <= ref <= res.primal + 1e-7 * ref
        assert res.gap <= 1e-3 and res.converged
        assert_in_cone(res.W)
        assert np.all(y >= 0) and np.sum(y) < C
        np.linalg.cholesky(np.eye(6) - G(y, psis[:T]))


@pytest.fixture(scope="module")
def wine_working_sets():
    """The working sets MLR builds on Wine (z-scored) at C = 1e5, AUC and MAP: hard restricted problems
    (hundreds of interior-point iterations per fit), captured at every restricted solve."""
    from sklearn.datasets import load_wine

    from cyrank.mlr import MLR
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    sets = {}
    for loss in ("auc", "map"):
        seen = []
        original = RestrictedSolver.__call__

        def spy(self, ws):
            seen.append((np.array(ws.deltas), np.array(ws.psis)))
            return original(self, ws)
        RestrictedSolver.__call__ = spy
        try:
            MLR(loss=loss, C=1e5).fit(X, y)
        finally:
            RestrictedSolver.__call__ = original
        sets[loss] = seen
    return sets


@pytest.mark.parametrize("loss", ["auc", "map"])
def test_real_working_sets(wine_working_sets, loss):
    """On MLR's own working sets (cold starts at 4 points of the fit, tolerance 1e-6 relative): the Cython loop
    takes the iterations of the numpy one (+-1) to the same optimum, which is cvxpy's within the certificate."""
    seen = wine_working_sets[loss]
    C = 1e5
    for k in (2, len(seen) // 3, 2 * len(seen) // 3, len(seen) - 1):
        deltas, psis = seen[k]
        a = ipm_numpy(deltas, psis, C, False, 0.0, 200)       # reference optimum: to the end
        tol = 1e-6 * restricted_objective(a[0], deltas, psis, C, "trace")[0]
        a = ipm_numpy(deltas, psis, C, False, tol, 200)
        b = _ipm(deltas, psis, C, False, tol, 200)
        assert abs(a[4] - b[4]) <= 1 and b[3] <= tol
        pb = restricted_objective(b[0], deltas, psis, C, "trace")[0]
        assert pb == pytest.approx(restricted_objective(a[0], deltas, psis, C, "trace")[0], abs=tol)
        assert_dual_feasible(b[2], psis, C)
        assert_in_cone(b[0])
        if k == len(seen) - 1:
            ref = rm.solve_restricted(deltas, psis, C=C).objective
            assert float(deltas @ b[2]) - 1e-7 * ref <= ref <= pb + 1e-7 * ref


@pytest.mark.parametrize("reg", ["trace", "diagonal"])
def test_purify_is_the_truncation_search(reg):
    """purify = trying keep_large(tau) for tau = inf, 1e-2, ..., 1e-10 in turn on the eigen-decomposition,
    keeping each truncation whose exact P is <= the best so far; the P it returns is P at the W it returns."""
    diagonal = reg == "diagonal"
    rng = np.random.default_rng(4)
    for d, T, C in ((5, 8, 10.0), (13, 20, 1e5), (30, 12, 1e3)):
        deltas, psis = working_set(d, T, loss="auc", diagonal=diagonal, seed=d)
        Ws = []
        for rel in (1e-1, 1e-3, 1e-7):                     # interior-point iterates: residue on unused directions
            W = _ipm(deltas, psis, C, diagonal, rel * C, 200)[0]
            tail = rng.uniform(0, 1e-9, size=d) * np.abs(W).max()
            Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
            Ws += [W, W + (tail if diagonal else _sym((Q * tail) @ Q.T))]
        for trial, W in enumerate(Ws + [np.zeros(d if diagonal else (d, d))]):
            Cw = C
            best, _ = restricted_objective(W, deltas, psis, Cw, reg)
            lam, V = spectrum(W, diagonal)
            expected = W
            if lam.max() > 0:
                for tau in (np.inf, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10):
                    Wc = keep_large(lam, V, tau)
                    val, _ = restricted_objective(Wc, deltas, psis, Cw, reg)
                    if val <= best * (1 - 1e-12):         # a clear improvement (ties decided by rounding)
                        best, expected = val, Wc
            got, P, xi = purify(W, deltas, psis, Cw, diagonal)
            assert got.shape == W.shape
            assert P == pytest.approx(restricted_objective(got, deltas, psis, Cw, reg)[0], rel=1e-12)
            assert xi == pytest.approx(restricted_objective(got, deltas, psis, Cw, reg)[1], rel=1e-9, abs=1e-12)
            assert P <= best * (1 + 1e-12)
            assert np.count_nonzero(np.abs(spectrum(got, diagonal)[0]) > 1e-13) == \
                np.count_nonzero(np.abs(spectrum(expected, diagonal)[0]) > 1e-13)
            assert_in_cone(got)
