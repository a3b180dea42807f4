"""The generalised label-ranking error on preference graphs (Dekel, Manning & Singer, "Log-Linear Models for Label
Ranking", NIPS 2003, eq. (1)). Its per-query forms on (y_true, y_score, qid), one decomposition each
(zero_one_error, disagreement_error, domination_error, dominated_error), are ranking metrics of
:mod:`cyrank.metrics`; this one takes the graphs themselves (so any decomposition). Also importable as
``cyrank.metrics.label_ranking_error`` (its former home)."""
import numpy as np

from .._validation import check_label_matrix, check_option
from ..metrics import EMPTY, mean_over_queries
from .graphs import as_graphs

__all__ = ["label_ranking_error"]


def label_ranking_error(G, y_score, decomposition="disagreement", *, ties="pessimistic", empty="drop",
                        return_per_instance=False):
    """Generalised label-ranking error on preference graphs (Dekel, Manning & Singer, NIPS 2003, eq. (1)).

    ``G``: :class:`cyrank.labelrank.PreferenceGraphs` (or a 0/1 multilabel indicator matrix: relevant labels
    preferred to irrelevant ones); ``y_score``: label scores, (n_instances, n_labels), larger = ranked higher.
    ``decomposition``: "zero_one", "disagreement", "domination", "dominated" or a callable (as
    ``PreferenceGraphs.decompose``). Per instance with subgraphs G_i1 .. G_is_i::

        eps_i = (1/s_i) sum_k [exists e in E_ik: score(init e) <= score(term e)]

    and the result is the mean of eps_i over instances.

    Ties: "pessimistic" (default; the paper's <=, a tie violates an edge) or "optimistic" (a tie does not).

    Empty: an instance with no edge follows ``empty``: "drop" (default; left out of the mean, NaN per
    instance), "zero" or "one".

    On bipartite graphs (an indicator matrix) "disagreement" with empty="zero" is scikit-learn's
    ``label_ranking_loss``. Vectorised, O(edges). Returns the mean, or (mean, per_instance) with
    ``return_per_instance=True``.
    """
    check_option("ties", ties, ("pessimistic", "optimistic"))
    check_option("empty", empty, EMPTY)
    S = check_label_matrix(y_score, "y_score")
    G = as_graphs(G)
    if S.shape != (G.n_instances, G.n_labels):
        raise ValueError(f"y_score has shape {S.shape} but G has {G.n_instances} instances and {G.n_labels} labels")
    inst = G.instance_of_edge()
    hi, lo = S[inst, G.init], S[inst, G.term]
    bad = (hi <= lo) if ties == "pessimistic" else (hi < lo)
    sub = G.decompose(decomposition)
    sizes = np.diff(sub.member_ptr)
    violated = np.zeros(sizes.size)
    if sizes.size:
        violated = np.maximum.reduceat((bad if sub.identity else bad[sub.members]).astype(np.float64),
                                       sub.member_ptr[:-1])
    s = sub.n_subgraphs
    per = np.full(G.n_instances, np.nan)
    has = s > 0
    per[has] = np.bincount(sub.instance_of_subgraph(), weights=violated, minlength=G.n_instances)[has] / s[has]
    return mean_over_queries("label_ranking_error", per, empty, return_per_instance)
