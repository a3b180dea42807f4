# Shared C types of the cyrank kernels.
from libc.stdint cimport int32_t, int64_t

ctypedef double float64_t
ctypedef float float32_t
ctypedef int64_t intp_t      # row/column indices and offsets: 64-bit everywhere

# Real data of either precision; a kernel typed on it is compiled for both.
ctypedef fused floating:
    float
    double

# Sparse index arrays of either width (scipy uses int32 until nnz needs int64).
ctypedef fused index_t:
    int32_t
    int64_t
