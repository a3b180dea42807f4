"""The catalogue of solvers the CLI knows: name -> estimator, demo parameters, reference adapter.

Each solver issue adds one ``SolverSpec`` here. Classes and reference adapters are named as
``"module:attribute"`` strings and imported on use, so ``cyrank --help`` stays fast and ``reference``
(cvxpy) is imported only by ``verify`` and ``demo``.
"""
import importlib
from dataclasses import dataclass, field


def _load(path):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class SolverSpec:
    """One solver as the CLI sees it.

    ``reference`` names ``f(estimator, X, y, qid) -> reference.Solution``: the exact optimum of the objective
    that ``estimator`` (with its current parameters) minimises on ``(X, y, qid)``.
    ``small_params`` are the parameters ``verify`` and ``demo`` use on the small reference problem.
    """

    name: str
    estimator: str
    summary: str
    demo_params: dict = field(default_factory=dict)
    small_params: dict = field(default_factory=dict)
    reference: str = ""

    @property
    def estimator_class(self):
        return _load(self.estimator)

    def make(self, **params):
        return self.estimator_class(**params)

    def solve_reference(self, estimator, X, y, qid):
        if not self.reference:
            raise ValueError(f"solver {self.name!r} has no convex reference objective")
        return _load(self.reference)(estimator, X, y, qid)


SOLVERS = {}


def register(spec):
    SOLVERS[spec.name] = spec
    return spec


def get(name):
    if name not in SOLVERS:
        known = ", ".join(SOLVERS) or "none yet"
        raise ValueError(f"unknown solver {name!r}; available: {known}")
    return SOLVERS[name]
