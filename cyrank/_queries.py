"""QueryGroups: rows grouped by query id, sorted once.

Every estimator and metric works on query-contiguous data. ``QueryGroups`` sorts the rows by qid once with
a stable sort (so rows of a query keep their input order, which matters for the "input order" tie rules),
keeps the permutation, and records per query its row offsets and its number of distinct label levels.
Unsorted or interleaved qid is valid input.

    order[k]                 original row index of sorted position k
    offsets[q]:offsets[q+1]  sorted positions of query q (queries in increasing qid order)
    ids[q]                   the qid value of query q (the original string for string qids: queries are then
                             in increasing string order)
    n_levels[q]              number of distinct labels in query q (1 => the query has no preference pair)

With labels, the (query, label) runs ("layers" of Stevens, MIT thesis 2010, section 3) are kept as well:

    label_order[k]                  original row index of position k in (query, label) order (stable)
    label_runs[r]:label_runs[r+1]   positions of run r in label_order (runs ascending by label in a query)
    run_query[r]                    query of run r
    level_sorted[k]                 dense rank (0, 1, ...) of the label of sorted position k in its query
"""
import numpy as np

from ._validation import check_y, factorize_qid


class QueryGroups:
    """Rows of a ranking data set grouped by query (see module docstring)."""

    __slots__ = ("order", "offsets", "ids", "n_levels", "n_pairs", "is_sorted", "label_order",
                 "label_runs", "run_query", "level_sorted")

    def __init__(self, qid, y=None):
        if qid is None and y is None:
            raise ValueError("QueryGroups needs qid, or y to size a single query")
        n = np.asarray(y).shape[0] if qid is None else np.asarray(qid).shape[0]
        qid, names = factorize_qid(qid, n)
        n = qid.shape[0]
        self.is_sorted = bool(n < 2 or np.all(qid[1:] >= qid[:-1]))
        self.order = np.arange(n, dtype=np.int64) if self.is_sorted else np.argsort(qid, kind="stable")
        q_sorted = qid[self.order]
        starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]]) if n else np.zeros(0, np.int64)
        self.offsets = np.r_[starts, n].astype(np.int64)
        self.ids = q_sorted[starts] if names is None else names[q_sorted[starts]]
        self.n_levels = self.n_pairs = self.label_order = self.label_runs = self.run_query = None
        self.level_sorted = None
        if y is not None:
            self.set_labels(y)

    def set_labels(self, y):
        """Record the (query, label) runs and per query the number of label levels and of preference pairs
        {(i, j): y_i > y_j}."""
        y = check_y(y, self.n_samples, of="qid")
        ys = y[self.order]
        qidx = np.repeat(np.arange(self.n_queries, dtype=np.int64), self.sizes)
        by_label = np.lexsort((ys, qidx))  # query-major, then label
        qs, ls = qidx[by_label], ys[by_label]
        new_run = np.r_[True, (qs[1:] != qs[:-1]) | (ls[1:] != ls[:-1])] if qs.size else np.zeros(0, bool)
        run_start = np.flatnonzero(new_run)
        run_len = np.diff(np.r_[run_start, qs.size])
        run_query = qs[run_start]
        self.label_order = self.order[by_label]
        self.label_runs = np.r_[run_start, qs.size].astype(np.int64)
        self.run_query = run_query
        self.n_levels = np.bincount(run_query, minlength=self.n_queries).astype(np.int64)
        first_run = np.r_[0, np.cumsum(self.n_levels)[:-1]].astype(np.int64)
        self.level_sorted = np.empty(qs.size, dtype=np.int64)
        self.level_sorted[by_label] = np.cumsum(new_run) - 1 - first_run[qs]
        tied = np.bincount(run_query, weights=run_len * (run_len - 1) / 2.0, minlength=self.n_queries)
        m = self.sizes
        # pairs with different labels = all pairs - tied pairs (exact in float64 below 2**53)
        self.n_pairs = m * (m - 1) // 2 - np.rint(tied).astype(np.int64)
        return self

    @property
    def n_samples(self):
        return int(self.order.shape[0])

    @property
    def n_queries(self):
        return int(self.offsets.shape[0] - 1)

    @property
    def sizes(self):
        """Number of rows of each query."""
        return np.diff(self.offsets)

    @property
    def n_pairs_possible(self):
        """Total number of preference pairs over all queries (needs labels)."""
        if self.n_pairs is None:
            raise RuntimeError("QueryGroups has no labels; call set_labels(y) first")
        return int(self.n_pairs.sum())

    def sort(self, a):
        """Rows of ``a`` (array or sparse matrix) in query-sorted order."""
        return a if self.is_sorted else a[self.order]

    def unsort(self, a_sorted):
        """Inverse of :meth:`sort` for a 1-d array: values back in the input row order."""
        if self.is_sorted:
            return a_sorted
        out = np.empty_like(a_sorted)
        out[self.order] = a_sorted
        return out

    def query_index(self):
        """Index (0..n_queries-1) of the query of each row, in input order."""
        return self.unsort(np.repeat(np.arange(self.n_queries, dtype=np.int64), self.sizes))

    def query_weights(self, sample_weight):
        """The weight of each query: the mean ``sample_weight`` of its rows (input row order), as
        ``RankerMixin.score`` and ``validation_path`` weigh per-query metrics."""
        return np.bincount(self.query_index(), weights=sample_weight, minlength=self.n_queries) / self.sizes

    def __len__(self):
        return self.n_queries

    def __repr__(self):
        return f"QueryGroups(n_samples={self.n_samples}, n_queries={self.n_queries})"
