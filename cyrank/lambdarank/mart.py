"""LambdaMART: gradient-boosted regression trees whose gradients and hessians are cyrank's lambdas (Burges 2010,
sections 5-6), the trees grown by LightGBM through its custom-objective interface (Ke et al., NIPS 2017). No tree
learner of our own: LightGBM finds the splits and the Newton leaf values -sum(lambda) / sum(weight).

The lambdas are those of _lambdas.pyx for the chosen metric (NDCG@k, ERR@k, MAP, or plain RankNet), so
LambdaMART trains on metrics LightGBM's built-in ``lambdarank`` objective does not offer (ERR, MAP). The extra
``lightgbm`` (``pip install "cyrank[lightgbm]"``) provides LightGBM; without it, fit raises ImportError naming it.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._base import RankerMixin, check_predict_X, set_fitted
from .._result import SolveResult
from .._validation import check_n_jobs, check_option, check_param, check_ranking_data
from ..io import register_model
from .solver import TIES, _Pairs, check_eval_set, check_metric_data, metric_value, parse_metric, resolve_ties


def _lightgbm():
    try:
        import lightgbm
    except ImportError:  # pragma: no cover - the message is the point
        raise ImportError("LambdaMART grows its trees with LightGBM, which is not installed: install the extra "
                          "with  pip install \"cyrank[lightgbm]\"  (or pip install lightgbm)") from None
    return lightgbm


@register_model
class LambdaMART(RankerMixin, BaseEstimator):
    """Boosted trees trained on the lambdas of a ranking metric (module docstring).

    Parameters
    ----------
    metric : str, default="ndcg@10"
        The lambdas' metric: "ndcg@k" / "ndcg", "err@k" / "err", "map", or "ranknet". Also the metric of
        ``eval_set``.
    n_estimators : int >= 1, default=100
        Boosting rounds (trees).
    learning_rate : float > 0, default=0.1
    num_leaves : int >= 2, default=31
    min_child_samples : int >= 1, default=20
        LightGBM's min_data_in_leaf.
    colsample_bytree : float in (0, 1], default=1.0
        Share of the features each tree may split on (LightGBM's feature_fraction, drawn with ``random_state``).
    sigma : float > 0, default=1.0
        Shape of the pairwise sigmoid.
    truncation : int >= 1 or None, default=None
        Only pairs with one document in the top ``truncation`` positions (LightGBM's lambdarank_truncation_level).
    ties : {"pessimistic", "average", "input"}, default="pessimistic"
        Equal scores (every score at the first round). "pessimistic": lower label first (cyrank.metrics'
        convention), the lambdas of rows with the same score and label averaged (the expectation over their
        orders); "average": the exact expectation of |dZ| over random orders of the tied rows (NDCG and RankNet).
        Neither depends on the row order, and the rows of one (query, label) are given to LightGBM in an order fixed
        by their content, so permuting the training rows gives the same trees bit for bit. "input": input order, as
        LightGBM (the model then depends on the row order).
    norm : bool, default=False
        LightGBM's lambdarank_norm (cyrank.lambdarank._lambdas.lambdas). ``metric="ndcg", truncation=30,
        ties="input", norm=True`` is LightGBM's built-in lambdarank objective (for queries of at most 30
        documents; LightGBM's ideal DCG stops at 30).
    early_stopping_rounds : int >= 1 or None, default=None
        With ``eval_set``: stop after this many rounds without a better metric on it and keep the best round.
    n_jobs : int or None, default=None
        LightGBM's threads (None or -1: LightGBM's default, OpenMP's thread count).
    random_state : int or None, default=None
        LightGBM's seed (it matters only with colsample_bytree < 1: the trees are deterministic otherwise).
    verbose : int, default=0

    Attributes
    ----------
    model_string_ : str
        The LightGBM model (``Booster.model_to_string``); saved and loaded with cyrank.io like every model.
    booster_ : lightgbm.Booster (rebuilt from model_string_ on first use)
    n_iter_ : int (trees kept), best_iteration_, history_ ("eval": the metric per round), n_features_in_
    """

    _model_schema = {"n_features_in_": "int>=1", "model_string_": "str", "n_iter_": "int>=0",
                     "best_iteration_": "int>=0", "history_": "dict", "objective_": "float", "converged_": "bool"}

    def __init__(self, metric="ndcg@10", n_estimators=100, learning_rate=0.1, num_leaves=31, min_child_samples=20,
                 colsample_bytree=1.0, sigma=1.0, truncation=None, ties="pessimistic", norm=False,
                 early_stopping_rounds=None, n_jobs=None, random_state=None, verbose=0):
        self.metric = metric
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.colsample_bytree = colsample_bytree
        self.sigma = sigma
        self.truncation = truncation
        self.ties = ties
        self.norm = norm
        self.early_stopping_rounds = early_stopping_rounds
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self):
        parse_metric(self.metric)
        check_option("ties", self.ties, TIES)
        resolve_ties(self.ties, self.metric)
        return (check_param("n_estimators", self.n_estimators, low=1, integer=True),
                check_param("learning_rate", self.learning_rate, low=0.0, low_open=True),
                check_param("num_leaves", self.num_leaves, low=2, integer=True),
                check_param("min_child_samples", self.min_child_samples, low=1, integer=True),
                check_param("colsample_bytree", self.colsample_bytree, low=0.0, high=1.0, low_open=True),
                check_param("sigma", self.sigma, low=0.0, low_open=True),
                None if self.early_stopping_rounds is None else check_param(
                    "early_stopping_rounds", self.early_stopping_rounds, low=1, integer=True),
                check_n_jobs(self.n_jobs))

    def fit(self, X, y, qid=None, eval_set=None):
        """Grow the trees on (X, y) grouped by ``qid``; ``eval_set`` = (X, y, qid) is scored after every round."""
        n_estimators, learning_rate, num_leaves, min_child, colsample, sigma, patience, n_jobs = self._check_params()
        if patience is not None and eval_set is None:
            raise ValueError("early_stopping_rounds needs an eval_set")
        X, y, qid = check_ranking_data(X, y, qid)
        if X.shape[0] < 2:
            raise ValueError(f"LambdaMART needs at least 2 samples (pairs within queries), got {X.shape[0]} sample")
        lgb = _lightgbm()
        pairs = _Pairs(y, qid, metric=self.metric, sigma=sigma, truncation=self.truncation, ties=self.ties,
                       norm=self.norm, X=X)
        check_metric_data(self.metric, y, qid)
        if eval_set is not None:
            Xv, yv, qv = check_eval_set(eval_set, X.shape[1], self.metric)
        Xs = sp.csr_matrix(X.tocsr()[pairs.order]) if sp.issparse(X) else np.ascontiguousarray(X[pairs.order])
        n = X.shape[0]
        lam, hess = np.empty(n), np.empty(n)

        def objective(preds, dataset):
            pairs.lambdas(np.ascontiguousarray(preds, dtype=np.float64), lam, hess, with_cost=False)
            return lam, hess

        params = {"objective": objective, "learning_rate": learning_rate, "num_leaves": num_leaves,
                  "min_data_in_leaf": min_child, "feature_fraction": colsample,
                  "num_threads": 0 if n_jobs in (None, -1) else n_jobs,
                  "seed": 0 if self.random_state is None else int(self.random_state), "verbosity": -1,
                  "deterministic": True, "force_row_wise": True}
        train = lgb.Dataset(Xs, label=pairs.y, group=np.diff(pairs.offsets), params={"verbosity": -1})
        history, valid_sets, feval, callbacks = {"eval": []}, [], None, []
        if eval_set is not None:
            Xv = sp.csr_matrix(Xv) if sp.issparse(Xv) else Xv
            valid_sets = [lgb.Dataset(Xv, label=yv, reference=train, params={"verbosity": -1})]

            def score_eval(preds, dataset):  # our metric on eval_set, higher is better
                value = metric_value(self.metric, yv, np.asarray(preds, dtype=np.float64), qv, pairs.max_rel)
                history["eval"].append(value)
                if self.verbose:
                    print(f"LambdaMART round {len(history['eval']):4d}: eval {self.metric} {value:.6f}")
                return self.metric, value, True

            feval = score_eval
            if patience is not None:
                callbacks.append(lgb.early_stopping(patience, verbose=False))
        booster = lgb.train(params, train, num_boost_round=n_estimators, valid_sets=valid_sets, feval=feval,
                            callbacks=callbacks)
        best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
        model_string = booster.model_to_string(num_iteration=best)
        final = np.asarray(booster.predict(Xs, num_iteration=best), dtype=np.float64)
        cost = pairs.lambdas(final, lam, hess)
        result = SolveResult(model_string=model_string, n_iter=int(best), best_iteration=int(best),
                             history={"eval": np.asarray(history["eval"])}, objective=float(cost), converged=True,
                             n_features_in=X.shape[1], optimality_name="objective")
        set_fitted(self, result)
        self._booster = lgb.Booster(model_str=model_string)  # predict builds it after a load or unpickling
        return self

    @property
    def booster_(self):
        check_is_fitted(self, "model_string_")
        if self.__dict__.get("_booster") is None:
            self._booster = _lightgbm().Booster(model_str=self.model_string_)
        return self._booster

    def decision_function(self, X):
        """Scores of the trees (the sum of their leaf values)."""
        X = check_predict_X(self, X)
        if sp.issparse(X):
            X = sp.csr_matrix(X)  # LightGBM reads csr_matrix (not sparse arrays) directly
        return np.asarray(self.booster_.predict(X), dtype=np.float64)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_booster", None)  # rebuilt from model_string_
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags
