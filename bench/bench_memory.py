"""Peak memory and time of one fit per family, each in a fresh process, against LightGBM on the same X.

For each fit and each dtype of X (float32, float64) a child process loads X (and y, qid or Y) from .npy files
written once by the parent, runs a small warm-up fit (so lazy imports and first allocations are not counted),
resets its high-water mark (``5`` into /proc/self/clear_refs), reads VmRSS, fits, and reads VmHWM. The excess
peak memory is (VmHWM - VmRSS before the fit) / X.nbytes: what the fit needs beyond the data it was handed.

Ranking data: ``make_ranking`` (dense, float64 holding float32 values, ``--rows`` documents x ``--features`` in queries of ``--query``), rows
sorted by query so LightGBM takes X as it is. Label ranking: the same X with ``--labels`` labels, each
instance's labels above the median of a random linear score relevant.

Usage (issue 28):

    OMP_NUM_THREADS=1 python bench/bench_memory.py --rows 1000000 --features 136 --query 100

Linux only (reads /proc/self/status).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# name -> (data kind, what the child builds); every estimator at its defaults but those named here
FITS = {
    "RankSVM": ("ranking", "cyrank:RankSVM", {}),
    "DominationRank": ("ranking", "cyrank:DominationRank", {}),
    "RankNet": ("ranking", "cyrank:RankNet", {}),
    "LambdaRank": ("ranking", "cyrank:LambdaRank", {}),
    "ListNet": ("ranking", "cyrank:ListNet", {}),
    "ListMLE": ("ranking", "cyrank:ListMLE", {}),
    "LabelRankBoost": ("labels", "cyrank:LabelRankBoost", {"alpha": 1e-2}),
    "LambdaMART": ("ranking", "cyrank:LambdaMART", {"n_estimators": 20, "n_jobs": 1}),
    "LightGBM": ("ranking", "lightgbm", {"n_estimators": 20}),
}


def _status(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def peak_above_rss(fit):
    """(fit(), its seconds, the bytes its peak RSS rose above the RSS before it): the high-water mark reset to the
    current RSS (``5`` into /proc/self/clear_refs), VmRSS read before the call and VmHWM after. The one measure of
    every bench script's memory tables (each runs it in a fresh process, after a warm-up fit). Linux only."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before = _status("VmRSS")
    t0 = time.perf_counter()
    result = fit()
    seconds = time.perf_counter() - t0
    return result, seconds, _status("VmHWM") - before


def _lightgbm_fit(X, y, qid, n_estimators):
    """LightGBM's own lambdarank with LambdaMART's settings (cyrank.LambdaMART's defaults)."""
    import lightgbm as lgb

    n = X.shape[0]
    params = {"objective": "lambdarank", "learning_rate": 0.1, "num_leaves": 31,
              "min_data_in_leaf": min(20, n // 10), "num_threads": 1, "verbosity": -1, "deterministic": True,
              "force_row_wise": True, "feature_pre_filter": False}
    group = np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))
    return lgb.train(params, lgb.Dataset(X, label=y, group=group), num_boost_round=n_estimators)


def _make(spec, params):
    import importlib

    module, _, cls = spec.partition(":")
    return getattr(importlib.import_module(module), cls)(**params)


def child(args):
    """Runs in the fresh process: warm up, reset the high-water mark, fit, print one JSON line."""
    kind, spec, params = FITS[args.fit]
    X = np.load(os.path.join(args.dir, f"X_{args.dtype}.npy"))
    if kind == "ranking":
        target, qid = np.load(os.path.join(args.dir, "y.npy")), np.load(os.path.join(args.dir, "qid.npy"))
    else:
        target, qid = np.load(os.path.join(args.dir, "Y.npy")), None
    small = np.flatnonzero(qid < qid[0] + 20) if qid is not None else np.arange(min(2000, X.shape[0]))

    def fit(rows):
        Xr = X if rows is None else X[rows]
        tr = target if rows is None else target[rows]
        if spec == "lightgbm":
            return _lightgbm_fit(Xr, tr, qid if rows is None else qid[rows], params["n_estimators"])
        est = _make(spec, params)
        return est.fit(Xr, tr) if qid is None else est.fit(Xr, tr, qid=qid if rows is None else qid[rows])

    import warnings

    warnings.simplefilter("ignore")
    fit(small)  # imports and first allocations, outside the measurement
    model, seconds, excess = peak_above_rss(lambda: fit(None))
    out = {"fit": args.fit, "dtype": args.dtype, "seconds": seconds, "excess": excess / X.nbytes,
           "X_MB": X.nbytes / 2**20, "objective": getattr(model, "objective_", None),
           "n_iter": int(getattr(model, "n_iter_", getattr(model, "current_iteration", lambda: -1)()))}
    print(json.dumps(out))


def write_data(args, where):
    from cyrank.datasets import make_ranking

    n_queries = max(1, args.rows // args.query)
    X, y, qid = make_ranking(n_queries, [args.query] * n_queries, args.features, 5, random_state=0)
    order = np.argsort(qid, kind="stable")
    # float64 X = the float32 values widened, so the two fits of a family solve the same problem
    X, y, qid = np.ascontiguousarray(X[order]).astype(np.float32).astype(np.float64), y[order], qid[order]
    rng = np.random.default_rng(1)
    S = X @ rng.standard_normal((args.features, args.labels))
    Y = (S > np.median(S, axis=1, keepdims=True)).astype(np.int64)
    np.save(os.path.join(where, "X_float64.npy"), X)
    np.save(os.path.join(where, "X_float32.npy"), X.astype(np.float32))
    for name, arr in (("y", y), ("qid", qid), ("Y", Y)):
        np.save(os.path.join(where, f"{name}.npy"), arr)
    del X, S


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--query", type=int, default=100)
    ap.add_argument("--labels", type=int, default=20)
    ap.add_argument("--fits", default=",".join(FITS))
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--fit", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    fits = args.fits.split(",")
    unknown = sorted(set(fits) - set(FITS))
    if unknown:
        ap.error(f"unknown fits {unknown}; choose from {sorted(FITS)}")
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    rows = []
    with tempfile.TemporaryDirectory() as where:
        write_data(args, where)
        for fit in fits:
            for dtype in args.dtypes.split(","):
                cmd = [sys.executable, __file__, "--child", "--fit", fit, "--dtype", dtype, "--dir", where]
                done = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    print(f"{fit} {dtype} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                    continue
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
                r = rows[-1]
                print(f"  {fit} {dtype}: {r['seconds']:.2f} s, excess {r['excess']:.2f}x X", file=sys.stderr)
    print(f"\n{args.rows:,} documents x {args.features} dense features, queries of {args.query} "
          f"(label ranking: {args.labels} labels); X = {rows[0]['X_MB']:.0f} MB in float32" if rows else "")
    print("\n| fit | dtype | excess peak memory (x X) | time s | float32 / float64 time | objective | iterations |")
    print("|---|---|---:|---:|---:|---|---:|")
    by = {(r["fit"], r["dtype"]): r for r in rows}
    for r in rows:
        other = by.get((r["fit"], "float64"))
        ratio = f"{r['seconds'] / other['seconds']:.2f}" if r["dtype"] == "float32" and other else ""
        obj = "" if r["objective"] is None else f"{r['objective']:.10g}"
        print(f"| {r['fit']} | {r['dtype']} | {r['excess']:.2f} | {r['seconds']:.2f} | {ratio} | {obj} | "
              f"{r['n_iter']} |")


if __name__ == "__main__":
    main()
