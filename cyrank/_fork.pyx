"""OpenMP in a child process made by fork (multiprocessing's "fork" start method, joblib's "multiprocessing"
backend).

GNU OpenMP is not fork-safe: a child forked after the parent ran a parallel region inherits the bookkeeping of
the parent's worker threads but not the threads, and its first parallel region with more than one thread waits
for them forever. :func:`serial_after_fork` is registered with ``os.register_at_fork(after_in_child=...)`` when
cyrank is imported: in a forked child every cyrank kernel then runs on one thread (correct, never hung), while
processes started by spawn or forkserver (loky, joblib's default) keep every thread.
"""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static void cyrank_omp_set_threads(int n) { omp_set_num_threads(n); }
    #else
    static void cyrank_omp_set_threads(int n) { (void)n; }
    #endif
    """
    void cyrank_omp_set_threads(int n) noexcept nogil


def serial_after_fork():
    """Make OpenMP run one thread per parallel region in this (forked) process."""
    cyrank_omp_set_threads(1)
