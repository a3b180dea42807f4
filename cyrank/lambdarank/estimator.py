"""RankNet: the scikit-learn estimator of linear RankNet (Burges 2010, section 1). The objective and the solver are
in solver.py, the functional layer this estimator wraps."""
from .._base import LinearRankerMixin, SolverEstimator
from ..optim.penalties import penalty_weights
from . import solver


class RankNet(LinearRankerMixin, SolverEstimator):
    """Linear RankNet: f(x) = w . x trained on the pairwise cross-entropy (Burges 2010, section 1)::

        sum_{(i, j): same query, y_i > y_j} c_i log(1 + exp(-sigma (f_i - f_j))) + penalty(w)

    c_i = 1, or the ``sample_weight`` of the pair's preferred row i given to ``fit`` (inverse propensity weighting,
    Joachims, Swaminathan & Schnabel, WSDM 2017: c_i = 1 / propensity of a clicked row; a weight constant within a
    query weighs the query). penalty: alpha ||w||_2^2 ("l2", not halved), alpha ||w||_1 ("l1") or
    alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2) ("elasticnet"), as DominationRank's. A convex objective,
    minimised by trust-region Newton-CG with exact Hessian products (O(nnz + pairs) each) when smooth, else by
    proximal Newton with working sets (Yuan, Ho & Lin, JMLR 2012; cyrank.optim.prox_newton).

    Parameters
    ----------
    sigma : float in (0, 1e50], default=1.0
        Shape of the sigmoid (the gradients grow as sigma, the Hessian as sigma^2: larger values would
        overflow float64).
    alpha : float >= 0, default=1.0
        Penalty weight (0: none; the optimum is then finite only on non-separable data).
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    l1_ratio : float in [0, 1], default=0.5
        Share of the l1 term for "elasticnet".
    max_iter : int >= 1, default=1000
        Newton iterations; ConvergenceWarning when reached.
    tol : float > 0, default=1e-6
        Stop when the objective is within tol * max(1, |objective|) of the optimum; with an l1 term also when
        the KKT violation max_r |p_r| / max_r |grad_r at 0| (``grad_norm_``, p the minimum-norm subgradient;
        without one ``grad_norm_`` reports ||grad|| / ||grad at w = 0||) is <= tol. The gap ``gap_`` is
        ||p||^2 / (2 mu), mu = 2 alpha (1 - l1_ratio) the strong convexity, certified, or the Newton decrement;
        TRON runs preconditioned by the within-query column scales when they are far apart.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    objective_ : float
    grad_norm_ : float
        Relative: ||grad|| / ||grad at w = 0|| (with an l1 term: the relative KKT violation, see ``tol``).
    n_iter_, n_cg_iter_ : int
        Newton iterations and CG steps (with an l1 term: proximal Newton iterations and the inner sweeps).
    converged_ : bool
    n_features_in_ : int
    gap_, gap_kind_ : float or None, str
        objective_ minus the optimum and how it is known (cyrank.optim.result: certified "strong convexity" or
        "duality gap", or the "newton decrement" estimate, invariant to rescaling a feature); None: not measured.
    """

    _model_schema = {
        "n_features_in_": "int>=1", "coef_": "float[d]", "objective_": "float", "grad_norm_": "float>=0",
        "n_iter_": "int>=0", "n_cg_iter_": "int>=0", "converged_": "bool",
        "gap_": "float>=0|None", "gap_kind_": "str",
    }

    def __init__(self, sigma=1.0, alpha=1.0, penalty="l2", l1_ratio=0.5, max_iter=1000, tol=1e-6, verbose=0):
        self.sigma = sigma
        self.alpha = alpha
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    # the functional layer (cyrank._base.SolverEstimator)
    _solve = solver.solve
    _check = solver.check_params  # (sigma, alpha, max_iter, tol); the penalty is checked by penalty_weights

    def _check_params(self):
        """(sigma, alpha, max_iter, tol), the penalty checked too (cyrank.optim.penalties.penalty_weights)."""
        penalty_weights(self.penalty, self.alpha, self.l1_ratio)
        return super()._check_params()

    def fit(self, X, y, qid=None, sample_weight=None):
        """Minimise the objective on (X, y) grouped by ``qid`` (None: one query); ``sample_weight``: None, a number
        or one weight >= 0 per row (the c_i of the objective)."""
        return self._fit(X, y, qid, sample_weight=sample_weight)

    def objective(self, X, y, qid=None, sample_weight=None):
        """The objective at ``coef_`` on (X, y, qid), weighted by ``sample_weight``."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "coef_")
        return solver.objective(X, y, qid, coef=self.coef_, sigma=self.sigma, alpha=self.alpha, penalty=self.penalty,
                                l1_ratio=self.l1_ratio, sample_weight=sample_weight)


class LambdaRank(LinearRankerMixin, SolverEstimator):
    """Linear LambdaRank: f(x) = w . x trained on the lambda gradients of a ranking metric (Burges 2010,
    section 4), by the EM loop of the LambdaLoss framework (Wang, Li, Golbandi, Bendersky & Najork, CIKM 2018).

    The lambdas are the gradient of the cost::

        C(w) = sum_{(i, j): same query, y_i > y_j} c_i |dZ_ij| log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2

    with c_i = 1, or the ``sample_weight`` of the preferred row i given to ``fit`` (as RankNet's), and |dZ_ij| the
    change of the metric when i and j swap places in the ranking by f. C is not convex (not even continuous where
    the ranking changes). From the RankNet solution (same alpha and sigma; at w = 0 every score
    ties), each outer step fixes the weights |dZ_ij| at the current ranking and minimises the convex weighted
    RankNet loss exactly by trust-region Newton (warm-started); the step to that minimiser is halved until C,
    with the weights of the new ranking, decreases. The loop stops when the ranking (hence every weight) no
    longer changes, when C decreases by less than ``tol`` (relative), or by early stopping on ``eval_set``.
    Tied scores get weights that do not depend on the row order (``ties``), and rows of one (query, label) are
    put in an order fixed by their content, so permuting the training rows gives the same model bit for bit.
    Deterministic.

    Parameters
    ----------
    metric : str, default="ndcg@10"
        "ndcg@k" / "ndcg", "err@k" / "err", "map" (relevant: label > 0), or "ranknet" (|dZ| = 1: RankNet).
        ERR's R(y) = (2^y - 1) / 2^max_rel takes max_rel = the largest training label (exact at any label
        scale); an eval_set label above it is refused.
    sigma : float in (0, 1e50], default=1.0
        As RankNet's.
    alpha : float >= 0, default=1.0
        Weight of ||w||^2 (as RankNet's default; on the embedded LightGBM data alpha = 10 did best on held-out
        queries).
    max_iter : int >= 1, default=50
        Outer (EM) steps; ConvergenceWarning when reached without convergence.
    tol : float > 0, default=1e-6
        The inner solves' tolerance (relative gradient norm and gap, as RankNet's) and the outer loop's: stop when C
        decreases by less than tol C.
    early_stopping_rounds : int >= 1 or None, default=None
        With ``eval_set`` in ``fit``: stop after this many outer steps without a better metric on it and keep the
        best iterate (``best_iteration_``; 0: the RankNet start).
    ties : {"pessimistic", "average", "input"}, default="pessimistic"
        Equal scores: lower label first (as cyrank.metrics measures the metric) with the lambdas of rows of equal
        score and label averaged (the expectation over their orders); "average": the exact expectation over random
        orders of the tied rows (NDCG and RankNet only); "input": input order (LightGBM's; the model then depends
        on the row order). Formulas: cyrank.lambdarank._lambdas.
    max_inner_iter : int >= 1, default=1000
        Newton iterations of each inner solve; one that stops short makes the fit not converged (warning).
    verbose : int, default=0
        1: one line per outer step; 2: the inner solves' iterations too.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    objective_ : float
        C(coef_) with the weights of coef_'s own ranking.
    grad_norm_ : float
        ||grad C|| / ||grad C at 0|| with those weights (about 0 at a fixed point of the loop).
    n_iter_ : int
        Outer steps.
    n_inner_iter_ : int
        Newton iterations, the RankNet start included.
    converged_ : bool
    history_ : dict
        Per outer step, entry 0 the RankNet start: "loss" the minimised weighted loss, "objective" C, "step"
        the step taken, "train" the metric on the training set, "eval" on eval_set.
    best_iteration_ : int
    n_features_in_ : int
    """

    _model_schema = {
        "n_features_in_": "int>=1", "coef_": "float[d]", "objective_": "float", "grad_norm_": "float>=0",
        "n_iter_": "int>=0", "n_inner_iter_": "int>=0", "converged_": "bool", "history_": "dict",
        "best_iteration_": "int>=0",
    }

    def __init__(self, metric="ndcg@10", sigma=1.0, alpha=1.0, max_iter=50, tol=1e-6, early_stopping_rounds=None,
                 ties="pessimistic", max_inner_iter=1000, verbose=0):
        self.metric = metric
        self.sigma = sigma
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping_rounds = early_stopping_rounds
        self.ties = ties
        self.max_inner_iter = max_inner_iter
        self.verbose = verbose

    # the functional layer (cyrank._base.SolverEstimator)
    _solve = solver.solve_lambdarank
    _check = solver.check_lambdarank_params  # (sigma, alpha, max_iter, tol, early_stopping_rounds)

    def _check_params(self):
        """What check_lambdarank_params returns, the tie rule checked too (resolve_ties)."""
        solver.resolve_ties(self.ties, self.metric)
        return super()._check_params()

    def fit(self, X, y, qid=None, eval_set=None, sample_weight=None):
        """Fit on (X, y) grouped by ``qid``; ``eval_set`` = (X, y, qid) is scored after every outer step (unweighted
        metric); ``sample_weight``: None, a number or one weight >= 0 per row (the c_i of C)."""
        return self._fit(X, y, qid, eval_set=eval_set, sample_weight=sample_weight)
