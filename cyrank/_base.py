"""Behaviour shared by every cyrank estimator: the estimator base :class:`SolverEstimator` (parameters checked and
passed to the functional layer, fitted values from its result, with sklearn's ConvergenceWarning when a solver
stopped short), prediction = scores, score = mean NDCG@10, feature-count and feature-name checks
(``feature_names_in_``), and a MissingQidWarning when a ranker's fit or score gets no qid."""
import functools
import inspect
import threading
import types
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ._linear import LinearX
from ._validation import FLOAT_DTYPES, MissingQidWarning, check_sample_weight, check_X, missing_qid_message


def set_fitted(estimator, result, stale=(), stacklevel=3):
    """Set the attributes of a :class:`cyrank._result.SolveResult` on ``estimator`` (after removing the ``stale``
    ones a previous fit may have left), and warn ConvergenceWarning with the solver's message when it stopped
    short."""
    for name in stale:
        estimator.__dict__.pop(name, None)
    for name, value in result.fitted_attributes().items():
        setattr(estimator, name, value)
    if not result.converged:
        warnings.warn(result.message, ConvergenceWarning, stacklevel=stacklevel)
    return estimator


def feature_names(X):
    """The column names of a DataFrame ``X`` (pandas, polars, Dask: anything with ``columns``) as an object array,
    or None when X has no column names or they are not all strings (scikit-learn's rule: integer column labels,
    as in ``pd.DataFrame(array)``, are no names). Names of mixed kinds are a TypeError, as in scikit-learn."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "shape") or len(X.shape) != 2:
        return None
    names = np.asarray(list(columns), dtype=object)
    is_str = np.array([isinstance(n, str) for n in names], dtype=bool)
    if names.size == 0 or not is_str.any():
        return None
    if not is_str.all():
        kinds = sorted({type(n).__name__ for n in names})
        raise TypeError(f"X's column names are of mixed types {kinds}: name every column with a string (e.g. "
                        "X.columns = X.columns.astype(str)), or pass X.to_numpy() to fit without names")
    return names


def remember_feature_names(estimator, X, names=None):
    """Set ``feature_names_in_`` from a DataFrame ``X`` fitted on (removed when X has no column names); ``names``:
    :func:`feature_names` of X when the caller has it already."""
    names = feature_names(X) if names is None else names
    if names is None:
        estimator.__dict__.pop("feature_names_in_", None)
    else:
        estimator.feature_names_in_ = names


def _listed(names, limit=5):
    shown = "".join(f"- {n}\n" for n in names[:limit])
    return shown + ("- ...\n" if len(names) > limit else "")


def check_feature_names(estimator, X):
    """Compare the column names of ``X`` with those ``estimator`` was fitted with (scikit-learn's convention and
    messages): other or reordered names are a ValueError saying how they differ; names on one side only warn."""
    fitted = getattr(estimator, "feature_names_in_", None)
    names = feature_names(X)
    name = type(estimator).__name__
    if fitted is None and names is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names", UserWarning, stacklevel=4)
        return
    if names is None:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with feature names",
                      UserWarning, stacklevel=4)
        return
    if len(names) == len(fitted) and np.array_equal(names, fitted):
        return
    message = "The feature names should match those that were passed during fit.\n"
    unseen = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))
    if unseen:
        message += "Feature names unseen at fit time:\n" + _listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + _listed(missing)
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message + f"Select the fitted columns in their order: X[est.feature_names_in_], est the "
                     f"fitted {name}")


def check_predict_X(estimator, X, *, accept_sparse=("csr", "csc")):
    """X checked like training data, with the number of features ``estimator`` saw in ``fit`` and, for a
    DataFrame, its column names (:func:`check_feature_names`)."""
    check_is_fitted(estimator)
    check_feature_names(estimator, X)
    X = check_X(X, accept_sparse=accept_sparse, dtype=FLOAT_DTYPES)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting {estimator.n_features_in_} "
            "features as input"
        )
    return X


def _n_rows(X):
    """Number of rows of X for a message (None when X has no length)."""
    try:
        return int(X.shape[0]) if hasattr(X, "shape") else len(X)
    except (TypeError, IndexError):
        return None


_in_fit = threading.local()  # depth of nested wrapped fits (a subclass's fit calling its parent's): warn once


def _warn_without_qid(fit):
    """``fit`` that warns MissingQidWarning after a successful fit given no qid (or qid=None)."""
    names = list(inspect.signature(fit).parameters)
    position = names.index("qid") - 1  # among the arguments after self

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        qid = kwargs["qid"] if "qid" in kwargs else args[position] if len(args) > position else None
        depth = getattr(_in_fit, "depth", 0)
        _in_fit.depth = depth + 1
        try:
            out = fit(self, *args, **kwargs)
        finally:
            _in_fit.depth = depth
        if qid is None and depth == 0:
            X = args[0] if args else kwargs.get("X")
            warnings.warn(missing_qid_message(type(self).__name__, "fit", _n_rows(X)), MissingQidWarning,
                          stacklevel=2)
        return out

    wrapper._warns_without_qid = True
    return wrapper


def weighted_query_mean(per_query, qid, sample_weight, n):
    """sum_q w_q m_q / sum_q w_q over the queries whose metric m_q is defined (not NaN), w_q the mean weight of
    the query's rows (``sample_weight``, n rows; qid None: one query); NaN when no query has a metric."""
    from ._queries import QueryGroups

    weights = check_sample_weight(sample_weight, n)
    w = QueryGroups(np.zeros(n, np.int64) if qid is None else qid).query_weights(weights)
    kept = ~np.isnan(per_query)
    if not kept.any():
        return float("nan")  # the metric warned UndefinedMetricWarning
    if w[kept].sum() == 0:
        raise ValueError("sample_weight is 0 on every scored query (queries with a relevant row); give some of "
                         "them a positive weight")
    return float(np.dot(w[kept], per_query[kept]) / w[kept].sum())


def remembering_feature_names(fit):
    """``fit`` that sets ``feature_names_in_`` from its X after it succeeded (:func:`remember_feature_names`); the
    outermost of nested fits (a subclass's fit calling its parent's with converted arrays) has the last word."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        X = args[0] if args else kwargs.get("X")
        names = feature_names(X)  # mixed-type column names are refused before any work
        out = fit(self, *args, **kwargs)
        remember_feature_names(self, X, names)
        return out

    wrapper._remembers_feature_names = True
    return wrapper


class RankerMixin:
    """``predict`` returns ranking scores (higher = ranked higher); ``score`` is the mean NDCG@10 over queries.

    Subclasses implement ``decision_function(X)``. A subclass's ``fit`` with a ``qid`` parameter is wrapped (once,
    at class creation, signature kept for scikit-learn's metadata routing) to warn :class:`MissingQidWarning`
    when it is called without qid: a ranker fitted on one query of every row is rarely what was meant (e.g.
    GridSearchCV with ``groups=qid`` and no metadata routing), but it is valid, so it warns rather than refuses.
    """

    def __init_subclass__(cls, **kwargs):
        fit = cls.__dict__.get("fit")
        if callable(fit) and not getattr(fit, "_warns_without_qid", False) \
                and "qid" in inspect.signature(fit).parameters:
            cls.fit = _warn_without_qid(fit)
        super().__init_subclass__(**kwargs)

    def predict(self, X):
        """Ranking scores, as :meth:`decision_function`."""
        return self.decision_function(X)

    def score(self, X, y, qid=None, sample_weight=None):
        """Mean NDCG@10 over queries (``cyrank.metrics.ndcg_score`` defaults: gain 2^y - 1, discount
        1/log2(1 + rank), pessimistic ties, queries without a relevant row dropped).

        ``sample_weight`` (n_samples,) >= 0 weighs the rows: a query weighs the mean weight of its rows, and the
        score is the weighted mean sum_q w_q NDCG_q / sum_q w_q over the queries kept. None: every query weighs
        1. Without qid every row is one query (MissingQidWarning).
        """
        from .metrics import ndcg_score

        scores = self.predict(X)
        if qid is None:
            warnings.warn(missing_qid_message(type(self).__name__, "score", _n_rows(X)), MissingQidWarning,
                          stacklevel=2)
        if sample_weight is None:
            return float(ndcg_score(y, scores, qid, k=10))
        _, per_query = ndcg_score(y, scores, qid, k=10, return_per_query=True)
        return weighted_query_mean(per_query, qid, sample_weight, scores.shape[0])

    def _check_predict_X(self, X, *, accept_sparse=("csr", "csc")):
        """X checked like training data, with the number of features seen in ``fit``."""
        return check_predict_X(self, X, accept_sparse=accept_sparse)


class LinearRankerMixin(RankerMixin):
    """Linear scores f(x) = x . coef_."""

    def decision_function(self, X):
        """Scores X coef_ in float64, X read in its own precision (cyrank._linear: a float32 X is not widened to a
        float64 temporary, as numpy's X @ coef_ would)."""
        X = self._check_predict_X(X)
        if sp.issparse(X) and X.format != "csr":
            return np.asarray(X @ self.coef_, dtype=np.float64).ravel()
        return LinearX(X).dot(self.coef_)


def warm_start_coef(estimator, X):
    """The previous ``coef_`` of ``estimator`` to start a fit on X from, when ``warm_start`` is set (None for a
    first fit); a ValueError when X has another number of features than that fit."""
    coef = getattr(estimator, "coef_", None) if estimator.warm_start else None
    if coef is None or np.ndim(coef) != 1:
        return None
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.shape(X) if isinstance(X, (list, tuple)) else None
    if shape is not None and len(shape) == 2 and shape[1] != coef.shape[0]:
        name = type(estimator).__name__
        raise ValueError(f"{name}(warm_start=True) would start from the previous fit's coef_ of {coef.shape[0]} "
                         f"features, but X has {shape[1]}: the number of features changed since the last fit. Set "
                         f"warm_start=False (or use sklearn.base.clone({name.lower()})) to fit from zero")
    return coef


class SolverEstimator(BaseEstimator):
    """Base of the estimators that wrap a functional layer, configured by class attributes (in the spirit of
    scikit-learn's declarative ``_parameter_constraints``)::

        class DominationRank(LinearRankerMixin, SolverEstimator):
            _solve = solver.solve                    # solve(*data, **params) -> SolveResult
            _check = solver.check_params             # check_params(**params) -> the checked values
            _estimator_only_params = ("warm_start",)
            _warm_starts = True

            def fit(self, X, y, qid=None, offset=None):
                return self._fit(X, y, qid, offset)

    The parameters are validated by the functional layer alone (``_check``, which also runs without
    scikit-learn): there is no second validator here.

    ``_solve``
        The functional layer's solve: ``_solve(*data, **fit_args, **params)`` returns a SolveResult.
    ``_check``
        Its parameter check: called by :meth:`_check_params` with the parameters its signature names (the
        others are checked by ``_solve`` itself); what it returns is what ``_check_params()`` returns.
        None: the parameters are checked by ``_solve`` only.
    ``_estimator_only_params``
        ``get_params()`` names that are not passed on to ``_solve`` or ``_check`` (e.g. ``warm_start``).
    ``_warm_starts``
        True: ``fit`` passes ``coef_init=self._coef_init(X)``, the previous ``coef_`` when ``warm_start`` is set
        (:func:`warm_start_coef`; override ``_coef_init`` to restrict it, e.g. to a linear kernel).
    ``_stale_attributes``
        Fitted attributes that an earlier fit may have set and this one may not: removed before fitting.
    ``_sparse_input``
        Whether ``fit`` takes sparse X (the ``input_tags.sparse`` tag); the target is always required.

    A subclass keeps its own ``__init__`` (scikit-learn reads the parameters from its signature) and ``fit``
    (its signature is the fit's metadata: ``qid``, ``offset``, ``eval_set``...), which calls :meth:`_fit`.
    """

    _solve = None
    _check = None
    _estimator_only_params = ()
    _warm_starts = False
    _stale_attributes = ()
    _sparse_input = True

    def __init_subclass__(cls, **kwargs):
        for name in ("_solve", "_check"):  # a plain function as a class attribute would be bound to self
            value = cls.__dict__.get(name)
            if isinstance(value, types.FunctionType):
                setattr(cls, name, staticmethod(value))
        fit = cls.__dict__.get("fit")
        if callable(fit) and not getattr(fit, "_remembers_feature_names", False):
            cls.fit = remembering_feature_names(fit)
        super().__init_subclass__(**kwargs)

    def _solver_params(self):
        """``get_params()`` without the estimator-only parameters: the keyword arguments of ``_solve``."""
        params = self.get_params(deep=False)
        for name in self._estimator_only_params:
            del params[name]
        return params

    def _check_params(self):
        """The functional layer's check of the parameters (``_check``), and what it returns."""
        if self._check is None:
            return None
        params = self._solver_params()
        named = inspect.signature(self._check).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in named.values()):
            params = {name: value for name, value in params.items() if name in named}
        return self._check(**params)

    def _coef_init(self, X):
        """The starting point of a fit on X: the previous ``coef_`` with ``warm_start`` (else None)."""
        return warm_start_coef(self, X)

    def _fit(self, *data, **fit_args):
        """Solve on ``data`` (positional, as ``_solve`` takes them) with ``fit_args`` (keyword arguments of
        ``fit`` passed on, e.g. ``eval_set``) and the parameters; set the result's fitted attributes."""
        if self._warm_starts:
            fit_args["coef_init"] = self._coef_init(data[0])
        result = self._solve(*data, **fit_args, **self._solver_params())
        return set_fitted(self, result, stale=self._stale_attributes, stacklevel=4)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._sparse_input
        tags.target_tags.required = True
        return tags
