"""Open notebooks in JupyterLab, as a learner does, and report what the learner sees.

JupyterLab (with jupyterlab-myst, which renders the book's MyST) is served from the book's
environment on 127.0.0.1 and driven in headless Chromium (Debian's ``chromium``, through
Playwright), with every request off 127.0.0.1 refused. For each notebook the report counts the
rendered Markdown cells, the typeset math, the exercise, solution and statement boxes, the
numbers of the boxes and of the figures' captions, gives the one line that JupyterLab shows of
each folded code cell, and lists what a learner should never see: MyST or TeX left as raw
text, a solution open before it is clicked, a math error.
:func:`run_all` runs every cell from the menu, as a learner would, and returns the errors
shown.

Used by the slow test ``tests/test_lab.py``; by hand,
``python tools/lab.py book/recognizers.ipynb [SCREENS_DIR]`` prints the report of any notebooks
(opened as copies: JupyterLab saves what it opens) and saves screenshots."""

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from browser import RAW_MARKUP, VIEWPORT, launch, offline
from playwright.sync_api import Page, sync_playwright

TOKEN = "book"
# JupyterLab's settings for the check: every cell attached to the page (JupyterLab otherwise
# renders only the cells near the screen), and no news or update checks (no network).
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}

# What one notebook shows, measured in the browser once every Markdown cell is rendered. Raw
# markup is looked for in the rendered text of Markdown cells, outside math and code: a
# directive fence, a role, a ":label:" line, "$...$", a TeX command, or jupyterlab-myst's box
# for a directive it does not know.
NOTEBOOK_SCRIPT = r"""() => {
  const RAW = [...RAW_MARKUP, /Unknown (Directive|Role)/];
  const rendered = [...document.querySelectorAll('.jp-MarkdownCell .jp-InputArea > .myst')];
  const raw = [];
  for (const cell of rendered) {
    const copy = cell.cloneNode(true);
    copy.querySelectorAll('.katex, code, pre').forEach(el => el.remove());
    const text = copy.textContent;
    for (const pattern of RAW) {
      const found = text.match(pattern);
      if (found) {
        const at = Math.max(0, found.index - 30);
        raw.push(text.slice(at, found.index + found[0].length + 30).replace(/\s+/g, ' '));
      }
    }
  }
  const boxes = kind => [...document.querySelectorAll('.myst-' + kind)];
  const title = box => (box.querySelector('.myst-exercise-title, .myst-proof-title')
    ?.textContent ?? '').trim();
  const solutions = boxes('exercise').filter(box => /^Solution/.test(title(box)));
  const captions = [...document.querySelectorAll('.jp-InputArea > .myst figure > figcaption')]
    .map(c => c.textContent);
  // A closed <details> keeps its body laid out, but hidden (content-visibility).
  const visible = el => el !== null && el.checkVisibility({visibilityProperty: true});
  return {
    cells: document.querySelectorAll('.jp-Notebook .jp-Cell').length,
    markdown: document.querySelectorAll('.jp-MarkdownCell').length,
    rendered: rendered.length,
    math: document.querySelectorAll('.jp-InputArea > .myst .katex').length,
    mathErrors: [...document.querySelectorAll('.jp-InputArea > .myst .katex-error')]
      .map(el => el.textContent.slice(0, 80)),
    raw: raw,
    exercises: boxes('exercise').filter(box => /^Exercise/.test(title(box))).length,
    statements: boxes('proof').length,
    numbers: [...document.querySelectorAll('.myst-exercise, .myst-proof')].map(title)
      .map(t => t.match(/^[A-Z][a-z]+ [\d.]+\b/)?.[0]).filter(Boolean),
    figures: captions.filter(c => !/^\s*Table\s/.test(c))
      .map(c => c.match(/^\s*Figure\s+([\d.]+)/)?.[1] ?? c.slice(0, 40)),
    tables: captions.map(c => c.match(/^\s*Table\s+([\d.]+)/)?.[1]).filter(Boolean),
    admonitions: boxes('admonition').length,
    solutions: solutions.length,
    openSolutions: solutions.filter(
      box => box.open || visible(box.querySelector('.myst-exercise-body'))).map(title),
    collapsedInputs: [...document.querySelectorAll('.jp-CodeCell .jp-InputPlaceholder')]
      .map(el => el.textContent.trim()),
  };
}""".replace("RAW_MARKUP", RAW_MARKUP)


# True once every Markdown cell of the open notebook has been rendered by jupyterlab-myst and
# has stayed so for two seconds (JupyterLab renders a notebook again while its kernel starts,
# which takes a while on a busy machine).
RENDERED = """() => {
  const cells = [...document.querySelectorAll('.jp-MarkdownCell')];
  const done = cells.every(c => c.querySelector('.jp-InputArea > .myst'))
    && document.querySelectorAll('.jp-Notebook .jp-Cell').length > 0
    && !/Initializing|Starting|Connecting/.test(
         document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')?.textContent ?? '');
  if (!done) { window.renderedSince = undefined; return false; }
  window.renderedSince ??= Date.now();
  return Date.now() - window.renderedSince > 2000;
}"""


@dataclass
class NotebookReport:
    """What one notebook showed in JupyterLab."""

    path: str
    cells: int = 0
    markdown: int = 0
    rendered: int = 0
    math: int = 0
    math_errors: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    exercises: int = 0
    statements: int = 0
    numbers: list[str] = field(default_factory=list)  # "Exercise 7.1", … in reading order
    figures: list[str] = field(default_factory=list)  # "7.1", … as captions number them
    tables: list[str] = field(default_factory=list)  # "4.1", … as a table's caption does
    admonitions: int = 0
    solutions: int = 0
    open_solutions: list[str] = field(default_factory=list)
    collapsed_inputs: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def problems(self) -> dict[str, list[str]]:
        """What a learner should never see, by kind (empty when the notebook is clean)."""
        found = {"raw markup": self.raw, "math errors": self.math_errors,
                 "open solutions": self.open_solutions, "console errors": self.console_errors}
        if self.rendered < self.markdown:
            found["unrendered"] = [f"{self.rendered} of {self.markdown} Markdown cells rendered"]
        return {kind: items for kind, items in found.items() if items}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(root: Path, timeout: float = 120):
    """Serve JupyterLab from this environment on 127.0.0.1 with ``root`` as its folder;
    yields its address (with the token). Its settings, workspaces and runtime files live in a
    temporary folder, so the learner's own JupyterLab settings play no part."""
    with tempfile.TemporaryDirectory() as home:
        settings = Path(home, "settings")
        for name, values in SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(json.dumps(values))
        env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings),
               "JUPYTERLAB_WORKSPACES_DIR": str(Path(home, "workspaces")),
               "JUPYTER_RUNTIME_DIR": str(Path(home, "runtime")),
               "JUPYTER_CONFIG_DIR": str(Path(home, "config"))}
        port = _free_port()
        command = [str(Path(sys.executable).with_name("jupyter-lab")), "--no-browser",
                   "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={TOKEN}",
                   f"--ServerApp.root_dir={root}"]
        if os.geteuid() == 0:
            command.append("--allow-root")
        log = Path(home, "server.log")
        with open(log, "w") as output:
            server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while True:
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", port), 0.5).close()
                    break
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.3)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


@contextlib.contextmanager
def browser_page():
    """A headless Chromium page of a reader's size that refuses every request off
    127.0.0.1."""
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport=VIEWPORT)
        offline(page)
        try:
            yield page
        finally:
            browser.close()


def open_notebook(page: Page, lab: str, path: str, timeout: float = 120,
                  reopen: bool = True) -> NotebookReport:
    """Open ``path`` (relative to JupyterLab's folder) and wait until every Markdown cell is
    rendered; returns what it shows. With ``reopen=False``, measure the notebook already open
    (as the learner left it) instead."""
    report = NotebookReport(path)
    if reopen:
        _shut_down_kernels(page, lab)

    def listen(message):
        if message.type == "error":
            report.console_errors.append(message.text)

    page.on("console", listen)
    try:
        if reopen:
            page.goto(f"{lab}/lab/tree/{path}?reset&token={TOKEN}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout * 1000)
            page.wait_for_function(RENDERED, timeout=timeout * 1000, polling=250)
        measured = page.evaluate(NOTEBOOK_SCRIPT)
    finally:
        page.remove_listener("console", listen)
    for key, value in measured.items():
        setattr(report, re.sub(r"[A-Z]", lambda c: "_" + c[0].lower(), key), value)
    report.console_errors = _upstream_filtered(report.console_errors)
    return report


def _shut_down_kernels(page: Page, lab: str) -> None:
    """Shut down the kernels of the notebooks opened before (each opened notebook starts
    one)."""
    headers = {"Authorization": f"token {TOKEN}"}
    for session in page.request.get(f"{lab}/api/sessions", headers=headers).json():
        page.request.delete(f"{lab}/api/sessions/{session['id']}", headers=headers)


# What JupyterLab and jupyterlab-myst log as errors that is not the book's to fix: a reference
# to a label that jupyterlab-myst cannot resolve (it reads one notebook, not the book).
UPSTREAM_CONSOLE = ("Cross reference target was not found",)


def _upstream_filtered(errors: list[str]) -> list[str]:
    return [e for e in errors if not e.startswith(UPSTREAM_CONSOLE)]


def run_all(page: Page, timeout: float = 600) -> list[str]:
    """Run every cell from JupyterLab's Run menu and wait until the kernel is done (no cell
    waiting, and the last cell run or an error shown); returns the errors shown (empty when
    every cell ran)."""
    page.get_by_role("menubar").get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    errors = """() => [...document.querySelectorAll(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
        .filter(o => /Traceback|^\\w*(Error|Exception)\\b/m.test(o.textContent))
        .map(o => o.textContent.slice(-300))"""
    page.wait_for_function(
        f"""() => {{
          const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
            .map(p => p.textContent);
          if (prompts.some(text => text.includes('*'))) return false;
          return /\\d/.test(prompts[prompts.length - 1]) || ({errors})().length > 0;
        }}""", timeout=timeout * 1000, polling=1000)
    return page.evaluate(errors)


def screenshots(page: Page, folder: Path, name: str) -> list[Path]:
    """Save the first screen, the first exercise and the first statement of the open notebook,
    and the first solution once clicked open, as ``folder/name-*.png``."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = [folder / f"{name}-top.png"]
    page.screenshot(path=saved[-1])
    for label, selector in (("statement", ".myst-proof"), ("exercise", ".myst-exercise")):
        box = page.query_selector(selector)
        if box:
            box.scroll_into_view_if_needed()
            saved.append(folder / f"{name}-{label}.png")
            page.screenshot(path=saved[-1])
    solution = page.query_selector(".myst-exercise summary >> text=/^Solution/")
    if solution:
        solution.scroll_into_view_if_needed()
        solution.click()
        page.wait_for_timeout(500)
        saved.append(folder / f"{name}-solution-open.png")
        page.screenshot(path=saved[-1])
    return saved


def main(argv: list[str]) -> None:
    """``python tools/lab.py NOTEBOOK.ipynb... [SCREENS_DIR]``: print each notebook's report
    and save its screenshots."""
    notebooks = [Path(a) for a in argv if a.endswith(".ipynb")]
    folder = Path(next((a for a in argv if not a.endswith(".ipynb")), "_build/lab-screens"))
    if not notebooks:
        sys.exit("usage: python tools/lab.py NOTEBOOK.ipynb... [SCREENS_DIR]")
    # JupyterLab saves what it opens (jupyterlab-myst marks a notebook changed): open copies.
    with tempfile.TemporaryDirectory() as root:
        for notebook in notebooks:
            shutil.copy(notebook, Path(root, notebook.name))
        with jupyterlab(Path(root)) as lab, browser_page() as page:
            for notebook in notebooks:
                report = open_notebook(page, lab, notebook.name)
                saved = screenshots(page, folder, notebook.stem)
                print(json.dumps({**vars(report), "problems": report.problems(),
                                  "screenshots": [str(p) for p in saved]}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
