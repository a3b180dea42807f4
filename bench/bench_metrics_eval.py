"""Evaluation speed: cyrank.metrics against ranx and pytrec_eval on one synthetic TREC-sized run.

Data (seeded): ``--queries`` queries x ``--docs`` retrieved documents each (ids from a 1e6-document collection),
scores N(0, 1) rounded to 3 decimals (some ties), qrels judging 25% of the retrieved documents plus 50 unretrieved
ones per query with graded labels 0..4 (P = .6 .2 .1 .06 .04). Metrics: ndcg@10, map, mrr, p@10, together.

Contenders, timed in the same process, on one thread (NUMBA_NUM_THREADS=1, OMP_NUM_THREADS=1, ranx threads=1),
alternating within each round, best of ``--repeats`` rounds:

* cyrank arrays: ``cyrank.metrics.evaluate(y, s, qid, metrics, convention="ranx")`` (arrays: y = the qrels label of
  each retrieved row, 0 if unjudged), and the four metric functions called one by one with their defaults;
* cyrank dicts: ``evaluate(qrels, run, metrics, convention=...)`` for "ranx" and "trec_eval" (dict -> array
  conversion included), and the conversion alone;
* ranx: ``ranx.evaluate(Qrels, Run, metrics)`` on objects built beforehand, and their build from the dicts;
* pytrec_eval: ``RelevanceEvaluator(qrels, measures)`` built, then ``evaluate(run)`` timed (and the build).

The means are checked: cyrank's ranx preset against ranx, its trec_eval preset against pytrec_eval.

    .venv/bin/python bench/bench_metrics_eval.py --queries 10000 --docs 1000 --repeats 3
"""
import os

os.environ["NUMBA_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from cyrank import metrics as M  # noqa: E402
from cyrank.metrics import _TrecQueries  # noqa: E402

SPECS = ("ndcg@10", "map", "mrr", "p@10")
RANX_NAMES = ("ndcg@10", "map", "mrr", "precision@10")
TREC_NAMES = ("ndcg_cut_10", "map", "recip_rank", "P_10")


def make_data(n_queries, n_docs, seed=0):
    rng = np.random.default_rng(seed)
    qrels, run, ys, ss = {}, {}, [], []
    n_judged = n_docs // 4
    for i in range(n_queries):
        docs = [f"d{j}" for j in rng.choice(1_000_000, n_docs + 50, replace=False).tolist()]
        scores = np.round(rng.normal(size=n_docs), 3)
        labels = rng.choice(5, n_judged + 50, p=[0.6, 0.2, 0.1, 0.06, 0.04])
        judged_rows = rng.choice(n_docs, n_judged, replace=False)
        y = np.zeros(n_docs)
        y[judged_rows] = labels[:n_judged]
        q = f"q{i}"
        run[q] = dict(zip(docs[:n_docs], scores.tolist()))
        qrels[q] = dict(zip([docs[j] for j in judged_rows.tolist()] + docs[n_docs:], labels.tolist()))
        ys.append(y)
        ss.append(scores)
    qid = np.repeat(np.arange(n_queries), n_docs)
    return qrels, run, np.concatenate(ys), np.concatenate(ss), qid


def timed(func):
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import pytrec_eval
    import ranx

    qrels, run, y, s, qid = make_data(args.queries, args.docs)
    print(f"{args.queries} queries x {args.docs} documents: {y.size} run rows, "
          f"{sum(map(len, qrels.values()))} qrels rows; metrics {', '.join(SPECS)}; one thread")
    ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run)  # also compiles ranx (numba) before timing
    ranx.evaluate(ranx_qrels, ranx_run, list(RANX_NAMES), threads=1)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES))

    def metrics_one_by_one():
        return {spec: M.metric_by_name(spec)(y, s, qid) for spec in SPECS}

    def ranx_build_and_evaluate():
        return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(RANX_NAMES), threads=1)

    contenders = {
        "cyrank arrays, evaluate(convention='ranx')": lambda: M.evaluate(y, s, qid, metrics=SPECS,
                                                                          convention="ranx"),
        "cyrank arrays, 4 metric calls (defaults)": metrics_one_by_one,
        "cyrank dicts, evaluate(convention='ranx')": lambda: M.evaluate(qrels, run, metrics=SPECS,
                                                                         convention="ranx"),
        "cyrank dicts, evaluate(convention='trec_eval')": lambda: M.evaluate(qrels, run, metrics=SPECS,
                                                                              convention="trec_eval"),
        "  of which dict -> array conversion": lambda: _TrecQueries(qrels, run, "qrels"),
        "ranx evaluate (Qrels/Run built before)": lambda: ranx.evaluate(ranx_qrels, ranx_run, list(RANX_NAMES),
                                                                        threads=1),
        "ranx Qrels/Run build + evaluate": ranx_build_and_evaluate,
        "pytrec_eval evaluate (evaluator built before)": lambda: evaluator.evaluate(run),
        "pytrec_eval RelevanceEvaluator build": lambda: pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES)),
    }
    best = {name: float("inf") for name in contenders}
    values = {}
    for round_ in range(args.repeats):
        for name, func in contenders.items():
            seconds, values[name] = timed(func)
            best[name] = min(best[name], seconds)
        print(f"round {round_ + 1}: " + ", ".join(f"{t:.2f}" for t in best.values()), flush=True)

    ranx_means = values["ranx evaluate (Qrels/Run built before)"]
    ours = values["cyrank dicts, evaluate(convention='ranx')"]
    trec = values["pytrec_eval evaluate (evaluator built before)"]
    ours_trec = values["cyrank dicts, evaluate(convention='trec_eval')"]
    diff_ranx = max(abs(ours[a] - ranx_means[b]) for a, b in zip(SPECS, RANX_NAMES))
    diff_trec = max(abs(ours_trec[a] - np.mean([v[b] for v in trec.values()])) for a, b in zip(SPECS, TREC_NAMES))
    reference = best["ranx evaluate (Qrels/Run built before)"]
    print(f"\n{'contender':50s} {'best s':>8s} {'x ranx':>8s}")
    for name, seconds in best.items():
        print(f"{name:50s} {seconds:8.2f} {seconds / reference:8.2f}")
    print(f"\nmeans: cyrank ranx preset - ranx: max |diff| {diff_ranx:.1e}; cyrank trec_eval preset - pytrec_eval: "
          f"max |diff| {diff_trec:.1e}")
    print("cyrank ranx preset: " + ", ".join(f"{k} {v:.6f}" for k, v in ours.items()))


if __name__ == "__main__":
    main()
