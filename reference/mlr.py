"""MLR (McFee & Lanckriet, ICML 2010: tr(W) + C xi over PSD W) solved exactly as a semidefinite programme, on tiny data.

Conventions are those of :class:`cyrank.MLR` (see cyrank/mlr/estimator.py), re-implemented here from the
definitions without any of its code:

* query q, relevant set R_q, irrelevant set N_q (P, N points); phi(q, i) = -(x_q - x_i)(x_q - x_i)';
* for a ranking y of R_q u N_q: psi(q, y*) - psi(q, y) = (2 / (P N)) sum_{i in R_q, j in N_q, j before i}
  (phi(q, i) - phi(q, j));
* Delta = Score(y*) - Score(y): AUC, Prec@k (denominator k), AP, RR, NDCG@k (binary gains, D(1) = 1,
  D(p) = 1/log2(p), ideal-DCG normaliser) and the binary kNN score 1[more than k/2 of the top k relevant];
* objective  R(W) + (C/m) sum_q max(0, max_y Delta_q(y) - <W, psi(q, y*) - psi(q, y)>), m active queries,
  R = tr(W) (W PSD), 0.5 ||W||_F^2 (W PSD) or sum(w) (W = diag(w), w >= 0);
* query weights ``sample_weight`` (v_q, one per point): (C/m) sum_q becomes C sum_q v_q (.) / sum_q v_q over the
  active queries; ``queries``: the list of queries the mean runs over, a query listed twice counted twice (the
  points stay once in the database), so that v_q = 2 and query q listed twice are the same problem.

:func:`solve` enumerates *every* permutation of every query's points (so (P + N)! per query: keep
P + N <= 7), keeps the distinct constraints and solves the resulting SDP with Clarabel (status checked);
:func:`solve_restricted` solves the restricted problem over a given working set of batches (Delta_t, Psi_t),
which is what the fast inner solver must reproduce.
"""
import itertools
import math

import cvxpy as cp
import numpy as np

from ._solve import solve_problem

LOSSES = ("auc", "prec@k", "map", "mrr", "ndcg", "knn")
REGULARIZERS = ("trace", "frobenius", "diagonal")


def _discount(p):
    return 1.0 if p <= 2 else 1.0 / math.log2(p)


def delta(loss, relevant, k=3):
    """Delta(y*, y) of a ranking given as the booleans ``relevant`` in ranked order (best first)."""
    rel = [bool(r) for r in relevant]
    P = sum(rel)
    N = len(rel) - P
    top = sum(rel[:k])
    if loss == "auc":
        swapped, irr_seen = 0, 0
        for r in rel:
            if r:
                swapped += irr_seen
            else:
                irr_seen += 1
        return swapped / (P * N)
    if loss == "prec@k":
        return (min(k, P) - top) / k
    if loss == "knn":
        return float(2 * min(k, P) > k) - float(2 * top > k)
    if loss == "map":
        hits, ap = 0, 0.0
        for pos, r in enumerate(rel, 1):
            if r:
                hits += 1
                ap += hits / pos
        return 1.0 - ap / P
    if loss == "mrr":
        return 1.0 - 1.0 / (rel.index(True) + 1)
    if loss == "ndcg":
        ideal = sum(_discount(p) for p in range(1, min(k, P) + 1))
        return 1.0 - sum(_discount(p) for p, r in enumerate(rel[:k], 1) if r) / ideal
    raise ValueError(f"unknown loss {loss!r}")


def query_constraints(P, N, loss, k=3):
    """Every distinct constraint of a query with P relevant and N irrelevant points.

    Returns ``(deltas, coef)``: coef[c] holds the coefficients a of psi(y*) - psi(y) = sum_i a_i phi(q, i) over
    the query's points (relevant first, then irrelevant), for every permutation y (duplicates removed).
    """
    seen = {}
    s = 2.0 / (P * N)
    for perm in itertools.permutations(range(P + N)):
        rel = [i < P for i in perm]
        a = [0.0] * (P + N)
        irr_before = 0
        for i in perm:
            if i < P:
                a[i] += s * irr_before
            else:
                irr_before += 1
        rel_after = P
        for i in perm:
            if i < P:
                rel_after -= 1
            else:
                a[i] -= s * rel_after
        key = tuple(np.round(a, 12))
        if key not in seen:
            seen[key] = (delta(loss, rel, k), a)
    deltas = np.array([v[0] for v in seen.values()])
    coef = np.array([v[1] for v in seen.values()])
    return deltas, coef


def _query_sets(n, y, relevance, irrelevant, queries=None):
    if (y is None) == (relevance is None):
        raise ValueError("pass exactly one of y and relevance")
    sets = []
    for q in (range(n) if queries is None else queries):
        if y is not None:
            rel = [i for i in range(n) if i != q and y[i] == y[q]]
            irr = [i for i in range(n) if y[i] != y[q]]
        else:
            rel = list(relevance[q])
            irr = list(irrelevant[q]) if irrelevant is not None else [
                i for i in range(n) if i != q and i not in set(rel)]
        if rel and irr:
            sets.append((q, rel, irr))
    return sets


def enumerate_constraints(X, y=None, *, relevance=None, irrelevant=None, loss="auc", k=3, queries=None):
    """All constraints of all active queries (of ``queries``, default every point, repeats kept):
    ``(query_of_row, deltas, dpsi)`` with dpsi (K, d, d) the matrices psi(q, y*) - psi(q, y), and the number m of
    active queries."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    rows_q, all_deltas, all_dpsi = [], [], []
    sets = _query_sets(n, None if y is None else list(y), relevance, irrelevant, queries)
    for qi, (q, rel, irr) in enumerate(sets):
        deltas, coef = query_constraints(len(rel), len(irr), loss, k)
        pts = X[rel + irr]
        diffs = X[q] - pts                                           # (P + N, d)
        phis = -np.einsum("ia,ib->iab", diffs, diffs)                 # phi(q, i)
        all_dpsi.append(np.einsum("ci,iab->cab", coef, phis))
        all_deltas.append(deltas)
        rows_q.append(np.full(len(deltas), qi))
    return np.concatenate(rows_q), np.concatenate(all_deltas), np.concatenate(all_dpsi), len(sets)


def _active_query_weights(X, y, relevance, irrelevant, queries, sample_weight):
    """The weight of each active query, in the order of enumerate_constraints (ones without sample_weight)."""
    n = np.asarray(X).shape[0]
    sets = _query_sets(n, None if y is None else list(y), relevance, irrelevant, queries)
    if sample_weight is None:
        return np.ones(len(sets))
    v = np.asarray(sample_weight, dtype=np.float64).ravel()
    return np.array([v[q] for q, _, _ in sets])


def _regularizer(W, regularizer):
    if regularizer == "trace":
        return cp.trace(W)
    if regularizer == "frobenius":
        return 0.5 * cp.sum_squares(W)
    return cp.sum(W)


def _variable(d, regularizer):
    if regularizer == "diagonal":
        return cp.Variable(d, nonneg=True)
    return cp.Variable((d, d), PSD=True)


def _margins(W, dpsi, regularizer):
    K = dpsi.shape[0]
    if regularizer == "diagonal":
        return np.einsum("kaa->ka", dpsi) @ W
    return dpsi.reshape(K, -1) @ cp.vec(W, order="F")


def objective(W, X, y=None, *, relevance=None, irrelevant=None, loss="auc", k=3, C=1.0, regularizer="trace",
              sample_weight=None, queries=None):
    """The exact MLR objective at a given W (d x d), by enumeration (module docstring: ``sample_weight``,
    ``queries``)."""
    rows_q, deltas, dpsi, m = enumerate_constraints(X, y, relevance=relevance, irrelevant=irrelevant, loss=loss, k=k,
                                                    queries=queries)
    v = _active_query_weights(X, y, relevance, irrelevant, queries, sample_weight)
    W = np.asarray(W, dtype=np.float64)
    viol = deltas - dpsi.reshape(len(deltas), -1) @ W.ravel()
    xi = np.zeros(m)
    np.maximum.at(xi, rows_q, viol)
    R = {"trace": np.trace(W), "frobenius": 0.5 * np.sum(W * W), "diagonal": np.trace(W)}[regularizer]
    return float(R + C * float(v @ xi) / float(v.sum()))


def solve(X, y=None, *, relevance=None, irrelevant=None, loss="auc", k=3, C=1.0, regularizer="trace",
          sample_weight=None, queries=None, **options):
    """The exact optimum of the full MLR problem (every ranking of every query enumerated; ``sample_weight``,
    ``queries``: module docstring).

    Returns a :class:`reference.Solution` with ``objective`` and variables "W" (d x d; diagonal matrix for
    "diagonal") and "xi" (per active query).
    """
    if loss not in LOSSES or regularizer not in REGULARIZERS:
        raise ValueError("unknown loss or regularizer")
    X = np.asarray(X, dtype=np.float64)
    rows_q, deltas, dpsi, m = enumerate_constraints(X, y, relevance=relevance, irrelevant=irrelevant, loss=loss, k=k,
                                                    queries=queries)
    v = _active_query_weights(X, y, relevance, irrelevant, queries, sample_weight)
    d = X.shape[1]
    W = _variable(d, regularizer)
    xi = cp.Variable(m, nonneg=True)
    cons = [xi[rows_q] >= deltas - _margins(W, dpsi, regularizer)]
    prob = cp.Problem(cp.Minimize(_regularizer(W, regularizer) + C * (v / v.sum()) @ xi), cons)
    sol = solve_problem(prob, {"W": W, "xi": xi}, **options)
    if regularizer == "diagonal":
        sol.variables["W"] = np.diag(sol.variables["W"])
    return sol


def solve_restricted(deltas, psis, C=1.0, regularizer="trace", **options):
    """min R(W) + C xi s.t. xi >= Delta_t - <W, Psi_t> (t = 1..T), xi >= 0, W PSD (or diagonal >= 0).

    ``psis``: (T, d, d) batch matrices. Returns a :class:`reference.Solution` with "W" (d x d) and "xi".
    """
    deltas = np.asarray(deltas, dtype=np.float64)
    psis = np.asarray(psis, dtype=np.float64)
    d = psis.shape[1]
    W = _variable(d, regularizer)
    xi = cp.Variable(nonneg=True)
    prob = cp.Problem(cp.Minimize(_regularizer(W, regularizer) + C * xi),
                      [xi >= deltas - _margins(W, psis, regularizer)])
    sol = solve_problem(prob, {"W": W, "xi": xi}, **options)
    if regularizer == "diagonal":
        sol.variables["W"] = np.diag(sol.variables["W"])
    return sol
