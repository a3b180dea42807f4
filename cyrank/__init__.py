"""cyrank: fast, exact-to-tolerance learning-to-rank solvers with Cython kernels.

Public names only; see README.md for the objectives and the conventions.
"""
from ._queries import QueryGroups
from ._validation import RankingDataWarning
from .domination import DominationRank
from .mlr import MLR
from .ranksvm import RankSVM

__version__ = "0.1.0"

__all__ = ["DominationRank", "MLR", "QueryGroups", "RankSVM", "RankingDataWarning", "__version__"]
