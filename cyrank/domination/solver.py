"""DominationRank's functional layer: validated arrays in; coefficients, objective, KKT violation and n_iter out
(no scikit-learn import; the estimator in estimator.py is a thin wrapper). This module holds the parameters,
``solve``, ``objective`` and ``path``; the data layout is in _layout.py, the solvers in _solvers.py, and the
penalties, proximal Newton, OWL-QN and the path grid they share with other losses in cyrank.optim.

Objective (Stevens, "Efficient Coordinate Descent for Ranking with Domination Loss", MEng thesis, MIT 2010),
with scores f_i = w.x_i and offsets o_i >= 0 (separable margins, section 4): every row i that dominates some
row of its query (D(q, i) = {j in q: y_j < y_i} non-empty) contributes

    l_i = log(1 + sum_{j in D(q, i)} exp((f_j - o_j) - (f_i - o_i)))

and the objective is sum_i s_i l_i + alpha * ||w||_1 ("l1"), + alpha * ||w||_2^2 ("l2", not halved, section 5), or
+ alpha * (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2) ("elasticnet"), s_i the sample weight of row i (1 when
``sample_weight`` is None): it weighs the term of the dominating row i only, so the weights of the rows of a
query's lowest label level change nothing, and an integer s_i equals repeating the loss term of row i (not the
row: a repeated row would also be dominated more often). Every label level of a query is a
layer (section 3); ``binary=True`` keeps two layers, y > 0 and y <= 0.

Solvers: "cd", coordinate descent on a quadratic upper bound of the loss plus the exact penalty (sections 2-5,
cyrank/domination/_cd.pyx); "newton", trust-region Newton-CG (cyrank.optim.tron) on the smooth objective with
exact gradients and Hessian-vector products in O(nnz + rows) (cyrank/domination/_smooth.pyx); "prox_newton",
proximal Newton for the l1 and elastic-net penalties (Yuan, Ho & Lin, "An Improved GLMNET for L1-regularized
Logistic Regression", JMLR 2012): at w, the quadratic model of the smooth part on a working set W of features
(the non-zero ones and the worst KKT violators), with its exact Hessian X_W' H X_W, plus the l1 term is minimised
(formed by _smooth.gram_hessian and solved by coordinate descent and a feature-sign search,
cyrank/optim/_quadratic_l1.pyx, while rows |W|^2 stays within Options.gram_budget nnz; beyond, never formed:
coordinate descent and Newton steps on the orthant with the Hessian applied in the scores,
cyrank/domination/_model_cd.pyx), and the step is scaled by an Armijo line search on the true objective; KKT is
checked on every feature at every iteration (the gradient is full); "lbfgs", L-BFGS (Liu & Nocedal 1989) on the fused
loss and gradient (smooth objective only); "owlqn", orthant-wise L-BFGS for the l1 term (Andrew & Gao, ICML 2007)
on the same fused loss and gradient. Both run the one optimiser cyrank.optim.owlqn (lam1 = 0: plain L-BFGS).

Stopping: "newton" stops when the gap (cyrank.optim.certificate: ||p||^2 / (4 lam2), certified, or the Newton
decrement, an estimate that no rescaling of a feature changes) is <= tol * max(1, |objective|). The others stop
when the KKT violation (relative to the gradient at 0 of the loss, weighted when there are sample weights) is
<= tol and, all but "cd", the same gap is <= tol * max(1, |objective|): a first-order or l1 method has no cheap
gap before its KKT rule holds, and one unnormalised column cannot make that rule hold far from the optimum
unnoticed. When the KKT rule holds and the gap is not certified, L-BFGS and OWL-QN make the Jacobi diagonal of
the within-query column scales and, if those are far apart (worth_preconditioning), continue preconditioned by it
(Newton from the first step); proximal Newton always scales its ridge and damping per coordinate. "cd"'s coordinate steps are exact whatever the scale.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._result import SolveResult
from .._threads import one_blas_thread, openmp_threads
from .._validation import check_options
from .._validation import (check_feature_scale, check_n_jobs, check_option, check_param, check_random_state,
                           check_ranking_data, check_row_weights, check_sample_weight, check_verbose, check_y)
from ..optim.path import PathResult, alpha_grid, check_path_params, run_path  # noqa: F401 (PathResult: public)
from ..optim.penalties import Penalty, penalty_weights
from ..optim.result import gap_target
from . import _cd
# the layout and the solvers (re-exported for the kernel tests; the public loss object is :func:`loss`)
from ._layout import _columns, _gradient_rounding, _layout, _Layout, _rows_of  # noqa: F401
from ._solvers import (HESSIAN_BOUNDS, _chained, _GramModel, _NewtonProblem, _NewtonState, _ScoreModel,  # noqa: F401
                       _smooth_problem, _solve_cd, _solve_lbfgs, _solve_newton, _solve_owlqn, _solve_prox_newton)

SOLVERS = ("auto", "cd", "newton", "lbfgs", "prox_newton", "owlqn")
# solver="auto" on a smooth objective: L-BFGS for at most this many iterations, then Newton from its point
AUTO_LBFGS_ITERATIONS = 30
# solver="auto" with an l1 term on data too large for proximal Newton's formed model: OWL-QN for at most this many
# iterations, then proximal Newton from its point
AUTO_OWLQN_ITERATIONS = 500


@dataclass(frozen=True)
class Options:
    """Tuning of the solvers: the defaults are the measured best (bench/HISTORY.md); the optimum reached does not
    depend on them.

    Attributes
    ----------
    power_sum_rows : int, default=8
        With sparse X, dominating layers of at least this many rows keep power sums (_cd.pyx), so that a coordinate
        update costs the column's entries, not the rows of the layers it touches.
    anderson : bool, default=True
        Anderson extrapolation of the CD sweeps (kept only when it lowers the objective).
    densify_share : float, default=0.2
        Newton products: sparse X with at least this share of entries stored is densified ...
    densify_max_bytes : int, default=512 << 20
        ... when the dense copy (in X's dtype) fits in this many bytes (cyrank/_dense.py): a dense float64 entry
        costs about a tenth of a sparse one in the products, but the copy costs memory beyond X (1 / share times
        X's data at least); 0 keeps the fit's memory close to X's.
    parallel_min_rows : int, default=-1
        Newton products over fewer rows run on one thread (-1: the shared default, 20,000).
    gram_budget : float, default=1500.0
        Proximal Newton forms its model's Hessian X_W'HX_W while that costs at most this many multiply-adds per
        stored entry of X (rows |W|^2 <= gram_budget nnz); beyond, it applies the Hessian in the scores without
        forming it (cyrank/domination/_model_cd.pyx). 0: always the latter. At the measured 0.4 ns per multiply-add
        of the Hessian and 14 ns per entry of a matrix-free sweep, the budget equals about 40 sweeps; on dense data
        with a few hundred features the formed model is 3-10 times faster, on the sparse bench problem with 3,000 to
        12,000 non-zeros the matrix-free one is the only one that fits. solver="auto" with an l1 term picks proximal
        Newton when the model on all features fits this budget, else OWL-QN.
    owlqn_memory : int, default=10
        Number of (step, gradient change) pairs OWL-QN keeps.
    """

    power_sum_rows: int = 8
    anderson: bool = True
    densify_share: float = 0.2
    densify_max_bytes: int = 512 << 20
    parallel_min_rows: int = -1
    gram_budget: float = 1500.0
    owlqn_memory: int = 10


# -------------------------------------------------------------------------------------------- parameters
def choose_solver(solver, lam1, feature_induction):
    """The solver to run. "auto": "lbfgs+newton" for a smooth objective (lam1 = 0) without feature induction (L-BFGS
    for at most AUTO_LBFGS_ITERATIONS iterations, then Newton from where it stopped: a well-conditioned problem is
    solved by the cheap quasi-Newton steps alone, an ill-conditioned one gets Newton's fast local convergence);
    "prox_newton" with feature induction; else "auto_l1", settled by :func:`_auto_l1` once the data are known.
    "newton" and "lbfgs" need a smooth objective, and they and "owlqn" no feature induction."""
    check_option("solver", solver, SOLVERS)
    smooth = lam1 == 0 and feature_induction is None
    if solver in ("newton", "lbfgs") and not smooth:
        raise ValueError(f"solver={solver!r} needs a smooth objective (penalty='l2', or 'elasticnet' with "
                         "l1_ratio=0) and feature_induction=None; use solver='prox_newton', 'owlqn' or 'cd'")
    if solver == "owlqn" and feature_induction is not None:
        raise ValueError("solver='owlqn' has no feature induction (feature_induction=None); use solver='prox_newton' "
                         "or 'cd'")
    if solver == "auto":
        return "lbfgs+newton" if smooth else "prox_newton" if feature_induction is not None else "auto_l1"
    return solver


def _auto_l1(X, layout, options):
    """solver="auto" with an l1 term: "prox_newton" when its model on all features could be formed within
    Options.gram_budget (rows d^2 <= gram_budget nnz: a few hundred dense features, where its Newton steps converge
    in a handful of iterations whatever the conditioning), else "owlqn+prox_newton" (OWL-QN, whose iteration costs
    one evaluation, for at most AUTO_OWLQN_ITERATIONS iterations, then proximal Newton from its point). Measured on
    the bench problems (bench/HISTORY.md, issue 11): on sparse data with 2e4 features OWL-QN is 1.2-7x faster than
    proximal Newton, whose matrix-free inner sweeps cost twice an evaluation; on 300 dense features it is 10-100x
    slower."""
    d = X.shape[1]
    nnz = X.nnz if sp.issparse(X) else X.shape[0] * d
    return "prox_newton" if layout.rows.shape[0] * float(d) ** 2 <= options.gram_budget * nnz else "owlqn+prox_newton"


def check_params(*, penalty, alpha, l1_ratio, binary, group_by_query, feature_induction, neg_sample, solver,
                 hessian_bound, max_iter, tol, random_state, n_jobs, verbose):
    """Every parameter of :func:`solve` checked (a ValueError naming the first bad one); returns
    (lam1, lam2, the solver that will run)."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    check_option("binary", binary, (True, False))
    check_option("group_by_query", group_by_query, (True, False))
    check_option("hessian_bound", hessian_bound, tuple(HESSIAN_BOUNDS))
    check_param("feature_induction", feature_induction, low=1, integer=True, none_ok=True)
    check_param("neg_sample", neg_sample, low=0.0, high=1.0, low_open=True, none_ok=True)
    check_param("max_iter", max_iter, low=1, integer=True)
    check_param("tol", tol, low=0.0, low_open=True)
    check_verbose(verbose)
    check_random_state(random_state)
    check_n_jobs(n_jobs)
    return lam1, lam2, choose_solver(solver, lam1, feature_induction)


def _check_data(X, y, qid, offset, sample_weight):
    """(X, y, qid, offset, sample_weight, the largest |x|) checked (sample_weight: None, or n weights)."""
    X, y, qid = check_ranking_data(X, y, qid, accept_sparse=("csc", "csr"), dtype=(np.float64, np.float32))
    x_max = check_feature_scale(X, "DominationRank")
    return (X, y, qid, check_row_weights(offset, X.shape[0], name="offset"),
            check_sample_weight(sample_weight, X.shape[0]), x_max)


# -------------------------------------------------------------------------------------------------- solve
def solve(X, y, qid=None, offset=None, *, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False,
          group_by_query=True, feature_induction=None, neg_sample=None, solver="auto", hessian_bound="popoviciu",
          max_iter=1000, tol=1e-6, coef_init=None, random_state=None, n_jobs=None, verbose=0, options=None,
          sample_weight=None):
    """Minimise the domination-loss objective (module docstring) on (X, y) grouped by ``qid``.

    Parameters are those of :class:`cyrank.DominationRank` (same names, same meaning), plus ``coef_init``, the
    starting point (default 0), ``options``, an :class:`Options`, and ``sample_weight`` (n_samples,) >= 0 or a
    number (None: every weight 1), the weight s_i of the loss term of each row: sum_i s_i l_i + penalty. Every
    solver, its step sizes or curvature bounds and its stopping rule (relative to the weighted gradient at 0) use
    the weighted loss. With ``neg_sample``, the rows of the lowest layer, whose weights change nothing, are
    sampled as without weights. Returns a
    :class:`cyrank._result.SolveResult` with ``coef``, ``objective``, ``kkt_violation`` (the optimality
    measure), ``n_iter``, ``n_cg_iter``, ``converged``, ``solver``, ``history``, ``sample_mask`` and
    ``n_features_in``; when the solver stops on ``max_iter``, ``converged`` is False and ``message`` says so (no
    warning is issued here).
    """
    lam1, lam2, solver = check_params(
        penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, binary=binary, group_by_query=group_by_query,
        feature_induction=feature_induction, neg_sample=neg_sample, solver=solver, hessian_bound=hessian_bound,
        max_iter=max_iter, tol=tol, random_state=random_state, n_jobs=n_jobs, verbose=verbose)
    max_iter, tol, n_jobs, verbose = int(max_iter), float(tol), check_n_jobs(n_jobs), check_verbose(verbose)
    X, y, qid, offset, sample_weight, x_max = _check_data(X, y, qid, offset, sample_weight)
    layout, mask = _layout(y, qid, offset, binary=binary, group_by_query=group_by_query, neg_sample=neg_sample,
                           random_state=random_state, sample_weight=sample_weight)
    layout.x_max = x_max
    return _run(X, layout, lam1, lam2, solver, coef_init, tol=tol, max_iter=max_iter, feature_induction=feature_induction,
                hessian_bound=hessian_bound, n_jobs=n_jobs, verbose=verbose,
                options=check_options(options, Options, "cyrank.domination.solve"),
                sample_mask=mask if neg_sample is not None else None)


def _run(X, layout, lam1, lam2, solver, coef_init, *, tol, max_iter, feature_induction, hessian_bound, n_jobs, verbose,
         options, sample_mask=None):
    """One solve on validated data and its layout: the SolveResult of :func:`solve`."""
    d = X.shape[1]
    w = np.zeros(d)
    if coef_init is not None:
        coef_init = check_y(coef_init, name="coef_init")  # finite, 1-d, float64
        if coef_init.shape != (d,):
            raise ValueError(f"coef_init has shape {coef_init.shape}; expected ({d},)")
        w[:] = coef_init
    if solver == "auto_l1":
        solver = _auto_l1(X, layout, options)
    if sp.issparse(X) and X.format != "csr" and solver != "cd":
        X = X.tocsr()  # the smooth solvers read rows: a CSC X is converted once (the one copy they make of it)
    with openmp_threads(n_jobs):
        if solver == "newton":
            out = _solve_newton(X, layout, w, lam2, tol, max_iter, verbose, options)
        elif solver == "lbfgs":
            out = _solve_lbfgs(X, layout, w, lam2, tol, max_iter, verbose, options)
        elif solver == "lbfgs+newton":
            smooth = _smooth_problem(X, layout, lam2, options)  # prepared once for both
            out = _solve_lbfgs(X, layout, w, lam2, tol, min(max_iter, AUTO_LBFGS_ITERATIONS), verbose, options,
                               smooth)
            if out.converged or out.n_iter >= max_iter:  # converged, or no iteration left
                solver = "lbfgs"
            else:  # not converged within the budget: Newton from there
                out = _chained(out, _solve_newton(X, layout, w, lam2, tol, max_iter - out.n_iter, verbose, options,
                                                  smooth))
        elif solver == "prox_newton":
            out = _solve_prox_newton(X, layout, w, lam1, lam2, tol, max_iter, feature_induction, verbose, options)
        elif solver == "owlqn":
            out = _solve_owlqn(X, layout, w, lam1, lam2, tol, max_iter, verbose, options)
        elif solver == "owlqn+prox_newton":
            smooth = _smooth_problem(X, layout, lam2, options)  # prepared once for both
            out = _solve_owlqn(X, layout, w, lam1, lam2, tol, min(max_iter, AUTO_OWLQN_ITERATIONS), verbose,
                               options, smooth)
            if out.converged or out.n_iter >= max_iter:
                solver = "owlqn"
            else:
                out = _chained(out, _solve_prox_newton(X, layout, w, lam1, lam2, tol, max_iter - out.n_iter, None,
                                                       verbose, options, smooth))
        else:
            out = _solve_cd(X, layout, w, lam1, lam2, tol, max_iter, feature_induction, hessian_bound, verbose,
                            options)
    violation, n_iter = out.optimality, out.n_iter
    measured = (f"KKT violation {violation:.3g} > tol={tol:g}" if violation > tol else
                f"KKT violation {violation:.3g} <= tol but objective gap {out.gap:.3g} ({out.gap_kind}) > "
                f"tol * max(1, |objective|) = {gap_target(tol, out.objective):.3g}")
    if out.converged:
        message = ""
    elif out.info.get("stalled"):
        message = (f"DominationRank ({solver}) stopped after {n_iter} iterations with {measured}: no step "
                   "decreases the objective in floating point any more (a feature on a huge or tiny scale can "
                   "cause this: standardise X, or use solver='cd')")
    else:
        message = (f"DominationRank ({solver}) stopped after max_iter={max_iter} "
                   f"{'sweeps' if solver == 'cd' else 'iterations'} with {measured}; increase max_iter or tol")
    return SolveResult(
        coef=w, objective=float(out.objective), kkt_violation=float(violation), n_iter=int(n_iter),
        n_cg_iter=int(out.n_inner), converged=bool(out.converged), solver=solver, gap=float(out.gap),
        gap_kind=out.gap_kind,
        history={"objective": np.asarray(out.history["objective"], dtype=np.float64),
                 "n_nonzero": np.asarray(out.history["n_nonzero"], np.int64)},
        sample_mask=sample_mask, n_features_in=d, optimality_name="kkt_violation", message=message)


def objective(X, y, qid=None, offset=None, *, coef, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False,
              group_by_query=True, sample_weight=None):
    """The objective (sum_i s_i l_i + penalty, module docstring; ``sample_weight`` s as in :func:`solve`) at
    ``coef`` on (X, y, qid, offset), in float64 (X read in place, in its own dtype)."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    check_option("binary", binary, (True, False))
    check_option("group_by_query", group_by_query, (True, False))
    X, y, qid, offset, sample_weight, _ = _check_data(X, y, qid, offset, sample_weight)
    layout, _ = _layout(y, qid, offset, binary=binary, group_by_query=group_by_query, sample_weight=sample_weight)
    coef = np.ascontiguousarray(coef, dtype=np.float64).ravel()
    if coef.shape != (X.shape[1],):
        raise ValueError(f"coef has shape {coef.shape}; expected ({X.shape[1]},)")
    # the smooth solvers' loss (_smooth.pyx), reading X in place: no copy of X (a CSC X is read as CSR)
    problem = _NewtonProblem(_rows_of(X, Options(densify_max_bytes=0)), layout, 0.0, X.shape[1])
    with one_blas_thread():
        return float(problem.fun(coef) + Penalty(lam1, lam2).value(coef))


# --------------------------------------------------------------------------------------------------- loss
def loss(X, y, qid=None, offset=None, *, binary=False, group_by_query=True, sample_weight=None):
    """The domination loss (Stevens, MIT thesis 2010, sections 3-4; module docstring) on (X, y, qid, offset), no
    penalty: a :class:`cyrank.optim.datafit.Datafit` evaluating

        L(w) = sum_q sum_{i: D(q, i) != {}} s_i log(1 + sum_{j in D(q, i)} exp((f_j - o_j) - (f_i - o_i))),  f = X w,

    its gradient and Hessian products (+ ridge ||w||^2 when :func:`cyrank.optim.datafit.minimise` sets a ridge),
    with ``n_features``, ``n_rows`` (rows of queries with two label levels), ``column_squares()`` and
    ``gradient_noise``. The data are checked as :func:`solve` checks them; ``binary`` and ``group_by_query`` as
    there; ``sample_weight`` s as in :func:`solve` (None: every s_i = 1). Rows are sorted by (query, label) inside
    the object; w is in X's column order, so the object is used like ``objective``:
    ``loss(X, y, qid).fun(w) == objective(X, y, qid, coef=w, alpha=0)``."""
    check_option("binary", binary, (True, False))
    check_option("group_by_query", group_by_query, (True, False))
    X, y, qid, offset, sample_weight, x_max = _check_data(X, y, qid, offset, sample_weight)
    layout, _ = _layout(y, qid, offset, binary=binary, group_by_query=group_by_query, sample_weight=sample_weight)
    layout.x_max = x_max
    return _NewtonProblem(_rows_of(X), layout, 0.0, X.shape[1], X=X)


# ------------------------------------------------------------------------------------------ regularisation path
def path(X, y, qid=None, offset=None, *, alphas=None, n_alphas=20, eps=1e-3, penalty="l1", l1_ratio=0.5,
         binary=False, group_by_query=True, solver="auto", feature_induction=None, max_iter=1000, tol=1e-6,
         n_jobs=None, verbose=0, options=None, sample_weight=None):
    """The regularisation path of the domination-loss objective: one solve per alpha, decreasing, each started
    from the previous solution (warm start), on data validated and laid out once.

    Parameters
    ----------
    X, y, qid, offset : arrays
        The data, as for :func:`solve` (qid None: one query; offset None: no margins).
    alphas : sequence of float >= 0 or None, default=None
        The alphas (sorted decreasing). None: ``n_alphas`` values from alpha_max down to ``eps`` * alpha_max,
        geometrically spaced, alpha_max being the smallest alpha with w = 0 optimal, computed exactly from the
        gradient at 0 (penalty "l1", or "elasticnet" with l1_ratio > 0; "l2" needs ``alphas``).
    n_alphas : int >= 1, default=20
    eps : float in (0, 1), default=1e-3
    penalty, l1_ratio, binary, group_by_query, solver, feature_induction, max_iter, tol, n_jobs, verbose, options : any
        As for :func:`solve`.
    sample_weight : array of shape (n_samples,), float or None, default=None
        The weights s_i of the loss terms, as for :func:`solve` (alpha_max is that of the weighted loss).

    Returns
    -------
    PathResult
        Per alpha: coefficients (sparse columns), objective, KKT violation, iterations, convergence and the
        solver's message (nothing is warned here).
    """
    n_alphas, eps = check_path_params(penalty, n_alphas, eps)
    X, y, qid, offset, sample_weight, x_max = _check_data(X, y, qid, offset, sample_weight)
    layout, _ = _layout(y, qid, offset, binary=binary, group_by_query=group_by_query, sample_weight=sample_weight)
    layout.x_max = x_max
    options = check_options(options, Options, "cyrank.domination.path")

    def top():
        _, _, g_max, noise, _, _ = _smooth_problem(X, layout, 0.0, options)
        return g_max, noise

    alphas, alpha_max = alpha_grid(alphas, n_alphas, eps, penalty, l1_ratio, top)

    def fit(alpha, coef):
        lam1, lam2, chosen = check_params(
            penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, binary=binary, group_by_query=group_by_query,
            feature_induction=feature_induction, neg_sample=None, solver=solver, hessian_bound="popoviciu",
            max_iter=max_iter, tol=tol, random_state=None, n_jobs=n_jobs, verbose=verbose)
        return _run(X, layout, lam1, lam2, chosen, coef, tol=float(tol), max_iter=int(max_iter),
                    feature_induction=feature_induction, hessian_bound="popoviciu", n_jobs=check_n_jobs(n_jobs),
                    verbose=check_verbose(verbose), options=options)

    return run_path(alphas, alpha_max, fit)
