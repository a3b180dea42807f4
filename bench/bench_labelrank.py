"""LabelRankBoost benchmarks (Dekel, Manning & Singer 2003): Fig. 4 in shape (every decomposition trained, every
error measured), time to a 1e-6 objective gap (newton vs boost vs scipy's L-BFGS-B on a vectorised numpy loss),
the time of one boosting iteration against the number of edges, and (issue 28) the default fit against a
hand-written L-BFGS-B on cyrank's own loss and the fit's peak memory. Prints markdown tables (pasted into
bench/RESULTS.md); plots go to bench/out/.

    python bench/bench_labelrank.py                  # everything
    python bench/bench_labelrank.py --only speed     # fig4 | speed | edges | hand | memory
    python bench/bench_labelrank.py --quick          # smaller problems, to check that the script runs

The L-BFGS-B peer minimises the same objective with an independent vectorised numpy loss and gradient
(NumpyLabelRankLoss, checked against cyrank.labelrank.objective before timing). The "hand" peer is what a user
writes with the public datafit: scipy's L-BFGS-B on cyrank.labelrank.loss(X, G) plus alpha ||w||^2 (exact
gradient), stopped by an oracle at f* (1 + 1e-6); beside it, what a user writes without cyrank: the same L-BFGS-B
on NumpyLabelRankLoss (per-edge numpy), stopped by the same oracle.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from cyrank.labelrank import DECOMPOSITIONS, PreferenceGraphs, loss, objective, solve  # noqa: E402
from cyrank.metrics import label_ranking_error  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


# ---------------------------------------------------------------------------------------------------------
# Data and the numpy peer
# ---------------------------------------------------------------------------------------------------------

def multilabel_problem(n, d, L, density, n_relevant, seed=0):
    """Sparse non-negative X (tf-like) and multilabel targets from a noisy linear model: each instance's
    n_relevant best-scoring labels are relevant (bipartite graphs, n_relevant (L - n_relevant) edges each)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed, data_rvs=lambda k: 1.0 + rng.random(k))
    score = X @ rng.normal(size=(d, L)) + 2.0 * rng.normal(size=(n, L))
    top = np.argsort(-score, axis=1)[:, :n_relevant]
    Y = np.zeros((n, L), dtype=np.int8)
    np.put_along_axis(Y, top, 1, axis=1)
    return X, Y


class NumpyLabelRankLoss:
    """F(w) and its gradient (w = coef' flattened, d x L) in vectorised numpy: margins per membership, a stable
    log-sum-exp per subgraph by reduceat, gradient scattered back to the labels with bincount."""

    def __init__(self, X, G, decomposition, alpha):
        sub = G.decompose(decomposition)
        self.X, self.XT = X, X.T.tocsr() if sp.issparse(X) else X.T
        self.n, self.L, self.d = X.shape[0], G.n_labels, X.shape[1]
        inst = G.instance_of_edge()[sub.members]
        self.hi = inst * self.L + G.init[sub.members]  # flat index of S[i, init]
        self.lo = inst * self.L + G.term[sub.members]  # flat index of S[i, term]
        sizes = np.diff(sub.member_ptr)
        self.starts = sub.member_ptr[:-1]
        self.sub_of = np.repeat(np.arange(sizes.size), sizes)
        s = sub.n_subgraphs
        self.weight = (1.0 / s[sub.instance_of_subgraph()]) if sizes.size else np.zeros(0)
        self.alpha = alpha
        self.n_evals = 0

    def __call__(self, w):
        self.n_evals += 1
        W = w.reshape(self.d, self.L)
        S = np.asarray(self.X @ W).ravel()
        m = S[self.lo] - S[self.hi]
        big = np.maximum(np.maximum.reduceat(m, self.starts), 0.0)
        e = np.exp(m - big[self.sub_of])
        z = np.exp(-big) + np.add.reduceat(e, self.starts)
        loss = float(self.weight @ (big + np.log(z)))
        c = e * (self.weight / z)[self.sub_of]
        G = np.bincount(self.lo, c, self.n * self.L) - np.bincount(self.hi, c, self.n * self.L)
        grad = np.asarray(self.XT @ G.reshape(self.n, self.L))
        return loss + self.alpha * float(w @ w), (grad + 2.0 * self.alpha * W).ravel()


def lbfgs_to_gap(make_fun, d, f_star, gap, max_seconds):
    """scipy L-BFGS-B from 0 (setup timed): seconds to the first evaluation within the gap, and evaluations."""
    t0 = time.perf_counter()
    fun = make_fun()
    reached = [None]

    def f(w):
        val, g = fun(w)
        if reached[0] is None and val - f_star <= gap * abs(f_star):
            reached[0] = time.perf_counter() - t0
            raise StopIteration
        if time.perf_counter() - t0 > max_seconds:
            raise TimeoutError
        return val, g

    try:
        minimize(f, np.zeros(d), jac=True, method="L-BFGS-B",
                 options={"maxiter": 100000, "maxfun": 200000, "ftol": 0.0, "gtol": 0.0, "maxcor": 10})
    except (StopIteration, TimeoutError):
        pass
    return reached[0], fun.n_evals


def fit_to_gap(X, G, f_star, gap, max_seconds, **params):
    """Seconds of the fastest solve (loosest tol among 1e-2 .. 1e-12) within the gap, and its iterations. Each
    solve gets at most the iterations that fit in what is left of ``max_seconds`` (from the time of 20
    iterations); (None, iterations done) when the budget runs out first."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        solve(X, G, tol=1e-300, max_iter=20, **params)
        per_iteration = (time.perf_counter() - t) / 20
    spent = 0.0
    for k in range(2, 13):
        budget = max(1, int((max_seconds - spent) / per_iteration))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            res = solve(X, G, tol=10.0 ** -k, max_iter=budget, **params)
            t = time.perf_counter() - t
        spent += t
        if res.objective - f_star <= gap * abs(f_star):
            return t, res.n_iter
        if spent >= max_seconds or res.n_iter >= budget:
            return None, res.n_iter
    return None, None


# ---------------------------------------------------------------------------------------------------------
# Benchmarks
# ---------------------------------------------------------------------------------------------------------

def bench_fig4(quick):
    from cyrank.datasets import label_ranking_dataset, multilabel_dataset

    print("\n### Fig. 4 in shape: train with each decomposition, measure every error (test set)\n")
    print("Newton (solver='newton', alpha = 1e-3 per instance so the optimum is finite, tol 1e-6) on a random "
          "2/3 train, 1/3 test split (seed 0). Rows: the decomposition minimised; columns: the four test errors "
          "(cyrank.metrics.label_ranking_error, ties pessimistic). Label-ranking sets: scikit-learn's data with "
          "the labels ranked by GaussianNB probabilities (Cheng, Huehn & Huellermeier 2009; "
          "cyrank.datasets.label_ranking_dataset); multilabel: make_multilabel_classification "
          "(cyrank.datasets.multilabel_dataset), bipartite graphs.\n")
    sets = [(name, *label_ranking_dataset(name)) for name in ("iris", "wine", "digits")]
    Xm, Ym = multilabel_dataset(n_samples=600 if quick else 2000, n_features=50, n_classes=10, n_labels=3)
    sets.append(("multilabel (10 labels)", Xm, Ym))
    best_counts = np.zeros(4, int)
    for name, X, R in sets:
        G = PreferenceGraphs.from_relevance(R)
        rng = np.random.default_rng(0)
        test = rng.random(X.shape[0]) < 1 / 3
        Xtr, Xte, Gtr, Gte = X[~test], X[test], G[np.flatnonzero(~test)], G[np.flatnonzero(test)]
        print(f"**{name}** ({X.shape[0]} instances, {X.shape[1]} features, {G.n_labels} labels, "
              f"{G.n_edges / G.n_instances:.1f} edges per instance)\n")
        print("| trained on | " + " | ".join(f"eps_{e}" for e in DECOMPOSITIONS) + " | seconds |")
        print("|---|" + "---:|" * 5)
        table = []
        for dec in DECOMPOSITIONS:
            t = time.perf_counter()
            res = solve(Xtr, Gtr, decomposition=dec, solver="newton", alpha=1e-3 * Xtr.shape[0])
            t = time.perf_counter() - t
            S = np.asarray(Xte @ res.coef.T)
            errs = [label_ranking_error(Gte, S, e) for e in DECOMPOSITIONS]
            table.append(errs)
            print(f"| {dec} | " + " | ".join(f"{v:.3f}" for v in errs) + f" | {t:.3f} |")
        table = np.array(table)
        best_counts += np.array([np.isclose(table[i], table.min(axis=0)).sum() for i in range(4)])
        print()
    print("Errors on which each trained decomposition is best (ties counted for each): "
          + ", ".join(f"{dec} {c}" for dec, c in zip(DECOMPOSITIONS, best_counts)) + "\n")


def bench_speed(quick):
    n, d, L = (2000, 300, 20) if quick else (10_000, 1000, 50)
    print(f"\n### Time to a 1e-6 relative objective gap: newton vs boost vs L-BFGS-B ({n:,} x {d:,} sparse x {L} "
          "labels)\n")
    print("Multilabel graphs (the 5 best-scoring labels of a noisy linear model relevant: 5 x 45 = 225 edges per "
          "instance), X 2% dense, non-negative. f* = newton at tol 1e-12 polished by L-BFGS-B. Newton and boost: "
          "the fastest solve (loosest tol among 1e-2 .. 1e-12) within the gap, setup included; boost is given "
          "at most 600 s. L-BFGS-B: scipy from 0 on NumpyLabelRankLoss, time of the first evaluation within the "
          "gap (an oracle stop, to its advantage), setup included. One thread.\n")
    X, Y = multilabel_problem(n, d, L, 0.02, 5)
    G = PreferenceGraphs.from_indicator(Y)
    print("| decomposition | alpha | edges | newton s (iterations) | boost s (iterations) | L-BFGS-B s (evaluations) "
          "| boost / newton | L-BFGS-B / newton |")
    print("|---|---:|---:|---|---|---|---:|---:|")
    for dec, alpha in (("domination", 1.0), ("disagreement", 1.0), ("domination", 0.01)):
        fun = NumpyLabelRankLoss(X, G, dec, alpha)
        coef = np.random.default_rng(0).normal(scale=0.1, size=(L, d))
        mine = objective(X, G, coef, decomposition=dec, alpha=alpha)
        assert abs(fun(coef.T.ravel())[0] - mine) <= 1e-9 * abs(mine), "numpy objective disagrees"
        ref = solve(X, G, decomposition=dec, alpha=alpha, solver="newton", tol=1e-12, max_iter=1000)
        res = minimize(fun, ref.coef.T.ravel(), jac=True, method="L-BFGS-B", options={"ftol": 0.0, "gtol": 1e-14})
        f_star = min(ref.objective, res.fun)
        t_nt, it_nt = min(fit_to_gap(X, G, f_star, 1e-6, 600, decomposition=dec, alpha=alpha, solver="newton")
                          for _ in range(3))
        t_bo, it_bo = fit_to_gap(X, G, f_star, 1e-6, 60 if quick else 600, decomposition=dec, alpha=alpha,
                                 solver="boost")
        t_lb, ev_lb = min(lbfgs_to_gap(lambda: NumpyLabelRankLoss(X, G, dec, alpha), d * L, f_star, 1e-6, 600)
                          for _ in range(3))
        fmt = lambda t, it: f"{t:.2f} ({it})" if t is not None else f"> budget ({it})"
        ratio = lambda t: f"{t / t_nt:.1f}x" if t is not None else "n/a"
        print(f"| {dec} | {alpha:g} | {G.n_edges:,} | {fmt(t_nt, it_nt)} | {fmt(t_bo, it_bo)} | {fmt(t_lb, ev_lb)} "
              f"| {ratio(t_bo)} | {ratio(t_lb)} |", flush=True)


def boost_seconds(X, G, iterations, reps=5):
    """Median seconds of solve(solver="boost") with max_iter = iterations (warnings silenced)."""
    times = []
    for _ in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            solve(X, G, solver="boost", alpha=1.0, max_iter=iterations, tol=1e-300)
            times.append(time.perf_counter() - t)
    return float(np.median(times))


def bench_edges(quick):
    print("\n### Time of one boosting iteration against the number of edges\n")
    print("2,000 instances x 300 sparse features (2%), 50 labels; r relevant labels per instance give r (50 - r) "
          "edges each (domination decomposition). Seconds per iteration = (median time of 11 iterations - median "
          "time of 1) / 10, medians of 5 runs, so the setup cancels.\n")
    n, d, L = (500, 100, 50) if quick else (2000, 300, 50)
    rows = []
    print("| relevant labels | edges | seconds per iteration | ns per edge |")
    print("|---:|---:|---:|---:|")
    for r in (1, 2, 5, 10, 15, 20, 25):
        X, Y = multilabel_problem(n, d, L, 0.02, r)
        G = PreferenceGraphs.from_indicator(Y)
        per_iter = (boost_seconds(X, G, 11) - boost_seconds(X, G, 1)) / 10  # setup cancels
        rows.append((G.n_edges, per_iter))
        print(f"| {r} | {G.n_edges:,} | {per_iter:.4f} | {1e9 * per_iter / G.n_edges:.0f} |", flush=True)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    os.makedirs(OUT, exist_ok=True)
    e, t = np.array(rows).T
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(e, t, "o-")
    ax.set_xlabel("edges")
    ax.set_ylabel("seconds per boosting iteration")
    ax.set_title("LabelRankBoost: one boosting iteration")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "labelrank_boost_edges.png"), dpi=120)
    print("\nPlot: bench/out/labelrank_boost_edges.png")


# ---------------------------------------------------------------------------------------------------------
# Issue 28: the default fit against L-BFGS-B on the same loss, and peak memory
# ---------------------------------------------------------------------------------------------------------

def hand_problems(quick):
    """The issue's shape, 2e4 x 100 dense, 20 labels (1/5 of it with --quick): (name, X, the graphs' builder
    and its argument). "multilabel": cyrank.datasets.multilabel_dataset (count features, 3 labels on average,
    bipartite graphs); "graded": standard normal X, 5 grades of 4 labels each from a noisy linear model
    (from_relevance, 160 edges per instance); "positive (tf-like)": multilabel_problem at density 1 (features in
    [1, 2], the 5 best of 20 labels of a noisy linear model relevant: 75 edges per instance), the issue's hard
    case (plain Newton-CG needed 686 Hessian products at alpha = 0.01)."""
    from cyrank.datasets import multilabel_dataset

    n, d, L = (4000, 100, 20) if quick else (20_000, 100, 20)
    X, Y = multilabel_dataset(n_samples=n, n_features=d, n_classes=L, n_labels=3)
    rng = np.random.default_rng(0)
    Xg = rng.normal(size=(n, d))
    score = Xg @ rng.normal(size=(d, L)) / np.sqrt(d) + rng.normal(size=(n, L))
    R = np.argsort(np.argsort(score, axis=1), axis=1) // 4
    Xt, Yt = multilabel_problem(n, d, L, 1.0, 5)  # positive features in [1, 2]: a large common mean
    return [("multilabel", X, PreferenceGraphs.from_indicator, Y), ("graded", Xg, PreferenceGraphs.from_relevance, R),
            ("positive (tf-like)", Xt.toarray(), PreferenceGraphs.from_indicator, Yt)]


def lbfgs_on_loss(X, G, alpha, f_star, gap=1e-6, max_seconds=600):
    """scipy L-BFGS-B from 0 on cyrank.labelrank.loss(X, G) + alpha ||w||^2 with its exact gradient (building
    the loss timed): (seconds to the first evaluation <= f* (1 + gap), evaluations)."""
    t0 = time.perf_counter()
    datafit = loss(X, G)
    state = {"evals": 0, "reached": None}

    def f(w):
        state["evals"] += 1
        value = datafit.fun(w) + alpha * float(w @ w)
        if value <= f_star * (1.0 + gap):
            state["reached"] = time.perf_counter() - t0
            raise StopIteration
        if time.perf_counter() - t0 > max_seconds:
            raise TimeoutError
        return value, datafit.grad(w) + 2.0 * alpha * w

    try:
        minimize(f, np.zeros(datafit.n_features), jac=True, method="L-BFGS-B",
                 options={"maxiter": 100000, "maxfun": 200000, "ftol": 0.0, "gtol": 0.0})
    except (StopIteration, TimeoutError):
        pass
    return state["reached"], state["evals"]


def best_of(k, *runs):
    """Each callable run k times, alternating (a, b, a, b, ...): per callable, the result of its fastest run
    (results are tuples whose first entry is seconds, or None when it failed)."""
    best = [None] * len(runs)
    for _ in range(k):
        for j, run in enumerate(runs):
            r = run()
            if best[j] is None or (r[0] is not None and (best[j][0] is None or r[0] < best[j][0])):
                best[j] = r
    return best


def bench_hand(quick, repeats=5):
    from cyrank.labelrank import LabelRankBoost

    print("\n### Issue 28: default LabelRankBoost against a hand-written L-BFGS-B on the same objective\n")
    print("f* = cyrank.labelrank.solve at tol 1e-12. L-BFGS-B: scipy from 0 on cyrank.labelrank.loss(X, G) + alpha "
          "||w||^2 (the public datafit, exact gradient), timed to its first evaluation <= f* (1 + 1e-6) (an oracle "
          "stop), building the loss included. cyrank: solve(X, G, alpha=alpha) at the default tol (1e-6), and "
          "LabelRankBoost(alpha=alpha).fit(X, Y) (graphs built from Y inside). numpy L-BFGS-B: the same scipy "
          "L-BFGS-B on NumpyLabelRankLoss (per-edge vectorised numpy, what a user writes by hand; building its "
          "edge and membership arrays included) with the same oracle stop. Graphs: building the PreferenceGraphs "
          "(the level form for these graphs: no edge, no decomposition), timed alone. Best of "
          f"{repeats} alternating runs, one thread; the machine may be shared.\n")
    print("| data | alpha | edges | graphs s | L-BFGS-B s (evals) | numpy L-BFGS-B s (evals) | "
          "solve s (Newton its, CG) | solve gap / f* | estimator fit s | L-BFGS-B / solve | numpy L-BFGS-B / solve |")
    print("|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|")
    for name, X, build, Y in hand_problems(quick):
        G = build(Y)
        target = Y if build == PreferenceGraphs.from_indicator else G  # an indicator matrix or graphs

        def graphs():
            t = time.perf_counter()
            build(Y)
            return (time.perf_counter() - t,)

        (t_graphs,), = best_of(repeats, graphs)
        for alpha in (1.0, 0.01):
            f_star = solve(X, G, alpha=alpha, tol=1e-12, max_iter=10000).objective

            def cyrank():
                t = time.perf_counter()
                res = solve(X, G, alpha=alpha)
                return time.perf_counter() - t, res

            def estimator():
                t = time.perf_counter()
                LabelRankBoost(alpha=alpha).fit(X, target)
                return (time.perf_counter() - t,)

            fun = NumpyLabelRankLoss(X, build(Y), "domination", alpha)
            coef = np.random.default_rng(0).normal(scale=0.1, size=(G.n_labels, X.shape[1]))
            mine = objective(X, G, coef, alpha=alpha)
            assert abs(fun(coef.T.ravel())[0] - mine) <= 1e-9 * abs(mine), "numpy objective disagrees"
            del fun

            def numpy_lbfgs():  # fresh graphs: the per-edge arrays it builds are not left on G
                return lbfgs_to_gap(lambda: NumpyLabelRankLoss(X, build(Y), "domination", alpha), X.shape[1] * G.n_labels,
                                    f_star, 1e-6, 600)

            (t_lb, ev), (t_np, ev_np), (t_cy, res), (t_est,) = best_of(
                repeats, lambda: lbfgs_on_loss(X, G, alpha, f_star), numpy_lbfgs, cyrank, estimator)

            def show(t, evals):
                return f"{t:.3f} ({evals})" if t is not None else f"> 600 ({evals})"

            def ratio(t):
                return f"{t / t_cy:.2f}x" if t is not None else "n/a"

            print(f"| {name} | {alpha:g} | {G.n_edges:,} | {t_graphs:.3f} | {show(t_lb, ev)} | {show(t_np, ev_np)} | "
                  f"{t_cy:.3f} ({res.n_iter}, {res.n_cg_iter}) | {(res.objective - f_star) / f_star:.1e} | "
                  f"{t_est:.3f} | {ratio(t_lb)} | {ratio(t_np)} |", flush=True)


MEMORY_CHILD = """
import json, sys, time
import numpy as np
from cyrank.labelrank import LabelRankBoost, PreferenceGraphs, solve
n, d, L, dtype, what = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rng = np.random.default_rng(0)
X = np.empty((n, d), dtype=dtype)
for i in range(0, n, 65536):  # drawn in blocks: no float64 copy of X before the measurement
    X[i:i + 65536] = rng.standard_normal((min(65536, n - i), d))
y = np.argmax(X[:, :L] + rng.standard_normal((n, L)), axis=1)  # one class per instance: L - 1 edges each
G = PreferenceGraphs.from_classes(y, L) if what == "solve" else None
import ctypes
ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed heap pages of the setup back to the system: the fit cannot reuse them
sys.path.insert(0, sys.argv[6])
from bench_memory import peak_above_rss
_, t, excess = peak_above_rss(lambda: solve(X, G, alpha=1.0) if what == "solve" else
                              LabelRankBoost(alpha=1.0).fit(X, y))
print(json.dumps({"excess": excess / X.nbytes, "seconds": t, "X_MB": X.nbytes / 2**20}))
"""


def memory_run(n, d, L, dtype, what):
    """The fit in a fresh process: peak RSS above the RSS before it (/proc/self/clear_refs, VmHWM), as a multiple
    of X's bytes, and its seconds."""
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(n), str(d), str(L), dtype, what,
                          os.path.dirname(os.path.abspath(__file__))],
                         capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_memory(quick):
    n, d = (100_000, 100) if quick else (1_000_000, 100)
    print("\n### Issue 28: excess peak memory of a fit (fresh process per fit)\n")
    print(f"Dense standard normal X ({n:,} x {d}), one class per instance (from_classes: L - 1 edges each), "
          "alpha = 1, default solver (newton) and tol; peak RSS (VmHWM after /proc/self/clear_refs) minus RSS "
          "before the fit (after malloc_trim, so the fit cannot hide in pages the setup freed), as a multiple of X's bytes. solve: graphs built before (not counted); estimator: "
          "LabelRankBoost.fit(X, y) on the class labels (graphs built inside). One thread.\n")
    print("| X dtype | labels | fit | X MB | excess / X | seconds |")
    print("|---|---:|---|---:|---:|---:|")
    for dtype in ("float32", "float64"):
        for L in (5, 20):
            for what in ("solve", "estimator"):
                r = memory_run(n, d, L, dtype, what)
                print(f"| {dtype} | {L} | {what} | {r['X_MB']:.0f} | {r['excess']:.2f} | {r['seconds']:.2f} |",
                      flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="fig4,speed,edges")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5, help="alternating runs per timing (hand)")
    args = ap.parse_args(argv)
    print(f"## LabelRankBoost (`python bench/bench_labelrank.py --only {args.only}`)\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, one thread everywhere (BLAS included); Python "
          f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}; load average at start "
          f"{os.getloadavg()[0]:.1f}.")
    for name in args.only.split(","):
        {"fig4": bench_fig4, "speed": bench_speed, "edges": bench_edges, "hand": bench_hand,
         "memory": bench_memory}[name](args.quick, **({"repeats": args.repeats} if name == "hand" else {}))


if __name__ == "__main__":
    main()
