"""RankSVM: linear and kernel rankSVM (kernel-ranksvm.txt; DESIGN.md Objective 2).

With preference pairs P = {(i, j): qid_i = qid_j, y_i > y_j} and loss(t) = max(0, t)^2 ("squared_hinge") or
max(0, t) ("hinge"):

    linear   min_w     w'w / 2      + C sum_{(i,j) in P} loss(1 - w'(x_i - x_j))                     (3.11)
    kernel   min_beta  beta'Q beta / 2 + C sum_{(i,j) in P} loss(1 - (Q beta)_i + (Q beta)_j)        (3.12)-(3.13)

with Q = K(X, X) and predictions f(x) = sum_m beta_m K(x, x_m). The pair sums are never enumerated: the loss,
gradient and Hessian-vector products come from order-statistic sums per query in O(l log l)
(_ostree.pyx, Appendix B).

* squared hinge: trust-region Newton-CG (cyrank.optim.tron, section 4.1), stopping at
  ||grad|| <= tol * ||grad at 0|| (LIBLINEAR's rule); ``grad_norm_`` is that ratio at the end.
* hinge: the 1-slack cutting-plane method (Joachims 2006; section 2.2, (2.8)) of cyrank.optim.cutting_plane,
  with its constraints scaled by 1/|P|:  xi' >= (1/|P|) sum_P c_ij - <w, (1/|P|) sum_P c_ij (x_i - x_j)>  and
  C' = C |P|, which is the same problem. It stops when the most violated constraint exceeds the working set's
  slack by at most ``tol`` (in units of the mean hinge loss per pair), so the objective is within
  tol * C |P| = tol * objective(0) of the optimum. ``duality_gap_`` is objective_ minus the dual value of the
  last restricted problem, a certified bound on the distance to the optimum.
"""
import contextlib
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._base import LinearRankerMixin, RankerMixin
from .._memory import check_memory
from .._queries import QueryGroups
from .._threads import one_blas_thread
from .._validation import (check_feature_scale, check_has_pairs, check_option, check_param, check_ranking_data,
                           check_verbose, check_X, max_abs)
from ..io import register_model
from ..optim._simplex_qp import solve_simplex_qp
from ..optim.cutting_plane import cutting_plane
from ..optim.smooth import SmoothProblem
from ..optim.tron import tron
from . import _kernel, _pairloss

LOSSES = ("squared_hinge", "hinge")
KERNELS = ("linear", "rbf", "poly", "precomputed")
_MB = 1 << 20
SMALL_KERNEL_ROWS = 5000  # below this, products with Q use one BLAS thread
MAX_PRODUCT_SECONDS = 60.0  # a blocked kernel product estimated slower than this is refused before the fit
WARN_PRODUCT_SECONDS = 1.0  # ... and one slower than this is announced with a warning


# ---------------------------------------------------------------------------------------------- data layout
def make_layout(y, qid):
    """The query layout of the kernels (see _pairloss.Layout) and the number of preference pairs.

    Rows are grouped by qid (stable sort), queries with a single label level are left out, and every row
    gets the dense rank of its label inside its query. ``qid=None``: one query.
    """
    y = np.asarray(y, dtype=np.float64)
    groups = QueryGroups(np.zeros(y.shape[0], np.int64) if qid is None else qid, y)
    check_has_pairs(groups, "RankSVM")
    n = groups.n_samples
    keep_q = groups.n_levels >= 2
    keep = np.repeat(keep_q, groups.sizes)
    rows = groups.order[keep]
    rank = groups.level_sorted[keep]
    sizes = groups.sizes[keep_q]
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    layout = _pairloss.Layout(rows, offsets, rank, groups.n_levels[keep_q], n)
    return layout, groups.n_pairs_possible


def _linear_parts(X):
    """(data, indices, indptr, dense, n_features) of X for the linear kernels: CSR or C-ordered dense.

    A sparse X whose dense form takes no more memory than its CSR arrays (e.g. a LETOR file listing every
    feature) is made dense: a dense row is read without index loads, about twice as fast.
    """
    if sp.issparse(X):
        X = X.tocsr() if X.format != "csr" else X
        dense_bytes = X.shape[0] * X.shape[1] * X.data.itemsize
        if dense_bytes > X.nnz * (X.data.itemsize + X.indices.itemsize):
            return (X.data, X.indices, X.indptr, False, X.shape[1])
        X = X.toarray()
    X = np.ascontiguousarray(X)
    dummy = np.zeros(1, dtype=np.int64)
    return (X.ravel(), dummy, dummy, True, X.shape[1])


# ---------------------------------------------------------------------------------------------- objectives
class _PairState:
    """Scores and their order at one point (for the Hessian products), and the number of active pairs there."""

    def __init__(self, layout):
        self.f, self.perm = layout.new_state()
        self.n_active = 0


class LinearSquaredHinge(SmoothProblem):
    """w'w / 2 + C sum_P max(0, 1 - w'(x_i - x_j))^2 for :func:`cyrank.optim.tron.tron`.

    One pass over X gives the loss and the gradient w + C X'dL/df; the state keeps the sorted scores whose active
    pairs the Hessian-vector product v + 2C X'A'A X v uses.
    """

    def __init__(self, X, layout, C):
        self.parts = _linear_parts(X)
        self.d = self.parts[-1]
        self.layout = layout
        self.C = float(C)
        super().__init__()

    def loss(self, w, squared=True):
        """(loss, number of active pairs) at w."""
        f, perm = self.layout.new_state()
        xg = np.empty(self.d)
        return _pairloss.linear_fun_grad(*self.parts, self.layout, np.ascontiguousarray(w, dtype=np.float64),
                                         squared, f, perm, xg)

    def new_state(self):
        return _PairState(self.layout)

    def evaluate(self, w, Mw, state):
        xg = np.empty(self.d)
        loss, state.n_active = _pairloss.linear_fun_grad(*self.parts, self.layout, w, True, state.f, state.perm, xg)
        return 0.5 * float(w @ w) + self.C * loss, w + self.C * xg

    def hessian_product(self, state, s, Ms):
        out = np.empty(self.d)
        _pairloss.linear_hess(*self.parts, self.layout, state.f, state.perm, np.ascontiguousarray(s), out)
        return s + 2.0 * self.C * out


class KernelSquaredHinge(SmoothProblem):
    """beta'Q beta / 2 + C sum_P max(0, 1 - (Q beta)_i + (Q beta)_j)^2 (3.13) for TRON, in the inner product
    <a, b> = a'Q b (``metric``; see cyrank.optim.tron).

    In that inner product the gradient is beta + C dL/df (Q times it is (B.2)) and the Hessian-vector product
    v + 2C A'A Q v (Q times it is (B.3)); neither needs a product with Q once TRON supplies Q beta and Q v,
    so a CG step costs one product with Q (``metric``). ||grad|| is the norm of the gradient with respect to
    w in feature space. ``Q`` is a :class:`StoredKernel` or :class:`BlockedKernel`.
    """

    def __init__(self, Q, layout, C):
        self.Q = Q
        self.layout = layout
        self.C = float(C)
        self.n = layout.n_data_rows
        super().__init__()

    def loss(self, beta, squared=True):
        """(loss, number of active pairs) at beta, with Q beta computed afresh."""
        f, perm = self.layout.new_state()
        gf = np.empty(self.n)
        return _pairloss.scores_fun_grad(self.Q.matvec(beta), self.layout, squared, f, perm, gf)

    def metric(self, v):
        return self.Q.matvec(v)

    def new_state(self):
        return _PairState(self.layout)

    def evaluate(self, beta, Qbeta, state):
        gf = np.empty(self.n)
        loss, state.n_active = _pairloss.scores_fun_grad(np.ascontiguousarray(Qbeta), self.layout, True, state.f,
                                                         state.perm, gf)
        return 0.5 * float(beta @ Qbeta) + self.C * loss, beta + self.C * gf

    def hessian_product(self, state, v, Qv):
        u = np.empty(self.n)
        _pairloss.scores_hess(np.ascontiguousarray(Qv), self.layout, state.f, state.perm, u)
        return v + 2.0 * self.C * u


# ------------------------------------------------------------------------------------------------- kernels
def kernel_matrix(A, B, kernel, gamma, degree, coef0, out=None, B_sqnorm=None):
    """K(A, B) as a dense float64 array (written into ``out`` when given): BLAS product A B', then one
    elementwise pass (_kernel.pyx). rbf: exp(-gamma ||a - b||^2); poly: (gamma a'b + coef0)^degree;
    linear: a'b. A and B are float64 (dense or CSR).
    """
    shape = (A.shape[0], B.shape[0])
    if out is None:
        out = np.empty(shape)
    elif out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous float64 array of the block's shape")
    if sp.issparse(A) or sp.issparse(B):
        AB = A @ B.T
        if sp.issparse(AB):
            AB.toarray(out=out)
        else:
            out[...] = AB
    else:
        np.dot(A, B.T, out=out)
    if kernel == "rbf":
        b2 = _row_sqnorm(B) if B_sqnorm is None else B_sqnorm
        _kernel.rbf_from_gram(out, _row_sqnorm(A), np.ascontiguousarray(b2, dtype=np.float64), float(gamma))
    elif kernel == "poly":
        _kernel.poly_from_gram(out, float(gamma), float(coef0), int(degree))
    if not np.isfinite(out).all():
        scale = max(max_abs(A), max_abs(B))
        raise ValueError(
            f"the {kernel} kernel overflows float64 (non-finite entries in K) with gamma={gamma:g}"
            + (f", degree={degree}, coef0={coef0:g}" if kernel == "poly" else "")
            + f" and features up to |x| = {scale:.3g}; scale X (e.g. sklearn.preprocessing.StandardScaler) or lower "
            + ("gamma or degree" if kernel == "poly" else "gamma"))
    return out


def _row_sqnorm(A):
    if sp.issparse(A):
        return np.ascontiguousarray(np.asarray(A.multiply(A).sum(axis=1), dtype=np.float64).ravel())
    return np.einsum("ij,ij->i", A, A)


def _check_symmetric(K, block=1024):
    """ValueError unless the square matrix K is symmetric (to 1e-8 of its largest entry), checked in blocks."""
    n = K.shape[0]
    scale = max(float(np.max(np.abs(K))), np.finfo(float).tiny)
    for start in range(0, n, block):
        stop = min(n, start + block)
        if not np.allclose(K[start:stop, :], K[:, start:stop].T, rtol=0, atol=1e-8 * scale):
            raise ValueError("kernel='precomputed' needs a symmetric (positive semi-definite) training kernel "
                             "matrix; the one given is not symmetric")


class StoredKernel:
    """Q held in memory (l x l float64); matvec is one BLAS gemv."""

    def __init__(self, Q):
        self.Q = Q
        self.n_matvec = 0

    def matvec(self, v):
        self.n_matvec += 1
        return self.Q @ v


class BlockedKernel:
    """Q = K(X, X) recomputed in row blocks at every product (when it does not fit ``kernel_memory_mb``)."""

    def __init__(self, X, kernel, gamma, degree, coef0, block_rows):
        self.X, self.kernel, self.gamma, self.degree, self.coef0 = X, kernel, gamma, degree, coef0
        self.block_rows = int(block_rows)
        self.sqnorm = _row_sqnorm(X) if kernel == "rbf" else None
        self.n_matvec = 0
        n = X.shape[0]
        self._buf = np.empty((min(self.block_rows, n), n))

    def block_product(self, start, v):
        """Rows start:start + block_rows of Q v (the block of Q recomputed)."""
        stop = min(self.X.shape[0], start + self.block_rows)
        K = kernel_matrix(self.X[start:stop], self.X, self.kernel, self.gamma, self.degree, self.coef0,
                          out=self._buf[: stop - start], B_sqnorm=self.sqnorm)
        return K @ v

    def matvec(self, v):
        self.n_matvec += 1
        n = self.X.shape[0]
        out = np.empty(n)
        for start in range(0, n, self.block_rows):
            out[start:start + self.block_rows] = self.block_product(start, v)
        return out


def _kernel_operator(Xk, kernel, gamma, degree, coef0, memory_mb, verbose):
    """StoredKernel when Q fits in ``memory_mb`` (and in free memory), else BlockedKernel; clear errors first.

    ``memory_mb`` is what remains of ``kernel_memory_mb`` after the training rows (``Xk``, dense or sparse).
    A blocked Q costs a full recomputation per product: the first block is timed, and when one product is
    estimated above MAX_PRODUCT_SECONDS the fit is refused before any further work, with the estimate and the
    options; otherwise the estimate is given in a warning.
    """
    n = Xk.shape[0]
    budget = memory_mb * _MB
    need = n * n * 8
    row_bytes = n * 8
    if row_bytes > budget:
        raise ValueError(
            f"kernel_memory_mb leaves {memory_mb:.3g} MB after the training rows, not even one row of the {n} x {n} "
            f"kernel matrix ({row_bytes / _MB:.3g} MB per row); increase kernel_memory_mb")
    if need <= budget:
        check_memory(need, f"the {n} x {n} kernel matrix",
                     "lower kernel_memory_mb to recompute it block-wise instead")
        Q = np.empty((n, n))
        kernel_matrix(Xk, Xk, kernel, gamma, degree, coef0, out=Q)
        if verbose:
            print(f"RankSVM: kernel matrix {n} x {n} stored ({need / _MB:.0f} MB)")
        return StoredKernel(Q)
    block = int(max(1, budget // row_bytes))
    op = BlockedKernel(Xk, kernel, gamma, degree, coef0, block)
    t0 = time.perf_counter()
    op.block_product(0, np.zeros(n))
    per_product = (time.perf_counter() - t0) * -(-n // block)
    estimate = (f"the {n} x {n} kernel matrix ({need / _MB:.3g} MB) exceeds the kernel memory left "
                f"({memory_mb:.3g} MB), so it is recomputed in {-(-n // block)} blocks at every product: about "
                f"{per_product:.3g} s per product, and a fit takes tens to hundreds of products")
    options = ("raise kernel_memory_mb (to at least the matrix size, if the machine has it), fit on a subsample "
               "of the queries, or use kernel='linear'")
    if per_product > MAX_PRODUCT_SECONDS:
        raise ValueError(f"RankSVM: {estimate}; refused (over {MAX_PRODUCT_SECONDS:g} s per product). Options: "
                         f"{options}")
    if per_product > WARN_PRODUCT_SECONDS:
        warnings.warn(f"RankSVM: {estimate}. To go faster: {options}", UserWarning, stacklevel=4)
    if verbose:
        print(f"RankSVM: {estimate}")
    return op


# ------------------------------------------------------------------------------------------ hinge: 1-slack
class _WorkingSet:
    """The constraints of the restricted problem: Delta_k, the vectors Psi_k (rows), their Gram matrix, optional
    companion rows (Q Psi_k for a kernel model), and for each the number of consecutive restricted solves in
    which it had zero weight. Capacity doubles as constraints arrive; idle ones can be dropped."""

    def __init__(self, m, companion=False):
        self.rows = np.empty((8, m))
        self.extra = np.empty((8, m)) if companion else None
        self.G = np.empty((8, 8))
        self.delta = np.empty(8)
        self.lam = np.empty(8)
        self.idle = np.zeros(8, dtype=np.int64)
        self.K = 0

    def add(self, delta, psi, gram_row, extra=None):
        k = self.K
        if k == self.rows.shape[0]:
            self._resize(2 * k)
        self.rows[k] = psi
        if self.extra is not None:
            self.extra[k] = extra
        self.G[k, : k + 1] = gram_row
        self.G[: k + 1, k] = gram_row
        self.delta[k], self.lam[k], self.idle[k] = delta, 0.0, 0
        self.K += 1

    def _resize(self, cap):
        k = self.K
        for name in ("rows", "extra"):
            old = getattr(self, name)
            if old is not None:
                new = np.empty((cap, old.shape[1]))
                new[:k] = old[:k]
                setattr(self, name, new)
        G = np.empty((cap, cap))
        G[:k, :k] = self.G[:k, :k]
        self.G = G
        for name in ("delta", "lam", "idle"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[:k] = old[:k]
            setattr(self, name, new)

    def drop_idle(self, limit):
        """Remove the constraints with zero weight in the last ``limit`` solves (never the newest)."""
        K = self.K
        if K == 0:
            return
        keep = self.idle[:K] < limit
        keep[K - 1] = True
        if keep.all():
            return
        idx = np.flatnonzero(keep)
        n = idx.size
        self.rows[:n] = self.rows[idx]
        if self.extra is not None:
            self.extra[:n] = self.extra[idx]
        self.G[:n, :n] = self.G[np.ix_(idx, idx)]
        for name in ("delta", "lam", "idle"):
            arr = getattr(self, name)
            arr[:n] = arr[idx]
        self.K = n


# constraints with zero weight in this many consecutive restricted solves leave the working set (they may be
# found again by the separation oracle); keeps the restricted problem small when C |P| is large
IDLE_LIMIT = 50


def _one_slack(separate, gram_row, combine, m, C, n_pairs, tol, max_iter, verbose, *, regularizer, w0,
               companion=None):
    """Run cyrank.optim.cutting_plane on the 1-slack form of the hinge rankSVM (module docstring).

    separate(w) -> (n_active, s): the number of active pairs at w and s with sum_SV (x_i - x_j) = Psi(s)
    (s = X'(l^- - l^+) for the linear model, the coefficients l^- - l^+ for a kernel model);
    gram_row(psi_new, ws) -> [<psi_k, psi_new> for the stored k] + [<psi_new, psi_new>];
    combine(a, ws) -> (w, [<w, psi_k>]) for w = sum_k a_k psi_k; companion(psi) -> extra row stored with psi.
    The restricted problem is solved exactly in its dual (cyrank.optim._simplex_qp) over the working set ws;
    constraints idle for IDLE_LIMIT solves are dropped (the restricted problem then relaxes, so its dual value
    stays a lower bound of the optimum). Returns the CuttingPlaneResult and a dict with the last dual value.
    """
    Ce = C * n_pairs
    ws = _WorkingSet(m, companion=companion is not None)
    state = {"dual": 0.0, "inner_gap": 0.0}

    def sep(w):
        n_active, s = separate(w)
        return n_active / n_pairs, s / n_pairs

    def solve_restricted(deltas, psis, w):
        psi_new = psis[-1]
        ws.drop_idle(IDLE_LIMIT)
        ws.add(deltas[-1], psi_new, gram_row(psi_new, ws), None if companion is None else companion(psi_new))
        K = ws.K
        lam = np.ascontiguousarray(ws.lam[:K])
        delta = np.ascontiguousarray(ws.delta[:K])
        steps, gap, dual = solve_simplex_qp(np.ascontiguousarray(ws.G[:K, :K]), delta, Ce, lam, 1e-3 * tol,
                                            max(100_000, 200 * K))
        ws.lam[:K] = lam
        ws.idle[:K] = np.where(lam > 0, 0, ws.idle[:K] + 1)
        state["dual"], state["inner_gap"] = dual, gap
        w_new, w_dot_psi = combine(Ce * lam, ws)
        xi = max(0.0, float(np.max(delta - w_dot_psi)))
        return w_new, xi, steps, dual  # the dual value of any feasible lam bounds the optimum from below

    return cutting_plane(sep, solve_restricted, regularizer, w0, C=Ce, epsilon=tol, max_iter=max_iter,
                         verbose=verbose), state


# ------------------------------------------------------------------------------------------------ estimator
@register_model
class RankSVM(RankerMixin, BaseEstimator):
    """Pairwise ranking SVM, linear or kernel, with squared hinge (TRON) or hinge (cutting planes) loss.

    Objective (DESIGN.md Objective 2, kernel-ranksvm.txt (3.11)-(3.13)), P = {(i, j): qid_i = qid_j, y_i > y_j}::

        linear:  w'w / 2 + C sum_P loss(1 - w'(x_i - x_j))
        kernel:  beta'Q beta / 2 + C sum_P loss(1 - (Q beta)_i + (Q beta)_j),   Q = K(X, X)

    loss(t) = max(0, t)^2 ("squared_hinge") or max(0, t) ("hinge"). Sums over pairs are computed from
    order-statistic sums per query in O(l log l) (seed section 3.2, Appendix B), never by enumerating pairs.

    Parameters
    ----------
    C : float > 0, default=1.0
        Weight of the pairwise loss (a sum over pairs, not a mean).
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        squared_hinge: trust-region Newton-CG (TRON). hinge: 1-slack cutting planes.
    kernel : {"linear", "rbf", "poly", "precomputed"}, default="linear"
        linear: the primal in w (sparse or dense X). rbf: exp(-gamma ||x - x'||^2). poly:
        (gamma x'x' + coef0)^degree. precomputed: X is the kernel matrix, (n_train, n_train) in fit (symmetric,
        checked; positive semi-definite, not checked) and (n_test, n_train) in predict. Kernel models compute K
        in float64.
    gamma : "scale", "auto" or float > 0, default="scale"
        rbf/poly coefficient: "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features (as scikit-learn).
    degree : int >= 1, default=3
    coef0 : float, default=1.0
    tol : float > 0, default=1e-3
        squared_hinge: stop when ||grad|| <= tol * ||grad at 0|| (LIBLINEAR's rule; see grad_norm_). The objective
        is then within (tol ||grad at 0||)^2 / 2 of the optimum (the objective is 1-strongly convex in w), and a
        few more Newton steps reach tol = 1e-8..1e-12. hinge: stop when the most
        violated 1-slack constraint exceeds the working set's slack by <= tol (mean hinge loss per pair), so
        the objective is within tol * C |P| of the optimum.
    max_iter : int >= 1, default=1000
        Newton iterations (squared_hinge) or cutting planes (hinge). ConvergenceWarning when reached.
    kernel_memory_mb : float > 0, default=1024
        Memory for the kernel matrix Q. Q is stored when n^2 * 8 bytes fit (n = training rows of queries with
        two label levels), else recomputed block-wise at every product (slow); an error is raised before
        allocating when not even one row fits, or when a stored Q would exceed the free memory.
    verbose : int >= 0, default=0

    Attributes
    ----------
    coef_ : ndarray (n_features,)  (linear kernel only)
    beta_ : ndarray (n_support,)  (other kernels) coefficients of the retained training rows
    support_ : ndarray (n_support,) indices of the retained training rows (those with beta != 0)
    support_vectors_ : ndarray or CSR matrix (n_support, n_features)  (rbf/poly) the retained rows, float64
        (dense unless X was sparse with more features than rows and too large to densify)
    gamma_ : float  (rbf/poly) the gamma used
    objective_ : float
        Final objective, at the returned model, from the order-statistic sums in float64.
    n_iter_ : int
        Newton iterations (squared_hinge) or cutting planes (hinge).
    n_cg_iter_ : int  (squared_hinge) CG iterations (= Hessian-vector products).
    grad_norm_ : float  (squared_hinge) ||grad|| / ||grad at 0|| at the end; for a kernel model the norm is
        that of the gradient with respect to w in feature space, sqrt(g'Q g) (TRON runs in the Q inner product).
    duality_gap_ : float  (hinge) objective_ minus the dual value of the last restricted problem (>= the
        distance to the optimum).
    converged_ : bool
    n_kernel_products_ : int  (other kernels) products with Q (each a full pass over Q, or a recomputation of
        it when Q is not stored)
    n_pairs_ : int  number of preference pairs
    n_active_pairs_ : int  pairs with f_i - f_j < 1 at the end
    n_features_in_ : int
    """

    # what a model file may hold (checked by cyrank.io.load_model; the spec language is documented there)
    _model_schema = {
        "n_features_in_": "int>=1", "objective_": "float", "n_iter_": "int>=0", "converged_": "bool",
        "n_pairs_": "int>=0", "n_active_pairs_": "int>=0",
        "grad_norm_": lambda p: "float>=0" if p["loss"] == "squared_hinge" else None,
        "n_cg_iter_": lambda p: "int>=0" if p["loss"] == "squared_hinge" else None,
        "duality_gap_": lambda p: "float" if p["loss"] == "hinge" else None,
        "coef_": lambda p: "float[d]" if p["kernel"] == "linear" else None,
        "beta_": lambda p: None if p["kernel"] == "linear" else "float[m]",
        "support_": lambda p: {"linear": None, "precomputed": "int[m] in [0, d)"}.get(p["kernel"], "int[m]>=0"),
        "support_vectors_": lambda p: "float[m, d] or csr" if p["kernel"] in ("rbf", "poly") else None,
        "gamma_": lambda p: "float>0" if p["kernel"] in ("rbf", "poly") else None,
        "n_kernel_products_": lambda p: None if p["kernel"] == "linear" else "int>=0",
    }

    def __init__(self, C=1.0, loss="squared_hinge", kernel="linear", *, gamma="scale", degree=3, coef0=1.0,
                 tol=1e-3, max_iter=1000, kernel_memory_mb=1024, verbose=0):
        self.C = C
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.kernel_memory_mb = kernel_memory_mb
        self.verbose = verbose

    # -- parameters ------------------------------------------------------------------------------------
    def _check_params(self):
        check_param("C", self.C, low=0.0, low_open=True)
        check_option("loss", self.loss, LOSSES)
        check_option("kernel", self.kernel, KERNELS)
        if not (isinstance(self.gamma, str) and self.gamma in ("scale", "auto")):
            if isinstance(self.gamma, str):
                raise ValueError(f"gamma must be 'scale', 'auto' or a float > 0; got {self.gamma!r}")
            check_param("gamma", self.gamma, low=0.0, low_open=True)
        check_param("degree", self.degree, low=1, integer=True)
        check_param("coef0", self.coef0)
        check_param("tol", self.tol, low=0.0, low_open=True)
        check_param("max_iter", self.max_iter, low=1, integer=True)
        check_param("kernel_memory_mb", self.kernel_memory_mb, low=0.0, low_open=True)
        check_verbose(self.verbose)

    def _gamma(self, X):
        if not isinstance(self.gamma, str):
            return float(self.gamma)
        d = X.shape[1]
        if self.gamma == "auto":
            return 1.0 / d
        if sp.issparse(X):
            mean = X.sum() / (X.shape[0] * d)
            var = float(X.multiply(X).sum() / (X.shape[0] * d) - mean * mean)
        else:
            var = float(np.var(X))
        return 1.0 / (d * var) if var > 0 else 1.0

    # -- fit -----------------------------------------------------------------------------------------------
    def fit(self, X, y, qid=None):
        """Minimise the objective on (X, y) grouped by ``qid`` (None: one query)."""
        self._check_params()
        for attr in ("coef_", "beta_", "support_", "support_vectors_", "gamma_", "grad_norm_", "duality_gap_",
                     "n_cg_iter_", "n_kernel_products_"):
            self.__dict__.pop(attr, None)
        precomputed = self.kernel == "precomputed"
        X, y, qid = check_ranking_data(X, y, qid, accept_sparse=False if precomputed else ("csr", "csc"))
        check_feature_scale(X, "RankSVM")
        if precomputed and X.shape[0] != X.shape[1]:
            raise ValueError(f"kernel='precomputed' needs the square training kernel matrix; got shape {X.shape}")
        layout, n_pairs = make_layout(y, qid)
        self.n_features_in_ = X.shape[1]
        self.n_pairs_ = int(n_pairs)
        if self.kernel == "linear":
            self._fit_linear(X, layout, n_pairs)
        else:
            self._fit_kernel(X, layout, n_pairs)
        if not np.isfinite(self.objective_):
            del self.objective_  # leaves the estimator unfitted
            raise ValueError(f"RankSVM: the objective overflowed float64 (features up to |x| = {max_abs(X):.3g}, "
                             f"C={self.C:g}); scale X (e.g. sklearn.preprocessing.StandardScaler) or lower C")
        return self

    def _fit_linear(self, X, layout, n_pairs):
        obj = LinearSquaredHinge(X, layout, self.C)
        d = X.shape[1]
        if self.loss == "squared_hinge":
            res = tron(obj, np.zeros(d), tol=self.tol, max_iter=self.max_iter, verbose=self.verbose,
                       name="RankSVM (TRON)")
            self._set_tron_result(res)
            # TRON's last gradient was taken at res.x, with res.fun computed there by the same pass
            self.coef_ = res.x
            self.objective_ = float(res.fun)
            self.n_active_pairs_ = int(obj.state.n_active)
            return
        parts = obj.parts

        def separate(w):
            f, perm = layout.new_state()
            xg = np.empty(d)
            _, n_active = _pairloss.linear_fun_grad(*parts, layout, w, False, f, perm, xg)
            return n_active, -xg

        def gram(psi_new, ws):
            return np.r_[ws.rows[: ws.K] @ psi_new, psi_new @ psi_new]

        def combine(a, ws):
            w = a @ ws.rows[: ws.K]
            return w, ws.rows[: ws.K] @ w

        res, state = _one_slack(separate, gram, combine, d, self.C, n_pairs, self.tol, self.max_iter,
                                self.verbose, regularizer=lambda w: 0.5 * float(w @ w), w0=np.zeros(d))
        w = res.w
        dual = self._set_cutting_plane_result(res, state)
        loss, n_active = obj.loss(w, squared=False)
        self.coef_ = w
        self.objective_ = 0.5 * float(w @ w) + self.C * loss
        self.n_active_pairs_ = int(n_active)
        self.duality_gap_ = self.objective_ - dual

    def _fit_kernel(self, X, layout, n_pairs):
        rows = layout.rows
        n = rows.shape[0]
        klay = _pairloss.Layout(np.arange(n), layout.offsets, layout.rank, layout.n_levels, n)
        if self.kernel == "precomputed":
            _check_symmetric(X)
            Q = X if np.array_equal(rows, np.arange(X.shape[0])) else X[np.ix_(rows, rows)]
            Qop = StoredKernel(np.ascontiguousarray(Q, dtype=np.float64))
            Xk = None
        else:
            Xk = X[rows]
            Xk = Xk.astype(np.float64) if Xk.dtype != np.float64 else Xk
            if sp.issparse(Xk):
                # dense BLAS is far faster than a sparse product for the Gram blocks, but the dense copy counts
                # against kernel_memory_mb: densify only within half of it (Q gets what the rows leave)
                dense_bytes = Xk.shape[0] * Xk.shape[1] * 8
                Xk = Xk.toarray() if dense_bytes <= 0.5 * self.kernel_memory_mb * _MB else sp.csr_matrix(Xk)
            self.gamma_ = self._gamma(X)
            rows_mb = (Xk.nbytes if not sp.issparse(Xk) else
                       Xk.data.nbytes + Xk.indices.nbytes + Xk.indptr.nbytes) / _MB
            Qop = _kernel_operator(Xk, self.kernel, self.gamma_, self.degree, self.coef0,
                                   self.kernel_memory_mb - rows_mb, self.verbose)
        obj = KernelSquaredHinge(Qop, klay, self.C)
        # products with Q are memory bound: extra BLAS threads only add synchronisation below a few thousand
        # rows (and hurt badly when other jobs share the cores)
        small = n < SMALL_KERNEL_ROWS
        with one_blas_thread() if small else contextlib.nullcontext():
            beta, dual = self._solve_kernel(obj, Qop, klay, n, n_pairs)
            loss, n_active = obj.loss(beta, squared=self.loss == "squared_hinge")
            scores = Qop.matvec(beta)
        self.objective_ = 0.5 * float(beta @ scores) + self.C * loss
        self.n_active_pairs_ = int(n_active)
        if self.loss == "hinge":
            self.duality_gap_ = self.objective_ - dual
        keep = np.flatnonzero(beta != 0.0)
        self.support_ = rows[keep]
        self.beta_ = beta[keep]
        if Xk is not None:
            sv = Xk[keep]
            self.support_vectors_ = sp.csr_matrix(sv) if sp.issparse(sv) else np.ascontiguousarray(sv)
        self.n_kernel_products_ = int(Qop.n_matvec)

    def _solve_kernel(self, obj, Qop, klay, n, n_pairs):
        """beta (and the last restricted dual value for the hinge loss) for the kernel problem."""
        dual = None
        if self.loss == "squared_hinge":
            res = tron(obj, np.zeros(n), tol=self.tol, max_iter=self.max_iter, verbose=self.verbose,
                       name="RankSVM (TRON)")
            beta = res.x
            self._set_tron_result(res)
        else:
            # the 1-slack problem in function space: w is represented by its training scores f = Q beta, a
            # constraint Psi by its coefficient vector c (Psi = sum_m c_m phi(x_m)), so <w, Psi> = f'c.
            state_beta = {}

            def separate(f):
                fs, perm = klay.new_state()
                gf = np.empty(n)
                _, n_active = _pairloss.scores_fun_grad(f, klay, False, fs, perm, gf)
                return n_active, -gf

            def gram_row(c_new, ws):
                qc = Qop.matvec(c_new)
                state_beta["qc"] = qc
                return np.r_[ws.rows[: ws.K] @ qc, c_new @ qc]

            def combine(a, ws):  # the companion rows hold Q c_k
                beta = a @ ws.rows[: ws.K]
                f = a @ ws.extra[: ws.K]
                state_beta["beta"], state_beta["f"] = beta, f
                return f, ws.rows[: ws.K] @ f

            def regularizer(f):
                if "f" not in state_beta:
                    return 0.0
                return 0.5 * float(state_beta["beta"] @ state_beta["f"])

            res, state = _one_slack(separate, gram_row, combine, n, self.C, n_pairs, self.tol, self.max_iter,
                                    self.verbose, regularizer=regularizer, w0=np.zeros(n),
                                    companion=lambda c: state_beta["qc"])
            beta = state_beta.get("beta", np.zeros(n))
            dual = self._set_cutting_plane_result(res, state)
        return beta, dual

    def _set_tron_result(self, res):
        self.n_iter_ = int(res.n_iter)
        self.n_cg_iter_ = int(res.n_cg)
        self.grad_norm_ = float(res.rel_grad_norm)
        self.converged_ = bool(res.converged)

    def _set_cutting_plane_result(self, res, state):
        self.n_iter_ = int(res.n_batches)
        self.converged_ = bool(res.converged)
        return float(state["dual"])

    # -- prediction ----------------------------------------------------------------------------------------
    def decision_function(self, X):
        """Scores f(x) = x'coef_ (linear) or sum_m beta_m K(x, x_m) (kernel), float64."""
        check_is_fitted(self, "objective_")
        if self.kernel == "linear":
            return LinearRankerMixin.decision_function(self, X)
        if self.kernel == "precomputed":
            X = check_X(X, accept_sparse=False)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features, but RankSVM is expecting {self.n_features_in_} "
                                 "features as input (kernel='precomputed': one column per training row)")
            return np.asarray(X[:, self.support_] @ self.beta_, dtype=np.float64)
        X = self._check_predict_X(X)
        n, m = X.shape[0], self.beta_.shape[0]
        out = np.zeros(n)
        if m == 0:
            return out
        block = max(1, int(self.kernel_memory_mb * _MB) // (8 * m))
        sq = _row_sqnorm(self.support_vectors_) if self.kernel == "rbf" else None
        for start in range(0, n, block):
            stop = min(n, start + block)
            Xb = X[start:stop]
            Xb = Xb.astype(np.float64) if Xb.dtype != np.float64 else Xb
            K = kernel_matrix(Xb, self.support_vectors_, self.kernel, self.gamma_, self.degree, self.coef0,
                              B_sqnorm=sq)
            out[start:stop] = K @ self.beta_
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.target_tags.required = True
        return tags
