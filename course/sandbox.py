"""Run one notebook in a sandbox: the autograder's worker.

The notebook is written into a fresh scratch directory that holds nothing else and executed
there, cell by cell, in a worker process of its own:

* a new PID namespace (``unshare``), so every process the notebook starts dies with the worker,
  and a new mount namespace in which the folders given as ``hide`` (the instructor edition's,
  the other submissions') are covered by empty file systems that the notebook cannot unmount;
* an address-space limit, a time limit per cell and one for the whole notebook;
* the quick profile (``BOOK_SCALE=quick``).

The worker reports every cell's outcome, and what the cells marked ``hidden_test`` printed,
through a pipe that the notebook's kernel does not inherit. Where ``unshare`` is not available
the notebook still runs, without the namespaces (:func:`namespaces_available` says which).
"""

import argparse
import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

TIMEOUT = "CellTimeout"  # the error name of a cell that ran out of time
HIDDEN_TEST = "hidden_test"  # cell metadata of the cells whose printed output is reported
ROOT = Path(__file__).resolve().parents[1]
PR_SET_PDEATHSIG = 1  # prctl option: the signal a process gets when its parent dies


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
    seconds. Returns ``{"cells": {index: None or [ename, evalue]}, "printed": {index: stdout of
    a hidden_test cell}, "note": why it stopped early}``; the cells that ran are the keys, and
    execution stops early only when the kernel dies. (A cell that swallows KeyboardInterrupt
    is not stopped by the interrupt; the limit of :func:`run_sandboxed` ends it.)"""
    replies: dict[int, list | None] = {}
    printed: dict[int, str] = {}

    def record(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        replies[cell_index] = ([content.get("ename", "Error"), content.get("evalue", "")]
                               if content.get("status") == "error" else None)
        if cell.metadata.get(HIDDEN_TEST):
            printed[cell_index] = "".join(output.get("text", "") for output in cell.outputs
                                          if output.get("name") == "stdout")

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
                return {"cells": replies, "printed": printed, "note": _exit_note(client)}
    return {"cells": replies, "printed": printed, "note": ""}


@cache
def namespaces_available() -> bool:
    """Whether ``unshare`` can give the worker its own PID and mount namespaces here."""
    try:
        subprocess.run([*_unshare(), "true"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def _unshare() -> list[str]:
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *user, "--fork", "--pid", "--kill-child", "--mount-proc"]


# Mount an empty file system over each folder given, then go on in a new user namespace: the
# mounts become locked there, so the notebook (root in it or not) cannot remove them.
_HIDE = ('while [ "$1" != -- ]; do mount -t tmpfs -o size=4k,mode=000 hidden "$1" || exit 111; '
         'shift; done; shift; exec unshare --user --map-root-user "$WORKER_PYTHON" '
         '-m course.sandbox "$@"')


def check_hideable(folders) -> list[Path]:
    """The folders to hide, resolved; ``ValueError`` for one that holds the grader itself (the
    repository, Python, the temporary directory), which cannot be hidden from the worker."""
    needed = [ROOT, Path(sys.prefix).resolve(), Path(tempfile.gettempdir()).resolve()]
    resolved = sorted({Path(folder).resolve() for folder in folders})
    for folder in resolved:
        if any(folder == path or folder in path.parents for path in needed):
            raise ValueError(
                f"{folder} holds the grader's own files ({', '.join(map(str, needed))}), so it "
                "cannot be hidden from the submissions: put the submissions and the instructor "
                "edition in folders of their own")
    return resolved


def run_sandboxed(notebook, timeout: float, memory_gb: float, max_seconds: float,
                  hide=()) -> dict:
    """Execute ``notebook`` in a worker process in a fresh scratch directory that holds only
    the notebook, with the folders ``hide`` hidden; see :func:`execute` for the result. The
    worker and everything it started are gone when this returns."""
    hidden = check_hideable(hide)
    scratch = Path(tempfile.mkdtemp(prefix="grade-"))
    path = scratch / "submission.ipynb"
    nbformat.write(notebook, path)
    read_end, write_end = os.pipe()
    arguments = ["--worker", str(path), "--timeout", str(timeout), "--result-fd", str(write_end)]
    if namespaces_available():
        command = [*_unshare(), "sh", "-c", _HIDE, "hide", *map(str, hidden), "--", *arguments]
    else:
        command = [sys.executable, "-m", "course.sandbox", *arguments]
    worker = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "BOOK_SCALE": "quick",
                                "WORKER_PYTHON": sys.executable},
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, preexec_fn=_prepare_worker(memory_gb))
    os.close(write_end)
    # read while the worker runs: a result larger than the pipe's buffer would block it
    received: list[str] = []
    with os.fdopen(read_end) as pipe:
        reader = threading.Thread(target=lambda: received.append(pipe.read()))
        reader.start()
        try:
            worker.wait(timeout=max_seconds)
            finished, note = True, f"the grader's worker failed (exit status {worker.returncode})"
        except subprocess.TimeoutExpired:
            finished, note = False, f"the submission ran longer than {max_seconds:g} s in all"
        finally:
            try:
                os.killpg(worker.pid, 9)  # the worker's session; its PID namespace goes with it
            except ProcessLookupError:
                pass
            worker.wait()
            reader.join()  # the pipe's last writer is gone
            shutil.rmtree(scratch, ignore_errors=True)
    text = received[0] if finished else ""
    try:
        outcome = json.loads(text)
    except json.JSONDecodeError:
        return {"cells": {}, "printed": {}, "note": note}
    return {"note": outcome["note"],
            "cells": {int(k): v for k, v in outcome["cells"].items()},
            "printed": {int(k): v for k, v in outcome["printed"].items()}}


def _prepare_worker(gigabytes: float):
    """Run in the worker before it starts: limit its memory, and have the system kill it if
    the grader dies (so a grader killed mid-batch leaves nothing running)."""
    def prepare():
        size = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    return prepare


def main(argv=None) -> None:
    """The worker: execute a notebook and write the outcome to a file descriptor."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--worker", type=Path, required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    args = parser.parse_args(argv)
    notebook = nbformat.read(args.worker, as_version=4)
    outcome = execute(notebook, args.timeout, args.worker.parent)
    with os.fdopen(args.result_fd, "w") as pipe:
        json.dump(outcome, pipe)


if __name__ == "__main__":
    main()
