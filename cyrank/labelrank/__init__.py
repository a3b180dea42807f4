"""Label ranking over preference graphs (Dekel, Manning & Singer, "Log-Linear Models for Label Ranking",
NIPS 2003): the graphs and their decompositions, ``solve`` and ``objective`` (functional layer, no scikit-learn
import), the generalised error ``label_ranking_error`` and the estimator ``LabelRankBoost`` (imported on first use)."""
from .graphs import DECOMPOSITIONS, PreferenceGraphs, Subgraphs
from .metrics import label_ranking_error
from .solver import Options, objective, solve


def __getattr__(name):
    if name == "LabelRankBoost":
        from .estimator import LabelRankBoost

        return LabelRankBoost
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DECOMPOSITIONS", "LabelRankBoost", "Options", "PreferenceGraphs", "Subgraphs", "label_ranking_error",
           "objective", "solve"]
