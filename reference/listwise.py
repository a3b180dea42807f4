"""Exact linear listwise optima with cvxpy: ListNet / softmax cross-entropy and ListMLE (issue 31).

With f = X w, each query q (the rows sharing a qid, in any order) contributes L_q, and

    F(w) = sum_q L_q(f) + R(w),

R(w) = alpha ||w||^2 ("l2", not halved, the default), alpha ||w||_1 ("l1") or alpha (l1_ratio ||w||_1 +
(1 - l1_ratio) ||w||^2) ("elasticnet"). Row weights s_i (``sample_weight``, default 1) multiply the terms where row
i is the target / numerator (the inverse-propensity convention of issue 29).

``loss="listnet"`` (Cao, Qin, Liu, Tsai & Li, ICML 2007, section 4.1, top-one probabilities; the softmax
cross-entropy of Bruch, Wang, Bendersky & Najork, ICTIR 2019, section 4):

    L_q = sum_{i in q} s_i p_i (LSE_q(f) - f_i),   LSE_q(f) = log sum_{j in q} exp(f_j),

with the target distribution p over the query's rows given by ``target``:
  "exp"    p_i = exp(y_i) / sum_j exp(y_j) (Cao et al.'s phi = exp);
  "gain"   p_i = (2^y_i - 1) / sum_j (2^y_j - 1) (a query whose labels are all 0 contributes nothing);
  "xendcg" p_i = (2^y_i - g_i) / sum_j (2^y_j - g_j), g = np.random.default_rng(random_state).random(n) over the
           rows in input order, random_state=None meaning 0 as in cyrank.listwise (XE-NDCG, Bruch, WWW 2021,
           section 4, its noise drawn once).

``loss="listmle"`` (Xia, Liu, Wang, Zhang & Li, ICML 2008, section 3.3, the Plackett-Luce likelihood of the label
order), ties by Efron's rule (Efron, JASA 1977, section 6, for Cox's partial likelihood): the query's rows are split
into tie groups of equal label, by decreasing label; position t (0-based) of group G (m rows, starting at
position start(G)) has r = t - start(G) and

    D_t = sum_{j below G} exp(f_j) + (1 - r/m) sum_{j in G} exp(f_j),
    l_t = (1/m) sum_{j in G} s_j (log D_t - f_j),        L_q = sum_{t < min(top_k, n_q)} l_t

("below G": the rows of lower labels). D_t is the expectation of the Plackett-Luce denominator at position t over
the orders of the tie group (each row of G is still unplaced at position r with probability 1 - r/m).
``ties="breslow"`` (Breslow, Biometrics 1974): D_t = sum_{j below G} exp(f_j) + sum_{j in G} exp(f_j) for every t
of G. Without ties both are plain ListMLE, sum_t s_pi(t) (log sum_{u >= t} exp f_pi(u) - f_pi(t)).

cvxpy form: ListNet's log-sum-exp is one ``cp.log_sum_exp`` atom over the query's rows; ListMLE's over the risk
set G + below is LSE(u_G, z_below), u_G = LSE over G, z_below = LSE over the rows below (nested from the last group
up), Efron's factors entering as log-weights log(1 - r/m) added to u_G inside the atom; F is convex (log-sum-exps minus a linear term plus R), solved by Clarabel, status checked
(reference._solve). :func:`objective` is the same F in plain numpy, one scipy.special.logsumexp over each risk
set with the log-weights (1 - r/m) on G's rows, straight from D_t. Written
independently of cyrank; for a few hundred rows.
"""
import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ._penalty import penalty_weights
from ._solve import feature_scale_vector, solve_problem, unscale

LOSSES = ("listnet", "listmle")
TARGETS = ("exp", "gain", "xendcg")
TIES = ("efron", "breslow")


def _dense(X):
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def _check(X, y, qid, loss, target, ties, top_k, sample_weight):
    """(y, groups, s): labels as float64, the row indices of each query (list of int arrays, by first appearance of
    the qid) and the row weights (all 1 when None). ValueError on a bad option."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    if top_k is not None and (int(top_k) != top_k or top_k < 1):
        raise ValueError(f"top_k must be None or a positive integer, got {top_k!r}")
    n = X.shape[0]
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (n,) or not np.all(np.isfinite(y)):
        raise ValueError(f"y must hold {n} finite labels")
    qid = np.zeros(n, np.int64) if qid is None else np.asarray(qid)
    if qid.shape != (n,):
        raise ValueError(f"qid must hold {n} query ids")
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    groups = [np.flatnonzero(inverse == k) for k in np.argsort(first)]
    if sample_weight is None:
        s = np.ones(n)
    else:
        s = np.asarray(sample_weight, dtype=np.float64)
        if s.shape != (n,) or not np.all(np.isfinite(s) & (s >= 0)):
            raise ValueError("sample_weight must hold one finite non-negative number per row")
    return y, groups, s


def _targets(y, groups, target, random_state):
    """The ListNet target p (one number per row, summing to 1 over each query; 0 over a query without target)."""
    n = y.size
    if target == "exp":
        num = None
    elif target == "gain":
        num = np.exp2(y) - 1.0
    else:
        num = np.exp2(y) - np.random.default_rng(0 if random_state is None else random_state).random(n)
    p = np.zeros(n)
    for rows in groups:
        if target == "exp":
            e = np.exp(y[rows] - y[rows].max())
            p[rows] = e / e.sum()
        else:
            total = num[rows].sum()
            if total > 0:
                p[rows] = num[rows] / total
    return p


def _listmle_terms(y, rows, ties, top_k):
    """The ListMLE terms of one query as (G, R, positions): for each tie group (by decreasing label), its rows G,
    the risk set R (G followed by the rows below it) and, for each counted position of the group, the log-weights
    of R's rows in D_t (log(1 - r/m) on G's rows for Efron, 0 for Breslow; 0 on the rows below)."""
    order = rows[np.argsort(-y[rows], kind="stable")]
    n_q = order.size
    stop = n_q if top_k is None else min(int(top_k), n_q)
    bounds = np.flatnonzero(np.r_[True, y[order][1:] != y[order][:-1], True])
    terms = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if a >= stop:
            break
        m = b - a
        logw = []
        for t in range(a, min(b, stop)):
            factor = 1.0 - (t - a) / m if ties == "efron" else 1.0
            logw.append(np.r_[np.full(m, np.log(factor)), np.zeros(n_q - b)])
        terms.append((order[a:b], order[a:], np.array(logw)))
    return terms


def _listmle_atoms(X, w, y, s, rows, ties, top_k):
    """The cvxpy terms of one query's ListMLE loss (module docstring). The risk set's log-sum-exp is written through
    its groups, log sum_{j in G + below} = LSE(u_G, z_below), with u_G = LSE_{j in G} f_j and z_below the same over
    the rows below G (nested from the last counted group up; the rows below every counted group in one flat atom),
    so the problem holds O(n_q) exponential cones instead of one per (position, row of the risk set): Clarabel then
    certifies the optimum at 1e-10 where the flat form stalled. Efron's D_t enters as
    LSE(u_G + log(1 - r/m), z_below)."""
    order = rows[np.argsort(-y[rows], kind="stable")]
    n_q = order.size
    stop = n_q if top_k is None else min(int(top_k), n_q)
    bounds = np.flatnonzero(np.r_[True, y[order][1:] != y[order][:-1], True])
    spans = [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if a < stop]   # the groups holding counted positions
    rest = order[spans[-1][1]:]                  # the rows below every counted group
    z_below = None if rest.size == 0 else (cp.log_sum_exp(X[rest] @ w) if rest.size > 1 else X[rest[0]] @ w)
    terms = []
    for a, b in reversed(spans):               # from the lowest counted group up
        G = order[a:b]
        m = G.size
        fG = X[G] @ w
        u = cp.log_sum_exp(fG) if m > 1 else fG[0]
        z = u if z_below is None else cp.log_sum_exp(cp.hstack([u, z_below]))   # LSE over G + below
        k = min(b, stop) - a                    # counted positions of the group
        c = s[G]
        if np.any(c > 0):
            if ties == "breslow":
                log_d = k * z
            else:
                logfac = np.log(1.0 - np.arange(k) / m)
                if z_below is None:
                    log_d = k * u + logfac.sum()
                else:
                    both = cp.vstack([u + logfac, z_below + np.zeros(k)])
                    log_d = cp.sum(cp.log_sum_exp(both, axis=0))
            terms.append((c.sum() / m) * log_d - (k / m) * (c @ fG))
        z_below = z
    return terms


def objective(coef, X, y, qid=None, *, loss="listnet", target="exp", ties="efron", top_k=None, penalty="l2",
              alpha=1.0, l1_ratio=0.5, sample_weight=None, random_state=None):
    """F(coef) in plain numpy (module docstring); every log-sum-exp by scipy.special.logsumexp (shifted by its
    max), so safe for score gaps of 1e3."""
    X = _dense(X)
    y, groups, s = _check(X, y, qid, loss, target, ties, top_k, sample_weight)
    w = np.asarray(coef, dtype=np.float64)
    f = X @ w
    total = 0.0
    if loss == "listnet":
        p = _targets(y, groups, target, random_state)
        for rows in groups:
            if rows.size > 1:
                sp_ = s[rows] * p[rows]
                total += float(np.sum(sp_ * (logsumexp(f[rows]) - f[rows])))
    else:
        for rows in groups:
            if rows.size < 2:
                continue
            for G, R, logw in _listmle_terms(y, rows, ties, top_k):
                m = G.size
                for lw in logw:  # one position t of the group
                    log_d = logsumexp(f[R] + lw)
                    total += float(np.sum(s[G] * (log_d - f[G]))) / m
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    return total + lam1 * float(np.abs(w).sum()) + lam2 * float(w @ w)


def solve(X, y, qid=None, *, loss="listnet", target="exp", ties="efron", top_k=None, penalty="l2", alpha=1.0,
          l1_ratio=0.5, sample_weight=None, random_state=None, feature_scale=None, **solver_options):
    """Exact minimiser of F (module docstring); returns a :class:`reference.Solution` with variable ``"w"``.

    ``feature_scale``: positive vector s (n_features); cvxpy then solves the same problem in v = s * w on the
    columns X / s (penalty written in v / s), for columns on far-off scales; "w" is v / s. ``solver_options`` go
    to reference._solve.solve_problem."""
    lam1, lam2 = penalty_weights(penalty, alpha, l1_ratio)
    X = _dense(X)
    y, groups, sw = _check(X, y, qid, loss, target, ties, top_k, sample_weight)
    scale = feature_scale_vector(feature_scale, X.shape[1])
    if scale is not None:
        X = X / scale
    w = cp.Variable(X.shape[1], name="w")
    parts = []
    if loss == "listnet":
        p = _targets(y, groups, target, random_state)
        for rows in groups:
            c = sw[rows] * p[rows]
            if rows.size < 2 or not np.any(c > 0):
                continue
            fq = X[rows] @ w
            parts.append(c.sum() * cp.log_sum_exp(fq) - c @ fq)
    else:
        for rows in groups:
            if rows.size >= 2:
                parts.extend(_listmle_atoms(X, w, y, sw, rows, ties, top_k))
    data = sum(parts) if parts else 0.0
    w_pen = w if scale is None else cp.multiply(1.0 / scale, w)
    pen = 0.0
    if lam1 > 0:
        pen = pen + lam1 * cp.norm1(w_pen)
    if lam2 > 0 or lam1 == 0:
        pen = pen + lam2 * cp.sum_squares(w_pen)
    problem = cp.Problem(cp.Minimize(data + pen))
    return unscale(solve_problem(problem, {"w": w}, **solver_options), scale, "w")


def solve_listnet(X, y, qid=None, *, target="exp", penalty="l2", alpha=1.0, l1_ratio=0.5, sample_weight=None,
                  random_state=None):
    """:func:`solve` with loss="listnet": the reference of :class:`cyrank.listwise.ListNet` (its parameters, named)."""
    return solve(X, y, qid, loss="listnet", target=target, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                 sample_weight=sample_weight, random_state=random_state)


def solve_listmle(X, y, qid=None, *, ties="efron", top_k=None, penalty="l2", alpha=1.0, l1_ratio=0.5,
                  sample_weight=None):
    """:func:`solve` with loss="listmle": the reference of :class:`cyrank.listwise.ListMLE` (its parameters, named)."""
    return solve(X, y, qid, loss="listmle", ties=ties, top_k=top_k, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                 sample_weight=sample_weight)
