"""Open every page of a built HTML book in headless Chromium, as a reader would, at a desktop
and at a phone width, and report what a reader would meet: console errors, untypeset math,
TeX or MyST left as visible text, broken images and links, equations or figures wider than the
text column, tables and printed outputs wider than their column (code alone may scroll
sideways on a phone), figures whose labels are too small to read, navigation that does not
open, error output, accessibility violations (axe-core, in the light and the dark theme).

Used by the slow checks of `tests/test_book.py`; run by hand with
`python tools/browser.py _build/html [SCREENS_DIR]` to print the report of a build."""

import functools
import http.server
import re
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urlparse

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

# Flags that keep Chromium from reaching for the network on its own (updates, sync, QUIC).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
# A reader's window: the theme's text column is at its widest from about 1200 px.
VIEWPORT = {"width": 1280, "height": 900}
# The widths a page is read at: a desktop window and a phone (an iPhone 12 to 15 is 390 CSS px
# wide); at 800 px the theme hides its sidebars behind the same buttons as on a phone.
WIDTHS = {"desktop": VIEWPORT, "phone": {"width": 390, "height": 844}}
TABLET = {"width": 800, "height": 1000}
# Every request that leaves this machine is refused: the book must work offline.
OFFLINE = re.compile(r"^(?!https?://127\.0\.0\.1[:/]|file://).*")
# The smallest text a figure may show a reader, in CSS pixels, at any width.
SMALLEST_FIGURE_TEXT_PX = 10

# MyST or TeX that a reader should never see as text (outside code and typeset math): a
# directive fence, a role or directive name in braces, a directive option line (":label:"),
# dollar math, a TeX command. Shared with tools/lab.py's check of JupyterLab.
RAW_MARKUP = r"""[/```|:::/, /\{[a-z-]+(:[a-z-]+)?\}`?/, /^\s*:[a-z-]+:/m, /\$[^$\s][^$]*\$/,
   /\\[a-zA-Z]{2,}/]"""

# Everything measured on one page, in the browser, after MathJax has finished.
PAGE_SCRIPT = """async () => {
  if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
  const article = document.querySelector('article') || document.body;
  const column = article.getBoundingClientRect();
  const wide = el => el.scrollWidth > el.clientWidth + 1;
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  // What a reader sees of an element: the box of the nearest ancestor that scrolls or clips.
  const shown = el => {
    for (let box = el.parentElement; box && box !== article; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible') { return box; }
    }
    return el;
  };
  const outside = el => {
    const box = shown(el).getBoundingClientRect();
    return box.width > 0 && (box.right > column.right + 1 || box.left < column.left - 1);
  };
  const name = el => (el.id ? '#' + el.id : '') + ' ' +
      (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
  const longestLine = el => {
    const line = el.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '');
    return `${el.tagName.toLowerCase()} ${el.scrollWidth}px > ${el.clientWidth}px: `
      + `${line.length} characters: ${line.trim().slice(0, 70)}`;
  };
  const tex = el => {
    const items = window.MathJax?.startup?.document?.getMathItemsWithin?.(el) ?? [];
    return (items[0]?.math ?? name(el)).trim().replace(/\\s+/g, ' ').slice(0, 90);
  };
  // The text a reader sees, block by block, outside code and math.
  const text = article.cloneNode(true);
  text.querySelectorAll('pre, code, kbd, samp, script, style, textarea, mjx-container, '
                        + '.math, .highlight').forEach(el => el.remove());
  const raw = new Set();
  for (const block of text.querySelectorAll(
      'p, li, dt, dd, td, th, h1, h2, h3, h4, h5, h6, figcaption, caption, summary')) {
    const words = block.textContent;
    for (const pattern of RAW_MARKUP) {
      const found = words.match(pattern);
      if (found) {
        const at = Math.max(0, found.index - 30);
        raw.add(words.slice(at, found.index + found[0].length + 30).replace(/\\s+/g, ' '));
      }
    }
  }
  const mathSpans = [...article.querySelectorAll('span.math, div.math')];
  const equations = [...article.querySelectorAll('mjx-container[display="true"]')];
  const images = [...article.querySelectorAll('img')];
  const figures = [...article.querySelectorAll('figure img, .cell_output img')];
  // The smallest text of a figure as shown: companion.plotting.show writes its size in points
  // (data-font-pt); a raster figure names the height of its smallest text in its own pixels
  // (class figure-text-<N>px).
  const textPx = img => {
    const shown = img.getBoundingClientRect().width / img.naturalWidth;
    const points = parseFloat(img.dataset.fontPt);
    const pixels = [...img.classList].map(c => c.match(/^figure-text-(\\d+)px$/))
      .find(Boolean);
    return points ? points * 96 / 72 * shown : pixels ? parseFloat(pixels[1]) * shown : null;
  };
  // A box floated inside the text column (a margin note where the page has no margin) may
  // sit beside a paragraph, which wraps around it, but not beside or over a code cell, an
  // output, a figure, a table, a display equation or another box: these are squeezed or
  // covered.
  const textRight = column.right - parseFloat(getComputedStyle(article).paddingRight);
  const floats = [...article.querySelectorAll('.margin, aside.sidebar')]
    .filter(el => getComputedStyle(el).float !== 'none'
                  && el.getBoundingClientRect().left < textRight - 1);
  const blocks = [...article.querySelectorAll('div.cell, div.highlight, .cell_output, figure, '
                                              + 'table, mjx-container[display="true"], '
                                              + 'div.admonition')];
  const level = (a, b) => a.height > 0 && b.height > 0
      && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  // A table or a printed output is cut when it is wider than the block that holds it (its
  // parent's content box): the rest is off the column's edge, or scrolls in a box that gives
  // no sign of it. Code cells may scroll sideways; tables and printed outputs may not.
  const holder = el => {
    let box = el.parentElement;
    while (box && ['inline', 'contents'].includes(getComputedStyle(box).display)) {
      box = box.parentElement;
    }
    return box;
  };
  const contentWidth = box => {
    const style = getComputedStyle(box);
    return box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  };
  const cut = el => {
    const full = Math.ceil(Math.max(el.scrollWidth, el.getBoundingClientRect().width));
    const room = Math.floor(contentWidth(holder(el)));
    return full > room + 1 || wide(el) ? `${full} px in a ${room} px column` : null;
  };
  const section = el => {
    const title = el.closest('section')?.querySelector('h1, h2, h3, h4, h5, h6');
    return title ? '§ ' + title.textContent.replace(/#$/, '').trim().slice(0, 50) : '';
  };
  const cutTables = [...article.querySelectorAll('table')].filter(cut).map(el => {
    const caption = el.querySelector('caption') || el.closest('figure')?.querySelector(
      'figcaption');
    const head = caption || el.querySelector('tr');
    return `table ${cut(el)}: ${section(el)}: `
      + (head?.textContent ?? '').trim().replace(/\\s+/g, ' ').slice(0, 60);
  });
  const cutOutputs = [...article.querySelectorAll('.cell_output pre, div.output pre')]
    .filter(cut).map(el => {
      const line = el.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a);
      return `output ${cut(el)}: ${section(el)}: ${line.length} characters: `
        + line.trim().slice(0, 60);
    });
  const overlaps = floats.flatMap(f => blocks
    .filter(b => !f.contains(b) && !b.contains(f)
                 && level(f.getBoundingClientRect(), b.getBoundingClientRect()))
    .map(b => `${name(f)} sits beside ${name(b)}`));
  return {
    math: mathSpans.length,
    untypeset: mathSpans.filter(el => !el.querySelector('mjx-container')).map(name),
    mathErrors: [...document.querySelectorAll('mjx-merror')].map(name),
    raw: [...raw],
    images: images.map(img => ({
      src: (img.getAttribute('src') || '').slice(0, 80),
      ok: img.complete && img.naturalWidth > 0 && img.getBoundingClientRect().width > 0})),
    figureText: figures.map(img => ({
      src: (img.getAttribute('src') || '').slice(0, 80), textPx: textPx(img)})),
    wide: [...article.querySelectorAll('pre, .cell_output, table')]
      .filter(el => wide(el) && !outside(el)).map(longestLine),
    overflow: [
      ...equations.filter(el => outside(el) || (wide(el) && !scrolls(el))).map(tex),
      ...[...article.querySelectorAll('img, figure, pre, table, .cell_output')]
        .filter(outside).map(name),
      // a figure's panels fit the column: they never scroll sideways
      ...[...article.querySelectorAll('.figure-panels')].filter(wide)
        .map(el => 'figure panels scroll: ' + name(el.closest('figure') || el))],
    overlaps,
    cutTables,
    cutOutputs,
    scrollingEquations: equations.filter(el => wide(el) && scrolls(el)).map(tex),
    errorOutput: [...document.querySelectorAll(
      '.output.traceback, .output.stderr, .output.error')].map(name),
    // the page itself, wider than the window: the whole page pans sideways
    pageWidth: document.documentElement.scrollWidth,
    windowWidth: document.documentElement.clientWidth,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(el => el.id),
  };
}""".replace("RAW_MARKUP", RAW_MARKUP)

# axe-core's colour-contrast rule takes three quarters of its time on a long page (40 s of the
# API page's 54), working out the same contrast again for every element styled alike. The
# contrast of an element's text is set by its own colour, font size and weight, text shadow and
# stroke, and by the backgrounds, opacities and blend modes of it and its ancestors; the sampling
# assumes away what else axe weighs (a pseudo-element's background, a box positioned over the
# text: the book's pages put none over text). The rule runs on one visible element with text (or
# a form control) of each such style, the one with the most letters and digits (axe passes over
# text of one character or of punctuation alone), marked data-contrast-sample, and axe is
# configured to check those alone. MathJax's copy of each formula for screen readers, clipped
# out of sight, is left out (axe counts it hidden).
CONTRAST_SAMPLES = """() => {
  document.querySelectorAll('[data-contrast-sample]')
    .forEach(el => el.removeAttribute('data-contrast-sample'));
  const backdrops = new Map();
  const backdrop = el => {
    if (!el) { return ''; }
    if (!backdrops.has(el)) {
      const s = getComputedStyle(el);
      backdrops.set(el, `${s.backgroundColor} ${s.backgroundImage} ${s.opacity} `
                        + `${s.mixBlendMode}/${backdrop(el.parentElement)}`);
    }
    return backdrops.get(el);
  };
  const letters = el => [...el.childNodes].filter(c => c.nodeType === 3)
    .map(c => (c.textContent.match(/[\\p{L}\\p{N}]/gu) || []).length)
    .reduce((a, b) => a + b, 0);
  const best = new Map();  // style -> [element, letters]
  for (const el of document.body.querySelectorAll('*')) {
    const control = el.matches('input:not([type=hidden]), select, textarea');
    const text = [...el.childNodes].some(c => c.nodeType === 3 && c.textContent.trim());
    if (!(text || control) || el.closest('mjx-assistive-mml')
        || !el.checkVisibility({visibilityProperty: true, opacityProperty: true})) {
      continue;
    }
    const s = getComputedStyle(el);
    const style = [s.color, s.fontSize, s.fontWeight, s.textShadow, s.webkitTextStroke,
                   s.position, backdrop(el)].join('|');
    const count = control ? Infinity : letters(el);
    if (!best.has(style) || best.get(style)[1] < count) { best.set(style, [el, count]); }
  }
  best.forEach(([el]) => el.setAttribute('data-contrast-sample', ''));
}"""

# At a phone's width the theme hides the table of contents and the page's sections behind two
# buttons (☰ and "on this page") that open them as dialogs: whether one is open, with links.
DIALOG_SCRIPT = """(which) => {
  const dialog = document.getElementById('pst-' + which + '-sidebar-modal');
  return dialog !== null && dialog.open && dialog.getBoundingClientRect().width > 0
    && dialog.querySelectorAll('a[href]').length > 0;
}"""


@dataclass
class PageReport:
    """What one page showed in the browser at one width ("desktop" or "phone")."""

    path: str
    width: str = "desktop"
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    math: int = 0
    untypeset: list[str] = field(default_factory=list)
    math_errors: list[str] = field(default_factory=list)
    raw_markup: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    images: int = 0
    small_figure_text: list[str] = field(default_factory=list)
    wide: list[str] = field(default_factory=list)
    overflow: list[str] = field(default_factory=list)
    overlaps: list[str] = field(default_factory=list)
    cut_tables: list[str] = field(default_factory=list)
    cut_outputs: list[str] = field(default_factory=list)
    scrolling_equations: list[str] = field(default_factory=list)
    navigation: list[str] = field(default_factory=list)
    error_output: list[str] = field(default_factory=list)
    broken_links: list[str] = field(default_factory=list)
    accessibility: list[str] = field(default_factory=list)

    def problems(self) -> dict[str, list[str]]:
        """Every kind of problem found on the page, by name (empty when the page is clean).
        An equation too long for a phone's column that scrolls in its own box is not one."""
        kinds = ["console_errors", "failed_requests", "untypeset", "math_errors", "raw_markup",
                 "broken_images", "small_figure_text", "wide", "overflow", "overlaps",
                 "cut_tables", "cut_outputs", "navigation", "error_output", "broken_links",
                 "accessibility"]
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


def launch(playwright):
    """Debian's Chromium, headless, kept from reaching for the network on its own."""
    return playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)


def offline(target) -> None:
    """Refuse every request of a Playwright page or context that leaves this machine."""
    target.route(OFFLINE, lambda route: route.abort())


def navigation_problems(page: Page, tap: bool) -> list[str]:
    """Tap (or click) the visible ☰ and "on this page" buttons; what did not open its dialog.
    A page without sections has no "on this page" button; every page has ☰."""
    problems = []
    for which, label in (("primary", "the table of contents (☰)"),
                         ("secondary", "on this page")):
        button = page.locator(f".{which}-toggle:visible").first
        if button.count() == 0:
            if which == "primary":
                problems.append(f"no visible button opens {label}")
            continue
        button.tap() if tap else button.click()
        if not _becomes(page, f"({DIALOG_SCRIPT})({which!r})"):
            problems.append(f"{label} does not open")
        elif which == "secondary":  # a jump to a section closes the dialog over the text
            link = page.locator("#pst-secondary-sidebar-modal a[href^='#']").first
            if link.count():
                link.tap() if tap else link.click()
                if not _becomes(page, f"!({DIALOG_SCRIPT})({which!r})"):
                    problems.append(f"{label} stays open over the text after a jump")
        page.keyboard.press("Escape")
    return problems


def _becomes(page: Page, condition: str, seconds: float = 15) -> bool:
    """Whether the JavaScript ``condition`` holds within ``seconds`` (polled at each frame):
    what a click sets off takes its time on a busy machine, and a fixed wait would race it."""
    try:
        page.wait_for_function(condition, timeout=seconds * 1000)
        return True
    except PlaywrightTimeout:
        return False


def check_book(html: Path, screens: Path | None = None) -> list[PageReport]:
    """Serve `html` on 127.0.0.1, open every page at each of WIDTHS, and report what each one
    showed.

    Requests that leave 127.0.0.1 are refused, so math must typeset from the built site. At
    the phone's width the navigation buttons are tapped on every page, and clicked at 800 px
    on the first; axe-core runs at the desktop width, in the light theme, and for colour
    contrast in the dark one too. With `screens`, the first screen of each page at each width is
    saved there as a PNG."""
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    reports, links = [], {}
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            for width, viewport in WIDTHS.items():
                phone = width == "phone"
                context = browser.new_context(viewport=viewport, is_mobile=phone,
                                              has_touch=phone)
                offline(context)
                for path in pages(html):
                    shot = None if screens is None else (
                        screens / f"{width}-{path.replace('/', '_')}.png")
                    report = PageReport(path, width)
                    links[(base + path, width)] = _check_page(context, base + path, report,
                                                              shot)
                    reports.append(report)
                context.close()
            context = browser.new_context(viewport=TABLET)
            offline(context)
            page = context.new_page()
            page.goto(base + pages(html)[0], wait_until="load")
            reports[0].navigation += [f"at {TABLET['width']} px: {problem}"
                                      for problem in navigation_problems(page, tap=False)]
            browser.close()
    finally:
        server.shutdown()
    anchors = {url: ids for (url, width), (ids, _) in links.items() if width == "desktop"}
    for report in reports:
        targets = links[(base + report.path, report.width)][1]
        report.broken_links = sorted({link for link in targets
                                      if _broken(link, base, html, anchors)})
    return reports


def _check_page(context, url: str, report: PageReport, screenshot: Path | None):
    """Open `url`, fill `report` with what it shows; the page's ids and links."""
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and report.console_errors.append(m.text))
    page.on("pageerror", lambda e: report.console_errors.append(str(e)))
    page.on("requestfailed", lambda q: report.failed_requests.append(q.url))
    page.on("response", lambda q: q.status >= 400
            and report.failed_requests.append(f"{q.status} {q.url}"))
    page.goto(url, wait_until="load")
    seen = page.evaluate(PAGE_SCRIPT)
    report.math = seen["math"]
    report.untypeset = seen["untypeset"]
    report.math_errors = seen["mathErrors"]
    report.raw_markup = seen["raw"]
    report.images = len(seen["images"])
    report.broken_images = [i["src"] for i in seen["images"] if not i["ok"]]
    report.small_figure_text = [
        f"{i['src']}: " + ("text size unknown" if i["textPx"] is None
                           else f"smallest text {i['textPx']:.1f} px")
        for i in seen["figureText"]
        if i["textPx"] is None or i["textPx"] < SMALLEST_FIGURE_TEXT_PX - 0.05]
    report.overflow = seen["overflow"]
    if seen["pageWidth"] > seen["windowWidth"] + 1:
        report.overflow.append(f"the page is {seen['pageWidth']} px wide in a "
                               f"{seen['windowWidth']} px window")
    report.overlaps = seen["overlaps"]
    report.cut_tables = seen["cutTables"]
    report.cut_outputs = seen["cutOutputs"]
    report.scrolling_equations = seen["scrollingEquations"]
    report.error_output = seen["errorOutput"]
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=screenshot)
    # A display equation fits the text column at every width: one that scrolls in its box
    # hides its right half from a reader who does not know to swipe.
    report.overflow += [f"scrolls at a {report.width}'s width: {tex}"
                        for tex in report.scrolling_equations]
    if report.width == "desktop":
        # Code scrolls sideways on a phone; on a desktop it fits. (Tables and printed outputs
        # fit at both widths: cut_tables, cut_outputs.)
        report.wide = seen["wide"]
        report.accessibility = _accessibility(page, report)
    else:
        report.navigation = navigation_problems(page, tap=True)
    page.close()
    return set(seen["ids"]), seen["links"]


def _accessibility(page: Page, report: PageReport) -> list[str]:
    """axe-core's violations in the light theme, and its colour-contrast ones in the dark
    theme too, the colour contrast checked on one element of each style (CONTRAST_SAMPLES)."""
    # axe reads the style sheets itself, and resolves the theme's @import against the page:
    # what it requests is not what a reader's browser does.
    reader_saw = list(report.console_errors), list(report.failed_requests)
    page.evaluate(Axe().axe_script)
    page.evaluate("axe.configure({rules: [{id: 'color-contrast', "
                  "selector: '[data-contrast-sample]'}]})")
    # axe lists only the violations (not every rule passed, half its time on a long page)
    violations = {"resultTypes": ["violations"]}
    page.evaluate(CONTRAST_SAMPLES)
    found = [_violation(v) for v in _axe(page, violations)]
    # The theme's colours change with a CSS transition, which axe would catch halfway on a
    # slow machine: without transitions the dark colours are there as soon as styles are read.
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    page.evaluate("document.documentElement.dataset.theme = 'dark'")
    page.evaluate(CONTRAST_SAMPLES)
    found += ["dark theme: " + _violation(v)
              for v in _axe(page, {**violations, "runOnly": ["color-contrast"]})]
    page.evaluate("document.documentElement.dataset.theme = 'light'")
    report.console_errors, report.failed_requests = reader_saw
    return found


def _axe(page: Page, options: dict) -> list[dict]:
    """The violations axe-core (injected and configured by :func:`_accessibility`) finds on
    the page with ``options``."""
    return page.evaluate("options => axe.run(document, options)", options)["violations"]


def _violation(found: dict) -> str:
    """One of axe's violations in a line: rule (impact): how many elements x the first."""
    nodes = found["nodes"]
    return f"{found['id']} ({found['impact']}): {len(nodes)} x {nodes[0]['target']}"


def _broken(link: str, base: str, html: Path, anchors: dict) -> bool:
    """Whether an internal link misses its page or its anchor (external links are not ours)."""
    if not link.startswith(base):
        return False
    target, anchor = urldefrag(link)
    if target in anchors:
        return bool(anchor) and anchor not in anchors[target]
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
        print(f"{report.path} at {report.width}: {report.math} math, {report.images} images")
        for kind, found in report.problems().items():
            for item in found[:8]:
                print(f"  {kind}: {item}")
            if len(found) > 8:
                print(f"  {kind}: ... {len(found) - 8} more")
