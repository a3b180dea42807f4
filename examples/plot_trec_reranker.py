r"""
=====================================
From a TREC run to a learned reranker
=====================================

A first-stage retriever gives every query a ranked list of documents, exchanged as a TREC *run*
(``qid Q0 docid rank score tag``); relevance judgments come as TREC *qrels* (``qid 0 docid rel``); and the
features of the retrieved documents come as a LETOR file whose comments carry the document ids
(``... qid:10 1:0.3 ... #docid = GX000-00-0000000``), as in LETOR 4.0 and MSLR.

This example:

1. reads such a LETOR file with its document ids (:func:`cyrank.io.load_svmlight` with
   ``return_doc_ids=True``), the qrels and the first-stage run;
2. learns a reranker, cross-validated by query (:class:`cyrank.model_selection.QueryKFold`), so that every
   query is scored by a model that never saw it;
3. writes the reranked run (:func:`cyrank.io.write_run`);
4. evaluates both runs with :mod:`cyrank.metrics` on the TREC dicts and, side by side, with pytrec_eval (the
   trec_eval code) and ranx: the same numbers, under the matching presets (``convention="trec_eval"`` and
   ``"ranx"``; they differ in how they break score ties, see :func:`cyrank.metrics.describe_metric`).

The embedded data (LightGBM's lambdarank example) has no document ids, so step 0 writes it out as a LETOR 4.0
style file with ids, and the qrels and first-stage run that go with it; with real data you start at step 1.
"""

# %%
# 0. The files: features with doc ids, qrels, a first-stage run
# --------------------------------------------------------------
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from cyrank import RankSVM, io, metrics
from cyrank.datasets import load_lightgbm_rank
from cyrank.model_selection import QueryKFold

folder = Path(tempfile.mkdtemp())
X, y, qid = load_lightgbm_rank("train")
position = np.concatenate([np.arange(n) for n in np.unique(qid, return_counts=True)[1]])
doc_ids = np.array([f"LGB-{q:03d}-{k:03d}" for q, k in zip(qid, position)])
io.dump_svmlight(X, y, folder / "features.svm", qid=qid, doc_ids=doc_ids)
io.write_qrels(folder / "judgments.qrels", io.qrels_from_labels(qid, doc_ids, y))

# the first stage: one feature (the one with the best NDCG@10 on these queries, a stand-in for BM25)
dense = X.toarray()
best = max(range(dense.shape[1]), key=lambda j: metrics.ndcg_score(y, dense[:, j], qid, k=10, empty="zero"))
io.write_run(folder / "first_stage.run", io.run_from_scores(qid, doc_ids, dense[:, best]), tag=f"feature-{best}")
print(f"written to {folder}: features.svm, judgments.qrels, first_stage.run (feature {best})")

# %%
# 1-3. Read them, rerank by cross-validation over queries, write the reranked run
# -------------------------------------------------------------------------------
X, y, qid, doc_ids = io.load_svmlight(folder / "features.svm", return_doc_ids=True)
qrels = io.read_qrels(folder / "judgments.qrels")
first_stage = io.read_run(folder / "first_stage.run")

scores = np.empty(len(y))
for train, test in QueryKFold(n_splits=5, shuffle=True, random_state=0).split(X, y, qid=qid):
    model = RankSVM(C=0.1).fit(X[train], y[train], qid[train])
    scores[test] = model.predict(X[test])
io.write_run(folder / "reranked.run", io.run_from_scores(qid, doc_ids, scores), tag="cyrank-ranksvm")
reranked = io.read_run(folder / "reranked.run")

# %%
# 4. Evaluate with cyrank, pytrec_eval and ranx, side by side
# -----------------------------------------------------------
# trec_eval's names (pytrec_eval) and ranx's names of the same measures, with cyrank's metric by name.
MEASURES = [("ndcg@10", "ndcg_cut_10", "ndcg@10"), ("map", "map", "map"), ("mrr", "recip_rank", "mrr"),
            ("p@10", "P_10", "precision@10")]


def cyrank_scores(run, convention):
    return {name: metrics.metric_by_name(name)(qrels, run, convention=convention) for name, _, _ in MEASURES}


def pytrec_eval_scores(run):
    import pytrec_eval

    per_query = pytrec_eval.RelevanceEvaluator(qrels, {t for _, t, _ in MEASURES}).evaluate(run)
    return {name: np.mean([v[t] for v in per_query.values()]) for name, t, _ in MEASURES}


def ranx_scores(run):
    from ranx import Qrels, Run, evaluate

    values = evaluate(Qrels(qrels), Run(run), [r for _, _, r in MEASURES])
    return {name: float(values[r]) for name, _, r in MEASURES}


print(f"{'run':12s} {'measure':8s} {'cyrank trec_eval':>17s} {'pytrec_eval':>12s} {'cyrank ranx':>12s} "
      f"{'ranx':>8s}")
for label, run in (("first stage", first_stage), ("reranked", reranked)):
    ours_trec, ours_ranx = cyrank_scores(run, "trec_eval"), cyrank_scores(run, "ranx")
    try:
        theirs_trec, theirs_ranx = pytrec_eval_scores(run), ranx_scores(run)
    except ImportError:
        theirs_trec = theirs_ranx = dict.fromkeys(ours_trec, float("nan"))
        print("(pytrec_eval / ranx not installed: pip install \"cyrank[ireval]\")")
    for name, _, _ in MEASURES:
        print(f"{label:12s} {name:8s} {ours_trec[name]:17.6f} {theirs_trec[name]:12.6f} {ours_ranx[name]:12.6f} "
              f"{theirs_ranx[name]:8.6f}")

# %%
# Each cyrank column equals its evaluator's to the printed digits (tests/test_metrics_trec.py checks 1e-12 on
# random runs). The trec_eval and ranx columns differ on the first stage only: its one feature has two decimals,
# so many documents tie, and trec_eval orders tied documents by decreasing document id while ranx keeps (up to
# 15 documents) the order of the run. The reranker's scores have no ties, and the two agree.
ties = sum(len(scores_of) - len(set(scores_of.values())) for scores_of in first_stage.values())
print(f"tied documents in the first-stage run: {ties} of {sum(map(len, first_stage.values()))}")

# %%
# Per query: where reranking helps
# --------------------------------
_, before = metrics.ndcg_score(qrels, first_stage, k=10, convention="trec_eval", return_per_query=True)
_, after = metrics.ndcg_score(qrels, reranked, k=10, convention="trec_eval", return_per_query=True)
topics = sorted(before)
fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter([before[t] for t in topics], [after[t] for t in topics], s=12)
ax.plot([0, 1], [0, 1], color="grey", lw=1)
ax.set_xlabel("NDCG@10, first stage (one feature)")
ax.set_ylabel("NDCG@10, reranked (RankSVM, 5-fold CV by query)")
better = sum(after[t] > before[t] for t in topics)
ax.set_title(f"{better} of {len(topics)} queries improved")
plt.show()
