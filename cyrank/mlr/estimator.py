"""MLR: the scikit-learn estimator of metric learning to rank (McFee & Lanckriet, "Metric Learning to Rank", ICML
2010), with metric-learn's conventions. The objective and the solver are in solver.py, the functional layer this
estimator wraps.
"""
import warnings

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._base import SolverEstimator, check_feature_names
from .._validation import check_param, check_X
from . import solver
from .solver import STABILIZATION


class MLR(ClassNamePrefixFeaturesOutMixin, TransformerMixin, SolverEstimator):
    """Metric learning to rank: a PSD Mahalanobis matrix W optimised for a ranking loss (McFee & Lanckriet).

    Objective, conventions and algorithm: see the module docstring of cyrank/mlr/solver.py and the oracle
    documentation (cyrank/mlr/_oracles.pyx). Follows scikit-learn and metric-learn conventions:
    ``components_`` L with W = L'L, ``transform(X) = X L'``, ``get_mahalanobis_matrix()``, ``pair_distance``.

    Parameters
    ----------
    loss : {"auc", "p", "map", "mrr", "ndcg", "knn"}, default="auc"
        Ranking score whose loss Delta = Score(y*) - Score(y) is optimised:
        AUC; precision at k (denominator k); average precision; reciprocal rank; NDCG@k with binary gains,
        D(1) = 1, D(p) = 1/log2(p) and the ideal DCG as normaliser; knn: 1 if more than half of the k nearest
        points are relevant, else 0 (the binary kNN rule: exact kNN correctness for two classes and odd k).
        Names follow :func:`cyrank.metrics.parse_metric_name` (case-insensitive); "p", "ndcg" and "knn" may carry
        their cut-off, as "p@5". "p" is the canonical name of precision at k; "prec@k" is its older spelling.
    k : int >= 1, default=3
        Cut-off of "p", "ndcg" and "knn" when the name carries none (ignored by the other losses).
    C : float > 0, default=1.0
        Slack trade-off.
    regularizer : {"trace", "frobenius", "diagonal"}, default="trace"
        tr(W); 0.5 ||W||_F^2; or sum(w) with W = diag(w), w >= 0 (projection = clipping, no eigendecomposition).
    tol : float > 0, default=0.01
        Cutting-plane tolerance on xi (the paper's accuracy threshold epsilon; 0.01 in its experiments): the same
        name and meaning as RankSVM's hinge ``tol``.
    max_iter : int >= 1, default=1000
        Maximum number of the engine's separation calls (constraints added, with stabilization=0); reaching it
        warns with ConvergenceWarning.
    stabilization : float in [0, 1), default=0.7
        In-out weight alpha of the best point so far: the oracle is called at alpha W_best +
        (1 - alpha) W_restricted and the method stops when objective - lower bound <= C tol (certified).
        0 gives the plain cutting-plane method of the paper (stop when the new batch's violation <= tol).
    n_jobs : int >= 1, -1 or None, default=None
        OpenMP threads for the separation oracles (None = 1, -1 = all cores).
    verbose : int, default=0
        Print one line per cutting plane.
    epsilon : float > 0 or None, default=None
        Deprecated name of ``tol`` (a FutureWarning; when given, it is used as ``tol``).

    Attributes
    ----------
    W_ : ndarray (n_features, n_features)
        The learned PSD matrix.
    components_ : ndarray (rank, n_features)
        L with L'L = W_ up to the eigenvalues of W_ below 1e-8 times the largest (rows by decreasing
        eigenvalue; one zero row if W_ = 0).
    objective_ : float
        R(W_) + C xi_, evaluated exactly.
    xi_ : float
        The exact slack at W_ (average over queries of the most violated constraint; weighted by
        ``sample_weight``).
    lower_bound_ : float
        Best dual value of the restricted problems: a certified lower bound on the optimal objective.
    gap_ : float
        objective_ - lower_bound_ (at convergence <= C tol, or 1.5 C tol with stabilization=0):
        objective_ is within gap_ of the optimum.
    n_batches_ : int
        Constraints added to the working set.
    n_separations_ : int
        Separation-oracle calls (= n_batches_ + 1 with stabilization=0; stabilised: cutting planes, in-out
        points that cut nothing, and the final truncation tries).
    n_iter_ : int
        Inner-solver iterations, all cutting planes together.
    converged_ : bool
    violation_ : float
        gap_ / C (stabilised), or xi_ minus the working set's slack at W_ (stabilization=0); <= tol when
        converged.
    n_queries_ : int
        Queries with at least one relevant and one irrelevant point (m), and a positive weight when fitted with
        ``sample_weight``.
    classes_ : ndarray
        Class labels (fit with y only).
    oracle_time_, inner_time_ : float
        Seconds spent separating (oracles and their matrix products) and in the inner solver.
    history_ : dict
        Per separation: "objective" (at the point separated), "lower_bound" (best dual value so far) and "gap"
        (the certified gap the stopping rule tests), float64 arrays.
    n_features_in_ : int
    """

    # what a model file may hold (checked by cyrank.io.load_model; the spec language is documented there)
    _model_schema = {
        "n_features_in_": "int>=1", "W_": "float[d, d]", "components_": "float[*, d]", "classes_": "any[*]?",
        "objective_": "float", "xi_": "float>=0", "lower_bound_": "float", "gap_": "float", "violation_": "float",
        "n_batches_": "int>=0", "n_separations_": "int>=0", "n_iter_": "int>=0", "n_queries_": "int>=0",
        "converged_": "bool", "oracle_time_": "float>=0", "inner_time_": "float>=0", "history_": "dict?",
    }

    def __init__(self, loss="auc", k=3, C=1.0, regularizer="trace", tol=0.01, max_iter=1000,
                 stabilization=STABILIZATION, n_jobs=None, verbose=0, epsilon=None):
        self.loss = loss
        self.k = k
        self.C = C
        self.regularizer = regularizer
        self.tol = tol
        self.max_iter = max_iter
        self.stabilization = stabilization
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.epsilon = epsilon

    # ------------------------------------------------------------------------------------------ fitting
    # the functional layer (cyrank._base.SolverEstimator)
    _solve = solver.solve
    _check = solver.check_params
    _estimator_only_params = ("epsilon",)  # the deprecated name of tol (see _solver_params)
    _stale_attributes = ("classes_",)  # classes_ only when fitted on labels
    _sparse_input = False

    def _solver_params(self):
        """The parameters of :func:`cyrank.mlr.solve`: the deprecated ``epsilon``, when given, is ``tol``."""
        params = super()._solver_params()
        if self.epsilon is not None:
            params["tol"] = check_param("epsilon", self.epsilon, low=0, low_open=True)
        return params

    def fit(self, X, y=None, *, relevance=None, irrelevant=None, sample_weight=None):
        """Learn W from class labels ``y`` or explicit relevance sets.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
            Training points (dense; sparse input is refused).
        y : array-like (n_samples,), optional
            Class labels: relevant = same class except the query itself, irrelevant = other classes. At least
            two classes, each with at least two members.
        relevance : sequence of n_samples integer arrays, optional
            relevance[q] = indices of the points relevant to query q (instead of y).
        irrelevant : sequence of n_samples integer arrays, optional
            irrelevant[q] = indices of the points irrelevant to q (default: all others except q); points in
            neither set are not ranked for q. Queries without a relevant or an irrelevant point are skipped.
        sample_weight : array-like (n_samples,) of float >= 0, optional
            Query weights v: the slack is the weighted mean xi = sum_q v_q xi_q / sum_q v_q over the queries
            (None: the plain mean). An integer v_q counts query q v_q times; its point stays once in the
            database the queries are ranked against, whatever its weight.
        """
        if self.epsilon is not None:
            warnings.warn("MLR's epsilon was renamed tol (the name RankSVM uses for the same cutting-plane "
                          "tolerance); epsilon will be removed", FutureWarning, stacklevel=2)
        return self._fit(X, y, relevance=relevance, irrelevant=irrelevant, sample_weight=sample_weight)

    # ------------------------------------------------------------------------------------------ metric API
    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _check_X(self, X):
        check_is_fitted(self)
        X = check_X(X, accept_sparse=False)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return np.asarray(X, dtype=np.float64)

    def transform(self, X):
        """Embed X in the learned space: X L' (n_samples, rank), so that Euclidean distances there are
        ||x - x'||_W. A DataFrame's columns must be those of fit, in that order (``feature_names_in_``)."""
        check_is_fitted(self)
        check_feature_names(self, X)
        return self._check_X(X) @ self.components_.T

    def get_mahalanobis_matrix(self):
        """The Mahalanobis matrix L'L of ``components_`` (= W_ up to the dropped tiny eigenvalues)."""
        check_is_fitted(self)
        return self.components_.T @ self.components_

    def _check_pairs(self, pairs):
        check_is_fitted(self)
        pairs = np.asarray(pairs)
        if pairs.ndim != 3 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n_pairs, 2, n_features), got {pairs.shape}")
        if pairs.shape[0] == 0:
            raise ValueError("pairs is empty")
        a = self._check_X(pairs[:, 0, :])
        b = self._check_X(pairs[:, 1, :])
        return a, b

    def pair_distance(self, pairs):
        """||x - x'||_W for every pair of ``pairs`` (n_pairs, 2, n_features) (metric-learn >= 0.7)."""
        a, b = self._check_pairs(pairs)
        diff = (b - a) @ self.components_.T
        return np.sqrt(np.sum(diff ** 2, axis=1))

    def pair_score(self, pairs):
        """-||x - x'||_W (higher = more similar; metric-learn >= 0.7)."""
        return -self.pair_distance(pairs)

    def score_pairs(self, pairs):
        """||x - x'||_W for every pair: deprecated (as in metric-learn 0.7), use :meth:`pair_distance`."""
        warnings.warn("MLR.score_pairs is deprecated and will be removed; use pair_distance (the same values) or "
                      "pair_score (their negatives)", FutureWarning, stacklevel=2)
        return self.pair_distance(pairs)

    def get_metric(self):
        """A function ``metric(u, v) -> ||u - v||_W`` usable as a scikit-learn ``metric=`` callable."""
        check_is_fitted(self)
        L = self.components_.copy()

        def metric(u, v):
            diff = L @ (np.asarray(u, dtype=np.float64).ravel() - np.asarray(v, dtype=np.float64).ravel())
            return float(np.sqrt(diff @ diff))

        return metric
