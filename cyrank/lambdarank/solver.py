"""RankNet's functional layer and the lambda gradients (Burges, "From RankNet to LambdaRank to LambdaMART: An
Overview", MSR-TR-2010-82): validated arrays in, numbers out (no scikit-learn import).

:func:`lambdas` returns, per document, the gradient of the pairwise cost in the scores and its Gauss-Newton
weight for RankNet or LambdaRank (NDCG@k, ERR@k, MAP), from the Cython kernel _lambdas.pyx (formulas there).

:func:`solve` trains linear RankNet, f(x) = w.x, by trust-region Newton (cyrank.optim.tron) on the convex

    F(w) = sum_{(i, j) in P} log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2,   P = {same query, y_i > y_j},

gradient X' lambda + 2 alpha w and Hessian products X' H X v + 2 alpha v, H the pairwise Hessian in the scores;
each costs O(nnz + pairs). The loss over all pairs has no order-statistic form (unlike the squared hinge of
RankSVM): log(1 + e^(-u)) is not a polynomial, so the pairs are enumerated, per query, in parallel.
"""
import re

import numpy as np
import scipy.sparse as sp

from .._queries import QueryGroups
from .._result import SolveResult
from .._threads import one_blas_thread
from .._validation import (check_gain_labels, check_option, check_param, check_ranking_data, check_scores,
                           warn_if_no_pairs)
from ..optim.certificate import group_column_squares, jacobi_diagonal
from ..optim.smooth import SmoothProblem
from ..optim.tron import tron
from . import _lambdas

METRICS = {"ranknet": _lambdas.RANKNET, "ndcg": _lambdas.NDCG, "err": _lambdas.ERR, "map": _lambdas.AP}


def parse_metric(metric):
    """("ranknet" | "ndcg" | "err" | "map", k or None) from names like "ndcg@10", "err@5", "map", "ranknet"."""
    m = re.fullmatch(r"(ranknet|ndcg|err|map)(?:@(\d+))?", str(metric))
    if not m or (m.group(2) is not None and (m.group(1) in ("ranknet", "map") or int(m.group(2)) < 1)):
        raise ValueError(f"metric must be 'ranknet', 'ndcg', 'ndcg@k', 'err', 'err@k' or 'map' (k >= 1), got "
                         f"{metric!r}")
    return m.group(1), (int(m.group(2)) if m.group(2) else None)


class _Pairs:
    """Rows in (query, label) order, the query offsets and the kernel's settings."""

    def __init__(self, y, qid, *, metric="ranknet", sigma=1.0, truncation=None, max_rel=None, threshold=0.0,
                 ties="pessimistic", norm=False, parallel_min_rows=-1):
        name, k = parse_metric(metric)
        self.code, self.k = METRICS[name], (k or 0)
        if name in ("ndcg", "err"):  # ERR's R = 2^(y - max_rel) - 2^-max_rel has no overflow: sign check only
            check_gain_labels(y, name.upper(), exponential=name == "ndcg")
        groups = QueryGroups(qid, y)
        self.groups = groups
        self.order = groups.label_order
        self.offsets = np.ascontiguousarray(groups.offsets, dtype=np.int64)
        self.y = np.ascontiguousarray(y[self.order], dtype=np.float64)
        self.sigma = check_param("sigma", sigma, low=0.0, low_open=True)
        self.truncation = 0 if truncation is None else check_param("truncation", truncation, low=1, integer=True)
        self.max_rel = float(np.max(y)) if max_rel is None else float(max_rel)
        self.threshold = float(threshold)
        self.parallel_min_rows = parallel_min_rows
        self.norm = bool(check_option("norm", norm, (True, False)))
        self.tie = None
        if check_option("ties", ties, ("pessimistic", "input")) == "input":
            # equal scores in input order (as LightGBM): each row's rank among its query's rows as given
            rank = np.empty(y.shape[0], dtype=np.int64)
            rank[groups.order] = np.arange(y.shape[0]) - np.repeat(self.offsets[:-1], np.diff(self.offsets))
            self.tie = np.ascontiguousarray(rank[self.order])

    def lambdas(self, scores_sorted, lam, hess, with_cost=True):
        return _lambdas.lambdas(scores_sorted, self.y, self.offsets, self.code, self.k, self.truncation, self.sigma,
                                self.max_rel, self.threshold, lam, hess, self.parallel_min_rows, with_cost, self.norm,
                                self.tie)


def lambdas(y_true, y_score, qid=None, *, metric="ranknet", sigma=1.0, truncation=None, max_rel=None,
            threshold=0.0, ties="pessimistic", norm=False):
    """(cost, gradient, weight): per document dC/ds and its Gauss-Newton weight (input order) for RankNet
    (metric "ranknet") or LambdaRank ("ndcg@k", "err@k", "map"; _lambdas.pyx has the formulas). ``max_rel``: the
    ERR normaliser (default max y); ``threshold``: relevant = y > threshold (MAP); ``ties``: equal scores ranked
    "pessimistic" (lower label first, as cyrank.metrics) or in "input" order (as LightGBM); ``norm``: LightGBM's
    lambdarank_norm (_lambdas.lambdas)."""
    y_true, y_score, qid = check_scores(y_true, y_score, qid)
    pairs = _Pairs(y_true, qid, metric=metric, sigma=sigma, truncation=truncation, max_rel=max_rel,
                   threshold=threshold, ties=ties, norm=norm)
    n = y_true.shape[0]
    lam, hess = np.empty(n), np.empty(n)
    cost = pairs.lambdas(np.ascontiguousarray(y_score[pairs.order], dtype=np.float64), lam, hess)
    grad, weight = np.empty(n), np.empty(n)
    grad[pairs.order], weight[pairs.order] = lam, hess
    return cost, grad, weight


class _State:
    def __init__(self, n):
        self.s = np.zeros(n)


class _RankNetProblem(SmoothProblem):
    """F(w) (module docstring) on the rows in (query, label) order, for cyrank.optim.tron."""

    def __init__(self, X, pairs, alpha):
        self.X, self.pairs, self.alpha = X, pairs, alpha
        n = X.shape[0]
        self.lam, self.hess = np.empty(n), np.empty(n)
        super().__init__()

    def new_state(self):
        return _State(self.X.shape[0])

    def evaluate(self, w, Mw, state):
        state.s[:] = self.X @ w
        loss = self.pairs.lambdas(state.s, self.lam, self.hess)
        return loss + self.alpha * float(w @ w), np.asarray(self.X.T @ self.lam).ravel() + 2.0 * self.alpha * w

    def hessian_product(self, state, v, Mv):
        P = self.pairs
        out = np.empty(self.X.shape[0])
        _lambdas.ranknet_hess_vec(state.s, P.y, P.offsets, P.sigma, np.asarray(self.X @ v, dtype=np.float64), out,
                                  P.parallel_min_rows)
        return np.asarray(self.X.T @ out).ravel() + 2.0 * self.alpha * v


def check_params(*, sigma, alpha, max_iter, tol):
    return (check_param("sigma", sigma, low=0.0, low_open=True), check_param("alpha", alpha, low=0.0),
            check_param("max_iter", max_iter, low=1, integer=True), check_param("tol", tol, low=0.0, low_open=True))


def objective(X, y, qid=None, *, coef, sigma=1.0, alpha=1.0):
    """F(coef) (module docstring) on (X, y, qid), in float64."""
    X, y, qid = check_ranking_data(X, y, qid)
    pairs = _Pairs(y, qid, sigma=sigma)
    Xs = X.tocsr()[pairs.order] if sp.issparse(X) else X[pairs.order]
    coef = np.asarray(coef, dtype=np.float64)
    n = X.shape[0]
    s = np.ascontiguousarray(Xs @ coef, dtype=np.float64)
    return pairs.lambdas(s, np.empty(n), np.empty(n)) + check_param("alpha", alpha, low=0.0) * float(coef @ coef)


def solve(X, y, qid=None, *, sigma=1.0, alpha=1.0, max_iter=1000, tol=1e-6, coef0=None, verbose=0):
    """Linear RankNet by TRON (module docstring). Returns a SolveResult with coef, objective, grad_norm
    (||grad|| / ||grad at 0||), n_iter, n_cg_iter, converged, n_features_in."""
    sigma, alpha, max_iter, tol = check_params(sigma=sigma, alpha=alpha, max_iter=max_iter, tol=tol)
    X, y, qid = check_ranking_data(X, y, qid)
    pairs = _Pairs(y, qid, sigma=sigma)
    warn_if_no_pairs(pairs.groups)
    Xs = X.tocsr()[pairs.order] if sp.issparse(X) else np.ascontiguousarray(X[pairs.order])
    d = X.shape[1]
    w = np.zeros(d)
    if coef0 is not None:
        w = np.asarray(coef0, dtype=np.float64).copy()
        if w.shape != (d,) or not np.all(np.isfinite(w)):
            raise ValueError(f"coef0 must be a finite array of shape ({d},)")
    problem = _RankNetProblem(Xs, pairs, alpha)
    with one_blas_thread():
        g0 = float(np.linalg.norm(problem.grad(np.zeros(d))))
        precond = jacobi_diagonal(problem.hess_vec, group_column_squares(Xs, pairs.offsets), 2.0 * alpha)
        res = tron(problem, w, tol=tol, max_iter=max_iter, grad_norm0=g0, verbose=verbose, name="RankNet",
                   precond=precond, gap_tol=tol, strong_convexity=2.0 * alpha)
    return SolveResult(coef=res.x, objective=float(res.objective), grad_norm=float(res.optimality),
                       n_iter=int(res.n_iter), n_cg_iter=int(res.n_inner), converged=bool(res.converged),
                       gap=float(res.gap), gap_kind=res.gap_kind, n_features_in=d, optimality_name="grad_norm",
                       message="" if res.converged else res.message)


# ------------------------------------------------------------------------------------------------ LambdaRank
def metric_value(metric, y, scores, qid, max_rel=None):
    """The mean over queries of the metric LambdaRank weights by (cyrank.metrics conventions: pessimistic ties,
    queries without a relevant document dropped); "ranknet" is measured by pairwise accuracy."""
    from .. import metrics

    name, k = parse_metric(metric)
    if name == "ndcg":
        return metrics.ndcg_score(y, scores, qid, k=k)
    if name == "err":
        return metrics.err_score(y, scores, qid, k=k, max_rel=max_rel)
    if name == "map":
        return metrics.average_precision(y, scores, qid)
    return metrics.pairwise_accuracy(y, scores, qid)


def check_lambdarank_params(*, metric, sigma, alpha, max_iter, tol, early_stopping_rounds):
    parse_metric(metric)
    sigma, alpha, max_iter, tol = check_params(sigma=sigma, alpha=alpha, max_iter=max_iter, tol=tol)
    if early_stopping_rounds is not None:
        early_stopping_rounds = check_param("early_stopping_rounds", early_stopping_rounds, low=1, integer=True)
    return sigma, alpha, max_iter, tol, early_stopping_rounds


def solve_lambdarank(X, y, qid=None, *, metric="ndcg@10", sigma=1.0, alpha=1e-3, max_iter=200, tol=1e-6,
                     eval_set=None, early_stopping_rounds=None, verbose=0):
    """Linear LambdaRank, f(x) = w.x: scipy's L-BFGS-B (Byrd, Lu, Nocedal & Zhu 1995) on the lambda-weighted cost
    sum_P |dZ_ij| log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2 with the lambdas as its gradient (the weights
    |dZ_ij| are those of the current ranking: LambdaRank's cost is not convex, and not even continuous where the
    ranking changes, so this is a local method; Burges 2010, section 4). From w = 0. ``eval_set`` = (X, y, qid):
    the metric on it after every iteration (``history["eval"]``); with ``early_stopping_rounds`` the fit stops
    after that many iterations without improvement and returns the best iterate (``best_iteration``). Returns a
    SolveResult with coef, objective (the cost at coef), grad_norm (relative), n_iter, converged (L-BFGS-B's own
    stop on the gradient, or early stopping), history, best_iteration, n_features_in."""
    from scipy.optimize import minimize

    sigma, alpha, max_iter, tol, early_stopping_rounds = check_lambdarank_params(
        metric=metric, sigma=sigma, alpha=alpha, max_iter=max_iter, tol=tol,
        early_stopping_rounds=early_stopping_rounds)
    X, y, qid = check_ranking_data(X, y, qid)
    pairs = _Pairs(y, qid, metric=metric, sigma=sigma)
    warn_if_no_pairs(pairs.groups)
    Xs = X.tocsr()[pairs.order] if sp.issparse(X) else np.ascontiguousarray(X[pairs.order])
    d, n = X.shape[1], X.shape[0]
    if eval_set is not None:
        if len(eval_set) not in (2, 3):
            raise ValueError("eval_set must be (X, y) or (X, y, qid)")
        Xv, yv, qv = check_ranking_data(*eval_set)
        if Xv.shape[1] != d:
            raise ValueError(f"eval_set has {Xv.shape[1]} features but X has {d}")
    elif early_stopping_rounds is not None:
        raise ValueError("early_stopping_rounds needs an eval_set")
    lam, hess = np.empty(n), np.empty(n)

    def fun_grad(w):
        loss = pairs.lambdas(np.ascontiguousarray(Xs @ w, dtype=np.float64), lam, hess)
        return loss + alpha * float(w @ w), np.asarray(Xs.T @ lam).ravel() + 2.0 * alpha * w

    history = {"objective": [], "eval": []}
    best = {"score": -np.inf, "w": np.zeros(d), "iteration": 0}

    def record(intermediate_result):
        w = intermediate_result.x
        history["objective"].append(float(intermediate_result.fun))
        if eval_set is not None:
            score = metric_value(metric, yv, np.asarray(Xv @ w, dtype=np.float64).ravel(), qv, pairs.max_rel)
            history["eval"].append(score)
            if score > best["score"]:
                best.update(score=score, w=w.copy(), iteration=len(history["eval"]))
            if verbose:
                print(f"LambdaRank iter {len(history['objective']):4d}: cost {intermediate_result.fun:.10g}  "
                      f"eval {metric} {score:.6f}")
            if early_stopping_rounds is not None and len(history["eval"]) - best["iteration"] >= early_stopping_rounds:
                raise StopIteration
        elif verbose:
            print(f"LambdaRank iter {len(history['objective']):4d}: cost {intermediate_result.fun:.10g}")

    with one_blas_thread():
        f0, g0 = fun_grad(np.zeros(d))
        scale = float(np.max(np.abs(g0), initial=0.0))
        res = minimize(fun_grad, np.zeros(d), jac=True, method="L-BFGS-B", callback=record,
                       options={"maxiter": int(max_iter), "gtol": tol * scale, "ftol": 0.0,
                                "maxfun": 20 * int(max_iter) + 20})
        stopped_early = res.status == 99 or (early_stopping_rounds is not None and res.message.startswith(
            "`callback` raised `StopIteration`"))
        w = best["w"] if (eval_set is not None and early_stopping_rounds is not None) else res.x
        objective, grad = fun_grad(w)
    n_iter = len(history["objective"])
    grad_norm = float(np.linalg.norm(grad)) / max(float(np.linalg.norm(g0)), 1e-300)
    converged = bool(res.success or stopped_early)
    message = "" if converged else (f"LambdaRank stopped after {n_iter} iterations ({res.message}); relative "
                                    f"gradient norm {grad_norm:.3g}: increase max_iter or tol, or use an eval_set "
                                    "with early_stopping_rounds")
    return SolveResult(coef=w, objective=float(objective), grad_norm=grad_norm, n_iter=n_iter,
                       converged=converged, history={k: np.asarray(v) for k, v in history.items()},
                       best_iteration=int(best["iteration"]) if eval_set is not None else n_iter,
                       n_features_in=d, optimality_name="grad_norm", message=message)
