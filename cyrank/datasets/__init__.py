"""Small real learning-to-rank data shipped with cyrank.

``lightgbm-rank``: LightGBM's lambdarank example (MIT License, Copyright (c) Microsoft Corporation), with
``qid:`` inserted from its ``.query`` files; see ``PROVENANCE.txt`` beside this module (also returned by
:func:`lightgbm_rank_provenance`). Train: 3005 documents, 201 queries; test: 768 documents, 50 queries;
300 sparse features in [0, 1]; labels 0..4. Stored as gzip-compressed LETOR/SVMlight text with one-based
indices 1..300.

Label ranking: :func:`label_ranking_dataset` (scikit-learn's classification sets, labels ranked by naive Bayes) and
:func:`multilabel_dataset` (label_ranking.py).
"""
from importlib import resources

import numpy as np

from ..io import load_svmlight

from ._generate import make_ranking
from .label_ranking import label_ranking_dataset, multilabel_dataset

__all__ = ["load_lightgbm_rank", "lightgbm_rank_provenance", "label_ranking_dataset", "multilabel_dataset",
           "make_ranking"]

_LIGHTGBM_FILES = {"train": "rank.train.qid.svm.gz", "test": "rank.test.qid.svm.gz"}
_LIGHTGBM_N_FEATURES = 300


def _read(name, dtype):
    # load_svmlight takes a binary file object (decompressed by its content) as well as a path
    with resources.files(__name__).joinpath(name).open("rb") as fh:
        return load_svmlight(fh, n_features=_LIGHTGBM_N_FEATURES, dtype=dtype, zero_based=False)


def load_lightgbm_rank(subset="train", *, dtype=np.float64):
    """Load LightGBM's lambdarank example data as ``(X, y, qid)``.

    ``subset``: "train" (3005 x 300, 201 queries), "test" (768 x 300, 50 queries), or "both", which returns
    the dict ``{"train": (X, y, qid), "test": (X, y, qid)}``. X is a CSR matrix with 300 columns for both
    subsets (file index j is column j - 1), of ``dtype`` float64 or float32; y float64 labels 0..4; qid int64.
    Each call returns fresh arrays.
    """
    if subset not in ("train", "test", "both"):
        raise ValueError(f"subset must be 'train', 'test' or 'both'; got {subset!r}")
    if subset == "both":
        return {key: _read(name, dtype) for key, name in _LIGHTGBM_FILES.items()}
    return _read(_LIGHTGBM_FILES[subset], dtype)


def lightgbm_rank_provenance():
    """The provenance and license text of the lightgbm-rank data (keep it with any copy of the data)."""
    return resources.files(__name__).joinpath("PROVENANCE.txt").read_text(encoding="utf-8")
