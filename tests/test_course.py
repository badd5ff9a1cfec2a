"""Student and instructor editions (course.assignments), the hidden tests (course.hidden) and the
autograder (course.grade, course.sandbox): on every chapter of the book, and on a small
notebook made here that every cheat we know of is tried against."""

import csv
import json
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course import hidden
from course.assignments import (
    ANSWER,
    BIBLIOGRAPHY,
    CHECK,
    SOLUTION,
    WRITTEN,
    exercise_points,
    instructor_edition,
    student_edition,
    tagged,
    write_editions,
    written_points,
)
from course.grade import Grader, gradescope_results, main, table, write_csv, write_written_answers
from course.sandbox import namespaces_available

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def code(source: str, tag: str | None = None, label: str | None = None):
    cell = new_code_cell(source)
    if tag:
        cell.metadata.update(tags=[tag], exercise=label)
    return cell


def statement(label: str, text: str = "Do it.") -> nbformat.NotebookNode:
    return new_markdown_cell(f"```{{exercise}} Title of {label}\n:label: {label}\n\n{text}\n```")


def small_notebook(path: Path, cells, points=None, written=None) -> Path:
    metadata = {"exercises": points or {}, "written": written or {}}
    nbformat.write(new_notebook(cells=cells, metadata=metadata), path)
    return path


# ------------------------------------------------------------------------ a small chapter

DOUBLE = "def double(x):\n    return 2 * x"
SQUARE = "def square(t):\n    return t * t"
STUB = "raise NotImplementedError('not answered yet')"
# Hidden tests: double() on two even and one odd number, square() on two random tensors.
TOY_TESTS = '''\
from course.hidden import HiddenTest, close, tensor_literal

def hidden_tests(rng):
    n = rng.randrange(10, 10**6)
    return {"ex-a": [HiddenTest(f"double({x})", close(rtol=0, atol=0))
                     for x in (2 * n, 2 * n + 1, 2 * n + 4)],
            "ex-b": [HiddenTest(f"square({tensor_literal(rng, (3,))})") for _ in range(2)]}
'''


@pytest.fixture
def toy(tmp_path) -> dict:
    """A reference with two exercises (2 and 3 points), its hidden tests in a folder of their
    own, and an empty folder for submissions."""
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "toy.py").write_text(TOY_TESTS)
    (tmp_path / "instructor").mkdir()
    (tmp_path / "submissions").mkdir()
    reference = small_notebook(tmp_path / "instructor" / "toy.ipynb", [
        code("import torch\nfrom companion.exercises import Feedback"),
        statement("ex-a", "Write `double(x)`. Why is it linear?"),
        code(DOUBLE, ANSWER, "ex-a"),
        code("assert double(3) == 6, 'double(3) should be 6'", CHECK, "ex-a"),
        statement("ex-b"),
        code(SQUARE, ANSWER, "ex-b"),
        code("assert torch.allclose(square(torch.ones(2)), torch.ones(2)), 'square'", CHECK,
             "ex-b"),
    ], {"ex-a": 2, "ex-b": 3}, written={"ex-a": 1})
    return {"reference": reference, "hidden": tmp_path / "hidden",
            "submissions": tmp_path / "submissions"}


def submit(toy, name: str, *cells) -> Path:
    """A submission: the student edition of the toy chapter, then ``cells`` (sources) appended
    right after its first cell, where a cheat would put them."""
    notebook = student_edition(nbformat.read(toy["reference"], as_version=4))
    notebook.cells[1:1] = [code(source) for source in cells]
    path = toy["submissions"] / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


def answered(toy, name: str, double=DOUBLE, square=SQUARE, *more) -> Path:
    """A submission whose answer cells hold ``double`` and ``square``."""
    path = submit(toy, name, *more)
    notebook = nbformat.read(path, as_version=4)
    for label, source in (("ex-a", double), ("ex-b", square)):
        (i,) = tagged(notebook, ANSWER, label)
        notebook.cells[i].source = source
    nbformat.write(notebook, path)
    return path


def scores_of(grader, path) -> list[float]:
    return [s.score for s in grader.grade(path)]


def test_right_answers_score_full_marks_and_a_stub_zero(toy):
    grader = Grader(toy["reference"], toy["hidden"], seed=1, timeout=20)
    assert scores_of(grader, answered(toy, "right")) == [2, 3]
    a, b = grader.grade(submit(toy, "untouched"))
    assert (a.score, b.score) == (0, 0)
    assert a.message.startswith("not answered") and b.message.startswith("not answered")


def test_partial_credit_per_hidden_test(toy):
    grader = Grader(toy["reference"], toy["hidden"], seed=2, timeout=20)
    even_only = "def double(x):\n    return 2 * x if x % 2 == 0 else 0"
    a, b = grader.grade(answered(toy, "even", double=even_only))
    assert (a.score, b.score) == (pytest.approx(2 * 2 / 3), 3)
    assert a.message.startswith("2 of 3 hidden tests passed") and "expected" in a.message


CHEATS = {
    "rebinds a check": "check_circuit_family = lambda *a, **k: Feedback(True, '')\n"
                       "double = square = lambda *a: Feedback(True, '')",
    "patches companion.exercises": (
        "import companion.exercises as e\n"
        "e.check_circuit_family = lambda *a, **k: e.Feedback(True, '')"),
    "makes Feedback always pass": "Feedback.__bool__ = lambda self: True",
    "replaces torch.equal and torch.allclose": (
        "torch.equal = torch.allclose = lambda *a, **k: True"),
    "swallows every error": (
        "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)"),
    "rewrites every later cell": (
        "get_ipython().input_transformers_post.append(\n"
        "    lambda lines: ['print(\"hidden-test-value: 6\")\\n'])"),
    "answers only the visible checks": (
        "double = lambda x: {3: 6}[x]\nsquare = lambda t: torch.ones_like(t)"),
}


@pytest.mark.parametrize("cheat", CHEATS.values(), ids=CHEATS.keys())
def test_every_cheat_scores_zero(toy, cheat):
    grader = Grader(toy["reference"], toy["hidden"], seed=3, timeout=20)
    assert scores_of(grader, submit(toy, "cheat", cheat)) == [0, 0]


def test_the_reference_and_classmates_are_out_of_reach(toy):
    """A submission that looks for the instructor edition (where it is, and on the grader's
    command line) and for a classmate's notebook beside it, to run their answers."""
    assert namespaces_available(), "unshare gives the worker its namespaces on this machine"
    answered(toy, "classmate")
    folders = [str(toy["reference"].parent), str(toy["submissions"])]
    steal = (f"import glob, json\nfound = []\n"
             f"for folder in {folders!r}:\n    found += glob.glob(folder + '/*.ipynb')\n"
             "for path in glob.glob('/proc/*/cmdline'):\n"
             "    found += [w for w in open(path).read().split('\\0') if w.endswith('.ipynb')]\n"
             "for path in found:\n"
             "    try:\n        cells = json.load(open(path))['cells']\n"
             "    except OSError:\n        continue\n"
             "    for cell in cells:\n"
             "        if 'answer' in cell['metadata'].get('tags', []):\n"
             "            try:\n                exec(''.join(cell['source']))\n"
             "            except Exception:\n                pass")
    grader = Grader(toy["reference"], toy["hidden"], seed=4, timeout=20)
    report = next(grader.grade_batch([submit(toy, "thief", steal)]))
    assert [s.score for s in report.exercises] == [0, 0], table(report.exercises)


def test_an_answer_in_a_new_cell_or_after_the_stub_counts(toy):
    path = submit(toy, "late")
    notebook = nbformat.read(path, as_version=4)
    (a,) = tagged(notebook, ANSWER, "ex-a")
    notebook.cells.insert(a + 2, code(DOUBLE))  # a new cell after the check
    (b,) = tagged(notebook, ANSWER, "ex-b")
    notebook.cells[b].source += "\n" + SQUARE  # after the stub left in place
    notebook.cells.append(code("double = None"))  # later code does not undo ex-a
    nbformat.write(notebook, path)
    grader = Grader(toy["reference"], toy["hidden"], seed=5, timeout=20)
    assert scores_of(grader, path) == [2, 0]  # the stub still raises before square is defined
    notebook.cells[b].source = SQUARE + "\n" + STUB
    nbformat.write(notebook, path)
    assert scores_of(grader, path) == [2, 3]


def test_a_batch_goes_on_past_broken_notebooks_and_exports_a_csv(toy):
    grader = Grader(toy["reference"], toy["hidden"], seed=6, timeout=20)
    right = answered(toy, "right")
    half = answered(toy, "half", "def double(x):\n    return x + x if x % 2 else 0")
    broken = toy["submissions"] / "broken.ipynb"
    broken.write_text("{")
    paths = [right, broken, toy["submissions"] / "missing.ipynb", half]
    reports = list(grader.grade_batch(paths))
    assert [r.score for r in reports] == [5, 0, 0, pytest.approx(2 / 3 + 3)]
    assert "not a Jupyter notebook" in reports[1].error and "no such file" in reports[2].error
    write_csv(reports, toy["submissions"] / "grades.csv", grader.written)
    rows = list(csv.DictReader((toy["submissions"] / "grades.csv").open()))
    assert [(r["ex-a"], r["ex-b"], r["total"]) for r in rows] == [
        ("2", "3", "5"), ("0", "0", "0"), ("0", "0", "0"), ("0.6667", "3", "3.6667")]
    assert [r["ex-a (written, of 1)"] for r in rows] == ["", "", "", ""]
    assert rows[1]["error"] and not rows[0]["error"]
    gradescope = gradescope_results(reports[3])
    assert gradescope["score"] == pytest.approx(2 / 3 + 3) and gradescope["output"] == ""
    assert [(t["name"], t["score"], t["max_score"]) for t in gradescope["tests"]] == [
        ("ex-a", pytest.approx(2 / 3), 2), ("ex-b", 3, 3)]
    assert "1 of 3 hidden tests passed" in gradescope["tests"][0]["output"]
    assert gradescope_results(reports[1])["score"] == 0
    assert "not a Jupyter notebook" in gradescope_results(reports[1])["output"]


def test_a_written_answer_flows_to_grading_by_hand(toy):
    path = answered(toy, "writer")
    notebook = nbformat.read(path, as_version=4)
    (cell,) = tagged(notebook, WRITTEN, "ex-a", "markdown")
    assert "graded by hand" in notebook.cells[cell].source
    notebook.cells[cell].source = "It is linear because $2(x + y) = 2x + 2y$."
    nbformat.write(notebook, path)
    out = toy["submissions"].parent / "written.ipynb"
    write_written_answers([path, submit(toy, "silent")], toy["reference"], out)
    text = "\n".join(cell.source for cell in nbformat.read(out, as_version=4).cells)
    assert "## ex-a (1 point)" in text and "Why is it linear?" in text
    assert "It is linear because $2(x + y) = 2x + 2y$." in text
    assert "*(no written answer)*" in text and "ex-b" not in text
    assert "It is linear because" in out.with_suffix(".html").read_text()


def test_processes_a_submission_starts_die_with_its_grading(toy, tmp_path):
    marker = tmp_path / "written-later.txt"
    late = (f"import os, subprocess, time\n"
            f"subprocess.Popen(['sh', '-c', 'sleep 3; touch {marker}'], "
            f"start_new_session=True)\n"
            f"if os.fork() == 0:\n    os.setsid(); time.sleep(3)\n"
            f"    open('{marker}', 'w').close(); os._exit(0)")
    grader = Grader(toy["reference"], toy["hidden"], seed=7, timeout=20)
    assert scores_of(grader, answered(toy, "late", DOUBLE, SQUARE, late)) == [2, 3]
    time.sleep(5)
    assert not marker.exists()


def test_a_submission_sees_only_itself_in_the_quick_profile(toy, monkeypatch):
    monkeypatch.setenv("BOOK_SCALE", "full")
    look = ("import os\nif sorted(os.listdir('.')) == ['submission.ipynb'] and "
            "os.environ['BOOK_SCALE'] == 'quick':\n" + "\n".join(
                "    " + line for line in DOUBLE.splitlines()))
    grader = Grader(toy["reference"], toy["hidden"], seed=8, timeout=20)
    assert scores_of(grader, submit(toy, "looker", look)) == [2, 0]


def test_loops_memory_and_exits_are_named(toy):
    grader = Grader(toy["reference"], toy["hidden"], seed=9, timeout=3, max_seconds=20,
                    memory_gb=4)
    a, b = grader.grade(answered(toy, "loop", "def double(x):\n    while True:\n        pass"))
    assert a.score == 0 and "longer than 3 s" in a.message and b.score == 3
    greedy = "import numpy\nbig = numpy.ones(2**31)\n" + DOUBLE
    a, _ = grader.grade(answered(toy, "greedy", greedy))
    assert a.score == 0 and "out of memory" in a.message, a.message
    a, b = grader.grade(answered(toy, "exits", DOUBLE, "import os\nos._exit(3)"))
    assert "exited with status 3" in b.message
    stubborn = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "while True:\n    pass")
    start = time.monotonic()
    a, b = grader.grade(answered(toy, "stubborn", DOUBLE, SQUARE, stubborn))
    assert time.monotonic() - start < 60
    assert (a.score, b.score) == (0, 0) and "longer than 20 s in all" in b.message


def test_a_large_answer_is_judged_not_timed_out(toy):
    """Values larger than a pipe's buffer come back whole while the worker is still running."""
    grader = Grader(toy["reference"], toy["hidden"], seed=12, timeout=20, max_seconds=60)
    a, b = grader.grade(answered(toy, "large", "def double(x):\n    return [x] * 100_000"))
    assert a.score == 0 and "longer than" not in a.message and b.score == 3, a.message


def test_bad_input_is_refused(toy, tmp_path):
    with pytest.raises(ValueError, match="reference"):
        Grader(tmp_path / "missing.ipynb", toy["hidden"])
    for name, value in (("timeout", 0), ("memory_gb", -1), ("max_seconds", True)):
        with pytest.raises(ValueError, match=name):
            Grader(toy["reference"], toy["hidden"], **{name: value})
    with pytest.raises(ValueError, match="no hidden tests"):
        Grader(toy["reference"], tmp_path / "submissions")
    (toy["hidden"] / "toy.py").write_text(TOY_TESTS.replace("double({x})", "double({x}, 1)"))
    with pytest.raises(ValueError, match="fails on the reference"):
        Grader(toy["reference"], toy["hidden"], timeout=20)
    with pytest.raises(ValueError, match="cannot be hidden"):
        Grader(toy["reference"], toy["hidden"], hide=[ROOT.parent])
    bad = small_notebook(tmp_path / "bad.ipynb", [code("x = 1")], {"ex-a": "ten"})
    with pytest.raises(ValueError, match="exercises"):
        exercise_points(nbformat.read(bad, as_version=4))


def test_the_gradescope_export_takes_one_submission(toy, capsys):
    with pytest.raises(SystemExit):
        main([str(toy["reference"]), str(toy["reference"]), "--reference",
              str(toy["reference"]), "--gradescope", "results.json"])
    assert "--gradescope grades one submission, got 2" in capsys.readouterr().err


def test_the_judges_compare_plain_data():
    judge = hidden.close(rtol=1e-6)
    assert judge([1.0, [True, float("nan")]], [1.0 + 1e-9, [True, float("nan")]]) == ""
    assert "expected 2.0" in judge([1.0], [2.0])
    assert "a list of 1" in judge([1.0], [1.0, 2.0])
    assert "expected True" in judge(1, True)  # a boolean answer must be a boolean
    assert hidden.value_printed(f"noise\n{hidden.MARKER} [1, 2.5]\n") == [1, 2.5]
    with pytest.raises(ValueError, match="no value"):
        hidden.value_printed("nothing")


def test_the_command_line_writes_each_grade_as_it_goes(toy):
    """Killed after its first submission, the grader has already written that row."""
    right = answered(toy, "right")
    stubborn = submit(toy, "stubborn", "import time\ntime.sleep(600)")
    grades = toy["submissions"].parent / "grades.csv"
    command = [sys.executable, "-m", "course.grade", str(right), str(stubborn),
               "--reference", str(toy["reference"]), "--hidden", str(toy["hidden"]),
               "--csv", str(grades), "--json"]
    grader = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    first = json.loads(grader.stdout.readline())
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    assert (first["score"], first["max_score"]) == (5, 5)
    (row,) = csv.DictReader(grades.open())
    assert (row["notebook"], row["total"]) == (str(right), "5")


# ------------------------------------------------------------------------ the book's chapters


@pytest.fixture(scope="module")
def editions(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("assignments")
    write_editions(CHAPTERS, out)
    return out


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_has_no_solutions_and_plain_roles(chapter):
    book = nbformat.read(chapter, as_version=4)
    student = student_edition(book)
    points = exercise_points(book)
    assert points, "every chapter has graded exercises"
    assert set(written_points(book)) <= set(points)
    assert not any(SOLUTION in tags(cell) for cell in student.cells)
    text = "\n".join(cell.source for cell in student.cells)
    assert "{solution" not in text
    assert "{cite:" not in text and "{prf:ref}" not in text and "{doc}" not in text
    keys = re.findall(r"^@\w+\{([\w-]+),", BIBLIOGRAPHY.read_text(), re.M)
    markdown = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    assert not [key for key in keys if key in markdown], "a citation left as its key"
    assert not re.search(r"\*(ex|thm|lem|def|prop|fig)-[\w-]+\*", markdown), "a bare label"
    assert text.count("```{exercise}") == len(points)  # a box in JupyterLab, as in the book
    for label in points:
        [answer] = tagged(book, ANSWER, label)
        assert "hide-cell" in tags(book.cells[answer]), "the book folds its model answer"
        assert book.cells[answer].metadata.jupyter.source_hidden, "and so does JupyterLab"
        [stub] = tagged(student, ANSWER, label)
        assert "raise NotImplementedError" in student.cells[stub].source
        assert "hide-cell" not in tags(student.cells[stub]), "a student sees the stub"
        assert "jupyter" not in student.cells[stub].metadata
        checks = [student.cells[i].source for i in tagged(student, CHECK, label)]
        assert checks == [book.cells[i].source for i in tagged(book, CHECK, label)]
    for label in written_points(book):
        assert len(tagged(student, WRITTEN, label, "markdown")) == 1
    assert instructor_edition(book).cells == book.cells  # and the book is left as it was


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_has_hidden_tests(chapter):
    points = exercise_points(nbformat.read(chapter, as_version=4))
    make_tests = hidden.load(chapter.stem)
    for seed in range(20):
        tests = make_tests(random.Random(seed))
        assert set(tests) == set(points) and all(tests.values()), sorted(tests)
        for test in (t for label in tests.values() for t in label):
            compile(test.cell_source(), "<hidden test>", "exec")  # valid Python


def test_statements_cite_as_the_book_does():
    notebook = new_notebook(cells=[
        new_markdown_cell("```{prf:lemma} Hahn's lemma\n:label: lem-hahn\n\nText.\n```"),
        statement("ex-a", "As {cite:t}`chiang2022overcoming` show with {prf:ref}`lem-hahn`, "
                          "and {cite:p}`hahn2020theoretical{§4}` before, as in "
                          "{doc}`Self-attention <self_attention>`."),
    ], metadata={"exercises": {"ex-a": 1}})
    text = student_edition(notebook).cells[1].source
    assert text == ("```{exercise} Title of ex-a\n:label: ex-a\n\nAs Chiang and Cholak (2022) "
                    "show with lemma “Hahn's lemma”, and (Hahn, 2020, §4) before, as in "
                    "Self-attention.\n```")


@pytest.mark.slow  # runs a whole chapter in a kernel, three times
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_instructor_edition_scores_full_marks_and_the_student_edition_zero(
        chapter, editions):
    grader = Grader(editions / "instructor" / chapter.name,
                    seed=random.Random(chapter.stem).randrange(2**32))
    scores = grader.grade(editions / "instructor" / chapter.name)
    assert all(s.score == s.points for s in scores), table(scores)
    scores = grader.grade(editions / "student" / chapter.name)
    assert [s.label for s in scores] == list(exercise_points(nbformat.read(chapter, 4)))
    assert all(s.score == 0 and s.message.startswith("not answered") for s in scores), (
        table(scores))


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
    scores = {s.label: s for s in Grader(reference).grade(tmp_path / "wrong.ipynb")}
    assert scores.pop("ex-rec-previous").score == 0
    assert all(s.score == s.points for s in scores.values())
