"""Label-ranking data built from data sets bundled with scikit-learn (imported when a builder runs).

Label ranking (Cheng, Huehn & Huellermeier, "Decision tree and instance-based learning for label ranking",
ICML 2009, section 6): a naive Bayes classifier fitted to a classification set ranks the labels of each
instance by predicted probability, which gives every instance a total order over the classes. Multilabel data:
scikit-learn's ``make_multilabel_classification``. Pass the grades to ``PreferenceGraphs.from_relevance`` (or the
indicator to ``from_indicator``) to train LabelRankBoost.
"""
import numpy as np

_SETS = ("iris", "wine", "digits", "breast_cancer")


def label_ranking_dataset(name="iris", *, standardize=True):
    """(X, R): a classification set of scikit-learn (``name`` in iris, wine, digits, breast_cancer) and R
    (n x n_classes), the grade of each label for each instance: n_classes - 1 for the label GaussianNB (fitted on
    the whole set) finds most probable, ..., 0 for the least probable; labels of equal probability share a grade
    (dense ranks). X is float64, centred and scaled to unit variance when ``standardize`` (population standard
    deviation; constant columns left at 0)."""
    from sklearn import datasets
    from sklearn.naive_bayes import GaussianNB

    if name not in _SETS:
        raise ValueError(f"name must be one of {_SETS}, got {name!r}")
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    X = np.asarray(X, dtype=np.float64)
    proba = GaussianNB().fit(X, y).predict_proba(X)
    R = np.empty(proba.shape, dtype=np.int64)
    for i, row in enumerate(proba):
        levels = np.unique(row)  # ascending: the least probable label gets the lowest grade
        R[i] = np.searchsorted(levels, row) + (proba.shape[1] - levels.size)
    if standardize:
        scale = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    return X, R


def multilabel_dataset(n_samples=1000, n_features=50, n_classes=10, n_labels=3, *, sparse=False, random_state=0):
    """A multilabel data set (X, Y) made by scikit-learn's make_multilabel_classification with these arguments.

    X is float64 (CSR when ``sparse``), Y the 0/1 indicator matrix (int64)."""
    from scipy import sparse as sp
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=n_samples, n_features=n_features, n_classes=n_classes,
                                          n_labels=n_labels, random_state=random_state)
    X = np.asarray(X, dtype=np.float64)
    return (sp.csr_matrix(X) if sparse else X), np.asarray(Y, dtype=np.int64)
