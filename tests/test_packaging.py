"""The package: every third-party module that ``import companion`` loads at module level comes
from a distribution listed in pyproject's dependencies; the repository it installs from is
named once; and a chapter runs outside the clone, from the site's files, in a fresh virtual
environment."""

import ast
import functools
import http.server
import importlib.metadata
import os
import re
import subprocess
import sys
import threading
import tomllib
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].lower().replace("_", "-")
            for spec in project["dependencies"]}


def _loaded_companion_files() -> list[Path]:
    """The source files of the companion modules that ``import companion`` loads."""
    code = ("import companion, sys; print('\\n'.join(m.__file__ for n, m in sys.modules.items() "
            "if n.split('.')[0] == 'companion'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [Path(line) for line in out.split()]


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names imported outside functions (those a plain import needs)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_every_module_level_import_is_a_declared_dependency():
    files = _loaded_companion_files()
    assert any(f.name == "transformer.py" for f in files)
    third_party = {name for f in files for name in _module_level_imports(f)
                   if name not in sys.stdlib_module_names and name != "companion"}
    assert "torch" in third_party  # the scan sees the imports
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = {name: distributions.get(name) for name in third_party
               if not {d.lower().replace("_", "-") for d in distributions.get(name, [name])}
               & declared}
    assert not missing, f"imported by `import companion` but not in pyproject: {missing}"


def test_pinned_requirements_satisfy_the_declared_ranges():
    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is declared but not pinned in requirements.txt"
        assert pins[name] in requirement.specifier, f"{name}=={pins[name]} is outside {spec}"


def test_the_repository_is_named_once():
    """_config.yml names the repository; the book's pages take it from there (tools/repository.py)
    and the README's commands are the ones the introduction prints."""
    import yaml
    from downloads import wheel_name  # tools/, on pytest's pythonpath
    from repository import DISTRIBUTION, substitutions

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "companion"
    pages = [*(ROOT / "book").glob("*.md"), *(ROOT / "book").glob("*.ipynb")]
    for page in pages:
        assert url not in page.read_text(), f"{page.name}: write {{{{ repository }}}}"
    intro = (ROOT / "book" / "intro.md").read_text()
    commands = substitutions(url, wheel_name(), config["repository"]["branch"])
    for name in commands:
        assert f"{{{{ {name} }}}}" in intro
    readme = (ROOT / "README.md").read_text()
    for name in ("install_in_a_venv", "install_in_colab", "install_from_repository"):
        assert commands[name] in readme, f"README: the commands of {name}"
    addresses = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", readme))
    assert addresses == {url}


@pytest.mark.slow  # a fresh virtual environment, PyTorch installed into it, a chapter executed
def test_a_chapter_runs_from_the_sites_files(tmp_path):
    """As a learner without a clone: the wheel and chapters.zip built as the site builds them
    (tools/downloads.py), served over HTTP on 127.0.0.1, the wheel installed from there into a
    fresh virtual environment (the versions of requirements.txt as constraints), the chapters
    unpacked elsewhere, and a chapter executed there, importing the installed companion."""
    from downloads import CHAPTERS, package_files, wheel_name
    from repository import substitutions

    site = tmp_path / "site"
    package_files(site)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                   "-c", str(ROOT / "requirements.txt"), f"{address}/{wheel_name()}",
                   "ipykernel", "nbclient"]
        subprocess.run(install, check=True, timeout=1200)
        elsewhere = tmp_path / "elsewhere"
        with urllib.request.urlopen(f"{address}/{CHAPTERS}") as response:
            (tmp_path / CHAPTERS).write_bytes(response.read())
    finally:
        server.shutdown()
    # the introduction's command unpacks the chapters
    unpack = substitutions("https://github.com/o/n", wheel_name())["install_in_a_venv"]
    assert f"python3 -m zipfile -e {CHAPTERS} chapters" in unpack
    subprocess.run([str(python), "-m", "zipfile", "-e", str(tmp_path / CHAPTERS),
                    str(elsewhere)], check=True)
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(
        p.name for p in (ROOT / "book").glob("*.ipynb"))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    where = subprocess.run([str(python), "-c", "import companion; print(companion.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    executed = subprocess.run([str(venv / "bin" / "jupyter-execute"), "recognizers.ipynb"],
                              cwd=elsewhere, env={**env, "BOOK_SCALE": "quick"},
                              capture_output=True, text=True, timeout=600)
    assert executed.returncode == 0, executed.stderr[-3000:]
