"""Cross-validation by query: a splitter that never splits a query, scorers with cyrank's per-query metrics, and
warm-started validation curves over a regularisation parameter.

The query ids must reach both the splitter and the estimator's fit and score. That takes scikit-learn's metadata
routing: enable it, request ``qid`` from the estimator, and pass ``qid=qid`` to the search's fit::

    import sklearn
    from sklearn.model_selection import GridSearchCV, cross_val_score
    from cyrank import RankSVM
    from cyrank.model_selection import QueryKFold, ranking_scorer

    sklearn.set_config(enable_metadata_routing=True)
    model = RankSVM().set_fit_request(qid=True).set_score_request(qid=True)
    search = GridSearchCV(model, {"C": [1e-4, 1e-3, 1e-2]}, cv=QueryKFold(5),
                          scoring={"ndcg@10": ranking_scorer("ndcg@10"), "map": ranking_scorer("map")},
                          refit="ndcg@10")
    search.fit(X, y, qid=qid)
    scores = cross_val_score(model, X, y, cv=QueryKFold(5), params={"qid": qid})

In a Pipeline, request qid from the last step (``make_pipeline(MaxAbsScaler(), model)``). Without routing,
``search.fit(X, y, groups=qid)`` reaches only the splitter: every fit and score then takes all its rows as one
query, and the estimators warn (``MissingQidWarning``).
"""

import numbers

import numpy as np
from sklearn import get_config
from sklearn.base import clone
from sklearn.metrics import make_scorer
from sklearn.utils._metadata_requests import _MetadataRequester

from ._base import weighted_query_mean
from ._validation import check_param, check_qid, check_random_state, check_sample_weight, check_X, check_y
from .metrics import metric_by_name

__all__ = ["QueryKFold", "ranking_scorer", "validation_path"]


class QueryKFold(_MetadataRequester):
    """K-fold cross-validation over queries: every query's rows fall in one fold.

    Queries are dealt to folds largest first, each to the fold with the fewest rows so far (scikit-learn's
    GroupKFold rule), after a random permutation of the queries when ``shuffle``; so folds have about the same
    number of rows, and the split depends only on the query sizes (and ``random_state``), not on the row order.

    Parameters
    ----------
    n_splits : int >= 2, default=5
    shuffle : bool, default=False
        Permute the queries before dealing them (ties between equal-sized queries are then broken at random).
    random_state : int, RandomState or None, default=None
        Used when ``shuffle``.
    """

    # GridSearchCV / cross_validate route ``qid`` to split() when metadata routing is enabled
    __metadata_request__split = {"qid": True, "groups": True}

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None):
        self.n_splits = n_splits
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None, qid=None):
        return int(check_param("n_splits", self.n_splits, low=2, integer=True))

    def split(self, X, y=None, groups=None, qid=None):
        """Yield (train, test) row indices; the query ids are ``qid`` (or ``groups``, the same thing)."""
        n_splits = self.get_n_splits()
        if qid is None:
            qid = groups
        if qid is None:
            raise ValueError("QueryKFold needs the query ids: split(X, y, qid=qid) (GridSearchCV passes them with "
                             "sklearn.set_config(enable_metadata_routing=True), or as groups=qid)")
        if X is None:
            n = None  # the rows are those of qid
        elif hasattr(X, "shape") and len(X.shape) >= 1:
            n = X.shape[0]
        else:
            try:
                n = len(X)
            except TypeError:
                raise TypeError(f"QueryKFold.split: X must be an array, a sparse matrix or a list of rows (or None: "
                                f"one row per qid), got {type(X).__name__}") from None
        qid = check_qid(qid, n)
        n = qid.shape[0]
        ids, inverse, sizes = np.unique(qid, return_inverse=True, return_counts=True)
        if ids.size < n_splits:
            raise ValueError(f"QueryKFold: n_splits={n_splits} is more than the {ids.size} queries")
        order = np.arange(ids.size)
        if self.shuffle:
            order = check_random_state(self.random_state).permutation(ids.size)
        order = order[np.argsort(-sizes[order], kind="stable")]  # largest first (stable: permuted ties)
        fold_of_query = np.empty(ids.size, dtype=np.intp)
        rows = np.zeros(n_splits, dtype=np.int64)
        for q in order:
            f = int(np.argmin(rows))
            fold_of_query[q] = f
            rows[f] += sizes[q]
        fold = fold_of_query[inverse]
        for f in range(n_splits):
            yield np.flatnonzero(fold != f), np.flatnonzero(fold == f)

    def __repr__(self):
        return f"QueryKFold(n_splits={self.n_splits}, shuffle={self.shuffle}, random_state={self.random_state})"


def _per_query_metric(metric, name):
    def score(y_true, y_pred, qid=None):
        if qid is None:
            raise ValueError(f"the {name} scorer needs qid (enable metadata routing: "
                             "sklearn.set_config(enable_metadata_routing=True)); without it every row would be one "
                             "query")
        return float(metric(y_true, y_pred, qid))

    score.__name__ = name.replace("@", "_at_")
    return score


def ranking_scorer(name="ndcg@10"):
    """A scikit-learn scorer of the per-query metric ``name`` (:func:`cyrank.metrics.metric_by_name`: "ndcg@10",
    "err@10", "map", "mrr", "p@5", "auc", "pairacc", ...) on the estimator's ``predict``, averaged over the
    queries of the scored rows. Made with metadata routing enabled, it requests ``qid``; it refuses to score
    without it."""
    scorer = make_scorer(_per_query_metric(metric_by_name(name), name), response_method="predict")
    if get_config()["enable_metadata_routing"]:  # request qid (scikit-learn allows it only with routing on)
        scorer = scorer.set_score_request(qid=True)
    return scorer


def _path_splits(cv, X, y, qid, query):
    """The (train, test) row index arrays of ``cv`` (see :func:`validation_path`), each checked: integer indices
    in [0, n), and no query in both train and test."""
    n = query.shape[0]
    if cv is None or (isinstance(cv, numbers.Integral) and not isinstance(cv, (bool, np.bool_))):
        cv = QueryKFold(5 if cv is None else cv)
    if hasattr(cv, "split") and not isinstance(cv, (str, bytes)):
        splits = cv.split(X, y, qid=qid) if isinstance(cv, QueryKFold) else cv.split(X, y, groups=qid)
    elif hasattr(cv, "__iter__") and not isinstance(cv, (str, bytes, dict)):
        splits = cv
    else:
        raise TypeError(f"cv must be None, an int >= 2 (QueryKFold), a splitter with split(X, y, groups) such as "
                        f"QueryKFold or sklearn's GroupKFold, or an iterable of (train, test) index arrays; got "
                        f"{type(cv).__name__}")
    out = []
    for j, pair in enumerate(splits):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"cv split {j} is not a (train, test) pair of index arrays")
        pair = [np.asarray(part) for part in pair]
        pair = [np.flatnonzero(part) if part.dtype == bool and part.shape == (n,) else part for part in pair]
        for name, part in zip(("train", "test"), pair):
            if part.ndim != 1 or part.size == 0 or part.dtype.kind not in "iu" or part.min() < 0 or part.max() >= n:
                raise ValueError(f"cv split {j}: {name} must be a non-empty 1-d array of row indices in [0, {n}); "
                                 f"got dtype {part.dtype}, shape {part.shape}")
        shared = np.intersect1d(query[pair[0]], query[pair[1]])
        if shared.size:
            raise ValueError(f"cv split {j} puts rows of {shared.size} quer{'y' if shared.size == 1 else 'ies'} in "
                             "both train and test; a ranking split must keep each query whole: use QueryKFold, or "
                             "sklearn's GroupKFold (validation_path passes qid to split as groups)")
        out.append(tuple(pair))
    if not out:
        raise ValueError("cv gave no (train, test) split")
    return out


def validation_path(estimator, param, values, X, y, qid, *, cv=None, scoring="ndcg@10", sample_weight=None):
    """Validation scores along a path of one regularisation parameter (C, alpha, ...), each fold fitted once per
    value in the given order and warm-started from the previous value's model when the estimator has
    ``warm_start`` (DominationRank: its solvers from the previous coefficients; linear RankSVM: TRON or the
    cutting plane from the previous coef_).

    X (array, sparse matrix or list of rows), y and qid (integers or strings) as in ``fit``. ``cv``: None (5
    query folds), an int (that many QueryKFold folds), a splitter (QueryKFold, or one of scikit-learn's, whose
    ``split(X, y, groups=qid)`` gets qid as groups, e.g. GroupKFold) or an iterable of (train, test) row-index
    arrays. A split that puts a query in both train and test is refused.

    ``sample_weight`` (n_samples,): each fold is fitted with its training rows' weights, and its score is the
    weighted mean over test queries, a query weighing the mean weight of its rows (as ``score``).

    Returns (values, scores) with scores of shape (len(values), n_splits): ``scoring`` (a metric name) on each
    fold's test queries. Order ``values`` from strong to weak regularisation (alpha decreasing, C increasing):
    the solutions then change least from one to the next.
    """
    metric = metric_by_name(scoring)
    values = list(values)
    if not values:
        raise ValueError(f"values is empty: give at least one value of {param}")
    if qid is None:
        raise ValueError("validation_path needs qid: the folds and the scores are per query")
    X = check_X(X, accept_sparse=("csr", "csc"))
    y = check_y(y, X.shape[0])
    query = check_qid(qid, X.shape[0])
    sample_weight = check_sample_weight(sample_weight, X.shape[0])
    qid = np.asarray(qid)
    qid = qid.ravel() if qid.ndim == 2 else qid
    splits = _path_splits(cv, X, y, qid, query)
    scores = np.empty((len(values), len(splits)))
    warm = "warm_start" in estimator.get_params()
    for j, (train, test) in enumerate(splits):
        model = clone(estimator)
        if warm:
            model.set_params(warm_start=True)
        for i, value in enumerate(values):
            model.set_params(**{param: value})
            if sample_weight is None:
                model.fit(X[train], y[train], qid=qid[train])
                scores[i, j] = metric(y[test], model.predict(X[test]), qid[test])
                continue
            model.fit(X[train], y[train], qid=qid[train], sample_weight=sample_weight[train])
            _, per_query = metric(y[test], model.predict(X[test]), qid[test], return_per_query=True)
            scores[i, j] = weighted_query_mean(per_query, qid[test], sample_weight[test], test.shape[0])
    return np.asarray(values), scores
