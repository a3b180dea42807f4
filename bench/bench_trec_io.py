"""TREC run files and LETOR comments (issue 30): reading and writing a run of 1e6 lines, and the cost of the doc
ids on the LETOR reader.

    python bench/bench_trec_io.py --run [--lines 1000000]      # read_run / write_run against pytrec_eval, ranx
    python bench/bench_trec_io.py --letor [--rows 200000]      # load_svmlight with and without return_doc_ids
    python bench/bench_trec_io.py --letor --old PATH.so        # ... and the reader of an earlier build (PATH.so)

``--run``: a run of ``--lines`` lines (1000 documents per query, random scores with ties, ids like TREC's
``clueweb12-0000tw-00-00000``) written by ``cyrank.io.write_run``; then read by ``cyrank.io.read_run`` (one C pass
building the dicts), ``pytrec_eval.parse_run`` (a Python loop over the lines) and ``ranx.Run.from_file``; every
reader's dict is checked equal to cyrank's. ``--letor``: a LETOR 4.0-format file (46 features, 6 decimals,
``#docid = GX... inc = ... prob = ...`` comments) read by the Cython reader alone (``parse_svmlight``, what the
default ``load_svmlight`` runs), then by ``load_svmlight`` without and with ``return_doc_ids=True`` and
``return_comments=True``. Fastest of ``--repeat`` runs, contenders alternated, one thread.
"""
import argparse
import importlib.util
import io
import os
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from cyrank import _svmlight  # noqa: E402  (imported before any --old build of the same module)
from cyrank.io import load_svmlight, read_run, write_run  # noqa: E402


def best_of(contenders, repeat):
    """{name: fastest seconds}, the contenders alternated ``repeat`` times; also the last result of each."""
    best, results = {name: np.inf for name in contenders}, {}
    for _ in range(repeat):
        for name, call in contenders.items():
            t = time.perf_counter()
            results[name] = call()
            best[name] = min(best[name], time.perf_counter() - t)
    return best, results


def bench_run(lines, repeat, directory):
    rng = np.random.default_rng(0)
    per_query = 1000
    n_queries = max(1, lines // per_query)
    run = {f"q{q}": {f"clueweb12-{q:04d}tw-{d // 100:02d}-{d:05d}": float(s)
                     for d, s in enumerate(np.round(rng.normal(size=per_query), 3))} for q in range(n_queries)}
    path = os.path.join(directory, "run.txt")
    t = time.perf_counter()
    write_run(path, run, tag="bench")
    written = time.perf_counter() - t
    size = os.path.getsize(path) / 2**20
    contenders = {"cyrank.io.read_run": lambda: read_run(path)}
    if importlib.util.find_spec("pytrec_eval"):
        import pytrec_eval

        def pytrec():
            with open(path) as fh:
                return pytrec_eval.parse_run(fh)
        contenders["pytrec_eval.parse_run"] = pytrec
    if importlib.util.find_spec("ranx"):
        from ranx import Run

        contenders["ranx.Run.from_file"] = lambda: Run.from_file(path, kind="trec").to_dict()
    best, results = best_of(contenders, repeat)
    for name, got in results.items():
        assert {q: dict(d) for q, d in got.items()} == run, name
    print(f"run: {n_queries * per_query} lines, {n_queries} queries, {size:.1f} MB; write_run {written:.3f} s\n")
    print("| reader | seconds | vs cyrank |\n|---|---|---|")
    base = best["cyrank.io.read_run"]
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.3f} | {seconds / base:.1f}x |")


def letor_text(rows, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.random((rows, 46))
    out = io.StringIO()
    for i in range(rows):
        features = " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(values[i]))
        out.write(f"{rng.integers(0, 3)} qid:{i // 40} {features} #docid = GX{i % 1000:03d}-{i // 1000:02d}-"
                  f"{i:07d} inc = {rng.random():.15g} prob = {rng.random():.6f}\n")
    return out.getvalue().encode()


def bench_letor(rows, repeat, old_path):
    data = letor_text(rows)
    contenders = {"parse_svmlight (this build)": lambda: _svmlight.parse_svmlight(data)}
    if old_path:
        spec = importlib.util.spec_from_file_location("old._svmlight", old_path)
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
        contenders["parse_svmlight (--old build)"] = lambda: old.parse_svmlight(data)
    contenders["load_svmlight"] = lambda: load_svmlight(io.BytesIO(data))
    contenders["load_svmlight(return_doc_ids=True)"] = lambda: load_svmlight(io.BytesIO(data), return_doc_ids=True)
    contenders["load_svmlight(return_doc_ids=True, return_comments=True)"] = lambda: load_svmlight(
        io.BytesIO(data), return_doc_ids=True, return_comments=True)
    best, _ = best_of(contenders, repeat)
    print(f"LETOR 4.0 format: {rows} rows x 46 features with comments, {len(data) / 2**20:.1f} MB\n")
    print("| reader | seconds |\n|---|---|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.3f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", action="store_true")
    p.add_argument("--letor", action="store_true")
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--old", help="an earlier build of cyrank/_svmlight (.so) to time against")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        if args.run:
            bench_run(args.lines, args.repeat, directory)
        if args.letor:
            bench_letor(args.rows, args.repeat, args.old)


if __name__ == "__main__":
    main()
