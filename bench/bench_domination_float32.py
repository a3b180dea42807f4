"""DominationRank on float32 and float64 X, solver by solver: peak memory beyond X and time (issue 28).

Each fit runs in a fresh process (bench_memory.py's measure: a warm-up fit on 20 queries, the high-water mark
reset through /proc/self/clear_refs, VmRSS read before the fit and VmHWM after; excess = (VmHWM - VmRSS before)
/ X's bytes, for CSR X the bytes of its data, indices and indptr). Data: make_ranking, ``--rows`` documents x
``--features`` in queries of ``--query``, rows grouped by query; the CSR case keeps ``--density`` of the
entries. The float64 X holds the float32 X's values (the same problem); both fits solve to ``--tol``.

    OMP_NUM_THREADS=1 python bench/bench_domination_float32.py --rows 200000
    OMP_NUM_THREADS=1 python bench/bench_domination_float32.py --rows 200000 --pythonpath /path/to/old/tree

``--pythonpath`` runs the children on another checkout (built in place), for before/after tables. Linux only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_memory import peak_above_rss  # noqa: E402

# name -> (penalty, solver, largest number of iterations or None: --max-iter)
CASES = {
    "l2 auto": ("l2", "auto", None),
    "l2 lbfgs": ("l2", "lbfgs", None),
    "l2 newton": ("l2", "newton", None),
    "l1 prox_newton": ("l1", "prox_newton", None),
    "l1 owlqn": ("l1", "owlqn", None),
    "l2 cd 20 sweeps": ("l2", "cd", 20),  # (hundreds of sweeps to converge on dense data: its memory and speed)
}


def load(where, storage, dtype):
    y, qid = np.load(os.path.join(where, "y.npy")), np.load(os.path.join(where, "qid.npy"))
    if storage == "dense":
        X = np.load(os.path.join(where, f"X_{dtype}.npy"))
        return X, y, qid, X.nbytes
    X = sp.load_npz(os.path.join(where, f"Xs_{dtype}.npz")).tocsr()
    return X, y, qid, X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def child(args):
    from cyrank.domination import solve

    penalty, solver, cap = CASES[args.case]
    X, y, qid, nbytes = load(args.dir, args.storage, args.dtype)
    small = np.flatnonzero(qid < qid[0] + 20)
    params = dict(penalty=penalty, alpha=args.alpha, solver=solver, tol=args.tol, max_iter=cap or args.max_iter)
    solve(X[small], y[small], qid[small], **params)
    res, seconds, excess = peak_above_rss(lambda: solve(X, y, qid, **params))
    print(json.dumps({"seconds": seconds, "excess": excess / nbytes, "objective": res.objective,
                      "n_iter": res.n_iter, "converged": res.converged, "MB": nbytes / 2**20}))


def write_data(args, where):
    from cyrank.datasets import make_ranking

    nq = max(1, args.rows // args.query)
    X, y, qid = make_ranking(nq, [args.query] * nq, args.features, 5, dtype=np.float32, random_state=0)
    X = X.astype(np.float64)  # the float32 values: both fits solve the same problem
    Xs = sp.csr_matrix(X * (np.random.default_rng(1).random(X.shape) < args.density))
    for dtype in ("float32", "float64"):
        np.save(os.path.join(where, f"X_{dtype}.npy"), X.astype(dtype))
        sp.save_npz(os.path.join(where, f"Xs_{dtype}.npz"), Xs.astype(dtype))
    np.save(os.path.join(where, "y.npy"), y)
    np.save(os.path.join(where, "qid.npy"), qid)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--query", type=int, default=100)
    ap.add_argument("--density", type=float, default=0.1)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--storages", default="dense,csr")
    ap.add_argument("--repeat", type=int, default=1, help="fits per case and dtype, alternating; best time kept")
    ap.add_argument("--pythonpath", default=None, help="run the children on this checkout instead")
    for hidden in ("--case", "--storage", "--dtype", "--dir"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    print(f"{args.rows:,} documents x {args.features} features in queries of {args.query}; CSR keeps "
          f"{args.density:g} of the entries; tol={args.tol:g}, alpha={args.alpha:g}, one thread"
          + (f"; code from {args.pythonpath}" if args.pythonpath else ""))
    print("\n| fit | X | excess f32 (x X) | excess f64 (x X) | time f32 s | time f64 s | f32 / f64 time | "
          "objective rel. diff | iterations f32 / f64 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as where:
        write_data(args, where)
        for case in args.cases.split(","):
            for storage in args.storages.split(","):
                best = {}
                for _ in range(args.repeat):
                    for dtype in ("float32", "float64"):
                        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--case", case, "--storage",
                               storage, "--dtype", dtype, "--dir", where, "--alpha", str(args.alpha), "--tol",
                               str(args.tol), f"--max-iter={args.max_iter}"]
                        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
                        if done.returncode != 0:
                            print(f"{case} {storage} {dtype} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                            continue
                        r = json.loads(done.stdout.strip().splitlines()[-1])
                        if dtype not in best or r["seconds"] < best[dtype]["seconds"]:
                            best[dtype] = r
                if len(best) < 2:
                    continue
                a, b = best["float32"], best["float64"]
                rel = abs(a["objective"] - b["objective"]) / max(1.0, abs(b["objective"]))
                print(f"| {case} | {storage} | {a['excess']:.2f} | {b['excess']:.2f} | {a['seconds']:.2f} | "
                      f"{b['seconds']:.2f} | {a['seconds'] / b['seconds']:.2f} | {rel:.1e} | "
                      f"{a['n_iter']} / {b['n_iter']} |", flush=True)


if __name__ == "__main__":
    main()
