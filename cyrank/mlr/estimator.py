"""MLR: metric learning to rank (McFee & Lanckriet, "Metric Learning to Rank", ICML 2010).

Every training point q is a query; its relevant points X+_q are the other members of its class (or an explicit
set), its irrelevant points X-_q the members of other classes (or an explicit set). Points are ranked by
increasing distance ||q - i||_W = sqrt((q - i)' W (q - i)), i.e. by decreasing score <W, phi(q, i)>,
phi(q, i) = -(q - i)(q - i)' (eq. 4). With the partial-order feature map psi normalised by |X+_q| |X-_q| (eq. 3)
and Delta = Score(y*) - Score(y) (section 4), MLR solves

    min_W  R(W) + C xi,   xi = (1/m) sum_q max_y [Delta(y*_q, y) + <W, psi(q, y) - psi(q, y*_q)>],

over W PSD, m the number of queries with at least one relevant and one irrelevant point, and
R(W) = tr(W) ("trace", section 3.1: an l1 penalty on the eigenvalues, so W is low-rank), 0.5 ||W||_F^2
("frobenius"), or sum(w) with W = diag(w), w >= 0 ("diagonal"). The trace is NOT divided by d (the original
MATLAB code minimises tr(W)/d + C xi, i.e. our C times d).

Algorithm 1 of McFee & Lanckriet (2010): the shared 1-slack cutting-plane engine (cyrank.optim.cutting_plane) with

* in-out stabilisation (``stabilization`` = alpha, default 0.7): the oracle is called at
  alpha W_best + (1 - alpha) W_restricted instead of the restricted solution W_restricted (Kelley's method of
  the paper, alpha = 0), and the method stops on the certified gap objective - lower bound <= C tol. On
  WDBC MLR-AUC at C = 1e5 this cuts the cutting planes from ~90 to ~35 (bench/RESULTS.md, MLR). The best
  point is a convex combination of iterates, so its tiny eigen-components are then dropped when that does not
  raise the objective (one separation per try);
* exact separation oracles in Cython (cyrank/mlr/_oracles.pyx; losses documented there);
* the batch matrix in factored form, two matrix products per block of queries (section 3.2;
  cyrank/mlr/_constraints.py);
* the restricted problem solved to a certified duality gap <= 0.5 C tol (INNER_TOL) by a primal-dual
  interior-point method (trace, diagonal) or a dual Newton method (frobenius), warm-started, on the active
  constraints (cyrank/mlr/_inner.py). A looser inner tolerance leaves the restricted solution more central,
  which measurably reduces the number of cutting planes (bench/RESULTS.md, MLR); 0.5 C tol keeps the total
  guarantee at 1.5 C tol.

Our initial W is 0 (all points tie, so the first batch is the one of maximal loss); the problem is convex and
solved to tolerance, so the start only changes the number of cutting planes. (The MATLAB code starts from
diag(1/std).) At exit ``objective_`` is the exact objective at ``W_`` (the oracles are exact) and
``lower_bound_`` a certified lower bound on the optimum (the best dual value of the restricted problems); at
convergence ``gap_ = objective_ - lower_bound_ <= C tol`` (stabilised) or
``<= C tol + INNER_TOL C tol`` (``stabilization=0``: new batch violated by <= tol).
"""
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._memory import check_memory
from .._threads import one_blas_thread
from .._validation import (check_class_labels, check_feature_scale, check_n_jobs, check_option, check_param,
                           check_verbose, check_X)
from ..io import register_model
from ..optim.cutting_plane import cutting_plane
from ._constraints import Separation
from ._inner import REGULARIZERS, RestrictedSolver, keep_large, regularizer_value, spectrum

LOSSES = ("auc", "prec@k", "map", "mrr", "ndcg", "knn")

# components_ keeps the eigenvalues of W above this fraction of the largest one
RANK_TOL = 1e-8
# the restricted problem is solved to a certified duality gap of INNER_TOL * C * tol
INNER_TOL = 0.5
# default in-out weight of the stability centre (measured on Wine / WDBC: 0.5 .. 0.8 are all good)
STABILIZATION = 0.7
# relative eigenvalue thresholds tried, coarse to fine, to make the stabilised solution low-rank (_truncate)
TRUNCATE = (1e-2, 1e-3, 1e-4)
# d x d float64 matrices held at the peak of a fit (working set and restricted solver), measured 110-145
METRIC_MATRICES = 128


def _check_metric_budget(n, d):
    """Announce the cost of a full d x d metric before fitting: MemoryError when the working set of d x d
    matrices (measured: a peak of 110-145 d^2 float64 on random data; METRIC_MATRICES) cannot fit in free
    memory, and a warning when there are more features than points (W then has more free entries than the data
    can determine, and every inner iteration eigendecomposes a d x d matrix: 40 points x 600 features take
    about 35 s)."""
    advice = ("project X to fewer dimensions first (e.g. sklearn.decomposition.PCA(n_components=min(n_samples, "
              "n_features))) or use regularizer='diagonal' (O(d) memory)")
    check_memory(METRIC_MATRICES * 8 * d * d, f"MLR with {d} features (about {METRIC_MATRICES} d x d matrices)",
                 advice)
    if d > n:
        warnings.warn(f"MLR: X has {d} features for {n} points: the metric W has d(d+1)/2 = {d * (d + 1) // 2} "
                      f"free entries, more than the data can determine, and every inner iteration eigendecomposes "
                      f"a {d} x {d} matrix (O(d^3)); {advice}", UserWarning, stacklevel=3)


def _check_index_sets(sets, n, name):
    """A sequence of n integer index arrays -> (ptr, idx) int64 CSR, each set unique and within [0, n)."""
    if isinstance(sets, (str, bytes)) or not hasattr(sets, "__len__"):
        raise TypeError(f"{name} must be a sequence of n index arrays (one per query)")
    if len(sets) != n:
        raise ValueError(f"{name} has {len(sets)} entries but X has {n} rows; one entry per training point")
    ptr = np.zeros(n + 1, dtype=np.int64)
    parts = []
    for q, s in enumerate(sets):
        a = np.asarray(s if s is not None else [], dtype=object if s is None else None).ravel()
        if a.size and a.dtype.kind not in "iu":
            if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
                a = a.astype(np.int64)
            else:
                raise TypeError(f"{name}[{q}] must hold integer row indices, got dtype {a.dtype}")
        a = a.astype(np.int64)
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError(f"{name}[{q}] holds an index outside [0, {n})")
        if np.unique(a).size != a.size:
            raise ValueError(f"{name}[{q}] holds a repeated index")
        if np.any(a == q):
            raise ValueError(f"{name}[{q}] contains the query {q} itself")
        parts.append(a)
        ptr[q + 1] = ptr[q] + a.size
    idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return ptr, idx


@register_model
class MLR(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Metric learning to rank: a PSD Mahalanobis matrix W optimised for a ranking loss (McFee & Lanckriet).

    Objective, conventions and algorithm: see the module docstring (cyrank/mlr/estimator.py) and the oracle
    documentation (cyrank/mlr/_oracles.pyx). Follows scikit-learn and metric-learn conventions:
    ``components_`` L with W = L'L, ``transform(X) = X L'``, ``get_mahalanobis_matrix()``, ``pair_distance``.

    Parameters
    ----------
    loss : {"auc", "prec@k", "map", "mrr", "ndcg", "knn"}, default="auc"
        Ranking score whose loss Delta = Score(y*) - Score(y) is optimised:
        AUC; precision at k (denominator k); average precision; reciprocal rank; NDCG@k with binary gains,
        D(1) = 1, D(p) = 1/log2(p) and the ideal DCG as normaliser; knn: 1 if more than half of the k nearest
        points are relevant, else 0 (the binary kNN rule: exact kNN correctness for two classes and odd k).
    k : int >= 1, default=3
        Cut-off of "prec@k", "ndcg" and "knn" (ignored by the other losses).
    C : float > 0, default=1.0
        Slack trade-off.
    regularizer : {"trace", "frobenius", "diagonal"}, default="trace"
        tr(W); 0.5 ||W||_F^2; or sum(w) with W = diag(w), w >= 0 (projection = clipping, no eigendecomposition).
    tol : float > 0, default=0.01
        Cutting-plane tolerance on xi (the paper's accuracy threshold epsilon; 0.01 in its experiments): the same
        name and meaning as RankSVM's hinge ``tol``.
    max_iter : int >= 1, default=1000
        Maximum number of the engine's separation calls (constraints added, with stabilization=0); reaching it
        warns with ConvergenceWarning.
    stabilization : float in [0, 1), default=0.7
        In-out weight alpha of the best point so far: the oracle is called at alpha W_best +
        (1 - alpha) W_restricted and the method stops when objective - lower bound <= C tol (certified).
        0 gives the plain cutting-plane method of the paper (stop when the new batch's violation <= tol).
    n_jobs : int >= 1, -1 or None, default=None
        OpenMP threads for the separation oracles (None = 1, -1 = all cores).
    verbose : int, default=0
        Print one line per cutting plane.
    epsilon : float > 0 or None, default=None
        Deprecated name of ``tol`` (a FutureWarning; when given, it is used as ``tol``).

    Attributes
    ----------
    W_ : ndarray (n_features, n_features)
        The learned PSD matrix.
    components_ : ndarray (rank, n_features)
        L with L'L = W_ up to the eigenvalues of W_ below RANK_TOL times the largest (rows by decreasing
        eigenvalue; one zero row if W_ = 0).
    objective_ : float
        R(W_) + C xi_, evaluated exactly.
    xi_ : float
        The exact slack at W_ (average over queries of the most violated constraint).
    lower_bound_ : float
        Best dual value of the restricted problems: a certified lower bound on the optimal objective.
    gap_ : float
        objective_ - lower_bound_ (at convergence <= C tol, or 1.5 C tol with stabilization=0):
        objective_ is within gap_ of the optimum.
    n_batches_ : int
        Constraints added to the working set.
    n_separations_ : int
        Separation-oracle calls (= n_batches_ + 1 with stabilization=0; stabilised: cutting planes, in-out
        points that cut nothing, and the final truncation tries).
    n_iter_ : int
        Inner-solver iterations, all cutting planes together.
    converged_ : bool
    violation_ : float
        gap_ / C (stabilised), or xi_ minus the working set's slack at W_ (stabilization=0); <= tol when
        converged.
    n_queries_ : int
        Queries with at least one relevant and one irrelevant point (m).
    classes_ : ndarray
        Class labels (fit with y only).
    oracle_time_, inner_time_ : float
        Seconds spent separating (oracles and their matrix products) and in the inner solver.
    n_features_in_ : int
    """

    # what a model file may hold (checked by cyrank.io.load_model; the spec language is documented there)
    _model_schema = {
        "n_features_in_": "int>=1", "W_": "float[d, d]", "components_": "float[*, d]", "classes_": "any[*]?",
        "objective_": "float", "xi_": "float>=0", "lower_bound_": "float", "gap_": "float", "violation_": "float",
        "n_batches_": "int>=0", "n_separations_": "int>=0", "n_iter_": "int>=0", "n_queries_": "int>=0",
        "converged_": "bool", "oracle_time_": "float>=0", "inner_time_": "float>=0",
    }

    def __init__(self, loss="auc", k=3, C=1.0, regularizer="trace", tol=0.01, max_iter=1000,
                 stabilization=STABILIZATION, n_jobs=None, verbose=0, epsilon=None):
        self.loss = loss
        self.k = k
        self.C = C
        self.regularizer = regularizer
        self.tol = tol
        self.max_iter = max_iter
        self.stabilization = stabilization
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.epsilon = epsilon

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False
        return tags

    # ------------------------------------------------------------------------------------------ fitting
    def _check_params(self):
        loss = check_option("loss", self.loss, LOSSES)
        reg = check_option("regularizer", self.regularizer, REGULARIZERS)
        k = check_param("k", self.k, low=1, integer=True)
        C = check_param("C", self.C, low=0, low_open=True)
        if self.epsilon is not None:
            warnings.warn("MLR's epsilon was renamed tol (the name RankSVM uses for the same cutting-plane "
                          "tolerance); epsilon will be removed", FutureWarning, stacklevel=3)
            eps = check_param("epsilon", self.epsilon, low=0, low_open=True)
        else:
            eps = check_param("tol", self.tol, low=0, low_open=True)
        max_iter = check_param("max_iter", self.max_iter, low=1, integer=True)
        alpha = check_param("stabilization", self.stabilization, low=0, high=1, high_open=True)
        n_jobs = check_n_jobs(self.n_jobs) or 1
        verbose = check_verbose(self.verbose)
        return loss, reg, k, C, eps, max_iter, alpha, n_jobs, verbose

    def _relevance(self, X, y, relevance, irrelevant):
        n = X.shape[0]
        if y is None and relevance is None:
            raise ValueError("MLR requires y to be passed, but the target y is None: pass class labels y, "
                             "or relevance= (and optionally irrelevant=) index sets")
        if y is not None and relevance is not None:
            raise ValueError("pass either class labels y or relevance=, not both")
        if irrelevant is not None and relevance is None:
            raise ValueError("irrelevant= needs relevance=")
        if y is not None:
            classes, labels = check_class_labels(y, n, who="MLR", min_count=2)
            return ("labels", labels), classes
        rel_ptr, rel_idx = _check_index_sets(relevance, n, "relevance")
        if irrelevant is None:
            irr_ptr = np.zeros(n + 1, dtype=np.int64)
            parts = []
            mask = np.ones(n, dtype=bool)
            for q in range(n):
                mask[:] = True
                mask[q] = False
                mask[rel_idx[rel_ptr[q]:rel_ptr[q + 1]]] = False
                part = np.flatnonzero(mask)
                parts.append(part)
                irr_ptr[q + 1] = irr_ptr[q] + part.size
            irr_idx = np.concatenate(parts).astype(np.int64)
        else:
            irr_ptr, irr_idx = _check_index_sets(irrelevant, n, "irrelevant")
            for q in range(n):
                if np.intersect1d(rel_idx[rel_ptr[q]:rel_ptr[q + 1]], irr_idx[irr_ptr[q]:irr_ptr[q + 1]]).size:
                    raise ValueError(f"relevance[{q}] and irrelevant[{q}] share an index")
        active = (np.diff(rel_ptr) > 0) & (np.diff(irr_ptr) > 0)
        if not np.any(active):
            raise ValueError("no query has both a relevant and an irrelevant point; nothing to learn")
        return ("sets", rel_ptr, rel_idx, irr_ptr, irr_idx), None

    def fit(self, X, y=None, *, relevance=None, irrelevant=None):
        """Learn W from class labels ``y`` or explicit relevance sets.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
            Training points (dense; sparse input is refused).
        y : array-like (n_samples,), optional
            Class labels: relevant = same class except the query itself, irrelevant = other classes. At least
            two classes, each with at least two members.
        relevance : sequence of n_samples integer arrays, optional
            relevance[q] = indices of the points relevant to query q (instead of y).
        irrelevant : sequence of n_samples integer arrays, optional
            irrelevant[q] = indices of the points irrelevant to q (default: all others except q); points in
            neither set are not ranked for q. Queries without a relevant or an irrelevant point are skipped.
        """
        loss, reg, k, C, eps, max_iter, alpha, n_jobs, verbose = self._check_params()
        X = check_X(X, accept_sparse=False)
        X = np.ascontiguousarray(X, dtype=np.float64)
        n, d = X.shape
        check_feature_scale(X, "MLR")
        if reg != "diagonal":
            _check_metric_budget(n, d)
        rel, classes = self._relevance(X, y, relevance, irrelevant)
        sep = Separation(X, rel, loss, k, n_jobs)
        inner = RestrictedSolver(C, reg, INNER_TOL * C * eps, margin=eps)
        diagonal = reg == "diagonal"
        timing = {"inner": 0.0}

        def separate(w):
            delta, psi, _ = sep(w)
            return delta, (np.diag(psi).copy() if diagonal else psi)

        def solve_restricted(deltas, psis, w):
            t0 = time.perf_counter()
            with one_blas_thread():                                  # tiny matrices: threads only cost
                out = inner(deltas, psis, w)
            timing["inner"] += time.perf_counter() - t0
            return out + (inner.last.dual,)

        w0 = np.zeros(d) if diagonal else np.zeros((d, d))
        res = cutting_plane(separate, solve_restricted, lambda w: regularizer_value(w, reg), w0,
                            C=C, epsilon=eps, max_iter=max_iter, verbose=verbose, stabilize=alpha)
        w, objective, xi, n_sep = res.w, res.objective, res.xi, res.n_separations
        if alpha > 0 and reg != "frobenius":
            w, objective, xi, k = _truncate(w, objective, xi, separate, lambda v: regularizer_value(v, reg), C,
                                            diagonal)
            n_sep += k
        W = np.diag(w) if diagonal else 0.5 * (w + w.T)
        self.W_ = W
        self.components_ = _components(W, diagonal)
        self.objective_ = float(objective)
        self.xi_ = float(xi)
        self.lower_bound_ = max(0.0, float(res.lower_bound))                # 0 <= R + C xi always
        self.gap_ = self.objective_ - self.lower_bound_
        self.n_batches_ = int(res.n_batches)
        self.n_separations_ = int(n_sep)
        self.n_iter_ = int(inner.n_iter)
        self.converged_ = bool(res.converged)
        self.violation_ = self.gap_ / C if alpha > 0 else float(res.violation)
        self.n_queries_ = int(sep.n_active)
        self.oracle_time_ = float(sep.t_oracle + sep.t_products)
        self.inner_time_ = float(timing["inner"])
        self.n_features_in_ = d
        if classes is not None:
            self.classes_ = classes
        elif hasattr(self, "classes_"):                            # refitted with relevance sets
            del self.classes_
        return self

    # ------------------------------------------------------------------------------------------ metric API
    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _check_X(self, X):
        check_is_fitted(self)
        X = check_X(X, accept_sparse=False)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return np.asarray(X, dtype=np.float64)

    def transform(self, X):
        """Embed X in the learned space: X L' (n_samples, rank), so that Euclidean distances there are
        ||x - x'||_W."""
        return self._check_X(X) @ self.components_.T

    def get_mahalanobis_matrix(self):
        """The Mahalanobis matrix L'L of ``components_`` (= W_ up to the dropped tiny eigenvalues)."""
        check_is_fitted(self)
        return self.components_.T @ self.components_

    def _check_pairs(self, pairs):
        check_is_fitted(self)
        pairs = np.asarray(pairs)
        if pairs.ndim != 3 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n_pairs, 2, n_features), got {pairs.shape}")
        if pairs.shape[0] == 0:
            raise ValueError("pairs is empty")
        a = self._check_X(pairs[:, 0, :])
        b = self._check_X(pairs[:, 1, :])
        return a, b

    def pair_distance(self, pairs):
        """||x - x'||_W for every pair of ``pairs`` (n_pairs, 2, n_features) (metric-learn >= 0.7)."""
        a, b = self._check_pairs(pairs)
        diff = (b - a) @ self.components_.T
        return np.sqrt(np.sum(diff ** 2, axis=1))

    def pair_score(self, pairs):
        """-||x - x'||_W (higher = more similar; metric-learn >= 0.7)."""
        return -self.pair_distance(pairs)

    def score_pairs(self, pairs):
        """||x - x'||_W for every pair: deprecated (as in metric-learn 0.7), use :meth:`pair_distance`."""
        warnings.warn("MLR.score_pairs is deprecated and will be removed; use pair_distance (the same values) or "
                      "pair_score (their negatives)", FutureWarning, stacklevel=2)
        return self.pair_distance(pairs)

    def get_metric(self):
        """A function ``metric(u, v) -> ||u - v||_W`` usable as a scikit-learn ``metric=`` callable."""
        check_is_fitted(self)
        L = self.components_.copy()

        def metric(u, v):
            diff = L @ (np.asarray(u, dtype=np.float64).ravel() - np.asarray(v, dtype=np.float64).ravel())
            return float(np.sqrt(diff @ diff))

        return metric


def _truncate(w, objective, xi, separate, regularizer, C, diagonal):
    """``(w, objective, xi, separations)``: the first w_tau, tau in TRUNCATE, whose exact objective (one
    separation each) is not larger than w's, where w_tau is w without its eigen-components (entries, for a
    diagonal w) below tau times the largest; else w itself. The stabilised engine returns a convex combination
    of restricted solutions, full-rank even when each of them is low-rank (the point of the trace, McFee & Lanckriet 2010, section 3.1)."""
    lam, V = spectrum(w, diagonal)
    top = float(np.max(lam)) if lam.size else 0.0
    n = 0
    for tau in TRUNCATE:
        if top <= 0 or not np.any((lam > 0) & (lam <= tau * top)):    # nothing (more) to drop
            break
        wt = keep_large(lam, V, tau)
        delta, psi = separate(wt)
        n += 1
        xt = max(0.0, float(delta) - float(np.vdot(wt, psi)))
        ft = regularizer(wt) + C * xt
        if ft <= objective:
            return wt, ft, xt, n
    return w, objective, xi, n


def _components(W, diagonal=False):
    """L (rank x d) with L'L = W, eigenvalues below RANK_TOL * max dropped; rows by decreasing eigenvalue
    (for a diagonal W the rows are scaled unit vectors: no eigendecomposition)."""
    lam, V = spectrum(np.diag(W) if diagonal else W, diagonal)
    if diagonal:
        order = np.argsort(lam, kind="stable")
        lam, V = lam[order], np.eye(W.shape[0])[:, order]
    top = float(lam[-1]) if lam.size else 0.0
    keep = lam > RANK_TOL * top if top > 0 else np.zeros(lam.size, dtype=bool)
    if not np.any(keep):
        return np.zeros((1, W.shape[0]))
    lam, V = lam[keep][::-1], V[:, keep][:, ::-1]
    return np.sqrt(lam)[:, None] * V.T
