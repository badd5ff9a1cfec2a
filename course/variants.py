"""Variants of the graded exercises, so that the public book does not answer graded work.

As in PrairieLearn's randomized question variants, a graded exercise is the book's exercise
with other constants: another length, position, threshold, measure or convention, chosen so that
the book's model answer is wrong for it. A chapter's module of hidden tests
(``course/hidden/<chapter>.py``) defines ``VARIANTS``, which maps each graded exercise's label
to a function of a :class:`random.Random` that returns a :class:`Variant`: text of the book's
exercise (its statement, answer, check and solution cells) and what replaces it, and the
parameters its hidden tests need.

A course draws its variant of each exercise from a *course seed* alone (everyone gets the
same), or from the course seed and a student's name on a roster (each student their own):
:func:`chapter_variants` seeds each exercise's draw with both, the same on every machine, so
that :mod:`course.assignments` writes each student's edition and :mod:`course.grade` grades
each student against their own variant without a record of who got what. The ranges are wide,
so two courses, or two students, rarely share an edition; :func:`edition_name` names an
edition by what it changed, and the students of one edition share its reference run.
"""

import csv
import hashlib
import json
import numbers
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

VARIANT = "course_variant"  # notebook metadata: the variant of each exercise

STUDENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
# First lines that a roster's header may hold, not a student: only "student" is accepted.
HEADERS = {"student", "students", "name", "names", "student name", "username", "user", "login",
           "email", "e-mail", "id", "student id", "student_id", "sis id", "sis user id"}


@dataclass(frozen=True)
class Variant:
    """One graded exercise's variant: ``replace`` maps text of the book's exercise to the
    variant's, in order; ``params`` are what its hidden tests need; ``name`` says what changed,
    for the instructor."""

    name: str
    replace: dict[str, str]
    params: dict = field(default_factory=dict)


def checked_course_seed(course_seed) -> int:
    """``course_seed`` as an ``int`` (a NumPy integer too, so that the seed strings hold "2",
    not "2.0"); raises ``ValueError`` unless it is a non-negative integer."""
    if isinstance(course_seed, bool) or not isinstance(course_seed, numbers.Integral) or \
            course_seed < 0:
        raise ValueError(f"course_seed must be a non-negative integer, got {course_seed!r}")
    return int(course_seed)


MIN_COURSE_SEED = 2**32  # the least course seed the command lines take


def course_seed_option(text: str) -> int:
    """The value of ``--course-seed``: a whole number of at least :data:`MIN_COURSE_SEED`. The
    course seed is the course's secret: from it and a student's name, anyone makes that
    student's edition (and its reference answers), and a smaller seed (a year, say) is found
    from one student's editions by trying every seed, in seconds."""
    import argparse
    if not re.fullmatch(r"\d+", text, re.ASCII) or int(text) < MIN_COURSE_SEED:
        raise argparse.ArgumentTypeError(
            f"must be a secret whole number of at least 2**32 (one student's editions give a "
            f"smaller one away in seconds, by trying every seed), got {text!r}; draw one with "
            "python3 -c 'import secrets; print(secrets.randbits(64))' and keep it with the "
            "instructor editions")
    return int(text)


def chapter_variants(make_variants: dict, chapter: str, course_seed: int,
                     student: str = "") -> dict[str, Variant]:
    """``{label: Variant}``: the variant of each exercise of ``chapter`` that the course seed
    (and ``student``, for a roster) gives, from its module's ``VARIANTS`` (``make_variants``),
    each drawn with a generator seeded by course seed, student, chapter and label."""
    course_seed = checked_course_seed(course_seed)
    if not isinstance(student, str):
        raise TypeError(f"student must be a str, got {type(student).__name__}")
    return {label: make(random.Random(f"{course_seed}/{student}/{chapter}/{label}"))
            for label, make in make_variants.items()}


def drawable(make, draws: int = 500) -> list:
    """Every variant (one per name) that ``make``, a function of a ``random.Random``, draws
    from the seeds ``0 .. draws - 1``: what a course can hand out, for tests to check."""
    variants = {}
    for seed in range(draws):
        variant = make(random.Random(seed))
        variants.setdefault(variant.name, variant)
    return list(variants.values())


def edition_name(variants: dict[str, Variant]) -> str:
    """A short name for the edition that ``variants`` make: a hash of what they replace, the
    same for the same text."""
    text = json.dumps({label: [v.name, v.replace] for label, v in variants.items()},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def edition_key(variants: dict[str, Variant]) -> str | None:
    """The :func:`edition_name` of ``variants``, or ``None`` for the book's own exercises (no
    variants): how the grader files an edition's reference."""
    return edition_name(variants) if variants else None


def _directive(kind: str, label: str) -> re.Pattern:
    """The ``{exercise}`` directive with ``:label: label``, or the ``{solution} label`` one."""
    head = (rf"```\{{exercise\}}[^\n]*\n(?:[^\n]*\n)*?:label: {re.escape(label)}\n" if kind ==
            "exercise" else rf"```\{{solution\}} {re.escape(label)}\n")
    return re.compile(head + r".*?\n```", re.S)


def apply_variants(notebook, variants: dict[str, Variant]) -> nbformat.NotebookNode:
    """A copy of ``notebook`` with each exercise of ``variants`` rewritten as its variant: the
    replacements apply to the exercise's directive, its solution directive and its cells
    (metadata ``exercise``). Raises ``ValueError`` where a replaced text is not in the
    exercise (the book changed under the variant). The copy's metadata ``course_variant``
    names each exercise's variant."""
    notebook = nbformat.from_dict(notebook)
    for label, variant in variants.items():
        parts = []  # (cell, match or None): the texts the variant may rewrite
        for cell in notebook.cells:
            if cell.metadata.get("exercise") == label:
                parts.append((cell, None))
            elif cell.cell_type == "markdown":
                parts += [(cell, m) for kind in ("exercise", "solution")
                          for m in _directive(kind, label).finditer(cell.source)]
        if not any(m is not None and "{exercise}" in m[0] for _, m in parts):
            raise ValueError(f"variant of {label}: the notebook states no such exercise")
        for old in variant.replace:
            if not any(old in (m[0] if m else cell.source) for cell, m in parts):
                raise ValueError(f"variant {variant.name!r} of {label}: {old!r} is not in the "
                                 "exercise")
        for cell, match in parts:
            text = match[0] if match else cell.source
            for old, new in variant.replace.items():
                text = text.replace(old, new)
            cell.source = cell.source.replace(match[0], text) if match else text
    notebook.metadata[VARIANT] = {label: v.name for label, v in variants.items()}
    return notebook


def read_roster(path: Path) -> list[str]:
    """The students of a roster (UTF-8, with or without a byte-order mark, as spreadsheets save
    it): one name per line, or a CSV's first column. A first line ``student`` is a header and
    is skipped, as are blank lines; a CSV of several columns must start with a header whose
    first column is ``student``. Names are letters, digits and ``._@+-``, each once."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"roster must be a path (a str or a pathlib.Path), "
                        f"got {type(path).__name__}")
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"roster {path} is not UTF-8 text ({error})") from None
    names = []
    for number, row in enumerate(csv.reader(text.splitlines()), 1):
        name = row[0].strip() if row else ""
        if number == 1 and (len(row) > 1 or name.lower() in HEADERS):
            if name.lower() != "student":
                raise ValueError(f"roster {path}, line 1: the header must name the first "
                                 f"column 'student', got {name!r}; a CSV of several columns "
                                 "must start with that header")
            continue
        if not name:
            continue
        if not STUDENT_NAME.fullmatch(name):
            raise ValueError(f"roster {path}, line {number}: {name!r} is not a student name "
                             "(letters, digits and ._@+- only)")
        if name in names:
            raise ValueError(f"roster {path}, line {number}: {name!r} is listed twice")
        names.append(name)
    if not names:
        raise ValueError(f"roster {path} lists no student")
    return names
