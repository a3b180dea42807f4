"""LabelRankBoost's functional layer: validated arrays and preference graphs in; coefficients, objective,
gradient norm and n_iter out (no scikit-learn import; the estimator in estimator.py is a thin wrapper).

Objective (Dekel, Manning & Singer, "Log-Linear Models for Label Ranking", NIPS 2003, section 3), with
label-specific linear functions f(x, y) = coef[y] . x and the subgraphs G_i1 .. G_is_i of each instance's
preference graph under the chosen decomposition (graphs.py):

    F(coef) = sum_i (1/s_i) sum_k log(1 + sum_{e in E_ik} exp(f(x_i, term e) - f(x_i, init e))) + alpha ||coef||^2

(natural log; the penalty is optional, alpha = 0 is the paper's loss; with alpha > 0 the optimum is finite on
every data set). Loss, gradient and Hessian products in the scores are the Cython kernels of _loss.pyx; the
products with X are X @ W and X' @ G (BLAS or scipy's sparse kernels), O(nnz L) each.

Solvers:
- "boost": the parallel update of Fig. 3 exactly. rho = max_(i,e) sum_j |pi_(i,e,j)| = 2 max_i ||x_i||_1 for the
  label-specific base functions; weights q, W+, W- (_loss.boost_weights); Lambda = (1/2) ln(W+ / W-) and
  coef <- coef - Lambda / rho. With alpha > 0 each coordinate's Lambda minimises the bound of Theorem 1 plus the
  penalty, (1/rho)(W+ e^-Lambda + W- e^Lambda) + alpha (coef - Lambda / rho)^2 (a strictly convex 1-d problem,
  solved by safeguarded Newton), so the objective still never rises. W+ = W- = 0 (a base function no edge
  sees): Lambda = 0 (alpha > 0: the penalty alone, coef -> 0). Exactly one of them 0 with alpha = 0: the loss
  decreases without bound along that coordinate, so it has no minimiser; Lambda is then smoothed,
  (1/2) ln((W+ + eps) / (W- + eps)) with eps = SMOOTHING (W+ + W-) (Schapire & Singer 1999), and the result's
  message says so.
- "newton": trust-region Newton-CG (cyrank.optim.tron) on F with the exact Hessian products.
- "auto": "newton".
Every solver stops when ||grad F|| <= tol ||grad F at 0||; ``grad_norm`` is the relative value.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._result import SolveResult
from .._threads import one_blas_thread
from .._validation import check_X, check_option, check_param
from ..optim.smooth import SmoothProblem
from ..optim.tron import tron
from . import _loss
from .graphs import as_graphs

SOLVERS = ("auto", "boost", "newton")
SMOOTHING = 1e-6


@dataclass
class Options:
    """Knobs of the solvers (defaults are the measured best):

    parallel_min_rows  the loss kernels run on one thread below this many instances (-1: the shared default)
    """

    parallel_min_rows: int = -1


class _Data:
    """X (CSR or C-ordered dense, float32/64 as given), the graphs and the subgraphs of one decomposition."""

    def __init__(self, X, G, decomposition, options):
        self.X = X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X)
        self.G = G
        self.sub = G.decompose(decomposition)
        self.L, self.d, self.n = G.n_labels, X.shape[1], X.shape[0]
        self.p = np.empty(self.sub.members.shape[0])
        self.parallel_min_rows = options.parallel_min_rows

    def scores(self, W):
        """S = X W (n x L, float64) for W (d x L)."""
        return np.ascontiguousarray(self.X @ W, dtype=np.float64)

    def loss_grad_scores(self, S, A, B):
        """The loss at S; fills self.p, A and B (_loss.loss_grad)."""
        return _loss.loss_grad(S, self.G.edge_ptr, self.G.init, self.G.term, self.sub.sub_ptr, self.sub.member_ptr,
                               self.sub.members, self.p, A, B, self.parallel_min_rows)

    def xt(self, G):
        """X' G (d x L) in float64."""
        return np.asarray(self.X.T @ G, dtype=np.float64)


class _State:
    def __init__(self, data):
        self.p = np.empty_like(data.p)


class _Problem(SmoothProblem):
    """F (module docstring) over the flattened W = coef' (d x L, C order), for cyrank.optim.tron."""

    def __init__(self, data, alpha):
        self.data, self.alpha = data, alpha
        n, L = data.n, data.L
        self.A, self.B = np.empty((n, L)), np.empty((n, L))
        super().__init__()

    def new_state(self):
        return _State(self.data)

    def evaluate(self, w, Mw, state):
        D = self.data
        W = w.reshape(D.d, D.L)
        loss = D.loss_grad_scores(D.scores(W), self.A, self.B)
        state.p[:] = D.p
        grad = D.xt(self.A - self.B) + 2.0 * self.alpha * W
        return loss + self.alpha * float(w @ w), grad.ravel()

    def hessian_product(self, state, v, Mv):
        D = self.data
        V = v.reshape(D.d, D.L)
        dG = np.empty((D.n, D.L))
        _loss.hess_scores(D.scores(V), D.G.edge_ptr, D.G.init, D.G.term, D.sub.sub_ptr, D.sub.member_ptr,
                          D.sub.members, state.p, dG, D.parallel_min_rows)
        return (D.xt(dG) + 2.0 * self.alpha * V).ravel()


def check_params(*, decomposition, solver, alpha, max_iter, tol):
    """Validated (alpha, max_iter, tol) and the solver to run."""
    check_option("solver", solver, SOLVERS)
    if not callable(decomposition):
        from .graphs import DECOMPOSITIONS

        check_option("decomposition", decomposition, DECOMPOSITIONS)
    alpha = check_param("alpha", alpha, low=0.0)
    max_iter = check_param("max_iter", max_iter, low=1, integer=True)
    tol = check_param("tol", tol, low=0.0, low_open=True)
    return ("newton" if solver == "auto" else solver), alpha, max_iter, tol


def _check_data(X, G):
    X = check_X(X, accept_sparse=("csr", "csc"))
    return X, as_graphs(G, X.shape[0])


def objective(X, G, coef, *, decomposition="domination", alpha=0.0):
    """F(coef) (module docstring) for coef of shape (n_labels, n_features)."""
    X, G = _check_data(X, G)
    alpha = check_param("alpha", alpha, low=0.0)
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != (G.n_labels, X.shape[1]):
        raise ValueError(f"coef has shape {coef.shape}; expected ({G.n_labels}, {X.shape[1]})")
    data = _Data(X, G, decomposition, Options())
    n, L = data.n, data.L
    return data.loss_grad_scores(data.scores(coef.T), np.empty((n, L)), np.empty((n, L))) + alpha * float(
        np.sum(coef * coef))


def solve(X, G, *, decomposition="domination", solver="auto", alpha=0.0, max_iter=1000, tol=1e-6, coef0=None,
          verbose=0, options=None):
    """Minimise F (module docstring) on X (n x d, dense or sparse) and preference graphs G (PreferenceGraphs or a
    multilabel indicator matrix). Returns a SolveResult with coef (n_labels x n_features), objective, grad_norm
    (||grad F|| / ||grad F at 0||), n_iter, converged, solver, n_labels, n_features_in."""
    solver, alpha, max_iter, tol = check_params(decomposition=decomposition, solver=solver, alpha=alpha,
                                                max_iter=max_iter, tol=tol)
    X, G = _check_data(X, G)
    options = options or Options()
    data = _Data(X, G, decomposition, options)
    d, L = data.d, data.L
    W = np.zeros((d, L))
    if coef0 is not None:
        coef0 = np.asarray(coef0, dtype=np.float64)
        if coef0.shape != (L, d) or not np.all(np.isfinite(coef0)):
            raise ValueError(f"coef0 must be a finite array of shape ({L}, {d})")
        W[:] = coef0.T
    problem = _Problem(data, alpha)
    with one_blas_thread():
        g0 = float(np.linalg.norm(problem.grad(np.zeros(d * L))))
        if solver == "newton":
            res = tron(problem, W.ravel(), tol=tol, max_iter=max_iter, grad_norm0=g0, verbose=verbose,
                       name="LabelRankBoost (newton)")
            W = res.x.reshape(d, L)
            objective, n_iter, n_inner, grad_norm, converged = res.fun, res.n_iter, res.n_cg, res.grad_norm, \
                res.converged
            message = "" if converged else res.message
        else:
            objective, n_iter, grad_norm, converged, message = _boost(data, W, alpha, tol, max_iter, g0, verbose)
            n_inner = 0
    rel = grad_norm / g0 if g0 > 0 else 0.0
    return SolveResult(coef=np.ascontiguousarray(W.T), objective=float(objective), grad_norm=float(rel),
                       n_iter=int(n_iter), n_cg_iter=int(n_inner), converged=bool(converged), solver=solver,
                       n_labels=L, n_features_in=d, optimality_name="grad_norm", message=message)


def _boost_step(Wp, Wm, W, alpha, rho):
    """Lambda (d x L) of Fig. 3 (alpha = 0) or of the penalised bound (module docstring), and whether a
    one-sided coordinate needed smoothing."""
    one_sided = (Wp > 0) != (Wm > 0)
    if alpha == 0.0:
        eps = np.where(one_sided, SMOOTHING * (Wp + Wm), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = 0.5 * np.log((Wp + eps) / (Wm + eps))
        return np.where((Wp > 0) | (Wm > 0), lam, 0.0), bool(one_sided.any())
    # minimise phi(t) = (Wp e^-t + Wm e^t) / rho + alpha (W - t / rho)^2 per coordinate: convex, phi'' > 0
    t = np.zeros_like(W)
    c = 2.0 * alpha / rho
    for _ in range(100):
        ep, em = np.exp(-t), np.exp(t)
        g = (Wm * em - Wp * ep) / rho - c * (W - t / rho)
        h = (Wm * em + Wp * ep) / rho + c / rho
        step = np.clip(g / h, -1.0, 1.0)  # a damped Newton step: at most 1 in t (e^t changes by e at most)
        t -= step
        if np.max(np.abs(step), initial=0.0) <= 1e-12 * (1.0 + np.max(np.abs(t), initial=0.0)):
            break
    return t, False


def _boost(data, W, alpha, tol, max_iter, g0, verbose):
    """Fig. 3 in place on W (module docstring): (objective, iterations, ||grad||, converged, message)."""
    X = data.X
    n, L, d = data.n, data.L, data.d
    if sp.issparse(X):
        rows_l1 = np.asarray(abs(X).sum(axis=1)).ravel()
        args = (X.data, X.indices, X.indptr, False)
    else:
        rows_l1 = np.abs(X).sum(axis=1)
        args = (X.ravel(), np.zeros(1, np.int32), np.zeros(1, np.int32), True)
    has_edges = np.diff(data.G.edge_ptr) > 0
    rho = 2.0 * float(np.max(rows_l1[has_edges], initial=0.0))
    A, B = np.empty((n, L)), np.empty((n, L))
    Wp, Wm = np.empty((d, L)), np.empty((d, L))
    smoothed = False
    n_iter, converged = 0, False
    f = data.loss_grad_scores(data.scores(W), A, B) + alpha * float(np.sum(W * W))
    while True:
        _loss.boost_weights(*args, d, A, B, Wp, Wm)
        grad = Wp - Wm + 2.0 * alpha * W
        grad_norm = float(np.linalg.norm(grad))
        if grad_norm <= tol * g0 or rho == 0.0:
            converged = True
            break
        if n_iter >= max_iter:
            break
        n_iter += 1
        lam, one_sided = _boost_step(Wp, Wm, W, alpha, rho)
        smoothed |= one_sided
        W -= lam / rho
        f = data.loss_grad_scores(data.scores(W), A, B) + alpha * float(np.sum(W * W))
        if verbose:
            print(f"LabelRankBoost boost iter {n_iter:5d}: objective {f:.12g}  |grad| {grad_norm / g0:.3e}")
    message = ""
    if smoothed:
        message = ("LabelRankBoost (boost): some base function meets edges of one sign only, so the loss has no "
                   "minimiser (it decreases without bound along it); its steps were smoothed. Use alpha > 0. ")
    if not converged:
        message += (f"LabelRankBoost (boost) stopped after max_iter={max_iter} iterations with relative gradient "
                    f"norm {grad_norm / g0:.3g} > tol={tol:g}; increase max_iter or tol, or use solver='newton'")
    return f, n_iter, grad_norm, converged, message
