"""What a chapter's page offers for download (a Sphinx extension).

The theme's download menu offers a notebook's source twice (as ``.ipynb`` and as its source
suffix) and a "print to PDF" of the page. For a chapter, this extension offers instead:

* the notebook as executed for this build, with every output (from the execution cache, into
  ``_downloads/executed/``);
* the notebook as committed, without outputs (the source that Sphinx copies to ``_sources``);
* the book's PDF (``make pdf``; ``book.pdf`` at the site's root), which every page offers in
  place of the browser's print of the page.

Every page also offers what a reader needs to run the chapters without a clone, built with the
site and put at its root (:func:`package_files`): the companion library as a wheel, and every
chapter's notebook, as committed but for what JupyterLab needs to show it as the book does (a
caption cell after each figure, with the book's number, and proofs unnumbered:
:func:`lab_notebook`), in ``chapters.zip``. The introduction's commands install from these two
files.
"""

import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import nbformat
from executed import from_cache

EXECUTED = "_downloads/executed"
PDF = "book.pdf"
CHAPTERS = "chapters.zip"
ROOT = Path(__file__).resolve().parent.parent


def wheel_name(root: Path = ROOT) -> str:
    """The file name of the companion's wheel, from ``pyproject.toml``'s name and version."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"


def package_files(out: Path, root: Path = ROOT) -> list[Path]:
    """Build, into ``out``, the companion's wheel (:func:`wheel_name`) from a copy of the
    package (building writes into its source tree) and ``chapters.zip``, the notebooks of
    ``book/`` as JupyterLab should show them (:func:`lab_notebook`). Returns the two paths."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(root / "companion", Path(tmp, "companion"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy(root / name, tmp)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--no-build-isolation", "--disable-pip-version-check",
                        "--wheel-dir", str(out), tmp], check=True, capture_output=True)
    wheel = out / wheel_name(root)
    if not wheel.is_file():
        raise RuntimeError(f"pip built no {wheel.name} in {out}")
    chapters = out / CHAPTERS
    with zipfile.ZipFile(chapters, "w", zipfile.ZIP_DEFLATED) as bundle:
        for notebook in sorted((root / "book").glob("*.ipynb")):
            bundle.writestr(notebook.name, nbformat.writes(lab_notebook(notebook, root)) + "\n")
    return [wheel, chapters]


def lab_notebook(path: Path, root: Path = ROOT) -> nbformat.NotebookNode:
    """The chapter notebook at ``path`` (in ``root/book``) as JupyterLab should show it
    (:func:`lab_form`)."""
    return lab_form(nbformat.read(path, as_version=4), path.stem, root)


def lab_form(notebook, chapter: str, root: Path = ROOT) -> nbformat.NotebookNode:
    """``notebook``, the chapter named ``chapter``, as JupyterLab should show it:
    :func:`course.numbers.lab_edition`, with the chapter numbers of ``root/_toc.yml``
    (jupyterlab-myst ignores myst-nb's figure captions, and numbers proofs)."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))  # course/, beside tools/
    from course.numbers import lab_edition

    toc = root / "_toc.yml"
    return lab_edition(notebook, chapter, toc if toc.is_file() else None)


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
    package = {"type": "link", "url": pathto(wheel_name(), 1),
               "text": "companion library (wheel)", "icon": "fas fa-box",
               "tooltip": "Download the companion library, to install with pip",
               "label": "download-wheel-button"}
    chapters = {"type": "link", "url": pathto(CHAPTERS, 1), "text": "every chapter (zip)",
                "icon": "fas fa-file-archive",
                "tooltip": "Download every chapter's notebook, without outputs",
                "label": "download-chapters-button"}
    if context.get("page_source_suffix") != ".ipynb":
        menu["buttons"] = [*(b for b in menu["buttons"]
                             if b.get("label") != "download-pdf-button"), book, package,
                           chapters]
        return
    executed = {"type": "link", "url": f"{pathto(EXECUTED, 1)}/{pagename}.ipynb",
                "text": "notebook with outputs", "icon": "fas fa-book-open",
                "tooltip": "Download the notebook as executed for this page, with its outputs",
                "label": "download-executed-notebook-button"}
    source = {"type": "link", "url": f"{pathto('_sources', 1)}/{context['sourcename']}",
              "text": "notebook, no outputs", "icon": "fas fa-code",
              "tooltip": "Download the notebook as committed, to run yourself",
              "label": "download-notebook-button"}
    menu["buttons"] = [executed, source, book, package, chapters]


def copy_executed_notebooks(app, exception) -> None:
    """Put the notebooks executed for this build next to the pages that offer them: from the
    execution cache (``tools/executed.py``), or else myst-nb's ``jupyter_execute`` copy, each
    in the form JupyterLab shows as the book does (:func:`lab_form`)."""
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
        if executed is None and written.is_file():
            executed = nbformat.read(written, as_version=4)
        if executed is not None:
            nbformat.write(lab_form(executed, Path(docname).name), target)


def write_package_files(app, exception) -> None:
    """Put the wheel and ``chapters.zip`` (:func:`package_files`) at the HTML site's root."""
    if exception is None and app.builder.format == "html":
        package_files(Path(app.outdir))


def setup(app):
    """Register the extension with Sphinx."""
    app.connect("html-page-context", offer_downloads, priority=900)
    app.connect("build-finished", copy_executed_notebooks)
    app.connect("build-finished", write_package_files)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
