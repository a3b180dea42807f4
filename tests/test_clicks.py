"""cyrank.clicks: the simulated clicks follow their click model (per-rank rates within binomial standard errors),
the training data's pairs and weights equal a brute-force construction, the swap and EM estimators recover a known
(1/rank)^eta curve, and the IPS metric estimate is unbiased (mean over seeds within standard errors)."""
import collections

import numpy as np
import pytest

from cyrank import clicks
from cyrank.datasets import make_ranking


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=40, n_docs=[15] * 40, n_features=4, n_levels=5, random_state=0)
    scores = X @ np.array([1.0, -0.5, 0.3, 0.0]) + np.random.default_rng(1).normal(size=y.shape[0])
    return X, y, qid, scores


def _expected_per_rank(log, prob):
    """Expected clicks and their binomial standard deviation per rank, from each entry's click probability."""
    expected = np.bincount(log.rank, weights=prob)[1:]
    sd = np.sqrt(np.bincount(log.rank, weights=prob * (1 - prob))[1:])
    observed = np.bincount(log.rank, weights=log.click)[1:]
    return observed, expected, sd


@pytest.mark.parametrize("relevance", ["graded", 3.0])
@pytest.mark.parametrize("eta", [0.5, 2.0])
def test_position_model_click_rates(data, eta, relevance):
    _, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=20_000, eta=eta, top_k=8, relevance=relevance,
                                 epsilon_minus=0.05, random_state=0)
    eps = clicks.click_probability(y, relevance, 1.0, 0.05)
    prob = (1.0 / log.rank) ** eta * eps[log.row]
    observed, expected, sd = _expected_per_rank(log, prob)
    z = (observed - expected) / sd
    assert np.all(np.abs(z) < 4.5), f"z-scores per rank {np.round(z, 2)}"
    # a model of the wrong eta fails the same check
    wrong = (1.0 / log.rank) ** (eta + 0.5) * eps[log.row]
    assert np.max(np.abs(observed - _expected_per_rank(log, wrong)[1]) / sd) > 10


def test_position_model_shows_the_logging_top_k(data):
    _, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=500, top_k=6, random_state=3)
    assert log.rank.max() == 6 and np.all(np.bincount(log.session) == 6)
    for s in range(20):
        entries = log.session == s
        query_rows = np.flatnonzero(qid == np.unique(qid)[log.query[entries][0]])
        top = query_rows[np.argsort(-scores[query_rows], kind="stable")][:6]
        assert np.array_equal(log.row[entries], top) and np.array_equal(log.rank[entries], np.arange(1, 7))


def test_cascade_click_rates(data):
    _, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=20_000, model="cascade", top_k=10,
                                 epsilon_plus=0.8, random_state=1)
    assert np.bincount(log.session, weights=log.click).max() == 1  # the user leaves after the first click
    eps = clicks.click_probability(y, epsilon_plus=0.8)[log.row]
    # P(click at r) = eps_r prod_{s < r} (1 - eps_s), the product within the session (every session shows 10)
    E = eps.reshape(-1, 10)
    survive = np.cumprod(np.c_[np.ones(E.shape[0]), 1 - E[:, :-1]], axis=1).ravel()
    observed, expected, sd = _expected_per_rank(log, eps * survive)
    z = (observed - expected) / sd
    assert np.all(np.abs(z) < 4.5), f"z-scores per rank {np.round(z, 2)}"
    # the position-based model's rates are far from the cascade's at deep ranks
    assert np.abs(observed[-1] - np.bincount(log.rank, weights=eps / log.rank)[-1]) / sd[-1] > 10


def test_seeded_and_sessions_sample_queries(data):
    _, y, qid, scores = data
    a = clicks.simulate_clicks(y, qid, scores, n_sessions=3000, random_state=5)
    b = clicks.simulate_clicks(y, qid, scores, n_sessions=3000, random_state=5)
    c = clicks.simulate_clicks(y, qid, scores, n_sessions=3000, random_state=6)
    for name in ("session", "query", "row", "rank", "click"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.click, c.click)
    per_query = np.bincount(a.query[a.rank == 1], minlength=40)
    assert a.n_sessions == 3000 and per_query.min() > 40  # uniform draw, 75 expected per query


def _pairs_of(rows, y, qid, weight):
    """Brute force over a training set: {(query, i, j): summed weight} for pairs y_i > y_j, counted with w_i."""
    pairs = collections.Counter()
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        for a in idx:
            for b in idx:
                if y[a] > y[b]:
                    pairs[(rows[a], rows[b])] += weight[a]
    return pairs


def _pairs_of_log(log, propensity, max_weight=None):
    """Brute force over the log: clicked i over each unclicked j of its session, weight 1 / p_rank(i)."""
    pairs = collections.Counter()
    for s in np.unique(log.session):
        e = np.flatnonzero(log.session == s)
        for a in e[log.click[e] == 1]:
            for b in e[log.click[e] == 0]:
                w = 1.0 / propensity[log.rank[a] - 1]
                pairs[(log.row[a], log.row[b])] += w if max_weight is None else min(w, max_weight)
    return pairs


def _assert_same_pairs(got, want, scale=1.0):
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value * scale, rel=1e-12), key


@pytest.mark.parametrize("aggregate", [None, "identical"])
@pytest.mark.parametrize("max_weight", [None, 3.0])
def test_training_pairs_equal_brute_force(data, aggregate, max_weight):
    X, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=400, eta=1.0, top_k=5, random_state=2)
    p = clicks.position_propensity(5, 1.0)
    rows, yc, qc, w = clicks.click_training_data(log, p, max_weight=max_weight, self_normalize=False,
                                                 aggregate=aggregate)
    want = _pairs_of_log(log, p, max_weight)
    _assert_same_pairs(_pairs_of(rows, yc, qc, w), want)
    assert np.all(w[yc == 0] == 1.0) and set(np.unique(yc)) == {0.0, 1.0}
    for q in np.unique(qc):  # every query kept has a pair: a click and a non-click
        assert 0 < yc[qc == q].sum() < (qc == q).sum()
    if aggregate == "identical":
        assert np.unique(qc).size < np.unique(log.session[log.click == 1]).size  # sessions were merged
    # self-normalised: the same pairs, weights divided by their mean over the sessions' clicks (merged or not)
    rows2, y2, q2, w2 = clicks.click_training_data(log, p, max_weight=max_weight, aggregate=aggregate)
    clicked = log.click == 1
    session_mean = np.mean(np.minimum(1 / p[log.rank[clicked] - 1], max_weight or np.inf)[
        np.isin(log.session[clicked], log.session[~clicked])])
    _assert_same_pairs(_pairs_of(rows2, y2, q2, w2), want, scale=1.0 / session_mean)
    if aggregate is None:
        assert w2[y2 == 1].mean() == pytest.approx(1.0)
    Xc = clicks.click_training_data(log, p, X, aggregate=aggregate)[0]
    assert np.array_equal(Xc, X[rows2])


def test_training_data_of_unsorted_log_is_the_same(data):
    _, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=300, top_k=5, random_state=4)
    p = clicks.position_propensity(5, 1.0)
    perm = np.random.default_rng(0).permutation(len(log))
    shuffled = clicks.ClickLog(log.session[perm] * 7 + 3, log.query[perm], log.row[perm], log.rank[perm],
                               log.click[perm])
    a = clicks.click_training_data(log, p, self_normalize=False)
    b = clicks.click_training_data(shuffled, p, self_normalize=False)
    _assert_same_pairs(_pairs_of(*b), _pairs_of(*a))


@pytest.mark.parametrize("aggregate", [None, "identical"])
def test_with_rank_gives_each_row_its_display_rank(data, aggregate):
    """with_rank=True: the same data and the rank at which each (session, row) was shown; merged sessions showed
    their rows at the same ranks, so the ranks of a merged query are those of any of its sessions."""
    _, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=400, top_k=6, random_state=5)
    p = clicks.position_propensity(6, 1.0)
    rows, c, sid, w, rank = clicks.click_training_data(log, p, aggregate=aggregate, with_rank=True)
    plain = clicks.click_training_data(log, p, aggregate=aggregate)
    for got, want in zip((rows, c, sid, w), plain):
        np.testing.assert_array_equal(got, want)
    shown = {(int(r), int(k)) for r, k in zip(log.row, log.rank)}  # a query's ranking is fixed: row -> rank
    assert rank.dtype == np.int64 and all((int(r), int(k)) in shown for r, k in zip(rows, rank))
    for session in np.unique(sid)[:50]:  # a session's ranks are distinct, from 1
        ranks = rank[sid == session]
        assert ranks.size == np.unique(ranks).size and ranks.min() >= 1
    if aggregate is None:  # the session's rows in rank order
        assert np.all((np.diff(sid) > 0) | (np.diff(rank) > 0))
    with pytest.raises(ValueError, match="with_rank=True needs one row per shown document"):
        clicks.click_training_data(log, p, aggregate="query", with_rank=True)
    with pytest.raises(TypeError, match="with_rank must be True or False"):
        clicks.click_training_data(log, p, with_rank="yes")


def test_query_aggregate_is_the_ips_relevance_estimate(data):
    _, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=30_000, eta=1.0, top_k=5, random_state=2)
    p = clicks.position_propensity(5, 1.0)
    rows, yq, qq, w = clicks.click_training_data(log, p, aggregate="query")
    assert w is None
    row = rows[7]
    sessions = np.unique(log.session[log.query == log.query[log.row == row][0]])
    hit = log.row == row
    assert yq[7] == pytest.approx(np.sum(log.click[hit] / p[log.rank[hit] - 1]) / sessions.size)
    # unbiased for the click probability when examined: within 5 standard errors on every row
    eps = clicks.click_probability(y)[rows]
    n_q = np.bincount(log.query[log.rank == 1])[qq]
    se = np.sqrt(eps * (1 / p[4] - eps) / n_q)  # the worst rank's variance bounds every row's
    assert np.all(np.abs(yq - eps) < 5 * se), np.max(np.abs(yq - eps) / se)


def _stochastic_logger(y, n_rankers=5, seed=1):
    """Rankers that know the labels up to noise, one drawn per session: each document is seen at several ranks."""
    return y + np.random.default_rng(seed).normal(size=(n_rankers, y.shape[0]))


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_em_recovers_the_propensity_curve(eta):
    X, y, qid = make_ranking(n_queries=100, n_docs=[20] * 100, n_features=5, n_levels=5, random_state=0)
    log = clicks.simulate_clicks(y, qid, _stochastic_logger(y), n_sessions=100_000, eta=eta, random_state=3)
    result = clicks.propensity_em(log)
    true = clicks.position_propensity(10, eta)
    assert result.converged
    # tolerance: 0.02 absolute and 6% relative at every rank (measured: 1.3%, 1.8%, 4.9% at eta 0.5, 1, 2)
    assert np.max(np.abs(result.propensity - true)) < 0.02, np.round(result.propensity - true, 4)
    assert np.max(np.abs(result.propensity / true - 1)) < 0.06, np.round(result.propensity / true - 1, 4)
    # the estimated relevance orders the grades (0 and 1, eps 0.1 and 0.16, are seldom examined at eta = 2)
    seen = np.isfinite(result.relevance)
    means = [result.relevance[seen & (y == g)].mean() for g in range(5)]
    assert np.all(np.diff(means[1:]) > 0) and means[0] < means[2] and means[4] > 0.9, means
    # the naive click-through rate per rank is not the propensity curve (the ranker's top is more relevant)
    rate = log.click_rate_by_rank()[0]
    assert np.max(np.abs(rate / rate[0] / true - 1)) > 0.3


def test_em_alone_cannot_identify_with_one_deterministic_ranker(data):
    """With every document always at one rank, theta_r gamma_d is all the data determine: EM then returns a
    curve that need not be the truth; this documents why the EM test uses a stochastic logger."""
    _, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=50_000, eta=1.0, random_state=0)
    result = clicks.propensity_em(log)
    assert np.max(np.abs(result.propensity - clicks.position_propensity(10, 1.0))) > 0.05


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_swap_intervention_recovers_the_propensity_curve(data, eta):
    _, y, qid, scores = data
    log, swap = clicks.simulate_swap_intervention(y, qid, scores, max_rank=8, n_sessions=200_000, eta=eta,
                                                  random_state=4)
    assert swap.shape == (200_000,) and set(np.unique(swap)) == set(range(1, 9))
    # in a swapped session the logged rank-1 document is shown at rank k
    s = int(np.flatnonzero(swap == 5)[0])
    entries = log.session == s
    query_rows = np.flatnonzero(qid == np.unique(qid)[log.query[entries][0]])
    top = query_rows[np.argsort(-scores[query_rows], kind="stable")][:10]
    assert log.row[entries][4] == top[0] and log.row[entries][0] == top[4]
    estimate = clicks.propensity_from_swaps(log, swap)
    true = clicks.position_propensity(8, eta)
    assert np.max(np.abs(estimate - true)) < 0.03, np.round(estimate - true, 4)


def test_ips_metric_is_unbiased(data):
    _, y, qid, scores = data
    new_scores = -scores + np.random.default_rng(9).normal(size=y.shape[0])  # a different ranker to evaluate
    p = clicks.position_propensity(10, 1.0)
    for metric, k in (("dcg", 5), ("rank", None)):
        truth = clicks.expected_click_metric(y, qid, new_scores, logging_scores=scores, top_k=10, metric=metric,
                                             k=k)
        estimates = np.array([clicks.ips_metric(clicks.simulate_clicks(y, qid, scores, n_sessions=400,
                                                                       random_state=seed), p, new_scores, qid,
                                                metric=metric, k=k)[0] for seed in range(200)])
        se = estimates.std(ddof=1) / np.sqrt(estimates.size)
        assert abs(estimates.mean() - truth) < 4 * se, (metric, estimates.mean(), truth, se)
        # without the propensities (the naive click count) the estimate is biased by many standard errors
        naive = np.mean([clicks.ips_metric(clicks.simulate_clicks(y, qid, scores, n_sessions=400, random_state=s),
                                           np.ones(10), new_scores, qid, metric=metric, k=k)[0] for s in range(20)])
        assert abs(naive - truth) > 10 * se, (metric, naive, truth, se)


def test_ips_metric_standard_error_matches_the_spread(data):
    _, y, qid, scores = data
    p = clicks.position_propensity(10, 1.0)
    runs = [clicks.ips_metric(clicks.simulate_clicks(y, qid, scores, n_sessions=500, random_state=s), p, scores, qid)
            for s in range(60)]
    spread = np.std([r[0] for r in runs], ddof=1)
    assert np.mean([r[1] for r in runs]) == pytest.approx(spread, rel=0.25)


def test_expected_metric_is_dcg_of_binary_relevance(data):
    _, y, qid, scores = data
    value = clicks.expected_click_metric(y, qid, scores, top_k=None, relevance=3.0, epsilon_minus=0.0, k=10)
    dcg = []
    for q in np.unique(qid):
        rel = (y[qid == q] >= 3)[np.argsort(-scores[qid == q], kind="stable")][:10]
        dcg.append(np.sum(rel / np.log2(np.arange(2, rel.size + 2))))
    assert value == pytest.approx(np.mean(dcg))


def test_errors(data):
    X, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=50, top_k=5, random_state=0)
    with pytest.raises(ValueError, match="propensity has 3 entries"):
        clicks.click_training_data(log, np.ones(3))
    with pytest.raises(ValueError, match="propensity must be > 0"):
        clicks.click_training_data(log, np.r_[1.0, 0.0, 1, 1, 1])
    with pytest.raises(TypeError, match="ClickLog"):
        clicks.click_training_data({"row": log.row}, np.ones(5))
    with pytest.raises(ValueError, match="aggregate"):
        clicks.click_training_data(log, np.ones(5), aggregate="all")
    with pytest.raises(ValueError, match="max_weight"):
        clicks.click_training_data(log, np.ones(5), max_weight=0.0)
    with pytest.raises(ValueError, match="X has 3 rows"):
        clicks.click_training_data(log, np.ones(5), X[:3])
    with pytest.raises(ValueError, match="model"):
        clicks.simulate_clicks(y, qid, scores, model="dbn")
    with pytest.raises(ValueError, match="graded"):
        clicks.simulate_clicks(y - 1, qid, scores)
    with pytest.raises(ValueError, match="epsilon_plus"):
        clicks.simulate_clicks(y, qid, scores, epsilon_plus=1.5)
    with pytest.raises(ValueError, match="scores must have shape"):
        clicks.simulate_clicks(y, qid, scores[:-1])
    with pytest.raises(ValueError, match="NaN"):
        clicks.simulate_clicks(y, qid, np.where(y > 3, np.nan, scores))
    with pytest.raises(ValueError, match="n_sessions"):
        clicks.simulate_clicks(y, qid, scores, n_sessions=0)
    with pytest.raises(ValueError, match="random_state"):
        clicks.simulate_clicks(y, qid, scores, random_state="x")
    with pytest.raises(ValueError, match="no query shows 20"):
        clicks.simulate_swap_intervention(y, qid, scores, max_rank=20)
    with pytest.raises(ValueError, match="rank must be >= 1"):
        clicks.ClickLog([0], [0], [0], [0], [1])
    with pytest.raises(ValueError, match="click must hold"):
        clicks.ClickLog([0], [0], [0], [1], [2])
    with pytest.raises(ValueError, match="entries but session"):
        clicks.ClickLog([0, 0], [0], [0], [1], [1])
    with pytest.raises(ValueError, match="one integer per session"):
        clicks.propensity_from_swaps(log, np.ones(3, dtype=int))
    with pytest.raises(ValueError, match="metric"):
        clicks.ips_metric(log, np.ones(5), scores, qid, metric="map")


@pytest.mark.parametrize("family", ["RankSVM", "RankNet"])
def test_merged_sessions_fit_the_same_model(data, family):
    """aggregate="identical" is the per-session IPS objective on fewer rows: the fitted rankers agree."""
    import cyrank
    X, y, qid, scores = data
    log = clicks.simulate_clicks(y, qid, scores, n_sessions=2000, eta=1.0, top_k=8, random_state=7)
    p = clicks.position_propensity(8, 1.0)
    per_session = clicks.click_training_data(log, p, X)
    merged = clicks.click_training_data(log, p, X, aggregate="identical")
    assert merged[0].shape[0] < per_session[0].shape[0] / 2
    coefs = [getattr(cyrank, family)(tol=1e-8).fit(*d[:3], sample_weight=d[3]).coef_ for d in (per_session, merged)]
    np.testing.assert_allclose(coefs[1], coefs[0], rtol=1e-5, atol=1e-7 * np.abs(coefs[0]).max())
    naive = getattr(cyrank, family)(tol=1e-8).fit(*per_session[:3]).coef_
    assert np.max(np.abs(naive - coefs[0])) > 1e-3 * np.abs(coefs[0]).max()  # the weights matter
