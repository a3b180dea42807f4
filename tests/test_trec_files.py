"""TREC run and qrels files (cyrank.io._trec) and LETOR's '#docid = X' comments: round trips, trec_eval's order,
agreement with pytrec_eval's parsers and evaluator, and errors that name the file and the line."""
import gzip
import io as stdio

import numpy as np
import pytest

from cyrank import metrics
from cyrank.io import (dump_svmlight, load_svmlight, qrels_from_labels, read_qrels, read_run, run_from_scores,
                       write_qrels, write_run)

pytrec_eval = pytest.importorskip("pytrec_eval")


def random_run(rng, n_queries=6, n_docs=30, levels=4):
    """A run with many tied scores and the qrels judging every document (graded 0..levels-1, each query with a
    relevant document), both keyed by str ids."""
    run, qrels = {}, {}
    for q in range(n_queries):
        docs = [f"D{q}-{d:03d}" for d in rng.permutation(n_docs)]
        run[f"Q{q}"] = {d: float(s) for d, s in zip(docs, rng.integers(0, 5, n_docs))}
        rels = rng.integers(0, levels, n_docs)
        rels[0] = max(rels[0], 1)
        qrels[f"Q{q}"] = {d: int(r) for d, r in zip(docs, rels)}
    return run, qrels


MEASURES = {"map", "recip_rank", "P_5", "ndcg_cut_10", "ndcg"}


def trec_eval(qrels, run):
    return pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)


# ------------------------------------------------------------------------------------------------ runs, qrels
@pytest.mark.parametrize("seed", range(3))
def test_run_and_qrels_round_trip(tmp_path, seed):
    rng = np.random.default_rng(seed)
    run, qrels = random_run(rng)
    run["Q0"]["tiny"] = 1e-300
    run["Q0"]["neg"] = -0.1 + 0.2  # a float with 17 significant digits
    write_run(tmp_path / "run.txt", run, tag="mine")
    write_qrels(tmp_path / "qrels.txt", qrels)
    got, tag = read_run(tmp_path / "run.txt", return_tag=True)
    assert got == run and tag == "mine"
    assert all(type(v) is float for docs in got.values() for v in docs.values())
    assert read_qrels(tmp_path / "qrels.txt") == qrels
    # pytrec_eval's own parsers read the same dicts from our files
    with open(tmp_path / "run.txt") as fh:
        assert pytrec_eval.parse_run(fh) == run
    with open(tmp_path / "qrels.txt") as fh:
        assert pytrec_eval.parse_qrel(fh) == qrels


@pytest.mark.parametrize("seed", range(3))
def test_written_ranks_are_trec_evals_order(tmp_path, seed):
    """Ties broken by decreasing document id (trec_eval's rule): replacing each score by minus the written rank
    (no ties left) gives trec_eval the same ranking, so every measure is unchanged."""
    run, qrels = random_run(np.random.default_rng(seed))
    write_run(tmp_path / "run.txt", run)
    by_rank = {}
    for line in (tmp_path / "run.txt").read_text().splitlines():
        q, q0, doc, rank, score, tag = line.split()
        assert q0 == "Q0" and tag == "cyrank" and float(score) == run[q][doc]
        by_rank.setdefault(q, {})[doc] = -float(rank)
    assert all(sorted(-r for r in docs.values()) == list(range(1, len(docs) + 1)) for docs in by_rank.values())
    assert trec_eval(qrels, by_rank) == trec_eval(qrels, run)
    reversed_ties = {q: {d: -r for d, r in docs.items()} for q, docs in by_rank.items()}
    assert trec_eval(qrels, reversed_ties) != trec_eval(qrels, run)  # the test can tell another order


def test_read_run_orders_by_score_not_by_the_rank_column(tmp_path):
    (tmp_path / "run.txt").write_text("7 Q0 a 1 0.5 t\n7 Q0 b 2 2.5 t\n7 Q0 c 1 -1 t\n")
    assert read_run(tmp_path / "run.txt") == {"7": {"a": 0.5, "b": 2.5, "c": -1.0}}


def test_arrays_to_files_and_back_evaluate_as_in_memory(tmp_path):
    """LETOR-style arrays -> run/qrels dicts -> files -> dicts: pytrec_eval on the files' dicts equals cyrank's
    metrics on the arrays (distinct scores, binary levels for MAP/MRR, the linear gain of trec_eval's NDCG)."""
    rng = np.random.default_rng(5)
    qid = np.repeat([3, 11, 12, 40], 25)
    doc_ids = np.array([f"GX{i:03d}-00-{i * 7:07d}" for i in range(qid.size)])
    y = rng.integers(0, 3, qid.size).astype(float)
    y[::25] = 2  # every query has a relevant document
    scores = rng.permutation(qid.size) / 7.0
    write_run(tmp_path / "run.txt", run_from_scores(qid, doc_ids, scores))
    write_qrels(tmp_path / "qrels.txt", qrels_from_labels(qid, doc_ids, y))
    run, qrels = read_run(tmp_path / "run.txt"), read_qrels(tmp_path / "qrels.txt")
    assert set(run) == {"3", "11", "12", "40"}
    assert run["11"][doc_ids[30]] == scores[30] and qrels["11"][doc_ids[30]] == int(y[30])
    got = trec_eval(qrels, run)
    mean = lambda m: np.mean([got[q][m] for q in got])  # noqa: E731
    assert mean("map") == pytest.approx(metrics.average_precision(y, scores, qid), abs=1e-12)
    assert mean("recip_rank") == pytest.approx(metrics.reciprocal_rank(y, scores, qid), abs=1e-12)
    assert mean("ndcg_cut_10") == pytest.approx(metrics.ndcg_score(y, scores, qid, k=10, gain="linear"), abs=1e-12)


def test_conversions_check_their_arrays():
    assert run_from_scores([2, 1, 2], ["a", "b", "c"], [1, 2, 3]) == {"2": {"a": 1.0, "c": 3.0}, "1": {"b": 2.0}}
    qrels = qrels_from_labels(np.array([2, 1]), np.array(["a", "b"]), np.array([1.0, 0.0]))
    assert qrels == {"2": {"a": 1}, "1": {"b": 0}} and type(qrels["2"]["a"]) is int
    assert qrels_from_labels(["q"], ["a"], [0.5]) == {"q": {"a": 0.5}}
    assert run_from_scores(np.array([7.0, 7.0]), ["a", "b"], [1, 2]) == {"7": {"a": 1.0, "b": 2.0}}
    with pytest.raises(TypeError, match="one type of id"):
        run_from_scores(np.array([1, "1"], dtype=object), ["a", "b"], [1, 2])
    with pytest.raises(ValueError, match="document 'a' appears twice in query '2'"):
        run_from_scores([2, 1, 2], ["a", "b", "a"], [1, 2, 3])
    with pytest.raises(ValueError, match="same length"):
        run_from_scores([1, 2], ["a"], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        run_from_scores([1], ["a"], [np.nan])
    with pytest.raises(ValueError, match="whitespace"):
        run_from_scores([1], ["a b"], [1.0])


def test_writers_refuse_what_trec_eval_would_misread(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(ValueError, match="not finite"):
        write_run(path, {"q": {"a": float("nan")}})
    with pytest.raises(ValueError, match="whitespace"):
        write_run(path, {"q 1": {"a": 1.0}})
    with pytest.raises(ValueError, match="tag"):
        write_run(path, {"q": {"a": 1.0}}, tag="two words")
    with pytest.raises(TypeError, match="str"):
        write_run(path, {1: {"a": 1.0}})
    with pytest.raises(TypeError, match="dict"):
        write_run(path, {"q": [1.0]})
    with pytest.raises(ValueError, match="not an integer"):
        write_qrels(path, {"q": {"a": 0.5}})
    assert not path.exists()
    write_qrels(path, {"q": {"a": 2.0, "b": -1}})
    assert path.read_text() == "q 0 a 2\nq 0 b -1\n"


def test_compressed_and_file_object_input(tmp_path):
    text = b"1 Q0 d1 1 3.5 t\n1 Q0 d2 2 1e-3 t\n\n2 Q0 d1 1 0 t\r\n"
    (tmp_path / "run.gz").write_bytes(gzip.compress(text))
    want = {"1": {"d1": 3.5, "d2": 0.001}, "2": {"d1": 0.0}}
    assert read_run(tmp_path / "run.gz") == want
    assert read_run(stdio.BytesIO(text)) == want
    with pytest.raises(ValueError, match="expands to more than"):
        read_run(tmp_path / "run.gz", max_bytes=10)


@pytest.mark.parametrize("reader, text, message", [
    (read_run, "1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0\n", "line 2: 5 fields, expected 6"),
    (read_run, "\n\n1 Q0 a 1 x t\n", "line 3: score 'x' is not a number"),
    (read_run, "1 Q0 a 1 2,5 t\n", "line 1: score '2,5' is not a number"),
    (read_run, "1 Q0 a 1 1 t\n1 Q0 b 1 NaN t\n", "line 2: score 'NaN' is not finite"),
    (read_run, "1 Q0 a 1 -inf t\n", "line 1: score '-inf' is not finite"),
    (read_run, "1 Q0 a 1 1 t\n2 Q0 a 1 1 t\n1 Q0 a 3 0 t\n", "line 3: document 'a' appears twice for query '1'"),
    (read_run, "", "empty file"),
    (read_run, " \n\t\n", "empty file"),
    (read_qrels, "1 0 a 1\n1 0 b 0.5\n", "line 2: relevance '0.5' is not an integer"),
    (read_qrels, "1 0 a\n", "line 1: 3 fields, expected 4"),
    (read_qrels, "1 0 a 1 extra\n", "line 1: 5 fields"),
    (read_qrels, "1 0 a 1\n1 1 a 2\n", "line 2: document 'a' appears twice"),
    (read_qrels, "1 0 a 99999999999999999999\n", "not an integer"),
    (read_qrels, "1 0 \xe9 1\n", "not UTF-8"),
])
def test_malformed_lines_name_the_file_and_the_line(tmp_path, reader, text, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError) as info:
        reader(path)
    assert str(info.value).startswith(str(path)) and message in str(info.value)


# ------------------------------------------------------------------------------------- LETOR comments
LETOR4 = ("2 qid:10032 1:0.056537 2:0.000000 46:0.076923 #docid = GX029-35-5894638 inc = 0.0119881192468859 "
          "prob = 0.139842\n"
          "0 qid:10032 1:0.279152 46:1.000000 #docid = GX030-77-6315042 inc = 1 prob = 0.341364\n")
OHSUMED = "0 qid:1 1:3.000000 2:1.098612 #docid = 244338\n"  # LETOR 3.0 OHSUMED: the doc id alone
MSLR = "2 qid:1 1:3 2:0 3:2\n"  # MSLR-WEB10K/30K: no comment at all


def test_doc_ids_and_comments_of_letor_files():
    X, y, qid, doc_ids, comments = load_svmlight(stdio.BytesIO(LETOR4.encode()), return_doc_ids=True,
                                                 return_comments=True)
    assert doc_ids.tolist() == ["GX029-35-5894638", "GX030-77-6315042"] and doc_ids.dtype.kind == "U"
    assert list(comments) == ["docid", "inc", "prob"]
    assert comments["inc"].tolist() == ["0.0119881192468859", "1"]
    assert comments["prob"].astype(float).tolist() == [0.139842, 0.341364]
    plain = load_svmlight(stdio.BytesIO(LETOR4.encode()))
    for a, b in zip((X, y, qid), plain):
        assert (a != b).nnz == 0 if hasattr(a, "nnz") else np.array_equal(a, b)
    assert load_svmlight(stdio.BytesIO(OHSUMED.encode()), return_doc_ids=True)[3].tolist() == ["244338"]
    last_line_unterminated = load_svmlight(stdio.BytesIO(OHSUMED.encode().rstrip(b"\n")), return_doc_ids=True)
    assert last_line_unterminated[3].tolist() == ["244338"]


def test_comment_forms_and_line_numbers():
    text = ("# a header comment\n\n"
            "1 qid:1 1:1\t#docid=A1\tinc =2 note free text docid = ignored\r\n"
            "0 qid:1 1:2 #  docid  =  B\u00e9  \n"
            "0 qid:2 1:2 #prob = 0.5 docid = C docid = second\n"
            "0 qid:2 1:2 # free text first docid = D\n").encode()
    _, _, _, comments = load_svmlight(stdio.BytesIO(text), return_comments=True)
    assert comments["docid"].tolist() == ["A1", "B\u00e9", "C", ""]
    assert comments["inc"].tolist() == ["2", "", "", ""] and comments["prob"].tolist() == ["", "", "0.5", ""]
    with pytest.raises(ValueError, match=r"^<file>, line 6: no '#docid = \.\.\.' comment"):
        load_svmlight(stdio.BytesIO(text), return_doc_ids=True)


def test_files_without_doc_ids_are_refused_naming_the_line():
    with pytest.raises(ValueError, match="line 1: no '#docid.*MSLR-WEB"):
        load_svmlight(stdio.BytesIO(MSLR.encode()), return_doc_ids=True)
    with pytest.raises(ValueError, match="line 3: no '#docid"):
        load_svmlight(stdio.BytesIO((LETOR4 + MSLR).encode()), return_doc_ids=True)
    with pytest.raises(ValueError, match="engine='auto' or 'cyrank'"):
        load_svmlight(stdio.BytesIO(LETOR4.encode()), return_doc_ids=True, engine="sklearn")
    empty = load_svmlight(stdio.BytesIO(b"# nothing\n"), return_doc_ids=True, return_comments=True)
    assert empty[3].shape == (0,) and empty[4] == {}


def test_dump_svmlight_writes_doc_ids_and_comments_back(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((7, 4)) * (rng.random((7, 4)) < 0.6)
    y, qid = rng.integers(0, 3, 7).astype(float), np.repeat([4, 9], [3, 4])
    doc_ids = np.array([f"clueweb09-en{i:04d}-00-{i:05d}" for i in range(7)])
    comments = {"inc": rng.random(7).round(6).astype(str), "prob": np.array(["0.5", "", "1", "", "", "", "2"])}
    path = tmp_path / "data.svm.gz"
    dump_svmlight(X, y, path, qid=qid, doc_ids=doc_ids, comments=comments)
    X2, y2, q2, ids2, c2 = load_svmlight(path, return_doc_ids=True, return_comments=True)
    assert np.array_equal(X2.toarray(), X) and np.array_equal(y2, y) and np.array_equal(q2, qid)
    assert np.array_equal(ids2, doc_ids) and list(c2) == ["docid", "inc", "prob"]
    assert all(np.array_equal(c2[k], v) for k, v in comments.items())
    with pytest.raises(ValueError, match="whitespace"):
        dump_svmlight(X, y, path, qid=qid, doc_ids=["a b", *doc_ids[1:]])
    with pytest.raises(ValueError, match="one per row"):
        dump_svmlight(X, y, path, qid=qid, doc_ids=doc_ids[:3])
    with pytest.raises(ValueError, match="once"):
        dump_svmlight(X, y, path, qid=qid, doc_ids=doc_ids, comments={"docid": doc_ids})
