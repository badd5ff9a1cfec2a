"""tools/nbval_outputs.py keeps what nbval executed; tools/executed.py hands it to a build."""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
from executed import SECONDS, from_cache, into_cache  # tools/, on pytest's pythonpath
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]


def _notebook(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    notebook.metadata.kernelspec = {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}
    nbformat.write(notebook, path)
    return path


def test_nbval_keeps_the_outputs_of_notebooks_that_passed(tmp_path):
    good = _notebook(tmp_path / "good.ipynb", "import time; time.sleep(0.5); x = 6 * 7",
                     "print(x)", "x + 1")
    _notebook(tmp_path / "bad.ipynb", "print('before')", "1 / 0", "print('after')")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "bad.ipynb").write_text("an earlier run's")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-p", "nbval_outputs",
         "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "good.ipynb", "bad.ipynb"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "EXECUTED_NOTEBOOKS": str(kept),
             "PYTHONPATH": str(ROOT / "tools")})
    assert "1 failed, 5 passed" in result.stdout, result.stdout[-3000:]
    assert sorted(p.name for p in kept.iterdir()) == ["good.ipynb"]

    executed = nbformat.read(kept / "good.ipynb", as_version=4)
    assert [c.execution_count for c in executed.cells] == [1, 2, 3]
    assert executed.cells[0].outputs == []
    (printed,) = executed.cells[1].outputs
    assert (printed.output_type, printed.name, printed.text) == ("stream", "stdout", "42\n")
    (result,) = executed.cells[2].outputs
    assert result.output_type == "execute_result" and result.data["text/plain"] == "43"
    # how long it ran: its kernel's start and its cells, the half-second sleep included
    assert 0.5 < executed.metadata[SECONDS] < 60, executed.metadata

    assert into_cache(kept, tmp_path / "cache") == ["good.ipynb"]
    merged = from_cache(tmp_path / "cache", good)
    assert merged.cells[2].outputs[0].data["text/plain"] == "43"
    # the record carries the time where myst-nb's execution table reads it
    record = get_cache(tmp_path / "cache").match_cache_notebook(nbformat.read(good, 4))
    assert record.data == {SECONDS: executed.metadata[SECONDS]}
    _notebook(good, "import time; time.sleep(0.5); x = 6 * 7", "print(x)", "x + 2")
    assert from_cache(tmp_path / "cache", good) is None, "changed code finds no outputs"


def test_a_cache_record_carries_the_time_the_notebook_ran(tmp_path):
    """Execution statistics shows each chapter's run time from its cache record (myst-nb reads
    ``data["execution_seconds"]``); a notebook that nbval executed brings it along."""
    folder = tmp_path / "executed"
    folder.mkdir()
    timed = _notebook(folder / "timed.ipynb", "1 + 1")
    notebook = nbformat.read(timed, 4)
    notebook.metadata[SECONDS] = 12.5
    nbformat.write(notebook, timed)
    untimed = _notebook(folder / "untimed.ipynb", "2 + 2")  # written before the time was kept
    assert into_cache(folder, tmp_path / "cache") == ["timed.ipynb", "untimed.ipynb"]
    cache = get_cache(tmp_path / "cache")
    assert cache.match_cache_notebook(nbformat.read(timed, 4)).data == {SECONDS: 12.5}
    assert cache.match_cache_notebook(nbformat.read(untimed, 4)).data == {}
