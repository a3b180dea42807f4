"""RankSVM: linear and kernel rankSVM (Kuo, Lee & Lin, "Large-scale Kernel RankSVM", SDM 2014).

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

The pieces live beside this estimator: problems.py (the query layout and the squared-hinge problems for TRON),
kernels.py (kernel matrices, stored or block-wise within the memory budget), hinge.py (the 1-slack adapters).
"""
import contextlib

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._base import LinearRankerMixin, RankerMixin
from .._threads import one_blas_thread, openmp_threads
from .._validation import (check_feature_scale, check_n_jobs, check_option, check_param, check_ranking_data,
                           check_verbose, check_X, max_abs)
from ..io import register_model
from ..optim.tron import tron
from . import _pairloss
from .hinge import KernelHinge, LinearHinge, one_slack
from .kernels import _MB, StoredKernel, check_symmetric, kernel_matrix, kernel_operator, row_sqnorm
from .problems import KernelSquaredHinge, LinearSquaredHinge, make_layout

LOSSES = ("squared_hinge", "hinge")
KERNELS = ("linear", "rbf", "poly", "precomputed")
SMALL_KERNEL_ROWS = 5000  # below this, products with Q use one BLAS thread


# ------------------------------------------------------------------------------------------------ estimator
@register_model
class RankSVM(RankerMixin, BaseEstimator):
    """Pairwise ranking SVM, linear or kernel, with squared hinge (TRON) or hinge (cutting planes) loss.

    Objective (Kuo, Lee & Lin 2014, (3.11)-(3.13)), P = {(i, j): qid_i = qid_j, y_i > y_j}::

        linear:  w'w / 2 + C sum_P loss(1 - w'(x_i - x_j))
        kernel:  beta'Q beta / 2 + C sum_P loss(1 - (Q beta)_i + (Q beta)_j),   Q = K(X, X)

    loss(t) = max(0, t)^2 ("squared_hinge") or max(0, t) ("hinge"). Sums over pairs are computed from
    order-statistic sums per query in O(l log l) (Kuo, Lee & Lin 2014, section 3.2, Appendix B), never by enumerating pairs.

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
    n_jobs : int >= 1, -1 or None, default=None
        OpenMP threads of the pair-sum and kernel products (None: OMP_NUM_THREADS, else every core; -1: every
        core). The result is the same, bit for bit, for every thread count.
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
                 tol=1e-3, max_iter=1000, kernel_memory_mb=1024, n_jobs=None, verbose=0):
        self.C = C
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.kernel_memory_mb = kernel_memory_mb
        self.n_jobs = n_jobs
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
        check_n_jobs(self.n_jobs)

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
        with openmp_threads(check_n_jobs(self.n_jobs)):  # the layout fixes the kernels' thread count
            layout, n_pairs = make_layout(y, qid)
            self.n_features_in_ = X.shape[1]
            self.n_pairs_ = int(n_pairs)
            if n_pairs == 0:
                self._fit_without_pairs(X)
            elif self.kernel == "linear":
                self._fit_linear(X, layout, n_pairs)
            else:
                self._fit_kernel(X, layout, n_pairs)
        if not np.isfinite(self.objective_):
            del self.objective_  # leaves the estimator unfitted
            raise ValueError(f"RankSVM: the objective overflowed float64 (features up to |x| = {max_abs(X):.3g}, "
                             f"C={self.C:g}); scale X (e.g. sklearn.preprocessing.StandardScaler) or lower C")
        return self

    def _fit_without_pairs(self, X):
        """No preference pair (warned by make_layout): the objective is the regulariser alone, minimised exactly by
        the zero model (every score 0)."""
        d = X.shape[1]
        if self.kernel == "linear":
            self.coef_ = np.zeros(d)
        else:
            self.beta_, self.support_, self.n_kernel_products_ = np.zeros(0), np.zeros(0, dtype=np.int64), 0
            if self.kernel != "precomputed":
                self.support_vectors_, self.gamma_ = np.zeros((0, d)), self._gamma(X)
        self.objective_, self.n_iter_, self.converged_, self.n_active_pairs_ = 0.0, 0, True, 0
        if self.loss == "squared_hinge":
            self.grad_norm_, self.n_cg_iter_ = 0.0, 0
        else:
            self.duality_gap_ = 0.0

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
        res, dual = one_slack(LinearHinge(obj.parts, layout), self.C, n_pairs, self.tol, self.max_iter, self.verbose)
        w = res.w
        self._set_cutting_plane_result(res)
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
            check_symmetric(X)
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
            Qop = kernel_operator(Xk, self.kernel, self.gamma_, self.degree, self.coef0,
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
            model = KernelHinge(Qop, klay)
            res, dual = one_slack(model, self.C, n_pairs, self.tol, self.max_iter, self.verbose)
            beta = model.beta
            self._set_cutting_plane_result(res)
        return beta, dual

    def _set_tron_result(self, res):
        self.n_iter_ = int(res.n_iter)
        self.n_cg_iter_ = int(res.n_cg)
        self.grad_norm_ = float(res.rel_grad_norm)
        self.converged_ = bool(res.converged)

    def _set_cutting_plane_result(self, res):
        self.n_iter_ = int(res.n_batches)
        self.converged_ = bool(res.converged)

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
        sq = row_sqnorm(self.support_vectors_) if self.kernel == "rbf" else None
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
