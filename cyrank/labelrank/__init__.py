"""Label ranking over preference graphs (Dekel, Manning & Singer, "Log-Linear Models for Label Ranking",
NIPS 2003): the graphs and their decompositions, ``solve``, ``objective`` and ``path`` (functional layer, no
scikit-learn import; penalties "l2", "l1", "elasticnet"), the loss as a public datafit (``loss`` ->
``LabelRankLoss``, the parameter vector's layout and the way back to coef and joint_coef), the generalised error
``label_ranking_error`` and the estimator ``LabelRankBoost`` (imported on first use)."""
from .graphs import DECOMPOSITIONS, PreferenceGraphs, Subgraphs
from .metrics import label_ranking_error
from .solver import LabelRankLoss, Options, loss, objective, path, solve


def __getattr__(name):
    if name == "LabelRankBoost":
        from .estimator import LabelRankBoost

        return LabelRankBoost
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DECOMPOSITIONS", "LabelRankBoost", "LabelRankLoss", "Options", "PreferenceGraphs", "Subgraphs",
           "label_ranking_error", "loss", "objective", "path", "solve"]
