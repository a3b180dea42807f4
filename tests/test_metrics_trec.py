"""cyrank.metrics on TREC dicts against the evaluators users cite: pytrec_eval (trec_eval) and ranx.

Random runs and qrels with ties in scores and in labels, graded labels 0..4 (and -1 for trec_eval), relevant
documents the run does not retrieve, unjudged retrieved documents, queries with an empty ranking, queries only in
the run or only in the qrels, and queries longer than 15 documents (where ranx's quicksort stops being stable).
Each metric is compared per query and in the mean, to 1e-12. Then arrays <-> dicts round trips and the
per-query dicts of ``return_per_query``.
"""
import numpy as np
import pytest

from cyrank import metrics as M

ATOL = 1e-12
CUTS = (1, 3, 5, 10, 20)


def random_trec(seed, n_queries=25, *, negative=False, same_queries=False, max_docs=60):
    """(qrels, run): ids like "q-12" / "D-7"; scores from a few levels (ties); labels 0..4 (-1 too if
    ``negative``); some judged documents unretrieved, some retrieved ones unjudged."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for i in range(n_queries):
        q = f"q-{i}"
        pool = [f"D-{j}" for j in rng.permutation(2 * max_docs)]
        n_run = int(rng.integers(0, max_docs))
        levels = rng.normal(size=int(rng.integers(1, 6)))
        run_q = {d: float(levels[rng.integers(0, levels.size)]) for d in pool[:n_run]}
        judged = pool[int(rng.integers(0, max_docs // 2)):int(rng.integers(max_docs // 2, 2 * max_docs))]
        low = -1 if negative else 0
        qrels_q = {d: int(rng.integers(low, 5)) if rng.random() < 0.5 else 0 for d in judged}
        if same_queries or i % 8 != 3:
            run[q] = run_q
        if same_queries or i % 9 != 4:
            qrels[q] = qrels_q
    if not same_queries:
        run["only-in-run"] = {"D-1": 1.0}
    return qrels, run


# ---------------------------------------------------------------------------------------------
# pytrec_eval (trec_eval 9)
# ---------------------------------------------------------------------------------------------
TREC_MEASURES = (
    [(f"ndcg_cut_{k}", M.ndcg_score, {"k": k}) for k in CUTS]
    + [("ndcg", M.ndcg_score, {"k": None}), ("map", M.average_precision, {}), ("recip_rank", M.reciprocal_rank, {})]
    + [(f"P_{k}", M.precision_at_k, {"k": k}) for k in (1, 5, 10, 20)]
)


@pytest.mark.parametrize("seed", range(4))
def test_trec_eval_preset_matches_pytrec_eval(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = random_trec(seed, negative=seed % 2 == 1)
    truth = pytrec_eval.RelevanceEvaluator(qrels, {name for name, _, _ in TREC_MEASURES}).evaluate(run)
    assert truth, "no query evaluated"
    for name, metric, kwargs in TREC_MEASURES:
        mean, per_query = metric(qrels, run, convention="trec_eval", return_per_query=True, **kwargs)
        assert set(per_query) == set(truth), name  # trec_eval: the queries of both the run and the qrels
        for q, values in truth.items():
            assert abs(per_query[q] - values[name]) <= ATOL, (name, q, per_query[q], values[name])
        assert abs(mean - np.mean([values[name] for values in truth.values()])) <= ATOL, name


def test_trec_eval_ties_go_by_decreasing_doc_id():
    """trec_eval sorts by score, then by document id decreasingly (strcmp): "d9" before "d10", "a" before "B"."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    cases = [({"q": {"d1": 2, "d3": 1}}, {"q": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}, 0.5),
             ({"q": {"d10": 1}}, {"q": {"d10": 0.5, "d9": 0.5}}, 0.5),
             ({"q": {"d9": 1}}, {"q": {"d10": 0.5, "d9": 0.5}}, 1.0),
             ({"q": {"B": 1}}, {"q": {"B": 0.5, "a": 0.5}}, 0.5)]
    for qrels, run, rr in cases:
        assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"] == rr
        assert M.reciprocal_rank(qrels, run, convention="trec_eval") == rr


def test_trec_eval_unretrieved_relevant_documents_count_in_the_ideal_and_in_map():
    qrels = {"q": {"a": 1, "b": 2, "z": 3, "y": 3}}
    run = {"q": {"a": 0.9, "b": 0.8, "c": 0.1}}
    d = 1 / np.log2(np.arange(2, 5))
    assert M.ndcg_score(qrels, run, k=3, convention="trec_eval") == pytest.approx(
        (1 * d[0] + 2 * d[1]) / (3 * d[0] + 3 * d[1] + 2 * d[2]), abs=ATOL)
    assert M.average_precision(qrels, run, convention="trec_eval") == pytest.approx((1 + 1) / 4, abs=ATOL)
    # the array input knows only the retrieved rows: its ideal is theirs
    assert M.ndcg_score([1, 2, 0], [0.9, 0.8, 0.1], k=3, convention="trec_eval") == pytest.approx(
        (1 * d[0] + 2 * d[1]) / (2 * d[0] + 1 * d[1]), abs=ATOL)


# ---------------------------------------------------------------------------------------------
# ranx
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ranx():
    """ranx, compiled once for the module (numba JIT: about 20 s the first time on a machine)."""
    ranx = pytest.importorskip("ranx")
    ranx.evaluate(ranx.Qrels({"q": {"d": 1}}), ranx.Run({"q": {"d": 1.0, "e": 0.5}}),
                  ["ndcg@3", "ndcg_burges@3", "map", "mrr", "precision@3"], threads=1)
    return ranx


RANX_MEASURES = (
    [(f"ndcg@{k}", M.ndcg_score, {"k": k}, "ranx") for k in CUTS]
    + [(f"ndcg_burges@{k}", M.ndcg_score, {"k": k}, "ranx_burges") for k in (3, 10)]
    + [("ndcg", M.ndcg_score, {"k": None}, "ranx"), ("map", M.average_precision, {}, "ranx"),
       ("mrr", M.reciprocal_rank, {}, "ranx")]
    + [(f"precision@{k}", M.precision_at_k, {"k": k}, "ranx") for k in (1, 5, 10, 20)]
)


def ranx_per_query(ranx, qrels, run, names):
    run_obj = ranx.Run(run)
    scores = ranx.evaluate(ranx.Qrels(qrels), run_obj, list(names), return_mean=False, threads=1)
    scores = {names[0]: scores} if len(names) == 1 else scores
    return {name: dict(zip(run_obj.get_query_ids(), scores[name].tolist())) for name in names}


@pytest.mark.slow  # ranx compiles with numba on first use (about 20 s cold, 4 s from its cache)
@pytest.mark.parametrize("seed", range(3))
def test_ranx_presets_match_ranx(ranx, seed):
    qrels, run = random_trec(100 + seed, same_queries=True)  # ranx.evaluate needs the same queries in both
    truth = ranx_per_query(ranx, qrels, run, [name for name, *_ in RANX_MEASURES])
    for name, metric, kwargs, convention in RANX_MEASURES:
        mean, per_query = metric(qrels, run, convention=convention, return_per_query=True, **kwargs)
        assert per_query.keys() == truth[name].keys(), name
        for q, value in truth[name].items():
            assert abs(per_query[q] - value) <= ATOL, (name, q, per_query[q], value)
        assert abs(mean - np.mean(list(truth[name].values()))) <= ATOL, name


@pytest.mark.slow  # ranx compiles with numba on first use (about 20 s cold, 4 s from its cache)
def test_ranx_tie_order_is_its_quicksort_not_input_order(ranx):
    """Up to 15 documents ranx keeps tied documents in input order; beyond, numba's quicksort moves them. The
    'ranx' tie rule reproduces both; 'input' order disagrees with ranx on long queries with ties."""
    qrels, run = random_trec(7, n_queries=40, same_queries=True, max_docs=80)
    truth = ranx_per_query(ranx, qrels, run, ["mrr"])["mrr"]
    ours = M.reciprocal_rank(qrels, run, convention="ranx", return_per_query=True)[1]
    as_input = M.reciprocal_rank(qrels, run, convention="ranx", ties="input", return_per_query=True)[1]
    assert all(abs(ours[q] - truth[q]) <= ATOL for q in truth)
    assert any(abs(as_input[q] - truth[q]) > 1e-3 for q in truth), "the data has no tie that ranx reorders"
    small = {"q": {"d1": 2, "d3": 1}}, {"q": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    assert ranx.evaluate(ranx.Qrels(small[0]), ranx.Run(small[1]), "mrr", threads=1) == 1.0
    assert M.reciprocal_rank(*small, convention="ranx") == 1.0


@pytest.mark.slow  # ranx compiles with numba on first use (about 20 s cold, 4 s from its cache)
def test_ranx_scores_qrels_queries_missing_from_the_run_zero(ranx):
    """ranx with make_comparable=True: a qrels query the run misses scores 0; a run query without qrels is
    dropped. Small queries (ranx re-sorts them there, stably below 16 documents)."""
    qrels = {"a": {"d1": 1, "d2": 0}, "b": {"d1": 2}, "c": {"d4": 0}}
    run = {"a": {"d1": 0.2, "d2": 0.3}, "c": {"d4": 1.0}, "x": {"d1": 1.0}}
    truth = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "map", return_mean=False, make_comparable=True,
                          threads=1)
    mean, per_query = M.average_precision(qrels, run, convention="ranx", return_per_query=True)
    assert per_query == {"a": 0.5, "b": 0.0, "c": 0.0}
    assert sorted(truth.tolist()) == sorted(per_query.values()) and mean == pytest.approx(0.5 / 3, abs=ATOL)


# ---------------------------------------------------------------------------------------------
# arrays <-> dicts, per-query dicts
# ---------------------------------------------------------------------------------------------
def to_dicts(y, s, qid, docs):
    qrels, run = {}, {}
    for label, score, q, d in zip(y.tolist(), s.tolist(), qid.tolist(), docs.tolist()):
        qrels.setdefault(str(q), {})[d] = label
        run.setdefault(str(q), {})[d] = score
    return qrels, run


def random_rows(seed, n=300):
    rng = np.random.default_rng(seed)
    qid = rng.integers(0, 12, n)
    y = rng.integers(0, 5, n).astype(float)
    s = rng.integers(0, 6, n).astype(float)  # heavy ties
    docs = np.array([f"doc{j}" for j in rng.permutation(n)])
    return y, s, qid, docs


@pytest.mark.parametrize("convention", [None, "ranx", "ranx_burges", "lightgbm", "letor4"])
@pytest.mark.parametrize("spec", ["ndcg@5", "ndcg", "map", "mrr", "p@5", "err@5", "auc", "pairacc", "meanndcg"])
def test_arrays_and_dicts_agree_when_every_row_is_judged(spec, convention):
    """With every retrieved document judged (no unretrieved ones), dict input is the array input: the same
    ideal, the same denominators, and the rows' input order is the dicts' insertion order."""
    y, s, qid, docs = random_rows(1)
    qrels, run = to_dicts(y, s, qid, docs)
    f = M.metric_by_name(spec)
    ties = None if convention else "input"  # the default "pessimistic" reads labels: the same in both anyway
    a_mean, a_pq = f(y, s, qid, convention=convention, ties=ties, return_per_query="dict")
    d_mean, d_pq = f(qrels, run, convention=convention, ties=ties, return_per_query=True)
    assert d_mean == pytest.approx(a_mean, abs=ATOL, nan_ok=True)
    assert {str(q) for q in a_pq} == set(d_pq)
    for q, value in a_pq.items():
        assert d_pq[str(q)] == pytest.approx(value, abs=ATOL, nan_ok=True), (spec, q)


def test_trec_eval_on_arrays_is_input_order_which_doc_ids_sorted_decreasingly_reproduce():
    y, s, qid, docs = random_rows(2)
    qrels, run = to_dicts(y, s, qid, docs)
    order = np.lexsort((-np.unique(docs, return_inverse=True)[1], qid))  # rows by query, doc id decreasing
    for spec in ("ndcg@5", "map", "mrr", "p@5"):
        f = M.metric_by_name(spec)
        a = f(y[order], s[order], qid[order], convention="trec_eval", return_per_query=True)[1]
        d = f(qrels, run, convention="trec_eval", return_per_query=True)[1]
        np.testing.assert_allclose([d[str(q)] for q in range(12)], a, atol=ATOL, err_msg=spec)
    as_given = M.ndcg_score(y, s, qid, k=5, convention="trec_eval", return_per_query=True)[1]
    by_doc_id = M.ndcg_score(y[order], s[order], qid[order], k=5, convention="trec_eval", return_per_query=True)[1]
    assert not np.allclose(as_given, by_doc_id), "no tie changes the order: the test cannot fail"


def test_return_per_query_dict_keeps_the_original_ids():
    y = np.array([1.0, 0.0, 2.0, 0.0, 1.0, 0.0])
    s = np.array([0.1, 0.9, 0.8, 0.2, 0.7, 0.3])
    for qid, keys in ((np.array(["q-2", "q-2", "q-10", "q-10", "x", "x"]), ["q-10", "q-2", "x"]),
                      (np.array([7, 7, 3, 3, 12, 12]), [3, 7, 12])):
        mean, per_query = M.average_precision(y, s, qid, return_per_query="dict")
        assert list(per_query) == keys and all(type(k) is type(keys[0]) for k in per_query)
        values = M.average_precision(y, s, qid, return_per_query=True)[1]
        np.testing.assert_array_equal(list(per_query.values()), values)
        assert mean == pytest.approx(np.mean(values))


def test_dict_ids_may_be_ints_and_are_compared_as_str():
    qrels = {1: {7: 1, 8: 0}, "2": {"3": 2}}
    run = {"1": {"7": 0.1, "8": 0.9}, 2: {3: 0.5}}
    mean, per_query = M.reciprocal_rank(qrels, run, return_per_query=True)
    assert per_query == {"1": 0.5, "2": 1.0} and mean == 0.75


def test_dict_empty_rules_per_preset():
    """A qrels query with no relevant document: dropped (None), 0 (trec_eval, ranx), 1 (lightgbm); a query
    whose run is empty but which has relevant documents scores 0 under every preset."""
    qrels = {"a": {"d1": 1}, "b": {"d1": 0}, "c": {"d9": 2}}
    run = {"a": {"d1": 1.0}, "b": {"d1": 1.0}, "c": {}}
    assert M.ndcg_score(qrels, run, return_per_query=True)[1] == {"a": 1.0, "b": pytest.approx(np.nan, nan_ok=True),
                                                                    "c": 0.0}
    assert M.ndcg_score(qrels, run, convention="trec_eval", return_per_query=True)[1] == {"a": 1.0, "b": 0.0,
                                                                                           "c": 0.0}
    assert M.ndcg_score(qrels, run, convention="lightgbm", return_per_query=True)[1] == {"a": 1.0, "b": 1.0,
                                                                                          "c": 0.0}
    for f in (M.average_precision, M.reciprocal_rank, M.precision_at_k, M.err_score, M.letor_mean_ndcg):
        assert f(qrels, run, convention="ranx", return_per_query=True)[1]["c"] == 0.0, f.__name__


def test_evaluate_equals_the_metrics_one_by_one():
    qrels, run = random_trec(5)
    specs = ["ndcg@10", "map", "mrr", "p@10", "err@5"]
    for convention in ("trec_eval", "ranx", None):
        together = M.evaluate(qrels, run, metrics=specs, convention=convention, return_per_query=True)
        for spec in specs:
            alone = M.metric_by_name(spec)(qrels, run, convention=convention, return_per_query=True)
            assert together[spec][0] == pytest.approx(alone[0], abs=ATOL, nan_ok=True)
            assert together[spec][1] == pytest.approx(alone[1], abs=ATOL, nan_ok=True)
    y, s, qid, _ = random_rows(3)
    assert M.evaluate(y, s, qid, metrics="map") == {"map": M.average_precision(y, s, qid)}


@pytest.mark.parametrize("args, kwargs, exc, match", [
    (({"q": {"d": 1}}, [0.5]), {}, TypeError, "either two dicts"),
    (({"q": {"d": 1}}, {"q": {"d": 0.5}}, [1]), {}, TypeError, "qid is not used with dict input"),
    (({"q": {"d": "high"}}, {"q": {"d": 0.5}}), {}, TypeError, "qrels: relevance labels must be numbers"),
    (({"q": {"d": 1}}, {"q": {"d": float("nan")}}), {}, ValueError, "run: scores must be finite"),
    (({"q": [1]}, {"q": {"d": 0.5}}), {}, TypeError, "qrels\\['q'\\] must be a dict"),
    (({1: {"d": 1}, "1": {"d": 1}}, {"1": {"d": 0.5}}), {}, ValueError, "query id '1' twice"),
    (([1, 0], [0.5, 0.2]), {"ties": "doc_id"}, ValueError, "needs document ids"),
    (([1, 0], [0.5, 0.2]), {"return_per_query": "list"}, TypeError, "return_per_query must be"),
    (([1, 0], [0.5, 0.2]), {"convention": "trec"}, ValueError, "convention"),
    (({"q": {"d": -1}}, {"q": {"d": 0.5}}), {}, ValueError, "non-negative"),
])
def test_bad_dict_input(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        M.ndcg_score(*args, **kwargs)


def test_negative_qrels_labels_are_gain_zero_under_trec_eval_and_ranx():
    qrels = {"q": {"a": -2, "b": 1, "c": 3}}
    run = {"q": {"a": 0.9, "b": 0.8, "c": 0.1}}
    without = {"q": {"b": 1, "c": 3}}
    for convention in ("trec_eval", "ranx", "ranx_burges"):
        assert M.ndcg_score(qrels, run, convention=convention) == M.ndcg_score(without, run, convention=convention)
        assert M.err_score(qrels, run, convention=convention) == M.err_score(without, run, convention=convention)


@pytest.mark.parametrize("convention, gain, ties, empty", [
    (None, "exponential gain", "ties pessimistic", "left out of the mean"),
    ("trec_eval", "linear gain", "decreasing document id", "scores 0"),
    ("ranx", "linear gain", "ranx's order", "scores 0"),
    ("ranx_burges", "exponential gain", "ranx's order", "scores 0"),
    ("lightgbm", "exponential gain", "input order", "scores 1"),
    ("letor4", "exponential gain", "input order", "scores 0")])
def test_describe_metric_states_each_presets_rules(convention, gain, ties, empty):
    line = M.describe_metric("ndcg@5", convention=convention)
    assert line.startswith("ndcg@5: ") and gain in line and ties in line and empty in line
    assert ("with TREC dicts" in line) == (convention is not None)  # which queries of dicts count
    rules = M.PRESETS[convention]
    y, s, qid = [0, 0, 1, 0], [0.5, 0.5, 0.5, 0.1], [1, 1, 2, 2]
    assert M.ndcg_score(y, s, qid, k=5, convention=convention, return_per_query=True)[1][0] == pytest.approx(
        {"drop": np.nan, "zero": 0.0, "one": 1.0}[rules.empty], nan_ok=True)
    with pytest.raises(ValueError, match="convention"):
        M.describe_metric("map", convention="trec")


# ---------------------------------------------------------------------------------------------
# the two sort kernels against an independent sort
# ---------------------------------------------------------------------------------------------
def test_rank_order_is_lexsort_by_score_key_and_input_order():
    from cyrank import _metrics

    rng = np.random.default_rng(11)
    for n_queries in (1, 7):
        sizes = rng.integers(0, 90, n_queries)
        offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        score = rng.integers(0, 5, offsets[-1]).astype(float)
        key = rng.integers(0, 3, offsets[-1]).astype(float)
        qidx = np.repeat(np.arange(n_queries), sizes)
        order = np.empty(offsets[-1], dtype=np.int64)
        _metrics.rank_order(score, key, offsets, order, np.empty(max(sizes.max(), 1), dtype=np.int64))
        np.testing.assert_array_equal(order, np.lexsort((np.arange(offsets[-1]), key, -score, qidx)))


@pytest.mark.slow  # numba compiles np.argsort: about 1.5 s
def test_ranx_order_is_numbas_quicksort_argsort():
    """Against numba's own np.argsort (kind "quicksort"), which ranx's Run uses, on queries of 0..300 documents
    with heavy ties (insertion sort below 16 documents, partitions above)."""
    numba = pytest.importorskip("numba")
    from cyrank import _metrics

    argsort = numba.njit(lambda a: np.argsort(a))
    rng = np.random.default_rng(12)
    sizes = np.array([0, 1, 2, 15, 16, 17, 40, 300])
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    score = rng.integers(0, 6, offsets[-1]).astype(float)
    order = np.empty(offsets[-1], dtype=np.int64)
    _metrics.ranx_order(-score, offsets, order)
    expected = np.concatenate([a + argsort(-score[a:b]) for a, b in zip(offsets[:-1], offsets[1:])])
    np.testing.assert_array_equal(order, expected)
    assert not np.array_equal(order, np.lexsort((-score, np.repeat(np.arange(sizes.size), sizes)))), \
        "numba's order equals the stable one here: the test cannot fail"


@pytest.mark.parametrize("spec", ["ndcg@3", "ndcg", "meanndcg", "err@3", "map", "mrr", "p@3", "auc", "pairacc"])
def test_every_metric_takes_a_query_the_run_misses_and_an_empty_run_query(spec):
    qrels = {"a": {"d1": 1, "d2": 0}, "b": {"d1": 2}, "c": {"d1": 1, "d3": 0}}
    run = {"a": {"d1": 0.2, "d2": 0.3}, "c": {}}
    mean, per_query = M.metric_by_name(spec)(qrels, run, return_per_query=True)
    assert set(per_query) == {"a", "b", "c"} and np.isfinite(per_query["a"])
    if spec not in ("auc", "pairacc"):  # these read the retrieved documents only: no pair, undefined
        assert per_query["b"] == per_query["c"] == 0.0


def test_strided_arrays_are_taken():
    """A score column of a matrix (a strided view) is read as well as a contiguous copy."""
    y, s, qid, _ = random_rows(4)
    columns = np.column_stack([s, -s])
    for spec in ("ndcg@5", "map", "auc"):
        f = M.metric_by_name(spec)
        assert f(y, columns[:, 0], qid) == f(y, s.copy(), qid)
        assert f(np.column_stack([y, y])[:, 1], s, qid, convention="ranx") == f(y, s, qid, convention="ranx")
