"""Issue 28: LambdaMART hands LightGBM the user's dense X itself (its own dtype, no reordered or float64 copy) and
gives the same model for float32 and float64 X and for any row order."""
import tracemalloc

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from cyrank import LambdaMART  # noqa: E402


def _data(n=4000, d=20, per_query=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n)), 0, 4)
    return X, y, np.repeat(np.arange(n // per_query), per_query)


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lightgbm_bins_the_users_array_itself(monkeypatch, dtype, layout):
    """The array LightGBM's Dataset receives is X, not a copy (float32 stays float32, rows stay in place)."""
    X, y, qid = _data()
    X = np.asarray(X, dtype=dtype, order=layout)
    given = []
    original = lgb.Dataset.__init__

    def spy(self, data, *args, **kwargs):
        given.append(data)
        original(self, data, *args, **kwargs)

    monkeypatch.setattr(lgb.Dataset, "__init__", spy)
    LambdaMART(n_estimators=2, n_jobs=1).fit(X, y, qid)
    assert given[0] is X


def test_the_fit_allocates_well_below_a_copy_of_x():
    """numpy's allocations during the fit (tracemalloc: a reordered or float64 copy of X would be 1x or 2x X's
    bytes) stay below 0.5x X: the per-row arrays of the kernel and LightGBM's gradients only."""
    X, y, qid = _data(n=20000, d=100)
    LambdaMART(n_estimators=1, n_jobs=1).fit(X[:500], y[:500], qid[:500])  # imports and first-call caches
    tracemalloc.start()
    try:
        LambdaMART(n_estimators=3, n_jobs=1).fit(X, y, qid)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.5 * X.nbytes, peak / X.nbytes


def test_float32_and_float64_x_give_the_same_model():
    """X in float32 and the same values in float64: LightGBM bins the same numbers, so the same trees."""
    X, y, qid = _data()
    Xt = _data(seed=1)[0]
    m32 = LambdaMART(n_estimators=15, n_jobs=1).fit(X, y, qid)
    m64 = LambdaMART(n_estimators=15, n_jobs=1).fit(X.astype(np.float64), y, qid)
    assert m32.model_string_ == m64.model_string_
    np.testing.assert_array_equal(m32.predict(Xt), m64.predict(Xt))


@pytest.mark.parametrize("metric", ["ndcg@10", "err@5"])
def test_shuffled_rows_give_the_same_model(metric):
    """Rows permuted at random (queries no longer contiguous) or inside their queries: every row gets the same
    lambdas, and LightGBM (X as given) grows the same trees."""
    X, y, qid = _data()
    Xt = _data(seed=1)[0]
    rng = np.random.default_rng(3)
    base = LambdaMART(metric=metric, n_estimators=15, n_jobs=1).fit(X, y, qid)
    for perm in (rng.permutation(y.size), np.lexsort((rng.random(y.size), qid))):
        other = LambdaMART(metric=metric, n_estimators=15, n_jobs=1).fit(X[perm], y[perm], qid[perm])
        np.testing.assert_array_equal(other.predict(Xt), base.predict(Xt))
        assert other.objective_ == base.objective_
