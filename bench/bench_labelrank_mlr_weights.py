"""LabelRankBoost and MLR with sample_weight (issue 29): what a weighted fit costs against the unweighted fit on
the same data (target <= 1.1x), one thread, the contenders alternated, fastest of ``--reps`` fits each.

    python bench/bench_labelrank_mlr_weights.py                  # both families
    python bench/bench_labelrank_mlr_weights.py --only labelrank # or mlr
    python bench/bench_labelrank_mlr_weights.py --quick          # smaller problems, to check that the script runs
    python bench/bench_labelrank_mlr_weights.py --unweighted     # the unweighted fits only (run it under two
                                                                 # builds to compare them: PYTHONPATH=<other tree>)

LabelRankBoost: 2e4 x 100 dense float64 and sparse (10% dense, positive) X, 20 labels, 5 relevant per instance
(bipartite graphs of 75 edges), "domination"; the default Newton (l2), boosting, and proximal Newton (l1, on the
first 2,000 rows).
MLR: WDBC (569 x 30, z-scored), AUC and MAP, C = 1e5, tol = 0.01 (bench_mlr.py's timing setting).

Weights: "ones" (np.ones(n)): the weighted code path on the unweighted problem, the same iterates (LabelRankBoost:
to rounding; MLR: bit for bit), so its ratio is the cost of the weights alone; "random" (uniform on 0.5 .. 2):
another problem, whose fits may take other iteration counts, so the time per unit of work is compared too
(LabelRankBoost: boosting rounds, or Newton iterations plus Hessian products / inner sweeps; MLR: separations).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402

from cyrank.labelrank import solve as labelrank_solve  # noqa: E402
from cyrank.mlr import MLR  # noqa: E402


def weighted(sw):
    """The fit's keyword for the weights: none for the unweighted fit (so that --unweighted also runs on a build from
    before sample_weight)."""
    return {} if sw is None else {"sample_weight": sw}


def labelrank_cases(quick):
    """(name, X, Y) of the measured LabelRankBoost problems."""
    n, d, L = (4_000 if quick else 20_000), 100, 20
    rng = np.random.default_rng(0)
    Xd = rng.normal(size=(n, d))
    Xs = sp.random(n, d, density=0.1, format="csr", random_state=1, data_rvs=lambda k: 1.0 + rng.random(k))
    out = []
    for name, X in ((f"dense float64 {n:,} x {d}", Xd), (f"sparse float64 {n:,} x {d}, {Xs.nnz:,} nnz", Xs)):
        score = np.asarray(X @ rng.normal(size=(d, L))) + 2.0 * rng.normal(size=(n, L))
        Y = np.zeros((n, L), dtype=np.int8)
        np.put_along_axis(Y, np.argsort(-score, axis=1)[:, :5], 1, axis=1)
        out.append((f"{name}, {L} labels, 5 relevant", X, Y))
    return out


# proximal Newton (l1) forms Hessian blocks of its working set (up to all 2,000 weights here): about 50-90 s a fit
# at 4,000 rows already, so it runs on the first L1_ROWS rows only
L1_ROWS = 2_000
LABELRANK_FITS = [("newton, l2 alpha=1e-2", {"alpha": 1e-2}),
                  ("boost, l2 alpha=1e-2, 30 rounds", {"alpha": 1e-2, "solver": "boost", "max_iter": 30}),
                  (f"prox newton, l1 alpha=1, first {L1_ROWS:,} rows", {"alpha": 1.0, "penalty": "l1"})]


def labelrank_fit(X, Y, sw, params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        res = labelrank_solve(X, Y, **params, **weighted(sw))
        # the units of work: boosting rounds, or Newton iterations plus Hessian products (inner sweeps with l1)
        return time.perf_counter() - t, res.n_iter + (0 if res.solver == "boost" else res.n_cg_iter), res.objective


def mlr_cases():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return [("WDBC 569 x 30, auc", X, y, "auc"), ("WDBC 569 x 30, map", X, y, "map")]


def mlr_fit(X, y, sw, loss):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        m = MLR(loss=loss, C=1e5, tol=0.01).fit(X, y, **weighted(sw))
        return time.perf_counter() - t, m.n_separations_, m.objective_


def compare(fit, data, n, reps, unweighted_only):
    """Alternated fits: unweighted, ones, random; the best time of each and its iterations."""
    weights = {"none": None}
    if not unweighted_only:
        weights["ones"] = np.ones(n)
        weights["random"] = np.random.default_rng(2).uniform(0.5, 2.0, size=n)
    best = {k: (np.inf, 0, 0.0) for k in weights}
    for _ in range(reps):
        for k, sw in weights.items():
            t, it, f = fit(*data, sw)
            if t < best[k][0]:
                best[k] = (t, it, f)
    return best


def row(name, fit_name, best):
    t0, it0, _ = best["none"]
    cells = [name, fit_name, f"{t0:.3f} ({it0})"]
    for k in ("ones", "random"):
        if k in best:
            t, it, _ = best[k]
            per = (t / max(it, 1)) / (t0 / max(it0, 1))
            cells += [f"{t:.3f} ({it})", f"{t / t0:.3f}x", f"{per:.3f}x"]
    print("| " + " | ".join(cells) + " |")


def header(what):
    print(f"\n| data | fit | unweighted s ({what}) | ones s | ones / none | per {what} | random s | "
          f"random / none | per {what} |")
    print("|---|---|---|---|---|---|---|---|---|")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("labelrank", "mlr"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--unweighted", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    print(f"one thread, best of {args.reps} alternated fits (a shared machine)")
    if args.only in (None, "labelrank"):
        header("unit")
        for name, X, Y in labelrank_cases(args.quick):
            for fit_name, params in LABELRANK_FITS:
                data = (X[:L1_ROWS], Y[:L1_ROWS]) if params.get("penalty") == "l1" else (X, Y)
                best = compare(lambda X, Y, sw: labelrank_fit(X, Y, sw, params), data, data[0].shape[0],
                               2 if params.get("penalty") == "l1" else args.reps, args.unweighted)
                row(name, fit_name, best)
    if args.only in (None, "mlr"):
        header("separation")
        for name, X, y, loss in mlr_cases()[: 1 if args.quick else 2]:
            best = compare(lambda X, y, sw: mlr_fit(X, y, sw, loss), (X, y), X.shape[0], args.reps, args.unweighted)
            row(name, "C=1e5 tol=0.01", best)


if __name__ == "__main__":
    main()
