# Order-statistic sums over the preference pairs of one query (see _ostree.pyx).
from cyrank._sort cimport KeyIndex
from cyrank._typedefs cimport intp_t

cdef void sort_by_key(intp_t* a, intp_t n, const double* key, KeyIndex* scratch) noexcept nogil

cdef void center_segment(intp_t start, intp_t stop, const intp_t* perm, double* values) noexcept nogil

cdef void query_sweep(intp_t start, intp_t stop, const double* f, const intp_t* perm, const intp_t* rank,
                      const double* vals, intp_t n_levels, intp_t* fen_cnt, double* fen_sum,
                      double* cnt_minus, double* sum_minus, double* cnt_plus, double* sum_plus) noexcept nogil

cdef void query_sweep_block(intp_t start, intp_t stop, const double* f, const intp_t* perm, const intp_t* rank,
                            intp_t n_levels, const double* T, intp_t m, intp_t* fen_cnt, double* fen_sum,
                            double* count, double* out) noexcept nogil
