"""Metric learning to rank (McFee & Lanckriet, "Metric Learning to Rank", ICML 2010): ``solve`` (functional layer,
no scikit-learn import) and the estimator ``MLR`` (imported on first use)."""
from .solver import Options, solve


def __getattr__(name):
    if name == "MLR":
        from .estimator import MLR

        return MLR
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MLR", "Options", "solve"]
