"""A family's loss on its data as a datafit, and the one driver that minimises datafit + penalty.

A datafit (in skglm's sense: Bertrand, Klopfenstein, Massias et al., "Beyond L1: Faster and Better Sparse Models
with skglm", NeurIPS 2022) is the loss L(w) of one family on one data set, with no penalty. Here it is a
:class:`~cyrank.optim.smooth.SmoothProblem` that evaluates

    L(w) + ridge ||w||^2,    gradient  grad L(w) + 2 ridge w,    Hessian products  H_L v + 2 ridge v,

where ``ridge`` is the l2 weight lam2 of the :class:`~cyrank.optim.penalties.Penalty` it is minimised with (0 for
a bare loss: a Dask shard, an alpha_max computation). It also carries what the shared solvers need from it:
``n_features`` (the size of w), ``n_rows`` and :meth:`Datafit.column_squares` (the data part of the Jacobi
preconditioner, :func:`~cyrank.optim.certificate.jacobi_diagonal`), and ``gradient_noise`` (a bound on the
rounding error of the gradient; 0 when negligible).

:func:`minimise` then minimises F(w) = L(w) + lam1 ||w||_1 + lam2 ||w||^2 from w0:

- no l1 term: TRON (:func:`~cyrank.optim.tron.tron`), stopping when the gap is <= tol max(1, |F|) (certified by
  the strong convexity 2 lam2, else the Newton decrement), preconditioned by the Jacobi diagonal when the columns'
  scales are far apart. ``optimality``: the relative gradient norm ||grad F|| / ||grad F at 0||, reported only.
- an l1 term: proximal Newton with working sets (:func:`~cyrank.optim.prox_newton.prox_newton`; Yuan, Ho & Lin,
  JMLR 2012), stopping when the KKT violation max_r |p_r| (p the minimum-norm subgradient) is <= tol
  max_r |dL/dw_r at 0| and the gap is <= tol max(1, |F|). ``optimality``: the relative KKT violation.

Either way the result is an :class:`~cyrank.optim.result.OptimResult` whose ``message`` is "" when it converged;
:func:`solve_result` turns it into the family's SolveResult (the one way back, for the single-machine solvers and
for cyrank.dask, whose distributed sum of shard losses is a datafit too).
"""
import numpy as np

from .._result import SolveResult
from .certificate import certify, jacobi_diagonal, jacobi_preconditioner, worth_preconditioning
from .prox_newton import GramModel, hessian_block, prox_newton
from .result import OptimResult
from .smooth import SmoothProblem
from .tron import tron


class Datafit(SmoothProblem):
    """Base of the families' loss objects (module docstring). Subclasses implement the SmoothProblem methods
    (``new_state``, ``evaluate``, ``hessian_product``) with ``self.ridge`` added, set ``n_features`` and
    ``n_rows``, and implement :meth:`column_squares`."""

    ridge = 0.0            # lam2 of + lam2 ||w||^2 (set by minimise from the penalty)
    gradient_noise = 0.0   # bound on the rounding error of the gradient (a family may compute it on first use)
    n_features = 0         # size of w
    n_rows = None          # rows the column squares sum over (None: unknown)

    def column_squares(self):
        """Per coordinate of w, the scale of the loss Hessian's diagonal (for a pairwise loss in the scores
        X w: the within-query centred squares of X's columns, :func:`~cyrank.optim.certificate.group_column_squares`)."""
        raise NotImplementedError(f"{type(self).__name__} does not define column_squares")

    def hessian_block(self, ws):
        """H[ws, ws], the rows and columns ``ws`` of the Hessian of L + ridge ||w||^2 at the point of the last
        ``grad`` call (proximal Newton's model on a working set). By default |ws| Hessian products; a family whose
        Hessian has a structure to exploit overrides it (it must equal the products)."""
        return hessian_block(self, ws, self.n_features)

    def preconditioner(self, x=None, always=False):
        """The Jacobi diagonal of F's Hessian at x (default 0), or None when the columns' scales do not call for
        one (unless ``always``)."""
        return jacobi_preconditioner(self, self.column_squares(), 2.0 * self.ridge, n_rows=self.n_rows, x=x,
                                     always=always)


def minimise(datafit, penalty, w0=None, *, tol, max_iter, verbose=0, name="minimise", callback=None,
             grad_scale="l2"):
    """Minimise datafit + penalty from w0 (default 0; copied), the solver chosen by the penalty (module docstring).
    Sets ``datafit.ridge = penalty.ridge``. Returns an OptimResult; ``info["grad_norm0"]`` is the scale of the
    relative stopping measure (||grad at 0||, or max_r |dL/dw_r at 0| with an l1 term).

    Smooth penalties only: ``callback(w)`` is called after every accepted Newton step, and ``grad_scale="max"``
    makes TRON's rule ||grad F|| <= tol max_r |dL/dw_r at 0| (DominationRank's scale, that of its KKT violation)
    instead of tol ||grad F at 0||."""
    d = datafit.n_features
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    datafit.ridge = float(penalty.ridge)
    if grad_scale not in ("l2", "max"):
        raise ValueError(f"grad_scale must be 'l2' or 'max', got {grad_scale!r}")
    if penalty.smooth:
        return _minimise_smooth(datafit, w, tol=tol, max_iter=max_iter, verbose=verbose, name=name,
                                callback=callback, grad_scale=grad_scale)
    if callback is not None or grad_scale != "l2":
        raise ValueError("minimise: callback and grad_scale='max' are for smooth penalties (no l1 term)")
    return _minimise_l1(datafit, penalty, w, tol=tol, max_iter=max_iter, verbose=verbose, name=name)


def _minimise_smooth(datafit, w, *, tol, max_iter, verbose, name, callback=None, grad_scale="l2"):
    """TRON from w, relative to ||grad at 0|| (computed here when w != 0; TRON computes it at 0 itself), or to
    max_r |grad_r at 0| (``grad_scale="max"``, always computed here).

    Preconditioned by the Jacobi diagonal from the first step when the columns' within-query scales call for it
    (:func:`~cyrank.optim.certificate.worth_preconditioning`; one pass over X for the column squares), else not at
    all (TRON's lazy preconditioning would ask the same question of the same squares, and an unpreconditioned
    Newton decrement is trusted from the start). Waiting is not enough when every column has its own scale
    (columns spread over 10^-2 .. 10^4): unpreconditioned TRON then neither meets the gradient rule nor stalls, its
    trust region shrinks and it crawls (RankNet on 1e5 x 136: 200 Newton steps and 191 s, not converged;
    preconditioned from the start: converged in a few steps)."""
    if grad_scale == "max":
        g0 = float(np.max(np.abs(datafit.grad(np.zeros(w.shape[0]))), initial=0.0))
    else:
        g0 = float(np.linalg.norm(datafit.grad(np.zeros(w.shape[0])))) if np.any(w) else None
    mu = 2.0 * datafit.ridge
    worth = worth_preconditioning(datafit.column_squares(), datafit.n_rows)
    precond = datafit.preconditioner(w, always=True) if worth else None
    res = tron(datafit, w, tol=tol, max_iter=max_iter, grad_norm0=g0, verbose=verbose, name=name,
               precond=precond, gap_tol=tol, strong_convexity=mu, callback=callback)
    if res.converged:
        res.message = ""
    return res


def _minimise_l1(datafit, penalty, w, *, tol, max_iter, verbose, name):
    """Proximal Newton from w; the model's Hessian formed on the working set by Hessian products, its floor of
    curvature (and the certificate's preconditioner) the Jacobi diagonal of the column scales at 0."""
    d = w.shape[0]
    zero = np.zeros(d)
    f0 = datafit.fun(zero)
    scale = float(np.max(np.abs(datafit.grad(zero)), initial=0.0))
    if scale == 0.0:  # the loss is flat at 0 (every pair ties at every w, or there is none): w = 0 is optimal
        return OptimResult(x=zero, objective=float(f0), n_iter=0, converged=True, optimality=0.0,
                           optimality_name="kkt_violation", gap=0.0, gap_kind="exact", info={"grad_norm0": 0.0})
    f = datafit.fun(w) + penalty.l1_value(w)
    G = datafit.grad(w)  # the Hessian state at w
    floor = jacobi_diagonal(datafit.hess_vec, datafit.column_squares(), penalty.strong_convexity, always=True)

    def certify_at(x, g, F):
        gap, kind, _ = certify(datafit.hess_vec, x, g, F, tol, lam1=penalty.lam1,
                               strong_convexity=penalty.strong_convexity, precond=floor, trust=True)
        return gap, kind

    res = prox_newton(datafit, penalty, w, tol=tol, max_iter=max_iter, scale=scale,
                      make_model=lambda ws: GramModel(datafit.hessian_block(ws), floor[ws]), certify=certify_at,
                      noise=datafit.gradient_noise, verbose=verbose, name=name, f=f, G=G)
    if res.converged:
        res.message = ""
    else:
        why = ("no step decreases the objective in floating point any more" if res.info["stalled"] else
               f"max_iter={max_iter} iterations were reached; increase max_iter or tol")
        res.message = (f"{name} stopped after {res.n_iter} iterations with KKT violation {res.optimality:.3g} and "
                       f"objective gap {res.gap:.3g} ({res.gap_kind or 'not measured'}): {why}")
    res.info["grad_norm0"] = scale
    return res


def solve_result(res, datafit, *, measure="grad_norm", **fields):
    """The family's :class:`cyrank._result.SolveResult` of ``res``, an OptimResult of :func:`minimise` on
    ``datafit``: ``coef`` (res.x), ``objective``, ``n_iter``, ``n_cg_iter`` (res.n_inner), ``converged``, ``gap``,
    ``gap_kind``, ``n_features_in`` (datafit.n_features), ``message`` and the stopping measure named ``measure``:

    - "grad_norm": ||grad F|| / ||grad F at 0|| (res.optimality; 0 when the gradient at 0 is 0); with an l1 term
      the relative KKT violation;
    - "kkt_violation" (DominationRank's): the objective and gradient recomputed at res.x in float64, and
      max_r |dF/dw_r| beyond ``datafit.gradient_noise``, relative to res.info["grad_norm0"] (max_r |dL/dw_r at 0|
      with ``grad_scale="max"``); with an l1 term res.optimality, already that measure.

    ``fields``: the family's own values (they replace the above of the same name)."""
    scale = float(res.info.get("grad_norm0", 0.0))
    values = dict(coef=res.x, objective=float(res.objective), n_iter=int(res.n_iter), n_cg_iter=int(res.n_inner),
                  converged=bool(res.converged), gap=float(res.gap), gap_kind=res.gap_kind,
                  n_features_in=int(datafit.n_features))
    if measure == "grad_norm":
        values["grad_norm"] = float(res.optimality if scale > 0 else 0.0)
    elif measure == "kkt_violation":
        if res.optimality_name == "kkt_violation":
            values["kkt_violation"] = float(res.optimality)
        else:  # the exact objective and gradient at the returned point (TRON's last one may be a trial point's)
            values["objective"] = float(datafit.fun(res.x))
            excess = np.maximum(np.abs(datafit.grad(res.x)) - datafit.gradient_noise, 0.0)
            values["kkt_violation"] = float(np.max(excess, initial=0.0)) / scale if scale > 0 else 0.0
    else:
        raise ValueError(f"measure must be 'grad_norm' or 'kkt_violation', got {measure!r}")
    values.update(fields)
    return SolveResult(optimality_name=measure, message=res.message, **values)
