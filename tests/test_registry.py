"""The one table of estimators (cyrank._registry.TABLE) and what is derived from it agree: the classes it names are
where it says, cyrank.ESTIMATORS / __all__ / the model-file classes / the command line's solvers come from it,
every estimator round-trips through a model file, every reference solver receives the estimator's parameters,
and the estimator base (cyrank._base.SolverEstimator) passes every parameter to the functional layer."""
import importlib.util
import inspect
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

import cyrank
from cyrank import _registry
from cyrank._base import SolverEstimator
from cyrank.datasets import make_ranking
from cyrank.io import ModelRecord, load_model, register_model, registered_models, save_model

SPECS = list(_registry.TABLE)
NAMES = [spec.class_name for spec in SPECS]
HAS_LIGHTGBM = importlib.util.find_spec("lightgbm") is not None


def test_every_class_is_where_the_table_says():
    assert len(set(NAMES)) == len(NAMES)
    for spec in SPECS:
        cls = spec.estimator_class
        assert (cls.__module__, cls.__qualname__) == (spec.module, spec.class_name)
        assert issubclass(cls, BaseEstimator)


def test_every_estimator_of_the_package_is_in_the_table():
    """Every public scikit-learn estimator class the package defines is in the table, and none of them reached
    the third-party registry of register_model (which would load only after its module was imported)."""
    import pkgutil

    defined = set()
    for info in pkgutil.walk_packages(cyrank.__path__, "cyrank."):
        if info.name.rpartition(".")[2] in ("__main__",):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == info.name and not name.startswith("_") \
                    and issubclass(obj, BaseEstimator) and "fit" in dir(obj) and not inspect.isabstract(obj) \
                    and name in getattr(module, "__all__", [name]):
                defined.add(name)
    assert defined == set(NAMES)
    assert not [c for c in cyrank.io._THIRD_PARTY_MODELS.values() if c.__module__.startswith("cyrank.")]


def test_what_is_derived_from_the_table():
    assert cyrank.ESTIMATORS == {spec.class_name: spec.module for spec in SPECS}
    for spec in SPECS:
        assert getattr(cyrank, spec.class_name) is spec.estimator_class
        assert spec.class_name in dir(cyrank)
        assert (spec.class_name in cyrank.__all__) == (spec.extra != "dask")
    assert set(NAMES) <= set(registered_models())
    assert _registry.SOLVERS == {spec.name: spec for spec in SPECS if spec.name}
    assert list(_registry.SOLVERS) == ["domination", "ranksvm", "ranknet", "lambdarank", "lambdamart", "listnet",
                                       "listmle", "listwisemart", "mlr", "labelrank"]
    with pytest.raises(ValueError, match="unknown solver 'svm'; available: domination, ranksvm"):
        _registry.get("svm")


def test_command_line_arguments_of_the_table():
    """solve_only names arguments of the family's solve that the estimator does not have (so -p refuses exactly
    them), and the parameters -p accepts are the estimator's."""
    from cyrank.cli import accepted_params

    for name, spec in _registry.SOLVERS.items():
        own = set(spec.estimator_class._get_param_names())
        if not spec.solve:
            assert not spec.solve_only and set(accepted_params(spec)) == own, name
            continue
        solve = set(inspect.signature(spec.solve_function).parameters)
        assert set(spec.solve_only) <= solve - own, name
        assert set(accepted_params(spec)) <= own, name


# ------------------------------------------------------------------------------------------- reference solvers
# Non-default values of every reference parameter: a parameter the table failed to pass on would change the optimum.
REFERENCE_CASES = [
    ("domination", {"penalty": "elasticnet", "alpha": 0.7, "l1_ratio": 0.3, "binary": True, "tol": 1e-10,
                    "max_iter": 20000}),
    ("domination", {"penalty": "l2", "alpha": 0.4, "group_by_query": False, "tol": 1e-10}),
    ("ranksvm", {"C": 0.3, "tol": 1e-10}),
    ("ranksvm", {"C": 0.7, "kernel": "poly", "degree": 2, "gamma": 0.5, "coef0": 2.0, "tol": 1e-10}),
    ("ranknet", {"sigma": 2.0, "penalty": "l1", "alpha": 0.4, "tol": 1e-10}),
    ("ranknet", {"sigma": 0.5, "penalty": "elasticnet", "alpha": 0.9, "l1_ratio": 0.2, "tol": 1e-10}),
    ("listnet", {"target": "xendcg", "random_state": 3, "penalty": "elasticnet", "alpha": 0.6, "l1_ratio": 0.4,
                 "tol": 1e-10}),
    ("listmle", {"ties": "breslow", "top_k": 3, "penalty": "l1", "alpha": 0.3, "tol": 1e-10}),
]


def test_reference_params_are_the_shared_names():
    """The reference parameters are those the reference solve and the estimator share (the table no longer spells
    them out), and cover at least the parameters the table used to copy."""
    pytest.importorskip("cvxpy")
    before = {"domination": {"penalty", "alpha", "l1_ratio", "binary", "group_by_query"},
              "ranksvm": {"C", "loss", "kernel", "gamma", "degree", "coef0"},
              "ranknet": {"sigma", "penalty", "alpha", "l1_ratio"},
              "listnet": {"target", "penalty", "alpha", "l1_ratio", "random_state"},
              "listmle": {"ties", "top_k", "penalty", "alpha", "l1_ratio"}}
    for name, spec in _registry.SOLVERS.items():
        if not spec.reference:
            assert spec.reference_params == ()
            continue
        names = set(spec.reference_params)
        shared = set(inspect.signature(spec.reference_function).parameters) & set(spec.make().get_params())
        assert names == shared and before[name] <= names, name


@pytest.mark.parametrize("name, params", REFERENCE_CASES)
def test_reference_solve_receives_the_estimator_parameters(name, params):
    pytest.importorskip("cvxpy")
    spec = _registry.get(name)
    X, y, qid = make_ranking(4, 36, 4, 3, random_state=2)
    est = spec.make(**params).fit(X, y, qid=qid)
    sol = spec.solve_reference(est, X, y, qid)
    assert sol.status == "optimal"
    assert abs(est.objective_ - sol.objective) <= 1e-6 * max(1.0, abs(sol.objective))


# ------------------------------------------------------------------------------------------- model files
def _fitted(spec, rng):
    """(a fitted estimator of ``spec``'s class, the data to predict or transform with) on a small problem."""
    X, y, qid = make_ranking(5, 60, 4, 3, random_state=4)
    name = spec.class_name
    if name == "MLR":
        return spec.make(C=1.0).fit(X[:24], np.repeat([0, 1, 2], 8)), X
    if name == "LabelRankBoost":
        return spec.make(alpha=0.5).fit(X, rng.integers(0, 2, size=(X.shape[0], 4))), X
    if name == "LambdaMART":
        return spec.make(n_estimators=3, min_child_samples=2).fit(X, y, qid=qid), X
    return spec.make().fit(X, y, qid=qid), X


@pytest.mark.parametrize("spec", [pytest.param(s, marks=[pytest.mark.slow] if s.extra == "lightgbm" else [])
                                  for s in SPECS if s.extra != "dask"], ids=lambda s: s.class_name)
def test_every_estimator_round_trips(spec, tmp_path, rng):
    if spec.extra == "lightgbm" and not HAS_LIGHTGBM:
        pytest.skip("LightGBM is not installed")
    est, X = _fitted(spec, rng)
    path = tmp_path / "m.npz"
    save_model(est, path)
    loaded = load_model(path)
    assert type(loaded) is type(est) and loaded.get_params() == est.get_params()
    out = "transform" if spec.class_name == "MLR" else "predict"
    np.testing.assert_array_equal(getattr(loaded, out)(X), getattr(est, out)(X))
    # the record is the file: saving it again gives an equal model
    save_model(ModelRecord.of(est), tmp_path / "r.npz")
    np.testing.assert_array_equal(getattr(load_model(tmp_path / "r.npz"), out)(X), getattr(est, out)(X))


@pytest.mark.parametrize("spec", [s for s in SPECS if s.extra == "dask"], ids=lambda s: s.class_name)
def test_dask_estimators_load(spec, tmp_path, ranking_data, rng):
    """A Dask estimator's model file loads as that class (unfitted, and fitted: the attributes of the plain
    single-machine fit its parent class makes, which a Dask fit reproduces)."""
    X, y, qid = ranking_data
    cls = spec.estimator_class
    single = next(c for c in cls.__mro__[1:] if c.__name__ in cyrank.ESTIMATORS)
    assert single is getattr(cyrank, single.__name__) and single.__name__ in cyrank.__all__
    params, data = {"max_iter": 7}, (X, y, qid)
    if single is cyrank.LabelRankBoost:
        params["alpha"] = 0.5  # the distributed fit needs a strongly convex objective
        data = (X, rng.integers(0, 2, size=(X.shape[0], 4)))
    save_model(cls(**params), tmp_path / "u.npz")
    assert type(load_model(tmp_path / "u.npz")) is cls and load_model(tmp_path / "u.npz").get_params() == \
        cls(**params).get_params()
    with warnings.catch_warnings():  # max_iter=7 may stop some of them short
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = single(**params).fit(*data)
    record = ModelRecord.of(fitted)
    save_model(ModelRecord(spec.class_name, record.params, record.attributes), tmp_path / "f.npz")
    loaded = load_model(tmp_path / "f.npz")
    assert type(loaded) is cls
    np.testing.assert_array_equal(loaded.predict(X), fitted.predict(X))


@pytest.mark.slow
def test_a_record_is_saved_without_scikit_learn(tmp_path, ranking_data):
    """ModelRecord + save_model (the command line's path) never import scikit-learn; the file loads as the
    estimator."""
    X, y, qid = ranking_data
    np.savez(tmp_path / "data.npz", X=X, y=y, qid=qid)
    path = tmp_path / "m.npz"
    code = ("import sys\nimport numpy as np\nimport cyrank.lambdarank\n"
            "from cyrank.io import ModelRecord, save_model\nd = np.load('data.npz')\n"
            "result = cyrank.lambdarank.solve(d['X'], d['y'], d['qid'], alpha=0.3)\n"
            "save_model(ModelRecord('RankNet', {'alpha': 0.3}, result.fitted_attributes()), 'm.npz')\n"
            "print('sklearn' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(cyrank.__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["False"]
    model, est = load_model(path), cyrank.RankNet(alpha=0.3).fit(X, y, qid)
    assert type(model) is cyrank.RankNet and model.get_params() == est.get_params()
    np.testing.assert_array_equal(model.coef_, est.coef_)
    assert model.objective_ == est.objective_ and model.n_iter_ == est.n_iter_


def test_records_that_cannot_be_loaded_are_refused(tmp_path):
    with pytest.raises(TypeError, match="'Nope' is neither one of cyrank's estimators nor registered"):
        save_model(ModelRecord("Nope", {}, {}), tmp_path / "m.npz")
    with pytest.raises(ValueError, match="must end in '_'"):
        save_model(ModelRecord("RankNet", {}, {"coef": np.ones(2)}), tmp_path / "m.npz")
    with pytest.raises(ValueError, match="must end in '_'"):
        save_model(ModelRecord("RankNet", {}, {"_secret_": 1}), tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_register_model_on_cyrank_classes():
    """cyrank's own classes need no registration: the decorator returns them unchanged (it is kept for cyrank.dask
    and third-party code) and refuses a different class under one of their names."""
    assert register_model(cyrank.RankNet) is cyrank.RankNet
    assert "RankNet" not in cyrank.io._THIRD_PARTY_MODELS

    class RankNet(BaseEstimator):
        pass

    with pytest.raises(ValueError, match="'RankNet' is already registered .cyrank's own"):
        register_model(RankNet)
    with pytest.raises(TypeError, match="not registered"):
        save_model(RankNet(), "never.npz")


# ------------------------------------------------------------------------------------------- estimator base
BASED = [spec for spec in SPECS if issubclass(spec.estimator_class, SolverEstimator) and spec.extra != "dask"]


def test_the_migrated_estimators_use_the_base():
    assert {"DominationRank", "RankNet", "LambdaRank", "MLR", "LambdaMART", "RankSVM", "LabelRankBoost"} \
        <= {s.class_name for s in BASED}


@pytest.mark.parametrize("spec", BASED, ids=lambda s: s.class_name)
def test_every_parameter_reaches_the_functional_layer(spec):
    """Each get_params name is an argument of the family's solve, or declared estimator-only; the functional check
    names only parameters; _check_params returns exactly what the functional check returns."""
    cls = spec.estimator_class
    own = set(cls._get_param_names())
    est = cls()
    if cls._solve is not None:
        solve = set(inspect.signature(cls._solve).parameters)
        assert own - set(cls._estimator_only_params) <= solve, own - solve
        assert set(cls._estimator_only_params) <= own
        assert cls._warm_starts == ("coef_init" in solve and "warm_start" in own)
        assert set(est._solver_params()) == own - set(cls._estimator_only_params)
    checked = inspect.signature(cls._check).parameters
    assert set(checked) <= own
    expected = cls._check(**{k: v for k, v in est._solver_params().items() if k in checked})
    assert repr(est._check_params()) == repr(expected)  # repr: LabelRankBoost's check returns a Penalty object


@pytest.mark.parametrize("name, params, match", [
    ("DominationRank", {"max_iter": 0}, "max_iter"), ("RankNet", {"penalty": "l0"}, "penalty"),
    ("RankNet", {"sigma": -1.0}, "sigma"), ("LambdaRank", {"ties": "average", "metric": "err@5"}, "ties"),
    ("LambdaRank", {"early_stopping_rounds": 0}, "early_stopping_rounds"), ("MLR", {"regularizer": "l7"},
                                                                           "regularizer"),
    ("MLR", {"epsilon": -1.0}, "epsilon"), ("LambdaMART", {"num_leaves": 1}, "num_leaves"),
])
def test_check_params_refuses_what_the_functional_layer_refuses(name, params, match):
    with pytest.raises(ValueError, match=match):
        getattr(cyrank, name)(**params)._check_params()


def test_warm_start_goes_through_coef_init(ranking_data, monkeypatch):
    """With warm_start the second fit receives the first fit's coef_ as coef_init (and None without)."""
    X, y, qid = ranking_data
    seen = []
    real = cyrank.DominationRank._solve

    def spy(*args, coef_init=None, **kwargs):
        seen.append(None if coef_init is None else np.array(coef_init))
        return real(*args, coef_init=coef_init, **kwargs)

    monkeypatch.setattr(cyrank.DominationRank, "_solve", staticmethod(spy))
    est = cyrank.DominationRank(warm_start=True).fit(X, y, qid)
    first = est.coef_.copy()
    est.set_params(alpha=2.0).fit(X, y, qid)
    cyrank.DominationRank().fit(X, y, qid)
    assert seen[0] is None and seen[2] is None
    np.testing.assert_array_equal(seen[1], first)


def test_mlr_epsilon_is_tol(rng):
    X = rng.normal(size=(24, 3))
    y = np.repeat([0, 1, 2], 8)
    with pytest.warns(FutureWarning, match="epsilon was renamed tol"):
        old = cyrank.MLR(epsilon=0.05).fit(X, y)
    new = cyrank.MLR(tol=0.05).fit(X, y)
    np.testing.assert_array_equal(old.W_, new.W_)
    assert cyrank.MLR(epsilon=0.05)._solver_params()["tol"] == 0.05
    assert "epsilon" not in cyrank.MLR()._solver_params()
