"""Listwise losses on trees (issue 31, item 4): cyrank's ListwiseMART (softmax cross-entropy with the xendcg
target, ListNet, ListMLE) against LightGBM's built-in ``rank_xendcg`` and ``lambdarank`` objectives, the same trees,
side by side in one run, one thread. Prints markdown tables (for bench/RESULTS.md).

    python bench/bench_listwise_trees.py            # embedded data (20 seeds) + LETOR-style 1e5 x 136 (5 seeds)
    python bench/bench_listwise_trees.py --seeds 50 # embedded data over 50 seeds (generated data: 5)
    python bench/bench_listwise_trees.py --small    # generated data 2e4 x 136, 2 seeds (quick check)
    python bench/bench_listwise_trees.py --profile  # where a ListwiseMART fit spends its time (1e5 x 136)
    python bench/bench_listwise_trees.py --factors 100  # ListwiseMART's xendcg vs rank_xendcg, factor by factor

Every contender grows the same trees: num_leaves 31, learning_rate 0.1, 100 rounds, min_data_in_leaf 20,
feature_fraction 0.8 drawn from the seed (so that the seeds give different models for every contender; the
xendcg draws too), deterministic, force_row_wise, feature_pre_filter off (ListwiseMART's LightGBM defaults), one
thread. Fit time = wall time of the whole fit (LightGBM: Dataset construction + train, rows sorted by query
beforehand, outside the time; cyrank: ListwiseMART.fit on the rows as given). Test NDCG@10 in LightGBM's convention
(cyrank.metrics.ndcg_score(..., convention="lightgbm")), mean and spread (min-max) over the seeds, and the paired
difference from rank_xendcg (per seed, then mean and its standard error); seconds: the median fit time over the
seeds, contenders alternated within each seed.

Paired seeds: lightgbm.train's custom-objective path (ListwiseMART's) resets the Booster's objective to "none"
before its first round (Booster.update -> reset_parameter -> LightGBM's ResetConfig -> ColSampler::SetConfig),
which draws one column subset more than the built-in path does: at the same seed, tree t of a custom objective
sees the columns tree t + 1 of a built-in objective sees. The built-in rows therefore make the same reset before
their first round (``_align_columns``, a before-iteration callback), so that every contender of a seed grows its
trees on the same column subsets and the paired differences compare objectives, not column draws.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core for every contender
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from cyrank.datasets import load_lightgbm_rank, make_ranking  # noqa: E402
from cyrank.lambdarank.mart import ListwiseMART  # noqa: E402
from cyrank.metrics import ndcg_score  # noqa: E402

TREES = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20, "feature_fraction": 0.8}
ROUNDS = 100
CYRANK = (("cyrank softmax CE, xendcg target", dict(loss="listnet", target="xendcg")),
          ("cyrank ListNet (exp target)", dict(loss="listnet")),
          ("cyrank ListMLE (Efron ties)", dict(loss="listmle")))
if "newton_terms" in ListwiseMART._get_param_names():  # the gradient rank_xendcg hands its trees (_loss.pyx)
    CYRANK = CYRANK[:1] + (("cyrank softmax CE, xendcg target, 3 Newton terms",
                            dict(loss="listnet", target="xendcg", newton_terms=3)),) + CYRANK[1:]
LIGHTGBM = (("LightGBM rank_xendcg", "rank_xendcg"), ("LightGBM lambdarank", "lambdarank"))


def _align_columns(env):
    """Before round 0 of a built-in objective: the column-sampler reset lightgbm.train's custom-objective path
    makes (module docstring, "Paired seeds")."""
    if env.iteration == env.begin_iteration:
        env.model.reset_parameter({"feature_fraction": TREES["feature_fraction"]})


_align_columns.before_iteration = True


def fit_lightgbm(objective, X, y, qid, seed):
    import lightgbm as lgb

    order = np.argsort(qid, kind="stable")
    Xs, ys, groups = X[order], y[order], np.unique(qid[order], return_counts=True)[1]
    t = time.perf_counter()
    data = lgb.Dataset(Xs, label=ys, group=groups, params={"verbosity": -1})
    booster = lgb.train({"objective": objective, **TREES, "num_threads": 1, "seed": seed, "verbosity": -1,
                         "deterministic": True, "force_row_wise": True, "feature_pre_filter": False}, data,
                        num_boost_round=ROUNDS, callbacks=[_align_columns])
    return time.perf_counter() - t, booster.predict


def fit_cyrank(options, X, y, qid, seed):
    t = time.perf_counter()
    m = ListwiseMART(n_estimators=ROUNDS, learning_rate=TREES["learning_rate"], num_leaves=TREES["num_leaves"],
                     min_child_samples=TREES["min_data_in_leaf"], colsample_bytree=TREES["feature_fraction"],
                     n_jobs=1, random_state=seed, **options).fit(X, y, qid)
    return time.perf_counter() - t, m.predict


def side_by_side(name, train, test, seeds):
    (X, y, qid), (Xt, yt, qt) = train, test
    print(f"\n### {name}: {y.size:,} training documents, {np.unique(qid).size:,} queries, {X.shape[1]} features; "
          f"test {yt.size:,} documents; {len(seeds)} seeds\n")
    contenders = [(label, lambda s, o=o: fit_cyrank(o, X, y, qid, s)) for label, o in CYRANK] + \
                 [(label, lambda s, o=o: fit_lightgbm(o, X, y, qid, s)) for label, o in LIGHTGBM]
    times = {label: [] for label, _ in contenders}
    scores = {label: [] for label, _ in contenders}
    for i, seed in enumerate(seeds):
        turn = contenders[i % len(contenders):] + contenders[:i % len(contenders)]  # alternate who goes first
        for label, fit in turn:
            seconds, predict = fit(seed)
            times[label].append(seconds)
            scores[label].append(ndcg_score(yt, predict(Xt), qt, k=10, convention="lightgbm"))
    ref, base = np.median(times["LightGBM rank_xendcg"]), np.array(scores["LightGBM rank_xendcg"])
    print("| contender | fit seconds (median) | / rank_xendcg | test NDCG@10 mean | min - max | "
          "paired - rank_xendcg (se) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, _ in contenders:
        t, s = np.median(times[label]), np.array(scores[label])
        d = s - base
        se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
        paired = "-" if label == "LightGBM rank_xendcg" else f"{d.mean():+.4f} ({se:.4f})"
        print(f"| {label} | {t:.2f} | {t / ref:.2f}x | {s.mean():.4f} | {s.min():.4f} - {s.max():.4f} | {paired} |",
              flush=True)


def lightgbm_seed(seed):
    """LightGBM's objective_seed for ``seed`` (src/io/config.cpp, Config::Set: Random(seed), then data_random_seed,
    bagging_seed, drop_seed, feature_fraction_seed, objective_seed, extra_seed = successive NextShort(0, 32767))."""
    x = seed % 2**32
    for _ in range(5):
        x = (214013 * x + 2531011) % 2**32
    return ((x >> 16) & 0x7FFF) % 32767


def lightgbm_noise(sizes, seed):
    """rank_xendcg's noise, round after round (src/objective/rank_objective.hpp, RankXENDCG; utils/random.h):
    query q (in Dataset order) draws from its own Random(objective_seed + q), x <- 214013 x + 2531011 mod 2^32,
    g = ((x >> 16) & 0x7FFF) / 32768, one draw per row in row order per round; queries of one row draw nothing."""
    sizes = np.asarray(sizes)
    x = (lightgbm_seed(seed) + np.arange(sizes.size, dtype=np.uint64)) % np.uint64(2**32)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    while True:
        g = np.zeros(int(sizes.sum()))
        for i in range(int(sizes.max())):  # draw i of every query with more than i rows (and more than one)
            m = (sizes > i) & (sizes > 1)
            x[m] = (np.uint64(214013) * x[m] + np.uint64(2531011)) % np.uint64(2**32)
            g[starts[m] + i] = ((x[m] >> np.uint64(16)) & np.uint64(0x7FFF)) / 32768.0
        yield g


def factors(train, test, seeds):
    """What separates ListwiseMART(target="xendcg") from rank_xendcg, as a 2 x 2 over paired seeds: the noise
    generator (numpy's default_rng(seed).random(n) per round, ListwiseMART's; LightGBM's per-query generator,
    lightgbm_noise) x the gradient (the exact one; the Newton series to 3 terms, _loss.newton_series, rank_xendcg's),
    each through the custom-objective path with the kernel's Hessian diagonal, beside the built-in rank_xendcg
    (columns aligned, _align_columns). The (LightGBM noise, 3 terms) cell is rank_xendcg recomputed by the kernel:
    its largest prediction difference from the built-in is printed (float32 rounding of LightGBM's sums only)."""
    import lightgbm as lgb

    from cyrank.listwise import _loss
    from cyrank.listwise.solver import Prepared

    (X, y, qid), (Xt, yt, qt) = train, test
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    sizes = np.unique(qid, return_counts=True)[1]
    params = {**TREES, "num_threads": 1, "verbosity": -1, "deterministic": True, "force_row_wise": True,
              "feature_pre_filter": False}
    cells = {(noise, terms): [] for noise in ("numpy", "LightGBM") for terms in (1, 3)}
    builtin, replica_gap = [], 0.0
    for seed in seeds:
        data = lgb.Dataset(X, label=y, group=sizes, params={"verbosity": -1})
        ref = lgb.train({**params, "objective": "rank_xendcg", "seed": seed}, data, num_boost_round=ROUNDS,
                        callbacks=[_align_columns])
        builtin.append(ndcg_score(yt, ref.predict(Xt), qt, k=10, convention="lightgbm"))
        for (noise, terms), out in cells.items():
            prep, rng = Prepared(y, qid, target="xendcg"), np.random.default_rng(seed)
            draws = lightgbm_noise(sizes, seed) if noise == "LightGBM" else (rng.random(y.size) for _ in iter(int, 1))
            state = prep.new_state()

            def objective(preds, dataset, prep=prep, draws=draws, state=state, terms=terms):
                grad, hess = np.empty(y.size), np.empty(y.size)
                prep.set_noise(next(draws))
                prep.evaluate(np.asarray(preds, dtype=np.float64), grad, state)
                _loss.newton_series(prep.layout, state, grad, terms)
                _loss.hess_diag(prep.layout, state, hess)
                return grad, hess

            data = lgb.Dataset(X, label=y, group=sizes, params={"verbosity": -1})
            booster = lgb.train({**params, "objective": objective, "seed": seed}, data, num_boost_round=ROUNDS)
            out.append(ndcg_score(yt, booster.predict(Xt), qt, k=10, convention="lightgbm"))
            if (noise, terms) == ("LightGBM", 3):
                replica_gap = max(replica_gap, float(np.abs(booster.predict(Xt) - ref.predict(Xt)).max()))
    base = np.array(builtin)

    def paired(d):
        return f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(d.size):.4f})" if d.size > 1 else f"{d.mean():+.4f}"

    print(f"\n### rank_xendcg against the kernel, factor by factor: {len(seeds)} paired seeds\n")
    print("| objective (custom path unless built-in) | test NDCG@10 mean | paired - rank_xendcg (se) |")
    print("|---|---:|---:|")
    print(f"| LightGBM rank_xendcg (built-in) | {base.mean():.4f} | - |")
    for (noise, terms), v in cells.items():
        v = np.array(v)
        label = f"{noise} noise, {'exact gradient' if terms == 1 else '3 Newton terms'}"
        print(f"| {label} | {v.mean():.4f} | {paired(v - base)} |")
    c = {k: np.array(v) for k, v in cells.items()}
    series = (c["numpy", 3] + c["LightGBM", 3] - c["numpy", 1] - c["LightGBM", 1]) / 2
    generator = (c["LightGBM", 1] + c["LightGBM", 3] - c["numpy", 1] - c["numpy", 3]) / 2
    print(f"\nMain effects (mean (se) over the seeds): 3 Newton terms instead of the exact gradient "
          f"{paired(series)}; LightGBM's noise instead of numpy's {paired(generator)}. (LightGBM noise, 3 terms) "
          f"against the built-in: largest test prediction difference {replica_gap:.1e}.")


def letor_like(n_docs, seed):
    """LETOR-style generated data: 136 features, labels 0-4, queries of about 100 documents (MSLR-WEB's shape)."""
    return make_ranking(n_docs // 100, n_docs, 136, 5, noise=2.0, random_state=seed)


def profile(n_docs, repeats=3):
    """Where a ListwiseMART fit spends its time, beside LightGBM rank_xendcg's whole fit (best of ``repeats``,
    alternated): lightgbm.train (tree growth, with our objective's calls inside), our gradient source's calls
    (the cyrank.listwise kernel plus the per-round permutations), and the rest of the fit (checks, row order,
    kernel layout, final prediction for objective_, model text)."""
    import lightgbm as lgb

    from cyrank.lambdarank import mart

    X, y, qid = letor_like(n_docs, 0)
    print(f"\n### Where the time goes: {y.size:,} x 136, {ROUNDS} rounds, one thread, best of {repeats}\n")
    print("| contender | whole fit s | lightgbm.train s | of which gradient calls s | rest of the fit s |")
    print("|---|---:|---:|---:|---:|")
    spent = {"train": 0.0, "grad": 0.0}
    train, gradients = lgb.train, mart._ListwiseGradients.gradients

    def timed_train(*args, **kwargs):
        t = time.perf_counter()
        try:
            return train(*args, **kwargs)
        finally:
            spent["train"] += time.perf_counter() - t

    def timed_gradients(self, *args):
        t = time.perf_counter()
        gradients(self, *args)
        spent["grad"] += time.perf_counter() - t

    best = {}
    for _ in range(repeats):
        seconds = fit_lightgbm("rank_xendcg", X, y, qid, 1)[0]
        best["LightGBM rank_xendcg"] = min(best.get("LightGBM rank_xendcg", (np.inf,)), (seconds, seconds, 0.0))
        for label, options in CYRANK:
            spent.update(train=0.0, grad=0.0)
            lgb.train, mart._ListwiseGradients.gradients = timed_train, timed_gradients
            try:
                seconds = fit_cyrank(options, X, y, qid, 1)[0]
            finally:
                lgb.train, mart._ListwiseGradients.gradients = train, gradients
            best[label] = min(best.get(label, (np.inf,)), (seconds, spent["train"], spent["grad"]))
    for label, (whole, in_train, grad) in best.items():
        parts = "- | - | -" if label.startswith("LightGBM") else f"{in_train:.2f} | {grad:.2f} | {whole - in_train:.2f}"
        print(f"| {label} | {whole:.2f} | {parts} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="generated data of 2e4 documents, 2 seeds")
    parser.add_argument("--profile", action="store_true", help="only the time split of one fit")
    parser.add_argument("--seeds", type=int, default=20, help="seeds on the embedded data (default 20)")
    parser.add_argument("--factors", type=int, metavar="N", help="only the 2 x 2 of noise generator x gradient "
                        "against rank_xendcg on the embedded data, over N paired seeds")
    args = parser.parse_args()
    import lightgbm

    print(f"LightGBM {lightgbm.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()}, one thread")
    n_docs = 20_000 if args.small else 100_000
    if args.profile:
        profile(n_docs)
        return
    if args.factors:
        factors(load_lightgbm_rank("train"), load_lightgbm_rank("test"), list(range(1, args.factors + 1)))
        return
    seeds = [1, 2] if args.small else [1, 2, 3, 4, 5]
    side_by_side("Embedded data (load_lightgbm_rank)", load_lightgbm_rank("train"), load_lightgbm_rank("test"),
                 list(range(1, args.seeds + 1)))
    side_by_side("LETOR-style generated data (make_ranking, labels 0-4)", letor_like(n_docs, 0),
                 letor_like(n_docs // 4, 1), seeds)


if __name__ == "__main__":
    main()
