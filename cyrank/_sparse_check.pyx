"""O(nnz) structural check of a compressed sparse matrix (CSR/CSC), run before any kernel reads one.

scipy builds ``csr_matrix((data, indices, indptr), shape)`` from a user's arrays without checking that the
indices lie inside the shape or that ``indptr`` never decreases; a kernel indexing with such arrays reads or
writes out of bounds. :func:`scan_compressed` walks the arrays once (nogil) and reports the first bad position,
and whether the indices are sorted and free of duplicates inside every row (column), so that the caller knows
whether the matrix is already canonical.
"""
from cyrank._typedefs cimport index_t, intp_t

# codes of the first problem found (the caller turns them into messages)
cdef enum:
    C_OK = 0
    C_BAD_START = 1      # indptr[0] != 0
    C_DECREASING = 2     # indptr[pos + 1] < indptr[pos]
    C_PAST_END = 3       # indptr[pos] > len(indices)
    C_INDEX_LOW = 4      # indices[pos] < 0
    C_INDEX_HIGH = 5     # indices[pos] >= n_minor

OK, BAD_START, DECREASING, PAST_END, INDEX_LOW, INDEX_HIGH = (
    C_OK, C_BAD_START, C_DECREASING, C_PAST_END, C_INDEX_LOW, C_INDEX_HIGH)


def scan_compressed(const index_t[::1] indptr, const index_t[::1] indices, intp_t n_minor):
    """Return ``(code, pos, sorted, no_duplicates)``.

    ``code`` is OK or the first problem: BAD_START, DECREASING (pos = the major index whose pointer decreases),
    PAST_END (pos = the pointer past ``len(indices)``), INDEX_LOW / INDEX_HIGH (pos = the entry). ``sorted`` and
    ``no_duplicates`` describe the indices inside each major slice (meaningful only when ``code`` is OK).
    """
    cdef intp_t n_major = indptr.shape[0] - 1, nnz = indices.shape[0]
    cdef intp_t i, k, start, stop, col, prev
    cdef int code = C_OK
    cdef intp_t pos = 0
    cdef bint is_sorted = True, unique = True
    if n_major < 0:
        return C_BAD_START, 0, True, True
    with nogil:
        if indptr[0] != 0:
            code = C_BAD_START
        else:
            for i in range(n_major):
                start = indptr[i]
                stop = indptr[i + 1]
                if stop < start:
                    code, pos = C_DECREASING, i
                    break
                if stop > nnz:
                    code, pos = C_PAST_END, i + 1
                    break
                prev = -1
                for k in range(start, stop):
                    col = indices[k]
                    if col < 0:
                        code, pos = C_INDEX_LOW, k
                        break
                    if col >= n_minor:
                        code, pos = C_INDEX_HIGH, k
                        break
                    if col < prev:
                        is_sorted = False
                    elif col == prev:
                        unique = False
                    prev = col
                if code != C_OK:
                    break
    return code, pos, is_sorted, unique
