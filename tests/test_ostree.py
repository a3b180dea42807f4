"""The order-statistic sums of cyrank.ranksvm._ostree against explicit pair enumeration.

Scores are multiples of 1/4 (so differences are exact and many pairs sit exactly on the margin f_i - f_j = 1,
which must count as inactive), with repeated scores, repeated labels, one-document queries and queries with a
single label level; plus random real scores and one query of 1e5 documents (5e9 pairs, int64 counts).
"""
import numpy as np
import pytest

from cyrank.ranksvm import _ostree


def brute_force(f, y, offsets, vals):
    """(l^-, gamma^-, l^+, gamma^+) by looping over all pairs of each query."""
    n = f.shape[0]
    lm, gm, lp, gp = np.zeros(n, np.int64), np.zeros(n), np.zeros(n, np.int64), np.zeros(n)
    for q in range(offsets.shape[0] - 1):
        for i in range(offsets[q], offsets[q + 1]):
            for j in range(offsets[q], offsets[q + 1]):
                if y[i] > y[j] and f[i] - f[j] < 1:   # (i, j) active: i above j
                    lm[i] += 1
                    gm[i] += vals[j]
                if y[j] > y[i] and f[j] - f[i] < 1:   # (j, i) active: i below j
                    lp[i] += 1
                    gp[i] += vals[j]
    return lm, gm, lp, gp


def dense_ranks(y, offsets):
    rank = np.empty(y.shape[0], np.int64)
    levels = []
    for q in range(offsets.shape[0] - 1):
        seg = slice(offsets[q], offsets[q + 1])
        u, inv = np.unique(y[seg], return_inverse=True)
        rank[seg] = inv
        levels.append(max(1, u.size))
    return rank, np.array(levels, np.int64)


def random_queries(rng, sizes, n_labels, grid=True):
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    n = offsets[-1]
    f = rng.integers(-12, 13, n) / 4.0 if grid else rng.normal(scale=2.0, size=n)
    y = rng.integers(0, n_labels, n).astype(float)
    return f, y, offsets


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("grid", [True, False])
def test_sums_equal_pair_enumeration(seed, grid):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=12)
    sizes[:2] = 1                                   # one-document queries
    f, y, offsets = random_queries(rng, sizes, n_labels=[2, 3, 7, 40][seed % 4], grid=grid)
    y[offsets[2]:offsets[3]] = 5.0                  # a query with a single label level
    rank, levels = dense_ranks(y, offsets)
    vals = rng.integers(-8, 9, f.shape[0]) / 8.0
    got = _ostree.pair_sums(f, rank, offsets, levels, vals)
    want = brute_force(f, y, offsets, vals)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)
    assert got[0].dtype == np.int64 and got[0].sum() == got[2].sum()  # every active pair counted once per side


def test_default_values_are_the_scores_and_centering_keeps_the_active_set():
    rng = np.random.default_rng(11)
    f, y, offsets = random_queries(rng, [30, 25, 9], n_labels=4)
    f = f + 1e3  # a large common offset: centering removes it exactly on this grid
    rank, levels = dense_ranks(y, offsets)
    lm, gm, lp, gp = _ostree.pair_sums(f, rank, offsets, levels)
    wlm, wgm, wlp, wgp = brute_force(f, y, offsets, f)
    np.testing.assert_array_equal(lm, wlm)
    np.testing.assert_allclose(gm, wgm, rtol=1e-14)
    clm, _, clp, _ = _ostree.pair_sums(f, rank, offsets, levels, center=True)
    np.testing.assert_array_equal(clm, wlm)
    np.testing.assert_array_equal(clp, wlp)


def test_all_ties_and_all_on_the_margin():
    y = np.array([0.0, 1, 2, 0, 1, 2])
    offsets = np.array([0, 6], np.int64)
    rank, levels = dense_ranks(y, offsets)
    same = np.zeros(6)                       # every pair active: l^- = number of lower labels
    lm, _, lp, _ = _ostree.pair_sums(same, rank, offsets, levels)
    np.testing.assert_array_equal(lm, [0, 2, 4, 0, 2, 4])
    np.testing.assert_array_equal(lp, [4, 2, 0, 4, 2, 0])
    margin = y.copy()                        # f_i - f_j = y_i - y_j >= 1 for every pair: nothing active
    lm, _, lp, _ = _ostree.pair_sums(margin, rank, offsets, levels)
    assert lm.sum() == 0 and lp.sum() == 0


def test_sort_is_a_sort():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 17, 100, 5000):
        for key in (rng.normal(size=n), rng.integers(0, 3, n).astype(float), np.arange(n, dtype=float)[::-1].copy(),
                    np.zeros(n)):
            offsets = np.array([0, n // 3, n], np.int64)
            perm = _ostree.argsort_segments(key, offsets)
            for a, b in zip(offsets[:-1], offsets[1:]):
                # increasing key, equal keys by increasing index (cyrank/_sort.pxd): numpy's stable order
                assert np.array_equal(perm[a:b], a + np.argsort(key[a:b], kind="stable"))


def test_hundred_thousand_documents_five_billion_pairs():
    """One query of 1e5 documents with distinct real labels: 4,999,950,000 pairs, all active at f = 0."""
    n = 100_000
    rng = np.random.default_rng(0)
    y = rng.permutation(n).astype(float)
    offsets = np.array([0, n], np.int64)
    rank = y.astype(np.int64)
    levels = np.array([n], np.int64)
    lm, gm, lp, gp = _ostree.pair_sums(np.zeros(n), rank, offsets, levels, np.ones(n))
    assert lm.dtype == np.int64
    assert int(lm.sum()) == int(lp.sum()) == n * (n - 1) // 2 > 2**32
    np.testing.assert_array_equal(lm, rank)              # a document is above every lower label
    np.testing.assert_array_equal(gp, n - 1 - rank)
    # scores = label ranks: only adjacent ranks (difference 1, not < 1) ... none active
    lm, _, _, _ = _ostree.pair_sums(rank.astype(float), rank, offsets, levels)
    assert lm.sum() == 0
    # scores = rank / 2: pairs with rank difference 1 are active (0.5 < 1), difference 2 sits on the margin
    lm, _, lp, _ = _ostree.pair_sums(rank / 2.0, rank, offsets, levels)
    assert int(lm.sum()) == int(lp.sum()) == n - 1
