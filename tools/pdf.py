"""Look at the book's PDF as a reader would: its outline (the bookmarks a PDF viewer shows),
the pages whose text or images run past the right margin, and a few pages rendered to PNG.

The PDF itself is made by Jupyter Book's LaTeX route (``jupyter-book build --builder
pdflatex``, with ``tools/latexbook.py``); ``make book`` builds it and ``make pdf`` prints this
report:

    python tools/pdf.py _build/html/book.pdf _build/pdf-pages
"""

import statistics
import sys
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
    for problem in past_the_margin(pdf):
        print(problem)
    print("rendered:", *render_pages(pdf, pngs))
