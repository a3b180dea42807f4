"""Certified stopping (issue 25): the smooth solvers on well-scaled and on unnormalised data, this tree against a
baseline tree, side by side in one run. Prints markdown tables (pasted into bench/RESULTS.md).

    python bench/bench_certified.py --baseline /tmp/base      # both trees, alternating, best of --reps fits
    python bench/bench_certified.py                           # this tree only
    python bench/bench_certified.py --quick                   # smaller problems

The baseline is another checkout of cyrank built in place, e.g. the commit before issue 25:
    git worktree add /tmp/base 149118b && (cd /tmp/base && python setup.py build_ext --inplace)
Each fit runs in a child process with PYTHONPATH set to the tree (one thread: OMP/OPENBLAS_NUM_THREADS=1), from raw
(X, y, qid). The optimum f* of every problem is the lowest objective of a tight fit of this tree (tol=1e-12, Newton,
whose stop is certified) and, for the scaled problems, checked against cvxpy solved in rescaled coordinates on the
small one; `gap` = (objective - f*) / max(1, |f*|).
"""
import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
ROUNDS = 3  # child processes per tree and problem, alternating; each fits --reps times


# ------------------------------------------------------------------------------------------------ problems
def problem(name, quick):
    """(X, y, qid) of a named problem: "<family>:<data>[:scaled]"."""
    sys.path.insert(0, HERE)
    from bench_domination import dense_problem, sparse_problem
    from bench_ranksvm import letor_like

    family, data, *scaled = name.split(":")
    k = 4 if quick else 1
    if data == "dense":
        X, y, qid = dense_problem(20_000 // k, 100, 100, seed=1)
    elif data == "sparse":
        X, y, qid = sparse_problem(20_000 // k, 20_000 // k, 1_000_000 // k, 100, seed=2)
    elif data == "letor":
        X, y, qid = letor_like(1000 // k, 100, 100, seed=3)
    elif data == "small":
        rng = np.random.default_rng(0)
        X = rng.normal(size=(240, 6))
        qid = np.repeat(np.arange(12), 20)
        y = np.clip(np.round(X @ rng.normal(size=6) / 2 + rng.normal(size=240)), 0, 3)
    else:
        raise ValueError(name)
    if scaled:  # a timestamp-scale column and a tiny one, as raw LETOR features (counts, PageRank) often are
        X = X.toarray() if hasattr(X, "toarray") else X.copy()
        X[:, 1] *= 1.7e9
        X[:, 3] *= 1e-3
    return X, y, qid


def estimator(family, params):
    import cyrank

    if family.startswith("dom"):
        return cyrank.DominationRank(**params)
    if family == "ranksvm":
        return cyrank.RankSVM(**params)
    return cyrank.RankNet(**params)


# ------------------------------------------------------------------------------------------------ the child
def worker(spec):
    """Fit spec["reps"] times; print {"seconds": best, "objective", "n_iter", "converged", "gap_kind"} as JSON."""
    X, y, qid = problem(spec["problem"], spec["quick"])
    best = np.inf
    for _ in range(spec["reps"]):
        est = estimator(spec["problem"].split(":")[0], spec["params"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            est.fit(X, y, qid)
            best = min(best, time.perf_counter() - t)
    print(json.dumps({"seconds": best, "objective": float(est.objective_), "n_iter": int(est.n_iter_),
                      "converged": bool(est.converged_), "gap_kind": getattr(est, "gap_kind_", "-")}))


def run(tree, spec):
    env = dict(os.environ, PYTHONPATH=tree, **ENV)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)], env=env,
                         capture_output=True, text=True, check=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------ tables
CASES = [  # (problem, solver label, params)
    ("dom:dense", "l2 auto", dict(penalty="l2", alpha=1.0)),
    ("dom:dense", "l2 newton", dict(penalty="l2", alpha=1.0, solver="newton")),
    ("dom:dense", "l2 lbfgs", dict(penalty="l2", alpha=1.0, solver="lbfgs")),
    ("dom:sparse", "l2 auto", dict(penalty="l2", alpha=1.0)),
    ("dom:sparse", "l2 newton", dict(penalty="l2", alpha=1.0, solver="newton")),
    ("dom:dense", "l1 auto", dict(penalty="l1", alpha=30.0)),
    ("dom:dense", "l1 owlqn", dict(penalty="l1", alpha=30.0, solver="owlqn")),
    ("dom:sparse", "l1 auto", dict(penalty="l1", alpha=3.0)),
    ("ranksvm:letor", "squared hinge", dict(C=1.0)),
    ("ranksvm:dense", "squared hinge", dict(C=1.0)),
    ("ranknet:dense", "RankNet", dict(alpha=1.0)),
]
SCALED = [  # the same solvers on one column x 1.7e9 and one x 1e-3
    ("dom:small:scaled", "l2 auto", dict(penalty="l2", alpha=1.0)),
    ("dom:small:scaled", "l2 lbfgs", dict(penalty="l2", alpha=1.0, solver="lbfgs")),
    ("dom:small:scaled", "l1 auto", dict(penalty="l1", alpha=1.0)),
    ("dom:small:scaled", "l1 owlqn", dict(penalty="l1", alpha=1.0, solver="owlqn")),
    ("ranksvm:small:scaled", "squared hinge", dict(C=1.0)),
    ("ranknet:small:scaled", "RankNet", dict(alpha=0.1)),
    ("dom:dense:scaled", "l2 auto", dict(penalty="l2", alpha=1.0)),
    ("dom:dense:scaled", "l2 newton", dict(penalty="l2", alpha=1.0, solver="newton")),
    ("dom:dense:scaled", "l1 auto", dict(penalty="l1", alpha=30.0)),
    ("ranksvm:dense:scaled", "squared hinge", dict(C=1.0)),
    ("ranknet:dense:scaled", "RankNet", dict(alpha=1.0)),
]


def optimum(name, params, quick, cache={}):
    """f*: this tree's Newton fit at tol=1e-12 (certified stop); cvxpy in rescaled coordinates on the small ones."""
    key = (name, json.dumps(params, sort_keys=True))
    if key not in cache:
        family = name.split(":")[0]
        X, y, qid = problem(name, quick)
        tight = dict(params, tol=1e-12, max_iter=10_000)
        if family.startswith("dom") and params.get("penalty") == "l2":
            tight["solver"] = "newton"
        elif family.startswith("dom"):
            tight["solver"] = "prox_newton"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f_star = estimator(family, tight).fit(X, y, qid).objective_
        if name.endswith(":scaled") and X.shape[0] <= 1000:
            import importlib

            scale = np.ones(X.shape[1])
            scale[1], scale[3] = 1.7e9, 1e-3
            module = importlib.import_module("reference." + {"dom": "domination"}.get(family, family))
            kw = {k: v for k, v in params.items() if k != "solver"}
            f_ref = module.solve(X, y, qid, feature_scale=scale, **kw).objective
            f_star = min(f_star, f_ref)
        cache[key] = f_star
    return cache[key]


def table(title, cases, trees, reps, quick):
    names = list(trees)
    print(f"\n### {title}\n")
    head = " | ".join(f"{t} s (iter, gap, ok)" for t in names)
    ratio = f" | {names[1]} / {names[0]} |" if len(names) == 2 else " |"
    print(f"| problem | solver | {head}{ratio}")
    print("|---|---|" + "---|" * len(names) + ("---:|" if len(names) == 2 else ""))
    for name, label, params in cases:
        f_star = optimum(name, params, quick)
        cells, seconds = [], []
        results = {}
        for _ in range(ROUNDS):  # the trees alternate, so that a busy spell of the machine hits both
            for t in names:
                r = run(trees[t], {"problem": name, "params": params, "reps": reps, "quick": quick})
                if t not in results or r["seconds"] < results[t]["seconds"]:
                    results[t] = r
        for t in names:
            r = results[t]
            gap = (r["objective"] - f_star) / max(1.0, abs(f_star))
            ok = "ok" if r["converged"] else "not converged"
            cells.append(f"{r['seconds']:.3f} ({r['n_iter']}, {gap:.1e}, {ok})")
            seconds.append(r["seconds"])
        extra = f" | {seconds[1] / seconds[0]:.2f} |" if len(names) == 2 else " |"
        print(f"| {name} | {label} | " + " | ".join(cells) + extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="path of a baseline cyrank tree built in place")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="wellscaled,scaled")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(json.loads(args.worker))
    trees = {"baseline": args.baseline} if args.baseline else {}
    trees["this tree"] = ROOT
    baseline = f" --baseline {args.baseline}" if args.baseline else ""
    print(f"## Certified stopping (`python bench/bench_certified.py{baseline}{' --quick' if args.quick else ''}`)\n")
    print(f"One thread; best of {ROUNDS} x {args.reps} fits (the trees alternating) from raw (X, y, qid), default "
          f"tol; load average "
          f"{os.getloadavg()[0]:.2f} at the start.")
    if "wellscaled" in args.only:
        table("Well-scaled data (time may not grow by more than 10%)", CASES, trees, args.reps, args.quick)
    if "scaled" in args.only.replace("wellscaled", ""):
        table("One column x 1.7e9 and one x 1e-3", SCALED, trees, args.reps, args.quick)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end.")


if __name__ == "__main__":
    main()
