"""Run the regular-task benchmark of the chapter *Learning FIRST and PARITY* at full scale, one
task at a time, and record each task's outcome for the appendix *Reproducing at full scale*.

On a GPU the chapter runs the whole benchmark in one cell. On a small CPU that cell takes hours,
more than one sitting; this script runs the tasks named (in parallel processes if you like) and
writes ``book/figures/full/regular_tasks/<task>.json`` for each (``Benchmark.save``):

    OMP_NUM_THREADS=1 python tools/regular_tasks.py even_pairs cycle_navigation

The sizes and seeds are the chapter's own: the script executes the chapter's first code cell
and the cell that defines ``BENCH``, under ``BOOK_SCALE=full`` unless the environment sets
another scale. A task's models depend only on the seeds (their weights, strings and lengths), so
its outcome is the one the chapter's cell computes, up to the rounding of another device or
thread count.
"""

import os
import sys
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent.parent / "book"
OUT = BOOK / "figures" / "full" / "regular_tasks"


def chapter_settings(chapter: Path = BOOK / "learnability.ipynb") -> dict:
    """The names that the chapter's first code cell and its ``BENCH = ...`` cell bind."""
    cells = [cell.source for cell in nbformat.read(chapter, as_version=4).cells
             if cell.cell_type == "code"]
    bench = [source for source in cells if source.startswith("BENCH = ")]
    if len(bench) != 1:
        raise ValueError(f"{chapter} has {len(bench)} cells that define BENCH, not one")
    names = {}
    for source in (cells[0], bench[0]):
        exec(source, names)  # the chapter's own code
    return names


def main(tasks) -> None:
    os.environ.setdefault("BOOK_SCALE", "full")
    settings = chapter_settings()
    unknown = set(tasks) - set(settings["BENCH"]["tasks"])
    if not tasks or unknown:
        sys.exit(f"name tasks of the benchmark, among {settings['BENCH']['tasks']}")
    OUT.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        result = settings["run"](task, settings["seeds"], **settings["sizes"])
        result.save(OUT / f"{task}.json")
        print(f"recorded {OUT / f'{task}.json'}")


if __name__ == "__main__":
    main(sys.argv[1:])
