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

Command line::

    python -m course.grade submissions/*.ipynb --reference instructor/chapter.ipynb \\
        [--hidden DIR] [--seed N] [--timeout 120] [--memory 8] [--processes 512] \\
        [--max-seconds 1800] [--unsafe] [--json] [--csv grades.csv] [--written written.ipynb] \\
        [--gradescope results.json]
"""

import argparse
import csv
import html
import json
import random
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from course import hidden as hidden_tests
from course.assignments import (
    ANSWER,
    CHECK,
    WRITTEN,
    exercise_points,
    exercise_statements,
    plain_markdown,
    points_text,
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
from course.variants import apply_variants, chapter_variants, read_roster, variant_index

JUDGE_SECONDS = 60  # the longest the grader spends judging one value
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
    variant: int | None = None  # the variant graded against (None: the book's exercises)

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


def _read(path: Path, what: str):
    if not Path(path).is_file():
        raise ValueError(f"{what}: no such file {path}")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises several kinds for a file that is no notebook
        raise ValueError(f"{what}: {path} is not a Jupyter notebook ({error})") from None


def _starts_exercise(cell, label: str) -> bool:
    """Whether ``cell`` begins another exercise than ``label`` (its statement or its cells)."""
    other = cell.metadata.get("exercise") not in (None, label)
    return other or (cell.cell_type == "markdown" and "```{exercise}" in cell.source)


def notebook_to_run(notebook, tests: dict) -> tuple[nbformat.NotebookNode, dict]:
    """``notebook`` without its check cells and with each exercise's hidden tests (``tests``
    maps labels to lists of :class:`~course.hidden.HiddenTest`) where its part ends: before
    the first cell after its last answer cell that starts another exercise, or at the end.
    Returns the notebook and ``{label: [index of each test's cell]}``."""
    result = nbformat.from_dict(notebook)
    result.cells = [c for c in result.cells if CHECK not in c.metadata.get("tags", [])]
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


def _value(outcome: dict, index: int):
    """``(value, "")`` of the test in cell ``index``, or ``(None, why there is none)``."""
    if index not in outcome["cells"]:
        return None, outcome["note"] or "the test did not run"
    if outcome["cells"][index] is not None:
        ename, evalue = outcome["cells"][index]
        if ename == TIMEOUT:
            return None, f"it {evalue}; does your answer loop forever?"
        return None, f"it raised {ename}: {evalue}" if evalue else f"it raised {ename}"
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
    (:func:`course.sandbox.enforced_limits` says which limits hold on this machine). Raises
    :class:`~course.sandbox.SandboxUnavailable` where the sandbox cannot run, unless
    ``unsafe``, and ``ValueError`` when a hidden test fails on the reference itself."""

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
        self.reference = _read(reference, "reference")
        if "course_variant" in self.reference.metadata:
            raise ValueError(f"reference: {reference} is the edition of one variant; give the "
                             "plain instructor edition, from which every variant is made")
        self.points = exercise_points(self.reference)
        self.written = written_points(self.reference)
        if not self.points:
            raise ValueError(f"reference: {reference} has no graded exercises in its metadata")
        self.seed = random.SystemRandom().randrange(2**32) if seed is None else seed
        self.chapter = Path(reference).stem
        self.numbers = exercise_numbers(self.reference, self.chapter)
        self.module = hidden_tests.load(self.chapter, hidden)
        if roster is not None and course_seed is None:
            raise ValueError("roster: a roster needs a course_seed (--course-seed)")
        if course_seed is not None:
            variant_index(course_seed, self.chapter)  # refuses a seed that is not one
        self.course_seed = course_seed
        self.roster = read_roster(roster) if roster is not None else None
        self.limits = {"timeout": timeout, "memory_gb": memory_gb, "max_seconds": max_seconds,
                       "processes": processes, "unsafe": unsafe}
        self.sandbox = UNSAFE if unsafe else "bubblewrap"
        self._variants: dict = {}  # variant index (None: the book's exercises) -> tests, values
        if self.roster is None:
            self.variant(None if course_seed is None else variant_index(course_seed,
                                                                        self.chapter))

    def variant(self, index: int | None) -> tuple[dict, dict]:
        """The hidden tests of variant ``index`` (None: the book's own exercises) and their
        values in its reference, ``({label: [HiddenTest]}, {label: [value]})``, made on first
        use by running the variant's reference in the sandbox. Raises ``ValueError`` when a
        test fails on the reference."""
        if index in self._variants:
            return self._variants[index]
        variants = ({} if index is None else
                    chapter_variants(self.module.VARIANTS, self.chapter, index))
        reference = apply_variants(self.reference, variants) if variants else self.reference
        tests = self.module.hidden_tests(random.Random(self.seed), variants)
        missing = set(self.points) - set(tests)
        if missing or not all(tests.get(label) for label in self.points):
            raise ValueError(f"hidden: no hidden tests for {sorted(missing) or 'an exercise'}")
        to_run, where = notebook_to_run(reference, tests)
        outcome = run_sandboxed(to_run, **self.limits)
        expected = {}
        for label, indices in where.items():
            expected[label] = []
            for test, cell in zip(tests[label], indices, strict=True):
                value, why = _value(outcome, cell)
                why = why or judged(test, value, value)
                if why:
                    raise ValueError(f"hidden: the test {test.expression!r} of {label} fails on "
                                     f"the reference: {why}")
                expected[label].append(value)
        self._variants[index] = tests, expected
        return tests, expected

    def variant_of(self, notebook, student: str | None = None) -> int | None:
        """The variant a submission is graded against: none without a course seed, the
        course's, or with a roster that of ``student`` (by default the name of the notebook's
        folder, or else its file name without ``.ipynb``, whichever is on the roster)."""
        if self.course_seed is None:
            return None
        if self.roster is None:
            return variant_index(self.course_seed, self.chapter)
        path = Path(notebook)
        names = [student] if student is not None else [path.parent.name, path.stem]
        on_roster = [name for name in names if name in self.roster]
        if not on_roster:
            raise ValueError(f"notebook: {' or '.join(map(repr, names))} is not on the roster")
        return variant_index(self.course_seed, self.chapter, on_roster[0])

    def grade(self, notebook, student: str | None = None) -> list[ExerciseScore]:
        """The scores of the submitted notebook at path ``notebook``, one per exercise, against
        its variant (:meth:`variant_of`)."""
        submission = _read(notebook, "notebook")
        index = self.variant_of(notebook, student)
        if index is None and "course_variant" in submission.metadata:
            raise ValueError("notebook: it is an edition of a graded variant; grade it with the "
                             "course's --course-seed")
        tests, expected_values = self.variant(index)
        to_run, where = notebook_to_run(submission, tests)
        outcome = run_sandboxed(to_run, **self.limits)
        scores = []
        for label, points in self.points.items():
            failures = []
            for test, cell, expected in zip(tests[label], where[label], expected_values[label],
                                            strict=True):
                value, why = _value(outcome, cell)
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

    def grade_batch(self, notebooks, student: str | None = None):
        """Grade every notebook in turn, yielding a :class:`Report` as each is done; one that
        cannot be graded, whatever the reason, gets a report with its ``error`` (and zero for
        every exercise), and the batch goes on. ``student`` names the student of a batch of
        one (see :meth:`variant_of`)."""
        for path in notebooks:
            try:
                yield Report(str(path), self.grade(path, student), sandbox=self.sandbox,
                             variant=self.variant_of(path, student))
            except Exception as error:  # noqa: BLE001 - one submission never stops the batch
                why = str(error) if isinstance(error, ValueError) else (
                    f"the grader failed on it ({type(error).__name__}: {error})")
                zeros = [ExerciseScore(label, p, 0, why, self.numbers.get(label, ""))
                         for label, p in self.points.items()]
                yield Report(str(path), zeros, why, self.sandbox)


def table(scores: list[ExerciseScore]) -> str:
    """A plain-text score table with one row per exercise and the total."""
    width = max([len(s.name) for s in scores] + [5])
    rows = [f"{s.name:<{width}}  {s.score:>5.3g} / {s.points:<4g} {s.message}" for s in scores]
    total = sum(s.score for s in scores), sum(s.points for s in scores)
    return "\n".join(rows + [f"{'total':<{width}}  {total[0]:>5.3g} / {total[1]:g}"])


def _number(x: float) -> str:
    return format(round(x, 4), "g")


def write_csv(reports: list[Report], path: Path, written: dict | None = None) -> None:
    """One row per submission, one column per exercise (headed by its name, "Exercise 7.1
    (ex-learn-threshold)"), then the total and the maximum of the autograded ones, and an empty
    column for each written exercise (``{label: points}``) for the instructor to fill in;
    written to a temporary file and renamed, so a reader never sees half a table."""
    names = {s.label: s.name for r in reports for s in r.exercises}
    labels = list(names)
    hand = [f"{names.get(label, label)} (written, of {points:g})"
            for label, points in (written or {}).items()]
    temporary = path.with_name(path.name + ".partial")
    with temporary.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["notebook", *names.values(), "total", "max_score", *hand, "error",
                         "sandbox", "variant"])
        for r in reports:
            scores = {s.label: _number(s.score) for s in r.exercises}
            writer.writerow([r.notebook, *(scores.get(label, "") for label in labels),
                             _number(r.score), _number(r.max_score), *([""] * len(hand)),
                             r.error, r.sandbox, "" if r.variant is None else r.variant])
    temporary.replace(path)


def write_written_answers(notebooks, reference, path: Path) -> None:
    """Collect the written answers (Markdown cells tagged ``written``) of every submission into
    one notebook for grading by hand, and its HTML beside it (``path`` with ``.html``): for each
    written part, its statement and points, then each submission's answer under its name."""
    reference_notebook = _read(reference, "reference")
    numbers = exercise_numbers(reference_notebook, Path(reference).stem)
    statements = exercise_statements(reference_notebook)
    titles = statement_titles(reference_notebook, Path(reference).stem)
    submissions = {}
    for notebook in notebooks:
        try:
            submissions[str(notebook)] = _read(notebook, "notebook")
        except ValueError:
            submissions[str(notebook)] = nbformat.v4.new_notebook()
    cells = [nbformat.v4.new_markdown_cell(f"# Written answers: {Path(reference).stem}")]
    for label, points in written_points(reference_notebook).items():
        statement = plain_markdown(statements.get(label, ""), titles)
        exercise = numbered(label, numbers)
        cells.append(nbformat.v4.new_markdown_cell(
            f"## {exercise} ({points_text(points)})\n\n{statement}"))
        for name, submission in submissions.items():
            answer = "\n\n".join(
                submission.cells[i].source for i in tagged(submission, WRITTEN, label, "markdown")
                if submission.cells[i].source.strip() != written_prompt(exercise, points))
            cells.append(nbformat.v4.new_markdown_cell(
                f"### {html.escape(name)}\n\n{answer or '*(no written answer)*'}"))
    collected = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(collected, path)
    body, _ = HTMLExporter(sanitize_html=True).from_notebook_node(collected)
    path.with_suffix(".html").write_text(body)


def gradescope_results(report: Report) -> dict:
    """``report`` in the format of Gradescope's ``results.json`` (its autograder specification):
    one test per exercise, named by its number and label (:attr:`ExerciseScore.name`), with its
    score, points and message; a notebook
    that could not be graded scores 0 with the reason as the output, and one graded without
    the sandbox says so there. Written parts are left to Gradescope's own grading by hand."""
    tests = [{"name": s.name, "score": s.score, "max_score": s.points, "output": s.message}
             for s in report.exercises]
    unsafe = "" if report.sandbox == "bubblewrap" else f"graded without a sandbox: {report.sandbox}"
    output = "\n".join(filter(None, [unsafe, report.error]))
    return {"score": report.score, "output": output, "tests": tests}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
    parser.add_argument("--course-seed", type=int,
                        help="grade the course's variant of the exercises (make assignments' seed)")
    parser.add_argument("--roster", type=Path,
                        help="with --course-seed: each student's own variant; a student is the "
                             "name of their notebook's folder or file")
    parser.add_argument("--student", help="the student of the one submission (with --roster)")
    parser.add_argument("--unsafe", action="store_true",
                        help="grade without the sandbox, where bubblewrap cannot run (every row "
                             "then says so)")
    parser.add_argument("--json", action="store_true", help="print JSON lines for an LMS")
    parser.add_argument("--csv", type=Path, help="write a submissions x exercises table here")
    parser.add_argument("--written", type=Path,
                        help="collect the written answers into this notebook (and .html)")
    parser.add_argument("--gradescope", type=Path, metavar="RESULTS_JSON",
                        help="write Gradescope's results.json for the one submission")
    args = parser.parse_args(argv)
    if args.gradescope and len(args.notebooks) != 1:
        parser.error(f"--gradescope grades one submission, got {len(args.notebooks)}")
    if args.student is not None and len(args.notebooks) != 1:
        parser.error(f"--student names the student of one submission, got {len(args.notebooks)}")
    try:
        grader = Grader(args.reference, args.hidden, args.seed, args.timeout, args.memory,
                        args.max_seconds, args.processes, args.unsafe, args.course_seed,
                        args.roster)
    except (SandboxUnavailable, ValueError) as error:
        parser.exit(2, f"course.grade: {error}\n")
    print(f"hidden tests drawn with --seed {grader.seed}; limits: "
          f"{enforced_limits(args.memory, args.processes)}", file=sys.stderr)
    if args.written:
        write_written_answers(args.notebooks, args.reference, args.written)
    reports = []
    for report in grader.grade_batch(args.notebooks, args.student):
        reports.append(report)
        if args.csv:
            write_csv(reports, args.csv, grader.written)  # each time: an interrupt loses none
        if args.gradescope:
            args.gradescope.write_text(json.dumps(gradescope_results(report), indent=1))
        if args.json:
            print(json.dumps(report.record()), flush=True)
        else:
            error = f"not graded: {report.error}\n" if report.error else ""
            unsafe = "" if report.sandbox == "bubblewrap" else f"sandbox: {report.sandbox}\n"
            print(f"{report.notebook}\n{unsafe}{error}{table(report.exercises)}\n", flush=True)


if __name__ == "__main__":
    main()
