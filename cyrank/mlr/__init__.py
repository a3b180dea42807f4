"""Metric learning to rank (metric-learning-to-rank.txt; DESIGN.md Objective 3)."""
from .estimator import MLR

__all__ = ["MLR"]
