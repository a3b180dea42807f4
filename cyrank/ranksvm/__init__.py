"""RankSVM (Kuo, Lee & Lin, "Large-scale Kernel RankSVM", SDM 2014): linear and kernel rankSVM by trust-region Newton
with order-statistic sums, hinge loss by cutting planes. ``solve`` (functional layer, no scikit-learn import) and the
estimator ``RankSVM`` (imported on first use)."""
from .solver import Options, solve


def __getattr__(name):
    if name == "RankSVM":
        from .estimator import RankSVM

        return RankSVM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Options", "RankSVM", "solve"]
