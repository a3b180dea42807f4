"""cyrank.datasets' label-ranking builders against what they are defined as."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import datasets
from sklearn.naive_bayes import GaussianNB

from cyrank.datasets import label_ranking_dataset, multilabel_dataset
from cyrank.labelrank import PreferenceGraphs


@pytest.mark.parametrize("name", ["iris", "wine", "digits", "breast_cancer"])
def test_label_ranking_grades_follow_naive_bayes_probabilities(name):
    X, R = label_ranking_dataset(name)
    X0, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    proba = GaussianNB().fit(X0, y).predict_proba(X0)
    L = proba.shape[1]
    assert R.shape == proba.shape and X.shape == X0.shape
    for i in range(0, R.shape[0], 7):
        for a in range(L):
            for b in range(L):  # a higher grade exactly when a higher probability
                assert (R[i, a] > R[i, b]) == (proba[i, a] > proba[i, b])
        assert R[i, np.argmax(proba[i])] == L - 1
    np.testing.assert_allclose(X, (X0 - X0.mean(0)) / np.where(X0.std(0) > 0, X0.std(0), 1.0))
    G = PreferenceGraphs.from_relevance(R)
    distinct = np.array([np.unique(p).size for p in proba])
    complete = distinct == L  # no tie in probability: a total order, every pair of labels an edge
    np.testing.assert_array_equal(np.diff(G.edge_ptr)[complete], L * (L - 1) // 2)


def test_label_ranking_dataset_refuses_unknown_names():
    with pytest.raises(ValueError, match="name must be one of"):
        label_ranking_dataset("mnist")


@pytest.mark.parametrize("sparse", [False, True])
def test_multilabel_dataset_is_make_multilabel_classification(sparse):
    X, Y = multilabel_dataset(n_samples=200, n_features=20, n_classes=6, n_labels=2, sparse=sparse, random_state=3)
    X0, Y0 = datasets.make_multilabel_classification(n_samples=200, n_features=20, n_classes=6, n_labels=2,
                                                     random_state=3)
    assert sp.issparse(X) == sparse and X.dtype == np.float64
    np.testing.assert_array_equal(X.toarray() if sparse else X, X0)
    np.testing.assert_array_equal(Y, Y0)
