"""cyrank.metrics against independent brute force (plain Python, O(n^2)), sklearn, and hand-computed values.

The brute-force metrics below follow the textbook definitions on one query at a time and know nothing of
the module's tie groups, sorting or closed forms. ``ties="average"`` is checked against the mean over all
orders of the tied rows, enumerated with itertools on small queries.
"""
import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.metrics import ndcg_score as sk_ndcg_score

from cyrank import metrics as M

ATOL = 1e-12
DETERMINISTIC = ("pessimistic", "optimistic", "input")
EMPTY_VALUE = {"drop": np.nan, "zero": 0.0, "one": 1.0}


# ---------------------------------------------------------------------------------------------
# brute force, one query: y, s are lists in input order; mode is a deterministic tie rule
# (or "average" for the pair-counting metrics, where a tie is worth 1/2). None = undefined.
# ---------------------------------------------------------------------------------------------
def rank_order(y, s, mode):
    keys = {
        "pessimistic": lambda i: (-s[i], y[i]),
        "optimistic": lambda i: (-s[i], -y[i]),
        "input": lambda i: (-s[i], i),
    }
    return sorted(range(len(y)), key=keys[mode])


def ranked_labels(y, s, mode):
    return [y[i] for i in rank_order(y, s, mode)]


def above(i, j, s, mode):
    """1 if row i counts as ranked above row j."""
    if s[i] != s[j]:
        return float(s[i] > s[j])
    return {"pessimistic": 0.0, "optimistic": 1.0, "input": float(i < j), "average": 0.5}[mode]


def b_dcg(labels, k, gain, letor):
    total = 0.0
    for r, lab in enumerate(labels[:k], start=1):
        g = 2.0**lab - 1.0 if gain == "exponential" else lab
        d = (1.0 if r <= 2 else 1.0 / math.log2(r)) if letor else 1.0 / math.log2(1 + r)
        total += g * d
    return total


def b_ndcg(y, s, mode, k=10, gain="exponential", convention=None):
    n = len(y)
    kk = n if k is None else k
    ideal = b_dcg(sorted(y, reverse=True), kk, gain, convention == "letor4")
    if ideal == 0:
        return None
    if convention == "letor4" and k is not None and n < k:
        return 0.0
    return b_dcg(ranked_labels(y, s, mode), kk, gain, convention == "letor4") / ideal


def b_letor_mean(y, s, mode, gain="exponential"):
    vals = [b_ndcg(y, s, mode, k=j, gain=gain, convention="letor4") for j in range(1, len(y) + 1)]
    return None if vals[0] is None else sum(vals) / len(vals)


def b_err(y, s, mode, k=10, max_rel=None):
    R = [(2.0**lab - 1.0) / 2.0**max_rel for lab in ranked_labels(y, s, mode)]
    if max(R) == 0:
        return None
    total, reach = 0.0, 1.0
    for r, p in enumerate(R[: len(R) if k is None else k], start=1):
        total += reach * p / r
        reach *= 1.0 - p
    return total


def b_ap(y, s, mode, threshold=0.0):
    rel = [lab > threshold for lab in ranked_labels(y, s, mode)]
    if not any(rel):
        return None
    return sum(sum(rel[:r]) / r for r in range(1, len(rel) + 1) if rel[r - 1]) / sum(rel)


def b_rr(y, s, mode, threshold=0.0):
    rel = [lab > threshold for lab in ranked_labels(y, s, mode)]
    return 1.0 / (rel.index(True) + 1) if any(rel) else None


def b_prec(y, s, mode, k=10, threshold=0.0):
    rel = [lab > threshold for lab in ranked_labels(y, s, mode)]
    if not any(rel):
        return None
    kk = len(y) if k is None else k
    return sum(rel[:kk]) / kk


def preference_pairs(y):
    return [(i, j) for i in range(len(y)) for j in range(len(y)) if y[i] > y[j]]


def b_pairwise(y, s, mode):
    pairs = preference_pairs(y)
    return sum(above(i, j, s, mode) for i, j in pairs) / len(pairs) if pairs else None


def b_auc(y, s, mode, threshold=0.0):
    return b_pairwise([float(lab > threshold) for lab in y], s, mode)


def b_disagreement(y, s, mode):
    v = b_pairwise(y, s, mode)
    return None if v is None else 1.0 - v


def violated(i, j, s, mode):  # edge i -> j (y_i > y_j) violated: f(i) <= f(j), ties by the rule
    return above(i, j, s, mode) == 0.0


def b_zero_one(y, s, mode):
    pairs = preference_pairs(y)
    return float(any(violated(i, j, s, mode) for i, j in pairs)) if pairs else None


def b_domination(y, s, mode):
    n = len(y)
    tops = [i for i in range(n) if any(y[j] < y[i] for j in range(n))]
    if not tops:
        return None
    return sum(any(violated(i, j, s, mode) for j in range(n) if y[j] < y[i]) for i in tops) / len(tops)


def b_dominated(y, s, mode):
    n = len(y)
    bottoms = [j for j in range(n) if any(y[i] > y[j] for i in range(n))]
    if not bottoms:
        return None
    return sum(any(violated(i, j, s, mode) for i in range(n) if y[i] > y[j]) for j in bottoms) / len(bottoms)


BRUTE = {
    "ndcg_score": b_ndcg,
    "letor_mean_ndcg": b_letor_mean,
    "err_score": b_err,
    "average_precision": b_ap,
    "reciprocal_rank": b_rr,
    "precision_at_k": b_prec,
    "auc_score": b_auc,
    "pairwise_accuracy": b_pairwise,
    "zero_one_error": b_zero_one,
    "disagreement_error": b_disagreement,
    "domination_error": b_domination,
    "dominated_error": b_dominated,
}
PAIR_COUNTING = {"auc_score", "pairwise_accuracy", "disagreement_error"}  # brute force knows "average"


def average_over_orders(f, y, s, **params):
    """Mean of f over every order of the tied rows (each tie group permuted in all ways)."""
    groups = [[i for i in range(len(s)) if s[i] == v] for v in sorted(set(s), reverse=True)]
    values = []
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        strict = [0.0] * len(s)
        for pos, i in enumerate(i for p in perms for i in p):
            strict[i] = -float(pos)
        v = f(y, strict, "pessimistic", **params)
        if v is None:
            return None
        values.append(v)
    return math.fsum(values) / len(values)


def brute(name, y, s, qid, ties, empty, enumerate_ties=False, **params):
    """(mean, per_query) by brute force; queries in increasing qid, rows of a query in input order."""
    f = BRUTE[name]
    if name == "err_score" and params.get("max_rel") is None:
        params = dict(params, max_rel=float(np.max(y)))
    per_query = []
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        yq, sq = [float(v) for v in y[idx]], [float(v) for v in s[idx]]
        v = average_over_orders(f, yq, sq, **params) if enumerate_ties else f(yq, sq, ties, **params)
        per_query.append(EMPTY_VALUE[empty] if v is None else v)
    per_query = np.array(per_query)
    kept = per_query[~np.isnan(per_query)]
    return (float(np.mean(kept)) if kept.size else np.nan), per_query


# ---------------------------------------------------------------------------------------------
# data: many queries, interleaved unsorted qid, heavy ties, labels 0..4, and the special queries
# ---------------------------------------------------------------------------------------------
def make_data(seed, n_queries=50, max_size=12, n_score_values=4):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, n_queries)
    sizes[:2] = 1  # one-document queries
    ids = rng.permutation(np.arange(-30, 5 * n_queries))[:n_queries]  # any integers, unsorted
    qid = np.repeat(ids, sizes)
    n = qid.size
    y = rng.integers(0, 5, n).astype(float)
    s = rng.integers(0, n_score_values, n) * 0.25 - 0.5
    start = np.r_[0, np.cumsum(sizes)]
    big = [q for q in range(2, n_queries) if sizes[q] >= 3][:4]
    y[start[big[0]] : start[big[0] + 1]] = 2.0  # all labels equal: no preference pair
    y[start[big[1]] : start[big[1] + 1]] = 0.0  # no relevant document
    y[start[big[2]] : start[big[2] + 1]] = rng.integers(1, 5, sizes[big[2]])  # all relevant: no negative
    s[start[big[3]] : start[big[3] + 1]] = 0.25  # all scores tied
    perm = rng.permutation(n)  # interleave the queries
    return y[perm], s[perm], qid[perm]


CASES = [
    ("ndcg_score", {"k": 5}),
    ("ndcg_score", {"k": None, "gain": "linear"}),
    ("ndcg_score", {"k": 1}),
    ("ndcg_score", {"k": 4, "convention": "letor4"}),
    ("ndcg_score", {"k": 3, "convention": "lightgbm"}),
    ("letor_mean_ndcg", {}),
    ("letor_mean_ndcg", {"gain": "linear"}),
    ("err_score", {"k": 5}),
    ("err_score", {"k": None, "max_rel": 6.0}),
    ("average_precision", {}),
    ("average_precision", {"threshold": 1.5}),
    ("reciprocal_rank", {}),
    ("reciprocal_rank", {"threshold": 2}),
    ("precision_at_k", {"k": 3}),
    ("precision_at_k", {"k": None, "threshold": 1.0}),
    ("auc_score", {}),
    ("auc_score", {"threshold": 2.0}),
    ("pairwise_accuracy", {}),
    ("zero_one_error", {}),
    ("disagreement_error", {}),
    ("domination_error", {}),
    ("dominated_error", {}),
]
CASE_IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in p.items())}" for name, p in CASES]


def run(name, y, s, qid, **kwargs):
    return getattr(M, name)(y, s, qid, return_per_query=True, **kwargs)


def assert_same(got, expected):
    (mean, per_query), (b_mean, b_per_query) = got, expected
    assert per_query.dtype == np.float64
    np.testing.assert_array_equal(np.isnan(per_query), np.isnan(b_per_query))
    np.testing.assert_allclose(per_query, b_per_query, rtol=0, atol=ATOL)
    if np.isnan(b_mean):
        assert np.isnan(mean)
    else:
        assert abs(mean - b_mean) <= ATOL


DATA = make_data(0)


@pytest.mark.parametrize("name, params", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("ties", DETERMINISTIC)
@pytest.mark.parametrize("empty", ["drop", "zero", "one"])
def test_matches_brute_force(name, params, ties, empty):
    y, s, qid = DATA
    got = run(name, y, s, qid, ties=ties, empty=empty, **params)
    assert_same(got, brute(name, y, s, qid, ties, empty, **params))


@pytest.mark.parametrize("name, params", CASES, ids=CASE_IDS)
def test_average_ties_equal_mean_over_all_orders(name, params):
    y, s, qid = make_data(1, n_queries=40, max_size=6, n_score_values=3)
    for empty in ("drop", "one"):
        got = run(name, y, s, qid, ties="average", empty=empty, **params)
        assert_same(got, brute(name, y, s, qid, "average", empty, enumerate_ties=True, **params))


@pytest.mark.slow
def test_average_ties_large_tie_groups():
    """Every "average" rule on a group of 7 tied rows (5040 orders) with cut-offs inside it."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 4, 10).astype(float)
    s = np.r_[0.5, np.full(7, 1.0), 0.5, 0.0]
    for name, params in [("err_score", {"k": 5}), ("err_score", {"k": None}), ("average_precision", {}),
                         ("reciprocal_rank", {"threshold": 2.0}), ("ndcg_score", {"k": 3}),
                         ("precision_at_k", {"k": 4}), ("letor_mean_ndcg", {}), ("auc_score", {}),
                         ("zero_one_error", {}), ("domination_error", {}), ("dominated_error", {}),
                         ("disagreement_error", {})]:
        qid = np.zeros(10, dtype=int)
        got = run(name, y, s, qid, ties="average", empty="zero", **params)
        assert_same(got, brute(name, y, s, qid, "average", "zero", enumerate_ties=True, **params))


@pytest.mark.parametrize("name", sorted(PAIR_COUNTING))
def test_pair_counting_average_on_big_queries(name):
    """The pair metrics' "average" (tie = 1/2) against the direct pair count, on queries of up to 60 rows."""
    y, s, qid = make_data(2, n_queries=30, max_size=60, n_score_values=5)
    for empty in ("drop", "zero"):
        assert_same(run(name, y, s, qid, ties="average", empty=empty), brute(name, y, s, qid, "average", empty))


def test_ties_modes_differ_and_order():
    """The tie rules give pessimistic <= average <= optimistic on a query with tied scores (and differ)."""
    y, s, qid = DATA
    for name in ("ndcg_score", "average_precision", "pairwise_accuracy", "err_score", "auc_score"):
        p, a, o = (getattr(M, name)(y, s, qid, ties=t) for t in ("pessimistic", "average", "optimistic"))
        assert p < a < o, name
    for name in ("zero_one_error", "disagreement_error", "domination_error", "dominated_error"):
        p, a, o = (getattr(M, name)(y, s, qid, ties=t) for t in ("pessimistic", "average", "optimistic"))
        assert p > a > o, name


# ---------------------------------------------------------------------------------------------
# hand-computed values and named conventions
# ---------------------------------------------------------------------------------------------
def test_hand_values():
    y = np.array([2.0, 1.0, 0.0])
    s = np.array([0.9, 0.5, 0.1])
    assert M.err_score(y, s) == pytest.approx(0.75 + 0.5 * 0.25 * 0.25, abs=1e-15)  # R = 3/4, 1/4, 0
    assert M.err_score(y, s, max_rel=4) == pytest.approx(3 / 16 + 0.5 * (13 / 16) * (1 / 16), abs=1e-15)
    y2 = np.array([0.0, 1.0, 0.0, 1.0])
    s2 = np.array([4.0, 3.0, 2.0, 1.0])
    assert M.average_precision(y2, s2) == pytest.approx((1 / 2 + 2 / 4) / 2, abs=1e-15)
    assert M.reciprocal_rank(y2, s2) == 0.5
    assert M.precision_at_k(y2, s2, k=3) == pytest.approx(1 / 3, abs=1e-15)
    assert M.precision_at_k(y2, s2, k=10) == pytest.approx(2 / 10, abs=1e-15)  # missing places irrelevant
    assert M.auc_score(y2, s2) == roc_auc_score(y2, s2)
    # ties average: two tied rows, one relevant: RR = (1/1 + 1/2) / 2
    assert M.reciprocal_rank([1, 0], [0, 0], ties="average") == pytest.approx(0.75, abs=1e-15)
    assert M.reciprocal_rank([1, 0], [0, 0]) == 0.5
    assert M.reciprocal_rank([1, 0], [0, 0], ties="optimistic") == 1.0
    assert M.reciprocal_rank([1, 0], [0, 0], ties="input") == 1.0
    assert M.reciprocal_rank([0, 1], [0, 0], ties="input") == 0.5


def test_auc_hand_value():
    y = np.array([0.0, 1.0, 0.0, 1.0])
    s = np.array([4.0, 3.0, 2.0, 1.0])
    # relevant rows score 3 and 1, irrelevant 4 and 2: only (3 > 2) of the four pairs is right
    assert M.auc_score(y, s) == 0.25
    assert M.pairwise_accuracy(y, s) == 0.25


def test_ndcg_hand_value_and_letor4_rules():
    y = np.array([2.0, 0.0, 1.0])
    s = np.array([0.3, 0.2, 0.1])
    dcg = 3 + 0 + 1 / math.log2(4)
    idcg = 3 + 1 / math.log2(3)
    assert M.ndcg_score(y, s, k=3) == pytest.approx(dcg / idcg, abs=1e-15)
    # LETOR 4.0: ranks 1 and 2 undiscounted, then 1/log2(rank)
    assert M.ndcg_score(y, s, k=3, convention="letor4") == pytest.approx((3 + 1 / math.log2(3)) / (3 + 1), abs=1e-15)
    # fewer documents than k: NDCG@k = 0 under letor4, but not under the others
    assert M.ndcg_score(y, s, k=5, convention="letor4") == 0.0
    assert M.ndcg_score(y, s, k=5) == M.ndcg_score(y, s, k=3) == M.ndcg_score(y, s, k=None)
    # MeanNDCG: mean of NDCG@1..3 with the LETOR discount
    n1, n2, n3 = 1.0, 3 / 4, (3 + 1 / math.log2(3)) / 4
    assert M.letor_mean_ndcg(y, s) == pytest.approx((n1 + n2 + n3) / 3, abs=1e-15)


def test_convention_defaults():
    """lightgbm: input-order ties and empty queries = 1; letor4: input order and empty = 0; explicit wins."""
    y = np.array([0, 0, 1, 2, 0, 1.0])
    s = np.array([0, 0, 1, 1, 5, 5.0])  # ties in both queries
    qid = np.array([1, 1, 2, 2, 2, 2])  # query 1 has no relevant document
    for conv, (ties, empty) in {"lightgbm": ("input", "one"), "letor4": ("input", "zero")}.items():
        got = M.ndcg_score(y, s, qid, k=3, convention=conv, return_per_query=True)
        want = brute("ndcg_score", y, s, qid, ties, empty, k=3, convention=conv)
        assert_same(got, want)
        assert got[1][0] == EMPTY_VALUE[empty]
        other = M.ndcg_score(y, s, qid, k=3, convention=conv, ties="pessimistic", empty="drop", return_per_query=True)
        assert_same(other, brute("ndcg_score", y, s, qid, "pessimistic", "drop", k=3, convention=conv))
        assert other[0] != got[0]
    assert_same(M.letor_mean_ndcg(y, s, qid, return_per_query=True),
                brute("letor_mean_ndcg", y, s, qid, "input", "zero"))
    # no convention: pessimistic and drop
    assert_same(M.ndcg_score(y, s, qid, k=3, return_per_query=True),
                brute("ndcg_score", y, s, qid, "pessimistic", "drop", k=3))


def test_lightgbm_input_order_is_stable_order():
    """Input order means the rows' order inside the query, whatever other queries are interleaved."""
    y = np.array([0, 5, 1, 0, 2, 9.0])
    s = np.array([1, 7, 1, 3, 1, 7.0])
    qid = np.array([4, 9, 4, 9, 4, 9])
    _, per_query = M.ndcg_score(y, s, qid, k=1, convention="lightgbm", return_per_query=True)
    # query 4: three tied rows, labels 0, 1, 2 in input order -> the label-0 row is first
    assert per_query[0] == 0.0
    # query 9: rows (label 5, s=7), (0, 3), (9, 7): first is the label-5 row
    assert per_query[1] == pytest.approx((2.0**5 - 1) / (2.0**9 - 1), abs=1e-15)


# ---------------------------------------------------------------------------------------------
# agreement with scikit-learn where the definitions coincide
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 7, None])
@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_ndcg_matches_sklearn(k, gain):
    rng = np.random.default_rng(3)
    Y = rng.integers(0, 5, (30, 9)).astype(float)
    Y[4] = 0.0  # all irrelevant: sklearn scores 0 -> empty="zero"
    S = rng.integers(0, 3, (30, 9)) * 1.0  # many ties: sklearn averages them -> ties="average"
    qid = np.repeat(np.arange(30), 9)
    ours = M.ndcg_score(Y.ravel(), S.ravel(), qid, k=k, gain=gain, ties="average", empty="zero")
    target = Y if gain == "linear" else 2.0**Y - 1.0
    assert ours == pytest.approx(sk_ndcg_score(target, S, k=k), abs=ATOL)


def test_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 500).astype(float)
    s = rng.integers(0, 20, 500) / 7.0
    assert M.auc_score(y, s, ties="average") == pytest.approx(roc_auc_score(y > 0, s), abs=ATOL)
    assert M.auc_score(y, s, threshold=1, ties="average") == pytest.approx(roc_auc_score(y > 1, s), abs=ATOL)


def test_average_precision_matches_sklearn_without_ties():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 400).astype(float)
    s = rng.normal(size=400)
    for ties in ("pessimistic", "average", "input"):
        assert M.average_precision(y, s, ties=ties) == pytest.approx(average_precision_score(y > 0, s), abs=ATOL)


# ---------------------------------------------------------------------------------------------
# scale: O(n log n) pair counting, 64-bit counts
# ---------------------------------------------------------------------------------------------
def pairs_by_levels(y, s):
    """(correct, tied, total) preference pairs by binary search per pair of label levels: O(L^2 n log n)."""
    levels = np.unique(y)
    sorted_scores = {v: np.sort(s[y == v]) for v in levels}
    correct = tied = total = 0
    for a, hi in enumerate(levels):
        for lo in levels[:a]:
            low = sorted_scores[lo]
            below = np.searchsorted(low, s[y == hi], side="left")  # lower-label rows strictly below
            not_above = np.searchsorted(low, s[y == hi], side="right")
            correct += int(below.sum())
            tied += int((not_above - below).sum())
            total += low.size * int((y == hi).sum())
    return correct, tied, total


def test_pairwise_accuracy_two_hundred_thousand_docs():
    rng = np.random.default_rng(6)
    n = 200_000
    y = rng.integers(0, 5, n).astype(float)
    s = np.round(rng.normal(size=n) + 0.3 * y, 3)  # ties remain
    correct, tied, total = pairs_by_levels(y, s)
    assert total > 2**31  # counts must be 64-bit
    assert M.pairwise_accuracy(y, s) == pytest.approx(correct / total, rel=0, abs=ATOL)
    assert M.pairwise_accuracy(y, s, ties="average") == pytest.approx((correct + 0.5 * tied) / total, abs=ATOL)
    assert M.pairwise_accuracy(y, s, ties="optimistic") == pytest.approx((correct + tied) / total, abs=ATOL)
    assert M.disagreement_error(y, s) == pytest.approx(1 - correct / total, abs=ATOL)
    # the label-ranking errors on the same query, against per-level maxima / minima of the scores
    levels = np.unique(y)
    max_below = {v: s[y < v].max() for v in levels[1:]}
    min_above = {v: s[y > v].min() for v in levels[:-1]}
    dom = np.mean([s[i] <= max_below[y[i]] for i in np.flatnonzero(y > levels[0])])
    domd = np.mean([s[j] >= min_above[y[j]] for j in np.flatnonzero(y < levels[-1])])
    assert 0 < dom < 1 and 0 < domd < 1
    assert M.domination_error(y, s) == pytest.approx(dom, abs=ATOL)
    assert M.dominated_error(y, s) == pytest.approx(domd, abs=ATOL)
    assert M.zero_one_error(y, s) == 1.0


def test_large_tie_group_err_average_is_fast_with_cutoff():
    y = np.tile([0.0, 1.0, 2.0, 3.0], 25_000)
    s = np.zeros_like(y)
    # one tie group of 1e5 rows: every order equally likely; with k = 1, ERR = mean R
    R = (2.0**y - 1) / 2.0**3
    assert M.err_score(y, s, k=1, ties="average") == pytest.approx(R.mean(), abs=ATOL)
    assert M.ndcg_score(y, s, k=10, ties="average", gain="linear") == pytest.approx(1.5 / 3.0, abs=ATOL)


# ---------------------------------------------------------------------------------------------
# empty rules, warnings, qid handling
# ---------------------------------------------------------------------------------------------
def test_every_query_dropped_warns_and_returns_nan():
    y = np.zeros(5)
    s = np.arange(5.0)
    qid = np.array([1, 1, 2, 2, 2])
    for name in BRUTE:
        with pytest.warns(UndefinedMetricWarning, match="every query"):
            mean, per_query = getattr(M, name)(y, s, qid, empty="drop", return_per_query=True)
        assert np.isnan(mean) and np.isnan(per_query).all() and per_query.shape == (2,)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert getattr(M, name)(y, s, qid, empty="one") == 1.0
            assert getattr(M, name)(y, s, qid, empty="zero") == 0.0


def test_per_query_is_in_increasing_qid_order_and_row_order_free():
    y, s, qid = DATA
    rng = np.random.default_rng(8)
    perm = rng.permutation(y.size)
    for name in BRUTE:
        for ties in ("pessimistic", "optimistic", "average"):  # "input" depends on row order by design
            m1, p1 = getattr(M, name)(y, s, qid, ties=ties, return_per_query=True)
            m2, p2 = getattr(M, name)(y[perm], s[perm], qid[perm], ties=ties, return_per_query=True)
            np.testing.assert_allclose(p1, p2, rtol=0, atol=ATOL)
    # per-query order: increasing qid
    _, per_query = M.reciprocal_rank([1, 0, 0, 1], [1, 0, 1, 0], [7, 7, -3, -3], return_per_query=True)
    np.testing.assert_array_equal(per_query, [0.5, 1.0])


def test_qid_none_is_one_query():
    y, s, _ = DATA
    for name in BRUTE:
        assert getattr(M, name)(y, s) == getattr(M, name)(y, s, np.full(y.size, 3))


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------
Y3 = np.array([1.0, 0.0, 2.0])
S3 = np.array([0.1, 0.2, 0.3])


@pytest.mark.parametrize("name", sorted(BRUTE))
@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        ((Y3, [0.1, np.nan, 0.3]), {}, ValueError, "NaN"),
        ((Y3, [0.1, np.inf, 0.3]), {}, ValueError, "infinity"),
        (([1.0, np.nan, 0.0], S3), {}, ValueError, "NaN"),
        ((Y3, S3[:2]), {}, ValueError, "lengths must match"),
        ((Y3, S3, [1, 2]), {}, ValueError, "qid"),
        ((Y3, S3, [1.5, 1, 1]), {}, ValueError, "integer"),
        (([], []), {}, ValueError, "empty"),
        ((np.array(["a", "b", "c"], dtype=object), S3), {}, TypeError, "dtype"),
        ((Y3, S3), {"ties": "random"}, ValueError, "ties must be one of"),
        ((Y3, S3), {"empty": "nan"}, ValueError, "empty must be one of"),
        ((Y3, S3), {"return_per_query": "yes"}, TypeError, "return_per_query"),
    ],
)
def test_bad_input(name, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        getattr(M, name)(*args, **kwargs)


@pytest.mark.parametrize(
    "func, kwargs, exc, match",
    [
        (M.ndcg_score, {"k": 0}, ValueError, "k must be >= 1"),
        (M.ndcg_score, {"k": 2.5}, TypeError, "k must be an integer"),
        (M.ndcg_score, {"k": True}, TypeError, "k must be an integer"),
        (M.err_score, {"k": -1}, ValueError, "k must be >= 1"),
        (M.precision_at_k, {"k": "3"}, TypeError, "k must be an integer"),
        (M.ndcg_score, {"gain": "log"}, ValueError, "gain must be one of"),
        (M.ndcg_score, {"convention": "xgboost"}, ValueError, "convention must be one of"),
        (M.err_score, {"max_rel": 1.0}, ValueError, "max_rel"),
        (M.err_score, {"max_rel": -1.0}, ValueError, "max_rel must be >= 0"),
        (M.average_precision, {"threshold": float("nan")}, ValueError, "threshold must be finite"),
        (M.auc_score, {"threshold": "0"}, TypeError, "threshold must be a real number"),
    ],
)
def test_bad_parameters(func, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        func(Y3, S3, **kwargs)


def test_gain_needs_nonnegative_bounded_labels():
    with pytest.raises(ValueError, match="non-negative"):
        M.ndcg_score([-1.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="non-negative"):
        M.err_score([-1.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="gain='linear'"):
        M.ndcg_score([1000.0, 1.0], [0.0, 1.0])
    assert M.ndcg_score([1000.0, 1.0], [0.0, 1.0], gain="linear", k=None) < 1.0
    # negative labels are fine where only order or a threshold matters
    assert M.pairwise_accuracy([-2.0, -1.0], [0.0, 1.0]) == 1.0
    assert M.average_precision([-2.0, -1.0], [0.0, 1.0], threshold=-1.5) == 1.0


def test_docstrings_state_formula_ties_and_empty():
    for name in M.__all__:
        if name == "metric_by_name":  # the lookup by name, not a metric
            continue
        doc = getattr(M, name).__doc__
        assert "Ties" in doc and "Empty" in doc and "=" in doc, name
        assert "{" + "params}" not in doc and "{" + "note}" not in doc, name


@pytest.mark.parametrize("spec, expected", [
    ("ndcg@5", lambda y, s, q: M.ndcg_score(y, s, q, k=5)), ("NDCG", lambda y, s, q: M.ndcg_score(y, s, q, k=None)),
    ("err@3", lambda y, s, q: M.err_score(y, s, q, k=3)), ("map", M.average_precision), ("mrr", M.reciprocal_rank),
    ("p@2", lambda y, s, q: M.precision_at_k(y, s, q, k=2)), ("auc", M.auc_score), ("pairacc", M.pairwise_accuracy),
    ("meanndcg", M.letor_mean_ndcg)])
def test_metric_by_name(spec, expected):
    rng = np.random.default_rng(3)
    y, s, q = rng.integers(0, 3, 60).astype(float), rng.integers(0, 4, 60).astype(float), np.repeat(np.arange(6), 10)
    assert M.metric_by_name(spec)(y, s, q) == expected(y, s, q)


@pytest.mark.parametrize("spec, match", [("foo", "unknown metric"), ("ndcg@0", "positive integer"),
                                         ("ndcg@x", "positive integer")])
def test_metric_by_name_refuses(spec, match):
    with pytest.raises(ValueError, match=match):
        M.metric_by_name(spec)


@pytest.mark.parametrize("name", ["ndcg_score", "letor_mean_ndcg", "precision_at_k", "average_precision",
                                  "reciprocal_rank", "err_score", "pairwise_accuracy", "auc_score",
                                  "disagreement_error", "domination_error", "zero_one_error", "dominated_error"])
def test_undefined_metric_warning_points_at_the_caller(name):
    """Every metric computes its per-query values inside one shared step (metrics._evaluate); the
    UndefinedMetricWarning of an all-undefined input must still name the line that called the metric."""
    import cyrank.metrics as M
    from sklearn.exceptions import UndefinedMetricWarning

    metric = getattr(M, name)
    kwargs = {"empty": "drop"}
    with pytest.warns(UndefinedMetricWarning) as record:
        value = metric(np.zeros(4), np.arange(4.0), np.zeros(4), **kwargs)
    assert np.isnan(value)
    assert all(w.filename == __file__ for w in record if w.category is UndefinedMetricWarning)
