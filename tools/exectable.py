"""The table of *Execution statistics* for a reader (a Sphinx extension).

myst-nb's ``nb-exec-table`` marks each notebook's run with the emoji ✅ or ❌, which a system
without a colour-emoji font shows as an empty box, and names each notebook by its file
("book/intermediate_steps"), a word too long to wrap in a phone's column. This post-transform,
run after myst-nb has made the table and before links are resolved, writes "passed" and
"failed" instead, links each notebook under its title, lists the notebooks in the book's order
(myst-nb sorts them by file name), and marks the table with the class
``execution-statistics`` (set in the code size on a phone by ``_static/book.css``)."""

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import docname_join

WORDS = {"✅": "passed", "❌": "failed"}
CLASS = "execution-statistics"


class StatusInWords(SphinxPostTransform):
    """Replace the status emoji in every table cell with a word; in a table that has them (the
    execution statistics), name each linked notebook by its title, in the book's order."""

    default_priority = 9  # after myst-nb's ExecutionStatsPostTransform (8), before links (10)

    def run(self, **kwargs) -> None:
        for table in self.document.findall(nodes.table):
            statuses = [text for text in table.findall(nodes.Text) if text.astext() in WORDS]
            if not statuses:
                continue
            for text in statuses:
                text.parent.replace(text, nodes.Text(WORDS[text.astext()]))
            table["classes"].append(CLASS)
            for link in table.findall(addnodes.pending_xref):
                if link.get("reftype") == "doc":
                    link["refexplicit"] = False  # Sphinx writes the page's title
            order = reading_order(self.env)
            for body in table.findall(nodes.tbody):
                rows = list(body.children)
                body.children = sorted(rows, key=lambda row: _place(row, order))


def reading_order(env) -> list[str]:
    """The book's documents in the order of its table of contents, from the root document."""
    order = []

    def visit(docname: str) -> None:
        if docname not in order:
            order.append(docname)
            for child in env.toctree_includes.get(docname, []):
                visit(child)

    visit(env.config.root_doc)
    return order


def _place(row: nodes.row, order: list[str]) -> int:
    """Where the notebook a row links to comes in ``order`` (after the others if not there)."""
    for link in row.findall(addnodes.pending_xref):
        docname = docname_join(link["refdoc"], link["reftarget"])
        if docname in order:
            return order.index(docname)
    return len(order)


def setup(app):
    """Register the extension with Sphinx."""
    app.add_post_transform(StatusInWords)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
