"""Student and instructor editions of the book's chapters, made with nbconvert.

An exercise is marked up once, with cell tags and metadata, and the same notebook serves the
HTML book, the students and the instructors:

* the notebook's metadata ``exercises`` maps each graded exercise's label to its points;
* a code cell tagged ``answer`` (metadata ``exercise: <label>``) holds the model answer,
  folded in the book (tag ``hide-cell``) and in JupyterLab (``jupyter.source_hidden``);
* a code cell tagged ``check`` (metadata ``exercise: <label>``) checks it with asserts whose
  messages tell a student what is wrong;
* a markdown cell tagged ``solution`` (a ``{solution}`` directive with ``:class: dropdown``,
  which Jupyter Book and jupyterlab-myst both show folded) holds the worked explanation;
* the notebook's metadata ``written`` maps the exercises that also ask for an explanation or a
  proof to the points of that written part, graded by hand.

The student edition drops the ``solution`` cells (nbconvert's ``TagRemovePreprocessor``),
replaces each answer with a stub, shown unfolded, that raises ``NotImplementedError``, and
writes the book's roles as plain text (citations as "Author (year)", references by their
titles), since no bibliography or other chapter is at hand; its exercise and statement
directives stay, which JupyterLab renders as boxes with jupyterlab-myst; its proofs are left
unnumbered and each figure gets its number and caption, as in the book
(:func:`course.numbers.lab_edition`). The checks stay, so students can test their work (an
exercise's checks say which exercise they check; the chapter's own are left as they are), and
each written part gets a Markdown cell tagged ``written`` for the answer. Stubs, checks and
written parts name each exercise by the book's number and its label, "Exercise 7.1
(ex-learn-threshold)" (:mod:`course.numbers`). Points are graded by hidden tests
(:mod:`course.hidden`), not by the checks. The instructor edition keeps everything. Both are
written without outputs. For graded work, a course seed (and a roster) hands out variants of
the exercises that the public book does not answer (:mod:`course.variants`). Command line::

    python -m course.assignments book/*.ipynb --out _build/assignments \\
        [--course-seed N [--roster students.csv]]
"""

import argparse
import csv
import hashlib
import json
import math
import os
import re
import unicodedata
from functools import cache
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearOutputPreprocessor, Preprocessor, TagRemovePreprocessor

from course import hidden as hidden_tests
from course.numbers import box_numbers, exercise_numbers, figure_numbers, lab_edition, numbered
from course.variants import (
    VARIANT,
    apply_variants,
    chapter_variants,
    course_seed_option,
    edition_name,
    read_roster,
)

ANSWER, CHECK, SOLUTION, WRITTEN = "answer", "check", "solution", "written"
GRADED_VARIANT = "graded"  # a student edition's VARIANT: that it is one, not which
# metadata of a student edition of variants: the name of its edition (course.variants.
# edition_name, a hash of the text it replaces, which the edition shows anyway), so that the
# grader sees a wrong course seed or a forgotten roster before it grades
EDITION = "course_edition"
# metadata of an instructor edition: a digest of its cells' text (sources_digest), so that the
# grader refuses a reference edited after it was made
SOURCES = "course_sources"
FOLDED = "hide-cell"  # myst-nb's tag for a cell folded behind a button
BIBLIOGRAPHY = Path(__file__).resolve().parents[1] / "book" / "references.bib"


def exercise_points(notebook: nbformat.NotebookNode) -> dict[str, float]:
    """The graded exercises of a notebook: ``{label: points}`` from its metadata, in the
    order in which their cells appear."""
    return _points(notebook, "exercises")


def written_points(notebook: nbformat.NotebookNode) -> dict[str, float]:
    """The written parts graded by hand: ``{label: points}`` from the metadata ``written``."""
    return _points(notebook, WRITTEN)


def _points(notebook, key: str) -> dict[str, float]:
    points = notebook.metadata.get(key, {})
    if not isinstance(points, dict) or not all(
            isinstance(p, int | float) and not isinstance(p, bool) and 0 < p < math.inf
            for p in points.values()):
        raise ValueError(f"notebook metadata {key!r} must map labels to positive, finite "
                         f"points, got {points!r}")
    order = [cell.metadata.get("exercise") for cell in notebook.cells]
    return dict(sorted(points.items(),
                       key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


def tagged(notebook: nbformat.NotebookNode, tag: str, label: str,
           cell_type: str = "code") -> list[int]:
    """Indices of the cells of ``cell_type`` tagged ``tag`` that belong to exercise ``label``."""
    return [i for i, cell in enumerate(notebook.cells)
            if cell.cell_type == cell_type and tag in cell.metadata.get("tags", [])
            and cell.metadata.get("exercise") == label]


class StubAnswers(Preprocessor):
    """Replace every ``answer`` cell by a stub that raises ``NotImplementedError``, unfolded
    (the book folds the model answer, in the HTML and in JupyterLab), and name the exercise
    of every ``check`` cell of an exercise (metadata ``exercise``), before it and when it
    passes; the chapter's own checks, of no exercise, are left as they are. ``numbers`` maps
    labels to the book's numbers (:func:`course.numbers.exercise_numbers`)."""

    def __init__(self, numbers: dict[str, str], **kwargs):
        super().__init__(**kwargs)
        self.numbers = numbers

    def preprocess_cell(self, cell, resources, index):
        tags = cell.metadata.get("tags", [])
        label = cell.metadata.get("exercise")
        name = numbered(label or "this exercise", self.numbers)
        if cell.cell_type == "code" and ANSWER in tags:
            cell.source = (f"# Your answer to {name}; then run the check below.\n"
                           f'raise NotImplementedError("{name}: not answered yet")')
            cell.metadata.tags = [tag for tag in cell.metadata.tags if tag != FOLDED]
            cell.metadata.pop("jupyter", None)
        elif cell.cell_type == "code" and CHECK in tags and label:  # not the chapter's own
            cell.source = f'# Checks {name}\n{cell.source}\nprint("{name}: the checks pass")'
        return cell, resources


_EXERCISE = re.compile(r"```\{exercise\}[ \t]*(?P<title>[^\n]*)\n(?P<body>.*?)\n```", re.S)
_ROLE = re.compile(r"\{(?P<role>cite:t|cite:p|prf:ref|doc|ref|numref)\}`(?P<target>[^`]*)`")
CHAPTERS = BIBLIOGRAPHY.parent


@cache
def _bibliography() -> str:
    return BIBLIOGRAPHY.read_text()


def _braced(text: str, start: int, close: str = "}") -> int:
    """The index just after the ``close`` that ends the group opened before ``start``, braces
    nested within counted (a ``"``-quoted value ends at a ``"`` outside braces)."""
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == close and depth == 0:
            return i + 1
        depth += (char == "{") - (char == "}")
        i += 1
    raise ValueError(f"references.bib: a group opened before {text[start:start + 40]!r} "
                     "does not end")


def _bib_value(text: str, i: int) -> tuple[str, int]:
    """The value of a BibTeX field that starts at ``text[i]``: ``{…}``, ``"…"`` or a bare
    number or word, parts joined with ``#`` concatenated; and the index after it."""
    parts = []
    while True:
        i = len(text) - len(text[i:].lstrip())
        if text.startswith("{", i) or text.startswith('"', i):
            end = _braced(text, i + 1, "}" if text[i] == "{" else '"')
            parts.append(text[i + 1:end - 1])
        else:
            bare = re.match(r"[^\s,#}]+", text[i:])
            if not bare:
                raise ValueError(f"references.bib: no value at {text[i:i + 40]!r}")
            end = i + bare.end()
            parts.append(bare[0])
        i = len(text) - len(text[end:].lstrip())
        if not text.startswith("#", i):
            return "".join(parts), i
        i += 1


@cache
def bib_entries() -> dict[str, dict[str, str]]:
    """The entries of the book's bibliography (:func:`parse_bibtex`)."""
    return parse_bibtex(_bibliography())


def parse_bibtex(text: str) -> dict[str, dict[str, str]]:
    """``{key: {field: value}}`` for every entry of the BibTeX ``text``, field names in lower
    case, values as written but without their outer braces or quotes: ``year = {2022}``,
    ``year = "2022"`` and ``year = 2022`` are all "2022", and parts joined with ``#`` are
    concatenated. A ``ValueError`` names an entry that cannot be read."""
    entries, at = {}, 0
    while entry := re.compile(r"@(\w+)\s*\{\s*").search(text, at):
        if entry[1].lower() in ("comment", "string", "preamble"):
            at = _braced(text, entry.end())
            continue
        key = re.compile(r"([^,\s]+)\s*,").match(text, entry.end())
        if not key:
            raise ValueError(f"references.bib: no key at {text[entry.start():][:40]!r}")
        fields, i = {}, key.end()
        while True:
            i = len(text) - len(text[i:].lstrip(" \t\r\n,"))
            if i >= len(text) or text[i] == "}":
                break
            name = re.match(r"([\w-]+)\s*=\s*", text[i:])
            if not name:
                raise ValueError(f"references.bib: entry {key[1]}: no field at "
                                 f"{text[i:i + 40]!r}")
            fields[name[1].lower()], i = _bib_value(text, i + name.end())
        entries[key[1]], at = fields, i + 1
    return entries


# TeX's accents as Unicode combining marks: the symbol accents (\'e, \"o) and the letter
# accents, which need a brace or a space before their letter (\c{c}, \v s).
_ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303",
            "=": "\u0304", ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b",
            "c": "\u0327", "k": "\u0328", "r": "\u030a", "d": "\u0323", "b": "\u0331"}
_LETTERS = {"aa": "å", "AA": "Å", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "ss": "ß",
            "o": "ø", "O": "Ø", "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ"}
_ACCENTED = r"(\\[ij](?![a-zA-Z])|[a-zA-Z])"  # a letter, or a dotless i or j


def _unicode(text: str) -> str:
    """A BibTeX field as Unicode text: accented letters (``H{\\aa}stad`` is Håstad,
    ``Sch{\\"u}tzenberger``, ``Sch\\"{u}tzenberger`` and ``Sch\\"utzenberger`` are
    Schützenberger, ``\\c{c}`` is ç, ``\\'{\\i}`` í), escaped signs (``\\&``), dashes and ties;
    then the braces go."""

    def accent(match):
        letter = (match[2] or match[3]).lstrip("\\")
        return letter + _ACCENTS[match[1]]

    text = re.sub(r"\\([\"'`^~=.])\s*(?:\{\s*" + _ACCENTED + r"\s*\}|" + _ACCENTED + ")",
                  accent, text)
    text = re.sub(r"\\([uvHckrdb])(?:\s*\{\s*" + _ACCENTED + r"\s*\}|\s+" + _ACCENTED + ")",
                  accent, text)
    text = re.sub(r"\\(aa|AA|ae|AE|oe|OE|ss|[oOlLij])(?![a-zA-Z])(?:\{\}|\s*)",
                  lambda m: _LETTERS[m[1]], text)
    text = re.sub(r"\\([&%$#_{}])", r"\1", text).replace("---", "—").replace("--", "–")
    text = re.sub(r"(?<!\\)~", "\u00a0", text)
    return unicodedata.normalize("NFC", re.sub(r"(?<!\\)[{}]", "", text))


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` (a regular expression) where no brace is open."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "{") - (char == "}")
        if depth == 0 and (found := re.match(separator, text[i:])):
            if i >= start:
                parts.append(text[start:i])
                start = i + found.end()
    return [*parts, text[start:]]


def _last_name(name: str) -> str:
    """The last name, with its "von" part, of a BibTeX name ("Last, First", "First von Last",
    or ``{Corporate Name}``), as Unicode."""
    parts = _split_top(name.strip(), ",")
    if len(parts) > 1:
        return _unicode(parts[0]).strip()
    words = [w for w in _split_top(name.strip(), r"\s+") if w]
    von = next((i for i, w in enumerate(words[:-1]) if i and w[:1].islower()), len(words) - 1)
    return _unicode(" ".join(words[von:])).strip()


def _author_year(key: str) -> tuple[str, str] | None:
    """("Chiang and Cholak", "2022") for a key of the book's bibliography, or None."""
    fields = bib_entries().get(key)
    if fields is None:
        return None
    people = fields.get("author") or fields.get("editor") or key
    names = [_last_name(n) for n in _split_top(" ".join(people.split()), r" and ")]
    if names[-1] == "others":
        names = names[:1] + ["others"]
    who = " and ".join(names) if len(names) < 3 and "others" not in names else (
        f"{names[0]} et al.")
    year = _unicode(fields.get("year", "")).strip() or (
        re.match(r"\d{4}", _unicode(fields.get("date", "")).strip()) or [""])[0]
    return who, year


def _citation(target: str, in_text: bool) -> str:
    """"Chiang and Cholak (2022, §4)" for a citation of one or more keys of the book's
    bibliography, ``key``, ``key1,key2`` or ``key{post text}`` (sphinxcontrib-bibtex's syntax
    for the section cited); the target itself where a key is unknown."""
    parts = re.fullmatch(r"([^{]*)(?:\{(.*)\})?", target, re.S)
    keys, post = parts.groups() if parts else (target, None)
    works = [_author_year(key.strip()) for key in keys.split(",")]
    if None in works:
        return target
    post = f", {' '.join(post.split())}" if post else ""
    if in_text:
        return "; ".join(f"{who} ({year}{post})" for who, year in works)
    return "(" + "; ".join(f"{who}, {year}" for who, year in works) + post + ")"


@cache
def _chapter_title(name: str) -> str:
    """The title of the book's chapter ``name``, in italics (or the name)."""
    notebook, page = CHAPTERS / f"{name}.ipynb", CHAPTERS / f"{name}.md"
    if notebook.is_file():
        text = "\n".join(c.source for c in nbformat.read(notebook, as_version=4).cells)
    else:
        text = page.read_text() if page.is_file() else ""
    heading = re.search(r"^# (.+)$", text, re.M)
    return f"*{heading.group(1) if heading else name}*"


def exercise_statements(notebook) -> dict[str, str]:
    """``{label: the exercise directive}`` for every exercise stated in ``notebook``."""
    return {re.search(r"^:label: ([\w-]+)$", m["body"], re.M)[1]: m[0]
            for cell in notebook.cells if cell.cell_type == "markdown"
            for m in _EXERCISE.finditer(cell.source) if ":label:" in m["body"]}


def statement_titles(notebook, chapter: str | None = None) -> dict[str, str]:
    """``{label: "Lemma 5.1"}`` for the sphinx-proof statements and the exercises of
    ``notebook``, the chapter named ``chapter`` (its file stem), as the book writes a reference
    to them; without a chapter, or for a box the book does not number, ``'lemma “Its
    title”'``; and ``{name: "Fig. 8.2"}`` for its figures
    (:func:`course.numbers.figure_numbers`)."""
    numbers = dict(box_numbers(notebook, chapter)) if chapter else {}
    titles = {label: numbers.get(label) or (f"{kind} “{title}”" if title else kind)
              for kind, title, label in
              re.findall(r"```\{(?:prf:)?(\w+)\}[ \t]*([^\n]*)\n:label: ([\w-]+)",
                         "\n".join(c.source for c in notebook.cells))}
    figures = figure_numbers(notebook, chapter) if chapter else {}
    return {**titles, **{name: f"Fig. {number}" for name, number in figures.items()}}


def plain_roles(text: str, titles: dict[str, str]) -> str:
    """``text`` with the book's roles as plain text: citations as "Author (year)", a reference
    with a text by its text (a ``{numref}``'s ``%s`` by the number), references to chapters by
    their titles and to statements and figures by ``titles`` (see :func:`statement_titles`)."""

    def role(match):
        name, target = match["role"], match["target"]
        if name.startswith("cite"):
            return _citation(target, in_text=name == "cite:t")
        if shown := re.match(r"(.*?)\s*<(.*)>$", target):  # {ref}`the text <label>`
            number = titles.get(shown[2], "").removeprefix("Fig. ")
            return shown[1].replace("%s", number) if name == "numref" else shown[1]
        if name == "doc":
            return _chapter_title(target)
        return titles.get(target, f"*{target}*")

    return _ROLE.sub(role, text)


def plain_markdown(text: str, titles: dict[str, str]) -> str:
    """``text`` as plain Markdown: exercise directives as headings, roles as plain text
    (:func:`plain_roles`)."""

    def exercise(match):
        body = re.sub(r"^:\w+:.*\n", "", match["body"], flags=re.M).strip()
        return f"### Exercise: {match['title']}\n\n{body}"

    return plain_roles(_EXERCISE.sub(exercise, text), titles)


class PlainRoles(Preprocessor):
    """Write the roles of every Markdown cell of the chapter named ``chapter`` as plain text
    (:func:`plain_roles`)."""

    def __init__(self, chapter: str | None = None, **kw):
        super().__init__(**kw)
        self.chapter = chapter

    def preprocess(self, notebook, resources):
        titles = statement_titles(notebook, self.chapter)
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                cell.source = plain_roles(cell.source, titles)
        return notebook, resources


def points_text(points: float) -> str:
    """"1 point", "2 points"."""
    return f"{points:g} point{'' if points == 1 else 's'}"


def written_prompt(name: str, points: float) -> str:
    """The text of a written-answer cell before the student replaces it; ``name`` is the
    exercise's (:func:`course.numbers.numbered`)."""
    return (f"**Your written answer to {name}** ({points_text(points)}, graded by hand): replace "
            "this text. Markdown and $\\LaTeX$ math work here.")


class WrittenAnswerCells(Preprocessor):
    """Add a Markdown cell tagged ``written`` for each written part, where its exercise's
    cells end; ``numbers`` as for :class:`StubAnswers`."""

    def __init__(self, numbers: dict[str, str], **kwargs):
        super().__init__(**kwargs)
        self.numbers = numbers

    def preprocess(self, notebook, resources):
        for label, points in written_points(notebook).items():
            mine = [i for i, c in enumerate(notebook.cells) if c.metadata.get("exercise") == label]
            if not mine:
                raise ValueError(f"written: exercise {label} has no cells in the notebook")
            cell = nbformat.v4.new_markdown_cell(
                written_prompt(numbered(label, self.numbers), points),
                metadata={"tags": [WRITTEN], "exercise": label})
            notebook.cells.insert(mine[-1] + 1, cell)
        return notebook, resources


def _apply(notebook, *preprocessors) -> nbformat.NotebookNode:
    notebook = nbformat.from_dict(notebook)  # a deep copy: the input is left as it was
    for preprocessor in preprocessors:
        notebook, _ = preprocessor.preprocess(notebook, {})
    return notebook


def student_edition(notebook: nbformat.NotebookNode,
                    chapter: str | None = None) -> nbformat.NotebookNode:
    """The notebook without solutions: answers stubbed, checks kept, no outputs, as JupyterLab
    should show it (:func:`course.numbers.lab_edition`: figures captioned, proofs unnumbered).
    ``chapter`` (the notebook's file stem) gives the exercises and figures the book's numbers;
    without it, or for a notebook not in the book, exercises go by their labels."""
    numbers = exercise_numbers(notebook, chapter) if chapter else {}
    remove = TagRemovePreprocessor(remove_cell_tags={SOLUTION}, enabled=True)
    edition = _apply(lab_edition(notebook, chapter), ClearOutputPreprocessor(), remove,
                     StubAnswers(numbers), PlainRoles(chapter), WrittenAnswerCells(numbers))
    if VARIANT in edition.metadata:  # that it is a variant, for the grader; not which one
        edition.metadata[VARIANT] = GRADED_VARIANT
    edition.metadata.pop(SOURCES, None)
    return edition


def instructor_edition(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook with its solutions and checks, no outputs, and the digest of its cells'
    text in its metadata (:data:`SOURCES`)."""
    edition = _apply(notebook, ClearOutputPreprocessor())
    edition.metadata[SOURCES] = sources_digest(edition)
    return edition


def sources_digest(notebook) -> str:
    """A digest of the kind and text of every cell of ``notebook`` (not its outputs or
    metadata): what an instructor edition holds when it is written."""
    cells = [[cell.cell_type, cell.source] for cell in notebook.cells]
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def write_editions(notebooks, out: Path, course_seed: int | None = None, roster=None,
                   hidden=None) -> list[Path]:
    """Write ``out/student/<name>.ipynb`` and ``out/instructor/<name>.ipynb`` for every
    notebook with graded exercises; returns the student editions written. ``notebooks`` is a
    list of paths or one path; a path is a ``str`` or a :class:`~pathlib.Path`.

    With a ``course_seed`` the student editions are those of the course's variant of each
    chapter (:mod:`course.variants`; the variants come from the hidden tests' modules in
    ``hidden``, default :mod:`course.hidden`'s folder), and with a ``roster`` (a file of
    student names) each student's own, in ``out/student/<student>/<name>.ipynb``. The
    instructor edition stays the book's (the grader's ``--reference``, from which it makes
    every variant), and ``out/instructor/variants/<chapter>-<edition>.ipynb`` holds the
    reference answers of each edition handed out (:func:`course.variants.edition_name`),
    listed with its students in ``out/instructor/variants.csv``."""
    if roster is not None and course_seed is None:
        raise ValueError("roster: a roster needs a course_seed (--course-seed)")
    out = as_path(out, "out")
    if isinstance(notebooks, str | os.PathLike):
        notebooks = [notebooks]
    notebooks = [as_path(path, "notebooks") for path in notebooks]
    students = read_roster(roster) if roster is not None else [""]
    written, handed_out = [], []
    for path in notebooks:
        notebook = read_notebook(path, "notebooks")
        if not exercise_points(notebook):
            continue
        _write(instructor_edition(notebook), out / "instructor" / path.name)
        if course_seed is None:
            written.append(_write(student_edition(notebook, path.stem),
                                   out / "student" / path.name))
            continue
        make_variants = hidden_tests.load(path.stem, hidden).VARIANTS
        editions = {}
        for student in students:
            variants = chapter_variants(make_variants, path.stem, course_seed, student)
            name = edition_name(variants)
            if name not in editions:
                editions[name] = apply_variants(notebook, variants)
                _write(instructor_edition(editions[name]),
                       out / "instructor" / "variants" / f"{path.stem}-{name}.ipynb")
            folder = out / "student" / student if student else out / "student"
            edition = student_edition(editions[name], path.stem)
            edition.metadata[EDITION] = name
            written.append(_write(edition, folder / path.name))
            handed_out.append([student, path.stem, name,
                               "; ".join(f"{label}: {v.name}" for label, v in variants.items())])
    if handed_out:
        with (out / "instructor" / "variants.csv").open("w", newline="") as file:
            csv.writer(file).writerows([["student", "chapter", "variant", "exercises"],
                                        *handed_out])
    return written


def as_path(value, name: str) -> Path:
    """``value`` (a ``str`` or a path) as a :class:`~pathlib.Path`; ``name`` names it in the
    ``TypeError`` for anything else."""
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"{name} must be a path (a str or a pathlib.Path), "
                        f"got {type(value).__name__}")
    return Path(value)


MAX_NOTEBOOK_BYTES = 16 * 2**20  # a chapter with all its outputs is under 2 MiB
MAX_CELLS = 5000  # a chapter has under 200
# JSON objects and arrays in a notebook (a chapter with its outputs has under 5,000): nbformat
# takes some 2 KiB of memory for each, so 16 MiB of empty objects would take 7 GiB
MAX_JSON_NODES = 100_000
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def read_notebook(path: Path, name: str) -> nbformat.NotebookNode:
    """The notebook at ``path``, or a ``ValueError`` that names ``name`` and the path: also for
    a file over :data:`MAX_NOTEBOOK_BYTES` or with more than :data:`MAX_JSON_NODES` JSON
    objects and arrays (both refused before nbformat reads it, since reading takes some fifty
    times its size in memory, and more for many small objects) or a notebook of more than
    :data:`MAX_CELLS` cells."""
    if not path.is_file():
        raise ValueError(f"{name}: no such file {path}")
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"{name}: {path} is {size / 2**20:.0f} MiB, more than the "
                         f"{MAX_NOTEBOOK_BYTES // 2**20} MiB a notebook may have here")
    data = path.read_bytes()[:MAX_NOTEBOOK_BYTES + 1]  # it may have grown since
    outside_strings = JSON_STRING.sub(b"", data)
    nodes = outside_strings.count(b"{") + outside_strings.count(b"[")
    if nodes > MAX_JSON_NODES:
        raise ValueError(f"{name}: {path} holds {nodes:,} JSON objects and arrays, more than the "
                         f"{MAX_JSON_NODES:,} a notebook may have here")
    try:
        notebook = nbformat.reads(data.decode(), as_version=4)
    except Exception as error:  # nbformat raises several kinds for a file that is no notebook
        raise ValueError(f"{name}: {path} is not a Jupyter notebook ({error})") from None
    if len(notebook.cells) > MAX_CELLS:
        raise ValueError(f"{name}: {path} has {len(notebook.cells)} cells, more than the "
                         f"{MAX_CELLS} cells a notebook may have here")
    return notebook


def _write(notebook, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", help="chapters (.ipynb) with graded exercises")
    parser.add_argument("--out", type=Path, default=Path("_build/assignments"))
    parser.add_argument("--course-seed", type=course_seed_option,
                        help="hand out the course's variant of every graded exercise")
    parser.add_argument("--roster", type=Path,
                        help="with --course-seed: a file of student names, one per line; "
                             "each student gets a variant of their own")
    parser.add_argument("--hidden", type=Path, help="folder of the hidden tests and variants")
    args = parser.parse_args(argv)
    try:
        written = write_editions(args.notebooks, args.out, args.course_seed, args.roster,
                                 args.hidden)
    except ValueError as error:
        parser.exit(2, f"course.assignments: {error}\n")
    for path in written:
        print(f"wrote {path}")
    print(f"and the instructor editions in {args.out / 'instructor'}")


if __name__ == "__main__":
    main()
