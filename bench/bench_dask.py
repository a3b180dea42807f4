"""Past one machine (issue 15): distributed TRON on Dask, and many models at once.

    python bench/bench_dask.py                 # both sections
    python bench/bench_dask.py --only dask     # or: many
    python bench/bench_dask.py --quick         # small sizes (a smoke run)

dask    DaskRankSVM on documents generated on the workers (dask.array.random, row chunks of 100,000, queries of
        100 rows, labels 0-2 from a noisy linear score; never all in the driver), with 1 and 2 worker processes of
        one thread each, against RankSVM on the same data in one process: seconds per Newton iteration, the
        distributed calls per iteration and the round trip of one call (a map over the partitions doing nothing).
        Then the projection to 1e9 documents on 64 workers and the largest problem RankSVM fits in 24 GB.
many    fit_many: 200 one-vs-rest tasks on the embedded LightGBM data (RankSVM, C = 1e-3), serially, on two
        threads and on two processes (joblib's loky).
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from cyrank import RankSVM  # noqa: E402


def letor_dask(n, d, chunk, seed=0):
    """X, y, qid as dask arrays generated on the workers: uniform features, labels 0-2 by per-query thresholds of
    a noisy linear score (quantiles 60/85 % of the global score distribution), queries of 100 rows."""
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.random_sample((n, d), chunks=(chunk, d))
    w = np.random.default_rng(seed).normal(size=d)
    score = X @ w + rs.normal(scale=1.0, size=n, chunks=chunk)
    mean, sd = float(w.sum() / 2), float(np.sqrt((w ** 2).sum() / 12 + 1.0))
    y = (score > mean + 0.25 * sd).astype(np.float64) + (score > mean + 1.04 * sd)
    qid = da.arange(n, chunks=chunk) // 100
    return X, y, qid


def _noop(shard):
    return 0


def bench_dask(quick):
    import distributed

    from cyrank import ranksvm
    from cyrank.dask import DistributedLoss
    from cyrank.optim.datafit import minimise
    from cyrank.optim.penalties import Penalty

    n, d, chunk = (200_000, 20, 50_000) if quick else (2_000_000, 50, 100_000)
    print(f"\n### DaskRankSVM: {n:,} documents x {d} dense features, queries of 100, C = 1e-3, tol = 1e-3\n")
    print("`build` = generating the data and building the partitions' loss objects on the workers (for one "
          "process: the layout and loss object of the data in memory); `Newton` = the TRON iterations alone (what "
          "DaskRankSVM.fit runs after the build); a call = one map over the partitions and one sum (an evaluation "
          "or a Hessian-vector product); round trip = a map over the partitions that does nothing (median of 20). "
          "Every worker and the one-process run use one thread.\n")
    rows = []
    for workers in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=None, memory_limit="10GB")
            client = distributed.Client(cluster)
        try:
            X, y, qid = letor_dask(n, d, chunk)
            t0 = time.perf_counter()
            problem = DistributedLoss.build("DaskRankSVM", X, y, qid, params={"C": 1e-3}, client=client)
            t_build = time.perf_counter() - t0
            trips = []
            for _ in range(20):
                t = time.perf_counter()
                client.gather(client.map(_noop, problem.shards, pure=False))
                trips.append(time.perf_counter() - t)
            t0 = time.perf_counter()
            res = minimise(problem, Penalty(0.0, 0.5), tol=1e-3, max_iter=1000)  # DaskRankSVM.fit's solve
            t_newton = time.perf_counter() - t0
            rows.append((f"DaskRankSVM, {workers} worker{'s' * (workers > 1)}", problem.n_partitions, t_build,
                         t_newton, res.n_iter, res.n_inner, problem.n_calls, float(np.median(trips)), res.objective))
            if workers == 2:
                Xl, yl, ql = (np.asarray(a) for a in client.compute([X, y, qid], sync=True))
            problem.release()
        finally:
            client.close()
            cluster.close()
    calls = [0]
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # one core, as each worker (distributed's nannies set OMP_NUM_THREADS=1); the
        t0 = time.perf_counter()  # layout fixes the kernels' thread count, so it is made inside the limit
        local = ranksvm.loss(Xl, yl, ql, C=1e-3)
        t_build = time.perf_counter() - t0
        evaluate, hess = local.evaluate, local.hessian_product
        local.evaluate = lambda *a: (calls.__setitem__(0, calls[0] + 1), evaluate(*a))[1]
        local.hessian_product = lambda *a: (calls.__setitem__(0, calls[0] + 1), hess(*a))[1]
        t0 = time.perf_counter()
        res = minimise(local, Penalty(0.0, 0.5), tol=1e-3, max_iter=1000)
        t_newton = time.perf_counter() - t0
    rows.append(("RankSVM, one process, one thread (data in memory)", 1, t_build, t_newton, res.n_iter, res.n_inner,
                 calls[0], 0.0, res.objective))
    print("| fit | partitions | build s | Newton s | Newton iterations | CG steps | calls | s per Newton iteration "
          "| ms per call | round trip ms | scheduling share | objective |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, parts, build, newton, it, cg, ncalls, trip, obj in rows:
        per_call = newton / max(ncalls, 1)
        share = f"{min(1.0, trip / per_call):.0%}" if trip else "-"
        print(f"| {name} | {parts} | {build:.2f} | {newton:.3f} | {it} | {cg} | {ncalls} | {newton / max(it, 1):.3f} "
              f"| {1e3 * per_call:.1f} | {1e3 * trip:.1f} | {share} | {obj:.10g} |")
    local_row, two = rows[-1], rows[1]
    per_row = local_row[3] / local_row[6] / n  # seconds per row and call, one core, no scheduling
    overhead = two[7]
    big = 1e9 / 64 * per_row + overhead
    print(f"\nProjection: one call costs {per_row * 1e9:.1f} ns per row on one core (the one-process row) plus the "
          f"round trip ({1e3 * overhead:.0f} ms here); for 1e9 documents on 64 workers that is "
          f"{1e9 / 64 * per_row:.2f} s + the round trip per call, {two[6]} calls as here: about "
          f"{two[6] * big:.0f} s per fit (the partition build, reading the data, comes on top). One process holds X "
          f"in float64 ({8 * d} bytes per row here) plus about 60 bytes per row of layout and state: in 24 GB at most "
          f"{24e9 / (8 * d + 60):.2e} documents of {d} features.")


def bench_many(quick):
    import joblib

    from cyrank.datasets import load_lightgbm_rank
    from cyrank.many import fit_many

    X, y, qid = load_lightgbm_rank("train")
    n_tasks = 20 if quick else 200
    rng = np.random.default_rng(0)
    W = rng.normal(size=(X.shape[1], n_tasks))
    S = np.asarray(X @ W) + rng.normal(size=(X.shape[0], n_tasks))
    Y = (S > np.quantile(S, 0.8, axis=0)).astype(np.float64)  # task t: its top 20% documents relevant
    print(f"\n### fit_many: {n_tasks} one-vs-rest tasks on LightGBM rank.train (3,005 x 300 sparse), RankSVM(C=1e-3)\n")
    print("| backend | seconds | speed-up over serial | same models |")
    print("|---|---:|---:|---|")
    t0 = time.perf_counter()
    serial = fit_many(RankSVM(C=1e-3, n_jobs=1), X, Y, qid, n_jobs=1)
    t_serial = time.perf_counter() - t0
    print(f"| serial | {t_serial:.2f} | 1.00x | - |")
    for backend in ("threading", "loky"):
        best = np.inf
        for _ in range(2):
            with joblib.parallel_backend(backend, n_jobs=2):
                t0 = time.perf_counter()
                many = fit_many(RankSVM(C=1e-3), X, Y, qid)
                best = min(best, time.perf_counter() - t0)
        same = np.array_equal(many.coef_.toarray(), serial.coef_.toarray())
        print(f"| {backend}, 2 workers | {best:.2f} | {t_serial / best:.2f}x | {same} |")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="dask,many")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    print(f"## Past one machine (`python bench/bench_dask.py`)\n\n{os.cpu_count()} cores; load average at start "
          f"{os.getloadavg()[0]:.1f}.")
    if "dask" in args.only:
        bench_dask(args.quick)
    if "many" in args.only:
        bench_many(args.quick)


if __name__ == "__main__":
    main()
