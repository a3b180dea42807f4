"""The layers of the package (kernels -> functional solvers -> estimators -> command line) import only downward,
the functional layer runs without scikit-learn, and each estimator is a thin wrapper: its fitted attributes are
the functional layer's result, value for value."""
import ast
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import cyrank
from cyrank import domination, lambdarank, mlr, ranksvm

PACKAGE = pathlib.Path(cyrank.__file__).parent
# the scikit-learn layer: estimators, their shared base, and what sits above them (cross-validation and
# many-model tools work on estimators)
UPPER = {"_base.py", "cli.py", "__main__.py", "domination/estimator.py", "ranksvm/estimator.py",
         "mlr/estimator.py", "labelrank/estimator.py", "lambdarank/estimator.py",
         "lambdarank/mart.py", "listwise/estimator.py", "model_selection.py", "many.py", "dask.py"}


def _module_imports(path):
    """(top-level imported names, names imported inside functions) of one module, as dotted strings relative to
    the package for relative imports (e.g. ".estimator", "..io")."""
    tree = ast.parse(path.read_text())
    top, nested = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names = [base] + [f"{base}.{a.name}".replace("..", ".") if node.level and not node.module else base
                              for a in node.names]
        else:
            continue
        (top if node in tree.body else nested).extend(names)
    return top, nested


def _lower_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel not in UPPER:
            yield rel, path


@pytest.mark.parametrize("rel, path", list(_lower_modules()), ids=lambda v: v if isinstance(v, str) else "")
def test_lower_layers_import_neither_sklearn_nor_estimators(rel, path):
    top, nested = _module_imports(path)
    assert not [n for n in top if n.split(".")[0] == "sklearn"], f"{rel} imports scikit-learn at module level"
    upward = [n for n in top + nested if n.endswith(("estimator", "_base", "cli"))
              and not n.endswith("_estimator")]
    if rel == "__init__.py" or rel.endswith("/__init__.py"):
        upward = [n for n in upward if n not in (".estimator",)]  # imported lazily by __getattr__, on demand
    assert not upward, f"{rel} imports an upper layer: {upward}"


FUNCTIONAL_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import cyrank
    from cyrank import domination, labelrank, lambdarank, mlr, ranksvm, metrics
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4)); y = (X[:, 0] + rng.normal(size=80) > 0).astype(float)
    qid = np.repeat(np.arange(8), 10)
    results = [domination.solve(X, y, qid), domination.solve(X, y, qid, penalty="l1", max_iter=2),
               ranksvm.solve(X, y, qid), ranksvm.solve(X, y, qid, loss="hinge", kernel="rbf", max_iter=2),
               ranksvm.solve(X, y, qid, C=10.0),
               mlr.solve(X[:30], y[:30].astype(int), max_iter=2)]
    G = labelrank.PreferenceGraphs.from_relevance(rng.integers(0, 3, size=(80, 4)))
    label_model = labelrank.solve(X, G, alpha=0.1)
    results += [label_model, labelrank.solve(X, G, solver="boost", max_iter=2)]
    results += [lambdarank.solve(X, y, qid), lambdarank.solve(X, y, qid, max_iter=1, tol=1e-12)]
    lambdarank.lambdas(y, X[:, 0], qid, metric="ndcg@10")
    metrics.ndcg_score(y, X[:, 0], qid)
    metrics.label_ranking_error(G, X @ label_model.coef.T, "domination")
    assert [r.converged for r in results] == [True, False, True, False, True, False, True, False, True, False], \
        results
    assert all(r.message for r in results if not r.converged)
    loaded = [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]
    print("sklearn" if loaded else "clean")
""")


def test_functional_layer_runs_without_sklearn(tmp_path):
    """Fits through the functional layer, converged or not, and a metric, never import scikit-learn (run in a
    fresh interpreter outside the source tree)."""
    res = subprocess.run([sys.executable, "-c", FUNCTIONAL_SCRIPT], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == "clean"


CASES = [
    (lambdarank.solve, cyrank.RankNet, {"alpha": 0.5}),
    (domination.solve, cyrank.DominationRank, {"penalty": "l1", "alpha": 0.5}),
    (domination.solve, cyrank.DominationRank, {"neg_sample": 0.5, "random_state": 3}),
    (ranksvm.solve, cyrank.RankSVM, {"C": 0.3}),
    (ranksvm.solve, cyrank.RankSVM, {"C": 0.3, "loss": "hinge", "kernel": "rbf"}),
    (mlr.solve, cyrank.MLR, {"C": 10.0}),
]


@pytest.mark.parametrize("solve, Estimator, params", CASES)
def test_estimator_attributes_are_the_functional_result(solve, Estimator, params, ranking_data):
    X, y, qid = ranking_data
    if Estimator is cyrank.MLR:
        result, est = solve(X, y.astype(int), **params), Estimator(**params).fit(X, y.astype(int))
        result.oracle_time = est.oracle_time_ = result.inner_time = est.inner_time_ = 0.0  # timings differ
    else:
        result, est = solve(X, y, qid, **params), Estimator(**params).fit(X, y, qid)
    expected = result.fitted_attributes()
    fitted = {name: value for name, value in vars(est).items() if name.endswith("_") and not name.startswith("_")}
    assert set(fitted) == set(expected)
    for name, value in expected.items():
        if isinstance(value, dict):
            for key in value:
                np.testing.assert_array_equal(fitted[name][key], value[key])
        elif value is None or isinstance(value, str):
            assert fitted[name] == value
        else:
            np.testing.assert_array_equal(fitted[name], value, err_msg=name)
    assert result.optimality == getattr(est, result.optimality_name + "_")


@pytest.mark.parametrize("solve, Estimator, params", [
    (domination.solve, cyrank.DominationRank, {"penalty": "l1", "max_iter": 2}),
    (ranksvm.solve, cyrank.RankSVM, {"max_iter": 1, "tol": 1e-12}),
    (ranksvm.solve, cyrank.RankSVM, {"loss": "hinge", "max_iter": 2, "tol": 1e-9}),
])
def test_the_estimator_warns_what_the_functional_layer_reports(solve, Estimator, params, ranking_data):
    X, y, qid = ranking_data
    result = solve(X, y, qid, **params)
    assert not result.converged and "max_iter" in result.message
    with pytest.warns(ConvergenceWarning) as record:
        Estimator(**params).fit(X, y, qid)
    assert [str(w.message) for w in record if w.category is ConvergenceWarning] == [result.message]


def test_label_ranking_estimator_attributes_are_the_functional_result(ranking_data, rng):
    from cyrank import labelrank

    X, _, _ = ranking_data
    G = labelrank.PreferenceGraphs.from_relevance(rng.integers(0, 3, size=(X.shape[0], 4)))
    for params in ({"alpha": 0.2}, {"solver": "boost", "max_iter": 3}):
        result = labelrank.solve(X, G, **params)
        if result.converged:
            est = cyrank.LabelRankBoost(**params).fit(X, G)
        else:
            with pytest.warns(ConvergenceWarning) as record:
                est = cyrank.LabelRankBoost(**params).fit(X, G)
            assert [str(w.message) for w in record if w.category is ConvergenceWarning] == [result.message]
        fitted = {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}
        assert set(fitted) == set(result.fitted_attributes())
        for name, value in result.fitted_attributes().items():
            np.testing.assert_array_equal(fitted[name], value, err_msg=name)
