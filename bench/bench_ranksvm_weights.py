"""RankSVM with sample_weight (issue 29): the cost of a weighted fit against the unweighted one on the same data.

    python bench/bench_ranksvm_weights.py            # 1e5 x 136 float32 dense and 1e5 x 2000 sparse, queries of 100
    python bench/bench_ranksvm_weights.py --quick    # 1e4 rows (a smoke run, seconds)

Three contenders, alternated, one thread (OMP_NUM_THREADS=1 and threadpoolctl), best of ``--repeat`` (fits: of
at most 3), timed in CPU seconds of the process (time.process_time: on one thread the work done, less disturbed by
other jobs on shared cores than wall time):
  none     sample_weight=None: the unweighted kernels
  ones     sample_weight=1 on every row: the weighted kernels on the unweighted problem (the same iterates, bit for
           bit), so the ratio ones / none is the cost of the weighted order-statistic sums alone
  ips      inverse-propensity weights 1 / (1 / rank)^1 (rank: the row's position in a random ranking of its query),
           divided by their mean (so that C means the same): a different problem, whose fit may take other
           iteration counts (printed)
Rows: one loss + gradient pass and one Hessian product (linear squared hinge, at a random point with most pairs
active), then whole fits: squared hinge l2 (TRON, C=1e-3), l1 (proximal Newton, C = 4 C_min of the unweighted
problem), hinge (cutting planes, C=1e-4), tol=1e-3. The target (issue 29): weighted <= 1.1x unweighted.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from threadpoolctl import threadpool_limits  # noqa: E402

from cyrank.datasets import make_ranking  # noqa: E402
from cyrank.ranksvm import solve  # noqa: E402
from cyrank.ranksvm.problems import LinearSquaredHinge, make_layout  # noqa: E402


def ips_weights(qid, seed):
    """1 / propensity of each row's position in a random order of its query, propensity (1/rank)^1."""
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(qid.size), qid))
    rank = np.empty(qid.size)
    starts = np.r_[0, np.flatnonzero(np.diff(qid[order])) + 1]
    sizes = np.diff(np.r_[starts, qid.size])
    rank[order] = np.arange(qid.size) - np.repeat(starts, sizes) + 1
    return rank / rank.mean()


def alternate(contenders, fn, repeat):
    """{name: (best seconds, last result)} with the contenders run in turn, ``repeat`` rounds."""
    best = {name: (np.inf, None) for name in contenders}
    for _ in range(repeat):
        for name, arg in contenders.items():
            t0 = time.process_time()
            out = fn(arg)
            t = time.process_time() - t0
            best[name] = (min(best[name][0], t), out)
    return best


def table(title, X, y, qid, repeat):
    weights = {"none": None, "ones": np.ones(y.size), "ips": ips_weights(qid, 1)}
    print(f"\n### {title} (load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores, shared)\n")
    print("| what | none ms | ones ms | ips ms | ones / none | ips / none | iterations none / ones / ips |")
    print("|---|---:|---:|---:|---:|---:|---|")
    d = X.shape[1]
    w = np.random.default_rng(2).normal(size=d) * 1e-3
    v = np.random.default_rng(3).normal(size=d)
    probs = {name: LinearSquaredHinge(X, make_layout(y, qid, sample_weight=sw)[0], 1e-3)
             for name, sw in weights.items()}

    def row(what, best, iters=""):
        t = {k: best[k][0] * 1e3 for k in best}
        print(f"| {what} | {t['none']:.1f} | {t['ones']:.1f} | {t['ips']:.1f} | {t['ones'] / t['none']:.3f} "
              f"| {t['ips'] / t['none']:.3f} | {iters} |", flush=True)

    def fun_grad(p):
        p.fun(w)
        return p.grad(w)

    row("loss + gradient pass", alternate(probs, fun_grad, repeat))
    row("Hessian product", alternate(probs, lambda p: p.hess_vec(v), repeat))
    fits = [("fit squared hinge l2 (TRON)", dict(C=1e-3)),
            ("fit squared hinge l1 (prox Newton)", dict(C=4.0 / np.abs(probs["none"].grad(np.zeros(d))).max() * 1e-3,
                                                        penalty="l1")),
            ("fit hinge (cutting planes)", dict(C=1e-4, loss="hinge"))]
    for what, params in fits:
        best = alternate(weights, lambda sw: solve(X, y, qid, tol=1e-3, sample_weight=sw, n_jobs=1, **params),
                         min(3, repeat))
        if not all(best[k][1].converged for k in best):
            what += " (NOT converged)"
        row(what, best, " / ".join(str(best[k][1].n_iter) for k in ("none", "ones", "ips")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = 10_000 if args.quick else 100_000
    print("RankSVM, weighted against unweighted fits on the same data; one thread, contenders alternated, best of "
          f"{args.repeat} (fits: of {min(3, args.repeat)}), CPU time. ones: sample_weight=1 (weighted kernels, same iterates); ips: 1 / propensity of a "
          "random position, propensity 1/rank.")
    with threadpool_limits(1):
        X, y, qid = make_ranking(n // 100, [100] * (n // 100), 136, 5, dtype=np.float32, random_state=0)
        table(f"{n:,} x 136 dense float32, {n // 100:,} queries of 100, 5 grades", X, y, qid, args.repeat)
        X, y, qid = make_ranking(n // 100, [100] * (n // 100), 2000, 5, density=0.01, sparse=True, random_state=0)
        table(f"{n:,} x 2,000 sparse float64 (1% non-zero: {X.nnz / n:.0f} per row), {n // 100:,} queries of 100, "
              "5 grades", X, y, qid, args.repeat)


if __name__ == "__main__":
    main()
