"""Regularisation paths shared by every penalised loss (cyrank.optim.penalties): the alpha grid from alpha_max,
the smallest alpha at which w = 0 is optimal, and the one result type.

At w = 0 the loss gradient is g0 and w = 0 is optimal iff max_r |g0_r| <= lam1 (the l2 term has no gradient at 0),
lam1 = alpha ("l1") or alpha l1_ratio ("elasticnet"); so alpha_max = max_r |g0_r| / (1 or l1_ratio), and the
default grid is n_alphas values from alpha_max down to eps alpha_max, geometrically spaced (as scikit-learn's
``_alpha_grid``); each solve starts from the previous solution (warm start).
"""
import numpy as np
import scipy.sparse as sp

from .._validation import check_option, check_param
from .penalties import PENALTIES


class PathResult:
    """A regularisation path: for each alpha (decreasing) the coefficients (column j of the sparse
    ``coefs``, n_features x n_alphas), objective, optimality measure (``kkt_violations``), iterations, convergence
    and solver message."""

    def __init__(self, alphas, coefs, objectives, kkt_violations, n_iters, converged, messages, alpha_max):
        self.alphas, self.coefs, self.objectives = alphas, coefs, objectives
        self.kkt_violations, self.n_iters, self.converged, self.messages = kkt_violations, n_iters, converged, messages
        self.alpha_max = alpha_max

    def __repr__(self):
        return (f"PathResult({self.alphas.size} alphas from {self.alphas[0]:.4g} to {self.alphas[-1]:.4g}, "
                f"{int(np.sum(self.converged))} converged, non-zeros {np.diff(self.coefs.indptr).tolist()})")


def check_path_params(penalty, n_alphas, eps):
    """(n_alphas, eps) checked, and the penalty's name."""
    check_option("penalty", penalty, PENALTIES)
    n_alphas = check_param("n_alphas", n_alphas, low=1, integer=True)
    eps = check_param("eps", eps, low=0.0, high=1.0, low_open=True, high_open=True)
    return n_alphas, eps


def alpha_max(top, noise, penalty, l1_ratio):
    """The smallest alpha with w = 0 optimal from top = max_r |g0_r| (module docstring); a gradient at or below its
    rounding error ``noise`` counts as 0 (alpha_max = 0)."""
    if top <= noise:
        return 0.0
    if penalty == "l1":
        return top
    if l1_ratio <= 0:
        raise ValueError("the path needs alphas=... for l1_ratio=0 (no finite alpha makes w = 0 optimal)")
    return top / l1_ratio


def alpha_grid(alphas, n_alphas, eps, penalty, l1_ratio, top):
    """(alphas sorted decreasing, alpha_max or None): the given ``alphas``, or ``n_alphas`` values from alpha_max
    down to eps alpha_max, ``top()`` returning (max_r |g0_r|, its rounding error) computed only then."""
    a_max = None
    if alphas is None:
        if penalty == "l2":
            raise ValueError("penalty='l2' never gives w = 0: pass alphas=...")
        l1_ratio = check_param("l1_ratio", l1_ratio, low=0.0, high=1.0)
        a_max = alpha_max(*top(), penalty, l1_ratio)
        alphas = a_max * np.geomspace(1.0, eps, n_alphas) if a_max > 0 else np.zeros(1)
    alphas = np.sort(np.asarray(alphas, dtype=np.float64).ravel())[::-1]
    if alphas.size == 0 or not np.all(np.isfinite(alphas)) or alphas[-1] < 0:
        raise ValueError("alphas must be a non-empty sequence of finite numbers >= 0")
    return alphas, a_max


def run_path(alphas, a_max, fit):
    """The PathResult of ``fit(alpha, coef_init) -> SolveResult`` over ``alphas``, each warm-started from the previous
    coefficients (coef_init None first)."""
    coefs, objectives, kkt, n_iters, converged, messages = [], [], [], [], [], []
    coef = None
    for alpha in alphas:
        res = fit(alpha, coef)
        coef = res.coef
        coefs.append(sp.csc_matrix(coef.reshape(-1, 1)))
        objectives.append(res.objective)
        kkt.append(res.optimality)
        n_iters.append(res.n_iter)
        converged.append(res.converged)
        messages.append(res.message)
    return PathResult(alphas, sp.hstack(coefs, format="csc"), np.array(objectives), np.array(kkt),
                      np.array(n_iters, dtype=np.int64), np.array(converged, dtype=bool), messages, a_max)
