"""The one table of cyrank's estimators: one :class:`EstimatorSpec` per class, in ``TABLE``.

Everything else that lists estimators is derived from it:

* ``cyrank.ESTIMATORS`` (class name -> defining module): ``cyrank.<Name>`` imports the class on first use;
* the classes :func:`cyrank.io.save_model` and :func:`cyrank.io.load_model` accept (:func:`model_class`; third-party
  classes are added with :func:`cyrank.io.register_model`);
* ``SOLVERS`` (command-line name -> spec): the families ``cyrank fit / verify / demo`` know, with the functional
  layer's ``solve`` that ``cyrank fit`` calls, the kind of data file it reads, the parameters of ``demo`` and
  ``verify`` and, for the convex families, the reference (cvxpy) solver.

Classes and functions are ``"module:attribute"`` strings imported on use, so ``import cyrank`` and ``cyrank --help``
stay fast and import neither scikit-learn nor ``reference`` (cvxpy).
"""
import importlib
from dataclasses import dataclass, field


def _load(path):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class EstimatorSpec:
    """One estimator class and, when ``name`` is set, the command-line solver that trains it.

    ``estimator`` is ``"module:Class"`` with the module that defines the class (model files are checked against
    it). ``extra`` names the optional dependency the class needs ("dask", "lightgbm"; "" none). ``name`` is the
    solver's name on the command line ("" for a class the command line does not train).

    The command-line fields: ``solve`` names the functional layer's ``solve(X, y, qid, **params) -> SolveResult``
    (the estimator's parameters, without scikit-learn), which ``cyrank fit`` calls ("" : ``cyrank fit`` fits the
    estimator); ``solve_only`` the arguments of that solve which are not estimator parameters (starting points,
    option objects, side arrays: a model file cannot hold them, so ``-p`` refuses them); ``data`` is "ranking"
    (label qid:N idx:val lines), "classes" (label idx:val lines, one class label per point, as MLR takes;
    solve(X, y, **params)) or "multilabel" (l1,l2,... idx:val lines, LIBSVM's multilabel sets; solve(X, Y,
    **params)); ``demo``: whether ``cyrank demo`` trains it on the embedded ranking data, with ``demo_params``.
    ``reference`` names ``solve(X, y, qid, **params) -> reference.Solution``, the exact optimum of the objective
    the estimator minimises; ``small_params`` are the parameters ``verify`` and ``demo`` use on the small
    reference problem.
    """

    estimator: str
    extra: str = ""
    name: str = ""
    summary: str = ""
    solve: str = ""
    solve_only: tuple = ()
    data: str = "ranking"
    demo: bool = True
    demo_params: dict = field(default_factory=dict)
    small_params: dict = field(default_factory=dict)
    reference: str = ""

    @property
    def class_name(self):
        return self.estimator.partition(":")[2]

    @property
    def module(self):
        return self.estimator.partition(":")[0]

    @property
    def estimator_class(self):
        return _load(self.estimator)

    @property
    def solve_function(self):
        return _load(self.solve) if self.solve else None

    @property
    def reference_function(self):
        return _load(self.reference) if self.reference else None

    @property
    def reference_params(self):
        """The estimator parameters passed on to the reference solve: those its signature names (by keyword)."""
        import inspect

        if not self.reference:
            return ()
        own = set(self.estimator_class._get_param_names())
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return tuple(name for name, p in inspect.signature(self.reference_function).parameters.items()
                     if name in own and p.kind in kinds)

    def make(self, **params):
        return self.estimator_class(**params)

    def solve_reference(self, estimator, X, y, qid, **data):
        """The reference's exact solution of ``estimator``'s objective on (X, y, qid) and the ``data`` keyword
        arrays (sample_weight)."""
        if not self.reference:
            raise ValueError(f"solver {self.name!r} has no convex reference objective")
        params = estimator.get_params()
        return self.reference_function(X, y, qid, **data, **{p: params[p] for p in self.reference_params})


TABLE = (
    EstimatorSpec(
        estimator="cyrank.domination.estimator:DominationRank",
        name="domination",
        summary="domination loss: coordinate descent (l1/l2/elastic net) or trust-region Newton (l2)",
        solve="cyrank.domination.solver:solve",
        solve_only=("coef_init", "offset", "options"),
        demo_params={"penalty": "l2", "alpha": 1.0},
        small_params={"penalty": "l2", "alpha": 0.5, "tol": 1e-9, "max_iter": 10000},
        reference="reference.domination:solve",
    ),
    EstimatorSpec(
        estimator="cyrank.ranksvm.estimator:RankSVM",
        name="ranksvm",
        summary="rankSVM: squared hinge by TRON with order-statistic sums, hinge by cutting planes; linear or "
                "kernel",
        solve="cyrank.ranksvm.solver:solve",
        solve_only=("coef_init", "options"),
        demo_params={"C": 1e-4},
        small_params={"C": 0.5, "tol": 1e-9},
        reference="reference.ranksvm:solve",
    ),
    EstimatorSpec(
        estimator="cyrank.lambdarank.estimator:RankNet",
        name="ranknet",
        summary="RankNet (linear): pairwise cross-entropy by TRON with exact Hessian products",
        solve="cyrank.lambdarank.solver:solve",
        solve_only=("coef_init",),
        demo_params={"alpha": 1.0},
        small_params={"alpha": 0.5, "tol": 1e-10},
        reference="reference.ranknet:solve",
    ),
    EstimatorSpec(
        estimator="cyrank.lambdarank.estimator:LambdaRank",
        name="lambdarank",
        summary="LambdaRank (linear): LambdaLoss EM from the RankNet solution (weighted RankNet by TRON; not "
                "convex)",
        solve="cyrank.lambdarank.solver:solve_lambdarank",
        solve_only=("eval_set",),
        demo_params={"alpha": 10.0},
    ),
    EstimatorSpec(
        estimator="cyrank.lambdarank.mart:LambdaMART",
        extra="lightgbm",
        name="lambdamart",
        summary="LambdaMART: LightGBM trees grown on cyrank's lambdas (extra 'lightgbm')",
        demo_params={"n_estimators": 50, "num_leaves": 15},
    ),
    EstimatorSpec(
        estimator="cyrank.listwise.estimator:ListNet",
        name="listnet",
        summary="ListNet / softmax cross-entropy (linear): the top-one probability loss by TRON or proximal Newton",
        solve="cyrank.listwise.solver:solve_listnet",
        solve_only=("coef_init", "eval_set"),
        demo_params={"alpha": 1.0},
        small_params={"alpha": 0.5, "tol": 1e-10},
        reference="reference.listwise:solve_listnet",
    ),
    EstimatorSpec(
        estimator="cyrank.listwise.estimator:ListMLE",
        name="listmle",
        summary="ListMLE (linear): the Plackett-Luce likelihood of the label order, Efron's ties",
        solve="cyrank.listwise.solver:solve_listmle",
        solve_only=("coef_init", "eval_set"),
        demo_params={"alpha": 1.0},
        small_params={"alpha": 0.5, "tol": 1e-10},
        reference="reference.listwise:solve_listmle",
    ),
    EstimatorSpec(
        estimator="cyrank.lambdarank.mart:ListwiseMART",
        extra="lightgbm",
        name="listwisemart",
        summary="ListwiseMART: LightGBM trees grown on the ListNet / ListMLE gradients (extra 'lightgbm')",
        demo_params={"n_estimators": 50, "num_leaves": 15},
    ),
    EstimatorSpec(
        estimator="cyrank.mlr.estimator:MLR",
        name="mlr",
        summary="metric learning to rank: a PSD metric by 1-slack cutting planes, from class labels",
        solve="cyrank.mlr.solver:solve",
        solve_only=("relevance", "irrelevant", "options"),
        data="classes",
        demo=False,
    ),
    EstimatorSpec(
        estimator="cyrank.labelrank.estimator:LabelRankBoost",
        name="labelrank",
        summary="label ranking over preference graphs (Dekel, Manning & Singer 2003), from multilabel files",
        solve="cyrank.labelrank.solver:solve",
        solve_only=("coef_init", "joint", "options"),
        data="multilabel",
        demo=False,
    ),
    # distributed fits on Dask collections (extra "dask"); the fitted models are plain single-machine ones
    EstimatorSpec(estimator="cyrank.dask:DaskRankSVM", extra="dask"),
    EstimatorSpec(estimator="cyrank.dask:DaskDominationRank", extra="dask"),
    EstimatorSpec(estimator="cyrank.dask:DaskRankNet", extra="dask"),
    EstimatorSpec(estimator="cyrank.dask:DaskLabelRankBoost", extra="dask"),
)

ESTIMATORS = {spec.class_name: spec for spec in TABLE}  # class name -> spec
SOLVERS = {spec.name: spec for spec in TABLE if spec.name}  # command-line name -> spec


def get(name):
    """The spec of command-line solver ``name`` (ValueError naming the known ones)."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; available: {', '.join(SOLVERS)}")
    return SOLVERS[name]


def model_class(name):
    """The class of cyrank's own estimator ``name`` (imported on first use), or None when the table has no such
    class. The only classes a model file may name besides those of :func:`cyrank.io.register_model`."""
    spec = ESTIMATORS.get(name)
    return None if spec is None else spec.estimator_class
