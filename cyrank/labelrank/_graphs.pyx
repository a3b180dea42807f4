"""Preference graphs from graded relevance in one pass per instance (Dekel, Manning & Singer, NIPS 2003, Fig. 1c):
an edge init -> term for every pair of labels of one instance with R[i, init] > R[i, term], written straight into
the int32 arrays of cyrank.labelrank.graphs.PreferenceGraphs (no n x L x L comparison array, no int64 index
triples). O(n L^2) time; memory: the edges themselves."""
import numpy as np

from cyrank._typedefs cimport intp_t


def relevance_edges(const double[:, ::1] R):
    """(edge_ptr (n + 1, int64), init, term (int32)): for each instance i, the pairs (a, b) with R[i, a] > R[i, b],
    sorted by (a, b) within the instance (the order PreferenceGraphs requires)."""
    cdef intp_t n = R.shape[0], L = R.shape[1], i, a, b, e = 0
    edge_ptr_arr = np.empty(n + 1, dtype=np.int64)
    cdef long long[::1] edge_ptr = edge_ptr_arr
    with nogil:
        edge_ptr[0] = 0
        for i in range(n):
            for a in range(L):
                for b in range(L):
                    if R[i, a] > R[i, b]:
                        e += 1
            edge_ptr[i + 1] = e
    init_arr = np.empty(e, dtype=np.int32)
    term_arr = np.empty(e, dtype=np.int32)
    cdef int[::1] init = init_arr, term = term_arr
    e = 0
    with nogil:
        for i in range(n):
            for a in range(L):
                for b in range(L):
                    if R[i, a] > R[i, b]:
                        init[e] = <int> a
                        term[e] = <int> b
                        e += 1
    return edge_ptr_arr, init_arr, term_arr
