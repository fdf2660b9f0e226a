"""Sphinx configuration of the ppclust documentation.

Build (warnings are errors): ``sphinx-build -W --keep-going -b html docs docs/_build/html``; with
``PPCLUST_DOCS_API_ONLY=1`` in the environment, the API reference alone (``tests/test_docs.py``'s fast build).
Generated pages (gallery, benchmarks, the claim ledger, the solver reference) are written by
``docs/_generate.py`` when this file is read, so a plain ``sphinx-build`` is enough.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document the checkout, not an installed copy
sys.path.insert(0, str(DOCS))
os.environ.setdefault("PPCLUST_PROGRESS", "0")

import _generate  # noqa: E402

import ppclust  # noqa: E402

_generate.main()

project = "ppclust"
author = "the ppclust authors"
copyright = "the ppclust authors (MIT licence)"
release = ppclust.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = [
    "_build",
    "generated/_include",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",
    "README.md",
]
root_doc = "index"

# ``PPCLUST_DOCS_API_ONLY=1``: the API reference alone (``api/`` and the generated solver pages, rooted at
# ``api/index``), what the fast test of ``make test`` builds with warnings as errors. Its links into the
# user guide, left out here, are checked by the full build.
API_ONLY = os.environ.get("PPCLUST_DOCS_API_ONLY", "") == "1"
if API_ONLY:
    root_doc = "api/index"
    include_patterns = ["api/**", "generated/api-*"]
    suppress_warnings = ["ref.doc"]

# --- API reference -------------------------------------------------------------------------------
autosummary_generate = False  # the API pages are written by hand (automodule) or by _generate.py
# every public name gets an entry, with or without a docstring (the modules' __all__ decide what is public)
autodoc_default_options = {"member-order": "bysource", "undoc-members": True}
autodoc_typehints = "none"  # numpydoc's Parameters section states the types
autodoc_inherit_docstrings = False  # no scikit-learn docstrings (in their own format) on our classes
add_module_names = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "jax": ("https://docs.jax.dev/en/latest", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
    "arviz": ("https://python.arviz.org/en/stable", None),
}
# The build runs offline (CI, the development machines): intersphinx only if asked for.
if os.environ.get("PPCLUST_DOCS_INTERSPHINX", "") != "1":
    intersphinx_mapping = {}

# --- Markdown and notebooks ----------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # notebooks are rendered from their stored outputs
nb_merge_streams = True

# --- HTML ----------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"ppclust {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_static_path: list[str] = []
html_last_updated_fmt = None


def _skip_sklearn_generated(app, what, name, obj, skip, options):
    """Leave out the ``set_{fit,predict,score,...}_request`` methods scikit-learn adds to every estimator
    (metadata routing): their docstrings are scikit-learn's and point into its own documentation."""
    if what == "class" and name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


# Docstrings are written for ``help()`` first: a fitted attribute (``n_iter_``) or an absolute value
# (``|x|``) may appear as plain text, which reStructuredText would read as a hyperlink reference or a
# substitution. After numpydoc has turned the sections into reST, such words outside inline markup,
# literal and math blocks and doctests are escaped, so they print as written.
_INLINE = re.compile(r"``.+?``|:[\w:+.-]+:`[^`]*`|`[^`]*`_{0,2}|\*\*[^*]+\*\*|\*[^*\s][^*]*\*")
_REFERENCE = re.compile(r"(?<![\w\\])([A-Za-z](?:\w*?[A-Za-z0-9])?)_(?![\w`])")
_SUBSTITUTION = re.compile(r"(?<![\w\\|])\|(?=[^\s|])([^|`]*?[^\s|\\])\|(?![\w|])")


def _escape_text(text: str) -> str:
    text = _REFERENCE.sub(r"\1\\_", text)
    return _SUBSTITUTION.sub(r"\\|\1\\|", text)


def escape_plain_markup(lines: list[str]) -> list[str]:
    """``lines`` (reST) with bare ``word_`` references and ``|x|`` substitutions escaped, leaving inline
    markup (literals, roles, emphasis), indented blocks after ``::`` (literal blocks, math and other
    directives) and doctest blocks unchanged."""
    out, block_indent, in_doctest = [], None, False
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if not stripped or indent > block_indent:
                out.append(line)
                continue
            block_indent = None
        if in_doctest or stripped.startswith(">>>"):
            in_doctest = bool(stripped)
            out.append(line)
            continue
        pieces, last = [], 0
        for m in _INLINE.finditer(line):
            pieces += [_escape_text(line[last : m.start()]), m.group(0)]
            last = m.end()
        out.append("".join(pieces) + _escape_text(line[last:]))
        if stripped.endswith("::"):
            block_indent = indent
    return out


def _escape_docstring(app, what, name, obj, options, lines):
    lines[:] = escape_plain_markup(lines)


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_generated)
    app.connect("autodoc-process-docstring", _escape_docstring, priority=900)  # after numpydoc's (500)
