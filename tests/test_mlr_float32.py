"""MLR on float32 X: copied to float64 once (cyrank/mlr/solver.py says why), so a float32 X and the same values in
float64 give the same fit bit for bit, and the copy is a small part of what the fit allocates."""
import tracemalloc

import numpy as np

from cyrank.mlr import MLR, solve


def _blobs(n=120, d=6, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.normal(size=(classes, d))[y] + 1.5 * rng.normal(size=(n, d))
    return X.astype(np.float32), y


def test_float32_fit_equals_float64_fit_of_the_same_values():
    X32, y = _blobs()
    for params in (dict(loss="auc", regularizer="trace"), dict(loss="map", regularizer="diagonal"),
                   dict(loss="ndcg", regularizer="frobenius", k=5)):
        a = MLR(C=10.0, **params).fit(X32, y)
        b = MLR(C=10.0, **params).fit(X32.astype(np.float64), y)
        assert np.array_equal(a.W_, b.W_) and a.objective_ == b.objective_ and a.n_batches_ == b.n_batches_
        np.testing.assert_array_equal(a.transform(X32), b.transform(X32.astype(np.float64)))


def test_the_float64_copy_is_a_small_part_of_a_fit():
    """The one float64 copy of a float32 X (n x d) is under a tenth of the fit's peak allocations (its n x n score
    blocks and d x d working set)."""
    X32, y = _blobs(n=400, d=10)
    solve(X32[:40], y[:40], C=10.0)  # first-call caches out of the count
    tracemalloc.start()
    try:
        solve(X32, y, C=10.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X32.size * 8 < 0.1 * peak
