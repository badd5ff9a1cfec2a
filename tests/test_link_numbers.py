"""A link whose text gives a number ("{prf:ref}`Proposition 7.2 <prop-sharpen>`",
"{ref}`Fig. 13.2 <fig-recall-losses>`") gives the number the HTML and the PDF print for its
target (``course.numbers``), so that a chapter never calls a box or a figure by a paper's
number or by the number it had before a chapter moved."""

import re

import nbformat
import pytest
from test_chapter_refs import BOOK, CHAPTER_REF, PAGES, _text

from course.numbers import box_numbers, figure_numbers

KINDS = "Proposition|Theorem|Lemma|Definition|Corollary|Exercise|Fig\\.|Figure"
NUMBER = re.compile(rf"\b(?P<kind>{KINDS}) (?P<number>\d+\.\d+)\b")


def book_numbers() -> dict[str, str]:
    """``{label: "Proposition 7.1"}`` and ``{name: "Fig. 8.2"}`` over every chapter."""
    found = {}
    for page in sorted(BOOK.glob("*.ipynb")):
        notebook = nbformat.read(page, as_version=4)
        found.update(box_numbers(notebook, page.stem))
        found.update({name: f"Fig. {number}"
                      for name, number in figure_numbers(notebook, page.stem).items()})
    found.pop("", None)
    return found


NUMBERS = book_numbers()


def problems(text: str, numbers: dict[str, str]) -> list[str]:
    """The links of ``text`` whose words give another number than their target's."""
    wrong = []
    for match in CHAPTER_REF.finditer(text):
        for said in NUMBER.finditer(match["text"]):
            kind = "Fig." if said["kind"] in ("Fig.", "Figure") else said["kind"]
            actual = numbers.get(match["label"])
            if actual != f"{kind} {said['number']}":
                wrong.append(f"{match[0]!r}: {match['label']} is {actual or 'not numbered'}")
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_numbered_link_gives_its_targets_number(page):
    wrong = problems(_text(page), NUMBERS)
    assert not wrong, "\n".join(wrong)


def test_the_rule_catches_a_papers_number():
    """The review's case: "as in the proof of Proposition 2" linked to Proposition 7.2."""
    assert NUMBERS["prop-sharpen"] == "Proposition 7.2"
    assert problems("{prf:ref}`Proposition 7.2 <prop-sharpen>`", NUMBERS) == []
    assert problems("{prf:ref}`Proposition 6.1 <prop-sharpen>`", NUMBERS)
    assert problems("{ref}`Figure 10.9 <fig-figure4>`", NUMBERS)
    assert problems("{ref}`Fig. 10.1 <fig-figure4>`", NUMBERS) == []
