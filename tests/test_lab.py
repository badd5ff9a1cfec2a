"""The learner's path: every chapter (as chapters.zip offers it: course.numbers.lab_edition)
and every student edition opened in JupyterLab (served from the book's environment on
127.0.0.1, driven in headless Chromium) shows its MyST rendered by jupyterlab-myst, as the book
does: no raw directive or role, math typeset, exercise and statement boxes, solutions, model
answers and checks folded until opened; and "Run All Cells" on a short chapter finishes without
an error. Its exercises, theorem-like boxes and figures carry the book's numbers ("Exercise
7.1", "Figure 7.2"), and its proofs none, as in the book. Screenshots go to
_build/lab-screens/."""

import json
import re
from pathlib import Path

import nbformat
import pytest

from course.assignments import ANSWER, student_edition
from course.numbers import box_numbers, chapter_numbers, figure_numbers, lab_edition

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
SCREENS = ROOT / "_build" / "lab-screens"
# A short chapter, run from JupyterLab's Run menu.
RUN_ALL = "recognizers"
# A cell of the kind that broke In-context recall's Theorem 5.6 (a line of inline math that
# starts with "- " becomes a list item, and the math is left as raw TeX), and a directive that
# jupyterlab-myst does not know.
BROKEN = ("```{prf:theorem} T\n:label: thm-t\n\nAfter $t \\ge \\max(1,\n- \\ln x)$ steps.\n```"
          "\n\n```{unknown}\ntext\n```")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The chapters as chapters.zip offers them, their student editions, a broken and a
    failing notebook, as a learner's folder."""
    folder = tmp_path_factory.mktemp("lab")
    for chapter in CHAPTERS:
        book = nbformat.read(chapter, as_version=4)
        nbformat.write(lab_edition(book, chapter.stem), folder / chapter.name)
        nbformat.write(student_edition(book, chapter.stem), folder / f"student-{chapter.name}")
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    broken = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(BROKEN)],
                                      metadata=kernel)
    nbformat.write(broken, folder / "broken.ipynb")
    failing = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in ("x = 1", "x / 0", "print('never')")],
        metadata=kernel)
    nbformat.write(failing, folder / "failing.ipynb")
    return folder


@pytest.fixture(scope="module")
def lab(folder):
    from lab import browser_page, jupyterlab  # tools/; needs playwright, as the slow checks do

    with jupyterlab(folder) as address, browser_page() as page:
        yield address, page


def expected(notebook: Path) -> dict:
    """What the notebook's source says JupyterLab should show."""
    book = nbformat.read(notebook, as_version=4)
    chapter = notebook.stem.removeprefix("student-")
    text = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    folded = [c for c in book.cells
              if c.cell_type == "code" and c.metadata.get("jupyter", {}).get("source_hidden")]
    return {"exercises": text.count("```{exercise}"),
            "numbers": [number for _, number in box_numbers(book, chapter)],
            "figures": list(figure_numbers(book, chapter).values()),
            # a table with a caption is numbered as the book numbers it (Table 4.1)
            "tables": [f"{chapter_numbers()[chapter]}.{k}" for k in range(
                1, len(re.findall(r"^```\{list-table\} \S", text, re.M)) + 1)],
            "statements": len(re.findall(r"^`{3,4}\{prf:", text, re.M)),
            "solutions": len(re.findall(r"^`{3,4}\{solution\}", text, re.M)),
            "folded": len(folded),
            "answers": sum(ANSWER in c.metadata.get("tags", []) for c in folded)}


@pytest.mark.slow  # serves JupyterLab and opens every chapter in headless Chromium
@pytest.mark.parametrize("edition", ["chapter", "student"])
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_notebook_renders_in_jupyterlab_as_in_the_book(lab, folder, chapter, edition):
    from lab import open_notebook, screenshots

    address, page = lab
    name = chapter.name if edition == "chapter" else f"student-{chapter.name}"
    report = open_notebook(page, address, name)
    want = expected(folder / name)
    assert not report.problems(), json.dumps(report.problems(), indent=1)
    assert report.math > 0 and report.admonitions > 0
    assert report.exercises == want["exercises"] >= 3
    assert report.statements == want["statements"]
    # and no proof is numbered ("Proof 4.1"), as in the book: the editions mark each proof
    # :nonumber: for jupyterlab-myst
    assert report.numbers == want["numbers"], "numbered as in the book"
    assert report.figures == want["figures"] and want["figures"], "figures too"
    assert report.tables == want["tables"], "and tables"
    assert report.solutions == want["solutions"]
    assert report.solutions == (want["exercises"] if edition == "chapter" else 0)
    # the model answers and the checks are folded; what a folded answer shows is its first
    # line, a comment that gives nothing away
    assert len(report.collapsed_inputs) == want["folded"]
    assert want["answers"] == (want["exercises"] if edition == "chapter" else 0)
    shown = [line for line in report.collapsed_inputs if line.startswith("# Solution")]
    assert len(shown) == want["answers"]
    screenshots(page, SCREENS, Path(name).stem)
    if report.solutions:  # screenshots() clicked the first solution open: the check sees it
        assert len(open_notebook(page, address, name, reopen=False).open_solutions) == 1


@pytest.mark.slow
def test_the_check_sees_raw_markup(lab):
    from lab import open_notebook

    address, page = lab
    report = open_notebook(page, address, "broken.ipynb")
    raw = " ".join(report.problems()["raw markup"])
    assert "$t \\ge" in raw and "\\max" in raw and "Unknown Directive" in raw, raw


@pytest.mark.slow  # runs a chapter in JupyterLab's kernel
def test_run_all_on_a_short_chapter_finishes_without_error(lab):
    from lab import open_notebook, run_all

    address, page = lab
    open_notebook(page, address, f"{RUN_ALL}.ipynb")
    assert run_all(page) == []
    page.screenshot(path=SCREENS / f"{RUN_ALL}-run-all.png")


@pytest.mark.slow
def test_run_all_reports_an_error(lab):
    from lab import open_notebook, run_all

    address, page = lab
    open_notebook(page, address, "failing.ipynb")
    [error] = run_all(page)
    assert "ZeroDivisionError" in error
