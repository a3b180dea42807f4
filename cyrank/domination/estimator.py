"""DominationRank: the scikit-learn estimator of the domination-loss ranker (Stevens, "Efficient Coordinate
Descent for Ranking with Domination Loss", MEng thesis, MIT 2010). The objective and the solvers are in
solver.py, the functional layer this estimator wraps.
"""
from sklearn.utils.validation import check_is_fitted

from .._base import LinearRankerMixin, SolverEstimator
from . import solver


class DominationRank(LinearRankerMixin, SolverEstimator):
    """Linear ranker minimising the domination loss by coordinate descent (Stevens, MIT thesis 2010), or, for the
    smooth l2 penalty, by trust-region Newton.

    Objective, with f = X w, offsets o >= 0 and sample weights s >= 0 (``fit``'s ``sample_weight``; 1 by default)::

        sum_q sum_{i: D(q,i) != {}} s_i log(1 + sum_{j in D(q,i)} exp((f_j - o_j) - (f_i - o_i))) + penalty(w)

    penalty: alpha ||w||_1 ("l1"), alpha ||w||_2^2 ("l2", not halved) or
    alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2) ("elasticnet"). D(q, i) are the rows of query q
    with a lower label than row i; every label level is a layer (section 3).

    Each coordinate step minimises a quadratic upper bound of the loss plus the exact penalty (sections 2-5),
    so the objective never increases. The bound's curvature is ``hessian_bound``: "popoviciu" (default;
    sum over dominating rows i of (max - min)^2 / 4 of the feature over D(q, i) + {i}) or "max_sq" (the
    thesis: sum_q m_q max_{j in q} x_j^2).

    With the l2 penalty the objective is smooth and ``solver="auto"`` (the default) minimises it by L-BFGS for
    at most 30 iterations, then, if that has not converged, by trust-region Newton-CG (cyrank.optim.tron) from
    its point, with exact gradients and Hessian-vector products in O(nnz + rows) each
    (cyrank/domination/_smooth.pyx).

    Parameters
    ----------
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float >= 0, default=1.0
        Penalty weight; the loss is a sum over rows, not a mean.
    l1_ratio : float in [0, 1], default=0.5
        Share of the l1 term for "elasticnet".
    binary : bool, default=False
        Collapse labels to y > 0 versus y <= 0 (two layers).
    group_by_query : bool, default=True
        False: every row in one query (the thesis's LETOR setting, section 8.1.2); ``qid`` is then ignored.
    feature_induction : int >= 1 or None, default=None
        Features added per round of feature induction (alpha of Alg. 7): the inactive features whose single
        bound-minimising step guarantees the largest objective decrease are added, the active set is trained to
        convergence, and this repeats until no inactive feature violates the optimality conditions.
    neg_sample : float in (0, 1] or None, default=None
        Keep ceil(neg_sample * n_0) of the n_0 lowest-layer rows of every query (the "Sampled" variant,
        section 8.2), chosen with ``random_state``. The objective minimised and reported is then the objective
        above on the kept rows (``sample_mask_``), with their sample weights (the sampled rows dominate nothing:
        their weights never enter the objective, and sampling ignores them).
    solver : {"auto", "cd", "newton", "lbfgs", "prox_newton", "owlqn"}, default="auto"
        "cd": coordinate descent (every penalty; the thesis's method). "prox_newton": proximal Newton with working
        sets (every penalty; Yuan, Ho & Lin 2012). "owlqn": orthant-wise L-BFGS (Andrew & Gao 2007; every penalty,
        no feature induction). "newton": trust-region Newton-CG; "lbfgs": L-BFGS (Liu & Nocedal 1989; OWL-QN's
        optimiser without the l1 term) on the fused Cython loss and gradient; both for a smooth objective only
        (penalty "l2", or "elasticnet" with l1_ratio = 0; no feature induction). "auto": for a smooth objective,
        L-BFGS for at most 30 iterations and then Newton from its point if it has not converged ("lbfgs" or
        "lbfgs+newton" in ``solver_``); with an l1 term,
        "prox_newton" when its model on all features can be formed (rows * n_features^2 <=
        ``cyrank.domination.Options.gram_budget`` * stored entries: a few hundred dense features), else "owlqn"
        for at most 500 iterations and proximal Newton from its point if it has not converged ("owlqn" or
        "owlqn+prox_newton"); "prox_newton" with feature induction. Every solver handles margins of any span:
        "cd" keeps per-query shifted exponentials and switches a query whose margins span more than 500 to
        log-domain derivatives; the others work in the log domain throughout.
    hessian_bound : {"popoviciu", "max_sq"}, default="popoviciu"
        Curvature of the coordinate steps (solver "cd" only).
    max_iter : int >= 1, default=1000
        Maximum number of sweeps (epochs) over the active features ("cd") or of iterations (the other solvers).
    tol : float > 0, default=1e-6
        Stop when the objective is within tol * max(1, |objective|) of the optimum (``gap_``), which stays honest
        when a feature is on a scale of 1e9 or 1e-3; every solver but "newton" also needs ``kkt_violation_`` <= tol.
    warm_start : bool, default=False
        Start from the previous ``coef_`` (X must have the same number of features; ValueError otherwise).
    random_state : int, RandomState or None, default=None
        Used by ``neg_sample`` only (the sweeps are cyclic and deterministic).
    n_jobs : int >= 1, -1 or None, default=None
        OpenMP threads of the Newton products (None: OMP_NUM_THREADS, else every core; -1: every core). The
        result is the same, bit for bit, for every thread count.
    verbose : int, default=0
        Print the objective after each sweep.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    solver_ : str
        The solver used: "cd", "newton", "lbfgs", "lbfgs+newton", "prox_newton", "owlqn" or "owlqn+prox_newton".
    n_iter_ : int
        Sweeps over the active features ("cd") or iterations (the others; both counted for a chained solver).
    n_cg_iter_ : int
        Inner iterations: conjugate-gradient steps (Hessian-vector products) of "newton", function evaluations of
        "lbfgs" and "owlqn", coordinate sweeps of the quadratic models of "prox_newton"; 0 for "cd".
    objective_ : float
        Final objective, recomputed from ``coef_`` in float64.
    history_ : dict
        "objective" and "n_nonzero" after each sweep or accepted Newton step.
    kkt_violation_ : float
        max_r dist(-dL/dw_r, subdifferential of the penalty at w_r), divided by max_r |dL/dw_r| at w = 0 (L the
        loss with the sample weights of the fit).
    converged_ : bool
        ``gap_ <= tol * max(1, |objective_|)``, and for every solver but "newton" also ``kkt_violation_ <= tol``
        (solver "cd": the KKT rule alone).
    gap_, gap_kind_ : float or None, str
        objective_ minus the optimum and how it is known (cyrank.optim.result: certified "strong convexity" or
        "duality gap", or the "newton decrement" estimate, invariant to rescaling a feature); None: not measured
        (solver "cd").
    sample_mask_ : ndarray of bool or None
        Rows kept by ``neg_sample`` (None without sampling).
    n_features_in_ : int
    """

    # what a model file may hold (checked by cyrank.io.load_model; the spec language is documented there)
    _model_schema = {
        "n_features_in_": "int>=1", "coef_": "float[d]", "objective_": "float", "kkt_violation_": "float>=0",
        "gap_": "float>=0|None", "gap_kind_": "str",
        "n_iter_": "int>=0", "n_cg_iter_": "int>=0", "converged_": "bool", "solver_": "str", "history_": "dict",
        "sample_mask_": "bool[*]|None",
    }

    def __init__(self, penalty="l2", alpha=1.0, l1_ratio=0.5, *, binary=False, group_by_query=True,
                 feature_induction=None, neg_sample=None, solver="auto", hessian_bound="popoviciu", max_iter=1000,
                 tol=1e-6, warm_start=False, random_state=None, n_jobs=None, verbose=0):
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.binary = binary
        self.group_by_query = group_by_query
        self.feature_induction = feature_induction
        self.neg_sample = neg_sample
        self.solver = solver
        self.hessian_bound = hessian_bound
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- fit: the functional layer (cyrank._base.SolverEstimator) ---------------------------------------------
    _solve = solver.solve
    _check = solver.check_params  # returns (lam1, lam2, the solver that will run)
    _estimator_only_params = ("warm_start",)
    _warm_starts = True

    def fit(self, X, y, qid=None, offset=None, sample_weight=None):
        """Minimise the objective on (X, y) grouped by ``qid``; ``offset`` (>= 0) are per-row margins o_i.

        ``sample_weight`` (n_samples,) >= 0, a number, or None (all 1): s_i weighs the loss term l_i of the
        dominating row i (the term of a row of its query's lowest label level is empty, so its weight changes
        nothing); an integer s_i equals repeating that term, a weight constant within a query equals repeating
        the query. Weights that are 0 on every dominating row are refused (ValueError)."""
        return self._fit(X, y, qid, offset, sample_weight=sample_weight)

    # -- prediction: decision_function = X @ coef_, predict = scores, score = mean NDCG@10 (LinearRankerMixin)
    def objective(self, X, y, qid=None, offset=None, coef=None, sample_weight=None):
        """The objective (loss + penalty) at ``coef`` (default ``coef_``) on (X, y, qid, offset), in float64,
        with the loss terms weighted by ``sample_weight`` as in :meth:`fit`.

        Uses this estimator's penalty, alpha, l1_ratio, binary and group_by_query; no negative sampling.
        """
        if coef is None:
            check_is_fitted(self, "coef_")
            coef = self.coef_
        return solver.objective(X, y, qid, offset, coef=coef, penalty=self.penalty, alpha=self.alpha,
                                l1_ratio=self.l1_ratio, binary=self.binary, group_by_query=self.group_by_query,
                                sample_weight=sample_weight)
