"""Linear listwise ranking (issue 31): cyrank's ListNet / ListMLE against PyTorch full-batch L-BFGS on the same
objective, beside cyrank's RankNet, LambdaRank and RankSVM (test NDCG@10 and fit time), in one run.

The objective (cyrank.listwise.solver's docstring; reference/listwise.py), f = X w, summed over queries:

    ListNet  sum_i p_i (log sum_{j in q} exp f_j - f_i) + alpha ||w||^2,   p = softmax(y) ("exp") or
             (2^y_i - g_i) / sum_j (2^y_j - g_j) ("xendcg", g = default_rng(0).random(n), rows in input order);
    ListMLE  sum_t (1/m) sum_{j in G} (log D_t - f_j) + alpha ||w||^2, D_t = sum_{j below G} exp f_j +
             (1 - r/m) sum_{j in G} exp f_j (Efron's ties; position t = start(G) + r of the tie group G of m rows),
             optionally only t < top_k.

- cyrank: cyrank.listwise.ListNet / ListMLE at their defaults (tol 1e-6, certified gap), fit() timed;
- torch: torch.optim.LBFGS (line_search_fn="strong_wolfe", history 10, float64, full batch, from w = 0) on the
  same objective written with autograd in the usual way (per-query log-sum-exps by scatter_reduce/index_add,
  shifted by the query / group max; ListMLE's suffix sums over the tie groups by torch.logcumsumexp), stopped by
  an oracle the first time F <= f_cyrank (1 + 1e-6), f_cyrank = cyrank's final objective; its setup (sorting,
  targets, tensors) is timed too. If it never gets there within ``--cap`` seconds the table says where it ends
  (its best relative excess over f_cyrank). The torch objective is checked against cyrank.listwise.objective at
  random w before any timing.
- cyrank's final objective is also compared with a tol=1e-12 solve (its relative error, "err").

One thread for every contender (OMP_NUM_THREADS=1, torch.set_num_threads(1)); cyrank and torch alternate, best
of ``--reps``. NDCG@10 on the test queries by cyrank.metrics.ndcg_score (gain 2^y - 1, defaults).

Data: the embedded LightGBM example data (rank.train 3005 x 300 CSR -> rank.test; torch gets it densified, which
is faster for torch at this size) and LETOR-style generated data (cyrank.datasets.make_ranking: queries of
``--query`` documents, 136 standard normal features, 5 grades binned per query from X w + noise e, e standard
normal times ``--noise`` (default 12, about the size of the signal, sqrt(136) = 11.7; with 1, the generator's
default, the grades are nearly a function of X w and every model scores NDCG@10 = 1); 1e5 training documents and
2.5e4 test documents drawn together, split by query). ``--scales spread`` also multiplies column j by 10^u_j,
u_j ~ U(-2, 4) after the labels are drawn (make_ranking's feature_scales), as raw LETOR features (counts, BM25,
PageRank) are spread over orders of magnitude; "unit" keeps the standard normal columns. Both by default. On the
spread columns RankNet and LambdaRank are left out unless ``--pairwise-spread`` (neither finished within 120 s on
1e4 rows).

    OMP_NUM_THREADS=1 python bench/bench_listwise.py              # both data sets, reps 3
    OMP_NUM_THREADS=1 python bench/bench_listwise.py --small      # 1e4 generated documents, reps 1
    OMP_NUM_THREADS=1 python bench/bench_listwise.py --data letor --docs 100000 --reps 3 --cap 300
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from cyrank import LambdaRank, RankNet, RankSVM  # noqa: E402
from cyrank import listwise  # noqa: E402
from cyrank.datasets import load_lightgbm_rank, make_ranking  # noqa: E402
from cyrank.metrics import ndcg_score  # noqa: E402

RTOL = 1e-6
NEG = -1e300   # the log of an empty sum (finite, so that autograd never sees inf - inf)

# name -> (cyrank estimator factory, objective options shared by cyrank and torch)
LISTWISE = {
    "ListNet (exp)": (lambda a: listwise.ListNet(alpha=a), dict(loss="listnet", target="exp")),
    "ListNet (xendcg)": (lambda a: listwise.ListNet(target="xendcg", alpha=a),
                         dict(loss="listnet", target="xendcg", random_state=0)),
    "ListMLE (Efron)": (lambda a: listwise.ListMLE(alpha=a), dict(loss="listmle", ties="efron")),
    "ListMLE (Efron, top 10)": (lambda a: listwise.ListMLE(top_k=10, alpha=a),
                                dict(loss="listmle", ties="efron", top_k=10)),
}
PAIRWISE = {
    "RankNet": lambda a: RankNet(alpha=a),
    "LambdaRank (ndcg@10)": lambda a: LambdaRank(alpha=a),
    "RankSVM (C=1)": lambda a: RankSVM(),
}


class Reached(Exception):
    """The oracle's stop: F came within RTOL of f_cyrank."""


class TimeUp(Exception):
    """The time cap passed first."""


# ------------------------------------------------------------------------------------------------ torch peer
class TorchListwise:
    """The listwise objective as a torch function of w (float64), built once from (X, y, qid) (the setup)."""

    def __init__(self, X, y, qid, *, loss, alpha, target="exp", ties="efron", top_k=None, random_state=0):
        import torch

        self.torch, self.alpha, self.loss = torch, alpha, loss
        n = y.size
        qidx = np.unique(qid, return_inverse=True)[1].ravel()
        self.n_q = int(qidx.max()) + 1
        if loss == "listnet":
            if target == "exp":
                top = np.full(self.n_q, -np.inf)
                np.maximum.at(top, qidx, y)
                num = np.exp(y - top[qidx])
            else:
                num = np.exp2(y) - np.random.default_rng(random_state).random(n)
            total = np.bincount(qidx, weights=num, minlength=self.n_q)
            a = num / total[qidx]                        # p_i
            self.X = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float64))
            self.q = torch.from_numpy(qidx.astype(np.int64))
            self.a = torch.from_numpy(a)
            self.c = torch.from_numpy(np.bincount(qidx, weights=a, minlength=self.n_q))   # 1 per query
            return
        # ListMLE: rows by (query, decreasing label); tie groups; suffix sums over the groups of a query
        order = np.lexsort((-y, qidx))
        qs, ys = qidx[order], y[order]
        new_group = np.r_[True, (qs[1:] != qs[:-1]) | (ys[1:] != ys[:-1])]
        gidx = np.cumsum(new_group) - 1
        n_g = int(gidx[-1]) + 1
        g_start = np.flatnonzero(new_group)
        g_size = np.diff(np.r_[g_start, n])
        g_query = qs[g_start]
        q_start = np.flatnonzero(np.r_[True, qs[1:] != qs[:-1]])
        pos = np.arange(n) - q_start[qs]                  # position t inside the query
        r = np.arange(n) - g_start[gidx]                  # r = t - start(G)
        m = g_size[gidx]
        counted = np.ones(n, bool) if top_k is None else pos < top_k
        logfac = np.log(1.0 - r / m) if ties == "efron" else np.zeros(n)
        k_g = np.bincount(gidx, weights=counted, minlength=n_g)     # counted positions of each group
        # slot of each group among its query's groups, for the (query, slot) matrix of group log-sum-exps
        first_group = np.r_[0, np.flatnonzero(g_query[1:] != g_query[:-1]) + 1]
        slot = np.arange(n_g) - first_group[np.cumsum(np.r_[True, g_query[1:] != g_query[:-1]]) - 1]
        self.width = int(slot.max()) + 2                  # one NEG column past the last group
        self.X = torch.from_numpy(np.ascontiguousarray(X[order], dtype=np.float64))
        self.g = torch.from_numpy(gidx.astype(np.int64))
        self.n_g = n_g
        self.g_query = torch.from_numpy(g_query.astype(np.int64))
        self.slot = torch.from_numpy(slot.astype(np.int64))
        self.counted = torch.from_numpy(np.flatnonzero(counted).astype(np.int64))
        self.logfac = torch.from_numpy(logfac[counted])
        self.coef_log = torch.from_numpy((g_size / g_size)[gidx][counted])            # (W_G / m) = 1 unweighted
        self.coef_lin = torch.from_numpy((k_g / g_size)[gidx])                          # (k_G / m) s_j

    def _segment_lse(self, f, index, size):
        """log sum exp of f over each segment of ``index`` (shifted by the segment's max)."""
        torch = self.torch
        top = torch.full((size,), -torch.inf, dtype=f.dtype).scatter_reduce(0, index, f.detach(), "amax")
        s = torch.zeros(size, dtype=f.dtype).index_add(0, index, torch.exp(f - top[index]))
        return torch.log(s) + top

    def __call__(self, w):
        torch = self.torch
        f = self.X @ w
        pen = self.alpha * (w * w).sum()
        if self.loss == "listnet":
            lse = self._segment_lse(f, self.q, self.n_q)
            return (self.c * lse).sum() - (self.a * f).sum() + pen
        lg = self._segment_lse(f, self.g, self.n_g)                      # log sum_{j in G} exp f_j
        mat = torch.full((int(self.g_query.max()) + 1, self.width), NEG, dtype=f.dtype)
        mat = mat.index_put((self.g_query, self.slot), lg)
        suffix = torch.flip(torch.logcumsumexp(torch.flip(mat, [1]), 1), [1])   # LSE over the group and below
        below = suffix[self.g_query, self.slot + 1]                      # LSE over the rows below each group
        gi = self.g[self.counted]
        log_d = torch.logaddexp(below[gi], lg[gi] + self.logfac)         # log D_t, Efron's expected denominator
        return (self.coef_log * log_d).sum() - (self.coef_lin * f).sum() + pen


def run_torch(X, y, qid, options, alpha, target, cap):
    """(seconds until F <= target or None, evaluations, best F): torch.optim.LBFGS from w = 0, setup timed."""
    import torch

    t0 = time.perf_counter()
    fun = TorchListwise(X, y, qid, alpha=alpha, **options)
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1.0, max_iter=100000, max_eval=100000, tolerance_grad=0.0,
                            tolerance_change=0.0, history_size=10, line_search_fn="strong_wolfe")
    count, best = [0], [np.inf]

    def closure():
        opt.zero_grad()
        f = fun(w)
        count[0] += 1
        best[0] = min(best[0], f.item())
        if best[0] <= target:
            raise Reached
        if time.perf_counter() - t0 > cap:
            raise TimeUp
        f.backward()
        return f

    try:
        for _ in range(1000):
            opt.step(closure)
    except Reached:
        return time.perf_counter() - t0, count[0], best[0]
    except TimeUp:
        pass
    return None, count[0], best[0]


def check_torch_objective(X, y, qid, options, alpha):
    """The torch objective equals cyrank.listwise.objective at random w (else the comparison is void)."""
    import torch

    fun = TorchListwise(X, y, qid, alpha=alpha, **options)
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.1, 1.0):
        w = scale * rng.normal(size=X.shape[1])
        got = fun(torch.from_numpy(w)).item()
        want = listwise.objective(w, X, y, qid, alpha=alpha, **options)
        assert abs(got - want) <= 1e-9 * max(1.0, abs(want)), (options, scale, got, want)


# ------------------------------------------------------------------------------------------------ data
def load(name, docs, query, noise, scales):
    """((X, y, qid) train, (X, y, qid) test)."""
    if name == "lightgbm":
        both = load_lightgbm_rank("both")
        return both["train"], both["test"]
    n_train = docs // query
    n_test = max(1, n_train // 4)
    factors = None if scales == "unit" else 10.0 ** np.random.default_rng(1).uniform(-2, 4, 136)
    X, y, qid = make_ranking(n_queries=n_train + n_test, n_docs=[query] * (n_train + n_test), n_features=136,
                             n_levels=5, noise=noise, feature_scales=factors, random_state=0)
    train = qid < n_train
    return (X[train], y[train], qid[train]), (X[~train], y[~train], qid[~train])


def timed_fit(make, X, y, qid):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a ConvergenceWarning is reported in the table (converged_)
        model = make().fit(X, y, qid)
    return time.perf_counter() - t0, model


def warm_up():
    """One small torch fit of each loss before any timing (torch's first call initialises lazily)."""
    X, y, qid = make_ranking(10, 200, 5, 3, random_state=0)
    for _, options in LISTWISE.values():
        run_torch(X, y, qid, options, 1.0, -np.inf, 0.2)


def bench(name, args, noise, scales):
    import torch

    (X, y, qid), (Xt, yt, qt) = load(name, args.docs, args.query, noise, scales)
    Xd = X.toarray() if sp.issparse(X) else X
    title = name
    if noise is not None:
        title += f" (make_ranking, noise {noise:g}, " + ("standard normal columns)" if scales == "unit" else
                                                          "columns scaled by 10^U(-2, 4))")
    print(f"\n### {title}: {X.shape[0]:,} x {X.shape[1]} train ({np.unique(qid).size} queries), {Xt.shape[0]:,} "
          f"test; alpha {args.alpha:g}; one thread, best of {args.reps}; torch cap {args.cap:g} s\n")
    print("| model | fit s | test NDCG@10 | objective (converged, certified rel. gap, err vs tol 1e-12) | "
          "torch LBFGS s to 1e-6 (evals) | torch / cyrank |")
    print("|---|---:|---:|---|---|---:|")
    for label, (make, options) in LISTWISE.items():
        if label not in args.models and args.models != ["all"]:
            continue
        check_torch_objective(Xd[: min(2000, Xd.shape[0])], y[:2000], qid[:2000], options, args.alpha)
        best_cy, best_torch, model = np.inf, np.inf, None
        evals, f_end = 0, np.inf
        for _ in range(args.reps):
            t, model = timed_fit(lambda: make(args.alpha), X, y, qid)
            best_cy = min(best_cy, t)
            target = model.objective_ * (1.0 + RTOL)
            if evals and not np.isfinite(best_torch):
                continue   # torch hit the cap once: not run again
            t, evals, f_end = run_torch(Xd, y, qid, options, args.alpha, target, args.cap)
            if t is not None:
                best_torch = min(best_torch, t)
        f_cy = model.objective_
        f_star = listwise.solve(X, y, qid, alpha=args.alpha, tol=1e-12, **options).objective
        gap = (model.gap_ if model.gap_ is not None else np.nan) / max(1.0, abs(f_cy))
        ndcg = ndcg_score(yt, model.predict(Xt), qt, k=10)
        if np.isfinite(best_torch):
            peer = f"{best_torch:.3f} ({evals})"
            ratio = f"{best_torch / best_cy:.1f}"
        else:
            peer = f"not within {args.cap:g} s ({evals} evals; ends {(f_end - f_cy) / abs(f_cy):.1e} above)"
            ratio = f"> {args.cap / best_cy:.1f}"
        print(f"| cyrank {label} | {best_cy:.3f} | {ndcg:.4f} | {f_cy:.10g} ({model.converged_}, {gap:.1e}, "
              f"{(f_cy - f_star) / abs(f_star):.1e}) | {peer} | {ratio} |", flush=True)
    torch.set_num_threads(1)
    for label, make in PAIRWISE.items():
        if label not in args.models and args.models != ["all"]:
            continue
        if scales == "spread" and label != "RankSVM (C=1)" and not args.pairwise_spread:
            print(f"| cyrank {label} | not run (--pairwise-spread) | | | | |")
            continue
        best, model = np.inf, None
        for _ in range(args.reps):
            t, model = timed_fit(lambda: make(args.alpha), X, y, qid)
            best = min(best, t)
        ndcg = ndcg_score(yt, model.predict(Xt), qt, k=10)
        print(f"| cyrank {label} | {best:.3f} | {ndcg:.4f} | (converged {getattr(model, 'converged_', '-')}) | "
              f"| |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", choices=("lightgbm", "letor"), default=["lightgbm", "letor"])
    ap.add_argument("--docs", type=int, default=100_000, help="generated training documents")
    ap.add_argument("--query", type=int, default=100, help="documents per generated query")
    ap.add_argument("--noise", type=float, nargs="+", default=[12.0],
                    help="noise of the generated labels (1: nearly a function of X w, every model at NDCG 1)")
    ap.add_argument("--scales", nargs="+", choices=("unit", "spread"), default=["unit", "spread"],
                    help="generated columns as drawn, or column j times 10^U(-2, 4) (LETOR's raw feature scales)")
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cap", type=float, default=60.0, help="seconds before torch is stopped")
    ap.add_argument("--models", nargs="+", default=["all"], help="row labels to run (default all)")
    ap.add_argument("--pairwise-spread", action="store_true",
                    help="also fit RankNet and LambdaRank on the spread columns (over 120 s even on 1e4 rows)")
    ap.add_argument("--small", action="store_true", help="1e4 generated documents, one repetition, 30 s cap")
    args = ap.parse_args()
    if args.small:
        args.docs, args.reps, args.cap = 10_000, 1, 30.0
    import torch

    torch.set_num_threads(1)
    warm_up()
    for name in args.data:
        for noise in (args.noise if name == "letor" else [None]):
            for scales in (args.scales if name == "letor" else [None]):
                bench(name, args, noise, scales)


if __name__ == "__main__":
    main()
