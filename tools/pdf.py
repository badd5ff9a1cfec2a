"""Print the book, built as one HTML page (`jupyter-book build --builder singlehtml`), to a
PDF with headless Chromium once MathJax has typeset the math, and render its first pages to
PNG so that they can be looked at.

    python tools/pdf.py _build/singlehtml/index.html _build/book.pdf _build/pdf-pages
"""

import sys
from pathlib import Path

import pypdfium2
from browser import CHROMIUM_ARGS, chromium
from playwright.sync_api import sync_playwright

PAGES_TO_RENDER = 4


def print_book(html: Path, pdf: Path) -> None:
    """Open the single-page book in Chromium (offline), wait for MathJax, print it to A4."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith("file://") else route.abort())
        page.goto(html.resolve().as_uri(), wait_until="load")
        page.evaluate("async () => { if (window.MathJax && MathJax.startup) "
                      "{ await MathJax.startup.promise; } }")
        untypeset = page.evaluate("() => [...document.querySelectorAll('span.math, div.math')]"
                                  ".filter(el => !el.querySelector('mjx-container')).length")
        if untypeset:
            raise RuntimeError(f"{untypeset} math spans were not typeset")
        page.emulate_media(media="print")
        page.pdf(path=str(pdf), format="A4", print_background=True,
                 margin={"top": "18mm", "bottom": "18mm", "left": "15mm", "right": "15mm"})
        browser.close()


def render_pages(pdf: Path, out: Path, count: int = PAGES_TO_RENDER) -> list[Path]:
    """The first ``count`` pages of ``pdf`` as PNG files in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    document = pypdfium2.PdfDocument(str(pdf))
    written = []
    for index in range(min(count, len(document))):
        image = document[index].render(scale=1.5).to_pil()
        path = out / f"page-{index + 1}.png"
        image.save(path)
        written.append(path)
    print(f"{pdf}: {len(document)} pages; first pages in {out}")
    return written


if __name__ == "__main__":
    html, pdf, pages = map(Path, sys.argv[1:4])
    print_book(html, pdf)
    render_pages(pdf, pages)
