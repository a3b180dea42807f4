"""Metric learning to rank (McFee & Lanckriet, "Metric Learning to Rank", ICML 2010)."""
from .estimator import MLR

__all__ = ["MLR"]
