"""How close to the optimum an iterate is, by a measure that does not change when a feature is rescaled.

:func:`certify` returns the ``gap`` of :class:`cyrank.optim.result.OptimResult` for F = f + lam1 ||x||_1 with f
convex and twice differentiable:

- when f is mu-strongly convex (mu = 2 alpha for a ridge alpha ||w||^2): the certified bound
  F(x) - F* <= ||p||^2 / (2 mu), p the minimum-norm subgradient (Nesterov 2004, theorem 2.1.10), used when it
  already meets the target (cheap, and the usual case on well-scaled data);
- else the Newton decrement lambda^2 / 2 = p_A' H_AA^-1 p_A / 2 (Boyd & Vandenberghe 2004, section 9.5.1) on
  A = the non-zero coordinates plus those whose pseudo-gradient is non-zero (all of them without l1), computed by
  conjugate gradients preconditioned by a positive diagonal close to diag(H) (:func:`jacobi_diagonal`). It is
  F(x) - F* exactly for a quadratic without l1, to second order near the optimum otherwise, and it is invariant
  to rescaling any variable (an affine invariant). CG accumulates -q(s) = sum_k alpha_k r_k'z_k / 2, which
  increases to lambda^2 / 2; it stops when the preconditioned residual has fallen by DECREMENT_RTOL, so the
  estimate is low by r'H^-1 r / 2, about a DECREMENT_RTOL^2 fraction on a well-preconditioned system (the tests
  compare every certified stop with the exact optimum), or as soon as the running value exceeds the target.
"""
import math

import numpy as np

from . import _column_squares
from .result import gap_target

DECREMENT_RTOL = 0.1
DECREMENT_MAX_CG = 250
# the Jacobi diagonal preconditions only when the data parts of its entries span more than this factor (a column
# scale 100x off), or X as a whole is off by PRECONDITION_SCALE in squares (worth_preconditioning)
PRECONDITION_SPREAD, PRECONDITION_SCALE = 1e4, 1e8


def pseudo_gradient(g, x, lam1):
    """The minimum-norm subgradient of f + sum_r lam1_r |x_r| at x (lam1 a number or a vector), given g = grad f(x)
    (Andrew & Gao 2007, 3.1)."""
    if np.isscalar(lam1) and lam1 == 0:
        return g
    return np.where(x > 0, g + lam1, np.where(x < 0, g - lam1,
                                              np.where(g + lam1 < 0, g + lam1, np.maximum(g - lam1, 0.0))))


def newton_decrement(hess_vec, p, *, precond=None, active=None, rtol=DECREMENT_RTOL, max_cg=DECREMENT_MAX_CG,
                     above=np.inf, strong_convexity=0.0, target=0.0, residual_scale=None):
    """(value, Hessian products, certified): preconditioned CG on H_AA s = -p_A for lambda^2 / 2 = p_A' H_AA^-1 p_A / 2
    (module docstring).

    ``hess_vec(v)``: H v at the point of p. ``precond``: a positive diagonal close to diag(H) (None: identity).
    ``active``: boolean mask A (None: every coordinate). CG accumulates half = -q(s), which grows to lambda^2 / 2;
    the rest is r'H^-1 r / 2 <= ||r||^2 / (2 mu) when H >= mu I (``strong_convexity`` mu > 0; ||r|| measured after
    multiplying r by ``residual_scale``, for a caller in scaled variables). Returns, first met:
    - (half + ||r||^2 / (2 mu), k, True) once that certified bound is <= ``target``;
    - (half, k, False) once half > ``above`` (it only grows: the target is missed);
    - (half, k, False) when the preconditioned residual has fallen by ``rtol`` (the estimate);
    - (inf, k, False) on a direction of no curvature along which p descends, or after ``max_cg`` steps.
    """
    r = -np.asarray(p, dtype=np.float64)
    if active is not None:
        r = np.where(active, r, 0.0)
    inv = 1.0 / precond if precond is not None else np.ones_like(r)
    z = inv * r
    rz = float(r @ z)
    if rz == 0.0:
        return 0.0, 0, True
    stop = rtol * math.sqrt(rz)
    d = z.copy()
    half = 0.0
    for it in range(1, max_cg + 1):
        Hd = np.asarray(hess_vec(d), dtype=np.float64)
        if active is not None:
            Hd = np.where(active, Hd, 0.0)
        dHd = float(d @ Hd)
        if not dHd > 0.0:
            return math.inf, it, False
        step = rz / dHd
        half += 0.5 * step * rz
        if half > above:
            return half, it, False
        r -= step * Hd
        if strong_convexity > 0:
            rs = r if residual_scale is None else r * residual_scale
            bound = half + float(rs @ rs) / (2.0 * strong_convexity)
            if bound <= target:
                return bound, it, True
        z = inv * r
        rz_new = float(r @ z)
        if math.sqrt(max(rz_new, 0.0)) <= stop:
            return half, it, False
        d = z + (rz_new / rz) * d
        rz = rz_new
    return math.inf, max_cg, False


def certify(hess_vec, x, g, objective, tol, *, lam1=0.0, strong_convexity=0.0, precond=None, trust=True):
    """(gap, gap_kind, Hessian products) at x with loss gradient g (module docstring): the certified bound
    ||p||^2 / (2 mu) when it meets the target tol * max(1, |objective|), or the certified bound of
    :func:`newton_decrement` after a few CG steps, or its estimate ("newton decrement") -- which is only as good as
    its preconditioner: with ``precond`` None and not ``trust`` (the columns' scales not yet examined), an
    estimate is refused as (inf, "needs preconditioning") and the caller makes the preconditioner first."""
    p = pseudo_gradient(g, x, lam1)
    target = gap_target(tol, objective)
    if strong_convexity > 0:
        bound = float(p @ p) / (2.0 * strong_convexity)
        if bound <= target:
            return bound, "strong convexity", 0
    active = None if lam1 == 0 else (x != 0) | (p != 0)
    value, products, certified = newton_decrement(hess_vec, p, precond=precond, active=active, above=target,
                                                  strong_convexity=strong_convexity, target=target)
    if certified:
        return value, "strong convexity", products
    if precond is None and not trust:
        return math.inf, "needs preconditioning", products
    return value, "newton decrement", products


def group_column_squares(X, offsets=None, rows=None):
    """Per column, sum_i (x_ij - mean of x_.j over i's group)^2 over the rows rows[offsets[k]:offsets[k+1]] of
    each group k (rows None: 0..n-1 in order; offsets None: one group of all rows). A pairwise ranking loss sees
    only differences within a query, so its Hessian's diagonal scales as these sums: the data part of
    :func:`jacobi_diagonal`. One pass over X, in float64, without copying it (cyrank/optim/_column_squares.pyx)."""
    import scipy.sparse as sp

    n, d = X.shape
    rows = np.arange(n, dtype=np.int64) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    offsets = (np.array([0, rows.size], dtype=np.int64) if offsets is None
               else np.ascontiguousarray(offsets, dtype=np.int64))
    out = np.empty(d)
    if sp.issparse(X):
        X = X.tocsr()
        itype = np.promote_types(X.indices.dtype, X.indptr.dtype)
        _column_squares.sparse_squares(X.data, X.indices.astype(itype, copy=False),
                                       X.indptr.astype(itype, copy=False), rows, offsets, out)
    else:
        _column_squares.dense_squares(X, rows, offsets, out)
    return np.maximum(out, 0.0)


def worth_preconditioning(squares, n_rows=None):
    """Whether the columns' scales call for the Jacobi preconditioner: the non-zero ``squares``
    (:func:`group_column_squares`) span more than PRECONDITION_SPREAD, or (``n_rows``: the rows they sum over) the
    largest is more than PRECONDITION_SCALE times, or less than 1 / PRECONDITION_SCALE times, what a standardised
    column gives (n_rows): X as a whole on a scale of 1e4 or 1e-4 and beyond. Otherwise the identity serves as well,
    and the methods keep their unpreconditioned (benchmarked) iterates."""
    used = squares[squares > 0]
    if used.size == 0:
        return False
    top = float(used.max())
    if top > PRECONDITION_SPREAD * float(used.min()):
        return True
    return bool(n_rows) and not 1.0 / PRECONDITION_SCALE <= top / n_rows <= PRECONDITION_SCALE


def jacobi_diagonal(hess_vec, squares, ridge, *, n_rows=None, always=False, seed=0):
    """A positive diagonal close to diag(H) for H = (data part) + ridge I whose data part's diagonal scales as
    ``squares`` (:func:`group_column_squares`): c * squares + ridge, with c = u'(H - ridge I)u / u' diag(squares) u
    for u_j = +-1 / sqrt(squares_j) (one Hessian product; H at the current point). Zero entries (a feature that
    never changes the loss, with no ridge) become 1. None, without a product, unless ``always`` or
    :func:`worth_preconditioning` (with ``n_rows``)."""
    squares = np.asarray(squares, dtype=np.float64)
    used = squares > 0
    if not (always or worth_preconditioning(squares, n_rows)):
        return None
    c = 1.0
    if np.any(used):
        signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=squares.size)
        u = np.where(used, signs / np.sqrt(np.where(used, squares, 1.0)), 0.0)
        Hu = np.asarray(hess_vec(u), dtype=np.float64)
        curvature = (float(u @ Hu) - ridge * float(u @ u)) / float(np.count_nonzero(used))
        if curvature > 0 and math.isfinite(curvature):
            c = curvature
    diag = c * squares + ridge
    diag = np.where(diag > 0, diag, 1.0)
    # rounded to even powers of 2: its square root, by which tron scales the variables, is then a power of 2, so
    # scaling rounds nothing, and data that differ only in their storage (dense, sparse) get the same diagonal
    return np.exp2(2.0 * np.round(0.5 * np.log2(diag)))


def jacobi_preconditioner(problem, squares, ridge, *, n_rows=None, x=None, evaluate=True, always=False):
    """:func:`jacobi_diagonal` for a SmoothProblem whose Hessian is X'(...)X + ridge I with a pairwise loss inside
    groups, ``squares`` = :func:`group_column_squares` of X over ``n_rows`` rows, calibrated at ``x`` (default 0;
    with ``evaluate=False`` the problem's Hessian state is already there); None when not
    :func:`worth_preconditioning` (nothing evaluated then) unless ``always``."""
    if not (always or worth_preconditioning(squares, n_rows)):
        return None
    x = np.zeros(squares.shape[0]) if x is None else x
    if evaluate:
        problem.fun(x)
        problem.grad(x)  # the Hessian state at x
    return jacobi_diagonal(problem.hess_vec, squares, ridge, always=True)
