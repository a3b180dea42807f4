"""Exact linear RankNet optimum with cvxpy (Burges, "From RankNet to LambdaRank to LambdaMART: An Overview",
2010, section 1): with f = X w and P = {(i, j): same query, y_i > y_j},

    F(w) = sum_{(i, j) in P} log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2

(the cross-entropy of RankNet with target probability 1). Written independently of cyrank: pairs are enumerated
with plain loops (reference.ranksvm.preference_pairs); one vectorised logistic atom over all pairs.
"""
import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ._solve import solve_problem
from .ranksvm import preference_pairs as pairs


def objective(X, y, qid, w, *, sigma=1.0, alpha=1.0):
    """F(w) in plain numpy."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    i, j = pairs(y, qid)
    u = sigma * (X[i] - X[j]) @ np.asarray(w, dtype=np.float64)
    return float(np.sum(np.logaddexp(0.0, -u)) + alpha * np.dot(w, w))


def solve(X, y, qid=None, sigma=1.0, alpha=1.0, **solver_options):
    """Exact minimiser; returns a :class:`reference.Solution` with variable ``"w"``."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    i, j = pairs(y, qid)
    w = cp.Variable(X.shape[1], name="w")
    loss = cp.sum(cp.logistic(-sigma * ((X[i] - X[j]) @ w))) if i.size else 0.0
    problem = cp.Problem(cp.Minimize(loss + alpha * cp.sum_squares(w)))
    return solve_problem(problem, {"w": w}, **solver_options)
