"""What a chapter's page offers for download (a Sphinx extension).

The theme's download menu offers a notebook's source twice (as ``.ipynb`` and as its source
suffix) and a "print to PDF" of the page. For a chapter, this extension offers instead:

* the notebook as executed for this build, with every output (from the execution cache, into
  ``_downloads/executed/``);
* the notebook as committed, without outputs (the source that Sphinx copies to ``_sources``);
* the book's PDF (``make pdf``; ``book.pdf`` at the site's root), which every page offers in
  place of the browser's print of the page.
"""

import shutil
from pathlib import Path

import nbformat
from executed import from_cache

EXECUTED = "_downloads/executed"
PDF = "book.pdf"


def _menu(context) -> dict | None:
    return next((b for b in context.get("header_buttons", [])
                 if b.get("label") == "download-buttons"), None)


def offer_downloads(app, pagename, templatename, context, doctree) -> None:
    """Rewrite the download menu of a page: the book's PDF, and a chapter's notebooks."""
    menu = _menu(context)
    if menu is None:
        return
    pathto = context["pathto"]
    book = {"type": "link", "url": pathto(PDF, 1), "text": "the book as PDF",
            "icon": "fas fa-file-pdf", "tooltip": "Download the whole book as one PDF",
            "label": "download-book-pdf-button"}
    if context.get("page_source_suffix") != ".ipynb":
        menu["buttons"] = [*(b for b in menu["buttons"]
                             if b.get("label") != "download-pdf-button"), book]
        return
    executed = {"type": "link", "url": f"{pathto(EXECUTED, 1)}/{pagename}.ipynb",
                "text": "notebook with outputs", "icon": "fas fa-book-open",
                "tooltip": "Download the notebook as executed for this page, with its outputs",
                "label": "download-executed-notebook-button"}
    source = {"type": "link", "url": f"{pathto('_sources', 1)}/{context['sourcename']}",
              "text": "notebook, no outputs", "icon": "fas fa-code",
              "tooltip": "Download the notebook as committed, to run yourself",
              "label": "download-notebook-button"}
    menu["buttons"] = [executed, source, book]


def copy_executed_notebooks(app, exception) -> None:
    """Put the notebooks executed for this build next to the pages that offer them: from the
    execution cache (``tools/executed.py``), or else myst-nb's ``jupyter_execute`` copy."""
    if exception is not None or app.builder.format != "html":
        return
    config = app.env.mystnb_config
    for docname in app.env.found_docs:
        source = Path(app.env.doc2path(docname))
        if source.suffix != ".ipynb":
            continue
        target = Path(app.outdir, EXECUTED, f"{docname}.ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        executed = from_cache(Path(config.execution_cache_path), source)
        written = Path(config.output_folder) / f"{docname}.ipynb"  # myst-nb's copy
        if executed is not None:
            nbformat.write(executed, target)
        elif written.is_file():
            shutil.copyfile(written, target)


def setup(app):
    """Register the extension with Sphinx."""
    app.connect("html-page-context", offer_downloads, priority=900)
    app.connect("build-finished", copy_executed_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
