"""Exact optimum of the log-linear label-ranking loss with cvxpy (Dekel, Manning & Singer, NIPS 2003, section 3).

With label-specific weights coef (n_labels x d) and optional joint features joint[i, y] (p values) with shared
weights theta, f(x_i, y) = coef[y] . x_i + theta . joint[i, y], and each instance's preference graph (edges
init -> term) split into subgraphs E_i1 .. E_is_i by a decomposition:

    F = sum_i (w_i/s_i) sum_k log(1 + sum_{e in E_ik} exp(f(x_i, term e) - f(x_i, init e)))
        + alpha (||coef||^2 + ||theta||^2)

with the instance weights w_i = ``sample_weight`` (None: every w_i = 1; an instance of weight 0 is left out).

``penalty``: "l2" (alpha (||coef||^2 + ||theta||^2), above), "l1" (alpha (||coef||_1 + ||theta||_1)) or
"elasticnet" (alpha (l1_ratio (||coef||_1 + ||theta||_1) + (1 - l1_ratio) (||coef||^2 + ||theta||^2))), every
weight penalised alike.

Written independently of cyrank: graphs are read from any object with ``edge_ptr``, ``init``, ``term`` and
``n_labels`` (cyrank's PreferenceGraphs) or from a 0/1 indicator matrix, and decomposed here by plain loops.
"""
import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ._solve import feature_scale_vector, solve_problem, unscale
from ._penalty import penalty_weights


def _dense(X):
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def edges_of(G):
    """[(init array, term array)] per instance and the number of labels."""
    if hasattr(G, "edge_ptr"):
        ptr = np.asarray(G.edge_ptr)
        return [(np.asarray(G.init[ptr[i]:ptr[i + 1]]), np.asarray(G.term[ptr[i]:ptr[i + 1]]))
                for i in range(ptr.size - 1)], int(G.n_labels)
    Y = _dense(G)
    out = []
    for row in Y:
        rel, irr = np.flatnonzero(row > 0), np.flatnonzero(row <= 0)
        out.append((np.repeat(rel, irr.size), np.tile(irr, rel.size)))
    return out, Y.shape[1]


def subgraphs(init, term, decomposition, n_labels=None):
    """The subgraphs of one instance's edges as lists of edge positions (section 2, Fig. 2). A callable
    decomposition is called as ``decomposition(init, term, n_labels)``; ``n_labels`` is then required."""
    E = len(init)
    if E == 0:
        return []
    if callable(decomposition):
        if n_labels is None:
            raise ValueError("a callable decomposition needs n_labels (it is called as f(init, term, n_labels))")
        return [list(np.asarray(p)) for p in decomposition(np.asarray(init), np.asarray(term), int(n_labels))]
    if decomposition == "zero_one":
        return [list(range(E))]
    if decomposition == "disagreement":
        return [[e] for e in range(E)]
    if decomposition in ("domination", "dominated"):
        key = init if decomposition == "domination" else term
        return [[e for e in range(E) if key[e] == v] for v in sorted(set(int(k) for k in key))]
    raise ValueError(f"unknown decomposition {decomposition!r}")


def _instance_weights(sample_weight, n):
    """The n instance weights as floats (None: ones)."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64).ravel()
    if w.shape != (n,):
        raise ValueError("sample_weight needs one weight per instance")
    return w


def objective(X, G, coef, *, joint=None, joint_coef=None, decomposition="domination", alpha=0.0, penalty="l2",
              l1_ratio=0.5, sample_weight=None):
    """F in plain numpy (a stable log-sum-exp per subgraph)."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    X = _dense(X)
    coef = np.asarray(coef, dtype=np.float64)
    S = X @ coef.T
    weights = [coef.ravel()]
    if joint is not None:
        theta = np.asarray(joint_coef, dtype=np.float64)
        S = S + np.asarray(joint) @ theta
        weights.append(theta.ravel())
    w = np.concatenate(weights)
    total = 0.0
    graphs, L = edges_of(G)
    weight = _instance_weights(sample_weight, len(graphs))
    for i, (init, term) in enumerate(graphs):
        parts = subgraphs(init, term, decomposition, L)
        for part in parts:
            t = np.r_[0.0, [S[i, term[e]] - S[i, init[e]] for e in part]]
            top = t.max()
            total += weight[i] * (top + np.log(np.exp(t - top).sum())) / len(parts)
    return total + lam1 * float(np.abs(w).sum()) + lam2 * float(w @ w)


def solve(X, G, decomposition="domination", alpha=0.0, joint=None, feature_scale=None, penalty="l2", l1_ratio=0.5,
          sample_weight=None, **solver_options):
    """Exact minimiser; returns a :class:`reference.Solution` with variables ``"coef"`` (n_labels x d) and, with
    joint features (n x n_labels x p), ``"joint_coef"`` (p).

    Epigraph form: one variable t_k per subgraph with exp(-t_k) + sum_{e in E_ik} exp(m_e - t_k) <= 1, i.e.
    t_k >= log(1 + sum exp(m_e)), and the objective sum_i (w_i/s_i) sum_k t_k + the penalty (instances of weight
    0 are left out); the margins
    m_e = x_i . (coef[term e] - coef[init e]) are one sparse linear map of vec(coef), so the problem compiles in
    O(memberships) whatever the number of subgraphs. ``penalty``, ``l1_ratio``: the penalty (module docstring).

    ``feature_scale``: positive vector s (n_features); cvxpy then solves the same problem in v = coef * s (every
    label's weights) on the columns X / s (the penalty of v / s; joint features and their weights unscaled),
    for columns on far-off scales; "coef" is v / s.
    """
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    X = _dense(X)
    n, d = X.shape
    s = feature_scale_vector(feature_scale, d)
    if s is not None:
        X = X / s
    graphs, L = edges_of(G)
    J = None if joint is None else np.asarray(joint, dtype=np.float64)
    p = 0 if J is None else J.shape[2]
    rows, cols, vals, sub_of_member, weights = [], [], [], [], []
    n_members = 0
    instance_weight = _instance_weights(sample_weight, len(graphs))
    for i, (init, term) in enumerate(graphs):
        if instance_weight[i] == 0.0:
            continue
        parts = subgraphs(init, term, decomposition, L)
        for part in parts:
            k = len(weights)
            weights.append(instance_weight[i] / len(parts))
            for e in part:
                for j in range(d):
                    if X[i, j] != 0.0:
                        rows += [n_members, n_members]
                        cols += [int(term[e]) * d + j, int(init[e]) * d + j]
                        vals += [X[i, j], -X[i, j]]
                for j in range(p):
                    diff = J[i, term[e], j] - J[i, init[e], j]
                    if diff != 0.0:
                        rows.append(n_members)
                        cols.append(L * d + j)
                        vals.append(diff)
                sub_of_member.append(k)
                n_members += 1
    C = cp.Variable((L, d), name="coef")
    theta = cp.Variable(max(p, 1), name="joint_coef")
    variables = {"coef": C, "joint_coef": theta} if p else {"coef": C}
    params = cp.hstack([cp.reshape(C, (L * d,), order="C"), theta]) if p else cp.reshape(C, (L * d,), order="C")
    # with feature_scale, C holds v = coef * s: penalise v / s (joint weights unscaled)
    params_pen = params if s is None else cp.multiply(np.r_[np.tile(1.0 / s, L), np.ones(p)], params)
    terms = ([lam1 * cp.norm1(params_pen)] if lam1 > 0 else []) + ([lam2 * cp.sum_squares(params_pen)] if lam2 > 0
                                                                   else [])
    penalty = terms[0] + terms[1] if len(terms) == 2 else terms[0] if terms else 0.0
    if not weights:
        problem = cp.Problem(cp.Minimize(penalty if lam1 > 0 or lam2 > 0 else cp.sum(params) * 0.0))
        return unscale(solve_problem(problem, variables, **solver_options), s, "coef")
    K = len(weights)
    margins = sp.csr_matrix((vals, (rows, cols)), shape=(n_members, L * d + p)) @ params
    member_sub = sp.csr_matrix((np.ones(n_members), (np.arange(n_members), sub_of_member)), shape=(n_members, K))
    t = cp.Variable(K, name="t")
    sums = member_sub.T @ cp.exp(margins - member_sub @ t)
    problem = cp.Problem(cp.Minimize(np.asarray(weights) @ t + penalty), [cp.exp(-t) + sums <= 1])
    return unscale(solve_problem(problem, variables, **solver_options), s, "coef")
