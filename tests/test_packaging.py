"""The package: every third-party module that ``import companion`` loads at module level comes
from a distribution listed in pyproject's dependencies; the repository it installs from is
named once; and a chapter runs outside the clone, from a fresh virtual environment."""

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
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
    from repository import DISTRIBUTION, substitutions  # tools/, on pytest's pythonpath

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "companion"
    pages = [*(ROOT / "book").glob("*.md"), *(ROOT / "book").glob("*.ipynb")]
    for page in pages:
        assert url not in page.read_text(), f"{page.name}: write {{{{ repository }}}}"
    intro = (ROOT / "book" / "intro.md").read_text()
    commands = substitutions(url, config["repository"]["branch"])
    for name in commands:
        assert f"{{{{ {name} }}}}" in intro
    readme = (ROOT / "README.md").read_text()
    for name in ("install_in_a_venv", "install_in_colab"):
        assert commands[name] in readme, f"README: the commands of {name}"
    addresses = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", readme))
    assert addresses == {url}


@pytest.mark.slow  # a fresh virtual environment, PyTorch installed into it, a chapter executed
def test_a_chapter_runs_outside_the_clone(tmp_path):
    """As a learner without a clone: the package installed from the checkout into a fresh
    virtual environment (the versions of requirements.txt as constraints), a chapter copied
    elsewhere and executed there, importing the installed companion."""
    package = tmp_path / "package"  # a copy: building a wheel writes into the source tree
    shutil.copytree(ROOT / "companion", package / "companion",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, package)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "-c", str(ROOT / "requirements.txt"), str(package), "ipykernel", "nbclient"]
    subprocess.run(install, check=True, timeout=1200)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    chapter = shutil.copy(ROOT / "book" / "recognizers.ipynb", elsewhere)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    where = subprocess.run([str(python), "-c", "import companion; print(companion.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    executed = subprocess.run([str(venv / "bin" / "jupyter-execute"), chapter],
                              cwd=elsewhere, env={**env, "BOOK_SCALE": "quick"},
                              capture_output=True, text=True, timeout=600)
    assert executed.returncode == 0, executed.stderr[-3000:]
