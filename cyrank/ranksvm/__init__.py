"""RankSVM: linear and kernel rankSVM by trust-region Newton with order-statistic sums; hinge loss by cutting planes."""
from .estimator import RankSVM

__all__ = ["RankSVM"]
