"""Student and instructor editions (course.assignments), the hidden tests (course.hidden) and the
autograder (course.grade, course.sandbox): on every chapter of the book, and on a small
notebook made here that every cheat we know of is tried against."""

import csv
import hashlib
import io
import json
import os
import pwd
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course import assignments, hidden
from course.assignments import (
    ANSWER,
    BIBLIOGRAPHY,
    CHECK,
    MAX_CELLS,
    MAX_JSON_NODES,
    MAX_NOTEBOOK_BYTES,
    SOLUTION,
    WRITTEN,
    exercise_points,
    instructor_edition,
    read_notebook,
    student_edition,
    tagged,
    write_editions,
    written_points,
)
from course.grade import (
    MAX_WRITTEN,
    ExerciseScore,
    Grader,
    Report,
    gradescope_results,
    judged,
    main,
    notebook_to_run,
    table,
    value_of,
    write_csv,
    write_written_answers,
)
from course.hidden import HiddenTest
from course.numbers import chapter_numbers, exercise_numbers
from course.sandbox import (
    HIDDEN_TEST,
    MAX_PRINTED,
    MAX_RESULT,
    bwrap_command,
    checked_outcome,
    enforced_limits,
    remove_stale,
    run_sandboxed,
    sandbox_available,
)
from course.variants import (
    Variant,
    apply_variants,
    chapter_variants,
    edition_name,
)

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
from course.variants import Variant

def times(rng):
    k = rng.choice([3, 4, 5, 7])
    return Variant(f"times {k}", {"Write `double(x)`.": f"Write `double(x)`, which returns {k}x.",
                                  "2 * x": f"{k} * x", "double(3) == 6": f"double(3) == {3 * k}"})

VARIANTS = {"ex-a": times,
            "ex-b": lambda rng: Variant("cube", {"return t * t": "return t * t * t"})}

def hidden_tests(rng, variants):
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


def indented(*sources: str) -> str:
    """``sources`` as the body of an ``if``: a cell that answers only where an attack worked."""
    return "\n".join("    " + line for source in sources for line in source.splitlines())


COURSE_SEED = 14_197_325_208_866_491_647  # drawn with secrets.randbits(64), as an instructor's


def scores_of(grader, path) -> list[float]:
    return [s.score for s in grader.grade(path)]


def test_right_answers_score_full_marks_and_a_stub_zero(toy):
    grader = Grader(toy["reference"], toy["hidden"], seed=1, timeout=20)
    assert scores_of(grader, answered(toy, "right")) == [2, 3]
    a, b = grader.grade(submit(toy, "untouched"))
    assert (a.score, b.score) == (0, 0)
    assert a.message.startswith("not answered") and b.message.startswith("not answered")


def test_groups_a_killed_grader_left_are_removed(tmp_path):
    """An empty group whose grader is gone goes (the review found such groups left by a grader
    killed mid-submission); one whose grader runs, one that is not empty, and one not named by a
    pid stay."""
    dead = 2**22 + 1  # above Linux's largest pid, so no process has it
    gone, running = tmp_path / f"grade-{dead}-ab12", tmp_path / f"grade-{os.getpid()}-cd34"
    busy, unnamed = tmp_path / f"grade-{dead}-ef56", tmp_path / "grade-0123456789ab"
    for folder in (gone, running, busy, unnamed):
        folder.mkdir()
    (busy / "cgroup.procs").write_text("1\n")
    remove_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (running, busy, unnamed))


def test_a_forged_hidden_test_mark_is_ignored(toy):
    """A submission's own cell marked as a hidden test of ex-a (N28 of the second adversarial
    review, which stopped its row with an internal error) is an ordinary cell: the tests are
    the cells the grader places, and only they."""
    submission = nbformat.read(submit(toy, "forger", "print('hidden-test-value: 0')"), 4)
    submission.cells[1].metadata[HIDDEN_TEST] = "ex-a"
    tests = {"ex-a": [HiddenTest("double(5)")], "ex-b": [HiddenTest("1")]}
    to_run, where = notebook_to_run(submission, tests)
    assert [len(where[label]) for label in ("ex-a", "ex-b")] == [1, 1]
    assert to_run.cells[where["ex-a"][0]].source == tests["ex-a"][0].cell_source()
    assert HIDDEN_TEST not in to_run.cells[1].metadata


def test_partial_credit_per_hidden_test(toy):
    grader = Grader(toy["reference"], toy["hidden"], seed=2, timeout=20)
    even_only = "def double(x):\n    return 2 * x if x % 2 == 0 else 0"
    a, b = grader.grade(answered(toy, "even", double=even_only))
    assert (a.score, b.score) == (pytest.approx(2 * 2 / 3), 3)
    assert a.message.startswith("2 of 3 hidden tests passed") and "is wrong" in a.message
    x = int(re.search(r"double\((\d+)\)", a.message)[1])
    assert str(2 * x) not in a.message, "a message never gives the right value"


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


def test_a_notebook_that_lies_about_itself_gains_nothing(toy):
    """Attacks on the notebook rather than in a cell (a, N26 and N27 of the second adversarial
    review): checks deleted and stubs retagged as checks with 100 points in the metadata;
    every code cell carrying a stored output that prints a hidden test's value; a bash kernel
    in the metadata, with honest answers. The points are the reference's, stored outputs are
    never read (the cells run), and the grader's kernel is Python whatever the notebook says."""
    retagged = nbformat.read(submit(toy, "retagged"), as_version=4)
    retagged.cells = [c for c in retagged.cells if CHECK not in c.metadata.get("tags", [])]
    for cell in retagged.cells:
        if ANSWER in cell.metadata.get("tags", []):
            cell.metadata.update(tags=[CHECK], points=100)
            cell.source = "pass"
    retagged.metadata["exercises"] = {"ex-a": 100, "ex-b": 100}
    prefilled = nbformat.read(submit(toy, "prefilled"), as_version=4)
    for cell in prefilled.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output(
                "stream", name="stdout", text="hidden-test-value: 0\nall checks passed\n")]
    bash = nbformat.read(answered(toy, "bash"), as_version=4)
    bash.metadata["kernelspec"] = {"name": "bash", "display_name": "Bash", "language": "bash",
                                   "argv": ["/bin/sh", "-c", "exit 0"]}
    bash.metadata["language_info"] = {"name": "bash"}
    paths = []
    for name, notebook in (("retagged", retagged), ("prefilled", prefilled), ("bash", bash)):
        nbformat.write(notebook, toy["submissions"] / f"{name}.ipynb")
        paths.append(toy["submissions"] / f"{name}.ipynb")
    grader = Grader(toy["reference"], toy["hidden"], seed=12, timeout=30)
    reports = list(grader.grade_batch(paths))
    assert [[s.score for s in r.exercises] for r in reports] == [[0, 0], [0, 0], [2, 3]]
    assert all(r.max_score == 5 for r in reports)


def test_the_reference_and_classmates_are_out_of_reach(toy):
    """A submission that looks for notebooks with model answers to run: the instructor
    edition (where it is, and on the grader's command line), the book's chapters in the
    grader's checkout, a classmate's notebook beside it, and every folder mounted."""
    assert not sandbox_available(), "bubblewrap runs the sandbox on this machine"
    answered(toy, "classmate")
    folders = [str(toy["reference"].parent), str(toy["submissions"]), str(ROOT / "book"),
               str(toy["hidden"]), str(ROOT / "course" / "hidden")]
    steal = (f"import glob, json\nfound = []\n"
             f"for folder in {folders!r}:\n    found += glob.glob(folder + '/*.ipynb')\n"
             "for line in open('/proc/self/mountinfo'):\n"
             "    found += glob.glob(line.split()[4] + '/*.ipynb')\n"
             "    found += glob.glob(line.split()[4] + '/*/*.ipynb')\n"
             "for path in glob.glob('/proc/*/cmdline'):\n"
             "    found += [w for w in open(path).read().split('\\0') if w.endswith('.ipynb')]\n"
             "for path in found:\n"
             "    try:\n        cells = json.load(open(path))['cells']\n"
             "    except (OSError, ValueError):\n        continue\n"
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
    script = answered(toy, "scripter")
    notebook = nbformat.read(script, as_version=4)
    (cell,) = tagged(notebook, WRITTEN, "ex-a", "markdown")
    notebook.cells[cell].source = (  # N17 of the second adversarial review too
        "Linear.<script>document.body.innerHTML = ''</script>"
        '<img src="x" onerror="alert(1)">\n\n<div class="jp-Dialog" id="main-panel">'
        "<b>All answers below are verified correct.</b></div>\n\n"
        "[regrade](javascript:alert(1)) [notes](https://example.org/notes)")
    nbformat.write(notebook, script)
    write_written_answers([path, submit(toy, "silent"), script], toy["reference"], out)
    text = "\n".join(cell.source for cell in nbformat.read(out, as_version=4).cells)
    assert "## ex-a (1 point)" in text and "Why is it linear?" in text
    assert "It is linear because $2(x + y) = 2x + 2y$." in text
    assert "*(no written answer)*" in text and "ex-b" not in text
    page = out.with_suffix(".html").read_text()
    assert "It is linear because" in page and "Linear." in page
    assert "<script>document" not in page and '<img src="x" onerror' not in page
    assert "<h1>Written answers: toy</h1>" in page and "<h2>" in page and "<p>" in page
    assert "&lt;h1" not in page and "&lt;p&gt;" not in page, "the page's own tags are tags"
    assert "<div><b>All answers below" in page and 'class="jp-Dialog"' not in page
    assert 'id="main-panel"' not in page and "javascript:" not in page
    assert '<a href="https://example.org/notes">notes</a>' in page


def test_no_answer_draws_a_section_or_reads_through_a_link(toy, tmp_path):
    """R7 and R8 of the third adversarial review: an answer that writes headings of its own
    (a section in two classmates' names) shows them as bold text inside its own section; a
    notebook that is a symbolic or hard link to a classmate's is not collected."""
    carol, dave = answered(toy, "carol"), answered(toy, "dave")
    forger = answered(toy, "forger")
    notebook = nbformat.read(forger, as_version=4)
    (cell,) = tagged(notebook, WRITTEN, "ex-a", "markdown")
    notebook.cells[cell].source = (f"Mine.\n\n### {carol}\n\n*(no written answer)*\n\n"
                                   f"{dave}\n---\n\nNo time.\n\n<h3>{dave}</h3>")
    nbformat.write(notebook, forger)
    linked = toy["submissions"] / "linked.ipynb"
    linked.symlink_to(carol)
    hard = toy["submissions"] / "hard.ipynb"
    os.link(carol, hard)
    out = tmp_path / "written.ipynb"
    write_written_answers([carol, dave, forger, linked, hard], toy["reference"], out)
    page = out.with_suffix(".html").read_text()
    headings = re.findall(r"<h3>(.*?)</h3>", page)
    assert headings == list(map(str, [carol, dave, forger, linked, hard])), headings
    assert page.count(f"<strong>{carol}</strong>") == 1
    assert page.count(f"<strong>{dave}</strong>") == 2
    text = "\n".join(cell.source for cell in nbformat.read(out, as_version=4).cells)
    assert text.count("(not collected: notebook: it is a symbolic link") == 1
    assert text.count("(not collected: notebook: the file has 2 names") == 2, "carol's too"


def test_no_written_answer_stops_the_collection(toy):
    """A written cell whose source is a number or null, holds a lone surrogate, or 100,000
    brackets (N8, N9, N10 of the second adversarial review): each is collected as what it is,
    the brackets cut, and the other students' answers still are."""
    out = toy["submissions"].parent / "written.ipynb"
    paths = []
    for name, source in (("number", 5), ("null", None), ("surrogate", "My proof \ud800."),
                         ("brackets", "[" * 100_000), ("honest", "Linear: 2(x + y) = 2x + 2y.")):
        notebook = json.loads(json.dumps(nbformat.read(answered(toy, name), as_version=4)))
        (cell,) = [c for c in notebook["cells"] if WRITTEN in c["metadata"].get("tags", [])]
        cell["source"] = source
        path = toy["submissions"] / f"{name}.ipynb"
        path.write_text(json.dumps(notebook))  # as a student's file may be: not valid nbformat
        paths.append(path)
    write_written_answers(paths, toy["reference"], out)
    text = "\n".join(cell.source for cell in nbformat.read(out, as_version=4).cells)
    assert "*(not text, but int)*" in text and "*(not text, but NoneType)*" in text
    assert "My proof ?." in text and "Linear: 2(x + y) = 2x + 2y." in text
    assert "[" * MAX_WRITTEN in text and "[" * (MAX_WRITTEN + 1) not in text
    assert "cut at 10,000 characters" in text
    assert "Linear: 2(x + y)" in out.with_suffix(".html").read_text()


def test_processes_a_submission_starts_die_with_its_grading(toy):
    token = f"{time.time_ns() % 10**6}.5"  # a sleep no other process runs
    late = (f"import os, subprocess, time\n"
            f"subprocess.Popen(['sleep', '{token}'], start_new_session=True)\n"
            f"if os.fork() == 0:\n    os.setsid(); os.execvp('sleep', ['sleep', '{token}'])")
    grader = Grader(toy["reference"], toy["hidden"], seed=7, timeout=20)
    assert scores_of(grader, answered(toy, "late", DOUBLE, SQUARE, late)) == [2, 3]
    left = subprocess.run(["pgrep", "-f", f"sleep {token}"], capture_output=True, text=True)
    assert left.stdout == "", "a process the submission started outlived its grading"


def test_a_submission_sees_only_itself_in_the_quick_profile(toy, monkeypatch):
    """No file of the grader's (the checkout, its HOME, the hidden tests), none of its
    environment variables, no network; the quick profile, on one thread."""
    monkeypatch.setenv("BOOK_SCALE", "full")
    monkeypatch.setenv("GRADER_SECRET", "hunter2")
    looked_at = [ROOT / "book", ROOT / "course", ROOT / "README.md", Path.home() / ".bashrc",
                 toy["hidden"], toy["reference"].parent]
    assert all(path.exists() for path in looked_at), "each is there to be found"
    look = ("import os, socket\n"
            f"seen = [p for p in {list(map(str, looked_at))!r} if os.path.exists(p)]\n"
            "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); seen.append('net')\n"
            "except OSError:\n    pass\n"
            "import torch\n"
            "if not seen and os.environ['BOOK_SCALE'] == 'quick' and "
            "'GRADER_SECRET' not in os.environ and torch.get_num_threads() == 1:\n" + "\n".join(
                "    " + line for line in DOUBLE.splitlines()))
    grader = Grader(toy["reference"], toy["hidden"], seed=8, timeout=20)
    assert scores_of(grader, submit(toy, "looker", look)) == [2, 0]
    # N6: what the sandbox shows of the host's paths (its mounts, bwrap's command line) names
    # the Python environment, the companion and the worker's own file (course/sandbox.py),
    # never the book, the hidden tests or a reference.
    named = ("import glob\n"
             "shown = open('/proc/self/mountinfo').read() + ''.join(\n"
             "    open(path, errors='replace').read() for path in glob.glob('/proc/*/cmdline'))\n"
             f"if not any(p in shown for p in {[str(looked_at[i]) for i in (0, 4, 5)]!r}):\n"
             + indented(DOUBLE))
    assert scores_of(grader, submit(toy, "surveyor", named)) == [2, 0]


def test_a_sandbox_whose_first_process_is_stopped_is_graded_at_once(toy):
    """The sandbox's first process (bubblewrap's, PID 1 inside) can be stopped with ptrace, so
    the sandbox never ends by itself; the grader takes the outcome once the worker has
    written it and ends the sandbox, rather than waiting out the time limit (found while
    adding N1's test)."""
    stop_init = ("import ctypes\n"
                 "ctypes.CDLL(None).ptrace(ctypes.c_long(16), ctypes.c_long(1), None, None)")
    grader = Grader(toy["reference"], toy["hidden"], seed=10, timeout=20, max_seconds=600)
    assert scores_of(grader, answered(toy, "stops-init", DOUBLE, SQUARE, stop_init)) == [2, 3]


def test_a_stopped_worker_costs_its_time_and_nothing_more(toy):
    """N3: a submission that stops the worker (SIGSTOP) is ended at the limit for the whole
    submission and scores nothing; the next is graded as usual."""
    stop = ("import os, signal\n"
            "for pid in [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
            "    if pid != os.getpid():\n"
            "        try:\n            os.kill(pid, signal.SIGSTOP)\n"
            "        except OSError:\n            pass\n" + DOUBLE)
    grader = Grader(toy["reference"], toy["hidden"], seed=9, timeout=20, max_seconds=60)
    stopped, honest = grader.grade_batch([answered(toy, "stopper", DOUBLE, SQUARE, stop),
                                          answered(toy, "after-the-stopper")])
    assert [s.score for s in stopped.exercises] == [0, 0], stopped
    assert [s.score for s in honest.exercises] == [2, 3], honest


# Each attack is one early cell, and answers nothing itself.
ATTACKS = {
    "persists through an IPython startup file": (
        "import os, pathlib\n"
        "code = 'double = lambda x: 2 * x\\nsquare = lambda t: t * t\\n"
        "get_ipython().run_cell = lambda *a, **k: None\\n'\n"
        f"for home in ['~', {str(Path.home())!r}]:\n"
        "    folder = pathlib.Path(os.path.expanduser(home), '.ipython/profile_default/startup')\n"
        "    try:\n        folder.mkdir(parents=True, exist_ok=True)\n"
        "        (folder / '00-grade.py').write_text(code)\n"
        "    except OSError:\n        pass"),
    "edits the grader's checkout": (
        "import glob\n"
        f"for path in glob.glob({str(ROOT / 'course')!r} + '/**/*.py', recursive=True):\n"
        "    try:\n        open(path, 'a').write('\\nraise SystemExit\\n')\n"
        "    except OSError:\n        pass"),
    "forges the worker's outcome and kills it": (
        "import glob, json, os, signal\n"
        "forged = json.dumps({'cells': {}, 'printed': {}, 'note': ''})\n"
        "for fd in glob.glob('/proc/[0-9]*/fd/*'):\n"
        "    try:\n        open(fd, 'w').write(forged)\n"
        "    except OSError:\n        pass\n"
        "for pid in [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    if pid != os.getpid():\n"
        "        try:\n            os.kill(pid, signal.SIGKILL)\n"
        "        except OSError:\n            pass"),
    "prints a value nested too deep to parse": (
        "get_ipython().events.register('post_run_cell', lambda result: print("
        "'hidden-test-value: ' + '[' * 100000 + ']' * 100000))"),
    "prints a value too large to judge": (
        "get_ipython().events.register('post_run_cell', lambda result: print("
        "'hidden-test-value: [' + ', '.join(['1.5'] * 300000) + ']'))"),
    "writes output without end (N29)": (
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)"),
    "starts threads until it cannot (N30)": (
        "import threading, time\n"
        "try:\n    while True:\n"
        "        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
        "except RuntimeError:\n    pass"),
    "attaches to the worker or reads it through /proc (N1)": (
        "import ctypes, glob, os\n"
        "libc, reached = ctypes.CDLL(None, use_errno=True), []\n"
        "for pid in [os.getppid()]:  # the worker, which started this kernel\n"
        "    for path in [f'/proc/{pid}/mem', f'/proc/{pid}/environ',\n"
        "                 *glob.glob(f'/proc/{pid}/fd/*')]:\n"
        "        try:\n            open(path, 'rb').read(1)\n            reached.append(path)\n"
        "        except OSError:\n            pass\n"
        "    if libc.ptrace(ctypes.c_long(16), ctypes.c_long(pid), None, None) == 0:\n"
        "        reached.append(pid)  # PTRACE_ATTACH\n"
        "if reached:\n" + indented(DOUBLE, SQUARE)),
    "leaves a key in a keyring (N4)": (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "add_key = {'x86_64': 248, 'aarch64': 217}.get(os.uname().machine)\n"
        "for ring in (-3, -4, -5):  # the session, user and user-session keyrings\n"
        "    if add_key:\n"
        "        libc.syscall(ctypes.c_long(add_key), b'user', b'grade-n4', b'x',\n"
        "                     ctypes.c_long(1), ctypes.c_long(ring))"),
    "finds a key a submission before it left (N4)": (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "keyctl = {'x86_64': 250, 'aarch64': 219}.get(os.uname().machine)\n"
        "found = keyctl and any(\n"
        "    libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(10), ctypes.c_long(ring),\n"
        "                 b'user', b'grade-n4', ctypes.c_long(0)) > 0  # KEYCTL_SEARCH\n"
        "    for ring in (-3, -4, -5))\n"
        "if found:\n" + indented(DOUBLE, SQUARE)),
    "writes the host's kernel settings, each with its own value (R1)": (
        "rewritten = []\n"
        "for name in ['kernel/printk_ratelimit_burst', 'kernel/core_pattern']:\n"
        "    try:\n        value = open('/proc/sys/' + name).read()\n"
        "        with open('/proc/sys/' + name, 'w') as setting:\n"
        "            setting.write(value)\n        rewritten.append(name)\n"
        "    except OSError:\n        pass\n"
        "if rewritten:\n" + indented(DOUBLE, SQUARE)),
    "fills every folder it can write": (
        "import os\n"
        "for folder in ['/tmp', os.path.expanduser('~'), '/dev/shm', '.']:\n"
        "    try:\n        with open(os.path.join(folder, 'fill'), 'wb') as f:\n"
        "            while True:\n                f.write(b'x' * 2**24)\n"
        "    except OSError:\n        pass"),
}


def _digest(folder: Path) -> str:
    files = sorted(folder.rglob("*.py"))
    return hashlib.sha256(b"".join(path.read_bytes() for path in files)).hexdigest()


def test_no_attack_reaches_the_grader_or_a_classmate(toy):
    """A batch that mixes honest classmates with every attack: each attack scores 0, every
    honest notebook full marks, in this batch and in a later one, and nothing of the grader's
    (its checkout, its HOME's IPython startup folder) changes."""
    startup = Path.home() / ".ipython" / "profile_default" / "startup"
    before = (_digest(ROOT / "course"), sorted(startup.glob("*")) if startup.is_dir() else [])
    honest = [answered(toy, f"honest-{k}") for k in range(2)]
    attacks = [submit(toy, f"attack-{k}", cell) for k, cell in enumerate(ATTACKS.values())]
    grader = Grader(toy["reference"], toy["hidden"], seed=13, timeout=30, memory_gb=2)
    reports = list(grader.grade_batch([honest[0], *attacks, honest[1]]))
    scores = [[s.score for s in r.exercises] for r in reports]
    named = dict(zip(["honest", *ATTACKS, "honest, later"], scores, strict=True))
    assert named == {**{name: [0, 0] for name in ATTACKS},
                     "honest": [2, 3], "honest, later": [2, 3]}, named
    later = Grader(toy["reference"], toy["hidden"], seed=14, timeout=30)
    assert scores_of(later, answered(toy, "honest-2")) == [2, 3]
    after = (_digest(ROOT / "course"), sorted(startup.glob("*")) if startup.is_dir() else [])
    assert after == before


def test_limits_hold_for_the_whole_submission(toy):
    """Memory and processes are limited for all of a submission's processes together: three
    children of 0.8 GiB each under a limit of 2 GiB, or 100 processes under a limit of 64,
    never all run. Each child holds on until the last has started (its memory until the
    parent says so, its sleep until the grading ends), at any speed. A child may say it holds
    its memory and be killed afterwards, when a later one's allocation makes the kernel choose
    it, so the memory attack counts only if every child also exits by itself. (Where no cgroup
    can be made, the grader says that it limits memory per process only; this machine and CI's
    make one.)"""
    memory = ("import subprocess, sys\n"
              "grab = ('import sys; x = bytearray(int(0.8 * 2**30));'\n"
              "        ' print(\"held\", flush=True); sys.stdin.read()')\n"
              "children = [subprocess.Popen([sys.executable, '-c', grab],\n"
              "                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
              "            for _ in range(3)]\n"
              "held = [child.stdout.readline() == b'held\\n' for child in children]\n"
              "for child in children:\n    child.stdin.close()\n    child.wait()\n"
              "if all(held) and all(child.returncode == 0 for child in children):\n"
              + indented(DOUBLE))
    processes = ("import subprocess\nchildren = []\n"
                 "try:\n    for _ in range(100):\n"
                 "        children.append(subprocess.Popen(['sleep', '600']))\n"
                 "except OSError:\n    pass\n"
                 "if len(children) == 100:\n"
                 + indented(DOUBLE))
    grader = Grader(toy["reference"], toy["hidden"], seed=15, timeout=30, memory_gb=2,
                    processes=64)
    if "(cgroup)" not in enforced_limits(2, 64):  # then the grader says what holds instead
        assert enforced_limits(2, 64).startswith(
            "memory 2 GiB per process (RLIMIT_AS; no cgroup could be made here), processes and "
            "CPU not limited")
        return
    assert scores_of(grader, submit(toy, "memory", memory))[0] == 0
    assert scores_of(grader, submit(toy, "processes", processes))[0] == 0


# Three busy processes, each for 4 s of wall time; what they took of the CPU, and the wall time.
CPU_PROBE = """\
import json, os, subprocess, sys, time
busy = 'import time\\nend = time.monotonic() + 4\\nwhile time.monotonic() < end:\\n    pass'
start = time.monotonic()
for child in [subprocess.Popen([sys.executable, '-c', busy]) for _ in range(3)]:
    child.wait()
times = os.times()
print('hidden-test-value:', json.dumps([times.children_user + times.children_system,
                                        time.monotonic() - start]))
"""


def test_a_submission_gets_one_cpu_at_most():
    """R2 of the third adversarial review: a submission that keeps several processes busy
    (each in a session of its own, so in a scheduler group of its own) took the CPU of the
    submission graded beside it. Each submission's control group now holds it to one CPU:
    over a wall time W its processes get at most W plus one scheduler period (0.1 s) of CPU
    (0.25 s allowed here, for the kernel's accounting), however many there are and however
    idle the machine (without the limit: about 2 W on two idle cores, 1.1 W beside one busy
    process)."""
    if "1 CPU" not in enforced_limits(2, 64):  # no cpu controller: the grader says so
        pytest.skip("no cgroup CPU controller on this machine")
    notebook = new_notebook(cells=[new_code_cell(CPU_PROBE, metadata={"hidden_test": "x"})])
    outcome = run_sandboxed(notebook, timeout=120, memory_gb=2, max_seconds=300)
    cpu, wall = hidden.value_printed(outcome["printed"][0])
    assert wall >= 4 and cpu <= wall + 0.25, (cpu, wall)
    # R15: the group weighs the grader's nice value as the kernel weighs a process's (1024 at
    # nice 0, 110 at 10: the kernel's table), so a TA's nice reaches the submissions
    weights = ("from course.sandbox import Cgroup\n"
               "group = Cgroup.make(2**30, 64)\n"
               "print([f.joinpath(name).read_text().strip() for f in group.folders\n"
               "       for name in ('cpu.shares', 'cpu.weight.nice')\n"
               "       if f.joinpath(name).exists()])\n"
               "group.remove()")
    for nice, weight in ((0, "1024"), (10, "110")):
        printed = subprocess.run(["nice", "-n", str(nice), sys.executable, "-c", weights],
                                 cwd=ROOT, capture_output=True, text=True, check=True).stdout
        assert printed.strip() in (f"['{weight}']", f"['{nice}']"), printed


def test_the_sandbox_refuses_to_be_skipped_silently(toy, monkeypatch, capsys):
    monkeypatch.setattr("course.grade.sandbox_available", lambda: "bwrap is not installed")
    with pytest.raises(RuntimeError, match="pass --unsafe"):
        Grader(toy["reference"], toy["hidden"])
    with pytest.raises(SystemExit):
        main([str(toy["reference"]), "--reference", str(toy["reference"]),
              "--hidden", str(toy["hidden"])])
    assert "bwrap is not installed" in capsys.readouterr().err
    grader = Grader(toy["reference"], toy["hidden"], seed=16, timeout=20, unsafe=True)
    report = next(grader.grade_batch([answered(toy, "right")]))
    assert report.score == 5 and "--unsafe" in report.sandbox
    assert "without a sandbox" in gradescope_results(report)["output"]


def test_the_outcome_is_checked_field_by_field():
    good = {"cells": {"0": None, "2": ["ValueError", "no"]}, "printed": {"2": "x"}, "note": ""}
    assert checked_outcome(json.dumps(good).encode())["cells"] == {0: None, 2: ["ValueError", "no"]}
    for bad in ({"cells": []}, {**good, "cells": {"a": None}}, {**good, "printed": {"1": 5}},
                {**good, "note": None}, {**good, "cells": {"1": ["x"]}}, [1, 2]):
        with pytest.raises(ValueError, match="shape"):
            checked_outcome(json.dumps(bad).encode())
    for bad in (b"[" * 100000 + b"]" * 100000, b"{", b"x" * (MAX_RESULT + 1)):
        with pytest.raises(ValueError, match="not readable|larger"):
            checked_outcome(bad)
    with pytest.raises(ValueError, match="nested deeper"):
        hidden.value_printed(hidden.MARKER + "[" * 50 + "]" * 50)
    assert MAX_PRINTED > hidden.MAX_VALUE_CHARS + len(hidden.MARKER), "a long value is named"
    assert hidden.value_printed(hidden.MARKER + '["[[[[", 1]') == ["[[[[", 1]


def test_the_sandbox_shows_python_even_from_a_temporary_folder():
    """The sandbox's own /tmp is mounted before the read-only Python environment, which may
    lie under /tmp (a clone there): mounted after, it would hide it."""
    command = bwrap_command([], 2**30)
    mounts = [i for i, word in enumerate(command) if word == "--tmpfs"]
    binds = [i for i, word in enumerate(command)
             if word == "--ro-bind" and command[i + 1] != "/proc/sys"]
    assert mounts and binds and max(mounts) < min(binds)


def test_a_sandboxed_notebook_sees_no_file_of_the_grader(tmp_path):
    """The sandbox itself: a notebook looks for files it must not see."""
    secret = Path.home() / f".grader-secret-{os.getpid()}"
    secret.write_text("a credential")
    paths = [ROOT / "book", ROOT / "course" / "hidden", secret, tmp_path, Path("/etc/passwd")]
    try:
        assert all(path.exists() for path in paths)
        probe = ("import json, os\n"
                 f"paths = {list(map(str, paths))!r}\n"
                 "print('hidden-test-value:', json.dumps([os.path.exists(p) for p in paths]))")
        notebook = new_notebook(cells=[new_code_cell(probe, metadata={"hidden_test": "x"})])
        outcome = run_sandboxed(notebook, timeout=20, memory_gb=2, max_seconds=60)
    finally:
        secret.unlink()
    assert hidden.value_printed(outcome["printed"][0]) == [False] * len(paths)


def test_a_sandboxed_notebook_writes_only_into_its_sized_folders():
    """N33 of the second adversarial review: without a cgroup, a file written on bwrap's own
    root (an unsized tmpfs) took 4.5 GiB of the host's memory. The root is read-only now."""
    probe = ("import json, os\n"
             "def writes(path):\n"
             "    try:\n"
             "        with open(path, 'w') as f:\n"
             "            f.write('x')\n"
             "        return True\n"
             "    except OSError:\n"
             "        return False\n"
             "paths = ['/fill', '/opt/fill', os.path.expanduser('~/fill'), '/tmp/fill', "
             "'/dev/shm/fill']\n"
             "print('hidden-test-value:', json.dumps([writes(p) for p in paths]))")
    notebook = new_notebook(cells=[new_code_cell(probe, metadata={"hidden_test": "x"})])
    outcome = run_sandboxed(notebook, timeout=20, memory_gb=2, max_seconds=60)
    assert hidden.value_printed(outcome["printed"][0]) == [False, False, True, True, True]
    assert "writable: /tmp" in enforced_limits(2, 64)


# Opens for writing, which writes nothing, every file of the kernel's interfaces it can find;
# then writes three settings, each with the value it reads, so that even a sandbox that fails
# this test changes nothing on the machine.
KERNEL_PROBE = """\
import json, os
tried, opened, rewritten = 0, [], []
for top in ['/proc/sys', '/sys', '/proc/irq', '/proc/bus', '/proc/sysrq-trigger']:
    paths = [top] if os.path.isfile(top) else [
        os.path.join(folder, name) for folder, _, names in os.walk(top) for name in names]
    for path in paths:
        tried += 1
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NOFOLLOW))
            opened.append(path)
        except OSError:
            pass
for name in ['kernel/printk_ratelimit_burst', 'kernel/core_pattern', 'vm/swappiness']:
    try:
        value = open('/proc/sys/' + name).read()
        with open('/proc/sys/' + name, 'w') as setting:
            setting.write(value)
        rewritten.append(name)
    except OSError:
        pass
maps = [open(f'/proc/self/{kind}_map').read().split() for kind in ('uid', 'gid')]
print('hidden-test-value:', json.dumps([tried, opened, rewritten, os.getuid(), maps]))
"""


def test_no_kernel_setting_is_written_whoever_runs_the_grader():
    """R1 of the third adversarial review: a grader running as root (a VM, a CI runner, a
    container; CI runs this test as root) gave bubblewrap's sandbox the host's uid 0, and the
    kernel decides writes to /proc/sys by uid, so a submission rewrote the host's
    kernel.printk_ratelimit_burst and could set kernel.core_pattern. Now every file under
    /proc/sys, /sys, /proc/irq and /proc/bus (and /proc/sysrq-trigger) refuses to open for
    writing, and under root the sandbox's user is the machine's nobody."""
    settings = [Path("/proc/sys/kernel", name) for name in ("printk_ratelimit_burst",
                                                            "core_pattern")]
    before = [path.read_text() for path in settings]
    notebook = new_notebook(cells=[new_code_cell(KERNEL_PROBE, metadata={"hidden_test": "x"})])
    outcome = run_sandboxed(notebook, timeout=60, memory_gb=2, max_seconds=300)
    tried, opened, rewritten, uid, maps = hidden.value_printed(outcome["printed"][0])
    assert tried > 100, "the sandbox shows /proc/sys, read-only"
    assert (opened, rewritten, uid) == ([], [], 1000)
    if os.geteuid() == 0:  # the sandbox's user and group are nobody's, and root is not 0 inside
        nobody = pwd.getpwnam("nobody").pw_uid
        assert maps[0] == ["1", "0", "1", "1000", str(nobody), "1"], maps
    assert [path.read_text() for path in settings] == before


def test_loops_memory_and_exits_are_named(toy):
    """Each limit is tested with the others far away, so that none is reached first on a
    machine five times slower: no honest cell takes more than 2 s on an idle one (the first,
    which imports torch), and starting the kernel and every cell before the loop, a few."""
    grader = Grader(toy["reference"], toy["hidden"], seed=9, timeout=20, max_seconds=300,
                    memory_gb=4)
    a, b = grader.grade(answered(toy, "loop", "def double(x):\n    while True:\n        pass"))
    assert a.score == 0 and "longer than 20 s" in a.message and b.score == 3
    greedy = "import numpy\nbig = numpy.ones(2**31)\n" + DOUBLE
    a, _ = grader.grade(answered(toy, "greedy", greedy))
    assert a.score == 0 and "out of memory" in a.message, a.message
    a, b = grader.grade(answered(toy, "exits", DOUBLE, "import os\nos._exit(3)"))
    assert "exited with status 3" in b.message
    # a loop that ignores the cell limit's interrupt runs on to the limit of the whole
    # submission, and is stopped there
    whole = Grader(toy["reference"], toy["hidden"], seed=9, timeout=3, max_seconds=20)
    stubborn = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "while True:\n    pass")
    start = time.monotonic()
    a, b = whole.grade(answered(toy, "stubborn", DOUBLE, SQUARE, stubborn))
    assert time.monotonic() - start < 20 * 5
    assert (a.score, b.score) == (0, 0) and "longer than 20 s in all" in b.message


def test_a_large_answer_is_refused_not_timed_out(toy):
    """Values larger than a pipe's buffer come back while the worker is still running, and
    one too long to parse is refused, quickly."""
    grader = Grader(toy["reference"], toy["hidden"], seed=12, timeout=20, max_seconds=60)
    a, b = grader.grade(answered(toy, "large", "def double(x):\n    return [x] * 200_000"))
    assert a.score == 0 and "longer than 1000000 characters" in a.message and b.score == 3


def test_bad_input_is_refused(toy, tmp_path):
    with pytest.raises(ValueError, match="reference"):
        Grader(tmp_path / "missing.ipynb", toy["hidden"])
    for name, value in (("timeout", 0), ("memory_gb", -1), ("max_seconds", True),
                        ("seed", -1), ("seed", "abc"), ("seed", 2**32)):
        with pytest.raises(ValueError, match=name):
            Grader(toy["reference"], toy["hidden"], **{name: value})
    with pytest.raises(ValueError, match="no hidden tests"):
        Grader(toy["reference"], tmp_path / "submissions")
    (toy["hidden"] / "toy.py").write_text(TOY_TESTS.replace("double({x})", "double({x}, 1)"))
    with pytest.raises(ValueError, match="fails on the reference"):
        Grader(toy["reference"], toy["hidden"], timeout=20)
    with pytest.raises(ValueError, match="processes"):
        Grader(toy["reference"], toy["hidden"], processes=2.5)
    with pytest.raises(TypeError, match="unsafe"):
        Grader(toy["reference"], toy["hidden"], unsafe="yes")
    bad = small_notebook(tmp_path / "bad.ipynb", [code("x = 1")], {"ex-a": "ten"})
    with pytest.raises(ValueError, match="exercises"):
        exercise_points(nbformat.read(bad, as_version=4))


def test_the_grader_writes_over_no_submission_and_reads_through_no_link(toy, capsys):
    """A file named like an option (--csv=carol.ipynb, after a glob without --) and a submission
    that links to a reference, or sits in a linked folder (N11-N13 of the second adversarial
    review of the grader)."""
    carol = toy["submissions"] / "carol.ipynb"
    carol.write_bytes(toy["reference"].read_bytes())
    for option in ("--csv", "--written", "--gradescope"):
        with pytest.raises(SystemExit):
            main(["--reference", str(toy["reference"]), "--hidden", str(toy["hidden"]),
                  f"{option}={carol}", "--", str(carol)])
        assert "never writes over" in capsys.readouterr().err, option
    with pytest.raises(SystemExit):
        main(["--reference", str(toy["reference"]), "--csv", str(toy["reference"]), "--",
              str(carol)])
    assert "never writes over" in capsys.readouterr().err, "nor over another notebook"
    assert nbformat.read(carol, as_version=4).cells, "carol's notebook is still hers"
    mallory = toy["submissions"] / "mallory.ipynb"
    mallory.symlink_to(toy["reference"])
    eve = toy["submissions"] / "eve"
    eve.symlink_to(toy["reference"].parent, target_is_directory=True)
    grader = Grader(toy["reference"], toy["hidden"])
    linked, in_linked_folder, honest = grader.grade_batch([mallory, eve / "toy.ipynb", carol])
    for report in (linked, in_linked_folder):
        assert report.score == 0 and "symbolic link" in report.error, report.error
    assert honest.score == honest.max_score


def test_a_hard_link_is_refused_and_a_safe_unpacking_makes_none(toy, tmp_path):
    """R5 and R6 of the third adversarial review: an archive's hard link to the instructor
    edition (outside the submissions' folder), or to a classmate's notebook unpacked into the
    same folder, scored full marks. A file with other names is now refused; either name may
    be the original, so both are, each saying how to unpack. Unpacked as the appendix says
    (each archive into a folder of its own, Python's tarfile with filter="data"), a link out
    of the folder is not made, and the classmate is graded in full."""
    import io
    import tarfile
    carol = answered(toy, "carol")
    oscar = toy["submissions"] / "oscar.ipynb"
    os.link(toy["reference"], oscar)
    mallory = toy["submissions"] / "mallory.ipynb"
    os.link(carol, mallory)
    grader = Grader(toy["reference"], toy["hidden"], seed=17, timeout=30)
    reports = list(grader.grade_batch([oscar, mallory, carol]))
    for report in reports:
        assert report.score == 0 and "the file has 2 names" in report.error, report.error
    mallory.unlink()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        member = tarfile.TarInfo("toy.ipynb")
        member.type, member.linkname = tarfile.LNKTYPE, "../carol/toy.ipynb"
        tar.addfile(member)
    (tmp_path / "carol").mkdir()
    shutil.copy(carol, tmp_path / "carol" / "toy.ipynb")
    archive.seek(0)
    with tarfile.open(fileobj=archive) as tar, pytest.raises(tarfile.LinkOutsideDestinationError):
        tar.extractall(tmp_path / "mallory", filter="data")
    assert not (tmp_path / "mallory" / "toy.ipynb").exists()
    assert scores_of(grader, tmp_path / "carol" / "toy.ipynb") == [2, 3]


def test_a_huge_notebook_is_refused_before_it_is_read(tmp_path):
    """N32 of the second adversarial review: 300,000 cells (33 MB) took 1.8 GiB in the
    grader's own process, outside every limit."""
    big = tmp_path / "big.ipynb"
    big.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "x": "'
                   + "y" * (MAX_NOTEBOOK_BYTES + 1) + '"}')
    with pytest.raises(ValueError, match="MiB a notebook may have"):
        read_notebook(big, "notebook")
    many = tmp_path / "many.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1") for _ in range(MAX_CELLS + 1)]),
                   many)
    with pytest.raises(ValueError, match="cells a notebook may have"):
        read_notebook(many, "notebook")
    # N32 of the third review: 12 MiB of empty JSON objects took the grader to 7.1 GiB
    empties = json.loads(nbformat.writes(new_notebook()))
    empties["metadata"]["x"] = [{}] * (MAX_JSON_NODES + 1)
    objects = tmp_path / "objects.ipynb"
    objects.write_text(json.dumps(empties))
    with pytest.raises(ValueError, match="JSON objects and arrays, more than the 100,000"):
        read_notebook(objects, "notebook")
    chapter = [read_notebook(path, "notebook") for path in CHAPTERS]
    assert all(chapter), "the book's chapters hold far fewer"


def test_the_gradescope_export_takes_one_submission(toy, capsys):
    with pytest.raises(SystemExit):
        main([str(toy["reference"]), str(toy["reference"]), "--reference",
              str(toy["reference"]), "--gradescope", "results.json"])
    assert "--gradescope grades one submission, got 2" in capsys.readouterr().err


def test_what_a_submission_writes_is_shown_as_text(tmp_path):
    """An error message with terminal escapes cannot hide or forge rows of the table, nor
    reach Gradescope as HTML; a file name or message that starts like a formula stays text
    in a spreadsheet."""
    forged = "\r\x1b[2Kex-a   2 / 2 all passed\x1b[8m\u202e"
    report = Report('=HYPERLINK("https://evil.example").ipynb', [
        ExerciseScore("ex-a", 2, 0, f"0 of 3 hidden tests passed; it raised E: {forged}")],
        error="-1+1 <img src=x onerror=alert(1)>\x1b]52;c;aGk=\x07")
    text = table(report.exercises)
    assert len(text.splitlines()) == 2 and "\\x1b[2K" in text and "\\u202e" in text
    assert not any(c in text for c in "\r\x1b\u202e")
    write_csv([report], tmp_path / "grades.csv")
    with (tmp_path / "grades.csv").open() as file:
        row = dict(zip(*csv.reader(file), strict=True))
    assert row["notebook"] == "'" + report.notebook and row["error"].startswith("'-1+1")
    result = gradescope_results(report)
    assert result["output_format"] == "text" and "\x1b" not in result["output"]
    assert all(t["output_format"] == "text" and "\x1b" not in t["output"]
               for t in result["tests"])


def test_the_judges_compare_plain_data():
    judge = hidden.close(rtol=1e-6)
    assert judge([1.0, [True, float("nan")]], [1.0 + 1e-9, [True, float("nan")]]) == ""
    assert judge([1.0], [2.0]) == "[0] is wrong"  # never the right value
    assert "a list of 1" in judge([1.0], [1.0, 2.0])
    assert judge(1, True) == "the value is wrong"  # a boolean answer must be a boolean
    assert hidden.close(locate=False)([1.0, 3.0], [1.0, 2.0]) == "the value is wrong"
    # a fourth matrix once reached the check as its offset, and the message named the check's
    # argument (small finding of the third adversarial review)
    recognizers = hidden.load("recognizers")
    (weights,) = recognizers.hidden_tests(random.Random(1), {})["ex-rec-previous"]
    assert weights.judge([[[1.0]]] * 4, [[[1.0]]] * 3) == "not a list of 3 weight matrices"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_value_that_is_the_same_in_every_batch_is_not_located(chapter):
    """N24 of the second adversarial review: a test of a bare name (`naive`, `limit`) has the
    same value in every batch, so a message that named the wrong entry let resubmissions find
    the answer entry by entry; such a test's message names no position."""
    module = hidden.load(chapter.stem)
    variants = chapter_variants(module.VARIANTS, chapter.stem, 1)
    for tests in (module.hidden_tests(random.Random(0), v) for v in ({}, variants)):
        for test in (t for label in tests.values() for t in label):
            if test.expression.isidentifier():
                assert "[" not in test.judge([[1.0, 3.0]], [[1.0, 2.0]]), test.expression
    assert hidden.value_printed(f"noise\n{hidden.MARKER} [1, 2.5]\n") == [1, 2.5]
    with pytest.raises(ValueError, match="no value"):
        hidden.value_printed("nothing")
    # brackets inside strings, escaped quotes and backslashes do not count as nesting
    assert hidden.value_printed(f'{hidden.MARKER} ["[[", "\\\\", "\\"]"]') == ["[[", "\\", '"]']
    deep = "[" * (hidden.MAX_DEPTH + 1) + "]" * (hidden.MAX_DEPTH + 1)
    with pytest.raises(ValueError, match="nested deeper"):
        hidden.value_printed(f"{hidden.MARKER} {deep}")
    # N7 of the second adversarial review: 400,000 escaped quotes, read in one pass (the old
    # regex retried from every quote: about 28 s for 40,000, and quadratic)
    quotes = '"' + '\\"' * 400_000 + '"'
    assert hidden.value_printed(f"{hidden.MARKER} {quotes}") == '"' * 400_000


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


def test_a_csv_holds_one_run_and_any_file_name_is_graded(toy, tmp_path, capsys, monkeypatch):
    """R9, T9 and T10 of the third adversarial review: a file name that is not UTF-8 (from an
    archive) crashed the table under a strict UTF-8 terminal, or the CSV, and nobody after it
    was graded; a batch resumed into the same CSV, or a second grader on it, dropped the
    earlier rows in silence. Now the name is written with its bytes escaped, and a CSV that
    exists is refused before anything runs."""
    odd, honest = answered(toy, "x-\udcff\udcfe"), answered(toy, "honest")
    assert os.fsencode(odd).endswith(b"x-\xff\xfe.ipynb")
    grades = tmp_path / "grades.csv"
    command = [str(odd), str(honest), "--reference", str(toy["reference"]), "--hidden",
               str(toy["hidden"]), "--seed", "18", "--csv", str(grades)]
    terminal = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", terminal)
    main(command)
    terminal.flush()
    printed = terminal.buffer.getvalue().decode()
    assert "x-\\xff\\xfe.ipynb" in printed and str(honest) in printed
    rows = list(csv.DictReader(grades.open()))
    assert [(Path(r["notebook"]).name, r["total"]) for r in rows] == [
        ("x-\\xff\\xfe.ipynb", "5"), ("honest.ipynb", "5")]
    monkeypatch.setattr("course.grade.run_sandboxed", lambda *a, **k: pytest.fail("it ran"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main(command)
    assert stopped.value.code == 2 and "the file exists" in capsys.readouterr().err
    assert list(csv.DictReader(grades.open())) == rows


def test_a_course_seed_found_by_trying_is_refused(toy, tmp_path, capsys):
    """R11 of the third adversarial review: with the appendix's example seed (2027), one
    student's editions gave the seed back in 15 s, and with it every classmate's edition.
    The command lines take only a seed of at least 2**32, and say how to draw one."""
    out = tmp_path / "editions"
    for command in ([str(toy["reference"]), "--out", str(out), "--course-seed", "2027"],
                    [str(toy["reference"]), "--reference", str(toy["reference"]),
                     "--course-seed", "2027"]):
        with pytest.raises(SystemExit) as stopped:
            (assignments.main if "--out" in command else main)(command)
        error = capsys.readouterr().err
        assert stopped.value.code == 2 and "at least 2**32" in error and "secrets" in error
    assert not out.exists(), "no edition was written"


def _variant_answer(edition: Path, label: str) -> str:
    notebook = nbformat.read(edition, as_version=4)
    (cell,) = tagged(notebook, ANSWER, label)
    return notebook.cells[cell].source


def test_each_student_is_graded_against_their_own_variant(toy, tmp_path):
    """With a course seed and a roster, each student gets a variant of the exercises; the
    book's answer and a classmate's do not pass it, and the student's own does."""
    module = hidden.load("toy", toy["hidden"])
    names = [f"student{k}" for k in range(40)]
    factor = {name: chapter_variants(module.VARIANTS, "toy", 7, name)["ex-a"].name
              for name in names}
    ann = names[0]
    bob = next(name for name in names if factor[name] != factor[ann])
    roster = tmp_path / "roster.csv"
    roster.write_text(f"student\n{ann}\n{bob}\n")
    out = tmp_path / "editions"
    written = write_editions([toy["reference"]], out, course_seed=7, roster=roster,
                             hidden=toy["hidden"])
    assert written == [out / "student" / ann / "toy.ipynb", out / "student" / bob / "toy.ipynb"]
    k = factor[ann].split()[-1]
    statement = nbformat.read(written[0], as_version=4).cells[1].source
    assert f"returns {k}x" in statement and "raise NotImplementedError" in "".join(
        c.source for c in nbformat.read(written[0], as_version=4).cells)
    rows = list(csv.DictReader((out / "instructor" / "variants.csv").open()))
    assert [(r["student"], r["chapter"]) for r in rows] == [(ann, "toy"), (bob, "toy")]
    ann_reference = out / "instructor" / "variants" / f"toy-{rows[0]['variant']}.ipynb"
    assert f"return {k} * x" in _variant_answer(ann_reference, "ex-a")

    grader = Grader(out / "instructor" / "toy.ipynb", toy["hidden"], seed=17, timeout=20,
                    course_seed=7, roster=roster)
    own = _variant_answer(ann_reference, "ex-a")
    cube = "def square(t):\n    return t * t * t"
    for name, double in ((ann, own), (bob, DOUBLE), (bob, own)):  # own, the book's, copied
        (toy["submissions"] / name).mkdir(exist_ok=True)
        path = answered(toy, name, double, cube)
        path.rename(toy["submissions"] / name / "toy.ipynb")
        scores = scores_of(grader, toy["submissions"] / name / "toy.ipynb")
        assert scores == ([2, 3] if (name, double) == (ann, own) else [0, 3]), (name, scores)
    stranger = answered(toy, "stranger")
    (report,) = grader.grade_batch([stranger])
    assert report.score == 0 and "not on the roster" in report.error


def _handed_in(out: Path, student: str, submissions: Path, name: str | None = None) -> Path:
    """``student``'s edition, answered with its own variant's model answers, handed in as
    ``submissions/<name>/toy.ipynb`` (``name`` defaults to the student)."""
    edition = nbformat.read(out / "student" / student / "toy.ipynb", as_version=4)
    rows = csv.DictReader((out / "instructor" / "variants.csv").open())
    variant = next(r["variant"] for r in rows if r["student"] == student)
    reference = out / "instructor" / "variants" / f"toy-{variant}.ipynb"
    for label in ("ex-a", "ex-b"):
        (i,) = tagged(edition, ANSWER, label)
        edition.cells[i].source = _variant_answer(reference, label)
    path = submissions / (name or student) / "toy.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(edition, path)
    return path


def test_a_tas_mistakes_are_caught_before_anything_is_graded(toy, tmp_path, capsys):
    """T1, T2 and T7 of the third adversarial review: graded with another course seed, or
    without the roster the editions were made with, honest students got 0/7 and 2/7, and
    against a reference whose model answer was edited, 5/7, all in silence. Each student
    edition now names its edition, and each instructor edition carries a digest of its cells:
    the grader stops before it grades, and says why; one student's notebook of another
    edition (a classmate's, handed in as theirs) gets a row that says so."""
    module = hidden.load("toy", toy["hidden"])

    def edition(seed, name=""):
        return edition_name(chapter_variants(module.VARIANTS, "toy", seed, name))
    wrong = COURSE_SEED + 1
    names = [n for n in (f"student{k}" for k in range(60))
             if edition(COURSE_SEED, n) not in (edition(wrong, n), edition(COURSE_SEED))]
    ann = names[0]
    bob = next(n for n in names if edition(COURSE_SEED, n) != edition(COURSE_SEED, ann))
    mallory = next(n for n in names if n != bob and edition(COURSE_SEED, ann) not in (
        edition(COURSE_SEED, n), edition(wrong, n)))
    roster = tmp_path / "roster.csv"
    roster.write_text(f"student\n{ann}\n{bob}\n{mallory}\n")
    out = tmp_path / "editions"
    write_editions([toy["reference"]], out, course_seed=COURSE_SEED, roster=roster,
                   hidden=toy["hidden"])
    submissions = tmp_path / "submissions"
    paths = [_handed_in(out, ann, submissions), _handed_in(out, bob, submissions),
             _handed_in(out, ann, submissions, mallory)]  # mallory hands in ann's notebook
    reference = out / "instructor" / "toy.ipynb"
    common = ["--reference", reference, "--hidden", toy["hidden"], "--roster", roster,
              "--csv", tmp_path / "grades.csv", "--", *paths]
    with pytest.raises(SystemExit) as stopped:  # T1: another course seed
        main([str(a) for a in ["--course-seed", wrong, *common]])
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and "3 of the 3 that name their edition" in error, error
    assert "is --course-seed the one" in error and "Nothing was graded" in error
    assert not (tmp_path / "grades.csv").exists()
    no_roster = Grader(reference, toy["hidden"], seed=19, timeout=20, course_seed=COURSE_SEED)
    with pytest.raises(ValueError, match="--roster given"):  # T2: the roster forgotten
        no_roster.grade_batch(paths[:2])
    grader = Grader(reference, toy["hidden"], seed=19, timeout=20, course_seed=COURSE_SEED,
                    roster=roster)
    honest_ann, honest_bob, copied = grader.grade_batch(paths)
    assert honest_ann.score == honest_bob.score == 5
    assert copied.score == 0 and "another student's or another course's" in copied.error
    edited = nbformat.read(reference, as_version=4)  # T7: a model answer edited
    (i,) = tagged(edited, ANSWER, "ex-b")
    edited.cells[i].source += " + 0 * t"
    nbformat.write(edited, reference)
    with pytest.raises(ValueError, match="was changed after course.assignments wrote it"):
        Grader(reference, toy["hidden"], course_seed=COURSE_SEED, roster=roster)


def test_a_course_seed_alone_gives_everyone_one_variant(toy, tmp_path):
    out = tmp_path / "editions"
    (student,) = write_editions([toy["reference"]], out, course_seed=3, hidden=toy["hidden"])
    assert student == out / "student" / "toy.ipynb"
    metadata = nbformat.read(student, as_version=4).metadata
    assert metadata.course_variant == "graded", "the edition is a variant, but it names none"
    grader = Grader(out / "instructor" / "toy.ipynb", toy["hidden"], seed=18, timeout=20,
                    course_seed=3)
    assert scores_of(grader, answered(toy, "book")) == [0, 0]  # the book's answers
    plain = Grader(toy["reference"], toy["hidden"], seed=18, timeout=20)
    (report,) = plain.grade_batch([student])
    assert "--course-seed" in report.error, "a variant's edition needs the course seed"
    variant = next((out / "instructor" / "variants").glob("toy-*.ipynb"))
    with pytest.raises(ValueError, match="edition of one variant"):
        Grader(variant, toy["hidden"], course_seed=3)


def test_an_instructors_own_exercises_are_graded_from_a_private_folder(tmp_path, capsys):
    """For instructors' worked example: course/template copied to a folder outside the
    repository, each student's edition made and graded with the documented commands. A
    student's own variant scores full marks; the template's answer and the untouched edition
    score 0, and a classmate's of another variant less than full marks (at most the tests of
    short strings with few 1s, where two variants may both find no such 1); no edition names
    its variant."""
    private = tmp_path / "private" / "homework"
    shutil.copytree(ROOT / "course" / "template", private)
    make = hidden.load("homework", private / "hidden").VARIANTS
    names = ["ann", "bob", "cid", "dan", "eve", "fay"]
    edition = {name: edition_name(chapter_variants(make, "homework", COURSE_SEED, name))
               for name in names}
    ann, bob = names[0], next(name for name in names if edition[name] != edition[names[0]])
    cid = next(name for name in names if name not in (ann, bob))
    roster = tmp_path / "roster.csv"
    roster.write_text(f"student\n{ann}\n{bob}\n{cid}\n")
    out = tmp_path / "editions"
    common = ["--hidden", private / "hidden", "--course-seed", COURSE_SEED, "--roster", roster]
    assignments.main([str(a) for a in [private / "homework.ipynb", *common, "--out", out]])
    submissions = tmp_path / "submissions"
    ann_reference = out / "instructor" / "variants" / f"homework-{edition[ann]}.ipynb"
    for name, answer_from in ((ann, ann_reference), (bob, private / "homework.ipynb"),
                              (cid, None)):
        student = nbformat.read(out / "student" / name / "homework.ipynb", as_version=4)
        assert student.metadata.course_variant == "graded"
        if answer_from is not None:
            (i,) = tagged(student, ANSWER, "ex-hw-last")
            student.cells[i].source = _variant_answer(answer_from, "ex-hw-last")
        (submissions / name).mkdir(parents=True)
        nbformat.write(student, submissions / name / "homework.ipynb")
    copied = nbformat.read(out / "student" / bob / "homework.ipynb", as_version=4)
    (i,) = tagged(copied, ANSWER, "ex-hw-last")
    copied.cells[i].source = _variant_answer(ann_reference, "ex-hw-last")
    (submissions / "copies").mkdir()
    nbformat.write(copied, submissions / "copies" / f"{bob}.ipynb")  # bob, by its file name
    capsys.readouterr()
    main([str(a) for a in ["--reference", out / "instructor" / "homework.ipynb", *common,
                           "--seed", "5", "--json", "--",
                           *(submissions / n / "homework.ipynb" for n in (ann, bob, cid)),
                           submissions / "copies" / f"{bob}.ipynb"]])
    printed = capsys.readouterr()
    records = [json.loads(line) for line in printed.out.splitlines()]
    assert [r["score"] for r in records[:3]] == [2, 0, 0] and records[3]["score"] < 2, records
    assert "not answered" in records[2]["exercises"][0]["message"]
    assert "hidden tests are" in printed.err and "unchanged" in printed.err, "R12: edit them"


def test_twelve_courses_get_twelve_editions():
    """Self-attention's variants are drawn from the course seed: twelve courses get twelve
    editions, and each exercise several variants (the exercises that had one alternative
    have five or more now)."""
    module = hidden.load("self_attention")
    editions = [chapter_variants(module.VARIANTS, "self_attention", seed)
                for seed in range(2026, 2038)]
    assert len({edition_name(edition) for edition in editions}) == 12
    for label in module.VARIANTS:
        assert len({edition[label].name for edition in editions}) >= 3, label


def _names_read(tests: list[HiddenTest]) -> frozenset[str]:
    """The names of the submission's that hidden tests read (not the grader's ``_``-names)."""
    import ast
    import builtins
    return frozenset(node.id for test in tests
                     for node in ast.walk(ast.parse(f"{test.setup}\n{test.expression}"))
                     if isinstance(node, ast.Name) and not node.id.startswith("_")
                     and not hasattr(builtins, node.id))


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if hasattr(hidden.load(c.stem),
                                                                    "VARIANTS")],
                         ids=lambda p: p.stem)
def test_every_variant_of_an_exercise_is_answered_under_one_name(chapter):
    """N22: where each variant named its function apart (``three_ones``, ``four_zeros``), one
    notebook could carry every variant's answer and score full marks for everyone. Every variant
    of an exercise now reads the same names."""
    module = hidden.load(chapter.stem)
    read = {}
    for seed in range(40):
        variants = chapter_variants(module.VARIANTS, chapter.stem, seed)
        for label, tests in module.hidden_tests(random.Random(seed), variants).items():
            read.setdefault(label, set()).add(_names_read(tests))
    assert {label: len(names) for label, names in read.items()} == dict.fromkeys(read, 1), read


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if hasattr(hidden.load(c.stem),
                                                                    "VARIANTS")],
                         ids=lambda p: p.stem)
def test_every_variant_edition_fits_the_page(chapter):
    """A variant's code obeys the book's 79 characters a line, in the editions of 40 courses."""
    module, book = hidden.load(chapter.stem), nbformat.read(chapter, as_version=4)
    for seed in range(40):
        edition = apply_variants(book, chapter_variants(module.VARIANTS, chapter.stem, seed))
        for cell in edition.cells:
            if cell.cell_type == "code":
                long = [line for line in cell.source.splitlines() if len(line) > 79]
                assert not long, (seed, cell.metadata.get("exercise"), long)


@pytest.mark.parametrize("course_seed", [None, *range(8)])
def test_zeros_pass_no_test_of_the_margin_exercise(course_seed):
    """e2: a no_margin that returns zeros passes no hidden test of ex-rec-zero, in the book's
    exercise or a variant: each test's strings include some that are not ties. The expected
    values are the construction's logits without the margin, (2k - m - lead) / n."""
    from companion.languages import all_strings
    module = hidden.load("recognizers")
    variants = {} if course_seed is None else chapter_variants(module.VARIANTS, "recognizers",
                                                                 course_seed)
    lead = variants["ex-rec-zero"].params["lead"] if variants else 0
    no_margin = lambda w: (2 * w.sum(dim=1) - w.shape[1] - lead) / (w.shape[1] + 1)  # noqa: E731
    for test in module.hidden_tests(random.Random(course_seed), variants)["ex-rec-zero"]:
        expected = eval(test.expression, {"no_margin": no_margin, "all_strings": all_strings,
                                          "torch": __import__("torch")}).tolist()
        assert test.judge(expected, expected) == ""
        assert test.judge([0.0] * len(expected), expected), test.expression


def test_a_huge_circuit_of_the_wrong_class_is_refused_before_it_runs(monkeypatch):
    """N34: 950,000 characters of MAJORITY gates for an AC exercise are refused by the class
    rule; the judge never evaluates the circuit."""
    module = hidden.load("circuits")
    monkeypatch.setattr("companion.circuits.Circuit.evaluate",
                        lambda *_: pytest.fail("a refused circuit was evaluated"))
    test = module.hidden_tests(random.Random(0), {})["ex-circ-two"][-1]
    n = int(re.search(r"two_ones\((\d+)\)", test.expression)[1])
    gates = [["MAJORITY", list(range(n))] for _ in range(20_000)]
    gates.append(["OR", list(range(n, n + 20_000))])
    assert len(json.dumps(gates)) > 950_000
    why = test.judge([n, gates, n + 20_000], None)
    assert "gate rules of AC" in why, why


def test_a_variant_must_match_the_book():
    notebook = new_notebook(cells=[statement("ex-a", "Write `double(x)`."),
                                   code(DOUBLE, ANSWER, "ex-a")])
    changed = apply_variants(notebook, {"ex-a": Variant("x3", {"2 * x": "3 * x"})})
    assert changed.cells[1].source.endswith("3 * x") and notebook.cells[1].source.endswith("2 * x")
    assert changed.metadata.course_variant == {"ex-a": "x3"}
    with pytest.raises(ValueError, match="'4 \\* x' is not in the exercise"):
        apply_variants(notebook, {"ex-a": Variant("x5", {"4 * x": "5 * x"})})
    with pytest.raises(ValueError, match="states no such exercise"):
        apply_variants(notebook, {"ex-b": Variant("x5", {"2 * x": "5 * x"})})
    with pytest.raises(ValueError, match="course_seed"):
        chapter_variants({}, "toy", -1)


# ------------------------------------------------------------------------ the book's chapters


@pytest.fixture(scope="module")
def editions(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("assignments")
    write_editions(CHAPTERS, out)
    return out


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_has_no_solutions_and_plain_roles(chapter):
    book = nbformat.read(chapter, as_version=4)
    student = student_edition(book, chapter.stem)
    points = exercise_points(book)
    numbers = exercise_numbers(book, chapter.stem)
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
    assert not re.search(r"\b(lemma|theorem|proposition|definition|exercise) “", markdown), (
        "a reference to a box reads its number, as in the book")
    assert text.count("```{exercise}") == len(points)  # a box in JupyterLab, as in the book
    for label in points:
        [answer] = tagged(book, ANSWER, label)
        assert "hide-cell" in tags(book.cells[answer]), "the book folds its model answer"
        assert book.cells[answer].metadata.jupyter.source_hidden, "and so does JupyterLab"
        [stub] = tagged(student, ANSWER, label)
        name = f"{numbers[label]} ({label})"  # "Exercise 7.1 (ex-steps-compile)"
        assert student.cells[stub].source.startswith(f"# Your answer to {name};")
        assert f'raise NotImplementedError("{name}: not answered yet")' in (
            student.cells[stub].source)
        assert "hide-cell" not in tags(student.cells[stub]), "a student sees the stub"
        assert "jupyter" not in student.cells[stub].metadata
        checks = [student.cells[i].source for i in tagged(student, CHECK, label)]
        assert checks == [f'# Checks {name}\n{book.cells[i].source}\nprint("{name}: the checks '
                          'pass")' for i in tagged(book, CHECK, label)]
    for label in written_points(book):
        assert len(tagged(student, WRITTEN, label, "markdown")) == 1
    assert instructor_edition(book).cells == book.cells  # and the book is left as it was


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_has_hidden_tests(chapter):
    points = exercise_points(nbformat.read(chapter, as_version=4))
    module = hidden.load(chapter.stem)
    assert set(module.VARIANTS) == set(points), "every graded exercise has variants"
    book = nbformat.read(chapter, as_version=4)
    for seed in range(40):
        variants = chapter_variants(module.VARIANTS, chapter.stem, seed) if seed else {}
        if variants:
            apply_variants(book, variants)  # every replaced text is in the book's exercise
        tests = module.hidden_tests(random.Random(seed), variants)
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


def test_every_work_of_the_bibliography_cites_with_its_year_in_plain_letters():
    """A student edition cites as "Furst et al. (1984)": the year even where it is an entry's
    last field (it was left out), and BibTeX's accents as letters ("Håstad", not "H\\aastad")."""
    keys = re.findall(r"^@\w+\{([\w-]+),", BIBLIOGRAPHY.read_text(), re.M)
    for key in keys:
        text = student_edition(new_notebook(cells=[new_markdown_cell(
            f"{{cite:t}}`{key}`")])).cells[0].source
        assert re.fullmatch(r"[^\\{}]+ \((19|20)\d\d\)", text), (key, text)
    text = student_edition(new_notebook(cells=[new_markdown_cell(
        "{cite:t}`hastad1987computational`; {cite:p}`schutzenberger1965finite`")])).cells[0]
    assert text.source == "Håstad (1987); (Schützenberger, 1965)"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_exercises_have_the_numbers_of_the_book(chapter):
    """Exercise k of the chapter at place c among the numbered parts' chapters of _toc.yml is
    "Exercise c.k", as sphinx-exercise numbers it in the HTML (the PDF's are compared with the
    HTML's in tests/test_book.py); every exercise of a chapter is graded, so the graded
    exercises in the order of their cells are the chapter's exercises in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = [Path(c["file"]).name for part in toc["parts"] if part.get("numbered")
                for c in part["chapters"]]
    book = nbformat.read(chapter, as_version=4)
    expected = {label: f"Exercise {numbered.index(chapter.stem) + 1}.{k}"
                for k, label in enumerate(exercise_points(book), 1)}
    assert exercise_numbers(book, chapter.stem) == expected
    assert chapter_numbers()[chapter.stem] == numbered.index(chapter.stem) + 1


def test_exercise_numbers_follow_the_table_of_contents(tmp_path):
    """Chapters are numbered across the numbered parts; an appendix's exercises are numbered
    without a chapter, an exercise marked :nonumber: gets no number and takes none, and a
    notebook outside the book keeps its labels."""
    toc = tmp_path / "_toc.yml"
    toc.write_text(yaml.safe_dump({"root": "intro", "parts": [
        {"caption": "I", "numbered": True, "chapters": [{"file": "book/one"}]},
        {"caption": "II", "numbered": True, "chapters": [{"file": "book/toy"}]},
        {"caption": "Appendices", "chapters": [{"file": "book/extra"}]}]}))
    assert chapter_numbers(toc) == {"one": 1, "toy": 2, "extra": None}
    notebook = new_notebook(cells=[
        statement("ex-a"),
        new_markdown_cell("```{exercise} Unnumbered\n:nonumber:\n:label: ex-n\n\nDo.\n```"),
        new_markdown_cell("```{exercise}\nNo label.\n```\n\n" + statement("ex-b").source)])
    assert exercise_numbers(notebook, "toy", toc) == {"ex-a": "Exercise 2.1",
                                                      "ex-b": "Exercise 2.3"}
    assert exercise_numbers(notebook, "extra", toc) == {"ex-a": "Exercise 1",
                                                        "ex-b": "Exercise 3"}
    assert exercise_numbers(notebook, "elsewhere", toc) == {}


def test_the_grader_names_exercises_by_number(tmp_path):
    """Rows of the grader's table, its CSV's columns and Gradescope's tests say "Exercise 2.1"
    beside the label; an exercise without a number goes by its label."""
    scores = [ExerciseScore("ex-a", 2, 1, "1 of 2 hidden tests passed", "Exercise 2.1"),
              ExerciseScore("ex-b", 3, 3, "3 of 3 hidden tests passed")]
    report = Report("alice.ipynb", scores)
    assert table(scores).splitlines()[0].startswith("Exercise 2.1 (ex-a)  ")
    assert table(scores).splitlines()[1].startswith("ex-b   ")
    write_csv([report], tmp_path / "grades.csv", {"ex-a": 1})
    (row,) = csv.DictReader((tmp_path / "grades.csv").open())
    assert (row["Exercise 2.1 (ex-a)"], row["ex-b"], row["total"]) == ("1", "3", "4")
    assert "Exercise 2.1 (ex-a) (written, of 1)" in row
    names = [test["name"] for test in gradescope_results(report)["tests"]]
    assert names == ["Exercise 2.1 (ex-a)", "ex-b"]


def test_a_chapter_of_the_book_is_edited_and_graded_by_number(toy, tmp_path, monkeypatch):
    """With the toy chapter second in the table of contents, its student edition's stub and
    written part, the grader's rows and the written answers' headings say "Exercise 2.1"."""
    toc = tmp_path / "_toc.yml"
    toc.write_text(yaml.safe_dump({"root": "intro", "parts": [{
        "caption": "I", "numbered": True,
        "chapters": [{"file": "book/other"}, {"file": "book/toy"}]}]}))
    monkeypatch.setattr("course.numbers.TOC", toc)
    student = student_edition(nbformat.read(toy["reference"], as_version=4), "toy")
    (stub,) = tagged(student, ANSWER, "ex-b")
    assert "Exercise 2.2 (ex-b)" in student.cells[stub].source
    (written,) = tagged(student, WRITTEN, "ex-a", "markdown")
    assert "Exercise 2.1 (ex-a)" in student.cells[written].source
    path = toy["submissions"] / "untouched.ipynb"
    nbformat.write(student, path)
    grader = Grader(toy["reference"], toy["hidden"], seed=3, timeout=20)
    a, b = grader.grade(path)
    assert (a.name, b.name) == ("Exercise 2.1 (ex-a)", "Exercise 2.2 (ex-b)")
    assert a.message.startswith("not answered")
    write_written_answers([path], toy["reference"], tmp_path / "written.ipynb")
    text = "\n".join(c.source for c in nbformat.read(tmp_path / "written.ipynb", 4).cells)
    assert "## Exercise 2.1 (ex-a) (1 point)" in text
    assert "*(no written answer)*" in text, "the prompt left as it was is no answer"


# Chapters cheap enough to run in a kernel again and again: their instructor edition (and a
# variant's) is also graded as a submission, the whole pipeline end to end. For every chapter,
# making the Grader runs the reference once and judges each hidden test's value against
# itself, refusing one that fails (Grader.variant): since a chapter prints the same numbers on
# every run on one machine, grading the reference again would repeat that run and that
# judgement. The other chapters pay two runs instead of four: one run of the book judges its own
# hidden tests, with and without the answers, and a variant's (test_one_run_of_the_book_...).
GRADED_AGAIN = {"recognizers", "self_attention", "layer_norm", "circuits"}
CHEAP = [chapter for chapter in CHAPTERS if chapter.stem in GRADED_AGAIN]
EXPENSIVE = [chapter for chapter in CHAPTERS if chapter.stem not in GRADED_AGAIN]
# A chapter's longest cell takes about 90 s on an idle two-core machine (Learning FIRST and
# PARITY's training); graded here, a cell gets the time nbval gives it (pyproject.toml).
CELL_SECONDS = 600
UNANSWERED = "unanswered_test"  # metadata of a hidden test's copy run before its answer


def test_the_chapters_graded_again_are_chapters():
    assert GRADED_AGAIN <= {chapter.stem for chapter in CHAPTERS}


def _seeds(chapter: Path) -> tuple[int, int]:
    """The grader's seed and a course seed for ``chapter``, the same on every run."""
    return (random.Random(chapter.stem).randrange(2**32),
            random.Random(chapter.stem).randrange(2**16))


def _not_answered(scores, chapter: Path) -> bool:
    return ([s.label for s in scores] == list(exercise_points(nbformat.read(chapter, 4)))
            and all(s.score == 0 and s.message.startswith("not answered") for s in scores))


@pytest.mark.slow  # runs a whole chapter in a kernel three times
@pytest.mark.parametrize("chapter", CHEAP, ids=lambda p: p.stem)
def test_the_instructor_edition_scores_full_marks_and_the_student_edition_zero(
        chapter, editions):
    grader = Grader(editions / "instructor" / chapter.name, timeout=CELL_SECONDS,
                    seed=_seeds(chapter)[0])
    scores = grader.grade(editions / "instructor" / chapter.name)
    assert all(s.score == s.points for s in scores), table(scores)
    scores = grader.grade(editions / "student" / chapter.name)
    assert _not_answered(scores, chapter), table(scores)


@pytest.mark.slow  # runs a whole chapter in a kernel three times
@pytest.mark.parametrize("chapter", CHEAP, ids=lambda p: p.stem)
def test_the_book_does_not_answer_a_graded_variant(chapter, editions, tmp_path):
    """Graded against a variant (a course seed's), the book's model answers score 0 on every
    exercise, and the variant's own reference answers full marks."""
    seed, course_seed = _seeds(chapter)
    grader = Grader(editions / "instructor" / chapter.name, course_seed=course_seed,
                    timeout=CELL_SECONDS, seed=seed)
    variant = apply_variants(nbformat.read(editions / "instructor" / chapter.name, 4),
                             grader.variants_of(chapter))
    nbformat.write(variant, tmp_path / chapter.name)
    scores = grader.grade(tmp_path / chapter.name)
    assert all(s.score == s.points for s in scores), table(scores)
    scores = grader.grade(editions / "instructor" / chapter.name)
    assert all(s.score == 0 for s in scores), table(scores)


@pytest.mark.slow  # runs a whole chapter in a kernel twice
@pytest.mark.parametrize("chapter", EXPENSIVE, ids=lambda p: p.stem)
def test_one_run_of_the_book_judges_its_own_tests_and_a_variants(chapter, editions):
    """A course's grader runs its variant's reference, judging the variant's hidden tests on
    it; and one run of the book's instructor edition, carrying the hidden tests of its own
    exercises and the variant's, passes its own (each judged against itself, as the grader
    judges a reference), fails every one of the variant's (the book does not answer the
    variant), and fails its own where they also run just before the exercise's first answer
    cell: without its answer an exercise scores 0, so a student edition, whose answer cells
    only raise (test_student_edition_has_no_solutions_and_plain_roles), scores 0 too. (The
    cheap chapters grade their student edition as a submission.)"""
    seed, course_seed = _seeds(chapter)
    instructor = editions / "instructor" / chapter.name
    grader = Grader(instructor, course_seed=course_seed, timeout=CELL_SECONDS, seed=seed)
    variant_tests, expected = grader.variant(grader.variants_of(chapter))
    own_tests = grader.module.hidden_tests(random.Random(seed), {})
    to_run, _ = notebook_to_run(
        nbformat.read(instructor, 4),
        {label: own_tests[label] + variant_tests[label] for label in grader.points})
    for label in sorted(grader.points, key=lambda label: tagged(to_run, ANSWER, label)[0],
                        reverse=True):
        at = tagged(to_run, ANSWER, label)[0]
        to_run.cells[at:at] = [
            new_code_cell(test.cell_source(), metadata={HIDDEN_TEST: label, UNANSWERED: True})
            for test in own_tests[label]]
    outcome = run_sandboxed(to_run, **grader.reference_limits)
    for label in grader.points:
        tests = [(i, c) for i, c in enumerate(to_run.cells) if c.metadata.get(HIDDEN_TEST) == label]
        cells = [i for i, c in tests if UNANSWERED not in c.metadata]
        unanswered = [i for i, c in tests if UNANSWERED in c.metadata]
        own = len(own_tests[label])
        for test, cell, before in zip(own_tests[label], cells[:own], unanswered, strict=True):
            value, why = value_of(outcome, cell)
            assert not (why or judged(test, value, value)), (label, test.expression, why)
            unanswered_value, unanswered_why = value_of(outcome, before)
            assert unanswered_why or judged(test, unanswered_value, value), (
                f"{label}: {test.expression} passes before the answer cell has run")
        for test, cell, value in zip(variant_tests[label], cells[own:], expected[label],
                                     strict=True):
            answer, why = value_of(outcome, cell)
            assert why or judged(test, answer, value), (
                f"{label}: the book answers the variant's {test.expression}")


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
