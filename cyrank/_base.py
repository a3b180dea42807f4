"""Behaviour shared by every cyrank estimator: fitted values from the functional layer (with sklearn's
ConvergenceWarning when a solver stopped short), prediction = scores, score = mean NDCG@10, feature-count check."""
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ._validation import FLOAT_DTYPES, check_X


def set_fitted(estimator, result, stale=()):
    """Set the attributes of a :class:`cyrank._result.SolveResult` on ``estimator`` (after removing the ``stale``
    ones a previous fit may have left), and warn ConvergenceWarning with the solver's message when it stopped
    short."""
    for name in stale:
        estimator.__dict__.pop(name, None)
    for name, value in result.fitted_attributes().items():
        setattr(estimator, name, value)
    if not result.converged:
        warnings.warn(result.message, ConvergenceWarning, stacklevel=3)
    return estimator


def check_predict_X(estimator, X, *, accept_sparse=("csr", "csc")):
    """X checked like training data, with the number of features ``estimator`` saw in ``fit``."""
    check_is_fitted(estimator)
    X = check_X(X, accept_sparse=accept_sparse, dtype=FLOAT_DTYPES)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting {estimator.n_features_in_} "
            "features as input"
        )
    return X


class RankerMixin:
    """``predict`` returns ranking scores (higher = ranked higher); ``score`` is the mean NDCG@10 over queries.

    Subclasses implement ``decision_function(X)``.
    """

    def predict(self, X):
        """Ranking scores, as :meth:`decision_function`."""
        return self.decision_function(X)

    def score(self, X, y, qid=None):
        """Mean NDCG@10 over queries (``cyrank.metrics.ndcg_score`` defaults: gain 2^y - 1, discount
        1/log2(1 + rank), pessimistic ties, queries without a relevant row dropped)."""
        from .metrics import ndcg_score

        return float(ndcg_score(y, self.predict(X), qid, k=10))

    def _check_predict_X(self, X, *, accept_sparse=("csr", "csc")):
        """X checked like training data, with the number of features seen in ``fit``."""
        return check_predict_X(self, X, accept_sparse=accept_sparse)


class LinearRankerMixin(RankerMixin):
    """Linear scores f(x) = x . coef_."""

    def decision_function(self, X):
        """Scores X @ coef_ in float64."""
        X = self._check_predict_X(X)
        return np.asarray(X @ self.coef_, dtype=np.float64).ravel()
