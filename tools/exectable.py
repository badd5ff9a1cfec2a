"""The status column of *Execution statistics* in words (a Sphinx extension).

myst-nb's ``nb-exec-table`` marks each notebook's run with the emoji ✅ or ❌, which a system
without a colour-emoji font shows as an empty box. This post-transform, run after myst-nb has
made the table, writes "passed" and "failed" instead."""

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

WORDS = {"✅": "passed", "❌": "failed"}


class StatusInWords(SphinxPostTransform):
    """Replace the status emoji in every table cell with a word."""

    default_priority = 9  # after myst-nb's ExecutionStatsPostTransform (8)

    def run(self, **kwargs) -> None:
        for entry in self.document.findall(nodes.entry):
            for text in list(entry.findall(nodes.Text)):
                if text.astext() in WORDS:
                    text.parent.replace(text, nodes.Text(WORDS[text.astext()]))


def setup(app):
    """Register the extension with Sphinx."""
    app.add_post_transform(StatusInWords)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
