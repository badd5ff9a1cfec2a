"""Print the built HTML book to one PDF with headless Chromium, each page once MathJax has
typeset its math, in the order of the table of contents; then render the first pages of the
PDF to PNG so that they can be looked at.

    python tools/pdf.py _build/html _build/book.pdf _build/pdf-pages

(Sphinx's single-page builder would make this one print, but it drops sphinx-proof's
theorems and propositions, so each page is printed and the PDFs are joined.)
"""

import sys
from pathlib import Path

import pypdfium2
from browser import CHROMIUM_ARGS, PAGE_SCRIPT, chromium
from playwright.sync_api import sync_playwright
from toc import toc_files

PAGES_TO_RENDER = 4
MARGINS = {"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"}


def print_book(html: Path, pdf: Path) -> int:
    """Print every page of the book in ``html`` (offline) into one A4 PDF; its page count."""
    book = pypdfium2.PdfDocument.new()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith("file://") else route.abort())
        page.emulate_media(media="print")
        for name in toc_files():
            page.goto((html / f"{name}.html").resolve().as_uri(), wait_until="load")
            untypeset = page.evaluate(PAGE_SCRIPT)["untypeset"]
            if untypeset:
                raise RuntimeError(f"{name}: math not typeset: {untypeset[:3]}")
            printed = pypdfium2.PdfDocument(page.pdf(format="A4", margin=MARGINS,
                                                     print_background=True))
            book.import_pages(printed)
        browser.close()
    book.save(str(pdf))
    return len(book)


def render_pages(pdf: Path, out: Path, count: int = PAGES_TO_RENDER) -> list[Path]:
    """The first ``count`` pages of ``pdf`` as PNG files in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    document = pypdfium2.PdfDocument(str(pdf))
    written = []
    for index in range(min(count, len(document))):
        path = out / f"page-{index + 1}.png"
        document[index].render(scale=1.5).to_pil().save(path)
        written.append(path)
    return written


if __name__ == "__main__":
    html, pdf, pages = map(Path, sys.argv[1:4])
    count = print_book(html, pdf)
    render_pages(pdf, pages)
    print(f"{pdf}: {count} pages; the first {PAGES_TO_RENDER} as PNG in {pages}")
