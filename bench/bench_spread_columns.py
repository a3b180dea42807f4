"""Every column on its own scale (issue 31's finding): fits on generated LETOR-style data whose columns are each
multiplied by 10^U(-2, 4) (raw LETOR features: counts, lengths, PageRank, BM25 on their own scales), beside the
same data with unit columns. One thread; time, Newton steps, converged_ and the objective per fit.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_spread_columns.py [--queries 1000] [--docs 100]

Before TRON was preconditioned from the first step on such columns (cyrank.optim.datafit._minimise_smooth), RankNet
on 1e5 x 136 ran its max_iter Newton steps without converging.
"""
import argparse
import os
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from cyrank import DominationRank, ListMLE, ListNet, RankNet, RankSVM  # noqa: E402
from cyrank.datasets import make_ranking  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=100)
    args = parser.parse_args()
    X, y, qid = make_ranking(n_queries=args.queries, n_docs=[args.docs] * args.queries, n_features=136, n_levels=5,
                             random_state=0)
    X = X.astype(np.float32)
    spread = (X * 10 ** np.random.default_rng(0).uniform(-2, 4, X.shape[1])).astype(np.float32)
    models = [RankNet(alpha=1.0, max_iter=200), RankSVM(C=1e-3, max_iter=300),
              DominationRank(penalty="l2", alpha=1.0, max_iter=300), ListNet(alpha=1.0), ListMLE(alpha=1.0)]
    print(f"{X.shape[0]} x {X.shape[1]} float32, queries of {args.docs}, one thread")
    print(f"{'columns':8s} {'model':16s} {'seconds':>8s} {'n_iter':>6s} {'converged':>9s} {'objective':>12s}")
    for name, data in (("unit", X), ("spread", spread)):
        for model in models:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                model.fit(data, y, qid)
                seconds = time.perf_counter() - start
            print(f"{name:8s} {type(model).__name__:16s} {seconds:8.3f} {model.n_iter_:6d} {str(model.converged_):>9s} "
                  f"{model.objective_:12.6g}")


if __name__ == "__main__":
    main()
