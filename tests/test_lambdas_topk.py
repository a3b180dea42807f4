"""Issue 28: the lambda kernel visits only the pairs with a row among the top positions (O(k n) with a cut-off k or a
truncation) and gives the lambdas, weights, cost and Hessian products of the sum over every pair, which a brute
force computes here from the weight of every pair (Reference.pair_weights, all O(n^2) pairs)."""
import itertools

import numpy as np
import pytest
from scipy.special import expit

from cyrank.lambdarank import _lambdas

SIGMA = 1.3
CODES = [(m, t) for m, t in itertools.product((_lambdas.RANKNET, _lambdas.NDCG, _lambdas.ERR, _lambdas.AP),
                                              (_lambdas.PESSIMISTIC, _lambdas.AVERAGE, _lambdas.INPUT))
         if not (t == _lambdas.AVERAGE and m in (_lambdas.ERR, _lambdas.AP))]


def _data(rng, sizes, levels):
    """Queries of the given sizes, labels ascending inside each (the kernel's layout), scores on a few levels (tied
    blocks, some straddling the cut-off), a per-query tie order for INPUT."""
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = np.concatenate([np.sort(rng.integers(0, 5, m)).astype(float) for m in sizes])
    s = rng.integers(0, levels, y.size) * 0.7
    tie = np.concatenate([rng.permutation(m) for m in sizes]).astype(np.int64)
    return s, y, offsets, tie


def _brute(s, y, offsets, weights, sigma, norm=False):
    """(cost, lam, hess): the sums over every pair (i, j, |dZ_ij|), y_i > y_j, of the module docstring's terms."""
    I, J, W = weights
    lam, hess, cost = np.zeros(y.size), np.zeros(y.size), 0.0
    for q in range(offsets.size - 1):
        lo, hi = offsets[q], offsets[q + 1]
        mine = (I >= lo) & (I < hi)
        i, j, w = I[mine], J[mine], W[mine]
        u = sigma * (s[i] - s[j])
        if norm and np.ptp(s[lo:hi]) > 0:
            w = w / (0.01 + np.abs(s[i] - s[j]))
        rho = expit(-u)
        g, h = sigma * rho * w, sigma**2 * rho * expit(u) * w
        ql, qh = np.zeros(y.size), np.zeros(y.size)
        np.add.at(ql, i, -g)
        np.add.at(ql, j, g)
        np.add.at(qh, i, h)
        np.add.at(qh, j, h)
        total = 2.0 * g.sum()
        if norm and total > 0:
            ql, qh = ql * np.log2(1.0 + total) / total, qh * np.log2(1.0 + total) / total
        lam, hess = lam + ql, hess + qh
        cost += float(np.sum(w * np.logaddexp(0.0, -u)))
    return cost, lam, hess


def _close(got, want):
    scale = max(float(np.max(np.abs(want))), 1e-300)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("metric,ties", CODES)
@pytest.mark.parametrize("seed", range(4))
def test_lambdas_of_the_top_pairs_equal_the_sum_over_every_pair(metric, ties, seed):
    """lambdas() (rows ranked by s) against the brute force over every pair, for every cut-off k and truncation,
    with tied blocks straddling them, with and without LightGBM's norm and the cost."""
    rng = np.random.default_rng(seed)
    s, y, offsets, tie = _data(rng, [1, 2, 9, 25, 60], levels=[3, 6, 40, 1000][seed])
    max_rel, threshold = float(y.max()), 1.0
    t = tie if ties == _lambdas.INPUT else None
    for k, truncation, norm in itertools.product((0, 1, 3, 10), (0, 1, 4, 13), (False, True)):
        lam, hess = np.empty(y.size), np.empty(y.size)
        cost = _lambdas.lambdas(s, y, offsets, metric, k, truncation, SIGMA, max_rel, threshold, lam, hess,
                                with_cost=True, norm=norm, tie=t, ties=ties)
        ref = _lambdas.Reference(s, y, offsets, metric, k, truncation, max_rel, threshold, ties, t)
        want = _brute(s, y, offsets, ref.pair_weights(), SIGMA, norm)
        assert cost == pytest.approx(want[0], rel=1e-12, abs=1e-300)
        _close(lam, want[1])
        _close(hess, want[2])
        lam_fast, hess_fast = np.empty(y.size), np.empty(y.size)  # LambdaMART's call: no cost
        _lambdas.lambdas(s, y, offsets, metric, k, truncation, SIGMA, max_rel, threshold, lam_fast, hess_fast,
                         with_cost=False, norm=norm, tie=t, ties=ties)
        _close(lam_fast, want[1])
        _close(hess_fast, want[2])


@pytest.mark.parametrize("metric,ties", CODES)
def test_reference_loss_and_hessian_products_at_other_scores_equal_every_pair(metric, ties):
    """Reference.loss and hess_vec (linear LambdaRank's M-step) at scores other than the reference's (distinct, or
    tied across the reference's blocks), and at the reference's own."""
    rng = np.random.default_rng(7)
    s0, y, offsets, tie = _data(rng, [3, 30, 80], levels=5)
    t = tie if ties == _lambdas.INPUT else None
    v = rng.normal(size=y.size)
    for k, truncation, s in itertools.product((0, 2, 10), (0, 5), (rng.normal(size=y.size), s0[::-1].copy(), s0)):
        ref = _lambdas.Reference(s0, y, offsets, metric, k, truncation, float(y.max()), 1.0, ties, t)
        I, J, W = ref.pair_weights()
        cost, lam, hess = _brute(s, y, offsets, (I, J, W), SIGMA)
        got_lam, got_hess = np.empty(y.size), np.empty(y.size)
        assert ref.loss(s, SIGMA, got_lam, got_hess) == pytest.approx(cost, rel=1e-12, abs=1e-300)
        _close(got_lam, lam)
        _close(got_hess, hess)
        u = SIGMA * (s[I] - s[J])
        c = SIGMA**2 * expit(-u) * expit(u) * W * (v[I] - v[J])
        want = np.zeros(y.size)
        np.add.at(want, I, c)
        np.add.at(want, J, -c)
        out = np.empty(y.size)
        ref.hess_vec(s, SIGMA, v, out)
        _close(out, want)


def test_a_block_straddling_the_cut_off_keeps_the_pairs_of_its_rows_below_k():
    """One tied block over positions 2..41 with k = 3: its rows beyond position k have pairs of nonzero weight
    (the expectation over its orders puts each of them in the top 3 with probability 1/40), and the kernel must
    visit them."""
    y = np.array([0.0] * 10 + [1.0] * 40 + [2.0, 3.0])  # labels ascending
    s = np.concatenate([np.linspace(-3, -1, 10), np.zeros(40), [2.0, 1.0]])  # 2.0 and 1.0 above, 40 tied
    offsets = np.array([0, y.size], dtype=np.int64)
    ref = _lambdas.Reference(s, y, offsets, _lambdas.NDCG, 3, 0, 3.0, 0.0)
    I, J, W = ref.pair_weights()
    assert np.all(W[(I >= 10) & (I < 50) & (J < 10)] > 0)  # block rows (label 1) against the rows below
    lam, hess = np.empty(y.size), np.empty(y.size)
    _lambdas.lambdas(s, y, offsets, _lambdas.NDCG, 3, 0, SIGMA, 3.0, 0.0, lam, hess, with_cost=False)
    want = _brute(s, y, offsets, (I, J, W), SIGMA)
    _close(lam, want[1])
    _close(hess, want[2])
    assert np.all(lam[:10] > 0)  # every row below the block is pushed down by it


@pytest.mark.parametrize("seed", range(6))
def test_short_queries_are_ranked_by_counting_in_the_sort_order(seed):
    """Queries of up to SMALL_SORT_MAX rows are ranked by counting (no sort), longer ones by the radix sort: the
    positions equal the introsort's and numpy's order (decreasing score; equal scores, -0.0 == +0.0, by increasing
    row, or by the tie order)."""
    rng = np.random.default_rng(seed)
    for n in list(range(1, 20)) + [31, 32, 33, 64, 300]:
        s = rng.choice([-0.0, 0.0, 1.5, -2.0, 3.25], n) if seed % 2 else rng.normal(size=n)
        for tie in (None, rng.permutation(n).astype(np.int64)):
            key = np.arange(n) if tie is None else tie
            want = np.empty(n, dtype=np.int64)
            want[np.lexsort((key, -s))] = np.arange(n)
            np.testing.assert_array_equal(_lambdas._positions(s, tie, True), want)
            np.testing.assert_array_equal(_lambdas._positions(s, tie, False), want)
            np.testing.assert_array_equal(_lambdas._positions(s, tie, False, True), want)
    assert _lambdas._positions(np.array([1.0, np.nan, 0.0]), None, True) is None  # not a permutation: sorted


@pytest.mark.parametrize("metric,ties", CODES)
@pytest.mark.parametrize("weighted", (False, True))
def test_short_queries_without_a_cut_off_equal_the_sum_over_every_pair(metric, ties, weighted):
    """The label-order loop of NDCG and RankNet without a cut-off (label_pairs) and the counting ranking of short
    queries, with distinct and tied scores, weights, norm and the cost, against the brute force over every pair."""
    rng = np.random.default_rng(5)
    sizes = [1, 2, 3, 5, 8, 10, 10, 10, 16, 17, 30, 32, 33]
    for levels in (3, 7, 10**6):
        s, y, offsets, tie = _data(rng, sizes, levels=levels)
        w = rng.uniform(0.0, 2.0, y.size) if weighted else None
        t = tie if ties == _lambdas.INPUT else None
        for k, truncation, norm in itertools.product((0, 10, 40), (0, 40), (False, True)):
            lam, hess = np.empty(y.size), np.empty(y.size)
            cost = _lambdas.lambdas(s, y, offsets, metric, k, truncation, SIGMA, float(y.max()), 1.0, lam, hess,
                                    with_cost=True, norm=norm, tie=t, ties=ties, weight=w)
            ref = _lambdas.Reference(s, y, offsets, metric, k, truncation, float(y.max()), 1.0, ties, t, weight=w)
            want = _brute(s, y, offsets, ref.pair_weights(), SIGMA, norm)
            assert cost == pytest.approx(want[0], rel=1e-12, abs=1e-300)
            _close(lam, want[1])
            _close(hess, want[2])


@pytest.mark.parametrize("metric,ties,weighted", [("ndcg@10", "pessimistic", False), ("ranknet", "average", True),
                                                  ("ndcg", "input", True), ("err@5", "pessimistic", False),
                                                  ("map", "pessimistic", True), ("ndcg@3", "average", False)])
def test_lambdas_gather_and_scatter_inside_the_kernel_bit_for_bit(metric, ties, weighted):
    """Lambdas passes the user's row order to the kernel (scores gathered, lambdas scattered per query): the same
    bits as reordering the scores, running the kernel on the sorted rows and putting the result back."""
    from cyrank.lambdarank import Lambdas
    from cyrank.lambdarank.solver import _Pairs

    rng = np.random.default_rng(3)
    n = 500
    y = rng.integers(0, 5, n).astype(float)
    qid = rng.integers(0, 40, n)
    w = rng.uniform(0.1, 3.0, n) if weighted else None
    prepared = Lambdas(y, qid, metric=metric, ties=ties, sample_weight=w, sigma=1.1)
    pairs = _Pairs(y, qid, metric=metric, ties=ties, sample_weight=w, sigma=1.1)
    for s in (rng.normal(size=n), np.round(rng.normal(size=n), 1)):
        lam, hess = np.empty(n), np.empty(n)
        cost = pairs.lambdas(np.ascontiguousarray(s[pairs.order]), lam, hess)
        grad, weight = np.empty(n), np.empty(n)
        grad[pairs.order], weight[pairs.order] = lam, hess
        got = prepared(s)
        assert got[0] == cost
        np.testing.assert_array_equal(got[1], grad)
        np.testing.assert_array_equal(got[2], weight)


def test_lambdas_results_are_independent_of_later_calls():
    """Each call of a prepared Lambdas returns its own arrays: results held by a name, a view or a container keep
    their values through later calls, and equal a fresh object's."""
    from cyrank.lambdarank import Lambdas

    rng = np.random.default_rng(2)
    n = 200
    y = rng.integers(0, 5, n).astype(float)
    qid = np.repeat(np.arange(20), 10)
    prepared = Lambdas(y, qid, metric="ndcg@10")
    scores = [rng.normal(size=n) for _ in range(4)]
    want = [Lambdas(y, qid, metric="ndcg@10")(s) for s in scores]  # fresh objects: no reuse
    held = prepared(scores[0])
    view = prepared.gradient(scores[1])[0][5:]
    kept = [prepared.gradient(scores[2])]
    last = prepared(scores[3])
    np.testing.assert_array_equal(held[1], want[0][1])
    np.testing.assert_array_equal(held[2], want[0][2])
    np.testing.assert_array_equal(view, want[1][1][5:])
    np.testing.assert_array_equal(kept[0][0], want[2][1])
    np.testing.assert_array_equal(last[1], want[3][1])
    del last
    again = prepared.gradient(scores[0])
    np.testing.assert_array_equal(again[0], want[0][1])
    np.testing.assert_array_equal(again[1], want[0][2])


@pytest.mark.parametrize("k", (0, 3, 10))
def test_ndcg_gains_of_integer_and_other_labels_equal_an_independent_sum(k):
    """NDCG's gains 2^y - 1 (a table for the integer labels 0..63, exp2 for the others: labels 0.5, 2.5, 64, 70
    beside integers, queries of 2-40 rows) against per-pair numpy on distinct scores."""
    rng = np.random.default_rng(9)
    levels = np.array([0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 63.0, 64.0, 70.0])
    sizes = [2, 5, 10, 17, 32, 40]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = np.concatenate([np.sort(rng.choice(levels, m)) for m in sizes])
    s = rng.normal(size=y.size)
    lam, hess = np.empty(y.size), np.empty(y.size)
    _lambdas.lambdas(s, y, offsets, _lambdas.NDCG, k, 0, SIGMA, float(y.max()), 0.0, lam, hess, with_cost=False)
    want = np.zeros(y.size)
    for q in range(len(sizes)):
        lo, hi = offsets[q], offsets[q + 1]
        yq, sq = y[lo:hi], s[lo:hi]
        kk = k if k > 0 else yq.size
        rank = np.empty(yq.size, dtype=np.int64)
        rank[np.argsort(-sq, kind="stable")] = np.arange(yq.size)
        disc = np.where(rank < kk, 1.0 / np.log2(rank + 2.0), 0.0)
        gain = 2.0 ** yq - 1.0
        ideal = np.sort(gain)[::-1][:kk]
        idcg = float(np.sum(ideal / np.log2(np.arange(ideal.size) + 2.0)))
        if idcg <= 0:
            continue
        delta = np.abs((gain[:, None] - gain[None, :]) * (disc[:, None] - disc[None, :])) / idcg
        rho = expit(-SIGMA * (sq[:, None] - sq[None, :]))
        force = np.where(yq[:, None] > yq[None, :], SIGMA * rho * delta, 0.0)
        want[lo:hi] = force.sum(axis=0) - force.sum(axis=1)
    np.testing.assert_allclose(lam, want, rtol=1e-12, atol=1e-14 * np.max(np.abs(want)))
