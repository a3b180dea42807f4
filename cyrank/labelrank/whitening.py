"""LabelRankBoost's Newton in whitened variables: the feature part of the Hessian made close to a multiple of I.

The Hessian of the loss L (solver.py) in W (d x L) is sum_i (x_i x_i') (x) H_i, H_i the L x L Hessian of instance
i's loss in its scores (its weight w_i included). With H_i replaced by c w_i I (c = the weighted mean of trace(H_i)
/ (w_i L)) it is the Kronecker product (c X'DX + 2 ridge I) (x) I_L, D = diag(w) (I without weights, as every X'X
below), X'DX uncentred, so an instance of weight k is k repeated instances here too: columns that share a large mean
(count features) or scale make it ill-conditioned, and CG pays for it. But H_i 1 = 0 (a constant added to every
label's score changes no margin), so along W 11' only the ridge curves F: the label factor is the projector P = I -
11'/L, and the model (c X'X + 2 ridge I) (x) P + 2 ridge I (x) 11'/L. In the variables U = R W P + s W 11'/L, with
R'R = (c X'X + 2 ridge I) / lambda (Cholesky) and s^2 = 2 ridge / lambda, that model is the identity, so CG runs
preconditioned by it: the Kronecker-factored curvature of Martens & Grosse ("Optimizing Neural Networks with
Kronecker-factored Approximate Curvature", ICML 2015, section 4) with the centring projector as its label factor
(with the identity instead, CG needed 3,843 products where plain Newton needed 686, on positive features of a large
common mean). Each product costs two triangular solves with R (O(d^2 L)) on top of the loss's own O(nnz L +
memberships). theta (joint features) is left as it is.

Certificates stay valid: sigma_max(R), s <= 1, so ||T^-1 U|| >= ||U|| and F(T^-1 U) is still 2 ridge-strongly
convex in U (cyrank.optim.datafit.minimise's bound); the gap ||g_W||^2 / (4 ridge) in W, never larger than the
one in U (||g_U|| = ||T^-T g_W|| >= ||g_W||), is used when it is smaller. The stopping rule on ||grad F|| is checked in
W: :func:`minimise_whitened` tightens tol and goes on while it does not hold.
"""
import numpy as np
import scipy.linalg as sla

from ..optim.datafit import Datafit, minimise

# whiten only when X has at most this many columns (R is d x d, formed in O(n d^2 + d^3))
MAX_FEATURES = 1000
# ... and give up the whitened variables (going on from the last accepted point without them) when one Newton step
# takes more Hessian products than this: the curvature at w = 0, which R models, no longer describes the Hessian
# (measured on positive features with a large common mean and alpha = 0.01: 200 products per step whitened, 14
# without; 12 whitened on the other sets of bench_labelrank.py --only hand)
MAX_PRODUCTS_PER_STEP = 50


class _Unhelpful(Exception):
    """Raised inside TRON when the whitened variables stopped paying (MAX_PRODUCTS_PER_STEP)."""


def worth_whitening(data):
    """Whether X's shape allows R: 2 .. MAX_FEATURES columns, no more than its rows."""
    return 2 <= data.d <= min(MAX_FEATURES, data.n)


def whitening_factor(problem):
    """(R, s): R (upper triangular, d x d, sigma_max(R) <= 1) with R'R proportional to c X'X + 2 ridge I (module
    docstring; its correlation matrix factored, with 1e-10 added to its unit diagonal, so columns of any scale
    and repeated columns are fine), c = trace(sum_i H_i) / (sum_i w_i L) at the problem's current Hessian state
    (_loss.mean_curvature, no product with X), and s = sqrt(2 ridge) on the same scale, for the labels' mean
    (1 if ridge = 0: the loss is flat along it); None when the factorisation fails."""
    D = problem.data
    d, L = D.d, D.L
    C = D.gram()
    trace = D.mean_curvature(problem.weights(problem.state))
    c = trace / (D.n_rows * L) if trace > 0 else 1.0
    M = c * C + 2.0 * problem.ridge * np.eye(d)
    scale = np.sqrt(np.diag(M))  # factor the correlations (unit diagonal): free of the columns' scales
    scale[~(scale > 0)] = 1.0  # a zero column without a ridge
    K = M / np.outer(scale, scale)
    K[np.diag_indices(d)] += 1e-10  # rank deficient X (a column repeated, or one of zeros)
    try:
        R = sla.cholesky(K, lower=False) * scale
    except np.linalg.LinAlgError:
        return None
    top = float(sla.svdvals(R)[0]) * (1.0 + 1e-9)
    if not (np.isfinite(top) and top > 0) or not np.all(np.isfinite(R)):
        return None
    # the labels' mean (a constant added to every label's score changes no margin): curvature 2 ridge only
    mean_scale = np.sqrt(2.0 * problem.ridge) if problem.ridge > 0 else top
    return R / top, min(mean_scale / top, 1.0)  # sigma_max(R), s <= 1


class WhitenedLoss(Datafit):
    """``problem`` (a LabelRankLoss) in the variables u = (T W, theta), T W = R W P + s W J, P = I - J and
    J = 11'/L acting on the labels (each row's deviations from, and its mean over, the labels): F(u) = problem's
    F(T^-1 U, theta), T^-1 U = R^-1 U P + U J / s; gradient (T^-T g_W, g_theta) with T^-T G = R^-T G P + G J / s,
    Hessian products likewise. ``ridge`` is passed on to ``problem``; the state also keeps g_W, the gradient in
    the original variables (``state.grad_w``)."""

    def __init__(self, problem, R, s):
        self.problem, self.R, self.s = problem, R, float(s)
        self.d, self.L = problem.data.d, problem.data.L
        self.n_features, self.n_rows = problem.n_features, problem.n_rows
        self._squares = None
        self._spare = [problem._trial, problem._current]  # its states serve: one pair for both
        self._at_zero = None  # (F, g_W, the state) at w = 0 when the caller has them: the first evaluation reuses them
        self.products_since_step, self.products, self.accepted, self.steps = 0, 0, None, 0  # minimise_whitened's guard
        super().__init__()

    def step_accepted(self, u):
        """minimise's callback: a Newton step was accepted at u."""
        self.products += self.products_since_step
        self.products_since_step, self.accepted, self.steps = 0, np.array(u), self.steps + 1

    def _map(self, v, solve, trans, mean_factor):
        """(R^-1 or R^-T or R) (V P) + mean_factor V J on the label weights of v; theta unchanged."""
        out = np.array(v, dtype=np.float64)
        k = self.d * self.L
        V = out[:k].reshape(self.d, self.L)
        mean = V.mean(axis=1, keepdims=True)
        centred = V - mean
        part = (sla.solve_triangular(self.R, centred, trans=trans, lower=False) if solve else self.R @ centred)
        out[:k] = (part + mean_factor * mean).ravel()
        return out

    def to_w(self, u):
        """The original parameter vector of u: (T^-1 U, theta)."""
        return self._map(u, True, "N", 1.0 / self.s)

    def to_u(self, w):
        """u of an original parameter vector: (T W, theta)."""
        return self._map(w, False, "N", self.s)

    def _pull(self, g):
        """(T^-T g_W, g_theta): a gradient or Hessian product in W as one in u."""
        return self._map(g, True, "T", 1.0 / self.s)

    def new_state(self):
        return self._spare.pop() if self._spare else self.problem.new_state()

    def evaluate(self, u, Mu, state):
        self.problem.ridge = self.ridge
        if self._at_zero is not None and not np.any(u):  # the first point, evaluated before R was built
            (f, g, held), self._at_zero = self._at_zero, None
            if state is not held:
                self.problem.transfer(held, state)
            state.grad_w = g
            return f, self._pull(g)
        w = self.to_w(u)
        f, g = self.problem.evaluate(w, w, state)
        state.grad_w = g
        return f, self._pull(g)

    def hessian_product(self, state, v, Mv):
        self.problem.ridge = self.ridge
        self.products_since_step += 1
        if self.products_since_step > MAX_PRODUCTS_PER_STEP:
            raise _Unhelpful
        w = self.to_w(v)
        return self._pull(self.problem.hessian_product(state, w, w))

    def column_squares(self):
        """Those of X R^-1 (the diagonal of R^-T X'X R^-1 per label) and of the joint features."""
        if self._squares is None:
            squares = self.problem.column_squares()
            C = self.problem.data.gram()
            K = sla.solve_triangular(self.R, C, trans="T", lower=False)  # R^-T C
            K = sla.solve_triangular(self.R, K.T, trans="T", lower=False)  # R^-T (R^-T C)' = R^-T C R^-1
            self._squares = np.concatenate([np.repeat(np.diag(K), self.L), squares[self.d * self.L:]])
        return self._squares


def minimise_whitened(problem, penalty, w, *, tol, max_iter, verbose, name):
    """cyrank.optim.datafit.minimise of ``problem`` + ``penalty`` (smooth) from w in the variables of
    :class:`WhitenedLoss` (R from :func:`whitening_factor` at w = 0; plain minimise when not
    :func:`worth_whitening` or R fails): an OptimResult in the original variables whose
    optimality is ||grad F|| / ||grad F at 0|| in W and whose gap is the smaller of the certificates in u and
    in W (the gap F - F* is the same in both variables, so converged in u is converged in W). When a Newton step
    takes more than MAX_PRODUCTS_PER_STEP Hessian products, the solve goes on from the last accepted point in the
    original variables (cyrank.optim.datafit.minimise on ``problem``)."""
    if not worth_whitening(problem.data):
        return minimise(problem, penalty, w, tol=tol, max_iter=max_iter, verbose=verbose, name=name)
    problem.ridge = penalty.ridge
    zero = np.zeros(problem.n_features)
    f0 = problem.fun(zero)
    grad0 = problem.grad(zero)  # the Hessian state at 0
    g0 = float(np.linalg.norm(grad0))
    factor = whitening_factor(problem)
    if factor is None:
        return minimise(problem, penalty, w, tol=tol, max_iter=max_iter, verbose=verbose, name=name)
    whitened = WhitenedLoss(problem, *factor)
    whitened._at_zero = (f0, grad0, problem.state)
    u = whitened.to_u(w)
    try:
        res = minimise(whitened, penalty, u, tol=tol, max_iter=max_iter, verbose=verbose, name=name,
                       callback=whitened.step_accepted)
    except _Unhelpful:  # on from the last accepted point in the original variables
        start = w if whitened.accepted is None else whitened.to_w(whitened.accepted)
        problem.adopt(whitened)
        problem._trial = whitened._trial
        res = minimise(problem, penalty, start, tol=tol, max_iter=max_iter, verbose=verbose, name=name)
        res.n_iter += whitened.steps
        res.n_inner += whitened.products + whitened.products_since_step
        return res
    grad_norm = float(np.linalg.norm(whitened.state.grad_w))
    if penalty.ridge > 0 and grad_norm ** 2 / (4.0 * penalty.ridge) < res.gap:
        res.gap, res.gap_kind = grad_norm ** 2 / (4.0 * penalty.ridge), "strong convexity"
    res.x = whitened.to_w(res.x)
    problem.adopt(whitened)  # the Hessian state at the returned point
    problem._trial = whitened._trial  # and the pair of states stays two distinct objects (they were lent)
    res.optimality = grad_norm / g0 if g0 > 0 else 0.0
    res.info.update(grad_norm=grad_norm, grad_norm0=g0)
    return res
