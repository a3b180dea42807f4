"""DominationRank with sample_weight (issue 29): what a weighted fit costs against the unweighted fit on the same
data (target <= 1.1x), one thread, the contenders alternated, fastest of ``--reps`` fits each. Times are CPU
seconds of the process (time.process_time; the kernels': of the thread), not wall time: on a shared machine the
wall time of a fit was up to 3x its CPU time and swung by 2x between runs, the CPU time by a few percent.

    python bench/bench_domination_weights.py                 # 1e5 x 136 float32 dense and 1e5 x 2e4 sparse
    python bench/bench_domination_weights.py --quick         # smaller problems, to check that the script runs
    python bench/bench_domination_weights.py --unweighted    # the unweighted fits only (run it under two builds
                                                             # to compare them: PYTHONPATH=<other tree>)
    python bench/bench_domination_weights.py --kernels DIR   # the unweighted kernels of this build against those
                                                             # compiled in DIR (another build's cyrank/domination)

Weights: "ones" is sample_weight=np.ones(n): the weighted code path on the unweighted problem, the same iterates
bit for bit, so its time ratio is the cost of the weights alone; "ips" is 1 / propensity of a random position
1..100 in its query with propensity (1 / position)^1 (weights 1..100, Joachims et al. 2017): another problem,
whose fits may take other iteration counts, so the time per iteration is compared too.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from bench_domination import dense_problem, sparse_problem  # noqa: E402
from cyrank.domination import DominationRank, path  # noqa: E402


def cases(quick):
    """(name, X, y, qid) of the measured problems."""
    n = 20_000 if quick else 100_000
    X, y, qid = dense_problem(n, 136, 100, dtype=np.float32)
    Xs, ys, qs = sparse_problem(n, n // 5, 10 * n, 100)
    return [(f"dense float32 {n:,} x 136, queries of 100, labels 0-4", X, y, qid),
            (f"sparse float64 {n:,} x {n // 5:,}, {Xs.nnz:,} nnz, queries of 100, labels 0-2", Xs, ys, qs)]


def fits(X, y, qid):
    """(name, parameters) of the measured fits: the default solver (l2) and CD with l1 at 3% of alpha_max, to
    convergence on dense X, for 50 sweeps on sparse X (where it takes hundreds: the cost per sweep is measured)."""
    top = path(X, y, qid, n_alphas=1).alpha_max
    cd = {"penalty": "l1", "alpha": 0.03 * top, "solver": "cd"}
    return [("default (l2, alpha=1)", {"penalty": "l2", "alpha": 1.0}),
            ("cd, l1 at 0.03 alpha_max", cd) if not sp.issparse(X) else
            ("cd, l1 at 0.03 alpha_max, 50 sweeps", {**cd, "max_iter": 50})]


def ips_weights(qid, seed=0):
    """1 / (1 / position)^1 for a random position of each row in its query (weights 1..query size)."""
    rng = np.random.default_rng(seed)
    pos = np.empty(qid.shape[0])
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        pos[rows] = rng.permutation(rows.size) + 1
    return pos


def fit_once(X, y, qid, sw, params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        # (no keyword when unweighted: --unweighted also runs on builds that predate sample_weight)
        est = DominationRank(**params).fit(X, y, qid, **({} if sw is None else {"sample_weight": sw}))
        return time.process_time() - t, est


def bench_cost(quick, reps):
    print("\n### DominationRank: weighted fit / unweighted fit, same data (one thread, alternated, fastest of "
          f"{reps}, CPU seconds)\n")
    print("| data | fit | unweighted s (iterations) | ones s (iterations) | ones / unweighted | ips s (iterations) "
          "| ips / unweighted | per iteration |")
    print("|---|---|---|---|---:|---|---:|---:|")
    for name, X, y, qid in cases(quick):
        weights = {"none": None, "ones": np.ones(y.shape[0]), "ips": ips_weights(qid)}
        for fit_name, params in fits(X, y, qid):
            best = {k: np.inf for k in weights}
            est = {}
            for _ in range(reps):
                for k, sw in weights.items():
                    t, est[k] = fit_once(X, y, qid, sw, params)
                    best[k] = min(best[k], t)
            np.testing.assert_array_equal(est["ones"].coef_, est["none"].coef_)  # the same iterates
            it = {k: max(1, e.n_iter_ + e.n_cg_iter_) for k, e in est.items()}
            per_it = (best["ips"] / it["ips"]) / (best["none"] / it["none"])
            print(f"| {name} | {fit_name} | {best['none']:.3f} ({est['none'].n_iter_}) | {best['ones']:.3f} "
                  f"({est['ones'].n_iter_}) | {best['ones'] / best['none']:.3f} | {best['ips']:.3f} "
                  f"({est['ips'].n_iter_}) | {best['ips'] / best['none']:.2f} | {per_it:.2f} |", flush=True)
    print("\n`iterations`: n_iter_ (the per-iteration ratio counts n_iter_ + n_cg_iter_, the inner products or "
          "evaluations too). `ones`: the same problem through the weighted kernels.")


def load_kernel(directory, name):
    """The compiled module cyrank/domination/<name> found in ``directory``, imported beside this build's (as
    package "other", so that its init function PyInit_<name> is found and it does not replace ours)."""
    import glob
    import importlib.util

    path = glob.glob(os.path.join(directory, f"{name}.cpython-*.so"))[0]
    spec = importlib.util.spec_from_file_location(f"other.{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_kernels(quick, reps, directory):
    """Unweighted kernel calls of this build and of the one in ``directory``, alternated, fastest of many: the
    smooth solvers' fused loss and gradient and Hessian product (_smooth), and 5 CD sweeps with l1 (_cd)."""
    from cyrank.domination import _cd, _smooth
    from cyrank.domination.solver import _columns, _layout, _rows_of

    other = {name: load_kernel(directory, name) for name in ("_cd", "_smooth")}
    ours = {"_cd": _cd, "_smooth": _smooth}
    print(f"\n### Unweighted kernels: this build / the build in {directory} (one thread, alternated, fastest of "
          f"{reps * 4}, CPU time of the thread)\n")
    print("| data | kernel | this build CPU ms | other build CPU ms | ratio |")
    print("|---|---|---:|---:|---:|")
    for name, X, y, qid in cases(quick):
        layout, _ = _layout(y, qid, np.zeros(y.shape[0]), binary=False, group_by_query=True)
        rows = _rows_of(X)
        cols = _columns(X, layout.rows)
        d = X.shape[1]
        w = np.random.default_rng(0).normal(size=d) * 0.01
        beta = _cd.hessian_bounds(*cols, layout, _cd.HESSIAN_POPOVICIU)
        lam1 = 0.03 * float(np.max(np.abs(_cd.gradient(*cols, layout, np.zeros(d)))))
        psr = 0 if cols[3] else 8

        def smooth_calls(mod):
            st = mod.State(layout)
            xg, out = np.zeros(d), np.zeros(d)

            def fun_grad():
                mod.fun_grad(*rows, d, st, w, xg)

            def hess_vec():
                mod.hess_vec(*rows, d, st, w, out)
            fun_grad()
            return {"_smooth.fun_grad": fun_grad, "_smooth.hess_vec": hess_vec}

        def cd_call(mod):
            def sweeps():
                mod.solve(*cols, layout, np.zeros(d), beta, lam1, 0.0, 1e-300, 5, 0, 0, np.zeros(5),
                          np.zeros(5, np.intp), psr)
            return {"_cd.solve, 5 sweeps l1": sweeps}

        calls = {"this": {**smooth_calls(ours["_smooth"]), **cd_call(ours["_cd"])},
                 "other": {**smooth_calls(other["_smooth"]), **cd_call(other["_cd"])}}
        for kernel in calls["this"]:
            best = {"this": np.inf, "other": np.inf}
            for _ in range(reps * 4):
                for build in ("this", "other"):
                    t = time.thread_time()
                    calls[build][kernel]()
                    best[build] = min(best[build], time.thread_time() - t)
            print(f"| {name} | {kernel} | {best['this'] * 1e3:.2f} | {best['other'] * 1e3:.2f} | "
                  f"{best['this'] / best['other']:.3f} |", flush=True)


def bench_unweighted(quick, reps):
    for name, X, y, qid in cases(quick):
        for fit_name, params in fits(X, y, qid):
            best = min(fit_once(X, y, qid, None, params)[0] for _ in range(reps))
            print(f"{name} | {fit_name} | {best:.4f}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--unweighted", action="store_true")
    parser.add_argument("--kernels", metavar="DIR", default=None)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    if args.kernels:
        bench_kernels(args.quick, args.reps, args.kernels)
    else:
        (bench_unweighted if args.unweighted else bench_cost)(args.quick, args.reps)


if __name__ == "__main__":
    main()
