"""Many models at once: one clone of an estimator per column of a label matrix (one model per topic, label or
user), fitted through joblib, so that the same call runs serially, on threads, on processes or on a Dask cluster
(``with joblib.parallel_backend("dask"): fit_many(...)``).

Threads are worth it: every cyrank kernel releases the GIL. Each task's fit is given ``n_jobs=1`` when the
estimator has that parameter left at None and several tasks run at once, so the tasks, not the kernels, share
the cores.
"""
import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import clone

from ._validation import check_n_jobs, check_sample_weight, check_X

__all__ = ["fit_many", "ManyRankers"]


def _fit_one(estimator, X, y, qid, sample_weight):
    if sample_weight is None:
        return estimator.fit(X, y, qid=qid)
    return estimator.fit(X, y, qid=qid, sample_weight=sample_weight)


def _task_weights(sample_weight, n, n_tasks):
    """One weight vector (or None) per task: ``sample_weight`` None, one vector shared by every task, or a matrix
    with one column per task; each checked as every fit checks it."""
    if sample_weight is None:
        return [None] * n_tasks
    W = np.asarray(sample_weight) if not np.isscalar(sample_weight) else sample_weight
    if np.ndim(W) == 2 and W.shape[1] != 1:
        if W.shape != (n, n_tasks):
            raise ValueError(f"sample_weight has shape {W.shape}; give one weight per row ({n},) shared by every "
                             f"task, or one column per task ({n}, {n_tasks}) like Y")
        return [check_sample_weight(W[:, t], n) for t in range(n_tasks)]
    return [check_sample_weight(W, n)] * n_tasks


class ManyRankers:
    """The fitted tasks of :func:`fit_many`.

    Attributes
    ----------
    estimators_ : list
        One fitted estimator per column of Y.
    coef_ : ndarray (n_tasks, n_features) or CSR matrix
        The coefficients of every task, one row each (linear estimators only): CSR when X was sparse.
    n_tasks_ : int
    """

    def __init__(self, estimators, sparse):
        self.estimators_ = list(estimators)
        self.n_tasks_ = len(self.estimators_)
        if self.n_tasks_ and all(hasattr(e, "coef_") and np.ndim(e.coef_) == 1 for e in self.estimators_):
            coef = np.vstack([e.coef_ for e in self.estimators_])
            self.coef_ = sp.csr_matrix(coef) if sparse else coef

    def predict(self, X):
        """Scores of every task, (n_samples, n_tasks): X coef_' for linear models (one product), else each
        estimator's predict."""
        if not self.n_tasks_:
            raise ValueError("ManyRankers has no task: build it with fit_many(estimator, X, Y, qid)")
        if hasattr(self, "coef_"):
            X = check_X(X, accept_sparse=("csr", "csc"))
            if X.shape[1] != self.coef_.shape[1]:
                raise ValueError(f"X has {X.shape[1]} features, but the tasks were fitted on {self.coef_.shape[1]}; "
                                 "predict needs X with the columns of the training X, in the same order")
            out = X @ self.coef_.T
            return np.asarray(out.toarray() if sp.issparse(out) else out, dtype=np.float64)
        return np.column_stack([e.predict(X) for e in self.estimators_])


def fit_many(estimator, X, Y, qid=None, *, n_jobs=None, sample_weight=None):
    """Fit ``clone(estimator)`` on (X, Y[:, t], qid) for every column t of Y, through joblib.

    Parameters
    ----------
    estimator : cyrank estimator
        Any ranker with ``fit(X, y, qid=...)``.
    X : array-like or sparse matrix (n_samples, n_features)
        Shared by every task (validated once).
    Y : array-like or sparse matrix (n_samples, n_tasks)
        One column of relevance labels per task.
    qid : array-like (n_samples,) or None
        Query ids, shared by every task.
    n_jobs : int or None, default=None
        joblib's n_jobs (None: 1 unless a ``joblib.parallel_backend`` context says otherwise; -1: every core). The
        backend is joblib's: processes (loky, the default), ``parallel_backend("threading")`` or
        ``parallel_backend("dask")`` with a ``distributed.Client``.
    sample_weight : array-like (n_samples,) or (n_samples, n_tasks), or None
        Row weights shared by every task, or one column of weights per task (as the columns of Y).

    Returns
    -------
    ManyRankers
    """
    X = check_X(X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32))
    if sp.issparse(Y):
        Y = Y.tocsc()
        columns = [np.asarray(Y[:, t].toarray()).ravel() for t in range(Y.shape[1])]
    else:
        Y = np.asarray(Y)
        if Y.ndim != 2:
            raise ValueError(f"Y must be 2-d (n_samples, n_tasks); got shape {Y.shape}")
        columns = [Y[:, t] for t in range(Y.shape[1])]
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y has {Y.shape[0]} rows but X has {X.shape[0]}")
    if not columns:
        raise ValueError("Y has no column: nothing to fit")
    weights = _task_weights(sample_weight, X.shape[0], len(columns))
    n_jobs = n_jobs if n_jobs is None else check_n_jobs(n_jobs)
    template = clone(estimator)
    if "n_jobs" in template.get_params() and template.get_params()["n_jobs"] is None and n_jobs != 1:
        template.set_params(n_jobs=1)  # the tasks share the cores, not each task's kernels
    fitted = Parallel(n_jobs=n_jobs)(delayed(_fit_one)(clone(template), X, y, qid, w)
                                      for y, w in zip(columns, weights))
    return ManyRankers(fitted, sp.issparse(X))
