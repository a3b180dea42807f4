"""cyrank: fast, exact-to-tolerance learning-to-rank solvers with Cython kernels.

Public names only; see README.md for the objectives and the conventions. The estimators (and with them
scikit-learn) are imported on first use, so ``import cyrank`` and the functional layers (``cyrank.domination.solve``,
``cyrank.ranksvm.solve``, ``cyrank.mlr.solve``) start without scikit-learn.
"""
import importlib as _importlib
import os as _os

from . import _fork, _registry
from ._queries import QueryGroups
from ._result import SolveResult
from ._validation import MissingQidWarning, RankingDataWarning

from ._version import __version__

# class name -> module defining it (imported by __getattr__ and by cyrank.io.load_model), from the one table of
# estimators, cyrank._registry.TABLE
ESTIMATORS = {name: spec.module for name, spec in _registry.ESTIMATORS.items()}


# functions of the functional layer also named at the top (imported on first use)
FUNCTIONS = {"domination_path": ("cyrank.domination.solver", "path"),
             "PreferenceGraphs": ("cyrank.labelrank.graphs", "PreferenceGraphs"),
             "fit_many": ("cyrank.many", "fit_many")}


def __getattr__(name):
    if name in ESTIMATORS:
        return getattr(_importlib.import_module(ESTIMATORS[name]), name)
    if name in FUNCTIONS:
        module, attr = FUNCTIONS[name]
        return getattr(_importlib.import_module(module), attr)
    raise AttributeError(f"module 'cyrank' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(ESTIMATORS) | set(FUNCTIONS))


# a child forked after a threaded fit would hang in its first OpenMP region: run it serial instead (_fork.pyx)
if hasattr(_os, "register_at_fork"):  # POSIX only; Windows has no fork
    _os.register_at_fork(after_in_child=_fork.serial_after_fork)

# the Dask estimators (extra "dask") are left out, so that a star-import needs no dask
__all__ = sorted([*(name for name, spec in _registry.ESTIMATORS.items() if spec.extra != "dask"),
                  "MissingQidWarning", "QueryGroups", "RankingDataWarning", "SolveResult", "__version__",
                  "domination_path", "PreferenceGraphs", "fit_many"])
