"""Shared test data: the graded-label ranking problems the solver tests are built on."""
import numpy as np


def graded_problem(seed, n, d, n_queries, levels, *, noise, qid_stride, qid_shift, density=1.0):
    """``(rng, X, y, qid)``: Gaussian X (entries kept with probability ``density``), labels = ``levels`` quantile
    bins of a noisy linear score (ties inside bins), and unsorted, non-contiguous query ids
    ``qid_stride * q + qid_shift``. ``rng`` is returned for any further draws of the caller."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if density < 1.0:
        X *= rng.random((n, d)) < density
    score = X @ rng.normal(size=d) + noise * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, levels + 1)[1:-1])).astype(float)
    qid = rng.integers(0, n_queries, size=n) * qid_stride + qid_shift
    return rng, X, y, qid
