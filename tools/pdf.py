"""Look at the book's PDF as a reader would: its outline (the bookmarks a PDF viewer shows),
the pages whose text or images run past the right margin, the pages with text below their
running foot, the pages left half empty in the middle of a chapter, and a few pages rendered
to PNG.

The PDF itself is made by Jupyter Book's LaTeX route (``jupyter-book build --builder
pdflatex``, with ``tools/latexbook.py``); ``make book`` builds it and ``make pdf`` prints this
report:

    python tools/pdf.py _build/html/book.pdf _build/pdf-pages
"""

import statistics
import sys
from collections import Counter
from pathlib import Path

import pypdfium2
import pypdfium2.raw as pdfium

PAGES_TO_RENDER = (1, 2, 3, 10, 20, 40)
# How far past the text block's right edge (the median over pages of the rightmost character,
# in points) text or an image may reach before it is called clipped: less than a letter.
MARGIN_TOLERANCE = 2.0


def outline(pdf: Path, depth: int = 3) -> list[tuple[int, str, int]]:
    """The PDF's bookmarks to ``depth`` levels (0 is the top): (level, title, page from 1)."""
    document = pypdfium2.PdfDocument(str(pdf))
    marks = []
    for bookmark in document.get_toc(max_depth=16):
        if bookmark.level >= depth:
            continue
        destination = bookmark.get_dest()
        page = destination.get_index() + 1 if destination is not None else 0
        marks.append((bookmark.level, bookmark.get_title().strip(), page))
    return marks


def past_the_margin(pdf: Path) -> list[str]:
    """Every page whose text or an image reaches past the text block's right edge: the page
    number, how far, and the text there."""
    document = pypdfium2.PdfDocument(str(pdf))
    rightmost = []
    for index in range(len(document)):
        page = document[index]
        text = page.get_textpage()
        edge, where = 0.0, ""
        for char in range(text.count_chars()):
            right = text.get_charbox(char)[2]
            if right > edge and text.get_text_range(char, 1).strip():
                edge, where = right, text.get_text_range(max(0, char - 40), 45)
        images = [image.get_bounds()[2]
                  for image in page.get_objects(filter=[pdfium.FPDF_PAGEOBJ_IMAGE])]
        rightmost.append((edge, max(images, default=0.0), where.replace("\n", " ")))
    block = statistics.median(edge for edge, _, _ in rightmost)
    return [f"page {number}: to {max(edge, image) - block:.1f} pt past the margin: ...{where}"
            for number, (edge, image, where) in enumerate(rightmost, start=1)
            if max(edge, image) > block + MARGIN_TOLERANCE]


def below_the_foot(pdf: Path) -> list[str]:
    """Every page with text lower than its running foot (a caption or a listing that ran off
    the page, whose lines lie on or under the page number): the page number, how far, and the
    text there. The foot is the height at which most pages' lowest character sits."""
    document = pypdfium2.PdfDocument(str(pdf))
    lowest = []
    for index in range(len(document)):
        text = document[index].get_textpage()
        chars = [(text.get_charbox(char)[1], char) for char in range(text.count_chars())
                 if text.get_text_range(char, 1).strip()]
        bottom, char = min(chars, default=(float("inf"), 0))
        lowest.append((bottom, text.get_text_range(max(0, char - 40), 45) if chars else ""))
    foot = Counter(round(bottom) for bottom, _ in lowest).most_common(1)[0][0]
    return [f"page {number}: text {foot - bottom:.1f} pt below the foot: ...{where}"
            for number, (bottom, where) in enumerate(lowest, start=1)
            if bottom < foot - MARGIN_TOLERANCE]


def _boxes(page) -> list[tuple[float, float]]:
    """The bottom and top (in points from the page's foot) of every character and every
    drawing or image on ``page``."""
    text = page.get_textpage()
    boxes = [text.get_charbox(char)[1::2] for char in range(text.count_chars())
             if text.get_text_range(char, 1).strip()]
    drawn = page.get_objects(filter=[pdfium.FPDF_PAGEOBJ_IMAGE, pdfium.FPDF_PAGEOBJ_PATH])
    return boxes + [obj.get_bounds()[1::2] for obj in drawn]


def blank_pages(pdf: Path, limit: float = 0.4) -> list[str]:
    """Every page, other than the last of a chapter or part, whose text block is more than
    ``limit`` empty below its last line: the page number and the empty share. The running
    head and foot (what sits at the same height on most pages) are not counted; a full page's
    last line is where nine pages in ten end, or lower."""
    document = pypdfium2.PdfDocument(str(pdf))
    pages = [_boxes(document[index]) for index in range(len(document))]
    height = document[0].get_height()
    heights = Counter(y for boxes in pages for y in {round(bottom) for bottom, _ in boxes})
    furniture = [y for y, count in heights.items() if count > 0.6 * len(pages)]
    foot = max((y for y in furniture if y < height / 4), default=0)
    head = min((y for y in furniture if y > 3 * height / 4), default=height)
    spans = []
    for boxes in pages:
        body = [(bottom, top) for bottom, top in boxes if foot + 2 < bottom and top < head - 2]
        spans.append((min((b for b, _ in body), default=head), max((t for _, t in body),
                                                                     default=foot)))
    full = sorted(bottom for bottom, _ in spans)[len(spans) // 10]
    top = statistics.median(top for _, top in spans)
    ends = {page - 1 for _, _, page in outline(pdf, depth=2)} | {len(document)}
    empty = [(bottom - full) / (top - full) for bottom, _ in spans]
    return [f"page {number}: {share:.0%} empty" for number, share in enumerate(empty, start=1)
            if number not in ends and share > limit]


def render_pages(pdf: Path, out: Path, pages=PAGES_TO_RENDER) -> list[Path]:
    """The given pages (numbered from 1) of ``pdf`` as PNG files in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    document = pypdfium2.PdfDocument(str(pdf))
    written = []
    for number in pages:
        if number <= len(document):
            path = out / f"page-{number}.png"
            document[number - 1].render(scale=1.5).to_pil().save(path)
            written.append(path)
    return written


if __name__ == "__main__":
    pdf, pngs = Path(sys.argv[1]), Path(sys.argv[2])
    print(f"{pdf}: {len(pypdfium2.PdfDocument(str(pdf)))} pages; its outline:")
    for level, title, page in outline(pdf, depth=2):
        print(f"{'  ' * level}{title} (page {page})")
    for problem in past_the_margin(pdf) + below_the_foot(pdf) + blank_pages(pdf):
        print(problem)
    print("rendered:", *render_pages(pdf, pngs))
