"""Thread control shared by the estimators (threadpoolctl): BLAS limited around small products, and OpenMP's
thread count set from an estimator's ``n_jobs``."""
import contextlib

from threadpoolctl import ThreadpoolController

_CONTROLLERS = []


def _controller():
    """One ThreadpoolController per process (inspecting the loaded libraries is slow)."""
    if not _CONTROLLERS:
        _CONTROLLERS.append(ThreadpoolController())
    return _CONTROLLERS[0]


def one_blas_thread():
    """Context limiting BLAS to one thread.

    Used around kernels that call BLAS on small blocks, possibly from several OpenMP threads at once.
    """
    return _controller().limit(limits=1, user_api="blas")


def openmp_threads(n_jobs):
    """Context running the OpenMP kernels on ``n_jobs`` threads (a checked int, see ``check_n_jobs``); None
    leaves OpenMP's own count (OMP_NUM_THREADS, else every core)."""
    if n_jobs is None:
        return contextlib.nullcontext()
    return _controller().limit(limits=n_jobs, user_api="openmp")


def all_threads(n_jobs):
    """Context running every thread pool (OpenMP and BLAS) on ``n_jobs`` threads (a checked int); None leaves
    them as they are. The command line's ``--threads``."""
    if n_jobs is None:
        return contextlib.nullcontext()
    return _controller().limit(limits=n_jobs)
