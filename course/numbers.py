"""The book's numbers for its exercises ("Exercise 7.1"), theorem-like boxes and figures, for the
course's editions and grader, and for JupyterLab (:func:`front_matter`, :func:`lab_edition`).

The HTML book and the PDF number a chapter's exercises per chapter: Sphinx numbers the chapters
of the table of contents' numbered parts 1, 2, … across the parts in reading order, and
sphinx-exercise numbers each chapter's exercises 1, 2, … in the order stated, leaving out those
marked ``:nonumber:``. Here the same numbers come from the book's own structure (``_toc.yml``
and the chapter's notebook), so that a stub, a check and a grader's row say "Exercise 7.1"
where the book does.
"""

import re
from pathlib import Path

import nbformat
import yaml

TOC = Path(__file__).resolve().parents[1] / "_toc.yml"
# An exercise or theorem-like box with its options (a proof has no number).
_NUMBERED = re.compile(r"^`{3,4}\{(exercise|prf:(?!proof)\w+)\}[^\n]*\n"
                       r"(?P<options>(?::[\w-]+:[^\n]*\n)*)", re.M)


def chapter_numbers(toc: Path | None = None) -> dict[str, int | None]:
    """``{chapter name: number}`` for every chapter of ``toc`` (a Jupyter Book ``_toc.yml``,
    by default the book's): those of the numbered parts numbered 1, 2, … across the parts, the
    others ``None``; the name is the file's stem (``"recognizers"``)."""
    parts = yaml.safe_load(Path(toc or TOC).read_text())["parts"]
    numbers, count = {}, 0
    for part in parts:
        for chapter in part["chapters"]:
            count += bool(part.get("numbered"))
            numbers[Path(chapter["file"]).name] = count if part.get("numbered") else None
    return numbers


def box_numbers(notebook, chapter: str, toc: Path | None = None) -> list[tuple[str, str]]:
    """``[(label, "Exercise 7.1"), (label, "Proposition 7.1"), …]`` for the numbered exercises
    and theorem-like boxes of ``notebook``, the chapter named ``chapter`` (its file's stem) in
    ``toc``, in reading order, as the book numbers them: each kind counted on its own, those
    marked ``:nonumber:`` left out, in a chapter of an unnumbered part "Exercise 1", …; the
    label is ``""`` for a box without one; none for a notebook not in the book."""
    numbers = chapter_numbers(toc)
    if chapter not in numbers:
        return []
    prefix = f"{numbers[chapter]}." if numbers[chapter] else ""
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    counts, boxes = {}, []
    for match in _NUMBERED.finditer(text):
        options = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", match["options"], re.M))
        if "nonumber" not in options:
            kind = match[1].removeprefix("prf:").capitalize()
            counts[kind] = counts.get(kind, 0) + 1
            boxes.append((options.get("label", "").strip(), f"{kind} {prefix}{counts[kind]}"))
    return boxes


def exercise_numbers(notebook, chapter: str, toc: Path | None = None) -> dict[str, str]:
    """``{label: "Exercise 7.1"}`` for the labelled, numbered exercises of ``notebook`` (see
    :func:`box_numbers`)."""
    return {label: number for label, number in box_numbers(notebook, chapter, toc)
            if label and number.startswith("Exercise ")}


def numbered(label: str, numbers: dict[str, str]) -> str:
    """"Exercise 7.1 (ex-learn-threshold)", or the label alone where the book gives it no
    number (``numbers`` from :func:`exercise_numbers`)."""
    return f"{numbers[label]} ({label})" if label in numbers else label


def front_matter(chapter: str, toc: Path | None = None) -> str:
    """The first cell of the chapter named ``chapter`` (its file's stem), a Markdown cell that
    the book leaves out (tagged ``remove-cell``): a YAML block that jupyterlab-myst reads as
    the notebook's front matter, so that JupyterLab numbers the chapter's exercises, theorems
    and figures "7.1", "7.2", … as the book does."""
    number = chapter_numbers(toc).get(chapter)
    if number is None:
        raise ValueError(f"chapter must be a chapter of a numbered part, got {chapter!r}")
    return ("```yaml\n"
            "# Front matter for JupyterLab (jupyterlab-myst): number this chapter's exercises,\n"
            "# theorems and figures as the book does. The book leaves this cell out.\n"
            f"numbering:\n  enumerator: \"{number}.%s\"\n"
            "```")


def figure_numbers(notebook, chapter: str, toc: Path | None = None) -> dict[str, str]:
    """``{name: "8.2"}`` for the figures of ``notebook``, the chapter named ``chapter`` in
    ``toc``: the code cells whose metadata ``mystnb.figure`` names a figure, in reading order,
    numbered as Sphinx numbers them in the HTML and the PDF (a figure without a name has no
    number; in a chapter of an unnumbered part "1", "2", …); none for a notebook not in the
    book."""
    numbers = chapter_numbers(toc)
    if chapter not in numbers:
        return {}
    prefix = f"{numbers[chapter]}." if numbers[chapter] else ""
    names = [name for cell in notebook.cells if cell.cell_type == "code"
             if (name := _figure(cell).get("name"))]
    return {name: f"{prefix}{k}" for k, name in enumerate(names, 1)}


def _figure(cell) -> dict:
    figure = cell.metadata.get("mystnb", {}).get("figure", {})
    return figure if isinstance(figure, dict) else {}


# What the JupyterLab edition adds (lab_edition): a caption cell after each figure, marked so
# with the figure's name in its metadata, and ":nonumber:" on every proof.
CAPTION_OF = "figure_caption_of"
_PROOF = re.compile(r"^(?:`{3,}|:{3,})\{prf:proof\}[^\n]*\n"
                    r"(?P<options>(?::[\w-]+:[^\n]*\n)*)", re.M)


def caption_cell(name: str, number: str, caption: str, cell_id: str):
    """The Markdown cell that shows the figure ``name``'s number and caption in JupyterLab: a
    MyST ``{figure}`` without an image, whose ``:enumerator:`` is the book's number (so that
    jupyterlab-myst shows "Figure 8.2: …" and resolves references to ``name``), tagged
    ``remove-cell`` so that a book built from it would leave it out."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", caption)), default=0))
    source = f"{fence}{{figure}}\n:label: {name}\n:enumerator: {number}\n\n{caption}\n{fence}"
    return nbformat.v4.new_markdown_cell(
        source, id=cell_id, metadata={"tags": ["remove-cell"], CAPTION_OF: name})


def unnumbered_proofs(text: str) -> str:
    """``text`` with ``:nonumber:`` on every ``{prf:proof}`` that lacks it: the book's proofs
    are unnumbered ("Proof"), as sphinx-proof makes them, but jupyterlab-myst numbers a proof
    ("Proof 8.1") unless told not to, and sphinx-proof's proof refuses the option."""

    def proof(match):
        options = match["options"]
        if re.search(r"^:(nonumber|enumerated):", options, re.M):
            return match[0]
        return match[0][:len(match[0]) - len(options)] + ":nonumber:\n" + options

    return _PROOF.sub(proof, text)


def lab_edition(notebook, chapter: str, toc: Path | None = None):
    """A copy of ``notebook``, the chapter named ``chapter``, as JupyterLab should show it
    (``chapters.zip``, the student editions): after each figure's code cell a caption cell
    (:func:`caption_cell`) with the book's number (:func:`figure_numbers`), since
    jupyterlab-myst ignores myst-nb's figure metadata (jupyterlab-myst issue 176), and every
    proof unnumbered (:func:`unnumbered_proofs`). A notebook not in the book keeps its figures
    as they are; applied twice, it adds nothing more."""
    edition = nbformat.from_dict(notebook)  # a deep copy: the input is left as it was
    numbers = figure_numbers(edition, chapter, toc)
    cells = []
    for i, cell in enumerate(edition.cells):
        if cell.cell_type == "markdown" and CAPTION_OF not in cell.metadata:
            cell.source = unnumbered_proofs(cell.source)
        cells.append(cell)
        name, caption = _figure(cell).get("name"), _figure(cell).get("caption")
        following = edition.cells[i + 1] if i + 1 < len(edition.cells) else None
        if (cell.cell_type == "code" and name in numbers and caption
                and (following is None or following.metadata.get(CAPTION_OF) != name)):
            cell_id = f"{cell.get('id', name)}-caption"[:64]
            cells.append(caption_cell(name, numbers[name], caption, cell_id))
    edition.cells = cells
    return edition
