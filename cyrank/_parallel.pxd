# Shared machinery of the kernels that split work over queries (prange) and of every long nogil loop:
# OpenMP's thread count, a fixed partition of the queries into chunks with one accumulator row each, summed
# in chunk order (so the same input gives bit-identical results whatever thread runs which chunk), and the
# periodic signal check that lets Ctrl-C stop a nogil loop.
from libc.string cimport memset

from cyrank._typedefs cimport intp_t

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int cyrank_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int cyrank_omp_max_threads(void) { return 1; }
    #endif
    #if defined(_WIN32)
    #include <windows.h>
    static double cyrank_seconds(void) { return 1e-3 * (double)GetTickCount64(); }
    #else
    #include <time.h>
    static double cyrank_seconds(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
    }
    #endif
    /* a flag written by another thread: read from memory at every call */
    static int cyrank_load_flag(const int* p) { return *(const volatile int*)p; }
    """
    int cyrank_omp_max_threads() noexcept nogil
    double cyrank_seconds() noexcept nogil
    int cyrank_load_flag(const int* p) noexcept nogil

cdef extern from "Python.h":
    # declared without an exception clause: a raising handler leaves its exception set and returns -1,
    # and the nogil loop unwinds before check_interrupt propagates it
    int PyErr_CheckSignals()
    void* PyErr_Occurred()


cdef enum:
    # queries are split into at most this many chunks (a fixed number, so results do not depend on the threads)
    MAX_CHUNKS = 64
    # ... fewer when the chunk accumulators (chunks x width doubles) would pass this many doubles (16 MB),
    ACC_BUDGET = 1 << 21
    # ... or when summing them would cost more than 1 / ACC_WORK_RATIO of the pass over the data
    ACC_WORK_RATIO = 8
    # work units (about one multiply-add on the data) between two reads of the clock by interrupted()
    CHECK_WORK = 1 << 16
    # milliseconds between two signal checks (each takes the GIL for about a microsecond)
    CHECK_MS = 50
    # a product over fewer rows (document positions) than this runs on one thread: a parallel region costs
    # microseconds, more on a busy machine (the default of the kernels' ``parallel_min_rows``)
    PARALLEL_MIN_ROWS = 20000


cdef inline int max_threads() noexcept nogil:
    """OpenMP's thread count (OMP_NUM_THREADS), 1 for a serial build."""
    cdef int n = cyrank_omp_max_threads()
    return n if n > 0 else 1


cdef inline intp_t product_threads(intp_t n_rows, intp_t n_queries, intp_t parallel_min_rows) noexcept nogil:
    """Threads of a product over n_rows rows in n_queries queries: 1 below ``parallel_min_rows`` (< 0: the
    default PARALLEL_MIN_ROWS), else OpenMP's count, at most one per query."""
    if parallel_min_rows < 0:
        parallel_min_rows = PARALLEL_MIN_ROWS
    if n_rows < parallel_min_rows:
        return 1
    return max(1, min(<intp_t>max_threads(), n_queries))


# --------------------------------------------------------------------------------- fixed partition, chunk sums
cdef inline intp_t chunk_count(intp_t n_items, intp_t width, intp_t work, intp_t n_threads) noexcept nogil:
    """Chunks of the fixed partition of n_items queries whose accumulators are ``width`` doubles each.

    MAX_CHUNKS (dynamic scheduling of many chunks balances the load), fewer when chunks x width doubles would
    pass ACC_BUDGET or 1 / ACC_WORK_RATIO of ``work`` (the entries one pass reads), but never fewer than
    n_threads: only then does the partition, hence the rounding, depend on the thread count. At most n_items.
    """
    cdef intp_t c = MAX_CHUNKS, cap
    if width > 0:
        cap = work // (ACC_WORK_RATIO * width)
        if cap > ACC_BUDGET // width:
            cap = ACC_BUDGET // width
        if cap < c:
            c = cap if cap > n_threads else n_threads
    if c > n_items:
        c = n_items
    return c if c > 0 else 1


cdef inline void balanced_chunks(const intp_t* cum, intp_t n_items, intp_t n_chunks, intp_t* bounds) noexcept nogil:
    """bounds[0..n_chunks]: contiguous ranges of items with about equal work, cum[i] (nondecreasing, n_items + 1
    entries) being the work before item i. Chunk c holds items bounds[c]:bounds[c + 1] (possibly none)."""
    cdef intp_t c, lo, hi, mid, total = cum[n_items] - cum[0]
    cdef double target
    bounds[0] = 0
    for c in range(1, n_chunks):
        target = cum[0] + <double> total * c / n_chunks
        lo = bounds[c - 1]
        hi = n_items
        while lo < hi:  # first item whose cumulative work reaches the target
            mid = lo + (hi - lo) // 2
            if cum[mid] < target:
                lo = mid + 1
            else:
                hi = mid
        bounds[c] = lo
    bounds[n_chunks] = n_items


cdef inline intp_t padded_width(intp_t width) noexcept nogil:
    """Row length of the chunk accumulators for ``width`` values: a whole number of 64-byte cache lines plus one,
    so that two threads adding into adjacent chunks' rows never write the same cache line (false sharing made
    the RankSVM products 30-60% slower in half of the processes, by where the rows fell)."""
    return ((width + 7) // 8) * 8 + 8


cdef inline double[:, ::1] chunk_accumulators(object holder, intp_t n_chunks, intp_t width):
    """The chunk accumulators, n_chunks rows of padded_width(width) doubles, kept in ``holder.acc`` (a numpy array
    or None) and reused from call to call: a fresh array costs its page faults at every call (measured: 2.6 ms of
    a 17 ms loss-and-gradient pass over 1e5 features). Not zeroed here: each chunk clears its row (zero_row) just
    before adding into it, which also brings the row into cache. One call at a time per holder."""
    cdef intp_t pw = padded_width(width)
    acc = holder.acc
    if acc is None or acc.shape[0] < n_chunks or acc.shape[1] != pw:
        import numpy
        acc = numpy.empty((n_chunks, pw))
        holder.acc = acc
    return acc[:n_chunks]


cdef inline void zero_row(double* row, intp_t width) noexcept nogil:
    """row[0:width] = 0."""
    memset(row, 0, width * sizeof(double))


cdef inline void sum_chunks(const double[:, ::1] acc, double[::1] out) noexcept nogil:
    """out = sum of the rows of acc (one accumulator per chunk; the first len(out) entries of each row), added in
    chunk order: deterministic."""
    cdef Py_ssize_t c, j
    for j in range(out.shape[0]):
        out[j] = 0.0
        for c in range(acc.shape[0]):
            out[j] += acc[c, j]


cdef inline double sum_ordered(const double* x, intp_t n) noexcept nogil:
    """x[0] + x[1] + ... + x[n - 1], in that order (the per-chunk losses)."""
    cdef intp_t i
    cdef double s = 0.0
    for i in range(n):
        s += x[i]
    return s


# ------------------------------------------------------------------------------------------ signal checks
cdef struct Interrupt:
    intp_t budget       # work units left before the clock is read again
    double next_check   # time of the next signal check
    int raised          # a signal handler raised (its exception is set): unwind, then check_interrupt


cdef inline void interrupt_init(Interrupt* it) noexcept nogil:
    """Ready for interrupted(); the first check comes after CHECK_WORK units of work."""
    it.budget = CHECK_WORK
    it.next_check = 0.0
    it.raised = 0


cdef inline bint interrupted(Interrupt* it, intp_t work) noexcept nogil:
    """Charge ``work`` units; about every CHECK_MS milliseconds run the pending signal handlers (GIL taken briefly).

    Returns True once a handler raised (Ctrl-C: KeyboardInterrupt); the exception stays set, so the caller
    must stop, make no Python call, and propagate it with check_interrupt once back with the GIL. Call from
    the Python thread only (inside a prange: through keep_going). Cost: a subtraction per call, a clock read
    per CHECK_WORK units.
    """
    cdef double now
    if it.raised:
        return True
    it.budget -= work
    if it.budget > 0:
        return False
    it.budget = CHECK_WORK
    now = cyrank_seconds()
    if now < it.next_check:
        return False
    it.next_check = now + 1e-3 * CHECK_MS
    with gil:
        if PyErr_CheckSignals() != 0:
            it.raised = 1
    return it.raised != 0


cdef inline bint keep_going(Interrupt* it, int tid, intp_t work) noexcept nogil:
    """Inside a prange, before a work item: the master thread (the Python thread, tid 0) charges ``work`` to
    the signal check; every thread gets False once a handler raised, and stops taking items."""
    if tid == 0:
        return not interrupted(it, work)
    return cyrank_load_flag(&it.raised) == 0


cdef inline int check_interrupt(const Interrupt* it) except -1:
    """With the GIL after a loop that used ``it``: raise what a signal handler raised in it, if anything."""
    if it.raised:
        if PyErr_Occurred() == NULL:
            raise KeyboardInterrupt
        return -1
    return 0
