"""RankSVM's functional layer: validated arrays in; coefficients, objective, optimality measure and n_iter out
(no scikit-learn import; the estimator in estimator.py is a thin wrapper).

Objective (Kuo, Lee & Lin, "Large-scale Kernel RankSVM", SDM 2014), with preference pairs
P = {(i, j): qid_i = qid_j, y_i > y_j} and loss(t) = max(0, t)^2 ("squared_hinge") or max(0, t) ("hinge"):

    linear   min_w     w'w / 2      + C sum_{(i,j) in P} loss(1 - w'(x_i - x_j))                     (3.11)
    kernel   min_beta  beta'Q beta / 2 + C sum_{(i,j) in P} loss(1 - (Q beta)_i + (Q beta)_j)        (3.12)-(3.13)

with Q = K(X, X) and predictions f(x) = sum_m beta_m K(x, x_m). The pair sums are never enumerated: the loss,
gradient and Hessian-vector products come from order-statistic sums per query in O(l log l)
(_ostree.pyx, Appendix B).

* squared hinge: trust-region Newton-CG (cyrank.optim.tron, section 4.1), stopping at
  ||grad|| <= tol * ||grad at 0|| (LIBLINEAR's rule); ``grad_norm`` is that ratio at the end.
* hinge: the 1-slack cutting-plane method (Joachims 2006; section 2.2, (2.8)) of cyrank.optim.cutting_plane,
  with its constraints scaled by 1/|P|:  xi' >= (1/|P|) sum_P c_ij - <w, (1/|P|) sum_P c_ij (x_i - x_j)>  and
  C' = C |P|, which is the same problem. It stops when the most violated constraint exceeds the working set's
  slack by at most ``tol`` (in units of the mean hinge loss per pair), so the objective is within
  tol * C |P| = tol * objective(0) of the optimum. ``duality_gap`` is the objective minus the dual value of the
  last restricted problem, a certified bound on the distance to the optimum.

The pieces live beside this module: problems.py (the query layout and the squared-hinge problems for TRON),
kernels.py (kernel matrices, stored or block-wise within the memory budget), hinge.py (the 1-slack adapters).
"""
import contextlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._dense import should_densify
from .._result import SolveResult
from .._threads import one_blas_thread, openmp_threads
from .._validation import check_options
from .._validation import (check_feature_scale, check_n_jobs, check_option, check_param, check_ranking_data,
                           check_verbose, feature_scale_spread, max_abs)
from ..optim.tron import tron
from . import _pairloss
from ..optim.certificate import group_column_squares, jacobi_preconditioner
from ..optim.cutting_plane import cutting_plane_history
from .hinge import KernelHinge, LinearHinge, one_slack
from .kernels import _MB, StoredKernel, check_symmetric, kernel_operator
from .problems import KernelSquaredHinge, LinearSquaredHinge, make_layout

LOSSES = ("squared_hinge", "hinge")
KERNELS = ("linear", "rbf", "poly", "precomputed")


@dataclass(frozen=True)
class Options:
    """Tuning of the solvers: the defaults are the measured best (bench/HISTORY.md); the optimum reached does not
    depend on them.

    Attributes
    ----------
    small_kernel_rows : int, default=5000
        Below this many training rows, products with Q use one BLAS thread (they are memory bound: extra threads
        only add synchronisation, and hurt when other jobs share the cores).
    parallel_min_rows : int, default=-1
        Pair sums over fewer document positions run on one thread (-1: the shared default).
    max_product_seconds : float, default=60.0
        A blocked kernel product estimated slower than this is refused before the fit ...
    warn_product_seconds : float, default=1.0
        ... and one slower than this is announced with a warning.
    stabilization : float, default=0.95
        Hinge loss, linear models: in-out weight of the cutting-plane engine (cyrank.optim.cutting_plane):
        separations at a w_best + (1 - a) w_restricted, stop on the certified gap. 0 is Kelley's plain method,
        which kernel models always use. Measured on 1e4
        documents and 3.3e5 pairs (bench/HISTORY.md): 41 separations instead of 969 at C = 0.1, 61 instead of more
        than 5,000 at C = 1.
    """

    small_kernel_rows: int = 5000
    parallel_min_rows: int = -1
    max_product_seconds: float = 60.0
    warn_product_seconds: float = 1.0
    stabilization: float = 0.95


def check_gamma(gamma):
    """``gamma`` as given when it is "scale", "auto" or a float > 0; a ValueError otherwise."""
    if isinstance(gamma, str):
        if gamma not in ("scale", "auto"):
            raise ValueError(f"gamma must be 'scale', 'auto' or a float > 0; got {gamma!r}")
        return gamma
    return check_param("gamma", gamma, low=0.0, low_open=True)


def resolve_gamma(gamma, X):
    """The gamma of rbf/poly: "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features (as scikit-learn)."""
    if not isinstance(gamma, str):
        return float(gamma)
    d = X.shape[1]
    if gamma == "auto":
        return 1.0 / d
    if sp.issparse(X):
        mean = X.sum() / (X.shape[0] * d)
        var = float(X.multiply(X).sum() / (X.shape[0] * d) - mean * mean)
    else:
        var = float(np.var(X))
    return 1.0 / (d * var) if var > 0 else 1.0


def check_params(C, loss, kernel, gamma, degree, coef0, tol, max_iter, kernel_memory_mb, n_jobs, verbose):
    """Every parameter of :func:`solve` checked (a ValueError naming the first bad one)."""
    check_param("C", C, low=0.0, low_open=True)
    check_option("loss", loss, LOSSES)
    check_option("kernel", kernel, KERNELS)
    check_gamma(gamma)
    check_param("degree", degree, low=1, integer=True)
    check_param("coef0", coef0)
    check_param("tol", tol, low=0.0, low_open=True)
    check_param("max_iter", max_iter, low=1, integer=True)
    check_param("kernel_memory_mb", kernel_memory_mb, low=0.0, low_open=True)
    check_verbose(verbose)
    return check_n_jobs(n_jobs)


def solve(X, y, qid=None, *, C=1.0, loss="squared_hinge", kernel="linear", gamma="scale", degree=3, coef0=1.0,
          tol=1e-3, max_iter=1000, kernel_memory_mb=1024, n_jobs=None, verbose=0, options=None, coef_init=None):
    """Minimise the rankSVM objective (module docstring) on (X, y) grouped by ``qid`` (None: one query).

    Parameters are those of :class:`cyrank.RankSVM` (same names, same meaning), plus ``options``, an
    :class:`Options`, and ``coef_init``, the starting coefficients of a linear model (default 0; a warm start: the
    stopping rule still measures the gradient against the one at 0).
    Returns a :class:`cyrank._result.SolveResult` with ``objective``, ``n_iter``, ``converged``,
    ``n_pairs``, ``n_active_pairs``, ``n_features_in``; ``grad_norm`` and ``n_cg_iter`` (squared hinge; the
    optimality measure is ``grad_norm``) or ``duality_gap`` (hinge, the optimality measure); ``coef`` (linear) or
    ``beta``, ``support``, ``n_kernel_products`` and, for rbf/poly, ``support_vectors`` and ``gamma``. When the
    solver stops on ``max_iter``, ``converged`` is False and ``message`` says so (no warning is issued here).
    """
    n_jobs = check_params(C, loss, kernel, gamma, degree, coef0, tol, max_iter, kernel_memory_mb, n_jobs, verbose)
    options = check_options(options, Options, "cyrank.ranksvm.solve")
    precomputed = kernel == "precomputed"
    X, y, qid = check_ranking_data(X, y, qid, accept_sparse=False if precomputed else ("csr", "csc"))
    check_feature_scale(X, "RankSVM")
    if precomputed and X.shape[0] != X.shape[1]:
        raise ValueError(f"kernel='precomputed' needs the square training kernel matrix; got shape {X.shape}")
    start = coef_init
    if start is not None:
        if kernel != "linear":
            raise ValueError("coef_init (a warm start) is for linear models only")
        start = np.array(start, dtype=np.float64)
        if start.shape != (X.shape[1],) or not np.all(np.isfinite(start)):
            raise ValueError(f"coef_init must be a finite array of shape ({X.shape[1]},); got shape {start.shape}")
    fit = _Fit(C=float(C), loss=loss, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, tol=float(tol),
               max_iter=int(max_iter), kernel_memory_mb=float(kernel_memory_mb), verbose=check_verbose(verbose),
               options=options, start=start)
    with openmp_threads(n_jobs):  # the layout fixes the kernels' thread count
        layout, n_pairs = make_layout(y, qid, options.parallel_min_rows)
        if n_pairs == 0:
            values, solver_out = fit.without_pairs(X), None
        elif kernel == "linear":
            values, solver_out = fit.linear(X, layout, n_pairs)
        else:
            values, solver_out = fit.kernel_model(X, layout, n_pairs)
    if not np.isfinite(values["objective"]):
        raise ValueError(f"RankSVM: the objective overflowed float64 (features up to |x| = {max_abs(X):.3g}, "
                         f"C={C:g}); scale X (e.g. sklearn.preprocessing.StandardScaler) or lower C")
    values.update(n_features_in=X.shape[1], n_pairs=int(n_pairs))
    if solver_out is None:                       # no pair: the zero model is exact
        values.update(n_iter=0, converged=True, gap=0.0, gap_kind="exact")
        message = ""
    elif loss == "squared_hinge":
        values.update(n_iter=int(solver_out.n_iter), n_cg_iter=int(solver_out.n_inner),
                      grad_norm=float(solver_out.optimality), converged=bool(solver_out.converged),
                      gap=float(solver_out.gap), gap_kind=solver_out.gap_kind)
        message = solver_out.message
    else:
        # the count max_iter bounds: separations (in-out) or cutting planes added (Kelley: one more separation)
        stabilized = kernel == "linear" and options.stabilization > 0
        values.update(n_iter=int(solver_out.info["n_separations"] if stabilized else solver_out.n_iter),
                      converged=bool(solver_out.converged), gap=float(values["duality_gap"]),
                      gap_kind="duality gap")
        message = f"RankSVM (hinge): {solver_out.message}" if solver_out.message else ""
        if message and kernel == "linear" and feature_scale_spread(X) > 1e6:
            message += (f". The features' scales span a factor {feature_scale_spread(X):.2g}: the dual of the cutting"
                        " plane sums their products in one float64 Gram matrix, where the small ones are lost, so its"
                        " gap may never close; standardise X (sklearn.preprocessing.StandardScaler) or use "
                        "loss='squared_hinge', whose solver is preconditioned")
    return SolveResult(optimality_name="grad_norm" if loss == "squared_hinge" else "duality_gap",
                       message=message, **values)


@dataclass
class _Fit:
    """The parameters of one fit, and its three cases: no pair, linear, kernel."""

    C: float
    loss: str
    kernel: str
    gamma: object
    degree: int
    coef0: float
    tol: float
    max_iter: int
    kernel_memory_mb: float
    verbose: int
    options: Options
    start: object = None

    def without_pairs(self, X):
        """No preference pair (warned by make_layout): the objective is the regulariser alone, minimised exactly
        by the zero model (every score 0)."""
        d = X.shape[1]
        values = {"objective": 0.0, "n_active_pairs": 0}
        if self.kernel == "linear":
            values["coef"] = np.zeros(d)
        else:
            values.update(beta=np.zeros(0), support=np.zeros(0, dtype=np.int64), n_kernel_products=0)
            if self.kernel != "precomputed":
                values.update(support_vectors=np.zeros((0, d)), gamma=resolve_gamma(self.gamma, X))
        if self.loss == "hinge":
            values["duality_gap"] = 0.0
        else:
            values.update(grad_norm=0.0, n_cg_iter=0)
        return values

    def linear(self, X, layout, n_pairs):
        obj = LinearSquaredHinge(X, layout, self.C)
        zero = np.zeros(X.shape[1])
        if self.loss == "squared_hinge":
            # a warm start keeps LIBLINEAR's rule ||grad|| <= tol ||grad at 0||, so tol means what it does cold
            g0 = None if self.start is None else float(np.linalg.norm(obj.grad(zero)))

            def precond(x):  # asked by TRON only when a feature's scale fools the gradient rule
                return jacobi_preconditioner(obj, group_column_squares(X, layout.offsets, layout.rows), 1.0,
                                             n_rows=layout.rows.shape[0], x=x)
            res = tron(obj, zero if self.start is None else self.start, tol=self.tol, max_iter=self.max_iter,
                       grad_norm0=g0, verbose=self.verbose, name="RankSVM (TRON)", precond=precond,
                       gap_tol=self.tol, strong_convexity=1.0)
            # TRON's last gradient was taken at res.x, with res.objective computed there by the same pass
            return {"coef": res.x, "objective": float(res.objective), "n_active_pairs": int(obj.state.n_active)}, res
        res = one_slack(LinearHinge(obj.parts, layout), self.C, n_pairs, self.tol, self.max_iter, self.verbose,
                        w0=self.start, stabilize=self.options.stabilization)
        w = res.x
        loss, n_active = obj.loss(w, squared=False)
        objective = 0.5 * float(w @ w) + self.C * loss
        return {"coef": w, "objective": objective, "n_active_pairs": int(n_active),
                "duality_gap": objective - res.info["lower_bound"], "history": cutting_plane_history(res)}, res

    def kernel_model(self, X, layout, n_pairs):
        rows = layout.rows
        n = rows.shape[0]
        klay = _pairloss.Layout(np.arange(n), layout.offsets, layout.rank, layout.n_levels, n,
                                self.options.parallel_min_rows)
        values = {}
        if self.kernel == "precomputed":
            check_symmetric(X)
            Q = X if np.array_equal(rows, np.arange(X.shape[0])) else X[np.ix_(rows, rows)]
            Qop = StoredKernel(np.ascontiguousarray(Q, dtype=np.float64))
            Xk = None
        else:
            Xk = X[rows]
            Xk = Xk.astype(np.float64) if Xk.dtype != np.float64 else Xk
            if sp.issparse(Xk):
                # dense BLAS always wins for the Gram blocks, but the dense copy counts against
                # kernel_memory_mb: densify only within half of it (Q gets what the rows leave)
                dense = should_densify(Xk, min_share=0.0, max_bytes=0.5 * self.kernel_memory_mb * _MB)
                Xk = Xk.toarray() if dense else sp.csr_matrix(Xk)
            values["gamma"] = gamma = resolve_gamma(self.gamma, X)
            rows_mb = (Xk.nbytes if not sp.issparse(Xk) else
                       Xk.data.nbytes + Xk.indices.nbytes + Xk.indptr.nbytes) / _MB
            Qop = kernel_operator(Xk, self.kernel, gamma, self.degree, self.coef0,
                                  self.kernel_memory_mb - rows_mb, self.verbose,
                                  max_seconds=self.options.max_product_seconds,
                                  warn_seconds=self.options.warn_product_seconds)
        obj = KernelSquaredHinge(Qop, klay, self.C)
        small = n < self.options.small_kernel_rows
        with one_blas_thread() if small else contextlib.nullcontext():
            if self.loss == "squared_hinge":
                res = tron(obj, np.zeros(n), tol=self.tol, max_iter=self.max_iter, verbose=self.verbose,
                           name="RankSVM (TRON)", gap_tol=self.tol, strong_convexity=1.0)
                beta = res.x
            else:
                model = KernelHinge(Qop, klay)
                # Kelley's method: the kernel iterate is carried by its training scores, and its regulariser
                # needs the coefficients of the last restricted solution (KernelHinge), which in-out points lack
                res = one_slack(model, self.C, n_pairs, self.tol, self.max_iter, self.verbose)
                beta = model.beta
            loss, n_active = obj.loss(beta, squared=self.loss == "squared_hinge")
            scores = Qop.matvec(beta)
        objective = 0.5 * float(beta @ scores) + self.C * loss
        values.update(objective=objective, n_active_pairs=int(n_active))
        if self.loss == "hinge":
            values.update(duality_gap=objective - res.info["lower_bound"], history=cutting_plane_history(res))
        keep = np.flatnonzero(beta != 0.0)
        values.update(support=rows[keep], beta=beta[keep], n_kernel_products=int(Qop.n_matvec))
        if Xk is not None:
            sv = Xk[keep]
            values["support_vectors"] = sp.csr_matrix(sv) if sp.issparse(sv) else np.ascontiguousarray(sv)
        return values, res
