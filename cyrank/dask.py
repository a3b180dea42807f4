"""Distributed trust-region Newton on Dask: one model on data spread over a cluster (optional extra ``dask``).

The design of distributed LIBLINEAR (Zhuang, Chin, Juan & Lin, "Distributed Newton Methods for Regularized
Logistic Regression", PAKDD 2015): the data are split by rows into partitions held by the workers; each worker
builds, through the functional layer, the same loss object the single-machine solver uses, on its partition
(``cyrank.ranksvm.problems.LinearSquaredHinge`` without the regulariser; ``cyrank.domination.solver._NewtonProblem``
with lam2 = 0; ``cyrank.lambdarank.solver._RankNetProblem`` with alpha = 0), and keeps it in memory. The driver
runs the shared :func:`cyrank.optim.tron.tron`; every loss and gradient evaluation and every Hessian-vector
product is one map over the partitions and one sum, with the regulariser added on the driver. Only vectors of n_features floats travel per call (w, v and the partial sums).

Whole queries. The pairwise losses couple the rows of a query, so no query may be split between partitions. The
driver computes the (qid, count) pairs of every row chunk (one pass over qid, O(rows of qid) on the workers,
O(queries) to the driver), gives each query to the chunk holding most of its rows, and moves the other rows of
that query there: for LETOR-style files (rows of a query contiguous) only the queries straddling a chunk boundary
move, at most one query per boundary; for scattered query ids it is a shuffle of the scattered rows.
``rows_moved_`` reports the count. The query ids are checked as the single-machine estimators check them: a NaN
or non-integer qid is an error naming its first row, never a dropped row; the no-pair warning is given once, on the driver.

Failures. Every call carries the point it is made at: a partition whose state is not at that point (a worker
restarted and Dask recomputed the partition from its lineage, or the task ran on a copy) evaluates it first. So a
killed worker costs a recomputation, never a wrong model; if Dask cannot recompute (the data are gone), the fit
raises Dask's error.

The fitted estimators are plain single-machine estimators (subclasses of RankSVM, DominationRank and RankNet):
predict, score and cyrank.io.save_model work without a cluster.
"""
import types

import numpy as np
import scipy.sparse as sp

from ._queries import QueryGroups
from .domination import solver as _dsolver
from .domination.estimator import DominationRank
from .lambdarank import solver as _lsolver
from .lambdarank.estimator import RankNet
from .io import register_model
from .optim.certificate import group_column_squares, jacobi_diagonal
from .optim.smooth import SmoothProblem
from .optim.tron import tron
from .ranksvm.estimator import RankSVM
from .ranksvm.problems import LinearSquaredHinge, make_layout
from ._base import set_fitted
from ._result import SolveResult
from ._validation import check_qid, check_ranking_data, warn_if_no_pairs

__all__ = ["DaskRankSVM", "DaskDominationRank", "DaskRankNet", "query_partitions"]


# ------------------------------------------------------------------------------------------- partitions
def _as_arrays(X, y, qid):
    """X, y, qid as dask arrays with the same row chunks and one column chunk (dask DataFrames / Series are
    converted with their lengths computed)."""
    import dask.array as da

    def arr(a):
        if hasattr(a, "to_dask_array"):
            return a.to_dask_array(lengths=True)
        if not isinstance(a, da.Array):
            raise TypeError(f"expected a dask array, DataFrame or Series; got {type(a).__name__} (for in-memory "
                            "data use the single-machine estimator)")
        return a

    X, y, qid = arr(X), arr(y), arr(qid)
    if X.ndim != 2 or y.ndim != 1 or qid.ndim != 1:
        raise ValueError(f"X must be 2-d and y, qid 1-d; got {X.ndim}, {y.ndim}, {qid.ndim} dimensions")
    for name, a in (("X", X), ("y", y), ("qid", qid)):
        if np.isnan(a.shape[0]):
            raise ValueError(f"{name} has unknown chunk sizes (shape {a.shape}), as after boolean indexing; call "
                             f"{name}.compute_chunk_sizes() (or select the same rows of X, y and qid from a dask "
                             "DataFrame) before fitting")
    if not X.shape[0] == y.shape[0] == qid.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows (row chunks {X.chunks[0]}) but y has {y.shape[0]} (chunks "
                         f"{y.chunks[0]}) and qid {qid.shape[0]} (chunks {qid.chunks[0]}); give one y and one qid "
                         "per row of X (y and qid are then rechunked like X's rows)")
    X = X.rechunk({1: -1})
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    if qid.chunks[0] != X.chunks[0]:
        qid = qid.rechunk((X.chunks[0],))
    return X, y, qid


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


def _rows_of_queries(X, y, q, ids):
    keep = np.isin(np.asarray(q), ids)
    return X[keep], np.asarray(y)[keep], np.asarray(q)[keep]


def _concat(pieces):
    Xs = [p[0] for p in pieces]
    X = sp.vstack(Xs, format="csr") if any(sp.issparse(x) for x in Xs) else np.concatenate(Xs)
    return X, np.concatenate([p[1] for p in pieces]), np.concatenate([p[2] for p in pieces])


def query_partitions(X, y, qid):
    """Partitions of (X, y, qid) with every query whole: (list of dask.delayed (X_p, y_p, qid_p), rows moved).

    Each query goes to the row chunk that holds most of its rows; its other rows move there (module docstring).
    Chunks left without a query are dropped.
    """
    import dask
    from dask import delayed

    X, y, qid = _as_arrays(X, y, qid)
    Xb, yb, qb = X.to_delayed().ravel(), y.to_delayed().ravel(), qid.to_delayed().ravel()
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
                pieces.append(delayed(_rows_of_queries)(Xb[k], yb[k], qb[k], here))
        parts.append(delayed(_concat)(pieces))
    return parts, moved


# ------------------------------------------------------------------------------------------- worker side
class _Shard:
    """One partition's loss, built on the worker from its rows and kept there. Picklable from its inputs (a copy
    rebuilds the loss object when first used); ``at`` is the point of its loss object's state."""

    def __init__(self, kind, part, params):
        self.kind, self.part, self.params = kind, part, params
        self._problem, self.at, self.n_pairs = None, None, 0

    def __getstate__(self):
        return {"kind": self.kind, "part": self.part, "params": self.params}

    def __setstate__(self, state):
        self.__init__(state["kind"], state["part"], state["params"])

    @property
    def problem(self):
        if self._problem is None:
            X, y, qid = self.part
            X, y, qid = check_ranking_data(X, y, qid, accept_sparse=("csr", "csc"))
            labels = (y > 0).astype(np.float64) if self.kind == "domination" and self.params["binary"] else y
            self.n_pairs = QueryGroups(qid, labels).n_pairs_possible
            if self.n_pairs == 0 and self.kind != "ranknet":
                # no pair in this partition: its loss is 0 (the driver warns once if no partition has a pair)
                self._problem, self.squares, self.noise = _NoPairs(X.shape[1]), np.zeros(X.shape[1]), 0.0
            elif self.kind == "ranksvm":
                layout, _ = make_layout(y, qid)
                self._problem = LinearSquaredHinge(X, layout, self.params["C"], regularize=False)
                self.squares = group_column_squares(X, layout.offsets, layout.rows)
            elif self.kind == "ranknet":
                pairs = _lsolver._Pairs(y, qid, sigma=self.params["sigma"])
                Xs = X.tocsr()[pairs.order] if sp.issparse(X) else np.ascontiguousarray(X[pairs.order])
                self._problem = _lsolver._RankNetProblem(Xs, pairs, 0.0)
                self.squares = group_column_squares(Xs, pairs.offsets)
            else:
                layout, _ = _dsolver._layout(y, qid, np.zeros(y.shape[0]), binary=self.params["binary"],
                                             group_by_query=True)
                rows = _dsolver._rows_of(X, layout.rows)
                self._problem = _dsolver._NewtonProblem(rows, layout, 0.0, X.shape[1])
                self.squares = group_column_squares(X, layout.lay_ptr[layout.q_ptr], layout.rows)
                # this partition's bound on the rounding error of its gradient (their sum bounds the total's)
                self.noise = _dsolver._gradient_rounding(X, layout, 0.0)
            self.at = None
        return self._problem

    def info(self):
        self.problem  # noqa: B018 - built (and n_pairs, noise known) before reporting
        return {"n_features": int(self.part[0].shape[1]), "n_pairs": int(self.n_pairs),
                "noise": float(getattr(self, "noise", 0.0)), "n_rows": int(self.part[0].shape[0])}

    def column_squares(self):
        """The within-query centred column squares (cyrank.optim.certificate.group_column_squares)."""
        self.problem  # noqa: B018 - built with them
        return self.squares

    def fun_grad(self, w):
        problem = self.problem
        f = problem.fun(w)
        g = problem.grad(w)
        self.at = w
        return f, g

    def hess_vec(self, w, v):
        if self.at is None or not np.array_equal(self.at, w):  # recomputed or copied: get the state at w first
            self.fun_grad(w)
        return self.problem.hess_vec(v)

    def n_active(self):
        return int(getattr(self.problem.state, "n_active", 0))


class _NoPairs:
    """The loss of a partition without a preference pair: 0 whatever w (RankSVM's and DominationRank's layouts
    would be empty, and would warn on the worker)."""

    def __init__(self, d):
        self.d = d
        self.state = types.SimpleNamespace(n_active=0)

    def fun(self, w):
        return 0.0

    def grad(self, w):
        return np.zeros(self.d)

    def hess_vec(self, v):
        return np.zeros(self.d)


def _call(shard, method, *args):
    return getattr(shard, method)(*args)


def _build(kind, part, params):
    shard = _Shard(kind, part, params)
    shard.problem  # noqa: B018 - build the loss object on the worker, where the shard stays
    return shard


# ------------------------------------------------------------------------------------------- driver side
class _DistributedLoss(SmoothProblem):
    """sum_p loss_p(w) + reg w'w for TRON: every evaluation and Hessian product one map over the shards, summed
    in partition order (deterministic)."""

    def __init__(self, client, shards, d, reg):
        self.client, self.shards, self.d, self.reg = client, shards, d, reg
        self.n_calls = 0
        super().__init__()

    def _map(self, method, *args):
        self.n_calls += 1
        futures = self.client.map(_call, self.shards, *[[a] * len(self.shards) for a in (method, *args)],
                                  pure=False)
        return self.client.gather(futures)

    def new_state(self):
        return {"x": None}

    def evaluate(self, w, Mw, state):
        parts = self._map("fun_grad", w)
        f = float(sum(p[0] for p in parts))
        g = np.sum([p[1] for p in parts], axis=0) if parts else np.zeros(self.d)
        state["x"] = np.array(w, copy=True)
        return f + self.reg * float(w @ w), g + 2.0 * self.reg * w

    def hessian_product(self, state, v, Mv):
        parts = self._map("hess_vec", state["x"], np.ascontiguousarray(v))
        return np.sum(parts, axis=0) + 2.0 * self.reg * v


def _start(kind, X, y, qid, params, client):
    """(client, shard futures, their infos, rows moved): the partitions built and held on the workers."""
    from dask import delayed
    from distributed import get_client, wait

    client = client or get_client()
    parts, moved = query_partitions(X, y, qid)
    if not parts:
        raise ValueError("no rows to fit")
    shards = client.compute([delayed(_build)(kind, part, params) for part in parts])
    wait(shards)
    infos = client.gather(client.map(_call, shards, ["info"] * len(shards), pure=False))
    return client, shards, infos, moved


class _DaskFitMixin:
    def _distributed_tron(self, kind, X, y, qid, params, reg, tol, max_iter, client, callback, grad_norm0=None):
        client, shards, infos, moved = _start(kind, X, y, qid, params, client)
        warn_if_no_pairs(types.SimpleNamespace(n_pairs_possible=sum(i["n_pairs"] for i in infos)))
        try:
            d = infos[0]["n_features"]
            problem = _DistributedLoss(client, shards, d, reg)
            if grad_norm0 == "max":  # DominationRank's scale: max_r |dL/dw_r| at 0
                _, g0 = problem.evaluate(np.zeros(d), None, problem.new_state())
                grad_norm0 = float(np.max(np.abs(g0), initial=0.0))
            nonzeros = []

            def record(w):  # the non-zeros after each iteration (DominationRank's history), then the user's
                nonzeros.append(int(np.count_nonzero(w)))
                if callback is not None:
                    callback(w)

            def precond(x):  # the Jacobi diagonal of the summed column scales, asked for as the single-machine fits
                problem.fun(x)
                problem.grad(x)
                squares = np.sum(problem._map("column_squares"), axis=0)
                return jacobi_diagonal(problem.hess_vec, squares, 2.0 * reg, n_rows=sum(i["n_rows"] for i in infos))

            zero = np.zeros(d)
            res = tron(problem, zero, tol=tol, max_iter=max_iter, grad_norm0=grad_norm0, callback=record,
                       verbose=self.verbose, name=type(self).__name__, precond=precond, gap_tol=tol,
                       strong_convexity=2.0 * reg)
            res.history["n_nonzero"] = nonzeros
            if kind == "ranksvm":
                extra = {"n_active": sum(client.gather(client.map(_call, shards, ["n_active"] * len(shards),
                                                                  pure=False)))}
            else:  # the exact objective and gradient at the returned point, as the single-machine solver reports
                f, g = problem.evaluate(res.x, None, problem.new_state())
                extra = {"objective": f, "grad": g}
        finally:
            for f in shards:
                f.release()
        self.n_partitions_ = len(infos)
        self.rows_moved_ = int(moved)
        self.n_distributed_calls_ = problem.n_calls
        return res, infos, extra


@register_model
class DaskRankSVM(_DaskFitMixin, RankSVM):
    """:class:`cyrank.RankSVM` (linear, squared hinge) fitted on Dask collections by distributed TRON.

    ``fit(X, y, qid, client=None, callback=None)``: X, y, qid are dask arrays with row chunks (or a dask DataFrame
    and Series); ``client`` the distributed Client (default: the current one); ``callback(w)`` is called on the
    driver after every Newton iteration. The same objective, stopping rule and fitted attributes as RankSVM, plus
    ``n_partitions_``, ``rows_moved_`` (rows moved to keep queries whole) and ``n_distributed_calls_``.
    """

    _model_schema = {**RankSVM._model_schema, "n_partitions_": "int>=1?", "rows_moved_": "int>=0?",
                     "n_distributed_calls_": "int>=0?"}

    def fit(self, X, y, qid=None, client=None, callback=None):
        self._check_params()
        if self.kernel != "linear" or self.loss != "squared_hinge":
            raise ValueError("DaskRankSVM fits the linear squared-hinge rankSVM (kernel='linear', "
                             "loss='squared_hinge'); use RankSVM for the others")
        if qid is None:
            raise ValueError("DaskRankSVM needs qid: queries are what the partitions keep whole")
        res, infos, extra = self._distributed_tron("ranksvm", X, y, qid, {"C": float(self.C)}, 0.5, self.tol,
                                                   self.max_iter, client, callback)
        result = SolveResult(coef=res.x, objective=float(res.objective), n_active_pairs=int(extra["n_active"]),
                             n_features_in=infos[0]["n_features"], n_pairs=sum(i["n_pairs"] for i in infos),
                             n_iter=int(res.n_iter), n_cg_iter=int(res.n_inner), grad_norm=float(res.optimality),
                             converged=bool(res.converged), gap=float(res.gap), gap_kind=res.gap_kind,
                             optimality_name="grad_norm", message=res.message)
        return set_fitted(self, result)


@register_model
class DaskDominationRank(_DaskFitMixin, DominationRank):
    """:class:`cyrank.DominationRank` with a smooth penalty (l2, or elasticnet with l1_ratio = 0) fitted on Dask
    collections by distributed TRON (the single-machine ``solver="newton"``): same objective, stopping rule
    (KKT violation <= tol) and attributes, plus ``n_partitions_``, ``rows_moved_`` and ``n_distributed_calls_``.
    ``fit(X, y, qid, client=None, callback=None)`` as :class:`DaskRankSVM`. No offsets, sampling or feature
    induction; group_by_query must be True.
    """

    _model_schema = {**DominationRank._model_schema, "n_partitions_": "int>=1?", "rows_moved_": "int>=0?",
                     "n_distributed_calls_": "int>=0?"}

    def fit(self, X, y, qid=None, client=None, callback=None):
        lam1, lam2, _ = self._check_params()
        if lam1 != 0 or self.feature_induction is not None or self.neg_sample is not None \
                or not self.group_by_query or self.solver not in ("auto", "newton"):
            raise ValueError("DaskDominationRank fits the smooth objective by Newton: penalty='l2' (or "
                             "'elasticnet' with l1_ratio=0), solver 'auto' or 'newton', no feature_induction or "
                             "neg_sample, group_by_query=True")
        if qid is None:
            raise ValueError("DaskDominationRank needs qid: queries are what the partitions keep whole")
        res, infos, extra = self._distributed_tron("domination", X, y, qid, {"binary": bool(self.binary)}, lam2,
                                               self.tol, self.max_iter, client, callback, grad_norm0="max")
        noise, scale = sum(i["noise"] for i in infos), res.info["grad_norm0"]
        excess = np.maximum(np.abs(extra["grad"]) - noise, 0.0)
        violation = float(np.max(excess, initial=0.0)) / scale if scale > 0 else 0.0
        result = SolveResult(coef=res.x, objective=float(extra["objective"]), kkt_violation=violation,
                             n_iter=int(res.n_iter),
                             n_cg_iter=int(res.n_inner), converged=bool(res.converged), solver="newton",
                             gap=float(res.gap), gap_kind=res.gap_kind,
                             history={"objective": np.asarray(res.history["fun"][1:], dtype=np.float64),
                                      "n_nonzero": np.asarray(res.history["n_nonzero"], dtype=np.int64)},
                             sample_mask=None, n_features_in=infos[0]["n_features"],
                             optimality_name="kkt_violation", message=res.message)
        return set_fitted(self, result)


@register_model
class DaskRankNet(_DaskFitMixin, RankNet):
    """:class:`cyrank.RankNet` (linear, convex) fitted on Dask collections by distributed TRON: same objective,
    stopping rule (||grad|| <= tol ||grad at 0||) and attributes, plus ``n_partitions_``, ``rows_moved_`` and
    ``n_distributed_calls_``. ``fit(X, y, qid, client=None, callback=None)`` as :class:`DaskRankSVM`."""

    _model_schema = {**RankNet._model_schema, "n_partitions_": "int>=1?", "rows_moved_": "int>=0?",
                     "n_distributed_calls_": "int>=0?"}

    def fit(self, X, y, qid=None, client=None, callback=None):
        sigma, alpha, max_iter, tol = self._check_params()
        if qid is None:
            raise ValueError("DaskRankNet needs qid: queries are what the partitions keep whole")
        res, infos, _ = self._distributed_tron("ranknet", X, y, qid, {"sigma": float(sigma)}, float(alpha), tol,
                                               max_iter, client, callback)
        result = SolveResult(coef=res.x, objective=float(res.objective), grad_norm=float(res.optimality),
                             n_iter=int(res.n_iter), n_cg_iter=int(res.n_inner), converged=bool(res.converged),
                             gap=float(res.gap), gap_kind=res.gap_kind,
                             n_features_in=infos[0]["n_features"], optimality_name="grad_norm",
                             message="" if res.converged else res.message)
        return set_fitted(self, result)
