"""RankNet: the scikit-learn estimator of linear RankNet (Burges 2010, section 1). The objective and the solver are
in solver.py, the functional layer this estimator wraps."""
from sklearn.base import BaseEstimator

from .._base import LinearRankerMixin, set_fitted
from ..io import register_model
from . import solver


@register_model
class RankNet(LinearRankerMixin, BaseEstimator):
    """Linear RankNet: f(x) = w . x trained on the pairwise cross-entropy (Burges 2010, section 1)::

        sum_{(i, j): same query, y_i > y_j} log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2

    a convex objective, minimised by trust-region Newton-CG with exact Hessian products (O(nnz + pairs) each).

    Parameters
    ----------
    sigma : float > 0, default=1.0
        Shape of the sigmoid.
    alpha : float >= 0, default=1.0
        Weight of ||w||^2 (0: none; the optimum is then finite only on non-separable data).
    max_iter : int >= 1, default=1000
        Newton iterations; ConvergenceWarning when reached.
    tol : float > 0, default=1e-6
        Stop when ||grad|| <= tol ||grad at w = 0|| (``grad_norm_``).
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    objective_, grad_norm_ (relative), n_iter_, n_cg_iter_, converged_, n_features_in_
    """

    _model_schema = {
        "n_features_in_": "int>=1", "coef_": "float[d]", "objective_": "float", "grad_norm_": "float>=0",
        "n_iter_": "int>=0", "n_cg_iter_": "int>=0", "converged_": "bool",
        "gap_": "float>=0|None", "gap_kind_": "str",
    }

    def __init__(self, sigma=1.0, alpha=1.0, max_iter=1000, tol=1e-6, verbose=0):
        self.sigma = sigma
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    def _check_params(self):
        return solver.check_params(sigma=self.sigma, alpha=self.alpha, max_iter=self.max_iter, tol=self.tol)

    def fit(self, X, y, qid=None):
        """Minimise the objective on (X, y) grouped by ``qid`` (None: one query)."""
        return set_fitted(self, solver.solve(X, y, qid, **self.get_params()))

    def objective(self, X, y, qid=None):
        """The objective at ``coef_`` on (X, y, qid)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "coef_")
        return solver.objective(X, y, qid, coef=self.coef_, sigma=self.sigma, alpha=self.alpha)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags


@register_model
class LambdaRank(LinearRankerMixin, BaseEstimator):
    """Linear LambdaRank: f(x) = w . x trained on the lambda gradients of a ranking metric (Burges 2010,
    section 4): each pair y_i > y_j of a query is weighted by |dZ_ij|, the change of the metric when i and j swap
    places in the current ranking, so the cost sum_P |dZ_ij| log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2 is
    minimised by L-BFGS-B locally (it is not convex). Deterministic (from w = 0).

    Parameters
    ----------
    metric : str, default="ndcg@10"
        "ndcg@k" / "ndcg", "err@k" / "err", "map", or "ranknet" (|dZ| = 1).
    sigma : float > 0, default=1.0
    alpha : float >= 0, default=1e-3
    max_iter : int >= 1, default=200
        L-BFGS-B iterations.
    tol : float > 0, default=1e-6
        L-BFGS-B stops when max |grad| <= tol max |grad at 0|.
    early_stopping_rounds : int >= 1 or None, default=None
        With ``eval_set`` in ``fit``: stop after this many iterations without a better metric on it and keep the
        best iterate (``best_iteration_``).
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    objective_, grad_norm_, n_iter_, converged_, history_ ("objective", "eval" per iteration), best_iteration_,
    n_features_in_
    """

    _model_schema = {
        "n_features_in_": "int>=1", "coef_": "float[d]", "objective_": "float", "grad_norm_": "float>=0",
        "n_iter_": "int>=0", "converged_": "bool", "history_": "dict", "best_iteration_": "int>=0",
    }

    def __init__(self, metric="ndcg@10", sigma=1.0, alpha=1e-3, max_iter=200, tol=1e-6, early_stopping_rounds=None,
                 verbose=0):
        self.metric = metric
        self.sigma = sigma
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping_rounds = early_stopping_rounds
        self.verbose = verbose

    def _check_params(self):
        return solver.check_lambdarank_params(metric=self.metric, sigma=self.sigma, alpha=self.alpha,
                                              max_iter=self.max_iter, tol=self.tol,
                                              early_stopping_rounds=self.early_stopping_rounds)

    def fit(self, X, y, qid=None, eval_set=None):
        """Fit on (X, y) grouped by ``qid``; ``eval_set`` = (X, y, qid) is scored after every iteration."""
        return set_fitted(self, solver.solve_lambdarank(X, y, qid, eval_set=eval_set, **self.get_params()))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags
