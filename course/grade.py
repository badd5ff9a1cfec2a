"""Autograder: run each submitted notebook in a sandbox and score its exercises by their checks.

Each submission is graded on its own. The grader writes the notebook to run (the submission,
with the reference's check cells in place of its own when a reference is given) into a fresh
scratch directory that holds nothing else, and executes it there in a worker process of its
own: a new PID namespace where ``unshare`` allows it (so that every process the submission
starts dies with the worker), a memory limit, a time limit per cell and one per submission, and
the quick profile (``BOOK_SCALE=quick``). The worker sends the outcome of every cell back
through a pipe that the notebook's kernel does not inherit; the grader scores it and writes the
grades only after the worker and everything it started are gone. A broken submission (not a
notebook, no exercises, a kernel that dies) gets a row that says what went wrong, and the batch
goes on.

An exercise scores its points (the notebook metadata ``exercises``, see
:mod:`course.assignments`) when every one of its check cells runs without an error. Its checks
run where the exercise's part of the notebook ends (before the next exercise begins), so an
answer may sit anywhere after the stub, in a cell of its own or after a stub left in place.
Command line::

    python -m course.grade submission.ipynb [more.ipynb ...] \\
        [--reference instructor/chapter.ipynb] [--timeout 120] [--memory 8] \\
        [--json] [--csv grades.csv]
"""

import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from course.assignments import ANSWER, CHECK, exercise_points, tagged

TIMEOUT = "CellTimeout"  # the error name of a cell that ran out of time


@dataclass
class ExerciseScore:
    """The grade of one exercise: ``score`` is ``points`` or 0, ``message`` says why."""

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


def _starts_exercise(cell, label: str) -> bool:
    """Whether ``cell`` begins another exercise than ``label`` (its statement or its cells)."""
    other = cell.metadata.get("exercise") not in (None, label)
    return other or (cell.cell_type == "markdown" and "```{exercise}" in cell.source)


def _notebook_to_run(submission, reference, points):
    """The submission with the checks it is graded by (the reference's, or its own) in place
    of its own check cells: each exercise's checks go where its part of the notebook ends,
    before the first cell after its last answer cell that starts another exercise, or at the
    end."""
    source = reference if reference is not None else submission
    checks_of = {label: [source.cells[i] for i in tagged(source, CHECK, label)]
                 for label in points}
    notebook = nbformat.from_dict(submission)
    notebook.cells = [c for c in notebook.cells if CHECK not in c.metadata.get("tags", [])]
    cells = notebook.cells
    for label, checks in checks_of.items():
        answers = tagged(notebook, ANSWER, label)
        later = [i for i in range(answers[-1] + 1, len(cells))
                 if _starts_exercise(cells[i], label)] if answers else []
        at = later[0] if later else len(cells)
        cells[at:at] = [nbformat.from_dict(c) for c in checks]
    return notebook


# ---------------------------------------------------------------------------- the worker


def _exit_note(client) -> str:
    """Why the kernel died, from its exit status where the kernel manager has it."""
    process = getattr(getattr(client.km, "provisioner", None), "process", None)
    code = process.poll() if process is not None else None
    if code is not None and code < 0:
        return (f"the kernel was killed by signal {-code} (the memory limit or the system's "
                "out-of-memory killer?)")
    if code is not None:
        return f"the kernel exited with status {code} (os._exit or sys.exit in the notebook?)"
    return "the kernel died"


def execute(notebook, timeout: float, cwd: Path) -> dict:
    """Run every code cell of ``notebook`` in one kernel, each interrupted after ``timeout``
    seconds, and return ``{"cells": {index: None or [ename, evalue]}, "note": why}``; the cells
    that ran are the keys, and execution stops early (``note`` says why) only when the kernel
    dies. (A cell that swallows KeyboardInterrupt is not stopped by the interrupt;
    the per-submission limit of :func:`run_sandboxed` ends it.)"""
    replies: dict[int, list | None] = {}

    def record(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        replies[cell_index] = ([content.get("ename", "Error"), content.get("evalue", "")]
                               if content.get("status") == "error" else None)

    client = NotebookClient(
        notebook, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT, "evalue": f"the cell ran longer than {timeout:g} s",
                          "traceback": []},
        kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
        on_cell_executed=record)
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, index)
            except DeadKernelError:
                return {"cells": replies, "note": _exit_note(client)}
    return {"cells": replies, "note": ""}


def _worker(notebook_path: Path, timeout: float, result_fd: int) -> None:
    """Entry point of the worker process: execute and write the outcome to ``result_fd``."""
    notebook = nbformat.read(notebook_path, as_version=4)
    outcome = execute(notebook, timeout, notebook_path.parent)
    with os.fdopen(result_fd, "w") as pipe:
        json.dump(outcome, pipe)


# ---------------------------------------------------------------------------- the sandbox


@cache
def sandbox_prefix() -> tuple[str, ...]:
    """The command that puts the worker in a PID namespace of its own (every process the
    submission starts dies with the worker), or ``()`` where ``unshare`` cannot."""
    prefix = ["unshare", "--fork", "--pid", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    try:
        subprocess.run([*prefix, "true"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(prefix)


def _limit_memory(gigabytes: float):
    def limit():
        size = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    return limit


def run_sandboxed(notebook, timeout: float, memory_gb: float, max_seconds: float) -> dict:
    """Execute ``notebook`` in a worker process in a fresh scratch directory that holds only
    the notebook; see :func:`execute` for the result. The worker and everything it started are
    gone when this returns."""
    scratch = Path(tempfile.mkdtemp(prefix="grade-"))
    path = scratch / "submission.ipynb"
    nbformat.write(notebook, path)
    read_end, write_end = os.pipe()
    command = [*sandbox_prefix(), sys.executable, "-m", "course.grade", "--worker", str(path),
               "--timeout", str(timeout), "--result-fd", str(write_end)]
    worker = subprocess.Popen(
        command, cwd=Path(__file__).parents[1], env={**os.environ, "BOOK_SCALE": "quick"},
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, preexec_fn=_limit_memory(memory_gb))
    os.close(write_end)
    try:
        with os.fdopen(read_end) as pipe:
            worker.wait(timeout=max_seconds)
            text = pipe.read()
        note = f"the grader's worker failed (exit status {worker.returncode})"
    except subprocess.TimeoutExpired:
        text, note = "", f"the submission ran longer than {max_seconds:g} s in all"
    finally:
        try:
            os.killpg(worker.pid, 9)  # the worker's session; its PID namespace goes with it
        except ProcessLookupError:
            pass
        worker.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    try:
        outcome = json.loads(text)
    except json.JSONDecodeError:
        return {"cells": {}, "note": note}
    return {**outcome, "cells": {int(k): v for k, v in outcome["cells"].items()}}


# ---------------------------------------------------------------------------- scores


def _score(label, points, notebook, outcome) -> ExerciseScore:
    def fail(message):
        return ExerciseScore(label, points, 0, message)

    checks = tagged(notebook, CHECK, label)
    if not checks:
        return fail("the notebook has no check cell for this exercise")
    answer_errors = [outcome["cells"][i] for i in tagged(notebook, ANSWER, label)
                     if outcome["cells"].get(i) is not None]
    for i in checks:
        if i not in outcome["cells"]:
            return fail(outcome["note"] or "this check did not run")
        if outcome["cells"][i] is None:
            continue
        ename, evalue = outcome["cells"][i]
        if ename == TIMEOUT:
            return fail(f"the check {evalue}; does your answer loop forever?")
        failed = f"{ename}: {evalue}" if evalue else f"a check failed ({ename})"
        if not answer_errors:
            return fail(failed)
        answer_ename, answer_evalue = answer_errors[0]
        if answer_ename == "NotImplementedError":
            return fail(f"not answered: the answer cell still raises NotImplementedError, "
                        f"and the check fails ({failed})")
        if answer_ename == "MemoryError" or "can't allocate memory" in answer_evalue:
            answer_ename = "out of memory (the grader's limit): " + answer_ename
        return fail(f"the answer cell raised {answer_ename}: {answer_evalue}; "
                    f"then the check failed ({failed})")
    return ExerciseScore(label, points, points, "all checks passed")


def grade(notebook, reference=None, timeout: float = 120, memory_gb: float = 8,
          max_seconds: float = 1800) -> list[ExerciseScore]:
    """Grade the notebook at path ``notebook`` in a sandbox (see the module's docstring):
    every cell limited to ``timeout`` seconds, the whole run to ``max_seconds``, the worker's
    address space to ``memory_gb`` GiB. ``reference`` is the path of the instructor edition
    whose points and checks to use (default: the submission's own)."""
    path = Path(notebook)
    if not path.is_file():
        raise ValueError(f"notebook: no such file {path}")
    for name, value in (("timeout", timeout), ("memory_gb", memory_gb),
                        ("max_seconds", max_seconds)):
        if not (isinstance(value, int | float) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {value!r}")
    try:
        submission = nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises several kinds for a file that is no notebook
        raise ValueError(f"notebook: {path} is not a Jupyter notebook ({error})") from None
    reference_notebook = nbformat.read(reference, as_version=4) if reference else None
    points = exercise_points(reference_notebook or submission)
    if not points:
        raise ValueError(f"notebook: {path} has no graded exercises in its metadata")
    to_run = _notebook_to_run(submission, reference_notebook, points)
    outcome = run_sandboxed(to_run, timeout, memory_gb, max_seconds)
    return [_score(label, p, to_run, outcome) for label, p in points.items()]


def grade_batch(notebooks, reference=None, **limits):
    """Grade every notebook in turn, yielding a :class:`Report` as each is done; one that
    cannot be graded gets a report with its ``error`` (and zero for every exercise of the
    reference), and the batch goes on."""
    labels = exercise_points(nbformat.read(reference, as_version=4)) if reference else {}
    for path in notebooks:
        try:
            yield Report(str(path), grade(path, reference, **limits))
        except ValueError as error:
            zeros = [ExerciseScore(label, p, 0, str(error)) for label, p in labels.items()]
            yield Report(str(path), zeros, str(error))


def table(scores: list[ExerciseScore]) -> str:
    """A plain-text score table with one row per exercise and the total."""
    width = max([len(s.label) for s in scores] + [5])
    rows = [f"{s.label:<{width}}  {s.score:>5g} / {s.points:<4g} {s.message}" for s in scores]
    total = sum(s.score for s in scores), sum(s.points for s in scores)
    return "\n".join(rows + [f"{'total':<{width}}  {total[0]:>5g} / {total[1]:g}"])


def write_csv(reports: list[Report], path: Path) -> None:
    """One row per submission, one column per exercise, then the total and the maximum;
    written to a temporary file and renamed, so a reader never sees half a table."""
    labels = list(dict.fromkeys(s.label for r in reports for s in r.exercises))
    temporary = path.with_name(path.name + ".partial")
    with temporary.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["notebook", *labels, "total", "max_score", "error"])
        for r in reports:
            scores = {s.label: s.score for s in r.exercises}
            writer.writerow([r.notebook, *(scores.get(label, "") for label in labels),
                             r.score, r.max_score, r.error])
    temporary.replace(path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="submitted notebooks")
    parser.add_argument("--reference", type=Path, help="the instructor edition to grade against")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per cell")
    parser.add_argument("--memory", type=float, default=8, help="GiB per submission")
    parser.add_argument("--max-seconds", type=float, default=1800, help="seconds per submission")
    parser.add_argument("--json", action="store_true", help="print JSON for an LMS")
    parser.add_argument("--csv", type=Path, help="write a submissions x exercises table here")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result-fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.timeout, args.result_fd)
        return
    if not args.notebooks:
        parser.error("give at least one notebook to grade")
    if not sandbox_prefix():
        print("warning: unshare is not available, so processes a submission starts in the "
              "background may outlive its grading", file=sys.stderr)
    reports = []
    batch = grade_batch(args.notebooks, args.reference, timeout=args.timeout,
                        memory_gb=args.memory, max_seconds=args.max_seconds)
    for report in batch:
        reports.append(report)
        if args.csv:
            write_csv(reports, args.csv)  # after every submission: an interrupt loses none
        if args.json:
            print(json.dumps(report.record()), flush=True)
        else:
            error = f"not graded: {report.error}\n" if report.error else ""
            print(f"{report.notebook}\n{error}{table(report.exercises)}\n", flush=True)


if __name__ == "__main__":
    main()
