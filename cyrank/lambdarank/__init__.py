"""RankNet and LambdaRank (Burges, "From RankNet to LambdaRank to LambdaMART: An Overview", 2010): the lambda
gradients of every document (``lambdas``, or ``Lambdas`` prepared once for many score vectors), linear RankNet
(``solve``, ``objective``, ``path`` and its loss object ``loss``, a cyrank.optim.datafit.Datafit), linear LambdaRank
(``solve_lambdarank``, whose inner step is ``solve_weighted_ranknet``): the functional layer, no scikit-learn
import; the estimators ``RankNet`` and ``LambdaRank`` are imported on first use. Every one takes
``sample_weight=None``: the pair (i, j), y_i > y_j, counts with the preferred row's weight (solver.py)."""
from .solver import (METRICS, Lambdas, lambdas, loss, objective, parse_metric, path, solve, solve_lambdarank,
                     solve_weighted_ranknet)


def __getattr__(name):
    if name in ("RankNet", "LambdaRank"):
        from . import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["METRICS", "LambdaRank", "Lambdas", "RankNet", "lambdas", "loss", "objective", "parse_metric", "path",
           "solve", "solve_lambdarank", "solve_weighted_ranknet"]
