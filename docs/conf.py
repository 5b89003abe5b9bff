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
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "examples/*.md"]
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False

html_theme = "furo"
html_title = f"mrfq {release}"
html_static_path = ["_static"]
