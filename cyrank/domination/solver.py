"""DominationRank's functional layer: validated arrays in; coefficients, objective, KKT violation and n_iter out
(no scikit-learn import; the estimator in estimator.py is a thin wrapper).

Objective (Stevens, "Efficient Coordinate Descent for Ranking with Domination Loss", MEng thesis, MIT 2010),
with scores f_i = w.x_i and offsets o_i >= 0 (separable margins, section 4): every row i that dominates some
row of its query (D(q, i) = {j in q: y_j < y_i} non-empty) contributes

    l_i = log(1 + sum_{j in D(q, i)} exp((f_j - o_j) - (f_i - o_i)))

and the objective is sum_i l_i + alpha * ||w||_1 ("l1"), + alpha * ||w||_2^2 ("l2", not halved, section 5), or
+ alpha * (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2) ("elasticnet"). Every label level of a query is a
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

Stopping: every solver stops when the KKT violation (relative to the gradient at 0) is <= tol; all but "cd" also
need the gap (cyrank.optim.certificate: ||p||^2 / (4 lam2), certified, or the Newton decrement, an estimate that
no rescaling of a feature changes) to be <= tol * max(1, |objective|), so that one unnormalised column cannot
make the KKT rule hold far from the optimum. When the KKT rule holds and the gap is not certified, Newton, L-BFGS
and OWL-QN make the Jacobi diagonal of the within-query column scales and, if those are far apart
(worth_preconditioning), continue preconditioned by it; proximal Newton always scales its ridge and damping per
coordinate. "cd"'s coordinate steps are exact whatever the scale.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._dense import should_densify
from .._queries import QueryGroups
from .._result import SolveResult
from .._threads import one_blas_thread, openmp_threads
from .._validation import check_options
from .._validation import (check_feature_scale, check_n_jobs, check_option, check_param, check_random_state,
                           check_ranking_data, check_row_weights, check_verbose, check_y, max_abs,
                           warn_if_no_pairs)
from ..optim.certificate import certify, group_column_squares, jacobi_preconditioner
from ..optim.owlqn import owlqn_penalized
from ..optim.path import PathResult, alpha_grid, check_path_params, run_path  # noqa: F401 (PathResult: public)
from ..optim.penalties import penalty_weights
from ..optim.penalties import Penalty
from ..optim.prox_newton import RIDGE, GramModel, prox_newton
from ..optim.result import OptimResult, gap_target
from ..optim.smooth import SmoothProblem
from ..optim.tron import tron
from . import _cd, _model_cd, _smooth

SOLVERS = ("auto", "cd", "newton", "lbfgs", "prox_newton", "owlqn")
# solver="auto" on a smooth objective: L-BFGS for at most this many iterations, then Newton from its point
AUTO_LBFGS_ITERATIONS = 30
# solver="auto" with an l1 term on data too large for proximal Newton's formed model: OWL-QN for at most this many
# iterations, then proximal Newton from its point
AUTO_OWLQN_ITERATIONS = 500
MODEL_SWEEPS = 100  # largest number of sweeps of the matrix-free inner solver (_ScoreModel) per model
MODEL_CD_SWEEPS = 10  # ... in rounds of this many CD sweeps and one Newton step on the orthant they found
HESSIAN_BOUNDS = {"popoviciu": _cd.HESSIAN_POPOVICIU, "max_sq": _cd.HESSIAN_MAX_SQ}


@dataclass(frozen=True)
class Options:
    """Tuning of the solvers: the defaults are the measured best (bench/RESULTS.md); the optimum reached does not
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
        ... when the dense copy fits in this many bytes (cyrank/_dense.py).
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


class _Layout:
    """Rows sorted by (query, label): the arrays the kernel reads (see cyrank/domination/_cd.pyx).

    rows      original index of each sorted row (rows of single-level queries and unsampled rows are absent)
    q_ptr     query q owns query-layers q_ptr[q]:q_ptr[q+1]
    lay_ptr   query-layer k owns sorted rows lay_ptr[k]:lay_ptr[k+1]
    row_qk    query-layer of each sorted row;  qk_q: query of each query-layer;  offset: sorted offsets
    """

    def __init__(self, rows, q_ptr, lay_ptr, row_qk, qk_q, offset):
        self.rows, self.q_ptr, self.lay_ptr, self.row_qk, self.qk_q, self.offset = (
            rows, q_ptr, lay_ptr, row_qk, qk_q, offset)
        self.x_max = None  # the largest |x| of X, when the caller knows it (one O(nnz) pass less)
        self.squares = None  # the within-query column squares of X (_preconditioner), made on first need


def _layout(y, qid, offset, *, binary, group_by_query, neg_sample=None, random_state=None):
    """Rows sorted by (query, label) (QueryGroups' label runs), queries with one label level dropped,
    optionally the bottom layers sampled.

    Negative sampling (the "Sampled" variant, section 8.2): in every query, ceil(neg_sample * n_0) of the n_0
    rows of the lowest layer (the rows that dominate nothing) are kept, uniformly without replacement.
    Returns the layout and the boolean mask (input order) of the rows negative sampling kept.
    """
    n = y.shape[0]
    labels = (y > 0).astype(np.float64) if binary else y
    groups = QueryGroups(qid if group_by_query else np.zeros(n, np.int64), labels)
    warn_if_no_pairs(groups)
    order, run_ptr, run_q = groups.label_order, groups.label_runs, groups.run_query
    run_size = np.diff(run_ptr)
    run = np.repeat(np.arange(run_size.size), run_size)  # run of each position
    kept_runs = groups.n_levels[run_q] >= 2
    keep = kept_runs[run]
    mask = np.ones(n, dtype=bool)
    if neg_sample is not None and neg_sample < 1.0:
        bottom = np.r_[True, run_q[1:] != run_q[:-1]][run]  # rows of the lowest layer of their query
        rng = check_random_state(random_state)
        by_run = np.lexsort((rng.random_sample(n), run))  # random order inside each run
        rank = np.empty(n, np.int64)
        rank[by_run] = np.arange(n) - run_ptr[run[by_run]]
        quota = np.ceil(neg_sample * run_size - 1e-12).astype(np.int64)  # >= 1: no run disappears
        sampled_out = bottom & (rank >= quota[run])
        mask[order[sampled_out]] = False
        keep &= ~sampled_out
    lay_size = np.bincount(run[keep], minlength=run_size.size)[kept_runs]
    lay_q = run_q[kept_runs]
    q_start = np.r_[True, lay_q[1:] != lay_q[:-1]] if lay_q.size else np.zeros(0, bool)
    layout = _Layout(rows=order[keep].astype(np.intp),
                     q_ptr=np.r_[np.flatnonzero(q_start), lay_q.size].astype(np.intp),
                     lay_ptr=np.r_[0, np.cumsum(lay_size)].astype(np.intp),
                     row_qk=np.repeat(np.arange(lay_size.size), lay_size).astype(np.intp),
                     qk_q=(np.cumsum(q_start) - 1).astype(np.intp),
                     offset=np.ascontiguousarray(offset[order[keep]], dtype=np.float64))
    return layout, mask


def _gradient_rounding(X, layout, scale):
    """Bound on the rounding error of the computed loss gradient X'c: eps * max_r sum_i |x_ir| * max |c_i|, with
    |c_i| = |dL/dm_i| <= the rows of the largest query (each dominating row adds at most 1). A gradient below it
    is indistinguishable from 0 (measured: the computed gradient of a loss that does not depend on w stays
    50-200 times below it). Returns 0 without the O(nnz) column sums when even the cruder bound with
    n max|x| in place of the column sums lies below ``scale``, the gradient norm at 0 (the usual case)."""
    if layout.q_ptr.shape[0] < 2:
        return 0.0
    q_rows = float(np.max(np.diff(layout.lay_ptr[layout.q_ptr])))
    eps = np.finfo(np.float64).eps
    x_max = max_abs(X) if layout.x_max is None else layout.x_max
    if eps * X.shape[0] * x_max * q_rows < scale:
        return 0.0
    return float(eps * np.max(abs(X).sum(axis=0)) * q_rows)


def _columns(X, rows):
    """The sorted rows of X column by column: (data, indices, indptr, dense) for the kernel.

    Sparse X becomes CSC (CSR is converted once) keeping its index width; dense X becomes Fortran-ordered
    and is read through indices = arange(n), indptr = arange(d + 1) * n.
    """
    if sp.issparse(X):
        Xs = X[rows] if X.format == "csr" else X.tocsr()[rows]
        Xs = sp.csc_matrix(Xs)
        Xs.sort_indices()
        itype = np.promote_types(Xs.indices.dtype, Xs.indptr.dtype)
        return (np.ascontiguousarray(Xs.data), Xs.indices.astype(itype, copy=False),
                Xs.indptr.astype(itype, copy=False), False)
    identity = rows.shape[0] == X.shape[0] and np.array_equal(rows, np.arange(X.shape[0]))
    Xs = np.asfortranarray(X if identity else X[rows])
    n, d = Xs.shape
    return (Xs.ravel(order="F"), np.arange(n, dtype=np.int64), np.arange(d + 1, dtype=np.int64) * n, True)


def _rows_of(X, rows, options=None):
    """The sorted rows X[rows] for the Newton products (_smooth.pyx): (data, indices, indptr, dense).

    Dense X becomes C-ordered (indices and indptr unused). Sparse X becomes CSR, or dense by the shared rule
    (cyrank/_dense.py) with ``options.densify_share`` and ``options.densify_max_bytes``.
    """
    options = options or Options()
    if sp.issparse(X):
        Xr = X.tocsr()[rows]
        if should_densify(Xr, min_share=options.densify_share, max_bytes=options.densify_max_bytes):
            return np.ascontiguousarray(Xr.toarray()).ravel(), np.zeros(1, np.int64), np.zeros(1, np.int64), True
        itype = np.promote_types(Xr.indices.dtype, Xr.indptr.dtype)
        return (np.ascontiguousarray(Xr.data), Xr.indices.astype(itype, copy=False),
                Xr.indptr.astype(itype, copy=False), False)
    return np.ascontiguousarray(X[rows]).ravel(), np.zeros(1, np.int64), np.zeros(1, np.int64), True


class _NewtonState:
    """The log-domain state of _smooth.pyx at one point and the loss gradient X'c there."""

    def __init__(self, layout, d, parallel_min_rows):
        self.smooth = _smooth.State(layout, parallel_min_rows)
        self.xg = np.zeros(d)


class _NewtonProblem(SmoothProblem):
    """L(Xw) + lam2 ||w||_2^2 for cyrank.optim.tron: loss and gradient 2 lam2 w + X'g in one pass of _smooth.pyx,
    Hessian products 2 lam2 v + X'H X v from the state of the last accepted point (SmoothProblem's protocol)."""

    def __init__(self, rows, layout, lam2, d, parallel_min_rows=-1):
        self.rows, self.layout, self.lam2, self.d = rows, layout, lam2, d
        self.parallel_min_rows = parallel_min_rows
        super().__init__()

    def new_state(self):
        return _NewtonState(self.layout, self.d, self.parallel_min_rows)

    def evaluate(self, w, Mw, state):
        loss = _smooth.fun_grad(*self.rows, self.d, state.smooth, w, state.xg)
        return loss + self.lam2 * float(w @ w), state.xg + 2.0 * self.lam2 * w

    def hessian_product(self, state, v, Mv):
        out = np.empty(self.d)
        _smooth.hess_vec(*self.rows, self.d, state.smooth, v, out)
        return out + 2.0 * self.lam2 * v



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
    the bench problems (bench/RESULTS.md, issue 11): on sparse data with 2e4 features OWL-QN is 1.2-7x faster than
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


def _check_data(X, y, qid, offset):
    X, y, qid = check_ranking_data(X, y, qid, accept_sparse=("csc", "csr"), dtype=(np.float64, np.float32))
    x_max = check_feature_scale(X, "DominationRank")
    return X, y, qid, check_row_weights(offset, X.shape[0], name="offset"), x_max


# -------------------------------------------------------------------------------------------------- solve
def solve(X, y, qid=None, offset=None, *, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False,
          group_by_query=True, feature_induction=None, neg_sample=None, solver="auto", hessian_bound="popoviciu",
          max_iter=1000, tol=1e-6, coef0=None, random_state=None, n_jobs=None, verbose=0, options=None):
    """Minimise the domination-loss objective (module docstring) on (X, y) grouped by ``qid``.

    Parameters are those of :class:`cyrank.DominationRank` (same names, same meaning), plus ``coef0``, the
    starting point (default 0), and ``options``, an :class:`Options`. Returns a
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
    X, y, qid, offset, x_max = _check_data(X, y, qid, offset)
    layout, mask = _layout(y, qid, offset, binary=binary, group_by_query=group_by_query, neg_sample=neg_sample,
                           random_state=random_state)
    layout.x_max = x_max
    return _run(X, layout, lam1, lam2, solver, coef0, tol=tol, max_iter=max_iter, feature_induction=feature_induction,
                hessian_bound=hessian_bound, n_jobs=n_jobs, verbose=verbose,
                options=check_options(options, Options, "cyrank.domination.solve"),
                sample_mask=mask if neg_sample is not None else None)


def _run(X, layout, lam1, lam2, solver, coef0, *, tol, max_iter, feature_induction, hessian_bound, n_jobs, verbose,
         options, sample_mask=None):
    """One solve on validated data and its layout: the SolveResult of :func:`solve`."""
    d = X.shape[1]
    w = np.zeros(d)
    if coef0 is not None:
        coef0 = check_y(coef0, name="coef0")  # finite, 1-d, float64
        if coef0.shape != (d,):
            raise ValueError(f"coef0 has shape {coef0.shape}; expected ({d},)")
        w[:] = coef0
    if solver == "auto_l1":
        solver = _auto_l1(X, layout, options)
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


def _result(w, objective, hist_obj, hist_nnz, violation, n_iter, n_inner, converged, stalled=False,
            gap=np.inf, gap_kind=""):
    """The OptimResult of one of the solvers below (x is w, which they update in place)."""
    return OptimResult(x=w, objective=float(objective), n_iter=int(n_iter), converged=bool(converged),
                       optimality=float(violation), optimality_name="kkt_violation", gap=float(gap),
                       gap_kind=gap_kind, n_inner=int(n_inner),
                       history={"objective": list(hist_obj), "n_nonzero": list(hist_nnz)},
                       info={"stalled": bool(stalled and not converged)})


def _chained(first, second):
    """Two solvers run one after the other on the same w: the second's final values, both histories and counts."""
    history = {k: list(first.history[k]) + list(second.history[k]) for k in first.history}
    return OptimResult(x=second.x, objective=second.objective, n_iter=first.n_iter + second.n_iter,
                       converged=second.converged, optimality=second.optimality,
                       optimality_name=second.optimality_name, gap=second.gap, gap_kind=second.gap_kind,
                       n_inner=first.n_inner + second.n_inner, history=history, info=second.info)


def _preconditioner(X, layout, problem, lam2, w, evaluate=True, always=False):
    """The Jacobi diagonal of the smooth problem's Hessian at w (cyrank.optim.certificate.jacobi_preconditioner:
    within-query column scales, calibrated by one product; ``evaluate=False``: the Hessian state is at w); None when
    the columns' scales are close (unless ``always``)."""
    if layout.squares is None:  # once per layout (the chained solvers of "auto" and a path share it)
        layout.squares = group_column_squares(X, layout.lay_ptr[layout.q_ptr], layout.rows)
    return jacobi_preconditioner(problem, layout.squares, 2.0 * lam2, n_rows=layout.rows.shape[0], x=w,
                                 evaluate=evaluate, always=always)


def _certifier(problem, lam1, lam2, tol, precond):
    """certify(w, G, F) -> (gap, gap_kind), the problem's Hessian state being at w (the point of its last
    ``grad``): cyrank.optim.certificate.certify (the bound ||p||^2 / (4 lam2) when it meets tol * max(1, |F|),
    else the Newton decrement by CG preconditioned by ``precond["diagonal"]``, trusted unpreconditioned only once
    ``precond["made"]``: the columns' scales examined, cyrank.optim.certificate.certify's ``trust``)."""

    def certify_at(w, G, F):
        gap, kind, _ = certify(problem.hess_vec, w, G, F, tol, lam1=lam1, strong_convexity=2.0 * lam2,
                               precond=precond["diagonal"], trust=precond["made"])
        return gap, kind

    return certify_at


def _solve_cd(X, layout, w, lam1, lam2, tol, max_iter, feature_induction, hessian_bound, verbose, options):
    """Coordinate descent (_cd.pyx) in place on w."""
    data, indices, indptr, dense = _columns(X, layout.rows)
    beta = _cd.hessian_bounds(data, indices, indptr, dense, layout, HESSIAN_BOUNDS[hessian_bound])
    if lam1 > 0 or lam2 > 0:
        w[beta == 0] = 0.0  # such a feature never changes the loss: the penalty alone sets it to 0
    room = min(max_iter, 64)  # the kernel grows the history as sweeps are made: max_iter never sizes memory
    n_iter, converged, viol, scale, underflow, hist_obj, hist_nnz = _cd.solve(
        data, indices, indptr, dense, layout, w, beta, lam1, lam2, float(tol), max_iter, feature_induction or 0,
        verbose, np.zeros(room), np.zeros(room, dtype=np.intp), 0 if dense else options.power_sum_rows,
        options.anderson)
    if underflow:
        raise FloatingPointError(_cd.UNDERFLOW_MESSAGE)
    loss, pen = _cd.objective(data, indices, indptr, dense, layout, w, lam1, lam2)
    return _result(w, loss + pen, hist_obj, hist_nnz, viol / scale, n_iter, 0, converged)


def _smooth_problem(X, layout, lam2, options):
    """(rows, problem, scale, noise, f0, g0): the sorted rows, the smooth problem (loss + lam2 ||w||^2), scale =
    max_r |dL/dw_r| at w = 0 (the reference of every KKT measure here), the rounding error of the gradient
    (_gradient_rounding), and the objective and gradient at 0. Leaves the problem's Hessian state at w = 0."""
    rows = _rows_of(X, layout.rows, options)
    problem = _NewtonProblem(rows, layout, lam2, X.shape[1], options.parallel_min_rows)
    with one_blas_thread():
        zero = np.zeros(X.shape[1])
        f0 = problem.fun(zero)
        g0 = problem.grad(zero)
        scale = float(np.max(np.abs(g0), initial=0.0))
    return rows, problem, scale, _gradient_rounding(X, layout, scale), f0, g0


def _solve_newton(X, layout, w, lam2, tol, max_iter, verbose, options, smooth=None):
    """Trust-region Newton (cyrank.optim.tron) in place on w.

    TRON stops when ||grad||_2 <= tol * scale, scale = max_r |dL/dw_r| at w = 0, which bounds
    kkt_violation = ||grad||_inf / scale by tol, and the gap (cyrank.optim.certificate) is within
    tol * max(1, |objective|); when the first holds and the second is not certified, TRON continues preconditioned
    by the Jacobi diagonal of the within-query column scales (made then), so a feature on a scale of 1e9 or 1e-3
    costs few more iterations than a standardised one.
    """
    _, problem, scale, noise, _, _ = smooth or _smooth_problem(X, layout, lam2, options)
    nnz = []
    with one_blas_thread():  # the products call BLAS on small blocks, possibly from OpenMP threads
        if scale <= noise:
            # the loss gradient at 0 is rounding noise (e.g. every row the same: the loss does not depend on
            # w): w = 0 is the optimum with an l2 penalty, and any w is one without
            if lam2 > 0:
                w[:] = 0.0
            return _result(w, problem.fun(w), [], [], 0.0, 0, 0, True, gap=0.0, gap_kind="exact")
        res = tron(problem, w, tol=tol, max_iter=max_iter, grad_norm0=scale,
                   callback=lambda x: nnz.append(np.count_nonzero(x)), verbose=verbose, name="DominationRank",
                   precond=lambda x: _preconditioner(X, layout, problem, lam2, x), gap_tol=tol,
                   strong_convexity=2.0 * lam2)
        w[:] = res.x
        objective = problem.fun(w)  # exact float64 objective and gradient at the returned point
        excess = np.maximum(np.abs(problem.grad(w)) - noise, 0.0)  # beyond the gradient's rounding error
        violation = float(np.max(excess, initial=0.0)) / scale
    stalled = not res.converged and res.n_iter < max_iter
    return _result(w, objective, res.history["fun"][1:], nnz, violation, res.n_iter, res.n_inner, res.converged,
                   stalled, res.gap, res.gap_kind)


def _solve_lbfgs(X, layout, w, lam2, tol, max_iter, verbose, options, smooth=None):
    """L-BFGS (Liu & Nocedal 1989) on the smooth objective in place on w: the OWL-QN optimiser of
    cyrank.optim.owlqn with lam1 = 0, which is exactly L-BFGS with its line search (no orthants), on the fused loss
    and gradient of _smooth.fun_grad. It stops as _solve_owlqn does. Written in numpy over the fused kernel, it
    costs less per iteration than scipy's L-BFGS-B (measured: setulb took 2 ms per call, two calls per iteration, on 1e5
    features) and takes about as many evaluations (measured on the benchmark problems: within 15% either way,
    the same iterates on a dense problem)."""
    return _solve_owlqn(X, layout, w, 0.0, lam2, tol, max_iter, verbose, options, smooth)


def _solve_owlqn(X, layout, w, lam1, lam2, tol, max_iter, verbose, options, smooth=None):
    """OWL-QN (cyrank.optim.owlqn: Andrew & Gao 2007) on loss + lam2 ||w||^2 + lam1 ||w||_1 in place on w, with the
    fused loss and gradient of _smooth.fun_grad; it stops when the KKT violation max_r |pseudo-gradient_r| beyond
    the gradient's rounding error is <= tol * scale, the measure of every solver here, and the gap
    (_certifier) is <= tol * max(1, |F|). It runs in the Jacobi-scaled variables when the columns call for it
    (cyrank.optim.certificate.worth_preconditioning). The "inner iterations" reported are its function
    evaluations."""
    _, problem, scale, noise, f0, g0 = smooth or _smooth_problem(X, layout, lam2, options)
    hist_obj, hist_nnz = [], []
    with one_blas_thread():
        if scale <= noise:  # see _solve_newton and _solve_prox_newton
            if lam1 > 0 or lam2 > 0:
                w[:] = 0.0
            return _result(w, problem.fun(w), [], [], 0.0, 0, 0, True, gap=0.0, gap_kind="exact")
        name = "owlqn" if lam1 > 0 else "lbfgs"
        first = not np.any(w)  # _smooth_problem evaluated w = 0 already, and left its Hessian state there
        # the Jacobi diagonal, made only if owlqn asks for it (the KKT rule holds and the gap is not certified)
        precond = {"diagonal": None, "made": False}

        def make_precond(x, evaluate=False):  # (owlqn_penalized brings the Hessian state to x first)
            precond.update(diagonal=_preconditioner(X, layout, problem, lam2, x, evaluate), made=True)
            return precond["diagonal"]

        def record(x, F):
            hist_obj.append(F)
            hist_nnz.append(int(np.count_nonzero(x)))
            if verbose:
                print(f"DominationRank {name} iter {len(hist_obj):4d}: f {F:.12g}  non-zeros {hist_nnz[-1]}")

        # with a ridge the gap is usually certified by strong convexity alone, and the diagonal is made only when
        # it is not; without one (l1) the decrement needs it anyway: made at the start
        lazy = lam2 > 0
        res = owlqn_penalized(problem, Penalty(lam1, lam2), w, tol_abs=tol * scale, max_iter=max_iter, noise=noise,
                              memory=options.owlqn_memory, callback=record,
                              certify=_certifier(problem, lam1, lam2, tol, precond), gap_tol=tol,
                              precond=make_precond if lazy else make_precond(w, evaluate=not first),
                              start=(f0, g0) if first else None)
        w[:] = res.x
    return _result(w, res.objective, hist_obj, hist_nnz, res.optimality / scale, res.n_iter, res.n_fun,
                   res.converged, res.info["stalled"], res.gap, res.gap_kind)


class _GramModel(GramModel):
    """The proximal Newton model on W with its Hessian X_W'HX_W formed by _smooth.gram_hessian (O(rows |W|^2)),
    plus 2 lam2 I and the relative ridge of cyrank.optim.prox_newton.GramModel (floor: the Jacobi diagonal at the
    start, _preconditioner, a curvature that does not vanish where the loss turns piecewise linear at huge margins
    and scales with the feature)."""

    def __init__(self, rows, d, problem, ws, lam2, floor):
        pos = np.full(d, -1, dtype=np.int64)
        pos[ws] = np.arange(ws.size)
        H = np.empty((ws.size, ws.size))
        _smooth.gram_hessian(*rows, d, problem.state.smooth, ws, pos, H)
        super().__init__(H, floor, 2.0 * lam2)


class _ScoreModel:
    """The same model never formed: coordinate descent with the Hessian applied in the scores
    (cyrank/domination/_model_cd.pyx), O(nnz of X_W + layers) per sweep, for working sets too large for
    _GramModel."""

    def __init__(self, layout, columns, problem, ws, lam2, floor):
        self.columns, self.ws = columns, ws
        self.model = _model_cd.Model(layout, problem.state.smooth)
        self.curvature = np.empty(ws.size)
        _model_cd.model_diagonal(*columns, ws, self.model, self.curvature)
        self.diagonal = self.curvature + floor  # as _GramModel's
        self.ridge = 2.0 * lam2 + RIDGE * self.diagonal
        self.no_history = np.empty((0, ws.size))

    def minimise(self, g, w, lam1, damping, tol):
        """(d, inner sweeps): rounds of MODEL_CD_SWEEPS sweeps of CD (which find the signs) and one Newton step
        on the orthant of the signs they found (_orthant_step), until the model's KKT violation is <= tol or
        MODEL_SWEEPS sweeps and products (each costs about a sweep) are spent."""
        step = np.zeros(self.ws.size)
        ridge = self.ridge + damping * self.diagonal
        work = 0
        while work < MODEL_SWEEPS:
            done, viol, _ = _model_cd.solve_model(*self.columns, self.ws, self.model, self.curvature, g, w, lam1,
                                                  ridge, step, tol, min(MODEL_CD_SWEEPS, MODEL_SWEEPS - work),
                                                  self.no_history)
            work += done
            if viol <= tol or work >= MODEL_SWEEPS:
                break
            work += self._orthant_step(g, w, lam1, ridge, step, tol, MODEL_SWEEPS - work)
        return step, work

    def _orthant_step(self, g, w, lam1, ridge, step, tol, budget):
        """In place on step: with A = the non-zero coordinates of z = w + step and theta = sign(z_A), the
        model is the smooth quadratic q(step) + lam1 theta'(z_A) on the orthant; conjugate gradients (products by
        _model_cd.model_product) for its Newton step Delta on A, then step_A += t Delta with t <= 1 the largest
        step that keeps every sign (the coordinate that reaches 0 leaves A: the feature-sign search of Lee, Battle,
        Raina & Ng, NIPS 2006, first sign change only). q decreases: it is convex along the segment and lower at
        Delta (CG lowers the quadratic) than at 0. Returns the number of products."""
        z = w + step
        A = np.flatnonzero(z)
        if A.size == 0:
            return 0
        theta = np.sign(z[A])
        cols = self.ws[A]
        Hs = np.empty(self.ws.size)
        _model_cd.model_product(*self.columns, self.ws, self.model, step, Hs)
        r = -(g[A] + Hs[A] + ridge[A] * step[A] + lam1 * theta)
        stop = max(0.5 * tol, 1e-3 * float(np.max(np.abs(r))))
        delta, p, Hp = np.zeros(A.size), r.copy(), np.empty(A.size)
        rr, products = float(r @ r), 1
        while products < budget and float(np.max(np.abs(r))) > stop:
            _model_cd.model_product(*self.columns, cols, self.model, p, Hp)
            Hp += ridge[A] * p
            products += 1
            pHp = float(p @ Hp)
            if not pHp > 0.0:
                break
            alpha = rr / pHp
            delta += alpha * p
            r -= alpha * Hp
            rr_new = float(r @ r)
            p = r + (rr_new / rr) * p
            rr = rr_new
        # the projected Newton step (coordinates that would change sign stop at 0) when it lowers q; else the
        # step to the first sign change, which always does
        current = self._value(g, w, lam1, ridge, step)
        trial = step.copy()
        trial[A] += delta
        trial[A[np.sign(w[A] + trial[A]) != theta]] = -w[A[np.sign(w[A] + trial[A]) != theta]]
        products += 1
        if self._value(g, w, lam1, ridge, trial) < current:
            step[:] = trial
            return products
        crossing = theta * delta < 0
        t = min(1.0, float(np.min(-z[A][crossing] / delta[crossing], initial=1.0)))
        step[A] += t * delta
        if t < 1.0:  # the first coordinates to reach 0 sit exactly at 0
            hit = crossing & (np.abs(z[A] + t * delta) <= 1e-12 * np.abs(z[A]))
            step[A[hit]] = -w[A[hit]]
        return products

    def _value(self, g, w, lam1, ridge, step):
        """q(step), the model's value (O(nnz of X_W))."""
        return _model_cd.solve_model(*self.columns, self.ws, self.model, self.curvature, g, w, lam1, ridge,
                                     step.copy(), 0.0, 0, self.no_history)[2]


def _inner_model(X, layout, rows, d, problem, ws, lam2, options, nnz, columns, floor):
    """The model of this iteration: formed (_GramModel) while rows |W|^2 <= options.gram_budget nnz, else applied
    in the scores (_ScoreModel; ``columns``, a one-item cache, receives the column copy of X on first use)."""
    if layout.rows.shape[0] * ws.size ** 2 <= options.gram_budget * nnz:
        return _GramModel(rows, d, problem, ws, lam2, floor[ws])
    if not columns:
        columns.append(_columns(X, layout.rows))
    return _ScoreModel(layout, columns[0], problem, ws, lam2, floor[ws])


def _solve_prox_newton(X, layout, w, lam1, lam2, tol, max_iter, feature_induction, verbose, options, smooth=None):
    """Proximal Newton with working sets (module docstring; cyrank.optim.prox_newton) in place on w.

    KKT is measured relative to scale = max_r |dL/dw_r| at 0 (the measure of CD and Newton), beyond the gradient's
    rounding error; the gap is _certifier's (the Newton decrement on the orthant, preconditioned by the Jacobi
    diagonal at the start, which is also each model's floor of curvature). The model on the working set is formed
    (_GramModel) or applied in the scores (_ScoreModel), _inner_model's choice. Returns an OptimResult (_result);
    the "inner iterations" are the sweeps of the inner CD.
    """
    d = X.shape[1]
    rows, problem, scale, noise, _, _ = smooth or _smooth_problem(X, layout, lam2, options)
    nnz = X.shape[0] * d if not sp.issparse(X) else X.nnz
    penalty = Penalty(lam1, lam2)
    with one_blas_thread():
        if scale <= noise:  # the loss does not depend on w (see _solve_newton): w = 0 is an optimum
            w[:] = 0.0
            return _result(w, problem.fun(w), [], [], 0.0, 0, 0, True, gap=0.0, gap_kind="exact")
        f = problem.fun(w) + penalty.l1_value(w)
        G = problem.grad(w)
        columns = []  # the sorted rows column by column, made once when the first large working set needs them
        # the Jacobi diagonal at the start: the certificate's preconditioner, and each model's floor of curvature
        floor = _preconditioner(X, layout, problem, lam2, w, evaluate=False, always=True)  # Hessian state at w
        res = prox_newton(problem, penalty, w, tol=tol, max_iter=max_iter, scale=scale, noise=noise,
                          make_model=lambda ws: _inner_model(X, layout, rows, d, problem, ws, lam2, options, nnz,
                                                             columns, floor),
                          certify=_certifier(problem, lam1, lam2, tol, {"diagonal": floor, "made": True}),
                          feature_induction=feature_induction, verbose=verbose, name="DominationRank prox_newton",
                          f=f, G=G)
    return _result(w, res.objective, res.history["objective"], res.history["n_nonzero"], res.optimality, res.n_iter,
                   res.n_inner, res.converged, res.info["stalled"], res.gap, res.gap_kind)


def objective(X, y, qid=None, offset=None, *, coef, penalty="l2", alpha=1.0, l1_ratio=0.5, binary=False,
              group_by_query=True):
    """The objective (loss + penalty, module docstring) at ``coef`` on (X, y, qid, offset), in float64."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    check_option("binary", binary, (True, False))
    check_option("group_by_query", group_by_query, (True, False))
    X, y, qid, offset, _ = _check_data(X, y, qid, offset)
    layout, _ = _layout(y, qid, offset, binary=binary, group_by_query=group_by_query)
    data, indices, indptr, dense = _columns(X, layout.rows)
    coef = np.ascontiguousarray(coef, dtype=np.float64).ravel()
    if coef.shape != (X.shape[1],):
        raise ValueError(f"coef has shape {coef.shape}; expected ({X.shape[1]},)")
    loss, pen = _cd.objective(data, indices, indptr, dense, layout, coef, lam1, lam2)
    return float(loss + pen)


# ------------------------------------------------------------------------------------------ regularisation path
def path(X, y, qid=None, offset=None, *, alphas=None, n_alphas=20, eps=1e-3, penalty="l1", l1_ratio=0.5,
         binary=False, group_by_query=True, solver="auto", feature_induction=None, max_iter=1000, tol=1e-6,
         n_jobs=None, verbose=0, options=None):
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

    Returns
    -------
    PathResult
        Per alpha: coefficients (sparse columns), objective, KKT violation, iterations, convergence and the
        solver's message (nothing is warned here).
    """
    n_alphas, eps = check_path_params(penalty, n_alphas, eps)
    X, y, qid, offset, x_max = _check_data(X, y, qid, offset)
    layout, _ = _layout(y, qid, offset, binary=binary, group_by_query=group_by_query)
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
