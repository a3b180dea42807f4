"""Every documented parameter matches the signature, in order (as celer's test_docstring_parameters): the public
estimators, and every public function of cyrank whose docstring has a numpydoc Parameters section."""
import inspect
import re

import pytest

import cyrank
from cyrank import io, metrics


def _documented(obj):
    doc = inspect.getdoc(obj) or ""
    if "Parameters\n----------\n" not in doc:
        return None
    section = re.split(r"\n\n(?=[A-Z]\w+\n-{3,})", doc.split("Parameters\n----------\n", 1)[1], maxsplit=1)[0]
    return [name for names in re.findall(r"^(\w+(?:, \w+)*) :", section, flags=re.M) for name in names.split(", ")]


def _public_callables():
    for module in (cyrank, io, metrics):
        for name in getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")]):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                if getattr(obj, "__module__", "").startswith("cyrank"):
                    yield f"{module.__name__}.{name}", obj


CALLABLES = dict(_public_callables())


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_documented_parameters_match_the_signature(name):
    obj = CALLABLES[name]
    documented = _documented(obj)
    if documented is None:
        if inspect.isclass(obj) and hasattr(obj, "get_params"):
            pytest.fail(f"{name} has no Parameters section")
        pytest.skip("no numpydoc Parameters section")
    target = obj.__init__ if inspect.isclass(obj) else obj
    signature = [p.name for p in inspect.signature(target).parameters.values()
                 if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert documented == signature, f"{name}: documented {documented}, signature {signature}"
