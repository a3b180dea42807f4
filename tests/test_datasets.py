"""cyrank.datasets: the shipped lightgbm-rank data match PROVENANCE.txt and scikit-learn's reading."""
import gzip
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from cyrank.datasets import lightgbm_rank_provenance, load_lightgbm_rank

ORIGINAL = Path("/work/shared/data/lightgbm-rank")
FILES = {"train": "rank.train.qid.svm.gz", "test": "rank.test.qid.svm.gz"}


def query_sizes(qid):
    _, counts = np.unique(qid, return_counts=True)
    return counts


def test_train_matches_provenance():
    X, y, qid = load_lightgbm_rank("train")
    assert X.shape == (3005, 300) and X.format == "csr" and X.dtype == np.float64
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    assert y.dtype == np.float64 and qid.dtype == np.int64
    labels, counts = np.unique(y, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist())) == {0: 645, 1: 1211, 2: 858, 3: 222, 4: 69}
    sizes = query_sizes(qid)
    assert sizes.size == 201 and sizes.min() == 1 and sizes.max() == 27 and np.median(sizes) == 15
    levels = [np.unique(y[qid == q]).size for q in np.unique(qid)]
    assert sum(n == 1 for n in levels) == 6
    assert sum(y[qid == q].max() == 0 for q in np.unique(qid)) == 3
    assert round(X.nnz / (3005 * 300), 3) == 0.316
    assert X.data.min() >= 0 and X.data.max() <= 1


def test_test_matches_provenance():
    X, y, qid = load_lightgbm_rank("test")
    assert X.shape == (768, 300)
    labels, counts = np.unique(y, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist())) == {0: 206, 1: 256, 2: 252, 3: 44, 4: 10}
    sizes = query_sizes(qid)
    assert sizes.size == 50 and sizes.min() == 6 and sizes.max() == 24


@pytest.mark.parametrize("subset", ["train", "test"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_equals_sklearn_reading_the_shipped_file(subset, dtype):
    X, y, qid = load_lightgbm_rank(subset, dtype=dtype)
    with resources.as_file(resources.files("cyrank.datasets").joinpath(FILES[subset])) as path:
        Xs, ys, qs = load_svmlight_file(str(path), query_id=True, n_features=300, dtype=dtype, zero_based=False)
        raw = gzip.decompress(path.read_bytes())
    assert X.dtype == Xs.dtype
    assert np.array_equal(X.indptr, Xs.indptr) and np.array_equal(X.indices, Xs.indices)
    assert X.data.tobytes() == Xs.data.tobytes()
    assert np.array_equal(y, ys) and np.array_equal(qid, qs)
    # the shipped file is the original, byte for byte
    original = ORIGINAL / FILES[subset][:-3]
    if original.exists():
        assert raw == original.read_bytes()


def test_both_and_arguments():
    both = load_lightgbm_rank("both")
    assert set(both) == {"train", "test"}
    for key in both:
        X, y, qid = both[key]
        X1, y1, q1 = load_lightgbm_rank(key)
        assert (X != X1).nnz == 0 and np.array_equal(y, y1) and np.array_equal(qid, q1)
        assert X.shape[1] == 300
    assert both["train"][0] is not load_lightgbm_rank("train")[0]   # fresh arrays every call
    with pytest.raises(ValueError, match="subset"):
        load_lightgbm_rank("valid")
    with pytest.raises(ValueError, match="dtype"):
        load_lightgbm_rank("train", dtype=np.int32)


def test_provenance_ships_with_the_data():
    text = lightgbm_rank_provenance()
    assert "MIT" in text and "Microsoft Corporation" in text and "Permission is hereby granted" in text
    names = {p.name for p in resources.files("cyrank.datasets").iterdir()}
    assert {"rank.train.qid.svm.gz", "rank.test.qid.svm.gz", "PROVENANCE.txt"} <= names
