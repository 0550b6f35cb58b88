"""A Sphinx extension: Markdown links into folders published beside the pages become plain links.

The tlparse report is copied into the built site after Sphinx runs (it is
torch's HTML, not a Sphinx document), so MyST cannot resolve a link such as
``[report](../tlparse/index.html)`` and would drop it with a warning. This
transform runs just before MyST's resolver and turns each such link into an
ordinary ``<a href>`` with the path as written. Links anywhere else are left
to MyST, so a dead link to a lesson still warns.
"""

from __future__ import annotations

import posixpath

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

PUBLISHED_FOLDERS = ("tlparse",)  # site-root folders that build.py copies in after Sphinx
MYST_RESOLVER_PRIORITY = 9  # myst_parser's MystReferenceResolver


def published_target(docname: str, target: str) -> bool:
    """Whether ``target``, relative to the page of ``docname``, points into a published folder."""
    if "://" in target or target.startswith("#"):
        return False
    path = posixpath.normpath(posixpath.join(posixpath.dirname(docname), target.split("#", 1)[0]))
    return path.split("/", 1)[0] in PUBLISHED_FOLDERS


class PublishedFolderLinks(SphinxPostTransform):
    default_priority = MYST_RESOLVER_PRIORITY - 1

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = node.get("reftarget", "")
            if node.get("reftype") != "myst" or not published_target(node.get("refdoc", self.env.docname), target):
                continue
            link = nodes.reference("", "", refuri=target, internal=True)
            link += node.children[0].deepcopy() if node.children else nodes.Text(target)
            node.replace_self(link)


def setup(app):
    app.add_post_transform(PublishedFolderLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
