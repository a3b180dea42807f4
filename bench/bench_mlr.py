"""MLR benchmarks (issue 5; results in bench/RESULTS.md, section "MLR").

    python bench/bench_mlr.py accuracy  [--splits 50]   kNN test error on Wine / WDBC (paper Table 2 protocol)
    python bench/bench_mlr.py timing    [--repeat 5] [--stabilization A] [--losses auc,map] [--regularizer frobenius]
                                                        training time at C = 1e5 (the MATLAB code under Octave
                                                        beside it: bench/bench_mlr_octave.py)
    python bench/bench_mlr.py inner                     inner solver vs projected subgradient vs Clarabel
    python bench/bench_mlr.py throughput                oracle throughput, n = 1e4 points, d = 50
    python bench/bench_mlr.py all --quick               everything, small (a smoke run: seconds)

Everything runs with one BLAS thread (threadpoolctl) and one oracle thread unless a table says otherwise, so
CPU seconds are those of one core. Timings are the best of several runs (CPU time of
this process) and the 1-minute load average is printed next to them: other jobs share the machine.
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository root

from cyrank.mlr import MLR  # noqa: E402
from cyrank.mlr._constraints import Separation  # noqa: E402
from cyrank.mlr._inner import RestrictedSolver, solve_inner  # noqa: E402

LOSSES = ("auc", "prec@k", "map", "mrr", "ndcg")
KNN_K = (1, 3, 5, 7)
C_GRID = (1.0, 1e2, 1e5)
PAPER = {"wine": "1.0-1.6 (Euclidean 3.1)", "wdbc": "2.6-2.9 (Euclidean 3.1)"}


def load(name):
    X, y = (load_wine if name == "wine" else load_breast_cancer)(return_X_y=True)
    return X.astype(np.float64), y


def zscore(Xtr, *others):
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    return [(Xtr - mu) / sd] + [(X - mu) / sd for X in others]


def split(n, rng, frac=0.8):
    p = rng.permutation(n)
    m = int(round(frac * n))
    return p[:m], p[m:]


def knn_errors(Ztr, ytr, Zte, yte):
    return {k: 1.0 - KNeighborsClassifier(k).fit(Ztr, ytr).score(Zte, yte) for k in KNN_K}


def load_avg():
    return os.getloadavg()[0]


# --------------------------------------------------------------------------------------------- accuracy
def accuracy(args):
    """50 random 80/20 splits, z-scored by training statistics. Per split and method, (C, kNN k) are chosen on
    a 75/25 validation split of the training set, the metric is refitted on the whole training set with the
    chosen C, and the test error of kNN with the chosen k is recorded."""
    names = ("wine", "wdbc") if args.data == "both" else (args.data,)
    print(f"## accuracy: {args.splits} splits, C grid {C_GRID}, kNN k in {KNN_K}, MLR k = 3 (prec@k, ndcg)\n")
    rows = []
    for name in names:
        X0, y0 = load(name)
        err = {m: [] for m in ("euclidean",) + LOSSES}
        chosen = {m: [] for m in LOSSES}
        fit_time = {m: [] for m in LOSSES}
        t_start = time.time()
        for s in range(args.splits):
            rng = np.random.default_rng(s)
            tr, te = split(len(y0), rng)
            fit_idx, val_idx = split(len(tr), rng, 0.75)
            Xtr, Xte = zscore(X0[tr], X0[te])
            Xfit, Xval = Xtr[fit_idx], Xtr[val_idx]
            ytr, yte, yfit, yval = y0[tr], y0[te], y0[tr][fit_idx], y0[tr][val_idx]
            ev = knn_errors(Xfit, yfit, Xval, yval)
            kbest = min(KNN_K, key=lambda k: (ev[k], k))
            err["euclidean"].append(knn_errors(Xtr, ytr, Xte, yte)[kbest])
            for loss in LOSSES:
                best = None
                for C in C_GRID:
                    m = MLR(loss=loss, C=C, k=3).fit(Xfit, yfit)
                    ev = knn_errors(m.transform(Xfit), yfit, m.transform(Xval), yval)
                    for k in KNN_K:
                        key = (ev[k], C, k)
                        if best is None or key < best:
                            best = key
                _, C, k = best
                t0 = time.process_time()
                m = MLR(loss=loss, C=C, k=3).fit(Xtr, ytr)
                fit_time[loss].append(time.process_time() - t0)
                err[loss].append(knn_errors(m.transform(Xtr), ytr, m.transform(Xte), yte)[k])
                chosen[loss].append(C)
        print(f"{name}: {args.splits} splits in {time.time() - t_start:.0f} s (load {load_avg():.1f})")
        for meth in ("euclidean",) + LOSSES:
            e = 100 * np.array(err[meth])
            extra = ""
            if meth in chosen:
                cs = ", ".join(f"{c:g}: {np.sum(np.array(chosen[meth]) == c)}" for c in C_GRID)
                extra = f"{np.mean(fit_time[meth]):.2f} | {cs}"
            else:
                extra = "- | -"
            rows.append(f"| {name} | {'MLR-' + meth.upper() if meth in LOSSES else 'Euclidean'} | "
                        f"{e.mean():.2f} | {e.std() / np.sqrt(len(e)):.2f} | {extra} |")
    print("\n| data | method | test error % (mean) | s.e. | fit CPU s (chosen C) | C chosen (count) |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\npaper Table 2 (best C and k): wine {PAPER['wine']}, wdbc {PAPER['wdbc']}")


# --------------------------------------------------------------------------------------------- timing
def timing(args):
    """Training time at C = 1e5, epsilon = 0.01: the 80% training set of split 0 and the whole data set."""
    alpha = MLR().stabilization if args.stabilization is None else args.stabilization
    print(f"## timing: C = 1e5, epsilon = 0.01, stabilization = {alpha:g}, regularizer = {args.regularizer}, "
          f"best CPU time of {args.repeat} runs\n")
    print("| data | loss | points | CPU s | oracle s | inner s | separations | batches | inner iters | objective | "
          "gap / (C eps) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    cases = [("wine", "auc"), ("wdbc", "auc"), ("wdbc", "map")] + (
        [] if args.quick else [("wine", l) for l in ("map", "mrr", "ndcg", "prec@k")] +
        [("wdbc", l) for l in ("mrr", "ndcg", "prec@k")])
    if args.losses:
        cases = [c for c in cases if c[1] in args.losses.split(",")]
    for name, loss in cases:
        X0, y0 = load(name)
        tr, _ = split(len(y0), np.random.default_rng(0))
        for part, (X, y) in (("80%", (zscore(X0[tr])[0], y0[tr])), ("all", (zscore(X0)[0], y0))):
            if args.quick and part == "all":
                continue
            best = None
            for _ in range(args.repeat):
                t0 = time.process_time()
                m = MLR(loss=loss, C=1e5, tol=0.01, stabilization=alpha, regularizer=args.regularizer).fit(X, y)
                dt = time.process_time() - t0
                if best is None or dt < best[0]:
                    best = (dt, m)
            dt, m = best
            print(f"| {name} | {loss} | {len(y)} ({part}) | {dt:.3f} | {m.oracle_time_:.3f} | {m.inner_time_:.3f} | "
                  f"{m.n_separations_} | {m.n_batches_} | {m.n_iter_} | {m.objective_:.6g} | "
                  f"{m.gap_ / (1e5 * 0.01):.2f} | {load_avg():.1f} |")


# --------------------------------------------------------------------------------------------- inner solver
def projected_subgradient(deltas, psis, C, f_star, budget_s, eta0):
    """The seed's inner solver (section 3.2): W <- Pi_PSD(W - eta_k g / ||g||), g a subgradient of
    tr(W) + C max(0, max_t Delta_t - <W, Psi_t>), eta_k = eta0 / sqrt(k) (normalised steps, so eta0 is a length
    in W-space); returns the CPU times (and iterations) at which the best objective first came within 1e-2 and
    1e-3 (relative) of f_star, the best objective and the iterations run."""
    d = psis.shape[1]
    W = np.zeros((d, d))
    flat = psis.reshape(len(deltas), -1)
    best = np.inf
    hit = {1e-2: None, 1e-3: None}
    t0 = time.process_time()
    k = 0
    while time.process_time() - t0 < budget_s:
        k += 1
        viol = deltas - flat @ W.ravel()
        t = int(np.argmax(viol))
        f = np.trace(W) + C * max(0.0, viol[t])
        if f < best:
            best = f
            for tol in hit:
                if hit[tol] is None and best <= f_star * (1 + tol):
                    hit[tol] = (time.process_time() - t0, k)
        if all(v is not None for v in hit.values()):
            break
        g = np.eye(d) - (C * psis[t] if viol[t] > 0 else 0.0)
        lam, V = np.linalg.eigh(W - eta0 / np.sqrt(k) * g / np.linalg.norm(g))
        W = (V * np.maximum(lam, 0.0)) @ V.T
    return hit, best, k


def inner(args):
    """Working sets of the Wine and WDBC MLR-AUC runs at C = 1e5 (their last restricted problem, plain
    cutting planes: the stabilised runs end with smaller ones)."""
    from reference.mlr import solve_restricted

    print("## inner solver on the last restricted problem of MLR-AUC, C = 1e5\n")
    print("| data | T | d | method | CPU s to 1e-2 | CPU s to 1e-3 | CPU s to certified 1e-6 | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("wine", "wdbc"):
        X0, y0 = load(name)
        tr, _ = split(len(y0), np.random.default_rng(0))
        X, y = zscore(X0[tr])[0], y0[tr]
        captured = {}
        orig = RestrictedSolver.solve

        def spy(self, deltas, psis, y_start=None, subset=None):
            captured["last"] = (np.array(deltas), np.array(psis))
            return orig(self, deltas, psis, y_start, subset)

        RestrictedSolver.solve = spy
        try:
            MLR(loss="auc", C=1e5, stabilization=0.0).fit(X, y)      # the Kelley working sets (T = 34 / 80)
        finally:
            RestrictedSolver.solve = orig
        deltas, psis = captured["last"]
        C = 1e5
        t0 = time.process_time()
        ref = solve_restricted(deltas, psis, C=C)
        t_ref = time.process_time() - t0
        f_star = ref.objective
        times = {}
        for rel in (1e-2, 1e-3, 1e-6):
            t0 = time.process_time()
            res = solve_inner(deltas, psis, C, "trace", tol=rel * f_star)
            times[rel] = (time.process_time() - t0, res.n_iter, res.primal)
        T, d = len(deltas), psis.shape[1]
        print(f"| {name} | {T} | {d} | interior point (ours, cold start) | {times[1e-2][0]:.4f} | "
              f"{times[1e-3][0]:.4f} | {times[1e-6][0]:.4f} | {times[1e-6][1]} iterations |")
        print(f"| {name} | {T} | {d} | Clarabel via cvxpy (reference) | - | - | {t_ref:.3f} | incl. cvxpy compile |")
        budget = 5.0 if args.quick else 60.0
        best_run = None
        scale = float(np.linalg.norm(ref["W"]))           # step lengths relative to ||W*||_F (an oracle's help)
        for eta0 in (1e-2 * scale, 1e-1 * scale, scale, 10 * scale):
            hit, best, k = projected_subgradient(deltas, psis, C, f_star, budget / 4, eta0)
            score = (hit[1e-3][0] if hit[1e-3] else np.inf, hit[1e-2][0] if hit[1e-2] else np.inf, best)
            if best_run is None or score < best_run[0]:
                best_run = (score, eta0, hit, best, k)
        _, eta0, hit, best, k = best_run
        fmt = lambda h: f"{h[0]:.3f} ({h[1]} it)" if h else f"> {budget / 4:.0f}"
        print(f"| {name} | {T} | {d} | projected subgradient (seed 3.2), best eta0 = {eta0 / scale:g} ||W*|| | "
              f"{fmt(hit[1e-2])} | "
              f"{fmt(hit[1e-3])} | never certified | best rel. error {best / f_star - 1:.1e} after {k} it |")


# --------------------------------------------------------------------------------------------- throughput
def throughput(args):
    """One separation (all n queries) on n points in d = 50 dimensions, 10 classes."""
    n = 2000 if args.quick else 10_000
    d = 50
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, size=n)
    X = rng.normal(size=(n, d)) + 0.5 * rng.normal(size=(10, d))[y]
    L = rng.normal(size=(d, d)) / np.sqrt(d)
    print(f"## oracle throughput: n = {n}, d = {d}, 10 classes (|X+| ~ {n // 10}, |X-| ~ {9 * n // 10}), "
          f"one separation = n queries\n")
    print("| loss | W | threads | oracle s | products s | queries / s | load |")
    print("|---|---|---|---|---|---|---|")
    for loss in ("auc", "prec@k", "map", "mrr", "ndcg", "knn"):
        for wname, W in (("I", np.eye(d)), ("random PSD", L @ L.T)):
            for threads in (1, 2):
                sep = Separation(X, ("labels", y.astype(np.int64)), loss, 10, n_threads=threads)
                best = None
                for _ in range(1 if args.quick else 2):
                    sep.t_oracle = sep.t_products = 0.0
                    sep(W)
                    cur = (sep.t_oracle, sep.t_products)
                    if best is None or sum(cur) < sum(best):
                        best = cur
                print(f"| {loss} | {wname} | {threads} | {best[0]:.2f} | {best[1]:.2f} | {n / sum(best):.0f} | "
                      f"{load_avg():.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("accuracy", "timing", "inner", "throughput", "all"))
    ap.add_argument("--splits", type=int, default=50)
    ap.add_argument("--data", choices=("wine", "wdbc", "both"), default="both", help="accuracy: which data set")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stabilization", type=float, default=None, help="timing: MLR(stabilization=...)")
    ap.add_argument("--losses", default=None, help="timing: comma-separated losses to run (default: all)")
    ap.add_argument("--regularizer", default="trace", choices=("trace", "frobenius", "diagonal"),
                    help="timing: MLR(regularizer=...)")
    ap.add_argument("--quick", action="store_true", help="tiny smoke run")
    args = ap.parse_args()
    if args.quick:
        args.splits, args.repeat = 2, 1
    warnings.simplefilter("ignore", ConvergenceWarning)
    with threadpool_limits(limits=1, user_api="blas"):
        for what in (("accuracy", "timing", "inner", "throughput") if args.what == "all" else (args.what,)):
            globals()[what](args)
            print()


if __name__ == "__main__":
    main()
