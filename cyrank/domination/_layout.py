"""DominationRank's data layout (cyrank.domination.solver): rows sorted by (query, label) into the arrays the
kernels read, column by column for coordinate descent (_cd.pyx: a copy of X's kept rows in that order) and
row by row for the Newton products (_smooth.pyx: X itself, read through the sorted rows' indices), and the
rounding error of the loss gradient."""
import numpy as np
import scipy.sparse as sp

from .._dense import should_densify
from .._linear import product_parts
from .._queries import QueryGroups
from .._validation import check_preferred_weight, check_random_state, max_abs, warn_if_no_pairs


class _Layout:
    """Rows sorted by (query, label): the arrays the kernel reads (see cyrank/domination/_cd.pyx).

    rows      original index of each sorted row (rows of single-level queries and unsampled rows are absent)
    q_ptr     query q owns query-layers q_ptr[q]:q_ptr[q+1]
    lay_ptr   query-layer k owns sorted rows lay_ptr[k]:lay_ptr[k+1]
    row_qk    query-layer of each sorted row;  qk_q: query of each query-layer;  offset: sorted offsets
    weight    sorted sample weights (w_i weighs the loss term l_i of row i), or None: unweighted (every w_i = 1,
              the kernels' fast path)
    """

    def __init__(self, rows, q_ptr, lay_ptr, row_qk, qk_q, offset, weight=None):
        self.rows, self.q_ptr, self.lay_ptr, self.row_qk, self.qk_q, self.offset = (
            rows, q_ptr, lay_ptr, row_qk, qk_q, offset)
        self.weight = weight
        self.x_max = None  # the largest |x| of X, when the caller knows it (one O(nnz) pass less)
        self.squares = None  # the within-query column squares of X (_preconditioner), made on first need
        self._blocks = None

    def query_blocks(self):
        """(lo, hi) per query: the block lo:hi of X's rows holding the query's sorted rows, when these blocks are
        disjoint and each holds at most twice its query's rows (X grouped by query); -1 everywhere otherwise.
        The Newton products (_smooth.pyx) read a query through its block, else row by row."""
        if self._blocks is None:
            starts = self.lay_ptr[self.q_ptr]
            nq = starts.shape[0] - 1
            self._blocks = (np.full(nq, -1, np.int64), np.full(nq, -1, np.int64))
            if nq > 0:
                lo = np.minimum.reduceat(self.rows, starts[:-1]).astype(np.int64)
                hi = np.maximum.reduceat(self.rows, starts[:-1]).astype(np.int64) + 1
                by_lo = np.argsort(lo, kind="stable")
                if np.all(hi[by_lo[:-1]] <= lo[by_lo[1:]]) and np.all(hi - lo <= 2 * np.diff(starts)):
                    self._blocks = (lo, hi)
        return self._blocks


def _layout(y, qid, offset, *, binary, group_by_query, neg_sample=None, random_state=None, sample_weight=None):
    """Rows sorted by (query, label) (QueryGroups' label runs), queries with one label level dropped,
    optionally the bottom layers sampled. ``sample_weight`` (checked, input row order, or None) follows the rows;
    weights that are 0 on every dominating row are refused (cyrank._validation.check_preferred_weight).

    Negative sampling (the "Sampled" variant, section 8.2): in every query, ceil(neg_sample * n_0) of the n_0
    rows of the lowest layer (the rows that dominate nothing) are kept, uniformly without replacement.
    Returns the layout and the boolean mask (input order) of the rows negative sampling kept.
    """
    n = y.shape[0]
    labels = (y > 0).astype(np.float64) if binary else y
    groups = QueryGroups(qid if group_by_query else np.zeros(n, np.int64), labels)
    warn_if_no_pairs(groups)
    check_preferred_weight(sample_weight, groups)
    order, run_ptr, run_q = groups.label_order, groups.label_runs, groups.run_query
    run_size = np.diff(run_ptr)
    run = np.repeat(np.arange(run_size.size), run_size)  # run of each position
    kept_runs = groups.n_levels[run_q] >= 2
    keep = kept_runs[run]
    mask = np.ones(n, dtype=bool)
    if neg_sample is not None and neg_sample < 1.0:
        bottom = np.r_[True, run_q[1:] != run_q[:-1]][run]  # rows of the lowest layer of their query
        rng = check_random_state(random_state)
        by_run = np.lexsort((rng.random_sample(n), run))  # random order inside each run
        rank = np.empty(n, np.int64)
        rank[by_run] = np.arange(n) - run_ptr[run[by_run]]
        quota = np.ceil(neg_sample * run_size - 1e-12).astype(np.int64)  # >= 1: no run disappears
        sampled_out = bottom & (rank >= quota[run])
        mask[order[sampled_out]] = False
        keep &= ~sampled_out
    lay_size = np.bincount(run[keep], minlength=run_size.size)[kept_runs]
    lay_q = run_q[kept_runs]
    q_start = np.r_[True, lay_q[1:] != lay_q[:-1]] if lay_q.size else np.zeros(0, bool)
    layout = _Layout(rows=order[keep].astype(np.intp),
                     q_ptr=np.r_[np.flatnonzero(q_start), lay_q.size].astype(np.intp),
                     lay_ptr=np.r_[0, np.cumsum(lay_size)].astype(np.intp),
                     row_qk=np.repeat(np.arange(lay_size.size), lay_size).astype(np.intp),
                     qk_q=(np.cumsum(q_start) - 1).astype(np.intp),
                     offset=np.ascontiguousarray(offset[order[keep]], dtype=np.float64),
                     weight=None if sample_weight is None else np.ascontiguousarray(sample_weight[order[keep]]))
    return layout, mask


def _gradient_rounding(X, layout, scale):
    """Bound on the rounding error of the computed loss gradient X'c: eps * max_r sum_i |x_ir| * max |c_i|, with
    |c_i| = |dL/dm_i| <= the largest sum of the weights of a query's rows (each dominating row i adds at most its
    weight w_i; unweighted: the rows of the largest query). A gradient below it
    is indistinguishable from 0 (measured: the computed gradient of a loss that does not depend on w stays
    50-200 times below it). Returns 0 without the O(nnz) column sums when even the cruder bound with
    n max|x| in place of the column sums lies below ``scale``, the gradient norm at 0 (the usual case)."""
    if layout.q_ptr.shape[0] < 2:
        return 0.0
    starts = layout.lay_ptr[layout.q_ptr]
    q_rows = float(np.max(np.diff(starts)) if layout.weight is None
                   else np.max(np.add.reduceat(layout.weight, starts[:-1])))
    eps = np.finfo(np.float64).eps
    x_max = max_abs(X) if layout.x_max is None else layout.x_max
    if eps * X.shape[0] * x_max * q_rows < scale:
        return 0.0
    return float(eps * np.max(_column_abs_sums(X), initial=0.0) * q_rows)


def _column_abs_sums(X, block=1 << 20):
    """sum_i |x_ir| per column r, in float64, ``block`` entries at a time (no |X| temporary the size of X)."""
    d = X.shape[1]
    out = np.zeros(d)
    if not sp.issparse(X):
        step = max(1, block // max(1, d))
        for i in range(0, X.shape[0], step):
            out += np.abs(X[i:i + step]).sum(axis=0, dtype=np.float64)
        return out
    if X.format not in ("csr", "csc"):
        X = X.tocsr()
    for k in range(0, X.nnz, block):
        stop = min(k + block, X.nnz)
        # the column of each entry: CSR stores it, CSC's column is where the entry's position falls in indptr
        cols = (X.indices[k:stop] if X.format == "csr"
                else np.searchsorted(X.indptr, np.arange(k, stop), side="right") - 1)
        out += np.bincount(cols, weights=np.abs(X.data[k:stop]), minlength=d)
    return out


# _columns copies a dense X this many column blocks at a time (the temporary: 1 / COPY_BLOCKS of X)
COPY_BLOCKS = 16


def _columns(X, rows):
    """The sorted rows of X column by column: (data, indices, indptr, dense) for the kernel, in X's dtype.

    Coordinate descent reads columns in the sorted rows' order, so this is a copy of X (of its kept rows), the one
    a fit makes: sparse X becomes CSC with entries in sorted-row order (a CSR X converted once, its row indices
    mapped to sorted positions in place); dense X becomes Fortran-ordered, copied COPY_BLOCKS column blocks at a
    time (no full-size temporary), and is read through indices = arange(n), indptr = arange(d + 1) * n.
    """
    n, d = rows.shape[0], X.shape[1]
    if sp.issparse(X):
        Xc = X.tocsc()
        itype = np.promote_types(Xc.indices.dtype, Xc.indptr.dtype)
        pos = np.full(X.shape[0], -1, dtype=itype)  # sorted position of each row of X (-1: not kept)
        pos[rows] = np.arange(n, dtype=itype)
        own = Xc is not X  # arrays made by tocsc, changed in place below (never the caller's)
        if own and Xc.indices.dtype == itype:  # in place, a block at a time
            indices = Xc.indices
            for k in range(0, indices.shape[0], 1 << 20):
                indices[k:k + (1 << 20)] = pos[indices[k:k + (1 << 20)]]
        else:
            indices = pos[Xc.indices]
        indptr = Xc.indptr.astype(itype)
        data = Xc.data if own else Xc.data.copy()
        del Xc
        if n < X.shape[0]:  # entries of rows that are not kept leave
            kept = indices >= 0
            indptr = np.r_[0, np.cumsum(kept)].astype(itype)[indptr]
            data, indices = data[kept], indices[kept]
        Xs = sp.csc_matrix((data, indices, indptr), shape=(n, d), copy=False)
        Xs.has_sorted_indices = False
        Xs.sort_indices()
        return np.ascontiguousarray(Xs.data), Xs.indices, Xs.indptr, False
    if n == X.shape[0] and np.array_equal(rows, np.arange(n)) and X.flags.f_contiguous:
        Xs = X
    else:
        Xs = np.empty((n, d), dtype=X.dtype, order="F")
        step = max(1, -(-d // COPY_BLOCKS))
        for j in range(0, d, step):
            Xs[:, j:j + step] = X[rows, j:j + step]
    return (Xs.ravel(order="F"), np.arange(n, dtype=np.int64), np.arange(d + 1, dtype=np.int64) * n, True)


def _rows_of(X, options=None):
    """X's parts for the Newton products (_smooth.pyx, which reads sorted row p as X's row ``layout.rows[p]``):
    (data, indices, indptr, dense) of cyrank._linear.product_parts, X itself in its own dtype (no copy of a
    C-ordered dense or CSR X; another layout is converted once). A sparse X is made dense only when ``options`` ask
    for it (Options.densify_share and densify_max_bytes, the shared rule of cyrank/_dense.py: a copy in X's dtype,
    for speed)."""
    if options is None:
        from .solver import Options  # (the defaults; solver.py imports this module)

        options = Options()
    if should_densify(X, min_share=options.densify_share, max_bytes=options.densify_max_bytes):
        X = X.toarray()
    return product_parts(X)[:4]
