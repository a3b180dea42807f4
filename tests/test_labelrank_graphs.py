"""Preference graphs, their decompositions and the label-ranking errors against brute-force definitions written
here with plain loops and sets (Dekel, Manning & Singer 2003, section 2), on random graphs with cycles and ties."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import label_ranking_loss

from cyrank import metrics
from cyrank.labelrank import DECOMPOSITIONS, PreferenceGraphs
from cyrank.metrics import label_ranking_error


def edge_set(G):
    """{(instance, init, term)} of the graphs."""
    return {(i, int(a), int(b)) for i in range(G.n_instances)
            for a, b in zip(G.init[G.edge_ptr[i]:G.edge_ptr[i + 1]], G.term[G.edge_ptr[i]:G.edge_ptr[i + 1]])}


def random_edges(seed, n=12, L=5, p=0.3):
    """Random simple graphs with cycles (both directions of a pair allowed), some instances without edges."""
    rng = np.random.default_rng(seed)
    triples = {(i, a, b) for i in range(n) for a in range(L) for b in range(L) if a != b and rng.random() < p}
    triples -= {(i, a, b) for (i, a, b) in triples if i % 5 == 4}  # instances 4, 9: no edge
    return sorted(triples), n, L


def graphs_of(triples, n, L, shuffle_seed=0):
    order = np.random.default_rng(shuffle_seed).permutation(len(triples))
    inst, init, term = (np.array([triples[k][c] for k in order], dtype=np.int64) for c in range(3))
    return PreferenceGraphs.from_edges(inst, init, term, n_instances=n, n_labels=L)


# ------------------------------------------------------------------------------------------------ constructors
@pytest.mark.parametrize("seed", range(4))
def test_from_edges_sorts_and_keeps_every_edge(seed):
    triples, n, L = random_edges(seed)
    G = graphs_of(triples, n, L, shuffle_seed=seed)
    assert edge_set(G) == set(triples) and G.n_edges == len(triples) and G.n_labels == L
    keys = G.instance_of_edge() * L * L + G.init.astype(np.int64) * L + G.term
    assert np.all(np.diff(keys) > 0)  # canonical order: (instance, init, term)


def test_from_edges_duplicates_are_refused_or_dropped():
    inst, init, term = [0, 1, 1, 1], [0, 2, 2, 1], [1, 0, 0, 2]
    with pytest.raises(ValueError, match="instance 1 repeats the edge 2 -> 0"):
        PreferenceGraphs.from_edges(np.array(inst), np.array(init), np.array(term))
    G = PreferenceGraphs.from_edges(np.array(inst), np.array(init), np.array(term), duplicates="drop")
    assert edge_set(G) == {(0, 0, 1), (1, 2, 0), (1, 1, 2)}


@pytest.mark.parametrize("sparse", [False, True])
def test_from_relevance_and_indicator(sparse):
    rng = np.random.default_rng(1)
    R = rng.integers(0, 3, size=(15, 6))
    R[3] = 2  # one level: no edge
    G = PreferenceGraphs.from_relevance(sp.csr_matrix(R) if sparse else R)
    want = {(i, a, b) for i in range(15) for a in range(6) for b in range(6) if R[i, a] > R[i, b]}
    assert edge_set(G) == want
    Y = (R > 1).astype(int)
    Y[5] = 1
    Y[6] = 0
    G = PreferenceGraphs.from_indicator(sp.csr_matrix(Y) if sparse else Y)
    assert edge_set(G) == {(i, a, b) for i in range(15) for a in range(6) for b in range(6)
                           if Y[i, a] == 1 and Y[i, b] == 0}
    assert np.all(np.diff(G.edge_ptr)[[5, 6]] == 0)  # all relevant, none relevant: no preference


def test_from_classes():
    y = np.array([2, 0, 1, 2])
    G = PreferenceGraphs.from_classes(y, n_labels=4)
    assert edge_set(G) == {(i, int(y[i]), b) for i in range(4) for b in range(4) if b != y[i]}


def _tree_distance(parent, a, b):
    """Edges between two nodes by breadth-first search on the undirected tree."""
    adjacent = {v: set() for v in range(len(parent))}
    for v, p in enumerate(parent):
        if p >= 0:
            adjacent[v].add(p)
            adjacent[p].add(v)
    frontier, seen, dist = {a}, {a}, 0
    while b not in frontier:
        frontier = {w for v in frontier for w in adjacent[v]} - seen
        seen |= frontier
        dist += 1
    return dist


@pytest.mark.parametrize("n_layers", [2, 3, 4])
def test_from_hierarchy_layers_by_tree_distance(n_layers):
    rng = np.random.default_rng(n_layers)
    parent = [-1] + [int(rng.integers(0, v)) for v in range(1, 16)]  # a random tree, nodes in BFS-compatible order
    leaves = [v for v in range(16) if v not in parent]
    correct = (rng.random((6, len(leaves))) < 0.2).astype(int)
    correct[0] = 0  # no correct leaf: no edge
    correct[1, 0] = 1
    G = PreferenceGraphs.from_hierarchy(np.array(parent), correct, n_layers=n_layers)
    want = set()
    for i in range(6):
        if not correct[i].any():
            continue
        near = [min(_tree_distance(parent, leaf, leaves[c]) for c in np.flatnonzero(correct[i])) for leaf in leaves]
        levels = sorted(set(near))
        layer = [min(levels.index(x), n_layers - 1) for x in near]
        want |= {(i, a, b) for a in range(len(leaves)) for b in range(len(leaves)) if layer[a] < layer[b]}
    assert edge_set(G) == want and G.n_labels == len(leaves)


def test_subsets_by_index_mask_and_slice():
    triples, n, L = random_edges(7)
    G = graphs_of(triples, n, L)
    for rows in ([3, 0, 3, 11], np.arange(n) % 3 == 0, slice(2, 9, 2)):
        idx = np.arange(n)[rows]
        want = {(k, a, b) for k, i in enumerate(idx) for (j, a, b) in triples if j == i}
        sub = G[rows]
        assert sub.n_instances == idx.size and edge_set(sub) == want


@pytest.mark.parametrize("bad, match", [
    (lambda: PreferenceGraphs([0, 1], [0], [5], 3), "out of range for n_labels=3"),
    (lambda: PreferenceGraphs([0, 1], [1], [1], 3), "self-loop"),
    (lambda: PreferenceGraphs([0, 2], [1, 0], [0, 1], 3), "not sorted"),
    (lambda: PreferenceGraphs([0, 3], [0, 1], [1, 2], 3), "edge_ptr"),
    (lambda: PreferenceGraphs([0, 1], [0.5], [1.0], 3), "integer"),
    (lambda: PreferenceGraphs.from_edges(np.array([0, -1]), np.array([0, 1]), np.array([1, 0])), "non-negative"),
    (lambda: PreferenceGraphs.from_edges(np.array([0]), np.array([0, 1]), np.array([1, 0])), "one length"),
    (lambda: PreferenceGraphs.from_indicator(np.array([[0, 2]])), "0/1 indicator"),
    (lambda: PreferenceGraphs.from_relevance(np.array([[0.0, np.nan]])), "NaN"),
    (lambda: PreferenceGraphs.from_relevance(np.zeros((0, 3))), "empty"),
    (lambda: PreferenceGraphs.from_classes(np.array([0, 3]), n_labels=3), "out of range"),
    (lambda: PreferenceGraphs.from_hierarchy(np.array([-1, -1, 0]), np.ones((1, 2))), "one rooted tree"),
    (lambda: PreferenceGraphs.from_hierarchy(np.array([-1, 2, 1]), np.ones((1, 1))), "cycle"),
    (lambda: PreferenceGraphs.from_hierarchy(np.array([-1, 0, 0]), np.ones((1, 3))), "leaves"),
])
def test_bad_graphs_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


# ------------------------------------------------------------------------------------------------ decompositions
def brute_subgraphs(triples, n, decomposition):
    """Per instance, the multiset of subgraphs as sorted tuples of (init, term) pairs (section 2, Fig. 2)."""
    out = []
    for i in range(n):
        edges = sorted((a, b) for (j, a, b) in triples if j == i)
        if not edges:
            out.append([])
        elif decomposition == "zero_one":
            out.append([tuple(edges)])
        elif decomposition == "disagreement":
            out.append(sorted((e,) for e in edges))
        else:
            side = 0 if decomposition == "domination" else 1
            out.append(sorted(tuple(e for e in edges if e[side] == v) for v in sorted({e[side] for e in edges})))
    return out


def subgraphs_of(G, sub):
    out = []
    for i in range(G.n_instances):
        parts = []
        for k in range(sub.sub_ptr[i], sub.sub_ptr[i + 1]):
            members = sub.members[sub.member_ptr[k]:sub.member_ptr[k + 1]]
            assert np.all(G.instance_of_edge()[members] == i)
            parts.append(tuple(sorted((int(G.init[e]), int(G.term[e])) for e in members)))
        out.append(sorted(parts))
    return out


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS)
@pytest.mark.parametrize("seed", range(3))
def test_decompositions_equal_their_definitions(decomposition, seed):
    triples, n, L = random_edges(seed + 10)
    G = graphs_of(triples, n, L, shuffle_seed=seed)
    assert subgraphs_of(G, G.decompose(decomposition)) == brute_subgraphs(triples, n, decomposition)


def test_user_decomposition_and_its_errors():
    triples, n, L = random_edges(20)
    G = graphs_of(triples, n, L)

    def pairs(init, term, n_labels):
        return [np.array([e, e + 1]) for e in range(len(init) - 1)] or [np.arange(len(init))]

    sub = G.decompose(pairs)
    for i in range(n):
        edges = sorted((a, b) for (j, a, b) in triples if j == i)
        want = sorted(tuple(sorted(edges[e:e + 2])) for e in range(len(edges) - 1)) if len(edges) > 1 else \
            ([tuple(edges)] if edges else [])
        assert subgraphs_of(G, sub)[i] == want
    with pytest.raises(ValueError, match="out of range"):
        G.decompose(lambda init, term, L: [np.array([len(init)])])
    with pytest.raises(ValueError, match="non-empty"):
        G.decompose(lambda init, term, L: [np.array([], dtype=int)])
    with pytest.raises(ValueError, match="repeats an edge"):
        G.decompose(lambda init, term, L: [np.array([0, 0])])
    with pytest.raises(ValueError, match="decomposition must be one of"):
        G.decompose("pairs")


# ------------------------------------------------------------------------------------------------ errors
def brute_error(triples, n, S, decomposition, ties, empty):
    per = np.full(n, np.nan)
    for i, parts in enumerate(brute_subgraphs(triples, n, decomposition)):
        if not parts:
            per[i] = {"drop": np.nan, "zero": 0.0, "one": 1.0}[empty]
            continue
        bad = [any(S[i, a] <= S[i, b] if ties == "pessimistic" else S[i, a] < S[i, b] for a, b in part)
               for part in parts]
        per[i] = np.mean(bad)
    return np.nanmean(per), per


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS)
@pytest.mark.parametrize("ties", ["pessimistic", "optimistic"])
@pytest.mark.parametrize("empty", ["drop", "zero", "one"])
def test_label_ranking_errors_equal_their_definitions(decomposition, ties, empty):
    triples, n, L = random_edges(30)
    G = graphs_of(triples, n, L)
    S = np.random.default_rng(2).integers(0, 3, size=(n, L)).astype(float)  # many ties
    mean, per = label_ranking_error(G, S, decomposition, ties=ties, empty=empty, return_per_instance=True)
    want_mean, want_per = brute_error(triples, n, S, decomposition, ties, empty)
    np.testing.assert_allclose(per, want_per)
    assert mean == pytest.approx(want_mean)


@pytest.mark.parametrize("seed", range(3))
def test_disagreement_error_is_sklearn_label_ranking_loss(seed):
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 2, size=(40, 7))
    Y[0], Y[1] = 1, 0
    S = rng.integers(0, 4, size=(40, 7)).astype(float)
    assert label_ranking_error(Y, S, "disagreement", empty="zero") == pytest.approx(label_ranking_loss(Y, S))


@pytest.mark.parametrize("ties", ["pessimistic", "optimistic"])
def test_on_graded_graphs_the_errors_are_the_per_query_metrics(ties):
    """from_relevance(R) with labels as rows of a query: the per-query label-ranking metrics of cyrank.metrics."""
    rng = np.random.default_rng(4)
    R = rng.integers(0, 3, size=(20, 5)).astype(float)
    S = rng.integers(0, 3, size=(20, 5)).astype(float)
    G = PreferenceGraphs.from_relevance(R)
    qid = np.repeat(np.arange(20), 5)
    for dec, fun in (("zero_one", metrics.zero_one_error), ("disagreement", metrics.disagreement_error),
                     ("domination", metrics.domination_error), ("dominated", metrics.dominated_error)):
        assert label_ranking_error(G, S, dec, ties=ties) == pytest.approx(fun(R.ravel(), S.ravel(), qid, ties=ties))


def test_error_shape_mismatch_is_refused():
    G = PreferenceGraphs.from_classes(np.array([0, 1]), n_labels=3)
    with pytest.raises(ValueError, match="y_score has shape"):
        label_ranking_error(G, np.zeros((2, 4)))
