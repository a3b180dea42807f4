"""ListwiseMART: LightGBM trees grown on the gradients and diagonal Hessians of ListNet / softmax cross-entropy
(targets exp, gain, xendcg) and ListMLE (Efron / Breslow ties, top_k), through LambdaMART's custom-objective path
(issue 31, item 4). The brute force below is written from the formulas, per query and per position, independently of
mart.py's vectorised version."""
import pickle

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.base import clone

lgb = pytest.importorskip("lightgbm")

from cyrank.datasets import make_ranking  # noqa: E402
from cyrank.io import load_model, register_model, save_model  # noqa: E402
from cyrank.lambdarank.mart import ListwiseMART  # noqa: E402
from cyrank.metrics import ndcg_score  # noqa: E402

register_model(ListwiseMART)  # a no-op check once the table of estimators lists it

CONFIGS = [dict(loss="listnet"), dict(loss="listnet", target="gain"), dict(loss="listnet", target="xendcg"),
           dict(loss="listmle"), dict(loss="listmle", ties="breslow"), dict(loss="listmle", top_k=3),
           dict(loss="listmle", ties="breslow", top_k=4)]


# ---------------------------------------------------------------------------------------------- brute force
def _target(y, target, g):
    if target == "exp":
        return np.exp(y - y.max()) / np.exp(y - y.max()).sum()
    phi = 2.0 ** y - (1.0 if target == "gain" else g)
    return phi / phi.sum() if phi.sum() > 0 else np.zeros(y.size)


def _query_positions(y):
    """Per position t of the label order (descending): the rows of its tie group G, the rows below G, r and m."""
    levels = np.unique(y)[::-1]
    out = []
    for level in levels:
        group = np.flatnonzero(y == level)
        below = np.flatnonzero(y < level)
        for r in range(group.size):
            out.append((group, below, r, group.size))
    return out


def brute(f, y, qid, w, *, loss="listnet", target="exp", ties="efron", top_k=None, g=None):
    """(loss, gradient) summed over queries, by the formulas of ListwiseMART's docstring, position by position."""
    total, grad = 0.0, np.zeros(f.size)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        fq, yq, wq = f[rows], y[rows], w[rows]
        if loss == "listnet":
            p = _target(yq, target or "exp", None if g is None else g[rows])
            lse = logsumexp(fq)
            total += np.sum(wq * p * (lse - fq))
            grad[rows] += np.sum(wq * p) * np.exp(fq - lse) - wq * p
            continue
        for t, (group, below, r, m) in enumerate(_query_positions(yq)):
            if top_k is not None and t >= top_k:
                break
            a = 1.0 - r / m if (ties or "efron") == "efron" else 1.0
            members = np.r_[below, group]
            share = np.r_[np.ones(below.size), np.full(group.size, a)]
            log_d = logsumexp(fq[members], b=share)
            c = wq[group].sum() / m
            total += c * log_d - np.sum(wq[group] * fq[group]) / m
            grad[rows[members]] += c * share * np.exp(fq[members] - log_d)
            grad[rows[group]] -= wq[group] / m
    return total, grad


def brute_hessian_diagonal(f, y, qid, w, h=1e-6, **options):
    """d grad_i / d f_i by central differences of the brute-force gradient."""
    out = np.empty(f.size)
    for i in range(f.size):
        e = np.zeros(f.size)
        e[i] = h
        out[i] = (brute(f + e, y, qid, w, **options)[1][i] - brute(f - e, y, qid, w, **options)[1][i]) / (2 * h)
    return out


def small_data(seed=0, n_queries=6, n_docs=7, levels=3):
    X, y, qid = make_ranking(n_queries, n_queries * n_docs, 3, levels, random_state=seed)
    y[qid == qid[0]] = 0.0  # a query of labels 0 only (no "gain" target)
    keep = np.r_[np.flatnonzero(qid != qid[-1]), np.flatnonzero(qid == qid[-1])[:1]]  # and a query of one row
    return X[keep], y[keep], qid[keep]


def test_the_brute_force_gradient_is_the_derivative_of_the_brute_force_loss():
    """Central differences of the brute-force loss (the test of the test)."""
    X, y, qid = small_data(1)
    rng = np.random.default_rng(0)
    f, w, g = rng.normal(size=y.size), rng.uniform(0.5, 2.0, y.size), rng.random(y.size)
    for options in CONFIGS:
        _, grad = brute(f, y, qid, w, g=g, **options)
        fd = np.array([(brute(f + e, y, qid, w, g=g, **options)[0] - brute(f - e, y, qid, w, g=g, **options)[0])
                       / 2e-6 for e in np.eye(f.size) * 1e-6])
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)
        assert np.abs(grad).max() > 0.05


def spy_objective(monkeypatch, scores_list):
    """Call the custom objective LightGBM receives at each of ``scores_list`` before training; the (g, h) seen."""
    seen, train = [], lgb.train

    def spy(params, *args, **kwargs):
        for s in scores_list:
            grad, hess = params["objective"](s.copy(), None)
            seen.append((np.array(grad, dtype=np.float64), np.array(hess, dtype=np.float64)))
        return train(params, *args, **kwargs)

    monkeypatch.setattr(lgb, "train", spy)
    return seen


@pytest.mark.parametrize("options", CONFIGS, ids=lambda o: "-".join(map(str, o.values())))
def test_the_gradients_handed_to_lightgbm_are_the_brute_force(monkeypatch, options):
    """At scores 0 (every score tied), at random scores, and at scores with gaps of 1e3: the gradient and Hessian
    diagonal LightGBM receives equal the brute force (the Hessian by central differences of its gradient), with
    row weights, label ties, a query of one row and a query of labels 0 only, rows in shuffled order. xendcg:
    the i-th call draws the i-th rng.random(n) of default_rng(random_state)."""
    X, y, qid = small_data(2)
    perm = np.random.default_rng(5).permutation(y.size)
    X, y, qid = X[perm], y[perm], qid[perm]
    rng = np.random.default_rng(3)
    w = rng.uniform(0.0, 3.0, y.size)
    scores = [np.zeros(y.size), rng.normal(size=y.size), 1e3 * rng.choice([-1.0, 0.0, 1.0], y.size)]
    seen = spy_objective(monkeypatch, scores)
    ListwiseMART(n_estimators=2, n_jobs=1, random_state=7, **options).fit(X, y, qid, sample_weight=w)
    draws = np.random.default_rng(7)
    for s, (grad, hess) in zip(scores, seen):
        g = draws.random(y.size)
        want = brute(s, y, qid, w, g=g, **options)[1]
        np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-7)
        if np.abs(s).max() < 100:  # differences of the gradient are exact enough at moderate scores
            np.testing.assert_allclose(hess, brute_hessian_diagonal(s, y, qid, w, g=g, **options), rtol=1e-4,
                                       atol=1e-6)
        else:
            assert np.all(np.isfinite(hess)) and np.all(hess >= 0)
    assert len(seen) == 3


@pytest.mark.parametrize("options", [o for o in CONFIGS if o.get("target") != "xendcg"],
                         ids=lambda o: "-".join(map(str, o.values())))
def test_the_training_loss_decreases_round_after_round(options):
    X, y, qid = make_ranking(30, 600, 5, 4, random_state=0)
    m = ListwiseMART(n_estimators=25, learning_rate=0.1, num_leaves=7, n_jobs=1, **options).fit(X, y, qid)
    w = np.ones(y.size)
    losses = [brute(m.booster_.predict(X, num_iteration=k) if k else np.zeros(y.size), y, qid, w, **options)[0]
              for k in range(0, 26, 5)]
    assert np.all(np.diff(losses) < 0), losses
    assert m.objective_ == pytest.approx(losses[-1], rel=1e-9)


def test_xendcg_is_reproducible_by_seed_and_redraws_every_round():
    X, y, qid = make_ranking(30, 600, 5, 4, random_state=1)
    fit = lambda seed, **kw: ListwiseMART(target="xendcg", n_estimators=10, n_jobs=1, random_state=seed,  # noqa
                                          **kw).fit(X, y, qid)
    a, b, c = fit(3), fit(3), fit(4)
    assert a.model_string_ == b.model_string_
    assert np.abs(a.predict(X) - c.predict(X)).max() > 1e-6
    # the first draw is g of default_rng(3): objective_ is the loss with it
    g = np.random.default_rng(3).random(y.size)
    assert a.objective_ == pytest.approx(brute(a.predict(X), y, qid, np.ones(y.size), target="xendcg", g=g)[0],
                                         rel=1e-9)


def test_eval_set_early_stopping_model_files_pickle_and_clone(tmp_path):
    X, y, qid = make_ranking(30, 600, 5, 4, random_state=2)
    Xv, yv, qv = make_ranking(10, 200, 5, 4, random_state=3)
    m = ListwiseMART(loss="listmle", top_k=5, n_estimators=200, learning_rate=0.3, early_stopping_rounds=3,
                     n_jobs=1, max_depth=3, reg_lambda=0.5)
    m.fit(X, y, qid, eval_set=[(X, y, qid), (Xv, yv, qv)], eval_metric="map")
    assert set(m.evals_result_) == {"training", "valid_1"}
    watched = m.evals_result_["valid_1"]["map"]
    assert m.n_iter_ == m.best_iteration_ == int(np.argmax(watched)) + 1 < 200
    assert list(m.evals_result_["valid_1"]) == ["map", "ndcg@10"]
    assert m.best_score_["valid_1"]["ndcg@10"] == pytest.approx(ndcg_score(yv, m.predict(Xv), qv, k=10), rel=1e-9)
    save_model(m, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert type(loaded) is ListwiseMART and loaded.get_params() == m.get_params()
    for copy in (loaded, pickle.loads(pickle.dumps(m))):
        np.testing.assert_array_equal(copy.predict(Xv), m.predict(Xv))
    other = clone(m).fit(X, y, qid, eval_set=[(X, y, qid), (Xv, yv, qv)], eval_metric="map")
    assert other.get_params() == m.get_params() and other.model_string_ == m.model_string_


@pytest.mark.parametrize("params, match", [
    (dict(loss="listnet", ties="efron"), "ties='efron' is ListMLE's rule for equal labels.*loss='listnet' takes no"),
    (dict(top_k=3), "top_k=3 is ListMLE's truncation"),
    (dict(loss="listmle", target="xendcg"), "target='xendcg' is ListNet's target distribution; loss='listmle'"),
    (dict(loss="listnt"), "loss"), (dict(target="ndcg"), "target"), (dict(loss="listmle", ties="average"), "ties"),
    (dict(loss="listmle", top_k=0), "top_k"), (dict(sigmoid=2.0), "sigmoid.*refused.*ListwiseMART does not use"),
    (dict(objective="rank_xendcg"), "target='xendcg' is LightGBM's rank_xendcg"),
    (dict(num_iterations=5), "LightGBM's name of ListwiseMART's parameter 'n_estimators'"),
    (dict(lambdarank_norm=True), "refused"),
])
def test_bad_parameter_combinations_are_refused(params, match):
    X, y, qid = make_ranking(5, 50, 3, 3, random_state=0)
    with pytest.raises(ValueError, match=match):
        ListwiseMART(n_estimators=2, **params).fit(X, y, qid)


def test_gain_targets_refuse_negative_labels_and_exp_takes_them():
    X, y, qid = make_ranking(5, 50, 3, 3, random_state=0)
    for target in ("gain", "xendcg"):
        with pytest.raises(ValueError, match="non-negative"):
            ListwiseMART(target=target, n_estimators=2).fit(X, y - 1.0, qid)
    a = ListwiseMART(n_estimators=3, n_jobs=1).fit(X, y - 1.0, qid)
    b = ListwiseMART(n_estimators=3, n_jobs=1).fit(X, y, qid)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))  # exp's target is shift-invariant


@pytest.mark.parametrize("options", [dict(loss="listnet", target="gain"), dict(loss="listmle", top_k=4)])
def test_the_model_does_not_depend_on_the_row_order(options):
    """Rows permuted: the same gradients per row (computed in an order fixed by the rows' content), the same trees
    (features on a coarse grid, so LightGBM's float64 sums of the float32 gradients are exact enough)."""
    X, y, qid = make_ranking(20, 300, 4, 3, random_state=4)
    X = np.round(X, 1)
    perm = np.random.default_rng(0).permutation(y.size)
    a = ListwiseMART(n_estimators=8, n_jobs=1, **options).fit(X, y, qid)
    b = ListwiseMART(n_estimators=8, n_jobs=1, **options).fit(X[perm], y[perm], qid[perm])
    np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=1e-6, atol=1e-9)


def test_the_option_lists_are_those_of_the_linear_listwise_solver():
    from cyrank.lambdarank import mart
    from cyrank.listwise import solver

    assert (mart.LOSSES, mart.TARGETS, mart.LABEL_TIES) == (solver.LOSSES, solver.TARGETS, solver.TIES)


def test_sparse_and_float32_x_give_the_dense_model():
    import scipy.sparse as sp

    X, y, qid = make_ranking(20, 300, 4, 3, density=0.6, random_state=6)
    X = np.round(X, 1)
    dense = ListwiseMART(loss="listmle", n_estimators=6, n_jobs=1).fit(X, y, qid)
    for other in (sp.csr_matrix(X), X.astype(np.float32)):
        m = ListwiseMART(loss="listmle", n_estimators=6, n_jobs=1).fit(other, y, qid)
        np.testing.assert_allclose(m.predict(X), dense.predict(X), rtol=1e-6, atol=1e-9)
        assert m.objective_ == pytest.approx(dense.objective_, rel=1e-6)


# ---------------------------------------------------------------------------------------------- Newton series
def brute_series(f, y, qid, w, terms, target="xendcg", g=None):
    """sum_{t < terms} (O D^-1)^t grad per query, the matrices written out: H = C (diag(s) - s s'), D = diag(H),
    O = D - H, so (O D^-1)_kj = s_k / (1 - s_j) for k != j (C and s_j cancel; a column with 1 - s_j = 0 is 0)."""
    _, grad = brute(f, y, qid, w, loss="listnet", target=target, g=g)
    out = np.zeros(f.size)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        s = np.exp(f[rows] - logsumexp(f[rows]))
        om = 1.0 - s
        M = np.divide(s[:, None], om[None, :], out=np.zeros((s.size, s.size)), where=om[None, :] > 0)
        np.fill_diagonal(M, 0.0)
        term = grad[rows]
        out[rows] = term
        for _ in range(1, terms):
            term = M @ term
            out[rows] += term
    return out


def lightgbm_xendcg_noise(y, qid, objective_seed, rounds):
    """The noise of LightGBM's rank_xendcg (src/objective/rank_objective.hpp, RankXENDCG; utils/random.h), rows
    grouped by query in qid order: query q draws from its own generator Random(objective_seed + q), x <- 214013 x +
    2531011 (mod 2^32), g = ((x >> 16) & 0x7FFF) / 32768, one draw per row in row order every round; queries of
    one row draw nothing."""
    sizes = np.unique(qid, return_counts=True)[1]
    state = [(objective_seed + q) % 2**32 for q in range(sizes.size)]
    for _ in range(rounds):
        g = np.zeros(y.size)
        start = 0
        for q, c in enumerate(sizes):
            for i in range(c if c > 1 else 0):
                state[q] = (214013 * state[q] + 2531011) % 2**32
                g[start + i] = ((state[q] >> 16) & 0x7FFF) / 32768.0
            start += c
        yield g


def prepared_state(f, y, qid, w, target, g):
    from cyrank.listwise.solver import Prepared

    prep = Prepared(y, qid, target=target, sample_weight=w, random_state=0)
    if g is not None:
        prep.set_noise(g)
    state, grad = prep.new_state(), np.empty(y.size)
    prep.evaluate(f, grad, state)
    return prep, state, grad


@pytest.mark.parametrize("target", ["exp", "gain", "xendcg"])
def test_the_newton_series_is_the_matrix_series(target):
    """_loss.newton_series(layout, state, g, T) = sum_{t < T} (O D^-1)^t g with the matrices written out, for T =
    1-4, with row weights, label ties, a query of one row and a query of labels 0 only, rows shuffled; at scores
    with gaps of 1e3 (rows whose 1 - s is 0 or 1 exactly) it stays finite and equal to the guarded matrix form."""
    from cyrank.listwise import _loss

    X, y, qid = small_data(3)
    perm = np.random.default_rng(8).permutation(y.size)
    y, qid = y[perm], qid[perm]
    rng = np.random.default_rng(4)
    w, g = rng.uniform(0.0, 3.0, y.size), rng.random(y.size)
    for f in (np.zeros(y.size), rng.normal(size=y.size), 3.0 * rng.normal(size=y.size),
              1e3 * rng.choice([-1.0, 0.0, 1.0], y.size)):
        prep, state, grad = prepared_state(f, y, qid, w, target, g if target == "xendcg" else None)
        for terms in (1, 2, 3, 4):
            got = grad.copy()
            _loss.newton_series(prep.layout, state, got, terms)
            want = brute_series(f, y, qid, w, terms, target=target, g=g)
            assert np.all(np.isfinite(got))
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
            if terms == 1:
                np.testing.assert_array_equal(got, grad)
        if np.abs(f).max() < 100:
            got = grad.copy()
            _loss.newton_series(prep.layout, state, got, 3)
            assert np.abs(got - grad).max() > 1e-3  # the series changes the gradient


def test_the_newton_series_keeps_its_accuracy_when_one_row_holds_the_mass():
    """A query whose softmax puts 1 - 1e-12 on one row: 1 - s of that row is taken from the other rows' sum (1 -
    s by subtraction would keep 4 digits), so the series matches the matrix form in extended precision."""
    from cyrank.listwise import _loss

    y, qid = np.array([2.0, 1.0, 0.0, 1.0]), np.zeros(4, dtype=np.int64)
    f = np.array([30.0, 0.0, 1.0, -2.0])
    prep, state, grad = prepared_state(f, y, qid, None, "exp", None)
    got = grad.copy()
    _loss.newton_series(prep.layout, state, got, 3)
    e = np.exp(f.astype(np.longdouble) - f.max())
    Z = e.sum()
    s = e / Z
    om = np.array([np.delete(e, k).sum() for k in range(4)]) / Z  # 1 - s_k, each from the other rows
    p = np.exp(y - y.max()) / np.exp(y - y.max()).sum()
    term = s - p
    want = term.copy()
    for _ in range(2):
        u = term / om
        term = s * np.array([np.delete(u, k).sum() for k in range(4)])
        want += term
    np.testing.assert_allclose(got, want.astype(float), rtol=1e-12, atol=1e-15)
    assert abs(want[0] - term[0]) > 0 and np.abs(want.astype(float)).max() > 1e-3


def test_the_newton_series_is_refused_for_listmle_and_bad_terms():
    from cyrank.listwise import _loss
    from cyrank.listwise.solver import Prepared

    y, qid = np.array([1.0, 0.0, 2.0]), np.zeros(3, dtype=np.int64)
    prep = Prepared(y, qid, loss="listmle")
    with pytest.raises(ValueError, match="ListNet"):
        _loss.newton_series(prep.layout, prep.new_state(), np.zeros(3), 3)
    prep = Prepared(y, qid)
    with pytest.raises(ValueError, match="terms must be >= 1"):
        _loss.newton_series(prep.layout, prep.new_state(), np.zeros(3), 0)
    with pytest.raises(ValueError, match="sizes"):
        _loss.newton_series(prep.layout, prep.new_state(), np.zeros(2), 3)


def test_three_terms_with_lightgbms_noise_grow_rank_xendcgs_trees():
    """The kernel's xendcg gradient with LightGBM's noise (lightgbm_xendcg_noise) and three Newton terms, and the
    kernel's Hessian diagonal, handed to LightGBM as a custom objective, grow the trees of LightGBM's built-in
    rank_xendcg (feature_fraction 1: the custom-objective path of lightgbm.train resets the column sampler once
    more than the built-in path, so sampled columns would differ): the same splits, leaf values within float32
    rounding of the gradients (LightGBM adds its three terms in float32, the kernel in float64). This is the whole
    difference between ListwiseMART(target="xendcg") and rank_xendcg: the noise generator and the series."""
    from cyrank.listwise import _loss
    from cyrank.listwise.solver import Prepared

    X, y, qid = make_ranking(40, 800, 6, 5, random_state=11)
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    y[qid == qid[0]] = 1.0  # a query of equal labels: both train on its noise
    sizes = np.unique(qid, return_counts=True)[1]
    rounds, seed = 8, 12345
    params = {"learning_rate": 0.3, "num_leaves": 7, "min_data_in_leaf": 5, "num_threads": 1, "verbosity": -1,
              "deterministic": True, "force_row_wise": True, "objective_seed": seed}
    builtin = lgb.train({**params, "objective": "rank_xendcg"},
                        lgb.Dataset(X, label=y, group=sizes, params={"verbosity": -1}), num_boost_round=rounds)
    prep, noise = Prepared(y, qid, target="xendcg"), lightgbm_xendcg_noise(y, qid, seed, rounds)
    state = prep.new_state()

    def objective(preds, dataset):
        grad, hess = np.empty(y.size), np.empty(y.size)
        prep.set_noise(next(noise))
        prep.evaluate(np.asarray(preds, dtype=np.float64), grad, state)
        _loss.newton_series(prep.layout, state, grad, 3)
        _loss.hess_diag(prep.layout, state, hess)
        return grad, hess

    custom = lgb.train({**params, "objective": objective},
                       lgb.Dataset(X, label=y, group=sizes, params={"verbosity": -1}), num_boost_round=rounds)
    a, b = builtin.dump_model()["tree_info"], custom.dump_model()["tree_info"]
    splits = lambda t: [(n["split_feature"], n["threshold"]) for n in _nodes(t) if "split_feature" in n]  # noqa
    leaves = lambda t: [n["leaf_value"] for n in _nodes(t) if "leaf_value" in n]  # noqa
    assert len(a) == len(b) == rounds
    for ta, tb in zip(a, b):
        assert splits(ta["tree_structure"]) == splits(tb["tree_structure"])
        np.testing.assert_allclose(leaves(tb["tree_structure"]), leaves(ta["tree_structure"]), rtol=1e-5,
                                   atol=1e-7)
    # without the series (the exact gradient), the first tree already differs
    prep.set_noise(next(lightgbm_xendcg_noise(y, qid, seed, 1)))
    grad = np.empty(y.size)
    prep.evaluate(np.zeros(y.size), grad, state)
    exact = grad.copy()
    _loss.newton_series(prep.layout, state, grad, 3)
    assert np.abs(grad - exact).max() > 1e-3


def _nodes(tree):
    yield tree
    for child in ("left_child", "right_child"):
        if child in tree:
            yield from _nodes(tree[child])


@pytest.mark.parametrize("target", ["exp", "xendcg"])
def test_newton_terms_hands_lightgbm_the_series(monkeypatch, target):
    """ListwiseMART(newton_terms=T) hands LightGBM sum_{t < T} (O D^-1)^t g (brute_series) and the exact Hessian
    diagonal, with row weights, ties, a query of one row and one of labels 0 only, rows shuffled; ListMLE refuses
    it."""
    X, y, qid = small_data(5)
    perm = np.random.default_rng(6).permutation(y.size)
    X, y, qid = X[perm], y[perm], qid[perm]
    rng = np.random.default_rng(9)
    w = rng.uniform(0.0, 3.0, y.size)
    scores = [np.zeros(y.size), rng.normal(size=y.size)]
    seen = spy_objective(monkeypatch, scores)
    ListwiseMART(target=target, newton_terms=3, n_estimators=2, n_jobs=1, random_state=7).fit(
        X, y, qid, sample_weight=w)
    draws = np.random.default_rng(7)
    for s, (grad, hess) in zip(scores, seen):
        g = draws.random(y.size) if target == "xendcg" else None
        np.testing.assert_allclose(grad, brute_series(s, y, qid, w, 3, target=target, g=g), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hess, brute_hessian_diagonal(s, y, qid, w, target=target, g=g), rtol=1e-4,
                                   atol=1e-6)
    with pytest.raises(ValueError, match="newton_terms"):
        ListwiseMART(loss="listmle", newton_terms=3, n_estimators=2).fit(X, y, qid)
