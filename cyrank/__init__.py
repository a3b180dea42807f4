"""cyrank: fast, exact-to-tolerance learning-to-rank solvers with Cython kernels.

Public names only; see README.md for the objectives and the conventions.
"""
import os as _os

from . import _fork
from ._queries import QueryGroups
from ._validation import RankingDataWarning
from .domination import DominationRank
from .mlr import MLR
from .ranksvm import RankSVM

__version__ = "0.1.0"

# a child forked after a threaded fit would hang in its first OpenMP region: run it serial instead (_fork.pyx)
if hasattr(_os, "register_at_fork"):  # POSIX only; Windows has no fork
    _os.register_at_fork(after_in_child=_fork.serial_after_fork)

__all__ = ["DominationRank", "MLR", "QueryGroups", "RankSVM", "RankingDataWarning", "__version__"]
