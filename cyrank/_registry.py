"""The table of solver families the CLI knows (``cyrank fit / verify / demo``): one ``SolverSpec`` per name.

A spec names the estimator class, the functional layer's ``solve`` (called by ``cyrank fit``), the kind of data
file it reads (``data``), the parameters of ``demo`` and ``verify`` and, for the convex families, the reference
(cvxpy) solver with the estimator parameters passed on to it. Classes and functions are ``"module:attribute"``
strings imported on use, so ``cyrank --help`` stays fast and ``reference`` (cvxpy) is imported only by ``verify``
and ``demo``.
"""
import importlib
from dataclasses import dataclass, field


def _load(path):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class SolverSpec:
    """One solver as the CLI sees it.

    ``reference`` names ``solve(X, y, qid, **params) -> reference.Solution``, the exact optimum of the objective
    the estimator minimises; ``reference_params`` are the estimator parameters passed on to it by name.
    ``small_params`` are the parameters ``verify`` and ``demo`` use on the small reference problem.
    ``solve`` names the functional layer's ``solve(X, y, qid, **params) -> SolveResult`` (the estimator's
    parameters, without scikit-learn), which ``cyrank fit`` calls; ``data`` is "ranking" (label qid:N idx:val
    lines), "classes" (label idx:val lines, one class label per point, as MLR takes; solve(X, y, **params)) or
    "multilabel" (l1,l2,... idx:val lines, LIBSVM's multilabel sets; solve(X, Y, **params)); ``demo``: whether
    ``cyrank demo`` trains it on the embedded ranking data.
    """

    name: str
    estimator: str
    summary: str
    demo_params: dict = field(default_factory=dict)
    small_params: dict = field(default_factory=dict)
    reference: str = ""
    reference_params: tuple = ()
    solve: str = ""
    data: str = "ranking"
    demo: bool = True

    @property
    def estimator_class(self):
        return _load(self.estimator)

    @property
    def class_name(self):
        return self.estimator.partition(":")[2]

    @property
    def solve_function(self):
        return _load(self.solve) if self.solve else None

    def make(self, **params):
        return self.estimator_class(**params)

    def solve_reference(self, estimator, X, y, qid):
        if not self.reference:
            raise ValueError(f"solver {self.name!r} has no convex reference objective")
        params = estimator.get_params()
        return _load(self.reference)(X, y, qid, **{p: params[p] for p in self.reference_params})


SOLVERS = {}


def register(spec):
    SOLVERS[spec.name] = spec
    return spec


def get(name):
    if name not in SOLVERS:
        known = ", ".join(SOLVERS) or "none yet"
        raise ValueError(f"unknown solver {name!r}; available: {known}")
    return SOLVERS[name]


register(SolverSpec(
    name="domination",
    estimator="cyrank.domination:DominationRank",
    summary="domination loss: coordinate descent (l1/l2/elastic net) or trust-region Newton (l2)",
    demo_params={"penalty": "l2", "alpha": 1.0},
    small_params={"penalty": "l2", "alpha": 0.5, "tol": 1e-9, "max_iter": 10000},
    reference="reference.domination:solve",
    reference_params=("penalty", "alpha", "l1_ratio", "binary", "group_by_query"),
    solve="cyrank.domination.solver:solve",
))

register(SolverSpec(
    name="ranksvm",
    estimator="cyrank.ranksvm:RankSVM",
    summary="rankSVM: squared hinge by TRON with order-statistic sums, hinge by cutting planes; linear or kernel",
    demo_params={"C": 1e-4},
    small_params={"C": 0.5, "tol": 1e-9},
    reference="reference.ranksvm:solve",
    reference_params=("C", "loss", "kernel", "gamma", "degree", "coef0"),
    solve="cyrank.ranksvm.solver:solve",
))

register(SolverSpec(
    name="ranknet",
    estimator="cyrank.lambdarank:RankNet",
    summary="RankNet (linear): pairwise cross-entropy by TRON with exact Hessian products",
    demo_params={"alpha": 1.0},
    small_params={"alpha": 0.5, "tol": 1e-10},
    reference="reference.ranknet:solve",
    reference_params=("sigma", "penalty", "alpha", "l1_ratio"),
    solve="cyrank.lambdarank.solver:solve",
))

register(SolverSpec(
    name="lambdarank",
    estimator="cyrank.lambdarank:LambdaRank",
    summary="LambdaRank (linear): LambdaLoss EM from the RankNet solution (weighted RankNet by TRON; not convex)",
    solve="cyrank.lambdarank.solver:solve_lambdarank",
    demo_params={"alpha": 10.0},
))

register(SolverSpec(
    name="lambdamart",
    estimator="cyrank.lambdarank.mart:LambdaMART",
    summary="LambdaMART: LightGBM trees grown on cyrank's lambdas (extra 'lightgbm')",
    demo_params={"n_estimators": 50, "num_leaves": 15},
))

register(SolverSpec(
    name="mlr",
    estimator="cyrank.mlr:MLR",
    summary="metric learning to rank: a PSD metric by 1-slack cutting planes, from class labels",
    solve="cyrank.mlr.solver:solve",
    data="classes",
    demo=False,
))

register(SolverSpec(
    name="labelrank",
    estimator="cyrank.labelrank:LabelRankBoost",
    summary="label ranking over preference graphs (Dekel, Manning & Singer 2003), from multilabel files",
    solve="cyrank.labelrank.solver:solve",
    data="multilabel",
    demo=False,
))
