"""The documentation site's API reference (docs/api.rst) names every public class and function: those in the
``__all__`` of cyrank and of each public subpackage, and the solve / objective functions of every ``reference``
module. (Building the site is a separate command, in README.)"""
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

API = Path(__file__).resolve().parent.parent / "docs" / "api.rst"
PUBLIC = ["cyrank", "cyrank.domination", "cyrank.ranksvm", "cyrank.mlr", "cyrank.labelrank", "cyrank.lambdarank",
          "cyrank.metrics", "cyrank.io", "cyrank.datasets", "cyrank.model_selection", "cyrank.many", "cyrank.dask",
          "cyrank.clicks", "cyrank.listwise",
          "reference"]
REFERENCE = ["reference.domination", "reference.ranksvm", "reference.mlr", "reference.labelrank",
             "reference.ranknet", "reference.listwise"]


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


# ------------------------------------------------------------------------------------ the rendered site
# Building the site takes Sphinx (extra "docs", not "test"), so each rendering cause is tested at its source:
# docs/conf.py's settings and hooks, the autosummary template, and the docstrings numpydoc reads. The built
# HTML is checked too by test_built_site, when Sphinx is installed and CYRANK_TEST_DOCS_BUILD=1.
DOCS = API.parent
SECTIONS = ("Parameters", "Other Parameters", "Attributes", "Returns", "Yields", "Receives")
# the words a numpydoc type may use (besides names with "_", "." or digits, capitalised class names, quoted
# values, {choices}, [ranges], (shapes) and default=...): anything else is a description written on the type line
TYPE_WORDS = {
    "and", "any", "array", "arrays", "binary", "bool", "boolean", "callable", "cyrank", "default", "dense", "dict",
    "dtype", "estimator", "file", "float", "function", "generator", "if", "in", "instance", "int", "integer",
    "integers", "iterable", "like", "list", "mapping", "matrix", "ndarray", "numpy", "object", "of", "only",
    "optional", "or", "path", "scalar", "scipy", "sequence", "shape", "sparse", "str", "string", "strings", "tuple",
}


def load_conf():
    """docs/conf.py as a module (it imports cyrank, not Sphinx, at the top)."""
    import importlib.util

    path = DOCS / "conf.py"
    if not path.is_file():
        pytest.skip("docs/ is not part of this installation")
    spec = importlib.util.spec_from_file_location("cyrank_docs_conf", path)
    conf = importlib.util.module_from_spec(spec)
    dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no docs/__pycache__
    try:
        spec.loader.exec_module(conf)
    finally:
        sys.dont_write_bytecode = dont_write
    return conf


class _RecordingApp:
    def __init__(self):
        self.connected = []

    def connect(self, event, handler, priority=500):
        self.connected.append((event, handler))

    def __getattr__(self, name):  # add_css_file, add_transform, ...: recorded as calls
        return lambda *args, **kwargs: self.connected.append((name, args))


def numpydoc_entries(doc):
    """(section, line) of every entry line (at the section's indentation) of the numpydoc sections that hold
    ``name : type`` entries."""
    lines, section = doc.splitlines(), None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and line.strip() and re.fullmatch(r"-{3,}", lines[i + 1].strip()):
            section = line.strip()
        elif section in SECTIONS and line and not line[0].isspace() and not re.fullmatch(r"-{3,}", line):
            yield section, line


def type_problem(section, line):
    """Why numpydoc would render part of a description as the entry's name or type (None when it would not)."""
    name, sep, typ = line.partition(" : ")
    if not sep:
        if section in ("Returns", "Yields", "Receives"):
            name, typ = "", line  # a bare type
        else:
            typ = ""
    if name and not re.fullmatch(r"\*{0,2}[A-Za-z_]\w*(, \*{0,2}[A-Za-z_]\w*)*", name.strip()):
        return f"the name part {name.strip()!r} is not a name or a list of names (descriptions go below, indented)"
    if "  " in typ.strip():
        return "two spaces inside the type: the description is on the type line (put it below, indented)"
    if re.search(r"\.\s|\.$|;", typ.strip()):
        return "a sentence on the type line (put the description below, indented)"
    stripped = re.sub(r'"[^"]*"|\'[^\']*\'|``[^`]*``', " ", typ)
    stripped = re.sub(r"default\s*=\s*(\([^)]*\)|\S+)", " ", stripped)
    stripped = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\([^)]*\)|\b\w+\s*[<>]=?\s*\S+", " ", stripped)
    for word in re.findall(r"(?<![\w.])[A-Za-z_][\w.]*", stripped):
        if word.islower() and word.isalpha() and word not in TYPE_WORDS:
            return f"{word!r} is not a type word: the description is on the type line (put it below, indented)"
    return None


def documented_docstrings():
    """(qualified name, docstring) of every object of api.rst and of the public methods its classes define."""
    seen = set()
    for obj in documented():
        members = [obj]
        if inspect.isclass(obj):
            members += [m for n, m in vars(obj).items() if not n.startswith("_") and inspect.isfunction(m)]
        for member in members:
            if id(member) not in seen:
                seen.add(id(member))
                yield f"{member.__module__}.{member.__qualname__}", inspect.getdoc(member) or ""


def test_ndcg_at_10_is_not_a_mailto_link():
    """Cause: docutils links every standalone "name@host" as an e-mail address, so "NDCG@10" (and err@5,
    prec@k) became mailto: links on 15 pages; docutils cannot turn that off. conf.py unlinks, after parsing,
    every mailto: reference whose host has no dot (no e-mail address has such a host)."""
    conf = load_conf()
    app = _RecordingApp()
    conf.setup(app)
    unlink = dict(app.connected).get("doctree-read")
    assert unlink is not None, "docs/conf.py must connect a doctree-read hook that unlinks false e-mail links"
    for text in ("mailto:ndcg@10", "mailto:NDCG@10", "mailto:err@5", "mailto:prec@k"):
        assert conf._FALSE_EMAIL.match(text), text
    assert not conf._FALSE_EMAIL.match("mailto:someone@example.org")
    try:
        from docutils import nodes
        from docutils.core import publish_doctree
    except ImportError:
        return  # the rule above is what the hook applies
    doctree = publish_doctree('The default "ndcg@10", ERR@5 and NDCG@10; write to someone@example.org.')
    unlink(None, doctree)
    refs = [ref["refuri"] for ref in doctree.findall(nodes.reference)]
    assert refs == ["mailto:someone@example.org"], refs
    assert "ndcg@10" in doctree.astext() and "NDCG@10" in doctree.astext()


def test_attribute_descriptions_are_not_rendered_as_types():
    """Cause: entries such as ``grad_norm_ : float  (squared_hinge) ||grad|| / ...`` or ``history_ : dict  (hinge)
    per separation ...`` wrote the description on the type line, and numpydoc rendered it in italics as the type;
    lists such as ``objective_, grad_norm_ (relative), n_iter_, ...`` became one bold name. Every entry of the
    Parameters / Attributes / Returns sections of the documented objects (and of their methods) is
    ``name : type`` with the description on the next lines, indented."""
    problems = [f"{where}: {line.strip()!r}: {why}"
                for where, doc in documented_docstrings()
                for section, line in numpydoc_entries(doc)
                if (why := type_problem(section, line))]
    assert not problems, "\n".join(problems)
    # the rule catches the patterns that rendered badly
    for bad in ("grad_norm_ : float  (squared_hinge) ||grad|| / ||grad at 0|| at the end",
                "n_pairs_ : int number of preference pairs", "y : float64 (n,) labels.",
                "objective_, grad_norm_ (relative), n_iter_, converged_,",
                "classes_ : ndarray, only after a fit on class labels"):
        assert type_problem("Attributes", bad), bad
    for good in ("gap_, gap_kind_ : float or None, str", "coef_ : ndarray of shape (n_features,)",
                 'metric : str, default="ndcg@10"', "random_state : int, RandomState or None, default=None",
                 "k : int >= 1 or None, default=10", "per_query : ndarray of shape (n_queries,), only if ``x``"):
        assert type_problem("Parameters", good) is None, good


def test_literal_blocks_are_plain_text_that_wraps():
    """Cause: the objective block of DominationRank (a ``::`` literal block of formulas) was highlighted as
    Python and ran off the right edge. Literal blocks are not highlighted (``highlight_language = "none"``;
    Python examples use ``.. code-block:: python``) and long lines wrap (docs/_static/cyrank.css)."""
    conf = load_conf()
    assert getattr(conf, "highlight_language", None) == "none"
    css_files = [DOCS / static / css for static in conf.html_static_path for css in conf.html_css_files]
    css = "".join(f.read_text(encoding="utf-8") for f in css_files if f.is_file())
    assert re.search(r"pre\s*\{[^}]*white-space:\s*pre-wrap", css), f"no wrapping rule for <pre> in {css_files}"
    # the Python examples of the pages still say so, so they keep their highlighting
    for page in [DOCS / "index.rst", *sorted((DOCS / "guide").glob("*.rst"))]:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"::\n\n((?:    .*\n|\n)+)", text):
            if re.search(r"^    (from \w|import \w)", block, re.M):
                pytest.fail(f"{page.name}: a Python example in a plain literal block (use .. code-block:: python)")


def test_fit_predict_score_have_pages():
    """Cause: numpydoc_show_class_members = False and autosummary's default class template (no :toctree: for
    methods) left fit, predict and score without pages. docs/_templates/autosummary/class.rst lists every method a
    class has with :toctree: (one page each), and conf.py skips only the methods scikit-learn's base classes
    add (get_params, set_*_request, ...)."""
    conf = load_conf()
    assert conf.templates_path, "docs/conf.py needs templates_path with autosummary/class.rst"
    template = DOCS / conf.templates_path[0] / "autosummary" / "class.rst"
    assert template.is_file(), f"{template} is missing"
    text = template.read_text(encoding="utf-8")
    assert re.search(r"\.\. autosummary::\n(\s+:\w+:.*\n)*\s+:toctree:", text), "methods need a :toctree:"
    assert "methods" in text
    app = _RecordingApp()
    conf.setup(app)
    skip = dict(app.connected)["autodoc-skip-member"]
    checked = 0
    for cls in documented():
        if inspect.isclass(cls) and hasattr(cls, "fit") and cls.__module__.startswith("cyrank"):
            for name in ("fit", "predict", "score", "decision_function", "transform"):
                if hasattr(cls, name):
                    checked += 1
                    assert skip(None, "method", name, getattr(cls, name), False, {}) is not True, \
                        f"{cls.__name__}.{name} would get no page"
    assert checked >= 20
    from cyrank import RankSVM

    assert skip(None, "method", "get_params", RankSVM.get_params, False, {}) is True


@pytest.mark.skipif(os.environ.get("CYRANK_TEST_DOCS_BUILD") != "1",
                    reason="builds the site (about 20 s without the gallery): set CYRANK_TEST_DOCS_BUILD=1")
def test_built_site(tmp_path):
    """The four rendering causes on the built HTML (the gallery's scripts are not run)."""
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    root = DOCS.parent
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("_build", "generated", "auto_examples"))
    shutil.copytree(root / "examples", tmp_path / "examples")
    sphinx_build = Path(sys.executable).with_name("sphinx-build")
    proc = subprocess.run([str(sphinx_build), "-W", "--keep-going", "-q", "-b", "html", "-D", "plot_gallery=0",
                           "docs", "html"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = tmp_path / "html"
    pages = {p: p.read_text(encoding="utf-8") for p in html.rglob("*.html")}
    assert not [p.name for p, t in pages.items() if "mailto:" in t]
    api = {p.name: t for p, t in pages.items() if p.parent.name == "generated"}
    assert not [n for n, t in api.items() if "highlight-default" in t or "highlight-python" in t]
    for cls in ("RankSVM", "DominationRank", "RankNet", "LambdaRank", "LambdaMART", "LabelRankBoost"):
        for method in ("fit", "predict", "score"):
            assert f"cyrank.{cls}.{method}.html" in api, f"no page for {cls}.{method}"
    for name, typ in (("grad_norm_", "float"), ("duality_gap_", "float"), ("history_", "dict"), ("n_pairs_", "int")):
        shown = re.search(rf'<strong>{name}</strong>.*?<span class="classifier">(.*?)</span>',
                          api["cyrank.RankSVM.html"], re.S)
        assert shown and shown.group(1) == typ, (name, shown and shown.group(1))
