"""Open every page of a built HTML book in headless Chromium, as a reader would, and report
what a reader would meet: console errors, untypeset math, broken images and links, blocks
wider than the text column, error output, accessibility violations (axe-core).

Used by the slow checks of `tests/test_book.py`; run by hand with
`python tools/browser.py _build/html [SCREENS_DIR]` to print the report of a build."""

import functools
import http.server
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urlparse

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import sync_playwright

# Flags that keep Chromium from reaching for the network on its own (updates, sync, QUIC).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
# A reader's window: the theme's text column is at its widest from about 1200 px.
VIEWPORT = {"width": 1280, "height": 900}

# Everything measured on one page, in the browser, after MathJax has finished.
PAGE_SCRIPT = """async () => {
  if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
  const wide = el => el.scrollWidth > el.clientWidth + 1;
  const name = el => (el.id ? '#' + el.id : '') + ' ' +
      (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
  const longestLine = el => {
    const line = el.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '');
    return `${el.tagName.toLowerCase()} ${el.scrollWidth}px > ${el.clientWidth}px: `
      + `${line.length} characters: ${line.trim().slice(0, 70)}`;
  };
  const mathSpans = [...document.querySelectorAll('article span.math, article div.math')];
  return {
    math: mathSpans.length,
    untypeset: mathSpans.filter(el => !el.querySelector('mjx-container')).map(name),
    mathErrors: [...document.querySelectorAll('mjx-merror')].map(name),
    images: [...document.querySelectorAll('article img')].map(img => ({
      src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0
           && img.getBoundingClientRect().width > 0})),
    wide: [...document.querySelectorAll('article pre, article .cell_output, article table')]
      .filter(wide).map(longestLine),
    errorOutput: [...document.querySelectorAll(
      '.output.traceback, .output.stderr, .output.error')].map(name),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(el => el.id),
  };
}"""


@dataclass
class PageReport:
    """What one page showed in the browser."""

    path: str
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    math: int = 0
    untypeset: list[str] = field(default_factory=list)
    math_errors: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    images: int = 0
    wide: list[str] = field(default_factory=list)
    error_output: list[str] = field(default_factory=list)
    broken_links: list[str] = field(default_factory=list)
    accessibility: list[str] = field(default_factory=list)

    def problems(self) -> dict[str, list[str]]:
        """Every kind of problem found on the page, by name (empty when the page is clean)."""
        kinds = ["console_errors", "failed_requests", "untypeset", "math_errors",
                 "broken_images", "wide", "error_output", "broken_links", "accessibility"]
        return {kind: getattr(self, kind) for kind in kinds if getattr(self, kind)}


def pages(html: Path) -> list[str]:
    """The book's pages (relative paths), without Sphinx's search page and redirects."""
    found = [p for p in html.rglob("*.html") if not p.relative_to(html).parts[0].startswith("_")
             and p.name != "search.html" and 'http-equiv="Refresh"' not in p.read_text()]
    return sorted(p.relative_to(html).as_posix() for p in found)


@functools.cache
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError("the browser check needs Debian's chromium (apt-get install chromium)")
    return path


def check_book(html: Path, screens: Path | None = None) -> list[PageReport]:
    """Serve `html` on 127.0.0.1, open every page, and report what each one showed.

    Requests that leave 127.0.0.1 are refused, so math must typeset from the built site.
    With `screens`, the first screen of each page is saved there as a PNG."""
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    reports, links = [], {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
            context = browser.new_context(viewport=VIEWPORT)
            context.route("**/*", lambda route: route.continue_()
                          if route.request.url.startswith(base) else route.abort())
            axe = Axe()
            for path in pages(html):
                report = PageReport(path)
                page = context.new_page()
                page.on("console", lambda m, r=report: m.type == "error"
                        and r.console_errors.append(m.text))
                page.on("pageerror", lambda e, r=report: r.console_errors.append(str(e)))
                page.on("requestfailed", lambda q, r=report: r.failed_requests.append(q.url))
                page.on("response", lambda q, r=report: q.status >= 400
                        and r.failed_requests.append(f"{q.status} {q.url}"))
                page.goto(base + path, wait_until="load")
                seen = page.evaluate(PAGE_SCRIPT)
                report.math = seen["math"]
                report.untypeset = seen["untypeset"]
                report.math_errors = seen["mathErrors"]
                report.images = len(seen["images"])
                report.broken_images = [i["src"] for i in seen["images"] if not i["ok"]]
                report.wide = seen["wide"]
                report.error_output = seen["errorOutput"]
                # axe reads the style sheets itself, and resolves the theme's @import
                # against the page: what it requests is not what a reader's browser does.
                reader_saw = list(report.console_errors), list(report.failed_requests)
                report.accessibility = [
                    f"{v['id']} ({v['impact']}): {len(v['nodes'])} x "
                    f"{v['nodes'][0]['target']}"
                    for v in axe.run(page).response["violations"]]
                report.console_errors, report.failed_requests = reader_saw
                links[base + path] = (set(seen["ids"]), seen["links"], report)
                if screens is not None:
                    screens.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=screens / (path.replace("/", "_") + ".png"))
                page.close()
                reports.append(report)
            browser.close()
    finally:
        server.shutdown()
    for _, targets, report in links.values():
        report.broken_links = sorted({link for link in targets
                                      if _broken(link, base, html, links)})
    return reports


def _broken(link: str, base: str, html: Path, pages_seen: dict) -> bool:
    """Whether an internal link misses its page or its anchor (external links are not ours)."""
    if not link.startswith(base):
        return False
    target, anchor = urldefrag(link)
    if target in pages_seen:
        return bool(anchor) and anchor not in pages_seen[target][0]
    local = html / urlparse(target).path.lstrip("/")
    if local.is_dir():
        local = local / "index.html"
    return not local.exists()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


if __name__ == "__main__":
    html = Path(sys.argv[1])
    screens = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    for report in check_book(html, screens):
        print(f"{report.path}: {report.math} math, {report.images} images")
        for kind, found in report.problems().items():
            for item in found[:8]:
                print(f"  {kind}: {item}")
            if len(found) > 8:
                print(f"  {kind}: ... {len(found) - 8} more")
