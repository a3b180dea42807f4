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
numpydoc_show_class_members = False  # the API pages list what autosummary generates
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

templates_path = []
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
html_theme = "alabaster"
html_theme_options = {"description": "fast, exact-to-tolerance learning to rank", "fixed_sidebar": True}
html_static_path = []


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


def setup(app):
    app.connect("autodoc-process-docstring", _escape_plain_docstring, priority=100)
