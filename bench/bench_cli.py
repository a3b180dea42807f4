"""Command line start-up and end-to-end fit (issue 14): ``cyrank -h`` and ``cyrank fit ranksvm`` on a LETOR text
file of about 120 MB, against the linear rankSVM ``train`` of Lee & Lin (the Tree-TRON code of "Large-scale Linear
RankSVM", Neural Computation 2014, from which LIBLINEAR's rankSVM extension was released), run in the same session.

    python bench/bench_cli.py --peer /path/to/liblinear/train          # writes the file to a temporary directory
    python bench/bench_cli.py --peer ... --data FILE                   # an existing LETOR file
    python bench/bench_cli.py --reader                                 # the reader alone, against scikit-learn's

Rebuilding the peer (outside this repository): fetch github.com/JasonWyse/FacRankSvm_c; in its liblinear/
directory compile the four BLAS sources into blas/blas.a (``cd blas && gcc -O3 -fPIC -c *.c && ar rcs blas.a *.o``;
the repository ships no blas/Makefile) and run ``make train``. Its solver 6 is the selection tree, 8 the AA tree
and 3 direct counting; every solver minimises w'w / 2 + C sum_P max(0, 1 - w'(x_i - x_j))^2 and stops when
||grad|| <= eps ||grad at 0|| (-e, default 0.001): the objective and stopping rule of ``RankSVM(C, tol=1e-3)``.

Both run as fresh processes on one thread (OMP_NUM_THREADS=1, ``--threads 1``); wall time of the whole process,
fastest of ``--repeat`` runs, so reading and parsing the file is included on both sides.

``--reader`` times ``cyrank.io.load_svmlight`` (cyrank's one-pass Cython reader) against
``sklearn.datasets.load_svmlight_file`` (``engine="sklearn"``) on the same file in this process, fastest of
``--repeat`` reads each, and checks that both return the same arrays.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from cyrank.io import dump_svmlight  # noqa: E402


def letor_file(path, n=80_000, d=136, query_size=120, seed=0):
    """MSLR-like synthetic LETOR data: d dense features in [0, 1) with 6 decimals, labels 0-4 from a noisy linear
    score by per-query quantiles, queries of query_size documents: about 120 MB for the defaults."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n, d)), 6)
    score = X @ rng.normal(size=d) + rng.normal(scale=2.0, size=n)
    qid = np.arange(n) // query_size
    y = np.zeros(n)
    for lo in range(0, n, query_size):
        s = score[lo:lo + query_size]
        y[lo:lo + query_size] = np.searchsorted(np.quantile(s, [0.5, 0.75, 0.9, 0.97]), s)
    dump_svmlight(X, y, path, qid=qid)
    return n, d


def wall(cmd, repeat, env):
    """(fastest wall seconds, stdout of that run) of ``cmd`` as a fresh process."""
    best, out = np.inf, ""
    for _ in range(repeat):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        elapsed = time.perf_counter() - t
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr[-2000:]}")
        if elapsed < best:
            best, out = elapsed, r.stdout + r.stderr
    return best, out


def reader(data, repeat):
    """Print a table: seconds to read ``data`` with cyrank's reader and with scikit-learn's (same arrays)."""
    import sklearn

    from cyrank.io import load_svmlight

    results = {}
    for engine in ("cyrank", "sklearn"):
        best = np.inf
        for _ in range(repeat):
            t = time.perf_counter()
            out = load_svmlight(data, engine=engine)
            best = min(best, time.perf_counter() - t)
        results[engine] = best, out
    (Xc, yc, qc), (Xs, ys, qs) = results["cyrank"][1], results["sklearn"][1]
    same = (Xc != Xs).nnz == 0 and np.array_equal(yc, ys) and np.array_equal(qc, qs)
    print(f"scikit-learn {sklearn.__version__}; same arrays: {same}\n")
    print("| reader | s | / cyrank |")
    print("|---|---:|---:|")
    base = results["cyrank"][0]
    print(f"| cyrank.io.load_svmlight (Cython, one pass) | {base:.3f} | 1.00x |")
    print(f"| sklearn.datasets.load_svmlight_file | {results['sklearn'][0]:.3f} | {results['sklearn'][0] / base:.1f}x |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", help="the peer's train executable (required unless --reader)")
    ap.add_argument("--reader", action="store_true", help="time the SVMlight reader against scikit-learn's only")
    ap.add_argument("--data", help="LETOR file (default: a generated one of about 120 MB)")
    ap.add_argument("--C", type=float, default=1e-3)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if not args.reader and not args.peer:
        ap.error("--peer is required (or --reader)")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    cyrank_bin = os.path.join(os.path.dirname(sys.executable), "cyrank")
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or os.path.join(tmp, "train.txt")
        if not args.data:
            n, d = letor_file(data)
            print(f"Data: generated, {n:,} documents, {d} dense features, queries of 120, labels 0-4")
        print(f"File: {os.path.getsize(data) / 1e6:.0f} MB. One thread; fastest of {args.repeat} runs; load average "
              f"at start {os.getloadavg()[0]:.1f}.\n")
        if args.reader:
            reader(data, args.repeat)
            return
        rows = []
        for label, cmd in [("cyrank -h", [cyrank_bin, "-h"]), ("cyrank fit -h", [cyrank_bin, "fit", "-h"])]:
            rows.append((label, *wall(cmd, 5, env)))
        model = os.path.join(tmp, "m.npz")
        t, out = wall([cyrank_bin, "fit", "ranksvm", data, "-o", model, "-t", "1", "-p", f"C={args.C}"], args.repeat,
                      env)
        obj = re.search(r"objective=([0-9.eE+-]+)", out).group(1)
        rows.append((f"cyrank fit ranksvm -p C={args.C} (objective {obj})", t, out))
        for solver, name in [(6, "selection tree"), (8, "AA tree"), (3, "direct counting")]:
            t, out = wall([args.peer, "-s", str(solver), "-c", str(args.C), data, os.path.join(tmp, "peer.model")],
                          args.repeat, env)
            f = re.findall(r"f ([0-9.eE+-]+)", out)
            rows.append((f"peer train -s {solver} ({name}) -c {args.C}" + (f" (objective {f[-1]})" if f else ""), t,
                         out))
        base = rows[2][1]
        print("| command | wall s | / cyrank fit |")
        print("|---|---:|---:|")
        for label, t, _ in rows:
            print(f"| {label} | {t:.3f} | {t / base:.2f}x |")


if __name__ == "__main__":
    main()
