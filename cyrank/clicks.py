"""Learning to rank from biased clicks: simulate click logs, turn them into inverse-propensity-weighted training
data, estimate the position propensities, and estimate a ranker's metric from clicks.

A click log is a :class:`ClickLog`: one entry per (session, shown document), with the arrays ``session``,
``query``, ``row`` (index into the rows of the data), ``rank`` (1-based display rank) and ``click`` (0/1).

Click models (the user examines the document at rank r, then clicks it with a probability set by its label):

* position-based model (Joachims, Swaminathan & Schnabel, WSDM 2017, section 6):
  ``P(click at rank r) = p_r * eps(y)``, examination propensity ``p_r = (1 / r) ** eta`` for r <= top_k
  (documents below the cut-off are not shown), and ``eps(y)`` the click probability of an examined document:
  ``relevance=t`` (a number): ``eps(y) = epsilon_plus`` if ``y >= t`` else ``epsilon_minus`` (Joachims et al.'s
  binary relevance and click noise); ``relevance="graded"``: ``eps(y) = epsilon_minus + (epsilon_plus -
  epsilon_minus) (2^y - 1) / (2^y_max - 1)`` (the graded click probability of Chapelle et al., CIKM 2009, used by
  Ai et al., SIGIR 2018 and Hu et al., WWW 2019), y_max the largest label of the data;
* cascade model (Craswell, Zoeter, Taylor & Ramsey, WSDM 2008): the user reads ranks 1, 2, ... top_k in order,
  clicks the document at rank r with probability ``eps(y)`` and stops at the first click, so
  ``P(click at r) = eps(y_r) prod_{s < r} (1 - eps(y_s))``.

Inverse propensity scoring (Joachims et al. 2017, section 4): a clicked document at rank r stands for ``1 / p_r``
examined relevant documents, so ``E[click_d / p_{r(d)}] = eps(y_d)`` for every shown document d, and a loss
summed over clicked documents weighted by ``1 / p`` is an unbiased estimate of the loss summed over relevant
documents. In cyrank the pair (i, j), y_i > y_j in one query, counts with ``sample_weight[i]`` (the preferred row's
weight), which is exactly this weighting when y = click and the clicked rows carry ``1 / p``.
"""
import dataclasses

import numpy as np

from ._queries import QueryGroups
from ._validation import (check_option, check_param, check_qid, check_random_state, check_X, check_y)

__all__ = ["ClickLog", "position_propensity", "click_probability", "simulate_clicks", "simulate_swap_intervention",
           "click_training_data", "propensity_from_swaps", "propensity_em", "EMResult", "ips_metric",
           "expected_click_metric"]

MODELS = ("position", "cascade")
METRICS = ("dcg", "rank")
AGGREGATES = (None, "identical", "query")


# ---------------------------------------------------------------------------------------------
# the click log
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(eq=False)
class ClickLog:
    """A click log: one entry per (session, shown document), all arrays of one length.

    session : int64, the session of the entry (0 .. n_sessions - 1 for simulated logs, entries of a session
        contiguous and in rank order)
    query : int64, the query of the session (index into ``QueryGroups(qid).ids``: queries in increasing qid)
    row : int64, the shown document (index into the rows of X, y, qid)
    rank : int64, its display rank (1 = top)
    click : int8, 1 if it was clicked

    Built from other sources, the arrays are checked (equal lengths, integers, rank >= 1, click 0/1).
    """

    session: np.ndarray
    query: np.ndarray
    row: np.ndarray
    rank: np.ndarray
    click: np.ndarray

    def __post_init__(self):
        n = None
        for name in ("session", "query", "row", "rank", "click"):
            a = np.asarray(getattr(self, name))
            if a.ndim != 1 or (a.size and a.dtype.kind not in "iub"):
                raise ValueError(f"ClickLog.{name} must be a 1-d integer array, got dtype {a.dtype} and shape "
                                 f"{a.shape}")
            if n is not None and a.shape[0] != n:
                raise ValueError(f"ClickLog.{name} has {a.shape[0]} entries but session has {n}; every array has "
                                 "one entry per (session, shown document)")
            n = a.shape[0]
            setattr(self, name, a.astype(np.int8 if name == "click" else np.int64, copy=False))
        if n == 0:
            raise ValueError("ClickLog is empty: it needs at least one shown document")
        if self.rank.min() < 1:
            raise ValueError(f"ClickLog.rank must be >= 1 (1 = top), found {int(self.rank.min())}")
        if self.row.min() < 0 or self.session.min() < 0 or self.query.min() < 0:
            raise ValueError("ClickLog.session, query and row must be >= 0")
        if self.click.min() < 0 or self.click.max() > 1:
            raise ValueError("ClickLog.click must hold 0 (not clicked) or 1 (clicked)")

    def __len__(self):
        return int(self.session.shape[0])

    @property
    def n_sessions(self):
        """The number of distinct sessions."""
        return int(np.unique(self.session).shape[0])

    def click_rate_by_rank(self):
        """``(rate, count)``: the share of entries clicked at each rank 1 .. max rank, and the number of entries."""
        count = np.bincount(self.rank, minlength=int(self.rank.max()) + 1)[1:]
        clicks = np.bincount(self.rank, weights=self.click, minlength=int(self.rank.max()) + 1)[1:]
        return clicks / np.maximum(count, 1), count


def _check_log(log, who):
    if not isinstance(log, ClickLog):
        raise TypeError(f"{who}: log must be a cyrank.clicks.ClickLog (e.g. from simulate_clicks), got "
                        f"{type(log).__name__}; build one with ClickLog(session, query, row, rank, click)")
    return log


def _dense_index(a):
    """``(index, n)``: the values of ``a`` renumbered 0 .. n - 1 in increasing order (O(len) when sorted)."""
    if a.shape[0] and np.all(a[1:] >= a[:-1]):
        index = np.cumsum(np.r_[False, a[1:] != a[:-1]], dtype=np.int64)
        return index, int(index[-1]) + 1
    ids, index = np.unique(a, return_inverse=True)
    return index.reshape(-1).astype(np.int64), ids.shape[0]


def _session_index(log):
    """``(index, n)``: each entry's session renumbered 0 .. n - 1 in increasing session id."""
    return _dense_index(log.session)


# ---------------------------------------------------------------------------------------------
# click models
# ---------------------------------------------------------------------------------------------
def position_propensity(n_ranks, eta=1.0):
    """Examination propensities of the position-based model, ``p_r = (1 / r) ** eta`` for r = 1 .. n_ranks
    (Joachims, Swaminathan & Schnabel, WSDM 2017, section 6); ``p[0]`` is rank 1. float64, shape (n_ranks,)."""
    n_ranks = check_param("n_ranks", n_ranks, low=1, integer=True)
    eta = check_param("eta", eta, low=0.0)
    return (1.0 / np.arange(1, n_ranks + 1, dtype=np.float64)) ** eta


def _check_epsilons(epsilon_plus, epsilon_minus):
    return (check_param("epsilon_plus", epsilon_plus, low=0.0, high=1.0),
            check_param("epsilon_minus", epsilon_minus, low=0.0, high=1.0))


def click_probability(y, relevance="graded", epsilon_plus=1.0, epsilon_minus=0.1):
    """The probability ``eps(y)`` that an examined document of label y is clicked, float64 per row.

    ``relevance="graded"``: ``epsilon_minus + (epsilon_plus - epsilon_minus) (2^y - 1) / (2^y_max - 1)``, y_max the
    largest label (labels must be >= 0; all labels 0 give epsilon_minus); Chapelle, Metzler, Zhang & Grinspan,
    CIKM 2009, as in the simulations of Ai et al. 2018 and Hu et al. 2019.
    ``relevance=t`` (a number): ``epsilon_plus`` if ``y >= t`` else ``epsilon_minus`` (Joachims et al. 2017,
    section 6: binary relevance, click noise epsilon_minus on irrelevant documents).
    """
    y = check_y(y)
    eps_plus, eps_minus = _check_epsilons(epsilon_plus, epsilon_minus)
    if isinstance(relevance, str):
        check_option("relevance", relevance, ("graded",))
        if y.min() < 0:
            raise ValueError(f"relevance='graded' needs labels >= 0, found {y.min()!r}; shift the labels or pass a "
                             "threshold (relevance=t: relevant iff y >= t)")
        top = np.expm1(y.max() * np.log(2.0))
        gain = np.expm1(y * np.log(2.0)) / top if top > 0 else np.zeros_like(y)
        return eps_minus + (eps_plus - eps_minus) * gain
    threshold = check_param("relevance", relevance)
    return np.where(y >= threshold, eps_plus, eps_minus)


class _Rankings:
    """What each logging ranker shows: per (ranker, query) list, the rows of its top ``top_k`` in rank order.

    Scores of shape (n,) are one ranker; (m, n) are m rankers, one drawn uniformly per session (a stochastic
    logging policy, which EM needs: a document seen at several ranks). Ties in a ranker's scores are broken by
    increasing row index."""

    def __init__(self, qid, scores, top_k):
        self.groups = QueryGroups(qid)
        n = self.groups.n_samples
        scores = np.asarray(scores)
        scores = scores.reshape(1, -1) if scores.ndim == 1 else scores
        if scores.ndim != 2 or scores.shape[1] != n:
            raise ValueError(f"scores must have shape (n,) or (n_rankers, n) with n = {n} (the rows of y and qid), "
                             f"got {np.shape(scores)}")
        sizes = self.groups.sizes
        shown_len = sizes if top_k is None else np.minimum(sizes, top_k)
        lists = []
        for s in scores:
            rows, position = _by_rank(self.groups, check_y(s, n, name="scores", of="y"))
            lists.append(rows if top_k is None else rows[position < top_k])
        self.n_queries = self.groups.n_queries
        self.n_rankers = scores.shape[0]
        self.shown = np.concatenate(lists)
        self.length = np.tile(shown_len, self.n_rankers).astype(np.int64)  # list l = ranker * n_queries + query
        self.start = np.r_[0, np.cumsum(self.length)[:-1]].astype(np.int64)


def _check_top_k(top_k):
    return check_param("top_k", top_k, low=1, integer=True, none_ok=True)


def _simulate(rankings, eps, propensity, model, lists, rng, swap=None):
    """Clicks of the sessions showing the lists ``lists``; ``swap[s]`` > 1 exchanges ranks 1 and swap[s]."""
    n_sessions = lists.shape[0]
    length = rankings.length[lists]
    first = np.r_[0, np.cumsum(length)[:-1]].astype(np.int64)
    session = np.repeat(np.arange(n_sessions, dtype=np.int64), length)
    position = np.arange(session.shape[0], dtype=np.int64) - np.repeat(first, length)  # rank - 1
    row = rankings.shown[np.repeat(rankings.start[lists], length) + position]
    if swap is not None:
        moved = np.flatnonzero(swap > 1)
        top, other = first[moved], first[moved] + swap[moved] - 1
        row[top], row[other] = row[other], row[top].copy()
    u = rng.random_sample(session.shape[0])
    if model == "position":
        click = u < propensity[position] * eps[row]
    else:  # cascade: the first document clicked among those read top down, then the user leaves
        want = np.flatnonzero(u < eps[row])
        if want.size:
            want = want[np.r_[True, session[want[1:]] != session[want[:-1]]]]
        click = np.zeros(session.shape[0], dtype=bool)
        click[want] = True
    query = lists % rankings.n_queries
    return ClickLog(session, np.repeat(query, length), row, position + 1, click.view(np.int8))


def _prepare(y, qid, scores, n_sessions, model, eta, top_k, relevance, epsilon_plus, epsilon_minus, random_state):
    y = check_y(y)
    qid = check_qid(qid, y.shape[0], of="y")
    n_sessions = check_param("n_sessions", n_sessions, low=1, integer=True)
    model = check_option("model", model, MODELS)
    top_k = _check_top_k(top_k)
    eps = click_probability(y, relevance, epsilon_plus, epsilon_minus)
    rankings = _Rankings(qid, scores, top_k)
    depth = int(rankings.length.max())
    propensity = position_propensity(depth, eta)
    return rankings, eps, propensity, n_sessions, model, check_random_state(random_state)


_SIMULATION_PARAMETERS = """
    y : array of shape (n,)
        The true labels (grades) of the rows.
    qid : array of shape (n,)
        Query ids (sessions draw queries uniformly, with replacement).
    scores : array of shape (n,) or (n_rankers, n)
        The logging ranker's scores (e.g. ``ranker.decision_function(X)``); with several rows, each session draws
        one ranker uniformly (a stochastic logging policy). Ties: increasing row index first.
    n_sessions : int
    model : "position" or "cascade"
        The position-based model (``P(click) = (1/rank)^eta eps(y)``) or the cascade model (read top down, stop at
        the first click); see the module docstring.
    eta : float >= 0
        Severity of the position bias of the position-based model (ignored by the cascade model).
    top_k : int or None
        The number of documents shown (the rest have propensity 0); None shows every row of the query.
    relevance : {"graded"} or float
        How a label sets the click probability of an examined document (:func:`click_probability`).
    epsilon_plus, epsilon_minus : float in [0, 1]
        Click probability of an examined relevant (top-grade) and irrelevant (grade 0) document.
    random_state : None, int, RandomState or Generator
        Seed (:func:`cyrank._validation.check_random_state`): the same seed gives the same log."""


def simulate_clicks(y, qid, scores, *, n_sessions=10_000, model="position", eta=1.0, top_k=10, relevance="graded",
                    epsilon_plus=1.0, epsilon_minus=0.1, random_state=None):
    """Simulate a click log: ``n_sessions`` sessions, each a query drawn uniformly (with replacement) whose top
    ``top_k`` rows by the logging scores are shown and clicked under the click model.

    Parameters
    ----------%s

    Returns
    -------
    ClickLog
        Entries in session order and, within a session, rank order; ``session`` 0 .. n_sessions - 1.

    Notes
    -----
    Cost: O(n log n) to rank the rows once, then O(n_sessions * top_k) vectorised (no Python loop over sessions).
    """
    rankings, eps, propensity, n_sessions, model, rng = _prepare(
        y, qid, scores, n_sessions, model, eta, top_k, relevance, epsilon_plus, epsilon_minus, random_state)
    n_lists = rankings.n_queries * rankings.n_rankers
    lists = rng.randint(n_lists, size=n_sessions).astype(np.int64)
    return _simulate(rankings, eps, propensity, model, lists, rng)


simulate_clicks.__doc__ %= _SIMULATION_PARAMETERS


def simulate_swap_intervention(y, qid, scores, *, n_sessions=10_000, model="position", eta=1.0, top_k=10,
                               relevance="graded", epsilon_plus=1.0, epsilon_minus=0.1, random_state=None,
                               max_rank=10):
    """Simulate the randomised swap experiment of Joachims, Swaminathan & Schnabel (WSDM 2017, section 5).

    Each session draws a query among those with at least ``max_rank`` shown rows, and ``k`` uniformly in
    1 .. max_rank: for k >= 2 the documents at ranks 1 and k of the logging ranking are exchanged before display,
    k = 1 is the control (the ranking as logged). Clicks follow the click model at the displayed ranks.

    Parameters
    ----------%s
    max_rank : int >= 2
        The deepest rank swapped with rank 1 (the propensities of ranks 1 .. max_rank are estimable).

    Returns
    -------
    log : ClickLog
        ``rank`` is the displayed rank.
    swap_rank : int64 array of shape (n_sessions,)
        The k of each session (1: no swap). Pass both to :func:`propensity_from_swaps`.
    """
    max_rank = check_param("max_rank", max_rank, low=2, integer=True)
    rankings, eps, propensity, n_sessions, model, rng = _prepare(
        y, qid, scores, n_sessions, model, eta, top_k, relevance, epsilon_plus, epsilon_minus, random_state)
    eligible = np.flatnonzero(rankings.length >= max_rank)
    if eligible.size == 0:
        raise ValueError(f"no query shows {max_rank} documents (top_k={top_k}, largest query "
                         f"{int(rankings.groups.sizes.max())} rows); lower max_rank")
    lists = eligible[rng.randint(eligible.size, size=n_sessions)]
    swap_rank = rng.randint(1, max_rank + 1, size=n_sessions).astype(np.int64)
    return _simulate(rankings, eps, propensity, model, lists, rng, swap=swap_rank), swap_rank


simulate_swap_intervention.__doc__ %= _SIMULATION_PARAMETERS


# ---------------------------------------------------------------------------------------------
# propensities
# ---------------------------------------------------------------------------------------------
def _check_propensity(propensity, max_rank):
    """``propensity`` as float64 > 0, finite, one per rank 1 .. at least ``max_rank``."""
    p = check_y(propensity, name="propensity")
    if p.shape[0] < max_rank:
        raise ValueError(f"propensity has {p.shape[0]} entries but the log has ranks up to {max_rank}; give one "
                         "propensity per rank (propensity[0] is rank 1), e.g. position_propensity(max_rank, eta)")
    if p[:max_rank].min() <= 0:
        raise ValueError("propensity must be > 0 at every rank of the log (1 / propensity weighs a click there)")
    return p


def _inverse_propensity(log, propensity, max_weight):
    """``1 / propensity[rank - 1]`` of every entry, clipped at ``max_weight`` (None: not clipped)."""
    p = _check_propensity(propensity, int(log.rank.max()))
    w = 1.0 / p[log.rank - 1]
    if max_weight is not None:
        w = np.minimum(w, check_param("max_weight", max_weight, low=0.0, low_open=True))
    return w


def propensity_from_swaps(log, swap_rank):
    """Relative propensities ``p_k / p_1``, k = 1 .. max_rank, from a swap experiment
    (:func:`simulate_swap_intervention`; Joachims, Swaminathan & Schnabel, WSDM 2017, section 5).

    Per k, with N_1 control sessions and N_k sessions where ranks 1 and k were exchanged, and C(g, r) the clicks at
    displayed rank r in group g: the documents A (logged at rank 1) and B (logged at rank k) are shown at ranks
    1 and k in the control and at k and 1 in the swapped group, so under the position-based model
    ``E[C(k, k)/N_k + C(1, k)/N_1] = p_k (rel A + rel B)`` and ``E[C(1, 1)/N_1 + C(k, 1)/N_k] = p_1 (rel A + rel B)``
    (rel: mean click probability when examined, over the query distribution, the same in both groups by the
    randomisation). The estimate is the ratio of the two (consistent; both documents of the swap are used).

    Returns float64 of shape (max_rank,), ``[1, p_2/p_1, ...]``.
    """
    log = _check_log(log, "propensity_from_swaps")
    sessions, n = _session_index(log)
    swap_rank = np.asarray(swap_rank)
    if swap_rank.ndim != 1 or swap_rank.shape[0] != n or (swap_rank.size and swap_rank.dtype.kind not in "iu"):
        raise ValueError(f"swap_rank must hold one integer per session of the log ({n}), in increasing session id")
    max_rank = int(swap_rank.max())
    if swap_rank.min() < 1 or max_rank < 2:
        raise ValueError("swap_rank must be >= 1 (1: control) with at least one swap (>= 2)")
    group = swap_rank[sessions]
    n_group = np.bincount(swap_rank, minlength=max_rank + 1).astype(np.float64)
    if np.any(n_group[1:] == 0):
        raise ValueError("some swap group has no session; simulate more sessions")
    # clicks by (group, displayed rank) for displayed ranks 1 .. max_rank
    shown = log.rank <= max_rank
    C = np.bincount(group[shown] * (max_rank + 1) + log.rank[shown], weights=log.click[shown],
                    minlength=(max_rank + 1) ** 2).reshape(max_rank + 1, max_rank + 1)
    k = np.arange(2, max_rank + 1)
    at_k = C[k, k] / n_group[k] + C[1, k] / n_group[1]
    at_1 = C[1, 1] / n_group[1] + C[k, 1] / n_group[k]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = at_k / at_1
    if not np.all(np.isfinite(ratio)):
        raise ValueError("no click at rank 1 in some swap group; simulate more sessions")
    return np.r_[1.0, ratio]


@dataclasses.dataclass
class EMResult:
    """The result of :func:`propensity_em`.

    propensity : relative examination propensities ``theta_r / theta_1``, r = 1 .. max rank of the log
    theta : the fitted examination probabilities (before dividing by theta_1)
    relevance : the fitted click probability when examined, per row of the data (NaN for rows never shown)
    log_likelihood : of the clicks at the fitted parameters
    n_iter, converged
    """

    propensity: np.ndarray
    theta: np.ndarray
    relevance: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool


def propensity_em(log, *, max_iter=2000, tol=1e-7):
    """Examination propensities of the position-based model from a click log by expectation-maximisation
    (Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018, section 4.1).

    Model: ``P(click | d, r) = theta_r gamma_d`` (examination at rank r, relevance of the document d: a row; a row
    belongs to one query). E-step, for a non-clicked entry: ``P(E=1, R=0 | c=0) = theta (1 - gamma) / (1 - theta
    gamma)`` and ``P(E=0, R=1 | c=0) = (1 - theta) gamma / (1 - theta gamma)``; a clicked entry has E = R = 1.
    M-step: theta_r is the mean of ``c + (1 - c) P(E=1 | c=0)`` over the entries at rank r, gamma_d the mean of
    ``c + (1 - c) P(R=1 | c=0)`` over the entries of d. Starts from theta = gamma = 1/2 and stops when no theta
    changes by more than ``tol``. Only the ratios theta_r / theta_1 are identified, and only when documents are
    seen at several ranks (a logging policy that varies: pass several rankers' scores to simulate_clicks).

    Returns :class:`EMResult`.
    """
    log = _check_log(log, "propensity_em")
    max_iter = check_param("max_iter", max_iter, low=1, integer=True)
    tol = check_param("tol", tol, low=0.0)
    # sufficient statistics: per (document, rank) cell, the number of entries and of clicks
    docs, doc = np.unique(log.row, return_inverse=True)
    n_ranks = int(log.rank.max())
    cell, cell_of = np.unique(doc.reshape(-1) * n_ranks + (log.rank - 1), return_inverse=True)
    shown = np.bincount(cell_of.reshape(-1)).astype(np.float64)
    clicked = np.bincount(cell_of.reshape(-1), weights=log.click)
    doc, rank = cell // n_ranks, cell % n_ranks
    per_rank = np.bincount(rank, weights=shown, minlength=n_ranks)
    per_doc = np.bincount(doc, weights=shown, minlength=docs.shape[0])
    theta = np.full(n_ranks, 0.5)
    gamma = np.full(docs.shape[0], 0.5)
    converged = False
    for n_iter in range(1, max_iter + 1):
        t, g = theta[rank], gamma[doc]
        missed = (shown - clicked) / np.maximum(1.0 - t * g, 1e-300)  # 0 / 0 = 0 where t = g = 1 (never missed)
        new_theta = np.bincount(rank, weights=clicked + missed * t * (1 - g), minlength=n_ranks)
        new_theta /= np.maximum(per_rank, 1)
        gamma = np.bincount(doc, weights=clicked + missed * (1 - t) * g, minlength=docs.shape[0]) / per_doc
        change = np.max(np.abs(new_theta - theta))
        theta = new_theta
        if change <= tol:
            converged = True
            break
    relevance = np.full(int(log.row.max()) + 1, np.nan)
    relevance[docs] = gamma
    prob = np.clip(theta[rank] * gamma[doc], 1e-300, 1 - 1e-16)
    log_likelihood = float(np.sum(clicked * np.log(prob) + (shown - clicked) * np.log1p(-prob)))
    return EMResult(theta / theta[0], theta, relevance, log_likelihood, n_iter, converged)


# ---------------------------------------------------------------------------------------------
# training data
# ---------------------------------------------------------------------------------------------
def click_training_data(log, propensity, X=None, *, max_weight=None, self_normalize=True, aggregate=None,
                        with_rank=False):
    """Training data from a click log for cyrank's pairwise rankers: ``(X or rows, y, qid, sample_weight)``, and the
    display ranks with ``with_rank=True``.

    Each session is a query (``qid`` = session id) holding its shown rows, ``y`` = click (1/0), and the clicked
    row i weighs ``w_i = 1 / p_{rank(i)}`` (unclicked rows get 1, which the pairwise objectives do not read: the pair
    (i, j), y_i > y_j, counts with w_i). A ranker fitted on it minimises the IPS estimate of its pairwise loss over
    the relevant documents (Joachims, Swaminathan & Schnabel, WSDM 2017, eq. 9 with the shown documents as
    candidates): ``sum_sessions sum_{i clicked} (1 / p_i) sum_{j shown, not clicked} loss(f_i - f_j)``.
    Sessions with no click or no unclicked row hold no pair and are left out. Documents never shown (below the
    logging cut-off) have propensity 0: no weight corrects for them (item-selection bias); in bench/bench_clicks.py
    this is the gap IPS leaves when 10 of 30 documents are shown.

    Parameters
    ----------
    log : ClickLog
    propensity : array of float > 0
        ``propensity[r - 1]`` for rank r (known: :func:`position_propensity`; estimated: :func:`propensity_em` or
        :func:`propensity_from_swaps`).
    X : None, array or sparse matrix
        The data the log's rows index; given, the first output is ``X[rows]``, else ``rows``.
    max_weight : float or None
        Clip the weights at ``max_weight`` (the propensity clipping of Joachims et al. 2017, section 4, after
        Strehl, Langford, Li & Kakade, NeurIPS 2010): lower variance, biased towards the top ranks. Default None
        (unbiased): with top_k = 10 and eta <= 2 the largest weight is at most 100.
    self_normalize : bool
        Divide the weights of the clicked rows by their mean over the sessions' clicks (the self-normalised
        estimator of Swaminathan & Joachims, NeurIPS 2015: the IPS sum over the clicks divided by the IPS estimate
        of the number of relevant documents, ``sum_i c_i / p_i``, times the number of clicks). One constant factor:
        it does not move the
        minimiser of the loss, only its balance with the regulariser, so C / alpha keep the meaning they have on
        unweighted data (weights averaging 1). Default True for that reason.
    aggregate : None, "identical" or "query"
        None: one query per session. "identical": sessions of one query showing the same rows at the same ranks
        with the same clicks are merged, the clicked rows' weights summed (the same objective, fewer rows).
        "query": one query per query of the log, its distinct shown rows labelled by the IPS estimate of their click
        probability when examined, ``y_d = (1 / N_q) sum_{sessions} c_d / p_{rank(d)}`` (unbiased for eps(y_d)),
        and ``sample_weight`` None: a graded-label data set (pairs of two estimated labels count once, so this is
        not the IPS objective above; it is the "estimate the relevance, then learn from it" route).
    with_rank : bool
        Also return the display rank of each row (1 = top; merged sessions showed their rows at the same ranks):
        ``LambdaMART(position_bias="joint").fit(X, y, qid, position=rank - 1)`` estimates the position biases from
        the clicks (Hu et al., WWW 2019) instead of taking the propensities; pass ``propensity=np.ones(top_k)``
        (no weight but the merged sessions' counts). Not with aggregate="query" (a row there stands for every
        rank it was shown at).

    Returns
    -------
    rows_or_X : int64 array, ndarray or sparse matrix
        The rows of the training data: indices into the data of the log, or X[rows] when X is given.
    y, qid : float64 and int64 arrays
        The click (1/0) of each row and its query (a session, or merged sessions).
    sample_weight : float64 array or None
        1 / propensity (self-normalised, clipped at max_weight) on clicked rows, 1 elsewhere; None with
        aggregate="query".
    rank : int64 array (with_rank=True)
        The display rank of each row.
    """
    log = _check_log(log, "click_training_data")
    aggregate = check_option("aggregate", aggregate, AGGREGATES)
    if not isinstance(self_normalize, (bool, np.bool_)):
        raise TypeError(f"self_normalize must be True or False, got {self_normalize!r}")
    if X is not None:
        X = check_X(X)
        if int(log.row.max()) >= X.shape[0]:
            raise ValueError(f"the log shows row {int(log.row.max())} but X has {X.shape[0]} rows")
    if not isinstance(with_rank, (bool, np.bool_)):
        raise TypeError(f"with_rank must be True or False, got {with_rank!r}")
    if with_rank and aggregate == "query":
        raise ValueError("with_rank=True needs one row per shown document of a session (aggregate=None or "
                         "'identical'); with aggregate='query' a row stands for every rank it was shown at")
    w = _inverse_propensity(log, propensity, max_weight)
    if aggregate == "query":
        rows, y, qid = _ips_labels(log, w)
        weight = None
    else:
        rows, y, qid, weight, mean_weight, rank = _session_pairs(log, w, aggregate == "identical")
        if self_normalize:
            weight[y == 1] /= mean_weight
    out = (rows if X is None else X[rows]), y, qid, weight
    return (*out, rank) if with_rank else out


def _session_pairs(log, w, merge):
    sessions, n = _session_index(log)
    in_order = np.all((np.diff(sessions) > 0) | ((np.diff(sessions) == 0) & (np.diff(log.rank) > 0)))
    if not in_order:  # entries grouped by session, in rank order (simulated logs already are)
        order = np.lexsort((log.rank, sessions))
        sessions, w = sessions[order], w[order]
        log = ClickLog(log.session[order], log.query[order], log.row[order], log.rank[order], log.click[order])
    n_clicks = np.bincount(sessions, weights=log.click, minlength=n)
    n_shown = np.bincount(sessions, minlength=n)
    useful = (n_clicks > 0) & (n_clicks < n_shown)
    keep = useful[sessions]
    sessions, row, click, rank, w = sessions[keep], log.row[keep], log.click[keep], log.rank[keep], w[keep]
    weight = np.where(click == 1, w, 1.0)
    mean_weight = w[click == 1].mean() if row.size else 1.0  # over the sessions' clicks, before any merge
    if merge and row.size:
        sessions, row, click, weight, rank = _merge_identical(sessions, log.query[keep], row, rank, click, weight)
    return row, click.astype(np.float64), _dense_index(sessions)[0], weight, mean_weight, rank


def _merge_identical(sessions, query, row, rank, click, weight):
    """Sessions with the same (query, rows, ranks, clicks) as one, the clicked rows' weights summed."""
    length = np.bincount(sessions)[np.unique(sessions)]
    first = np.r_[0, np.cumsum(length)[:-1]]
    width = int(length.max())
    within = np.arange(row.shape[0]) - np.repeat(first, length)
    index = np.repeat(np.arange(length.shape[0]), length)
    key = np.full((length.shape[0], 3 * width + 1), -1, dtype=np.int64)
    key[:, 0] = query[first]
    key[index, 1 + 3 * within] = row
    key[index, 2 + 3 * within] = rank
    key[index, 3 + 3 * within] = click
    _, group, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    # summed weight per (group, position): the entries of the group's first session carry it
    total = np.zeros((group.shape[0], width))
    np.add.at(total, (inverse[index], within), weight)
    kept = np.isin(index, group)
    merged = np.where(click[kept] == 1, total[inverse[index[kept]], within[kept]], 1.0)
    return sessions[kept], row[kept], click[kept], merged, rank[kept]


def _ips_labels(log, w):
    """Per (query, shown row): the IPS estimate of its click probability when examined."""
    sessions, _ = _session_index(log)
    q_sessions = np.unique(np.c_[log.query, sessions], axis=0)[:, 0]
    n_q = np.bincount(q_sessions, minlength=int(log.query.max()) + 1)
    rows, inverse = np.unique(log.row, return_inverse=True)
    inverse = inverse.reshape(-1)
    query = np.zeros(rows.shape[0], dtype=np.int64)
    query[inverse] = log.query
    y = np.bincount(inverse, weights=log.click * w, minlength=rows.shape[0]) / n_q[query]
    order = np.argsort(query, kind="stable")
    return rows[order], y[order], query[order]


# ---------------------------------------------------------------------------------------------
# metrics from clicks
# ---------------------------------------------------------------------------------------------
def _by_rank(groups, scores):
    """``(rows, position)``: the rows of each query by decreasing score (ties: increasing row index), queries in the
    order of ``groups``, and the 0-based rank of each of them."""
    sizes = groups.sizes
    qidx = np.repeat(np.arange(groups.n_queries, dtype=np.int64), sizes)
    rows = groups.order[np.lexsort((-groups.sort(scores), qidx))]  # stable: ties keep increasing row index
    return rows, np.arange(rows.shape[0], dtype=np.int64) - np.repeat(groups.offsets[:-1], sizes)


def _ranks(scores, qid):
    """The 1-based rank of each row within its query by decreasing score (ties: increasing row index)."""
    rows, position = _by_rank(QueryGroups(qid), scores)
    ranks = np.empty(rows.shape[0], dtype=np.int64)
    ranks[rows] = position + 1
    return ranks


def _discount(ranks, metric, k):
    """lambda(rank): ``1 / log2(1 + r)`` for r <= k (0 below) for "dcg", the rank r itself for "rank"."""
    metric = check_option("metric", metric, METRICS)
    if metric == "rank":
        return ranks.astype(np.float64)
    value = 1.0 / np.log2(1.0 + ranks)
    if k is not None:
        value[ranks > check_param("k", k, low=1, integer=True)] = 0.0
    return value


def ips_metric(log, propensity, scores, qid, *, metric="dcg", k=None, max_weight=None):
    """The IPS estimate of a ranker's metric from clicks and its standard error, ``(estimate, se)``.

    ``estimate = (1 / N) sum_sessions sum_{d clicked} lambda(rank_S(d)) / p_{rank_log(d)}`` (Joachims, Swaminathan
    & Schnabel, WSDM 2017, section 4; Agarwal, Takatsu, Zaitsev & Joachims, SIGIR 2019, for DCG), with rank_S(d) the
    rank of row d among all rows of its query by ``scores`` (the ranker evaluated, ties by row index) and lambda
    ``1 / log2(1 + r)`` up to rank ``k`` ("dcg", larger is better) or ``r`` ("rank": the sum of the ranks of the
    relevant documents, smaller is better). Since ``E[c_d / p] = eps(y_d)`` for a shown document, the estimate is
    unbiased for the mean over sessions of ``sum_{d shown} eps(y_d) lambda(rank_S(d))``
    (:func:`expected_click_metric`); documents never shown (below the logging cut-off) are invisible to it.
    ``se`` is the standard deviation of the per-session sums over sqrt(N). ``max_weight`` clips 1 / p (biased).
    """
    log = _check_log(log, "ips_metric")
    scores = check_y(scores, name="scores")
    qid = check_qid(qid, scores.shape[0], of="scores")
    if int(log.row.max()) >= scores.shape[0]:
        raise ValueError(f"the log shows row {int(log.row.max())} but scores has {scores.shape[0]} entries")
    w = _inverse_propensity(log, propensity, max_weight)
    value = _discount(_ranks(scores, qid)[log.row], metric, k)
    sessions, n = _session_index(log)
    per_session = np.bincount(sessions, weights=log.click * w * value, minlength=n)
    se = per_session.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
    return float(per_session.mean()), float(se)


def expected_click_metric(y, qid, scores, *, logging_scores=None, top_k=10, metric="dcg", k=None,
                          relevance="graded", epsilon_plus=1.0, epsilon_minus=0.1):
    """The value :func:`ips_metric` estimates, from the true labels: the mean over queries (the sessions' uniform
    draw) of ``sum_{d shown} eps(y_d) lambda(rank_S(d))``, with eps the click probability of an examined document
    (:func:`click_probability`), rank_S by ``scores`` and "shown" the top ``top_k`` rows of each query by
    ``logging_scores`` (None, or top_k None: every row). With ``relevance=t``, ``epsilon_plus=1`` and
    ``epsilon_minus=0`` it is the DCG of binary relevance (metric "dcg") or the sum of the ranks of the relevant
    documents ("rank", Joachims et al. 2017, section 4)."""
    y = check_y(y)
    qid = check_qid(qid, y.shape[0], of="y")
    scores = check_y(scores, y.shape[0], name="scores", of="y")
    top_k = _check_top_k(top_k)
    shown = np.ones(y.shape[0], dtype=bool)
    if logging_scores is not None and top_k is not None:
        shown = _ranks(check_y(logging_scores, y.shape[0], name="logging_scores", of="y"), qid) <= top_k
    value = click_probability(y, relevance, epsilon_plus, epsilon_minus) * _discount(_ranks(scores, qid), metric, k)
    groups = QueryGroups(qid)
    return float(np.bincount(groups.query_index(), weights=value * shown).mean())
