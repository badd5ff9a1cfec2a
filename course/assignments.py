"""Student and instructor editions of the book's chapters, made with nbconvert.

An exercise is marked up once, with cell tags and metadata, and the same notebook serves the
HTML book, the students and the instructors:

* the notebook's metadata ``exercises`` maps each graded exercise's label to its points;
* a code cell tagged ``answer`` (metadata ``exercise: <label>``) holds the model answer;
* a code cell tagged ``check`` (metadata ``exercise: <label>``) checks it with asserts whose
  messages tell a student what is wrong;
* markdown cells tagged ``solution`` (the ``solution-start`` / ``solution-end`` directives and
  the worked explanation) hold what a student must not see.

The student edition drops the ``solution`` cells (nbconvert's ``TagRemovePreprocessor``) and
replaces each answer with a stub that raises ``NotImplementedError``; the checks stay, so
students can test their work. The instructor edition keeps everything. Both are written without
outputs. Command line::

    python -m course.assignments book/*.ipynb --out _build/assignments
"""

import argparse
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearOutputPreprocessor, Preprocessor, TagRemovePreprocessor

ANSWER, CHECK, SOLUTION = "answer", "check", "solution"


def exercise_points(notebook: nbformat.NotebookNode) -> dict[str, float]:
    """The graded exercises of a notebook: ``{label: points}`` from its metadata, in the
    order in which their cells appear."""
    points = notebook.metadata.get("exercises", {})
    if not isinstance(points, dict) or not all(
            isinstance(p, int | float) and p > 0 for p in points.values()):
        raise ValueError("notebook metadata 'exercises' must map labels to positive points, "
                         f"got {points!r}")
    order = [cell.metadata.get("exercise") for cell in notebook.cells]
    return dict(sorted(points.items(),
                       key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


def tagged(notebook: nbformat.NotebookNode, tag: str, label: str) -> list[int]:
    """Indices of the code cells tagged ``tag`` that belong to exercise ``label``."""
    return [i for i, cell in enumerate(notebook.cells)
            if tag in cell.metadata.get("tags", []) and cell.metadata.get("exercise") == label]


class StubAnswers(Preprocessor):
    """Replace every ``answer`` cell by a stub that raises ``NotImplementedError``."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and ANSWER in cell.metadata.get("tags", []):
            label = cell.metadata.get("exercise", "this exercise")
            cell.source = (f"# Your answer to {label} goes here; then run the check below.\n"
                           f'raise NotImplementedError("{label}: not answered yet")')
        return cell, resources


def _apply(notebook, *preprocessors) -> nbformat.NotebookNode:
    notebook = nbformat.from_dict(notebook)  # a deep copy: the input is left as it was
    for preprocessor in preprocessors:
        notebook, _ = preprocessor.preprocess(notebook, {})
    return notebook


def student_edition(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without solutions: answers stubbed, checks kept, no outputs."""
    remove = TagRemovePreprocessor(remove_cell_tags={SOLUTION}, enabled=True)
    return _apply(notebook, ClearOutputPreprocessor(), remove, StubAnswers())


def instructor_edition(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook with its solutions and checks, no outputs."""
    return _apply(notebook, ClearOutputPreprocessor())


def write_editions(notebooks, out: Path) -> list[Path]:
    """Write ``out/student/<name>.ipynb`` and ``out/instructor/<name>.ipynb`` for every
    notebook with graded exercises; returns the student editions written."""
    written = []
    for path in map(Path, notebooks):
        notebook = nbformat.read(path, as_version=4)
        if not exercise_points(notebook):
            continue
        for edition, make in (("student", student_edition), ("instructor", instructor_edition)):
            target = out / edition / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(make(notebook), target)
        written.append(out / "student" / path.name)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", help="chapters (.ipynb) with graded exercises")
    parser.add_argument("--out", type=Path, default=Path("_build/assignments"))
    args = parser.parse_args(argv)
    for path in write_editions(args.notebooks, args.out):
        print(f"wrote {path} and its instructor edition")


if __name__ == "__main__":
    main()
