"""The autograder (course.grade) on a class: graded several submissions at a time (--jobs), in
shards merged afterwards (--shard, merge), and what it says when the reference itself fails.

Each notebook is run in the sandbox once in this file: a later test that grades the same
notebook (the same cells, under the same limits) gets the outcome recorded the first time
(:func:`replayed`), so the tests of the outputs cost no sandbox runs of their own (a test run
alone runs what it needs)."""

import copy
import json
import threading
import time

import nbformat
import pytest
from test_course import SQUARE, answered, code, small_notebook, statement, submit, toy

from course import grade, hidden
from course.assignments import ANSWER, CHECK
from course.grade import Grader, main, merge_shards
from course.hidden import MARKER
from course.sandbox import HIDDEN_TEST, run_sandboxed
from course.variants import chapter_variants, edition_name

__all__ = ["toy"]  # the toy chapter of test_course, a fixture here too

SEED = "11"
RUNS: dict[str, dict] = {}  # the outcome of each notebook run in these tests, by _key
# the tests here replay the toy chapter's runs, on one pytest-xdist worker (make test's; see
# conftest.py), where the first of them records the runs


def _key(notebook, limits: dict) -> str:
    cells = [[cell.cell_type, cell.source] for cell in notebook.cells]
    return json.dumps([cells, limits], sort_keys=True)


def replayed(monkeypatch) -> None:
    """Make the grader run a notebook in the sandbox only the first time in these tests, and
    replay that outcome afterwards."""
    def run(notebook, stop=None, **limits):
        key = _key(notebook, limits)
        if key not in RUNS:
            RUNS[key] = run_sandboxed(notebook, stop=stop, **limits)
        return copy.deepcopy(RUNS[key])
    monkeypatch.setattr(grade, "run_sandboxed", run)


def class_of(toy) -> list:
    """Five submissions: a wrong one that takes a while, an honest one, one that is no
    notebook, an untouched student edition, and a file that is missing."""
    broken = toy["submissions"] / "broken.ipynb"
    broken.write_text("{")
    return [answered(toy, "slow", "def double(x):\n    return x + 1", SQUARE,
                     "import time\ntime.sleep(3)"),
            answered(toy, "honest"), broken, submit(toy, "untouched"),
            toy["submissions"] / "missing.ipynb"]


def options(toy, *notebooks) -> list:
    return [*notebooks, "--reference", toy["reference"], "--hidden", toy["hidden"],
            "--seed", SEED]


def graded(capsys, *arguments) -> str:
    """What ``python -m course.grade ARGUMENTS`` prints."""
    capsys.readouterr()
    main([str(a) for a in arguments])
    return capsys.readouterr().out


def refused(capsys, *arguments) -> str:
    """The error with which ``python -m course.grade ARGUMENTS`` stops."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main([str(a) for a in arguments])
    assert stopped.value.code == 2
    return capsys.readouterr().err


# ------------------------------------------------------------------------ a class in parallel


def test_jobs_2_gives_the_outputs_of_jobs_1(toy, tmp_path, capsys, monkeypatch):
    """Two submissions graded at once, in real sandboxes, give the table, JSON lines, CSV and
    Gradescope file of one at a time, in the order of the submissions."""
    paths = class_of(toy)
    ran = []  # (start, end, whether it is the slow submission) of each sandbox run

    def timed(notebook, stop=None, **limits):
        start = time.monotonic()
        RUNS[_key(notebook, limits)] = outcome = run_sandboxed(notebook, stop=stop, **limits)
        ran.append((start, time.monotonic(), any("sleep(3)" in c.source for c in notebook.cells)))
        return outcome
    monkeypatch.setattr(grade, "run_sandboxed", timed)
    jobs_2 = graded(capsys, *options(toy, *paths), "--jobs", 2, "--json",
                    "--csv", tmp_path / "2.csv")
    records = [json.loads(line) for line in jobs_2.splitlines()]
    assert [r["notebook"] for r in records] == list(map(str, paths))
    assert [r["score"] for r in records] == [3, 5, 0, 0, 0]
    assert "not a Jupyter notebook" in records[2]["error"]
    assert "no such file" in records[4]["error"]
    assert "not answered" in records[3]["exercises"][0]["message"]
    runs = sorted(ran)[1:]  # the submissions', after the reference's
    slow = next(run for run in runs if run[2])
    assert any(run is not slow and run[0] < slow[1] and slow[0] < run[1] for run in runs), (
        "the submissions ran one at a time")

    replayed(monkeypatch)
    jobs_1 = graded(capsys, *options(toy, *paths), "--jobs", 1, "--json",
                    "--csv", tmp_path / "1.csv")
    assert jobs_1 == jobs_2
    assert (tmp_path / "1.csv").read_bytes() == (tmp_path / "2.csv").read_bytes()
    tables = [graded(capsys, *options(toy, *paths), "--jobs", jobs) for jobs in (1, 2)]
    assert tables[0] == tables[1]
    assert tables[0].index(str(paths[0])) < tables[0].index(str(paths[1]))
    for jobs in (1, 2):
        graded(capsys, *options(toy, paths[1]), "--jobs", jobs,
               "--gradescope", tmp_path / f"results-{jobs}.json")
    results = [(tmp_path / f"results-{jobs}.json").read_bytes() for jobs in (1, 2)]
    assert results[0] == results[1] and json.loads(results[0])["score"] == 5


def test_a_batch_closed_early_ends_its_sandboxes(toy, monkeypatch):
    """Stopping after the first report (as an interrupt does) ends the submission still
    running at once, not when its cell runs out of time (120 s)."""
    replayed(monkeypatch)
    grader = Grader(toy["reference"], toy["hidden"], seed=int(SEED))
    broken = toy["submissions"] / "broken.ipynb"
    broken.write_text("{")
    reports = grader.grade_batch([broken, submit(toy, "endless", "while True:\n    pass")],
                                 jobs=2)
    assert "not a Jupyter notebook" in next(reports).error
    start = time.monotonic()
    reports.close()
    assert time.monotonic() - start < 60


def test_a_rosters_references_run_once_per_edition_on_the_workers(toy, tmp_path,
                                                                    monkeypatch):
    """With a roster each student has an edition of their own: its reference runs once, on
    the batch's workers (two at a time with --jobs 2), and each student is graded against their
    own. The runs are stand-ins that print 42 for every hidden test: what is counted here is
    who runs where, not what a kernel computes."""
    names = [f"s{k}" for k in range(12)]
    roster = tmp_path / "roster.csv"
    roster.write_text("student\n" + "\n".join(names) + "\n")
    ran = []  # (thread, whether the run is a reference's) of each run

    def stand_in(notebook, stop=None, **limits):
        ran.append((threading.current_thread().name,
                    limits["timeout"] == grade.REFERENCE_TIMEOUT))
        tests = [i for i, cell in enumerate(notebook.cells) if cell.metadata.get(HIDDEN_TEST)]
        return {"cells": dict.fromkeys(range(len(notebook.cells))),
                "printed": {i: f"{MARKER} 42" for i in tests}, "note": ""}
    monkeypatch.setattr(grade, "run_sandboxed", stand_in)
    grader = Grader(toy["reference"], toy["hidden"], seed=3, timeout=20, course_seed=7,
                    roster=roster)
    assert ran == [], "a roster's references run with the batch that needs them"
    make = hidden.load("toy", toy["hidden"]).VARIANTS
    edition = [edition_name(chapter_variants(make, "toy", 7, name)) for name in names]
    reports = list(grader.grade_batch([submit(toy, name) for name in names], jobs=2))
    assert [report.variant for report in reports] == edition
    references = [thread for thread, is_reference in ran if is_reference]
    assert len(references) == len(set(edition)) > 1
    assert all(thread.startswith("reference") for thread in references)
    assert len(ran) == len(references) + len(names)


def test_shards_merged_give_the_grades_of_one_run(toy, tmp_path, capsys, monkeypatch):
    """A class graded in three shards, merged in any order, gives the JSON lines, CSV and
    table of one run; a shard missing, given twice or of another batch is refused."""
    replayed(monkeypatch)
    paths = class_of(toy)
    one_run = graded(capsys, *options(toy, *paths), "--json", "--csv", tmp_path / "one.csv")
    one_table = graded(capsys, *options(toy, *paths))
    shards = []
    for k in (1, 2, 3):
        shards.append(tmp_path / f"shard-{k}.json")
        shards[-1].write_text(graded(capsys, *options(toy, *paths), "--shard", f"{k}/3",
                                     "--json"))
    first = [json.loads(line) for line in shards[0].read_text().splitlines()]
    assert [r["notebook"] for r in first] == [str(paths[0]), str(paths[3])]
    assert [r["shard"]["position"] for r in first] == [0, 3]

    merged = graded(capsys, "merge", shards[2], shards[0], shards[1], "--json",
                    "--csv", tmp_path / "merged.csv")
    assert merged == one_run
    assert (tmp_path / "merged.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert graded(capsys, "merge", *shards) == one_table

    assert "1 of 5 submissions are in no shard (number 3," in refused(
        capsys, "merge", shards[0], shards[1])
    assert "(submission 1) is in two shards" in refused(capsys, "merge", *shards, shards[0])
    other = tmp_path / "other.json"
    line = json.loads(shards[2].read_text())
    line["shard"]["batch"] = "another"
    other.write_text(json.dumps(line))
    assert f"{other}, line 1 is of another batch than {shards[0]}" in refused(
        capsys, "merge", shards[0], shards[1], other)
    assert "--gradescope writes one submission's grade, the shards hold 5" in refused(
        capsys, "merge", *shards, "--gradescope", tmp_path / "results.json")

    # R13 of the third adversarial review: records edited in a shard's file
    def edited(change) -> str:
        lines = [json.loads(line) for line in shards[0].read_text().splitlines()]
        change(lines)
        other.write_text("\n".join(json.dumps(line) for line in lines))
        return refused(capsys, "merge", other, shards[1], shards[2])

    def score(value):
        return lambda lines: lines[0]["exercises"][0].update(score=value)
    assert "ex-a scores 30 of 2 points" in edited(score(30))
    assert "ex-a scores -1 of 2 points" in edited(score(-1))
    assert "ex-a scores nan of 2 points" in edited(score(float("nan")))
    assert "exercises or their points are not the batch's" in edited(
        lambda lines: lines[0]["exercises"].append({**lines[0]["exercises"][0],
                                                    "label": "ex-bonus", "points": 100}))
    assert "exercises or their points are not the batch's" in edited(
        lambda lines: lines[0]["exercises"][0].update(points=20, score=20))

    def swapped(lines):
        lines[0]["notebook"], lines[1]["notebook"] = lines[1]["notebook"], lines[0]["notebook"]
    assert "do not name the batch's submissions in its order" in edited(swapped)
    assert "is not a shard's record" in edited(lambda lines: lines[0]["shard"].update(
        points={"ex-a": float("inf"), "ex-b": 3}))


def test_shards_of_other_references_or_tests_are_not_merged(toy, tmp_path, capsys,
                                                            monkeypatch):
    """T11 of the third adversarial review: a shard graded against an edited reference (or
    other hidden tests) merged without a word; now its batch is another."""
    replayed(monkeypatch)
    paths = class_of(toy)[:2]
    shards = [tmp_path / "shard-1.json", tmp_path / "shard-2.json"]
    shards[0].write_text(graded(capsys, *options(toy, *paths), "--shard", "1/2", "--json"))
    reference = nbformat.read(toy["reference"], as_version=4)
    reference.cells[2].source += "\n# edited"
    nbformat.write(reference, toy["reference"])
    shards[1].write_text(graded(capsys, *options(toy, *paths), "--shard", "2/2", "--json"))
    assert f"{shards[1]}, line 1 is of another batch than {shards[0]}" in refused(
        capsys, "merge", *shards)


def test_bad_jobs_shard_and_merge_input_is_refused(toy, tmp_path, capsys, monkeypatch):
    notebook = toy["reference"]
    for argument, value in (("--jobs", "0"), ("--jobs", "-2"), ("--jobs", "two"),
                            ("--shard", "0/3"), ("--shard", "4/3"), ("--shard", "a/b"),
                            ("--shard", "3")):
        error = refused(capsys, *options(toy, notebook), argument, value)
        assert f"argument {argument}: must be" in error and repr(value) in error
    error = refused(capsys, notebook, "--reference", notebook, "--shard", "1/2")
    assert "--shard needs --seed" in error

    not_json = tmp_path / "grades.csv"
    not_json.write_text("notebook,total\nada.ipynb,5\n")
    assert f"shards: {not_json}, line 1 is not a JSON line" in refused(capsys, "merge", not_json)
    unsharded = tmp_path / "unsharded.json"
    unsharded.write_text(json.dumps({"notebook": "ada.ipynb", "score": 5}) + "\n")
    assert f"{unsharded}, line 1 is not a shard's record" in refused(capsys, "merge", unsharded)
    (tmp_path / "empty.json").write_text("\n")
    assert "no records" in refused(capsys, "merge", tmp_path / "empty.json")
    assert "cannot read" in refused(capsys, "merge", tmp_path / "missing.json")
    with pytest.raises(ValueError, match="line 1 is not a JSON line"):
        merge_shards([not_json])

    replayed(monkeypatch)
    grader = Grader(toy["reference"], toy["hidden"], seed=int(SEED))
    for jobs, error in ((0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="jobs"):
            grader.grade_batch([notebook], jobs=jobs)


# ------------------------------------------------------------------------ the reference


DOUBLE_21 = '''\
from course.hidden import HiddenTest

def hidden_tests(rng, variants):
    return {"ex-a": [HiddenTest("double(21)")]}
'''


def reference_of(folder, answer: str):
    """A reference of one exercise, ``double.ipynb`` in ``folder`` with its hidden test, whose
    answer cell holds ``answer``."""
    (folder / "double.py").write_text(DOUBLE_21)
    return small_notebook(folder / "double.ipynb", [
        code("x = 1"), statement("ex-a"), code(answer, ANSWER, "ex-a"),
        code("assert double(3) == 6", CHECK, "ex-a")], {"ex-a": 2})


def test_the_reference_cell_that_failed_first_is_named(tmp_path):
    reference = reference_of(tmp_path, "raise RuntimeError('no data')\ndef double(x):\n"
                                       "    return 2 * x")
    with pytest.raises(ValueError) as error:
        Grader(reference, tmp_path, seed=1)
    assert str(error.value) == (
        "hidden: reference cell 3 of 4 (ex-a, `raise RuntimeError('no data')`) failed first: "
        "it raised RuntimeError: no data; then the test 'double(21)' of ex-a fails on the "
        "reference: it raised NameError: name 'double' is not defined")


def test_a_reference_cell_out_of_time_is_named(tmp_path, monkeypatch):
    """On a machine so busy that the reference's cell runs out of its (default) time, the
    message says so; the students' limit is lower, and the reference is not held to it."""
    monkeypatch.setattr(grade, "REFERENCE_TIMEOUT", 2)  # the default, as a busy machine sees it
    reference = reference_of(tmp_path, "import time\ntime.sleep(600)\ndef double(x):\n"
                                       "    return 2 * x")
    with pytest.raises(ValueError, match=r"reference cell 3 of 4 \(ex-a, `import time`\) "
                                         r"failed first: the cell ran longer than 2 s; then "
                                         r"the test 'double\(21\)' of ex-a fails"):
        Grader(reference, tmp_path, seed=1, timeout=1)


def test_a_slow_reference_gets_the_default_limits(tmp_path):
    """Students' limits of 1 s per cell and in all do not stop a reference that takes 3 s."""
    reference = reference_of(tmp_path, "import time\ntime.sleep(3)\ndef double(x):\n"
                                       "    return 2 * x")
    grader = Grader(reference, tmp_path, seed=1, timeout=1, max_seconds=1)
    assert grader.variant({})[1] == {"ex-a": [42]}
    assert (grader.limits["timeout"], grader.limits["max_seconds"]) == (1, 1)
    assert (grader.reference_limits["timeout"], grader.reference_limits["max_seconds"]) == (
        grade.REFERENCE_TIMEOUT, grade.REFERENCE_MAX_SECONDS)
