"""Reading and writing LETOR/SVMlight text, and safe model files.

One concern per module: ``_svmlight.py`` (LETOR/SVMlight and multilabel text), ``_atomic.py`` (atomic writes),
``_model.py`` (model files, and the classes they may hold), ``_schema.py`` (the schema language of model files),
``_weights.py`` (weight files: one weight per line, line k for row k, as LightGBM's ``.weight`` files),
``_trec.py`` (TREC run and qrels files, and the ``{query id: {document id: value}}`` dicts of pytrec_eval/ranx).
The limits below are read from this package when used, so setting e.g. ``cyrank.io.DECOMPRESS_MIN`` changes them.

SVMlight/LETOR text, one example per line (blank and comment-only lines are skipped)::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

* :func:`load_svmlight` returns ``(X, y, qid)``: X a ``scipy.sparse.csr_matrix`` (float64 or float32) with int64
  ``indices``/``indptr`` and sorted indices, y float64 labels, qid int64 (zeros when the file has no qid).
  The default engine is cyrank's own one-pass Cython reader (:mod:`cyrank._svmlight`, 8.6x faster than
  scikit-learn's on a 132 MB LETOR file, bench/RESULTS.md);
  ``engine="sklearn"`` uses scikit-learn's ``load_svmlight_file(..., query_id=True)``. Both give the same
  arrays, bit for bit; ours also names the line of the first malformed token.
* ``load_svmlight(..., return_doc_ids=True)`` also returns the document ids of LETOR's ``#docid = ...`` comments,
  ``return_comments=True`` every ``key = value`` pair of the comments (LETOR 4.0: docid, inc, prob).
* :func:`dump_svmlight` writes a file that :func:`load_svmlight` reads back exactly (shortest round-trip floats),
  with the doc ids (and other comment pairs) when given.

TREC files: :func:`read_run` / :func:`write_run` (``qid Q0 docid rank score tag``), :func:`read_qrels` /
:func:`write_qrels` (``qid iter docid rel``), and :func:`run_from_scores` / :func:`qrels_from_labels` from arrays.

Model files (:func:`save_model` / :func:`load_model`) are ``.npz`` archives holding a JSON header and plain
numeric arrays: no pickle anywhere, so opening a model file never runs code. Only cyrank's own estimators and
classes decorated with :func:`register_model` can be saved and loaded. :class:`ModelRecord` is what a file holds
(class name, parameters, fitted attributes); ``save_model`` also takes one, to save a functional-layer result
without creating the estimator.
"""
from ._atomic import atomic_write
from ._model import (FORMAT_NAME, FORMAT_VERSION, MODEL_SIZE_MIN, MODEL_SIZE_RATIO, ModelRecord, load_model,
                     register_model, registered_models, save_model)
from ._svmlight import (DECOMPRESS_MIN, DECOMPRESS_RATIO, MAX_FEATURES, MAX_LABELS, dump_svmlight,
                        dump_svmlight_multilabel, feature_beyond, load_svmlight, load_svmlight_multilabel)
from ._trec import qrels_from_labels, read_qrels, read_run, run_from_scores, write_qrels, write_run
from ._weights import load_weights

# private names that the tests use (kept here so that they keep working)
from ._model import _THIRD_PARTY_MODELS  # noqa: F401
from ._schema import _schema_rules  # noqa: F401
from ._svmlight import _cython_reader, _decimal_point, _format_rows_py  # noqa: F401

__all__ = ["load_svmlight", "dump_svmlight", "load_svmlight_multilabel", "dump_svmlight_multilabel",
           "feature_beyond", "load_weights", "save_model", "load_model", "ModelRecord", "register_model",
           "read_qrels", "write_qrels", "read_run", "write_run", "run_from_scores", "qrels_from_labels"]
