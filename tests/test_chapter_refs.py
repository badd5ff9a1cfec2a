"""References by number: a page names another chapter as "Chapter 5" next to its link
("Chapter 5, {doc}`Hahn's lemma and exact solutions <exact_solutions>`"), a section of the
book as "§5.5" ({ref}`§5.5 <label>`), and each number is the one the HTML and the PDF print
(``course.numbers.chapter_numbers``, from ``_toc.yml``). A bare "§5.2" is a section of a
source (the lecture notes' §5.2), so the book's own sections are written with {ref}."""

import json
import re
from pathlib import Path

import pytest

from course.numbers import chapter_numbers

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NUMBERS = {name: number for name, number in chapter_numbers().items() if number}
PAGES = sorted(BOOK.glob("*.ipynb")) + sorted(BOOK.glob("*.md"))

DOC = re.compile(r"\{doc\}`(?:[^`<]*<)?(?P<name>[\w/.-]+?)>?`")
# "Chapter 5, {doc}`…`", "Chapter 5 ({doc}`…`)", "Chapter 5: {doc}`…`", and in a table's
# chapter column "5. {doc}`…`".
NUMBERED_DOC = re.compile(r"(?:Chapter (?P<n>\d+)[,:]?\s+\(?|(?<![\w.])(?P<row>\d+)\. )"
                          + DOC.pattern)
CHAPTER_REF = re.compile(r"\{(?:ref|prf:ref|numref)\}`(?P<text>[^`<]*?)\s*<(?P<label>[\w-]+)>`")


def _cells(path: Path) -> list[str]:
    """The Markdown of a page, one string per cell (the whole file for a .md page), without the
    cells the book leaves out (a notebook's JupyterLab front matter), with a figure cell's name
    as a ``(name)=`` target."""
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    found = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        name = cell["metadata"].get("mystnb", {}).get("figure", {}).get("name")
        if name:
            found.append(f"({name})=")
        if (cell["cell_type"] == "markdown"
                and "remove-cell" not in cell["metadata"].get("tags", [])):
            found.append("".join(cell["source"]))
    return found


def _text(path: Path) -> str:
    return "\n\n".join(_cells(path))


def labels(path: Path) -> set[str]:
    """The labels a page defines: ``(label)=`` targets, ``:label:`` and ``:name:`` options."""
    return {target or option for target, option in re.findall(
        r"^\(([\w-]+)\)=|^:(?:label|name): *([\w-]+)", _text(path), re.M)}


def sections(path: Path) -> dict[str, int]:
    """``{label: M}`` for each ``(label)=`` target that stands right before the page's M-th
    ``## `` heading (the HTML's section N.M)."""
    found, count = {}, 0
    for line_before, line in _pairs(_text(path)):
        if line.startswith("## "):
            count += 1
            target = re.fullmatch(r"\(([\w-]+)\)=", line_before)
            if target:
                found[target[1]] = count
    return found


def _pairs(text: str):
    lines = text.split("\n")
    return zip(["", *lines], lines, strict=False)


def problems(path: Path) -> list[str]:
    """What a page gets wrong about chapter numbers."""
    text, wrong = _text(path), []
    numbered = {match.start("name"): match for match in NUMBERED_DOC.finditer(text)}
    for match in DOC.finditer(text):
        name = match["name"].removeprefix("book/")
        if name not in NUMBERS:
            continue  # an appendix: named by its title
        where = f"{path.name}: {text[max(0, match.start() - 40):match.end()].strip()!r}"
        numbered_match = numbered.get(match.start("name"))
        if numbered_match is None:
            wrong.append(f"{where}: write 'Chapter {NUMBERS[name]}' beside the link")
            continue
        said = int(numbered_match["n"] or numbered_match["row"])
        if said != NUMBERS[name]:
            wrong.append(f"{where}: {name} is Chapter {NUMBERS[name]}, not {said}")
    for match in CHAPTER_REF.finditer(text):
        words, label = match["text"], match["label"]
        for said in map(int, re.findall(r"\bChapter (\d+)\b", words)):
            chapter = [name for name, number in NUMBERS.items() if number == said]
            if not chapter or label not in labels(BOOK / f"{chapter[0]}.ipynb"):
                wrong.append(f"{path.name}: '{words}' -> {label} is not in Chapter {said}")
        for chapter_said, section_said in re.findall(r"§(\d+)\.(\d+)", words):
            chapter = [name for name, number in NUMBERS.items() if number == int(chapter_said)]
            found = sections(BOOK / f"{chapter[0]}.ipynb").get(label) if chapter else None
            if found != int(section_said):
                wrong.append(f"{path.name}: '{words}' -> {label} is section "
                             f"{chapter_said}.{found} ({label} must stand before a ## heading)")
    for match in re.finditer(r"\b(?:next|previous|preceding|following) chapters?\b", text):
        wrong.append(f"{path.name}: '{match[0]}': name the chapter by its number")
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_references_to_chapters_give_their_numbers(page):
    wrong = problems(page)
    assert not wrong, "\n".join(wrong)


def test_the_rules_catch_a_wrong_reference(tmp_path, monkeypatch):
    """The check finds a link without its number, a wrong number, a section number that is
    not the label's, and "the next chapter"; it accepts the forms the book writes."""
    page = tmp_path / "page.md"
    good = ("Chapter 6, {doc}`Hahn's lemma and exact solutions <exact_solutions>`, builds;\n"
            "(Chapter 7, {doc}`layernorm_hahn`); Chapter 10 ({doc}`learnability`);\n"
            "| 1. {doc}`self_attention` |; {doc}`Errata <errata>`; §9.3 of the textbook;\n"
            "{ref}`§6.5 <sec-hahn-visible>`; {ref}`The check in Chapter 1 <check-sa-rounding>`.")
    page.write_text(good)
    assert problems(page) == []
    for bad, complaint in [
            ("as {doc}`Hahn's lemma and exact solutions <exact_solutions>` does", "beside"),
            ("Chapter 4, {doc}`exact_solutions`", "is Chapter 6, not 4"),
            ("{ref}`§6.4 <sec-hahn-visible>`", "is section 6.5"),
            ("{ref}`The check in Chapter 2 <check-sa-rounding>`", "not in Chapter 2"),
            ("the next chapter", "by its number")]:
        page.write_text(bad)
        [found] = problems(page)
        assert complaint in found, (bad, found)
