"""Exact linear RankNet optimum with cvxpy (Burges, "From RankNet to LambdaRank to LambdaMART: An Overview",
2010, section 1): with f = X w and P = {(i, j): same query, y_i > y_j},

    F(w) = sum_{(i, j) in P} log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2

(the cross-entropy of RankNet with target probability 1). ``penalty``: "l2" (alpha ||w||^2, above), "l1"
(alpha ||w||_1) or "elasticnet" (alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2)). Written independently of cyrank: pairs are enumerated
with plain loops (reference.ranksvm.preference_pairs); one vectorised logistic atom over all pairs.

``pair_weight`` (optional, one non-negative number per pair, aligned with preference_pairs(y, qid)'s (i, j)
order): the weighted loss sum_P c_ij log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2 of one inner step of
linear LambdaRank (c_ij = |dZ_ij| of a fixed ranking).

``sample_weight`` (optional, one non-negative number per row of X): the pair (i, j), y_i > y_j, counts with the
weight of its preferred row i (inverse propensity weighting, Joachims, Swaminathan & Schnabel, WSDM 2017), times
``pair_weight`` when both are given.
"""
import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ._penalty import penalty_weights
from ._solve import feature_scale_vector, solve_problem, unscale
from .ranksvm import preference_pairs as pairs


def _pair_weight(pair_weight, sample_weight, i):
    """The weight of each pair (i, j) (None: all 1): pair_weight times the sample weight of row i."""
    c = None
    if pair_weight is not None:
        c = np.asarray(pair_weight, dtype=np.float64)
        if c.shape != (i.size,) or not np.all(np.isfinite(c) & (c >= 0)):
            raise ValueError(f"pair_weight must hold {i.size} finite non-negative numbers (one per preference pair)")
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=np.float64)
        if sw.ndim != 1 or not np.all(np.isfinite(sw) & (sw >= 0)):
            raise ValueError("sample_weight must hold one finite non-negative number per row")
        c = sw[i] if c is None else c * sw[i]
    return c


def objective(X, y, qid, w, *, sigma=1.0, alpha=1.0, pair_weight=None, penalty="l2", l1_ratio=0.5,
              sample_weight=None):
    """F(w) in plain numpy (weighted by ``pair_weight`` and ``sample_weight`` if given)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    i, j = pairs(y, qid)
    c = _pair_weight(pair_weight, sample_weight, i)
    u = sigma * (X[i] - X[j]) @ np.asarray(w, dtype=np.float64)
    losses = np.logaddexp(0.0, -u)
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    w = np.asarray(w, dtype=np.float64)
    return float(np.sum(losses if c is None else c * losses) + lam1 * np.abs(w).sum() + lam2 * np.dot(w, w))


def solve(X, y, qid=None, sigma=1.0, alpha=1.0, feature_scale=None, pair_weight=None, penalty="l2", l1_ratio=0.5,
          sample_weight=None, **solver_options):
    """Exact minimiser; returns a :class:`reference.Solution` with variable ``"w"``.

    ``feature_scale``: positive vector s (n_features); cvxpy then solves the same problem in v = s * w on the
    columns X / s (penalty alpha ||v / s||^2), for columns on far-off scales; "w" is v / s.
    ``pair_weight``, ``sample_weight``: the weighted loss; ``penalty``, ``l1_ratio``: the penalty (module
    docstring)."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    s = feature_scale_vector(feature_scale, X.shape[1])
    if s is not None:
        X = X / s
    i, j = pairs(y, qid)
    c = _pair_weight(pair_weight, sample_weight, i)
    if c is not None:  # pairs of weight 0 drop out
        i, j, c = i[c > 0], j[c > 0], c[c > 0]
    w = cp.Variable(X.shape[1], name="w")
    logistic = cp.logistic(-sigma * ((X[i] - X[j]) @ w)) if i.size else None
    loss = 0.0 if logistic is None else (cp.sum(logistic) if c is None else c @ logistic)
    w_pen = w if s is None else cp.multiply(1.0 / s, w)   # with feature_scale, w holds v = s * w: penalise v / s
    pen = 0.0
    if lam1 > 0:
        pen = pen + lam1 * cp.norm1(w_pen)
    if lam2 > 0 or lam1 == 0:
        pen = pen + lam2 * cp.sum_squares(w_pen)
    problem = cp.Problem(cp.Minimize(loss + pen))
    return unscale(solve_problem(problem, {"w": w}, **solver_options), s, "w")
