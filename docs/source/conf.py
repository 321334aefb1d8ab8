"""Sphinx configuration for the nwbound documentation (built with ``make docs``)."""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")

project = "nwbound"
author = "the nwbound developers"
copyright = "2026, the nwbound developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_enable_extensions = ["dollarmath", "amsmath"]
autosummary_generate = True
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
intersphinx_mapping: dict = {}  # no network: cross-references stay local

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
}

html_theme = "alabaster"
html_title = "nwbound"
templates_path = ["_templates"]
exclude_patterns = ["_build"]
suppress_warnings = ["myst.header"]
