"""DominationRank's solvers on a validated layout (cyrank.domination.solver has the objective, the parameters and
``solve``): coordinate descent (_cd.pyx); the smooth problem L(Xw) + lam2 ||w||^2 of _smooth.pyx for trust-region
Newton (cyrank.optim.tron), L-BFGS / OWL-QN (cyrank.optim.owlqn) and proximal Newton (cyrank.optim.prox_newton),
whose model on a working set is formed (_GramModel) or applied in the scores (_ScoreModel, _model_cd.pyx). Each
updates w in place and returns an OptimResult."""
import numpy as np
import scipy.sparse as sp

from .._threads import one_blas_thread
from ..optim.certificate import certify, group_column_squares, jacobi_preconditioner
from ..optim.datafit import Datafit
from ..optim.owlqn import owlqn_penalized
from ..optim.penalties import Penalty
from ..optim.prox_newton import RIDGE, GramModel, prox_newton
from ..optim.result import OptimResult
from ..optim.tron import tron
from . import _cd, _model_cd, _smooth
from ._layout import _columns, _gradient_rounding, _rows_of

MODEL_SWEEPS = 100  # largest number of sweeps of the matrix-free inner solver (_ScoreModel) per model
MODEL_CD_SWEEPS = 10  # ... in rounds of this many CD sweeps and one Newton step on the orthant they found
HESSIAN_BOUNDS = {"popoviciu": _cd.HESSIAN_POPOVICIU, "max_sq": _cd.HESSIAN_MAX_SQ}


class _NewtonState:
    """The log-domain state of _smooth.pyx at one point and the loss gradient X'c there (``like``: a state of the
    same problem, whose layout arrays and per-thread buffers this one shares)."""

    def __init__(self, layout, d, parallel_min_rows, like=None):
        self.smooth = _smooth.State(layout, parallel_min_rows, None if like is None else like.smooth)
        self.xg = np.zeros(d)


class _NewtonProblem(Datafit):
    """The domination loss L(Xw) (cyrank.domination.solver's module docstring) + ridge ||w||_2^2 as a datafit
    (cyrank.optim.datafit): loss and gradient 2 ridge w + X'g in one pass of _smooth.pyx, Hessian products
    2 ridge v + X'H X v from the state of the last accepted point (SmoothProblem's protocol).

    ``rows``: X's parts for the products (_layout._rows_of), ``layout`` the sorted rows, ``lam2`` the ridge, ``d`` the
    number of features. With ``X`` (the checked data the layout was made from) it also gives the column squares
    (the within-query centred squares of X's columns, kept on the layout) and the gradient's rounding error
    (_layout._gradient_rounding); w is in X's column order, whatever the order of the sorted rows."""

    def __init__(self, rows, layout, lam2, d, parallel_min_rows=-1, X=None):
        self.rows, self.layout, self.ridge, self.d = rows, layout, float(lam2), d
        self.n_features, self.n_rows = d, int(layout.rows.shape[0])
        self.parallel_min_rows = parallel_min_rows
        self.X = X
        self._noise = None
        self._first_state = None
        super().__init__()

    @property
    def lam2(self):
        """The ridge (the name of the l2 weight in this family's solvers)."""
        return self.ridge

    def column_squares(self):
        if self.layout.squares is None:  # once per layout (the chained solvers of "auto" and a path share it)
            if self.X is None:
                raise ValueError("the column squares need X: build the loss with cyrank.domination.loss")
            self.layout.squares = group_column_squares(self.X, self.layout.lay_ptr[self.layout.q_ptr],
                                                       self.layout.rows)
        return self.layout.squares

    @property
    def gradient_noise(self):
        """Bound on the rounding error of the computed loss gradient (_layout._gradient_rounding, in full)."""
        if self._noise is None:
            self._noise = 0.0 if self.X is None else _gradient_rounding(self.X, self.layout, 0.0)
        return self._noise

    def new_state(self):
        state = _NewtonState(self.layout, self.d, self.parallel_min_rows, self._first_state)
        self._first_state = self._first_state or state  # the later states share its buffers
        return state

    def evaluate(self, w, Mw, state):
        loss = _smooth.fun_grad(*self.rows, self.d, state.smooth, w, state.xg)
        return loss + self.ridge * float(w @ w), state.xg + 2.0 * self.ridge * w

    def hessian_product(self, state, v, Mv):
        out = np.empty(self.d)
        _smooth.hess_vec(*self.rows, self.d, state.smooth, v, out)
        return out + 2.0 * self.ridge * v


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
    """(rows, problem, scale, noise, f0, g0): X's parts for the products (_rows_of), the smooth problem
    (loss + lam2 ||w||^2), scale = max_r |dL/dw_r| at w = 0 (the reference of every KKT measure here), the rounding
    error of the gradient (_gradient_rounding), and the objective and gradient at 0. Leaves the problem's Hessian
    state at w = 0."""
    rows = _rows_of(X, options)
    problem = _NewtonProblem(rows, layout, lam2, X.shape[1], options.parallel_min_rows, X=X)
    with one_blas_thread():
        zero = np.zeros(X.shape[1])
        f0 = problem.fun(zero)
        g0 = problem.grad(zero)
        scale = float(np.max(np.abs(g0), initial=0.0))
    return rows, problem, scale, _gradient_rounding(X, layout, scale), f0, g0


def _solve_newton(X, layout, w, lam2, tol, max_iter, verbose, options, smooth=None):
    """Trust-region Newton (cyrank.optim.tron) in place on w.

    TRON stops when the gap (cyrank.optim.certificate) is within tol * max(1, |objective|); kkt_violation =
    ||grad||_inf / scale, scale = max_r |dL/dw_r| at w = 0, is reported. TRON is preconditioned by the Jacobi
    diagonal of the within-query column scales from the first step when those scales are far apart (every column
    on its own scale: waiting lets TRON crawl), so a feature on a scale of 1e9 or 1e-3 costs few more iterations
    than a standardised one.
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
        # from the first step when the columns' scales call for it, else never (as cyrank.optim.datafit.minimise:
        # the scales are examined, so TRON trusts an unpreconditioned Newton decrement)
        precond = _preconditioner(X, layout, problem, lam2, w)
        res = tron(problem, w, tol=tol, max_iter=max_iter, grad_norm0=scale,
                   callback=lambda x: nnz.append(np.count_nonzero(x)), verbose=verbose, name="DominationRank",
                   precond=precond, gap_tol=tol, strong_convexity=2.0 * lam2)
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
