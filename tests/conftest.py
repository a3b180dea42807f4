"""Shared fixtures. Data come from the public generator ``cyrank.datasets.make_ranking``; a test that needs its
own draw calls it with its own seed (a Generator can be passed to keep drawing after it)."""
import numpy as np
import pytest

from cyrank.datasets import make_ranking


@pytest.fixture
def rng():
    """A fresh seeded ``numpy.random.Generator`` (seed 0) for each test."""
    return np.random.default_rng(0)


@pytest.fixture
def ranking_data():
    """``(X, y, qid)``: 90 rows, 5 Gaussian features, grades 0..2 (global quantile bins of a noisy linear score,
    ties inside bins), 6 queries of various sizes with unsorted, non-contiguous ids ``3 q + 1``."""
    X, y, qid = make_ranking(6, 90, 5, 3, binning="global", shuffle=True, random_state=5)
    return X, y, qid * 3 + 1
