"""RankNet / LambdaRank / LambdaMART benchmarks (issue 13, first part): the lambda kernel's throughput against a
vectorised numpy version, and LambdaMART against LightGBM's built-in lambdarank objective on the embedded data.
Prints markdown tables (pasted into bench/RESULTS.md).

    python bench/bench_lambdarank.py    # kernel | gradient | throughput | mart1000 | memory | mart | parity | seeds |
                                        # rounds | linear
    python bench/bench_lambdarank.py --only kernel

The numpy peer (NumpyLambdas) computes the same lambdas per query with (n x n) broadcasting and is checked against
the kernel before timing. LightGBM is the PyPI wheel (``pip install lightgbm``), timed in the same run.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from cyrank.datasets import load_lightgbm_rank  # noqa: E402
from cyrank.lambdarank import lambdas  # noqa: E402
from cyrank.lambdarank.solver import _Pairs  # noqa: E402
from cyrank.metrics import ndcg_score  # noqa: E402


def numpy_lambdas(y, s, qid, k=10, sigma=1.0):
    """LambdaRank-NDCG@k gradients per query with numpy broadcasting (pessimistic ties, as the kernel)."""
    grad = np.zeros(y.size)
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        yq, sq = y[idx], s[idx]
        order = np.lexsort((yq, -sq))
        pos = np.empty(idx.size, int)
        pos[order] = np.arange(idx.size)
        disc = np.where(pos < k, 1.0 / np.log2(pos + 2.0), 0.0)
        gain = 2.0 ** yq - 1.0
        ideal = np.sort(gain)[::-1][:k]
        idcg = float(np.sum(ideal / np.log2(np.arange(ideal.size) + 2.0)))
        if idcg <= 0:
            continue
        better = yq[:, None] > yq[None, :]
        delta = np.abs((gain[:, None] - gain[None, :]) * (disc[:, None] - disc[None, :])) / idcg
        rho = 1.0 / (1.0 + np.exp(sigma * (sq[:, None] - sq[None, :])))
        force = np.where(better, sigma * rho * delta, 0.0)
        grad[idx] += force.T.sum(axis=1) - force.sum(axis=1)
    return grad


def bench_kernel(quick):
    print("\n### Lambda kernel throughput: LambdaRank NDCG@10 gradients\n")
    print("Documents per second for one gradient evaluation (best of 5), one thread; queries of the given size, "
          "labels 0-4, random scores. cyrank = the kernel call LambdaMART makes (rows already in query order, no "
          "cost); numpy = per-query broadcasting (numpy_lambdas), checked equal first.\n")
    print("| queries x documents | cyrank kernel docs/s | numpy docs/s | kernel / numpy |")
    print("|---|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for n_q, size in ((200, 10), (200, 50), (100, 200)) if not quick else ((50, 10), (20, 50)):
        qid = np.repeat(np.arange(n_q), size)
        y = rng.integers(0, 5, qid.size).astype(float)
        s = rng.normal(size=qid.size)
        ours = lambdas(y, s, qid, metric="ndcg@10")[1]
        assert np.allclose(ours, numpy_lambdas(y, s, qid), rtol=1e-10, atol=1e-12), "numpy lambdas disagree"
        pairs = _Pairs(y, qid, metric="ndcg@10")  # the kernel call LambdaMART makes: sorted rows, no cost
        s_sorted, lam, hess = np.ascontiguousarray(s[pairs.order]), np.empty(s.size), np.empty(s.size)
        t_k = min(_seconds(lambda: pairs.lambdas(s_sorted, lam, hess, with_cost=False)) for _ in range(5))
        t_n = min(_seconds(lambda: numpy_lambdas(y, s, qid)) for _ in range(5 if size < 200 else 2))
        print(f"| {n_q} x {size} | {qid.size / t_k:,.0f} | {qid.size / t_n:,.0f} | {t_n / t_k:.0f}x |", flush=True)


def _seconds(fun):
    t = time.perf_counter()
    fun()
    return time.perf_counter() - t


def bench_gradient(quick):
    """Our kernel against LightGBM's own lambdarank gradient, measured through its objective: 100 rounds of the
    built-in objective minus 100 rounds of a custom objective returning fixed arrays (no work) is the time of its
    100 gradient evaluations; ours is the kernel call LambdaMART makes, timed alone."""
    import lightgbm as lgb

    print("\n### Lambda kernel against LightGBM's lambdarank gradient (embedded data, 3,005 documents)\n")
    print("LightGBM's gradient time = (100 rounds with objective='lambdarank') - (100 rounds with a custom "
          "objective returning fixed arrays), best of 5 each, one thread, 31 leaves; the difference is its 100 "
          "gradient evaluations. cyrank = 100 calls of the kernel LambdaMART makes (metric 'ndcg' with LightGBM's "
          "settings, and 'ndcg@10'), best of 5.\n")
    X, y, qid = load_lightgbm_rank("train")
    order = np.argsort(qid, kind="stable")
    groups = np.unique(qid[order], return_counts=True)[1]
    params = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20, "num_threads": 1, "verbosity": -1,
              "deterministic": True, "force_row_wise": True}
    rounds = 20 if quick else 100
    fixed_g = np.random.default_rng(0).normal(size=y.size)
    fixed_h = np.ones(y.size)

    def train(objective):
        data = lgb.Dataset(X[order], label=y[order], group=groups, params={"verbosity": -1})
        t = time.perf_counter()
        lgb.train({**params, "objective": objective}, data, num_boost_round=rounds)
        return time.perf_counter() - t

    builtin = min(train("lambdarank") for _ in range(5))
    constant = min(train(lambda preds, data: (fixed_g, fixed_h)) for _ in range(5))
    theirs = max(builtin - constant, 1e-9) / rounds
    print("| gradient | seconds per evaluation | documents per second | cyrank / LightGBM |")
    print("|---|---:|---:|---:|")
    print(f"| LightGBM lambdarank (difference of trainings) | {theirs:.2e} | {y.size / theirs:,.0f} | 1.0x |")
    s = np.random.default_rng(1).normal(size=y.size)
    for label, kwargs in (("cyrank, LightGBM's settings (ndcg, truncation 30, input ties, norm)",
                           {"metric": "ndcg", "truncation": 30, "ties": "input", "norm": True}),
                          ("cyrank, ndcg@10", {"metric": "ndcg@10"})):
        pairs = _Pairs(y, qid, **kwargs)
        s_sorted, lam, hess = np.ascontiguousarray(s[pairs.order]), np.empty(y.size), np.empty(y.size)

        def run():
            for _ in range(rounds):
                pairs.lambdas(s_sorted, lam, hess, with_cost=False)

        ours = min(_seconds(run) for _ in range(5)) / rounds
        print(f"| {label} | {ours:.2e} | {y.size / ours:,.0f} | {theirs / ours:.1f}x |", flush=True)


def bench_throughput(quick):
    """Issue 28: the kernel against LightGBM's lambdarank gradient at query lengths 10 to 3,000, NDCG@10."""
    print("\n### Lambda kernel against LightGBM's lambdarank gradient, by query length (NDCG@10, one thread)\n")
    print("1e5 documents (3e4 with --quick) in queries of the given length, labels 0-4 uniform, scores N(0, 1) "
          "(distinct). LightGBM's gradient, isolated: stump trainings (2 leaves, one feature of 15 bins, the "
          "random scores as init_score, so that its objective ranks the same kind of distinct scores as ours) "
          "with objective='lambdarank' minus the same trainings with a custom objective returning fixed arrays, "
          "per round; lambdarank_truncation_level=10 (its pairs: the top 10 positions x every document, as "
          "NDCG@10's), its other defaults (lambdarank_norm on). The fixed-array objective's Python call is part "
          "of the subtracted time, which favours LightGBM. cyrank: "
          "`Lambdas(y, qid, metric='ndcg@10').gradient(scores)`, prepared once (the public call without the cost: "
          "score check, reordering, kernel), and the kernel alone (the call LambdaMART makes). Best of 5, the "
          "contenders alternated.\n")
    print("| documents per query | LightGBM ns/doc | cyrank Lambdas ns/doc | cyrank kernel ns/doc | "
          "LightGBM / Lambdas | LightGBM / kernel |")
    print("|---:|---:|---:|---:|---:|---:|")
    total, rounds = (30_000, 10) if quick else (100_000, 20)
    for size in (10, 30, 100, 300, 1000, 3000):
        theirs, ours, kernel, n = _gradient_seconds(size, total, rounds, {"lambdarank_truncation_level": 10},
                                                    dict(metric="ndcg@10"))
        print(f"| {size} | {1e9 * theirs / n:.0f} | {1e9 * ours / n:.0f} | {1e9 * kernel / n:.0f} | "
              f"{theirs / ours:.2f}x | {theirs / kernel:.2f}x |", flush=True)


def _gradient_seconds(size, total, rounds, lgb_objective_params, cyrank_params, seed=0):
    """(LightGBM's lambdarank gradient, the public Lambdas.gradient, the kernel alone): seconds per call on
    ``total`` documents in queries of ``size`` (labels 0-4, distinct N(0, 1) scores), and the documents.
    LightGBM's, isolated: stump trainings with objective='lambdarank' (``lgb_objective_params``) minus the same
    trainings with a custom objective returning fixed arrays, per round. Best of 5, alternated."""
    import lightgbm as lgb

    from cyrank.lambdarank import Lambdas

    rng = np.random.default_rng(seed)
    n_q = max(1, total // size)
    n = n_q * size
    qid = np.repeat(np.arange(n_q), size)
    y = rng.integers(0, 5, n).astype(np.float64)
    s = rng.normal(size=n)
    X = rng.normal(size=(n, 1)).astype(np.float32)
    params = {"num_leaves": 2, "min_data_in_leaf": 1, "learning_rate": 0.1, "num_threads": 1, "verbosity": -1,
              "deterministic": True, "force_row_wise": True, **lgb_objective_params}
    data = lgb.Dataset(X, label=y, group=np.full(n_q, size), init_score=s, free_raw_data=False,
                       params={"verbosity": -1, "max_bin": 15, "min_data_in_leaf": 1,
                               "feature_pre_filter": False}).construct()
    fixed_g, fixed_h = rng.normal(size=n), np.ones(n)
    prepared = Lambdas(y, qid, **cyrank_params)
    pairs = _Pairs(y, qid, **cyrank_params)
    s_sorted, lam, hess = np.ascontiguousarray(s[pairs.order]), np.empty(n), np.empty(n)
    times = {"builtin": [], "fixed": [], "lambdas": [], "kernel": []}
    for _ in range(5):
        times["builtin"].append(_seconds(lambda: lgb.train({**params, "objective": "lambdarank"}, data,
                                                           num_boost_round=rounds)))
        times["fixed"].append(_seconds(lambda: lgb.train({**params, "objective": lambda p, d: (fixed_g, fixed_h)},
                                                         data, num_boost_round=rounds)))
        times["lambdas"].append(_seconds(lambda: prepared.gradient(s)))
        times["kernel"].append(_seconds(lambda: pairs.lambdas(s_sorted, lam, hess, with_cost=False)))
    theirs = max(min(times["builtin"]) - min(times["fixed"]), 1e-12) / rounds
    return theirs, min(times["lambdas"]), min(times["kernel"]), n


def _letor_float32(n_queries, per_query, d, seed=0):
    """Dense float32 features, labels 0-4 from a noisy linear score, queries of per_query documents."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, d)).astype(np.float32)
    score = X[:, :10] @ rng.normal(size=10) + rng.normal(scale=2.0, size=X.shape[0])
    y = np.digitize(score, np.quantile(score, (0.5, 0.8, 0.93, 0.98))).astype(np.float64)
    return X, y, np.repeat(np.arange(n_queries), per_query)


# the settings LambdaMART and LightGBM share in the fit-time and memory benchmarks
_MART = {"n_estimators": 20, "num_leaves": 31, "learning_rate": 0.1, "n_jobs": 1}
_LGB = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 20, "num_threads": 1,
        "verbosity": -1, "deterministic": True, "force_row_wise": True, "feature_pre_filter": False}


def _fit_lightgbm(X, y, qid):
    import lightgbm as lgb

    data = lgb.Dataset(X, label=y, group=np.unique(qid, return_counts=True)[1], params={"verbosity": -1})
    return lgb.train(_LGB, data, num_boost_round=_MART["n_estimators"])


def bench_mart_1000(quick):
    """Issue 28: LambdaMART against LightGBM's lambdarank, fit time on queries of 1,000 documents."""
    from cyrank import LambdaMART

    n_q, d = (20, 136) if quick else (100, 136)
    X, y, qid = _letor_float32(n_q, 1000, d)
    print(f"\n### LambdaMART against LightGBM lambdarank: fit time, queries of 1,000 ({n_q * 1000:,} x {d} float32, "
          "one thread)\n")
    print("20 trees, 31 leaves, learning rate 0.1, min_data_in_leaf 20, deterministic, force_row_wise, the rows "
          "query-contiguous (LightGBM needs that; LambdaMART does not); each fit includes LightGBM's binning of X. "
          "Best of 3, the contenders alternated. LightGBM lambdarank = its defaults (truncation 30, norm); "
          "LambdaMART with LightGBM's settings = metric='ndcg', truncation=30, ties='input', norm=True.\n")
    contenders = {"LightGBM lambdarank": lambda: _fit_lightgbm(X, y, qid),
                  "cyrank LambdaMART(ndcg@10)": lambda: LambdaMART(**_MART).fit(X, y, qid),
                  "cyrank LambdaMART, LightGBM's settings": lambda: LambdaMART(
                      metric="ndcg", truncation=30, ties="input", norm=True, **_MART).fit(X, y, qid)}
    times = {name: [] for name in contenders}
    for _ in range(3):
        for name, fit in contenders.items():
            times[name].append(_seconds(fit))
    base = min(times["LightGBM lambdarank"])
    print("| fit | seconds | / LightGBM |")
    print("|---|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {min(values):.2f} | {min(values) / base:.2f}x |", flush=True)
    # the gradient alone in these settings (bench_throughput's isolation), at the same query length
    theirs, ours, kernel, n = _gradient_seconds(1000, 30_000 if quick else 100_000, 10 if quick else 20, {},
                                                dict(metric="ndcg", truncation=30, ties="input", norm=True))
    print("\nThe gradient alone in these settings (as the throughput table isolates it; LightGBM's defaults, "
          "truncation 30 and norm, against Lambdas(metric='ndcg', truncation=30, ties='input', norm=True)), ns per "
          f"document: LightGBM {1e9 * theirs / n:.0f}, cyrank Lambdas {1e9 * ours / n:.0f}, kernel "
          f"{1e9 * kernel / n:.0f} (LightGBM / kernel {theirs / kernel:.2f}x).", flush=True)


_MEMORY_CHILD = """
import sys
import numpy as np
sys.path.insert(0, {bench!r})
from bench_lambdarank import _MART, _fit_lightgbm, _letor_float32
from bench_memory import peak_above_rss
from cyrank import LambdaMART

X, y, qid = _letor_float32({n_q}, 100, {d})
X = X.astype({dtype!r})
fit = (lambda X, y, q: LambdaMART(**_MART).fit(X, y, q)) if {who!r} == "mart" else _fit_lightgbm
fit(X[:2000].copy(), y[:2000], qid[:2000])  # warm-up: imports, LightGBM's first call
print(peak_above_rss(lambda: fit(X, y, qid))[2] / X.nbytes)
"""


def bench_mart_memory(quick):
    """Issue 28: excess peak RSS of a LambdaMART fit against LightGBM lambdarank on the same X, fresh processes."""
    import subprocess
    import sys

    n_q, d = (500, 136) if quick else (4000, 136)
    print(f"\n### LambdaMART memory: excess peak RSS over X's bytes ({n_q * 100:,} x {d}, queries of 100)\n")
    print("Each fit in a fresh process, after a warm-up fit on 2,000 rows: /proc/self/clear_refs reset (5), VmRSS "
          "before, VmHWM after; the excess divided by X's bytes. 20 trees, the settings of the fit-time table. "
          "LightGBM holds a float64 sample of min(n, 200,000) rows while it bins X, which dominates both. "
          "Median of 3 processes.\n")
    print("| fit | float32 X | float64 X |")
    print("|---|---:|---:|")
    bench = os.path.dirname(os.path.abspath(__file__))
    for who, label in (("lightgbm", "LightGBM lambdarank"), ("mart", "cyrank LambdaMART(ndcg@10)")):
        cells = []
        for dtype in ("float32", "float64"):
            code = _MEMORY_CHILD.format(bench=bench, n_q=n_q, d=d, dtype=dtype, who=who)
            runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                         check=True).stdout.split()[-1]) for _ in range(3)]
            cells.append(f"{np.median(runs):.2f}x")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def bench_mart(quick):
    import lightgbm as lgb

    from cyrank import LambdaMART, LambdaRank, RankNet

    print("\n### LambdaMART vs LightGBM's built-in lambdarank (embedded LightGBM rank data)\n")
    print("100 trees, 31 leaves, learning rate 0.1, min_data_in_leaf 20, one thread, deterministic; no row or "
          "feature sampling, so the seed changes nothing and one run is shown. Test metrics in LightGBM's NDCG "
          "convention (queries without a relevant document score 1); ERR@10 and MAP with cyrank's defaults. "
          f"LightGBM {lgb.__version__}. Fit time: best of 3.\n")
    data = load_lightgbm_rank("both")
    X, y, qid = data["train"]
    Xt, yt, qt = data["test"]
    order = np.argsort(qid, kind="stable")
    groups = np.unique(qid[order], return_counts=True)[1]
    params = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20, "num_threads": 1, "verbosity": -1,
              "deterministic": True, "force_row_wise": True}
    n_trees = 20 if quick else 100

    def builtin():
        train = lgb.Dataset(X[order], label=y[order], group=groups)
        return lgb.train({**params, "objective": "lambdarank"}, train, num_boost_round=n_trees)

    rows = [("LightGBM lambdarank (built-in)", builtin, lambda m: m.predict(Xt))]
    for metric in ("ndcg@10", "err@10", "map"):
        rows.append((f"cyrank LambdaMART({metric})",
                     lambda metric=metric: LambdaMART(metric=metric, n_estimators=n_trees, n_jobs=1).fit(X, y, qid),
                     lambda m: m.predict(Xt)))
    rows += [("cyrank LambdaRank(ndcg@10), linear", lambda: LambdaRank().fit(X, y, qid), lambda m: m.predict(Xt)),
             ("cyrank RankNet, linear", lambda: RankNet().fit(X, y, qid), lambda m: m.predict(Xt))]
    print("| model | NDCG@1 | NDCG@5 | NDCG@10 | ERR@10 | MAP | fit s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    from cyrank.metrics import average_precision, err_score

    for name, fit, predict in rows:
        times = []
        for _ in range(3):
            t = time.perf_counter()
            model = fit()
            times.append(time.perf_counter() - t)
        p = predict(model)
        cells = [ndcg_score(yt, p, qt, k=k, convention="lightgbm") for k in (1, 5, 10)]
        cells += [err_score(yt, p, qt, k=10), average_precision(yt, p, qt)]
        print(f"| {name} | " + " | ".join(f"{c:.4f}" for c in cells) + f" | {min(times):.3f} |", flush=True)


def bench_seeds(quick):
    """Issue 13's table: every ranker on the embedded data over five seeds, trees with feature sampling 0.8."""
    import lightgbm as lgb

    from cyrank import DominationRank, LambdaMART, LambdaRank, RankNet, RankSVM
    from cyrank.metrics import average_precision, err_score

    try:
        import xgboost as xgb
    except ImportError:
        xgb = None
    print("\n### Every ranker on the embedded LightGBM rank data, five seeds\n")
    print("Trees: 100, 31 leaves, learning rate 0.1, feature sampling 0.8 drawn with seeds 0-4, one thread "
          "(LightGBM min_data_in_leaf 20; XGBoost hist, lossguide, max_leaves 31, its other defaults; XGBoost's "
          "rank:map accepts binary labels only: it gets y > 0, the relevance MAP uses). Linear models: "
          "defaults (deterministic: one value per seed repeated). Test metrics, mean over the seeds (spread min-max "
          "for NDCG@10): NDCG@k in LightGBM's convention, ERR@10 and MAP with cyrank's defaults. Fit seconds: mean. "
          f"LightGBM {lgb.__version__}" + (f", XGBoost {xgb.__version__} (PyPI xgboost-cpu)" if xgb else
                                          ", XGBoost not installed") + ".\n")
    data = load_lightgbm_rank("both")
    X, y, qid = data["train"]
    Xt, yt, qt = data["test"]
    order = np.argsort(qid, kind="stable")
    groups = np.unique(qid[order], return_counts=True)[1]
    seeds = range(2 if quick else 5)
    lgb_params = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20, "feature_fraction": 0.8,
                  "num_threads": 1, "verbosity": -1, "deterministic": True, "force_row_wise": True}

    def lightgbm_builtin(seed):
        train = lgb.Dataset(X[order], label=y[order], group=groups)
        return lgb.train({**lgb_params, "objective": "lambdarank", "seed": seed}, train, num_boost_round=100)

    def xgboost(objective):
        def fit(seed):
            labels = (y[order] > 0).astype(float) if objective == "rank:map" else y[order]  # rank:map: binary only
            train = xgb.DMatrix(X[order], label=labels, qid=qid[order])
            return xgb.train({"objective": objective, "eta": 0.1, "max_leaves": 31, "grow_policy": "lossguide",
                              "max_depth": 0, "tree_method": "hist", "colsample_bytree": 0.8, "seed": seed,
                              "nthread": 1}, train, num_boost_round=100)
        return fit

    def predict(model):
        if xgb is not None and isinstance(model, xgb.Booster):
            return model.predict(xgb.DMatrix(Xt))
        return model.predict(Xt)

    rows = [("LightGBM lambdarank (built-in)", lightgbm_builtin)]
    if xgb is not None:
        rows += [("XGBoost rank:ndcg", xgboost("rank:ndcg")), ("XGBoost rank:map", xgboost("rank:map"))]
    for metric in ("ndcg@10", "err@10", "map"):
        rows.append((f"cyrank LambdaMART({metric})", lambda seed, metric=metric: LambdaMART(
            metric=metric, colsample_bytree=0.8, random_state=seed, n_jobs=1).fit(X, y, qid)))
    rows += [("cyrank LambdaRank(ndcg@10), linear", lambda seed: LambdaRank().fit(X, y, qid)),
             ("cyrank RankNet, linear", lambda seed: RankNet().fit(X, y, qid)),
             ("cyrank RankSVM, linear (C=1e-4)", lambda seed: RankSVM(C=1e-4).fit(X, y, qid)),
             ("cyrank DominationRank, l2", lambda seed: DominationRank().fit(X, y, qid))]
    print("| model | NDCG@1 | NDCG@5 | NDCG@10 (min-max) | ERR@10 | MAP | fit s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, fit in rows:
        values, times = [], []
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                model = fit(seed)
                times.append(time.perf_counter() - t)
            p = np.asarray(predict(model), dtype=np.float64)
            values.append([ndcg_score(yt, p, qt, k=k, convention="lightgbm") for k in (1, 5, 10)]
                          + [err_score(yt, p, qt, k=10), average_precision(yt, p, qt)])
        v = np.array(values)
        print(f"| {name} | {v[:, 0].mean():.4f} | {v[:, 1].mean():.4f} | {v[:, 2].mean():.4f} "
              f"({v[:, 2].min():.4f}-{v[:, 2].max():.4f}) | {v[:, 3].mean():.4f} | {v[:, 4].mean():.4f} "
              f"| {np.mean(times):.3f} |", flush=True)


def bench_rounds(quick):
    """Test NDCG@10 against boosting rounds for each lambda choice (plot)."""
    import lightgbm as lgb

    from cyrank import LambdaMART

    data = load_lightgbm_rank("both")
    X, y, qid = data["train"]
    Xt, yt, qt = data["test"]
    order = np.argsort(qid, kind="stable")
    train = lgb.Dataset(X[order], label=y[order], group=np.unique(qid[order], return_counts=True)[1])
    builtin = lgb.train({"objective": "lambdarank", "learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20,
                         "num_threads": 1, "verbosity": -1, "deterministic": True, "force_row_wise": True},
                        train, num_boost_round=100)
    curves = {"LightGBM lambdarank": builtin}
    for metric in ("ndcg@10", "err@10", "map", "ranknet"):
        curves[f"LambdaMART({metric})"] = LambdaMART(metric=metric, n_jobs=1).fit(X, y, qid).booster_
    rounds = np.arange(1, 101, 1 if not quick else 10)
    print("\n### Test NDCG@10 against boosting rounds\n")
    print("| lambdas | 10 | 25 | 50 | 100 |")
    print("|---|---:|---:|---:|---:|")
    values = {}
    for name, booster in curves.items():
        values[name] = [ndcg_score(yt, booster.predict(Xt, num_iteration=int(r)), qt, k=10, convention="lightgbm")
                        for r in rounds]
        at = dict(zip(rounds.tolist(), values[name]))
        print(f"| {name} | " + " | ".join(f"{at[r]:.4f}" if r in at else "-" for r in (10, 25, 50, 100)) + " |")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    os.makedirs(out, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, vals in values.items():
        ax.plot(rounds, vals, label=name)
    ax.set_xlabel("boosting rounds")
    ax.set_ylabel("test NDCG@10 (LightGBM convention)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "lambdamart_rounds.png"), dpi=120)
    print("\nPlot: bench/out/lambdamart_rounds.png")


def bench_parity(quick):
    import lightgbm as lgb

    from cyrank import LambdaMART

    print("\n### Same trees as LightGBM's lambdarank: twenty seeds with feature sampling\n")
    print("100 trees, 31 leaves, learning rate 0.1, feature_fraction (colsample_bytree) 0.8 drawn with seeds 0-19, one "
          "thread. `LightGBM settings` = LambdaMART(metric='ndcg', truncation=30, ties='input', norm=True), the "
          "built-in objective's definition; `cyrank defaults` = LambdaMART(metric='ndcg@10'). Test NDCG@10 in "
          "LightGBM's convention.\n")
    data = load_lightgbm_rank("both")
    X, y, qid = data["train"]
    Xt, yt, qt = data["test"]
    order = np.argsort(qid, kind="stable")
    train = lgb.Dataset(X[order], label=y[order], group=np.unique(qid[order], return_counts=True)[1])
    seeds = range(2 if quick else 20)
    rows = {"LightGBM lambdarank (built-in)": [], "cyrank LambdaMART, LightGBM settings": [],
            "cyrank LambdaMART, cyrank defaults": []}
    for seed in seeds:
        params = {"objective": "lambdarank", "learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20,
                  "feature_fraction": 0.8, "seed": seed, "num_threads": 1, "verbosity": -1, "deterministic": True,
                  "force_row_wise": True}
        models = [lgb.train(params, train, num_boost_round=100),
                  LambdaMART(metric="ndcg", truncation=30, ties="input", norm=True, colsample_bytree=0.8,
                             random_state=seed, n_jobs=1).fit(X, y, qid),
                  LambdaMART(colsample_bytree=0.8, random_state=seed, n_jobs=1).fit(X, y, qid)]
        for name, model in zip(rows, models):
            rows[name].append(ndcg_score(yt, model.predict(Xt), qt, k=10, convention="lightgbm"))
    print("| model | mean | std | min | max | mean of the first 5 seeds |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, values in rows.items():
        v = np.array(values)
        print(f"| {name} | {v.mean():.4f} | {v.std(ddof=1):.4f} | {v.min():.4f} | {v.max():.4f} | "
              f"{v[:5].mean():.4f} |")
    base = np.array(rows["LightGBM lambdarank (built-in)"])
    for name in list(rows)[1:]:
        diff = np.array(rows[name]) - base
        print(f"\n{name} - built-in, per seed: mean {diff.mean():+.4f}, standard error "
              f"{diff.std(ddof=1) / np.sqrt(diff.size):.4f}")


def _split_queries(X, y, qid, share, seed):
    """(train, validation) by query: ``share`` of the queries, drawn at random, held out."""
    rng = np.random.default_rng(seed)
    queries = np.unique(qid)
    held = rng.choice(queries, size=max(1, int(round(share * queries.size))), replace=False)
    val = np.isin(qid, held)
    return (X[~val], y[~val], qid[~val]), (X[val], y[val], qid[val])


def _graded_letor(n_queries, per_query, d, seed):
    """LETOR-style generated data: dense features, labels 0..4 in LETOR proportions from a noisy, partly non-linear
    score (so that no linear model is exactly right), queries of per_query documents."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.normal(size=(n, d))
    score = X @ rng.normal(size=d) + 0.5 * np.tanh(X[:, 0] * X[:, 1]) * d ** 0.5
    noisy = score + rng.normal(scale=score.std(), size=n)
    y = np.digitize(noisy, np.quantile(noisy, np.cumsum((0.5, 0.3, 0.13, 0.05))[:4])).astype(np.float64)
    return X, y, np.repeat(np.arange(n_queries), per_query)


def bench_linear(quick):
    """Issue 25: linear LambdaRank (the LambdaLoss EM loop) against RankNet, RankSVM and DominationRank."""
    from cyrank import DominationRank, LambdaRank, RankNet, RankSVM

    print("\n### Linear rankers: test NDCG@10, the regularisation chosen on a validation split (issue 25)\n")
    print("Each model's alpha (C for RankSVM) is chosen from a grid by NDCG@10 on 25% of the training queries held "
          "out, then refitted on the whole training set; NDCG@10 = cyrank.metrics.ndcg_score (exponential gain, "
          "pessimistic ties, queries without a relevant document dropped). LambdaRank optimises NDCG@10 "
          "(metric='ndcg@10', defaults otherwise).\n")
    grid = (0.01, 0.1, 1.0, 10.0, 100.0)
    models = {"RankNet": lambda a: RankNet(alpha=a), "LambdaRank": lambda a: LambdaRank(alpha=a),
              "RankSVM": lambda a: RankSVM(C=1.0 / a), "DominationRank": lambda a: DominationRank(alpha=a)}
    Xtr, ytr, qtr = load_lightgbm_rank("train")
    Xte, yte, qte = load_lightgbm_rank("test")
    sets = [("LightGBM rank.train / rank.test (201 / 50 queries, 300 sparse features)", (Xtr, ytr, qtr),
             (Xte, yte, qte))]
    for seed in (0, 1):
        n_q = 100 if quick else 300
        X, y, q = _graded_letor(n_q + n_q // 2, 40, 30, seed)
        train = q < n_q
        sets.append((f"generated LETOR-style, seed {seed} ({n_q} / {n_q // 2} queries of 40, 30 features, labels 0-4)",
                     (X[train], y[train], q[train]), (X[~train], y[~train], q[~train])))
    # RankSVM's column: C = 1 / alpha
    print("| data | " + " | ".join(f"{m} (alpha)" for m in models) + " | LambdaRank - RankNet |")
    print("|---|" + "---:|" * (len(models) + 1))
    for name, (X, y, q), (Xt, yt, qt) in sets:
        (Xa, ya, qa), (Xv, yv, qv) = _split_queries(X, y, q, 0.25, seed=7)
        scores = {}
        for m, make in models.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                val = [ndcg_score(yv, make(a).fit(Xa, ya, qa).predict(Xv), qv, k=10) for a in grid]
                best = grid[int(np.argmax(val))]
                scores[m] = (ndcg_score(yt, make(best).fit(X, y, q).predict(Xt), qt, k=10), best)
        print(f"| {name} | " + " | ".join(f"{v:.4f} ({a:g})" for v, a in scores.values())
              + f" | {scores['LambdaRank'][0] - scores['RankNet'][0]:+.4f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="kernel,gradient,throughput,mart1000,memory,mart,parity,seeds,rounds,linear")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    print(f"## RankNet / LambdaRank / LambdaMART (`python bench/bench_lambdarank.py --only {args.only}`)\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, one thread everywhere; Python "
          f"{platform.python_version()}, numpy {np.__version__}; load average at start {os.getloadavg()[0]:.1f}.")
    for name in args.only.split(","):
        {"kernel": bench_kernel, "gradient": bench_gradient, "throughput": bench_throughput, "mart": bench_mart,
         "mart1000": bench_mart_1000, "memory": bench_mart_memory, "parity": bench_parity,
         "seeds": bench_seeds, "rounds": bench_rounds, "linear": bench_linear}[name](args.quick)


if __name__ == "__main__":
    main()
