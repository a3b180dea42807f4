"""Memory budgets checked before a solver allocates: what the machine has free, and one refusal message."""
import os


def available_memory():
    """Bytes of memory available for a new allocation (Linux MemAvailable; None where the OS does not say)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(need, what, advice):
    """MemoryError, before anything is allocated, when ``need`` bytes for ``what`` exceed the free memory."""
    avail = available_memory()
    if avail is not None and need > avail:
        raise MemoryError(f"{what} needs {need / 2**20:.0f} MB but only {avail / 2**20:.0f} MB of memory is "
                          f"available; {advice}")
