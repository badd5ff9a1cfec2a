"""Citations in the companion's docstrings, rendered by Sphinx's autodoc (a Sphinx extension).

Loaded by ``_config.yml`` (``sphinx.local_extensions``) for the appendix *Companion API*. The
docstrings cite a work by its key in ``book/references.bib`` in square brackets, as
``[chiang2022overcoming] §3.2``, which reads well in ``help()``. In the book each such key
becomes a textual citation, "Chiang and Cholak (2022) §3.2", linked to its bibliography entry.
A bracketed word that is not a key of the bibliography is left as it is.

The book's general index is an index of concepts: the entries that autodoc makes for every
module, class and function of the appendix are left out of it (:class:`NoApiIndexEntries`);
the appendix itself, in the order of the modules, is the API's index.
"""

import re
from pathlib import Path

from pybtex.database import parse_file
from sphinx import addnodes
from sphinx.transforms import SphinxTransform

API = "book/api"


def bibliography_keys(app) -> set[str]:
    """The keys of every file in ``bibtex_bibfiles``, relative to the book's root."""
    keys = set()
    for name in app.config.bibtex_bibfiles:
        keys.update(parse_file(Path(app.srcdir) / name).entries.keys())
    return keys


def cite_keys(lines: list[str], keys: set[str]) -> None:
    """Replace, in place, each ``[key]`` of ``lines`` whose key is in ``keys`` by the reST role
    ``:cite:t:`key```."""
    def role(match):
        key = match.group(1)
        return f":cite:t:`{key}`" if key in keys else match.group(0)

    for i, line in enumerate(lines):
        lines[i] = re.sub(r"\[([A-Za-z][\w-]*)\]", role, line)


class NoApiIndexEntries(SphinxTransform):
    """The appendix *Companion API* adds nothing to the general index."""

    # before Sphinx collects the index entries of a page (SphinxDomains, 850)
    default_priority = 840

    def apply(self, **kwargs) -> None:
        if self.env.docname == API:
            for entry in list(self.document.findall(addnodes.index)):
                entry.parent.remove(entry)


def setup(app):
    """Sphinx entry point: rewrite every docstring autodoc reads; keep the API out of the
    general index."""
    keys = set()
    app.add_transform(NoApiIndexEntries)
    app.connect("builder-inited", lambda app: keys.update(bibliography_keys(app)))
    app.connect("autodoc-process-docstring",
                lambda app, what, name, obj, options, lines: cite_keys(lines, keys))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
