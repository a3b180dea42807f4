"""The edges of preference graphs in the level form (cyrank.labelrank.graphs.Levels; Dekel, Manning & Singer, NIPS
2003, Fig. 1a-c): every label preferred to every label of a later level, written straight into the int32 arrays of
cyrank.labelrank.graphs.PreferenceGraphs (no n x L x L comparison array, no int64 index triples), built only when
something asks for the edges. O(n L^2) time; memory: the edges themselves."""
import numpy as np

from cyrank._typedefs cimport intp_t


def level_edges(const int[:, ::1] order, const long long[::1] level_ptr, const int[::1] starts,
                const long long[::1] edge_ptr):
    """(init, term) (int32) of graphs in the level form (cyrank.labelrank.graphs.Levels: instance i's labels
    order[i, :] in levels starting at starts[level_ptr[i]:level_ptr[i + 1]]): every label to every label of a
    later level, sorted by (init, term) within each instance, edge_ptr their offsets. O(n L^2) time."""
    cdef intp_t n = order.shape[0], L = order.shape[1], i, a, b, k, t, hi, e = 0
    init_arr = np.empty(edge_ptr[n] if n else 0, dtype=np.int32)
    term_arr = np.empty(edge_ptr[n] if n else 0, dtype=np.int32)
    lev_arr = np.empty(max(L, 1), dtype=np.int64)
    cdef int[::1] init = init_arr, term = term_arr
    cdef long long[::1] lev = lev_arr
    with nogil:
        for i in range(n):
            for k in range(level_ptr[i + 1] - level_ptr[i]):
                hi = starts[level_ptr[i] + k + 1] if level_ptr[i] + k + 1 < level_ptr[i + 1] else L
                for t in range(starts[level_ptr[i] + k], hi):
                    lev[order[i, t]] = k
            for a in range(L):
                for b in range(L):
                    if lev[a] < lev[b]:
                        init[e] = <int> a
                        term[e] = <int> b
                        e += 1
    return init_arr, term_arr
