"""Sphinx configuration of mrfq's documentation (MyST Markdown pages, autodoc for the API).

Build: ``sphinx-build -W -b html docs docs/_build/html`` (the test suite does, with warnings as
errors, so a broken reference or a stale autodoc target fails it).
"""

from __future__ import annotations

import os
import sys
from importlib import metadata

sys.path.insert(0, os.path.abspath(".."))

project = "mrfq"
author = "the mrfq developers"
copyright = "the mrfq developers, MIT licence"
try:
    release = metadata.version("mrfq")
except metadata.PackageNotFoundError:
    release = "0+source"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "examples/*.md"]
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# The maths ($...$ and $$...$$ of MyST's dollarmath) is typeset in the reader's browser by MathJax,
# from the site's own copy, so that it renders offline and from a local build opened as files
# (Sphinx's default loads it from a CDN: without the network the pages show the raw LaTeX).
# _static/mathjax/ holds MathJax 3.2.2's es5/tex-svg-full.js unmodified (Apache-2.0, its LICENSE
# beside it; sha256 a4354ff94fd868aea0cc6eaaa79a57fda0588646fc46ee3700a349ee0a11cbe6): one file
# with every TeX extension and the SVG output, whose glyphs are inside it, so MathJax loads
# nothing more (no font files, no extension fetched on first use).
mathjax_path = "mathjax/tex-svg-full.js"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False

html_theme = "furo"
html_title = f"mrfq {release}"
html_static_path = ["_static"]
