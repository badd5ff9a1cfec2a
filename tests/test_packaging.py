"""The package declares what it imports: every third-party module that ``import companion``
loads at module level must come from a distribution listed in pyproject's dependencies."""

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

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
