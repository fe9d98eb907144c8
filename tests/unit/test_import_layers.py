"""The house's shape: imports point down the layers, no module imports itself back in a circle,
the store's backends stand apart, and no room or module grows past what a reader can walk.

The imports are read from the source (every ``import``, type-only and function-local ones
included), so a circle that only a type checker sees counts too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "foundry_mcp"
# Lowest first: a module may import its own layer and the layers below it.
LAYERS = (
    ("errors",),
    ("logs",),
    ("trust",),
    ("config",),
    ("providers",),
    ("context",),
    ("research",),
    ("runtime",),
    ("server",),
    (
        "bench",
        "cli_wording",
        "cli_progress",
        "cli_doctor",
        "cli_migrate",
        "cli_commands",
        "cli",
        "__main__",
    ),
)
MAX_MODULE_LINES = 400
MAX_RESEARCH_ENTRIES = 15


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every module of ours that ``name`` imports."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import module`` imports that module.
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            if target in modules() and target != name:
                yield node.lineno, target


def graph() -> dict[str, set[str]]:
    return {name: {target for _, target in imports_of(name)} for name in modules()}


def layer_of(name: str) -> int | None:
    parts = name.split(".")
    top = parts[1] if len(parts) > 1 else None
    return next((i for i, layer in enumerate(LAYERS) if top in layer), None)


def test_imports_point_down_the_layers() -> None:
    upward = [
        f"{modules()[name].relative_to(PACKAGE)}:{line} imports {target}"
        for name in modules()
        if (mine := layer_of(name)) is not None
        for line, target in imports_of(name)
        if (theirs := layer_of(target)) is not None and theirs > mine
    ]
    assert upward == []


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back_in_a_circle() -> None:
    assert circles(graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(("backend", "other"), [("sqlite", "postgres"), ("postgres", "sqlite")])
def test_no_store_backend_imports_another(backend: str, other: str) -> None:
    prefix = f"foundry_mcp.research.store.{backend}"
    sideways = [
        (name, target)
        for name in modules()
        if name.startswith(prefix)
        for _, target in imports_of(name)
        if target.startswith(f"foundry_mcp.research.store.{other}")
    ]
    assert sideways == []


def test_the_shared_store_layer_imports_no_backend() -> None:
    shared = [
        name
        for name in modules()
        if name.startswith("foundry_mcp.research.store.")
        and name.split(".")[3] not in ("sqlite", "postgres", "opening")
    ]
    reaching = [
        (name, target)
        for name in shared
        for _, target in imports_of(name)
        if target.split(".")[3:4] in (["sqlite"], ["postgres"])
    ]
    assert shared and reaching == []


def test_every_module_is_short_enough_to_read() -> None:
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in modules().values()
        if (lines := len(path.read_text("utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_the_research_room_shows_what_it_holds() -> None:
    entries = [p.name for p in (PACKAGE / "research").iterdir() if p.name != "__pycache__"]
    assert len(entries) <= MAX_RESEARCH_ENTRIES, sorted(entries)
