"""The OpenMP products and fits at the current OMP_NUM_THREADS: time and run-to-run bit-identity.

Data: 2e5 x 50 dense, 2000 queries, labels 0-4. Prints, for the RankSVM pair products (_pairloss) and the
DominationRank Newton products (_smooth), the fastest of 30 calls, then the fastest of 5 fits of
RankSVM(squared_hinge) and DominationRank(newton), and whether repeated calls and fits gave bit-identical results.

Before/after a kernel change, run it against a build of each version (the old one built in a separate copy)::

    git worktree add /tmp/old <old commit> && (cd /tmp/old && python setup.py build_ext --inplace)
    for t in 1 2; do for v in /tmp/old .; do OMP_NUM_THREADS=$t PYTHONPATH=$v python bench/bench_parallel.py; done; done
"""
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

import cyrank
from cyrank import DominationRank, RankSVM, domination, ranksvm


def fastest(f, reps):
    """(fastest time in ms, list of results) of ``reps`` calls after one warm-up."""
    f()
    times, results = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        results.append(f())
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times), results


def identical(results):
    flat = [np.concatenate([np.ravel(np.asarray(r, dtype=np.float64)) for r in (res if isinstance(res, tuple)
                                                                             else (res,))]) for res in results]
    return all(np.array_equal(flat[0], r) for r in flat[1:])


def main():
    rng = np.random.default_rng(0)
    n, d, nq = 200_000, 50, 2000
    X = rng.standard_normal((n, d))
    qid = np.sort(rng.integers(0, nq, n))
    y = np.clip(np.round(X @ rng.standard_normal(d) / 4 + rng.standard_normal(n)), -2, 2) + 2
    w = 0.01 * rng.standard_normal(d)
    v = rng.standard_normal(d)
    print(f"cyrank from {os.path.dirname(cyrank.__file__)}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"{n} x {d} dense, {nq} queries\n")
    print("| what | fastest (ms) | bit-identical over repeats |")
    print("|---|---:|:---:|")

    svm = ranksvm.loss(X, y, qid, C=1.0)  # fun + grad: one pass (grad commits the state of fun)
    svm.ridge = 0.5  # RankSVM's w'w / 2
    rows = [("RankSVM pair loss + gradient", lambda: (svm.fun(w), svm.grad(w)), 30),
            ("RankSVM Hessian-vector product", lambda: svm.hess_vec(v), 30)]
    newton = domination.loss(X, y, qid)
    newton.ridge = 0.5
    rows += [("Newton loss + gradient", lambda: (newton.fun(w), newton.grad(w)), 30),
             ("Newton Hessian-vector product", lambda: newton.hess_vec(v), 30),
             ("RankSVM(squared_hinge, tol=1e-6) fit", lambda: RankSVM(C=1.0, tol=1e-6).fit(X, y, qid).coef_, 5),
             ("DominationRank(newton, tol=1e-8) fit",
              lambda: DominationRank(solver="newton", tol=1e-8).fit(X, y, qid).coef_, 5)]
    for name, f, reps in rows:
        with threadpool_limits(limits=1, user_api="blas"):
            ms, results = fastest(f, reps)
        print(f"| {name} | {ms:.1f} | {'yes' if identical(results) else 'NO'} |")


if __name__ == "__main__":
    main()
