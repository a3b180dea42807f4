"""RankSVM's smooth problems (squared hinge): the linear one a datafit (cyrank.optim.datafit; public through
:func:`loss`), the kernel one for cyrank.optim.tron; and the query layout of the pair kernels.

With preference pairs P = {(i, j): qid_i = qid_j, y_i > y_j} (Kuo, Lee & Lin 2014, "Large-scale kernel
RankSVM", SDM; eqs. (3.11)-(3.13)), loss, gradient and Hessian-vector products come from order-statistic sums per
query in O(l log l) (_pairloss.pyx, _ostree.pyx; Appendix B), never from the pairs themselves. With
``sample_weight`` w the pair (i, j) counts with w_i, the preferred row's weight (Joachims, Swaminathan & Schnabel,
WSDM 2017): the layout carries the weights and the same sums are weighted.
"""
import numpy as np
import scipy.sparse as sp

from .._dense import memory_neutral_share, should_densify
from .._queries import QueryGroups
from .._threads import one_blas_thread
from .._validation import (check_feature_scale, check_param, check_preferred_weight, check_ranking_data,
                           check_sample_weight, warn_if_no_pairs)
from ..optim.certificate import group_column_squares
from ..optim.datafit import Datafit
from ..optim.smooth import SmoothProblem
from . import _pairloss


# ---------------------------------------------------------------------------------------------- data layout
def make_layout(y, qid, parallel_min_rows=-1, sample_weight=None):
    """The query layout of the kernels (see _pairloss.Layout) and the number of preference pairs.

    Rows are grouped by qid (stable sort), queries with a single label level are left out, and every row
    gets the dense rank of its label inside its query. ``qid=None``: one query. A RankingDataWarning when no
    query has two label levels (the layout is then empty and there is no pair). ``parallel_min_rows``: see
    _pairloss.Layout. ``sample_weight`` (None, a number or one weight per row, in the rows' order; checked by
    cyrank._validation, refused when every pair would weigh 0) follows the rows into the layout's ``weight``
    (``layout.pair_weight_sum`` is sum_P w_i).
    """
    y = np.asarray(y, dtype=np.float64)
    sample_weight = check_sample_weight(sample_weight, y.shape[0])
    groups = QueryGroups(np.zeros(y.shape[0], np.int64) if qid is None else qid, y)
    check_preferred_weight(sample_weight, groups)
    warn_if_no_pairs(groups)
    n = groups.n_samples
    keep_q = groups.n_levels >= 2
    keep = np.repeat(keep_q, groups.sizes)
    rows = groups.order[keep]
    rank = groups.level_sorted[keep]
    sizes = groups.sizes[keep_q]
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    weight = None if sample_weight is None else sample_weight[rows]
    layout = _pairloss.Layout(rows, offsets, rank, groups.n_levels[keep_q], n, parallel_min_rows, weight)
    return layout, groups.n_pairs_possible


def _linear_parts(X):
    """(data, indices, indptr, dense, n_features) of X for the linear kernels: CSR or C-ordered dense.

    A sparse X whose dense form takes no more memory than its CSR arrays (e.g. a LETOR file listing every
    feature) is made dense (cyrank/_dense.py): a dense row is read without index loads, about twice as fast.
    """
    if sp.issparse(X):
        X = X.tocsr() if X.format != "csr" else X
        if not should_densify(X, min_share=memory_neutral_share(X), max_bytes=np.inf):
            return (X.data, X.indices, X.indptr, False, X.shape[1])
        X = X.toarray()
    X = np.ascontiguousarray(X)
    dummy = np.zeros(1, dtype=np.int64)
    return (X.ravel(), dummy, dummy, True, X.shape[1])


# ---------------------------------------------------------------------------------------------- objectives
class _PairState:
    """Scores and their order at one point (for the Hessian products), and the number of active pairs there."""

    def __init__(self, layout):
        self.f, self.perm = layout.new_state()
        self.n_active = 0


class LinearSquaredHinge(Datafit):
    """C sum_P w_i max(0, 1 - w'(x_i - x_j))^2 + ridge ||w||^2 as a datafit (cyrank.optim.datafit), the squared hinge
    of the linear rankSVM (Kuo, Lee & Lin 2014, (3.11); Lee & Lin 2014); w_i the layout's weights (1 without).

    One pass over X gives the loss and the gradient 2 ridge w + C X'dL/df; the state keeps the sorted scores whose
    active pairs the Hessian-vector product 2 ridge v + 2C X'A'A X v uses. ``regularize=True`` (default) sets
    ridge = 1/2, RankSVM's w'w / 2; ``regularize=False`` ridge = 0: the loss alone (one part of the data, as the
    shards of cyrank.dask sum it; the datafit :func:`loss` returns). :func:`cyrank.optim.datafit.minimise` sets
    ridge to its penalty's l2 weight.
    """

    def __init__(self, X, layout, C, regularize=True):
        self.X = X
        self.parts = _linear_parts(X)
        self.d = self.n_features = self.parts[-1]
        self.n_rows = int(layout.rows.shape[0])
        self.layout = layout
        self.C = float(C)
        self.ridge = 0.5 if regularize else 0.0
        self._squares = None
        super().__init__()

    @property
    def regularize(self):
        """Whether the datafit holds a ridge term (ridge > 0)."""
        return self.ridge != 0.0

    def column_squares(self):
        """The within-query centred column squares of X over the layout's rows (computed once)."""
        if self._squares is None:
            self._squares = group_column_squares(self.X, self.layout.offsets, self.layout.rows)
        return self._squares

    def with_C(self, C):
        """The same datafit with weight ``C`` (and this one's ridge), sharing the data, the layout and the column
        squares (a regularisation path over C lays the data out once)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.C = float(C)
        SmoothProblem.__init__(other)  # fresh evaluation states
        return other

    def loss(self, w, squared=True):
        """(sum_P w_i loss, number of active pairs) at w: the pair sum alone (no C, no ridge)."""
        f, perm = self.layout.new_state()
        xg = np.empty(self.d)
        return _pairloss.linear_fun_grad(*self.parts, self.layout, np.ascontiguousarray(w, dtype=np.float64),
                                         squared, f, perm, xg)[:2]

    def new_state(self):
        return _PairState(self.layout)

    def evaluate(self, w, Mw, state):
        xg = np.empty(self.d)
        loss, state.n_active, _ = _pairloss.linear_fun_grad(*self.parts, self.layout, w, True, state.f, state.perm,
                                                            xg)
        if not self.ridge:
            return self.C * loss, self.C * xg
        # with ridge 1/2: w'w / 2 + C loss and w + C xg, the same floating-point operations as ever
        return self.ridge * float(w @ w) + self.C * loss, (2.0 * self.ridge) * w + self.C * xg

    def hessian_block(self, ws):
        """H[ws, ws] at the point of the last ``grad`` call: 2C X_ws'A'WA X_ws + 2 ridge I, A'WA the Laplacian of the
        active pairs weighted by w_i ((B.3) for every column of X_ws at once), formed in one pass over the queries
        (_pairloss.linear_hess_block) instead of |ws| Hessian products."""
        ws = np.ascontiguousarray(ws, dtype=np.int64)
        H = np.empty((ws.size, ws.size))
        state = self.state
        with one_blas_thread():  # small dgemm calls, possibly from several OpenMP threads
            _pairloss.linear_hess_block(*self.parts, self.layout, state.f, state.perm, ws, H)
        H *= 2.0 * self.C
        H[np.diag_indices(ws.size)] += 2.0 * self.ridge
        return H

    def hessian_product(self, state, s, Ms):
        out = np.empty(self.d)
        _pairloss.linear_hess(*self.parts, self.layout, state.f, state.perm, np.ascontiguousarray(s), out)
        if not self.ridge:
            return 2.0 * self.C * out
        return (2.0 * self.ridge) * s + 2.0 * self.C * out


def loss(X, y, qid=None, *, C=1.0, sample_weight=None):
    """The linear rankSVM's squared-hinge loss on (X, y, qid) as a datafit: C sum_P w_i max(0, 1 - w'(x_i - x_j))^2,
    P = {(i, j): qid_i = qid_j, y_i > y_j} (Kuo, Lee & Lin 2014, (3.11)), ridge 0.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Relevance labels.
    qid : array-like of shape (n_samples,) or None, default=None
        Query ids (None: one query).
    C : float > 0, default=1.0
        Weight of the pair sum.
    sample_weight : array-like of shape (n_samples,), float or None, default=None
        Row weights w (None: all 1): the pair (i, j) counts with w_i, the weight of its preferred row (Joachims,
        Swaminathan & Schnabel, WSDM 2017); checked by cyrank._validation.check_sample_weight.

    Returns
    -------
    LinearSquaredHinge
        A :class:`cyrank.optim.datafit.Datafit` on the checked data: ``fun(w)``, ``grad(w)``, ``hess_vec(v)``,
        ``n_features``, ``n_rows``, ``column_squares()``; its ``loss(w)`` gives (sum_P loss, active pairs).
        :func:`cyrank.optim.datafit.minimise` minimises it plus a penalty (with
        ``cyrank.optim.penalties.Penalty(lam1, 0.5)``, ``lam1 = 0``: RankSVM's l2 objective).
    """
    C = check_param("C", C, low=0.0, low_open=True)
    X, y, qid = check_ranking_data(X, y, qid)
    check_feature_scale(X, "RankSVM")
    layout, _ = make_layout(y, qid, sample_weight=sample_weight)
    return LinearSquaredHinge(X, layout, C, regularize=False)


class KernelSquaredHinge(SmoothProblem):
    """beta'Q beta / 2 + C sum_P w_i max(0, 1 - (Q beta)_i + (Q beta)_j)^2 (3.13; w_i the layout's weights, 1
    without) for TRON, in the inner product <a, b> = a'Q b (``metric``; see cyrank.optim.tron).

    In that inner product the gradient is beta + C dL/df (Q times it is (B.2)) and the Hessian-vector product
    v + 2C A'A Q v (Q times it is (B.3)); neither needs a product with Q once TRON supplies Q beta and Q v,
    so a CG step costs one product with Q (``metric``). ||grad|| is the norm of the gradient with respect to
    w in feature space. ``Q`` is a :class:`StoredKernel` or :class:`BlockedKernel`.
    """

    def __init__(self, Q, layout, C):
        self.Q = Q
        self.layout = layout
        self.C = float(C)
        self.n = layout.n_data_rows
        super().__init__()

    def loss(self, beta, squared=True):
        """(loss, number of active pairs) at beta, with Q beta computed afresh."""
        f, perm = self.layout.new_state()
        gf = np.empty(self.n)
        return _pairloss.scores_fun_grad(self.Q.matvec(beta), self.layout, squared, f, perm, gf)[:2]

    def metric(self, v):
        return self.Q.matvec(v)

    def new_state(self):
        return _PairState(self.layout)

    def evaluate(self, beta, Qbeta, state):
        gf = np.empty(self.n)
        loss, state.n_active, _ = _pairloss.scores_fun_grad(np.ascontiguousarray(Qbeta), self.layout, True, state.f,
                                                            state.perm, gf)
        return 0.5 * float(beta @ Qbeta) + self.C * loss, beta + self.C * gf

    def hessian_product(self, state, v, Qv):
        u = np.empty(self.n)
        _pairloss.scores_hess(np.ascontiguousarray(Qv), self.layout, state.f, state.perm, u)
        return v + 2.0 * self.C * u
