"""*For instructors* (book/instructors.md) tells what there is to assign in two tables written
by hand: per chapter, and per exercise. They must say what the notebooks' metadata and the
course's variants say, so that the page and the code cannot drift apart."""

import random
import re
from pathlib import Path

import nbformat
import pytest

from course import hidden
from course.numbers import chapter_numbers, exercise_numbers

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
CHAPTERS = {name: number for name, number in chapter_numbers().items() if number}
CHAPTER_ROW = re.compile(r"^\| (\d+)\. \{doc\}`(\w+)` \| ([\d.]+)–([\d.]+): (\d+) \+ (\d+) "
                         r"\| ([^|]+) \|$", re.M)
EXERCISE_ROW = re.compile(r"^\| (\d+\.\d+) \| (\d+) \+ (\d+) \| (\d+): [^|]+ \|$", re.M)


def _notebook(chapter: str):
    return nbformat.read(ROOT / "book" / f"{chapter}.ipynb", as_version=4)


def _variants(make, draws: int = 500) -> int:
    """How many variants (by name) ``make`` draws from ``draws`` seeds."""
    return len({make(random.Random(seed)).name for seed in range(draws)})


def test_the_chapter_table_lists_every_chapter_in_order():
    assert [(int(n), name) for n, name, *_ in CHAPTER_ROW.findall(PAGE)] == \
        [(number, name) for name, number in CHAPTERS.items()]


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_the_tables_give_the_points_of_the_notebooks(chapter):
    notebook = _notebook(chapter)
    auto, written = notebook.metadata["exercises"], notebook.metadata.get("written", {})
    numbers = {label: number.removeprefix("Exercise ")
               for label, number in exercise_numbers(notebook, chapter).items()}
    assert set(numbers) == set(auto), "every exercise with points has a number"

    (row,) = [row for row in CHAPTER_ROW.findall(PAGE) if row[1] == chapter]
    _, _, first, last, auto_total, written_total, builds_on = row
    assert (first, last) == (min(numbers.values(), key=_key), max(numbers.values(), key=_key))
    assert int(auto_total) == sum(auto.values()), f"{chapter}: autograded points"
    assert int(written_total) == sum(written.values()), f"{chapter}: written points"
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    for earlier in re.findall(r"\b\d+\b", re.sub(r"\d+\.\d+", "", builds_on)):
        assert f"Chapter {earlier}" in text, f"{chapter} builds on Chapter {earlier} unsaid"

    label_of = {number: label for label, number in numbers.items()}
    rows = {label_of.get(number, number): (number, int(points),
                                           int(marks), int(count))
            for number, points, marks, count in EXERCISE_ROW.findall(PAGE)
            if number.split(".")[0] == str(CHAPTERS[chapter])}
    variants = hidden.load(chapter).VARIANTS
    assert rows == {label: (numbers[label], auto[label], written.get(label, 0),
                            _variants(variants[label]) if label in variants else 0)
                    for label in auto}


def _key(number: str) -> int:
    return int(number.split(".")[1])
