"""Exact domination-loss optimum with cvxpy (DESIGN.md Objective 1; domination-cd.txt sections 2-5).

With f = X w and offsets o >= 0, every row i with D(q, i) = {j in q: y_j < y_i} non-empty contributes

    l_i = log(1 + sum_{j in D(q, i)} exp((f_j - o_j) - (f_i - o_i)))      

plus alpha ||w||_1 ("l1"), alpha ||w||_2^2 ("l2"), or alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2).
:func:`objective` evaluates this formula directly; :func:`solve` minimises it with cvxpy (Clarabel).
``binary=True``: labels y > 0 versus y <= 0. ``group_by_query=False``: one query of all rows.
Written independently of cyrank (plain loops over rows), for small problems.
"""
import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ._solve import solve_problem


def _dense(X):
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def dominated_sets(y, qid=None, *, binary=False, group_by_query=True):
    """List of (i, D) with D the indices of the rows dominated by row i (only non-empty D)."""
    y = np.asarray(y, dtype=np.float64)
    labels = (y > 0).astype(np.float64) if binary else y
    qid = np.zeros(y.shape[0], np.int64) if (qid is None or not group_by_query) else np.asarray(qid)
    out = []
    for i in range(y.shape[0]):
        D = np.flatnonzero((qid == qid[i]) & (labels < labels[i]))
        if D.size:
            out.append((i, D))
    return out


def _penalty_weights(penalty, alpha, l1_ratio):
    if penalty == "l1":
        return alpha, 0.0
    if penalty == "l2":
        return 0.0, alpha
    if penalty == "elasticnet":
        return alpha * l1_ratio, alpha * (1.0 - l1_ratio)
    raise ValueError(f"unknown penalty {penalty!r}")


def objective(X, y, qid, offset, w, *, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False, group_by_query=True):
    """The objective at w in plain numpy (a stable log-sum-exp per dominating row)."""
    X = _dense(X)
    w = np.asarray(w, dtype=np.float64)
    o = np.zeros(X.shape[0]) if offset is None else np.asarray(offset, dtype=np.float64)
    m = X @ w - o
    loss = 0.0
    for i, D in dominated_sets(y, qid, binary=binary, group_by_query=group_by_query):
        t = np.r_[0.0, m[D] - m[i]]
        top = t.max()
        loss += top + np.log(np.exp(t - top).sum())
    lam1, lam2 = _penalty_weights(penalty, alpha, l1_ratio)
    return loss + lam1 * np.abs(w).sum() + lam2 * (w @ w)


def solve(X, y, qid=None, offset=None, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False, group_by_query=True,
          **solver_options):
    """Exact minimiser; returns a :class:`reference.Solution` with variable ``"w"``.

    Epigraph form, one small exponential cone per row: for each layer k of a query (rows with the k-th
    lowest label) a variable t_k >= log sum_{j in layers <= k} e^{m_j} (recursively,
    t_k >= log(e^{t_{k-1}} + sum_{j in layer k} e^{m_j})), and each row i of layer k >= 1 costs
    log(e^{m_i} + e^{t_{k-1}}) - m_i. The cost increases with t, so t is tight at the optimum and the minimum
    equals that of sum_i log(1 + sum_{j in D(q, i)} e^{m_j - m_i}). (The direct form with one log_sum_exp per
    row over all of D(q, i) is larger, and Clarabel certifies it less reliably.)
    """
    X = _dense(X)
    n, d = X.shape
    y = np.asarray(y, dtype=np.float64)
    labels = (y > 0).astype(np.float64) if binary else y
    qid = np.zeros(n, np.int64) if (qid is None or not group_by_query) else np.asarray(qid)
    o = np.zeros(n) if offset is None else np.asarray(offset, dtype=np.float64)
    w = cp.Variable(d)
    m = X @ w - o
    losses, constraints = [], []
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        levels = np.unique(labels[rows])
        if levels.size < 2:
            continue
        t_below = None  # t of the layers below the current one
        for level in levels:
            G = rows[labels[rows] == level]
            if t_below is not None:
                pairs = cp.vstack([m[G], cp.hstack([t_below] * G.size)])
                losses.append(cp.sum(cp.log_sum_exp(pairs, axis=0)) - cp.sum(m[G]))
            t = cp.Variable()
            members = m[G] if t_below is None else cp.hstack([m[G], t_below])
            constraints.append(t >= cp.log_sum_exp(members))
            t_below = t
    lam1, lam2 = _penalty_weights(penalty, alpha, l1_ratio)
    expr = cp.sum(cp.hstack(losses)) if losses else cp.Constant(0.0)
    if lam1 > 0:
        expr = expr + lam1 * cp.norm1(w)
    if lam2 > 0:
        expr = expr + lam2 * cp.sum_squares(w)
    problem = cp.Problem(cp.Minimize(expr), constraints)
    return solve_problem(problem, {"w": w}, **solver_options)
