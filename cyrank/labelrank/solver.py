"""LabelRankBoost's functional layer: validated arrays and preference graphs in; coefficients, objective,
gradient norm and n_iter out (no scikit-learn import; the estimator in estimator.py is a thin wrapper).

Objective (Dekel, Manning & Singer, "Log-Linear Models for Label Ranking", NIPS 2003, section 3), with
label-specific linear functions plus optional shared joint features phi(x_i, y) = joint[i, y] (p values per
instance and label, with one weight vector theta for every label),

    f(x_i, y) = coef[y] . x_i + theta . joint[i, y],

and the subgraphs G_i1 .. G_is_i of each instance's preference graph under the chosen decomposition (graphs.py):

    F = L(w) + penalty(w),
    L(w) = sum_i (w_i/s_i) sum_k log(1 + sum_{e in E_ik} exp(f(x_i, term e) - f(x_i, init e)))

(natural log) over every parameter w = (coef, theta), with the instance weights w_i = ``sample_weight`` (None: every
w_i = 1, the paper's loss; checked by cyrank._validation.check_sample_weight). A weight counts its instance that
many times: an integer w_i is exactly instance i repeated w_i times (0: left out), in the loss, its derivatives, the
whitening and preconditioning scales and the stopping rules (all sums over instances). ``penalty`` is that of every
objective of the package (cyrank.optim.penalties): "l2" (the default) alpha (||coef||^2 + ||theta||^2), "l1" alpha
(||coef||_1 + ||theta||_1), "elasticnet" alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2). alpha = 0 is the paper's
loss; with alpha > 0 the optimum is finite on every data set (either term is coercive). Loss, gradient and Hessian
products are the Cython kernels of _loss.pyx: without joint features one pass over X in blocks of rows
(_loss.fused_pass: S_b = X_b W, the per-instance kernel, X_b' G_b; X read in its own precision, float32 included,
with float64 sums; no n x L array), O(nnz L + memberships) each. Graphs complete between label levels
(from_relevance, from_indicator, from_classes) under "domination" or "dominated" use the level form instead
(graphs.Levels, the level_* kernels): O(nnz L + n L) whatever the number of edges, and no edge is ever built
(``Options(levels=False)`` forces the edges). :func:`loss` is L alone as a public datafit
(cyrank.optim.datafit) over the parameter vector (:class:`LabelRankLoss`: its layout, and the way back to coef and
joint_coef).

Solvers:
- "boost": the parallel update of Fig. 3 exactly, over the base functions x_j [y' = y] (label-specific) and
  joint[i, y', j] (shared): rho = max_(i,e) sum_j |pi_(i,e,j)| = max_(i,e) (2 ||x_i||_1 + ||joint[i, term e] -
  joint[i, init e]||_1) over the instances of positive weight; weights q, W+, W- (each instance's scaled by
  w_i / s_i; _loss.boost_weights for the label-specific ones, per edge for the joint ones; the bound of Theorem 1
  holds for any weights >= 0, a sum of the instances' bounds); Lambda = (1/2) ln(W+ / W-) and
  coef <- coef - Lambda / rho. With alpha > 0 each coordinate's Lambda minimises the bound of Theorem 1 plus the
  penalty, (1/rho)(W+ e^-Lambda + W- e^Lambda) + alpha (coef - Lambda / rho)^2 (a strictly convex 1-d problem,
  solved by safeguarded Newton), so the objective still never rises. W+ = W- = 0 (a base function no edge
  sees): Lambda = 0 (alpha > 0: the penalty alone, coef -> 0). Exactly one of them 0 with alpha = 0: the loss
  decreases without bound along that coordinate, so it has no minimiser; Lambda is then smoothed,
  (1/2) ln((W+ + eps) / (W- + eps)) with eps = SMOOTHING (W+ + W-) (Schapire & Singer 1999), and the fit is
  reported not converged (below).
  The boosting bound is for a smooth penalty: "boost" refuses an l1 term.
- "newton": cyrank.optim.datafit.minimise on L + penalty with the exact Hessian products: trust-region
  Newton-CG (cyrank.optim.tron) when the penalty is smooth, in whitened variables when X has at most
  whitening.MAX_FEATURES columns (whitening.py: CG preconditioned by the Kronecker-factored curvature
  (c X'X + 2 alpha I) (x) P + 2 alpha I (x) 11'/L at w = 0, P the labels' centring projector; plain again from the
  last accepted point once a step takes more than whitening.MAX_PRODUCTS_PER_STEP products), proximal Newton with
  working sets (cyrank.optim.prox_newton; Yuan, Ho & Lin, JMLR 2012) with an l1 term.
- "auto": "newton".
Every solver stops when the gap F - F* is at most tol * max(1, |F|) by cyrank.optim.certificate (``gap``,
``gap_kind``: the certified bound ||p||^2 / (2 mu), mu = 2 alpha ("l2") or 2 alpha (1 - l1_ratio) ("elasticnet"),
or the Newton decrement); "boost" and proximal Newton also need ||grad F|| <= tol ||grad F at 0|| (with an l1
term the KKT violation max_r |p_r| / max_r |dL/dw_r at 0|, p the minimum-norm subgradient; ``grad_norm`` is the
relative value, reported by Newton too). Newton runs whitened (above) or, on wider X, preconditioned by the
Jacobi diagonal of the feature scales, so unnormalised features cost it few extra iterations.

No minimiser (alpha = 0 only, whatever the penalty's name): when the returned w orders every edge of every
subgraph (all margins along w <= 0, one < 0; e.g. separable preferences), F(t w) decreases strictly in t, so no
point is a minimiser and the gradient rule only means that w is large; likewise when a boosting base function
meets edges of one sign only. The fit then reports converged = False, and its message says to set alpha > 0.
"""
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from .._linear import product_parts
from .._threads import one_blas_thread
from .._validation import check_joint_features, check_option, check_param, check_sample_weight, check_X
from .._validation import warn_no_preferences
from .._validation import check_options
from ..optim.certificate import certify, group_column_squares
from ..optim.datafit import Datafit, minimise, solve_result
from ..optim.path import alpha_grid, check_path_params, run_path
from ..optim.penalties import PENALTIES, Penalty, penalty_weights
from ..optim.result import OptimResult, gap_target
from . import _loss
from .graphs import as_graphs
from .whitening import minimise_whitened

SOLVERS = ("auto", "boost", "newton")
SMOOTHING = 1e-6


@dataclass
class Options:
    """Knobs of the solvers (defaults are the measured best):

    parallel_min_rows  the loss kernels run on one thread below this many instances (-1: the shared default)
    levels             use the level form of graphs complete between levels (graphs.Levels) for "domination" and
                       "dominated": O(L) per instance instead of O(edges) (False: always the enumerated edges)
    """

    parallel_min_rows: int = -1
    levels: bool = True


class _Data:
    """X (CSR or C-ordered dense, float32/64 as given, never copied per product), the joint features J
    (n x L x p, float64, or None), the graphs (``graphs``) and either the subgraphs of one decomposition (``sub``,
    and ``edges``, the enumerated kernels' arrays) or, for "domination" and "dominated" on graphs in the level
    form (graphs.Levels), the level form's kernel arrays ``levels`` = (order, level_ptr, starts, sign), the mirror
    image with sign -1 for "dominated" (_loss.pyx), and the instance weights (``weight``: n float64, or None for 1
    each). ``state_size``: the kernels' state between a gradient and its Hessian products (one weight per
    membership, or n x L scores in the level form). ``levels``: False forces the enumerated edges (the boosting
    solver with joint features needs them). Parameters travel as one vector: W (d x L, C order), then theta (p)."""

    def __init__(self, X, G, decomposition, options, J=None, weight=None, levels=True):
        X = X.tocsr() if sp.issparse(X) else X
        self.parts = product_parts(X)  # (data, indices, indptr, dense, n, d) for _loss.product_into / fused_pass
        data, _, _, dense, n, d = self.parts
        self.X = data.reshape(n, d) if dense else X
        self.graphs, self.J = G, J
        self.L, self.d, self.n = G.n_labels, d, n
        self.levels = None
        if (levels and options.levels and G.levels is not None and isinstance(decomposition, str)
                and decomposition in ("domination", "dominated")):
            lv = G.levels if decomposition == "domination" else G.levels.mirrored()
            self.levels = (lv.order, lv.level_ptr, lv.starts, 1.0 if decomposition == "domination" else -1.0)
            self.state_size = n * G.n_labels
            self.sub = self.edges = None  # no edge is built
        else:
            self.sub = G.decompose(decomposition)
            self.state_size = self.sub.n_memberships
            # the enumerated kernels' graph arguments (edge_ptr, init, term, sub_ptr, member_ptr, members)
            self.edges = (G.edge_ptr, G.init, G.term, self.sub.sub_ptr, self.sub.member_ptr, self.sub.kernel_members)
        self.n_joint = 0 if J is None else J.shape[2]
        self.size = self.d * self.L + self.n_joint
        self._p, self._gram = None, None
        self.parallel_min_rows = options.parallel_min_rows
        self.weight = weight
        # the instances the sums run over: n, or with weights sum_i w_i (what as many repeated instances give)
        self.n_rows = n if weight is None else float(weight.sum())

    def positive(self):
        """The instances of positive weight (a boolean mask; every instance without weights)."""
        return np.ones(self.n, dtype=bool) if self.weight is None else self.weight > 0

    @property
    def p(self):
        """The membership weights of the last :meth:`loss_grad_scores` call without its own ``p``."""
        if self._p is None:
            self._p = np.empty(self.state_size)
        return self._p

    def gram(self):
        """X' diag(w) X (d x d, float64; uncentred; X'X without weights), computed on first request and kept:
        whitening.py's factor and its column squares both need it. Weighted, dense X is scaled a block of rows at
        a time (no copy of X)."""
        if self._gram is None:
            X, w = self.X, self.weight
            if w is None:
                C = X.T @ X
            elif sp.issparse(X):
                C = X.T @ X.multiply(w[:, None]).tocsr()
            else:
                C = np.zeros((self.d, self.d))
                step = max(1, (1 << 16) // max(self.d, 1))
                for i0 in range(0, self.n, step):
                    block = X[i0:i0 + step]
                    C += block.T @ (block * w[i0:i0 + step, None])
            self._gram = C.toarray() if sp.issparse(C) else np.asarray(C, dtype=np.float64)
        return self._gram

    def split(self, w):
        """(W as d x L, theta) views of a parameter vector."""
        return w[:self.d * self.L].reshape(self.d, self.L), w[self.d * self.L:]

    def scores(self, w, out=None):
        """S = X W + J theta (n x L, float64; into ``out`` when given)."""
        W, theta = self.split(np.ascontiguousarray(w, dtype=np.float64))
        S = np.empty((self.n, self.L)) if out is None else out
        _loss.product_into(*self.parts, W, S, False)
        if self.n_joint:
            S += self.J @ theta
        return S

    def loss_grad_scores(self, S, A, B, p=None):
        """The loss at S; fills p (default self.p), A and B (_loss.loss_grad)."""
        if self.levels is not None:
            return _loss.level_loss_grad(S, *self.levels, self.p if p is None else p, A, B, self.parallel_min_rows,
                                         self.weight)
        return _loss.loss_grad(S, *self.edges, self.p if p is None else p, A, B, self.parallel_min_rows, self.weight)

    def hess_scores(self, dS, p, dG):
        """dG = the Hessian of the loss in the scores (membership weights p) times dS (_loss.hess_scores)."""
        if self.levels is not None:
            _loss.level_hess_scores(dS, *self.levels, p, dG, self.parallel_min_rows, self.weight)
            return
        _loss.hess_scores(dS, *self.edges, p, dG, self.parallel_min_rows, self.weight)

    def fused(self, v, p, hessian, out, holder):
        """_loss.fused_pass with the parameter vector v (no joint features): the loss at v (p filled) and its
        gradient X' G into out, or (``hessian``) out = X' H X V at the weights p; holder.acc keeps the chunk
        accumulators."""
        V = np.ascontiguousarray(v, dtype=np.float64).reshape(self.d, self.L)
        if self.levels is not None:
            return _loss.level_fused_pass(*self.parts, V, *self.levels, p, hessian, out, holder,
                                          self.parallel_min_rows, self.weight)
        return _loss.fused_pass(*self.parts, V, *self.edges, p, hessian, out, holder, self.parallel_min_rows,
                                self.weight)

    def mean_curvature(self, p):
        """sum_i trace(H_i) at the state p (_loss.mean_curvature; whitening.py's scale)."""
        if self.levels is not None:
            return _loss.level_mean_curvature(*self.levels, p, self.weight)
        return _loss.mean_curvature(*self.edges, p, self.L, self.weight)

    def xt(self, G):
        """The gradient in the parameters of sum(G * S): X' G (d x L) and sum_(i,y) G[i, y] J[i, y] (p), as one
        vector."""
        grad = np.empty(self.size)
        _loss.product_into(*self.parts, G, grad[:self.d * self.L].reshape(self.d, self.L), True)
        if self.n_joint:
            grad[self.d * self.L:] = np.tensordot(G, self.J, axes=([0, 1], [0, 1]))
        return grad


class _State:
    """A point of the trial/commit protocol: its parameter vector x; its membership weights live in the loss's
    one buffer while it owns it (:meth:`LabelRankLoss.weights`)."""

    def __init__(self):
        self.x = None


class LabelRankLoss(Datafit):
    """The loss L of LabelRankBoost (module docstring) on one data set, as a datafit (cyrank.optim.datafit): a
    SmoothProblem evaluating L(w) + ridge ||w||^2 (``ridge`` 0 unless set; :func:`cyrank.optim.datafit.minimise`
    sets it from the penalty), with ``fun(w)``, ``grad(w)`` and ``hess_vec(v)`` (at the point of the last ``grad``
    call). Built by :func:`loss` (checked data) or by :func:`solve` and :func:`path`.

    Layout of the parameter vector w (``n_features`` = n_features_in * n_labels + n_joint entries): first
    W = coef' (n_features_in x n_labels) flattened in C order, so coef[y, j] is w[j * n_labels + y]; then
    theta = joint_coef (n_joint entries, none without joint features). :meth:`coefficients` turns a vector back
    into (coef, joint_coef), :meth:`parameters` the other way, and :meth:`result` an OptimResult of
    :func:`cyrank.optim.datafit.minimise` into the SolveResult :func:`solve` returns.

    L is a sum over instances: the losses of disjoint sets of rows (X[A], G[A], joint[A], sample_weight[A]) sum to
    the loss of their union, and so do their gradients, Hessian products and :meth:`column_squares` (the shards of
    a distributed fit).

    Attributes
    ----------
    n_features : int
        Size of w.
    n_rows : int or float
        Instances (the rows the column squares sum over); with sample weights their sum.
    n_labels, n_features_in, n_joint : int
        Labels, columns of X, joint features per label (0 without them).
    """

    def __init__(self, data, ridge=0.0):
        self.data, self.ridge = data, float(ridge)
        L = data.L
        self.n_features, self.n_rows = data.size, data.n_rows
        self.n_labels, self.n_features_in, self.n_joint = L, data.d, data.n_joint
        self._work, self.acc = None, None  # n x L buffers (joint features only); fused_pass's chunk accumulators
        self._p, self._owner = None, None  # the membership weights, and the state whose point they are of
        self._squares = None
        super().__init__()

    def coefficients(self, w):
        """(coef of shape (n_labels, n_features_in), joint_coef of shape (n_joint,) or None without joint features)
        of a parameter vector w (copies)."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.n_features,):
            raise ValueError(f"a parameter vector of this loss has {self.n_features} entries "
                             f"(n_features_in * n_labels + n_joint); got shape {w.shape}")
        W, theta = self.data.split(w)
        return np.ascontiguousarray(W.T), (theta.copy() if self.n_joint else None)

    def parameters(self, coef, joint_coef=None):
        """The parameter vector w of (coef (n_labels x n_features_in), joint_coef (n_joint) or None: zeros)."""
        return _parameters(self.data, coef, joint_coef, "coef")

    def result(self, res, solver="newton"):
        """The SolveResult of ``res``, an OptimResult of :func:`cyrank.optim.datafit.minimise` over this loss's
        parameter vector (or over any loss of the same layout, e.g. a sum of row shards): coef and joint_coef
        (:meth:`coefficients`), objective, grad_norm (the relative stopping measure, 0 when the loss is flat at
        0), n_iter, n_cg_iter, converged, gap, gap_kind, message, solver, n_labels and n_features_in, as
        :func:`solve` returns them."""
        coef, joint_coef = self.coefficients(res.x)
        return solve_result(res, self, coef=coef, joint_coef=joint_coef, solver=solver, n_labels=self.n_labels,
                            n_features_in=self.n_features_in)

    def column_squares(self):
        """Per coordinate of w, the scale of the Hessian's diagonal: sum_i w_i x_ij^2 for every label's weight j
        (the same for each label; not centred: a constant column is a bias per label, which the loss sees), and the
        within-instance centred squares of the joint features for theta, weighted alike (only differences between
        labels count: cyrank.optim.certificate.group_column_squares)."""
        if self._squares is None:
            D = self.data
            if sp.issparse(D.X):
                x = D.X.data.astype(np.float64)
                if D.weight is not None:
                    x *= np.sqrt(np.repeat(D.weight, np.diff(D.X.indptr)))
                squares = np.bincount(D.X.indices, weights=x * x, minlength=D.d)
            elif D.weight is None:
                squares = np.einsum("ij,ij->j", D.X, D.X, dtype=np.float64)
            else:
                squares = np.einsum("ij,ij,i->j", D.X, D.X, D.weight, dtype=np.float64)
            squares = np.repeat(squares, D.L)
            if D.n_joint:
                n, L, p = D.J.shape
                J = D.J if D.weight is None else D.J * np.sqrt(D.weight)[:, None, None]
                joint = group_column_squares(J.reshape(n * L, p), offsets=np.arange(0, n * L + 1, L))
                squares = np.concatenate([squares, joint])
            self._squares = squares
        return self._squares

    def hessian_block(self, ws):
        """H[ws, ws]: the rows and columns ``ws`` (indices into w) of the Hessian of L + ridge ||w||^2 at the point
        of the last ``grad`` call, formed from its structure rather than by |ws| Hessian products. With H_i the
        L x L Hessian of instance i's loss in its scores (its column y for every i: one kernel call on the
        direction e_y), the label weights' block is H[(j, y'), (k, y)] = sum_i x_ij H_i[y', y] x_ik (for each y,
        one product Z' X[:, K_y] with Z[i, (j, y')] = x_ij H_i[y', y]), the joint weights' sum_i J_i' H_i J_i and
        the cross terms sum_i x_ij (H_i J_i)[y, b]. Cost: L kernel calls and L products of X's columns in ws."""
        D = self.data
        ws = np.asarray(ws, dtype=np.intp)
        m, dL = ws.size, D.d * D.L
        H = np.zeros((m, m))
        pos = np.flatnonzero(ws < dL)  # label weights: (feature, label) = divmod(ws, L)
        feat, lab = ws[pos] // D.L, ws[pos] % D.L
        jpos = np.flatnonzero(ws >= dL)  # joint weights
        jcol = ws[jpos] - dL
        Xw = D.X[:, feat]
        if sp.issparse(Xw):
            Xw = Xw.tocsc()
            entry_rows, entry_labels = Xw.indices, np.repeat(lab, np.diff(Xw.indptr))
        of_label = [np.flatnonzero(lab == y) for y in range(D.L)]
        X_of = [Xw[:, k] for k in of_label]
        M = np.zeros((D.n, D.L, jcol.size)) if jcol.size else None  # (H_i J_i)[y, b], b in jcol
        E, col = np.zeros((D.n, D.L)), np.empty((D.n, D.L))
        p = self.weights(self.state)
        for y in range(D.L):
            E[:, y] = 1.0
            D.hess_scores(E, p, col)  # col[i, y'] = H_i[y', y]
            E[:, y] = 0.0
            if M is not None:
                M += col[:, :, None] * D.J[:, y, jcol][:, None, :]
            if of_label[y].size:
                if sp.issparse(Xw):
                    Z = sp.csc_matrix((Xw.data * col[entry_rows, entry_labels], Xw.indices, Xw.indptr),
                                      shape=Xw.shape)
                    block = (Z.T @ X_of[y]).toarray()
                else:
                    block = (Xw * col[:, lab]).T @ X_of[y]
                H[np.ix_(pos, pos[of_label[y]])] = block
        if M is not None:
            H[np.ix_(jpos, jpos)] = np.einsum("iya,iyb->ab", D.J[:, :, jcol], M)
            for y in range(D.L):
                if of_label[y].size:
                    cross = np.asarray(X_of[y].T @ M[:, y, :])
                    H[np.ix_(pos[of_label[y]], jpos)] = cross
                    H[np.ix_(jpos, pos[of_label[y]])] = cross.T
        H[np.diag_indices(m)] += 2.0 * self.ridge
        return H

    def new_state(self):
        return _State()

    def weights(self, state):
        """The membership weights p at the state's point: the loss's one buffer (a second one per state would
        cost as much as the graphs), evaluated again at state.x when another point's evaluation overwrote it
        since (after TRON rejects a step: rare)."""
        if self._owner is not state:
            if state.x is None:
                raise ValueError("no point evaluated yet: call grad(w) before hess_vec(v)")
            self.evaluate(state.x, state.x, state)
        return self._p

    def transfer(self, source, target):
        """``target`` takes over ``source``'s point (and the weight buffer when ``source`` owns it)."""
        target.x = source.x
        if self._owner is source:
            self._owner = target

    def evaluate(self, w, Mw, state):
        D = self.data
        if self._p is None:
            self._p = np.empty(D.state_size)
        state.x, self._owner = np.array(w, dtype=np.float64), state
        if not D.n_joint:  # one pass over X (_loss.fused_pass): no n x L array
            grad = np.empty(self.n_features)
            value = D.fused(w, self._p, False, grad, self)
            return value + self.ridge * float(w @ w), grad + 2.0 * self.ridge * w
        S, A, B = self._buffers()
        value = D.loss_grad_scores(D.scores(w, out=S), A, B, p=self._p)
        np.subtract(A, B, out=A)  # the gradient in the scores
        return value + self.ridge * float(w @ w), D.xt(A) + 2.0 * self.ridge * w

    def hessian_product(self, state, v, Mv):
        D = self.data
        p = self.weights(state)  # first: evaluating it again uses the work buffers
        if not D.n_joint:
            out = np.empty(self.n_features)
            D.fused(v, p, True, out, self)
            return out + 2.0 * self.ridge * v
        S, A, _ = self._buffers()
        D.hess_scores(D.scores(v, out=S), p, A)
        return D.xt(A) + 2.0 * self.ridge * v

    def _buffers(self):
        """S, A, B (n x L each): the work buffers of a fit with joint features, allocated once."""
        if self._work is None:
            self._work = tuple(np.empty((self.data.n, self.data.L)) for _ in range(3))
        return self._work


def check_params(*, decomposition, solver, penalty="l2", alpha, l1_ratio=0.5, max_iter, tol):
    """(the solver to run, the Penalty, max_iter, tol), validated; "boost" with an l1 term is refused."""
    check_option("solver", solver, SOLVERS)
    _check_decomposition(decomposition)
    check_option("penalty", penalty, PENALTIES)
    alpha = check_param("alpha", alpha, low=0.0)
    check_param("l1_ratio", l1_ratio, low=0.0, high=1.0)
    pen = Penalty(*penalty_weights(penalty, alpha, l1_ratio))
    if solver == "boost" and not pen.smooth:
        raise ValueError(f"solver='boost' minimises a smooth objective (the bound of Theorem 1 plus a ridge) and "
                         f"cannot handle the l1 term of penalty={penalty!r} with alpha={alpha!r}"
                         + (f", l1_ratio={l1_ratio!r}" if penalty == "elasticnet" else "")
                         + "; use solver='auto' or 'newton' (proximal Newton), or penalty='l2'")
    max_iter = check_param("max_iter", max_iter, low=1, integer=True)
    tol = check_param("tol", tol, low=0.0, low_open=True)
    return ("newton" if solver == "auto" else solver), pen, max_iter, tol


def _check_decomposition(decomposition):
    """A ValueError unless ``decomposition`` is a callable or one of graphs.DECOMPOSITIONS."""
    if not callable(decomposition):
        from .graphs import DECOMPOSITIONS

        check_option("decomposition", decomposition, DECOMPOSITIONS)


def _check_data(X, G, joint, sample_weight=None):
    """Validated X, graphs, joint features (n x L x p float64, or None) and instance weights (n float64, or
    None; cyrank._validation.check_sample_weight, and not 0 on every instance with a preference edge)."""
    X = check_X(X, accept_sparse=("csr", "csc"))
    G = as_graphs(G, X.shape[0])
    if joint is not None:
        joint = check_joint_features(joint, X.shape[0], G.n_labels)
    weight = check_sample_weight(sample_weight, X.shape[0], what="instance")
    if weight is not None and G.n_edges and not weight[np.diff(G.edge_ptr) > 0].any():
        raise ValueError("sample_weight is 0 on every instance with a preference edge, so the loss is 0 whatever "
                         "the model; give some instances with preferences a positive weight")
    return X, G, joint, weight


def _parameters(data, coef, joint_coef, what):
    """The parameter vector of (coef, joint_coef), checked against the data's shapes."""
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != (data.L, data.d) or not np.all(np.isfinite(coef)):
        raise ValueError(f"{what} must be a finite array of shape ({data.L}, {data.d}); got shape {coef.shape}")
    theta = np.zeros(data.n_joint) if joint_coef is None else np.asarray(joint_coef, dtype=np.float64).ravel()
    if theta.shape != (data.n_joint,) or not np.all(np.isfinite(theta)):
        raise ValueError(f"joint coefficients must be finite, one per joint feature ({data.n_joint}); got "
                         f"{theta.shape}")
    return np.concatenate([coef.T.ravel(), theta])


def loss(X, G, *, joint=None, decomposition="domination", sample_weight=None):
    """The unpenalised loss L (module docstring; ``sample_weight``: the instance weights w_i, None for 1) of
    (X, G, joint) as a :class:`LabelRankLoss` (ridge 0), over the
    flattened parameter vector w = (coef' (n_features x n_labels, C order), then joint_coef): ``fun(w)``,
    ``grad(w)``, ``hess_vec(v)``; ``coefficients(w)`` gives (coef, joint_coef) back. The data are checked as by
    :func:`solve`. Losses of disjoint sets of rows sum to the loss of their union (a distributed fit's shards);
    :func:`cyrank.optim.datafit.minimise` minimises it plus a penalty."""
    _check_decomposition(decomposition)
    X, G, joint, weight = _check_data(X, G, joint, sample_weight)
    return LabelRankLoss(_Data(X, G, decomposition, Options(), joint, weight))


def objective(X, G, coef, *, joint=None, joint_coef=None, decomposition="domination", penalty="l2", alpha=0.0,
              l1_ratio=0.5, sample_weight=None):
    """F (module docstring) at coef (n_labels x n_features) and, with joint features, joint_coef (p);
    ``sample_weight``: the instance weights w_i of L (None: 1)."""
    X, G, joint, weight = _check_data(X, G, joint, sample_weight)
    check_param("l1_ratio", l1_ratio, low=0.0, high=1.0)
    pen = Penalty(*penalty_weights(penalty, alpha, l1_ratio))
    data = _Data(X, G, decomposition, Options(), joint, weight)
    w = _parameters(data, coef, joint_coef, "coef")
    n, L = data.n, data.L
    return data.loss_grad_scores(data.scores(w), np.empty((n, L)), np.empty((n, L))) + pen.value(w)


def solve(X, G, *, joint=None, decomposition="domination", solver="auto", penalty="l2", alpha=0.0, l1_ratio=0.5,
          max_iter=1000, tol=1e-6, coef_init=None, verbose=0, options=None, sample_weight=None):
    """Minimise F (module docstring) on X (n x d, dense or sparse), preference graphs G (PreferenceGraphs or a
    multilabel indicator matrix), optional joint features (n x n_labels x p) and optional instance weights
    ``sample_weight`` (n values >= 0: F = sum_i w_i (1/s_i) sum_k L_ik + penalty), with the penalty ``penalty``
    ("l2" alpha ||w||^2, "l1" alpha ||w||_1, "elasticnet" alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2), w
    every parameter: coef and joint_coef). Returns a SolveResult with coef (n_labels x n_features), joint_coef (p,
    or None without joint features), objective, grad_norm (||grad F|| / ||grad F at 0||; with an l1 term the
    relative KKT violation), gap, gap_kind, n_iter, n_cg_iter (with an l1 term: the model's inner sweeps),
    converged, solver, n_labels, n_features_in. ``coef_init``: a starting coef (and with joint features a pair
    (coef, joint_coef))."""
    solver, pen, max_iter, tol = check_params(decomposition=decomposition, solver=solver, penalty=penalty,
                                              alpha=alpha, l1_ratio=l1_ratio, max_iter=max_iter, tol=tol)
    X, G, joint, weight = _check_data(X, G, joint, sample_weight)
    options = check_options(options, Options, "cyrank.labelrank.solve")
    # the boosting update's joint base functions need every edge's weight (_JointBoost): the enumerated form
    data = _Data(X, G, decomposition, options, joint, weight, levels=not (solver == "boost" and joint is not None))
    if G.n_edges == 0:
        warn_no_preferences()
    w = np.zeros(data.size)
    if coef_init is not None:
        coef, theta = coef_init if isinstance(coef_init, tuple) else (coef_init, None)
        w = _parameters(data, coef, theta, "coef_init")
    return _solve_data(LabelRankLoss(data), solver, pen, w, tol=tol, max_iter=max_iter, verbose=verbose)[0]


def _solve_data(problem, solver, pen, w, *, tol, max_iter, verbose):
    """:func:`solve` on checked data (``problem``, a LabelRankLoss) from the parameter vector w (overwritten by
    "boost"): (SolveResult, the solution's parameter vector)."""
    data = problem.data
    with one_blas_thread():
        if solver == "newton":
            name = "LabelRankBoost (newton)" if pen.smooth else "LabelRankBoost (prox_newton)"
            run = minimise_whitened if pen.smooth else minimise
            res = run(problem, pen, w, tol=tol, max_iter=max_iter, verbose=verbose, name=name)
            one_sided = False
        else:
            problem.ridge = pen.ridge
            g0 = float(np.linalg.norm(problem.grad(np.zeros(data.size))))
            precond = problem.preconditioner()  # None unless the columns' scales call for it
            objective, n_iter, grad_norm, converged, message, gap, gap_kind, one_sided = _boost(
                data, w, pen.ridge, tol, max_iter, g0, verbose, problem, precond)
            res = OptimResult(x=w, objective=objective, n_iter=n_iter, converged=converged,
                              optimality=grad_norm / g0 if g0 > 0 else 0.0, optimality_name="grad_norm", gap=gap,
                              gap_kind=gap_kind, message=message, info={"grad_norm0": g0})
    if pen.smooth and pen.ridge == 0.0:  # alpha = 0: the loss alone
        why = ("some base function meets edges of one sign only" if solver == "boost" and one_sided else
               _orders_every_edge(data, res.x, res.objective))
        if why:
            res.converged = False
            res.message = (f"LabelRankBoost ({solver}): with alpha=0 the objective has no minimiser: {why}, so the "
                           "loss decreases without bound along it and the coefficients only grow (largest |coef| "
                           f"now {float(np.max(np.abs(res.x), initial=0.0)):.3g}); set alpha > 0 (e.g. alpha=1e-3) "
                           "for a finite optimum. " + res.message)
    return problem.result(res, solver), res.x


def path(X, G, *, joint=None, alphas=None, n_alphas=20, eps=1e-3, penalty="l1", l1_ratio=0.5,
         decomposition="domination", max_iter=1000, tol=1e-6, verbose=0, sample_weight=None):
    """The regularisation path of LabelRankBoost (cyrank.optim.path): one :func:`solve` (solver "newton") per
    alpha, decreasing, each warm-started from the previous solution, on data checked and decomposed once.

    Parameters
    ----------
    X, G, joint, sample_weight : arrays
        The data and the instance weights, as for :func:`solve`.
    alphas : sequence of float >= 0 or None, default=None
        The alphas (sorted decreasing). None: ``n_alphas`` values from alpha_max down to ``eps`` * alpha_max,
        geometrically spaced, alpha_max = max_r |dL/dw_r at 0| (/ l1_ratio for "elasticnet"), the smallest alpha
        with w = 0 optimal ("l2" needs ``alphas``).
    n_alphas : int >= 1, default=20
    eps : float in (0, 1), default=1e-3
    penalty, l1_ratio, decomposition, max_iter, tol, verbose : any
        As for :func:`solve`.

    Returns
    -------
    PathResult
        Per alpha: the parameter vector (column k of the sparse ``coefs``, in the layout of :class:`LabelRankLoss`:
        ``loss(X, G, joint=joint).coefficients(coefs[:, k].toarray().ravel())`` gives (coef, joint_coef)),
        objective, optimality measure (``kkt_violations``: the ``grad_norm`` of :func:`solve`), iterations,
        convergence and the solver's message (nothing is warned here).
    """
    n_alphas, eps = check_path_params(penalty, n_alphas, eps)
    _, _, max_iter, tol = check_params(decomposition=decomposition, solver="auto", penalty=penalty, alpha=0.0,
                                       l1_ratio=l1_ratio, max_iter=max_iter, tol=tol)
    X, G, joint, weight = _check_data(X, G, joint, sample_weight)
    data = _Data(X, G, decomposition, Options(), joint, weight)
    if G.n_edges == 0:
        warn_no_preferences()
    problem = LabelRankLoss(data)

    def top():
        problem.ridge = 0.0
        with one_blas_thread():
            return float(np.max(np.abs(problem.grad(np.zeros(data.size))), initial=0.0)), 0.0

    alphas, a_max = alpha_grid(alphas, n_alphas, eps, penalty, l1_ratio, top)

    def fit(alpha, coef):
        pen = Penalty(*penalty_weights(penalty, alpha, l1_ratio))
        w = np.zeros(data.size) if coef is None else coef.copy()
        res, w = _solve_data(problem, "newton", pen, w, tol=tol, max_iter=max_iter, verbose=verbose)
        return SimpleNamespace(coef=w, objective=res.objective, optimality=res.grad_norm, n_iter=res.n_iter,
                               converged=res.converged, message=res.message)

    return run_path(alphas, a_max, fit)


def _orders_every_edge(data, w, f):
    """A reason (str) when F at alpha = 0 has no minimiser along w, else "": every edge of a subgraph has margin
    S[term] - S[init] <= 0 along w (rounding: <= 1e-9 max |margin|), one < 0, and F(2 w) < F(w) is seen. Then
    F(x + t w) decreases strictly in t at every x (the loss is increasing in each margin), so nothing is optimal.
    O(nnz L + memberships)."""
    if not np.any(w):
        return ""
    if data.levels is not None:  # every edge is in a subgraph: the margins from the level form, no edge built
        lv = data.graphs.levels
        high, top = _loss.level_margins(data.scores(w), lv.order, lv.level_ptr, lv.starts,
                                        data.positive().view(np.uint8))
    else:
        G = data.graphs
        used = np.unique(data.sub.members)
        used = used[data.positive()[G.instance_of_edge()[used]]]  # the edges the loss sees
        if used.size == 0:
            return ""
        S = data.scores(w)
        inst = G.instance_of_edge()[used]
        m = S[inst, G.term[used]] - S[inst, G.init[used]]
        high, top = float(m.max()), float(np.max(np.abs(m)))
    if top == 0.0 or high > 1e-9 * top:
        return ""
    n, L = data.n, data.L
    f2 = data.loss_grad_scores(data.scores(2.0 * w), np.empty((n, L)), np.empty((n, L)))
    if not f2 < f:
        return ""
    return "the coefficients order every preference edge (separable preferences)"


def _boost_step(Wp, Wm, w, alpha, rho):
    """Lambda (one per base function) of Fig. 3 (alpha = 0) or of the penalised bound (module docstring), and
    whether a one-sided coordinate needed smoothing."""
    one_sided = (Wp > 0) != (Wm > 0)
    if alpha == 0.0:
        eps = np.where(one_sided, SMOOTHING * (Wp + Wm), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = 0.5 * np.log((Wp + eps) / (Wm + eps))
        return np.where((Wp > 0) | (Wm > 0), lam, 0.0), bool(one_sided.any())
    # minimise phi(t) = (Wp e^-t + Wm e^t) / rho + alpha (w - t / rho)^2 per coordinate: convex, phi'' > 0
    t = np.zeros_like(w)
    c = 2.0 * alpha / rho
    for _ in range(100):
        ep, em = np.exp(-t), np.exp(t)
        g = (Wm * em - Wp * ep) / rho - c * (w - t / rho)
        h = (Wm * em + Wp * ep) / rho + c / rho
        step = np.clip(g / h, -1.0, 1.0)  # a damped Newton step: at most 1 in t (e^t changes by e at most)
        t -= step
        if np.max(np.abs(step), initial=0.0) <= 1e-12 * (1.0 + np.max(np.abs(t), initial=0.0)):
            break
    return t, False


class _JointBoost:
    """The joint base functions' part of Fig. 3: pi_(e, j) = joint[i, term e, j] - joint[i, init e, j] per edge,
    and W+ / W- = sum_e (w_i q_e / s_i) (pi_(e, j))+ / (pi_(e, j))- with q_e = the sum of the edge's membership
    weights (O(edges p) per iteration)."""

    def __init__(self, data):
        G, sub = data.graphs, data.sub
        inst = G.instance_of_edge()
        self.pi = data.J[inst, G.term] - data.J[inst, G.init]  # edges x p
        self.members, self.n_edges = sub.members, G.n_edges
        s = sub.n_subgraphs
        scale = np.where(s > 0, 1.0 / np.maximum(s, 1), 0.0)  # w_i / s_i
        if data.weight is not None:
            scale *= data.weight
        self.inv_s = scale[inst]
        self.edge_l1 = np.abs(self.pi).sum(axis=1)
        self.inst = inst

    def weights(self, p):
        q = np.bincount(self.members, p, self.n_edges) * self.inv_s
        return np.maximum(self.pi, 0.0).T @ q, np.maximum(-self.pi, 0.0).T @ q


def _boost(data, w, alpha, tol, max_iter, g0, verbose, problem, precond):
    """Fig. 3 in place on w (module docstring): (objective, iterations, ||grad||, converged, message, gap,
    gap_kind, whether a one-sided base function was smoothed). ``alpha``: the ridge. It stops when
    ||grad|| <= tol ||grad at 0|| and the gap (cyrank.optim.certificate, with the Hessian of ``problem``) is
    <= tol * max(1, |F|); when the first holds and not the second, the gradient target is lowered by
    sqrt(target / gap) (at least 2x) and the updates go on."""
    X = data.X
    n, L, d = data.n, data.L, data.d
    if sp.issparse(X):
        rows_l1 = np.asarray(abs(X).sum(axis=1)).ravel()
        args = (X.data, X.indices, X.indptr, False)
    else:
        rows_l1 = np.abs(X).sum(axis=1)
        args = (X.ravel(), np.zeros(1, np.int32), np.zeros(1, np.int32), True)
    joint = _JointBoost(data) if data.n_joint else None
    if joint is None:  # the bound over the edges the loss sees: the instances with an edge and a positive weight
        seen = (np.diff(data.graphs.edge_ptr) > 0) & data.positive()
        rho = float(np.max(2.0 * rows_l1[seen], initial=0.0))
    else:
        inst = data.graphs.instance_of_edge()
        edge_rho = (2.0 * rows_l1[inst] + joint.edge_l1)[data.positive()[inst]]
        rho = float(np.max(edge_rho, initial=0.0))
    A, B = np.empty((n, L)), np.empty((n, L))
    Wp, Wm = np.empty(data.size), np.empty(data.size)
    smoothed = False
    n_iter, converged = 0, False
    gap, gap_kind, tol_grad = np.inf, "", tol
    f = data.loss_grad_scores(data.scores(w), A, B) + alpha * float(w @ w)
    while True:
        _loss.boost_weights(*args, d, A, B, Wp[:d * L].reshape(d, L), Wm[:d * L].reshape(d, L))
        if joint is not None:
            Wp[d * L:], Wm[d * L:] = joint.weights(data.p)
        grad = Wp - Wm + 2.0 * alpha * w
        grad_norm = float(np.linalg.norm(grad))
        if rho == 0.0:
            converged, gap, gap_kind = True, 0.0, "exact"
            break
        if grad_norm <= tol_grad * g0:
            problem.fun(w)
            problem.grad(w)  # the Hessian state at w
            gap, gap_kind, _ = certify(problem.hess_vec, w, grad, f, tol, strong_convexity=2.0 * alpha,
                                       precond=precond)
            if gap <= gap_target(tol, f):
                converged = True
                break
            tol_grad = min(tol_grad, grad_norm / g0) * min(max(np.sqrt(gap_target(tol, f) / gap), 1e-3), 0.5)
        if n_iter >= max_iter:
            break
        n_iter += 1
        lam, one_sided = _boost_step(Wp, Wm, w, alpha, rho)
        smoothed |= one_sided
        w -= lam / rho
        f = data.loss_grad_scores(data.scores(w), A, B) + alpha * float(w @ w)
        if verbose:
            print(f"LabelRankBoost boost iter {n_iter:5d}: objective {f:.12g}  |grad| {grad_norm / g0:.3e}")
    message = ""
    if not converged:
        measured = (f"relative gradient norm {grad_norm / g0:.3g} > tol={tol:g}" if grad_norm > tol * g0 else
                    f"objective gap {gap:.3g} ({gap_kind}) > tol * max(1, |objective|) = {gap_target(tol, f):.3g}")
        message += (f"LabelRankBoost (boost) stopped after max_iter={max_iter} iterations with {measured}; "
                    "increase max_iter or tol, or use solver='newton'")
    return f, n_iter, grad_norm, converged, message, gap, gap_kind, smoothed
