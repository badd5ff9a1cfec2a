"""What a reader of the student editions and of JupyterLab sees of the book's MyST, on every
chapter: citations with their authors and year in plain letters, the chapter's own checks not
passed off as an exercise's, every figure with the book's number and caption, proofs
unnumbered as in the book, and no role broken across a line (JupyterLab then shows it as
text)."""

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course.assignments import (
    CHECK,
    _author_year,
    bib_entries,
    parse_bibtex,
    plain_roles,
    student_edition,
)
from course.numbers import (
    CAPTION_OF,
    chapter_numbers,
    exercise_numbers,
    figure_numbers,
    lab_edition,
    unnumbered_proofs,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
PAGES = sorted((ROOT / "book").glob("*.md"))
CITE = re.compile(r"\{cite:[tp]\}`([^`]*)`")
# A role: "{name}" right after no backtick (`{solution}` in inline code is none), then its
# target between backticks.
ROLE = re.compile(r"(?<!`)\{[\w:+-]+\}`[^`]*`")
# Where a role is shown, not used: a fenced block that is not a directive (```python, ````md).
CODE_BLOCK = re.compile(r"^(`{3,}|~{3,})(?!\{)[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)


def markdown_sources(notebook) -> list[tuple[str, str]]:
    """``[(cell id, MyST text)]``: every Markdown cell and every figure caption."""
    found = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            found.append((cell.get("id", "?"), cell.source))
        caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
        if caption:
            found.append((f"{cell.get('id', '?')} (figure caption)", caption))
    return found


def prose(text: str) -> str:
    """``text`` with each code block, inline code and math as "X", where "()" or ", )" is no
    citation's."""
    text = re.sub(r"`[^`\n]*`", "X", CODE_BLOCK.sub("X", text))
    return re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "X", text, flags=re.S)


def works(citation: str, in_text: bool) -> list[tuple[str, str]]:
    """``[(authors, year)]`` of a citation as a student edition writes it: "A and B (2022,
    §4); C et al. (2021)" in the text, "(A and B, 2022; C et al., 2021, §4)" in parentheses;
    a part that is not so written comes back as ``(part, "")``."""
    if not in_text:
        citation = citation.removeprefix("(").removesuffix(")")
    found = []
    for part in citation.split("; "):
        form = r"(.+) \((\d{4})(?:, [^()]*)?\)" if in_text else r"(.+), (\d{4})(?:, .*)?"
        match = re.fullmatch(form, part)
        found.append((match[1], match[2]) if match else (part, ""))
    return found


@pytest.fixture(scope="module", params=CHAPTERS, ids=lambda p: p.stem)
def editions(request):
    """A chapter's notebook and its student edition."""
    book = nbformat.read(request.param, as_version=4)
    return request.param.stem, book, student_edition(book, request.param.stem)


def test_every_citation_of_a_student_edition_has_its_authors_and_year(editions):
    """Every key the chapter cites is in the bibliography, and the student edition writes each
    citation as "Author (year)" in letters (no "Hao et al., )", no "Del'etang" or "P\\'erez"):
    no citation's role, key, backslash or brace is left."""
    chapter, book, student = editions
    keys = set(bib_entries())
    cited = [target for _, text in markdown_sources(book) for target in CITE.findall(text)]
    assert cited, f"{chapter} cites nothing"
    for target in cited:
        unknown = [key for key in re.sub(r"\{.*\}$", "", target).split(",")
                   if key.strip() not in keys]
        assert not unknown, f"{chapter}: {target!r} cites keys not in references.bib"
    for target in cited:
        for role in ("cite:t", "cite:p"):
            text = plain_roles(f"{{{role}}}`{target}`", {})
            for authors, year in works(text, in_text=role == "cite:t"):
                assert re.fullmatch(r"(19|20)\d\d", year), (chapter, target, text)
                # letters, no TeX: "Delétang", not "Del'etang", "Del\\'etang" or "Del{\\'e}tang"
                assert re.fullmatch(r"[^\W\d_][\w .–-]*", authors), (chapter, target, text)
    markdown = "\n".join(prose(c.source) for c in student.cells if c.cell_type == "markdown")
    empty = re.findall(r".{0,40}(?:\{cite|\(\s*\)|,\s*\))", markdown)
    assert not empty, f"{chapter}: a citation without its year: {empty}"
    raw = re.findall(r".{0,40}(?:\\[\"'`^~=.]\s*\{?[A-Za-z]|\{\\)", markdown)
    assert not raw, f"{chapter}: TeX left as text: {raw}"


def test_the_chapters_own_checks_are_not_an_exercises(editions):
    """A check cell of an exercise (metadata ``exercise``) is headed and ends with the
    exercise's number; the chapter's own checks (no ``exercise``) stay as the book has them:
    none says "this exercise"."""
    chapter, book, student = editions
    numbers = exercise_numbers(book, chapter)
    book_checks = {c.id: c for c in book.cells if CHECK in c.metadata.get("tags", [])}
    student_checks = [c for c in student.cells if CHECK in c.metadata.get("tags", [])]
    assert [c.id for c in student_checks] == list(book_checks)
    for cell in student_checks:
        assert "this exercise" not in cell.source, (chapter, cell.id)
        label = cell.metadata.get("exercise")
        if label is None:
            assert cell.source == book_checks[cell.id].source, (chapter, cell.id)
        else:
            name = f"{numbers[label]} ({label})"
            assert cell.source.startswith(f"# Checks {name}\n"), (chapter, cell.id)
            assert cell.source.endswith(f'print("{name}: the checks pass")'), (chapter, cell.id)


def test_every_figure_has_its_number_and_caption_in_jupyterlab(editions):
    """jupyterlab-myst ignores myst-nb's figure metadata: the JupyterLab edition
    (chapters.zip) and the student edition follow each figure's cell with a caption cell, a
    ``{figure}`` with the book's number, Fig. c.1, c.2, … in the chapter numbered c, and the
    caption (in the student edition with its roles as plain text)."""
    chapter, book, student = editions
    number = chapter_numbers()[chapter]
    figures = [c for c in book.cells if c.metadata.get("mystnb", {}).get("figure")]
    names = [c.metadata.mystnb.figure.get("name") for c in figures]
    assert all(names), f"{chapter}: a figure without a name is not numbered in the book"
    assert figure_numbers(book, chapter) == {
        name: f"{number}.{k}" for k, name in enumerate(names, 1)}
    lab = lab_edition(book, chapter)
    assert lab_edition(lab, chapter) == lab, "applied twice, it adds nothing"
    for edition in (lab, student):
        ids = [c.get("id") for c in edition.cells]
        assert len(set(ids)) == len(ids), "cell ids are unique"
        for k, (cell, name) in enumerate(zip(figures, names, strict=True), 1):
            at = ids.index(cell.id)
            caption = edition.cells[at + 1]
            assert caption.cell_type == "markdown" and caption.metadata[CAPTION_OF] == name
            assert caption.source.startswith(
                f"```{{figure}}\n:label: {name}\n:enumerator: {number}.{k}\n\n")
            if edition is lab:
                assert cell.metadata.mystnb.figure.caption in caption.source
            assert "remove-cell" in caption.metadata.tags
    assert [c for c in book.cells if CAPTION_OF in c.metadata] == [], "the book is unchanged"


def test_proofs_are_unnumbered_in_jupyterlab_as_in_the_book(editions):
    """sphinx-proof leaves proofs unnumbered ("Proof"); jupyterlab-myst numbers them ("Proof
    8.1") unless a proof says ``:nonumber:``, which sphinx-proof's proof refuses, so the
    editions add it and the book does not have it."""
    chapter, book, student = editions
    fence = re.compile(r"^`{3,}\{prf:proof\}[^\n]*\n((?::[\w-]+:[^\n]*\n)*)", re.M)
    in_book = [o for c in book.cells if c.cell_type == "markdown"
               for o in fence.findall(c.source)]
    assert not any(":nonumber:" in options for options in in_book), chapter
    for edition in (lab_edition(book, chapter), student):
        options = [o for c in edition.cells if c.cell_type == "markdown"
                   for o in fence.findall(c.source)]
        assert len(options) == len(in_book)
        assert all(":nonumber:" in o for o in options), chapter


def test_unnumbered_proofs_and_captions_on_a_small_notebook():
    proof = "Text.\n\n```{prf:proof}\n:class: x\nBody.\n```\n\n````{prf:proof}\nB.\n````"
    assert unnumbered_proofs(proof) == (
        "Text.\n\n```{prf:proof}\n:nonumber:\n:class: x\nBody.\n```\n\n"
        "````{prf:proof}\n:nonumber:\nB.\n````")
    assert unnumbered_proofs(unnumbered_proofs(proof)) == unnumbered_proofs(proof)
    figure = new_code_cell("plot()", metadata={"mystnb": {"figure": {
        "name": "fig-a", "caption": "A `plot` with {ref}`a link <fig-a>`."}}})
    notebook = new_notebook(cells=[new_markdown_cell("# T"), figure])
    assert lab_edition(notebook, "not-a-chapter").cells == notebook.cells
    [_, _, caption] = lab_edition(notebook, "recognizers").cells
    number = chapter_numbers()["recognizers"]
    assert caption.source == (f"```{{figure}}\n:label: fig-a\n:enumerator: {number}.1\n\n"
                              "A `plot` with {ref}`a link <fig-a>`.\n```")
    student = student_edition(notebook, "recognizers")
    assert student.cells[2].source.endswith("A `plot` with a link.\n```")
    assert plain_roles("{numref}`fig-a`; {numref}`Figure %s <fig-a>`",
                       {"fig-a": f"Fig. {number}.1"}) == (
        f"Fig. {number}.1; Figure {number}.1")


def test_bibtex_values_in_every_form_and_accents_as_letters():
    """A year braced, quoted or bare, or only a date; TeX's accents in all their spellings."""
    entries = parse_bibtex(
        '@string{j = "J"}\n'
        "@article{a,\n  author = {Del{\\'e}tang, Gr\\'{e}goire and P\\'erez, J. and "
        'Th{\\"e}rien, D.},\n  title = {A {B} c},\n  year = 2022\n}\n'
        '@misc{b, author = "R\\"{o}hrig, H. and Fran\\c{c}ois, Y.", year = "1999",}\n'
        "@misc{c, author = {{Some Group}}, date = {2021-03-01}, note = {x} # \"y\"}\n"
        "@comment{not an entry, year = 1}\n")
    assert entries["a"]["year"] == "2022" and entries["b"]["year"] == "1999"
    assert entries["c"]["note"] == "xy" and set(entries) == {"a", "b", "c"}
    from course import assignments

    cached = assignments.bib_entries
    assignments.bib_entries = lambda: entries
    try:
        assert _author_year("a") == ("Delétang et al.", "2022")
        assert _author_year("b") == ("Röhrig and François", "1999")
        assert _author_year("c") == ("Some Group", "2021")
        assert _author_year("missing") is None
    finally:
        assignments.bib_entries = cached


@pytest.mark.parametrize("page", CHAPTERS + PAGES, ids=lambda p: p.name)
def test_no_role_is_broken_across_a_line(page):
    """jupyterlab-myst (like the MyST parser) reads a role only within one line: a target split
    by a line break shows as text ("the figure <fig-steps-scratchpad>"). Every Markdown cell
    and figure caption of every chapter, and every page, keeps each role on one line."""
    if page.suffix == ".ipynb":
        sources = markdown_sources(nbformat.read(page, as_version=4))
    else:
        sources = [("", page.read_text())]
    split = []
    for where, text in sources:
        shown = CODE_BLOCK.sub(lambda m: "\n" * m[0].count("\n"), text)
        for role in ROLE.finditer(shown):
            if "\n" in role[0]:
                line = text[:role.start()].count("\n") + 1
                split.append(f"{page.name} {where} line {line}: {json.dumps(role[0])}")
    assert not split, "roles broken across a line:\n" + "\n".join(split)
