"""Autograder: score submitted notebooks by hidden tests judged outside the submission.

A :class:`Grader` is made for one instructor edition (the *reference*). It draws the inputs of
the chapter's hidden tests (:mod:`course.hidden`) from a seed, runs the reference once to learn
the expected values, and then grades each submission on its own: the grader writes the notebook
to run (the submission without its check cells, each exercise's hidden tests where its part of
the notebook ends) and executes it in a sandbox (:mod:`course.sandbox`) in which the reference
and the other submissions' folders are hidden. The values the tests print come back to the
grader, which judges them in its own process; the visible checks are for students and count for
nothing. An exercise scores its points times the fraction of its tests that pass. A submission
that cannot be graded (not a notebook, a kernel that dies) gets a row that says what went wrong,
and the batch goes on. Exercises marked ``written`` (see :mod:`course.assignments`) are graded
by hand from the answers :func:`write_written_answers` collects.

Command line::

    python -m course.grade submissions/*.ipynb --reference instructor/chapter.ipynb \\
        [--hidden DIR] [--seed N] [--timeout 120] [--memory 8] [--max-seconds 1800] \\
        [--json] [--csv grades.csv] [--written written.ipynb] [--gradescope results.json]
"""

import argparse
import csv
import html
import json
import random
import sys
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
from course.sandbox import HIDDEN_TEST, TIMEOUT, namespaces_available, run_sandboxed


@dataclass
class ExerciseScore:
    """The grade of one exercise: ``score`` out of ``points``, ``message`` says why."""

    label: str
    points: float
    score: float
    message: str


@dataclass
class Report:
    """The grades of one submission; ``error`` says why it could not be graded at all."""

    notebook: str
    exercises: list[ExerciseScore]
    error: str = ""

    @property
    def score(self) -> float:
        return sum(s.score for s in self.exercises)

    @property
    def max_score(self) -> float:
        return sum(s.points for s in self.exercises)

    def record(self) -> dict:
        """The report as JSON-ready data, for a learning-management system."""
        return {"notebook": self.notebook, "score": self.score, "max_score": self.max_score,
                "error": self.error, "exercises": [asdict(s) for s in self.exercises]}


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


class Grader:
    """Grades submissions of one chapter against its instructor edition ``reference``.

    ``hidden`` is the folder of the hidden tests (default: :mod:`course.hidden`'s), ``seed``
    draws their inputs (default: a fresh one, see :attr:`seed`). Every cell is limited to
    ``timeout`` seconds, a whole submission to ``max_seconds``, its memory to ``memory_gb``
    GiB. ``hide`` lists more folders to hide from every submission (the folders of the
    reference and of the hidden tests are always hidden). Raises ``ValueError`` when a hidden
    test fails on the reference itself."""

    def __init__(self, reference, hidden=None, seed: int | None = None, timeout: float = 120,
                 memory_gb: float = 8, max_seconds: float = 1800, hide=()):
        for name, value in (("timeout", timeout), ("memory_gb", memory_gb),
                            ("max_seconds", max_seconds)):
            if isinstance(value, bool) or not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        self.reference = _read(reference, "reference")
        self.points = exercise_points(self.reference)
        self.written = written_points(self.reference)
        if not self.points:
            raise ValueError(f"reference: {reference} has no graded exercises in its metadata")
        self.seed = random.SystemRandom().randrange(2**32) if seed is None else seed
        make_tests = hidden_tests.load(Path(reference).stem, hidden)
        self.tests = make_tests(random.Random(self.seed))
        missing = set(self.points) - set(self.tests)
        if missing or not all(self.tests.get(label) for label in self.points):
            raise ValueError(f"hidden: no hidden tests for {sorted(missing) or 'an exercise'}")
        self.limits = {"timeout": timeout, "memory_gb": memory_gb, "max_seconds": max_seconds}
        self.hide = [Path(reference).resolve().parent, *map(Path, hide)]
        if hidden is not None:
            self.hide.append(Path(hidden))
        self.expected = self._expected_values()

    def _expected_values(self) -> dict:
        to_run, where = notebook_to_run(self.reference, self.tests)
        outcome = run_sandboxed(to_run, hide=self.hide, **self.limits)
        expected = {}
        for label, indices in where.items():
            expected[label] = []
            for test, index in zip(self.tests[label], indices, strict=True):
                value, why = _value(outcome, index)
                why = why or test.judge(value, value)
                if why:
                    raise ValueError(f"hidden: the test {test.expression!r} of {label} fails on "
                                     f"the reference: {why}")
                expected[label].append(value)
        return expected

    def grade(self, notebook, hide=()) -> list[ExerciseScore]:
        """The scores of the submitted notebook at path ``notebook``, one per exercise; its
        folder and the folders ``hide`` are hidden from it."""
        submission = _read(notebook, "notebook")
        to_run, where = notebook_to_run(submission, self.tests)
        hide = [*self.hide, *hide, Path(notebook).resolve().parent]
        outcome = run_sandboxed(to_run, hide=hide, **self.limits)
        scores = []
        for label, points in self.points.items():
            failures = []
            for test, index, expected in zip(self.tests[label], where[label],
                                             self.expected[label], strict=True):
                value, why = _value(outcome, index)
                why = why or test.judge(value, expected)
                if why:
                    failures.append(f"{_shorter(test.expression)}: {why}")
            scores.append(self._score(label, points, failures, to_run, outcome))
        return scores

    def _score(self, label, points, failures, notebook, outcome) -> ExerciseScore:
        total = len(self.tests[label])
        passed = total - len(failures)
        message = f"{passed} of {total} hidden tests passed"
        if not failures:
            return ExerciseScore(label, points, points, message)
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
                             f"{message}; failed: {failures[0]}")

    def grade_batch(self, notebooks):
        """Grade every notebook in turn, yielding a :class:`Report` as each is done; one that
        cannot be graded gets a report with its ``error`` (and zero for every exercise), and
        the batch goes on. The folders of all of them are hidden from each."""
        folders = [Path(path).resolve().parent for path in notebooks]
        for path in notebooks:
            try:
                yield Report(str(path), self.grade(path, folders))
            except ValueError as error:
                zeros = [ExerciseScore(label, p, 0, str(error)) for label, p in self.points.items()]
                yield Report(str(path), zeros, str(error))


def table(scores: list[ExerciseScore]) -> str:
    """A plain-text score table with one row per exercise and the total."""
    width = max([len(s.label) for s in scores] + [5])
    rows = [f"{s.label:<{width}}  {s.score:>5.3g} / {s.points:<4g} {s.message}" for s in scores]
    total = sum(s.score for s in scores), sum(s.points for s in scores)
    return "\n".join(rows + [f"{'total':<{width}}  {total[0]:>5.3g} / {total[1]:g}"])


def _number(x: float) -> str:
    return format(round(x, 4), "g")


def write_csv(reports: list[Report], path: Path, written: dict | None = None) -> None:
    """One row per submission, one column per exercise, then the total and the maximum of the
    autograded ones, and an empty column for each written exercise (``{label: points}``) for
    the instructor to fill in; written to a temporary file and renamed, so a reader never sees
    half a table."""
    labels = list(dict.fromkeys(s.label for r in reports for s in r.exercises))
    hand = [f"{label} (written, of {points:g})" for label, points in (written or {}).items()]
    temporary = path.with_name(path.name + ".partial")
    with temporary.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["notebook", *labels, "total", "max_score", *hand, "error"])
        for r in reports:
            scores = {s.label: _number(s.score) for s in r.exercises}
            writer.writerow([r.notebook, *(scores.get(label, "") for label in labels),
                             _number(r.score), _number(r.max_score), *([""] * len(hand)),
                             r.error])
    temporary.replace(path)


def write_written_answers(notebooks, reference, path: Path) -> None:
    """Collect the written answers (Markdown cells tagged ``written``) of every submission into
    one notebook for grading by hand, and its HTML beside it (``path`` with ``.html``): for each
    written part, its statement and points, then each submission's answer under its name."""
    reference_notebook = _read(reference, "reference")
    statements = exercise_statements(reference_notebook)
    titles = statement_titles(reference_notebook)
    submissions = {}
    for notebook in notebooks:
        try:
            submissions[str(notebook)] = _read(notebook, "notebook")
        except ValueError:
            submissions[str(notebook)] = nbformat.v4.new_notebook()
    cells = [nbformat.v4.new_markdown_cell(f"# Written answers: {Path(reference).stem}")]
    for label, points in written_points(reference_notebook).items():
        statement = plain_markdown(statements.get(label, ""), titles)
        cells.append(nbformat.v4.new_markdown_cell(
            f"## {label} ({points_text(points)})\n\n{statement}"))
        for name, submission in submissions.items():
            answer = "\n\n".join(
                submission.cells[i].source for i in tagged(submission, WRITTEN, label, "markdown")
                if submission.cells[i].source.strip() != written_prompt(label, points))
            cells.append(nbformat.v4.new_markdown_cell(
                f"### {html.escape(name)}\n\n{answer or '*(no written answer)*'}"))
    collected = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(collected, path)
    body, _ = HTMLExporter().from_notebook_node(collected)
    path.with_suffix(".html").write_text(body)


def gradescope_results(report: Report) -> dict:
    """``report`` in the format of Gradescope's ``results.json`` (its autograder specification):
    one test per exercise, named by its label, with its score, points and message; a notebook
    that could not be graded scores 0 with the reason as the output. Written parts are left to
    Gradescope's own grading by hand."""
    tests = [{"name": s.label, "score": s.score, "max_score": s.points, "output": s.message}
             for s in report.exercises]
    return {"score": report.score, "output": report.error, "tests": tests}


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
    parser.add_argument("--json", action="store_true", help="print JSON lines for an LMS")
    parser.add_argument("--csv", type=Path, help="write a submissions x exercises table here")
    parser.add_argument("--written", type=Path,
                        help="collect the written answers into this notebook (and .html)")
    parser.add_argument("--gradescope", type=Path, metavar="RESULTS_JSON",
                        help="write Gradescope's results.json for the one submission")
    args = parser.parse_args(argv)
    if args.gradescope and len(args.notebooks) != 1:
        parser.error(f"--gradescope grades one submission, got {len(args.notebooks)}")
    if not namespaces_available():
        print("warning: unshare is not available, so the submissions are not isolated from "
              "each other's files and processes they start may outlive their grading",
              file=sys.stderr)
    grader = Grader(args.reference, args.hidden, args.seed, args.timeout, args.memory,
                    args.max_seconds)
    print(f"hidden tests drawn with --seed {grader.seed}", file=sys.stderr)
    if args.written:
        write_written_answers(args.notebooks, args.reference, args.written)
    reports = []
    for report in grader.grade_batch(args.notebooks):
        reports.append(report)
        if args.csv:
            write_csv(reports, args.csv, grader.written)  # each time: an interrupt loses none
        if args.gradescope:
            args.gradescope.write_text(json.dumps(gradescope_results(report), indent=1))
        if args.json:
            print(json.dumps(report.record()), flush=True)
        else:
            error = f"not graded: {report.error}\n" if report.error else ""
            print(f"{report.notebook}\n{error}{table(report.exercises)}\n", flush=True)


if __name__ == "__main__":
    main()
