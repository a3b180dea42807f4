"""Domination-loss ranking by coordinate descent (Stevens, "Efficient Coordinate Descent for Ranking with Domination Loss", MEng thesis, MIT 2010)."""
from .estimator import DominationRank

__all__ = ["DominationRank"]
