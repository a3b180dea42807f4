"""cyrank predict --format trec and cyrank eval --run/--qrels (-q, --format json, --convention): the run a model
writes evaluates as the LETOR file it came from, and agrees with pytrec_eval."""
import json
import types

import numpy as np
import pytest

from cyrank import RankSVM
from cyrank.cli import check_param_names, main, takes_any_param
from cyrank.datasets import load_lightgbm_rank
from cyrank.io import dump_svmlight, qrels_from_labels, read_qrels, read_run, run_from_scores, save_model, write_qrels

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The embedded test split with LETOR doc ids (768 rows, 50 queries), its qrels, a fitted RankSVM, and the same
    data without doc ids."""
    d = tmp_path_factory.mktemp("trec_cli")
    X, y, qid = load_lightgbm_rank("test")
    doc_ids = np.array([f"GX{i % 97:03d}-{i // 97:02d}-{i:07d}" for i in range(y.size)])
    dump_svmlight(X, y, d / "test.svm", qid=qid, doc_ids=doc_ids)
    dump_svmlight(X, y, d / "plain.svm", qid=qid)
    write_qrels(d / "qrels.txt", qrels_from_labels(qid, doc_ids, y))
    model = RankSVM(C=1e-3).fit(X, y, qid=qid)
    save_model(model, d / "m.npz")
    return types.SimpleNamespace(d=d, X=X, y=y, qid=qid, doc_ids=doc_ids, scores=model.predict(X))


def run_json(capsys, argv):
    assert main([str(a) for a in argv] + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_writes_the_models_run(files, capsys):
    out = files.d / "run.txt"
    assert main(["predict", str(files.d / "m.npz"), str(files.d / "test.svm"), "--format", "trec", "--tag", "svm1",
                 "-o", str(out)]) == 0
    run, tag = read_run(out, return_tag=True)
    assert tag == "svm1" and run == run_from_scores(files.qid, files.doc_ids, files.scores)
    lines = out.read_text().splitlines()
    assert len(lines) == files.y.size and all(len(line.split()) == 6 for line in lines)
    assert main(["predict", str(files.d / "m.npz"), str(files.d / "test.svm"), "--format", "trec", "--tag",
                 "svm1"]) == 0
    assert capsys.readouterr().out == out.read_text()


@pytest.mark.parametrize("convention", ["trec_eval", "none", "letor4"])
def test_eval_of_the_run_equals_eval_of_the_letor_file(files, capsys, convention):
    run = files.d / f"run_{convention}.txt"
    assert main(["predict", str(files.d / "m.npz"), str(files.d / "test.svm"), "--format", "trec", "-o",
                 str(run)]) == 0
    metrics = ["-m", "ndcg@10", "-m", "map", "-m", "mrr", "-m", "p@5", "-m", "err@10"]
    from_files = run_json(capsys, ["eval", "--run", run, "--qrels", files.d / "qrels.txt", "--convention",
                                   convention, *metrics])
    from_letor = run_json(capsys, ["eval", files.d / "test.svm", "--model", files.d / "m.npz", "--convention",
                                   convention, *metrics])
    assert list(from_files) == list(from_letor) == ["ndcg@10", "map", "mrr", "p@5", "err@10"]
    for name in from_files:
        assert from_files[name]["all"] == pytest.approx(from_letor[name]["all"], abs=1e-12)
        a, b = from_files[name]["per_query"], from_letor[name]["per_query"]
        assert a.keys() == b.keys() and all(a[q] == pytest.approx(b[q], abs=1e-12) for q in a if a[q] is not None)


def test_eval_run_defaults_to_trec_eval_and_agrees_with_pytrec_eval(files, capsys):
    run = files.d / "run_default.txt"
    main(["predict", str(files.d / "m.npz"), str(files.d / "test.svm"), "--format", "trec", "-o", str(run)])
    got = run_json(capsys, ["eval", "--run", run, "--qrels", files.d / "qrels.txt", "-m", "ndcg@10", "-m", "map"])
    truth = pytrec_eval.RelevanceEvaluator(read_qrels(files.d / "qrels.txt"), {"ndcg_cut_10", "map"}).evaluate(
        read_run(run))
    for name, measure in [("ndcg@10", "ndcg_cut_10"), ("map", "map")]:
        for q, value in truth.items():
            assert got[name]["per_query"][q] == pytest.approx(value[measure], abs=1e-12)
        assert got[name]["all"] == pytest.approx(np.mean([v[measure] for v in truth.values()]), abs=1e-12)
    assert main(["eval", "--run", str(run), "--qrels", str(files.d / "qrels.txt"), "-m", "map"]) == 0
    out = capsys.readouterr().out
    assert "convention: trec_eval (the default for --run/--qrels" in out.split("rules")[1]


def test_per_query_lines_are_trec_eval_q_lines(files, capsys):
    run = files.d / "run_q.txt"
    main(["predict", str(files.d / "m.npz"), str(files.d / "test.svm"), "--format", "trec", "-o", str(run)])
    argv = ["eval", "--run", run, "--qrels", files.d / "qrels.txt", "-m", "ndcg@10", "-m", "map"]
    want = run_json(capsys, argv)
    assert main([str(a) for a in argv] + ["-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    data = [line.split("\t") for line in lines if not line.startswith("#")]
    assert all(len(fields) == 3 for fields in data)
    for name in ("ndcg@10", "map"):
        mine = {q: float(v) for m, q, v in data if m.strip() == name and q != "all"}
        assert mine.keys() == {q for q, v in want[name]["per_query"].items() if v is not None}
        assert all(abs(mine[q] - want[name]["per_query"][q]) <= 5e-5 for q in mine)
    assert [(m.strip(), q) for m, q, _ in data[-2:]] == [("ndcg@10", "all"), ("map", "all")]
    assert float(data[-1][2]) == pytest.approx(want["map"]["all"], abs=5e-5)
    assert any(line.startswith("# convention: trec_eval") for line in lines)


@pytest.mark.parametrize("argv, message", [
    (["eval", "--run", "{run}"], "--run and --qrels go together"),
    (["eval", "{data}", "--run", "{run}", "--qrels", "{qrels}"], "not both"),
    (["eval"], "give DATA with --model or --scores, or a TREC run"),
    (["eval", "--run", "{bad}", "--qrels", "{qrels}"], "bad.txt, line 2: 5 fields, expected 6"),
    (["predict", "{model}", "{data}", "--tag", "x"], "--tag names a TREC run"),
    (["predict", "{model}", "{data}", "--format", "trec", "--tag", "a b"], "--tag must be a name without"),
    (["predict", "{model}", "{plain}", "--format", "trec"], "plain.svm, line 1: no '#docid = ...' comment"),
])
def test_errors_name_the_option_or_the_line(files, capsys, argv, message):
    (files.d / "bad.txt").write_text("1 Q0 a 1 1.5 t\n1 Q0 b 2 1.0\n")
    (files.d / "some_run.txt").write_text("1 Q0 a 1 1.5 t\n")
    names = {"run": files.d / "some_run.txt", "qrels": files.d / "qrels.txt", "data": files.d / "test.svm",
             "bad": files.d / "bad.txt", "model": files.d / "m.npz", "plain": files.d / "plain.svm"}
    assert main([a.format(**names) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    if any("plain" in a for a in argv):
        assert "--format scores" in err


def test_param_names_pass_for_an_estimator_with_kwargs():
    class Open:
        def __init__(self, alpha=1.0, **kwargs):
            pass

    class Closed:
        def __init__(self, alpha=1.0):
            pass

    open_spec = types.SimpleNamespace(name="open", solve=None, estimator_class=Open)
    closed_spec = types.SimpleNamespace(name="closed", solve=None, estimator_class=Closed)
    assert takes_any_param(open_spec) and not takes_any_param(closed_spec)
    check_param_names(open_spec, {"alpha": 2, "max_depth": 5, "lambda_l2": 0.1}, ["alpha"])
    with pytest.raises(ValueError, match="closed has no parameter 'max_depth'"):
        check_param_names(closed_spec, {"max_depth": 5}, ["alpha"])
    with pytest.raises(ValueError, match="--weights FILE"):
        check_param_names(open_spec, {"sample_weight": 1}, ["alpha"])
