"""DominationRank benchmarks: kernel speed, time to a 1e-6 objective gap vs L-BFGS-B and cvxpy, Hessian
bounds, feature induction. Prints markdown tables (pasted into bench/RESULTS.md); plots go to bench/out/.

    python bench/bench_domination.py                  # everything (about 10 minutes on one core)
    python bench/bench_domination.py --only speed     # speed | lbfgs | cvxpy | bounds | induction | l1 | path
    python bench/bench_domination.py --quick          # smaller problems, to check that the script runs

Objective (Stevens, MEng thesis, MIT 2010; README "Objectives" 1): sum over dominating rows of log(1 + sum_{j in D(q,i)} e^{m_j - m_i}) + penalty.
The L-BFGS-B baseline minimises the same objective with an independent vectorised numpy loss and gradient
(checked against DominationRank.objective before timing).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from cyrank.datasets import load_lightgbm_rank  # noqa: E402
from cyrank.domination import DominationRank, _cd  # noqa: E402
from cyrank.domination import Options, solve  # noqa: E402
from cyrank.domination.solver import _columns, _layout  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


# ---------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------

def graded_labels(score, rng, shares):
    """Labels 0..len(shares)-1 with the given shares, from a noisy score."""
    noisy = score + rng.normal(scale=score.std() + 1e-12, size=score.shape)
    cuts = np.quantile(noisy, np.cumsum(shares)[:-1])
    return np.digitize(noisy, cuts).astype(np.float64)


LETOR_SHARES = (0.5, 0.3, 0.13, 0.05, 0.02)  # labels 0..4, as in LETOR / MSLR web data


def sparse_problem(n, d, nnz, query_size, *, binary_share=None, zipf=False, seed=0):
    """Random CSR X (uniform or Zipf column frequencies), planted labels, queries of query_size rows."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, nnz)
    if zipf:
        p = 1.0 / np.arange(1, d + 1) ** 1.1
        cols = rng.choice(d, size=nnz, p=p / p.sum())
    else:
        cols = rng.integers(0, d, nnz)
    X = sp.csr_matrix((rng.random(nnz), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    score = X @ rng.normal(size=d)
    if binary_share is not None:
        y = (score >= np.quantile(score + rng.normal(scale=score.std(), size=n), 1 - binary_share)).astype(float)
    else:
        y = graded_labels(score, rng, (0.6, 0.3, 0.1))
    qid = np.arange(n) // query_size
    return X, y, qid


def dense_problem(n, d, query_size, *, seed=0, dtype=np.float64):
    """LETOR-like dense X (C order), labels 0..4 in LETOR proportions, queries of query_size rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    y = graded_labels(X @ rng.normal(size=d), rng, LETOR_SHARES)
    return X, y, np.arange(n) // query_size


# ---------------------------------------------------------------------------------------------------------
# Independent numpy objective and gradient (for L-BFGS-B)
# ---------------------------------------------------------------------------------------------------------

class NumpyDominationLoss:
    """sum_i log(1 + sum_{j in D(q,i)} e^{m_j - m_i}) + alpha ||w||^2, m = X w, vectorised over layers."""

    def __init__(self, X, y, qid, alpha):
        q = np.unique(qid, return_inverse=True)[1]
        order = np.lexsort((y, q))
        self.X = X[order]
        self.XT = self.X.T.tocsr() if sp.issparse(X) else None
        qs, ys = q[order], y[order]
        new_layer = np.r_[True, (qs[1:] != qs[:-1]) | (ys[1:] != ys[:-1])]
        self.layer = np.cumsum(new_layer) - 1
        self.layer_start = np.flatnonzero(new_layer)
        layer_q = qs[self.layer_start]
        first = np.r_[True, layer_q[1:] != layer_q[:-1]]
        self.first_layer = np.flatnonzero(first)[np.cumsum(first) - 1]           # per layer
        last = np.r_[first[1:], True]
        self.last_layer = np.flatnonzero(last)[np.cumsum(first) - 1]             # per layer
        self.dominating = ~first[self.layer]                                     # per row
        self.q_start = np.flatnonzero(np.r_[True, qs[1:] != qs[:-1]])
        self.row_q = np.cumsum(np.r_[True, qs[1:] != qs[:-1]]) - 1
        self.alpha = alpha
        self.n_evals = 0

    def __call__(self, w):
        self.n_evals += 1
        m = self.X @ w
        shift = np.maximum.reduceat(m, self.q_start)[self.row_q]
        e = np.exp(m - shift)
        E = np.add.reduceat(e, self.layer_start)
        before = np.cumsum(E) - E                       # sum of E over earlier layers (any query)
        Z = (before - before[self.first_layer])[self.layer]
        dom = self.dominating
        inv = np.where(dom, 1.0 / (Z + e), 0.0)
        loss = np.sum(np.log(Z[dom] + e[dom]) - (m[dom] - shift[dom]))
        A = np.add.reduceat(inv, self.layer_start)
        cumA = np.cumsum(A)
        S = (cumA[self.last_layer] - cumA)[self.layer]  # sum of A over later layers of the same query
        c = e * S - Z * inv
        grad = (self.XT @ c) if self.XT is not None else self.X.T @ c
        return loss + self.alpha * (w @ w), grad + 2.0 * self.alpha * w


def lbfgs_trace(make_fun, d, f_star, gap=1e-6, max_seconds=600):
    """L-BFGS-B from w = 0 on make_fun() (its setup timed too).

    Returns (seconds to the first evaluation within the gap or None, iterations, seconds per evaluation,
    [(seconds, objective) per evaluation]).
    """
    t0 = time.perf_counter()
    fun = make_fun()
    reached = [None]
    trace = []

    def f(w):
        val, g = fun(w)
        trace.append((time.perf_counter() - t0, val))
        if reached[0] is None and val - f_star <= gap * abs(f_star):
            reached[0] = time.perf_counter() - t0
        if time.perf_counter() - t0 > max_seconds:
            raise TimeoutError
        return val, g

    try:
        res = minimize(f, np.zeros(d), jac=True, method="L-BFGS-B",
                       options={"maxiter": 100000, "maxfun": 200000, "ftol": 1e-15, "gtol": 1e-12})
    except TimeoutError:
        return reached[0], None, None, trace
    per_eval = (time.perf_counter() - t0) / max(fun.n_evals, 1)
    return reached[0], res.nit, per_eval, trace


def lbfgs_own_stop(make_fun, d, f_star, gap=1e-6, reps=3):
    """The numpy L-BFGS-B peer stopped by its own rule, as our fits are: the fastest run (setup timed) among the
    loosest pgtol = tol * max|grad at 0| (tol 1e-2 .. 1e-11) whose objective is within the gap; (seconds, nit)."""
    for k in range(2, 12):
        best, nit, ok = np.inf, None, False
        for _ in range(reps):
            t0 = time.perf_counter()
            fun = make_fun()
            g0 = np.max(np.abs(fun(np.zeros(d))[1] - 0.0))
            res = minimize(fun, np.zeros(d), jac=True, method="L-BFGS-B",
                           options={"maxiter": 100000, "maxfun": 200000, "ftol": 0.0, "gtol": 10.0 ** -k * g0})
            best = min(best, time.perf_counter() - t0)
            nit, ok = res.nit, res.fun - f_star <= gap * abs(f_star)
        if ok:
            return best, nit
    return None, None


def time_to_gap(X, y, qid, f_star, gap=1e-6, reps=3, **params):
    """Seconds of the fastest fit (loosest tol among 1e-2 .. 1e-11) whose objective is within the gap: the best
    of ``reps`` runs at that tol, as the L-BFGS-B peer's (lbfgs_own_stop).

    Returns (seconds, n_iter, tol, n_cg_iter) or Nones.
    """
    for k in range(2, 12):
        best = np.inf
        for rep in range(reps):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                est = DominationRank(tol=10.0 ** -k, max_iter=100000, **params).fit(X, y, qid)
                best = min(best, time.perf_counter() - t)
            if est.objective_ - f_star > gap * abs(f_star):
                break  # not within the gap at this tol: a tighter one
        else:
            return best, est.n_iter_, 10.0 ** -k, est.n_cg_iter_
    return None, None, None, None


def optimum(X, y, qid, alpha, fun):
    """f* = the best of Newton at tol 1e-11 and L-BFGS-B run to its own convergence from there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DominationRank(alpha=alpha, tol=1e-11, max_iter=100000, solver="newton").fit(X, y, qid)
    res = minimize(fun, est.coef_, jac=True, method="L-BFGS-B", options={"ftol": 1e-16, "gtol": 1e-13})
    return min(est.objective_, res.fun), est


# ---------------------------------------------------------------------------------------------------------
# Benchmarks
# ---------------------------------------------------------------------------------------------------------

def epoch_seconds(X, y, qid, epochs, alpha=1.0):
    """Seconds per sweep of the kernel (l2): (time of 1 + epochs sweeps - time of 1) / epochs."""
    layout, _ = _layout(y, qid, np.zeros(X.shape[0]), binary=False, group_by_query=True)
    data, indices, indptr, dense = _columns(X, layout.rows)
    beta = _cd.hessian_bounds(data, indices, indptr, dense, layout, _cd.HESSIAN_POPOVICIU)
    psr = 0 if dense else Options().power_sum_rows
    times = []
    for ep in (1, 1 + epochs):
        w = np.zeros(X.shape[1])
        t = time.perf_counter()
        _cd.solve(data, indices, indptr, dense, layout, w, beta, 0.0, alpha, 1e-300, ep, 0, 0,
                  np.zeros(ep), np.zeros(ep, np.intp), psr)
        times.append(time.perf_counter() - t)
    return (times[1] - times[0]) / epochs, data.shape[0]


def bench_speed(quick):
    n, d, nnz = (20_000, 20_000, 1_000_000) if quick else (100_000, 100_000, 5_000_000)
    cases = [
        ("sparse, uniform columns, queries of 10 rows, labels 0-2", sparse_problem(n, d, nnz, 10)),
        ("sparse, uniform columns, queries of 100 rows, labels 0-2", sparse_problem(n, d, nnz, 100)),
        ("sparse, Zipf columns, queries of 100 rows, labels 0-2", sparse_problem(n, d, nnz, 100, zipf=True)),
        ("sparse, uniform columns, one query, binary 5% positive", sparse_problem(n, d, nnz, n, binary_share=0.05)),
        ("dense float64 (C order), 100 features, queries of 100 rows, labels 0-4",
         dense_problem(nnz // 100, 100, 100)),
        ("dense float32 (C order), 100 features, queries of 100 rows, labels 0-4",
         dense_problem(nnz // 100, 100, 100, dtype=np.float32)),
    ]
    X, y, qid = load_lightgbm_rank("train")
    cases.append(("LightGBM rank.train (real, CSR 31.6% dense), queries of 1-27 rows, labels 0-4", (X, y, qid)))
    print("\n### Kernel speed: time per sweep per stored non-zero (one core, l2)\n")
    print("| problem | rows x features | stored non-zeros | s / sweep | ns / nnz / sweep |")
    print("|---|---|---|---|---|")
    for name, (X, y, qid) in cases:
        sec, stored = epoch_seconds(X, y, qid, epochs=3 if X.shape[0] > 10_000 else 30)
        print(f"| {name} | {X.shape[0]:,} x {X.shape[1]:,} | {stored:,} | {sec:.4f} | {sec / stored * 1e9:.1f} |",
              flush=True)


def bench_lbfgs(quick):
    print("\n### Time to a 1e-6 relative objective gap: DominationRank (Newton, CD) vs L-BFGS-B (l2)\n")
    print("f* = best of Newton at tol 1e-11 and L-BFGS-B polished from there. Newton and CD: the fastest fit "
          "(loosest tol among 1e-2 .. 1e-11) within the gap. L-BFGS-B: scipy from w = 0 with a vectorised numpy "
          "loss and gradient, time of the first evaluation within the gap. All timed from raw (X, y, qid), setup "
          "included. The last columns are the cost of one CD sweep and of one L-BFGS-B evaluation.\n")
    print("`auto` = DominationRank's default for l2 (cyrank's L-BFGS on the Cython loss and gradient for at most 30 "
          "iterations, then Newton from there; its solver_ in brackets); `lbfgs` = the same L-BFGS alone.\n")
    print("`L-BFGS-B own stop` = the numpy peer stopped by its own rule (pgtol = tol * max|grad at 0|, the loosest "
          "tol within the gap, setup timed), as our fits are; the ratios use it. The first-evaluation time is an "
          "oracle stop no solver can make, kept for reference.\n")
    print("| problem | alpha | Newton s (iterations, CG steps, tol) | CD s (sweeps, tol) | auto s (solver) "
          "| lbfgs s (iterations) | L-BFGS-B numpy, own stop s (iterations) | L-BFGS-B numpy, first evaluation in "
          "the gap s (iterations) | L-BFGS-B / Newton | L-BFGS-B / auto | L-BFGS-B / CD | s / CD sweep "
          "| s / L-BFGS-B evaluation |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    X, y, qid = load_lightgbm_rank("train")
    n, d, nnz = (20_000, 20_000, 1_000_000) if quick else (100_000, 100_000, 5_000_000)
    cases = [
        ("LightGBM rank.train (3,005 x 300, real)", (X, y, qid), 0.1),
        ("LightGBM rank.train (3,005 x 300, real)", (X, y, qid), 1.0),
        ("LightGBM rank.train (3,005 x 300, real)", (X, y, qid), 10.0),
        (f"dense LETOR-like {nnz // 100:,} x 100, queries of 100", dense_problem(nnz // 100, 100, 100), 10.0),
        (f"sparse {n:,} x {d:,}, {nnz:,} nnz, queries of 100", sparse_problem(n, d, nnz, 100), 1.0),
        (f"sparse {n:,} x {d:,}, {nnz:,} nnz, one query, 5% positive",
         sparse_problem(n, d, nnz, n, binary_share=0.05), 1.0),
    ]
    curves = []
    for name, (X, y, qid), alpha in cases:
        fun = NumpyDominationLoss(X, y, qid, alpha)
        w = np.random.default_rng(0).normal(size=X.shape[1]) * 0.1
        mine = DominationRank(alpha=alpha).objective(X, y, qid, coef=w)
        assert abs(fun(w)[0] - mine) <= 1e-9 * abs(mine), "numpy objective disagrees with DominationRank"
        f_star, _ = optimum(X, y, qid, alpha, fun)
        t_nt, it_nt, tol_nt, cg_nt = min(time_to_gap(X, y, qid, f_star, alpha=alpha, solver="newton")
                                         for _ in range(3))
        t_cd, it_cd, tol, _ = time_to_gap(X, y, qid, f_star, alpha=alpha, solver="cd")
        t_auto, _, _, _ = min(time_to_gap(X, y, qid, f_star, alpha=alpha, solver="auto") for _ in range(3))
        auto_solver = DominationRank(alpha=alpha).fit(X, y, qid).solver_
        t_lbf, it_lbf, _, _ = min(time_to_gap(X, y, qid, f_star, alpha=alpha, solver="lbfgs") for _ in range(3))
        sweep, _ = epoch_seconds(X, y, qid, epochs=5, alpha=alpha)
        t_lb, it_lb, per_eval, trace = lbfgs_trace(lambda: NumpyDominationLoss(X, y, qid, alpha), X.shape[1],
                                                   f_star)
        t_own, it_own = lbfgs_own_stop(lambda: NumpyDominationLoss(X, y, qid, alpha), X.shape[1], f_star)
        ratio = lambda t: f"{t_own / t:.1f}x" if (t and t_own) else "n/a"
        print(f"| {name} | {alpha:g} | {t_nt:.3f} ({it_nt}, {cg_nt}, {tol_nt:.0e}) | {t_cd:.2f} ({it_cd}, {tol:.0e}) "
              f"| {t_auto:.3f} ({auto_solver}) | {t_lbf:.3f} ({it_lbf}) | {t_own:.3f} ({it_own}) | {t_lb:.3f} ({it_lb}) "
              f"| {ratio(t_nt)} "
              f"| {ratio(t_auto)} | {ratio(t_cd)} | {sweep:.4f} | {per_eval:.4f} |", flush=True)
        curves.append((f"{name}, alpha={alpha:g}", X, y, qid, alpha, f_star, trace))
    plot_gap_curves(curves)


def plot_gap_curves(curves):
    """Relative objective gap against seconds: Newton and CD (one fit each at tol 1e-9, iterations spread
    evenly over its run time) and L-BFGS-B (every evaluation)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(4 * len(curves), 3.2))
    for ax, (name, X, y, qid, alpha, f_star, trace) in zip(np.atleast_1d(axes), curves):
        for solver in ("newton", "cd"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                est = DominationRank(alpha=alpha, tol=1e-9, max_iter=100000, solver=solver).fit(X, y, qid)
                dt = time.perf_counter() - t
            h = est.history_["objective"]
            ax.semilogy(dt * np.arange(1, h.size + 1) / h.size, np.maximum(h - f_star, 1e-16) / abs(f_star),
                        label=f"DominationRank ({solver})")
        tl = np.array(trace)
        ax.semilogy(tl[:, 0], np.maximum(np.minimum.accumulate(tl[:, 1]) - f_star, 1e-16) / abs(f_star),
                    label="L-BFGS-B (numpy)")
        ax.axhline(1e-6, color="grey", lw=0.5)
        ax.set_title(name, fontsize=7)
        ax.set_xlabel("seconds")
        ax.set_ylabel("relative gap")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(OUT, exist_ok=True)
    fig.savefig(os.path.join(OUT, "domination_vs_lbfgs.png"), dpi=120)


def bench_cvxpy(quick):
    from reference import domination as ref

    print("\n### Against cvxpy (Clarabel) at the largest size it solves within a minute (l2, alpha = 1)\n")
    print("Dense LETOR-like data with 20 features and queries of 20 rows; cvxpy time includes compilation.\n")
    print("| rows | cvxpy s | Newton s (to 1e-6 gap) | CD s (to 1e-6 gap) | L-BFGS-B s | cvxpy / Newton |")
    print("|---|---|---|---|---|---|")
    sizes = [250, 500, 1000] if quick else [1000 * 2 ** k for k in range(8)]
    for n in sizes:
        X, y, qid = dense_problem(n, 20, 20, seed=1)
        t = time.perf_counter()
        sol = ref.solve(X, y, qid, alpha=1.0)
        t_cvx = time.perf_counter() - t
        fun = NumpyDominationLoss(X, y, qid, 1.0)
        f_star = min(sol.objective, optimum(X, y, qid, 1.0, fun)[0])
        t_nt = time_to_gap(X, y, qid, f_star, alpha=1.0, solver="newton")[0]
        t_cd = time_to_gap(X, y, qid, f_star, alpha=1.0, solver="cd")[0]
        t_lb = lbfgs_trace(lambda: NumpyDominationLoss(X, y, qid, 1.0), X.shape[1], f_star)[0]
        print(f"| {n:,} | {t_cvx:.1f} ({sol.solver}) | {t_nt:.3f} | {t_cd:.3f} | {t_lb:.3f} | {t_cvx / t_nt:.0f}x |",
              flush=True)
        if t_cvx > 60:  # the previous size is the largest solved within a minute
            break


def bench_bounds(quick):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    print("\n### Hessian bound: Popoviciu (default) vs the thesis's B_r = max x^2 per query\n")
    print("Sweeps and seconds to tol = 1e-6 (relative KKT violation); Anderson extrapolation on (default) and off.\n")
    print("| problem | penalty | Popoviciu sweeps (s) | max x^2 sweeps (s) | sweeps ratio | "
          "Popoviciu, no extrapolation | max x^2, no extrapolation |")
    print("|---|---|---|---|---|---|---|")
    X, y, qid = load_lightgbm_rank("train")
    n = 20_000 if quick else 100_000
    cases = [
        ("LightGBM rank.train", (X, y, qid), "l2", 1.0),
        ("LightGBM rank.train", (X, y, qid), "l1", 1.0),
        ("LightGBM rank.train, one query", (X, y, None), "l2", 1.0),
        (f"dense LETOR-like {n // 10:,} x 100", dense_problem(n // 10, 100, 100), "l2", 10.0),
        (f"sparse {n // 10:,} x {n // 10:,}, 100 nnz/row, queries of 100",
         sparse_problem(n // 10, n // 10, n * 10, 100), "l2", 1.0),
    ]
    fig, axes = plt.subplots(1, len(cases), figsize=(4 * len(cases), 3.2))
    for ax, (name, (X, y, qid), penalty, alpha) in zip(axes, cases):
        cells, curves = [], {}
        for bound in ("popoviciu", "max_sq"):
            for accelerate in (True, False):
                t = time.perf_counter()
                est = solve(X, y, qid, penalty=penalty, alpha=alpha, hessian_bound=bound, tol=1e-6,
                            max_iter=20000, solver="cd", options=Options(anderson=accelerate))
                dt = time.perf_counter() - t
                cells.append((est.n_iter, dt, est.converged))
                curves[(bound, accelerate)] = est.history["objective"]
        f_star = min(c.min() for c in curves.values())
        for (bound, accelerate), h in curves.items():
            ax.semilogy(np.maximum(h - f_star, 1e-16) / abs(f_star),
                        label=f"{bound}{'' if accelerate else ', no extrap.'}")
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("sweep")
        ax.set_ylabel("relative gap")
        (pa, pt, _), (pn, ptn, pcn), (ma, mt, _), (mn, mtn, mcn) = cells
        fmt = lambda it, s, ok: f"{it} ({s:.2f} s)" + ("" if ok else ", not converged")
        print(f"| {name} | {penalty} | {pa} ({pt:.2f} s) | {ma} ({mt:.2f} s) | {ma / pa:.2f} | "
              f"{fmt(pn, ptn, pcn)} | {fmt(mn, mtn, mcn)} |", flush=True)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(OUT, exist_ok=True)
    fig.savefig(os.path.join(OUT, "domination_bounds.png"), dpi=120)


def bench_induction(quick):
    print("\n### Feature induction (Alg. 7) vs plain CD, l1, on the real LightGBM rank data\n")
    print("Train on rank.train, NDCG@10 on rank.test (cyrank.metrics.ndcg_score defaults). Both reach the same "
          "optimum (tol = 1e-6), hence the same test NDCG; seconds and non-zeros compared.\n")
    print("| alpha | test NDCG@10 (plain / induction) | plain CD s (sweeps) | induction s (sweeps, features "
          "per round) | non-zeros (plain / induction) | plain / induction time |")
    print("|---|---|---|---|---|---|")
    (X, y, qid), (Xt, yt, qt) = load_lightgbm_rank("train"), load_lightgbm_rank("test")
    for alpha in ([3.0, 30.0] if quick else [1.0, 3.0, 10.0, 30.0, 100.0]):
        res = []
        for fi in (None, 10):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                est = DominationRank(penalty="l1", alpha=alpha, feature_induction=fi, tol=1e-6,
                                     max_iter=100000).fit(X, y, qid)
                dt = time.perf_counter() - t
            res.append((est, dt))
        (p, tp), (f, tf) = res
        print(f"| {alpha:g} | {p.score(Xt, yt, qt):.4f} / {f.score(Xt, yt, qt):.4f} | {tp:.2f} ({p.n_iter_}) | "
              f"{tf:.2f} ({f.n_iter_}, 10) | {np.count_nonzero(p.coef_)} / {np.count_nonzero(f.coef_)} | "
              f"{tp / tf:.2f} |", flush=True)


def fit_seconds(X, y, qid, reps=3, **params):
    """(fastest seconds of ``reps`` fits, the last fit) of DominationRank(**params), warnings silenced."""
    best, est = np.inf, None
    for _ in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            est = DominationRank(**params).fit(X, y, qid)
            best = min(best, time.perf_counter() - t)
    return best, est


def bench_l1(quick):
    """Issue 11: l1 and elastic net, auto (proximal Newton or OWL-QN) vs CD vs feature induction, to KKT <= 1e-6."""
    from cyrank.domination import path

    print("\n### L1 and elastic net to KKT <= 1e-6: auto, proximal Newton, OWL-QN, CD and CD with feature induction "
          "(issue 11)\n")
    print("alpha = the given fraction of alpha_max (the smallest alpha with w = 0). Defaults otherwise (max_iter = "
          "1000, tol = 1e-6). Fastest of 3 fits (1 for CD above 5 s), from raw (X, y, qid). `iterations` = "
          "iterations (prox_newton, owlqn) or sweeps (CD). CD that does not converge within the default 1000 sweeps "
          "is run again with max_iter = 50,000 and that time is shown. L2 fits = the same data "
          "with penalty='l2', alpha=1: solver='newton' (the issue's measure) and solver='auto' (the default, "
          "faster). `ok` = converged. The ratios use `auto`.\n")
    print("| data | penalty | alpha | auto s (solver) | prox_newton s (iterations, nnz) | owlqn s (iterations) "
          "| CD s (sweeps) | CD + induction(5) s (sweeps) | CD / auto | auto / L2 Newton fit | auto / L2 auto fit |")
    print("|---|---|---:|---|---|---|---|---|---:|---:|---:|")
    X, y, qid = load_lightgbm_rank("train")
    n, d, nnz = (5_000, 5_000, 250_000) if quick else (20_000, 20_000, 1_000_000)
    cases = [("LightGBM rank.train", (X, y, qid), (0.3, 0.03, 0.003)),
             (f"sparse {n:,} x {d:,}, {nnz:,} nnz, queries of 100", sparse_problem(n, d, nnz, 100), (0.3, 0.03)),
             (f"sparse {n:,} x {d:,}, {nnz:,} nnz, queries of 1,000, 10% relevant",
              sparse_problem(n, d, nnz, 1000, binary_share=0.1), (0.3, 0.03))]
    ok = lambda e: "ok" if e.converged_ else f"NOT converged, KKT {e.kkt_violation_:.1e}"
    for name, (Xc, yc, qc), fractions in cases:
        t_l2, _ = fit_seconds(Xc, yc, qc, penalty="l2", alpha=1.0)
        t_l2n, _ = fit_seconds(Xc, yc, qc, penalty="l2", alpha=1.0, solver="newton")
        top = path(Xc, yc, qc, n_alphas=1).alpha_max  # alpha_max of l1
        for penalty, l1_ratio in (("l1", 1.0), ("elasticnet", 0.5)):
            for frac in fractions:
                alpha = frac * top / l1_ratio  # alpha_max of the elastic net is alpha_max(l1) / l1_ratio
                common = dict(penalty=penalty, alpha=alpha, l1_ratio=l1_ratio)
                au_t, au = fit_seconds(Xc, yc, qc, **common)
                pn_t, pn = fit_seconds(Xc, yc, qc, solver="prox_newton", **common)
                ow_t, ow = fit_seconds(Xc, yc, qc, solver="owlqn", **common)
                cd_t, cd = fit_seconds(Xc, yc, qc, reps=1, solver="cd", **common)
                if not cd.converged_:  # how long CD takes when it may go on: the ratio uses this time
                    cd_t, cd = fit_seconds(Xc, yc, qc, reps=1, solver="cd", max_iter=50_000, **common)
                elif cd_t < 5:
                    cd_t, cd = fit_seconds(Xc, yc, qc, solver="cd", **common)
                fi_t, fi = fit_seconds(Xc, yc, qc, reps=1, solver="cd", feature_induction=5, **common)
                print(f"| {name} | {penalty} | {alpha:.4g} | {au_t:.3f} ({au.solver_}, {ok(au)}) "
                      f"| {pn_t:.3f} ({pn.n_iter_}, {np.count_nonzero(pn.coef_)}, {ok(pn)}) "
                      f"| {ow_t:.3f} ({ow.n_iter_}, {ok(ow)}) | {cd_t:.2f} ({cd.n_iter_}, {ok(cd)}) "
                      f"| {fi_t:.2f} ({fi.n_iter_}, {ok(fi)}) | {cd_t / au_t:.0f}x | {au_t / t_l2n:.1f}x "
                      f"| {au_t / t_l2:.1f}x |", flush=True)


def bench_path(quick):
    """Issue 11: a 20-alpha l1 path on the LightGBM data, with test NDCG@10 along it."""
    from cyrank.domination import path
    from cyrank.metrics import ndcg_score

    print("\n### A 20-alpha l1 path on LightGBM rank.train, test NDCG@10 along it (issue 11)\n")
    X, y, qid = load_lightgbm_rank("train")
    Xt, yt, qt = load_lightgbm_rank("test")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        p = path(X, y, qid, n_alphas=20, eps=1e-3)
        times.append(time.perf_counter() - t)
    t_cold = time.perf_counter()
    for alpha in p.alphas:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            DominationRank(penalty="l1", alpha=alpha).fit(X, y, qid)
    t_cold = time.perf_counter() - t_cold
    ndcg = [ndcg_score(yt, Xt @ p.coefs[:, j].toarray().ravel(), qt, k=10) for j in range(p.alphas.size)]
    print(f"`cyrank.domination.path(X, y, qid, n_alphas=20, eps=1e-3)`: {min(times):.2f} s for the 20 alphas "
          f"(fastest of 3; {t_cold:.2f} s for 20 cold fits), all converged: {bool(p.converged.all())}, largest KKT "
          f"{p.kkt_violations.max():.1e}, Newton iterations {p.n_iters.sum()} in all.\n")
    print("| alpha / alpha_max | non-zeros | iterations | test NDCG@10 |")
    print("|---:|---:|---:|---:|")
    for j, alpha in enumerate(p.alphas):
        print(f"| {alpha / p.alpha_max:.3g} | {p.coefs[:, j].nnz} | {p.n_iters[j]} | {ndcg[j]:.4f} |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.semilogx(p.alphas, ndcg, marker="o")
    ax.set_xlabel("alpha (l1)")
    ax.set_ylabel("test NDCG@10")
    ax.set_title("DominationRank l1 path, LightGBM rank data", fontsize=8)
    ax.invert_xaxis()
    fig.tight_layout()
    os.makedirs(OUT, exist_ok=True)
    fig.savefig(os.path.join(OUT, "domination_l1_path.png"), dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="speed,lbfgs,cvxpy,bounds,induction,l1,path")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(f"## DominationRank (`python bench/bench_domination.py{' --quick' if args.quick else ''}"
          f"{'' if args.only == parser.get_default('only') else ' --only ' + args.only}`)\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, one thread everywhere (BLAS included); "
          f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}; "
          f"load average at start {os.getloadavg()[0]:.1f}.")
    for part in args.only.split(","):
        {"speed": bench_speed, "lbfgs": bench_lbfgs, "cvxpy": bench_cvxpy, "bounds": bench_bounds,
         "induction": bench_induction, "l1": bench_l1, "path": bench_path}[part](args.quick)
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.1f} (other jobs share the machine when it exceeds 1).")


if __name__ == "__main__":
    sys.exit(main())
