"""RankSVM's functional layer: validated arrays in; coefficients, objective, optimality measure and n_iter out
(no scikit-learn import; the estimator in estimator.py is a thin wrapper).

Objective (Kuo, Lee & Lin, "Large-scale Kernel RankSVM", SDM 2014), with preference pairs
P = {(i, j): qid_i = qid_j, y_i > y_j} and loss(t) = max(0, t)^2 ("squared_hinge") or max(0, t) ("hinge"):

    linear   min_w     R(w)            + C sum_{(i,j) in P} w_i loss(1 - w'(x_i - x_j))                  (3.11)
    kernel   min_beta  beta'Q beta / 2 + C sum_{(i,j) in P} w_i loss(1 - (Q beta)_i + (Q beta)_j)        (3.12)-(3.13)

with Q = K(X, X) and predictions f(x) = sum_m beta_m K(x, x_m). The row weights w_i (``sample_weight``, default
1) weigh each pair by its preferred row, the inverse-propensity convention of Joachims, Swaminathan & Schnabel
(WSDM 2017): a weight constant within a query weighs the query, and an integer weight on a row that is never the
less preferred of a pair (e.g. a clicked row with binary labels) equals repeating it; weight 0 removes exactly
the pairs where the row is preferred. The weighted sums come from the same order-statistic sums (the trees carry
weights), in the same O(l log l). The regulariser R of the linear model
(``penalty``; :func:`regulariser`):

    "l2" (default)   ||w||^2 / 2                                              (3.11)
    "l1"             ||w||_1          (LIBLINEAR's L1-regularised L2-loss SVM: Fan, Chang, Hsieh, Wang & Lin,
                                       JMLR 2008; Yuan, Ho & Lin, JMLR 2012)
    "elasticnet"     l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2            (l1_ratio in [0, 1])

"l1" and "elasticnet" apply to kernel="linear" with loss="squared_hinge" only. The pair sums are never
enumerated: the loss, gradient and Hessian-vector products come from order-statistic sums per query in
O(l log l) (_ostree.pyx, Appendix B).

* squared hinge, smooth R (l1_ratio = 0 included): trust-region Newton-CG (cyrank.optim.tron, section 4.1),
  stopping when the certified gap is <= tol max(1, |objective|); ``grad_norm`` reports ||grad|| / ||grad at 0||
  (LIBLINEAR's stopping measure, which is no longer a condition) at the end.
* squared hinge with an l1 term: proximal Newton with working sets (cyrank.optim.datafit.minimise; Yuan, Ho &
  Lin 2012), stopping when the KKT violation max_r |p_r| (p the minimum-norm subgradient) is <= tol
  max_r |dL/dw_r at 0| and the gap is <= tol max(1, |objective|); ``grad_norm`` is that relative KKT violation.
  The working set's Hessian 2C X_ws'A'A X_ws is formed in one pass over the queries
  (:meth:`~cyrank.ranksvm.problems.LinearSquaredHinge.hessian_block`), not by |ws| Hessian products.
* hinge: the 1-slack cutting-plane method (Joachims 2006; section 2.2, (2.8)) of cyrank.optim.cutting_plane,
  with its constraints scaled by 1/W, W = sum_P w_i (= |P| without weights):
  xi' >= (1/W) sum_P w_i c_ij - <w, (1/W) sum_P w_i c_ij (x_i - x_j)>  and C' = C W, which is the same problem.
  It stops when the most violated constraint exceeds the working set's slack by at most ``tol`` (in units of the
  mean hinge loss per unit of pair weight), so the objective is within tol * C W = tol * objective(0) of the
  optimum. ``duality_gap`` is the objective minus the dual value of the
  last restricted problem, a certified bound on the distance to the optimum.

:func:`path` follows the linear squared-hinge model with an l1 term over increasing C from C_min, the largest C at
which w = 0 is optimal. :func:`objective` evaluates the linear objective at given coefficients.

The pieces live beside this module: problems.py (the query layout, the squared-hinge datafit and its public
:func:`~cyrank.ranksvm.problems.loss`), kernels.py (kernel matrices, stored or block-wise within the memory
budget), hinge.py (the 1-slack adapters).

Linear models read X in its own precision (a float32 X stays float32; every sum is float64) and never copy it, but
for a sparse X dense enough that its dense form takes no more memory (problems.py); kernel models widen the
training rows to float64 once, for the BLAS products of Q.
"""
import contextlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._dense import should_densify
from .._result import SolveResult
from .._threads import one_blas_thread, openmp_threads
from .._validation import (check_coef, check_feature_scale, check_n_jobs, check_option, check_options,
                           check_param, check_ranking_data, check_sample_weight, check_verbose, feature_scale_spread,
                           max_abs)
from ..optim.cutting_plane import cutting_plane_history
from ..optim.datafit import minimise, solve_result
from ..optim.path import run_path
from ..optim.penalties import PENALTIES, Penalty
from ..optim.tron import tron
from . import _pairloss
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


def resolve_gamma(gamma, X, sample_weight=None):
    """The gamma of rbf/poly: "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features (as scikit-learn).
    With ``sample_weight`` (checked; None: unweighted) X.var() is the variance of X's entries with each row counted
    w_i times (a weight stands for that many copies, so a query weight equals the query repeated, default gamma
    included)."""
    if not isinstance(gamma, str):
        return float(gamma)
    d = X.shape[1]
    if gamma == "auto":
        return 1.0 / d
    if sample_weight is not None:
        total = float(sample_weight.sum()) * d
        mean = float(np.asarray(X.T @ sample_weight).sum()) / total
        if sp.issparse(X):
            var = float(np.asarray(X.multiply(X).T @ sample_weight).sum()) / total - mean * mean
        else:
            var = float(sample_weight @ np.square(X - np.float64(mean)).sum(axis=1)) / total
    elif sp.issparse(X):
        mean = X.sum() / (X.shape[0] * d)
        var = float(X.multiply(X).sum() / (X.shape[0] * d) - mean * mean)
    else:
        var = float(np.var(X))
    return 1.0 / (d * var) if var > 0 else 1.0


def regulariser(penalty="l2", l1_ratio=0.5):
    """RankSVM's regulariser R(w) (module docstring) as a :class:`cyrank.optim.penalties.Penalty`
    lam1 ||w||_1 + lam2 ||w||^2: (0, 1/2) for "l2", (1, 0) for "l1", (l1_ratio, (1 - l1_ratio) / 2) for
    "elasticnet"; both names checked."""
    check_option("penalty", penalty, PENALTIES)
    l1_ratio = check_param("l1_ratio", l1_ratio, low=0.0, high=1.0)
    if penalty == "l2":
        return Penalty(0.0, 0.5)
    if penalty == "l1":
        return Penalty(1.0, 0.0)
    return Penalty(l1_ratio, 0.5 * (1.0 - l1_ratio))


def check_penalty(penalty, l1_ratio, loss="squared_hinge", kernel="linear"):
    """The regulariser of ``penalty`` (:func:`regulariser`), refused (ValueError) for a penalty other than "l2"
    unless kernel="linear" and loss="squared_hinge"."""
    pen = regulariser(penalty, l1_ratio)
    if penalty != "l2" and (kernel != "linear" or loss != "squared_hinge"):
        raise ValueError(f"penalty={penalty!r} applies to the linear squared-hinge rankSVM only (kernel='linear', "
                         f"loss='squared_hinge'); got kernel={kernel!r}, loss={loss!r}. Use penalty='l2' for this "
                         f"model, or kernel='linear' with loss='squared_hinge' for an l1 / elastic-net penalty")
    return pen


def check_params(C, loss, kernel, gamma, degree, coef0, tol, max_iter, kernel_memory_mb, n_jobs, verbose,
                 penalty="l2", l1_ratio=0.5):
    """Every parameter of :func:`solve` checked (a ValueError naming the first bad one); returns n_jobs."""
    check_param("C", C, low=0.0, low_open=True)
    check_option("loss", loss, LOSSES)
    check_option("kernel", kernel, KERNELS)
    check_penalty(penalty, l1_ratio, loss, kernel)
    check_gamma(gamma)
    check_param("degree", degree, low=1, integer=True)
    check_param("coef0", coef0)
    check_param("tol", tol, low=0.0, low_open=True)
    check_param("max_iter", max_iter, low=1, integer=True)
    check_param("kernel_memory_mb", kernel_memory_mb, low=0.0, low_open=True)
    check_verbose(verbose)
    return check_n_jobs(n_jobs)


def solve(X, y, qid=None, *, C=1.0, loss="squared_hinge", kernel="linear", penalty="l2", l1_ratio=0.5,
          gamma="scale", degree=3, coef0=1.0, tol=1e-3, max_iter=1000, kernel_memory_mb=1024, n_jobs=None, verbose=0,
          options=None, coef_init=None, sample_weight=None):
    """Minimise the rankSVM objective (module docstring) on (X, y) grouped by ``qid`` (None: one query).

    Parameters are those of :class:`cyrank.RankSVM` (same names, same meaning), plus ``options``, an
    :class:`Options`, ``coef_init``, the starting coefficients of a linear model (default 0; a warm start: the
    stopping rule still measures the gradient, or the KKT violation, against the one at 0), and ``sample_weight``,
    the row weights w of the objective (None: all 1; a number: that weight on every row; checked by
    cyrank._validation.check_sample_weight, in the rows' order), the pair (i, j) counting with w_i.
    Returns a :class:`cyrank._result.SolveResult` with ``objective``, ``n_iter``, ``converged``, ``gap``,
    ``gap_kind``, ``n_pairs`` (a count, whatever the weights), ``pair_weight_sum`` (sum_P w_i: ``n_pairs``
    without weights), ``n_active_pairs`` (a count), ``n_features_in``; ``grad_norm`` and ``n_cg_iter`` (squared
    hinge; the optimality measure is ``grad_norm``, the relative KKT violation with an l1 term, and ``n_cg_iter``
    then counts the proximal Newton model's inner sweeps) or ``duality_gap`` (hinge, the optimality measure);
    ``coef`` (linear) or ``beta``, ``support``, ``n_kernel_products`` and, for rbf/poly, ``support_vectors`` and
    ``gamma``. When the solver stops on ``max_iter``, ``converged`` is False and ``message`` says so (no warning is
    issued here).
    """
    n_jobs = check_params(C, loss, kernel, gamma, degree, coef0, tol, max_iter, kernel_memory_mb, n_jobs, verbose,
                          penalty, l1_ratio)
    pen = check_penalty(penalty, l1_ratio, loss, kernel)
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
        start = check_coef(start, X.shape[1], "coef_init")
    sample_weight = check_sample_weight(sample_weight, X.shape[0])
    fit = _Fit(C=float(C), loss=loss, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, tol=float(tol),
               max_iter=int(max_iter), kernel_memory_mb=float(kernel_memory_mb), verbose=check_verbose(verbose),
               options=options, start=start, penalty=pen, sample_weight=sample_weight)
    with openmp_threads(n_jobs):  # the layout fixes the kernels' thread count
        layout, n_pairs = make_layout(y, qid, options.parallel_min_rows, sample_weight)
        if n_pairs == 0:
            values, solver_out = fit.without_pairs(X), None
        elif kernel == "linear":
            values, solver_out = fit.linear(X, layout)
        else:
            values, solver_out = fit.kernel_model(X, layout)
    return _result(values, solver_out, X, layout, n_pairs, C, loss, kernel, options)


def _result(values, solver_out, X, layout, n_pairs, C, loss, kernel, options):
    """The SolveResult of one fit: ``values`` and the solver's OptimResult ``solver_out`` (None: no pair); for the
    linear squared hinge, ``values["datafit"]`` is the datafit minimised (cyrank.optim.datafit.solve_result)."""
    if not np.isfinite(values["objective"]):
        raise ValueError(f"RankSVM: the objective overflowed float64 (features up to |x| = {max_abs(X):.3g}, "
                         f"C={C:g}); scale X (e.g. sklearn.preprocessing.StandardScaler) or lower C")
    datafit = values.pop("datafit", None)
    values.update(n_features_in=X.shape[1], n_pairs=int(n_pairs), pair_weight_sum=float(layout.pair_weight_sum))
    if datafit is not None:
        return solve_result(solver_out, datafit, **values)
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


def objective(X, y, qid=None, *, coef, C=1.0, loss="squared_hinge", penalty="l2", l1_ratio=0.5, sample_weight=None):
    """The linear rankSVM's objective R(coef) + C sum_P w_i loss(1 - coef'(x_i - x_j)) (module docstring) on
    (X, y, qid), in float64 from the order-statistic sums; ``penalty``, ``l1_ratio`` and ``sample_weight`` (the
    row weights w, None: all 1) as :func:`solve`'s."""
    check_param("C", C, low=0.0, low_open=True)
    check_option("loss", loss, LOSSES)
    pen = check_penalty(penalty, l1_ratio, loss, "linear")
    X, y, qid = check_ranking_data(X, y, qid)
    w = check_coef(coef, X.shape[1], "coef")
    layout, _ = make_layout(y, qid, sample_weight=sample_weight)
    pair_loss, _ = LinearSquaredHinge(X, layout, C, regularize=False).loss(w, squared=loss == "squared_hinge")
    return pen.value(w) + float(C) * pair_loss


def path(X, y, qid=None, *, Cs=None, n_Cs=20, eps=1e-3, penalty="l1", l1_ratio=0.5, tol=1e-3, max_iter=1000,
         n_jobs=None, verbose=0, options=None, sample_weight=None):
    """The regularisation path of the linear squared-hinge rankSVM (module docstring) over increasing C: one
    :func:`solve` per C, each warm-started from the previous solution, on data checked and laid out once.

    Parameters
    ----------
    X, y, qid : arrays
        The data, as for :func:`solve`.
    Cs : sequence of float > 0 or None, default=None
        The values of C (sorted increasing). None: ``n_Cs`` values from C_min up to C_min / ``eps``, geometrically
        spaced, C_min = lam1 / max_r |dL/dw_r at 0| for the loss L with C = 1 and lam1 the l1 weight of R (1 for
        "l1", l1_ratio for "elasticnet"): the largest C at which w = 0 is optimal ("l2", or "elasticnet" with
        l1_ratio = 0, needs ``Cs``).
    n_Cs : int >= 1, default=20
    eps : float in (0, 1), default=1e-3
    penalty : {"l1", "elasticnet", "l2"}, default="l1"
    l1_ratio : float in [0, 1], default=0.5
    tol, max_iter, n_jobs, verbose, options, sample_weight : any
        As for :func:`solve` (the weighted loss sets C_min too).

    Returns
    -------
    cyrank.optim.path.PathResult
        Per C: coefficients (column k of the sparse ``coefs``), objective, optimality measure (``kkt_violations``:
        the ``grad_norm`` of :func:`solve`), iterations, convergence and the solver's message (nothing is warned
        here). ``Cs`` holds the values of C (increasing) and ``C_min`` the computed C_min (None when ``Cs`` was
        given); ``alphas`` = 1 / ``Cs`` (decreasing) are the weights of R in the same objective divided by C,
        R(w) / C + sum_P loss, and ``alpha_max`` = 1 / C_min.
    """
    pen = regulariser(penalty, l1_ratio)
    tol = check_param("tol", tol, low=0.0, low_open=True)
    max_iter = check_param("max_iter", max_iter, low=1, integer=True)
    verbose, n_jobs = check_verbose(verbose), check_n_jobs(n_jobs)
    n_Cs = check_param("n_Cs", n_Cs, low=1, integer=True)
    eps = check_param("eps", eps, low=0.0, high=1.0, low_open=True, high_open=True)
    if Cs is None and pen.lam1 == 0:
        raise ValueError(f"penalty={penalty!r}" + (f" with l1_ratio={l1_ratio!r}" if penalty != "l2" else "")
                         + " never gives w = 0 (no finite C_min): pass Cs=...")
    if Cs is not None:
        Cs = np.sort(np.asarray(Cs, dtype=np.float64).ravel())
        if Cs.size == 0 or not np.all(np.isfinite(Cs)) or Cs[0] <= 0:
            raise ValueError("Cs must be a non-empty sequence of finite numbers > 0")
    options = check_options(options, Options, "cyrank.ranksvm.path")
    X, y, qid = check_ranking_data(X, y, qid)
    check_feature_scale(X, "RankSVM")
    d = X.shape[1]
    fit = _Fit(C=1.0, loss="squared_hinge", kernel="linear", gamma="scale", degree=3, coef0=1.0, tol=float(tol),
               max_iter=int(max_iter), kernel_memory_mb=1.0, verbose=verbose, options=options, penalty=pen)
    with openmp_threads(n_jobs):
        layout, n_pairs = make_layout(y, qid, options.parallel_min_rows, sample_weight)
        unit = LinearSquaredHinge(X, layout, 1.0, regularize=False) if n_pairs else None
        C_min = None
        if Cs is None:
            top = float(np.max(np.abs(unit.grad(np.zeros(d))), initial=0.0)) if n_pairs else 0.0
            if top == 0.0:
                raise ValueError("the loss's gradient at w = 0 is 0 (no preference pair, or no feature varies within "
                                 "a query): w = 0 is optimal at every C, so there is no C_min; pass Cs=...")
            C_min = float(pen.lam1) / top
            Cs = C_min * np.geomspace(1.0, 1.0 / eps, n_Cs)
            Cs[0] = C_min
        next_C = iter(Cs.tolist())  # run_path fits the alphas = 1 / Cs in their order: C increasing

        def fit_at(alpha, coef):
            C = next(next_C)
            fit.C, fit.start = C, coef
            if not n_pairs:
                values, out = fit.without_pairs(X), None
            else:
                values, out = fit.linear_datafit(unit.with_C(C))
            return _result(values, out, X, layout, n_pairs, C, "squared_hinge", "linear", options)

        result = run_path(1.0 / Cs, None if C_min is None else 1.0 / C_min, fit_at)
    result.Cs, result.C_min = Cs, C_min
    return result


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
    penalty: Penalty = field(default_factory=lambda: Penalty(0.0, 0.5))  # R = ||w||^2 / 2
    sample_weight: object = None  # checked row weights (input order) or None: the default gamma's

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
                values.update(support_vectors=np.zeros((0, d)),
                              gamma=resolve_gamma(self.gamma, X, self.sample_weight))
        if self.loss == "hinge":
            values["duality_gap"] = 0.0
        else:
            values.update(grad_norm=0.0, n_cg_iter=0)
        return values

    def linear(self, X, layout):
        obj = LinearSquaredHinge(X, layout, self.C)
        if self.loss == "squared_hinge":
            return self.linear_datafit(obj)
        res = one_slack(LinearHinge(obj.parts, layout), self.C, layout.pair_weight_sum, self.tol, self.max_iter,
                        self.verbose, w0=self.start, stabilize=self.options.stabilization)
        w = res.x
        loss, n_active = obj.loss(w, squared=False)
        objective = 0.5 * float(w @ w) + self.C * loss
        return {"coef": w, "objective": objective, "n_active_pairs": int(n_active),
                "duality_gap": objective - res.info["lower_bound"], "history": cutting_plane_history(res)}, res

    def linear_datafit(self, obj):
        """The squared-hinge linear model on the datafit ``obj`` (its C the fit's), from ``start`` (default 0):
        TRON when the penalty is smooth, proximal Newton with an l1 term (cyrank.optim.datafit.minimise). A warm
        start keeps the rule relative to the gradient at 0, so tol means what it does cold."""
        w0 = np.zeros(obj.n_features) if self.start is None else self.start
        smooth = self.penalty.smooth
        res = minimise(obj, self.penalty, w0, tol=self.tol, max_iter=self.max_iter, verbose=self.verbose,
                       name="RankSVM (TRON)" if smooth else "RankSVM (prox_newton)")
        # TRON's last gradient was taken at res.x, its active pairs counted there by the same pass
        n_active = obj.state.n_active if smooth else obj.loss(res.x)[1]
        return {"coef": res.x, "objective": float(res.objective), "n_active_pairs": int(n_active),
                "datafit": obj}, res

    def kernel_model(self, X, layout):
        rows = layout.rows
        n = rows.shape[0]
        klay = _pairloss.Layout(np.arange(n), layout.offsets, layout.rank, layout.n_levels, n,
                                self.options.parallel_min_rows, layout.weight)
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
            values["gamma"] = gamma = resolve_gamma(self.gamma, X, self.sample_weight)
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
                res = one_slack(model, self.C, klay.pair_weight_sum, self.tol, self.max_iter, self.verbose)
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
