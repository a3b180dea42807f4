"""Domination-loss ranking by coordinate descent (domination-cd.txt; DESIGN.md Objective 1)."""
from .estimator import DominationRank

__all__ = ["DominationRank"]
