"""Ranking metrics: computed per query, then averaged over queries (the conventions are stated below).

Every metric has the signature::

    name(y_true, y_score, qid=None, *, <metric parameters>, convention=None, ties=None, empty=None,
         return_per_query=False)

and takes its data in one of two forms:

* **Arrays**: ``y_true`` relevance labels (larger = better, equal = tie), ``y_score`` the model's scores
  (larger = ranked higher), ``qid`` query ids (integers, or strings such as TREC topics; rows of a query need not
  be contiguous; None = one query). The rows are the ranked documents and also the judged ones: the ideal DCG
  and the number of relevant documents come from them.
* **TREC dicts**: ``name(qrels, run)``, qrels ``{query id: {doc id: relevance}}``, run ``{query id: {doc id:
  score}}`` (ids are str; int ids are accepted and compared as ``str(id)``). The ranking is the run's, the
  judgements are the qrels': a retrieved document absent from the qrels has relevance 0, and a relevant
  document of the qrels that the run does not retrieve still counts in the ideal DCG (over the qrels' best k)
  and in MAP's number of relevant documents, as in trec_eval and ranx. Queries: every query of the qrels (one
  the run lacks is an empty ranking, which scores 0 if it has a relevant document); under
  ``convention="trec_eval"`` only the queries of both. A run query without qrels is not evaluated. The dicts
  are turned into arrays once, by C-level iteration (no Python loop over documents). AUC, pairwise accuracy
  and the label-ranking errors read the retrieved documents only (unjudged ones with relevance 0); ERR's
  default ``max_rel`` is the largest qrels label.
  ``cyrank.io.read_qrels`` / ``read_run`` read TREC files into these dicts.

Rank r = 1 is the top of a query's ranking. The result is the mean over queries (a float). With
``return_per_query=True`` it is ``(mean, per_query)``: a float64 array in increasing qid order for arrays, a
dict ``{query id: value}`` for dicts; ``return_per_query="dict"`` gives the dict for arrays too, keyed by the
original qids (strings stay strings, integers stay integers). NaN marks dropped queries. :func:`evaluate`
computes several metrics at once, converting and ranking once (as ranx's ``evaluate``).

* ``ties`` (documents with equal scores):

  - "pessimistic" (default): the less relevant row is ranked first; a tied pair counts as an error;
  - "optimistic": the more relevant row is ranked first; a tied pair counts as correct;
  - "input": tied rows keep their input order (a stable sort, the LightGBM / LETOR-script rule; for dicts,
    the run's insertion order);
  - "average": the exact expectation over all orders of the tied rows, each equally likely; a tied pair
    counts 1/2. Every metric here has an exact formula (McSherry & Najork 2008 for the linear ones and
    AP / RR; see the formulas in the functions and in ``_metrics.pyx``). Nothing is sampled.
  - "doc_id": decreasing document id (str order, i.e. strcmp on UTF-8): trec_eval's rule (it sorts by
    score, then by docno decreasingly: "d9" before "d10", "a" before "B"). Dict input only: arrays carry no
    document ids (a ValueError says so); to reproduce it with arrays, order each query's rows by decreasing
    document id and use "input".
  - "ranx": the order of a ``ranx.Run``: numba's ``np.argsort`` (quicksort) of the negated scores in input
    order, reproduced exactly (``_metrics.ranx_order``): input order for a query of at most 15 documents,
    beyond that a deterministic permutation of the tied documents that no simpler rule gives.

* Gain (NDCG, MeanNDCG): without a convention the exponential gain ``2**y - 1`` (Burges et al. 2005), as
  LightGBM, the LETOR 4.0 script and ranx's ``ndcg_burges``. trec_eval's ``ndcg_cut`` and ranx's ``ndcg``
  (Jarvelin & Kekalainen 2002) use the linear gain ``y``: ``gain="linear"`` or their convention. They agree
  on 0/1 labels only. :func:`describe_metric` states the gain, tie and empty rules of a metric name in one line.
* ``empty``: what a query on which the metric is undefined scores (no relevant document, ideal DCG = 0, no
  preference pair; for AUC also no irrelevant row): "drop" (default; left out of the mean, NaN in
  ``per_query``), "zero" or "one". If every query is dropped, the mean is NaN and an
  ``sklearn.exceptions.UndefinedMetricWarning`` is raised (scikit-learn is imported for it then, and only then:
  the metrics are below the estimators and start without it).

**Conventions** (``convention=``, on every metric) name the rules of the evaluators users cite; explicit
``ties`` / ``empty`` / ``gain`` arguments override a convention's (:data:`PRESETS`):

=============  ==========================  ======  ==========  ========================================
convention     ties                        empty   NDCG gain   reproduces
=============  ==========================  ======  ==========  ========================================
None           pessimistic                 drop    2**y - 1    (cyrank's own defaults)
"trec_eval"    doc_id (arrays: input)      zero    y           trec_eval 9 / pytrec_eval: ndcg_cut_k,
                                                               ndcg, map, recip_rank, P_k
"ranx"         ranx                        zero    y           ranx 0.3: ndcg@k, map, mrr, precision@k
"ranx_burges"  ranx                        zero    2**y - 1    ranx: ndcg_burges@k (and the others)
"lightgbm"     input                       one     2**y - 1    LightGBM's ndcg@k
"letor4"       input                       zero    2**y - 1    LETOR 4.0 Eval-Score-4.0.pl: NDCG@k
                                                               (its discount), MeanNDCG
=============  ==========================  ======  ==========  ========================================

* "trec_eval": relevant = label >= 1 (trec_eval's relevance_level 1; for integer labels, ``threshold=0``);
  labels <= 0, negative ones included, have gain 0; P@k divides by k even when fewer documents are retrieved;
  a query with no relevant document scores 0; only the queries of both the run and the qrels count (trec_eval
  without ``-c``; with ``-c`` the qrels-only queries would add zeros to the mean, not modelled). trec_eval has no
  ERR, AUC or pairwise accuracy: for those the preset only sets the tie and empty rules. pytrec_eval refuses
  non-integer labels; cyrank takes any number.
* "ranx" / "ranx_burges": the same rules as trec_eval (ranx's ``rel_lvl`` 1, P@k over k, empty 0) but ranx's
  tie order, and every query of the qrels (``ranx.evaluate`` wants the same queries in both, or
  ``make_comparable=True``, which scores the missing ones 0 as here; it also re-sorts the run, which can move
  ties in queries above 15 documents). Reproduced: ``Qrels`` / ``Run`` objects; plain dicts passed to
  ``ranx.evaluate`` are sorted differently (ascending argsort reversed). ranx casts labels to int; cyrank does
  not. ranx has no ERR or AUC.
* "lightgbm": LightGBM's ndcg@k (K = min(k, n) for DCG and ideal, input order, a query with no relevant row
  scores 1). LightGBM's map@k divides by min(k, R) and counts label > 0.5 as relevant; ``average_precision``
  (no cut-off) divides by R, relevant = label > ``threshold``.
* "letor4": see :func:`ndcg_score` and :func:`letor_mean_ndcg` (the default of the latter).

With arrays, every preset takes its ideal and relevant counts from the rows (no unretrieved documents exist);
only the tie rule "doc_id" changes (to "input").

Implementation: arrays are checked once (``_validation.check_scores``) and grouped by query once
(``QueryGroups``); TREC dicts become the same arrays plus the qrels' labels per query. Each query's rows are
then put in rank order by a Cython merge sort on (decreasing score, tie key, input order) (the tie key is the
label for pessimistic / average, minus the label for optimistic, the document id's rank for doc_id, nothing for
input), or by the quicksort replica for "ranx". The Cython kernels in ``_metrics.pyx`` then walk each query
once, without the GIL. Cost: O(n log n) for the sort; the kernels are O(n) per query, except pairwise counting
(merge sort, O(n log n)) and ERR under ``ties="average"`` (O(m min(m, k)) per tie group of m rows).
"""
import warnings
from collections.abc import Mapping
from itertools import chain, repeat
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from . import _metrics
from ._queries import QueryGroups
from ._validation import check_gain_labels, check_option, check_param, check_scores, factorize_qid

__all__ = [
    "metric_by_name",
    "evaluate",
    "parse_metric_name",
    "describe_metric",
    "ndcg_score",
    "letor_mean_ndcg",
    "err_score",
    "average_precision",
    "reciprocal_rank",
    "precision_at_k",
    "auc_score",
    "pairwise_accuracy",
    "zero_one_error",
    "disagreement_error",
    "domination_error",
    "dominated_error",
]

TIES = ("pessimistic", "optimistic", "input", "average", "doc_id", "ranx")
EMPTY = ("drop", "zero", "one")
GAINS = ("exponential", "linear")


class Preset(NamedTuple):
    """What a named ``convention`` fixes when the caller does not choose: the tie rule, the score of an undefined
    query, the NDCG gain, which queries of TREC dicts are evaluated ("qrels": every query of the qrels, a missing
    run being an empty ranking; "both": those of the qrels and the run), and whether labels <= 0 are gain 0."""
    ties: str
    empty: str
    gain: str
    queries: str
    clip_labels: bool


PRESETS = {
    None: Preset("pessimistic", "drop", "exponential", "qrels", False),
    "trec_eval": Preset("doc_id", "zero", "linear", "both", True),
    "ranx": Preset("ranx", "zero", "linear", "qrels", True),
    "ranx_burges": Preset("ranx", "zero", "exponential", "qrels", True),
    "lightgbm": Preset("input", "one", "exponential", "qrels", False),
    "letor4": Preset("input", "zero", "exponential", "qrels", False),
}
CONVENTIONS = tuple(PRESETS)


def _preset(convention):
    check_option("convention", convention, CONVENTIONS)
    return PRESETS[convention]


_COMMON_DOC = {
    "{params}": """y_true : array-like of shape (n_samples,), or dict (qrels)
        Relevance labels (larger = more relevant); or the qrels ``{query id: {doc id: relevance}}``.
    y_score : array-like of shape (n_samples,), or dict (run)
        Scores; a query's rows are ranked by decreasing score. Or the run ``{query id: {doc id: score}}``.
    qid : array-like of shape (n_samples,) of integers or strings, or None
        Query id of each row (any integers, or strings such as TREC topics, in any order); per-query values
        follow the sorted ids. None: all rows form one query. Not used with dicts.""",
    "{ties}": """convention : {None, "trec_eval", "ranx", "ranx_burges", "lightgbm", "letor4"}, default=None
        Named rules (see the module docstring): sets the defaults of ``ties`` and ``empty``, and which queries
        of TREC dicts are evaluated.
    ties : {"pessimistic", "optimistic", "input", "average", "doc_id", "ranx"} or None, default=None
        Tie rule for equal scores (see the module docstring); None: the convention's ("pessimistic").""",
    "{empty}": """empty : {"drop", "zero", "one"} or None, default=None
        Score of a query on which the metric is undefined (see "Empty" above); None: the convention's
        ("drop").""",
    "{returns}": """return_per_query : bool or "dict", default=False
        Also return the per-query values: True gives an array for arrays and a dict for TREC dicts; "dict" a
        dict keyed by the original query ids in both cases.

    Returns
    -------
    mean : float
        Mean over the queries that are not dropped (NaN, with an UndefinedMetricWarning, if none is left).
    per_query : ndarray of shape (n_queries,) or dict, only if ``return_per_query``
        Per-query values in increasing qid order (or ``{query id: value}``); NaN for dropped queries.""",
}


def _fill_doc(func):
    doc = func.__doc__
    for key, text in _COMMON_DOC.items():
        doc = doc.replace(key, text)
    func.__doc__ = doc
    return func


# ---------------------------------------------------------------------------------------------
# shared plumbing
# ---------------------------------------------------------------------------------------------
class _Queries:
    """Checked array inputs grouped by query (rows of each query contiguous, queries in increasing qid).

    What the metrics read, the same for :class:`_TrecQueries`: ``y`` / ``s`` (labels and scores of the ranked
    rows), ``offsets``, ``n_queries``, ``max_size``, ``ids`` (the query ids, in order), ``judged`` /
    ``judged_offsets`` (the labels that define the ideal ranking and the relevant count: here the rows' own)."""

    doc_ids = None  # the tie rule "doc_id" needs them (TREC dicts)

    def __init__(self, y_true, y_score, qid):
        self._orders = {}
        codes, names = (None, None) if qid is None else factorize_qid(qid, None, "y_true")
        y, s, q = check_scores(y_true, y_score, codes)
        self.groups = QueryGroups(q)
        self.y = np.ascontiguousarray(self.groups.sort(y))
        self.s = np.ascontiguousarray(self.groups.sort(s))
        self.offsets = np.ascontiguousarray(self.groups.offsets, dtype=np.int64)
        self.ids = self.groups.ids if names is None else names[self.groups.ids]  # the original (string) ids
        self.judged, self.judged_offsets = self.y, self.offsets

    @property
    def n_queries(self):
        return self.offsets.shape[0] - 1

    @property
    def max_size(self):
        return max(int(np.diff(self.offsets).max(initial=0)), 1)

    def ranked(self, values, ties):
        """``values`` and the scores in rank order within each query, under the tie rule ``ties``. ``values`` is a
        nondecreasing function of the labels ``self.y`` (binary relevance, gains, ERR's R: every caller's), so
        one order by labels serves them all."""
        order = self.order(ties)
        return np.ascontiguousarray(values[order]), np.ascontiguousarray(self.s[order])

    def order(self, ties):
        """The rows in rank order within each query under ``ties`` (computed once per tie rule)."""
        if ties not in self._orders:
            order = np.empty(self.s.shape[0], dtype=np.int64)
            if ties == "ranx":
                _metrics.ranx_order(-self.s, self.offsets, order)
            elif ties == "doc_id":
                order = self.doc_id_order()
            else:
                if ties == "input":
                    key = np.zeros_like(self.s)
                elif ties == "optimistic":
                    key = -self.y
                else:  # pessimistic; average also needs the rows of a tie group by increasing label
                    key = self.y
                _metrics.rank_order(self.s, np.ascontiguousarray(key, dtype=np.float64), self.offsets, order,
                                    np.empty(self.max_size, dtype=np.int64))
            self._orders[ties] = order
        return self._orders[ties]

    def ideal(self, gains):
        """The judged documents' gains (``gains`` of ``self.judged``) sorted decreasingly within each query."""
        order = np.empty(gains.shape[0], dtype=np.int64)
        size = max(int(np.diff(self.judged_offsets).max(initial=0)), 1)
        _metrics.rank_order(gains, np.zeros_like(gains), self.judged_offsets, order, np.empty(size, dtype=np.int64))
        return np.ascontiguousarray(gains[order])

    def n_relevant(self, relevant):
        """Per query, the number of judged documents with ``relevant`` (a 0/1 array over ``self.judged``)."""
        qidx = np.repeat(np.arange(self.n_queries), np.diff(self.judged_offsets))
        return np.bincount(qidx, weights=relevant, minlength=self.n_queries).astype(np.float64)

    def apply(self, kernel, *args, scratch=()):
        """One value per query: ``kernel(*args, out, *scratch)`` fills ``out``."""
        out = np.empty(self.n_queries, dtype=np.float64)
        kernel(*args, out, *scratch)
        return out


class _TrecQueries(_Queries):
    """A TREC run and qrels as the arrays of :class:`_Queries`.

    ``qrels``: query id -> doc id -> relevance; ``run``: query id -> doc id -> score (ids are compared as
    ``str(id)``). The rows are the run's documents (relevance: the qrels', 0 if unjudged); ``judged`` holds the
    qrels of the same queries, retrieved or not, for the ideal DCG and the relevant counts. ``queries``: "qrels"
    (every query of the qrels; one the run misses has an empty ranking) or "both" (those of the qrels and the
    run, as trec_eval without -c). Built in one pass over the dicts (C-level iteration, no Python loop over
    documents); queries in sorted id order."""

    def __init__(self, qrels, run, queries):
        self._orders = {}
        qrels, run = _str_keyed(qrels, "qrels"), _str_keyed(run, "run")
        ids = sorted(qrels.keys() & run.keys()) if queries == "both" else sorted(qrels)
        judged = [_str_docs(qrels[q], "qrels", q) for q in ids]
        ranked = [_str_docs(run.get(q, {}), "run", q) for q in ids]
        self.ids = np.array(ids, dtype=object)
        self.offsets = _offsets(ranked)
        self.judged_offsets = _offsets(judged)
        n, m = int(self.offsets[-1]), int(self.judged_offsets[-1])
        self.s = _numbers(chain.from_iterable(d.values() for d in ranked), n, "run", "scores")
        self.judged = _numbers(chain.from_iterable(d.values() for d in judged), m, "qrels", "relevance labels")
        self.y = _numbers(chain.from_iterable(map(j.get, r, repeat(0.0)) for j, r in zip(judged, ranked)), n,
                          "qrels", "relevance labels")
        self._ranked_dicts = ranked

    @property
    def doc_ids(self):
        return self._ranked_dicts

    def doc_id_order(self):
        """The rank order with ties by decreasing document id (trec_eval; str order = strcmp on UTF-8): the
        input-order ranking, then the rows of each tie group whose labels differ re-sorted by id. A tie group of
        equal labels is left alone: every metric reads the labels only (through a nondecreasing function of
        them), so no order of such a group changes a value. The ids read are those of the re-sorted rows; they are
        sorted as one numpy str array (a query's ids are distinct), then stably by tie group."""
        order = self.order("input").copy()
        s = self.s[order]
        tied = s[1:] == s[:-1]  # tied[i]: rank positions i and i + 1 share a score
        starts = self.offsets[1:-1]
        tied[starts[(starts > 0) & (starts < s.shape[0])] - 1] = False  # no tie group across two queries
        in_tie = np.zeros(s.shape[0], dtype=bool)
        in_tie[1:] |= tied
        in_tie[:-1] |= tied
        pos = np.flatnonzero(in_tie)
        if pos.size == 0:
            return order
        first = np.r_[True, ~tied[pos[1:] - 1]]  # the first position of each tie group, among pos
        labels = self.y[order[pos]]
        heads = np.flatnonzero(first)
        mixed = np.minimum.reduceat(labels, heads) < np.maximum.reduceat(labels, heads)
        keep = np.repeat(mixed, np.diff(np.r_[heads, pos.size]))
        pos, group = pos[keep], np.cumsum(first)[keep]
        if pos.size:
            rows = order[pos].tolist()
            ids = itemgetter(*rows)(list(chain.from_iterable(self._ranked_dicts)))  # a mixed group has >= 2 rows
            by_id = np.argsort(np.array(ids, dtype=str), kind="stable")[::-1]  # decreasing id
            order[pos] = order[pos][by_id[np.argsort(group[by_id], kind="stable")]]
        return order


def _str_keyed(d, name):
    """A qrels or run dict with ``str`` query ids (int ids are accepted and converted)."""
    out = {}
    for q, docs in d.items():
        key = q if type(q) is str else str(q)
        if not isinstance(docs, Mapping):
            raise TypeError(f"{name}[{q!r}] must be a dict of document id -> "
                            f"{'relevance' if name == 'qrels' else 'score'}, got {type(docs).__name__}")
        if key in out:
            raise ValueError(f"{name} has the query id {q!r} twice (as {key!r} and as a non-string); ids are "
                             f"compared as str(id)")
        out[key] = docs
    return out


def _str_docs(docs, name, q):
    """``docs`` with ``str`` document ids (converted when its first id is not a str)."""
    if docs and type(next(iter(docs))) is not str:
        converted = {str(d): v for d, v in docs.items()}
        if len(converted) != len(docs):
            raise ValueError(f"{name}[{q!r}] has a document id twice once converted to str; ids are compared as "
                             f"str(id)")
        return converted
    return docs


def _offsets(dicts):
    sizes = np.fromiter(map(len, dicts), dtype=np.int64, count=len(dicts))
    return np.r_[np.int64(0), np.cumsum(sizes)].astype(np.int64)


def _numbers(values, count, name, what):
    """float64 array of ``count`` values from an iterator, finite; a clear error otherwise."""
    try:
        a = np.fromiter(values, dtype=np.float64, count=count)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: {what} must be numbers ({exc})") from None
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: {what} must be finite; found {a[~np.isfinite(a)][0]!r}")
    return a


def _queries(y_true, y_score, qid, queries):
    """:class:`_Queries` for arrays, :class:`_TrecQueries` for a qrels and a run dict (:func:`evaluate` passes
    one it built, to share it between metrics)."""
    if isinstance(y_true, _Queries):
        return y_true
    if isinstance(y_true, Mapping) or isinstance(y_score, Mapping):
        if not (isinstance(y_true, Mapping) and isinstance(y_score, Mapping)):
            raise TypeError("pass either two dicts (qrels: query id -> doc id -> relevance, run: query id -> doc "
                            "id -> score) or two arrays (y_true, y_score) with qid, not one of each")
        if qid is not None:
            raise TypeError("qid is not used with dict input (the query ids are the dicts' keys); drop qid")
        return _TrecQueries(y_true, y_score, queries)
    return _Queries(y_true, y_score, qid)


def _evaluate(name, y_true, y_score, qid, convention, ties, empty, return_per_query, per_query, depth=1):
    """What every metric does around its own part: the common checks, the rows grouped by query, ``per_query(Q,
    ties)`` (one value per query, NaN where undefined), then :func:`mean_over_queries`. ``ties`` / ``empty``: None
    takes the ``convention``'s rule. ``depth``: the calls between the public metric and here (its warning points
    at the metric's caller)."""
    preset = _preset(convention)
    _check_common(ties, empty, return_per_query)
    Q = _queries(y_true, y_score, qid, preset.queries)
    if ties is None:
        ties = "input" if preset.ties == "doc_id" and Q.doc_ids is None else preset.ties
    elif ties == "doc_id" and Q.doc_ids is None:
        raise ValueError("ties='doc_id' (trec_eval's rule: decreasing document id) needs document ids: pass the "
                         "qrels and the run as dicts (cyrank.io.qrels_from_labels / run_from_scores build them)")
    result = mean_over_queries(name, per_query(Q, ties), preset.empty if empty is None else empty,
                               bool(return_per_query), stacklevel=3 + depth)
    if return_per_query == "dict" or (return_per_query is True and isinstance(Q, _TrecQueries)):
        mean, values = result
        return mean, dict(zip(Q.ids.tolist(), values.tolist()))
    return result


def _check_common(ties, empty, return_per_query):
    if ties is not None:
        check_option("ties", ties, TIES)
    if empty is not None:
        check_option("empty", empty, EMPTY)
    if not (isinstance(return_per_query, (bool, np.bool_)) or return_per_query == "dict"):
        raise TypeError(f"return_per_query must be True, False or 'dict', got {return_per_query!r}")


def _check_k(k):
    """k >= 1, or None for all documents; returned as the kernels' int (0 = all)."""
    k = check_param("k", k, low=1, integer=True, none_ok=True)
    if k is not None and k > _INT64_MAX:
        raise ValueError(f"k={k!r} is above 2**63 - 1, longer than any query; pass k=None to use every row of "
                         f"each query")
    return 0 if k is None else k


def mean_over_queries(name, per_query, empty, return_per_query, stacklevel=3):
    """Apply the empty rule to ``per_query`` (NaN marks the undefined queries) and average: the last step of every
    metric here and of the label-ranking error (:func:`cyrank.labelrank.label_ranking_error`). ``name`` names the
    metric in the warning when every query is dropped."""
    undefined = np.isnan(per_query)
    if empty == "zero":
        per_query[undefined] = 0.0
    elif empty == "one":
        per_query[undefined] = 1.0
    kept = per_query[~np.isnan(per_query)]
    if kept.size == 0:
        from sklearn.exceptions import UndefinedMetricWarning

        warnings.warn(
            f"{name} is undefined on every query (no relevant item or no preference pair) and "
            f"empty='drop' drops them all; returning nan. Pass empty='zero' or 'one' to score them.",
            UndefinedMetricWarning,
            stacklevel=stacklevel,
        )
        mean = float("nan")
    else:
        mean = float(np.mean(kept))
    return (mean, per_query) if return_per_query else mean


def _binary(y, threshold):
    threshold = check_param("threshold", threshold)
    return (y > threshold).astype(np.float64)


def _binary_metric(name, kernel, options, y_true, y_score, qid, threshold, convention, ties, empty,
                   return_per_query):
    """A metric of binary relevance (y > threshold) whose kernel takes (relevance and scores in rank order,
    offsets, relevant documents per query, *options, average ties, out)."""
    def per_query(Q, ties):
        rel, s = Q.ranked(_binary(Q.y, threshold), ties)
        return Q.apply(kernel, rel, s, Q.offsets, Q.n_relevant(_binary(Q.judged, threshold)), *options,
                       ties == "average")
    return _evaluate(name, y_true, y_score, qid, convention, ties, empty, return_per_query, per_query, depth=2)


def _gains(labels, gain, clip):
    """g(labels): 2**y - 1 or y. ``clip`` (the trec_eval and ranx presets): a label <= 0 has gain 0, as both tools
    count only labels >= 1 (negative qrels labels are legal there); otherwise labels must be non-negative."""
    if clip:
        labels = np.maximum(labels, 0.0)
    check_gain_labels(labels, "NDCG", exponential=gain == "exponential", hint="; use gain='linear'")
    return np.exp2(labels) - 1.0 if gain == "exponential" else labels.astype(np.float64, copy=True)


def _dcg_inputs(Q, gain, convention, ties):
    """Gains and scores in rank order, and the judged documents' gains sorted decreasingly per query (the ideal)."""
    preset = _preset(convention)
    gain = preset.gain if gain is None else gain
    check_option("gain", gain, GAINS)
    judged = _gains(Q.judged, gain, preset.clip_labels)
    g = judged if Q.judged is Q.y else _gains(Q.y, gain, preset.clip_labels)
    g_ranked, s_ranked = Q.ranked(g, ties)
    return g_ranked, Q.ideal(judged), s_ranked


# ---------------------------------------------------------------------------------------------
# DCG family
# ---------------------------------------------------------------------------------------------
@_fill_doc
def ndcg_score(y_true, y_score, qid=None, *, k=10, gain=None, convention=None, ties=None, empty=None,
               return_per_query=False):
    """Normalized discounted cumulative gain at k, averaged over queries.

    Per query, with n rows, K = min(k, n) and g(y) = 2**y - 1 (``gain="exponential"``) or y ("linear")::

        DCG@k  = sum_{r=1..K} g(y at rank r) * D(r),     D(r) = 1 / log2(1 + r)
        NDCG@k = DCG@k / IDCG@k

    where IDCG@k is the DCG@k of the ideal ranking (labels sorted decreasingly), over the same K. With TREC
    dicts the ideal ranking is the qrels' (retrieved or not), over its best min(k, n_judged) documents.
    Labels must be non-negative (and at most 512 with exponential gain); under the trec_eval and ranx
    conventions a label <= 0 has gain 0.

    The default gain (None) is the convention's: exponential (Burges et al. 2005; LightGBM, ranx
    ``ndcg_burges``) except under "trec_eval" and "ranx", whose ``ndcg_cut`` / ``ndcg`` use the linear gain
    (Jarvelin & Kekalainen 2002).

    Named conventions reproduce published evaluators; a convention sets the default gain, tie and empty
    rules (explicit ``gain`` / ``ties`` / ``empty`` arguments override them):

    * None: gain 2**y - 1, ``ties="pessimistic"``, ``empty="drop"``.
    * "trec_eval": trec_eval's ``ndcg_cut.k`` (k=None: ``ndcg``): gain y, ties by decreasing document id
      (dicts; arrays: input order), a query with no relevant document scores 0.
    * "ranx" / "ranx_burges": ranx's ``ndcg@k`` (gain y) / ``ndcg_burges@k`` (gain 2**y - 1), ranx's tie
      order, a query with no relevant document scores 0.
    * "lightgbm": LightGBM's built-in ``ndcg@k``: the formula above (gain 2**y - 1, K = min(k, n) for
      DCG and ideal), ties in input order (its stable sort; ``ties="input"``), a query with no
      relevant row scores 1 (``empty="one"``).
    * "letor4": the official LETOR 4.0 evaluator Eval-Score-4.0.pl: D(r) = 1 for r = 1, 2 and
      1 / log2(r) for r >= 3; a query with fewer than k rows scores NDCG@k = 0; ties in input order
      (the script sorts documents by score with a stable sort of its file order); a query with no
      relevant row scores 0 (``empty="zero"``). The script's gain table {0: 0, 1: 1, 2: 3} is
      2**y - 1; here that gain is used for every label.

    Ties: with ``ties="average"`` every position of a tie group gets the group's mean gain, which is
    the exact expectation of DCG over random orders of the group (as ``sklearn.metrics.ndcg_score``).

    Empty: a query whose ideal DCG is 0 (no label above 0) follows ``empty``.

    Parameters
    ----------
    {params}
    k : int >= 1 or None, default=10
        Cut-off; None: all rows of each query.
    gain : {"exponential", "linear"} or None, default=None
        None: the convention's ("exponential" without one; "linear" for "trec_eval" and "ranx").
    {ties}
    {empty}
    {returns}
    """
    k = _check_k(k)

    def per_query(Q, ties):
        g, ideal, s = _dcg_inputs(Q, gain, convention, ties)
        return Q.apply(_metrics.ndcg_kernel, g, ideal, s, Q.offsets, Q.judged_offsets, k, convention == "letor4",
                       False, ties == "average")
    return _evaluate("ndcg_score", y_true, y_score, qid, convention, ties, empty, return_per_query, per_query)


@_fill_doc
def letor_mean_ndcg(y_true, y_score, qid=None, *, gain=None, convention="letor4", ties=None, empty=None,
                    return_per_query=False):
    """LETOR 4.0 "MeanNDCG": per query, the mean of NDCG@j over j = 1..n (n = the query's rows).

    As computed by the official evaluator Eval-Score-4.0.pl::

        MeanNDCG = (1/n) sum_{j=1..n} DCG@j / IDCG@j,   DCG@j = sum_{r<=j} g(y at rank r) D(r),
        D(r) = 1 for r = 1, 2 and 1 / log2(r) for r >= 3,   g(y) = 2**y - 1 (or y if gain="linear")

    Labels must be non-negative. With TREC dicts, IDCG@j is over the qrels' best j documents.

    Ties: default (None) the convention's, "input" under the default "letor4", as the script (stable sort of
    its file order); "average" gives each position of a tie group its mean gain (exact expectation, DCG@j
    being linear in the gains).

    Empty: a query with no relevant row (ideal DCG = 0) follows ``empty``; default (None) the convention's,
    "zero" under "letor4", as the script.

    Parameters
    ----------
    {params}
    gain : {"exponential", "linear"} or None, default=None
        None: the convention's ("exponential" under "letor4").
    convention : default="letor4"
        As for every metric; the LETOR discount is used whatever the convention.
    ties : {"pessimistic", "optimistic", "input", "average", "doc_id", "ranx"} or None, default=None
        None: the convention's ("input" under "letor4").
    empty : {"drop", "zero", "one"} or None, default=None
        None: the convention's ("zero" under "letor4").
    {returns}
    """
    def per_query(Q, ties):
        g, ideal, s = _dcg_inputs(Q, gain, convention, ties)
        return Q.apply(_metrics.ndcg_kernel, g, ideal, s, Q.offsets, Q.judged_offsets, 0, True, True,
                       ties == "average")
    return _evaluate("letor_mean_ndcg", y_true, y_score, qid, convention, ties, empty, return_per_query, per_query)


@_fill_doc
def precision_at_k(y_true, y_score, qid=None, *, k=10, threshold=0.0, convention=None, ties=None, empty=None,
                   return_per_query=False):
    """Precision at k: the fraction of relevant rows (y > threshold) among the first k, averaged over queries.

    ``P@k = (number of relevant rows at ranks 1..k) / k``. The denominator is k even when the query
    has fewer than k rows (the missing places count as irrelevant, as trec_eval and the LETOR
    script); ``k=None`` means k = the query's number of rows.

    Ties: "average" counts, for each of the first k places, the fraction of relevant rows of the tie
    group occupying it (exact expectation).

    Empty: a query with no relevant row follows ``empty``.

    Parameters
    ----------
    {params}
    k : int >= 1 or None, default=10
    threshold : float, default=0.0
        A row is relevant when y_true > threshold.
    {ties}
    {empty}
    {returns}
    """
    k = _check_k(k)
    return _binary_metric("precision_at_k", _metrics.precision_kernel, (k,), y_true, y_score, qid, threshold,
                          convention, ties, empty, return_per_query)


# ---------------------------------------------------------------------------------------------
# binary relevance
# ---------------------------------------------------------------------------------------------
@_fill_doc
def average_precision(y_true, y_score, qid=None, *, threshold=0.0, convention=None, ties=None, empty=None,
                      return_per_query=False):
    """Average precision per query (relevant = y > threshold); the mean over queries is MAP.

    ``AP = (1/R) sum_{r: row at rank r relevant} P@r``, R the number of relevant rows of the query,
    P@r the fraction of relevant rows among ranks 1..r.

    Ties: "average" is the exact expectation (McSherry & Najork 2008): in a tie group of m rows with p
    relevant, ranked after a rows of which ``before`` are relevant, the group adds
    ``sum_{t=1..m} ((p/m)(1 + before) + (t - 1) p (p - 1) / (m (m - 1))) / (a + t)`` to the sum.
    (sklearn's ``average_precision_score`` scores ties differently: one threshold per tie group.)

    Empty: a query with no relevant row follows ``empty``.

    Parameters
    ----------
    {params}
    threshold : float, default=0.0
        A row is relevant when y_true > threshold.
    {ties}
    {empty}
    {returns}
    """
    return _binary_metric("average_precision", _metrics.average_precision_kernel, (), y_true, y_score, qid,
                          threshold, convention, ties, empty, return_per_query)


@_fill_doc
def reciprocal_rank(y_true, y_score, qid=None, *, threshold=0.0, convention=None, ties=None, empty=None,
                    return_per_query=False):
    """Reciprocal rank of the first relevant row (y > threshold); the mean over queries is MRR.

    ``RR = 1 / r*``, r* the rank of the highest-ranked relevant row.

    Ties: "average" is exact: if the first tie group holding relevant rows has m rows, p of them
    relevant, after a rows, then ``RR = sum_{t=1..m-p+1} C(m - t, p - 1) / C(m, p) / (a + t)``.

    Empty: a query with no relevant row follows ``empty``.

    Parameters
    ----------
    {params}
    threshold : float, default=0.0
        A row is relevant when y_true > threshold.
    {ties}
    {empty}
    {returns}
    """
    return _binary_metric("reciprocal_rank", _metrics.reciprocal_rank_kernel, (), y_true, y_score, qid, threshold,
                          convention, ties, empty, return_per_query)


# ---------------------------------------------------------------------------------------------
# cascade
# ---------------------------------------------------------------------------------------------
@_fill_doc
def err_score(y_true, y_score, qid=None, *, k=10, max_rel=None, convention=None, ties=None, empty=None,
              return_per_query=False):
    """Expected reciprocal rank at k (Chapelle, Metzler, Zhang & Grinspan 2009), averaged over queries.

    Per query, with K = min(k, n)::

        R(y)  = (2**y - 1) / 2**max_rel          (probability that a row of label y satisfies the user)
        ERR@k = sum_{r=1..K} (1/r) R_r prod_{i<r} (1 - R_i)

    ``max_rel`` is the highest possible grade; default None = the largest label of the whole
    ``y_true`` (all queries), so R stays in [0, 1) and does not change from query to query. Pass the
    grade scale's maximum (e.g. 4 for the 0..4 scale) to compare numbers across data sets. Labels must
    lie in [0, max_rel].

    Ties: "average" is the exact expectation over random orders of each tie group: the product over
    a whole group does not depend on its order, and within a group of m rows the probability of
    stopping at its t-th place is mu_{t-1} - mu_t, mu_j the mean of prod(1 - R) over the j-subsets of
    the group (computed by an O(m min(m, k)) recursion).

    Empty: a query with no relevant row (every R = 0, i.e. every label 0) follows ``empty``.

    Parameters
    ----------
    {params}
    k : int >= 1 or None, default=10
        Cut-off; None: all rows.
    max_rel : float >= 0 or None, default=None
        The maximal grade; None: max(y_true).
    {ties}
    {empty}
    {returns}
    """
    k = _check_k(k)

    def per_query(Q, ties):
        clip = _preset(convention).clip_labels  # trec_eval / ranx: a label <= 0 is not relevant (R = 0)
        y = np.maximum(Q.y, 0.0) if clip else Q.y
        check_gain_labels(np.maximum(Q.judged, 0.0) if clip else Q.judged, "ERR", exponential=False)
        top = float(Q.judged.max(initial=0.0))
        cap = top if max_rel is None else check_param("max_rel", max_rel, low=0.0)
        if top > cap:
            raise ValueError(f"max_rel={cap!r} is below the largest label {top!r}: R(y) = (2**y - 1) / 2**max_rel "
                             f"would exceed 1; pass max_rel >= {top!r} (the top of the grade scale) or max_rel=None "
                             f"(the largest label)")
        R = np.exp2(y - cap) - np.exp2(-cap)  # (2**y - 1) / 2**max_rel without overflow
        R_ranked, s = Q.ranked(R, ties)
        mu = np.empty(Q.max_size + 1, dtype=np.float64)
        return Q.apply(_metrics.err_kernel, R_ranked, s, Q.offsets, Q.n_relevant(_binary(Q.judged, 0.0)), k,
                       ties == "average", scratch=(mu,))
    return _evaluate("err_score", y_true, y_score, qid, convention, ties, empty, return_per_query, per_query)


# ---------------------------------------------------------------------------------------------
# pairwise
# ---------------------------------------------------------------------------------------------
def _disagreement(Q, labels, ties):
    """Per query: the fraction of preference pairs (y_i > y_j) with j ranked above i (NaN: no pair)."""
    lab, s = Q.ranked(labels, ties)
    scratch = (np.empty(Q.max_size, dtype=np.float64), np.empty(Q.max_size, dtype=np.float64))
    return Q.apply(_metrics.pairwise_kernel, lab, s, Q.offsets, ties == "average", scratch=scratch)


@_fill_doc
def pairwise_accuracy(y_true, y_score, qid=None, *, convention=None, ties=None, empty=None, return_per_query=False):
    """Fraction of a query's preference pairs that the scores order correctly, averaged over queries.

    ``PA = |{(i, j): y_i > y_j, s_i > s_j}| / |{(i, j): y_i > y_j}|`` (pairs within the query).
    Counted in O(n log n) per query (a merge sort of the labels in rank order), with 64-bit counts.
    Equals 1 - ``disagreement_error``.

    Ties: a pair with s_i = s_j counts 0 ("pessimistic"), 1 ("optimistic"), 1 if i comes first in the
    input ("input"), 1/2 ("average").

    Empty: a query with no preference pair (a single label level) follows ``empty``.

    Parameters
    ----------
    {params}
    {ties}
    {empty}
    {returns}
    """
    return _evaluate("pairwise_accuracy", y_true, y_score, qid, convention, ties, empty, return_per_query,
                     lambda Q, ties: 1.0 - _disagreement(Q, Q.y, ties))


@_fill_doc
def auc_score(y_true, y_score, qid=None, *, threshold=0.0, convention=None, ties=None, empty=None,
              return_per_query=False):
    """Area under the ROC curve per query (relevant = y > threshold vs irrelevant), averaged over queries.

    ``AUC = |{(i, j): i relevant, j irrelevant, s_i > s_j}| / (n_relevant * n_irrelevant)``, i.e. the
    pairwise accuracy of the binarized labels; O(n log n) per query.

    Ties: a relevant/irrelevant pair with equal scores counts 0 ("pessimistic"), 1 ("optimistic"),
    1 if the relevant row comes first in the input ("input"), 1/2 ("average", as
    ``sklearn.metrics.roc_auc_score``).

    Empty: a query without a relevant row or without an irrelevant row follows ``empty``.

    Parameters
    ----------
    {params}
    threshold : float, default=0.0
        A row is relevant when y_true > threshold.
    {ties}
    {empty}
    {returns}
    """
    return _evaluate("auc_score", y_true, y_score, qid, convention, ties, empty, return_per_query,
                     lambda Q, ties: 1.0 - _disagreement(Q, _binary(Q.y, threshold), ties))


# ---------------------------------------------------------------------------------------------
# label-ranking errors (Dekel, Manning & Singer 2003)
# ---------------------------------------------------------------------------------------------
_LR_NOTE = """Each query is one instance x, each row one label y of its label set, and the preference graph
    G = (V, E) has an edge i -> j for every pair with y_i > y_j. An edge is *violated* when
    f(x, i) <= f(x, j), i.e. s_i <= s_j (a score tie violates it, as in the paper). The generalized
    error of a decomposition A(G) = {G_1, ..., G_s} is (1/s) sum_k delta(G_k), delta(G_k) = 1 if some
    edge of G_k is violated; the mean over queries is the paper's error divided by the number of
    instances."""


def _label_ranking(name, kind, y_true, y_score, qid, convention, ties, empty, return_per_query):
    def per_query(Q, ties):
        lab, s = Q.ranked(Q.y, ties)
        return Q.apply(_metrics.label_ranking_kernel, lab, s, Q.offsets, kind, ties == "average",
                       scratch=(np.empty(Q.max_size + 1, dtype=np.float64),))
    return _evaluate(name, y_true, y_score, qid, convention, ties, empty, return_per_query, per_query, depth=2)


_LR_TIES = """Ties: "pessimistic" (default) is the paper's definition (a tie violates an edge);
    "optimistic" treats a tie as no violation; "input" breaks ties by input order (first = higher);
    "average" is the exact expectation over random orders of each tie group."""

_LR_EMPTY = """Empty: a query with no edge (all labels equal) follows ``empty``."""


def _lr_doc(func):
    func.__doc__ = func.__doc__.replace("{note}", _LR_NOTE).replace("{lr_ties}", _LR_TIES).replace(
        "{lr_empty}", _LR_EMPTY
    )
    return _fill_doc(func)


@_lr_doc
def zero_one_error(y_true, y_score, qid=None, *, convention=None, ties=None, empty=None, return_per_query=False):
    """0-1 error of label ranking: 1 if any preference edge of the query is violated, else 0.

    {note}

    Zero-one: A(G) = {G}, so ``eps_01 = delta(G) = [exists (i, j) in E: s_i <= s_j]``.

    {lr_ties}

    Under "average" a query scores 1 if a lower label is ranked strictly above a higher one,
    else 1 - prod_groups prod_levels c_l! / m!, the probability that some tie group (m rows, c_l of
    label level l) does not come out sorted by decreasing label.

    {lr_empty}

    Parameters
    ----------
    {params}
    {ties}
    {empty}
    {returns}
    """
    return _label_ranking("zero_one_error", _metrics.ZERO_ONE, y_true, y_score, qid, convention, ties, empty,
                          return_per_query)


@_lr_doc
def disagreement_error(y_true, y_score, qid=None, *, convention=None, ties=None, empty=None, return_per_query=False):
    """Disagreement error of label ranking: the fraction of preference edges that are violated.

    {note}

    Disagreement: one subgraph per edge, so
    ``eps_dis = |{(i, j) in E: s_i <= s_j}| / |E|``. Equals 1 - ``pairwise_accuracy``; O(n log n).

    {lr_ties}

    Under "average" a tied edge counts 1/2.

    {lr_empty}

    Parameters
    ----------
    {params}
    {ties}
    {empty}
    {returns}
    """
    return _evaluate("disagreement_error", y_true, y_score, qid, convention, ties, empty, return_per_query,
                     lambda Q, ties: _disagreement(Q, Q.y, ties))


@_lr_doc
def domination_error(y_true, y_score, qid=None, *, convention=None, ties=None, empty=None, return_per_query=False):
    """Domination error of label ranking: the fraction of dominating labels not ranked above all they dominate.

    {note}

    Domination (eps_Dom): one subgraph per vertex i with outgoing edges (D(i) = {j: y_j < y_i} not
    empty), holding its edges to D(i)::

        eps_Dom = |{i: D(i) != {}, exists j in D(i): s_i <= s_j}| / |{i: D(i) != {}}|

    {lr_ties}

    Under "average" a vertex i with no j in D(i) scored strictly above it fails with
    probability c / (c + 1), c the number of rows of D(i) tied with it.

    {lr_empty}

    Parameters
    ----------
    {params}
    {ties}
    {empty}
    {returns}
    """
    return _label_ranking("domination_error", _metrics.DOMINATION, y_true, y_score, qid, convention, ties, empty,
                          return_per_query)


@_lr_doc
def dominated_error(y_true, y_score, qid=None, *, convention=None, ties=None, empty=None, return_per_query=False):
    """Dominated error of label ranking: the fraction of dominated labels not ranked below all that dominate them.

    {note}

    Dominated (eps_dom): one subgraph per vertex j with incoming edges (U(j) = {i: y_i > y_j} not
    empty), holding its edges from U(j)::

        eps_dom = |{j: U(j) != {}, exists i in U(j): s_i <= s_j}| / |{j: U(j) != {}}|

    {lr_ties}

    Under "average" a vertex j with no i in U(j) scored strictly below it fails with
    probability c / (c + 1), c the number of rows of U(j) tied with it.

    {lr_empty}

    Parameters
    ----------
    {params}
    {ties}
    {empty}
    {returns}
    """
    return _label_ranking("dominated_error", _metrics.DOMINATED, y_true, y_score, qid, convention, ties, empty,
                          return_per_query)


# ---------------------------------------------------------------------------------------------
# metrics by name (the command line's -m, the scorers of cyrank.model_selection, LambdaRank's and MLR's losses)
# ---------------------------------------------------------------------------------------------
METRIC_NAMES = ("ndcg", "err", "map", "mrr", "p", "auc", "pairacc", "meanndcg")
CUT_OFF_NAMES = ("ndcg", "err", "p")  # the metrics whose name may carry @k
# older spellings -> canonical names ("prec@k" was MLR's name of precision at k)
METRIC_SYNONYMS = {"prec": "p"}
_INT64_MAX = 2**63 - 1


def parse_metric_name(spec, names=METRIC_NAMES, cut_off=CUT_OFF_NAMES, *, what="metric"):
    """``"ndcg@10"`` -> ("ndcg", 10); ``"map"`` -> ("map", None): the one grammar of metric names in cyrank.

    Grammar: ``name[@k]``, case-insensitive, surrounding spaces ignored; k a positive integer <= 2**63 - 1 (a cut-off
    at or beyond a query's length means every row of it). Synonyms (``METRIC_SYNONYMS``) give the canonical name:
    "prec" is "p" (precision at k; "p" is canonical). Used by :func:`metric_by_name`, LambdaRank's ``metric``
    (:func:`cyrank.lambdarank.parse_metric`) and MLR's ``loss``, each passing the ``names`` it supports and the
    ``cut_off`` names among them that take "@k"; ``what`` names the parameter in the messages.

    The name fixes only the metric and k: Ties and Empty rules are those of the function the caller applies
    (see :func:`describe_metric`). A ValueError (in this order) when the cut-off is not a positive integer, is
    above 2**63 - 1, when the name is not one of ``names`` (the message lists them), or when a name outside
    ``cut_off`` carries one.
    """
    text = str(spec).strip().lower()
    name, at, k = text.partition("@")
    name = METRIC_SYNONYMS.get(name, name)
    if at and not (k.isascii() and k.isdigit() and int(k) >= 1):
        raise ValueError(f"{what} {spec!r}: the cut-off after '@' must be a positive integer, as in ndcg@10")
    if at and int(k) > _INT64_MAX:
        raise ValueError(f"{what} {spec!r}: the cut-off after '@' is above 2**63 - 1, longer than any query; write "
                         f"{name!r} without '@k' to use every row of each query")
    if name not in names:
        known = ", ".join(n + "[@k]" if n in cut_off else n for n in names)
        raise ValueError(f"unknown {what} {spec!r}; known: {known} (case-insensitive)")
    if at and name not in cut_off:
        alternatives = f", or use one of {', '.join(n + '@k' for n in cut_off)}" if cut_off else ""
        raise ValueError(f"{what} {spec!r}: {name} takes no cut-off (it uses every row of each query); write "
                         f"{name!r}{alternatives}")
    return name, (int(k) if at else None)


def metric_by_name(spec):
    """The metric named ``spec`` as a function ``f(y_true, y_score, qid, **options)`` with this module's defaults
    (options such as ``return_per_query=True`` are passed on).

    Names: "ndcg@k" (:func:`ndcg_score`; "ndcg": all rows), "err@k" (:func:`err_score`), "map"
    (:func:`average_precision`), "mrr" (:func:`reciprocal_rank`), "p@k" (:func:`precision_at_k`, default k = 10;
    "prec@k" is an older spelling), "auc" (:func:`auc_score`), "pairacc" (:func:`pairwise_accuracy`) and
    "meanndcg" (:func:`letor_mean_ndcg`); case-insensitive (the grammar of :func:`parse_metric_name`). A ValueError
    names the known ones. :func:`describe_metric` states the conventions used.
    """
    name, k = parse_metric_name(spec)
    table = {
        "ndcg": lambda y, s, q=None, **kw: ndcg_score(y, s, q, k=k, **kw),
        "err": lambda y, s, q=None, **kw: err_score(y, s, q, k=k, **kw),
        "map": lambda y, s, q=None, **kw: average_precision(y, s, q, **kw),
        "mrr": lambda y, s, q=None, **kw: reciprocal_rank(y, s, q, **kw),
        "p": lambda y, s, q=None, **kw: precision_at_k(y, s, q, k=k or 10, **kw),
        "auc": lambda y, s, q=None, **kw: auc_score(y, s, q, **kw),
        "pairacc": lambda y, s, q=None, **kw: pairwise_accuracy(y, s, q, **kw),
        "meanndcg": lambda y, s, q=None, **kw: letor_mean_ndcg(y, s, q, **kw),
    }
    return table[name]


def evaluate(y_true, y_score, qid=None, *, metrics=("ndcg@10",), convention=None, return_per_query=False,
             **options):
    """Several metrics of one ranking: ``{spec: metric_by_name(spec)(y_true, y_score, qid, ...)}``, computed on
    inputs checked, grouped (or converted from TREC dicts) once, and ranked once per tie rule, as ranx's
    ``evaluate`` and pytrec_eval's ``RelevanceEvaluator`` do.

    ``metrics``: names of :func:`metric_by_name` (one name or a sequence); ``convention``, ``return_per_query`` and
    ``options`` (e.g. ``ties=``, ``empty=``) go to every metric. Returns ``{spec: mean}``, or ``{spec: (mean,
    per_query)}`` with ``return_per_query``.

    Ties and Empty: each metric's rules under ``convention`` (:func:`describe_metric` states them).
    """
    specs = [metrics] if isinstance(metrics, str) else list(metrics)
    funcs = {spec: metric_by_name(spec) for spec in specs}
    Q = _queries(y_true, y_score, qid, _preset(convention).queries)
    return {spec: f(Q, None, convention=convention, return_per_query=return_per_query, **options)
            for spec, f in funcs.items()}


def __getattr__(name):
    """``label_ranking_error`` (on preference graphs) lives in :mod:`cyrank.labelrank.metrics`; it stays importable
    from here for compatibility, imported on first use (this module does not import cyrank.labelrank)."""
    if name == "label_ranking_error":
        from .labelrank.metrics import label_ranking_error

        return label_ranking_error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_TIES_TEXT = {
    "pessimistic": "ties pessimistic (among equal scores the less relevant row ranks first)",
    "optimistic": "ties optimistic (among equal scores the more relevant row ranks first)",
    "input": "ties in input order (stable sort, as LightGBM and the LETOR 4.0 script)",
    "average": "ties averaged (the exact expectation over the orders of each tie group)",
    "doc_id": "ties by decreasing document id, as trec_eval (TREC dicts; arrays: input order)",
    "ranx": "ties in ranx's order (numba's quicksort of the scores in input order)",
}
_EMPTY_TEXT = {"drop": "is left out of the mean", "zero": "scores 0", "one": "scores 1"}
_GAIN_TEXT = {
    "exponential": "exponential gain 2**y - 1 (Burges et al. 2005, as ranx ndcg_burges; trec_eval's ndcg_cut uses "
                   "linear gain y: ndcg_score(..., gain='linear'))",
    "linear": "linear gain y (Jarvelin & Kekalainen 2002, as trec_eval's ndcg_cut and ranx's ndcg)",
}
_QUERIES_TEXT = {
    "qrels": "with TREC dicts every query of the qrels counts (one the run misses: an empty ranking)",
    "both": "with TREC dicts only the queries of both the run and the qrels count (trec_eval without -c)",
}


_ALL_ZERO = "a query whose labels are all 0"
_NO_RELEVANT = "a query with no relevant row"
# name -> (what it computes, which query is undefined); the rules come from the convention (PRESETS)
_DESCRIPTIONS = {
    "ndcg": ("NDCG over {cut}: {gain}, discount 1/log2(1 + r), normalized per query by the ideal DCG",
             _ALL_ZERO + " (ideal DCG = 0)"),
    "meanndcg": ("LETOR 4.0 MeanNDCG (mean of NDCG@1..n): {gain}, discount 1 for r <= 2 and 1/log2(r) after",
                 _ALL_ZERO + " (ideal DCG = 0)"),
    "err": ("ERR over {cut} (Chapelle et al. 2009): R(y) = (2**y - 1) / 2**max_rel, max_rel = the largest label "
            "of the data", _ALL_ZERO),
    "map": ("average precision, {binary}", _NO_RELEVANT),
    "mrr": ("reciprocal rank of the first relevant row, {binary}", _NO_RELEVANT),
    "p": ("precision at {k} (denominator k even for shorter queries), {binary}", _NO_RELEVANT),
    "auc": ("per-query AUC, {binary}", "a query without both relevant and irrelevant rows"),
    "pairacc": ("pairwise accuracy over the pairs with y_i > y_j (a tied score counts as an error)",
                "a query with a single label level"),
}


def describe_metric(spec, convention=None):
    """One line stating the gain, tie and empty-query rules that ``metric_by_name(spec)`` uses under
    ``convention`` (see :data:`PRESETS` and the module docstring).

    For the command line (``cyrank eval`` prints it under its table). Without a convention the rules are those
    of the functions' defaults:

    * gain: NDCG and MeanNDCG use the exponential gain g(y) = 2**y - 1 (Burges et al. 2005; LightGBM,
      the LETOR 4.0 script, ranx's ndcg_burges); trec_eval's ndcg_cut and Jarvelin & Kekalainen (2002)
      use the linear gain g(y) = y, available as ``ndcg_score(..., gain="linear")`` or the "trec_eval" /
      "ranx" conventions. ERR uses R(y) = (2**y - 1) / 2**max_rel with max_rel = the largest label. MAP, MRR,
      P@k and AUC binarize: relevant = y > 0. Pairwise accuracy uses only the order of the labels.
    * Ties (equal scores): "pessimistic" for all, except MeanNDCG ("input", as the LETOR 4.0 script).
    * Empty (query with no relevant row, or no preference pair): dropped from the mean, except
      MeanNDCG (scores 0, as the LETOR 4.0 script).

    With a convention the line also says which queries of TREC dicts count. Raises the same ValueError as
    :func:`metric_by_name` for an unknown name or convention.
    """
    name, k = parse_metric_name(spec)
    preset = _preset("letor4" if name == "meanndcg" and convention is None else convention)
    what, undefined = _DESCRIPTIONS[name]
    what = what.format(cut="every row" if k is None else f"the first {k} ranks", k=k or 10,
                       binary="binary relevance y > 0", gain=_GAIN_TEXT[preset.gain])
    line = f"{spec}: {what}; {_TIES_TEXT[preset.ties]}; {undefined} {_EMPTY_TEXT[preset.empty]}"
    if convention is not None:
        line += f"; {_QUERIES_TEXT[preset.queries]} ({convention} convention)"
    return line
