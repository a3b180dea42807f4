"""RankNet's and LambdaRank's functional layer and the lambda gradients (Burges, "From RankNet to LambdaRank to
LambdaMART: An Overview", MSR-TR-2010-82): validated arrays in, numbers out (no scikit-learn import).

:func:`lambdas` returns, per document, the gradient of the pairwise cost in the scores and its Gauss-Newton
weight for RankNet or LambdaRank (NDCG@k, ERR@k, MAP), from the Cython kernel _lambdas.pyx (formulas there).

:func:`solve` trains linear RankNet, f(x) = w.x, by trust-region Newton (cyrank.optim.tron) on the convex

    F(w) = sum_{(i, j) in P} c_i log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2,   P = {same query, y_i > y_j},

c_i = 1, or with ``sample_weight`` the weight of the pair's preferred row i (the inverse propensity weighting of
Joachims, Swaminathan & Schnabel, WSDM 2017, section 4: w_i = 1 / the examination propensity of a clicked row;
a weight constant within a query weighs the query, and an integer weight on a row of its query's top label
equals repeating that row). Every function below takes ``sample_weight=None`` (a number, or one weight >= 0 per
row in the input order; cyrank._validation.check_sample_weight), and so do the lambdas (pair weight
c_i |dZ_ij|, on both documents' gradients and weights) and LambdaRank (the pair weight c_i |dZ_ij|).

gradient X' lambda + 2 alpha w and Hessian products X' H X v + 2 alpha v, H the pairwise Hessian in the scores;
each costs O(nnz + pairs), one pass over X query by query (_ranknet.pyx). The loss over all pairs has no
order-statistic form (unlike the squared hinge of RankSVM): log(1 + e^(-u)) is not a polynomial, so the pairs are
enumerated, per query, in parallel. (Pairs more than 37 / sigma apart are separable to rounding and have closed
sums, _ranknet.split_lambdas; on make_ranking data 0-29% of the pairs are, and the split measured 2.3-9x slower
than enumerating every pair, so the solver does not use it: bench/bench_ranknet.py --only split.)

:func:`solve_lambdarank` trains linear LambdaRank as in the LambdaLoss framework (Wang, Li, Golbandi, Bendersky &
Najork, CIKM 2018): LambdaRank's lambdas are the gradient of sum_P |dZ_ij| log(1 + exp(-sigma (f_i - f_j))) with
the weights |dZ_ij| of the current ranking; an EM (majorisation-minimisation) loop fixes the weights at the
ranking of the current w and minimises the convex weighted RankNet loss + alpha ||w||^2 exactly
(:func:`solve_weighted_ranknet`, TRON warm-started), from the RankNet solution, until the weights stop changing.

X stays as the caller gave it (no copy of a C-ordered dense or CSR X, float32 read as float32): the kernels read
row order[k] at position k (:class:`SortedX`), the positions in (query, label) order and, when X is known, rows of
one (query, label) run in an order fixed by their content (:func:`content_order`): permuting the input rows (any
way) then gives the same sums in the same order to every kernel, so the same model bit for bit.
"""

import numpy as np
import scipy.sparse as sp

from .._linear import product_parts
from .._queries import QueryGroups
from .._result import SolveResult
from .._threads import one_blas_thread
from .._validation import (check_coef, check_gain_labels, check_option, check_param, check_preferred_weight, check_qid,
                           check_ranking_data, check_sample_weight, check_scores, check_y, warn_if_no_pairs)
from ..metrics import parse_metric_name
from ..optim.certificate import group_column_squares
from ..optim.datafit import Datafit, minimise, solve_result
from ..optim.path import alpha_grid, check_path_params, run_path
from ..optim.penalties import Penalty, penalty_weights
from . import _lambdas, _ranknet

METRICS = {"ranknet": _lambdas.RANKNET, "ndcg": _lambdas.NDCG, "err": _lambdas.ERR, "map": _lambdas.AP}
TIES = ("pessimistic", "average", "input")
MAX_HALVINGS = 30  # LambdaRank's backtracking: steps down to 2^-30 of the way to the M-step's solution
MAX_SIGMA = 1e50  # lambdas grow as sigma and weights as sigma^2; the solvers square them (float64 ends near 1e308)
INT64_MAX = 2**63 - 1
CONTENT_SEED = 28  # the random direction r of content_order's keys x . r


def parse_metric(metric):
    """("ranknet" | "ndcg" | "err" | "map", k or None) from names like "ndcg@10", "err@5", "map", "ranknet".

    The grammar of :func:`cyrank.metrics.parse_metric_name` (case-insensitive ``name[@k]``, k a positive integer
    <= 2**63 - 1), restricted to the metrics LambdaRank weights by; only "ndcg" and "err" take a cut-off."""
    return parse_metric_name(metric, tuple(METRICS), ("ndcg", "err"), what="metric")


def check_sigma(sigma):
    """sigma, a finite real in (0, MAX_SIGMA]: the lambdas grow as sigma and their weights as sigma^2."""
    sigma = check_param("sigma", sigma, low=0.0, low_open=True)
    if sigma > MAX_SIGMA:
        raise ValueError(f"sigma must be at most {MAX_SIGMA:g}, got {sigma!r}: the lambdas grow as sigma and their "
                         f"weights as sigma**2, which overflow float64 beyond it; sigma only sets the scale of the "
                         f"scores, so use a sigma near 1 (and rescale X or the scores)")
    return sigma


def check_max_rel(max_rel, y):
    """ERR's grade scale: the largest label of ``y`` (None), or a finite max_rel >= every label."""
    top = float(np.max(y)) if y.size else 0.0
    if max_rel is None:
        return top
    max_rel = check_param("max_rel", max_rel, low=0.0)
    if top > max_rel:
        raise ValueError(f"max_rel={max_rel!r} is below the largest label {top!r}: ERR's R(y) = (2**y - 1) / "
                         f"2**max_rel would exceed 1; pass max_rel >= {top!r} (the top of the grade scale) or "
                         f"max_rel=None (the largest label)")
    return max_rel


def check_truncation(truncation):
    """None (every pair) or an int in [1, 2**63 - 1]."""
    if truncation is None:
        return 0
    truncation = check_param("truncation", truncation, low=1, integer=True)
    if truncation > INT64_MAX:
        raise ValueError(f"truncation={truncation!r} is above 2**63 - 1, longer than any query; pass "
                         f"truncation=None to keep every pair")
    return truncation


def resolve_ties(ties, metric):
    """The tie rule ``ties`` checked for ``metric`` (module docstring of _lambdas): "pessimistic" (default: equal
    scores ranked lower label first, as cyrank.metrics measures the metric, the lambdas of rows with equal score and
    label averaged: the expectation over their orders), "average" (the exact expectation over random orders of
    tied scores; NDCG and RankNet only, ERR and MAP have no closed form), "input" (input order, as LightGBM: the
    only rule under which the result depends on the row order)."""
    name, _ = parse_metric(metric)
    ties = check_option("ties", ties, TIES)
    if ties == "average" and name in ("err", "map"):
        raise ValueError(f"ties='average' (the expectation over random orders of tied scores) has no closed form "
                         f"for {name.upper()}; use ties='pessimistic' (equal scores ranked lower label first, rows "
                         f"of equal score and label averaged)")
    return ties


def content_order(groups, X):
    """Positions of the rows in (query, label) order and, inside a (query, label) run, an order fixed by the rows'
    content: by x . r for a fixed random r (_ranknet.row_keys: one pass over X, a function of the row's non-zero
    entries alone), rows of equal key but different content by the 64-bit hash of their non-zero entries
    (_lambdas.row_hashes, on those rows only); equal rows, which are interchangeable, keep the input order."""
    r = np.random.default_rng(CONTENT_SEED).uniform(-1.0, 1.0, X.shape[1])
    key = _ranknet.row_keys(X, r)
    lo = groups.label_order
    order = _ranknet.sort_runs(lo, np.ascontiguousarray(groups.label_runs, dtype=np.int64), key)
    run = np.repeat(np.arange(groups.label_runs.shape[0] - 1), np.diff(groups.label_runs))
    k = key[order]
    tied = np.flatnonzero((k[1:] == k[:-1]) & (run[1:] == run[:-1]))
    if tied.size == 0:
        return order
    rows = np.unique(order[np.concatenate([tied, tied + 1])])
    h = np.zeros(X.shape[0], dtype=np.uint64)
    h[rows] = _lambdas.row_hashes(X.tocsr()[rows] if sp.issparse(X) else X[rows])
    return lo[np.lexsort((h[lo], key[lo], run))]


class _Pairs:
    """Rows in (query, label) order (by content inside a run when X is given), the query offsets, the sample
    weights in that order (``w``, None: unweighted) and the kernel's settings."""

    def __init__(self, y, qid, *, metric="ranknet", sigma=1.0, truncation=None, max_rel=None, threshold=0.0,
                 ties="pessimistic", norm=False, parallel_min_rows=-1, X=None, sample_weight=None, of="X"):
        name, k = parse_metric(metric)
        self.metric, self.name = metric, name
        self.code, self.k = METRICS[name], (k or 0)
        if name in ("ndcg", "err"):  # ERR's R = 2^(y - max_rel) - 2^-max_rel has no overflow: sign check only
            check_gain_labels(y, name.upper(), exponential=name == "ndcg")
        groups = QueryGroups(qid, y)
        self.groups = groups
        sample_weight = check_sample_weight(sample_weight, y.shape[0], of=of)
        check_preferred_weight(sample_weight, groups)
        self.order = groups.label_order if X is None else content_order(groups, X)
        self.w = None if sample_weight is None else np.ascontiguousarray(sample_weight[self.order])
        self.offsets = np.ascontiguousarray(groups.offsets, dtype=np.int64)
        self.y = np.ascontiguousarray(y[self.order], dtype=np.float64)
        self.sigma = check_sigma(sigma)
        self.truncation = check_truncation(truncation)
        self.max_rel = check_max_rel(max_rel, y)
        self.threshold = check_param("threshold", threshold)
        self.parallel_min_rows = parallel_min_rows
        self.norm = bool(check_option("norm", norm, (True, False)))
        self.ties = resolve_ties(ties, metric)
        self.ties_code = _lambdas.AVERAGE if self.ties == "average" else _lambdas.PESSIMISTIC
        self.tie = None
        if self.ties == "input":
            # equal scores in input order (as LightGBM): each row's rank among its query's rows as given
            rank = np.empty(y.shape[0], dtype=np.int64)
            rank[groups.order] = np.arange(y.shape[0]) - np.repeat(self.offsets[:-1], np.diff(self.offsets))
            self.tie = np.ascontiguousarray(rank[self.order])

    def lambdas(self, scores_sorted, lam, hess, with_cost=True, order=None):
        """The kernel on scores in this order (or, with ``order``, e.g. self.order, scores, lam and hess in the
        user's row order: gathered and scattered per query inside the kernel)."""
        return _lambdas.lambdas(scores_sorted, self.y, self.offsets, self.code, self.k, self.truncation, self.sigma,
                                self.max_rel, self.threshold, lam, hess, self.parallel_min_rows, with_cost, self.norm,
                                self.tie, self.ties_code, self.w, order)

    def reference(self, scores_sorted):
        """The pair weights of the ranking by ``scores_sorted`` (_lambdas.Reference)."""
        return _lambdas.Reference(np.ascontiguousarray(scores_sorted, dtype=np.float64), self.y, self.offsets,
                                  self.code, self.k, self.truncation, self.max_rel, self.threshold, self.ties_code,
                                  self.tie, self.parallel_min_rows, self.w)

    def ranknet(self):
        """The same rows with RankNet's weights (|dZ| = 1)."""
        other = object.__new__(_Pairs)
        other.__dict__.update(self.__dict__)
        other.metric, other.name, other.code, other.k, other.truncation, other.norm = "ranknet", "ranknet", \
            _lambdas.RANKNET, 0, 0, False
        other.ties, other.ties_code, other.tie = "average", _lambdas.AVERAGE, None
        return other


class Lambdas:
    """The lambdas of one set of labels and queries, prepared once for many score vectors (a boosting loop, a
    custom objective): checking y and qid, grouping the rows and ordering them happen here, and each call only
    checks the scores and runs the kernel. Parameters as :func:`lambdas`.

    ``Lambdas(y, qid, metric="ndcg@10")(scores)`` returns (cost, gradient, weight) per document in input order,
    equal to ``lambdas(y, scores, qid, metric="ndcg@10")`` to the last bit; every call returns new arrays.
    """

    def __init__(self, y_true, qid=None, *, metric="ranknet", sigma=1.0, truncation=None, max_rel=None,
                 threshold=0.0, ties="pessimistic", norm=False, sample_weight=None):
        y_true = check_y(y_true, name="y_true")
        self._pairs = _Pairs(y_true, check_qid(qid, y_true.shape[0], of="y_true"), metric=metric, sigma=sigma,
                             truncation=truncation, max_rel=max_rel, threshold=threshold, ties=ties, norm=norm,
                             sample_weight=sample_weight, of="y_true")
        self.n_samples = y_true.shape[0]
        self._order = np.ascontiguousarray(self._pairs.order, dtype=np.int64)

    def __call__(self, y_score):
        """(cost, gradient, weight) at ``y_score`` (one finite score per row of y_true)."""
        return self._run(y_score, True)

    def gradient(self, y_score):
        """(gradient, weight) at ``y_score``, the same bits as :meth:`__call__`'s, without the cost (one log per
        pair less): what a boosting loop's custom objective needs."""
        return self._run(y_score, False)[1:]

    def _run(self, y_score, with_cost):
        y_score = np.ascontiguousarray(check_y(y_score, self.n_samples, name="y_score", of="y_true"))
        grad, weight = np.empty(self.n_samples), np.empty(self.n_samples)
        # the kernel reads the scores and writes grad and weight through the row order, query by query
        cost = self._pairs.lambdas(y_score, grad, weight, with_cost=with_cost, order=self._order)
        return cost, grad, weight


def lambdas(y_true, y_score, qid=None, *, metric="ranknet", sigma=1.0, truncation=None, max_rel=None,
            threshold=0.0, ties="pessimistic", norm=False, sample_weight=None):
    """(cost, gradient, weight): per document dC/ds and its Gauss-Newton weight (input order) for RankNet
    (metric "ranknet") or LambdaRank ("ndcg@k", "err@k", "map"; _lambdas.pyx has the formulas). ``sigma``: in
    (0, 1e50] (the lambdas scale as sigma, the weights as sigma^2); ``truncation``: None or an int >= 1;
    ``max_rel``: the ERR normaliser, >= every label (default max y; ERR is exact at any label scale);
    ``threshold``: relevant = y > threshold (MAP); ``ties``: the tie rule (:func:`resolve_ties`); ``norm``:
    LightGBM's lambdarank_norm (_lambdas.lambdas); ``sample_weight``: None, a number or one weight >= 0 per row
    (input order): the pair (i, j), y_i > y_j, counts with the preferred row's weight c_i, lambda_ij and its weight
    both times c_i on both documents (inverse propensity weighting, Joachims et al., WSDM 2017; with c_i = 1 /
    propensity of clicked rows these are Unbiased LambdaMART's lambdas, Hu et al., WWW 2019, with the propensities
    given). Except with ties="input", the result does not depend on the row order. Every argument is checked
    (ValueError or TypeError naming it). For many score vectors on the same labels, :class:`Lambdas` groups the
    rows once."""
    y_true, y_score, qid = check_scores(y_true, y_score, qid)
    return Lambdas(y_true, qid, metric=metric, sigma=sigma, truncation=truncation, max_rel=max_rel,
                   threshold=threshold, ties=ties, norm=norm, sample_weight=sample_weight)(y_score)


class SortedX:
    """X's rows in the order of ``pairs`` without a copy of X: the kernels of _ranknet.pyx read row pairs.order[k]
    at sorted position k (X dense C-ordered or CSR, in its own precision; another layout is converted once, as
    cyrank._linear.product_parts does). ``dot(w)`` = the scores at the positions, ``rdot(v)`` = X' v for v at the
    positions, summed in the positions' order (so a permutation of the input rows gives the same bits)."""

    def __init__(self, X, pairs):
        self.parts = product_parts(X)
        data, indices, indptr, dense, n, d = self.parts
        self.shape = (n, d)
        # X as the kernels read it (for the column squares): the C-ordered dense array, or the CSR parts
        self.X = data.reshape(n, d) if dense else sp.csr_matrix((data, indices, indptr), shape=(n, d))
        row_work = d if dense else (int(indptr[n]) - int(indptr[0])) // max(n, 1)
        self.rows = _ranknet.Rows(pairs.order, pairs.offsets, pairs.y, n, row_work, pairs.parallel_min_rows, pairs.w)
        self.order, self.offsets = pairs.order, pairs.offsets
        self._squares = None

    def dot(self, w, out=None):
        out = np.empty(self.shape[0]) if out is None else out
        _ranknet.dot(self.parts, self.rows, np.ascontiguousarray(w, dtype=np.float64), out)
        return out

    def rdot(self, v, out=None):
        out = np.empty(self.shape[1]) if out is None else out
        _ranknet.rdot(self.parts, self.rows, np.ascontiguousarray(v, dtype=np.float64), out)
        return out

    def column_squares(self):
        """The within-query centred column squares (computed once: the shared driver reads them at the start of
        every fit, and again if TRON asks for its preconditioner later)."""
        if self._squares is None:
            self._squares = group_column_squares(self.X, self.offsets, self.order)
        return self._squares


class _State:
    def __init__(self, n):
        self.s = np.zeros(n)   # the scores at the positions
        self.ex = np.zeros(n)  # exp(sigma s - the query's max): the pair sigmoids without an exp (_ranknet.pyx)


class _RankNetProblem(Datafit):
    """The RankNet loss (module docstring) as a datafit (cyrank.optim.datafit) on X in the user's row order, read in
    the order of ``pairs`` (:class:`SortedX`, no copy): loss, gradient X' lambda + 2 ridge w and Hessian products
    X' H X v + 2 ridge v, each one pass over X query by query (_ranknet.pyx)."""

    def __init__(self, X, pairs, ridge=0.0, sorted_x=None):
        self.X, self.pairs, self.ridge = X, pairs, float(ridge)
        self.n_rows, self.n_features = X.shape
        self.sx = SortedX(X, pairs) if sorted_x is None else sorted_x
        n = self.n_rows
        self._g, self._t, self._u = np.empty(n), np.empty(n), np.empty(n)  # per-fit work vectors
        super().__init__()

    def column_squares(self):
        return self.sx.column_squares()

    def new_state(self):
        return _State(self.n_rows)

    def evaluate(self, w, Mw, state):
        w = np.ascontiguousarray(w, dtype=np.float64)
        grad = np.empty(self.n_features)
        loss = _ranknet.evaluate(self.sx.parts, self.sx.rows, w, self.pairs.sigma, state.s, state.ex, self._g, grad)
        grad += 2.0 * self.ridge * w
        return loss + self.ridge * float(w @ w), grad

    def hessian_product(self, state, v, Mv):
        out = np.empty(self.n_features)
        _ranknet.hess_vec(self.sx.parts, self.sx.rows, np.ascontiguousarray(v, dtype=np.float64), self.pairs.sigma,
                          state.s, state.ex, self._t, self._u, out)
        out += 2.0 * self.ridge * v
        return out


class _WeightedRankNetProblem(_RankNetProblem):
    """sum_P |dZ_ij| log(1 + exp(-sigma (f_i - f_j))) + ridge ||w||^2 with the weights |dZ_ij| of a fixed
    reference ranking (``ref``, a _lambdas.Reference) and f = X w at the current w: convex. The scores at the
    positions and X' of the pair gradients are two passes over X (:class:`SortedX`)."""

    def __init__(self, X, pairs, ref, ridge=0.0, sorted_x=None):
        self.ref = ref
        super().__init__(X, pairs, ridge, sorted_x)

    def evaluate(self, w, Mw, state):
        self.sx.dot(w, out=state.s)
        loss = self.ref.loss(state.s, self.pairs.sigma, self._g, self._u)
        grad = self.sx.rdot(self._g)
        grad += 2.0 * self.ridge * w
        return loss + self.ridge * float(w @ w), grad

    def hessian_product(self, state, v, Mv):
        self.sx.dot(v, out=self._t)
        self.ref.hess_vec(state.s, self.pairs.sigma, self._t, self._u)
        out = self.sx.rdot(self._u)
        out += 2.0 * self.ridge * v
        return out


def _check_coef_init(coef_init, d):
    return np.zeros(d) if coef_init is None else check_coef(coef_init, d, "coef_init")


def check_params(*, sigma, alpha, max_iter, tol):
    return (check_sigma(sigma), check_param("alpha", alpha, low=0.0),
            check_param("max_iter", max_iter, low=1, integer=True), check_param("tol", tol, low=0.0, low_open=True))


def objective(X, y, qid=None, *, coef, sigma=1.0, alpha=1.0, penalty="l2", l1_ratio=0.5, sample_weight=None):
    """F(coef) (module docstring; ``penalty`` as :func:`solve`'s, ``sample_weight`` the weights c) on (X, y, qid),
    in float64."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    X, y, qid = check_ranking_data(X, y, qid)
    coef = check_coef(coef, X.shape[1])
    pairs = _Pairs(y, qid, sigma=sigma, sample_weight=sample_weight)
    n = X.shape[0]
    s = SortedX(X, pairs).dot(coef)  # X in its own precision, float64 sums, no copy
    return pairs.lambdas(s, np.empty(n), np.empty(n)) + Penalty(lam1, lam2).value(coef)


def loss(X, y, qid=None, *, sigma=1.0, sample_weight=None):
    """The RankNet loss (Burges 2010, section 1; module docstring) on (X, y, qid), no penalty: a
    :class:`cyrank.optim.datafit.Datafit` evaluating

        L(w) = sum_{(i, j): same query, y_i > y_j} c_i log(1 + exp(-sigma (x_i - x_j) . w)),

    (c_i = ``sample_weight`` of row i, 1 without), its gradient X' lambda and Hessian products (+ ridge ||w||^2
    when :func:`cyrank.optim.datafit.minimise` sets a ridge), with ``n_features``, ``n_rows``, ``column_squares()`` (within-query centred squares of X's columns) and
    ``gradient_noise`` (0). The data are checked as :func:`solve` checks them, and a RankingDataWarning is given
    when no query has a pair. Rows are sorted by (query, label) inside the object (by content inside a run, as
    :func:`solve` sorts them); w is in X's column order, so ``loss(X, y, qid).fun(w) ==
    objective(X, y, qid, coef=w, alpha=0)`` and the object never exposes the row order."""
    X, y, qid = check_ranking_data(X, y, qid)
    pairs = _Pairs(y, qid, sigma=check_sigma(sigma), X=X, sample_weight=sample_weight)
    warn_if_no_pairs(pairs.groups)
    return _RankNetProblem(X, pairs)


def solve(X, y, qid=None, *, sigma=1.0, penalty="l2", alpha=1.0, l1_ratio=0.5, max_iter=1000, tol=1e-6, coef_init=None,
          verbose=0, sample_weight=None):
    """Linear RankNet (module docstring) with the penalty ``penalty`` (cyrank.optim.penalties: "l2"
    alpha ||w||^2, "l1" alpha ||w||_1, "elasticnet" alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2)):
    sum_P c_i log(1 + exp(-sigma (f_i - f_j))) + penalty, c_i the ``sample_weight`` of the preferred row i (1
    without; the tolerances below are relative to the weighted loss's gradient at 0).

    Smooth (no l1 term): TRON, stopping when the gap (cyrank.optim.result) is <= tol max(1, |F|). With an l1 term: proximal Newton with working sets (cyrank.optim.prox_newton; Yuan, Ho &
    Lin 2012), the model's Hessian formed on the working set by Hessian products, stopping when the KKT violation
    max_r |p_r| (p the minimum-norm subgradient) is <= tol max_r |grad_r at 0| and the gap (certified by the strong
    convexity 2 lam2, or the Newton decrement on the orthant) is <= tol max(1, |F|). Returns a SolveResult with
    coef, objective, grad_norm (||grad|| / ||grad at 0||; with an l1 term the relative KKT violation), gap,
    gap_kind, n_iter, n_cg_iter (CG steps; with an l1 term the model's inner sweeps), converged, n_features_in."""
    sigma, alpha, max_iter, tol = check_params(sigma=sigma, alpha=alpha, max_iter=max_iter, tol=tol)
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    X, y, qid = check_ranking_data(X, y, qid)
    pairs = _Pairs(y, qid, sigma=sigma, X=X, sample_weight=sample_weight)
    warn_if_no_pairs(pairs.groups)
    return _solve_sorted(SortedX(X, pairs), pairs, lam1, lam2, _check_coef_init(coef_init, X.shape[1]), tol=tol,
                         max_iter=max_iter, verbose=verbose)


def _solve_sorted(sx, pairs, lam1, lam2, w, *, tol, max_iter, verbose):
    """:func:`solve` on checked data read in (query, label) order (``sx``, a :class:`SortedX`;
    cyrank.optim.datafit.minimise)."""
    penalty = Penalty(lam1, lam2)
    problem = _RankNetProblem(sx.X, pairs, sorted_x=sx)
    with one_blas_thread():
        res = minimise(problem, penalty, w, tol=tol, max_iter=max_iter, verbose=verbose,
                       name="RankNet" if penalty.smooth else "RankNet prox_newton")
    return solve_result(res, problem)  # grad_norm: relative gradient norm, or KKT violation with an l1 term


def path(X, y, qid=None, *, alphas=None, n_alphas=20, eps=1e-3, penalty="l1", l1_ratio=0.5, sigma=1.0,
         max_iter=1000, tol=1e-6, verbose=0, sample_weight=None):
    """The regularisation path of linear RankNet (cyrank.optim.path): one :func:`solve` per alpha, decreasing, each
    warm-started from the previous solution, on data checked and sorted once.

    Parameters
    ----------
    X, y, qid : arrays
        The data, as for :func:`solve`.
    alphas : sequence of float >= 0 or None, default=None
        The alphas (sorted decreasing). None: ``n_alphas`` values from alpha_max down to ``eps`` * alpha_max,
        geometrically spaced, alpha_max = max_r |dL/dw_r at 0| (/ l1_ratio for "elasticnet"), the smallest alpha
        with w = 0 optimal ("l2" needs ``alphas``).
    n_alphas : int >= 1, default=20
    eps : float in (0, 1), default=1e-3
    penalty, l1_ratio, sigma, max_iter, tol, verbose, sample_weight : any
        As for :func:`solve` (alpha_max from the weighted loss).

    Returns
    -------
    PathResult
        Per alpha: coefficients (sparse columns), objective, optimality measure (``kkt_violations``: the
        ``grad_norm`` of :func:`solve`), iterations, convergence and the solver's message (nothing is warned here).
    """
    n_alphas, eps = check_path_params(penalty, n_alphas, eps)
    sigma, _, max_iter, tol = check_params(sigma=sigma, alpha=0.0, max_iter=max_iter, tol=tol)
    X, y, qid = check_ranking_data(X, y, qid)
    pairs = _Pairs(y, qid, sigma=sigma, X=X, sample_weight=sample_weight)
    warn_if_no_pairs(pairs.groups)
    sx = SortedX(X, pairs)
    d = X.shape[1]

    def top():
        problem = _RankNetProblem(X, pairs, sorted_x=sx)
        with one_blas_thread():
            return float(np.max(np.abs(problem.grad(np.zeros(d))), initial=0.0)), 0.0

    alphas, a_max = alpha_grid(alphas, n_alphas, eps, penalty, l1_ratio, top)

    def fit(alpha, coef):
        lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
        w = np.zeros(d) if coef is None else coef.copy()
        return _solve_sorted(sx, pairs, lam1, lam2, w, tol=tol, max_iter=max_iter, verbose=verbose)

    return run_path(alphas, a_max, fit)


def solve_weighted_ranknet(X, y, qid=None, *, reference_scores, metric="ndcg@10", sigma=1.0, alpha=1e-3,
                           ties="pessimistic", truncation=None, max_rel=None, threshold=0.0, coef_init=None, max_iter=1000,
                           tol=1e-6, verbose=0, sample_weight=None):
    """One inner solve of LambdaRank (:func:`solve_lambdarank`): the convex

        sum_{(i, j) in P} c_i |dZ_ij| log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2,   f = X w,

    (c_i the ``sample_weight`` of the preferred row i, 1 without)
    with |dZ_ij| the metric change of swapping i and j in the ranking by ``reference_scores`` (one per row of X;
    ties by ``ties``: _lambdas module docstring), minimised by TRON from ``coef_init`` (default 0) as :func:`solve`.
    Returns a SolveResult as :func:`solve`'s."""
    sigma, alpha, max_iter, tol = check_params(sigma=sigma, alpha=alpha, max_iter=max_iter, tol=tol)
    X, y, qid = check_ranking_data(X, y, qid)
    s0 = check_scores(y, reference_scores, qid)[1]
    pairs = _Pairs(y, qid, metric=metric, sigma=sigma, truncation=truncation, max_rel=max_rel, threshold=threshold,
                   ties=ties, X=X, sample_weight=sample_weight)
    warn_if_no_pairs(pairs.groups)
    ref = pairs.reference(s0[pairs.order])
    w = _check_coef_init(coef_init, X.shape[1])
    problem = _WeightedRankNetProblem(X, pairs, ref)
    with one_blas_thread():
        res = minimise(problem, Penalty(0.0, alpha), w, tol=tol, max_iter=max_iter, verbose=verbose,
                       name="weighted RankNet")
    return solve_result(res, problem)  # grad_norm: relative gradient norm, or KKT violation with an l1 term


# ------------------------------------------------------------------------------------------------ LambdaRank
def metric_value(metric, y, scores, qid, max_rel=None):
    """The mean over queries of the metric LambdaRank weights by (cyrank.metrics conventions: pessimistic ties,
    queries without a relevant document dropped); "ranknet" is measured by pairwise accuracy."""
    from .. import metrics

    name, k = parse_metric(metric)
    if name == "ndcg":
        return metrics.ndcg_score(y, scores, qid, k=k)
    if name == "err":
        if max_rel is not None and np.size(y) and float(np.max(y)) > max_rel:
            raise ValueError(_err_scale_message(metric, float(np.max(y)), max_rel, "eval_set"))
        return metrics.err_score(y, scores, qid, k=k, max_rel=max_rel)
    if name == "map":
        return metrics.average_precision(y, scores, qid)
    return metrics.pairwise_accuracy(y, scores, qid)


def _err_scale_message(metric, top, max_rel, where):
    return (f"{where} has label {top:g}, above the largest training label {max_rel:g}: {metric} normalises "
            f"R(y) = (2**y - 1) / 2**max_rel by max_rel = the largest training label, so R would exceed 1 there. "
            f"Put {where} on the training labels' scale (0..{max_rel:g}), or train on data that holds the top grade")


def _per_query(groups, values, func):
    """func(values of each query's rows) for every query (values in input order)."""
    v = values[groups.order]
    return np.array([func(v[a:b]) for a, b in zip(groups.offsets[:-1], groups.offsets[1:])], dtype=bool)


def check_metric_data(metric, y, qid, *, threshold=0.0, eval_set=False, what=None):
    """ValueError naming the cause when ``metric`` is constant on the training set (no pair any ranking could
    improve: LambdaRank would return w = 0) or, with ``eval_set``, undefined on every query of a validation set
    (no round could be scored)."""
    name, _ = parse_metric(metric)
    groups = QueryGroups(qid, y)
    where = what or ("eval_set" if eval_set else "the training set")
    if eval_set:
        if name == "ranknet":
            ok = groups.n_levels > 1
            cause = "no query has two different labels"
        else:
            thr = threshold if name == "map" else 0.0
            ok = _per_query(groups, y, lambda v: np.any(v > thr))
            cause = f"no query has a relevant document (label > {thr:g})"
        if not np.any(ok):
            raise ValueError(f"{where}: {cause}, so {metric} is undefined on every query at every round; "
                             f"pass an eval_set with relevant documents")
        return
    if groups.n_pairs_possible == 0:
        raise ValueError(f"{where}: no query has two different labels, so there is no preference pair and every "
                         f"ranking scores the same; {metric} cannot be trained on it")
    if name == "map":
        rel = y > threshold
        if np.all(rel):
            raise ValueError(f"metric='map' needs irrelevant documents (label <= {threshold:g}), and {where} has "
                             f"none: AP is 1 for every ranking, so every lambda is 0; use ndcg or err, or "
                             f"relabel")
        if not np.any(rel):
            raise ValueError(f"metric='map' needs relevant documents (label > {threshold:g}), and {where} has "
                             f"none: AP is undefined on every query")
        both = _per_query(groups, rel.astype(float), lambda v: 0.0 < v.sum() < v.size)
        if not np.any(both):
            raise ValueError(f"metric='map': no query of {where} has both a relevant (label > {threshold:g}) and "
                             f"an irrelevant document, so AP is the same for every ranking")


def check_lambdarank_params(*, metric, sigma, alpha, max_iter, tol, early_stopping_rounds):
    parse_metric(metric)
    sigma, alpha, max_iter, tol = check_params(sigma=sigma, alpha=alpha, max_iter=max_iter, tol=tol)
    if early_stopping_rounds is not None:
        early_stopping_rounds = check_param("early_stopping_rounds", early_stopping_rounds, low=1, integer=True)
    return sigma, alpha, max_iter, tol, early_stopping_rounds


def check_eval_set(eval_set, d, metric, y_train=None):
    """(Xv, yv, qv) checked; with ``y_train`` and an ERR metric, eval labels must not exceed the training ones."""
    if len(eval_set) not in (2, 3):
        raise ValueError("eval_set must be (X, y) or (X, y, qid)")
    Xv, yv, qv = check_ranking_data(*eval_set)
    if Xv.shape[1] != d:
        raise ValueError(f"eval_set has {Xv.shape[1]} features but X has {d}")
    check_metric_data(metric, yv, qv, eval_set=True)
    if y_train is not None and parse_metric(metric)[0] == "err" and yv.max() > y_train.max():
        raise ValueError(_err_scale_message(metric, float(yv.max()), float(y_train.max()), "eval_set"))
    return Xv, yv, qv


def solve_lambdarank(X, y, qid=None, *, metric="ndcg@10", sigma=1.0, alpha=1.0, max_iter=50, tol=1e-6,
                     eval_set=None, early_stopping_rounds=None, ties="pessimistic", verbose=0, max_inner_iter=1000,
                     sample_weight=None):
    """Linear LambdaRank, f(x) = w.x, by the EM loop of the LambdaLoss framework (Wang et al., CIKM 2018).

    LambdaRank's lambdas (Burges 2010, section 4) are the gradient of

        C(w) = sum_{(i, j) in P} c_i |dZ_ij| log(1 + exp(-sigma (f_i - f_j))) + alpha ||w||^2

    (c_i the ``sample_weight`` of the preferred row i, 1 without; the RankNet start weighted the same way) with
    |dZ_ij| the change of the metric when i and j swap places in the ranking by f = X w (ties: the rule of
    ``ties="pessimistic"``, _lambdas module docstring, so that the weights never depend on the row order). C is not
    convex, not even continuous where the ranking changes. Start: w_0 = the RankNet solution (:func:`solve`, the
    same alpha and sigma), not w = 0 (where every score ties). Outer step t fixes the weights at the ranking by
    w_{t-1} and minimises the convex weighted loss (:func:`solve_weighted_ranknet`) exactly by TRON, warm-started
    at w_{t-1}: w_t. It stops (converged) when the ranking, hence every weight, is the same as at the previous
    step (w_t is then a fixed point: the minimiser of the weighted loss with its own weights), when the relative
    change of the minimised weighted loss falls below ``tol``, or, with ``eval_set`` and
    ``early_stopping_rounds``, after that many steps without a better metric on eval_set (the best iterate is
    returned, ``best_iteration``: 0 is the RankNet start). ``max_iter`` bounds the outer steps (default 50);
    ``max_inner_iter`` the Newton iterations of each inner solve (tolerance ``tol``, as :func:`solve`).

    Returns a SolveResult with coef, objective (C at coef with the weights of coef's own ranking), grad_norm
    (||grad C|| / ||grad C at 0|| with those weights: 0 at a fixed point, up to the inner tolerance), n_iter
    (outer steps), n_inner_iter (Newton iterations, the RankNet start included), converged (the outer loop
    converged and every inner solve did), history (arrays of n_iter + 1 entries, entry 0 the RankNet start:
    "loss" the minimised weighted loss, "objective" C, "train" the metric on the training set, "eval" on
    eval_set, empty without one), best_iteration, n_features_in. ValueError when the metric is constant on the
    training set or undefined on every query of eval_set (check_metric_data).
    """
    sigma, alpha, max_iter, tol, early_stopping_rounds = check_lambdarank_params(
        metric=metric, sigma=sigma, alpha=alpha, max_iter=max_iter, tol=tol,
        early_stopping_rounds=early_stopping_rounds)
    max_inner_iter = check_param("max_inner_iter", max_inner_iter, low=1, integer=True)
    X, y, qid = check_ranking_data(X, y, qid)
    if X.shape[0] < 2:
        raise ValueError(f"LambdaRank needs at least 2 samples (pairs within queries), got {X.shape[0]} sample")
    pairs = _Pairs(y, qid, metric=metric, sigma=sigma, ties=ties, X=X, sample_weight=sample_weight)
    check_metric_data(metric, y, qid)
    sx = SortedX(X, pairs)  # X read in the order of pairs: no copy
    d, n = X.shape[1], X.shape[0]
    if eval_set is not None:
        Xv, yv, qv = check_eval_set(eval_set, d, metric, y_train=y)
    elif early_stopping_rounds is not None:
        raise ValueError("early_stopping_rounds needs an eval_set")
    y_input = y
    lam, hess = np.empty(n), np.empty(n)
    history = {"loss": [], "objective": [], "step": [], "train": [], "eval": []}
    inner_failures = []
    n_inner = 0

    def scores(w):
        return sx.dot(w)

    def cost(ref, w):
        """(C(w) with the weights of ref, its gradient)."""
        loss = ref.loss(scores(w), sigma, lam, hess)
        return loss + alpha * float(w @ w), sx.rdot(lam) + 2.0 * alpha * w

    def record(w, loss, ref, theta):
        s = scores(w)
        unsorted = np.empty(n)
        unsorted[pairs.order] = s
        history["loss"].append(float(loss))
        history["objective"].append(cost(ref, w)[0])
        history["step"].append(theta)
        history["train"].append(metric_value(metric, y_input, unsorted, qid, pairs.max_rel))
        if eval_set is not None:
            history["eval"].append(metric_value(metric, yv, np.asarray(Xv @ w, dtype=np.float64).ravel(), qv,
                                                pairs.max_rel))
        if verbose:
            t = len(history["loss"]) - 1
            print(f"LambdaRank step {t:3d}: weighted loss {loss:.10g}  cost {history['objective'][-1]:.10g}  "
                  f"step {theta:.3g}  "
                  f"train {metric} {history['train'][-1]:.6f}"
                  + (f"  eval {history['eval'][-1]:.6f}" if eval_set is not None else ""))

    with one_blas_thread():
        start = minimise(_RankNetProblem(X, pairs.ranknet(), sorted_x=sx), Penalty(0.0, alpha), np.zeros(d), tol=tol,
                         max_iter=max_inner_iter, verbose=max(verbose - 1, 0), name="LambdaRank (RankNet start)")
        n_inner += int(start.n_iter)
        if not start.converged:
            inner_failures.append(start.message)
        w = start.x
        ref = pairs.reference(scores(w))
        if ref.active_queries() == 0:  # cannot happen after check_metric_data; kept as the last word
            raise ValueError(f"{metric} has no pair of non-zero weight on the training set")
        record(w, start.objective, ref, np.nan)
        iterates = [w]
        best_t, reason, converged, t, target = 0, "", False, 0, None
        c_old = history["objective"][0]
        for t in range(1, max_iter + 1):
            if target is None:  # the M-step: the weighted loss with the weights of the ranking by w, exactly
                res = minimise(_WeightedRankNetProblem(X, pairs, ref, sorted_x=sx), Penalty(0.0, alpha), w, tol=tol,
                               max_iter=max_inner_iter, verbose=max(verbose - 1, 0), name=f"LambdaRank (step {t})")
                n_inner += int(res.n_iter)
                if not res.converged:
                    inner_failures.append(res.message)
                target = res.x
            # the first of w + theta (target - w), theta = 1, 1/2, ..., whose cost C (own weights) is below C(w)
            theta, step = 1.0, None
            for _ in range(MAX_HALVINGS + 1):
                trial = w + theta * (target - w) if theta < 1.0 else target
                trial_ref = pairs.reference(scores(trial))
                c_trial = cost(trial_ref, trial)[0]
                if c_trial < c_old:
                    step = (trial, trial_ref, c_trial)
                    break
                theta *= 0.5
            if step is None:
                converged, reason = True, ("no point of the segment to the M-step's solution (steps down to "
                                           f"2^-{MAX_HALVINGS}) lowers the cost: a local minimum along it")
                t -= 1
                break
            w_new, new_ref, c_new = step
            record(w_new, cost(ref, w_new)[0], new_ref, theta)
            iterates.append(w_new)
            decrease, w, c_old = c_old - c_new, w_new, c_new
            if eval_set is not None and history["eval"][t] > history["eval"][best_t]:
                best_t = t
            if early_stopping_rounds is not None and t - best_t >= early_stopping_rounds:
                converged, reason = True, "early stopping"
                break
            same = new_ref.same_weights(ref)
            if same and theta == 1.0:
                converged, reason = True, "the ranking, hence every weight, did not change"
                break
            if decrease <= tol * max(c_new, 1e-300):
                converged, reason = True, f"the cost decreased by less than tol={tol:g} (relative)"
                break
            if not same:  # new weights: a new M-step; the same weights: on along the segment to the same target
                ref, target = new_ref, None
        n_iter = t
        if early_stopping_rounds is not None:
            w = iterates[best_t]
        best_iteration = best_t if eval_set is not None else n_iter
        final_ref = pairs.reference(scores(w))
        objective, grad = cost(final_ref, w)
        zero = cost(final_ref, np.zeros(d))[1]
    grad_norm = float(np.linalg.norm(grad)) / max(float(np.linalg.norm(zero)), 1e-300)
    message = ""
    if not converged:
        message = (f"LambdaRank stopped after max_iter={max_iter} outer steps with the weights |dZ| still changing "
                   f"(cost {history['objective'][-2]:.10g} -> {history['objective'][-1]:.10g}); increase max_iter "
                   f"or tol, or use an eval_set with early_stopping_rounds")
    if inner_failures:
        message = ((message + "; " if message else "") + f"{len(inner_failures)} inner solve(s) stopped short: "
                   + inner_failures[-1])
        converged = False
    if verbose:
        print(f"LambdaRank: {n_iter} outer steps, " + (reason if reason else message))
    return SolveResult(coef=w, objective=float(objective), grad_norm=grad_norm, n_iter=int(n_iter),
                       n_inner_iter=int(n_inner), converged=bool(converged),
                       history={k: np.asarray(v, dtype=np.float64) for k, v in history.items()},
                       best_iteration=int(best_iteration), n_features_in=d, optimality_name="grad_norm",
                       message=message)
