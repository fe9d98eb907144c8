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
    ("errors", "plain"),
    ("logs",),
    ("trust",),
    ("config",),
    ("providers",),
    ("context",),
    ("research",),
    ("runtime",),
    ("view",),
    ("server",),
    ("cli", "__main__"),
)
MAX_MODULE_LINES = 400
MAX_ROOM_ENTRIES = 15  # modules and folders of one room, its __init__ aside
FAMILY = 4  # modules sharing a prefix ("fit_", "cli_") this many want a folder of that name
BENCHMARKS = PACKAGE.parents[1] / "benchmarks"
# The rooms inside a room, lowest first, with the modules of the room they stand on: an entry
# imports only entries below it, and a room never imports a module of its parent that is not
# listed (the parent's other modules sit on top of its rooms). Every room is listed.
ROOM_ORDER: dict[str, tuple[str, ...]] = {
    "foundry_mcp.research": (
        "models",
        "effort",
        "language",
        "principal",
        "pricing",
        "prompts",
        "store",
        "export",
        "llm",
        "verification",
        "workflow",
        "modes",
        "revision",
        "runs",
        "service",
    ),
    "foundry_mcp.research.workflow": ("fitting", "reading", "deadline", "report", "agents"),
    "foundry_mcp.research.service": (
        "inputs",
        "ownership",
        "parts",
        "asking",
        "payloads",
        "starting",
        "completed",
    ),
    "foundry_mcp.cli": ("wording", "display"),
    "foundry_mcp.research.store": (
        "owners",
        "records",
        "states",
        "pages",
        "paging",
        "url",
        "protocol",
        "delegates",
        "access",
        "archive",
        "sqlite",
        "postgres",
        "opening",
        "migration",
    ),
    "foundry_mcp.server": (
        "arguments",
        "results",
        "surface",
        "envelope",
        "host",
        "auth",
        "app",
        "team",
    ),
    "foundry_mcp.context": ("tokens", "levels", "reading", "fidelity"),
    "foundry_mcp.providers": ("http", "pages", "llm", "search", "mcp_sources"),
    "foundry_mcp.providers.llm": ("base", "text", "departures", "programs"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


@cache
def imports_of(name: str) -> tuple[tuple[int, str], ...]:
    """``(line, module)`` of every module of ours that ``name`` imports (each module is parsed
    once: several tests walk them all)."""
    return tuple(_read_imports(name))


def _read_imports(name: str) -> Iterator[tuple[int, str]]:
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


def rooms(top: Path) -> Iterator[Path]:
    """``top`` and every folder of code beneath it."""
    yield top
    for path in sorted(top.rglob("*")):
        if path.is_dir() and "__pycache__" not in path.parts and any(path.glob("*.py")):
            yield path


def entries(room: Path) -> list[str]:
    """What a reader of ``room`` walks: its modules and folders, ``__init__`` aside."""
    return sorted(
        p.name
        for p in room.iterdir()
        if p.name not in ("__init__.py", "__pycache__")
        and (p.suffix == ".py" or (p.is_dir() and any(p.glob("*.py"))))
    )


@pytest.mark.parametrize("top", [PACKAGE, BENCHMARKS], ids=["src", "benchmarks"])
def test_no_room_holds_more_than_a_reader_can_walk(top: Path) -> None:
    crowded = {
        str(room.relative_to(top.parent)): len(found)
        for room in rooms(top)
        if len(found := entries(room)) > MAX_ROOM_ENTRIES
    }
    assert crowded == {}


@pytest.mark.parametrize("top", [PACKAGE, BENCHMARKS], ids=["src", "benchmarks"])
def test_a_family_of_modules_lives_in_a_folder_of_its_name(top: Path) -> None:
    families = {}
    for room in rooms(top):
        stems = [name[:-3] for name in entries(room) if name.endswith(".py") and "_" in name]
        for prefix in {stem.split("_")[0] for stem in stems}:
            members = [stem for stem in stems if stem.split("_")[0] == prefix]
            if len(members) >= FAMILY and not (room / prefix).is_dir():
                families[f"{room.relative_to(top.parent)}/{prefix}_*"] = members
    assert families == {}


def test_every_room_with_rooms_orders_them() -> None:
    unordered = {}
    for name, path in modules().items():
        if path.name != "__init__.py" or name == "foundry_mcp":  # the top: LAYERS orders it
            continue
        inner = {p.name for p in path.parent.iterdir() if (p / "__init__.py").is_file()}
        if missing := sorted(inner - set(ROOM_ORDER.get(name, ()))):
            unordered[name] = missing
    assert unordered == {}


def upward(imports: Iterator[tuple[str, int, str]]) -> list[str]:
    """The imports (``module, line, target``) from an entry of a room to one above it, or from
    a room to a module on top of its parent (see ``ROOM_ORDER``)."""
    found = []
    for name, line, target in imports:
        for parent, order in ROOM_ORDER.items():
            mine, theirs = _entry_in(parent, name), _entry_in(parent, target)
            if mine is None or theirs is None or mine == theirs or mine not in order:
                continue
            is_room = (PACKAGE.parent / parent.replace(".", "/") / mine).is_dir()
            above = order.index(theirs) > order.index(mine) if theirs in order else is_room
            if above:
                found.append(f"{name}:{line} imports {target}")
    return found


def _entry_in(parent: str, name: str) -> str | None:
    """The entry of room ``parent`` that module ``name`` is in (None: outside it)."""
    prefix = parent + "."
    return name[len(prefix) :].split(".")[0] if name.startswith(prefix) else None


def test_no_room_imports_a_room_above_it() -> None:
    everything = ((name, line, target) for name in modules() for line, target in imports_of(name))
    assert upward(everything) == []


def test_the_room_rule_finds_an_import_upward() -> None:
    workflow = "foundry_mcp.research.workflow"
    wrong = [
        (f"{workflow}.fitting.fitter", 1, f"{workflow}.report.parts"),  # a lower room, upward
        (f"{workflow}.agents.planner", 2, f"{workflow}.supervisor"),  # a room, to its top
    ]
    right = [(f"{workflow}.report.parts", 3, f"{workflow}.fitting.findings")]
    assert len(upward(iter(wrong + right))) == 2
