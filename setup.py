"""Build the Cython extensions of cyrank.

Compiler directives are set once here (boundscheck/wraparound off, cdivision on, language_level 3).
OpenMP is used when a small test program compiles and links with -fopenmp; otherwise the build is serial
(``cython.parallel.prange`` then runs as a plain range).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# Every kernel is a .pyx file inside cyrank/, beside the Python module that uses it; each becomes one extension.
HERE = os.path.dirname(os.path.abspath(__file__))
EXTENSIONS = sorted(
    (os.path.relpath(os.path.join(root, f), HERE)[:-4].replace(os.sep, "."), os.path.relpath(os.path.join(root, f), HERE))
    for root, _, files in os.walk(os.path.join(HERE, "cyrank"))
    for f in files
    if f.endswith(".pyx")
)
# Development convenience: CYRANK_BUILD_ONLY=cyrank._metrics,cyrank.domination._cd builds just those.
if os.environ.get("CYRANK_BUILD_ONLY"):
    _only = set(os.environ["CYRANK_BUILD_ONLY"].split(","))
    EXTENSIONS = [e for e in EXTENSIONS if e[0] in _only]

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
    "embedsignature": True,
}


def openmp_flags():
    """Return (compile, link) flags for OpenMP if a test program builds with them, else ([], [])."""
    if os.environ.get("CYRANK_NO_OPENMP"):
        return [], []
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        return [], []
    src = "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "omp_test.c")
        with open(path, "w") as fh:
            fh.write(src)
        cmd = [cc, "-fopenmp", path, "-o", os.path.join(tmp, "omp_test")]
        ok = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    if ok:
        return ["-fopenmp"], ["-fopenmp"]
    print("cyrank: OpenMP not available, building serial kernels", file=sys.stderr)
    return [], []


def extensions():
    omp_compile, omp_link = openmp_flags()
    exts = []
    for name, source in EXTENSIONS:
        exts.append(
            Extension(
                name,
                [source],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"] + omp_compile,
                extra_link_args=omp_link,
            )
        )
    return cythonize(exts, compiler_directives=DIRECTIVES)


setup(ext_modules=extensions())
