"""Unbiased LambdaMART with the joint estimation of the position biases at clicked and unclicked positions (Hu,
Wang, Peng & Li, WWW 2019): the kernel cyrank.lambdarank._unbiased against a brute-force pair loop, the plain
lambdas when t+ = t- = 1, the recovery of known propensities from simulated clicks, invariances, errors."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone

lgb = pytest.importorskip("lightgbm")

from cyrank import LambdaMART, clicks  # noqa: E402
from cyrank.io import load_model, save_model  # noqa: E402
from cyrank.lambdarank import lambdas  # noqa: E402
from cyrank.lambdarank import _unbiased  # noqa: E402
from cyrank.lambdarank.solver import _Pairs  # noqa: E402


def sessions(seed, n_queries=15, max_len=9, levels=3, n_positions=12, tied_scores=True):
    """Random sessions with tied labels and (optionally) tied scores, positions with repeats, weights with 0s."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_len + 1, n_queries)
    qid = np.repeat(rng.permutation(n_queries) * 3 + 7, sizes)
    n = qid.size
    y = rng.integers(0, levels, n).astype(np.float64)
    s = rng.integers(-2, 3, n).astype(np.float64) if tied_scores else rng.normal(size=n)
    position = rng.integers(0, n_positions, n)
    w = rng.uniform(0.0, 3.0, n)
    w[rng.random(n) < 0.15] = 0.0
    return y, s, qid, position, w


def brute(y, s, qid, position, t_plus, t_minus, w, metric, k, sigma, norm=False):
    """Per row lambda and weight, per position loss_plus and loss_minus, and the cost, pair by pair; |dZ| the mean
    over the orders of the tied (score, label) blocks of |dNDCG| (every position pair of the two blocks); norm:
    |dZ| / (0.01 + |s_i - s_j|) when the query's scores differ, its lambdas times log2(1 + S) / S."""
    n = y.size
    lam, hess = np.zeros(n), np.zeros(n)
    lp, lm = np.zeros(t_plus.size), np.zeros(t_plus.size)
    cost = 0.0
    c = np.ones(n) if w is None else w
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        order = sorted(rows, key=lambda r: (-s[r], y[r]))  # pessimistic: equal scores, lower label first
        places = {}
        for place, r in enumerate(order):
            places.setdefault((s[r], y[r]), []).append(place)
        kk = k if k else rows.size
        D = np.array([1.0 / np.log2(r + 2.0) if r < kk else 0.0 for r in range(rows.size)])
        ideal = np.sort(y[rows])[::-1]
        idcg = sum((2.0 ** ideal[r] - 1.0) * D[r] for r in range(rows.size))
        spread = s[rows].max() > s[rows].min()
        total = 0.0
        q_lam, q_hess = np.zeros(n), np.zeros(n)
        for i in rows:
            for j in rows:
                if y[i] <= y[j]:
                    continue
                if metric == "ranknet":
                    dz = 1.0
                else:
                    A, B = places[(s[i], y[i])], places[(s[j], y[j])]
                    dz = np.mean([abs(D[a] - D[b]) for a in A for b in B]) * abs(2.0 ** y[i] - 2.0 ** y[j]) / idcg
                u = s[i] - s[j]
                if norm and spread:
                    dz /= 0.01 + abs(u)
                rho = 1.0 / (1.0 + np.exp(sigma * u))
                f = c[i] / (t_plus[position[i]] * t_minus[position[j]])
                q_lam[i] -= sigma * rho * dz * f
                q_lam[j] += sigma * rho * dz * f
                q_hess[i] += sigma ** 2 * rho * (1 - rho) * dz * f
                q_hess[j] += sigma ** 2 * rho * (1 - rho) * dz * f
                total += 2 * sigma * rho * dz * f
                loss = c[i] * dz * np.log1p(np.exp(-sigma * u))
                lp[position[i]] += loss / t_minus[position[j]]
                lm[position[j]] += loss / t_plus[position[i]]
                cost += loss / (t_plus[position[i]] * t_minus[position[j]])
        scale = np.log2(1 + total) / total if norm and total > 0 else 1.0
        lam += q_lam * scale
        hess += q_hess * scale
    return lam, hess, lp, lm, cost


def kernel(y, s, qid, position, t_plus, t_minus, w, metric, sigma=1.0, norm=False, parallel_min_rows=-1):
    """The kernel on the rows in _Pairs' order, its outputs back in input order."""
    pairs = _Pairs(y, qid, metric=metric, sigma=sigma, sample_weight=w)
    n = y.size
    lam, hess = np.empty(n), np.empty(n)
    lp, lm = np.full(t_plus.size, np.nan), np.full(t_plus.size, np.nan)
    cost = _unbiased.joint_lambdas(np.ascontiguousarray(s[pairs.order]), pairs.y, pairs.offsets,
                                   np.ascontiguousarray(position[pairs.order]), t_plus, t_minus, pairs.w, pairs.code,
                                   pairs.k, pairs.sigma, norm, lam, hess, lp, lm, parallel_min_rows)
    out_lam, out_hess = np.empty(n), np.empty(n)
    out_lam[pairs.order], out_hess[pairs.order] = lam, hess
    return out_lam, out_hess, lp, lm, cost


@pytest.mark.parametrize("metric", ["ndcg@3", "ndcg", "ranknet"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tied_scores", [True, False])
@pytest.mark.parametrize("norm", [False, True])
def test_kernel_equals_the_brute_force_pair_loop(metric, weighted, tied_scores, norm):
    y, s, qid, position, w = sessions(3, tied_scores=tied_scores)
    s[qid == qid[0]] = 0.5  # a query of equal scores (no score distance with norm)
    rng = np.random.default_rng(4)
    t_plus, t_minus = rng.uniform(0.2, 2.0, 12), rng.uniform(0.5, 3.0, 12)
    w = w if weighted else None
    k = {"ndcg@3": 3, "ndcg": 0, "ranknet": 0}[metric]
    got = kernel(y, s, qid, position, t_plus, t_minus, w, metric, sigma=1.7, norm=norm)
    want = brute(y, s, qid, position, t_plus, t_minus, w, metric.split("@")[0], k, 1.7, norm)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    assert got[4] > 0


@pytest.mark.parametrize("metric", ["ndcg@3", "ndcg", "ranknet"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("norm", [False, True])
def test_unit_biases_give_the_plain_lambdas(metric, weighted, norm):
    """t+ = t- = 1: the lambdas, weights and cost of cyrank.lambdarank.lambdas (ties="pessimistic")."""
    y, s, qid, position, w = sessions(5)
    s[qid == qid[0]] = 0.5
    w = w if weighted else None
    ones = np.ones(12)
    lam, hess, lp, lm, cost = kernel(y, s, qid, position, ones, ones, w, metric, norm=norm)
    want_cost, want_lam, want_hess = lambdas(y, s, qid, metric=metric, ties="pessimistic", sample_weight=w,
                                             norm=norm)
    np.testing.assert_allclose(lam, want_lam, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hess, want_hess, rtol=1e-12, atol=1e-14)
    assert cost == pytest.approx(want_cost, rel=1e-12)
    assert lp.sum() == pytest.approx(cost, rel=1e-12) and lm.sum() == pytest.approx(cost, rel=1e-12)


@pytest.mark.parametrize("metric", ["ndcg@3", "ranknet"])
def test_kernel_threads_give_the_same_bits(metric):
    """500 sessions in the kernel's fixed partition into chunks (12 here: 25 accumulators per chunk against about
    2,500 rows): 1 and 2 OpenMP threads give the same bits, both the brute force to rounding."""
    from threadpoolctl import threadpool_limits
    y, s, qid, position, w = sessions(6, n_queries=500, tied_scores=False)
    rng = np.random.default_rng(7)
    t_plus, t_minus = rng.uniform(0.2, 2.0, 12), rng.uniform(0.5, 3.0, 12)
    runs = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="openmp"):
            runs.append(kernel(y, s, qid, position, t_plus, t_minus, w, metric, parallel_min_rows=0))
    for one, two in zip(*runs):
        assert np.asarray(one).tobytes() == np.asarray(two).tobytes()
    want = brute(y, s, qid, position, t_plus, t_minus, w, metric.split("@")[0], 3 if "@" in metric else 0, 1.0)
    for g, e in zip(runs[0], want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_kernel_handles_score_gaps_of_1e3_and_empty_pairs():
    y = np.array([0.0, 1.0, 0.0, 0.0, 2.0])
    qid = np.array([0, 0, 1, 1, 2])
    s = np.array([1e3, -1e3, 0.0, 0.0, 5.0])
    ones = np.ones(2)
    lam, hess, lp, lm, cost = kernel(y, s, qid, np.array([0, 1, 0, 1, 0]), ones, ones, None, "ranknet")
    assert np.all(np.isfinite(lam)) and np.all(np.isfinite(hess))
    assert cost == pytest.approx(2e3) and lam[1] == pytest.approx(-1.0) and lam[2:].tolist() == [0, 0, 0]


# ------------------------------------------------------------------------------------------- the estimator
def click_data(seed=0, n_queries=40, n_docs=8, n_sessions=2000, top_k=6):
    """Training data from simulated clicks (position-based model, eta 1) with the display positions."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_docs
    y = rng.integers(0, 4, n).astype(np.float64)
    qid = np.repeat(np.arange(n_queries), n_docs)
    X = np.round(np.c_[y + rng.normal(size=n), rng.normal(size=(n, 2))], 1)
    log = clicks.simulate_clicks(y, qid, rng.normal(size=n), n_sessions=n_sessions, eta=1.0, top_k=top_k,
                                 random_state=seed)
    Xs, c, sid, w, rank = clicks.click_training_data(log, np.ones(top_k), X, aggregate="identical", with_rank=True)
    return Xs, c, sid, w, rank - 1


def joint(**params):
    return LambdaMART(**{"position_bias": "joint", "n_estimators": 5, "num_leaves": 4, "n_jobs": 1, **params})


def test_first_round_biases_are_the_update_of_the_brute_force_losses():
    """One round: the trees saw the lambdas at scores 0 with t+ = t- = 1, and t+_k = (S+_k / S+_0)^(1/(1+p))."""
    Xs, c, sid, w, pos = click_data()
    for norm in (0.0, 1.0, 2.5):
        model = joint(n_estimators=1, position_bias_norm=norm).fit(Xs, c, sid, sample_weight=w, position=pos)
        ones = np.ones(pos.max() + 1)
        _, _, lp, lm, _ = brute(c, np.zeros(c.size), sid, pos, ones, ones, w, "ndcg", 10, 1.0)
        np.testing.assert_allclose(model.t_plus_, (lp / lp[0]) ** (1 / (1 + norm)), rtol=1e-12)
        np.testing.assert_allclose(model.t_minus_, (lm / lm[0]) ** (1 / (1 + norm)), rtol=1e-12)
        assert model.t_plus_[0] == 1.0 and model.t_minus_[0] == 1.0


def test_single_position_equals_plain_lambdamart():
    """Every row at one position: t+ = t- = 1 throughout, the plain LambdaMART's trees."""
    Xs, c, sid, w, pos = click_data(1)
    model = joint(n_estimators=10).fit(Xs, c, sid, sample_weight=w, position=np.zeros(c.size, dtype=int))
    plain = LambdaMART(n_estimators=10, num_leaves=4, n_jobs=1).fit(Xs, c, sid, sample_weight=w)
    assert model.t_plus_.tolist() == [1.0] and model.t_minus_.tolist() == [1.0]
    np.testing.assert_allclose(model.predict(Xs), plain.predict(Xs), rtol=1e-6, atol=1e-9)
    assert model.objective_ == pytest.approx(plain.objective_, rel=1e-9)


def test_recovers_the_propensities_of_the_position_based_model():
    """Clicks of the position-based model (eta = 1, every document of 3,000 queries of 10 shown in a random order,
    graded click probabilities eps(y)), RankNet lambdas, no regulariser (p = 0): t+_k within 12% of the true ratio
    p_k / p_1 = 1 / k at every position (the wrong eta = 2 is 80% off at rank 10), and t-_k within 8% of the ratio
    of the non-click probabilities (1 - p_k e) / (1 - e), e the mean of eps over the documents (Hu et al.'s t-: the
    probability of no click over that of irrelevance, which does not depend on the position). Measured: t+ within
    2% and t- within 2.6% with 200,000 sessions on 20,000 queries."""
    rng = np.random.default_rng(0)
    n_queries, n_docs = 3000, 10
    y = rng.integers(0, 5, n_queries * n_docs).astype(np.float64)
    qid = np.repeat(np.arange(n_queries), n_docs)
    X = np.c_[y + 2 * rng.normal(size=y.size), rng.normal(size=y.size)]
    log = clicks.simulate_clicks(y, qid, rng.normal(size=y.size), n_sessions=30000, eta=1.0, top_k=10,
                                 random_state=0)
    Xs, c, sid, w, rank = clicks.click_training_data(log, np.ones(10), X, aggregate="identical", with_rank=True)
    model = joint(metric="ranknet", position_bias_norm=0.0, n_estimators=3).fit(Xs, c, sid, sample_weight=w,
                                                                                 position=rank - 1)
    p = clicks.position_propensity(10, 1.0)
    e = clicks.click_probability(y).mean()
    np.testing.assert_allclose(model.t_plus_, p, rtol=0.12)
    np.testing.assert_allclose(model.t_minus_, (1 - p * e) / (1 - e), rtol=0.08)
    assert abs(model.t_plus_[-1] / clicks.position_propensity(10, 2.0)[-1] - 1) > 5
    # the regulariser shrinks towards 1: p = 1 gives about the square roots
    shrunk = joint(metric="ranknet", position_bias_norm=1.0, n_estimators=3).fit(Xs, c, sid, sample_weight=w,
                                                                                  position=rank - 1)
    np.testing.assert_allclose(shrunk.t_plus_, np.sqrt(p), rtol=0.08)


def test_row_order_and_qid_relabelling():
    Xs, c, sid, w, pos = click_data(2)
    model = joint().fit(Xs, c, sid, sample_weight=w, position=pos)
    perm = np.random.default_rng(0).permutation(c.size)
    permuted = joint().fit(Xs[perm], c[perm], sid[perm], sample_weight=w[perm], position=pos[perm])
    assert permuted.t_plus_.tolist() == model.t_plus_.tolist()
    assert permuted.t_minus_.tolist() == model.t_minus_.tolist()
    np.testing.assert_array_equal(permuted.predict(Xs), model.predict(Xs))
    # increasing relabelling: the same query order, the same bits
    shifted = joint().fit(Xs, c, 10 * sid + 3, sample_weight=w, position=pos)
    assert shifted.t_plus_.tolist() == model.t_plus_.tolist()
    np.testing.assert_array_equal(shifted.predict(Xs), model.predict(Xs))
    # any relabelling: the per-position sums in another query order, equal to rounding
    labels = np.random.default_rng(1).permutation(sid.max() + 1)
    relabelled = joint().fit(Xs, c, labels[sid], sample_weight=w, position=pos)
    np.testing.assert_allclose(relabelled.t_plus_, model.t_plus_, rtol=1e-12)
    np.testing.assert_allclose(relabelled.t_minus_, model.t_minus_, rtol=1e-12)
    np.testing.assert_allclose(relabelled.predict(Xs), model.predict(Xs), rtol=1e-6, atol=1e-9)


def test_float_positions_and_unused_positions():
    """Integral floats are positions; a position without a pair on one side keeps t = 1."""
    Xs, c, sid, w, pos = click_data(3)
    model = joint().fit(Xs, c, sid, sample_weight=w, position=pos)
    as_float = joint().fit(Xs, c, sid, sample_weight=w, position=pos.astype(np.float32))
    assert as_float.t_plus_.tolist() == model.t_plus_.tolist()
    shifted = joint().fit(Xs, c, sid, sample_weight=w, position=pos + 3)
    assert shifted.t_plus_[:3].tolist() == [1.0] * 3 and shifted.t_minus_[:3].tolist() == [1.0] * 3
    np.testing.assert_allclose(shifted.t_plus_[3:], model.t_plus_, rtol=1e-12)
    assert shifted.t_plus_.size == pos.max() + 4


def test_clone_pickle_model_file_and_refit(tmp_path):
    Xs, c, sid, w, pos = click_data(4)
    model = joint(position_bias_norm=0.5)
    assert clone(model).get_params()["position_bias"] == "joint"
    assert clone(model).get_params()["position_bias_norm"] == 0.5
    model.fit(Xs, c, sid, sample_weight=w, position=pos)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.t_plus_, model.t_plus_)
    np.testing.assert_array_equal(again.predict(Xs), model.predict(Xs))
    save_model(model, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.t_minus_, model.t_minus_)
    np.testing.assert_array_equal(loaded.predict(Xs), model.predict(Xs))
    # a refit without the estimation drops the biases
    model.set_params(position_bias=None).fit(Xs, c, sid, sample_weight=w)
    assert not hasattr(model, "t_plus_") and not hasattr(model, "t_minus_")
    save_model(model, tmp_path / "plain.npz")
    assert not hasattr(load_model(tmp_path / "plain.npz"), "t_plus_")


def test_metadata_routing_passes_position():
    import sklearn
    from sklearn.model_selection import GroupKFold, cross_validate

    Xs, c, sid, w, pos = click_data(5)
    with sklearn.config_context(enable_metadata_routing=True):
        model = joint().set_fit_request(position=True, qid=True, sample_weight=True).set_score_request(
            qid=True, sample_weight=False)
        out = cross_validate(model, Xs, c, cv=GroupKFold(2), return_estimator=True,
                             params={"position": pos, "qid": sid, "sample_weight": w, "groups": sid})
    assert all(e.t_plus_.size >= 1 for e in out["estimator"])


@pytest.mark.parametrize("position, error, match", [
    (None, ValueError, "needs the display position"),
    ("short", ValueError, "entries but X has"),
    ("nan", ValueError, "NaN"),
    ("negative", ValueError, ">= 0"),
    ("fraction", ValueError, "integers"),
    ("2d", ValueError, "1-d"),
    ("bool", TypeError, "integers"),
    ("str", TypeError, "integers"),
    ("huge", ValueError, "at most"),
])
def test_bad_positions(position, error, match):
    Xs, c, sid, w, pos = click_data(6)
    bad = {None: None, "short": pos[:-1], "nan": np.where(pos == 2, np.nan, pos), "negative": pos - 1,
           "fraction": pos + 0.5, "2d": pos[:, None], "bool": pos > 2, "str": pos.astype(str),
           "huge": pos * 10**7}[position]
    with pytest.raises(error, match=match):
        joint().fit(Xs, c, sid, position=bad)


@pytest.mark.parametrize("params, match", [
    ({"metric": "err@5"}, "takes metric"),
    ({"metric": "map"}, "takes metric"),
    ({"truncation": 3}, "truncation=None only"),
    ({"ties": "average"}, "ties='pessimistic' only"),
    ({"position_bias": "both"}, "position_bias must be one of"),
    ({"position_bias_norm": -1.0}, "position_bias_norm must be >= 0"),
])
def test_bad_parameters(params, match):
    Xs, c, sid, w, pos = click_data(6)
    with pytest.raises(ValueError, match=match):
        joint(**params).fit(Xs, c, sid, position=pos)


def test_position_without_the_estimation_is_refused():
    Xs, c, sid, w, pos = click_data(6)
    with pytest.raises(ValueError, match="read only with position_bias='joint'"):
        LambdaMART(n_estimators=2).fit(Xs, c, sid, position=pos)


def test_early_stopping_keeps_the_biases_of_the_last_kept_round():
    """With early stopping, t_plus_ / t_minus_ are those re-estimated after round best_iteration_, the same bits as
    a fit of best_iteration_ rounds, not those after the last round run."""
    Xs, c, sid, w, pos = click_data(4)
    Xv, cv, sv, _, _ = click_data(5)
    model = joint(n_estimators=60, early_stopping_rounds=3).fit(Xs, c, sid, sample_weight=w, position=pos,
                                                                eval_set=[(Xv, cv, sv)])
    run = len(next(iter(next(iter(model.evals_result_.values())).values())))
    best = model.best_iteration_
    assert best < run  # it stopped early and dropped rounds
    kept = joint(n_estimators=best).fit(Xs, c, sid, sample_weight=w, position=pos)
    assert model.t_plus_.tolist() == kept.t_plus_.tolist()
    assert model.t_minus_.tolist() == kept.t_minus_.tolist()
    last = joint(n_estimators=run).fit(Xs, c, sid, sample_weight=w, position=pos)
    assert last.t_plus_.tolist() != kept.t_plus_.tolist()
