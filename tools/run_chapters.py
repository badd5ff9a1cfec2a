"""Execute chapters side by side, each in its own kernel, and keep what each one computed.

Meant for a machine with a GPU and many cores, where the full profile's chapters run at once
(``make full`` runs them one after another and needs the whole Jupyter Book stack; this needs
only nbclient and ipykernel). Each chapter runs in its own process with the environment given
(``BOOK_SCALE=full``, say). After every cell the executed notebook is written to
``OUT/<chapter>.ipynb``, so a chapter stopped by its time limit or by a failing cell keeps the
cells it finished; ``tools/full_figures.py OUT book/figures/full`` then records its figures.
``OUT/times.json`` gives each chapter's seconds, its outcome and how many code cells ran (a
failing cell counts, and is kept with its error).

    BOOK_SCALE=full python tools/run_chapters.py OUT --limit 3600 exact_solutions recall

With ``--one-at-a-time`` the chapters run one after another instead (each timed from its own
start), and ``--busy N`` keeps N processes that only spin beside them, as a laptop with a
browser open: ``make chapter-times`` times every chapter (no chapter named: all of them, in the
book's order) in the quick profile beside two.
"""

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from toc import ROOT, toc_files

BOOK = ROOT / "book"


def execute(chapter: str, out: Path, book: Path = BOOK) -> None:
    """Run ``book/<chapter>.ipynb`` cell by cell, writing the notebook after each cell."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    # stopped at its limit, the chapter's kernel is shut down on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))
    notebook = nbformat.read(book / f"{chapter}.ipynb", as_version=4)
    client = NotebookClient(notebook, timeout=None, kernel_name="python3",
                            resources={"metadata": {"path": str(book)}})
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            try:
                client.execute_cell(cell, index)
            except CellExecutionError:  # kept too, with its error
                nbformat.write(notebook, out / f"{chapter}.ipynb")
                raise
            nbformat.write(notebook, out / f"{chapter}.ipynb")


def run(chapters: list, args) -> dict:
    """Start ``chapters`` side by side and wait for each to pass, fail or reach the limit:
    chapter -> its seconds, outcome and code cells run."""
    start = time.monotonic()
    running = {chapter: subprocess.Popen(
        [sys.executable, __file__, str(args.out), chapter, "--one", "--book", str(args.book)],
        stdout=open(args.out / f"{chapter}.log", "w"), stderr=subprocess.STDOUT)
        for chapter in chapters}
    times = {}
    while running:
        time.sleep(1)
        elapsed = time.monotonic() - start
        for chapter, process in list(running.items()):
            if process.poll() is None and elapsed < args.limit:
                continue
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                outcome = f"stopped after {args.limit:.0f} s"
            else:
                outcome = "passed" if process.returncode == 0 else "failed"
            executed = args.out / f"{chapter}.ipynb"
            cells = (json.loads(executed.read_text())["cells"] if executed.is_file() else [])
            done = sum(1 for cell in cells if cell.get("execution_count") is not None)
            times[chapter] = dict(seconds=round(elapsed, 1), outcome=outcome,
                                  code_cells_run=done)
            print(f"{chapter}: {outcome} in {elapsed:.0f} s, {done} code cells run",
                  flush=True)
            del running[chapter]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for the executed notebooks")
    parser.add_argument("chapters", nargs="*",
                        help="chapter names, e.g. recall (none: every chapter of the book)")
    parser.add_argument("--limit", type=float, default=3600,
                        help="seconds each chapter may run (default 3600)")
    parser.add_argument("--book", type=Path, default=BOOK,
                        help="the folder of the chapters (default: book/)")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="run the chapters one after another, not side by side")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="keep N spinning processes beside the chapters (default 0)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one:
        execute(args.chapters[0], args.out, args.book)
        return
    if args.busy < 0:
        parser.error(f"--busy must be 0 or more, got {args.busy}")
    chapters = args.chapters or [Path(page).name for page in toc_files()
                                 if (ROOT / f"{page}.ipynb").is_file()]
    for chapter in chapters:
        if not (args.book / f"{chapter}.ipynb").is_file():
            parser.error(f"no chapter {args.book / chapter}.ipynb")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    try:
        groups = [[chapter] for chapter in chapters] if args.one_at_a_time else [chapters]
        times = {chapter: t for group in groups for chapter, t in run(group, args).items()}
    finally:
        for process in busy:
            process.kill()
            process.wait()
    (args.out / "times.json").write_text(json.dumps(times, indent=1) + "\n")
    if any(t["outcome"] != "passed" for t in times.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
