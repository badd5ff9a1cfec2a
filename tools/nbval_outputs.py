"""A pytest plugin that keeps what nbval executed, so that the book's build need not execute
every chapter again.

    EXECUTED_NOTEBOOKS=FOLDER pytest book -p nbval_outputs

nbval runs each code cell of a notebook in a kernel and receives its outputs, but writes no
notebook. With this plugin, each notebook whose every cell passed is written to FOLDER with
those outputs (under its own file name), and with how long it ran: the seconds from starting
its kernel to the end of its last cell (pytest's setup and call phases of its cells, summed), in
its metadata's ``execution_seconds`` (:data:`executed.SECONDS`). The whole-book test stores them
in the build's Jupyter Cache (``executed.into_cache``), where Jupyter Book finds them by the
notebook's code, as if it had executed them itself, and *Execution statistics* shows that time.
A notebook with a failed cell is not written, so the build executes it afresh and fails on it.
Without ``EXECUTED_NOTEBOOKS`` the plugin does nothing.
"""

import os
from pathlib import Path

import nbformat
import pytest
from executed import SECONDS

FOLDER = os.environ.get("EXECUTED_NOTEBOOKS")
_failed: set[Path] = set()
# each notebook's time so far; its kernel starts in its first cell's setup
_seconds: dict[Path, float] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Give each cell nbval ran the outputs it received; after a notebook's last code cell,
    write the notebook, with its time, if none of its cells failed."""
    report = yield
    if FOLDER is None or not hasattr(item, "cell"):  # not a cell of nbval's
        return report
    notebook = item.parent
    if call.when in ("setup", "call"):
        _seconds[notebook.path] = _seconds.get(notebook.path, 0.0) + report.duration
    outputs = getattr(item, "test_outputs", None)
    if call.when != "call" or outputs is None:
        return report
    if report.failed:
        _failed.add(notebook.path)
        (Path(FOLDER) / notebook.path.name).unlink(missing_ok=True)  # an earlier run's
    code = [cell for cell in notebook.nb.cells if cell.cell_type == "code"]
    number = next(n for n, cell in enumerate(code) if cell is item.cell)
    item.cell.outputs, item.cell.execution_count = outputs, number + 1
    if number == len(code) - 1 and notebook.path not in _failed:
        notebook.nb.metadata[SECONDS] = _seconds[notebook.path]
        Path(FOLDER).mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook.nb, Path(FOLDER) / notebook.path.name)
    return report
