"""RankNet and LambdaRank (Burges, "From RankNet to LambdaRank to LambdaMART: An Overview", 2010): the lambda
gradients of every document (``lambdas``) and linear RankNet (``solve``, ``objective``: functional layer, no
scikit-learn import); the estimator ``RankNet`` is imported on first use."""
from .solver import METRICS, lambdas, objective, parse_metric, solve, solve_lambdarank


def __getattr__(name):
    if name in ("RankNet", "LambdaRank"):
        from . import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["METRICS", "LambdaRank", "RankNet", "lambdas", "objective", "parse_metric", "solve", "solve_lambdarank"]
