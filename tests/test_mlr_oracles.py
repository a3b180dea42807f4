"""MLR separation oracles (cyrank/mlr/_oracles.pyx) against brute force.

* Every oracle's maximum equals the maximum over *all permutations* of tiny relevant/irrelevant sets (reference
  enumeration), with random scores full of ties, for every loss and several k; the ranking it returns attains
  that maximum and its Delta.
* On larger sets (where enumeration is impossible) the fast oracles equal a plain O(P N^2) dynamic programme
  over interleavings written from the loss definitions.
* The block kernel used by the estimator gives the same per-query maxima, and the factored batch matrix
  equals the explicit sum of outer products.
"""
import functools
import math

import numpy as np
import pytest

from cyrank.metrics import auc_score, average_precision, ndcg_score, precision_at_k, reciprocal_rank
from cyrank.mlr import _oracles
from cyrank.mlr._constraints import Separation
from cyrank.mlr._oracles import query_oracle
from reference.mlr import LOSSES, delta, query_constraints

TOPK = ("prec@k", "ndcg", "knn")


@functools.lru_cache(maxsize=None)
def constraints(P, N, loss, k):
    return query_constraints(P, N, loss, k)


def brute_max(loss, k, r, u):
    """max over every permutation y of Delta(y) - <W, psi(y*) - psi(y)>, scores r (relevant), u (irrelevant)."""
    deltas, coef = constraints(len(r), len(u), loss, k)
    return float(np.max(deltas - coef @ np.concatenate([r, u])))


def ranking_value(loss, k, r, u, n_before, rel_order, irr_order):
    """Delta and H of the ranking an oracle returned, evaluated from the definitions."""
    P, N = len(r), len(u)
    items, j = [], 0
    for i in range(P):
        while j < n_before[i]:
            items.append((False, u[irr_order[j]]))
            j += 1
        items.append((True, r[rel_order[i]]))
    items += [(False, u[irr_order[jj]]) for jj in range(j, N)]
    swapped = sum(a[1] - b[1] for x, a in enumerate(items) for b in items[x + 1:] if not a[0] and b[0])
    dl = delta(loss, [it[0] for it in items], k)
    return dl, dl + 2.0 * swapped / (P * N)


def random_scores(rng, size):
    scale = rng.choice([0.05, 0.3, 1.0, 4.0])
    return np.round(rng.normal(size=size) * scale, 1)          # 1 decimal: many ties within and across sets


@pytest.mark.slow
@pytest.mark.parametrize("loss", LOSSES)
def test_oracle_equals_brute_force(loss):
    rng = np.random.default_rng(LOSSES.index(loss))
    ks = (1, 2, 3, 4, 6, 9) if loss in TOPK else (1,)
    n_cases = 0
    for _ in range(140):
        P = int(rng.integers(1, 6))
        N = int(rng.integers(1, 8 - P))
        r, u = random_scores(rng, P), random_scores(rng, N)
        for k in ks:
            value, dl, nb, ro, uo = query_oracle(loss, k, r, u)
            best = brute_max(loss, k, r, u)
            assert value == pytest.approx(best, abs=1e-12), (loss, k, r, u)
            assert np.all(np.diff(nb) >= 0) and nb[0] >= 0 and nb[-1] <= N
            d2, v2 = ranking_value(loss, k, r, u, nb, ro, uo)
            assert dl == pytest.approx(d2, abs=1e-12) and v2 == pytest.approx(value, abs=1e-12)
            n_cases += 1
    assert n_cases >= 140


@pytest.mark.parametrize("loss", LOSSES)
def test_oracle_ties_and_extremes(loss):
    for P, N in [(1, 1), (1, 5), (5, 1), (3, 3)]:
        for r, u in [(np.zeros(P), np.zeros(N)),                              # everything tied (W = 0)
                     (np.full(P, 2.0), np.full(N, 2.0 - 0.5)),                # AUC per-pair threshold exactly
                     (np.linspace(1e6, 2e6, P), np.linspace(-1e6, 3e6, N))]:  # large scores
            for k in (1, 2, 7):
                value = query_oracle(loss, k, r, u)[0]
                assert value == pytest.approx(brute_max(loss, k, r, u), rel=1e-12, abs=1e-12)
                assert value >= 0.0      # the correct ranking y* has H = 0


def plain_dp(loss, k, r, u):
    """Exact max of H over interleavings by an O(P N^2) dynamic programme (separable losses) or enumeration
    of the top-k count (knn), written from the definitions: r, u sorted decreasingly, k_i = irrelevant points
    above the i-th relevant one, nondecreasing."""
    P, N = len(r), len(u)
    s = 2.0 / (P * N)
    U = np.concatenate([[0.0], np.cumsum(u)])
    D = lambda p: 1.0 if p <= 2 else 1.0 / math.log2(p)
    idcg = sum(D(p) for p in range(1, min(k, P) + 1))

    def loss_part(i, kk):             # i is 1-based; the relevant point sits at position i + kk
        pos = i + kk
        if loss == "auc":
            return kk / (P * N)
        if loss == "map":
            return (1.0 - i / pos) / P
        if loss == "mrr":
            return (1.0 - 1.0 / pos) if i == 1 else 0.0
        if loss == "prec@k":
            return (1.0 if i <= k else 0.0) / k - (1.0 if pos <= k else 0.0) / k
        if loss == "ndcg":
            return ((D(i) if i <= k else 0.0) - (D(pos) if pos <= k else 0.0)) / idcg

    if loss == "knn":
        best = -np.inf
        for kc in itertools_product_monotone(P, N):
            top = sum(1 for i, kk in enumerate(kc, 1) if i + kk <= k)
            dl = float(2 * min(k, P) > k) - float(2 * top > k)
            best = max(best, dl + s * sum(U[kk] - kk * r[i] for i, kk in enumerate(kc)))
        return best
    V = np.array([loss_part(1, kk) + s * (U[kk] - kk * r[0]) for kk in range(N + 1)])
    for i in range(2, P + 1):
        prev = np.maximum.accumulate(V)
        V = np.array([loss_part(i, kk) + s * (U[kk] - kk * r[i - 1]) + prev[kk] for kk in range(N + 1)])
    return float(np.max(V))


def itertools_product_monotone(P, N):
    """All nondecreasing sequences k_1 <= ... <= k_P in [0, N] (interleavings)."""
    import itertools
    return itertools.combinations_with_replacement(range(N + 1), P)


@pytest.mark.parametrize("loss", LOSSES)
def test_oracle_equals_plain_dp_on_larger_sets(loss):
    rng = np.random.default_rng(100 + LOSSES.index(loss))
    for _ in range(12):
        P = int(rng.integers(1, 7 if loss == "knn" else 30))
        N = int(rng.integers(1, 9 if loss == "knn" else 40))
        r = -np.sort(-random_scores(rng, P))
        u = -np.sort(-random_scores(rng, N))
        for k in ((1, 3, 5, 10) if loss in TOPK else (1,)):
            assert query_oracle(loss, k, r, u)[0] == pytest.approx(plain_dp(loss, k, r, u), abs=1e-11)


MAP_HARD = [  # shapes where a stage's optimum K_i falls just below K_{i-1} (found by mutation testing)
    ([0.474, 0.262, 0.262, 0.064, -0.282], [-0.067, -0.18]),
    ([1.169, 0.207, 0.194, -0.086, -0.292, -0.66, -0.992, -1.093, -2.259], [-0.44, -0.848, -1.212, -1.61]),
    ([0.156, 0.091, 0.083, 0.073, 0.071, 0.065, 0.064, 0.039, -0.071], [0.018, -0.019, -0.069]),
    ([0.44, 0.388, 0.332, 0.193, 0.105, -0.07, -0.214], [0.0, -0.604]),
]


def test_map_oracle_many_shapes():
    """The MAP oracle's stack of earlier stages is exercised by many random shapes against the plain DP."""
    for r, u in MAP_HARD:
        assert query_oracle("map", 1, r, u)[0] == pytest.approx(plain_dp("map", 1, np.array(r), np.array(u)),
                                                                abs=1e-12)
    rng = np.random.default_rng(2024)
    for _ in range(150):
        P, N = int(rng.integers(2, 25)), int(rng.integers(1, 25))
        scale = rng.choice([0.01, 0.1, 1.0])
        r = -np.sort(-np.round(rng.normal(size=P) * scale, 2))
        u = -np.sort(-np.round(rng.normal(size=N) * scale + rng.choice([-1, 0, 1]) * scale, 2))
        assert query_oracle("map", 1, r, u)[0] == pytest.approx(plain_dp("map", 1, r, u), abs=1e-11)


def test_reference_delta_matches_cyrank_metrics():
    """The brute force's Delta is checked against cyrank.metrics (MLR's NDCG discount is the LETOR 4.0 one)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 9))
        rel = rng.random(n) < 0.5
        rel[rng.integers(n)] = True
        if rel.all():
            rel[0] = False
        score = np.arange(n, 0, -1.0)                      # ranking = input order
        k = int(rng.integers(1, n + 1))
        yt = rel.astype(float)
        assert delta("auc", rel) == pytest.approx(1 - auc_score(yt, score))
        assert delta("map", rel) == pytest.approx(1 - average_precision(yt, score))
        assert delta("mrr", rel) == pytest.approx(1 - reciprocal_rank(yt, score))
        P = int(rel.sum())
        assert delta("prec@k", rel, k) == pytest.approx(min(k, P) / k - precision_at_k(yt, score, k=k))
        assert delta("ndcg", rel, k) == pytest.approx(1 - ndcg_score(yt, score, k=k, convention="letor4"))
        top = int(rel[:k].sum())
        assert delta("knn", rel, k) == float(2 * min(k, P) > k) - float(2 * top > k)


def _block(X, W, lab=None, sets=None, loss="auc", k=3, n_threads=1):
    n = X.shape[0]
    XW = X @ W
    rsq = np.einsum("ij,ij->i", XW, X)
    A = np.empty((n, n))
    dl, vl = np.zeros(n), np.zeros(n)
    e, z = np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
    if lab is not None:
        args = (_oracles.MODE_LABELS, lab, z, e, z, e)
    else:
        args = (_oracles.MODE_SETS, np.zeros(0, dtype=np.int64), *sets)
    _oracles.oracle_block(XW @ X.T, rsq, 0, *args, _oracles.LOSSES[loss], k, A, dl, vl, n_threads)
    return A, dl, vl


def _random_problem(seed, n=14, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    L = rng.normal(size=(d, d))
    return rng, X, L @ L.T


@pytest.mark.parametrize("loss", LOSSES)
def test_block_kernel_and_factored_batch(loss):
    rng, X, W = _random_problem(LOSSES.index(loss))
    n = X.shape[0]
    lab = rng.integers(0, 3, size=n).astype(np.int64)
    lab[:6] = [0, 0, 1, 1, 2, 2]
    A, dl, vl = _block(X, W, lab=lab, loss=loss, k=3)
    dist = np.einsum("qia,ab,qib->qi", X[:, None] - X[None], W, X[:, None] - X[None])
    for q in range(n):
        rel = np.flatnonzero((lab == lab[q]) & (np.arange(n) != q))
        irr = np.flatnonzero(lab != lab[q])
        v, dq = query_oracle(loss, 3, -dist[q, rel], -dist[q, irr])[:2]
        assert vl[q] == pytest.approx(v, abs=1e-10) and dl[q] == pytest.approx(dq, abs=1e-12)
        assert A[q].sum() == pytest.approx(0.0, abs=1e-12) and A[q, q] == 0.0
        # the coefficients encode the constraint: H = Delta - sum_i a_i s_i
        assert dl[q] - A[q] @ (-dist[q]) == pytest.approx(vl[q], abs=1e-10)
    # factored batch matrix = explicit average of outer products
    delta_mean, Psi, H = Separation(X, ("labels", lab), loss, 3)(W)
    explicit = np.zeros_like(W)
    for q in range(n):
        diff = X[q] - X
        explicit -= np.einsum("i,ia,ib->ab", A[q], diff, diff)
    assert np.allclose(Psi, explicit / n, rtol=1e-10, atol=1e-12)
    assert delta_mean == pytest.approx(dl.mean()) and H == pytest.approx(vl.mean())
    assert delta_mean - np.vdot(W, Psi) == pytest.approx(H, abs=1e-10)
    # threads give the same answer
    A2, dl2, vl2 = _block(X, W, lab=lab, loss=loss, k=3, n_threads=2)
    assert np.array_equal(A, A2) and np.array_equal(vl, vl2)


def test_block_kernel_explicit_sets():
    rng, X, W = _random_problem(42, n=12)
    n = X.shape[0]
    rel_sets, irr_sets = [], []
    for q in range(n):
        others = rng.permutation(np.delete(np.arange(n), q))
        a, b = int(rng.integers(0, 4)), int(rng.integers(0, 5))
        rel_sets.append(np.sort(others[:a]))
        irr_sets.append(np.sort(others[a:a + b]))
    ptr = lambda s: np.concatenate([[0], np.cumsum([len(x) for x in s])]).astype(np.int64)
    cat = lambda s: np.concatenate(s).astype(np.int64)
    sets = (ptr(rel_sets), cat(rel_sets), ptr(irr_sets), cat(irr_sets))
    dist = np.einsum("qia,ab,qib->qi", X[:, None] - X[None], W, X[:, None] - X[None])
    for loss in LOSSES:
        A, dl, vl = _block(X, W, sets=sets, loss=loss, k=2)
        m = 0
        for q in range(n):
            if len(rel_sets[q]) == 0 or len(irr_sets[q]) == 0:
                assert vl[q] == 0 and dl[q] == 0 and not A[q].any()
                continue
            m += 1
            assert vl[q] == pytest.approx(query_oracle(loss, 2, -dist[q, rel_sets[q]], -dist[q, irr_sets[q]])[0])
            outside = np.setdiff1d(np.arange(n), np.concatenate([rel_sets[q], irr_sets[q]]))
            assert not A[q, outside].any()
        sep = Separation(X, ("sets", *sets), loss, 2)
        assert sep.n_active == m
        assert sep(W)[2] == pytest.approx(vl.sum() / m)


def test_query_oracle_rejects_bad_input():
    with pytest.raises(ValueError, match="loss"):
        query_oracle("ndcg@k", 3, [1.0], [0.0])
    with pytest.raises(ValueError, match="k must be"):
        query_oracle("auc", 0, [1.0], [0.0])
    with pytest.raises(ValueError, match="at least one relevant"):
        query_oracle("auc", 1, [], [0.0])
    with pytest.raises(ValueError, match="finite"):
        query_oracle("map", 1, [np.nan], [0.0])


# ---------------------------------------------------------------------------------------- the sort
def _key_sets():
    """Finite doubles that stress the radix sort: ties, -0.0/+0.0, both signs, every magnitude, keys equal in
    their top 24 bits but not below, one binade (constant digits), sizes around the radix threshold."""
    rng = np.random.default_rng(11)
    tiny = np.finfo(float).tiny
    yield np.zeros(0)
    yield np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, -0.0])
    yield np.array([-0.0, 0.0] * 40)
    yield np.zeros(100)
    yield np.full(90, -3.5)
    for n in (1, 2, 63, 64, 65, 100, 1000):
        yield rng.normal(size=n)
        yield np.round(rng.normal(size=n), 1)                           # many ties
        yield rng.integers(-3, 4, size=n).astype(float) * rng.choice([0.0, -0.0, 1.0], size=n)
    yield 1.0 + rng.integers(0, 50, size=300) * 2.0 ** -45                # equal top bits, distinct low bits
    yield -(1.0 + rng.integers(0, 50, size=300) * 2.0 ** -45)
    yield 1.0 + rng.random(300)                                          # one binade: constant top digit
    yield rng.choice([-1, 1], size=500) * np.exp(rng.uniform(-700, 700, size=500))
    yield rng.choice([tiny, tiny / 8, -tiny / 8, 5e-324, -5e-324, 1e308, -1e308, 0.0, -0.0], size=400)


@pytest.mark.parametrize("radix", [True, False, None])
def test_sort_matches_numpy(radix):
    """Both sorts of the oracles order by decreasing key, ties (-0.0 == +0.0) by increasing index."""
    for keys in _key_sets():
        expected = np.lexsort((np.arange(keys.size), -keys))
        got = _oracles.sort_order(keys, radix=radix)
        assert np.array_equal(got, expected), keys[:10]


@pytest.mark.parametrize("loss", [l for l in LOSSES if l != "knn"])
def test_oracle_on_radix_sorted_sets(loss):
    """Sets large enough for the radix sort (>= 64 points each), unsorted and full of ties: the oracle's maximum
    equals the plain dynamic programme on numpy-sorted scores, its orders are numpy's."""
    rng = np.random.default_rng(300 + LOSSES.index(loss))
    for _ in range(3):
        P, N = int(rng.integers(64, 110)), int(rng.integers(64, 110))
        r, u = random_scores(rng, P), random_scores(rng, N)
        for k in ((1, 5, 70) if loss in TOPK else (1,)):
            value, _, _, rel_order, irr_order = query_oracle(loss, k, r, u)
            assert np.array_equal(rel_order, np.lexsort((np.arange(P), -r)))
            assert np.array_equal(irr_order, np.lexsort((np.arange(N), -u)))
            assert value == pytest.approx(plain_dp(loss, k, -np.sort(-r), -np.sort(-u)), abs=1e-11)


@pytest.mark.parametrize("buckets", [1, 2, 7, 64, 1000, 5000])
def test_bucket_sort_matches_numpy(buckets):
    """The oracles' bucket sort with any number of buckets orders exactly as numpy's lexsort: the
    buckets are monotone in the key under rounding, ties and -0.0/+0.0 are settled by the comparator; a range
    that overflows or is too narrow for the scale falls back to the records' sort."""
    rng = np.random.default_rng(buckets)
    extra = [rng.normal(size=n) ** 2 * rng.choice([1e-3, 1.0, 1e3]) for n in (0, 1, 2, 5, 17, 300, 5000)]
    extra += [np.concatenate([rng.random(200) * 1e-12, [1e12]]),                   # skewed: one full bucket
              np.array([5e-324, 0.0, -0.0, 1e-323] * 30), np.array([1e308, -1e308, 0.0] * 30),
              np.round(rng.normal(size=3000), 2)]
    for keys in list(_key_sets()) + extra:
        expected = np.lexsort((np.arange(keys.size), -keys))
        assert np.array_equal(_oracles.sort_order(keys, buckets=buckets), expected), keys[:10]


def _coefficients_from_ranking(P, N, n_before, rel_order, irr_order):
    """a_i = s k_i (relevant), a_j = -s #{i: k_i >= rank of j} (irrelevant), from a sorted oracle's answer."""
    s = 2.0 / (P * N)
    a_rel, a_irr = np.empty(P), np.empty(N)
    a_rel[rel_order] = s * n_before
    a_irr[irr_order] = -s * np.array([np.count_nonzero(n_before >= j) for j in range(1, N + 1)], dtype=float)
    return a_rel, a_irr


def _block_on_scores(loss, k, r, u):
    """oracle_block on one query whose relevant / irrelevant scores are r / u exactly (2 g - rsq with rsq = 0)."""
    P, N = len(r), len(u)
    G = np.concatenate([r, u])[None, :] / 2.0
    sets = (np.array([0, P]), np.arange(P), np.array([0, N]), np.arange(P, P + N))
    A, dl, vl = np.empty((1, P + N)), np.zeros(1), np.zeros(1)
    _oracles.oracle_block(G, np.zeros(P + N), 0, _oracles.MODE_SETS, np.zeros(0, dtype=np.int64),
                          *(np.asarray(a, dtype=np.int64) for a in sets), _oracles.LOSSES[loss], k, A, dl, vl)
    return A[0, :P], A[0, P:], dl[0], vl[0]


@pytest.mark.parametrize("loss", [l for l in LOSSES if l != "knn"])
def test_block_kernel_equals_sorted_oracle(loss):
    """The block kernel (AUC: counting over value buckets without a sort; the others: the bucket sort) writes
    exactly the coefficients and Delta of the sorted oracle (query_oracle), H up to rounding, on sets of 1 to
    400 points full of ties, with equal scores, huge / tiny magnitudes and skewed ranges (AUC's fallback)."""
    rng = np.random.default_rng(500 + LOSSES.index(loss))
    cases = []
    for _ in range(25):
        P, N = int(rng.integers(1, 400)), int(rng.integers(1, 400))
        cases.append((random_scores(rng, P), random_scores(rng, N)))
        cases.append((rng.normal(size=P) ** 2, rng.normal(size=N) ** 2 + rng.choice([-1.0, 0.0, 0.5])))
    cases += [(np.zeros(5), np.zeros(7)), (np.full(80, 3.0), np.full(90, 2.5)),           # ties, thresholds
              (np.array([0.0, -0.0] * 40), np.array([-0.5, 0.5, -0.0] * 30)),
              (np.concatenate([rng.random(100) * 1e-9, [1e9]]), rng.random(120) * 1e-9),   # one full bucket
              (np.array([1e300, -1e300, 0.0] * 30), np.array([1e300, 3.0] * 40)),           # range overflows
              (rng.normal(size=300) * 1e-300, rng.normal(size=200) * 1e-300)]
    for r, u in cases:
        value, dl, n_before, rel_order, irr_order = query_oracle(loss, 5, r, u)
        a_rel, a_irr = _coefficients_from_ranking(len(r), len(u), n_before, rel_order, irr_order)
        b_rel, b_irr, bdl, bvl = _block_on_scores(loss, 5, r, u)
        assert np.array_equal(b_rel, a_rel) and np.array_equal(b_irr, a_irr), (r[:5], u[:5])
        assert bdl == dl and bvl == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_map_oracle_large_sets_with_clusters():
    """The MAP search from the previous stage's optimum on sets of hundreds of points with clustered scores
    (many stages with K_i = K_{i-1}, some below it): the plain dynamic programme's maximum."""
    rng = np.random.default_rng(77)
    for _ in range(4):
        P, N = int(rng.integers(100, 250)), int(rng.integers(100, 250))
        centres = rng.normal(size=5) * 3
        r = -np.sort(-np.round(rng.choice(centres, P) + rng.normal(size=P) * 0.3, 2))
        u = -np.sort(-np.round(rng.choice(centres, N) + rng.normal(size=N) * 0.3 - 0.5, 2))
        assert query_oracle("map", 1, r, u)[0] == pytest.approx(plain_dp("map", 1, r, u), abs=1e-11)


def test_oracles_sort_on_skewed_keys():
    """The oracles' sort (bucket sort into the sorted arrays, or the records' sort when its buckets are too full)
    on keys that crowd one bucket, span every magnitude or overflow the range: numpy's order."""
    rng = np.random.default_rng(5)
    for keys in [np.concatenate([rng.random(300) * 1e-9, [1e9]]),
                 np.concatenate([np.round(rng.random(300), 3), [-1e15, 1e15]]),
                 rng.normal(size=2000) ** 2, np.array([1e308, -1e308, 0.0, -0.0] * 40),
                 np.exp(rng.uniform(-300, 300, size=700)), np.array([5e-324, -5e-324, 0.0, -0.0] * 40)]:
        assert np.array_equal(_oracles.sort_order(keys), np.lexsort((np.arange(keys.size), -keys)))
