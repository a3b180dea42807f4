"""BLAS thread control shared by the estimators (threadpoolctl)."""
from threadpoolctl import ThreadpoolController

_CONTROLLERS = []


def one_blas_thread():
    """Context limiting BLAS to one thread (the controller is created once: inspecting libraries is slow).

    Used around kernels that call BLAS on small blocks, possibly from several OpenMP threads at once.
    """
    if not _CONTROLLERS:
        _CONTROLLERS.append(ThreadpoolController())
    return _CONTROLLERS[0].limit(limits=1, user_api="blas")
