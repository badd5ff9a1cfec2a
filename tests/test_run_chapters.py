"""tools/run_chapters.py: chapters run side by side, and each keeps the cells it finished."""

import inspect
import json
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def notebook(path: Path, *sources: str) -> None:
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in sources]), path)


def test_passed_failed_and_stopped_chapters_keep_their_cells(tmp_path):
    """The limit, 60 s, is reached by the chapter that sleeps and by no other on a machine five
    times slower (three kernels started side by side take 5 s on a busy two-core one)."""
    book, out = tmp_path / "book", tmp_path / "out"
    book.mkdir()
    notebook(book / "passes.ipynb", "x = 1", "print(x + 1)")
    notebook(book / "fails.ipynb", "x = 1", "assert x == 2", "y = 3")
    notebook(book / "stops.ipynb", "x = 1", "import time\ntime.sleep(600)", "y = 3")
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_chapters.py"), str(out), "passes", "fails",
         "stops", "--limit", "60", "--book", str(book)],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout + run.stderr  # not every chapter passed
    times = json.loads((out / "times.json").read_text())
    assert {name: (t["outcome"], t["code_cells_run"]) for name, t in times.items()} == {
        "passes": ("passed", 2), "fails": ("failed", 2), "stops": ("stopped after 60 s", 1)}
    cells = json.loads((out / "passes.ipynb").read_text())["cells"]
    assert "".join(cells[1]["outputs"][0]["text"]) == "2\n"
    failed = json.loads((out / "fails.ipynb").read_text())["cells"][1]
    assert failed["outputs"][0]["ename"] == "AssertionError"


def test_an_unknown_chapter_is_refused(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_chapters.py"), str(tmp_path), "nope"],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "nope.ipynb" in run.stderr



def spinners() -> int:
    """How many processes run ``python -c "while True: pass"`` now (also run in the
    chapters below, from its source)."""
    from pathlib import Path

    count = 0
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        count += command.endswith(b"-c\0while True: pass\0")
    return count


def test_one_at_a_time_beside_busy_processes(tmp_path):
    """--one-at-a-time: the second chapter starts after the first has ended; --busy 2: two
    spinning processes run beside each chapter, and none is left after."""
    book, out = tmp_path / "book", tmp_path / "out"
    book.mkdir()
    before = spinners()
    for name in ("first", "second"):
        record = tmp_path / f"{name}.txt"
        notebook(book / f"{name}.ipynb", inspect.getsource(spinners),
                 "import time\nstart, spinning = time.time(), spinners()\ntime.sleep(2)",
                 f"from pathlib import Path\nPath({str(record)!r}).write_text("
                 "f'{start} {time.time()} {spinning}')")
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_chapters.py"), str(out), "first", "second",
         "--one-at-a-time", "--busy", "2", "--book", str(book)],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    first, second = ((tmp_path / f"{name}.txt").read_text().split()
                     for name in ("first", "second"))
    assert float(second[0]) > float(first[1])  # started after the first had ended
    assert int(first[2]) - before == int(second[2]) - before == 2
    assert spinners() == before
    times = json.loads((out / "times.json").read_text())
    assert [t["outcome"] for t in times.values()] == ["passed", "passed"]
