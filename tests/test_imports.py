"""No import circles: within companion/ and within course/, the modules' imports (at the top of a
module or inside a function, which is where a circle hides) form a graph without cycles, so each
room's arrows run one way."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports(package: str) -> dict[str, set[str]]:
    """``{module: the modules of the same package it imports}`` for every module of
    ``package`` (a folder of ROOT), a package's ``__init__`` named by the package."""
    graph = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = ast.parse(path.read_text())
    edges = {}
    for name, tree in graph.items():
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # "from companion import runtime" imports the module companion.runtime; "from
                # companion import set_seed" the package itself
                found |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in graph
                          else node.module for alias in node.names}
        edges[name] = {other for other in found if other in graph and other != name}
    return edges


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as a list of modules, or ``[]``."""
    state, stack = {}, []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                return stack[stack.index(other):] + [other]
            if other not in state and (found := visit(other)):
                return found
        state[name] = "done"
        stack.pop()
        return []

    for name in sorted(graph):
        if name not in state and (found := visit(name)):
            return found
    return []


@pytest.mark.parametrize("package", ["companion", "course"])
def test_no_import_circles(package):
    graph = imports(package)
    assert len(graph) > 5
    assert cycle(graph) == [], " -> ".join(cycle(graph))


def test_the_check_finds_a_circle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []
