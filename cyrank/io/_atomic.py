"""Atomic file writes: every file cyrank writes (data, predictions, model files) goes through :func:`atomic_write`."""
import os
import tempfile


def atomic_write(path, write):
    """Call ``write(fh)`` on a new temporary file beside ``path``, flush and fsync it, then move it over ``path``
    (``os.replace``, atomic on POSIX and Windows): an existing file is never left truncated by a failure or an
    interrupt mid-write, and the temporary file is removed on any exception (KeyboardInterrupt included).
    A missing or read-only directory is an ``OSError`` naming it. The new file keeps the mode of the file it
    replaces (else the usual mode under the process umask)."""
    path = os.fsdecode(os.fspath(path))
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OSError(f"cannot write {path}: the directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OSError(f"cannot write {path}: the directory {directory} is not writable (permission denied)")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not str(exc).startswith("cannot write"):
            kept = "the existing file is left as it was" if os.path.exists(path) else "no file was written"
            err = OSError(f"cannot write {path}: {exc.strerror or exc} ({type(exc).__name__}"
                          f"{f', errno {exc.errno}' if exc.errno else ''}); {kept}. Free some space, raise the "
                          "file-size limit (ulimit -f) or write elsewhere")
            err.errno = exc.errno
            raise err from None
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
