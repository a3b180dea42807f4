"""Exact domination-loss optimum with cvxpy (Stevens, MIT thesis 2010, sections 2-5).

With f = X w and offsets o >= 0, every row i with D(q, i) = {j in q: y_j < y_i} non-empty contributes

    l_i = log(1 + sum_{j in D(q, i)} exp((f_j - o_j) - (f_i - o_i)))      

weighted by the sample weight s_i of row i (``sample_weight``; 1 when None), so the loss is sum_i s_i l_i,
plus alpha ||w||_1 ("l1"), alpha ||w||_2^2 ("l2"), or alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2).
:func:`objective` evaluates this formula directly; :func:`solve` minimises it with cvxpy (Clarabel).
``binary=True``: labels y > 0 versus y <= 0. ``group_by_query=False``: one query of all rows.
Written independently of cyrank (plain loops over rows), for small problems.
"""
import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ._penalty import penalty_weights
from ._solve import feature_scale_vector, solve_problem, unscale


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


def _weights(sample_weight, n):
    return np.ones(n) if sample_weight is None else np.broadcast_to(np.asarray(sample_weight, np.float64), (n,))


def objective(X, y, qid, offset, w, *, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False, group_by_query=True,
              sample_weight=None):
    """The objective at w in plain numpy (a stable log-sum-exp per dominating row, times its weight)."""
    X = _dense(X)
    w = np.asarray(w, dtype=np.float64)
    o = np.zeros(X.shape[0]) if offset is None else np.asarray(offset, dtype=np.float64)
    s = _weights(sample_weight, X.shape[0])
    m = X @ w - o
    loss = 0.0
    for i, D in dominated_sets(y, qid, binary=binary, group_by_query=group_by_query):
        t = np.r_[0.0, m[D] - m[i]]
        top = t.max()
        loss += s[i] * (top + np.log(np.exp(t - top).sum()))
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    return loss + lam1 * np.abs(w).sum() + lam2 * (w @ w)


def solve(X, y, qid=None, offset=None, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False, group_by_query=True,
          feature_scale=None, sample_weight=None, **solver_options):
    """Exact minimiser; returns a :class:`reference.Solution` with variable ``"w"``. ``sample_weight``: the
    weights s_i >= 0 of the rows' terms (None: all 1).

    ``feature_scale``: positive vector s (n_features); cvxpy then solves the same problem in v = s * w on the
    columns X / s (penalty alpha ||v / s||_1 or alpha ||v / s||^2), for columns on far-off scales; "w" is v / s.

    Epigraph form with one variable per layer (the rows of a query with one label value): t_k >= log sum_{j in
    layers <= k of its query} e^{m_j}, imposed recursively as sum_{j in layer k} e^{m_j - t_k} + e^{t_{k-1} - t_k}
    <= 1 (the second term only above the lowest layer); each row i of a layer k above the lowest costs
    log(e^{m_i} + e^{t_{k-1}}) - m_i = logistic(t_{k-1} - m_i), times s_i >= 0. The cost never decreases as a t
    grows, so the tight t (the formula) is optimal and the minimum equals that of
    sum_i s_i log(1 + sum_{j in D(q, i)} e^{m_j - m_i}). Every term is one
    vectorised cvxpy atom (exp and logistic over all rows, sparse sums per layer), so compiling costs
    O(rows) whatever the number of queries.
    """
    X = _dense(X)
    n, d = X.shape
    s = feature_scale_vector(feature_scale, d)
    if s is not None:
        X = X / s
    y = np.asarray(y, dtype=np.float64)
    labels = (y > 0).astype(np.float64) if binary else y
    qid = np.zeros(n, np.int64) if (qid is None or not group_by_query) else np.asarray(qid)
    o = np.zeros(n) if offset is None else np.asarray(offset, dtype=np.float64)
    weight = _weights(sample_weight, n)
    # layers: runs of (query, label) in sorted order; keep the queries with at least two layers
    q_index = np.unique(qid, return_inverse=True)[1]
    order = np.lexsort((labels, q_index))
    qs, ls = q_index[order], labels[order]
    new_layer = np.r_[True, (qs[1:] != qs[:-1]) | (ls[1:] != ls[:-1])] if n else np.zeros(0, bool)
    layer_q = qs[new_layer]
    keep_layer = np.bincount(layer_q)[layer_q] >= 2
    sorted_layer = np.cumsum(new_layer) - 1
    keep_row = keep_layer[sorted_layer]
    rows = order[keep_row]
    layer = (np.cumsum(keep_layer) - 1)[sorted_layer[keep_row]]           # layer of each kept row
    layer_q = layer_q[keep_layer]
    n_layers = layer_q.size
    has_prev = np.r_[False, layer_q[1:] == layer_q[:-1]]                  # a lower layer in the same query

    w = cp.Variable(d)
    expr = cp.Constant(0.0)
    constraints = []
    if n_layers:
        t = cp.Variable(n_layers)
        m = X[rows] @ w - o[rows]
        one_hot = lambda idx, cols: sp.csr_matrix((np.ones(idx.size), (np.arange(idx.size), idx)),
                                                  shape=(idx.size, cols))
        row_layer = one_hot(layer, n_layers)                              # kept row -> its layer
        upper = np.flatnonzero(has_prev)                                  # layers k with a layer k - 1
        up = one_hot(upper, n_layers)
        below = one_hot(upper - 1, n_layers)
        terms = row_layer.T @ cp.exp(m - row_layer @ t) + up.T @ cp.exp(below @ t - up @ t)
        constraints.append(terms <= 1)
        dom = np.flatnonzero(has_prev[layer])                             # rows above the lowest layer
        expr = weight[rows[dom]] @ cp.logistic(one_hot(layer[dom] - 1, n_layers) @ t - m[dom])
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    w_pen = w if s is None else cp.multiply(1.0 / s, w)   # with feature_scale, w holds v = s * w: penalise v / s
    if lam1 > 0:
        expr = expr + lam1 * cp.norm1(w_pen)
    if lam2 > 0:
        expr = expr + lam2 * cp.sum_squares(w_pen)
    problem = cp.Problem(cp.Minimize(expr), constraints)
    return unscale(solve_problem(problem, {"w": w}, **solver_options), s, "w")
