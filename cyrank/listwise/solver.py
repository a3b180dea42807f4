"""Linear listwise ranking, the functional layer: ListNet / softmax cross-entropy and ListMLE (validated arrays in,
numbers out; no scikit-learn import).

With f = X w and the rows grouped by query q, the objective is a sum over queries plus the penalty

    F(w) = sum_q L_q(f) + R(w),   R = alpha ||w||^2 ("l2", not halved, the default), alpha ||w||_1 ("l1") or
                                      alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2) ("elasticnet"),

row weights w_i (``sample_weight``, default 1) multiplying the terms where row i is the target / numerator (the
inverse-propensity convention of issue 29). ``loss="listnet"`` (Cao, Qin, Liu, Tsai & Li, "Learning to Rank: From
Pairwise Approach to Listwise Approach", ICML 2007, section 4, top-one probabilities; the softmax cross-entropy of
Bruch, Wang, Bendersky & Najork, "An Analysis of the Softmax Cross Entropy Loss for Learning-to-Rank with Binary
Relevance", ICTIR 2019):

    L_q = sum_{i in q} w_i p_i (LSE_q(f) - f_i),   LSE_q(f) = log sum_{j in q} exp(f_j),

with the target distribution p given by ``target``: "exp" (default, Cao et al.'s phi = exp) p_i = exp(y_i) /
sum_j exp(y_j); "gain" p_i = (2^y_i - 1) / sum_j (2^y_j - 1) (a query whose labels are all 0 contributes nothing);
"xendcg" p_i = (2^y_i - g_i) / sum_j (2^y_j - g_j) (XE-NDCG, Bruch, WWW 2021), g_i ~ U(0, 1) drawn once per fit
as ``np.random.default_rng(random_state).random(n)`` over the rows in input order (random_state=None means 0, so
that fits are reproducible; LightGBM's rank_xendcg redraws g every round, a linear fit fixes it so that the
objective, hence its optimum, is exact).

``loss="listmle"`` (Xia, Liu, Wang, Zhang & Li, "Listwise Approach to Learning to Rank: Theory and Algorithm",
ICML 2008, section 3, the Plackett-Luce likelihood of the label order) with ties by Efron's rule (Efron, "The
Efficiency of Cox's Likelihood Function for Censored Data", JASA 1977): the rows sorted by decreasing label into
tie groups; position t (0-based) of group G of m rows, r = t - start(G),

    D_t = sum_{j below G} exp(f_j) + (1 - r/m) sum_{j in G} exp(f_j),   l_t = (1/m) sum_{j in G} w_j (log D_t - f_j),
    L_q = sum_{t < min(top_k, n_q)} l_t  (top_k=None: every position).

Efron's D_t is the expectation of the Plackett-Luce denominator over the orders of the tie group (the exact
expectation of the likelihood over the m! orders is exponential in m; Efron's rule is the tractable one).
``ties="breslow"`` (Breslow 1974): D_t = sum_{j below G} exp f_j + sum_{j in G} exp f_j for every t of G. Without
ties both are plain ListMLE. Every L_q is convex in f (log-sum-exps minus a linear term), hence F in w.

Solver: TRON (trust-region Newton-CG, exact Hessian products) for "l2", proximal Newton with working sets for
"l1" / "elasticnet", through the shared driver cyrank.optim.datafit.minimise, with the certificates of
cyrank.optim.certificate (``gap``, ``gap_kind``). The loss, gradient in f, H u and diag(H) come from the Cython
kernel _loss.pyx (O(n) per query; the label order and the tie groups computed once per fit), in one pass over X
per evaluation or Hessian product: each query's rows are read once, while in cache, for its scores X w and for
X' of its gradient (the shared row helpers of cyrank/_rows.pxd, as linear RankNet's kernel; X never copied,
float32 read as float32, sums in float64). Two passes through cyrank._linear.LinearX (X w, then X' g) measured
17.9 ms against 8.7 ms for the fused one on 1e5 x 136 float32 rows, one thread.
"""
import warnings

import numpy as np

from .._linear import LinearX, product_parts
from .._queries import QueryGroups
from .._result import SolveResult
from .._threads import one_blas_thread
from .._validation import (check_coef, check_gain_labels, check_option, check_param, check_qid, check_ranking_data,
                           check_sample_weight, check_verbose, check_y, RankingDataWarning)
from ..optim.certificate import group_column_squares
from ..optim.datafit import Datafit, minimise, solve_result
from ..optim.penalties import Penalty, penalty_weights
from . import _loss

LOSSES = ("listnet", "listmle")
TARGETS = ("exp", "gain", "xendcg")
TIES = ("efron", "breslow")
INT64_MAX = 2**63 - 1
BLOCK_BYTES = 1 << 30  # hessian_block forms X_ws and H_f X_ws (float64) up to this size, else Hessian products
DEFAULT_SEED = 0  # random_state=None: the noise of target="xendcg" drawn from seed 0 (reproducible fits)


# ------------------------------------------------------------------------------------------------ parameters
def check_random_state(random_state):
    """``random_state`` for the noise of target="xendcg", as np.random.default_rng takes it: None (seed 0, so
    fits are reproducible), an int >= 0, or a numpy Generator; a numpy RandomState gives a seed drawn from it.
    A Generator or RandomState is drawn from at every use (successive fits differ, as in scikit-learn)."""
    if random_state is None or isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, (int, np.integer)) \
            or random_state < 0:
        raise ValueError(f"random_state must be None, an int >= 0, a numpy Generator or RandomState (it seeds "
                         f"np.random.default_rng for target='xendcg'), got {random_state!r}; e.g. random_state=0 "
                         f"for a reproducible fit")
    return int(random_state)


def check_top_k(top_k):
    """None (every position) or an int in [1, 2**63 - 1]."""
    if top_k is None:
        return None
    top_k = check_param("top_k", top_k, low=1, integer=True)
    if top_k > INT64_MAX:
        raise ValueError(f"top_k={top_k!r} is above 2**63 - 1; pass top_k=None for every position")
    return top_k


def check_params(*, loss="listnet", target="exp", ties="efron", top_k=None, penalty="l2", alpha=1.0, l1_ratio=0.5,
                 tol=1e-6, max_iter=1000, early_stopping_rounds=None, random_state=None, verbose=0):
    """The parameters of :func:`solve` checked; returns a dict of the checked values. ``target`` only applies to
    ListNet and ``ties`` / ``top_k`` only to ListMLE (the other loss ignores them)."""
    loss = check_option("loss", loss, LOSSES)
    out = dict(loss=loss, target=check_option("target", target, TARGETS), ties=check_option("ties", ties, TIES),
               top_k=check_top_k(top_k), penalty=penalty, alpha=check_param("alpha", alpha, low=0.0),
               l1_ratio=l1_ratio, tol=check_param("tol", tol, low=0.0, low_open=True),
               max_iter=check_param("max_iter", max_iter, low=1, integer=True),
               early_stopping_rounds=check_param("early_stopping_rounds", early_stopping_rounds, low=1,
                                                 integer=True, none_ok=True),
               random_state=check_random_state(random_state), verbose=check_verbose(verbose))
    out["lam1"], out["lam2"] = penalty_weights(penalty, alpha, l1_ratio)
    if out["early_stopping_rounds"] is not None and out["lam1"]:
        raise ValueError(f"early_stopping_rounds needs penalty='l2' (TRON, whose iterates are scored on eval_set); "
                         f"penalty={penalty!r} is solved by proximal Newton, which has no per-iteration hook")
    return out


def check_listnet_params(*, target="exp", penalty="l2", alpha=1.0, l1_ratio=0.5, tol=1e-6, max_iter=1000,
                         early_stopping_rounds=None, random_state=None, verbose=0):
    """:func:`check_params` with loss="listnet": the check of :class:`cyrank.listwise.ListNet`'s parameters."""
    return check_params(loss="listnet", target=target, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, tol=tol,
                        max_iter=max_iter, early_stopping_rounds=early_stopping_rounds, random_state=random_state,
                        verbose=verbose)


def check_listmle_params(*, ties="efron", top_k=None, penalty="l2", alpha=1.0, l1_ratio=0.5, tol=1e-6, max_iter=1000,
                         early_stopping_rounds=None, verbose=0):
    """:func:`check_params` with loss="listmle": the check of :class:`cyrank.listwise.ListMLE`'s parameters."""
    return check_params(loss="listmle", ties=ties, top_k=top_k, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                        tol=tol, max_iter=max_iter, early_stopping_rounds=early_stopping_rounds, verbose=verbose)


# ------------------------------------------------------------------------------------------------ layout
def targets(y, groups, perm, target, random_state, noise=None):
    """p at the positions ``perm`` (the target distribution of each query, module docstring); xendcg's g is
    ``noise`` (one value in [0, 1) per row, input order) when given, else drawn from ``random_state``."""
    n = y.shape[0]
    ys = y[perm]
    starts = groups.offsets[:-1]
    qpos = np.repeat(np.arange(groups.n_queries), groups.sizes)
    if target == "exp":
        num = np.exp(ys - np.maximum.reduceat(ys, starts)[qpos]) if n else ys
    else:
        check_gain_labels(y, f"target={target!r}", hint="; use target='exp' for labels of any scale")
        if target == "gain":
            num = np.exp2(ys) - 1.0
        else:
            g = noise if noise is not None else \
                np.random.default_rng(DEFAULT_SEED if random_state is None else random_state).random(n)
            num = np.exp2(ys) - g[perm]
    den = np.add.reduceat(num, starts)[qpos] if n else num
    return np.divide(num, den, out=np.zeros(n), where=den > 0)


class Prepared:
    """The rows of (y, qid) laid out once for the kernel (_loss.Layout): queries, labels decreasing inside each,
    tie groups, the per-row coefficients (ListNet: w_i p_i; ListMLE: w_i). ``groups``: the QueryGroups."""

    def __init__(self, y, qid, *, loss="listnet", target="exp", ties="efron", top_k=None, sample_weight=None,
                 random_state=None, parallel_min_rows=-1, of="X"):
        loss = check_option("loss", loss, LOSSES)
        target = check_option("target", target, TARGETS)
        ties = check_option("ties", ties, TIES)
        top_k = check_top_k(top_k)
        random_state = check_random_state(random_state)
        n = y.shape[0]
        w = check_sample_weight(sample_weight, n, of=of)
        groups = QueryGroups(qid)  # the tie groups below; QueryGroups' label runs are not needed
        qidx = groups.query_index()
        perm = np.lexsort((-y, qidx)).astype(np.int64)  # queries in id order, labels decreasing, stable
        qs, ys = qidx[perm], y[perm]
        new = np.r_[True, (qs[1:] != qs[:-1]) | (ys[1:] != ys[:-1])] if n else np.zeros(0, bool)
        starts = np.flatnonzero(new)
        sizes = np.diff(np.r_[starts, n])
        gstart = np.repeat(starts, sizes).astype(np.int64)
        gend = np.repeat(starts + sizes, sizes).astype(np.int64)
        wp = np.ones(n) if w is None else w[perm]
        if loss == "listnet":
            coef, kind = wp * targets(y, groups, perm, target, random_state), _loss.LISTNET
        else:
            coef, kind = wp, _loss.LISTMLE
        self.loss, self.target, self.ties, self.top_k = loss, target, ties, top_k
        self.groups, self.perm, self.sample_weight = groups, perm, w
        self._y, self._wp = y, wp
        self.layout = _loss.Layout(perm, groups.offsets, gstart, gend, coef, kind, ties == "efron", top_k or 0,
                                   parallel_min_rows)
        self.n = n
        self.n_tie_groups = int(starts.size)  # == n_queries: no query has two different labels

    def set_noise(self, g):
        """Redraw ListNet's xendcg target with the noise ``g`` (n values in [0, 1), input row order): the kernel's
        coefficients become w_i p_i, p_i = (2^y_i - g_i) / sum_{j in q} (2^y_j - g_j). A tree learner redraws it
        every boosting round, as LightGBM's rank_xendcg."""
        if (self.loss, self.target) != ("listnet", "xendcg"):
            raise ValueError(f"set_noise redraws the xendcg target of ListNet; this loss is {self.loss!r} with "
                             f"target {self.target!r}")
        g = np.asarray(g, dtype=np.float64)
        if g.shape != (self.n,) or not np.all((g >= 0) & (g < 1)):
            raise ValueError(f"the xendcg noise must be {self.n} values in [0, 1), one per row")
        self.layout.coef = self._wp * targets(self._y, self.groups, self.perm, "xendcg", None, noise=g)

    def new_state(self):
        return _loss.State(self.n)

    def evaluate(self, f, g, state, qloss=None):
        """sum_q L_q(f) (f: float64 scores in input order); g = dL/df; the Hessian state into ``state``."""
        qloss = np.empty(self.groups.n_queries) if qloss is None else qloss
        return _loss.evaluate(self.layout, f, g, state, qloss)


# ------------------------------------------------------------------------------------------------ the datafit
class ListwiseLoss(Datafit):
    """sum_q L_q(X w) (module docstring) as a :class:`cyrank.optim.datafit.Datafit`: loss, gradient X' dL/df
    (+ 2 ridge w) and Hessian products X' H X v (+ 2 ridge v), each one pass over X query by query (_loss.pyx:
    a query's rows are read once, while in cache, for its scores and for X' of its gradient); X never copied
    (cyrank._linear.product_parts), the work vectors allocated once."""

    def __init__(self, X, prepared):
        self.X, self.prep = X, prepared
        self.parts = product_parts(X)
        self.n_rows, self.n_features = X.shape
        n = self.n_rows
        self._g, self._t, self._u, self._work = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        self._qloss = np.empty(prepared.groups.n_queries)
        self._squares = None
        self._cols = {}  # column r of X in float64, for hessian_block
        super().__init__()

    def column_squares(self):
        """Within-query centred squares of X's columns (every L_q is invariant to a shift of its query's scores)."""
        if self._squares is None:
            self._squares = group_column_squares(self.X, self.prep.groups.offsets, self.prep.perm)
        return self._squares

    def new_state(self):
        return self.prep.new_state()

    def evaluate(self, w, Mw, state):
        w = np.ascontiguousarray(w, dtype=np.float64)
        grad = np.empty(self.n_features)
        loss = _loss.evaluate_x(self.parts, self.prep.layout, w, state, self._g, self._qloss, grad)
        if self.ridge:
            grad += 2.0 * self.ridge * w
        return loss + self.ridge * float(w @ w), grad

    def hessian_block(self, ws):
        """H[ws, ws] at the point of the last ``grad`` call (proximal Newton's model): X_ws' (H_f X_ws) + 2 ridge I,
        H_f applied to the columns of X_ws by the kernel (O(n) each) and the product by one BLAS call, instead of
        |ws| Hessian products (each two passes over X). The columns of X read so far are kept in float64 (the
        working set grows from iteration to iteration: each column is gathered from X once per fit). Falls back
        to the products when they would take more than BLOCK_BYTES."""
        ws = np.ascontiguousarray(ws, dtype=np.int64)
        k, n = ws.size, self.n_rows
        if k == 0 or 8 * n * (k + len(self._cols)) > BLOCK_BYTES:
            return super().hessian_block(ws)
        new = [int(r) for r in ws if int(r) not in self._cols]
        if new:
            block = self.X[:, new]
            block = np.asfortranarray(block.toarray() if hasattr(block, "toarray") else block, dtype=np.float64)
            for j, r in enumerate(new):
                self._cols[r] = block[:, j]
        HZ = np.empty((n, k), order="F")
        Xw = np.empty((n, k), order="F")
        for j, r in enumerate(ws):
            Xw[:, j] = self._cols[int(r)]
            _loss.hess_vec(self.prep.layout, self.state, Xw[:, j], HZ[:, j], self._work)
        with one_blas_thread():
            H = Xw.T @ HZ
        H = 0.5 * (H + H.T)
        H[np.diag_indices(k)] += 2.0 * self.ridge
        return H

    def hessian_product(self, state, v, Mv):
        v = np.ascontiguousarray(v, dtype=np.float64)
        out = np.empty(self.n_features)
        _loss.hess_vec_x(self.parts, self.prep.layout, v, state, self._t, self._u, self._work, out)
        if self.ridge:
            out += 2.0 * self.ridge * v
        return out


def _zero_is_optimal(prep):
    """Whether w = 0 is exactly optimal whatever X: no query has two different labels and the weights are
    constant within each query (then every L_q is minimal at equal scores: its gradient there is 0), and no noise
    (target="xendcg") makes the targets unequal. TRON would chase the rounding error of that zero gradient."""
    if prep.n_tie_groups != prep.groups.n_queries or (prep.loss == "listnet" and prep.target == "xendcg"):
        return False
    if prep.sample_weight is None or prep.n == 0:
        return True
    wp, starts = prep.sample_weight[prep.perm], prep.groups.offsets[:-1]
    return bool(np.all(np.maximum.reduceat(wp, starts) == np.minimum.reduceat(wp, starts)))


def _prepare(X, y, qid, *, loss, target, ties, top_k, sample_weight, random_state):
    X, y, qid = check_ranking_data(X, y, qid)
    prep = Prepared(y, qid, loss=loss, target=target, ties=ties, top_k=top_k, sample_weight=sample_weight,
                    random_state=random_state)
    return X, y, qid, prep


def loss(X, y, qid=None, *, loss="listnet", target="exp", ties="efron", top_k=None, sample_weight=None,
         random_state=None):
    """The listwise loss sum_q L_q(X w) on (X, y, qid), no penalty (module docstring), as a
    :class:`cyrank.optim.datafit.Datafit` (``fun``, ``grad``, ``hess_vec``, ``n_features``, ``n_rows``,
    ``column_squares()``, ``gradient_noise`` 0), for :func:`cyrank.optim.datafit.minimise` or cyrank.dask. w is in
    X's column order: ``loss(X, y, qid).fun(w) == objective(w, X, y, qid, alpha=0)``."""
    X, y, qid, prep = _prepare(X, y, qid, loss=loss, target=target, ties=ties, top_k=top_k,
                               sample_weight=sample_weight, random_state=random_state)
    return ListwiseLoss(X, prep)


def objective(coef, X, y, qid=None, *, loss="listnet", target="exp", ties="efron", top_k=None, penalty="l2",
              alpha=1.0, l1_ratio=0.5, sample_weight=None, random_state=None):
    """F(coef) = sum_q L_q(X coef) + R(coef) (module docstring) on (X, y, qid), in float64."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    X, y, qid, prep = _prepare(X, y, qid, loss=loss, target=target, ties=ties, top_k=top_k,
                               sample_weight=sample_weight, random_state=random_state)
    coef = check_coef(coef, X.shape[1])
    f = LinearX(X).dot(coef)
    return prep.evaluate(f, np.empty(X.shape[0]), prep.new_state()) + Penalty(lam1, lam2).value(coef)


class _EarlyStop(Exception):
    pass


def _ndcg10(y, scores, qid):
    from ..metrics import ndcg_score

    return float(ndcg_score(y, scores, qid, k=10))


def check_eval_set(eval_set, d):
    """(Xv, yv, qv) checked, with X's number of features ``d``."""
    if not isinstance(eval_set, (tuple, list)) or len(eval_set) not in (2, 3):
        raise ValueError("eval_set must be a tuple (X, y) or (X, y, qid) of validation data")
    Xv, yv, qv = check_ranking_data(*eval_set)
    if Xv.shape[1] != d:
        raise ValueError(f"eval_set has {Xv.shape[1]} features but X has {d}")
    check_gain_labels(yv, "eval_set's NDCG@10")
    return Xv, yv, qv


def solve(X, y, qid=None, *, loss="listnet", target="exp", ties="efron", top_k=None, penalty="l2", alpha=1.0,
          l1_ratio=0.5, sample_weight=None, tol=1e-6, max_iter=1000, random_state=None, coef_init=None,
          eval_set=None, early_stopping_rounds=None, verbose=0):
    """Minimise F(w) = sum_q L_q(X w) + R(w) (module docstring) from ``coef_init`` (default 0).

    "l2": TRON, stopping when the gap (objective - optimum, certified by the strong convexity 2 alpha or estimated
    by the Newton decrement, invariant to rescaling a feature) is <= tol max(1, |F|); preconditioned by the
    within-query column scales when they are far apart. "l1" / "elasticnet": proximal Newton with working sets,
    stopping on the relative KKT violation and the same gap (cyrank.optim.datafit.minimise).

    ``eval_set`` = (Xv, yv, qv): NDCG@10 on it is recorded at the start and after every accepted Newton step
    (``history["eval"]``; with an l1 term only at the start and the end). ``early_stopping_rounds`` (penalty
    "l2" only): stop when it has not improved for that many steps and return the best iterate; ``converged`` is
    then False and ``message`` says the fit was stopped early on purpose.

    Returns a SolveResult: coef, objective, grad_norm (||grad|| / ||grad at 0||; with an l1 term the relative KKT
    violation), gap, gap_kind, n_iter, n_cg_iter, converged, n_features_in, history ({"eval": array}, empty
    without eval_set), best_iteration (the step of the best eval NDCG@10; n_iter without eval_set), message.
    """
    p = check_params(loss=loss, target=target, ties=ties, top_k=top_k, penalty=penalty, alpha=alpha,
                     l1_ratio=l1_ratio, tol=tol, max_iter=max_iter, early_stopping_rounds=early_stopping_rounds,
                     random_state=random_state, verbose=verbose)
    X, y, qid, prep = _prepare(X, y, qid, loss=p["loss"], target=p["target"], ties=p["ties"], top_k=p["top_k"],
                               sample_weight=sample_weight, random_state=p["random_state"])
    d = X.shape[1]
    if _zero_is_optimal(prep):
        warnings.warn("no query has two different labels, so there is no order to learn from: w = 0 is optimal",
                      RankingDataWarning, stacklevel=2)
        w = np.zeros(d)
        return SolveResult(coef=w, objective=float(ListwiseLoss(X, prep).fun(w)), grad_norm=0.0, gap=0.0,
                           gap_kind="exact", n_iter=0, n_cg_iter=0, converged=True, n_features_in=d,
                           history={"eval": np.zeros(0)}, best_iteration=0, optimality_name="grad_norm")
    w0 = np.zeros(d) if coef_init is None else check_coef(coef_init, d, "coef_init")
    if eval_set is not None:
        Xv, yv, qv = check_eval_set(eval_set, d)
        lxv = LinearX(Xv)
    elif p["early_stopping_rounds"] is not None:
        raise ValueError("early_stopping_rounds needs an eval_set=(X, y, qid) to score the iterates on")
    problem = ListwiseLoss(X, prep)
    penalty_obj = Penalty(p["lam1"], p["lam2"])
    name = "ListNet" if p["loss"] == "listnet" else "ListMLE"
    history = []
    best = {"t": 0, "w": w0.copy()}
    rounds = p["early_stopping_rounds"]

    def score(w):
        return _ndcg10(yv, lxv.dot(w), qv)

    def callback(w):
        history.append(score(w))
        t = len(history) - 1
        if history[t] > history[best["t"]]:
            best["t"], best["w"] = t, np.array(w, dtype=np.float64)
        if rounds is not None and t - best["t"] >= rounds:
            raise _EarlyStop

    stopped = False
    with one_blas_thread():
        if eval_set is not None:
            history.append(score(w0))
        try:
            per_step = eval_set is not None and penalty_obj.smooth  # proximal Newton has no per-step hook
            res = minimise(problem, penalty_obj, w0, tol=p["tol"], max_iter=p["max_iter"], verbose=p["verbose"],
                           name=name if penalty_obj.smooth else f"{name} prox_newton",
                           callback=callback if per_step else None)
        except _EarlyStop:
            stopped = True
        if stopped:
            w = best["w"]
            zero = np.zeros(d)
            g0 = float(np.linalg.norm(problem.grad(zero)))
            objective_value = problem.fun(w)
            g = problem.grad(w)
            result = SolveResult(
                coef=w, objective=float(objective_value), grad_norm=float(np.linalg.norm(g)) / g0 if g0 > 0 else 0.0,
                gap=None, gap_kind="", n_iter=len(history) - 1, n_cg_iter=0, converged=False, n_features_in=d,
                history={"eval": np.asarray(history, dtype=np.float64)}, best_iteration=int(best["t"]),
                optimality_name="grad_norm",
                message=(f"{name} was stopped early on purpose: eval_set NDCG@10 did not improve for "
                         f"early_stopping_rounds={rounds} Newton steps; the best iterate (step {best['t']}, "
                         f"NDCG@10 {history[best['t']]:.6f}) is returned, not the optimum of the objective"))
            return result
        if eval_set is not None and not penalty_obj.smooth:  # proximal Newton: the start and the end only
            history.append(score(res.x))
            best["t"] = 1 if history[1] > history[0] else 0
    if eval_set is None:
        best_iteration = int(res.n_iter)
    else:
        best_iteration = int(res.n_iter) if (not penalty_obj.smooth and best["t"]) else best["t"]
    return solve_result(res, problem, history={"eval": np.asarray(history, dtype=np.float64)},
                        best_iteration=int(best_iteration))


def solve_listnet(X, y, qid=None, *, target="exp", penalty="l2", alpha=1.0, l1_ratio=0.5, tol=1e-6, max_iter=1000,
                  early_stopping_rounds=None, random_state=None, verbose=0, sample_weight=None, coef_init=None,
                  eval_set=None):
    """:func:`solve` with loss="listnet": the functional layer of :class:`cyrank.listwise.ListNet` (its
    parameters, named)."""
    return solve(X, y, qid, loss="listnet", target=target, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, tol=tol,
                 max_iter=max_iter, early_stopping_rounds=early_stopping_rounds, random_state=random_state,
                 verbose=verbose, sample_weight=sample_weight, coef_init=coef_init, eval_set=eval_set)


def solve_listmle(X, y, qid=None, *, ties="efron", top_k=None, penalty="l2", alpha=1.0, l1_ratio=0.5, tol=1e-6,
                  max_iter=1000, early_stopping_rounds=None, verbose=0, sample_weight=None, coef_init=None,
                  eval_set=None):
    """:func:`solve` with loss="listmle": the functional layer of :class:`cyrank.listwise.ListMLE` (its
    parameters, named)."""
    return solve(X, y, qid, loss="listmle", ties=ties, top_k=top_k, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                 tol=tol, max_iter=max_iter, early_stopping_rounds=early_stopping_rounds, verbose=verbose,
                 sample_weight=sample_weight, coef_init=coef_init, eval_set=eval_set)


# ------------------------------------------------------------------------------------------------ for trees
class DocGradients:
    """The gradient of sum_q L_q in the scores and the diagonal of its Hessian, per row (input order), for one
    set of labels and queries prepared once for many score vectors (a boosting loop). Parameters as
    :func:`doc_gradients`; ``DocGradients(y, qid, ...)(scores)`` returns what ``doc_gradients(scores, y, qid,
    ...)`` returns. ``newton_terms`` (ListNet only, default 1: the gradient itself): the gradient g is returned as
    sum_{t < newton_terms} (O D^-1)^t g, H = D - O each query's Hessian and D its diagonal (_loss.newton_series:
    a tree's leaf value -sum g / sum h then approximates a Newton step on the whole query's Hessian; 3 is the
    gradient LightGBM's rank_xendcg hands its trees). The Hessian diagonal is returned as it is."""

    def __init__(self, y, qid=None, *, loss="listnet", target="exp", ties="efron", top_k=None, sample_weight=None,
                 random_state=None, newton_terms=1):
        y = check_y(y, name="y")
        qid = check_qid(qid, y.shape[0], of="y")
        self.prep = Prepared(y, qid, loss=loss, target=target, ties=ties, top_k=top_k, sample_weight=sample_weight,
                             random_state=random_state, of="y")
        self.newton_terms = check_param("newton_terms", newton_terms, low=1, integer=True)
        if self.newton_terms > 1 and self.prep.loss != "listnet":
            raise ValueError(f"newton_terms={newton_terms!r} is the Newton series of ListNet's gradient; loss="
                             f"{self.prep.loss!r} takes none: leave newton_terms=1")
        self.n_samples = y.shape[0]
        self._state = self.prep.new_state()
        self.loss_value = None

    def set_noise(self, g):
        """Redraw the xendcg target with noise ``g`` (:meth:`Prepared.set_noise`; ListNet with target="xendcg")."""
        self.prep.set_noise(g)

    def __call__(self, scores):
        scores = check_y(scores, self.n_samples, name="scores", of="y")
        grad, hess = np.empty(self.n_samples), np.empty(self.n_samples)
        self.loss_value = self.prep.evaluate(scores, grad, self._state)
        if self.newton_terms > 1:
            _loss.newton_series(self.prep.layout, self._state, grad, self.newton_terms)
        _loss.hess_diag(self.prep.layout, self._state, hess)
        return grad, hess


def doc_gradients(scores, y, qid=None, *, loss="listnet", target="exp", ties="efron", top_k=None,
                  sample_weight=None, random_state=None):
    """(grad, hess): per row, in the input row order, dL/df_i and d^2L/df_i^2 of L = sum_q L_q(f) at f = ``scores``
    (module docstring; the loss, target, ties, top_k, sample_weight and random_state of :func:`solve`). For the
    custom objective of a gradient-boosted tree learner."""
    return DocGradients(y, qid, loss=loss, target=target, ties=ties, top_k=top_k, sample_weight=sample_weight,
                        random_state=random_state)(scores)
