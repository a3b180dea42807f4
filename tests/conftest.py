"""Shared fixtures. Data come from the public generator ``cyrank.datasets.make_ranking``; a test that needs its
own draw calls it with its own seed (a Generator can be passed to keep drawing after it)."""
import json

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


def _edit_model_file(src, dst=None, header_edit=None, arrays_edit=None):
    """Copy the model file ``src`` to ``dst`` (default: in place) with its JSON header changed by
    ``header_edit(header)`` and/or its arrays by ``arrays_edit(header, arrays)``, written as np.savez writes
    (allow_pickle by default: an object array gets pickled, as a crafted file could be)."""
    with np.load(src, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(arrays.pop("cyrank_header").tobytes())
    if header_edit:
        header_edit(header)
    if arrays_edit:
        arrays_edit(header, arrays)
    blob = np.frombuffer(json.dumps(header).encode(), np.uint8)
    with open(src if dst is None else dst, "wb") as fh:
        np.savez(fh, cyrank_header=blob, **arrays)


@pytest.fixture(scope="session")
def edit_model_file():
    """``edit(src, dst=None, header_edit=None, arrays_edit=None)``: a crafted copy of a saved model file."""
    return _edit_model_file
