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
import yaml
from browser import CHROMIUM_ARGS, chromium
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
PAGES_TO_RENDER = 4
MARGINS = {"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"}


def toc_pages() -> list[str]:
    """The book's pages in reading order, as paths relative to the HTML folder."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [chapter["file"] for part in toc["parts"]
                             for chapter in part["chapters"]]
    return [f"{name}.html" for name in files]


def print_book(html: Path, pdf: Path) -> int:
    """Print every page of the book in ``html`` (offline) into one A4 PDF; its page count."""
    book = pypdfium2.PdfDocument.new()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith("file://") else route.abort())
        page.emulate_media(media="print")
        for name in toc_pages():
            page.goto((html / name).resolve().as_uri(), wait_until="load")
            untypeset = page.evaluate("""async () => {
                if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
                return [...document.querySelectorAll('span.math, div.math')]
                    .filter(el => !el.querySelector('mjx-container')).length; }""")
            if untypeset:
                raise RuntimeError(f"{name}: {untypeset} math spans were not typeset")
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
