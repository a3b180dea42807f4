"""RankSVM: the scikit-learn estimator of the linear and kernel rankSVM (Kuo, Lee & Lin, "Large-scale Kernel
RankSVM", SDM 2014). The objective and the solvers are in solver.py, the functional layer this estimator wraps.
"""
import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._base import LinearRankerMixin, RankerMixin, SolverEstimator, check_feature_names
from .._validation import check_X
from . import solver
from .kernels import MB, kernel_matrix, row_sqnorm


# ------------------------------------------------------------------------------------------------ estimator
# every attribute a fit may set (one fit removes what an earlier one with other parameters left)
_FITTED = ("coef_", "beta_", "support_", "support_vectors_", "gamma_", "grad_norm_", "duality_gap_", "n_cg_iter_",
           "n_kernel_products_", "history_")


class RankSVM(RankerMixin, SolverEstimator):
    """Pairwise ranking SVM, linear or kernel, with squared hinge (TRON) or hinge (cutting planes) loss.

    Objective (Kuo, Lee & Lin 2014, (3.11)-(3.13)), P = {(i, j): qid_i = qid_j, y_i > y_j}::

        linear:  R(w) + C sum_P w_i loss(1 - w'(x_i - x_j))
        kernel:  beta'Q beta / 2 + C sum_P w_i loss(1 - (Q beta)_i + (Q beta)_j),   Q = K(X, X)

    loss(t) = max(0, t)^2 ("squared_hinge") or max(0, t) ("hinge"). w_i is the ``sample_weight`` of fit (default
    1) of the pair's preferred row (the inverse-propensity weighting of clicks, Joachims, Swaminathan & Schnabel,
    WSDM 2017): a weight constant within a query weighs the query, an integer weight on a row that is never the
    less preferred of a pair (a clicked row with binary labels) equals repeating it, weight 0 drops the pairs
    where the row is preferred. The regulariser R (``penalty``) is
    ||w||^2 / 2 ("l2", the default), ||w||_1 ("l1": LIBLINEAR's L1-regularised L2-loss SVM, Fan et al., JMLR
    2008; Yuan, Ho & Lin, JMLR 2012) or l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2 ("elasticnet"); "l1" and
    "elasticnet" are for kernel="linear" with loss="squared_hinge" only, minimised by proximal Newton with working
    sets (cyrank.optim.prox_newton), and give exact zeros in ``coef_``. Sums over pairs are computed from
    order-statistic sums per query in O(l log l) (Kuo, Lee & Lin 2014, section 3.2, Appendix B), never by
    enumerating pairs. The path over C of an l1 model: :func:`cyrank.ranksvm.path`.

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
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
        The regulariser R of a linear model (above). Anything but "l2" needs kernel="linear" and
        loss="squared_hinge" (a ValueError otherwise).
    l1_ratio : float in [0, 1], default=0.5
        "elasticnet": the share of ||w||_1 in R (0 is "l2", 1 is "l1").
    gamma : "scale", "auto" or float > 0, default="scale"
        rbf/poly coefficient: "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features (as scikit-learn).
        With ``sample_weight``, "scale" takes the variance with each row counted w_i times (so that a weight
        stays a number of copies); pass a float to keep gamma independent of the weights.
    degree : int >= 1, default=3
    coef0 : float, default=1.0
    tol : float > 0, default=1e-3
        squared_hinge: stop when the objective is within tol * max(1, |objective|) of the optimum (``gap_``:
        ||grad||^2 / 2, certified by 1-strong convexity, or the Newton decrement; ``grad_norm_`` reports
        ||grad|| / ||grad at 0||); TRON runs preconditioned by the within-query column scales
        when they are far apart. With an l1 term ("l1", "elasticnet" with l1_ratio > 0): stop when the KKT
        violation max_r |p_r| (p the minimum-norm subgradient) is <= tol * max_r |dL/dw_r at 0| (``grad_norm_``)
        and the gap (certified by the strong convexity 1 - l1_ratio, or the Newton decrement) is within
        tol * max(1, |objective|).
        hinge: stop when the certified gap (objective minus the best dual value of the restricted problems,
        ``duality_gap_``) is <= tol * C W, W = sum_P w_i (``pair_weight_sum_``; |P| without weights: tol is in
        units of the mean hinge loss per unit of pair weight) and <= tol * max(1, objective). The cutting planes of
        linear models are stabilised in-out (``cyrank.ranksvm.Options.stabilization``); kernel models (and
        stabilization 0) use Kelley's method, which also requires the newest constraint to exceed the working
        set's slack by <= tol.
    max_iter : int >= 1, default=1000
        Newton iterations (squared_hinge) or, hinge, separations (in-out; one pass over the data each) or cutting
        planes added (Kelley). ConvergenceWarning when reached.
    kernel_memory_mb : float > 0, default=1024
        Memory for the kernel matrix Q. Q is stored when n^2 * 8 bytes fit (n = training rows of queries with
        two label levels), else recomputed block-wise at every product (slow); an error is raised before
        allocating when not even one row fits, or when a stored Q would exceed the free memory.
    warm_start : bool, default=False
        Linear models: start from the previous ``coef_`` instead of 0, e.g. along a path of C values (any
        penalty); the stopping rule is unchanged. A fit on another number of features is refused (ValueError).
        Kernel models always start from 0.
    n_jobs : int >= 1, -1 or None, default=None
        OpenMP threads of the pair-sum and kernel products (None: OMP_NUM_THREADS, else every core; -1: every
        core). The result is the same, bit for bit, for every thread count.
    verbose : int >= 0, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Linear kernel only.
    beta_ : ndarray of shape (n_support,)
        Other kernels: coefficients of the retained training rows.
    support_ : ndarray of shape (n_support,)
        Indices of the retained training rows (those with beta != 0).
    support_vectors_ : ndarray or CSR matrix of shape (n_support, n_features)
        rbf/poly: the retained rows, float64 (dense unless X was sparse with more features than rows and too
        large to densify).
    gamma_ : float
        rbf/poly: the gamma used.
    objective_ : float
        Final objective, at the returned model, from the order-statistic sums in float64.
    n_iter_ : int
        Newton iterations (squared_hinge); hinge: separations (in-out) or cutting planes added (Kelley's method,
        which separates once more at the end): the count ``max_iter`` bounds.
    n_cg_iter_ : int
        squared_hinge: CG iterations (= Hessian-vector products); with an l1 term, the proximal Newton model's
        inner sweeps.
    grad_norm_ : float
        squared_hinge: ||grad|| / ||grad at 0|| at the end (with an l1 term: the relative KKT violation, see
        ``tol``); for a kernel model the norm is that of the gradient
        with respect to w in feature space, sqrt(g'Q g) (TRON runs in the Q inner product).
    duality_gap_ : float
        hinge: objective_ minus the best dual value of the restricted problems (>= the distance to the optimum).
    history_ : dict
        hinge: per separation, "objective" (at the point separated), "lower_bound" (best dual value so far) and
        "gap" (the certified gap the stopping rule tests), float64 arrays.
    converged_ : bool
    gap_, gap_kind_ : float or None, str
        objective_ minus the optimum and how it is known (cyrank.optim.result: certified "strong convexity" or
        "duality gap", or the "newton decrement" estimate, invariant to rescaling a feature); None: not measured.
    n_kernel_products_ : int
        Other kernels: products with Q (each a full pass over Q, or a recomputation of it when Q is not
        stored).
    n_pairs_ : int
        Number of preference pairs (a count, whatever the weights).
    pair_weight_sum_ : float
        sum_P w_i, the pairs' total weight under ``sample_weight`` (= n_pairs_ without weights): the objective
        at 0 is C times it (hinge), and the hinge's tol is relative to it.
    n_active_pairs_ : int
        Pairs with f_i - f_j < 1 at the end (a count).
    n_features_in_ : int
    """

    # what a model file may hold (checked by cyrank.io.load_model; the spec language is documented there)
    _model_schema = {
        "n_features_in_": "int>=1", "objective_": "float", "n_iter_": "int>=0", "converged_": "bool",
        "n_pairs_": "int>=0", "n_active_pairs_": "int>=0", "pair_weight_sum_": "float>=0?",
        "gap_": "float>=0|None", "gap_kind_": "str",
        "grad_norm_": lambda p: "float>=0" if p["loss"] == "squared_hinge" else None,
        "n_cg_iter_": lambda p: "int>=0" if p["loss"] == "squared_hinge" else None,
        "duality_gap_": lambda p: "float" if p["loss"] == "hinge" else None,
        "history_": lambda p: "dict?" if p["loss"] == "hinge" else None,
        "coef_": lambda p: "float[d]" if p["kernel"] == "linear" else None,
        "beta_": lambda p: None if p["kernel"] == "linear" else "float[m]",
        "support_": lambda p: {"linear": None, "precomputed": "int[m] in [0, d)"}.get(p["kernel"], "int[m]>=0"),
        "support_vectors_": lambda p: "float[m, d] or csr" if p["kernel"] in ("rbf", "poly") else None,
        "gamma_": lambda p: "float>0" if p["kernel"] in ("rbf", "poly") else None,
        "n_kernel_products_": lambda p: None if p["kernel"] == "linear" else "int>=0",
    }

    def __init__(self, C=1.0, loss="squared_hinge", kernel="linear", *, penalty="l2", l1_ratio=0.5, gamma="scale",
                 degree=3, coef0=1.0, tol=1e-3, max_iter=1000, kernel_memory_mb=1024, warm_start=False, n_jobs=None,
                 verbose=0):
        self.C = C
        self.loss = loss
        self.kernel = kernel
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.kernel_memory_mb = kernel_memory_mb
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- fit -----------------------------------------------------------------------------------------------
    # the functional layer (cyrank._base.SolverEstimator)
    _solve = solver.solve
    _check = solver.check_params  # returns n_jobs
    _estimator_only_params = ("warm_start",)
    _warm_starts = True
    _stale_attributes = _FITTED

    def _coef_init(self, X):
        """The previous coef_ with warm_start, for the linear kernel only (a kernel model has no coef_)."""
        return super()._coef_init(X) if self.kernel == "linear" else None

    def fit(self, X, y, qid=None, sample_weight=None):
        """Minimise the objective on (X, y) grouped by ``qid`` (None: one query); ``sample_weight`` (None: all 1,
        or a number, or one weight >= 0 per row) weighs the pair (i, j) by w_i, its preferred row's weight."""
        return self._fit(X, y, qid, sample_weight=sample_weight)

    def objective(self, X, y, qid=None, sample_weight=None):
        """The objective of the fitted linear model (R(coef_) + C sum_P w_i loss) on (X, y, qid), in float64."""
        check_is_fitted(self, "objective_")
        if self.kernel != "linear":
            raise ValueError(f"objective(X, y, qid) evaluates linear models; this one has kernel={self.kernel!r} "
                             "(its training objective is objective_)")
        return solver.objective(X, y, qid, coef=self.coef_, C=self.C, loss=self.loss, penalty=self.penalty,
                                l1_ratio=self.l1_ratio, sample_weight=sample_weight)

    # -- prediction ----------------------------------------------------------------------------------------
    def decision_function(self, X):
        """Scores f(x) = x'coef_ (linear) or sum_m beta_m K(x, x_m) (kernel), float64."""
        check_is_fitted(self, "objective_")
        if self.kernel == "linear":
            return LinearRankerMixin.decision_function(self, X)
        if self.kernel == "precomputed":
            check_feature_names(self, X)
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
        block = max(1, int(self.kernel_memory_mb * MB) // (8 * m))
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
        return tags
