"""The cost of sample_weight in RankNet, the lambda kernel and LambdaMART (issue 29: a weighted fit costs at most
1.1x the unweighted fit on the same data; the unweighted path no slower than before the weights).

- ranknet: linear RankNet (lambdarank.solve, l2, alpha 1, tol 1e-6) on 1e5 x 136 float32, queries of 100
  (make_ranking, 5 grades, noise 12), dense and CSR (density 0.1): the fit's time and Newton iterations, and the
  time of one loss + gradient evaluation and one Hessian product (the kernel's cost, free of the iteration count,
  which the weights change);
- kernel: the prepared lambdas (cyrank.lambdarank.Lambdas(...).gradient, what a boosting loop calls each round)
  on 1e5 scores, NDCG@10 and RankNet, at random scores and at all-equal scores (LambdaMART's first round: the
  O(k n) loop over runs of interchangeable rows);
- mart: LambdaMART, 20 trees of 31 leaves, one thread, 2e5 x 136 float32 (queries of 100).

Weights: uniform in [0.5, 2] on every row (none 0, so every pair is weighted). One thread (OMP_NUM_THREADS=1);
unweighted and weighted alternate, best of ``--reps``.

``--before DIR``: the unweighted path against an older build of the two kernels (DIR holds its
_ranknet*.so and _lambdas*.so, loaded in this process as the package ``before``), call by call in alternation,
so that a busy machine slows both alike: RankNet's evaluation and Hessian product (dense and CSR) and lambdas()
(NDCG@10 and RankNet, random and all-equal scores).

    OMP_NUM_THREADS=1 python bench/bench_weights_lambdarank.py
    OMP_NUM_THREADS=1 python bench/bench_weights_lambdarank.py --only ranknet,kernel --reps 3
    OMP_NUM_THREADS=1 python bench/bench_weights_lambdarank.py --before /tmp/old_kernels --reps 20
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from cyrank.datasets import make_ranking  # noqa: E402
from cyrank.lambdarank import Lambdas, solve  # noqa: E402
from cyrank.lambdarank.solver import _Pairs, _RankNetProblem, _State  # noqa: E402


def _best(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _alternate(cases, reps):
    """{name: best seconds} of the callables in ``cases`` (name -> fn), run in turn ``reps`` times."""
    best = {name: np.inf for name in cases}
    for _ in range(reps):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _weights(n, seed=1):
    return np.random.default_rng(seed).uniform(0.5, 2.0, n)


def _kw(weights):
    return {} if weights is None else {"sample_weight": weights}


def bench_ranknet(reps):
    n, per_query, d = 100_000, 100, 136
    X, y, qid = make_ranking(n // per_query, n, d, 5, noise=12.0, random_state=0)
    X32 = X.astype(np.float32)
    c = _weights(n)
    print(f"RankNet, {n} x {d} float32, queries of {per_query}, l2 alpha 1, tol 1e-6, one thread, best of {reps}")
    for name, data in (("dense", X32), ("csr 0.1", sp.csr_matrix(X32 * (np.random.default_rng(2).random(X.shape)
                                                                          < 0.1)))):
        variants = {"unweighted": None, "weighted": c}
        fits, evals, hvs = {}, {}, {}
        for label, weights in variants.items():
            def fit(weights=weights, label=label):
                fits[label] = solve(data, y, qid, alpha=1.0, **_kw(weights))
            pairs = _Pairs(y, qid, X=data, **_kw(weights))
            problem = _RankNetProblem(data, pairs)
            state = _State(n)
            w = np.random.default_rng(3).normal(size=d) * 0.05
            v = np.random.default_rng(4).normal(size=d)
            problem.evaluate(w, None, state)
            evals[label] = lambda problem=problem, state=state, w=w: problem.evaluate(w, None, state)
            hvs[label] = lambda problem=problem, state=state, v=v: problem.hessian_product(state, v, None)
            fits[label + " fn"] = fit
        t_fit = _alternate({k: fits[k + " fn"] for k in variants}, reps)
        t_eval = _alternate(evals, reps * 4)
        t_hv = _alternate(hvs, reps * 4)
        for label in variants:
            res = fits[label]
            print(f"  {name:8s} {label:10s}: fit {t_fit[label]:7.3f} s ({res.n_iter} Newton, {res.n_cg_iter} CG), "
                  f"evaluation {1e3 * t_eval[label]:7.2f} ms, Hessian product {1e3 * t_hv[label]:7.2f} ms")
        per_hv = (t_fit["weighted"] / (fits["weighted"].n_iter + fits["weighted"].n_cg_iter)) / (
            t_fit["unweighted"] / (fits["unweighted"].n_iter + fits["unweighted"].n_cg_iter))
        print(f"  {name:8s} weighted / unweighted: fit {t_fit['weighted'] / t_fit['unweighted']:.3f}x "
              f"(per Newton + CG step {per_hv:.3f}x), evaluation {t_eval['weighted'] / t_eval['unweighted']:.3f}x, "
              f"Hessian product {t_hv['weighted'] / t_hv['unweighted']:.3f}x")


def bench_kernel(reps):
    n, per_query = 100_000, 100
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, n).astype(float)
    qid = np.repeat(np.arange(n // per_query), per_query)
    c = _weights(n)
    print(f"Lambdas(...).gradient, {n} documents, queries of {per_query}, one thread, best of {reps * 4}")
    for metric in ("ndcg@10", "ranknet"):
        plain, weighted = Lambdas(y, qid, metric=metric), Lambdas(y, qid, metric=metric, sample_weight=c)
        for scores_name, s in (("random", rng.normal(size=n)), ("all equal", np.zeros(n))):
            cases = {"unweighted": lambda: plain.gradient(s), "weighted": lambda: weighted.gradient(s)}
            t = _alternate(cases, reps * 4)
            line = "  ".join(f"{k} {1e3 * v:7.2f} ms" for k, v in t.items())
            print(f"  {metric:8s} {scores_name:10s}: {line}  ratio {t['weighted'] / t['unweighted']:.3f}x")


def bench_mart(reps):
    from cyrank import LambdaMART

    n_queries, per_query, d = 2000, 100, 136
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_queries * per_query, d)).astype(np.float32)
    score = X[:, :10] @ rng.normal(size=10) + rng.normal(scale=2.0, size=X.shape[0])
    y = np.digitize(score, np.quantile(score, (0.5, 0.8, 0.93, 0.98))).astype(np.float64)
    qid = np.repeat(np.arange(n_queries), per_query)
    c = _weights(y.size)
    params = {"n_estimators": 20, "num_leaves": 31, "learning_rate": 0.1, "n_jobs": 1}
    print(f"LambdaMART ndcg@10, 20 trees of 31 leaves, {y.size} x {d} float32, queries of {per_query}, one thread, "
          f"best of {reps}")
    cases = {"unweighted": lambda: LambdaMART(**params).fit(X, y, qid),
             "weighted": lambda: LambdaMART(**params).fit(X, y, qid, sample_weight=c)}
    t = _alternate(cases, reps)
    line = "  ".join(f"{k} {v:7.3f} s" for k, v in t.items())
    print(f"  {line}  ratio {t['weighted'] / t['unweighted']:.3f}x")


def _load_before(directory):
    """The kernels _ranknet and _lambdas of an older build in ``directory``, as before._ranknet, before._lambdas."""
    import glob
    import importlib.util
    import sys
    import types

    sys.modules["before"] = types.ModuleType("before")
    modules = []
    for name in ("_ranknet", "_lambdas"):
        path = glob.glob(os.path.join(directory, name + ".*.so"))[0]
        spec = importlib.util.spec_from_file_location("before." + name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    return modules


def bench_before(directory, reps):
    """The unweighted kernels now and in the build in ``directory`` (module docstring), alternating."""
    from cyrank.lambdarank import _lambdas, _ranknet
    from cyrank.lambdarank.solver import SortedX

    old_ranknet, old_lambdas = _load_before(directory)
    n, per_query, d = 100_000, 100, 136
    X, y, qid = make_ranking(n // per_query, n, d, 5, noise=12.0, random_state=0)
    X32 = X.astype(np.float32)
    print(f"unweighted kernels, now / before ({directory}), one thread, alternating, best of {reps}")
    for name, data in (("dense", X32), ("csr 0.1", sp.csr_matrix(X32 * (np.random.default_rng(2).random(X.shape)
                                                                          < 0.1)))):
        pairs = _Pairs(y, qid, X=data)
        sx = SortedX(data, pairs)
        old_rows = old_ranknet.Rows(pairs.order, pairs.offsets, pairs.y, n, sx.rows.row_work)
        w = np.random.default_rng(3).normal(size=d) * 0.05
        v = np.random.default_rng(4).normal(size=d)
        s, ex, g, t, u = (np.empty(n) for _ in range(5))
        grad, out = np.empty(d), np.empty(d)
        cases = {}
        for label, module, rows in (("now", _ranknet, sx.rows), ("before", old_ranknet, old_rows)):
            # both builds leave the same state (s, ex) for the Hessian products
            cases["evaluation " + label] = lambda m=module, r=rows: m.evaluate(sx.parts, r, w, 1.0, s, ex, g, grad)
            cases["Hessian product " + label] = lambda m=module, r=rows: m.hess_vec(sx.parts, r, v, 1.0, s, ex, t, u,
                                                                                   out)
        best = _alternate(cases, reps)
        print("  RankNet " + name + ":  " + ";  ".join(
            f"{what} {1e3 * best[what + ' now']:6.2f} / {1e3 * best[what + ' before']:6.2f} ms = "
            f"{best[what + ' now'] / best[what + ' before']:.3f}x" for what in ("evaluation", "Hessian product")))
    rng = np.random.default_rng(0)
    yk = np.sort(rng.integers(0, 5, n).reshape(-1, per_query), axis=1).ravel().astype(float)  # label-ascending
    offsets = np.arange(0, n + 1, per_query, dtype=np.int64)
    lam, hess = np.empty(n), np.empty(n)
    for metric, code, k in (("ndcg@10", _lambdas.NDCG, 10), ("ranknet", _lambdas.RANKNET, 0)):
        for scores_name, sc in (("random", rng.normal(size=n)), ("all equal", np.zeros(n))):
            cases = {label: (lambda m=module: m.lambdas(sc, yk, offsets, code, k, 0, 1.0, 4.0, 0.0, lam, hess))
                     for label, module in (("now", _lambdas), ("before", old_lambdas))}
            best = _alternate(cases, reps)
            print(f"  lambdas {metric:8s} {scores_name:10s}: {1e3 * best['now']:7.2f} / {1e3 * best['before']:7.2f} "
                  f"ms = {best['now'] / best['before']:.3f}x")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="ranknet,kernel,mart")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--before", default=None, help="a directory with an older build's _ranknet and _lambdas")
    args = ap.parse_args(argv)
    if args.before:
        bench_before(args.before, args.reps)
        return
    runs = {"ranknet": bench_ranknet, "kernel": bench_kernel, "mart": bench_mart}
    for name in args.only.split(","):
        runs[name](args.reps)


if __name__ == "__main__":
    main()
