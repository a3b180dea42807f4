"""RankSVM benchmarks (issue 4). Prints markdown tables (the RankSVM section of bench/RESULTS.md) and writes
bench/out/ranksvm_pairs.png.

    python bench/bench_ranksvm.py                 # every section
    python bench/bench_ranksvm.py pairs linear    # some sections: pairs, linear, kernel, hinge, real, dlib, float32
    python bench/bench_ranksvm.py --quick         # small sizes (a smoke run, seconds)

Sections
  pairs   loss + gradient in the scores, one query of l documents with distinct real labels (l(l-1)/2 pairs):
          order-statistic sums (cyrank) against explicit pair enumeration in numpy, up to 1e8 pairs
  linear  full training, squared hinge, C=1, tol=1e-3, synthetic LETOR-like data (uniform [0,1) features, labels
          from a noisy linear score): 1e5 documents / 1000 queries / 100 dense features / 3 levels, in memory and
          end to end from a LETOR text file; real-valued labels; 1e6 documents
  kernel  rbf, 1e4 documents, 200 queries, 100 features, C=1, tol=1e-3
  hinge   hinge loss by cutting planes, linear, 1e4 documents, C from 1e-3 to 1
  float32 issue 28, one thread: float32 X against the same values in float64 (make_ranking, 2e5 x 136 dense, 2,000
          queries of 100, 5 grades; l2 at C=1, l1 at C=1e-4, tol=1e-6), alternating, best of 3; the l1 fit with the
          working-set Hessian block against |ws| Hessian products (1e5 x 100); peak RSS of a fit in a fresh process
          above the RSS before it, as a multiple of X's bytes
  real    the embedded LightGBM rank data: C (and gamma) chosen by 3-fold cross-validation over training queries,
          test NDCG@10 (cyrank.metrics.ndcg_score defaults: gain 2^y - 1, queries without relevant documents
          dropped)

Every timing is the best of several runs; the 1-minute load average is printed with each table, since other
jobs may share the machine's cores.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from threadpoolctl import threadpool_limits  # noqa: E402

from cyrank.datasets import make_ranking  # noqa: E402
from cyrank.io import dump_svmlight, load_svmlight  # noqa: E402
from cyrank.optim.datafit import Datafit  # noqa: E402
from cyrank.ranksvm import RankSVM  # noqa: E402
from cyrank.ranksvm import _pairloss  # noqa: E402
from cyrank.ranksvm.kernels import kernel_matrix  # noqa: E402
from cyrank.ranksvm import solve  # noqa: E402
from cyrank.ranksvm.problems import LinearSquaredHinge, make_layout  # noqa: E402


def load():
    return f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def letor_like(n_queries, per_query, d, *, real_labels=False, seed=0):
    """Uniform features, score = x.w + noise; labels: 3 levels by per-query quantiles (60/25/15 %) or real."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.random((n, d))
    s = X @ rng.normal(size=d) + rng.normal(scale=2.0, size=n)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), per_query)
    if real_labels:
        y = np.round(s + rng.normal(size=n), 6)
    else:
        r = np.argsort(np.argsort(s.reshape(n_queries, per_query), axis=1), axis=1) / per_query
        y = np.digitize(r, [0.6, 0.85]).ravel().astype(float)
    return X, y, qid


# ------------------------------------------------------------------------------------------------- pairs
def explicit_loss_grad(f, I, J):
    """sum_P max(0, 1 - f_i + f_j)^2 and its gradient in f, by enumerating the pairs (numpy)."""
    t = 1.0 - f[I] + f[J]
    np.maximum(t, 0.0, out=t)
    loss = float(t @ t)
    g = np.bincount(J, t, minlength=f.size) - np.bincount(I, t, minlength=f.size)
    return loss, 2.0 * g


def bench_pairs(quick):
    sizes = [1000, 2000, 4472, 10000, 14143] if not quick else [500, 1000]
    tree_only = [100_000, 1_000_000] if not quick else [10_000]
    rng = np.random.default_rng(0)
    rows, plot = [], []
    for l in sizes + tree_only:
        y = rng.permutation(l).astype(float)              # distinct labels: l levels, l(l-1)/2 pairs
        f = y / l * 4.0 + rng.normal(size=l)              # a partially correct ranking: many active pairs
        layout, p = make_layout(y, np.zeros(l, np.int64))
        fs, perm = layout.new_state()
        gf = np.empty(l)
        t_tree, (loss, n_act, _) = best_of(lambda: _pairloss.scores_fun_grad(f, layout, True, fs, perm, gf), 5)
        t_exp, agree = None, ""
        if l in sizes:
            order = np.argsort(y)
            rank = np.empty(l, np.int64)
            rank[order] = np.arange(l)
            I, J = np.nonzero(rank[:, None] > rank[None, :])     # all pairs (i above j)
            I, J = I.astype(np.int32), J.astype(np.int32)
            t_exp, (loss_e, g_e) = best_of(lambda: explicit_loss_grad(f, I, J), 3)
            ok = math.isclose(loss, loss_e, rel_tol=1e-9) and np.allclose(gf, g_e, rtol=1e-8, atol=1e-6 * l)
            agree = "yes" if ok else "NO"
            del I, J
        per = t_tree / (l * math.log2(l)) * 1e9
        rows.append([l, p, n_act, t_tree, t_exp, (t_exp / t_tree) if t_exp else None, per, agree])
        plot.append((p, t_tree, t_exp))
    print(f"\n### Loss + gradient in the scores: order-statistic sums vs explicit pairs ({load()})\n")
    print("One query, l documents with distinct labels (l levels), scores = 4 y/l + N(0,1); best of 5 (tree) / 3 "
          "(numpy). `ns/(l log2 l)` is the tree time divided by l log2 l.\n")
    print("| l | pairs | active pairs | tree (s) | explicit numpy (s) | speed-up | tree ns/(l log2 l) | same result |")
    print("|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for l, p, a, tt, te, sp_, per, ag in rows:
        print(f"| {l:,} | {p:.3g} | {a:.3g} | {tt:.4f} | {'' if te is None else f'{te:.3f}'} | "
              f"{'' if sp_ is None else f'{sp_:.0f}x'} | {per:.1f} | {ag} |")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.loglog([r[0] for r in plot], [r[1] for r in plot], "o-", label="order-statistic sums (cyrank)")
        ax.loglog([r[0] for r in plot if r[2]], [r[2] for r in plot if r[2]], "s-", label="explicit pairs (numpy)")
        ax.set_xlabel("preference pairs")
        ax.set_ylabel("loss + gradient time (s)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(HERE, "out", "ranksvm_pairs.png"), dpi=120)
    except ImportError:
        pass


# ------------------------------------------------------------------------------------------------ linear
def fit_row(name, X, y, qid, repeat, threads):
    with threadpool_limits(limits=threads, user_api="openmp"):
        t, est = best_of(lambda: RankSVM(C=1.0, tol=1e-3).fit(X, y, qid), repeat)
    return [name, X.shape[0], len(np.unique(qid)), est.n_pairs_, threads, t, est.n_iter_, est.n_cg_iter_,
            est.grad_norm_, est.objective_]


def bench_linear(quick):
    nq, nq_big = (1000, 10_000) if not quick else (50, 200)
    rows = []
    X, y, qid = letor_like(nq, 100, 100)
    for threads in (1, 2):
        rows.append(fit_row("3 levels", X, y, qid, 7, threads))
    # end to end: LETOR text file -> load_svmlight -> fit, in one process
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.svm")
        dump_svmlight(X, y, path, qid=qid)
        size_mb = os.path.getsize(path) / 2**20
        t_parse, _ = best_of(lambda: load_svmlight(path), 3)
        e2e = []
        for threads in (1, 2):
            with threadpool_limits(limits=threads, user_api="openmp"):
                def run():
                    Xf, yf, qf = load_svmlight(path)
                    return RankSVM(C=1.0, tol=1e-3).fit(Xf, yf, qf)
                t, est = best_of(run, 3)
            e2e.append((threads, t, est))
    Xr, yr, qr = letor_like(nq, 100, 100, real_labels=True, seed=1)
    for threads in (1, 2):
        rows.append(fit_row("real labels, 100 docs/query", Xr, yr, qr, 5, threads))
    Xr, yr, qr = letor_like(nq // 20, 2000, 100, real_labels=True, seed=2)
    for threads in (1, 2):
        rows.append(fit_row("real labels, 2000 docs/query", Xr, yr, qr, 3, threads))
    del Xr
    Xb, yb, qb = letor_like(nq_big, 100, 100, seed=3)
    for threads in (1, 2):
        rows.append(fit_row("3 levels, 1e6 documents", Xb, yb, qb, 2, threads))
    del Xb
    print(f"\n### Linear rankSVM, squared hinge, C=1, tol=1e-3, 100 dense features ({load()})\n")
    print("In-memory `RankSVM().fit(X, y, qid)` (validation, query layout and TRON), best of 7/5/3/2 runs; "
          "`threads` = OpenMP threads of the kernels.\n")
    print("| data | documents | queries | pairs | threads | fit (s) | Newton iter | CG iter | final |g|/|g0| | "
          "objective |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:,} | {r[2]:,} | {r[3]:.3g} | {r[4]} | {r[5]:.3f} | {r[6]} | {r[7]} | {r[8]:.2e} | "
              f"{r[9]:.8g} |")
    print(f"\nEnd to end from a {size_mb:.0f} MB LETOR text file (`cyrank.io.load_svmlight` + fit in one process, "
          f"best of 3): parsing alone {t_parse:.2f} s; " +
          "; ".join(f"{th} thread(s): {t:.2f} s total" for th, t, _ in e2e) + ".")


# ------------------------------------------------------------------------------------------------ kernel
def bench_kernel(quick):
    nq = 200 if not quick else 20
    X, y, qid = letor_like(nq, 50, 100, seed=4)
    n = X.shape[0]
    t_k, _ = best_of(lambda: kernel_matrix(X, X, "rbf", 0.01, 3, 1.0), 2)
    t_fit, est = best_of(lambda: RankSVM(C=1.0, kernel="rbf", tol=1e-3).fit(X, y, qid), 2)
    print(f"\n### Kernel rankSVM, rbf, squared hinge, C=1, tol=1e-3, gamma='scale' ({load()})\n")
    print("| documents | queries | pairs | features | build Q (s) | fit total (s) | Newton iter | CG iter | "
          "Q products | Q memory (MB) | final |g|/|g0| |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {n:,} | {nq} | {est.n_pairs_:.3g} | {X.shape[1]} | {t_k:.2f} | {t_fit:.2f} | {est.n_iter_} | "
          f"{est.n_cg_iter_} | {est.n_kernel_products_} | {n * n * 8 / 2**20:.0f} | {est.grad_norm_:.2e} |")


# ------------------------------------------------------------------------------------------------- hinge
def bench_hinge(quick):
    nq = 100 if not quick else 10
    X, y, qid = letor_like(nq, 100, 100, seed=5)
    print(f"\n### Hinge loss by 1-slack cutting planes, linear, tol=1e-3 ({load()})\n")
    print(f"{X.shape[0]:,} documents, {nq} queries, 100 dense features, 3 levels; `max_iter`=1500 cutting planes. "
          "tol is in units of the mean hinge loss per pair, so the objective is within tol C|P| of the optimum; "
          "`gap` is duality_gap_ / objective_ (a certified bound).\n")
    print("| C | C x pairs | cutting planes | converged | fit (s) | gap |")
    print("|---:|---:|---:|:---:|---:|---:|")
    import warnings

    for C in (1e-3, 1e-2, 1e-1, 1.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, est = best_of(lambda: RankSVM(C=C, loss="hinge", tol=1e-3, max_iter=1500).fit(X, y, qid), 1)
        print(f"| {C:g} | {C * est.n_pairs_:.3g} | {est.n_iter_} | {'yes' if est.converged_ else 'no'} | {t:.2f} | "
              f"{est.duality_gap_ / est.objective_:.2e} |")


# -------------------------------------------------------------------------------------------------- dlib
def dlib_ranking_pairs(X, y, qid):
    """dlib's data for the same pairs: per query and label level k, relevant = the rows with y = k, nonrelevant =
    those with y < k (every pair y_i > y_j of the query exactly once)."""
    import dlib

    data = dlib.ranking_pairs()
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        levels = np.unique(y[rows])
        for k in levels[1:]:
            rp = dlib.ranking_pair()
            for i in rows[y[rows] == k]:
                rp.relevant.append(dlib.vector(X[i].tolist()))
            for i in rows[y[rows] < k]:
                rp.nonrelevant.append(dlib.vector(X[i].tolist()))
            data.append(rp)
    return data


def bench_dlib(quick):
    """Issue 17: the hinge rankSVM by in-out stabilised cutting planes (the default), by Kelley's plain cutting
    planes (Options(stabilization=0)) and by dlib's svm_rank_trainer (PyPI dlib-bin, OCA cutting planes), to the
    same certified accuracy; every objective recomputed on the same pairs."""
    import dlib

    from cyrank.ranksvm import Options, solve
    from cyrank.ranksvm.problems import LinearSquaredHinge, make_layout

    nq = 100 if not quick else 10
    X, y, qid = letor_like(nq, 100, 100, seed=5)
    layout, n_pairs = make_layout(y, qid)
    hinge = LinearSquaredHinge(X, layout, 1.0)
    data = dlib_ranking_pairs(X, y, qid)
    print(f"\n### Hinge rankSVM against dlib's svm_rank_trainer (issue 17; {load()})\n")
    print(f"{X.shape[0]:,} documents, {nq} queries of 100, 100 dense features, labels 0-2, {n_pairs:,} pairs; one "
          "thread (OMP_NUM_THREADS=1). Objective 0.5 w'w + C sum_P max(0, 1 - w'(x_i - x_j)); dlib's C is ours "
          "times |P| (it averages the hinge over the pairs), its epsilon (risk gap, in mean hinge per pair) and our "
          "tol both 1e-3: each stops with a certified objective gap <= 1e-3 C |P|. Fit time in memory, best of "
          "3 (1 for C >= 0.1); Kelley's method capped at 5,000 planes; objectives recomputed by cyrank on the same "
          "pairs.\n")
    print("| C | C x pairs | cyrank in-out s (separations) | objective | cyrank Kelley s (planes) | objective "
          "| dlib s | objective | dlib / in-out |")
    print("|---:|---:|---|---:|---|---:|---|---:|---:|")
    for C in (1e-3, 1e-2, 1e-1, 1.0):
        t_io, io = best_of(lambda: solve(X, y, qid, C=C, loss="hinge", tol=1e-3, max_iter=100000, n_jobs=1), 3)
        t_k, kel = best_of(lambda: solve(X, y, qid, C=C, loss="hinge", tol=1e-3, max_iter=5000, n_jobs=1,
                                         options=Options(stabilization=0.0)), 1 if C >= 0.1 else 3)
        trainer = dlib.svm_rank_trainer()
        trainer.c = C * n_pairs
        trainer.epsilon = 1e-3
        trainer.max_iterations = 100000
        t_d, df = best_of(lambda: trainer.train(data), 1 if C >= 0.1 else 3)
        w = np.array(list(df.weights))
        f_dlib = 0.5 * float(w @ w) + C * hinge.loss(w, squared=False)[0]
        kelley = f"{t_k:.3f} ({kel.n_iter}{'' if kel.converged else ', NOT converged'})"
        print(f"| {C:g} | {C * n_pairs:.3g} | {t_io:.3f} ({io.n_iter}) | {io.objective:.6g} | {kelley} "
              f"| {kel.objective:.6g} | {t_d:.3f} | {f_dlib:.6g} | {t_d / t_io:.1f}x |", flush=True)
    if quick:
        return
    X, y, qid = letor_like(1000, 100, 100, seed=6)
    layout, n_pairs = make_layout(y, qid)
    hinge = LinearSquaredHinge(X, layout, 1.0)
    data = dlib_ranking_pairs(X, y, qid)
    print(f"\n{X.shape[0]:,} documents, 1,000 queries of 100, 100 dense features, {n_pairs:,} pairs (one run each):\n")
    print("| C | C x pairs | cyrank in-out s (separations) | objective | dlib s | objective | dlib / in-out |")
    print("|---:|---:|---|---:|---|---:|---:|")
    for C in (1e-3, 1e-2):
        t_io, io = best_of(lambda: solve(X, y, qid, C=C, loss="hinge", tol=1e-3, max_iter=100000, n_jobs=1), 1)
        trainer = dlib.svm_rank_trainer()
        trainer.c = C * n_pairs
        trainer.epsilon = 1e-3
        trainer.max_iterations = 100000
        t_d, df = best_of(lambda: trainer.train(data), 1)
        w = np.array(list(df.weights))
        f_dlib = 0.5 * float(w @ w) + C * hinge.loss(w, squared=False)[0]
        print(f"| {C:g} | {C * n_pairs:.3g} | {t_io:.3f} ({io.n_iter}) | {io.objective:.6g} | {t_d:.3f} "
              f"| {f_dlib:.6g} | {t_d / t_io:.1f}x |", flush=True)


# -------------------------------------------------------------------------------------------------- real
def bench_real(quick):
    from cyrank.datasets import load_lightgbm_rank
    from cyrank.metrics import ndcg_score

    Xtr, ytr, qtr = load_lightgbm_rank("train")
    Xte, yte, qte = load_lightgbm_rank("test")
    ids = np.unique(qtr)
    folds = np.random.default_rng(0).permutation(ids.size) % 3
    fold_of = dict(zip(ids, folds))
    fold = np.array([fold_of[q] for q in qtr])

    def cv(params):
        scores = []
        for k in range(3):
            tr, va = fold != k, fold == k
            est = RankSVM(**params).fit(Xtr[tr], ytr[tr], qtr[tr])
            scores.append(ndcg_score(ytr[va], est.predict(Xtr[va]), qtr[va], k=10))
        return float(np.mean(scores))

    Cs = [1e-4, 1e-3, 1e-2, 1e-1, 1.0] if not quick else [1e-2]
    grids = {
        "linear": [{"C": C} for C in Cs],
        "rbf": [{"C": C, "kernel": "rbf", "gamma": g} for C in Cs for g in ("scale", 0.01, 0.1)],
    }
    if quick:
        grids["rbf"] = grids["rbf"][:1]
    rows = []
    rand = ndcg_score(yte, np.random.default_rng(0).random(yte.size), qte, k=10)
    for name, grid in grids.items():
        scored = [(cv(p), p) for p in grid]
        best_cv, best = max(scored, key=lambda t: t[0])
        t, est = best_of(lambda: RankSVM(**best).fit(Xtr, ytr, qtr), 3)
        rows.append([name, best, best_cv, est.score(Xte, yte, qte), t])
    print(f"\n### Embedded LightGBM rank data: test NDCG@10 ({load()})\n")
    print("Train 3005 documents / 201 queries, test 768 / 50, 300 sparse features. Hyper-parameters by 3-fold "
          "cross-validation over training queries (grid C in 1e-4..1, gamma in scale/0.01/0.1); NDCG@10 with gain "
          "2^y - 1, pessimistic ties, queries without a relevant document dropped. Random scores: "
          f"{rand:.4f}.\n")
    print("| model | chosen parameters | CV NDCG@10 | test NDCG@10 | fit (s) |")
    print("|---|---|---:|---:|---:|")
    for name, p, c, s, t in rows:
        print(f"| {name} | {p} | {c:.4f} | {s:.4f} | {t:.3f} |")


# ------------------------------------------------------------------------------------------------ float32
# a fit in a fresh process: X (a .npy file) loaded, a small fit run (imports), then the peak RSS of the fit
# above the RSS before it
_RSS_CHILD = """
import sys, numpy as np
from cyrank.ranksvm import solve
sys.path.insert(0, sys.argv[6])
from bench_memory import peak_above_rss
X = np.load(sys.argv[1]); y = np.load(sys.argv[2]); qid = np.load(sys.argv[3])
solve(X[:300], y[:300], qid[:300], C=float(sys.argv[5]), penalty=sys.argv[4])  # lazy imports out of the count
excess = peak_above_rss(lambda: solve(X, y, qid, C=float(sys.argv[5]), penalty=sys.argv[4], tol=1e-6))[2]
print(max(0, excess) / X.nbytes)
"""


def _excess_rss(X, y, qid, penalty, C):
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f"{k}.npy") for k in "Xyq"]
        for path, a in zip(paths, (X, y, qid)):
            np.save(path, a)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        out = subprocess.run([sys.executable, "-c", _RSS_CHILD, *paths, penalty, str(C), HERE], env=env, check=True,
                             capture_output=True, text=True, cwd=os.path.dirname(HERE))
    return float(out.stdout.split()[-1])


def bench_float32(quick):
    n_queries = 2000 if not quick else 100
    X32, y, qid = make_ranking(n_queries, [100] * n_queries, 136, 5, dtype=np.float32, random_state=0)
    X64 = X32.astype(np.float64)
    print(f"\n### RankSVM on float32 X (issue 28), {X32.shape[0]:,} x 136 dense, one thread ({load()})\n")
    print("| penalty | C | float32 fit (s) | float64 fit (s) | ratio | objective float32 | relative difference |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with threadpool_limits(limits=1):
        for penalty, C in (("l2", 1.0), ("l1", 1e-4)):
            times = {"32": [], "64": []}
            for _ in range(3):  # alternating
                for key, X in (("32", X32), ("64", X64)):
                    t0 = time.perf_counter()
                    res = solve(X, y, qid, C=C, penalty=penalty, tol=1e-6)
                    times[key].append(time.perf_counter() - t0)
                    times["obj" + key] = res.objective
            t32, t64 = min(times["32"]), min(times["64"])
            diff = abs(times["obj32"] - times["obj64"]) / abs(times["obj64"])
            print(f"| {penalty} | {C:g} | {t32:.3f} | {t64:.3f} | {t32 / t64:.2f} | {times['obj32']:.10g} | "
                  f"{diff:.1e} |")
        # the l1 working-set Hessian: one pass (hessian_block) against |ws| Hessian products (the Datafit default)
        n_q = 1000 if not quick else 50
        Xl, yl, ql = make_ranking(n_q, [100] * n_q, 100, 5, random_state=1)
        block = LinearSquaredHinge.hessian_block
        rows = []
        for name, method in (("hessian_block (one pass)", block), ("|ws| Hessian products", Datafit.hessian_block)):
            LinearSquaredHinge.hessian_block = method
            try:
                t, res = best_of(lambda: solve(Xl, yl, ql, C=1e-4, penalty="l1", tol=1e-3), 1 if "products" in name
                                 else 3)
            finally:
                LinearSquaredHinge.hessian_block = block
            rows.append((name, t, res.objective, res.n_iter))
    print(f"\nl1 fit, {Xl.shape[0]:,} x 100 dense float64, C = 1e-4, tol = 1e-3, one thread: "
          + "; ".join(f"{name} {t:.2f} s (objective {obj:.10g}, {it} iterations)" for name, t, obj, it in rows) + ".")
    print("\nPeak RSS of a float32 fit in a fresh process above the RSS before it, as a multiple of X's bytes "
          f"({X32.nbytes / 2**20:.0f} MB): " + "; ".join(
              f"{p} {_excess_rss(X32, y, qid, p, C):.2f}x" for p, C in (("l2", 1.0), ("l1", 1e-4))) + ".")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sections", nargs="*", default=["pairs", "linear", "kernel", "hinge", "real"])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = ap.parse_args()
    table = {"pairs": bench_pairs, "linear": bench_linear, "kernel": bench_kernel, "hinge": bench_hinge,
             "real": bench_real, "dlib": bench_dlib, "float32": bench_float32}
    for name in args.sections:
        if name not in table:
            ap.error(f"unknown section {name!r}; choose from {', '.join(table)}")
    for name in args.sections:
        table[name](args.quick)


if __name__ == "__main__":
    main()
