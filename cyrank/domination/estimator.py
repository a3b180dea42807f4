"""DominationRank: linear ranking by coordinate descent on the domination loss (Stevens, "Efficient Coordinate
Descent for Ranking with Domination Loss", MEng thesis, MIT 2010).

With scores f_i = w.x_i and offsets o_i >= 0 (separable margins, section 4), every row i that dominates some
row of its query (D(q, i) = {j in q: y_j < y_i} non-empty) contributes

    l_i = log(1 + sum_{j in D(q, i)} exp((f_j - o_j) - (f_i - o_i)))

and the objective is sum_i l_i + alpha * ||w||_1 ("l1"), + alpha * ||w||_2^2 ("l2", not halved, section 5), or
+ alpha * (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2) ("elasticnet"). Every label level of a query is a
layer (section 3); ``binary=True`` keeps two layers, y > 0 and y <= 0.
"""
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._base import LinearRankerMixin
from .._queries import QueryGroups
from .._threads import one_blas_thread, openmp_threads
from .._validation import (check_feature_scale, check_n_jobs, check_option, check_param, check_random_state,
                           check_ranking_data, check_row_weights, check_verbose, max_abs, warn_if_no_pairs)
from ..io import register_model
from ..optim.smooth import SmoothProblem
from ..optim.tron import tron
from . import _cd, _smooth

PENALTIES = ("l2", "l1", "elasticnet")
SOLVERS = ("auto", "cd", "newton")
# With sparse X, dominating layers of at least this many rows keep power sums (see _cd.pyx) so that an
# update costs the column's entries, not the rows of the layers it touches. Dense X touches every row anyway.
POWER_SUM_ROWS = 8
# Anderson extrapolation of the sweeps (kept only when it lowers the objective); off only for benchmarks.
ANDERSON = True
HESSIAN_BOUNDS = {"popoviciu": _cd.HESSIAN_POPOVICIU, "max_sq": _cd.HESSIAN_MAX_SQ}
# Newton products: sparse X this dense (and this small as a dense array) is densified (see _rows_of).
DENSIFY_SHARE = 0.2
DENSIFY_MAX_BYTES = 512 << 20


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
    if eps * X.shape[0] * max_abs(X) * q_rows < scale:
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


def _rows_of(X, rows):
    """The sorted rows X[rows] for the Newton products (_smooth.pyx): (data, indices, indptr, dense).

    Dense X becomes C-ordered (indices and indptr unused). Sparse X becomes CSR, or dense when at least
    DENSIFY_SHARE of its entries are stored and the dense copy fits in DENSIFY_MAX_BYTES: a dense float64
    block product (BLAS) costs about a tenth of a sparse one per entry (measured on the LightGBM data).
    """
    n, d = rows.shape[0], X.shape[1]
    if sp.issparse(X):
        Xr = X.tocsr()[rows]
        if Xr.nnz >= DENSIFY_SHARE * n * d and n * d * Xr.dtype.itemsize <= DENSIFY_MAX_BYTES:
            return np.ascontiguousarray(Xr.toarray()).ravel(), np.zeros(1, np.int64), np.zeros(1, np.int64), True
        itype = np.promote_types(Xr.indices.dtype, Xr.indptr.dtype)
        return (np.ascontiguousarray(Xr.data), Xr.indices.astype(itype, copy=False),
                Xr.indptr.astype(itype, copy=False), False)
    return np.ascontiguousarray(X[rows]).ravel(), np.zeros(1, np.int64), np.zeros(1, np.int64), True


class _NewtonState:
    """The log-domain state of _smooth.pyx at one point and the loss gradient X'c there."""

    def __init__(self, layout, d):
        self.smooth = _smooth.State(layout)
        self.xg = np.zeros(d)


class _NewtonProblem(SmoothProblem):
    """L(Xw) + lam2 ||w||_2^2 for cyrank.optim.tron: loss and gradient 2 lam2 w + X'g in one pass of _smooth.pyx,
    Hessian products 2 lam2 v + X'H X v from the state of the last accepted point (SmoothProblem's protocol)."""

    def __init__(self, rows, layout, lam2, d):
        self.rows, self.layout, self.lam2, self.d = rows, layout, lam2, d
        super().__init__()

    def new_state(self):
        return _NewtonState(self.layout, self.d)

    def evaluate(self, w, Mw, state):
        loss = _smooth.fun_grad(*self.rows, self.d, state.smooth, w, state.xg)
        return loss + self.lam2 * float(w @ w), state.xg + 2.0 * self.lam2 * w

    def hessian_product(self, state, v, Mv):
        out = np.empty(self.d)
        _smooth.hess_vec(*self.rows, self.d, state.smooth, v, out)
        return out + 2.0 * self.lam2 * v


@register_model
class DominationRank(LinearRankerMixin, BaseEstimator):
    """Linear ranker minimising the domination loss by coordinate descent (Stevens, MIT thesis 2010), or, for the
    smooth l2 penalty, by trust-region Newton.

    Objective, with f = X w and offsets o >= 0::

        sum_q sum_{i: D(q,i) != {}} log(1 + sum_{j in D(q,i)} exp((f_j - o_j) - (f_i - o_i))) + penalty(w)

    penalty: alpha ||w||_1 ("l1"), alpha ||w||_2^2 ("l2", not halved) or
    alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2) ("elasticnet"). D(q, i) are the rows of query q
    with a lower label than row i; every label level is a layer (section 3).

    Each coordinate step minimises a quadratic upper bound of the loss plus the exact penalty (sections 2-5),
    so the objective never increases. The bound's curvature is ``hessian_bound``: "popoviciu" (default;
    sum over dominating rows i of (max - min)^2 / 4 of the feature over D(q, i) + {i}) or "max_sq" (the
    thesis: sum_q m_q max_{j in q} x_j^2).

    With the l2 penalty the objective is smooth and ``solver="newton"`` (the default there) minimises it by
    trust-region Newton-CG (cyrank.optim.tron) with exact gradients and Hessian-vector products in
    O(nnz + rows) each (cyrank/domination/_smooth.pyx).

    Parameters
    ----------
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float >= 0, default=1.0
        Penalty weight; the loss is a sum over rows, not a mean.
    l1_ratio : float in [0, 1], default=0.5
        Share of the l1 term for "elasticnet".
    binary : bool, default=False
        Collapse labels to y > 0 versus y <= 0 (two layers).
    group_by_query : bool, default=True
        False: every row in one query (the thesis's LETOR setting, section 8.1.2); ``qid`` is then ignored.
    feature_induction : int >= 1 or None, default=None
        Features added per round of feature induction (alpha of Alg. 7): the inactive features whose single
        bound-minimising step guarantees the largest objective decrease are added, the active set is trained to
        convergence, and this repeats until no inactive feature violates the optimality conditions.
    neg_sample : float in (0, 1] or None, default=None
        Keep ceil(neg_sample * n_0) of the n_0 lowest-layer rows of every query (the "Sampled" variant,
        section 8.2), chosen with ``random_state``. The objective minimised and reported is then the objective
        above on the kept rows (``sample_mask_``).
    solver : {"auto", "cd", "newton"}, default="auto"
        "cd": coordinate descent (every penalty). "newton": trust-region Newton-CG, for a smooth objective only
        (penalty "l2", or "elasticnet" with l1_ratio = 0; no feature induction). "auto": "newton" when it
        applies, otherwise "cd". "cd" keeps per-query shifted exponentials and raises FloatingPointError when
        the margins inside one query span more than about 640; "newton" works in the log domain, no limit.
    hessian_bound : {"popoviciu", "max_sq"}, default="popoviciu"
        Curvature of the coordinate steps (solver "cd" only).
    max_iter : int >= 1, default=1000
        Maximum number of sweeps (epochs) over the active features ("cd") or of Newton iterations ("newton").
    tol : float > 0, default=1e-6
        Stop when ``kkt_violation_`` <= tol.
    warm_start : bool, default=False
        Start from the previous ``coef_``.
    random_state : int, RandomState or None, default=None
        Used by ``neg_sample`` only (the sweeps are cyclic and deterministic).
    n_jobs : int >= 1, -1 or None, default=None
        OpenMP threads of the Newton products (None: OMP_NUM_THREADS, else every core; -1: every core). The
        result is the same, bit for bit, for every thread count.
    verbose : int, default=0
        Print the objective after each sweep.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    solver_ : str
        The solver used, "cd" or "newton".
    n_iter_ : int
        Sweeps over the active features ("cd") or Newton iterations ("newton").
    n_cg_iter_ : int
        Conjugate-gradient steps (Hessian-vector products) of all Newton iterations; 0 for "cd".
    objective_ : float
        Final objective, recomputed from ``coef_`` in float64.
    history_ : dict
        "objective" and "n_nonzero" after each sweep or accepted Newton step.
    kkt_violation_ : float
        max_r dist(-dL/dw_r, subdifferential of the penalty at w_r), divided by max_r |dL/dw_r| at w = 0.
    converged_ : bool
        ``kkt_violation_ <= tol``.
    sample_mask_ : ndarray of bool or None
        Rows kept by ``neg_sample`` (None without sampling).
    n_features_in_ : int
    """

    # what a model file may hold (checked by cyrank.io.load_model; the spec language is documented there)
    _model_schema = {
        "n_features_in_": "int>=1", "coef_": "float[d]", "objective_": "float", "kkt_violation_": "float>=0",
        "n_iter_": "int>=0", "n_cg_iter_": "int>=0", "converged_": "bool", "solver_": "str", "history_": "dict",
        "sample_mask_": "bool[*]|None",
    }

    def __init__(self, penalty="l2", alpha=1.0, l1_ratio=0.5, *, binary=False, group_by_query=True,
                 feature_induction=None, neg_sample=None, solver="auto", hessian_bound="popoviciu", max_iter=1000,
                 tol=1e-6, warm_start=False, random_state=None, n_jobs=None, verbose=0):
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.binary = binary
        self.group_by_query = group_by_query
        self.feature_induction = feature_induction
        self.neg_sample = neg_sample
        self.solver = solver
        self.hessian_bound = hessian_bound
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- parameters ------------------------------------------------------------------------------------
    def _penalty_weights(self):
        """(lam1, lam2) of lam1 ||w||_1 + lam2 ||w||_2^2."""
        check_option("penalty", self.penalty, PENALTIES)
        alpha = check_param("alpha", self.alpha, low=0.0)
        if self.penalty == "l1":
            return alpha, 0.0
        if self.penalty == "l2":
            return 0.0, alpha
        rho = check_param("l1_ratio", self.l1_ratio, low=0.0, high=1.0)
        return alpha * rho, alpha * (1.0 - rho)

    def _check_params(self):
        lam = self._penalty_weights()
        check_option("binary", self.binary, (True, False))
        check_option("group_by_query", self.group_by_query, (True, False))
        check_option("hessian_bound", self.hessian_bound, tuple(HESSIAN_BOUNDS))
        check_param("feature_induction", self.feature_induction, low=1, integer=True, none_ok=True)
        check_param("neg_sample", self.neg_sample, low=0.0, high=1.0, low_open=True, none_ok=True)
        check_param("max_iter", self.max_iter, low=1, integer=True)
        check_param("tol", self.tol, low=0.0, low_open=True)
        check_verbose(self.verbose)
        check_random_state(self.random_state)
        check_n_jobs(self.n_jobs)
        return lam

    def _solver(self, lam1):
        """The solver to run: "newton" needs a smooth objective (lam1 = 0) and no feature induction."""
        check_option("solver", self.solver, SOLVERS)
        smooth = lam1 == 0 and self.feature_induction is None
        if self.solver == "newton" and not smooth:
            raise ValueError("solver='newton' needs a smooth objective (penalty='l2', or 'elasticnet' with "
                             "l1_ratio=0) and feature_induction=None; use solver='cd'")
        return "newton" if self.solver == "newton" or (self.solver == "auto" and smooth) else "cd"

    def _problem(self, X, y, qid, offset, *, sample):
        X, y, qid = check_ranking_data(X, y, qid, accept_sparse=("csc", "csr"), dtype=(np.float64, np.float32))
        check_feature_scale(X, "DominationRank")
        offset = check_row_weights(offset, X.shape[0], name="offset")
        layout, mask = _layout(y, qid, offset, binary=self.binary, group_by_query=self.group_by_query,
                               neg_sample=self.neg_sample if sample else None, random_state=self.random_state)
        return X, layout, mask

    # -- fit -----------------------------------------------------------------------------------------------
    def fit(self, X, y, qid=None, offset=None):
        """Minimise the objective on (X, y) grouped by ``qid``; ``offset`` (>= 0) are per-row margins o_i."""
        lam1, lam2 = self._check_params()
        solver = self._solver(lam1)
        X, layout, mask = self._problem(X, y, qid, offset, sample=True)
        d = X.shape[1]
        w = np.zeros(d)
        if self.warm_start and hasattr(self, "coef_") and self.coef_.shape == (d,):
            w[:] = self.coef_
        fit_solver = self._fit_newton if solver == "newton" else self._fit_cd
        with openmp_threads(check_n_jobs(self.n_jobs)):
            objective, hist_obj, hist_nnz, violation = fit_solver(X, layout, w, lam1, lam2)
        self.coef_ = w
        self.solver_ = solver
        self.objective_ = float(objective)
        self.history_ = {"objective": np.asarray(hist_obj, dtype=np.float64),
                         "n_nonzero": np.asarray(hist_nnz, dtype=np.int64)}
        self.kkt_violation_ = float(violation)
        self.sample_mask_ = mask if self.neg_sample is not None else None
        self.n_features_in_ = d
        return self

    def _fit_cd(self, X, layout, w, lam1, lam2):
        """Coordinate descent (_cd.pyx) in place on w; sets n_iter_, n_cg_iter_ = 0 and converged_."""
        data, indices, indptr, dense = _columns(X, layout.rows)
        beta = _cd.hessian_bounds(data, indices, indptr, dense, layout, HESSIAN_BOUNDS[self.hessian_bound])
        if lam1 > 0 or lam2 > 0:
            w[beta == 0] = 0.0  # such a feature never changes the loss: the penalty alone sets it to 0
        hist_obj = np.zeros(self.max_iter)
        hist_nnz = np.zeros(self.max_iter, dtype=np.intp)
        n_iter, converged, viol, scale, underflow = _cd.solve(
            data, indices, indptr, dense, layout, w, beta, lam1, lam2, float(self.tol), self.max_iter,
            self.feature_induction or 0, self.verbose, hist_obj, hist_nnz, 0 if dense else POWER_SUM_ROWS,
            ANDERSON)
        if underflow:
            raise FloatingPointError(_cd.UNDERFLOW_MESSAGE)
        loss, pen = _cd.objective(data, indices, indptr, dense, layout, w, lam1, lam2)
        self.n_iter_, self.n_cg_iter_, self.converged_ = int(n_iter), 0, bool(converged)
        if not converged:
            warnings.warn(
                f"DominationRank stopped after max_iter={self.max_iter} sweeps with KKT violation "
                f"{viol / scale:.3g} > tol={self.tol:g}; increase max_iter or tol",
                ConvergenceWarning, stacklevel=3)
        return loss + pen, hist_obj[:n_iter], hist_nnz[:n_iter], viol / scale

    def _fit_newton(self, X, layout, w, lam1, lam2):
        """Trust-region Newton (cyrank.optim.tron) in place on w; sets n_iter_, n_cg_iter_ and converged_.

        TRON stops when ||grad||_2 <= tol * scale, scale = max_r |dL/dw_r| at w = 0, which bounds
        kkt_violation_ = ||grad||_inf / scale by tol (TRON itself warns when it stops short).
        """
        d = X.shape[1]
        problem = _NewtonProblem(_rows_of(X, layout.rows), layout, lam2, d)
        nnz = []
        with one_blas_thread():  # the products call BLAS on small blocks, possibly from OpenMP threads
            zero = np.zeros(d)
            problem.fun(zero)
            scale = float(np.max(np.abs(problem.grad(zero)), initial=0.0))
            noise = _gradient_rounding(X, layout, scale)
            if scale <= noise:
                # the loss gradient at 0 is rounding noise (e.g. every row the same: the loss does not depend on
                # w): w = 0 is the optimum with an l2 penalty, and any w is one without
                if lam2 > 0:
                    w[:] = 0.0
                objective = problem.fun(w)
                self.n_iter_, self.n_cg_iter_, self.converged_ = 0, 0, True
                return objective, [], [], 0.0
            res = tron(problem, w, tol=float(self.tol), max_iter=self.max_iter, grad_norm0=scale,
                       callback=lambda x: nnz.append(np.count_nonzero(x)), verbose=self.verbose,
                       name="DominationRank")
            w[:] = res.x
            objective = problem.fun(w)  # exact float64 objective and gradient at the returned point
            excess = np.maximum(np.abs(problem.grad(w)) - noise, 0.0)  # beyond the gradient's rounding error
            violation = float(np.max(excess, initial=0.0)) / scale
        self.n_iter_, self.n_cg_iter_, self.converged_ = int(res.n_iter), int(res.n_cg), bool(res.converged)
        return objective, res.history["fun"][1:], nnz, violation

    # -- prediction: decision_function = X @ coef_, predict = scores, score = mean NDCG@10 (LinearRankerMixin)
    def objective(self, X, y, qid=None, offset=None, coef=None):
        """The objective (loss + penalty) at ``coef`` (default ``coef_``) on (X, y, qid, offset), in float64.

        Uses this estimator's penalty, alpha, l1_ratio, binary and group_by_query; no negative sampling.
        """
        lam1, lam2 = self._check_params()
        if coef is None:
            check_is_fitted(self, "coef_")
            coef = self.coef_
        X, layout, _ = self._problem(X, y, qid, offset, sample=False)
        data, indices, indptr, dense = _columns(X, layout.rows)
        coef = np.ascontiguousarray(coef, dtype=np.float64).ravel()
        if coef.shape != (X.shape[1],):
            raise ValueError(f"coef has shape {coef.shape}; expected ({X.shape[1]},)")
        loss, pen = _cd.objective(data, indices, indptr, dense, layout, coef, lam1, lam2)
        return float(loss + pen)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags
