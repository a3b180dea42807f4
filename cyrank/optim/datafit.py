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

- no l1 term: TRON (:func:`~cyrank.optim.tron.tron`), stopping when ||grad F|| <= tol ||grad F at 0|| and the gap
  is <= tol max(1, |F|) (certified by the strong convexity 2 lam2, else the Newton decrement), preconditioned by
  the Jacobi diagonal when the columns' scales are far apart. ``optimality``: the relative gradient norm.
- an l1 term: proximal Newton with working sets (:func:`~cyrank.optim.prox_newton.prox_newton`; Yuan, Ho & Lin,
  JMLR 2012), stopping when the KKT violation max_r |p_r| (p the minimum-norm subgradient) is <= tol
  max_r |dL/dw_r at 0| and the gap is <= tol max(1, |F|). ``optimality``: the relative KKT violation.

Either way the result is an :class:`~cyrank.optim.result.OptimResult` whose ``message`` is "" when it converged;
each family turns it into its SolveResult.
"""
import numpy as np

from .certificate import certify, jacobi_diagonal, jacobi_preconditioner
from .prox_newton import GramModel, prox_newton
from .result import OptimResult
from .smooth import SmoothProblem
from .tron import tron


class Datafit(SmoothProblem):
    """Base of the families' loss objects (module docstring). Subclasses implement the SmoothProblem methods
    (``new_state``, ``evaluate``, ``hessian_product``) with ``self.ridge`` added, set ``n_features`` and
    ``n_rows``, and implement :meth:`column_squares`."""

    ridge = 0.0            # lam2 of + lam2 ||w||^2 (set by minimise from the penalty)
    gradient_noise = 0.0   # bound on the rounding error of the gradient
    n_features = 0         # size of w
    n_rows = None          # rows the column squares sum over (None: unknown)

    def column_squares(self):
        """Per coordinate of w, the scale of the loss Hessian's diagonal (for a pairwise loss in the scores
        X w: the within-query centred squares of X's columns, :func:`~cyrank.optim.certificate.group_column_squares`)."""
        raise NotImplementedError(f"{type(self).__name__} does not define column_squares")

    def preconditioner(self, x=None, always=False):
        """The Jacobi diagonal of F's Hessian at x (default 0), or None when the columns' scales do not call for
        one (unless ``always``)."""
        return jacobi_preconditioner(self, self.column_squares(), 2.0 * self.ridge, n_rows=self.n_rows, x=x,
                                     always=always)


def minimise(datafit, penalty, w0=None, *, tol, max_iter, verbose=0, name="minimise"):
    """Minimise datafit + penalty from w0 (default 0; copied), the solver chosen by the penalty (module docstring).
    Sets ``datafit.ridge = penalty.ridge``. Returns an OptimResult; ``info["grad_norm0"]`` is the scale of the
    relative stopping measure (||grad at 0||, or max_r |dL/dw_r at 0| with an l1 term)."""
    d = datafit.n_features
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    datafit.ridge = float(penalty.ridge)
    if penalty.smooth:
        return _minimise_smooth(datafit, w, tol=tol, max_iter=max_iter, verbose=verbose, name=name)
    return _minimise_l1(datafit, penalty, w, tol=tol, max_iter=max_iter, verbose=verbose, name=name)


def _minimise_smooth(datafit, w, *, tol, max_iter, verbose, name):
    """TRON from w, relative to ||grad at 0|| (computed here when w != 0; TRON computes it at 0 itself)."""
    g0 = float(np.linalg.norm(datafit.grad(np.zeros(w.shape[0])))) if np.any(w) else None
    mu = 2.0 * datafit.ridge
    res = tron(datafit, w, tol=tol, max_iter=max_iter, grad_norm0=g0, verbose=verbose, name=name,
               precond=lambda x: datafit.preconditioner(x), gap_tol=tol, strong_convexity=mu)
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
                      make_model=lambda ws: GramModel.from_products(datafit, ws, d, floor[ws]), certify=certify_at,
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
