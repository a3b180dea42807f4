"""DominationRank with sample_weight (issue 29): what a weighted fit costs against the unweighted fit on the same
data (target <= 1.1x), one thread, the contenders alternated, fastest of ``--reps`` fits each.

    python bench/bench_domination_weights.py                 # 1e5 x 136 float32 dense and 1e5 x 2e4 sparse
    python bench/bench_domination_weights.py --quick         # smaller problems, to check that the script runs
    python bench/bench_domination_weights.py --unweighted    # the unweighted fits only (run it under two builds
                                                             # to compare them: PYTHONPATH=<other tree>)

Weights: "ones" is sample_weight=np.ones(n): the weighted code path on the unweighted problem, the same iterates
bit for bit, so its time ratio is the cost of the weights alone; "ips" is 1 / propensity of a random position
1..100 in its query with propensity (1 / position)^1 (weights 1..100, Joachims et al. 2017): another problem,
whose fits may take other iteration counts, so the time per iteration is compared too.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from bench_domination import dense_problem, sparse_problem  # noqa: E402
from cyrank.domination import DominationRank, path  # noqa: E402


def cases(quick):
    """(name, X, y, qid) of the measured problems."""
    n = 20_000 if quick else 100_000
    X, y, qid = dense_problem(n, 136, 100, dtype=np.float32)
    Xs, ys, qs = sparse_problem(n, n // 5, 10 * n, 100)
    return [(f"dense float32 {n:,} x 136, queries of 100, labels 0-4", X, y, qid),
            (f"sparse float64 {n:,} x {n // 5:,}, {Xs.nnz:,} nnz, queries of 100, labels 0-2", Xs, ys, qs)]


def fits(X, y, qid):
    """(name, parameters) of the measured fits: the default solver (l2) and CD with l1 at 3% of alpha_max, to
    convergence on dense X, for 50 sweeps on sparse X (where it takes hundreds: the cost per sweep is measured)."""
    top = path(X, y, qid, n_alphas=1).alpha_max
    cd = {"penalty": "l1", "alpha": 0.03 * top, "solver": "cd"}
    return [("default (l2, alpha=1)", {"penalty": "l2", "alpha": 1.0}),
            ("cd, l1 at 0.03 alpha_max", cd) if not sp.issparse(X) else
            ("cd, l1 at 0.03 alpha_max, 50 sweeps", {**cd, "max_iter": 50})]


def ips_weights(qid, seed=0):
    """1 / (1 / position)^1 for a random position of each row in its query (weights 1..query size)."""
    rng = np.random.default_rng(seed)
    pos = np.empty(qid.shape[0])
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        pos[rows] = rng.permutation(rows.size) + 1
    return pos


def fit_once(X, y, qid, sw, params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        # (no keyword when unweighted: --unweighted also runs on builds that predate sample_weight)
        est = DominationRank(**params).fit(X, y, qid, **({} if sw is None else {"sample_weight": sw}))
        return time.perf_counter() - t, est


def bench_cost(quick, reps):
    print("\n### DominationRank: weighted fit / unweighted fit, same data (one thread, alternated, fastest of "
          f"{reps})\n")
    print("| data | fit | unweighted s (iterations) | ones s (iterations) | ones / unweighted | ips s (iterations) "
          "| ips / unweighted | per iteration |")
    print("|---|---|---|---|---:|---|---:|---:|")
    for name, X, y, qid in cases(quick):
        weights = {"none": None, "ones": np.ones(y.shape[0]), "ips": ips_weights(qid)}
        for fit_name, params in fits(X, y, qid):
            best = {k: np.inf for k in weights}
            est = {}
            for _ in range(reps):
                for k, sw in weights.items():
                    t, est[k] = fit_once(X, y, qid, sw, params)
                    best[k] = min(best[k], t)
            np.testing.assert_array_equal(est["ones"].coef_, est["none"].coef_)  # the same iterates
            it = {k: max(1, e.n_iter_ + e.n_cg_iter_) for k, e in est.items()}
            per_it = (best["ips"] / it["ips"]) / (best["none"] / it["none"])
            print(f"| {name} | {fit_name} | {best['none']:.3f} ({est['none'].n_iter_}) | {best['ones']:.3f} "
                  f"({est['ones'].n_iter_}) | {best['ones'] / best['none']:.3f} | {best['ips']:.3f} "
                  f"({est['ips'].n_iter_}) | {best['ips'] / best['none']:.2f} | {per_it:.2f} |", flush=True)
    print("\n`iterations`: n_iter_ (the per-iteration ratio counts n_iter_ + n_cg_iter_, the inner products or "
          "evaluations too). `ones`: the same problem through the weighted kernels.")


def bench_unweighted(quick, reps):
    for name, X, y, qid in cases(quick):
        for fit_name, params in fits(X, y, qid):
            best = min(fit_once(X, y, qid, None, params)[0] for _ in range(reps))
            print(f"{name} | {fit_name} | {best:.4f}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--unweighted", action="store_true")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    (bench_unweighted if args.unweighted else bench_cost)(args.quick, args.reps)


if __name__ == "__main__":
    main()
