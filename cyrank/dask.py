"""Distributed trust-region Newton on Dask: one model on data spread over a cluster (optional extra ``dask``).

The design of distributed LIBLINEAR (Zhuang, Chin, Juan & Lin, "Distributed Newton Methods for Regularized
Logistic Regression", PAKDD 2015): the data are split by rows into partitions held by the workers; each worker
builds, on its partition, the family's public loss object (a :class:`cyrank.optim.datafit.Datafit`:
``cyrank.domination.loss``, ``cyrank.lambdarank.loss``, ...; no penalty) and keeps it in memory. On the driver
their sum is a datafit too (:class:`DistributedLoss`), minimised with the smooth penalty's ridge by the
single-machine driver :func:`cyrank.optim.datafit.minimise` (TRON); every loss and gradient evaluation and every
Hessian-vector product is one map over the partitions and one sum, the ridge added on the driver. Only vectors of
n_features floats travel per call (w, v and the partial sums).

One table, :data:`FAMILIES`, says per distributed estimator what differs: its single-machine estimator, the
family's ``loss`` builder and the parameters it takes from the estimator, the ridge, what the estimator refuses
(non-smooth penalties, other kernels), and how the stopping measure and the family's own attributes are reported
(:func:`cyrank.optim.datafit.solve_result`). One fit, :class:`DaskFitMixin`, serves every estimator.

Whole queries. The pairwise losses couple the rows of a query, so no query may be split between partitions. The
driver computes the (qid, count) pairs of every row chunk (one pass over qid, O(rows of qid) on the workers,
O(queries) to the driver), gives each query to the chunk holding most of its rows, and moves the other rows of
that query there: for LETOR-style files (rows of a query contiguous) only the queries straddling a chunk boundary
move, at most one query per boundary; for scattered query ids it is a shuffle of the scattered rows.
``rows_moved_`` reports the count. The query ids are checked as the single-machine estimators check them: a NaN
or non-integer qid is an error naming its first row, never a dropped row; the no-pair warning is given once, on
the driver. Label ranking has no queries: each row is an instance, and the row chunks are the partitions.

Failures. Every call carries the point it is made at: a partition whose state is not at that point (a worker
restarted and Dask recomputed the partition from its lineage, or the task ran on a copy) evaluates it first. So a
killed worker costs a recomputation, never a wrong model; if Dask cannot recompute (the data are gone), the fit
raises Dask's error.

The fitted estimators are plain single-machine estimators (subclasses of RankSVM, DominationRank, RankNet and
LabelRankBoost): predict, score and cyrank.io.save_model work without a cluster.
"""
import types
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from . import domination, labelrank, lambdarank, ranksvm
from ._base import remember_feature_names, set_fitted
from ._queries import QueryGroups
from ._validation import (check_qid, check_ranking_data, check_sample_weight, check_X, has_weighted_pairs,
                          warn_if_no_pairs, warn_no_preferences)
from .domination.estimator import DominationRank
from .labelrank.estimator import LabelRankBoost
from .labelrank.graphs import as_graphs
from .lambdarank.estimator import RankNet
from .optim.datafit import Datafit, minimise, solve_result
from .optim.penalties import Penalty, penalty_weights
from .ranksvm.estimator import RankSVM

__all__ = ["DaskDominationRank", "DaskFitMixin", "DaskLabelRankBoost", "DaskRankNet", "DaskRankSVM", "DistributedLoss",
           "FAMILIES", "Family", "query_partitions", "row_partitions"]


# ------------------------------------------------------------------------------------------- partitions
def _as_array(a):
    import dask.array as da

    if hasattr(a, "to_dask_array"):
        return a.to_dask_array(lengths=True)
    if not isinstance(a, da.Array):
        raise TypeError(f"expected a dask array, DataFrame or Series; got {type(a).__name__} (for in-memory "
                        "data use the single-machine estimator)")
    return a


def _as_arrays(X, y, qid=None, y_ndim=1, sample_weight=None):
    """[X, y, qid, sample_weight] as dask arrays with the same row chunks and one column chunk (dask DataFrames /
    Series are converted with their lengths computed; qid and sample_weight None when not given). ``y_ndim``: 1
    (labels) or 2 (a multilabel indicator matrix)."""
    named = [("X", _as_array(X)), ("y", _as_array(y))] + ([] if qid is None else [("qid", _as_array(qid))])
    if sample_weight is not None:
        named.append(("sample_weight", _as_array(sample_weight)))
    X, y = named[0][1], named[1][1]
    if X.ndim != 2 or y.ndim != y_ndim or any(a.ndim != 1 for _, a in named[2:]):
        if qid is None and sample_weight is None:
            raise ValueError(f"X and y must be 2-d (y an indicator matrix, one row per instance); got {X.ndim} "
                             f"and {y.ndim} dimensions")
        dims = ", ".join(f"{name} {a.ndim}" for name, a in named)
        raise ValueError(f"X must be 2-d and y, qid, sample_weight 1-d; got {dims} dimensions")
    for name, a in named:
        if np.isnan(a.shape[0]):
            raise ValueError(f"{name} has unknown chunk sizes (shape {a.shape}), as after boolean indexing; call "
                             f"{name}.compute_chunk_sizes() (or select the same rows of X, y and qid from a dask "
                             "DataFrame) before fitting")
    if any(a.shape[0] != X.shape[0] for _, a in named):
        others = " and ".join(f"{name} has {a.shape[0]} (chunks {a.chunks[0]})" for name, a in named[1:])
        each = " and one ".join(name for name, _ in named[1:])
        raise ValueError(f"X has {X.shape[0]} rows (row chunks {X.chunks[0]}) but {others}; give one {each} per "
                         "row of X (they are then rechunked like X's rows)")
    out = [X.rechunk({1: -1})]
    for _, a in named[1:]:
        chunks = (out[0].chunks[0],) + ((a.shape[1],) if a.ndim == 2 else ())
        out.append(a if a.chunks == chunks else a.rechunk(chunks))
    if qid is None:
        out.insert(2, None)
    return out + [None] * (sample_weight is None)


def _check_weights(w):
    """The single-machine check of sample_weight (cyrank._validation.check_sample_weight) on a dask vector, from
    its extremes: finite, >= 0, not all 0."""
    import dask

    low, high = dask.compute(w.min(), w.max())
    check_sample_weight(np.array([low, high], dtype=np.float64), 2)


def _query_counts(q, start=0):
    """The distinct query ids of one qid chunk (rows start, start + 1, ...) and their row counts, after the
    single-machine checks (check_qid: a NaN, infinite or non-integer id is an error, not a dropped row)."""
    q = np.asarray(q)
    if q.size:
        try:
            check_qid(q, q.size)
        except ValueError as err:
            bad = (~np.isfinite(q) | (q != np.trunc(q))) if q.dtype.kind == "f" else np.zeros(q.size, bool)
            where = f" (first at row {start + int(np.flatnonzero(bad)[0])})" if bad.any() else ""
            raise ValueError(f"{err}{where}; the single-machine estimators refuse such rows too: drop or fill them "
                             "before fitting, e.g. keep = ~da.isnan(qid) and fit on X[keep], y[keep], qid[keep] "
                             "(then .compute_chunk_sizes())") from None
    ids, counts = np.unique(q, return_counts=True)
    return ids, counts


def _rows_of_queries(ids, X, y, q, w=None):
    """The rows of one chunk (X, y, q and the weights w, if any) whose query id is in ``ids``."""
    keep = np.isin(np.asarray(q), ids)
    rows = (X[keep], np.asarray(y)[keep], np.asarray(q)[keep])
    return rows if w is None else (*rows, np.asarray(w, dtype=np.float64)[keep])


def _concat(pieces):
    Xs = [p[0] for p in pieces]
    X = sp.vstack(Xs, format="csr") if any(sp.issparse(x) for x in Xs) else np.concatenate(Xs)
    return (X, *(np.concatenate([p[k] for p in pieces]) for k in range(1, len(pieces[0]))))


def query_partitions(X, y, qid, sample_weight=None):
    """Partitions of (X, y, qid) with every query whole: (list of dask.delayed (X_p, y_p, qid_p), rows moved);
    with ``sample_weight``, the partitions are (X_p, y_p, qid_p, sample_weight_p).

    Each query goes to the row chunk that holds most of its rows; its other rows move there (module docstring).
    Chunks left without a query are dropped.
    """
    return _query_partitions(*_as_arrays(X, y, qid, sample_weight=sample_weight))


def _query_partitions(X, y, qid, sample_weight=None):
    """:func:`query_partitions` on the arrays of _as_arrays."""
    import dask
    from dask import delayed

    blocks = [a.to_delayed().ravel() for a in (X, y, qid) + (() if sample_weight is None else (sample_weight,))]
    qb = blocks[2]
    starts = np.r_[0, np.cumsum(qid.chunks[0])[:-1]]
    counts = dask.compute(*[delayed(_query_counts)(q, int(a)) for q, a in zip(qb, starts)])
    best = {}  # qid -> (rows in its best chunk, chunk)
    total = {}
    for k, (ids, cnt) in enumerate(counts):
        for q, c in zip(ids.tolist(), cnt.tolist()):
            total[q] = total.get(q, 0) + c
            if q not in best or c > best[q][0]:
                best[q] = (c, k)
    moved = sum(total[q] - best[q][0] for q in total)
    owned = {}  # chunk -> its queries
    for q, (_, k) in best.items():
        owned.setdefault(k, []).append(q)
    parts = []
    for p in sorted(owned):
        mine = np.array(sorted(owned[p]))
        pieces = []
        for k, (ids, _) in enumerate(counts):
            here = np.intersect1d(ids, mine)
            if here.size:
                pieces.append(delayed(_rows_of_queries)(here, *(b[k] for b in blocks)))
        parts.append(delayed(_concat)(pieces))
    return parts, moved


def _rows(*arrays):
    return arrays


def row_partitions(X, y, sample_weight=None):
    """Partitions of (X, y) by row chunks, for losses without queries (label ranking: y a multilabel indicator
    matrix, one row per instance): (list of dask.delayed (X_p, y_p), 0 rows moved); with ``sample_weight``,
    (X_p, y_p, sample_weight_p). Empty chunks are dropped."""
    return _row_partitions(*_as_arrays(X, y, y_ndim=2, sample_weight=sample_weight))


def _row_partitions(X, y, qid=None, sample_weight=None):
    from dask import delayed

    blocks = [a.to_delayed().ravel() for a in (X, y) + (() if sample_weight is None else (sample_weight,))]
    return [delayed(_rows)(*(b[k] for b in blocks)) for k, n in enumerate(X.chunks[0]) if n > 0], 0


# ------------------------------------------------------------------------------------------- the families
def _query_pairs(part, params):
    """Preference pairs of a ranking partition (X, y, qid[, sample_weight]), checked as the single-machine fit
    checks it (labels y > 0 with ``binary``); 0 when every pair weighs 0."""
    X, y, qid = check_ranking_data(*part[:3], accept_sparse=("csr", "csc"))
    labels = (y > 0).astype(np.float64) if params.get("binary") else y
    groups = QueryGroups(qid, labels)
    if len(part) > 3 and not has_weighted_pairs(np.asarray(part[3], dtype=np.float64), groups):
        return 0  # the weights were checked on the driver (_check_weights)
    return groups.n_pairs_possible


def _warn_no_pairs(n_pairs):
    warn_if_no_pairs(types.SimpleNamespace(n_pairs_possible=n_pairs))


def _instance_edges(part, params):
    """Preference edges of a label-ranking partition (X, Y[, sample_weight]), checked as the single-machine fit
    checks it; 0 when every instance weighs 0."""
    X = check_X(part[0], accept_sparse=("csr", "csc"))
    if len(part) > 2 and not np.any(part[2]):
        return 0  # every instance weighs 0 here (the weights were checked on the driver)
    return as_graphs(part[1], X.shape[0]).n_edges


def _smooth_only(est, what):
    """A ValueError naming the penalty when it has an l1 term (the distributed fit runs TRON: smooth only)."""
    lam1, _ = penalty_weights(est.penalty, est.alpha, est.l1_ratio)
    if lam1 > 0:
        raise ValueError(f"{type(est).__name__} minimises the smooth objective only: use penalty='l2' (or "
                         f"{what} for penalty={est.penalty!r})")


def _ranksvm_check(est):
    if est.kernel != "linear" or est.loss != "squared_hinge":
        raise ValueError("DaskRankSVM fits the linear squared-hinge rankSVM (kernel='linear', "
                         "loss='squared_hinge'); use RankSVM for the others")
    if est.penalty != "l2":
        raise ValueError(f"{type(est).__name__} minimises the l2 objective only: use penalty='l2' (or "
                         f"cyrank.RankSVM for penalty={est.penalty!r})")


def _domination_check(est):
    lam1, _ = penalty_weights(est.penalty, est.alpha, est.l1_ratio)
    if lam1 != 0 or est.feature_induction is not None or est.neg_sample is not None \
            or not est.group_by_query or est.solver not in ("auto", "newton"):
        raise ValueError("DaskDominationRank fits the smooth objective by Newton: penalty='l2' (or "
                         "'elasticnet' with l1_ratio=0), solver 'auto' or 'newton', no feature_induction or "
                         "neg_sample, group_by_query=True")


def _labelrank_check(est):
    _smooth_only(est, "cyrank.LabelRankBoost")
    if est.solver not in ("auto", "newton"):
        raise ValueError(f"{type(est).__name__} fits by Newton (solver 'auto' or 'newton'), got "
                         f"solver={est.solver!r}; use LabelRankBoost for the boosting updates")
    if penalty_weights(est.penalty, est.alpha, est.l1_ratio)[1] == 0:
        raise ValueError(f"{type(est).__name__} needs alpha > 0: with alpha=0 the objective can have no minimiser "
                         "(separable preferences), which only the single-machine LabelRankBoost detects (on the "
                         "whole data); set alpha > 0 (e.g. alpha=1e-3), or use LabelRankBoost")
    if not isinstance(est.decomposition, str):
        raise ValueError(f"{type(est).__name__} takes a named decomposition (the workers rebuild it), got "
                         f"{est.decomposition!r}")


def _labelrank_fields(run):
    """LabelRankBoost's values: coef (n_labels x n_features) from w = (coef' flattened, C order)."""
    d, L = run.n_columns, run.n_outputs
    return {"coef": np.ascontiguousarray(run.res.x[:d * L].reshape(d, L).T), "joint_coef": None,
            "solver": "newton", "n_labels": L, "n_features_in": d}


@dataclass(frozen=True)
class Family:
    """What one distributed estimator takes from its family (module docstring).

    base      the single-machine estimator it subclasses
    loss      the family's public loss builder: loss(X, y, qid, **params) (loss(X, Y, **params) without queries)
              -> a Datafit without penalty
    params    estimator -> the builder's keyword parameters
    ridge     estimator -> lam2 of the smooth penalty lam2 ||w||^2
    check     estimator -> None, or a ValueError naming what the distributed fit does not fit
    pairs     (partition, params) -> its number of preference pairs (0: the partition adds nothing)
    warn_none n_pairs -> the single-machine warning when the whole data have no pair
    measure   the reported optimality measure: "grad_norm" (||grad|| / ||grad at 0||) or "kkt_violation"
              (||grad||_inf / max_r |grad_r at 0|); the stop is the certified gap's
    fields    run -> the family's own SolveResult values (run: loss, res, nonzeros, n_columns, n_outputs)
    queries   partitions keep queries whole (False: no qid, rows are instances)
    size      (n_columns of X, n_outputs of y) -> the number of coefficients
    """

    base: type
    loss: Callable
    params: Callable
    ridge: Callable
    check: Callable
    pairs: Callable
    warn_none: Callable
    measure: str
    fields: Callable
    queries: bool = True
    size: Callable = lambda d, outputs: d


FAMILIES = {
    "DaskRankSVM": Family(
        base=RankSVM, loss=ranksvm.loss, params=lambda est: {"C": float(est.C)}, ridge=lambda est: 0.5,
        check=_ranksvm_check, pairs=_query_pairs, warn_none=_warn_no_pairs, measure="grad_norm",
        fields=lambda run: {"n_pairs": run.loss.n_pairs, "pair_weight_sum": run.loss.pair_weight_sum,
                            "n_active_pairs": run.loss.state_sum(run.res.x, "n_active")}),
    "DaskDominationRank": Family(
        base=DominationRank, loss=domination.loss, params=lambda est: {"binary": bool(est.binary)},
        ridge=lambda est: penalty_weights(est.penalty, est.alpha, est.l1_ratio)[1], check=_domination_check,
        pairs=_query_pairs, warn_none=_warn_no_pairs, measure="kkt_violation",
        fields=lambda run: {"solver": "newton", "sample_mask": None,
                            "history": {"objective": np.asarray(run.res.history["fun"][1:], dtype=np.float64),
                                        "n_nonzero": np.asarray(run.nonzeros, dtype=np.int64)}}),
    "DaskRankNet": Family(
        base=RankNet, loss=lambdarank.loss, params=lambda est: {"sigma": float(est.sigma)},
        ridge=lambda est: penalty_weights(est.penalty, est.alpha, est.l1_ratio)[1],
        check=lambda est: _smooth_only(est, "cyrank.RankNet"), pairs=_query_pairs, warn_none=_warn_no_pairs,
        measure="grad_norm", fields=lambda run: {}),
    "DaskLabelRankBoost": Family(
        base=LabelRankBoost, loss=labelrank.loss, params=lambda est: {"decomposition": est.decomposition},
        ridge=lambda est: penalty_weights(est.penalty, est.alpha, est.l1_ratio)[1], check=_labelrank_check,
        pairs=_instance_edges, warn_none=lambda n: warn_no_preferences(), measure="grad_norm",
        fields=_labelrank_fields, queries=False, size=lambda d, outputs: d * outputs),
}


# ------------------------------------------------------------------------------------------- worker side
class _NoPairs(Datafit):
    """The loss of a partition without a preference pair: 0 whatever w (the family's loss is not built: its
    layout would be empty, and it would warn on the worker)."""

    def __init__(self, d):
        self.n_features, self.n_rows = d, 0
        super().__init__()

    def column_squares(self):
        return np.zeros(self.n_features)

    def new_state(self):
        return types.SimpleNamespace(n_active=0)

    def evaluate(self, w, Mw, state):
        return self.ridge * float(w @ w), 2.0 * self.ridge * w

    def hessian_product(self, state, v, Mv):
        return 2.0 * self.ridge * v


class _Shard:
    """One partition's loss, built on the worker from its rows and kept there. Picklable from its inputs (a copy
    rebuilds the loss object when first used); ``at`` is the point of its loss object's state."""

    def __init__(self, name, part, params, size):
        self.name, self.part, self.params, self.size = name, part, params, size
        self._problem, self.at, self.n_pairs = None, None, 0

    def __getstate__(self):
        return {"name": self.name, "part": self.part, "params": self.params, "size": self.size}

    def __setstate__(self, state):
        self.__init__(state["name"], state["part"], state["params"], state["size"])

    @property
    def problem(self):
        if self._problem is None:
            family = FAMILIES[self.name]
            self.n_pairs = int(family.pairs(self.part, self.params))
            data, weights = _data_and_weights(self.part, family.queries)
            # no pair in this partition: its loss is 0 (the driver warns once if no partition has a pair)
            self._problem = family.loss(*data, **weights, **self.params) if self.n_pairs else _NoPairs(self.size)
            self.at = None
        return self._problem

    def info(self):
        problem = self.problem
        layout = getattr(problem, "layout", None)  # RankSVM's: the weighted pair count
        return {"n_features": int(problem.n_features), "n_pairs": self.n_pairs,
                "pair_weight_sum": float(getattr(layout, "pair_weight_sum", self.n_pairs)),
                "noise": float(problem.gradient_noise),
                "n_rows": float(problem.n_rows or 0)}  # label ranking: the instances' weight sum when weighted

    def column_squares(self):
        return self.problem.column_squares()

    def fun_grad(self, w):
        problem = self.problem
        f = problem.fun(w)
        g = problem.grad(w)
        self.at = w
        return f, g

    def _at(self, w):
        if self.at is None or not np.array_equal(self.at, w):  # recomputed or copied: get the state at w first
            self.fun_grad(w)

    def hess_vec(self, w, v):
        self._at(w)
        return self.problem.hess_vec(v)

    def state_value(self, w, name):
        """A number the loss's state holds at w (e.g. RankSVM's active pairs)."""
        self._at(w)
        return getattr(self.problem.state, name, 0)


def _data_and_weights(part, queries):
    """A partition's data (X, y, qid) or (X, Y), and {"sample_weight": its weights} or {} when it has none."""
    n = 3 if queries else 2
    return part[:n], ({"sample_weight": part[n]} if len(part) > n else {})


def _call(shard, method, *args):
    return getattr(shard, method)(*args)


def _build(name, part, params, size):
    shard = _Shard(name, part, params, size)
    shard.problem  # noqa: B018 - build the loss object on the worker, where the shard stays
    return shard


# ------------------------------------------------------------------------------------------- driver side
def _start(name, parts, params, size, client):
    """(shard futures, their infos): the partitions' losses built and held on the workers (DistributedLoss.build)."""
    from dask import delayed
    from distributed import wait

    shards = client.compute([delayed(_build)(name, part, params, size) for part in parts])
    wait(shards)
    infos = client.gather(client.map(_call, shards, ["info"] * len(shards), pure=False))
    return shards, infos


class DistributedLoss(Datafit):
    """sum_p loss_p(w) + ridge ||w||^2 over the shards' losses, a datafit for
    :func:`cyrank.optim.datafit.minimise`: every evaluation and Hessian product is one map over the shards, summed
    in partition order (deterministic). ``n_rows``, ``gradient_noise`` and ``n_pairs`` are the shards' sums,
    ``column_squares()`` theirs summed once (the whole data's: within whole queries for the pairwise losses,
    uncentred sums over instances for label ranking). Made by :meth:`build`; :meth:`release` frees the shards on the workers."""

    def __init__(self, client, shards, infos, size):
        self.client, self.shards = client, shards
        self.n_features = int(size)
        self.n_partitions = len(infos)
        self.n_rows = sum(i["n_rows"] for i in infos)
        self.n_pairs = sum(i["n_pairs"] for i in infos)
        self.pair_weight_sum = sum(i["pair_weight_sum"] for i in infos)
        self.gradient_noise = float(sum(i["noise"] for i in infos))
        self.n_calls = 0
        self.rows_moved = 0
        self._squares = None
        super().__init__()

    @classmethod
    def build(cls, name, X, y, qid=None, *, params, client=None, sample_weight=None):
        """The losses of the family ``name`` (a key of :data:`FAMILIES`) with the builder's ``params`` on the
        partitions of (X, y, qid) and the ``sample_weight`` of their rows (:func:`query_partitions`, or
        :func:`row_partitions` for a family without queries), built and held on the workers of ``client``
        (default: the current one). Sets ``rows_moved``, ``n_columns`` (X's) and ``n_outputs`` (y's columns; 1 for
        labels)."""
        from distributed import get_client

        family = FAMILIES[name]
        arrays = _as_arrays(X, y, qid, y_ndim=1 if family.queries else 2, sample_weight=sample_weight)
        if sample_weight is not None:
            _check_weights(arrays[3])
        parts, moved = _query_partitions(*arrays) if family.queries else _row_partitions(*arrays)
        if not parts:
            raise ValueError("no rows to fit")
        d, n_outputs = int(arrays[0].shape[1]), int(arrays[1].shape[1]) if arrays[1].ndim == 2 else 1
        size = family.size(d, n_outputs)
        client = client or get_client()
        shards, infos = _start(name, parts, params, size, client)
        loss = cls(client, shards, infos, size)
        loss.rows_moved, loss.n_columns, loss.n_outputs = int(moved), d, n_outputs
        return loss

    def release(self):
        """Free the shards held on the workers."""
        for f in self.shards:
            f.release()

    def map(self, method, *args):
        """[shard.method(*args) for every shard], run where the shards are."""
        self.n_calls += 1
        futures = self.client.map(_call, self.shards, *[[a] * len(self.shards) for a in (method, *args)],
                                  pure=False)
        return self.client.gather(futures)

    def column_squares(self):
        if self._squares is None:
            self._squares = np.sum(self.map("column_squares"), axis=0)
        return self._squares

    def state_sum(self, w, name):
        """The sum over the shards of a number their states hold at w."""
        return sum(self.map("state_value", np.asarray(w), name))

    def new_state(self):
        return {"x": None}

    def evaluate(self, w, Mw, state):
        parts = self.map("fun_grad", w)
        f = float(sum(p[0] for p in parts))
        g = np.sum([p[1] for p in parts], axis=0) if parts else np.zeros(self.n_features)
        state["x"] = np.array(w, copy=True)
        return f + self.ridge * float(w @ w), g + 2.0 * self.ridge * w

    def hessian_product(self, state, v, Mv):
        parts = self.map("hess_vec", state["x"], np.ascontiguousarray(v))
        return np.sum(parts, axis=0) + 2.0 * self.ridge * v


class DaskFitMixin:
    """The one distributed fit of every Dask estimator: its family's entry in :data:`FAMILIES` (``_family``, the
    estimator's name there) says what to build and report.

    ``fit(X, y, qid=None, client=None, callback=None, sample_weight=None)``: X, y, qid (and sample_weight) are dask
    arrays with row chunks (or a dask DataFrame and Series; y a 2-d indicator array and no qid for label ranking);
    ``client`` the distributed Client (default: the current one); ``callback(w)`` is called on the driver after
    every Newton iteration; ``sample_weight`` weighs the rows as in the single-machine fit. Sets the
    single-machine estimator's fitted attributes plus ``n_partitions_``, ``rows_moved_`` (rows moved to keep
    queries whole) and ``n_distributed_calls_``."""

    _family = None

    def _check_params(self):
        out = super()._check_params()
        FAMILIES[self._family].check(self)
        return out

    def fit(self, X, y, qid=None, client=None, callback=None, sample_weight=None):
        """Fit on dask collections (class docstring)."""
        name = type(self).__name__
        family = FAMILIES[self._family]
        self._check_params()
        if family.queries and qid is None:
            raise ValueError(f"{name} needs qid: queries are what the partitions keep whole")
        if not family.queries and qid is not None:
            raise ValueError(f"{name} has no queries (each row is an instance); call fit(X, y, client=client)")
        params, ridge = family.params(self), float(family.ridge(self))
        loss = DistributedLoss.build(self._family, X, y, qid, params=params, client=client,
                                     sample_weight=sample_weight)
        try:
            if loss.n_pairs == 0:
                family.warn_none(0)
            nonzeros = []

            def record(w):  # the non-zeros after each iteration (DominationRank's history), then the user's
                nonzeros.append(int(np.count_nonzero(w)))
                if callback is not None:
                    callback(w)

            res = minimise(loss, Penalty(0.0, ridge), tol=float(self.tol), max_iter=int(self.max_iter),
                           verbose=self.verbose, name=name, callback=record,
                           grad_scale="max" if family.measure == "kkt_violation" else "l2")
            run = types.SimpleNamespace(loss=loss, res=res, nonzeros=nonzeros, n_columns=loss.n_columns,
                                        n_outputs=loss.n_outputs)
            result = solve_result(res, loss, measure=family.measure, **family.fields(run))
        finally:
            loss.release()
        self.n_partitions_ = loss.n_partitions
        self.rows_moved_ = loss.rows_moved
        self.n_distributed_calls_ = loss.n_calls
        remember_feature_names(self, X)
        return set_fitted(self, result)


_DASK_SCHEMA = {"n_partitions_": "int>=1?", "rows_moved_": "int>=0?", "n_distributed_calls_": "int>=0?"}


class DaskRankSVM(DaskFitMixin, RankSVM):
    """:class:`cyrank.RankSVM` (linear, squared hinge) fitted on Dask collections by distributed TRON.

    ``fit(X, y, qid, client=None, callback=None)``: X, y, qid are dask arrays with row chunks (or a dask DataFrame
    and Series); ``client`` the distributed Client (default: the current one); ``callback(w)`` is called on the
    driver after every Newton iteration. The same objective, stopping rule and fitted attributes as RankSVM, plus
    ``n_partitions_``, ``rows_moved_`` (rows moved to keep queries whole) and ``n_distributed_calls_``.
    """

    _family = "DaskRankSVM"
    _model_schema = {**RankSVM._model_schema, **_DASK_SCHEMA}


class DaskDominationRank(DaskFitMixin, DominationRank):
    """:class:`cyrank.DominationRank` with a smooth penalty (l2, or elasticnet with l1_ratio = 0) fitted on Dask
    collections by distributed TRON (the single-machine ``solver="newton"``): same objective, stopping rule
    (KKT violation <= tol) and attributes, plus ``n_partitions_``, ``rows_moved_`` and ``n_distributed_calls_``.
    ``fit(X, y, qid, client=None, callback=None)`` as :class:`DaskRankSVM`. No offsets, sampling or feature
    induction; group_by_query must be True.
    """

    _family = "DaskDominationRank"
    _model_schema = {**DominationRank._model_schema, **_DASK_SCHEMA}


class DaskRankNet(DaskFitMixin, RankNet):
    """:class:`cyrank.RankNet` (linear, convex) fitted on Dask collections by distributed TRON: same objective,
    stopping rule (the certified gap <= tol max(1, |objective|)) and attributes, plus ``n_partitions_``, ``rows_moved_`` and
    ``n_distributed_calls_``. ``fit(X, y, qid, client=None, callback=None)`` as :class:`DaskRankSVM`."""

    _family = "DaskRankNet"
    _model_schema = {**RankNet._model_schema, **_DASK_SCHEMA}


class DaskLabelRankBoost(DaskFitMixin, LabelRankBoost):
    """:class:`cyrank.LabelRankBoost` (Newton, smooth penalty with alpha > 0, no joint features) fitted on Dask
    collections by distributed TRON: the same objective, stopping rule (the certified gap <= tol max(1,
    |objective|)) and attributes, plus ``n_partitions_``, ``rows_moved_`` (always 0) and ``n_distributed_calls_``.

    ``fit(X, y, client=None, callback=None)``: X a dask array of instances (rows), y a dask multilabel indicator
    array (n_instances x n_labels, 0/1: every relevant label preferred to every irrelevant one), row-chunked like
    X (rechunked if not); instances have no queries, so each row chunk is a partition. The default alpha is 1e-3,
    not LabelRankBoost's 0: alpha = 0 is refused (the objective can then have no minimiser, which only the
    single-machine fit detects, on the whole data)."""

    _family = "DaskLabelRankBoost"
    _model_schema = {**LabelRankBoost._model_schema, **_DASK_SCHEMA}

    def __init__(self, decomposition="domination", solver="auto", alpha=1e-3, penalty="l2", l1_ratio=0.5,
                 max_iter=1000, tol=1e-6, verbose=0):
        super().__init__(decomposition=decomposition, solver=solver, alpha=alpha, penalty=penalty,
                         l1_ratio=l1_ratio, max_iter=max_iter, tol=tol, verbose=verbose)
