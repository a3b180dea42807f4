"""Within-group centred column sums of squares in one pass over X (cyrank.optim.certificate.group_column_squares).

For each group k of rows rows[offsets[k]:offsets[k+1]] and each column j, with x0 the group's first row:
    sum_i (x_ij - mean_j)^2 = sum_i (x_ij - x0_j)^2 - (sum_i (x_ij - x0_j))^2 / n_k
(dense X; the shift by the first row keeps a column like a timestamp, large but nearly constant within a group,
from cancelling). Sparse X (CSR): the shift is each column's first stored value in the group. O(d) scratch.
"""
import numpy as np

from cyrank._typedefs cimport floating, index_t, intp_t


cdef inline void _add_row(const floating* row, const floating* first, intp_t d, intp_t step, double* s,
                          double* q) noexcept nogil:
    """s += row - first, q += (row - first)^2 over the d entries ``step`` apart (a branch of its own for contiguous
    rows, which the compiler vectorises)."""
    cdef intp_t j
    cdef double x
    if step == 1:
        for j in range(d):
            x = <double> row[j] - <double> first[j]
            s[j] += x
            q[j] += x * x
    else:
        for j in range(d):
            x = <double> row[j * step] - <double> first[j * step]
            s[j] += x
            q[j] += x * x


def dense_squares(const floating[:, :] X, const intp_t[::1] rows, const intp_t[::1] offsets, double[::1] out):
    """out[j] = the centred sum of squares of column j over every group (module docstring), dense X (any strides)."""
    cdef intp_t d = X.shape[1], g, p, j, n_g
    cdef intp_t step = X.strides[1] // sizeof(floating) if d > 1 else 1
    cdef double[::1] s = np.zeros(d), q = np.zeros(d)
    cdef const floating* first
    with nogil:
        for j in range(d):
            out[j] = 0.0
        for g in range(offsets.shape[0] - 1):
            n_g = offsets[g + 1] - offsets[g]
            if n_g < 2 or d == 0:
                continue
            first = &X[rows[offsets[g]], 0]
            for j in range(d):
                s[j] = 0.0
                q[j] = 0.0
            for p in range(offsets[g] + 1, offsets[g + 1]):
                _add_row(&X[rows[p], 0], first, d, step, &s[0], &q[0])
            for j in range(d):
                out[j] += q[j] - s[j] * s[j] / n_g


def sparse_squares(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                   const intp_t[::1] rows, const intp_t[::1] offsets, double[::1] out):
    """The same for CSR X, each column shifted by its first stored value in the group (c): with m stored entries
    of n, sum (x - c) and sum (x - c)^2 over them plus the n - m absent zeros, each (0 - c). O(nnz); the four
    running values of a column side by side (one cache line per entry read)."""
    cdef intp_t d = out.shape[0], g, p, j, i, k, n_g, n_touched
    cdef double[:, ::1] acc = np.zeros((d, 4))  # per column: sum (x - c), sum (x - c)^2, c, stored count m
    cdef intp_t[::1] touched = np.empty(d, dtype=np.int64)
    cdef double x, zeros, total, square
    cdef double* a
    with nogil:
        for j in range(d):
            out[j] = 0.0
        for g in range(offsets.shape[0] - 1):
            n_g = offsets[g + 1] - offsets[g]
            if n_g < 2:
                continue
            n_touched = 0
            for p in range(offsets[g], offsets[g + 1]):
                i = rows[p]
                for k in range(indptr[i], indptr[i + 1]):
                    j = indices[k]
                    a = &acc[j, 0]
                    if a[3] == 0.0:
                        touched[n_touched] = j
                        n_touched += 1
                        a[2] = data[k]
                    a[3] += 1.0
                    x = <double> data[k] - a[2]
                    a[0] += x
                    a[1] += x * x
            for k in range(n_touched):
                a = &acc[touched[k], 0]
                zeros = n_g - a[3]
                total = a[0] - zeros * a[2]
                square = a[1] + zeros * a[2] * a[2]
                out[touched[k]] += square - total * total / n_g
                a[0] = 0.0
                a[1] = 0.0
                a[3] = 0.0
