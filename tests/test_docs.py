"""The documentation site's API reference (docs/api.rst) names every public class and function: those in the
``__all__`` of cyrank and of each public subpackage, and the solve / objective functions of every ``reference``
module. (Building the site is a separate command, in README.)"""
import importlib
import inspect
import re
from pathlib import Path

import pytest

API = Path(__file__).resolve().parent.parent / "docs" / "api.rst"
PUBLIC = ["cyrank", "cyrank.domination", "cyrank.ranksvm", "cyrank.mlr", "cyrank.labelrank", "cyrank.lambdarank",
          "cyrank.metrics", "cyrank.io", "cyrank.datasets", "cyrank.model_selection", "cyrank.many", "cyrank.dask",
          "reference"]
REFERENCE = ["reference.domination", "reference.ranksvm", "reference.mlr", "reference.labelrank",
             "reference.ranknet"]


def documented():
    """The objects api.rst lists (autosummary entries resolved against the current module)."""
    if not API.is_file():
        pytest.skip("docs/ is not part of this installation")
    objects, module = [], None
    for line in API.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\.\. currentmodule:: (\S+)", line)
        if m:
            module = m.group(1)
        elif re.match(r"   [A-Za-z_][\w.]*$", line) and module:
            path = f"{module}.{line.strip()}"
            mod, _, name = path.rpartition(".")
            obj = getattr(importlib.import_module(mod) if _is_module(mod) else _resolve(mod), name)
            objects.append(obj)
    return objects


def _is_module(path):
    try:
        importlib.import_module(path)
        return True
    except ImportError:
        return False


def _resolve(path):
    mod, _, name = path.rpartition(".")
    return getattr(importlib.import_module(mod), name)


def test_every_public_class_and_function_is_in_the_api_reference():
    listed = {id(obj) for obj in documented()}
    missing = []
    for modname in PUBLIC:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and id(obj) not in listed:
                missing.append(f"{modname}.{name}")
    for modname in REFERENCE:
        mod = importlib.import_module(modname)
        for name in ("solve", "objective"):
            if id(getattr(mod, name)) not in listed:
                missing.append(f"{modname}.{name}")
    assert not missing, f"not in docs/api.rst: {missing}"
