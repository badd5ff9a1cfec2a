"""Student and instructor editions (companion.assignments) and the autograder (companion.grade),
on every chapter of the book and on small notebooks made here."""

import json
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from companion.assignments import (
    ANSWER,
    CHECK,
    SOLUTION,
    exercise_points,
    instructor_edition,
    student_edition,
    tagged,
    write_editions,
)
from companion.grade import grade, table

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


@pytest.fixture(scope="module")
def editions(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("assignments")
    write_editions(CHAPTERS, out)
    return out


def code(source: str, tag: str | None = None, label: str | None = None):
    cell = new_code_cell(source)
    if tag:
        cell.metadata.update(tags=[tag], exercise=label)
    return cell


def small_notebook(path: Path, cells, points) -> Path:
    notebook = new_notebook(cells=cells, metadata={"exercises": points})
    nbformat.write(notebook, path)
    return path


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_has_no_solutions(chapter):
    book = nbformat.read(chapter, as_version=4)
    student = student_edition(book)
    points = exercise_points(book)
    assert points, "every chapter has graded exercises"
    assert not any(SOLUTION in tags(cell) for cell in student.cells)
    text = "\n".join(cell.source for cell in student.cells)
    assert "solution-start" not in text and "solution-end" not in text
    for label in points:
        for i in tagged(student, ANSWER, label):
            assert "raise NotImplementedError" in student.cells[i].source
        checks = [student.cells[i].source for i in tagged(student, CHECK, label)]
        assert checks == [book.cells[i].source for i in tagged(book, CHECK, label)]
    assert instructor_edition(book).cells == book.cells  # and the book is left as it was


@pytest.mark.slow  # runs a whole chapter in a kernel
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_instructor_edition_scores_full_marks(chapter, editions):
    scores = grade(editions / "instructor" / chapter.name)
    assert all(s.score == s.points for s in scores), table(scores)


@pytest.mark.slow  # runs a whole chapter in a kernel
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_untouched_student_edition_scores_zero(chapter, editions):
    scores = grade(editions / "student" / chapter.name,
                   reference=editions / "instructor" / chapter.name)
    assert [s.label for s in scores] == list(exercise_points(nbformat.read(chapter, 4)))
    for s in scores:
        assert s.score == 0 and "NotImplementedError" in s.message, table(scores)


@pytest.mark.slow  # runs a whole chapter in a kernel
def test_a_wrong_answer_loses_exactly_its_points(editions, tmp_path):
    """A previous-position layer that attends to position i instead of i - 1."""
    reference = editions / "instructor" / "recognizers.ipynb"
    notebook = nbformat.read(reference, as_version=4)
    (answer,) = tagged(notebook, ANSWER, "ex-rec-previous")
    right = "W_Q = [[0, -2, 2, 0, 0], [0, -1, 0, 0, 0]]"
    assert right in notebook.cells[answer].source
    notebook.cells[answer].source = notebook.cells[answer].source.replace(
        right, "W_Q = [[0, 0, 2, 0, 0], [0, -1, 0, 0, 0]]")  # q_i = [2i, -1]: peaks at j = i
    nbformat.write(notebook, tmp_path / "wrong.ipynb")
    scores = {s.label: s for s in grade(tmp_path / "wrong.ipynb", reference=reference)}
    assert scores.pop("ex-rec-previous").score == 0
    assert all(s.score == s.points for s in scores.values())


def test_a_loop_and_an_unrelated_error_do_not_stop_grading(tmp_path):
    path = small_notebook(tmp_path / "loop.ipynb", [
        code("while True:\n    pass"),
        code("raise RuntimeError('unrelated')"),
        code("x = 2", ANSWER, "ex-a"),
        code("assert x == 2, 'x should be 2'", CHECK, "ex-a"),
        code("y = 3", ANSWER, "ex-b"),
        code("assert y == 2, 'y should be 2'", CHECK, "ex-b"),
        code("while True:\n    pass", CHECK, "ex-c"),
    ], {"ex-a": 2, "ex-b": 1, "ex-c": 1})
    start = time.monotonic()
    scores = grade(path, timeout=2)
    assert time.monotonic() - start < 60
    assert [(s.label, s.score) for s in scores] == [("ex-a", 2), ("ex-b", 0), ("ex-c", 0)]
    assert scores[1].message == "AssertionError: y should be 2"
    assert "longer than 2 s" in scores[2].message


def test_the_reference_checks_replace_edited_ones(tmp_path):
    check = "assert x == 2, 'x should be 2'"
    reference = small_notebook(tmp_path / "reference.ipynb",
                               [code("x = 2", ANSWER, "ex-a"), code(check, CHECK, "ex-a")],
                               {"ex-a": 1})
    edited = small_notebook(tmp_path / "edited.ipynb",
                            [code("x = 3", ANSWER, "ex-a"), code("pass", CHECK, "ex-a")],
                            {"ex-a": 100})
    assert grade(edited)[0].score == 100
    (score,) = grade(edited, reference=reference)
    assert (score.score, score.points, score.message) == (0, 1, "AssertionError: x should be 2")


def test_a_missing_check_and_a_dead_kernel_are_reported(tmp_path):
    path = small_notebook(tmp_path / "dies.ipynb", [
        code("x = 1", ANSWER, "ex-a"),
        code("import os\nos._exit(1)"),
        code("assert x == 1, 'x'", CHECK, "ex-b"),
    ], {"ex-a": 1, "ex-b": 1})
    a, b = grade(path, timeout=20)
    assert a.score == 0 and "no check cell" in a.message
    assert b.score == 0 and "kernel died" in b.message


def test_bad_input_is_refused(tmp_path):
    with pytest.raises(ValueError, match="notebook"):
        grade(tmp_path / "missing.ipynb")
    empty = small_notebook(tmp_path / "empty.ipynb", [code("x = 1")], {})
    with pytest.raises(ValueError, match="no graded exercises"):
        grade(empty)
    with pytest.raises(ValueError, match="timeout"):
        grade(empty, timeout=0)
    bad = small_notebook(tmp_path / "bad.ipynb", [code("x = 1")], {"ex-a": "ten"})
    with pytest.raises(ValueError, match="exercises"):
        grade(bad)


def test_command_lines(tmp_path):
    out = tmp_path / "assignments"
    subprocess.run([sys.executable, "-m", "companion.assignments",
                    str(ROOT / "book" / "circuits.ipynb"), "--out", str(out)], check=True)
    assert (out / "student" / "circuits.ipynb").exists()
    assert (out / "instructor" / "circuits.ipynb").exists()
    notebook = small_notebook(tmp_path / "one.ipynb", [
        code("x = 2", ANSWER, "ex-a"), code("assert x == 2, 'x'", CHECK, "ex-a")], {"ex-a": 3})
    result = subprocess.run([sys.executable, "-m", "companion.grade", str(notebook), "--json"],
                            check=True, capture_output=True, text=True)
    (report,) = json.loads(result.stdout)
    assert (report["score"], report["max_score"]) == (3, 3)
    assert report["exercises"][0]["label"] == "ex-a"
