"""Sphinx configuration of cyrank's documentation site.

Build (warnings are errors):  sphinx-build -W --keep-going -b html docs docs/_build/html
(sphinx-build, not python -m sphinx: the latter puts the repository root first on sys.path, where cyrank has
no compiled extensions unless built in place)
"""
import re

import cyrank  # the installed package (pip install ".[docs]"), with its compiled extensions

project = "cyrank"
author = "the cyrank developers"
copyright = "2026, the cyrank developers"
release = version = cyrank.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
numpydoc_show_class_members = False  # the class template (_templates/autosummary/class.rst) lists the methods
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_memory": False,
    "abort_on_example_error": True,
}

templates_path = ["_templates"]  # autosummary/class.rst: a page per method (fit, predict, score, ...)
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# literal blocks (``::``) hold formulas and file formats, not Python: no highlighting; Python examples say
# ``.. code-block:: python``
highlight_language = "none"
html_theme = "alabaster"
html_theme_options = {"description": "fast, exact-to-tolerance learning to rank", "fixed_sidebar": True}
html_static_path = ["_static"]
html_css_files = ["cyrank.css"]  # long literal lines (formulas) wrap instead of running off the page


# cyrank's docstrings are plain text with formulas (|x|, coef_, w_r): make them literal for reStructuredText
# before numpydoc parses them. A trailing underscore would be a hyperlink reference and |...| a substitution;
# lines inside literal blocks (after a line ending in "::") are left as they are.
_PARAM_LINE = re.compile(r"^(\s*)([A-Za-z_][\w]*(?:, [A-Za-z_][\w]*)*)( : .*)?$")
_TRAILING_UNDERSCORE = re.compile(r"(?<![\w`])([A-Za-z][\w]*?)_(?![\w`])")


def _literal(text):
    text = text.replace("|", "\\|")
    return _TRAILING_UNDERSCORE.sub(lambda m: m.group(1) + "\\_", text)


def _escape_plain_docstring(app, what, name, obj, options, lines):
    literal_indent = None
    for n, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if line.strip() and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        match = _PARAM_LINE.match(line)
        if match and match.group(3) is not None:  # "name : type" of a numpydoc section: keep the name
            lines[n] = match.group(1) + match.group(2) + _literal(match.group(3))
        else:
            lines[n] = _literal(line)
        if line.rstrip().endswith("::"):
            literal_indent = indent


# docutils links every standalone "name@host" as an e-mail address, so "ndcg@10", "err@5" or "prec@k" in prose
# became mailto: links; docutils has no setting to turn the recognition off. These documents hold no e-mail
# address, so a "mailto:" reference whose host has no dot (a metric name, not an address) becomes its text again.
_FALSE_EMAIL = re.compile(r"^mailto:[^@\s]+@[^.\s]+$")


def _unlink_false_emails(app, doctree):
    from docutils import nodes

    for ref in list(doctree.findall(nodes.reference)):
        if _FALSE_EMAIL.match(ref.get("refuri", "")):
            ref.replace_self(nodes.Text(ref.astext()))


# the method pages of a class (templates/autosummary/class.rst): cyrank's own methods (fit, predict, score,
# decision_function, ...), not those scikit-learn's base classes add (get_params, set_*_request, ...)
def _skip_foreign_methods(app, what, name, obj, skip, options):
    module = getattr(obj, "__module__", None) or ""
    if what == "method" and module.split(".")[0] not in ("cyrank", "reference"):
        return True
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _escape_plain_docstring, priority=100)
    app.connect("doctree-read", _unlink_false_emails)
    app.connect("autodoc-skip-member", _skip_foreign_methods)
