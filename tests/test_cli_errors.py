"""Issue 26, the command line and its files: one test per cause of the audit (atomic score files, parameters a model
file cannot hold, the new user's first hour, metric rules, one-line errors, memory driven by a file's declarations)."""
import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cyrank
from cyrank import _registry
from cyrank.cli import accepted_params, build_parser, main
from cyrank.datasets import load_lightgbm_rank
from cyrank.io import dump_svmlight, load_model, load_svmlight_multilabel, save_model

HAS_LIGHTGBM = importlib.util.find_spec("lightgbm") is not None
ENV = {**os.environ, "PYTHONPATH": str(Path(cyrank.__file__).resolve().parents[1])}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The embedded test split as a LETOR file (768 rows, 50 queries), its first 20 queries as a validation file."""
    d = tmp_path_factory.mktemp("audit_cli")
    X, y, qid = load_lightgbm_rank("test")
    dump_svmlight(X, y, d / "test.svm", qid=qid)
    keep = np.isin(qid, np.unique(qid)[:20])
    dump_svmlight(X[keep], y[keep], d / "valid.svm", qid=qid[keep])
    return d, d / "test.svm", d / "valid.svm"


def _run(code, tmp_path, timeout=300):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=ENV,
                          timeout=timeout)


def _error(capsys, argv):
    """main's exit code and stderr; the error must be one line without a traceback."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


# ------------------------------------------------------------------------------------------------------ files
@pytest.mark.slow
def test_predict_output_is_atomic_past_the_file_size_limit(data, tmp_path):
    """cyrank predict -o past RLIMIT_FSIZE: the old score file survives intact and the error names the file."""
    from cyrank import RankSVM

    _, test, _ = data
    X, y, qid = load_lightgbm_rank("test")
    save_model(RankSVM(C=1e-3).fit(X, y, qid=qid), tmp_path / "m.npz")
    out = tmp_path / "scores.txt"
    out.write_text("0.5\n" * 25)  # 100 bytes of old scores; the new ones are ~768 x 20 bytes
    old = out.read_bytes()
    code = f"""
import resource, signal, sys
from cyrank.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write becomes an OSError (EFBIG) instead of killing us
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
sys.exit(main(["predict", r"{tmp_path / 'm.npz'}", r"{test}", "-o", r"{out}"]))
"""
    r = _run(code, tmp_path)
    assert r.returncode == 2, r.stderr
    assert f"cannot write {out}" in r.stderr and "left as it was" in r.stderr and "Traceback" not in r.stderr
    assert out.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz", "scores.txt"]  # no temporary file left
    assert main(["predict", str(tmp_path / "m.npz"), str(test), "-o", str(out)]) == 0  # without the limit: replaced
    assert np.loadtxt(out).shape == (768,)


@pytest.mark.parametrize("solver, param", [("ranknet", "coef_init=none"), ("domination", "coef_init=none"),
                                           ("domination", "options=none"), ("ranksvm", "coef_init=none"),
                                           ("labelrank", "joint=none"), ("lambdarank", "eval_set=abc")])
def test_fit_refuses_functional_layer_only_parameters(data, tmp_path, capsys, solver, param):
    """-p coef_init/eval_set/joint/options wrote a model file that load_model refused; now fit refuses them, naming what
    -p accepts (eval_set: --valid), and writes no file."""
    _, test, _ = data
    model = tmp_path / "m.npz"
    code, err = _error(capsys, ["fit", solver, test, "-o", model, "-p", param])
    assert code == 2 and not model.exists()
    name = param.split("=")[0]
    assert f"-p {name}:" in err
    assert ("--valid FILE" in err) if name == "eval_set" else ("-p accepts for" in err and "max_iter" in err)


def test_accepted_parameters_are_what_a_model_file_holds():
    """The CLI's table of functional-only arguments: -p accepts exactly the hyper-parameters shared by the estimator
    (what a model file stores and load_model passes to its constructor) and the functional solve."""
    for name, spec in _registry.SOLVERS.items():
        est = set(spec.estimator_class().get_params())
        if spec.solve:
            solve = set(inspect.signature(spec.solve_function).parameters) - {"X", "y", "qid", "G"}
            assert set(accepted_params(spec)) == est & solve, name
        else:
            assert set(accepted_params(spec)) == est, name


# ----------------------------------------------------------------------------------- a new user's first hour
def test_fit_without_output_warns_that_the_model_is_not_saved(data, capsys):
    _, test, _ = data
    assert main(["fit", "ranksvm", str(test), "-p", "C=0.001"]) == 0
    assert "no -o/--output given" in capsys.readouterr().err


def test_unknown_param_lists_the_valid_names(data, capsys):
    _, test, _ = data
    code, err = _error(capsys, ["fit", "ranksvm", test, "-p", "alpah=1", "-o", "never.npz"])
    assert code == 2 and "'alpah'" in err and "-p accepts: C, coef0, degree, gamma" in err
    code, err = _error(capsys, ["verify", "ranknet", "-p", "foo=1"])
    assert code == 2 and "alpha" in err and "sigma" in err
    if HAS_LIGHTGBM:
        code, err = _error(capsys, ["fit", "lambdamart", test, "-p", "leaves=3"])
        assert code == 2 and "num_leaves" in err


@pytest.mark.parametrize("solver", ["mlr", "labelrank", "lambdarank"])
def test_verify_mlr_and_labelrank_say_they_are_not_supported(capsys, solver):
    code, err = _error(capsys, ["verify", solver])
    assert code == 2 and f"verify does not support {solver}" in err and "qid" not in err
    assert "domination, ranksvm, ranknet" in err


@pytest.mark.slow
def test_demo_runs_every_solver_or_says_what_is_skipped(capsys, monkeypatch):
    """Every registered solver is in the demo (LambdaMART when LightGBM is installed, else named as skipped)."""
    from cyrank.cli import demo_names

    rankers, others = demo_names()
    assert set(rankers) | set(others) == set(_registry.SOLVERS)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("cvxpy", "lightgbm") else real(name, *a))
    assert main(["demo", "--solvers", "lambdarank,lambdamart,labelrank"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    assert rows["lambdarank"][3] == "True" and "labelrank" in rows and "zero_one" in out
    assert "skipped: lambdamart (LightGBM is not installed" in out


def test_eval_and_predict_have_no_verbose_flag():
    """-v promised per-iteration lines that eval and predict never print: the flag is gone there."""
    parser = build_parser()
    for argv in (["eval", "d.svm", "--scores", "s.txt", "-v"], ["predict", "m.npz", "d.svm", "-v"]):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
    assert parser.parse_args(["fit", "ranksvm", "d.svm", "-v"]).verbose == 1


def test_help_has_no_rest_markup():
    parser = build_parser()
    texts = [parser.format_help()]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    texts += [p.format_help() for p in sub.choices.values()]
    for text in texts:
        assert "``" not in text and ":func:" not in text and ":class:" not in text


@pytest.mark.slow
@pytest.mark.skipif(not HAS_LIGHTGBM, reason="lightgbm is not installed")
def test_fit_lambdamart_verbose_prints_rounds(data, tmp_path, capsys):
    _, test, valid = data
    assert main(["fit", "lambdamart", str(test), "-o", str(tmp_path / "m.npz"), "-p", "n_estimators=3", "-v"]) == 0
    quiet_free = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(("lambdamart:", "model"))]
    assert len(quiet_free) >= 3  # one line per round
    assert main(["fit", "lambdamart", str(test), "-o", str(tmp_path / "m.npz"), "-p", "n_estimators=3",
                 "--valid", str(valid), "-v"]) == 0
    assert capsys.readouterr().out.count("valid_0 ndcg@10") >= 3  # LightGBM's name of the first eval_set


@pytest.mark.slow
def test_fit_valid_file_enables_early_stopping(data, tmp_path, capsys):
    d, test, valid = data
    model = tmp_path / "m.npz"
    assert main(["fit", "lambdarank", str(test), "--valid", str(valid), "-p", "early_stopping_rounds=1",
                 "-p", "max_iter=30", "-o", str(model)]) == 0
    est = load_model(model)
    assert est.early_stopping_rounds == 1 and len(est.history_["eval"]) >= 1
    X, y, qid = load_lightgbm_rank("test")
    ref = _registry.get("lambdarank").make(early_stopping_rounds=1, max_iter=30)
    keep = np.isin(qid, np.unique(qid)[:20])
    ref.fit(X, y, qid=qid, eval_set=(X[keep], y[keep], qid[keep]))
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    capsys.readouterr()
    code, err = _error(capsys, ["fit", "lambdarank", test, "-p", "early_stopping_rounds=2"])
    assert code == 2 and "add --valid FILE" in err
    code, err = _error(capsys, ["fit", "ranksvm", test, "--valid", valid])
    assert code == 2 and "ranksvm does not use a validation set" in err and "lambdarank" in err
    wide = tmp_path / "wide.svm"
    wide.write_text("1 qid:1 301:1\n0 qid:1 1:1\n")
    code, err = _error(capsys, ["fit", "lambdarank", test, "--valid", wide])
    assert code == 2 and "beyond the 300 features of the training file" in err
    if HAS_LIGHTGBM:
        assert main(["fit", "lambdamart", str(test), "--valid", str(valid), "-p", "early_stopping_rounds=2",
                     "-p", "n_estimators=40", "-o", str(model)]) == 0
        assert load_model(model).best_iteration_ <= 40


def test_threads_zero_message_names_the_option(data, capsys):
    _, test, _ = data
    code, err = _error(capsys, ["fit", "ranksvm", test, "-t", "0"])
    assert code == 2 and "-t/--threads must be" in err and "n_jobs" not in err


def test_scores_errors_name_the_file(data, tmp_path, capsys):
    _, test, _ = data
    cases = {"garbage.txt": ("abc\n" * 768, "not a score file"), "nan.txt": ("1\n" * 767 + "nan\n", "finite"),
             "two.txt": ("1 2\n" * 768, "2 numbers per line"), "empty.txt": ("", "0 scores but")}
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        code, err = _error(capsys, ["eval", test, "--scores", tmp_path / name])
        assert code == 2 and f"--scores {tmp_path / name}" in err and message in err, err
    code, err = _error(capsys, ["eval", test, "--scores", tmp_path / "missing.txt"])
    assert code == 2 and "missing.txt" in err


def test_param_eval_set_points_to_valid(data, capsys):
    _, test, _ = data
    code, err = _error(capsys, ["fit", "lambdarank", test, "-p", "eval_set=abc"])
    assert code == 2 and "--valid FILE" in err


# ------------------------------------------------------------------------------------------------- messages
def test_eval_prints_the_gain_tie_and_empty_rules(data, capsys):
    d, test, _ = data
    np.savetxt(d / "s.txt", np.arange(768.0))
    assert main(["eval", str(test), "--scores", str(d / "s.txt"), "-m", "ndcg@10", "-m", "map"]) == 0
    out = capsys.readouterr().out
    rules = out.split("rules")[1]
    assert "exponential gain 2**y - 1" in rules and "trec_eval" in rules  # gain, and the linear one named
    assert "ties pessimistic" in rules and "left out of the mean" in rules  # tie rule, empty-query rule
    assert "map: average precision" in rules


@pytest.mark.slow
def test_cli_errors_are_one_line_without_traceback(data, tmp_path, capsys, monkeypatch):
    """ValueError/TypeError/OSError and foreign library errors are one stderr line with exit status 2; --debug
    shows the traceback."""
    _, test, _ = data
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not a zip")
    for argv in (["predict", tmp_path / "bad.npz", test], ["eval", test, "--model", tmp_path / "missing.npz"],
                 ["fit", "ranksvm", tmp_path / "missing.svm", "-o", "m.npz"], ["fit", "ranksvm", test, "-p", "C=-1", "-o", "m.npz"],
                 ["eval", test, "--scores", tmp_path / "x.txt", "-m", "ndcg@99999999999999999999"]):
        code, err = _error(capsys, argv)
        assert code == 2 and err.count("\n") == 1 and err.startswith(f"cyrank {argv[0]}: error: ")

    class ForeignError(Exception):  # e.g. lightgbm.basic.LightGBMError
        pass

    def boom(*args, **kwargs):
        raise ForeignError("library says no")

    monkeypatch.setattr("cyrank.cli.report_fit", boom)
    code, err = _error(capsys, ["fit", "ranksvm", test])
    assert code == 2 and "ForeignError: library says no" in err and "--debug" in err
    with pytest.raises(ForeignError):
        main(["--debug", "fit", "ranksvm", str(test)])
    if HAS_LIGHTGBM:  # the audit's LightGBM reproducers
        two = tmp_path / "two.svm"
        two.write_text("1 qid:1 1:1\n0 qid:1 2:1\n")
        for argv in (["fit", "lambdamart", test, "-p", "num_leaves=1e6", "-p", "n_estimators=2"],
                     ["fit", "lambdamart", test, "-p", "min_child_samples=100000", "-p", "n_estimators=2"],
                     ["fit", "lambdamart", two]):
            code, err = _error(capsys, argv)
            assert code in (0, 2) and "Traceback" not in err


# --------------------------------------------------------------------------------------------------- memory
@pytest.mark.slow
def test_declared_feature_count_does_not_drive_dense_allocations(tmp_path, capsys):
    """A 31-byte file naming feature 2**26 took 7-8 GiB in fit ranksvm and 24 GiB in fit lambdamart; now it is
    refused before any fit, naming the line, and the process stays small."""
    (tmp_path / "wide.svm").write_text("1 qid:1 1:1\n0 qid:1 67108864:1\n")
    (tmp_path / "wide_classes.svm").write_text("1 1:1\n0 67108864:1\n")
    runs = [("ranksvm", "wide.svm"), ("mlr", "wide_classes.svm")] + ([("lambdamart", "wide.svm")] if HAS_LIGHTGBM
                                                                     else [])
    code = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, resource.RLIM_INFINITY))  # old code: MemoryError, not 24 GiB
from cyrank.cli import main
for solver, name in {runs!r}:
    rc = main(["fit", solver, name, "-o", "m.npz"])
    print(rc, file=sys.stderr)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
    r = _run(code, tmp_path)
    lines = r.stderr.splitlines()
    assert len(lines) == 2 * len(runs), r.stderr
    for (solver, name), message, rc in zip(runs, lines[::2], lines[1::2]):
        assert rc == "2" and f"{name}, line 2: a feature index implies 67108864 features" in message, message
        assert "--max-features 67108864" in message
    assert int(r.stdout) < 600 * 1024  # interpreter + numpy/scipy (+ LightGBM); one dense 2**26 vector is 512 MiB
    assert main(["fit", "ranksvm", str(tmp_path / "wide.svm"), "--max-features", "0", "-o", "m.npz"]) == 2
    assert "--max-features must be" in capsys.readouterr().err


def test_multilabel_label_ids_are_bounded(tmp_path, capsys):
    """Label 1e9 in a two-line file asked for 14.9 GiB (1e8 through the CLI: 8.9 PiB); now a ValueError naming the
    line, before anything of n_labels size is allocated."""
    import tracemalloc

    path = tmp_path / "ml.svm"
    path.write_text("0,3 1:1\n1,1000000000 2:1\n")
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"line 2: label 1000000000 implies 1000000001 labels, more than "
                                             r"max_labels=16384"):
            load_svmlight_multilabel(path)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    with pytest.raises(ValueError, match="line 2: label 1000000000 is out of range for n_labels=4"):
        load_svmlight_multilabel(path, n_labels=4)
    path.write_text("0,3 1:1\n1,100000000 2:1\n")
    code, err = _error(capsys, ["fit", "labelrank", path, "-o", tmp_path / "m.npz"])
    assert code == 2 and "line 2: label 100000000" in err
    path.write_text("0,3 1:1\n1,20000 2:1\n")
    X, Y = load_svmlight_multilabel(path, max_labels=20001)  # raised on purpose
    assert Y.shape == (2, 20001)


@pytest.mark.skipif(not HAS_LIGHTGBM, reason="lightgbm is not installed")
def test_fit_lambdamart_passes_lightgbm_parameters(data, tmp_path, capsys):
    """-p accepts any name for LambdaMART (its __init__ takes LightGBM's **kwargs) and the model keeps it; a
    solver without **kwargs still refuses an unknown name."""
    _, test, _ = data
    model = tmp_path / "m.npz"
    assert main(["fit", "lambdamart", str(test), "-o", str(model), "-p", "n_estimators=2", "-p", "max_depth=2"]) == 0
    assert load_model(model).get_params()["max_depth"] == 2
    code, err = _error(capsys, ["fit", "ranksvm", test, "-p", "max_depth=2"])
    assert code == 2 and "ranksvm has no parameter 'max_depth'" in err
