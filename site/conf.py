"""Sphinx configuration of the course site (``make site``; ``course run`` step 5).

The build stages ``site/*.md``, ``notebooks/`` and ``exercises/`` into one
source folder, so the notebooks' own relative links (``04_x.ipynb``,
``../exercises/ex02_x.ipynb``) resolve to pages. Stored outputs are rendered
as they are: nothing is executed. Nothing is loaded from the network: no
launch buttons, no repository buttons, no math renderer from a CDN.
"""

import logging

project = "torch.compile: compilation and graph-break contracts"
author = "the course authors"
copyright = "the course authors"

extensions = ["myst_nb", "course_tools.site.published_links"]
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]  # _build: Sphinx's output inside the stage
# straight quotes: a title such as "torch's artifacts" must read the same in the sidebar as in its notebook heading
smartquotes = False

# Render the outputs stored in the notebooks; never run a kernel.
nb_execution_mode = "off"
# A stored stderr output (the notebooks keep none) is shown, never dropped.
nb_output_stderr = "show"
# Only the syntax the notebooks use: no dollar math, so a "$" in prose stays text.
myst_enable_extensions = []
myst_heading_anchors = 3
# A skipped heading level only affects the page's contents list; every other warning
# (a dead link to a lesson, above all) fails `build_site(strict=True)` in tests/course_tools/test_site.py.
suppress_warnings = ["myst.header"]

html_theme = "sphinx_book_theme"
html_title = "torch.compile contracts"
# The download button offers each page's notebook as stored (``_sources/.../NN_x.ipynb``).
html_sourcelink_suffix = ""
html_show_sourcelink = False
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "use_issues_button": False,
    "use_edit_page_button": False,
    "launch_buttons": {},
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
}
# The notebooks carry no math, so Sphinx adds no MathJax script to any page
# (it does so only on pages with equations). If one ever does, the build's
# offline check (course_tools.site.build.remote_assets) fails on the CDN URL.

# Keep the build's progress short: myst and myst-nb each print their whole
# configuration (one line of a thousand characters) on every build.


class _NoConfigDump(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "ParserConfig(" not in record.getMessage()


for _name in ("sphinx.myst_nb.sphinx_ext", "sphinx.myst_parser.sphinx_ext.main"):
    logging.getLogger(_name).addFilter(_NoConfigDump())
