"""Autograder: score submitted notebooks by hidden tests judged outside the submission.

A :class:`Grader` is made for one instructor edition (the *reference*). It draws the inputs of
the chapter's hidden tests (:mod:`course.hidden`) from a seed, runs the reference once to learn
the expected values, and then grades each submission on its own: the grader writes the notebook
to run (the submission without its check cells, each exercise's hidden tests where its part of
the notebook ends) and executes it in the sandbox of :mod:`course.sandbox`, which shows it no
file of the grader's, the reference's or another submission's. The values the tests print come
back to the grader, which parses them with limits on size and depth and judges them in its own
process, each judgement bounded in time; the visible checks are for students and count for
nothing. An exercise scores its points times the fraction of its tests that pass. A submission
that cannot be graded (not a notebook, a kernel that dies, an outcome the grader cannot read, an
error of the grader's while judging it) gets a row that says what went wrong, and the batch goes
on. The grader refuses to run where the sandbox cannot (:func:`course.sandbox.sandbox_available`)
unless told ``unsafe``, and every row it grades then says so. Exercises marked ``written`` (see
:mod:`course.assignments`) are graded by hand from the answers :func:`write_written_answers`
collects, sanitized.

A batch is graded ``jobs`` submissions at a time (:meth:`Grader.grade_batch`), each in a sandbox
of its own with its own limits (the sandboxes run in worker threads, the values are judged in
the main thread), and its reports come in the order of the submissions. Beyond one machine,
each machine grades a *shard* (``--shard k/N``: the k-th of every N submissions, in the order
given on the command line), and ``merge`` combines the shards' JSON lines into the outputs of
one run (:func:`merge_shards`). The reference gets at least the default time limits, whatever
the students' are: it runs once per edition (each student's, with a roster), and if it fails,
every submission of that edition fails with it.

Command line::

    python -m course.grade --reference instructor/chapter.ipynb \\
        [--hidden DIR] [--seed N] [--timeout 120] [--memory 8] [--processes 512] \\
        [--max-seconds 1800] [--course-seed N [--roster FILE] [--student NAME]] [--unsafe] \\
        [--jobs N] [--shard K/N] [--json] [--csv grades.csv] [--written written.ipynb] \\
        [--gradescope results.json] -- submissions/*.ipynb
    python -m course.grade merge shard-*.json [--json] [--csv grades.csv] \\
        [--gradescope results.json]
"""

import argparse
import csv
import hashlib
import html
import json
import math
import os
import random
import re
import signal
import sys
import threading
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path

import bleach
import nbformat
from nbconvert import HTMLExporter

from course import hidden as hidden_tests
from course.assignments import (
    ANSWER,
    CHECK,
    EDITION,
    SOURCES,
    VARIANT,
    WRITTEN,
    as_path,
    exercise_points,
    exercise_statements,
    plain_markdown,
    points_text,
    read_notebook,
    sources_digest,
    statement_titles,
    tagged,
    written_points,
    written_prompt,
)
from course.numbers import exercise_numbers, numbered
from course.sandbox import (
    HIDDEN_TEST,
    TIMEOUT,
    SandboxUnavailable,
    enforced_limits,
    run_sandboxed,
    sandbox_available,
)
from course.variants import (
    apply_variants,
    chapter_variants,
    checked_course_seed,
    course_seed_option,
    edition_key,
    read_roster,
)

JUDGE_SECONDS = 60  # the longest the grader spends judging one value
# The least time the reference gets, per cell and in all (the students' defaults): it runs once
# per edition, and a reference that fails (on a busy machine) fails every submission.
REFERENCE_TIMEOUT, REFERENCE_MAX_SECONDS = 120, 1800
UNSAFE = "none (--unsafe): the submission could read and change what the grader can"



@dataclass
class ExerciseScore:
    """The grade of one exercise: ``score`` out of ``points``, ``message`` says why;
    ``number`` is the book's ("Exercise 7.1"), empty for a notebook not in the book."""

    label: str
    points: float
    score: float
    message: str
    number: str = ""

    @property
    def name(self) -> str:
        """"Exercise 7.1 (ex-learn-threshold)", or the label where there is no number."""
        return numbered(self.label, {self.label: self.number} if self.number else {})


@dataclass
class Report:
    """The grades of one submission; ``error`` says why it could not be graded at all."""

    notebook: str
    exercises: list[ExerciseScore]
    error: str = ""
    sandbox: str = "bubblewrap"
    variant: str | None = None  # the edition graded against (None: the book's exercises)

    @property
    def score(self) -> float:
        return sum(s.score for s in self.exercises)

    @property
    def max_score(self) -> float:
        return sum(s.points for s in self.exercises)

    def record(self) -> dict:
        """The report as JSON-ready data, for a learning-management system."""
        return {"notebook": self.notebook, "score": self.score, "max_score": self.max_score,
                "error": self.error, "sandbox": self.sandbox, "variant": self.variant,
                "exercises": [asdict(s) for s in self.exercises]}

    @classmethod
    def from_record(cls, record) -> "Report":
        """The report whose :meth:`record` is ``record`` (read back from JSON); ``ValueError``
        for anything else."""
        try:
            report = cls(record["notebook"], [ExerciseScore(**s) for s in record["exercises"]],
                         record["error"], record["sandbox"], record["variant"])
        except (KeyError, TypeError) as error:
            raise ValueError(f"record: not a report's record ({error!r})") from None
        texts = [report.notebook, report.error, report.sandbox,
                 *(t for s in report.exercises for t in (s.label, s.message, s.number))]
        numbers = [x for s in report.exercises for x in (s.points, s.score)]
        if not (all(isinstance(t, str) for t in texts)
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in numbers)
                and (report.variant is None or type(report.variant) is str)):
            raise ValueError("record: not a report's record (a field has the wrong type)")
        return report


def _read_path(path, what: str) -> nbformat.NotebookNode:
    """The notebook at ``path`` (a str or a path); ``what`` names it in the error."""
    return read_notebook(as_path(path, what), what)


def handed_in(notebook) -> Path:
    """The path of a submitted notebook (a str or a path) that is a file of its own: a
    ``ValueError`` for a symbolic link, a file in a linked folder, or a file with other names
    (a hard link), which an archive unpacked into a shared folder may make to a classmate's
    notebook or an instructor's file."""
    path = as_path(notebook, "notebook")
    if path.is_symlink() or path.parent.is_symlink():
        raise ValueError("notebook: it is a symbolic link, or in a linked folder; the "
                         "grader reads only a file that the student handed in")
    with suppress(OSError):  # a missing file is read_notebook's to name
        if (links := path.stat().st_nlink) > 1:
            raise ValueError(f"notebook: the file has {links} names (a hard link, to a "
                             "classmate's notebook or another file); the grader reads only a "
                             "file of its own: unpack each student's archive into a folder of "
                             "its own")
    return path


def shown(path) -> str:
    """A path as text: a file name that is not UTF-8 (its bytes kept by Python as lone
    surrogates, which no UTF-8 output can hold) with each such byte as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _starts_exercise(cell, label: str) -> bool:
    """Whether ``cell`` begins another exercise than ``label`` (its statement or its cells)."""
    other = cell.metadata.get("exercise") not in (None, label)
    return other or (cell.cell_type == "markdown" and "```{exercise}" in cell.source)


def notebook_to_run(notebook, tests: dict) -> tuple[nbformat.NotebookNode, dict]:
    """``notebook`` without its check cells and with each exercise's hidden tests (``tests``
    maps labels to lists of :class:`~course.hidden.HiddenTest`) where its part ends: before
    the first cell after its last answer cell that starts another exercise, or at the end.
    Returns the notebook and ``{label: [index of each test's cell]}``. A cell of ``notebook``
    that carries the hidden tests' mark (a submission may forge it) loses it: only the cells
    placed here are tests."""
    result = nbformat.from_dict(notebook)
    result.cells = [c for c in result.cells if CHECK not in c.metadata.get("tags", [])]
    for cell in result.cells:
        cell.metadata.pop(HIDDEN_TEST, None)
    for label, label_tests in tests.items():
        cells = result.cells
        answers = tagged(result, ANSWER, label)
        later = [i for i in range(answers[-1] + 1, len(cells))
                 if _starts_exercise(cells[i], label)] if answers else []
        at = later[0] if later else len(cells)
        cells[at:at] = [nbformat.v4.new_code_cell(test.cell_source(),
                                                  metadata={HIDDEN_TEST: label})
                        for test in label_tests]
    where = {label: [i for i, c in enumerate(result.cells) if c.metadata.get(HIDDEN_TEST) == label]
             for label in tests}
    return result, where


def _shorter(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[:width - 5] + "[...]"


def _raised(ename: str, evalue: str) -> str:
    return f"it raised {ename}: {evalue}" if evalue else f"it raised {ename}"


def value_of(outcome: dict, index: int):
    """``(value, "")`` of the hidden test in cell ``index`` of a run (an outcome of
    :func:`~course.sandbox.run_sandboxed` of a notebook made by :func:`notebook_to_run`), or
    ``(None, why there is none)``."""
    if index not in outcome["cells"]:
        return None, outcome["note"] or "the test did not run"
    if outcome["cells"][index] is not None:
        ename, evalue = outcome["cells"][index]
        if ename == TIMEOUT:
            return None, f"it {evalue}; does your answer loop forever?"
        return None, _raised(ename, evalue)
    try:
        return hidden_tests.value_printed(outcome["printed"].get(index, "")), ""
    except ValueError as error:  # json's errors are ValueErrors too
        return None, str(error)


@contextmanager
def _time_limit(seconds: float):
    """Raise ``TimeoutError`` in the block after ``seconds`` (in the main thread, where Python
    delivers signals; elsewhere the block is not limited)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def judged(test, value, expected) -> str:
    """``test.judge(value, expected)``, bounded in time; an error of the judge's (a value it
    cannot handle) fails the test with a message, and never stops the grader."""
    try:
        with _time_limit(JUDGE_SECONDS):
            return test.judge(value, expected)
    except TimeoutError:
        return f"the grader gave up judging the value after {JUDGE_SECONDS} s"
    except Exception as error:  # noqa: BLE001 - any value a submission makes must be survived
        return f"the grader could not judge the value ({type(error).__name__})"


class Grader:
    """Grades submissions of one chapter against its instructor edition ``reference``: its
    own exercises, or with a ``course_seed`` the course's variant of them, or with a
    ``roster`` (a file, :func:`course.variants.read_roster`) each student's own variant
    (:mod:`course.variants`).

    ``hidden`` is the folder of the hidden tests (default: :mod:`course.hidden`'s), ``seed``
    draws their inputs (default: a fresh one, see :attr:`seed`). Every cell is limited to
    ``timeout`` seconds, a whole submission to ``max_seconds``, its memory to ``memory_gb``
    GiB and its processes (threads included) to ``processes``
    (:func:`course.sandbox.enforced_limits` says which limits hold on this machine). The
    reference gets the memory and processes of a submission, and the larger of the defaults
    (:data:`REFERENCE_TIMEOUT`, :data:`REFERENCE_MAX_SECONDS`) and ``timeout`` and
    ``max_seconds`` for its time. Raises :class:`~course.sandbox.SandboxUnavailable` where the
    sandbox cannot run, unless ``unsafe``, and ``ValueError`` when a hidden test fails on the
    reference itself."""

    def __init__(self, reference, hidden=None, seed: int | None = None, timeout: float = 120,
                 memory_gb: float = 8, max_seconds: float = 1800, processes: int = 512,
                 unsafe: bool = False, course_seed: int | None = None, roster=None):
        for name, value in (("timeout", timeout), ("memory_gb", memory_gb),
                            ("max_seconds", max_seconds), ("processes", processes)):
            if isinstance(value, bool) or not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not isinstance(processes, int):
            raise ValueError(f"processes must be a whole number, got {processes!r}")
        if not isinstance(unsafe, bool):
            raise TypeError(f"unsafe must be True or False, got {unsafe!r}")
        if not unsafe and (why := sandbox_available()):
            raise SandboxUnavailable(
                f"the grader runs submissions only in its sandbox, and here {why}; to grade "
                "without it (a submission could then read the answers and change the grader's "
                "files), pass --unsafe")
        self.reference = _read_path(reference, "reference")
        if VARIANT in self.reference.metadata:
            raise ValueError(f"reference: {reference} is the edition of one variant; give the "
                             "plain instructor edition, from which every variant is made")
        digest = self.reference.metadata.get(SOURCES)
        if digest is not None and digest != sources_digest(self.reference):
            raise ValueError(f"reference: {reference} was changed after course.assignments "
                             "wrote it (a model answer edited?), and every grade would follow "
                             "the change: edit the chapter, and make the editions again")
        self.points = exercise_points(self.reference)
        self.written = written_points(self.reference)
        if not self.points:
            raise ValueError(f"reference: {reference} has no graded exercises in its metadata")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                 or not 0 <= seed < 2**32):
            raise ValueError(f"seed must be an integer from 0 to 2**32 - 1 or None, got {seed!r}")
        self.seed = random.SystemRandom().randrange(2**32) if seed is None else seed
        self.chapter = Path(reference).stem
        self.numbers = exercise_numbers(self.reference, self.chapter)
        self.module = hidden_tests.load(self.chapter, hidden)
        if roster is not None and course_seed is None:
            raise ValueError("roster: a roster needs a course_seed (--course-seed)")
        self.course_seed = None if course_seed is None else checked_course_seed(course_seed)
        self.roster = read_roster(roster) if roster is not None else None
        self.limits = {"timeout": timeout, "memory_gb": memory_gb, "max_seconds": max_seconds,
                       "processes": processes, "unsafe": unsafe}
        self.reference_limits = {**self.limits, "timeout": max(timeout, REFERENCE_TIMEOUT),
                                 "max_seconds": max(max_seconds, REFERENCE_MAX_SECONDS)}
        self.sandbox = UNSAFE if unsafe else "bubblewrap"
        # what decides every grade but the submissions: shards of one batch share it
        self.inputs = hashlib.sha256(json.dumps([
            self.seed, self.course_seed, self.chapter, self.limits, self.roster,
            hashlib.sha256(Path(reference).read_bytes()).hexdigest(),
            hashlib.sha256(Path(self.module.__file__).read_bytes()).hexdigest()]).encode()
        ).hexdigest()[:16]
        # edition name (None: the book's exercises) -> (tests, values), or the error it raised
        self._variants: dict = {}
        if self.roster is None:
            self.variant(self.variants_of(None))

    def variant(self, variants: dict) -> tuple[dict, dict]:
        """The hidden tests of the edition that ``variants`` (``{label: Variant}``, see
        :meth:`variants_of`; empty: the book's own exercises) make, and their values in its
        reference, ``({label: [HiddenTest]}, {label: [value]})``, made on first use by running
        the edition's reference in the sandbox, once: an edition that failed raises its error
        again. Raises ``ValueError`` when a test fails on the reference, naming the
        reference's first cell that failed or ran out of time before it."""
        name = edition_key(variants)
        if name not in self._variants:
            self._variants[name] = self._values(self._attempt_reference(variants))
        made = self._variants[name]
        if isinstance(made, Exception):
            raise made.with_traceback(None)
        return made

    def _attempt_reference(self, variants: dict, stop: threading.Event | None = None):
        """The run of the reference of the edition ``variants`` make, with its hidden tests
        (safe in a worker thread): ``(reference, tests, to_run, where, outcome)``, or the error
        it raised."""
        try:
            reference = apply_variants(self.reference, variants) if variants else self.reference
            tests = self.module.hidden_tests(random.Random(self.seed), variants)
            missing = set(self.points) - set(tests)
            if missing or not all(tests.get(label) for label in self.points):
                raise ValueError(f"hidden: no hidden tests for "
                                 f"{sorted(missing) or 'an exercise'}")
            to_run, where = notebook_to_run(reference, tests)
            return reference, tests, to_run, where, run_sandboxed(
                to_run, **self.reference_limits, stop=stop)
        except Exception as error:  # noqa: BLE001 - kept, and raised for each submission
            return error

    def _values(self, run) -> tuple[dict, dict] | Exception:
        """The hidden tests and their values in a reference's run (:meth:`_attempt_reference`),
        judged in this thread; or the error that says why there are none."""
        if isinstance(run, Exception):
            return run
        reference, tests, to_run, where, outcome = run
        expected = {}
        for label, indices in where.items():
            expected[label] = []
            for test, cell in zip(tests[label], indices, strict=True):
                value, why = value_of(outcome, cell)
                why = why or judged(test, value, value)
                if why:
                    first = self._reference_failure(reference, to_run, outcome, cell)
                    return ValueError(f"hidden: {first + '; then ' if first else ''}the test "
                                      f"{test.expression!r} of {label} fails on the "
                                      f"reference: {why}")
                expected[label].append(value)
        return tests, expected

    def _reference_failure(self, reference, to_run, outcome, before: int) -> str:
        """What went wrong first in the reference's own cells before cell ``before`` of
        ``to_run`` (the notebook :func:`notebook_to_run` made of ``reference``): its first cell
        that raised or ran out of time, named by its place in ``reference`` (counted from 1),
        its exercise and its first line; or else how its run stopped; "" where nothing did."""
        places = iter(i for i, cell in enumerate(reference.cells)
                      if CHECK not in cell.metadata.get("tags", []))  # the cells kept, in order
        for index, cell in enumerate(to_run.cells[:before]):
            if cell.metadata.get(HIDDEN_TEST):
                continue
            place = next(places)
            if outcome["cells"].get(index) is None:
                continue
            ename, evalue = outcome["cells"][index]
            label = cell.metadata.get("exercise")
            first_line = next((line for line in cell.source.splitlines() if line.strip()), "")
            what = ", ".join(filter(None, [label and numbered(label, self.numbers),
                                           f"`{_shorter(first_line.strip(), 60)}`"]))
            why = evalue if ename == TIMEOUT else _raised(ename, evalue)
            return (f"reference cell {place + 1} of {len(reference.cells)} ({what}) failed "
                    f"first: {why}")
        return f"the reference's run stopped early ({outcome['note']})" if outcome["note"] else ""

    def variants_of(self, notebook, student: str | None = None) -> dict:
        """The variants (``{label: Variant}``) a submission is graded against: none without a
        course seed, the course's, or with a roster those of ``student`` (by default the name
        of the notebook's folder, or else its file name without ``.ipynb``, whichever is on
        the roster)."""
        if self.course_seed is None:
            return {}
        if self.roster is None:
            return chapter_variants(self.module.VARIANTS, self.chapter, self.course_seed)
        path = Path(notebook)
        names = [student] if student is not None else [path.parent.name, path.stem]
        on_roster = [name for name in names if name in self.roster]
        if not on_roster:
            raise ValueError(f"notebook: {' or '.join(map(repr, names))} is not on the roster")
        return chapter_variants(self.module.VARIANTS, self.chapter, self.course_seed,
                                on_roster[0])

    def grade(self, notebook, student: str | None = None) -> list[ExerciseScore]:
        """The scores of the submitted notebook at path ``notebook``, one per exercise, against
        its variants (:meth:`variants_of`)."""
        return self._judge(*self._run(notebook, student)[1])

    def _run(self, notebook, student: str | None, stop: threading.Event | None = None) -> tuple:
        """Run the submission at path ``notebook`` in its sandbox (ended when ``stop`` is set):
        ``(edition, judging)``, the name of its edition (:func:`edition_key`) and what
        :meth:`_judge` needs. Safe in a worker thread once its variant is made
        (:meth:`variant`)."""
        submission = _read_path(handed_in(notebook), "notebook")
        variants = self.variants_of(notebook, student)
        if not variants and VARIANT in submission.metadata:
            raise ValueError("notebook: it is an edition of a graded variant; grade it with the "
                             "course's --course-seed")
        mark = submission.metadata.get(EDITION)
        if mark is not None and mark != edition_key(variants):
            raise ValueError(f"notebook: it was handed out as edition {_shorter(str(mark), 20)}, "
                             f"and this student's is {edition_key(variants)}: another "
                             "student's or another course's notebook?")
        tests, expected_values = self.variant(variants)
        to_run, where = notebook_to_run(submission, tests)
        outcome = run_sandboxed(to_run, **self.limits, stop=stop)
        return edition_key(variants), (tests, expected_values, to_run, where, outcome)

    def _judge(self, tests, expected_values, to_run, where, outcome) -> list[ExerciseScore]:
        """Score a run of :meth:`_run` (in the main thread, where each judgement is bounded in
        time)."""
        scores = []
        for label, points in self.points.items():
            failures = []
            for test, cell, expected in zip(tests[label], where[label], expected_values[label],
                                            strict=True):
                value, why = value_of(outcome, cell)
                why = why or judged(test, value, expected)
                if why:
                    failures.append(f"{_shorter(test.expression)}: {why}")
            scores.append(self._score(label, points, len(tests[label]), failures, to_run,
                                      outcome))
        return scores

    def _score(self, label, points, total, failures, notebook, outcome) -> ExerciseScore:
        passed = total - len(failures)
        message = f"{passed} of {total} hidden tests passed"
        if not failures:
            return ExerciseScore(label, points, points, message, self.numbers.get(label, ""))
        answer_errors = [outcome["cells"][i] for i in tagged(notebook, ANSWER, label)
                         if outcome["cells"].get(i) is not None]
        if answer_errors:
            ename, evalue = answer_errors[0]
            if ename == "NotImplementedError" and not passed:
                message = "not answered: the answer cell still raises NotImplementedError"
            elif ename == "MemoryError" or "can't allocate memory" in evalue:
                message += f"; the answer cell ran out of memory (the grader's limit): {evalue}"
            else:
                message += f"; the answer cell raised {ename}: {evalue}"
        return ExerciseScore(label, points, points * passed / total,
                             f"{message}; failed: {failures[0]}", self.numbers.get(label, ""))

    def grade_batch(self, notebooks, student: str | None = None, jobs: int = 1):
        """Grade every notebook, ``jobs`` at a time (each in a sandbox of its own, with its own
        limits), yielding a :class:`Report` for each in the order of ``notebooks``, as soon as
        it and those before it are graded. One that cannot be graded, whatever the reason,
        gets a report with its ``error`` (and zero for every exercise), and the batch goes on.
        ``student`` names the student of a batch of one (see :meth:`variants_of`).

        The reference of every edition the batch needs runs first (``jobs`` at a time); then
        the sandboxes run in ``jobs`` worker threads (with ``jobs=1``, in the calling thread),
        and the values are judged in the calling thread, which should be the main thread
        (:func:`judged`). When the batch is interrupted or closed early, the sandboxes still
        running end with it."""
        if isinstance(jobs, bool) or not isinstance(jobs, int):
            raise TypeError(f"jobs must be a whole number, got {jobs!r}")
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        notebooks = list(notebooks)
        self._check_editions(notebooks, student)
        editions = {}  # name -> variants, of the editions not yet made
        for path in notebooks:
            with suppress(Exception):  # the notebook's report will say why
                variants = self.variants_of(path, student)
                editions[edition_key(variants)] = variants
        editions = {name: v for name, v in editions.items() if name not in self._variants}
        if not editions:
            return self._reports(notebooks, student, jobs)
        pool, stop = ThreadPoolExecutor(jobs, thread_name_prefix="reference"), threading.Event()
        try:
            runs = pool.map(self._attempt_reference, editions.values(),
                            [stop] * len(editions))
            for name, run in zip(editions, runs, strict=True):
                self._variants[name] = self._values(run)
        finally:  # interrupted: end the references still running
            stop.set()
            pool.shutdown(cancel_futures=True)
        return self._reports(notebooks, student, jobs)

    def _check_editions(self, notebooks: list, student: str | None) -> None:
        """Raise ``ValueError`` before anything runs where most of ``notebooks`` (two at least)
        that name the edition they were handed out as (:data:`EDITION`) were handed out as
        another than the one each is graded against: the TA's mistake (another course seed, a
        roster forgotten or another), not the students'. One student's such notebook gets a
        row that says so (:meth:`_run`)."""
        marked, wrong = 0, []
        for path in notebooks:
            with suppress(Exception):  # the notebook's report will say why
                mark = _read_path(handed_in(path), "notebook").metadata.get(EDITION)
                if mark is not None:
                    marked += 1
                    if mark != (ours := edition_key(self.variants_of(path, student))):
                        wrong.append(f"{shown(path)} was handed out as {_shorter(str(mark), 20)}"
                                     f", graded as {ours}")
        if len(wrong) >= 2 and 2 * len(wrong) > marked:
            raise ValueError(
                f"notebooks: {len(wrong)} of the {marked} that name their edition were handed "
                f"out as another edition than the one they would be graded against ("
                f"{'; '.join(wrong[:3])}{'; ...' if len(wrong) > 3 else ''}): is --course-seed "
                "the one the editions were made with, and --roster given if they were made "
                "with one? Nothing was graded")

    def _reports(self, notebooks: list, student: str | None, jobs: int):
        if jobs == 1:
            yield from (self._report(path, self._attempt(path, student))
                        for path in notebooks)
            return
        pool, stop = ThreadPoolExecutor(jobs, thread_name_prefix="grade"), threading.Event()
        try:
            runs = pool.map(self._attempt, notebooks, [student] * len(notebooks),
                            [stop] * len(notebooks))
            for path, ran in zip(notebooks, runs, strict=True):
                yield self._report(path, ran)
        finally:  # interrupted, or closed early: end the sandboxes still running, start none
            stop.set()
            pool.shutdown(cancel_futures=True)

    def _attempt(self, notebook, student: str | None, stop: threading.Event | None = None):
        """:meth:`_run`, or the error it raised."""
        try:
            return self._run(notebook, student, stop)
        except Exception as error:  # noqa: BLE001 - one submission never stops the batch
            return error

    def _report(self, path, ran) -> Report:
        """The report of a submission from its run, or from the error its run or judging
        raised."""
        if not isinstance(ran, Exception):
            edition, judging = ran
            try:
                return Report(shown(path), self._judge(*judging), sandbox=self.sandbox,
                              variant=edition)
            except Exception as error:  # noqa: BLE001 - one submission never stops the batch
                ran = error
        why = str(ran) if isinstance(ran, ValueError) else (
            f"the grader failed on it ({type(ran).__name__}: {ran})")
        zeros = [ExerciseScore(label, p, 0, why, self.numbers.get(label, ""))
                 for label, p in self.points.items()]
        return Report(shown(path), zeros, why, self.sandbox)


def printable(text: str) -> str:
    """``text`` safe to show on a terminal, one line: each control character (an escape
    sequence's ESC, a carriage return, a newline, ...), each invisible formatting character
    (a right-to-left override, ...), each line or paragraph separator (U+2028, U+2029) and
    each lone surrogate (which no UTF-8 output holds) written as its Python escape,
    ``\\x1b``, ``\\u202e``, ``\\u2028``, ``\\udcff``."""
    return "".join(c if unicodedata.category(c) not in UNPRINTED or c == "\t"
                   else c.encode("unicode_escape").decode() for c in text)


UNPRINTED = ("Cc", "Cf", "Cs", "Zl", "Zp")  # the Unicode categories printable() escapes


def table(scores: list[ExerciseScore]) -> str:
    """A plain-text score table with one row per exercise and the total; what a submission
    wrote (a message) is :func:`printable`."""
    width = max([len(s.name) for s in scores] + [5])
    rows = [f"{s.name:<{width}}  {s.score:>5.3g} / {s.points:<4g} {printable(s.message)}"
            for s in scores]
    total = sum(s.score for s in scores), sum(s.points for s in scores)
    return "\n".join(rows + [f"{'total':<{width}}  {total[0]:>5.3g} / {total[1]:g}"])


def _number(x: float) -> str:
    return format(round(x, 4), "g")


def _inert(cell: str) -> str:
    """A CSV cell a spreadsheet shows as text: one that starts like a formula (``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return) gets a leading ``'``, as OWASP advises."""
    return f"'{cell}" if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


def write_csv(reports: list[Report], path: Path, written: dict | None = None) -> None:
    """One row per submission, one column per exercise (headed by its name, "Exercise 7.1
    (ex-learn-threshold)"), then the total and the maximum of the autograded ones, and an empty
    column for each written exercise (``{label: points}``) for the instructor to fill in;
    written to a temporary file and renamed, so a reader never sees half a table."""
    path = Path(path)  # a str too
    names = {s.label: s.name for r in reports for s in r.exercises}
    labels = list(names)
    hand = [f"{names.get(label, label)} (written, of {points:g})"
            for label, points in (written or {}).items()]
    temporary = path.with_name(path.name + ".partial")
    with temporary.open("w", newline="", errors="backslashreplace") as file:
        writer = csv.writer(file)
        writer.writerow(["notebook", *names.values(), "total", "max_score", *hand, "error",
                         "sandbox", "variant"])
        for r in reports:
            scores = {s.label: _number(s.score) for s in r.exercises}
            writer.writerow([_inert(r.notebook), *(scores.get(label, "") for label in labels),
                             _number(r.score), _number(r.max_score), *([""] * len(hand)),
                             _inert(r.error), r.sandbox, "" if r.variant is None else r.variant])
    temporary.replace(path)


def write_written_answers(notebooks, reference, path: Path) -> None:
    """Collect the written answers (Markdown cells tagged ``written``) of every submission into
    one notebook for grading by hand, and its HTML beside it (``path`` with ``.html``): for each
    written part, its statement and points, then each submission's answer under its name."""
    path = Path(path)  # a str too
    reference_notebook = _read_path(reference, "reference")
    numbers = exercise_numbers(reference_notebook, Path(reference).stem)
    statements = exercise_statements(reference_notebook)
    titles = statement_titles(reference_notebook, Path(reference).stem)
    submissions = {}
    for notebook in notebooks:
        try:
            submissions[shown(notebook)] = _read_path(handed_in(notebook), "notebook")
        except ValueError as error:
            submissions[shown(notebook)] = error
    cells = [nbformat.v4.new_markdown_cell(f"# Written answers: {Path(reference).stem}")]
    for label, points in written_points(reference_notebook).items():
        statement = plain_markdown(statements.get(label, ""), titles)
        exercise = numbered(label, numbers)
        cells.append(nbformat.v4.new_markdown_cell(
            f"## {exercise} ({points_text(points)})\n\n{statement}"))
        for name, submission in submissions.items():
            try:
                if isinstance(submission, ValueError):
                    answer = f"*(not collected: {html.escape(_text(str(submission)))})*"
                else:
                    answer = _written_answer(submission, label, written_prompt(exercise, points))
            except Exception as error:  # noqa: BLE001 - one submission never stops the others
                answer = f"*(the answer could not be collected: {type(error).__name__})*"
            cells.append(nbformat.v4.new_markdown_cell(
                f"### {html.escape(name)}\n\n{answer or '*(no written answer)*'}"))
    collected = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(collected, path)
    exporter = HTMLExporter(sanitize_html=True, filters={"clean_html": written_html})
    body, _ = exporter.from_notebook_node(collected)
    path.with_suffix(".html").write_text(body)


MAX_WRITTEN = 10_000  # characters of one written answer collected (a proof fits)
# What written.html keeps of the HTML a cell's Markdown makes: the tags of ordinary Markdown,
# links to the web and mail, and no class, id or style (a student's class could draw the
# page's own dialogs over it); any other tag is shown as text.
WRITTEN_TAGS = frozenset({"a", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2",
                          "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "span",
                          "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr",
                          "ul"})
WRITTEN_ATTRIBUTES = {"a": ["href", "title"]}
HEADING_ANCHOR = re.compile(r'<a class="anchor-link" href="#[^"]*">&#182;</a>')


HEADING = re.compile(r"<h([1-6])>(.*?)</h\1>", re.DOTALL)


def written_html(text) -> str:
    """The HTML of a cell of ``written.html``, cleaned: only :data:`WRITTEN_TAGS` (a heading's
    anchor link dropped), only :data:`WRITTEN_ATTRIBUTES`, links only to http, https and
    mailto; and only the cell's first heading a heading, the others bold text. Each answer
    shares a cell with the heading that names its student, above it
    (:func:`write_written_answers`), so no answer can draw a section of its own."""
    cleaned = bleach.clean(HEADING_ANCHOR.sub("", str(text)), tags=WRITTEN_TAGS,
                           attributes=WRITTEN_ATTRIBUTES, protocols={"http", "https", "mailto"})
    first = HEADING.search(cleaned)
    if first is None:
        return cleaned
    rest = HEADING.sub(r"<p><strong>\2</strong></p>", cleaned[first.end():])
    return cleaned[:first.end()] + rest


def _text(text: str) -> str:
    """``text`` with each lone surrogate (which no UTF-8 file can hold) written as ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _written_answer(submission, label: str, prompt: str) -> str:
    """The written answer of ``label`` in ``submission``: its cells tagged ``written`` that
    are not the untouched prompt, as text (a cell whose source is not text says so), each cut
    at :data:`MAX_WRITTEN` characters."""
    parts = []
    for i in tagged(submission, WRITTEN, label, "markdown"):
        source = submission.cells[i].get("source")
        if not isinstance(source, str):
            parts.append(f"*(not text, but {type(source).__name__})*")
        elif source.strip() != prompt:
            cut = len(source) > MAX_WRITTEN
            parts.append(_text(source[:MAX_WRITTEN])
                         + (f"\n\n*(cut at {MAX_WRITTEN:,} characters)*" if cut else ""))
    return "\n\n".join(parts)


def gradescope_results(report: Report) -> dict:
    """``report`` in the format of Gradescope's ``results.json`` (its autograder specification):
    one test per exercise, named by its number and label (:attr:`ExerciseScore.name`), with its
    score, points and message, shown as plain text (:func:`printable`); a notebook
    that could not be graded scores 0 with the reason as the output, and one graded without
    the sandbox says so there. Written parts are left to Gradescope's own grading by hand."""
    tests = [{"name": s.name, "score": s.score, "max_score": s.points,
              "output": printable(s.message), "output_format": "text"}
             for s in report.exercises]
    unsafe = "" if report.sandbox == "bubblewrap" else f"graded without a sandbox: {report.sandbox}"
    output = "\n".join(filter(None, [unsafe, printable(report.error)]))
    return {"score": report.score, "output": output, "output_format": "text", "tests": tests}


def main(argv=None) -> None:
    """The command line (see the module's docstring); ``merge`` as the first argument
    combines shards (:func:`merge_main`)."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    if argv[:1] == ["merge"]:
        merge_main(argv[1:])
        return
    parser = argparse.ArgumentParser(
        prog="python -m course.grade", description=__doc__.split("\n")[0],
        epilog="python -m course.grade merge SHARD_JSON... combines the shards of a class "
               "graded with --shard K/N --json into the outputs of one run (merge --help).")
    parser.add_argument("notebooks", nargs="+", type=Path, help="submitted notebooks")
    parser.add_argument("--reference", type=Path, required=True,
                        help="the instructor edition to grade against")
    parser.add_argument("--hidden", type=Path, help="folder of the hidden tests")
    parser.add_argument("--seed", type=int, help="draws the hidden tests' inputs")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per cell")
    parser.add_argument("--memory", type=float, default=8, help="GiB per submission")
    parser.add_argument("--max-seconds", type=float, default=1800, help="seconds per submission")
    parser.add_argument("--processes", type=int, default=512,
                        help="processes and threads per submission (where a cgroup is at hand)")
    parser.add_argument("--course-seed", type=course_seed_option,
                        help="grade the course's variant of the exercises (make assignments' seed)")
    parser.add_argument("--roster", type=Path,
                        help="with --course-seed: each student's own variant; a student is the "
                             "name of their notebook's folder or file")
    parser.add_argument("--student", help="the student of the one submission (with --roster)")
    parser.add_argument("--unsafe", action="store_true",
                        help="grade without the sandbox, where bubblewrap cannot run (every row "
                             "then says so)")
    parser.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                        help="grade N submissions at a time, each in a sandbox of its own with "
                             "its own limits (at most the cores, and N x --memory at most the "
                             "memory); the output is the same, in the same order")
    parser.add_argument("--shard", type=_shard, metavar="K/N",
                        help="grade only the K-th of every N submissions, in the order given "
                             "here (give every shard the same list, in the same order, and "
                             "--seed), and print them, with --json, for merge")
    parser.add_argument("--json", action="store_true", help="print JSON lines for an LMS")
    parser.add_argument("--csv", type=Path, help="write a submissions x exercises table here")
    parser.add_argument("--written", type=Path,
                        help="collect the written answers into this notebook (and .html); it "
                             "reads the notebooks, so with --shard it collects those of every "
                             "shard: give it to one shard (merge has no notebooks, only grades)")
    parser.add_argument("--gradescope", type=Path, metavar="RESULTS_JSON",
                        help="write Gradescope's results.json for the one submission")
    args = parser.parse_args(argv)
    submitted = {path.resolve() for path in args.notebooks}
    for option, path in (("--csv", args.csv), ("--gradescope", args.gradescope),
                         ("--written", args.written),
                         ("--written", args.written and args.written.with_suffix(".html"))):
        if path and (path.resolve() in submitted or (
                option != "--written" and path.suffix == ".ipynb" and path.exists())):
            parser.error(f"{option} {path}: that is a notebook (a submission, or a reference), "
                         "which the grader never writes over (put the submissions after --)")
    if args.gradescope and len(args.notebooks) != 1:
        parser.error(f"--gradescope grades one submission, got {len(args.notebooks)}")
    if args.student is not None and len(args.notebooks) != 1:
        parser.error(f"--student names the student of one submission, got {len(args.notebooks)}")
    _claim_csv(parser, args.csv, make=False)  # before the reference runs, and again after
    if args.shard and args.seed is None:
        parser.error("--shard needs --seed, the same for every shard, so that all of them draw "
                     "the same hidden tests")
    try:
        grader = Grader(args.reference, args.hidden, args.seed, args.timeout, args.memory,
                        args.max_seconds, args.processes, args.unsafe, args.course_seed,
                        args.roster)
    except (SandboxUnavailable, ValueError) as error:
        parser.exit(2, f"course.grade: {error}\n")
    public = Path(__file__).parent / "template" / "hidden" / f"{grader.chapter}.py"
    if public.is_file() and public.read_bytes() == Path(grader.module.__file__).read_bytes():
        print(f"course.grade: warning: the hidden tests are {public}'s, unchanged: they and "
              "their variants are public, so a student can derive every answer; edit them",
              file=sys.stderr)
    notebooks, shard, which = args.notebooks, None, ""
    if args.shard:  # the K-th of every N, and where each lies in the whole batch, for merge
        k, n = args.shard
        positions = range(k - 1, len(notebooks), n)
        shard = [{"shard": f"{k}/{n}", "position": p, "submissions": len(notebooks),
                  "batch": _batch([shown(p) for p in notebooks], grader.inputs),
                  "inputs": grader.inputs, "points": grader.points,
                  "written": grader.written} for p in positions]
        notebooks, which = [notebooks[p] for p in positions], f" (shard {k}/{n})"
    print(f"hidden tests drawn with --seed {grader.seed}; limits: "
          f"{enforced_limits(args.memory, args.processes)}; grading {len(notebooks)} of "
          f"{len(args.notebooks)} submissions{which}, {args.jobs} at a time", file=sys.stderr)
    try:  # the editions checked and the references run, before any submission
        reports = grader.grade_batch(notebooks, args.student, args.jobs)
    except ValueError as error:
        parser.exit(2, f"course.grade: {printable(str(error))}\n")
    _claim_csv(parser, args.csv)
    _publish(reports, args, grader.written, shard)
    if args.written:  # after the grades: nothing in a written answer delays or stops them
        write_written_answers(args.notebooks, args.reference, args.written)


def _claim_csv(parser, path: Path | None, make: bool = True) -> None:
    """Make the empty file ``path`` (``--csv``; with ``make=False`` only look) before anything
    is graded, or stop with a message where it exists: a CSV holds one run's grades, and one
    run's only, so an earlier run's rows are never written over (a batch resumed after an
    interrupt, a second grader on the same file; the file is made in one step, so of two
    graders started together one stops)."""
    if path is None:
        return
    try:
        if make:
            path.open("x").close()
        elif path.exists():
            raise FileExistsError
    except FileExistsError:
        parser.exit(2, f"{parser.prog}: --csv {shown(path)}: the file exists (an earlier run's "
                       "grades, or another grader's now); the grader writes each run's grades "
                       "to a new file: give another name (merge the tables afterwards), or "
                       "remove it\n")
    except OSError as error:
        parser.exit(2, f"{parser.prog}: --csv {shown(path)}: cannot write it ({error})\n")


def _publish(reports, args, written: dict, shard: list[dict] | None = None) -> None:
    """Print each of ``reports`` as it comes (a table, or with ``args.json`` a JSON line, with
    its part of ``shard`` where given) and write ``args.csv`` (with the ``written`` parts'
    columns) and ``args.gradescope`` anew."""
    done = []
    for report in reports:
        done.append(report)
        if args.csv:
            write_csv(done, args.csv, written)  # each time: an interrupt loses none
        if args.gradescope:
            args.gradescope.write_text(json.dumps(gradescope_results(report), indent=1))
        if args.json:
            record = report.record()
            if shard is not None:
                record["shard"] = shard[len(done) - 1]
            print(json.dumps(record), flush=True)
        else:
            error = f"not graded: {printable(report.error)}\n" if report.error else ""
            unsafe = "" if report.sandbox == "bubblewrap" else f"sandbox: {report.sandbox}\n"
            print(f"{printable(report.notebook)}\n{unsafe}{error}{table(report.exercises)}\n",
                  flush=True)


def _jobs(text: str) -> int:
    """The value of ``--jobs``: a whole number, at least 1."""
    if not re.fullmatch(r"\d+", text, re.ASCII) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return int(text)


def _shard(text: str) -> tuple[int, int]:
    """The value of ``--shard``: ``K/N``, the K-th of N shards (1 <= K <= N)."""
    match = re.fullmatch(r"(\d+)/(\d+)", text, re.ASCII)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise argparse.ArgumentTypeError(
            f"must be K/N, the K-th of N shards, with 1 <= K <= N, got {text!r}")
    return int(match[1]), int(match[2])


SHARD_FIELDS = {"shard", "position", "submissions", "batch", "inputs", "points", "written"}


def _batch(notebooks: list[str], inputs: str) -> str:
    """The name of a batch: its submissions, in order, and what else decides their grades
    (:attr:`Grader.inputs`: seeds, chapter, limits, reference, hidden tests, roster)."""
    return hashlib.sha256(json.dumps([notebooks, inputs]).encode()).hexdigest()[:16]


def _points(value) -> bool:
    """Whether ``value`` is ``{label: points}``, each a finite positive number."""
    return isinstance(value, dict) and all(
        isinstance(label, str) and type(points) in (int, float) and math.isfinite(points)
        and points > 0 for label, points in value.items())


def _checked_scores(report: Report, points: dict, where: str) -> None:
    """A ``ValueError`` unless ``report`` scores each exercise of ``points``, in order, with
    its points, and a finite score between 0 and them (an edited record)."""
    if [(s.label, s.points) for s in report.exercises] != list(points.items()):
        raise ValueError(f"{where}: its exercises or their points are not the batch's "
                         f"({', '.join(f'{k} {v:g}' for k, v in points.items())})")
    for s in report.exercises:
        if not (math.isfinite(s.score) and 0 <= s.score <= s.points):
            raise ValueError(f"{where}: {s.label} scores {s.score!r} of {s.points:g} points")


def merge_shards(paths) -> tuple[list[Report], dict]:
    """The reports in the shards at ``paths`` (each the JSON lines that ``--shard K/N --json``
    printed) in the order of one run, and the written parts' points (``{label: points}``).
    Raises ``ValueError`` naming the file and line that is not a shard's record, a
    submission graded in two shards or in none (a shard missing, or stopped before its end),
    shards of different batches (other submissions or order, seeds, reference, hidden tests,
    roster or limits), and a record whose exercises, points or scores are not the batch's or
    whose submission is not the one at its place (an edited record: these catch mistakes and
    careless edits; anyone who can write the shard files and read this code can forge them)."""
    reports: dict[int, Report] = {}
    batch, first = None, None
    for path in map(Path, paths):
        try:
            lines = path.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"shards: cannot read {path} ({error})") from None
        for number, line in enumerate(lines, 1):
            where = f"shards: {path}, line {number}"
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                raise ValueError(f"{where} is not a JSON line") from None
            shard = record.pop("shard", None) if isinstance(record, dict) else None
            if not (isinstance(shard, dict) and set(shard) == SHARD_FIELDS
                    and type(shard["submissions"]) is int
                    and type(shard["position"]) is int
                    and 0 <= shard["position"] < shard["submissions"]
                    and _points(shard["points"]) and _points(shard["written"])
                    and isinstance(shard["batch"], str) and isinstance(shard["inputs"], str)):
                raise ValueError(f"{where} is not a shard's record (what --shard K/N --json "
                                 "prints)")
            try:
                report = Report.from_record(record)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            if batch is None:
                batch, first = {k: shard[k] for k in ("submissions", "batch", "inputs", "points",
                                                      "written")}, path
            if {k: shard[k] for k in batch} != batch:
                raise ValueError(f"{where} is of another batch than {first}: grade every shard "
                                 "with the same command (submissions in the same order, --seed, "
                                 "reference, hidden tests, course seed, roster and limits) but "
                                 "for its --shard")
            _checked_scores(report, batch["points"], where)
            if shard["position"] in reports:
                raise ValueError(f"{where}: {report.notebook} (submission "
                                 f"{shard['position'] + 1}) is in two shards")
            reports[shard["position"]] = report
    if batch is None:
        raise ValueError("shards: no records in them")
    missing = [p + 1 for p in range(batch["submissions"]) if p not in reports]
    if missing:
        raise ValueError(f"shards: {len(missing)} of {batch['submissions']} submissions are in "
                         f"no shard (number {', '.join(map(str, missing[:10]))}"
                         f"{', ...' if len(missing) > 10 else ''}, counted from 1 in the order "
                         "given): is a shard missing, or did one stop before its end?")
    ordered = [reports[p] for p in range(batch["submissions"])]
    if _batch([r.notebook for r in ordered], batch["inputs"]) != batch["batch"]:
        raise ValueError("shards: their records do not name the batch's submissions in its "
                         "order (a record edited, or moved to another place)")
    return ordered, batch["written"]


def merge_main(argv: list[str]) -> None:
    """``python -m course.grade merge`` with the arguments ``argv``: the outputs of one run
    from the shards' JSON lines."""
    parser = argparse.ArgumentParser(
        prog="python -m course.grade merge",
        description="Combine the shards of a class, each graded with --shard K/N --json, into "
                    "the outputs of one run: the same table, JSON lines, CSV, in the same "
                    "order. (The written answers need the notebooks: collect them with "
                    "--written in one shard.)")
    parser.add_argument("shards", nargs="+", type=Path, metavar="SHARD_JSON",
                        help="what a shard printed with --json (JSON lines), any order")
    parser.add_argument("--json", action="store_true", help="print JSON lines for an LMS")
    parser.add_argument("--csv", type=Path, help="write a submissions x exercises table here")
    parser.add_argument("--gradescope", type=Path, metavar="RESULTS_JSON",
                        help="write Gradescope's results.json for the one submission")
    args = parser.parse_args(argv)
    try:
        reports, written = merge_shards(args.shards)
    except ValueError as error:
        parser.exit(2, f"course.grade merge: {error}\n")
    _claim_csv(parser, args.csv)
    if args.gradescope and len(reports) != 1:
        parser.error(f"--gradescope writes one submission's grade, the shards hold {len(reports)}")
    _publish(reports, args, written)

if __name__ == "__main__":
    main()
