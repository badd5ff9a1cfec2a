"""Autograder: run a submitted notebook and score each graded exercise by its checks.

The notebook is executed top to bottom with nbclient; every cell has a time limit, and a cell
that raises or runs out of time is recorded and grading goes on with the next one. An exercise
scores its points (the notebook metadata ``exercises``, see :mod:`companion.assignments`) when
every one of its ``check`` cells runs without an error, and zero otherwise, with the error's
message as feedback. With ``reference`` (the instructor edition), the points and the checks are
taken from the reference, so an edited check in a submission changes nothing. Command line::

    python -m companion.grade submission.ipynb [more.ipynb ...] \\
        [--reference instructor/chapter.ipynb] [--timeout 120] [--json]
"""

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from companion.assignments import ANSWER, CHECK, exercise_points, tagged

TIMEOUT = "CellTimeout"


@dataclass
class ExerciseScore:
    """The grade of one exercise: ``score`` is ``points`` or 0, ``message`` says why."""

    label: str
    points: float
    score: float
    message: str


def _with_reference_checks(submission, reference, labels):
    """The submission with its check cells replaced by the reference's, each exercise's
    checks placed after its last answer cell (at the end if it has none)."""
    cells = [c for c in submission.cells if CHECK not in c.metadata.get("tags", [])]
    for label in labels:
        checks = [reference.cells[i] for i in tagged(reference, CHECK, label)]
        answers = [i for i, c in enumerate(cells) if ANSWER in c.metadata.get("tags", [])
                   and c.metadata.get("exercise") == label]
        at = answers[-1] + 1 if answers else len(cells)
        cells[at:at] = [nbformat.from_dict(c) for c in checks]
    submission.cells = cells
    return submission


def _run(notebook, timeout: float, cwd: Path) -> tuple[dict[int, tuple[str, str] | None], str]:
    """Execute in place; returns ``{cell index: None or (ename, evalue)}`` for every code cell
    that ran, and a note when execution stopped early (the kernel died)."""
    outcome: dict[int, tuple[str, str] | None] = {}

    def record(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        failed = content.get("status") == "error"
        outcome[cell_index] = (content.get("ename", "Error"), content.get("evalue", "")) \
            if failed else None

    client = NotebookClient(
        notebook, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT, "evalue": f"the cell ran longer than {timeout:g} s",
                          "traceback": []},
        kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
        on_cell_executed=record)
    try:
        client.execute()
    except DeadKernelError:
        return outcome, "the kernel died (out of memory?) before this cell ran"
    return outcome, "this cell did not run"


def _score(label, points, notebook, outcome, stopped) -> ExerciseScore:
    def fail(message):
        return ExerciseScore(label, points, 0, message)

    checks = tagged(notebook, CHECK, label)
    if not checks:
        return fail("the notebook has no check cell for this exercise")
    for i in tagged(notebook, ANSWER, label):
        if outcome.get(i) is not None and outcome[i][0] == "NotImplementedError":
            return fail("not answered: the answer cell still raises NotImplementedError")
    for i in checks:
        if i not in outcome:
            return fail(stopped)
        if outcome[i] is not None:
            ename, evalue = outcome[i]
            if ename == TIMEOUT:
                return fail(f"the check {evalue}; does your answer loop forever?")
            return fail(f"{ename}: {evalue}" if evalue else f"a check failed ({ename})")
    return ExerciseScore(label, points, points, "all checks passed")


def grade(notebook, reference=None, timeout: float = 120) -> list[ExerciseScore]:
    """Execute the notebook at path ``notebook`` (every cell limited to ``timeout`` seconds,
    errors do not stop it) and score each graded exercise; ``reference`` is the path of the
    instructor edition whose points and checks to use (default: the submission's own)."""
    path = Path(notebook)
    if not path.is_file():
        raise ValueError(f"notebook: no such file {path}")
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    submission = nbformat.read(path, as_version=4)
    points = exercise_points(nbformat.read(reference, as_version=4) if reference else submission)
    if not points:
        raise ValueError(f"notebook: {path} has no graded exercises in its metadata")
    if reference:
        submission = _with_reference_checks(
            submission, nbformat.read(reference, as_version=4), points)
    outcome, stopped = _run(submission, timeout, path.parent)
    return [_score(label, p, submission, outcome, stopped) for label, p in points.items()]


def table(scores: list[ExerciseScore]) -> str:
    """A plain-text score table with one row per exercise and the total."""
    width = max(len(s.label) for s in scores)
    rows = [f"{s.label:<{width}}  {s.score:>5g} / {s.points:<4g} {s.message}" for s in scores]
    total = sum(s.score for s in scores), sum(s.points for s in scores)
    return "\n".join(rows + [f"{'total':<{width}}  {total[0]:>5g} / {total[1]:g}"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="submitted notebooks")
    parser.add_argument("--reference", type=Path, help="the instructor edition to grade against")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per cell")
    parser.add_argument("--json", action="store_true", help="print JSON for an LMS")
    args = parser.parse_args(argv)
    reports = []
    for path in args.notebooks:
        scores = grade(path, args.reference, args.timeout)
        reports.append({"notebook": str(path), "score": sum(s.score for s in scores),
                        "max_score": sum(s.points for s in scores),
                        "exercises": [asdict(s) for s in scores]})
        if not args.json:
            print(f"{path}\n{table(scores)}\n")
    if args.json:
        print(json.dumps(reports, indent=2))


if __name__ == "__main__":
    main()
