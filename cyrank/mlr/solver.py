"""MLR's functional layer (metric learning to rank; McFee & Lanckriet, "Metric Learning to Rank", ICML 2010):
validated arrays in; the metric W, objective, certified gap and n_iter out (no scikit-learn import; the estimator
in estimator.py is a thin wrapper).

Every training point q is a query; its relevant points X+_q are the other members of its class (or an explicit
set), its irrelevant points X-_q the members of other classes (or an explicit set). Points are ranked by
increasing distance ||q - i||_W = sqrt((q - i)' W (q - i)), i.e. by decreasing score <W, phi(q, i)>,
phi(q, i) = -(q - i)(q - i)' (eq. 4). With the partial-order feature map psi normalised by |X+_q| |X-_q| (eq. 3)
and Delta = Score(y*) - Score(y) (section 4), MLR solves

    min_W  R(W) + C xi,   xi = (1/m) sum_q max_y [Delta(y*_q, y) + <W, psi(q, y) - psi(q, y*_q)>],

over W PSD, m the number of queries with at least one relevant and one irrelevant point (the active queries), and
R(W) = tr(W) ("trace", section 3.1: an l1 penalty on the eigenvalues, so W is low-rank), 0.5 ||W||_F^2
("frobenius"), or sum(w) with W = diag(w), w >= 0 ("diagonal"). The trace is NOT divided by d (the original
MATLAB code minimises tr(W)/d + C xi, i.e. our C times d).

Query weights (``sample_weight``, one v_q >= 0 per training point, i.e. per query): the mean over the active
queries becomes the weighted mean, xi = sum_q v_q xi_q / sum_q v_q, so that unit weights are the problem above
and an integer v_q is query q repeated v_q times as a query (its points stay in the database once; 0 leaves the
query out, not its points). In the 1-slack form the cutting plane is the weighted mean of the queries' psi
differences and losses (cyrank/mlr/_constraints.py); tol keeps its meaning (xi's scale does not change).

Algorithm 1 of McFee & Lanckriet (2010): the shared 1-slack cutting-plane engine (cyrank.optim.cutting_plane) with

* in-out stabilisation (``stabilization`` = alpha, default 0.7): the oracle is called at
  alpha W_best + (1 - alpha) W_restricted instead of the restricted solution W_restricted (Kelley's method of
  the paper, alpha = 0), and the method stops on the certified gap objective - lower bound <= C tol. On
  WDBC MLR-AUC at C = 1e5 this cuts the cutting planes from ~90 to ~35 (bench/HISTORY.md, MLR). The best
  point is a convex combination of iterates, so its tiny eigen-components are then dropped when that does not
  raise the objective (one separation per try);
* exact separation oracles in Cython (cyrank/mlr/_oracles.pyx; losses documented there);
* the batch matrix in factored form, two matrix products per block of queries (section 3.2;
  cyrank/mlr/_constraints.py);
* the restricted problem solved to a certified duality gap <= 0.5 C tol (Options.inner_tol) by a primal-dual
  interior-point method (trace, diagonal) or a dual Newton method with an interior-point fallback (frobenius),
  warm-started, on the active constraints (cyrank/mlr/_inner.py). A looser inner tolerance leaves the restricted
  solution more central, which measurably reduces the number of cutting planes (bench/HISTORY.md, MLR); 0.5 C tol
  keeps the total guarantee at 1.5 C tol.

Our initial W is 0 (all points tie, so the first batch is the one of maximal loss); the problem is convex and
solved to tolerance, so the start only changes the number of cutting planes. (The MATLAB code starts from
diag(1/std).) At exit ``objective_`` is the exact objective at ``W_`` (the oracles are exact) and
``lower_bound_`` a certified lower bound on the optimum (the best dual value of the restricted problems); at
convergence ``gap_ = objective_ - lower_bound_ <= C tol`` (stabilised) or
``<= C tol + inner_tol C tol`` (``stabilization=0``: new batch violated by <= tol).
"""
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._memory import check_memory
from .._result import SolveResult
from .._threads import one_blas_thread
from .._validation import check_options
from .._validation import (check_class_labels, check_feature_scale, check_n_jobs, check_option, check_param,
                           check_sample_weight, check_verbose, check_X)
from ..metrics import parse_metric_name
from ..optim.cutting_plane import WorkingSet, cutting_plane, cutting_plane_history
from ._constraints import Separation
from ._inner import REGULARIZERS, RestrictedSolver, keep_large, regularizer_value, spectrum

LOSSES = ("auc", "prec@k", "map", "mrr", "ndcg", "knn")  # the oracles' names (_oracles.LOSSES)
# the loss names of cyrank.metrics.parse_metric_name's grammar ("p" is canonical for precision at k) and those
# that take a cut-off ("p@5"; without one, the ``k`` parameter is used)
LOSS_NAMES = ("auc", "p", "map", "mrr", "ndcg", "knn")
CUT_OFF_LOSSES = ("p", "ndcg", "knn")
# default in-out weight of the stability centre (measured on Wine / WDBC: 0.5 .. 0.8 are all good)
STABILIZATION = 0.7


@dataclass(frozen=True)
class Options:
    """Tuning of the solver: the defaults are the measured best (bench/HISTORY.md); the optimum reached does not
    depend on them (the certified gap is what it is).

    Attributes
    ----------
    inner_tol : float, default=0.5
        The restricted problem is solved to a certified duality gap of inner_tol * C * tol.
    truncate : tuple, default=(1e-2, 1e-3, 1e-4)
        Relative eigenvalue thresholds tried, coarse to fine, to make the stabilised solution low-rank (_truncate);
        () never truncates.
    rank_tol : float, default=1e-8
        ``components`` keeps the eigenvalues of W above this fraction of the largest one.
    metric_matrices : int, default=128
        d x d float64 matrices held at the peak of a fit (working set and restricted solver), measured 110-145: the
        memory check before a fit.
    patience : int, default=5
        A constraint idle (slack at the restricted solution) in this many consecutive solves is left out of the
        interior-point solves, and re-admitted when violated (RestrictedSolver); the working set itself is never
        shrunk (dropping constraints for good stalls MLR's in-out method: measured, WDBC and Wine did not converge
        within 1000 separations).
    """

    inner_tol: float = 0.5
    truncate: tuple = (1e-2, 1e-3, 1e-4)
    rank_tol: float = 1e-8
    metric_matrices: int = 128
    patience: int = 5


def _check_metric_budget(n, d, metric_matrices):
    """Announce the cost of a full d x d metric before fitting: MemoryError when the working set of d x d
    matrices (measured: a peak of 110-145 d^2 float64 on random data; metric_matrices) cannot fit in free
    memory, and a warning when there are more features than points (W then has more free entries than the data
    can determine, and every inner iteration eigendecomposes a d x d matrix: 40 points x 600 features take
    about 35 s)."""
    advice = ("project X to fewer dimensions first (e.g. sklearn.decomposition.PCA(n_components=min(n_samples, "
              "n_features))) or use regularizer='diagonal' (O(d) memory)")
    check_memory(metric_matrices * 8 * d * d, f"MLR with {d} features (about {metric_matrices} d x d matrices)",
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


def _relevance(X, y, relevance, irrelevant):
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


def parse_loss(loss, k):
    """(the oracle's loss name, k) from ``loss`` and ``k``.

    ``loss`` follows :func:`cyrank.metrics.parse_metric_name` (case-insensitive ``name[@k]``): "auc", "p" (precision
    at k; canonical), "map", "mrr", "ndcg" or "knn"; "p", "ndcg" and "knn" may carry their cut-off ("p@5"), which
    then replaces ``k``. The older spelling "prec@k" (literally, k from ``k``) is "p" and still accepted."""
    spec = str(loss).strip()
    if spec.lower() in ("prec@k", "p@k"):
        spec = "p"
    try:
        name, cut = parse_metric_name(spec, LOSS_NAMES, CUT_OFF_LOSSES, what="loss")  # the one grammar of names
    except ValueError as err:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSS_NAMES))} (or 'prec@k', the older name of "
                         f"'p'), with '@k' allowed on {', '.join(CUT_OFF_LOSSES)} to set the cut-off; got {loss!r}: "
                         f"{err}") from None
    k = check_param("k", k, low=1, integer=True)
    return ("prec@k" if name == "p" else name), (k if cut is None else cut)


def check_params(*, loss, k, C, regularizer, tol, max_iter, stabilization, n_jobs, verbose):
    """Every parameter of :func:`solve` checked (a ValueError naming the first bad one), as the values used."""
    loss, k = parse_loss(loss, k)
    return (loss, check_option("regularizer", regularizer, REGULARIZERS),
            k, check_param("C", C, low=0, low_open=True),
            check_param("tol", tol, low=0, low_open=True), check_param("max_iter", max_iter, low=1, integer=True),
            check_param("stabilization", stabilization, low=0, high=1, high_open=True), check_n_jobs(n_jobs) or 1,
            check_verbose(verbose))


def solve(X, y=None, *, relevance=None, irrelevant=None, loss="auc", k=3, C=1.0, regularizer="trace", tol=0.01,
          max_iter=1000, stabilization=STABILIZATION, n_jobs=None, verbose=0, options=None, sample_weight=None):
    """Learn W (module docstring) from class labels ``y`` or explicit ``relevance`` (and ``irrelevant``) sets,
    with optional query weights ``sample_weight`` (n values >= 0, one per point as a query:
    xi = sum_q v_q xi_q / sum_q v_q; None: the plain mean).

    Parameters are those of :class:`cyrank.MLR` and of its ``fit`` (same names, same meaning), plus ``options``,
    an :class:`Options`. Returns a :class:`cyrank._result.SolveResult` with ``W``, ``components``, ``objective``,
    ``xi``, ``lower_bound``, ``gap`` (the optimality measure), ``violation``, ``n_batches``, ``n_separations``,
    ``n_iter``, ``converged``, ``n_queries``, ``oracle_time``, ``inner_time``, ``n_features_in`` and, when fitted on
    labels, ``classes``. When the solver stops on ``max_iter``, ``converged`` is False and ``message``
    says so (no warning is issued here).
    """
    loss, reg, k, C, eps, max_iter, alpha, n_jobs, verbose = check_params(
        loss=loss, k=k, C=C, regularizer=regularizer, tol=tol, max_iter=max_iter, stabilization=stabilization,
        n_jobs=n_jobs, verbose=verbose)
    options = check_options(options, Options, "cyrank.mlr.solve")
    X = check_X(X, accept_sparse=False)
    # float32 X is copied to float64 once, on purpose (issue 28): the copy is n x d, small next to what a fit holds
    # anyway (n x n score blocks, about Options.metric_matrices d x d matrices: 0.48 MB against a 72 MB peak at
    # 2,000 x 30), and a separation's time goes to the oracles' sorts, not to the products float32 would speed up
    # (600 x 30: 20.6 ms with float32 products, 20.7 ms without), while float32 scores may reorder near-ties
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    check_feature_scale(X, "MLR")
    if reg != "diagonal":
        _check_metric_budget(n, d, options.metric_matrices)
    weight = check_sample_weight(sample_weight, n, what="query")
    rel, classes = _relevance(X, y, relevance, irrelevant)
    sep = Separation(X, rel, loss, k, n_jobs, weight)
    inner = RestrictedSolver(C, reg, options.inner_tol * C * eps, margin=eps, patience=options.patience)
    diagonal = reg == "diagonal"
    timing = {"inner": 0.0}

    def separate(w):
        delta, psi, _ = sep(w)
        return delta, (np.diag(psi).copy() if diagonal else psi)

    def solve_restricted(ws):
        t0 = time.perf_counter()
        out = inner(ws)
        timing["inner"] += time.perf_counter() - t0
        return out

    w0 = np.zeros(d) if diagonal else np.zeros((d, d))
    ws = WorkingSet(w0.shape)
    # BLAS on one thread for the whole fit (threads are the oracles', n_jobs): its products are n x n x d and
    # d x d, too small to share; with BLAS's threads on a 2-core machine WDBC's separations took 33 ms instead of 9
    with one_blas_thread():
        res = cutting_plane(separate, solve_restricted, lambda w: regularizer_value(w, reg), w0,
                            C=C, epsilon=eps, max_iter=max_iter, verbose=verbose, stabilize=alpha, working_set=ws)
        w, objective, xi, n_sep = res.x, res.objective, res.info["xi"], res.info["n_separations"]
        if alpha > 0 and reg != "frobenius":
            w, objective, xi, n_trunc = _truncate(w, objective, xi, separate, lambda v: regularizer_value(v, reg),
                                                  C, diagonal, options.truncate)
            n_sep += n_trunc
    W = np.diag(w) if diagonal else 0.5 * (w + w.T)
    lower = max(0.0, float(res.info["lower_bound"]))                    # 0 <= R + C xi always
    gap = float(objective) - lower
    message = ""
    if not res.converged:
        unsolved = (f" ({inner.n_unsolved} restricted problems stopped short of their tolerance)"
                    if inner.n_unsolved else "")
        message = f"MLR: {res.message}{unsolved}"
    return SolveResult(
        W=W, components=_components(W, diagonal, options.rank_tol), objective=float(objective), xi=float(xi),
        lower_bound=lower, gap=gap, n_batches=int(res.n_iter), n_separations=int(n_sep),
        n_iter=int(inner.n_iter), converged=bool(res.converged),
        violation=gap / C if alpha > 0 else float(res.optimality), n_queries=int(sep.n_active),
        oracle_time=float(sep.t_oracle + sep.t_products), inner_time=float(timing["inner"]), n_features_in=d,
        history=cutting_plane_history(res), optimality_name="gap", message=message,
        **({} if classes is None else {"classes": classes}))



def _truncate(w, objective, xi, separate, regularizer, C, diagonal, thresholds):
    """``(w, objective, xi, separations)``: the first w_tau, tau in ``thresholds``, whose exact objective (one
    separation each) is not larger than w's, where w_tau is w without its eigen-components (entries, for a
    diagonal w) below tau times the largest; else w itself. The stabilised engine returns a convex combination
    of restricted solutions, full-rank even when each of them is low-rank (the point of the trace, McFee &
    Lanckriet 2010, section 3.1)."""
    lam, V = spectrum(w, diagonal)
    top = float(np.max(lam)) if lam.size else 0.0
    n = 0
    for tau in thresholds:
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


def _components(W, diagonal=False, rank_tol=1e-8):
    """L (rank x d) with L'L = W, eigenvalues below rank_tol * max dropped; rows by decreasing eigenvalue
    (for a diagonal W the rows are scaled unit vectors: no eigendecomposition)."""
    lam, V = spectrum(np.diag(W) if diagonal else W, diagonal)
    if diagonal:
        order = np.argsort(lam, kind="stable")
        lam, V = lam[order], np.eye(W.shape[0])[:, order]
    top = float(lam[-1]) if lam.size else 0.0
    keep = lam > rank_tol * top if top > 0 else np.zeros(lam.size, dtype=bool)
    if not np.any(keep):
        return np.zeros((1, W.shape[0]))
    lam, V = lam[keep][::-1], V[:, keep][:, ::-1]
    return np.sqrt(lam)[:, None] * V.T
