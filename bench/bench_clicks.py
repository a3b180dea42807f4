"""Learning to rank from simulated clicks (issue 29): naive vs IPS vs full information, test NDCG@10 on true labels.

Setting (Joachims, Swaminathan & Schnabel, WSDM 2017, section 6): a logging RankSVM trained on 2% of the training
queries (full labels) ranks every training query; sessions draw queries uniformly and click under the
position-based model, top 10 shown, examination (1/rank)^eta, click probability when examined
``0.1 + 0.9 (2^y - 1) / (2^y_max - 1)`` (cyrank.clicks, relevance="graded"). Per eta and seed (the seed draws the
clicks), every row is fitted on the same sessions:

* naive: cyrank's RankSVM / RankNet / LambdaMART with y = click of each session (one query per session), unweighted;
* IPS: the same with sample_weight = 1 / propensity of the clicked rows (the true (1/rank)^eta; self-normalised,
  no clipping: cyrank.clicks.click_training_data's defaults), sessions with the same rows and clicks merged
  (aggregate="identical", the same objective); for LambdaMART also IPS with metric="ranknet" (the pairwise logistic
  lambdas without |dNDCG|: the propensity-weighted pairwise loss of Joachims et al. 2017 on trees), the recipe the
  LambdaMART docstring gives for clicks;
* IPS, swap-estimated: RankSVM with the propensities estimated from a separate swap experiment (--swap-sessions
  sessions, cyrank.clicks.simulate_swap_intervention / propensity_from_swaps);
* joint: LambdaMART(position_bias="joint", position_bias_norm=p) on the naive data with the display positions
  (fit(..., position=rank - 1)): the position biases at clicked and unclicked positions estimated along the trees
  (Hu et al., WWW 2019), for each p of --joint-norms;
* full information: the same estimators on the true labels of every training row (no clicks; one fit per data set);
* LightGBM lambdarank with ``position`` (Dataset(position=rank - 1): its unbiased lambdarank, Hu et al. 2019, the
  position biases learnt along the trees), and XGBoost rank:ndcg with lambdarank_unbiased=True (rows of each
  session in display order), on the same sessions.

Every fit: default hyper-parameters (cyrank RankSVM C=1, RankNet alpha=1, LambdaMART 100 trees; LightGBM 100
rounds, XGBoost 100 rounds, learning rate 0.1), one thread. NDCG@10: cyrank.metrics.ndcg_score (gain 2^y - 1,
pessimistic ties, test queries without a relevant document dropped).

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_clicks.py [--sessions 50000] [--seeds 5] [--etas 0.5 1 2]
        [--datasets lightgbm generated interactions] [--top-k 10] [--mart-variants] [--joint-norms 1]
        [--families RankSVM RankNet LambdaMART] [--first-seed 0]
"""
import argparse
import os
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import cyrank  # noqa: E402
from cyrank import clicks  # noqa: E402
from cyrank.datasets import load_lightgbm_rank, make_ranking  # noqa: E402
from cyrank.metrics import ndcg_score  # noqa: E402

FAMILIES = ("RankSVM", "RankNet", "LambdaMART")
RECIPE = "LambdaMART, metric='ranknet'"  # IPS LambdaMART as its docstring recommends for clicks


def _datasets(names):
    """name -> (train (X, y, qid), test (X, y, qid))."""
    out = {}
    if "lightgbm" in names:
        data = load_lightgbm_rank("both")
        out["lightgbm-rank (201 train / 50 test queries, 300 sparse features)"] = (data["train"], data["test"])
    if "generated" in names:
        X, y, qid = make_ranking(n_queries=1000, n_docs=[30] * 1000, n_features=50, n_levels=5, noise=5.0,
                                 random_state=0)
        train = qid < 800
        out["make_ranking (800 train / 200 test queries of 30, 50 features, 5 grades, noise 5)"] = (
            (X[train], y[train], qid[train]), (X[~train], y[~train], qid[~train]))
    if "interactions" in names:
        X, y, qid = _interaction_data()
        train = qid < 800
        out["interactions (800 train / 200 test queries of 30, 20 features, grades from 10 pairwise threshold "
            "interactions: trees beat linear models)"] = ((X[train], y[train], qid[train]),
                                                         (X[~train], y[~train], qid[~train]))
    return out


def _interaction_data(n_queries=1000, n_docs=30, n_features=20, noise=0.5, seed=0):
    """Graded data whose relevance is a sum of 10 products of two threshold indicators of standard normal features
    (plus noise), binned per query at its 50/75/90/97% quantiles into grades 0-4: data where trees rank well and
    linear models do not (full-information test NDCG@10 0.81 for LambdaMART against 0.58 for RankSVM)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * n_docs, n_features))
    qid = np.repeat(np.arange(n_queries), n_docs)
    score = noise * rng.normal(size=X.shape[0])
    for _ in range(10):
        a, b = rng.choice(n_features, 2, replace=False)
        score += rng.normal() * ((X[:, a] > 0.5 * rng.normal()) & (X[:, b] > 0.5 * rng.normal()))
    cuts = np.quantile(score.reshape(n_queries, n_docs), [0.5, 0.75, 0.9, 0.97], axis=1).T
    y = (score.reshape(n_queries, n_docs)[:, :, None] > cuts[:, None, :]).sum(axis=2).ravel().astype(np.float64)
    return X, y, qid


def _estimator(family):
    if family == "LambdaMART":
        return cyrank.LambdaMART(n_jobs=1)
    return getattr(cyrank, family)()


def _fit_score(model, train, test, sample_weight=None):
    """(test NDCG@10, fit seconds)."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if sample_weight is None:
            model.fit(*train)
        else:
            model.fit(*train, sample_weight=sample_weight)
    seconds = time.perf_counter() - start
    X, y, qid = test
    return ndcg_score(y, np.asarray(model.predict(X)), qid, k=10), seconds


def _logger(train, seed=0):
    """The logging RankSVM, fitted on 2% of the training queries (at least 3), and that number of queries."""
    X, y, qid = train
    queries = np.unique(qid)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(queries, size=max(3, int(round(0.02 * queries.size))), replace=False)
    rows = np.isin(qid, chosen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logger = cyrank.RankSVM().fit(X[rows], y[rows], qid[rows])
    return logger, chosen.size


def _session_rows(log):
    """The entries of sessions with a click and a non-click (the only ones with a pair), in display order:
    (rows, click, session, rank) for the peers."""
    n_clicks = np.bincount(log.session, weights=log.click)
    n_shown = np.bincount(log.session)
    keep = ((n_clicks > 0) & (n_clicks < n_shown))[log.session]
    return log.row[keep], log.click[keep].astype(np.float64), log.session[keep], log.rank[keep]


def _lightgbm(X, rows, click, session, rank, test):
    import lightgbm as lgb
    sizes = np.bincount(np.unique(session, return_inverse=True)[1])
    start = time.perf_counter()
    data = lgb.Dataset(X[rows], label=click, group=sizes, position=rank - 1)
    booster = lgb.train({"objective": "lambdarank", "num_threads": 1, "verbose": -1, "seed": 0,
                         "learning_rate": 0.1, "num_leaves": 31}, data, num_boost_round=100)
    seconds = time.perf_counter() - start
    Xt, yt, qt = test
    return ndcg_score(yt, booster.predict(Xt), qt, k=10), seconds


def _xgboost(X, rows, click, session, rank, test):
    import xgboost as xgb
    start = time.perf_counter()
    model = xgb.XGBRanker(objective="rank:ndcg", lambdarank_unbiased=True, n_estimators=100, learning_rate=0.1,
                          tree_method="hist", n_jobs=1, random_state=0)
    model.fit(X[rows], click, qid=session)  # rows of a session are in display order: XGBoost's positions
    seconds = time.perf_counter() - start
    Xt, yt, qt = test
    return ndcg_score(yt, model.predict(Xt), qt, k=10), seconds


def _swap_estimated(train, test, scores, log, eta, top_k, n_sessions, seed):
    """RankSVM on the IPS data with the propensities of a separate swap experiment (ranks 1 .. top_k)."""
    swap_log, swap = clicks.simulate_swap_intervention(train[1], train[2], scores, n_sessions=n_sessions, eta=eta,
                                                       top_k=top_k, max_rank=top_k, random_state=1000 + seed)
    p_swap = np.maximum(clicks.propensity_from_swaps(swap_log, swap), 1e-3)
    estimated = clicks.click_training_data(log, p_swap, train[0], aggregate="identical")
    return _fit_score(_estimator("RankSVM"), estimated[:3], test, estimated[3])


def _mart_variants(results, missing, eta, log, p, X, qid, naive, ips, test, joint_norms=(), top_k=10):
    """LambdaMART rows beyond naive / IPS: the IPS weights clipped (max_weight 5 and 2; with metric="ranknet" 10
    and 20), norm=True and metric="ranknet" on the naive and / or IPS data of the same sessions (the IPS
    metric="ranknet" row is a main row), metric="ranknet" with norm=True, the joint rows with norm=True and with
    metric="ranknet", DCG lambdas (_session_idcg) and the setting chosen on held-out clicks (_chosen_on_clicks)."""
    for norm in joint_norms:
        for option, value in (("norm", True), ("metric", "ranknet")):
            _run_row(results, missing, (eta, "LambdaMART variant", f"joint, position_bias_norm={norm:g}, "
                                                                   f"{option}={value!r}"),
                     lambda: _joint(log, X, top_k, norm, test, **{option: value}))
    for clip, params in ((5.0, {}), (2.0, {}), (10.0, {"metric": "ranknet"}), (20.0, {"metric": "ranknet"})):
        clipped = clicks.click_training_data(log, p, X, aggregate="identical", max_weight=clip)
        _run_row(results, missing, (eta, "LambdaMART variant", _named(f"IPS, max_weight={clip:g}", params)),
                 lambda: _fit_score(cyrank.LambdaMART(n_jobs=1, **params), clipped[:3], test, clipped[3]))
    for label, data, params in (("naive", naive, {"norm": True}), ("IPS", ips, {"norm": True}),
                                ("naive", naive, {"metric": "ranknet"}),
                                ("IPS", ips, {"metric": "ranknet", "norm": True})):
        _run_row(results, missing, (eta, "LambdaMART variant", _named(label, params)),
                 lambda: _fit_score(cyrank.LambdaMART(n_jobs=1, **params), data[:3], test, data[3]))
    _run_row(results, missing, (eta, "LambdaMART variant", "IPS, DCG lambdas (weights x session IDCG@10)"),
             lambda: _fit_score(cyrank.LambdaMART(n_jobs=1), ips[:3], test, ips[3] * _session_idcg(ips[1], ips[2])))
    _run_row(results, missing, (eta, "LambdaMART variant", "IPS, setting chosen on held-out clicks"),
             lambda: _chosen_on_clicks(log, p, X, qid, test))


FULL_VARIANTS = ({"metric": "ranknet"}, {"norm": True})  # LambdaMART on the true labels, with --mart-variants


def _session_idcg(click, sid, k=10):
    """Per row, IDCG@k of its session's clicks (binary gains): the weights times it turn the NDCG@k lambdas into
    DCG@k lambdas (no per-session normalisation by the clicks)."""
    _, inverse = np.unique(sid, return_inverse=True)
    clicked = np.bincount(inverse, weights=click).astype(np.int64)
    ideal = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, k + 2)))])
    return ideal[np.minimum(clicked, k)][inverse]


def _named(label, params):
    """A variant row's name: the label, then each parameter as key=value."""
    return ", ".join([label, *(f"{k}={v!r}" for k, v in params.items())])


CANDIDATES = {"metric='ndcg@10'": ({}, None), "metric='ranknet'": ({"metric": "ranknet"}, None),
              "metric='ranknet', max_weight=20": ({"metric": "ranknet"}, 20.0)}


def _chosen_on_clicks(log, p, X, qid, test, seed=0):
    """Model selection without labels: each setting of CANDIDATES fitted (IPS) on the sessions of 80% of the
    training queries and scored by the IPS estimate of DCG@10 (cyrank.clicks.ips_metric) on the sessions of the
    other 20%; the winner refitted on every session. (test NDCG@10, seconds of every fit), the choice printed."""
    held = np.random.default_rng(100 + seed).random(int(log.query.max()) + 1) < 0.2
    part = held[log.query]

    def sub(m):
        return clicks.ClickLog(log.session[m], log.query[m], log.row[m], log.rank[m], log.click[m])

    fit_log, held_log = sub(~part), sub(part)
    start, estimate = time.perf_counter(), {}
    for name, (params, clip) in CANDIDATES.items():
        data = clicks.click_training_data(fit_log, p, X, aggregate="identical", max_weight=clip)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cyrank.LambdaMART(n_jobs=1, **params).fit(*data[:3], sample_weight=data[3])
        estimate[name] = clicks.ips_metric(held_log, p, model.predict(X), qid, k=10)[0]
    choice = max(estimate, key=estimate.get)
    print(f"  chosen on held-out clicks: {choice} (IPS DCG@10 "
          + ", ".join(f"{name} {value:.3f}" for name, value in estimate.items()) + ")", flush=True)
    params, clip = CANDIDATES[choice]
    data = clicks.click_training_data(log, p, X, aggregate="identical", max_weight=clip)
    ndcg, _ = _fit_score(cyrank.LambdaMART(n_jobs=1, **params), data[:3], test, data[3])
    return ndcg, time.perf_counter() - start


def _joint(log, X, top_k, bias_norm, test, **params):
    """LambdaMART with the joint estimation of the position biases (position_bias_norm=bias_norm) on the naive
    (unweighted) sessions."""
    Xs, c, sid, w, rank = clicks.click_training_data(log, np.ones(top_k), X, aggregate="identical", with_rank=True)
    model = cyrank.LambdaMART(n_jobs=1, position_bias="joint", position_bias_norm=bias_norm, **params)
    start = time.perf_counter()
    model.fit(Xs, c, sid, sample_weight=w, position=rank - 1)
    seconds = time.perf_counter() - start
    Xt, yt, qt = test
    return ndcg_score(yt, model.predict(Xt), qt, k=10), seconds


def _run_row(results, missing, key, run):
    try:
        results.setdefault(key, []).append(run())
    except Exception as exc:  # a family without sample_weight yet: report the row as missing
        missing[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50_000)
    parser.add_argument("--swap-sessions", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0, help="the click seeds are first-seed, ..., "
                        "first-seed + seeds - 1 (fresh seeds confirm a choice made on others)")
    parser.add_argument("--etas", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--datasets", nargs="+", default=["lightgbm", "generated", "interactions"],
                        help="lightgbm (embedded), generated (make_ranking: linear), interactions (non-linear)")
    parser.add_argument("--top-k", type=int, default=10, help="documents shown per session (30: every document "
                        "of the generated queries, so no document has propensity 0)")
    parser.add_argument("--mart-variants", action="store_true", help="also LambdaMART on the sessions with the "
                        "IPS weights clipped (max_weight 5, 2; with metric='ranknet' 10, 20), with norm=True (naive "
                        "and IPS), metric='ranknet' (naive; with norm=True on IPS), the joint rows with norm=True "
                        "and with metric='ranknet', and the IPS setting chosen on held-out clicks")
    parser.add_argument("--joint-norms", type=float, nargs="*", default=[1.0], help="position_bias_norm p of "
                        "the joint rows (LambdaMART(position_bias='joint')); none: no joint row")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES,
                        help="the cyrank families fitted (the swap row needs RankSVM)")
    args = parser.parse_args()
    top_k = args.top_k
    families = [f for f in FAMILIES if f in args.families]
    print(__doc__.split("\n\n")[0])
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    print(f"sessions {args.sessions}, seeds {seeds.start}-{seeds.stop - 1}, etas {args.etas}, top {top_k} shown; "
          "one thread, machine shared with other jobs")
    for name, (train, test) in _datasets(args.datasets).items():
        X = train[0]
        logger, n_logger = _logger(train)
        scores = logger.decision_function(X)
        results, missing = {}, {}
        for family in families:
            _run_row(results, missing, ("full information", family),
                     lambda: _fit_score(_estimator(family), train, test))
        if args.mart_variants and "LambdaMART" in families:
            for params in FULL_VARIANTS:
                _run_row(results, missing, ("full information", _named("LambdaMART", params)),
                         lambda: _fit_score(cyrank.LambdaMART(n_jobs=1, **params), train, test))
        logger_ndcg = ndcg_score(test[1], logger.decision_function(test[0]), test[2], k=10)
        for eta in args.etas:
            p = clicks.position_propensity(top_k, eta)
            for seed in seeds:
                log = clicks.simulate_clicks(train[1], train[2], scores, n_sessions=args.sessions, eta=eta,
                                             top_k=top_k, random_state=seed)
                naive = clicks.click_training_data(log, np.ones(top_k), X, aggregate="identical")
                ips = clicks.click_training_data(log, p, X, aggregate="identical")
                for family in families:
                    _run_row(results, missing, (eta, "naive", family),
                             lambda: _fit_score(_estimator(family), naive[:3], test, naive[3]))
                    _run_row(results, missing, (eta, "IPS", family),
                             lambda: _fit_score(_estimator(family), ips[:3], test, ips[3]))
                if "LambdaMART" in families:
                    _run_row(results, missing, (eta, "IPS", RECIPE),
                             lambda: _fit_score(cyrank.LambdaMART(n_jobs=1, metric="ranknet"), ips[:3], test, ips[3]))
                    for norm in args.joint_norms:
                        _run_row(results, missing, (eta, "joint", f"LambdaMART, position_bias_norm={norm:g}"),
                                 lambda: _joint(log, X, top_k, norm, test))
                if args.mart_variants:
                    _mart_variants(results, missing, eta, log, p, X, train[2], naive, ips, test, args.joint_norms,
                                   top_k)
                if "RankSVM" in families:
                    _run_row(results, missing, (eta, "IPS, swap-estimated propensities", "RankSVM"),
                             lambda: _swap_estimated(train, test, scores, log, eta, top_k, args.swap_sessions,
                                                     seed))
                peers = _session_rows(log)
                _run_row(results, missing, (eta, "peer", "LightGBM lambdarank, position"),
                         lambda: _lightgbm(X, *peers, test))
                _run_row(results, missing, (eta, "peer", "XGBoost rank:ndcg, lambdarank_unbiased"),
                         lambda: _xgboost(X, *peers, test))
        _report(name, f"logging RankSVM on {n_logger} training queries, test NDCG@10 {logger_ndcg:.4f}", args,
                results, missing, families)


def _report(name, logger, args, results, missing, families):
    print(f"\n## {name}; {logger}")

    def cell(key):
        values = np.array(results.get(key, []))
        if not values.size:
            return "missing", np.nan, np.nan
        return f"{values[:, 0].mean():.4f} +- {values[:, 0].std(ddof=1) if len(values) > 1 else 0:.4f}", \
            values[:, 0].mean(), values[:, 1].mean()

    print(f"{'eta':>4s}  {'row':40s} {'model':46s} {'test NDCG@10 (mean +- sd)':>26s} {'fit s':>7s}")
    full_rows = [*families, *(_named("LambdaMART", params) for params in FULL_VARIANTS if args.mart_variants)]
    for model in full_rows:
        text, _, sec = cell(("full information", model))
        print(f"{'-':>4s}  {'full information':40s} {model:46s} {text:>26s} {sec:7.2f}")
    for eta in args.etas:
        keys = [k for k in results.keys() | missing.keys() if k[0] == eta]
        order = {"naive": 0, "IPS": 1, "joint": 2, "IPS, swap-estimated propensities": 3, "peer": 4,
                 "LambdaMART variant": 5}
        for key in sorted(keys, key=lambda k: (order[k[1]], k[2])):
            text, _, sec = cell(key)
            print(f"{eta:4g}  {key[1]:40s} {key[2]:46s} {text:>26s} {sec:7.2f}")
    for eta in args.etas:
        for family in families:
            _, full, _ = cell(("full information", family))
            _, naive, _ = cell((eta, "naive", family))
            _, ips, _ = cell((eta, "IPS", family))
            print(f"eta {eta:g} {family}: IPS recovers {(ips - naive) / (full - naive):.0%} of the naive-to-full gap "
                  f"(naive {naive:.4f}, IPS {ips:.4f}, full {full:.4f}; target at eta = 1: >= 80%)")
        _, lgbm, lgbm_s = cell((eta, "peer", "LightGBM lambdarank, position"))
        _, xgbm, _ = cell((eta, "peer", "XGBoost rank:ndcg, lambdarank_unbiased"))
        for label, model in (("IPS LambdaMART", "LambdaMART"), ("IPS LambdaMART, metric='ranknet'", RECIPE)):
            _, mart, mart_s = cell((eta, "IPS", model))
            print(f"eta {eta:g} {label} {mart:.4f} vs LightGBM {lgbm:.4f}, XGBoost {xgbm:.4f}; time "
                  f"{mart_s / lgbm_s:.2f}x LightGBM's (target: at least both, <= 1.3x)")
        for norm in args.joint_norms if "LambdaMART" in families else ():
            _, joint, joint_s = cell((eta, "joint", f"LambdaMART, position_bias_norm={norm:g}"))
            _, mart, _ = cell((eta, "IPS", "LambdaMART"))
            print(f"eta {eta:g} joint LambdaMART (p = {norm:g}) {joint:.4f} vs IPS {mart:.4f}, LightGBM {lgbm:.4f}, "
                  f"XGBoost {xgbm:.4f}; time {joint_s / lgbm_s:.2f}x LightGBM's")
    for key, why in missing.items():
        print(f"missing row {key}: {why}")


if __name__ == "__main__":
    main()
