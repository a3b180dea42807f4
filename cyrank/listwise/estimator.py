"""ListNet and ListMLE: the scikit-learn estimators of linear listwise ranking. Two classes (the names users
search for, each with only its own parameters: ListNet's ``target`` and ``random_state``, ListMLE's ``ties``
and ``top_k``) over one functional layer, solver.py (one ``solve(loss=...)``, one kernel)."""
from .._base import LinearRankerMixin, SolverEstimator
from . import solver

_DOC_COMMON = """
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
        R(w) = alpha ||w||_2^2 ("l2", not halved, as RankNet's), alpha ||w||_1, or
        alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2).
    alpha : float >= 0, default=1.0
    l1_ratio : float in [0, 1], default=0.5
        Share of the l1 term for "elasticnet".
    tol : float > 0, default=1e-6
        Stop when the objective is within tol * max(1, |objective|) of the optimum (``gap_``: certified by the
        strong convexity 2 alpha, or the Newton decrement, invariant to rescaling a feature); with an l1 term
        also the relative KKT violation must be <= tol.
    max_iter : int >= 1, default=1000
        Newton iterations; ConvergenceWarning when reached.
    early_stopping_rounds : int >= 1 or None, default=None
        With ``eval_set`` in ``fit`` (penalty "l2"): stop when NDCG@10 on it has not improved for that many Newton
        steps and keep the best iterate (``best_iteration_``); ``converged_`` is then False and the
        ConvergenceWarning says the fit was stopped early on purpose.
    warm_start : bool, default=False
        Start from the previous fit's ``coef_``.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    objective_ : float
    grad_norm_ : float
        ||grad|| / ||grad at w = 0|| (with an l1 term the relative KKT violation).
    gap_, gap_kind_ : float or None, str
        objective_ minus the optimum and how it is known (cyrank.optim.result); None: not measured.
    n_iter_, n_cg_iter_ : int
        Newton iterations and CG steps (with an l1 term: proximal Newton iterations and inner sweeps).
    converged_ : bool
    history_ : dict
        "eval": NDCG@10 on eval_set at the start and after every Newton step (empty without eval_set).
    best_iteration_ : int
        The step of the best eval NDCG@10 (n_iter_ without eval_set).
    n_features_in_ : int
"""

_SCHEMA = {
    "n_features_in_": "int>=1", "coef_": "float[d]", "objective_": "float", "grad_norm_": "float>=0",
    "n_iter_": "int>=0", "n_cg_iter_": "int>=0", "converged_": "bool", "gap_": "float>=0|None", "gap_kind_": "str",
    "history_": "dict", "best_iteration_": "int>=0",
}


class _Listwise(LinearRankerMixin, SolverEstimator):
    _estimator_only_params = ("warm_start",)
    _warm_starts = True
    _model_schema = _SCHEMA

    def fit(self, X, y, qid=None, eval_set=None, sample_weight=None):
        """Minimise the objective on (X, y) grouped by ``qid`` (None: one query). ``eval_set`` = (X, y, qid):
        NDCG@10 on it after every Newton step (``history_``, early stopping); ``sample_weight``: None, a number
        or one weight >= 0 per row (w_i of the objective)."""
        return self._fit(X, y, qid, eval_set=eval_set, sample_weight=sample_weight)

    def objective(self, X, y, qid=None, sample_weight=None):
        """The objective F at ``coef_`` on (X, y, qid), weighted by ``sample_weight``."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "coef_")
        params = {k: v for k, v in self._solver_params().items()
                  if k in ("target", "ties", "top_k", "penalty", "alpha", "l1_ratio", "random_state")}
        return solver.objective(self.coef_, X, y, qid, loss=self._loss, sample_weight=sample_weight, **params)


class ListNet(_Listwise):
    __doc__ = """Linear ListNet / softmax cross-entropy: f(x) = w . x minimising, over the queries q,

        sum_q sum_{i in q} w_i p_i (log sum_{j in q} exp(f_j) - f_i) + R(w)

    (Cao, Qin, Liu, Tsai & Li, "Learning to Rank: From Pairwise Approach to Listwise Approach", ICML 2007,
    section 4, top-one probabilities; the softmax cross-entropy of Bruch, Wang, Bendersky & Najork, ICTIR 2019),
    w_i the ``sample_weight`` of row i (1 without) and p the target distribution of the query's labels. Convex;
    trust-region Newton with exact Hessian products (penalty "l2") or proximal Newton with working sets (l1,
    elastic net), stopped by a certified gap (cyrank.listwise.solver).

    Parameters
    ----------
    target : {"exp", "gain", "xendcg"}, default="exp"
        p_i = exp(y_i) / sum_j exp(y_j) (Cao et al.'s phi = exp); "gain": (2^y_i - 1) / sum_j (2^y_j - 1) (a
        query of all-zero labels contributes nothing); "xendcg": (2^y_i - g_i) / sum_j (2^y_j - g_j) (XE-NDCG,
        Bruch, WWW 2021), g_i ~ U(0, 1) drawn once per fit (``random_state``). "gain" and "xendcg" need labels
        >= 0.
    random_state : None, int >= 0 or numpy Generator, default=None
        Seeds ``np.random.default_rng(random_state).random(n_rows)`` for target="xendcg" (g_i for row i in input
        order); None means 0, so fits are reproducible. Unused by the other targets.""" + _DOC_COMMON

    _loss = "listnet"
    _solve = solver.solve_listnet
    _check = solver.check_listnet_params

    def __init__(self, target="exp", random_state=None, penalty="l2", alpha=1.0, l1_ratio=0.5, tol=1e-6,
                 max_iter=1000, early_stopping_rounds=None, warm_start=False, verbose=0):
        self.target = target
        self.random_state = random_state
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.tol = tol
        self.max_iter = max_iter
        self.early_stopping_rounds = early_stopping_rounds
        self.warm_start = warm_start
        self.verbose = verbose


class ListMLE(_Listwise):
    __doc__ = """Linear ListMLE: f(x) = w . x maximising the Plackett-Luce likelihood of the label order (Xia, Liu,
    Wang, Zhang & Li, "Listwise Approach to Learning to Rank: Theory and Algorithm", ICML 2008, section 3), with
    ties by Efron's rule (Efron, JASA 1977): the rows of each query sorted by decreasing label into tie groups,
    position t = start(G) + r of group G (m rows),

        D_t = sum_{j below G} exp(f_j) + (1 - r/m) sum_{j in G} exp(f_j),
        minimise sum_q sum_{t < min(top_k, n_q)} (1/m) sum_{j in G} w_j (log D_t - f_j) + R(w),

    w_j the ``sample_weight`` of row j (1 without). Efron's D_t is the expectation of the Plackett-Luce
    denominator over the orders of the tie group (the exact expectation of the likelihood is exponential in the
    group size). Without ties it is plain ListMLE. Convex; solved as ListNet.

    Parameters
    ----------
    ties : {"efron", "breslow"}, default="efron"
        "breslow" (Breslow 1974): D_t = sum_{j below G} exp(f_j) + sum_{j in G} exp(f_j) for every t of G.
    top_k : int >= 1 or None, default=None
        Only the first top_k positions of each query's label order contribute (None: every position); the rows
        below still enter the denominators.""" + _DOC_COMMON

    _loss = "listmle"
    _solve = solver.solve_listmle
    _check = solver.check_listmle_params

    def __init__(self, ties="efron", top_k=None, penalty="l2", alpha=1.0, l1_ratio=0.5, tol=1e-6, max_iter=1000,
                 early_stopping_rounds=None, warm_start=False, verbose=0):
        self.ties = ties
        self.top_k = top_k
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.tol = tol
        self.max_iter = max_iter
        self.early_stopping_rounds = early_stopping_rounds
        self.warm_start = warm_start
        self.verbose = verbose
