"""Domination-loss ranking (Stevens, "Efficient Coordinate Descent for Ranking with Domination Loss", MEng thesis,
MIT 2010): ``solve``, ``objective``, ``path`` and the loss object ``loss`` (a cyrank.optim.datafit.Datafit; functional
layer, no scikit-learn import) and the estimator ``DominationRank`` (imported on first use)."""
from .solver import Options, PathResult, loss, objective, path, solve


def __getattr__(name):
    if name == "DominationRank":
        from .estimator import DominationRank

        return DominationRank
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DominationRank", "Options", "PathResult", "loss", "objective", "path", "solve"]
