"""The book's structure: committed notebooks carry no outputs, every chapter follows the
chapter contract (see ARCHITECTURE.md), every notebook is in the table of contents, and the
HTML book, executed, builds with warnings as errors."""

import ast
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from apidoc import cite_keys  # tools/, on pytest's pythonpath
from bibstyle import author_year_label, disambiguate_years
from book_config import write_config
from downloads import CHAPTERS, lab_notebook, wheel_name
from executed import into_cache
from latexbook import OutputTables, bookmark_text
from pybtex.database import parse_file, parse_string
from toc import toc_files

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


def cells(notebook: Path) -> list[dict]:
    return json.loads(notebook.read_text())["cells"]


def markdown(notebook: Path) -> str:
    """The Markdown the book shows (not the cells it leaves out, tagged remove-cell)."""
    return "\n".join("".join(c["source"]) for c in cells(notebook) if c["cell_type"] == "markdown"
                     and "remove-cell" not in c["metadata"].get("tags", []))


def test_there_are_chapters():
    assert NOTEBOOKS, "book/ holds no notebooks"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebooks_carry_no_outputs(notebook):
    for cell in cells(notebook):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{notebook.name}: a code cell has outputs"
            assert cell["execution_count"] is None, f"{notebook.name}: an execution count"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_contract(notebook):
    from course.numbers import front_matter

    first = cells(notebook)[0]
    assert "".join(first["source"]) == front_matter(notebook.stem), (
        "the first cell numbers the chapter for JupyterLab: course.numbers.front_matter")
    assert first["metadata"].get("tags") == ["remove-cell"], "the book leaves it out"
    text = markdown(notebook)
    assert text.lstrip().startswith("# "), "a chapter starts with its title"
    assert "Learning objectives" in text
    assert re.search(r"^## Summary", text, re.M)
    exercises = re.findall(r"```\{exercise\}[^\n]*\n:label: ([\w-]+)", text)
    assert len(exercises) >= 3, "at least three exercises"
    solved = set(re.findall(r"```\{solution\} ([\w-]+)", text))
    assert set(exercises) <= solved, f"exercises without a solution: {set(exercises) - solved}"
    assert re.search(r"\{cite:[pt]\}`", text), "cites its sources by key"
    assert "```{bibliography}\n:filter: docname in docnames\n```" in text, "lists its references"
    assert text.count("```{index} ") >= 3, "its main terms are in the book's index"
    graded = json.loads(notebook.read_text())["metadata"].get("exercises", {})
    assert set(graded) == set(exercises), "every exercise has its points in the metadata"
    for label in exercises:
        roles = [tag for c in cells(notebook) if c["metadata"].get("exercise") == label
                 for tag in c["metadata"].get("tags", [])]
        assert "answer" in roles and "check" in roles, f"{label}: an answer and a check cell"


CHECK_PROMPTS = {"code_prompt_show": "Show the check", "code_prompt_hide": "Hide the check"}


def _asserts(tree: ast.AST) -> bool:
    """Whether code asserts: an ``assert`` statement or a ``raise AssertionError``."""
    return any(isinstance(node, ast.Assert) or isinstance(node, ast.Raise) and node.exc
               and "AssertionError" in ast.unparse(node.exc) for node in ast.walk(tree))


def _names(tree: ast.AST, context: type) -> set[str]:
    """The names a piece of code binds (``ast.Store``, with its functions, classes and their
    parameters) or reads (``ast.Load``)."""
    names = {node.id for node in ast.walk(tree)
             if isinstance(node, ast.Name) and isinstance(node.ctx, context)}
    if context is ast.Store:
        names |= {node.name for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        names |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    return names


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_checks_are_folded_and_the_lesson_runs_without_them(notebook):
    """Every assertion is in a code cell tagged ``check``, which the HTML book folds behind
    "Show the check" (``hide-input`` with myst-nb's prompts) and JupyterLab folds too
    (``jupyter.source_hidden``); nbval still runs it. The teaching code asserts nothing, and no
    later teaching cell reads a name that a check cell bound, so the lesson reads and runs
    without its checks (the autograder drops them)."""
    bound_by_check: set[str] = set()
    for cell in cells(notebook):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tree, tags = ast.parse(source), cell["metadata"].get("tags", [])
        where = f"{notebook.name}: the cell starting {source.splitlines()[0]!r}"
        if "check" in tags:
            assert _asserts(tree), f"{where} is tagged check but asserts nothing"
            assert "hide-input" in tags, f"{where} is a check: the book folds it (hide-input)"
            assert cell["metadata"].get("jupyter", {}).get("source_hidden"), f"{where}: fold it"
            assert cell["metadata"].get("mystnb") == CHECK_PROMPTS, f"{where}: the prompts"
            bound_by_check |= _names(tree, ast.Store)
        else:
            assert not _asserts(tree), f"{where} asserts: move the checks to a check cell"
            read = _names(tree, ast.Load) - _names(tree, ast.Store)
            assert not read & bound_by_check, (
                f"{where} reads {sorted(read & bound_by_check)}, bound in a check cell")
            bound_by_check -= _names(tree, ast.Store)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_an_exercises_check_prints_nothing_into_the_book(notebook):
    """The check after an exercise runs the model answer, which the student edition leaves out:
    its output ("PASSED", or the very numbers the exercise asks for) would stand under the
    statement as if the exercise were solved, so the book drops it (``remove-output``); a
    student who runs the check in JupyterLab sees it."""
    for cell in cells(notebook):
        tags = cell["metadata"].get("tags", [])
        if "exercise" in cell["metadata"] and "check" in tags:
            first = "".join(cell["source"]).splitlines()[0]
            assert "remove-output" in tags, f"{notebook.name}: the check starting {first!r}"


def title(page: str) -> str:
    """The title (first heading) of the book's page ``page`` (a path without suffix)."""
    [path] = [p for p in (ROOT / f"{page}.ipynb", ROOT / f"{page}.md") if p.exists()]
    text = markdown(path) if path.suffix == ".ipynb" else path.read_text()
    return re.search(r"^# (.+)$", text, re.M)[1]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_markup_that_jupyterlab_renders_as_the_book_does(notebook):
    """jupyterlab-myst renders one Markdown cell at a time and knows neither the other chapters
    nor the figures that code cells make: a solution is one folded ``{solution}`` cell, its
    model answer a folded code cell that shows only a comment, and a reference to another
    chapter, or to a label JupyterLab cannot see, carries its own text."""
    text = markdown(notebook)
    assert "{solution-start}" not in text and "{solution-end}" not in text
    assert "{numref}" not in text, "JupyterLab shows a {numref} as its label: use {ref} with text"
    split = re.findall(r"\{[\w:]+\}`[^`]*\n[^`]*`", text)
    assert not split, f"JupyterLab reads a role only within one line: {split}"
    for label in re.findall(r"^`{3,4}\{solution\} ([\w-]+)$", text, re.M):
        assert re.search(r"^`{3,4}\{solution\} " + label + r"\n:class: dropdown\n", text, re.M)
    for cell in cells(notebook):
        if "answer" in cell["metadata"].get("tags", []):
            assert "hide-cell" in cell["metadata"]["tags"], "the book folds a model answer"
            assert cell["metadata"].get("jupyter", {}).get("source_hidden"), "JupyterLab too"
            assert "".join(cell["source"]).startswith("# Solution (a model answer)\n")
    for shown, page in re.findall(r"\{doc\}`(?:([^`<]*?)\s*<)?([^`<>]+)>?`", text):
        assert shown == title(f"book/{page}"), f"{{doc}}`{page}`: give its title as the text"
    here = set(re.findall(r":label: ([\w-]+)", text))
    for role, target in re.findall(r"\{(ref|prf:ref)\}`([^`]*)`", text):
        assert "<" in target or target in here, f"{{{role}}}`{target}` needs a text"


def _checks(notebook: Path) -> dict[str, str]:
    """The check targets ``(check-X)=`` of a chapter, each with the source of the code cells
    it stands before (up to the next Markdown cell)."""
    found, cell_list = {}, cells(notebook)
    for index, cell in enumerate(cell_list):
        if cell["cell_type"] != "markdown":
            continue
        following = []
        for after in cell_list[index + 1:]:
            if after["cell_type"] != "code":
                break
            following.append("".join(after["source"]))
        for name in re.findall(r"^\((check-[\w-]+)\)=$", "".join(cell["source"]), re.M):
            found[name] = "\n".join(following)
    return found


def test_every_erratum_has_its_note_and_every_note_its_entry():
    """The Errata appendix and the chapters point at each other: every entry (erratum-X) is
    cited by a margin note in a chapter and every note's reference has an entry; each entry
    gives the printed form, the corrected one, its evidence (a link to a check that stands
    before a code cell) and its status, and a confirmed one's check asserts."""
    errata = (ROOT / "book" / "errata.md").read_text()
    entries = re.findall(r"^\(erratum-([\w-]+)\)=$", errata, re.M)
    assert entries and len(entries) == len(set(entries))
    notes, checks = set(), {}
    for notebook in NOTEBOOKS:
        notes.update(re.findall(r"<erratum-([\w-]+)>`", markdown(notebook)))
        checks.update(_checks(notebook))
    assert set(entries) == notes
    for block in re.split(r"^\(erratum-", errata, flags=re.M)[1:]:
        name = block.split(")", 1)[0]
        for part in ("**Printed.**", "**Corrected.**", "**Evidence.**", "**Status.**"):
            assert part in block, (name, part)
        links = re.findall(r"<(check-[\w-]+)>`", block)
        assert links and all(checks.get(link) for link in links), (name, links)
        [status] = re.findall(r"\*\*Status\.\*\* (Confirmed|Argued)", block)
        if status == "Confirmed":
            assert any("assert " in checks[link] for link in links), name


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_code_fits_the_page(notebook):
    """The HTML theme shows about 80 characters of code before it scrolls sideways."""
    for cell in cells(notebook):
        if cell["cell_type"] == "code":
            for line in "".join(cell["source"]).splitlines():
                assert len(line) <= 79, f"{notebook.name}: code line too long: {line}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_library_source_shown_in_a_chapter_fits_the_page(notebook):
    """Code a chapter shows with ``literalinclude :pyobject:`` obeys the 79 characters too."""
    shown = re.findall(r"```\{literalinclude\} \.\./(\S+)\.py\n:pyobject: (\S+)",
                       markdown(notebook))
    for module, name in shown:
        obj = importlib.import_module(module.replace("/", "."))
        for part in name.split("."):
            obj = getattr(obj, part)
        for line in inspect.getsource(obj).splitlines():
            assert len(line) <= 79, f"{module}.{name}: line too long: {line}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_is_in_the_table_of_contents(notebook):
    assert f"book/{notebook.stem}" in toc_files()


def test_every_toc_entry_exists():
    for entry in toc_files():
        assert any((ROOT / f"{entry}{suffix}").exists() for suffix in (".md", ".ipynb")), entry


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    """Execute every chapter (quick profile) and build the HTML, warnings as errors, then the
    PDF from the same executed notebooks, as make book does (copied to the HTML's root).

    The notebooks are executed (into a cache of the test's own, so that the PDF reuses them)
    because figure labels, figures and printed results exist only in executed notebooks; a
    failing cell fails the build. Where ``EXECUTED_NOTEBOOKS`` names a folder of notebooks
    that nbval executed (``make test`` sets it: tools/nbval_outputs.py), the build starts
    from them and executes only a notebook whose code differs. Returns the builds' exit
    status, their log and the HTML folder."""
    out = tmp_path_factory.mktemp("book")
    config_file = write_config(out / "_config.yml", execute="cache")
    if os.environ.get("EXECUTED_NOTEBOOKS"):
        into_cache(Path(os.environ["EXECUTED_NOTEBOOKS"]), out / "_build" / ".jupyter_cache")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    logs = ""
    for builder in ("html", "pdflatex"):
        result = subprocess.run(
            [str(jupyter_book), "build", str(ROOT), "--config", str(config_file),
             "--path-output", str(out), "--builder", builder]
            + (["--warningiserror", "--nitpick", "--keep-going"] if builder == "html" else []),
            capture_output=True, text=True, timeout=3600,
            env={**os.environ, "BOOK_SCALE": "quick"},
        )
        logs += result.stdout[-4000:] + result.stderr[-4000:]
        if result.returncode != 0:
            break
    html = out / "_build" / "html"
    if result.returncode == 0:
        shutil.copyfile(out / "_build" / "latex" / "book.pdf", html / "book.pdf")
    reports = "".join(log.read_text()[-4000:] for log in (html / "reports").glob("**/*.log"))
    return result.returncode, logs + reports, html


@pytest.mark.slow  # executes and builds the whole book
def test_book_builds_without_warnings(built_book):
    returncode, log, html = built_book
    assert returncode == 0, log
    assert (html / "index.html").exists()


@pytest.mark.slow  # needs the executed build
def test_a_chapter_page_offers_its_notebook_with_and_without_outputs(built_book):
    """tools/downloads.py: each chapter's download menu links the notebook as executed for the
    page (with its outputs) and as committed (without); every chapter and appendix links the
    book's PDF, the companion's wheel and every chapter in a zip (Sphinx's generated index
    pages have no download menu)."""
    returncode, log, html = built_book
    assert returncode == 0, log
    for page in (html / "book").glob("*.html"):  # every page of the book's own
        for offered in ("book.pdf", wheel_name(), CHAPTERS):
            assert f'href="../{offered}"' in page.read_text(), (page.name, offered)
    assert (html / "book.pdf").read_bytes().startswith(b"%PDF")
    assert zipfile.is_zipfile(html / wheel_name())
    with zipfile.ZipFile(html / CHAPTERS) as chapters:
        assert sorted(chapters.namelist()) == sorted(n.name for n in NOTEBOOKS)
    for notebook in NOTEBOOKS:
        page = (html / "book" / f"{notebook.stem}.html").read_text()
        executed = f"../_downloads/executed/book/{notebook.name}"
        assert f'href="{executed}"' in page and f'href="../_sources/book/{notebook.name}"' in page
        with_outputs = json.loads((html / "book" / executed).resolve().read_text())["cells"]
        assert any(cell.get("outputs") for cell in with_outputs)
        as_lab_shows = json.loads(nbformat.writes(lab_notebook(notebook)))["cells"]
        assert [c["source"] for c in with_outputs] == [c["source"] for c in as_lab_shows]


def test_the_notebook_with_outputs_comes_from_the_cache(tmp_path, cache_executed):
    """tools/downloads.py: a chapter whose outputs the build took from the execution cache is
    offered with them (myst-nb's jupyter_execute copy of it has none), and a chapter executed
    with other code is offered as myst-nb wrote it."""
    from types import SimpleNamespace

    import nbformat
    from downloads import EXECUTED, copy_executed_notebooks
    executed = {"cells": [{"cell_type": "code", "metadata": {}, "source": "print(2 + 2)",
                           "outputs": [{"output_type": "stream", "name": "stdout",
                                        "text": "4\n"}]}]}
    cache, committed = cache_executed(executed, "book/chapter.ipynb")
    (tmp_path / "book").mkdir()
    nbformat.write(committed, tmp_path / "book" / "chapter.ipynb")
    nbformat.write(committed, tmp_path / "book" / "other.ipynb")
    written = tmp_path / "jupyter_execute"
    (written / "book").mkdir(parents=True)
    for name in ("chapter", "other"):  # as myst-nb writes a notebook served from the cache
        nbformat.write(committed, written / "book" / f"{name}.ipynb")
    other = nbformat.read(written / "book" / "other.ipynb", as_version=4)
    other.cells[0].source = "print(5)"
    nbformat.write(other, tmp_path / "book" / "other.ipynb")
    app = SimpleNamespace(
        builder=SimpleNamespace(format="html"), outdir=str(tmp_path / "html"),
        env=SimpleNamespace(
            found_docs={"book/chapter", "book/other"},
            doc2path=lambda docname: str(tmp_path / f"{docname}.ipynb"),
            mystnb_config=SimpleNamespace(execution_cache_path=str(cache),
                                          output_folder=str(written))))
    copy_executed_notebooks(app, None)
    offered = tmp_path / "html" / EXECUTED / "book"
    chapter = nbformat.read(offered / "chapter.ipynb", as_version=4)
    assert chapter.cells[0].outputs[0]["text"] == "4\n"
    assert nbformat.read(offered / "other.ipynb", as_version=4) == committed


def test_the_execution_statistics_name_chapters_and_statuses_in_words():
    """tools/exectable.py on myst-nb's table: "passed" and "failed" in words, each notebook
    linked under its title (Sphinx writes it: the link's own text is not explicit), the rows in
    the order of the table of contents (myst-nb sorts them by name), and the table marked for
    the phone's style sheet."""
    from types import SimpleNamespace

    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document
    from exectable import CLASS, StatusInWords
    from myst_nb.ext.execution_tables import make_stat_table
    from sphinx import addnodes

    run = {"mtime": 0, "method": "cache", "runtime": 1.5, "succeeded": True, "error": None}
    document = new_document("execution", get_default_settings(Parser))
    document.settings.env = SimpleNamespace(
        config=SimpleNamespace(root_doc="book/intro"),
        toctree_includes={"book/intro": ["book/ran", "book/execution"],
                          "book/ran": ["book/broke"]})
    document += make_stat_table("book/execution", {
        "book/ran": {"exec_data": run},
        "book/broke": {"exec_data": {**run, "succeeded": False, "error": "ValueError"}}})
    StatusInWords(document).run()
    [table] = document.children
    words = table.astext().split()
    assert "passed" in words and "failed" in words and "✅" not in table.astext()
    assert words.index("passed") < words.index("failed"), "ran, then broke, as in the toc"
    assert CLASS in table["classes"]
    links = list(table.findall(addnodes.pending_xref))
    assert [link["reftarget"] for link in links] == ["ran", "broke"]
    assert not any(link["refexplicit"] for link in links)


# What axe-core reports that is not ours to fix: Sphinx marks up a bibliography as a list whose
# entries carry the deprecated role doc-biblioentry, and the theme puts its sidebar outside a
# landmark. Everything else it finds of impact "serious" or "critical" fails the check.
UPSTREAM_ACCESSIBILITY = ("aria-required-children", "aria-deprecated-role",
                          "aria-allowed-role", "region")


@pytest.mark.slow  # opens every page of the built book in headless Chromium
def test_every_page_reads_well_in_a_browser(built_book):
    """Every page as a reader's browser shows it, offline, at a desktop's and at a phone's
    width: no console error, every math span typeset, no TeX or MyST left as text, every image
    loaded, figure text 10 CSS px or more, every internal link and anchor found, nothing wider
    than the text column (no display equation scrolls in its own box, at either width, no table
    or printed output is wider than its column, and no page is wider than a phone; code may
    scroll on a phone), no margin note floated beside a code cell or another block,
    the phone's navigation buttons open and "on this page" closes after a jump, no error
    output, no serious
    accessibility violation in the light or the dark theme. The first screen of each page at
    each width is saved under _build/screens/ to be looked at."""
    from browser import check_book  # needs playwright, which only the slow checks use

    returncode, log, html = built_book
    assert returncode == 0, log
    reports = check_book(html, ROOT / "_build" / "screens")
    chapters = {f"book/{p.stem}.html" for p in NOTEBOOKS}
    assert {(c, w) for c in chapters for w in ("desktop", "phone")} <= {
        (r.path, r.width) for r in reports}
    problems = {}
    for report in reports:
        found = report.problems()
        found["accessibility"] = [
            v for v in found.get("accessibility", [])
            if v.split(" ")[0] not in UPSTREAM_ACCESSIBILITY
            and ("(serious)" in v or "(critical)" in v)]
        found = {kind: items for kind, items in found.items() if items}
        if report.path in chapters and (report.math == 0 or report.images == 0):
            found["apparatus"] = [f"{report.math} math spans, {report.images} images"]
        if found:
            problems[f"{report.path} at {report.width}"] = found
    assert not problems, json.dumps(problems, indent=1)
    # the status column of Execution statistics in words (tools/exectable.py), not emoji: every
    # chapter, and the full-scale appendix (a text notebook that shows its recorded figures)
    statistics = (html / "book" / "execution.html").read_text()
    assert statistics.count("<p>passed</p>") == len(NOTEBOOKS) + 1 and "✅" not in statistics
    # sphinx-proof's Proof Index listed labels ("thm-recall-division"): not built (_config.yml)
    assert not (html / "prf-prf.html").exists()


# In-context recall's Theorem 5.6 as the chapter once wrote it: a line of its inline math
# starts with "- \\ln", which Markdown reads as a list item, leaving TeX as visible text.
GARBLED_THEOREM = r"""# A garbled theorem

```{prf:theorem} The two layers divide the work
:label: thm-garbled

With probability at least $1 - \delta$ over the $M$ training sentences, after
$t \ge \max\bigl(1, \frac{1}{\eta}\bigl|\ln\bigl(1 - \alpha + \sqrt{\ln(2/\delta)/(2M)}\bigr)
- \ln\bigl(\alpha - \sqrt{\ln(2/\delta)/(2M)}\bigr)\bigr|\bigr)$ steps of Algorithm 1,
condition (4) holds.
```

A margin note beside code, as the theme sets it when the page has no margin:

```{admonition} Erratum
:class: margin
A note long enough to reach down beside the code block that follows it on the page.
```

```python
print("a code block, whose grey box a note floated beside the text would lie over")
```

A paragraph among many, then <span class="faint">grey text on a white page</span>, and
<span class="dark-faint">text that only the dark theme makes too faint</span>.

<style>
.faint { color: #b0b0b0; }
html[data-theme="dark"] .dark-faint { color: #303030; }
</style>
"""


# A notebook, with its outputs, that prints a line of 100 characters and shows a DataFrame of
# twelve columns: wider than a phone's column, and (the table) than a desktop's.
WIDE_OUTPUTS = {
    "nbformat": 4, "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}},
    "cells": [
        {"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# Wide outputs"},
        {"cell_type": "code", "id": "printed", "metadata": {}, "execution_count": 1,
         "source": "print('result ' * 7)",
         "outputs": [{"output_type": "stream", "name": "stdout",
                      "text": "a printed result of a hundred characters, "
                              "printed-on-one-line-without-a-break-" + "x" * 22 + "\n"}]},
        {"cell_type": "code", "id": "frame", "metadata": {}, "execution_count": 2,
         "source": "frame",
         "outputs": [{"output_type": "execute_result", "execution_count": 2, "metadata": {},
                      "data": {"text/plain": "frame", "text/html": (
                          '<table class="dataframe"><thead><tr>'
                          + "".join(f"<th>a column named {i}</th>" for i in range(12))
                          + "</tr></thead><tbody><tr>"
                          + "".join(f"<td>{i}</td>" for i in range(12))
                          + "</tr></tbody></table>")}}]}]}


@pytest.mark.slow  # builds a small book and opens it in headless Chromium
def test_the_browser_check_sees_tex_left_as_text_and_a_note_over_code(tmp_path):
    """The check that passes the book fails a page that shows TeX as text (the theorem above,
    built as the book builds its pages: MyST, sphinx-proof, MathJax offline), and, at a phone's
    width, a page without the book's stylesheet, where the theme floats a margin note beside the
    code block that follows it; it reports a notebook's table wider than the column at both
    widths and, on a phone, its printed line that does not wrap (without the book's style); and
    text too faint to read, in the light theme and in the dark one only."""
    from browser import check_book

    (tmp_path / "index.md").write_text(GARBLED_THEOREM)
    (tmp_path / "wide.ipynb").write_text(json.dumps(WIDE_OUTPUTS))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: wide\n")
    (tmp_path / "_config.yml").write_text(yaml.safe_dump({
        "title": "garbled", "execute": {"execute_notebooks": "off"},
        "parse": {"myst_enable_extensions": ["amsmath", "dollarmath"]},
        "sphinx": {"extra_extensions": ["sphinx_proof", "sphinx-mathjax-offline"]}}))
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    subprocess.run([str(jupyter_book), "build", str(tmp_path)], check=True,
                   capture_output=True, timeout=300)
    reports = check_book(tmp_path / "_build" / "html")
    for width in ("desktop", "phone"):
        [page] = [r for r in reports if r.path == "index.html" and r.width == width]
        assert any("\\ln" in found or "\\bigr" in found for found in page.raw_markup), \
            page.raw_markup
    [desktop] = [r for r in reports if r.path == "index.html" and r.width == "desktop"]
    contrast = [found for found in desktop.accessibility if "color-contrast" in found]
    assert any(".faint" in found and "dark" not in found for found in contrast), contrast
    assert any(".dark-faint" in found and found.startswith("dark theme") for found in contrast)
    [phone] = [r for r in reports if r.path == "index.html" and r.width == "phone"]
    assert any("sits beside" in found and "a code block" in found for found in phone.overlaps), \
        phone.overlaps
    for width in ("desktop", "phone"):
        [page] = [r for r in reports if r.path == "wide.html" and r.width == width]
        assert any("a column named 0" in found for found in page.cut_tables), page.cut_tables
        assert "cut_tables" in page.problems()
    [phone] = [r for r in reports if r.path == "wide.html" and r.width == "phone"]
    assert any("100 characters" in found for found in phone.cut_outputs), phone.cut_outputs


@pytest.mark.slow  # needs the executed build and its PDF
def test_the_pdf_is_a_book(built_book, tmp_path):
    """The PDF (Jupyter Book's LaTeX route): a title page, the parts and chapters of the table
    of contents in its outline (the bookmarks), every chapter under its part, no page whose
    text or images run past the margin or below the running foot (a figure's caption pushed
    off its page, a listing through the page number), no page left half empty mid-chapter,
    every DataFrame
    set as a table, a heading's math spelled in its bookmark, and no
    solution or appendix for instructors printed (the PDF is the students' edition). A few
    pages are rendered under _build/pdf-pages/ to be looked at."""
    import pypdfium2
    from pdf import below_the_foot, blank_pages, outline, past_the_margin, render_pages

    returncode, log, html = built_book
    assert returncode == 0, log
    pdf = html / "book.pdf"
    marks = outline(pdf, depth=2)
    assert marks[0][:2] == (0, "Introduction")
    parts = [title for level, title, _ in marks[1:] if level == 0]
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert parts == [part["caption"] for part in toc["parts"]]
    chapters = [title for level, title, _ in marks if level == 1]
    for notebook in NOTEBOOKS:
        heading = next(line for line in markdown(notebook).splitlines() if line.startswith("# "))
        assert heading[2:].replace("'", "’") in chapters
    assert "For instructors" not in chapters, "the students' edition"
    # a heading's math spelled in its bookmark
    sections = [title for _, title, _ in outline(pdf, depth=3)]
    assert "Beyond TC⁰: BFVP and the word problem of S₅" in sections
    assert "Why ε > 0 brings Hahn’s lemma back" in sections
    pages = [page for _, _, page in marks]
    assert pages == sorted(pages) and pages[0] > 1, "the title page and contents come first"
    assert past_the_margin(pdf) == []
    assert below_the_foot(pdf) == []
    assert blank_pages(pdf) == [], "floats placed so that no page mid-chapter is half empty"
    # every DataFrame the HTML shows, on the pages the PDF prints, is a table in the PDF
    frames = sum((html / f"{page}.html").read_text().count('class="dataframe')
                 for page in toc_files() if page != "book/instructors")
    latex = (html.parent / "latex" / "book.tex").read_text()
    assert frames > 0 and latex.count(OutputTables.mark) == frames
    text = "".join(page.get_textpage().get_text_range()
                   for page in pypdfium2.PdfDocument(str(pdf)))
    assert "Solution to" not in text
    # the first line of every model answer's cell
    assert "# Solution (a model answer)" not in text
    render_pages(pdf, ROOT / "_build" / "pdf-pages")


_FLOAT = re.compile(r'<(?:figure|table)\b[^>]*\bid="([^"]+)".*?'
                    r'<span class="caption-number">(?:Fig\.|Table) ([\d.]+) </span>', re.S)
_BOX = re.compile(r'<span class="caption-number">(?!Fig\.|Table)(\w+ [\d.]+) </span>')
_LATEX_BOX = re.compile(r"\\begin\{sphinxadmonition\}\{note\}\{([A-Z][a-z]+ \d+(?:\.\d+)*)\b")
_LATEX_LABEL = re.compile(r"\\newlabel\{([\w/]+:[\w-]+)\}\{\{([\d.]+)\}")


def html_numbers(html: Path, pages: list[str]) -> tuple[dict[str, str], list[str]]:
    """The numbers of the HTML book's ``pages``: figures and tables ``{"page:label": "6.1"}``,
    and the theorem-like boxes and exercises ``["Proposition 6.1", …]`` in reading order."""
    floats, boxes = {}, []
    for page in pages:
        text = (html / f"{page}.html").read_text()
        floats |= {f"{page}:{label}": number for label, number in _FLOAT.findall(text)}
        boxes += _BOX.findall(text)
    return floats, boxes


def latex_numbers(latex: Path) -> tuple[dict[str, str], list[str]]:
    """The same numbers in the LaTeX output: figures and tables as LaTeX numbered them (its
    ``.aux``), the boxes' titles as the ``.tex`` prints them."""
    labels = dict(_LATEX_LABEL.findall((latex / "book.aux").read_text()))
    return labels, _LATEX_BOX.findall((latex / "book.tex").read_text())


@pytest.mark.slow  # needs the executed build
def test_the_index_lists_concepts_not_the_api(built_book):
    """The general index (HTML and PDF alike, both from the same entries) lists what the
    chapters teach, and none of the companion's modules, classes or functions."""
    returncode, log, html = built_book
    assert returncode == 0, log
    index = (html / "genindex.html").read_text()
    entries = re.findall(r"<li>(?:<a [^>]*>)?([^<]+)", index)
    assert {"softmax", "cross-entropy", "layer normalization", "PARITY"} <= {
        entry.strip() for entry in entries}
    assert "companion." not in index and "built-in function" not in index


@pytest.mark.slow  # needs the executed build and its PDF
def test_the_html_and_the_pdf_number_alike(built_book):
    """Every figure, table, theorem-like box and exercise has the same number in the HTML and
    the PDF ("Exercise 7.1", "Proposition 6.1", and the appendices' "Fig. 1"), and the
    exercises' and boxes' numbers are those that the course's editions, the grader and
    JupyterLab (through each chapter's front matter) use."""
    import nbformat

    from course.numbers import box_numbers

    returncode, log, html = built_book
    assert returncode == 0, log
    pages = [page for page in toc_files() if page != "book/instructors"]  # not in the PDF
    floats, boxes = html_numbers(html, pages)
    labels, latex_boxes = latex_numbers(html.parent / "latex")
    assert floats and boxes, "the HTML's numbers were found"
    assert {key: labels.get(key) for key in floats} == floats
    assert latex_boxes == boxes
    chapters = [ROOT / f"{page}.ipynb" for page in pages if (ROOT / f"{page}.ipynb").exists()]
    course = [number for chapter in chapters for _, number in box_numbers(
        nbformat.read(chapter, as_version=4), chapter.stem)]
    assert course == boxes


def test_the_full_scale_appendix_shows_every_recorded_figure():
    """Each figure that tools/full_figures.py records from a full-scale run is a figure of its
    chapter, is recorded in book/figures/full, and is shown once in the appendix."""
    from full_figures import RECORDED
    appendix = (ROOT / "book" / "full_scale.md").read_text()
    shown = re.findall(r'show_recorded\("figures/full/([\w-]+)\.json"\)', appendix)
    recorded = [name for names in RECORDED.values() for name in names]
    assert sorted(shown) == sorted(recorded)
    for chapter, names in RECORDED.items():
        cells = json.loads((ROOT / "book" / f"{chapter}.ipynb").read_text())["cells"]
        figures = {c["metadata"].get("mystnb", {}).get("figure", {}).get("name") for c in cells}
        assert set(names) <= figures, chapter
    for name in recorded:
        bundle = json.loads((ROOT / "book" / "figures" / "full" / f"{name}.json").read_text())
        assert "data:image/svg+xml" in bundle["text/html"], name
    # no raster figure is left: every figure is drawn as vector panels
    assert not list((ROOT / "book").rglob("*.png"))


def test_a_headings_math_is_spelled_in_its_bookmark():
    """The PDF's bookmarks are plain text: each heading's math as a reader would spell it."""
    assert bookmark_text(r"TC^0") == "TC⁰"
    assert bookmark_text(r"S_5") == "S₅"
    assert bookmark_text(r"1.5^{10}") == "1.5¹⁰"
    assert bookmark_text(r"\varepsilon > 0") == "ε > 0"
    assert bookmark_text(r"\lambda") == "λ"


def test_other_builds_change_only_how_the_notebooks_execute(tmp_path):
    """make full's configuration: the book's, cached with no cell time limit, its local
    extensions found from anywhere."""
    book = yaml.safe_load((ROOT / "_config.yml").read_text())
    full = yaml.safe_load(write_config(tmp_path / "full.yml", "cache", -1).read_text())
    assert full["execute"] == {**book["execute"], "execute_notebooks": "cache", "timeout": -1}
    for name, folder in full["sphinx"]["local_extensions"].items():
        assert Path(folder).is_absolute() and (Path(folder) / f"{name}.py").is_file()
    for file in full["sphinx"]["config"]["latex_additional_files"]:
        assert Path(file).is_absolute() and Path(file).is_file()
    assert {k: v for k, v in full.items() if k not in ("execute", "sphinx")} == {
        k: v for k, v in book.items() if k not in ("execute", "sphinx")}
    for bad in ({"execute": "sometimes"}, {"timeout": 0}, {"timeout": -5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            write_config(tmp_path / "bad.yml", **bad)


def test_one_author_year_citation_style():
    pages = [*NOTEBOOKS, *(ROOT / "book").glob("*.md")]
    for page in pages:
        text = page.read_text()
        assert "{footcite" not in text and "{cite}`" not in text, f"{page.name}: cite:t or cite:p"
    entries = parse_file(ROOT / "book" / "references.bib").entries
    disambiguate_years(entries)
    labels = [author_year_label(entry) for entry in entries.values()]
    assert len(set(labels)) == len(labels), "two works would share a citation label"
    assert author_year_label(entries["hahn2020theoretical"]) == "Hahn, 2020"
    assert author_year_label(entries["chiang2022overcoming"]) == "Chiang and Cholak, 2022"
    assert author_year_label(entries["deletang2023chomsky"]) == "Delétang et al., 2023"


def test_works_of_the_same_authors_and_year_get_suffixes_in_title_order():
    entries = parse_string("""
        @misc{b, author = {Merrill, William and Sabharwal, Ashish}, title = {{B}eta}, year = {2025}}
        @misc{a, author = {Merrill, William and Sabharwal, Ashish}, title = {Alpha}, year = {2025}}
        @misc{c, author = {Merrill, William}, title = {Gamma}, year = {2025}}
        @misc{d, author = {Merrill, William and Sabharwal, Ashish}, title = {Delta}, year = {2024}}
    """, "bibtex").entries
    for _ in range(2):  # a second pass (a cached bibliography) changes nothing
        disambiguate_years(entries)
        assert [entries[key].fields["year"] for key in "abcd"] == [
            "2025a", "2025b", "2025", "2024"]
    assert author_year_label(entries["b"]) == "Merrill and Sabharwal, 2025b"


def test_the_api_appendix_documents_every_public_module():
    """book/api.md runs autodoc on every module of companion, and every public function,
    class and method there has a docstring of its own to show."""
    page = (ROOT / "book" / "api.md").read_text()
    documented = re.findall(r"^\.\. automodule:: (\S+)$", page, re.MULTILINE)
    modules = sorted(f"companion.{path.stem}" for path in (ROOT / "companion").glob("*.py")
                     if not path.stem.startswith("_"))
    assert sorted(documented) == modules
    undocumented = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            members = {name: obj}
            if inspect.isclass(obj):
                members |= {f"{name}.{method}": f for method, f in vars(obj).items()
                            if inspect.isfunction(f) and not method.startswith("_")}
            undocumented += [f"{module_name}.{member}" for member, f in members.items()
                             if not (f.__doc__ or "").strip()]
    assert not undocumented


def test_docstrings_cite_works_of_the_bibliography():
    """A docstring cites a work as ``[key]``; the API appendix turns each key of
    book/references.bib into a citation and leaves other bracketed words alone."""
    keys = set(parse_file(ROOT / "book" / "references.bib").entries)
    cited = {key for path in (ROOT / "companion").glob("*.py")
             for key in re.findall(r"\[([a-z]+\d{4}[a-z]*)\]", path.read_text())}
    assert cited and cited <= keys, cited - keys
    lines = ["Proposition 2 of [chiang2022overcoming] (§4.2)", "LongTensor[B] or [hahn2020]"]
    cite_keys(lines, keys)
    assert lines == ["Proposition 2 of :cite:t:`chiang2022overcoming` (§4.2)",
                     "LongTensor[B] or [hahn2020]"]


def _document(path: Path) -> str:
    """A page's text in reading order with its labels written out: a notebook's cells, each
    figure cell's name as ``(name)=`` before its source (as a MyST target would be)."""
    if path.suffix == ".md":
        return path.read_text()
    parts = []
    for cell in cells(path):
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        parts.append((f"({name})=\n" if name else "") + "".join(cell["source"]))
    return "\n\n".join(parts)


def _labels(text: str) -> dict[str, int]:
    """Where each label of a page is defined: ``(label)=`` targets, ``:label:`` and ``:name:``
    options of directives."""
    found = {}
    for pattern in (r"^\((?P<l>[\w-]+)\)=", r"^:(?:label|name): *(?P<l>[\w-]+)"):
        for match in re.finditer(pattern, text, re.M):
            found.setdefault(match["l"], match.start())
    return found


def test_relative_references_point_where_they_say():
    """"Below" and "above" in a reference's text match where its target is on the page, and
    "the next chapter" or "the previous chapter" comes with a link to the chapter that is
    next or previous in the table of contents (a chapter inserted between them would
    otherwise leave the words pointing at the wrong one)."""
    order = [name.removeprefix("book/") for name in toc_files() if name.startswith("book/")]
    wrong = []
    for path in [*NOTEBOOKS, *sorted((ROOT / "book").glob("*.md"))]:
        text = _document(path)
        labels = _labels(text)
        for match in re.finditer(r"\{(?:ref|numref)\}`([^`<]*)<([\w-]+)>`", text):
            words, target = match.groups()
            for word, later in (("below", True), ("above", False)):
                if re.search(rf"\b{word}\b", words) and (
                        target not in labels or (labels[target] > match.start()) != later):
                    wrong.append(f"{path.name}: '{words.strip()}' -> {target}")
        if path.stem not in order:
            continue
        at = order.index(path.stem)
        for paragraph in re.split(r"\n\s*\n", text):
            for which, step in (("next", 1), ("previous", -1)):
                if not re.search(rf"\b{which} chapters?\b", paragraph):
                    continue
                neighbour = order[at + step] if 0 <= at + step < len(order) else None
                if neighbour is None or not re.search(
                        rf"\{{doc\}}`(?:[^`<]*<)?{neighbour}>?`", paragraph):
                    wrong.append(f"{path.name}: 'the {which} chapter' without a link to "
                                 f"{neighbour}")
    assert not wrong, "\n".join(wrong)


def test_the_pdf_check_finds_text_below_the_running_foot(tmp_path):
    """``pdf.below_the_foot`` on a PDF made here: five pages with a page number at one height,
    and on page 4 a line under it (a caption pushed off its page), which it alone reports."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages
    from pdf import below_the_foot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = tmp_path / "pages.pdf"
    with PdfPages(path) as pages:
        for number in range(1, 6):
            figure = plt.figure(figsize=(4, 6))
            figure.text(0.1, 0.8, f"the text of page {number}")
            figure.text(0.5, 0.05, str(number))  # the running foot
            if number == 4:
                figure.text(0.1, 0.01, "a caption pushed off its page")
            pages.savefig(figure)
            plt.close(figure)
    [found] = below_the_foot(path)
    assert found.startswith("page 4:") and "caption pushed off" in found
