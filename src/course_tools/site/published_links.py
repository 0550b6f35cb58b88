"""A Sphinx extension: Markdown links into folders published beside the pages become plain links.

The tlparse report is copied into the built site after Sphinx runs (it is
torch's HTML, not a Sphinx document), so MyST cannot resolve a link such as
``[report](../tlparse/index.html)`` and would drop it with a warning. This
transform runs just before MyST's resolver and turns each such link into an
ordinary ``<a href>`` with the path as written. Links anywhere else are left
to MyST, so a dead link to a lesson still warns.

A lesson that runs tlparse itself writes its report into a folder beside the
notebook (``LESSON_REPORTS``) and links it, so the link works in JupyterLab
after the cell has run. The site runs no notebook, so there the link is
pointed at the site's own tlparse report instead.
"""

from __future__ import annotations

import posixpath

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

PUBLISHED_FOLDERS = ("tlparse",)  # site-root folders that build.py copies in after Sphinx
# a folder a lesson writes when it runs (gitignored) -> the published folder that stands in for it on the site
LESSON_REPORTS = {"notebooks/tlparse-report": "tlparse"}
MYST_RESOLVER_PRIORITY = 9  # myst_parser's MystReferenceResolver


def _site_path(docname: str, target: str) -> str | None:
    """``target``, relative to the page of ``docname``, as a path from the site root (None for a URL or a fragment)."""
    if "://" in target or target.startswith("#"):
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(docname), target.split("#", 1)[0]))


def published_target(docname: str, target: str) -> bool:
    """Whether ``target``, relative to the page of ``docname``, points into a published folder."""
    path = _site_path(docname, target)
    return path is not None and path.split("/", 1)[0] in PUBLISHED_FOLDERS


def lesson_report_target(docname: str, target: str) -> str | None:
    """For a link into a lesson's own report folder: the same file in the published report, relative to the page."""
    path = _site_path(docname, target)
    for folder, published in LESSON_REPORTS.items():
        if path is not None and (path == folder or path.startswith(folder + "/")):
            fragment = target[len(target.split("#", 1)[0]):]
            return posixpath.relpath(published + path[len(folder):], posixpath.dirname(docname) or ".") + fragment
    return None


class PublishedFolderLinks(SphinxPostTransform):
    default_priority = MYST_RESOLVER_PRIORITY - 1

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = node.get("reftarget", "")
            docname = node.get("refdoc", self.env.docname)
            if node.get("reftype") != "myst":
                continue
            target = lesson_report_target(docname, target) or target
            if not published_target(docname, target):
                continue
            link = nodes.reference("", "", refuri=target, internal=True)
            link += node.children[0].deepcopy() if node.children else nodes.Text(target)
            node.replace_self(link)


def setup(app):
    app.add_post_transform(PublishedFolderLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
