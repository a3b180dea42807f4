"""RankSVM (Kuo, Lee & Lin, "Large-scale Kernel RankSVM", SDM 2014): linear and kernel rankSVM by trust-region Newton
with order-statistic sums, hinge loss by cutting planes; the linear squared-hinge model also with an l1 or
elastic-net regulariser (proximal Newton). ``solve``, ``objective`` and ``path`` (functional layer, no scikit-learn
import), ``loss`` (the squared-hinge datafit, for cyrank.optim.datafit.minimise or a distributed sum) and the
estimator ``RankSVM`` (imported on first use). Each takes ``sample_weight``: the pair (i, j), y_i > y_j, weighs
w_i, its preferred row's weight (Joachims, Swaminathan & Schnabel, WSDM 2017)."""
from .problems import loss
from .solver import Options, objective, path, solve


def __getattr__(name):
    if name == "RankSVM":
        from .estimator import RankSVM

        return RankSVM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Options", "RankSVM", "loss", "objective", "path", "solve"]
