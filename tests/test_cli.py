"""The cyrank command: every subcommand end to end on small files, and its errors."""
import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import cyrank
from cyrank import _registry, metrics
from cyrank.cli import main, parse_params, small_problem
from cyrank.datasets import load_lightgbm_rank
from cyrank.io import dump_svmlight, load_model

SOLVERS = [name for name, spec in _registry.SOLVERS.items() if spec.reference]  # those verify can check
DEMO = [name for name, spec in _registry.SOLVERS.items() if spec.demo]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The embedded test split written as an SVMlight file, and a seeded score file for it."""
    d = tmp_path_factory.mktemp("cli")
    X, y, qid = load_lightgbm_rank("test")
    data = d / "test.svm"
    dump_svmlight(X, y, data, qid=qid)
    scores = np.random.default_rng(1).integers(0, 5, size=y.shape[0]).astype(float)  # many ties
    np.savetxt(d / "scores.txt", scores)
    return d, data, (X, y, qid, scores)


def test_eval_scores_equals_metrics(files, capsys):
    d, data, (X, y, qid, scores) = files
    assert main(["eval", str(data), "--scores", str(d / "scores.txt"), "-m", "ndcg@5", "-m", "map", "-m", "pairacc"]) == 0
    out = capsys.readouterr().out
    for label, value in [
        ("ndcg@5", metrics.ndcg_score(y, scores, qid, k=5)),
        ("map", metrics.average_precision(y, scores, qid)),
        ("pairacc", metrics.pairwise_accuracy(y, scores, qid)),
    ]:
        line = next(l for l in out.splitlines() if l.startswith(label + " "))
        assert float(line.split()[1]) == pytest.approx(value, abs=5e-5)


def test_parse_params():
    assert parse_params(["alpha=0.5", "penalty=l1", "max_iter=10", "binary=true", "feature_induction=none"]) == {
        "alpha": 0.5, "penalty": "l1", "max_iter": 10, "binary": True, "feature_induction": None}
    with pytest.raises(ValueError, match="name=value"):
        parse_params(["alpha"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["verify", "no-such-solver"], "unknown solver"),
        (["eval", "missing-file.svm", "--scores", "x.txt"], "missing-file.svm"),
        (["eval", "{data}"], "exactly one of --model and --scores"),
        (["eval", "{data}", "--scores", "{short}"], "scores but"),
        (["eval", "{data}", "--scores", "{scores}", "-m", "foo@3"], "unknown metric"),
        (["demo", "--solvers", "ranksvm,nosuch"], "not in the demo"),
    ],
)
def test_errors_are_clear(files, capsys, argv, message):
    d, data, _ = files
    np.savetxt(d / "short.txt", np.zeros(3))
    argv = [a.format(data=data, short=d / "short.txt", scores=d / "scores.txt") for a in argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_small_problem_is_a_real_subproblem():
    X, y, qid = load_lightgbm_rank("train")
    Xs, ys, qs = small_problem(X, y, qid, n_queries=5, n_features=4)
    assert Xs.shape[1] == 4 and np.unique(qs).size == 5
    for q in np.unique(qs):  # every chosen query has a preference pair, and its rows are all there
        assert np.unique(ys[qs == q]).size > 1
        assert np.sum(qs == q) == np.sum(qid == q)


@pytest.mark.parametrize("solver", SOLVERS)
def test_fit_predict_eval_verify(files, tmp_path, capsys, solver):
    d, data, (X, y, qid, _) = files
    model = tmp_path / "m.npz"
    spec = _registry.get(solver)
    params = [f"{k}={v}" for k, v in spec.small_params.items()]
    assert main(["fit", solver, str(data), "-o", str(model), *sum([["-p", p] for p in params], [])]) == 0
    est = load_model(model)
    assert main(["predict", str(model), str(data), "-o", str(tmp_path / "s.txt")]) == 0
    s = np.loadtxt(tmp_path / "s.txt")
    np.testing.assert_array_equal(s, est.predict(X))
    assert main(["eval", str(data), "--model", str(model), "-m", "ndcg@10"]) == 0
    capsys.readouterr()
    assert main(["verify", solver, "--generate", "30", "4", "3"]) == 0
    out = capsys.readouterr().out
    assert "reference (cvxpy)" in out and "relative objective gap" in out


@pytest.mark.slow
def test_module_entry_point(tmp_path):
    # the package these tests import (installed, or built in place), not whatever the working directory holds
    env = {**os.environ, "PYTHONPATH": str(Path(cyrank.__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-m", "cyrank", "--help"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0 and "demo" in r.stdout and "verify" in r.stdout


@pytest.mark.slow
def test_demo_trains_every_solver_and_matches_the_reference(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    table = {}
    for line in out.splitlines():  # the first row of each name: the ranking table's "random scores"
        if line.split():
            table.setdefault(line.split()[0], line.split())
    random_ndcg = float(table["random"][5])  # "random scores", fit_s, -, -, ndcg@10
    labelrank_random = next(line.split() for line in out.split("zero_one")[1].splitlines() if line.startswith("random"))
    trained = [name for name in DEMO if name != "lambdamart" or importlib.util.find_spec("lightgbm")]
    for name in trained:  # every ranker beats random scores on the test set and converged
        row = table[name]
        assert row[3] == "True" and float(row[4]) > random_ndcg + 0.05
    gaps = [float(line.split("= ")[1].split()[0]) for line in out.splitlines()
            if line.startswith("relative objective gap")]
    assert len(gaps) == len(SOLVERS) + 2  # the convex rankers, MLR, LabelRankBoost
    assert max(gaps[:-2] + gaps[-1:]) < 1e-6  # rankers and LabelRankBoost: solved to tolerance
    assert gaps[-2] < 1e-4        # MLR: certified gap C * epsilon = 1e-4 (relative to f >= 1)
    assert float(table["labelrank"][5]) < float(labelrank_random[6])  # disagreement error below random scores
    euclid = float(table["euclidean"][-1].rstrip("%"))
    mlr = [float(row[-1].rstrip("%")) for key, row in table.items() if key.startswith("mlr-")]
    assert len(mlr) == 3 and max(mlr) < euclid  # the learned metric beats the Euclidean one on Wine


@pytest.mark.slow
def test_demo_without_cvxpy_skips_the_reference(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cvxpy" else real(name, *a))
    assert main(["demo", "--solvers", "ranksvm,mlr"]) == 0
    out = capsys.readouterr().out
    assert "ranksvm" in out and "mlr-auc" in out
    assert "relative objective gap" not in out and "cvxpy is not installed" in out


# ------------------------------------------------------------------------------------------------ issue 14
CLEAN_IMPORT = """
import sys
import cyrank, cyrank.cli
cyrank.cli.build_parser()
print(sorted(m for m in ("sklearn", "cvxpy", "lightgbm", "scipy.optimize") if m in sys.modules))
"""


def _run_clean(code, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(cyrank.__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip().splitlines()


@pytest.mark.slow
def test_importing_cyrank_and_its_cli_leaves_sklearn_and_cvxpy_out(tmp_path):
    assert _run_clean(CLEAN_IMPORT, tmp_path)[-1] == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["ranksvm", "domination", "ranknet", "lambdarank"])
def test_fit_runs_the_functional_layer_without_sklearn(files, tmp_path, solver):
    _, data, _ = files
    code = (f"import sys\nfrom cyrank.cli import main\n"
            f"assert main(['fit', '{solver}', r'{data}', '-o', r'{tmp_path / 'm.npz'}', '-p', 'max_iter=5', "
            f"'-t', '1']) == 0\nprint('sklearn' in sys.modules, 'cvxpy' in sys.modules)")
    assert _run_clean(code, tmp_path)[-1] == "False False"


@pytest.mark.slow
@pytest.mark.parametrize("solver, params", [
    ("ranksvm", {"C": 1e-3}), ("domination", {"penalty": "l1", "alpha": 3.0}), ("ranknet", {"alpha": 2.0}),
    ("lambdarank", {"metric": "err@5", "max_iter": 20}),
])
def test_fit_model_equals_the_estimators(files, tmp_path, solver, params):
    """The command line's model file (written from the functional result) holds the estimator's model."""
    _, data, (X, y, qid, _) = files
    model = tmp_path / "m.npz"
    argv = ["fit", solver, str(data), "-o", str(model)] + sum([["-p", f"{k}={v}"] for k, v in params.items()], [])
    assert main(argv) == 0
    loaded = load_model(model)
    est = _registry.get(solver).make(**params)
    with warnings.catch_warnings():  # LambdaRank stops on max_iter here: both report it
        warnings.simplefilter("ignore")
        est.fit(X, y, qid=qid)
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    assert loaded.objective_ == est.objective_ and loaded.n_iter_ == est.n_iter_
    assert loaded.get_params()["verbose"] == 0 and all(loaded.get_params()[k] == v for k, v in params.items())


def test_threads_give_the_same_model(files, tmp_path, capsys):
    _, data, _ = files
    for t in ("1", "2"):
        assert main(["fit", "ranksvm", str(data), "-o", str(tmp_path / f"m{t}.npz"), "-t", t, "-p", "C=0.01"]) == 0
    np.testing.assert_array_equal(load_model(tmp_path / "m1.npz").coef_, load_model(tmp_path / "m2.npz").coef_)
    assert load_model(tmp_path / "m2.npz").n_jobs == 2
    assert main(["fit", "ranksvm", str(data), "-t", "0"]) == 2
    assert "-t/--threads must be" in capsys.readouterr().err


@pytest.mark.slow
def test_fit_mlr_on_a_class_label_file(tmp_path, capsys):
    from sklearn.datasets import load_wine

    from cyrank import MLR

    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    dump_svmlight(X, y.astype(float), tmp_path / "wine.svm")
    assert main(["fit", "mlr", str(tmp_path / "wine.svm"), "-o", str(tmp_path / "m.npz"), "-p", "C=1",
                 "-p", "loss=map"]) == 0
    loaded = load_model(tmp_path / "m.npz")
    est = MLR(C=1.0, loss="map").fit(X, y)
    np.testing.assert_allclose(loaded.W_, est.W_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(loaded.classes_, [0.0, 1.0, 2.0])
    dump_svmlight(X, y.astype(float), tmp_path / "q.svm", qid=np.arange(y.size) % 3)
    assert main(["fit", "mlr", str(tmp_path / "q.svm")]) == 2
    assert "class labels" in capsys.readouterr().err


def test_fit_lambdamart(files, tmp_path):
    pytest.importorskip("lightgbm")
    _, data, (X, y, qid, _) = files
    model = tmp_path / "m.npz"
    assert main(["fit", "lambdamart", str(data), "-o", str(model), "-t", "1", "-p", "n_estimators=5"]) == 0
    est = load_model(model)
    assert est.n_estimators == 5 and est.n_jobs == 1
    assert main(["predict", str(model), str(data), "-o", str(tmp_path / "s.txt")]) == 0
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "s.txt"), est.predict(X))
