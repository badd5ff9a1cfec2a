"""Student and instructor editions (course.assignments) and the autograder (course.grade),
on every chapter of the book and on small notebooks made here."""

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course.assignments import (
    ANSWER,
    CHECK,
    SOLUTION,
    exercise_points,
    instructor_edition,
    student_edition,
    tagged,
    write_editions,
)
from course.grade import grade, grade_batch, sandbox_prefix, table, write_csv

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
    assert b.score == 0 and "exited with status 1" in b.message


def test_bad_input_is_refused(tmp_path):
    with pytest.raises(ValueError, match="notebook"):
        grade(tmp_path / "missing.ipynb")
    empty = small_notebook(tmp_path / "empty.ipynb", [code("x = 1")], {})
    with pytest.raises(ValueError, match="no graded exercises"):
        grade(empty)
    with pytest.raises(ValueError, match="timeout"):
        grade(empty, timeout=0)
    with pytest.raises(ValueError, match="memory_gb"):
        grade(empty, memory_gb=-1)
    (tmp_path / "text.ipynb").write_text("not a notebook")
    with pytest.raises(ValueError, match="not a Jupyter notebook"):
        grade(tmp_path / "text.ipynb")
    bad = small_notebook(tmp_path / "bad.ipynb", [code("x = 1")], {"ex-a": "ten"})
    with pytest.raises(ValueError, match="exercises"):
        grade(bad)


def test_command_lines(tmp_path):
    out = tmp_path / "assignments"
    subprocess.run([sys.executable, "-m", "course.assignments",
                    str(ROOT / "book" / "circuits.ipynb"), "--out", str(out)], check=True,
                   cwd=ROOT)
    assert (out / "student" / "circuits.ipynb").exists()
    assert (out / "instructor" / "circuits.ipynb").exists()
    notebook = small_notebook(tmp_path / "one.ipynb", [
        code("x = 2", ANSWER, "ex-a"), code("assert x == 2, 'x'", CHECK, "ex-a")], {"ex-a": 3})
    result = subprocess.run([sys.executable, "-m", "course.grade", str(notebook), "--json"],
                            check=True, capture_output=True, text=True, cwd=ROOT)
    (report,) = map(json.loads, result.stdout.splitlines())
    assert (report["score"], report["max_score"]) == (3, 3)
    assert report["exercises"][0]["label"] == "ex-a"


def test_a_batch_goes_on_past_broken_notebooks_and_exports_a_csv(tmp_path):
    check = "assert x == 2, 'x should be 2'"
    reference = small_notebook(tmp_path / "reference.ipynb", [
        code("x = 2", ANSWER, "ex-a"), code(check, CHECK, "ex-a"),
        code("y = 1", ANSWER, "ex-b"), code("assert y == 1, 'y'", CHECK, "ex-b")],
        {"ex-a": 2, "ex-b": 3})
    right = small_notebook(tmp_path / "right.ipynb", [
        code("x = 2", ANSWER, "ex-a"), code("y = 1", ANSWER, "ex-b")], {})
    half = small_notebook(tmp_path / "half.ipynb", [
        code("x = 5", ANSWER, "ex-a"), code("y = 1", ANSWER, "ex-b")], {})
    (tmp_path / "broken.ipynb").write_text("{")
    paths = [right, tmp_path / "broken.ipynb", tmp_path / "missing.ipynb", half]
    reports = list(grade_batch(paths, reference, timeout=20))
    assert [(r.score, r.max_score) for r in reports] == [(5, 5), (0, 5), (0, 5), (3, 5)]
    assert "not a Jupyter notebook" in reports[1].error and "no such file" in reports[2].error
    write_csv(reports, tmp_path / "grades.csv")
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [(r["ex-a"], r["ex-b"], r["total"]) for r in rows] == [
        ("2", "3", "5"), ("0", "0", "0"), ("0", "0", "0"), ("0", "3", "3")]
    assert rows[1]["error"] and not rows[0]["error"]


def test_an_answer_in_a_new_cell_or_after_the_stub_counts(tmp_path):
    stub = "raise NotImplementedError('ex-a: not answered yet')"
    reference = small_notebook(tmp_path / "reference.ipynb", [
        code("x = 2", ANSWER, "ex-a"), code("assert x == 2, 'x should be 2'", CHECK, "ex-a"),
        new_markdown_cell("```{exercise} Next\n:label: ex-b\n```"),
        code("y = 1", ANSWER, "ex-b"), code("assert y == 1, 'y'", CHECK, "ex-b")],
        {"ex-a": 2, "ex-b": 1})
    submission = small_notebook(tmp_path / "student.ipynb", [
        code(stub, ANSWER, "ex-a"), code("assert True", CHECK, "ex-a"), code("x = 2"),
        new_markdown_cell("```{exercise} Next\n:label: ex-b\n```"),
        code(f"{stub}\ny = 1", ANSWER, "ex-b"), code("y = 1"), code("x = 3")], {})
    a, b = grade(submission, reference, timeout=20)
    assert (a.score, b.score) == (2, 1), table([a, b])
    unanswered = small_notebook(tmp_path / "unanswered.ipynb", [code(stub, ANSWER, "ex-a")], {})
    a, b = grade(unanswered, reference, timeout=20)
    assert a.score == 0 and a.message.startswith("not answered")


def test_a_submission_sees_only_itself_in_the_quick_profile(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_SCALE", "full")
    (tmp_path / "classmate.ipynb").write_text("{}")
    probe = ("import os\nseen = sorted(os.listdir('.'))\n"
             "scale = os.environ['BOOK_SCALE']")
    path = small_notebook(tmp_path / "me.ipynb", [
        code(probe, ANSWER, "ex-a"),
        code("assert seen == ['submission.ipynb'], seen\nassert scale == 'quick', scale",
             CHECK, "ex-a")], {"ex-a": 1})
    (score,) = grade(path, timeout=20)
    assert score.score == 1, score.message


def test_processes_a_submission_starts_die_with_its_grading(tmp_path):
    assert sandbox_prefix(), "unshare gives the worker a PID namespace on this machine"
    marker = tmp_path / "written-later.txt"
    late = (f"import os, subprocess, time\n"
            f"subprocess.Popen(['sh', '-c', 'sleep 3; touch {marker}'], "
            f"start_new_session=True)\n"
            f"if os.fork() == 0:\n    os.setsid(); time.sleep(3)\n"
            f"    open('{marker}', 'w').close(); os._exit(0)\nx = 1")
    path = small_notebook(tmp_path / "late.ipynb", [
        code(late, ANSWER, "ex-a"), code("assert x == 1", CHECK, "ex-a")], {"ex-a": 1})
    (score,) = grade(path, timeout=20)
    assert score.score == 1, score.message
    time.sleep(5)
    assert not marker.exists()


def test_an_interrupt_proof_loop_is_ended_by_the_submission_limit(tmp_path):
    loop = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    path = small_notebook(tmp_path / "stubborn.ipynb", [
        code("x = 1", ANSWER, "ex-a"), code("assert x == 1", CHECK, "ex-a"),
        code(loop, ANSWER, "ex-b"), code("assert True", CHECK, "ex-b")],
        {"ex-a": 1, "ex-b": 1})
    start = time.monotonic()
    a, b = grade(path, timeout=2, max_seconds=15)
    assert time.monotonic() - start < 45
    assert a.score == 0 and b.score == 0
    assert "longer than 15 s in all" in b.message, b.message


def test_running_out_of_memory_is_named(tmp_path):
    path = small_notebook(tmp_path / "greedy.ipynb", [
        code("import numpy\nbig = numpy.ones(2**31)", ANSWER, "ex-a"),
        code("assert big.sum() > 0", CHECK, "ex-a")], {"ex-a": 1})
    (score,) = grade(path, timeout=20, memory_gb=4)
    assert score.score == 0 and "out of memory" in score.message, score.message
