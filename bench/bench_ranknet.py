"""Linear RankNet (issue 28): cyrank against what a user writes by hand, on the same objective

    F(w) = sum_{(i, j): same query, y_i > y_j} log(1 + exp(-sigma (x_i - x_j) . w)) + alpha ||w||^2

(cyrank.lambdarank.objective's convention: the penalty not halved), from w = 0:

- scipy: L-BFGS-B (scipy.optimize.minimize) on the pairs enumerated once, numpy loss and exact gradient
  (np.logaddexp, scipy.special.expit, np.bincount for the per-document sums, X' g by X.T @ g);
- torch: torch.optim.LBFGS full batch (line_search_fn="strong_wolfe", float64) on the same enumerated pairs,
  softplus and autograd;
- cyrank: lambdarank.solve at its default tol (1e-6), whose certified gap must meet 1e-6 relative.

The hand-written solvers are stopped by an oracle the first time F is within 1e-6 relative of f* (f* from a
cyrank solve at tol 1e-12), so they are timed to exactly the accuracy cyrank certifies; their setup (pair
enumeration, tensors) is timed too, as cyrank's (grouping, row order) is. One thread for every contender
(OMP_NUM_THREADS=1, torch.set_num_threads(1)); the contenders alternate, best of ``--reps`` runs.

    OMP_NUM_THREADS=1 python bench/bench_ranknet.py                    # 1e4 and 1e5 documents
    OMP_NUM_THREADS=1 python bench/bench_ranknet.py --sizes 10000 --reps 3
    OMP_NUM_THREADS=1 python bench/bench_ranknet.py --only split       # the 37/sigma split against the pair loop
    OMP_NUM_THREADS=1 python bench/bench_ranknet.py --only dtype --sizes 200000   # float32 against float64 X

Data: cyrank.datasets.make_ranking, queries of ``--query`` documents, ``--features`` dense float64 features,
``--levels`` grades, seed 0, labels from X w + noise e binned per query: ``--noise`` 1 (the generator's default:
with 136 features the grades are nearly a function of X w, nearly separable, the optimum far from 0) and 12
(noise about as large as the signal, sqrt(136) = 11.7: 0.42 per pair at the optimum, against log 2 at w = 0).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from scipy.special import expit  # noqa: E402

from cyrank.datasets import make_ranking  # noqa: E402
from cyrank.lambdarank import objective, solve  # noqa: E402

RTOL = 1e-6


class Reached(Exception):
    """The oracle's stop: F came within RTOL of f*."""


def enumerate_pairs(y, qid):
    """(I, J): every pair of one query with y_I > y_J (rows grouped by query)."""
    I, J = [], []
    bounds = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        yq = y[a:b]
        i, j = np.nonzero(yq[:, None] > yq[None, :])
        I.append(i + a)
        J.append(j + a)
    return np.concatenate(I), np.concatenate(J)


def run_scipy(X, y, qid, sigma, alpha, target):
    """Seconds until L-BFGS-B's F <= target (setup included), and its evaluations."""
    t0 = time.perf_counter()
    I, J = enumerate_pairs(y, qid)
    n = X.shape[0]
    count = [0]

    def fun(w):
        s = X @ w
        u = sigma * (s[I] - s[J])
        f = float(np.logaddexp(0.0, -u).sum()) + alpha * float(w @ w)
        count[0] += 1
        if f <= target:
            raise Reached
        r = sigma * expit(-u)  # -dloss/du_ij * sigma
        gs = np.bincount(J, weights=r, minlength=n) - np.bincount(I, weights=r, minlength=n)
        return f, X.T @ gs + 2.0 * alpha * w

    try:
        minimize(fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                 options={"maxiter": 100000, "maxfun": 100000, "ftol": 0.0, "gtol": 0.0})
    except Reached:
        return time.perf_counter() - t0, count[0]
    return float("inf"), count[0]


def run_torch(X, y, qid, sigma, alpha, target):
    """Seconds until torch.optim.LBFGS's F <= target (setup included), and its evaluations."""
    import torch

    t0 = time.perf_counter()
    I, J = enumerate_pairs(y, qid)
    Xt, It, Jt = torch.from_numpy(X), torch.from_numpy(I), torch.from_numpy(J)
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1.0, max_iter=100000, max_eval=100000, tolerance_grad=0.0,
                            tolerance_change=0.0, history_size=10, line_search_fn="strong_wolfe")
    count = [0]

    def closure():
        opt.zero_grad()
        s = Xt @ w
        f = torch.nn.functional.softplus(-sigma * (s[It] - s[Jt])).sum() + alpha * (w * w).sum()
        count[0] += 1
        if f.item() <= target:
            raise Reached
        f.backward()
        return f

    try:
        for _ in range(100):
            opt.step(closure)
    except Reached:
        return time.perf_counter() - t0, count[0]
    return float("inf"), count[0]


def run_cyrank(X, y, qid, sigma, alpha):
    t0 = time.perf_counter()
    res = solve(X, y, qid, sigma=sigma, alpha=alpha)
    return time.perf_counter() - t0, res


def bench_split(reps):
    """The separable split (_ranknet.split_lambdas) against the solver's pair loop (_ranknet.pair_lambdas): loss and
    gradient at the scores of w = 0 and of the RankNet solution, queries of 100 and 1000."""
    from cyrank.lambdarank import _ranknet
    from cyrank.lambdarank.solver import _Pairs

    print("\n### The 37/sigma separable split against the pair loop (loss and gradient, one thread, best of "
          f"{reps})\n")
    print("| queries x documents | noise | scores | far pairs | spread of sigma s in a query (median) | "
          "pair loop ms | split ms | split / pair loop |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for n_q, size in ((1000, 100), (100, 1000)):
        for noise in (1.0, 12.0):
            X, y, qid = make_ranking(n_queries=n_q, n_docs=[size] * n_q, n_features=136, n_levels=5, noise=noise,
                                     random_state=0)
            pairs = _Pairs(y, qid)
            w = solve(X, y, qid, alpha=1.0).coef
            for label, scores in (("w = 0", np.zeros(y.size)), ("RankNet solution", X @ w)):
                s_sorted = np.ascontiguousarray(scores[pairs.order])
                n, off, ys = y.size, pairs.offsets, pairs.y
                g, h = np.empty(n), np.empty(n)
                t_pair = min(_seconds(lambda: _ranknet.pair_lambdas(s_sorted, ys, off, 1.0, g)) for _ in range(reps))
                t_split = min(_seconds(lambda: _ranknet.split_lambdas(s_sorted, ys, off, 1.0, g, h))
                              for _ in range(reps))
                far, total, spreads = 0, 0, []
                for a, b in zip(off[:-1], off[1:]):
                    sq, yq = s_sorted[a:b], ys[a:b]
                    better = yq[:, None] > yq[None, :]
                    far += int(np.count_nonzero(better & (np.abs(sq[:, None] - sq[None, :]) > 37.0)))
                    total += int(np.count_nonzero(better))
                    spreads.append(float(sq.max() - sq.min()))
                print(f"| {n_q} x {size} | {noise:g} | {label} | {far / total:.1%} | {np.median(spreads):.1f} | "
                      f"{1e3 * t_pair:.1f} | {1e3 * t_split:.1f} | {t_split / t_pair:.2f} |", flush=True)


def bench_dtype(sizes, reps):
    """RankNet on the same X as float32 and as float64 (the float32 values widened), alternating: wall and CPU
    seconds (the CPU time is the steadier on a shared machine) and the objectives."""
    print(f"\n### RankNet on float32 against float64 X (queries of 100, 136 features, alpha 1; best of {reps})\n")
    print("| documents | float32 s (CPU s) | float64 s (CPU s) | wall ratio | CPU ratio | objective rel. diff |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        X, y, qid = make_ranking(n_queries=n // 100, n_docs=[100] * (n // 100), n_features=136, n_levels=5,
                                 random_state=0, dtype=np.float32)
        best, obj = {}, {}
        for _ in range(reps):
            for name, A in (("float32", X), ("float64", X.astype(np.float64))):
                t, c = time.perf_counter(), time.process_time()
                obj[name] = solve(A, y, qid, alpha=1.0).objective
                t, c = time.perf_counter() - t, time.process_time() - c
                old = best.get(name, (np.inf, np.inf))
                best[name] = (min(old[0], t), min(old[1], c))
        (w32, c32), (w64, c64) = best["float32"], best["float64"]
        print(f"| {n:,} | {w32:.2f} ({c32:.2f}) | {w64:.2f} ({c64:.2f}) | {w32 / w64:.2f} | {c32 / c64:.2f} | "
              f"{abs(obj['float32'] - obj['float64']) / obj['float64']:.1e} |", flush=True)


def _seconds(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--query", type=int, default=100)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--levels", type=int, default=5)
    ap.add_argument("--noise", type=float, nargs="+", default=[1.0, 12.0])
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", choices=("fit", "split", "dtype"), default=None)
    args = ap.parse_args()
    if args.only == "dtype":
        bench_dtype(args.sizes, args.reps)
        return
    if args.only != "fit":
        bench_split(args.reps)
    if args.only == "split":
        return
    import torch

    torch.set_num_threads(1)
    print(f"\n### Linear RankNet against hand-written L-BFGS (alpha {args.alpha:g}, sigma {args.sigma:g}, queries of "
          f"{args.query}, {args.features} dense float64 features, {args.levels} grades; one thread, best of "
          f"{args.reps})\n")
    print("| noise | documents | pairs | cyrank s (iters, certified rel. gap, rel. error) | scipy L-BFGS-B s (evals) | "
          "torch LBFGS s (evals) | scipy / cyrank | torch / cyrank |")
    print("|---:|---:|---:|---|---|---|---:|---:|")
    for noise, n in itertools.product(args.noise, args.sizes):
        nq = n // args.query
        X, y, qid = make_ranking(n_queries=nq, n_docs=[args.query] * nq, n_features=args.features,
                                 n_levels=args.levels, noise=noise, random_state=0)
        f_star = solve(X, y, qid, sigma=args.sigma, alpha=args.alpha, tol=1e-12).objective
        target = f_star * (1.0 + RTOL)
        n_pairs = enumerate_pairs(y, qid)[0].size
        best = {"cyrank": np.inf, "scipy": np.inf, "torch": np.inf}
        evals = {}
        for _ in range(args.reps):
            t, res = run_cyrank(X, y, qid, args.sigma, args.alpha)
            best["cyrank"] = min(best["cyrank"], t)
            t, evals["scipy"] = run_scipy(X, y, qid, args.sigma, args.alpha, target)
            best["scipy"] = min(best["scipy"], t)
            t, evals["torch"] = run_torch(X, y, qid, args.sigma, args.alpha, target)
            best["torch"] = min(best["torch"], t)
        f = objective(X, y, qid, coef=res.coef, sigma=args.sigma, alpha=args.alpha)
        gap = res.gap / max(1.0, abs(res.objective))
        err = (f - f_star) / abs(f_star)
        assert res.converged and gap <= RTOL and err <= RTOL, (res, gap, err)
        print(f"| {noise:g} | {n:,} | {n_pairs:,} | {best['cyrank']:.3f} ({res.n_iter}, {gap:.1e}, {err:.1e}) | "
              f"{best['scipy']:.3f} ({evals['scipy']}) | {best['torch']:.3f} ({evals['torch']}) | "
              f"{best['scipy'] / best['cyrank']:.2f} | {best['torch'] / best['cyrank']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
