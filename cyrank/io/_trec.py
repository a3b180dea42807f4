"""TREC run and qrels files, the exchange formats of trec_eval (NIST; Buckley's trec_eval 9.0 README), and the
conversions between cyrank's arrays and the ``{query id: {document id: value}}`` dicts of pytrec_eval and ranx.

Qrels, one judgement per line: ``qid iter docid rel``. ``iter`` is not read (trec_eval ignores it); ``rel`` must
be an integer, as trec_eval reads it (a fractional relevance such as ``0.5`` is refused, naming its line, rather
than truncated). Run, one retrieved document per line: ``qid Q0 docid rank score tag``. The score decides the
order, as in trec_eval (decreasing score, ties by decreasing document id, strcmp order); the ``Q0`` and ``rank``
fields are informational and not read. Fields are separated by whitespace; ids hold no whitespace; blank lines are
skipped. ``.gz``/``.bz2`` files are decompressed as :func:`cyrank.io.load_svmlight` does (with its limits).

Reading is one pass in C over the bytes (:func:`cyrank._svmlight.parse_trec`, building the dicts directly);
errors name the file, the 1-based line and what is wrong. Writing is atomic (:func:`cyrank.io.atomic_write`);
:func:`write_run` numbers the ranks 1.. in trec_eval's order, so a file says what trec_eval will read.
"""
import os
import re

import numpy as np

from ._atomic import atomic_write
from ._svmlight import _read_bytes


def _reader():
    from .. import _svmlight  # the compiled kernel, cyrank/_svmlight.pyx

    return _svmlight


def _read(path, run, max_bytes):
    raw, name = _read_bytes(path, max_bytes)
    try:
        parsed, tag, _ = _reader().parse_trec(raw, run)
    except ValueError as exc:
        raise ValueError(f"{name}, {exc}") from None
    if not parsed:
        what = "a run holds 'qid Q0 docid rank score tag' lines" if run else "qrels hold 'qid iter docid rel' lines"
        raise ValueError(f"{name}: empty file (no line with fields); {what}")
    return parsed, tag


def read_qrels(path, *, max_bytes=None):
    """Read a TREC qrels file (``qid iter docid rel`` lines) into ``{qid: {docid: rel}}`` (str keys, int rel).

    ``path``: str, PathLike or binary file object; ``.gz``/``.bz2`` are decompressed (``max_bytes`` as in
    :func:`cyrank.io.load_svmlight`). ValueError naming the file and line for a line without 4 fields, a
    relevance that is not an integer (trec_eval's rule), a document judged twice for one query, an empty file.
    """
    return _read(path, False, max_bytes)[0]


def read_run(path, *, return_tag=False, max_bytes=None):
    """Read a TREC run file (``qid Q0 docid rank score tag`` lines) into ``{qid: {docid: score}}`` (str keys,
    float scores).

    The scores give the order (trec_eval's rule); the rank column is not read. With ``return_tag=True`` returns
    ``(run, tag)``, the tag of the first line. ValueError naming the file and line for a line without 6 fields, a
    score that is not a number or not finite (NaN, inf), a document twice for one query, an empty file.
    """
    run, tag = _read(path, True, max_bytes)
    return (run, tag) if return_tag else run


# ------------------------------------------------------------------------------------------------ writing
_BLANK = re.compile(r"\s")


def _check_ids(ids, what, name):
    """ValueError unless every id is a non-empty str without whitespace (one C-level scan of the joined ids)."""
    try:
        joined = "\x00".join(ids)
    except TypeError:
        bad = next(i for i in ids if not isinstance(i, str))
        raise TypeError(f"{name}: {what} ids must be str, got {type(bad).__name__} {bad!r}") from None
    if _BLANK.search(joined) or (len(ids) and "\x00\x00" in f"\x00{joined}\x00"):
        first = next(i for i in ids if not i or _BLANK.search(i))
        raise ValueError(f"{name}: {what} id {first!r} is empty or holds whitespace; TREC files separate fields "
                         "by whitespace")


def _check_nested(data, what, name):
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise TypeError(f"{name}: {what} must be a dict {{query id: {{document id: value}}}}")
    _check_ids(data.keys(), "query", name)
    for docs in data.values():
        _check_ids(docs.keys(), "document", name)


def _write(path, chunks):
    """Write the UTF-8 ``chunks`` to a binary file object, or atomically to a path."""
    if hasattr(path, "write"):
        path.writelines(chunks)
        return
    atomic_write(path, lambda fh: fh.writelines(chunks))


def write_qrels(path, qrels):
    """Write ``{qid: {docid: rel}}`` as TREC qrels lines ``qid 0 docid rel`` (atomically; queries and documents in
    the dicts' order). Relevance must be integral (an int, or a float such as 2.0, written as 2): trec_eval reads
    integers."""
    name = os.fspath(path) if not hasattr(path, "write") else getattr(path, "name", "<file>")
    _check_nested(qrels, "qrels", name)
    lines = []
    for q, docs in qrels.items():
        rels = np.asarray(list(docs.values()), dtype=np.float64)
        bad = ~np.isfinite(rels) | (rels != np.round(rels))
        if bad.any():
            doc = list(docs)[int(np.argmax(bad))]
            raise ValueError(f"{name}: relevance {docs[doc]!r} of query {q!r}, document {doc!r} is not an integer; "
                             "trec_eval reads integer relevance levels")
        lines.append("".join([f"{q} 0 {d} {r}\n" for d, r in zip(docs, rels.astype(np.int64).tolist())]).encode())
    _write(path, lines)


def write_run(path, run, tag="cyrank"):
    """Write ``{qid: {docid: score}}`` as TREC run lines ``qid Q0 docid rank score tag`` (atomically).

    Within a query the lines are in trec_eval's order (decreasing score, ties by decreasing document id) with
    ranks 1, 2, ...; queries in the dict's order. Scores are written with the shortest decimal that reads back as
    the same float64, so :func:`read_run` returns exactly ``run``. Scores must be finite; ids and ``tag`` must be
    non-empty and hold no whitespace.
    """
    name = os.fspath(path) if not hasattr(path, "write") else getattr(path, "name", "<file>")
    if not isinstance(tag, str) or not tag or _BLANK.search(tag):
        raise ValueError(f"tag must be a non-empty str without whitespace, got {tag!r}")
    _check_nested(run, "run", name)
    format_run = _reader().format_run  # the lines in C: cyrank/_svmlight.pyx
    lines = []
    for q, docs in run.items():
        scores = np.asarray(list(docs.values()), dtype=np.float64)
        if not np.isfinite(scores).all():
            doc = list(docs)[int(np.argmax(~np.isfinite(scores)))]
            raise ValueError(f"{name}: score {docs[doc]!r} of query {q!r}, document {doc!r} is not finite; a run "
                             "holds finite scores")
        ranked = sorted(zip(scores.tolist(), docs), reverse=True)  # trec_eval's order: score, then doc id, decreasing
        lines.append(format_run(q, ranked, tag))
    _write(path, lines)


# --------------------------------------------------------------------------------------------- conversions
def _group(qid, doc_ids, values, what):
    """``{str(qid): {doc id: value}}`` from three aligned arrays (queries in order of first appearance; integral
    float query ids written as integers)."""
    qid, doc_ids, values = np.asarray(qid), np.asarray(doc_ids), np.asarray(values)
    if qid.ndim != 1 or doc_ids.shape != qid.shape or values.shape != qid.shape:
        raise ValueError(f"qid, doc_ids and {what} must be 1-d arrays of the same length; got shapes {qid.shape}, "
                         f"{doc_ids.shape}, {values.shape}")
    if qid.dtype.kind == "f" and np.all(qid == np.round(qid)):
        qid = qid.astype(np.int64)
    try:
        uniq, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    except TypeError:
        raise TypeError("qid mixes ids that cannot be compared (such as 1 and '1'); give one type of id") from None
    keys = [str(q) for q in uniq.tolist()]
    _check_ids(keys, "query", "qid")
    order = np.argsort(inverse, kind="stable")  # rows grouped by query, in their order within each query
    bounds = np.r_[0, np.cumsum(np.bincount(inverse, minlength=uniq.size))].tolist()
    docs = doc_ids[order].astype(str).tolist()
    _check_ids(docs, "document", "doc_ids")
    ordered = values[order].tolist()
    result = {}
    for g in np.argsort(first, kind="stable").tolist():
        names = docs[bounds[g]:bounds[g + 1]]
        group = dict(zip(names, ordered[bounds[g]:bounds[g + 1]]))
        if len(group) != len(names):
            seen = set()
            twice = next(d for d in names if d in seen or seen.add(d))
            raise ValueError(f"document {twice!r} appears twice in query {keys[g]!r}; document ids must be unique "
                             "within a query")
        result[keys[g]] = group
    return result


def run_from_scores(qid, doc_ids, scores):
    """``{qid: {docid: score}}`` (str keys, float scores) from aligned arrays, e.g. ``load_svmlight(...,
    return_doc_ids=True)``'s qid and doc ids and a model's scores. Scores must be finite; a document id may
    appear once per query."""
    scores = np.asarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        raise ValueError(f"scores must be finite; score number {int(np.argmax(~np.isfinite(scores)))} is "
                         f"{scores[np.argmax(~np.isfinite(scores))]}")
    return _group(qid, doc_ids, scores, "scores")


def qrels_from_labels(qid, doc_ids, y):
    """``{qid: {docid: rel}}`` (str keys) from aligned arrays, e.g. a LETOR file's qid, doc ids and labels.
    Integral labels (LETOR's 0..4, stored as float64) become int; others stay float (trec_eval and
    :func:`write_qrels` need integers)."""
    y = np.asarray(y)
    if y.dtype.kind not in "iub" and not np.issubdtype(y.dtype, np.floating):
        raise TypeError(f"y must hold numbers, got dtype {y.dtype}")
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        raise ValueError("y must be finite")
    if (y == np.round(y)).all():
        y = y.astype(np.int64)
    return _group(qid, doc_ids, y, "y")
