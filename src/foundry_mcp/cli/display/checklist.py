"""``foundry-mcp doctor`` drawn for a person: one line per check, a mark for how it went, the fix
under each that failed.

It shows the same document ``doctor --json`` prints (see :mod:`foundry_mcp.cli.doctor`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

OK, BAD, WARN, SKIP = ("✓", "green"), ("✗", "red"), ("!", "yellow"), ("·", "dim")
# A provider's status and the mark it gets.
STATUS_MARKS = {"ok": OK, "error": BAD, "not_configured": SKIP, "not_checked": SKIP}


def show_checks(checks: dict[str, Any], *, problems_ahead: bool) -> None:
    """Print the checks; ``problems_ahead`` says whether doctor exits with 1."""
    console = Console(highlight=False)
    console.print(Text(f"foundry-mcp {checks['version']}", style="bold"))
    files = checks["config_files"]
    _line(console, OK, "configuration", ", ".join(files) if files else "no file: defaults")
    store = checks["store"]
    if isinstance(store, dict):
        _line(console, OK, "store", f"{store['backend']} at {store['location']}")
    else:
        _line(console, BAD, "store", str(store))
    untrusted = checks.get("untrusted_config")
    if untrusted:
        ignored = ", ".join(untrusted["ignored_keys"]) or "none"
        _line(console, WARN, "untrusted file", f"{untrusted['file']}: ignored {ignored}")
        _fix(console, untrusted["fix"])
    if checks.get("llm_choice"):
        _line(console, SKIP, "llm choice", checks["llm_choice"])
    _line(console, _summary_mark(checks["llm"]), "llm", checks["llm"])
    _line(console, _summary_mark(checks["search"]), "search", checks["search"])
    if checks.get("keyless_search"):
        _line(console, WARN, "keyless search", checks["keyless_search"])
    extraction = checks["page_extraction"]
    _line(console, OK if extraction.startswith("ok") else WARN, "page extraction", extraction)
    console.print(Text("providers", style="bold"))
    width = max(len(entry["name"]) for entry in checks["providers"])
    for entry in checks["providers"]:
        _provider(console, entry, width)
    sources = checks.get("mcp_sources") or []
    if sources:
        console.print(Text("mcp sources", style="bold"))
    for entry in sources:
        _mcp_source(console, entry)
    for warning in checks["warnings"]:
        _line(console, WARN, "warning", warning)
    if problems_ahead:
        console.print(Text("Something needs fixing: see the ✗ lines and their fixes.", "red"))
    else:
        console.print(Text("All set: a research can start.", "green"))


def _provider(console: Console, entry: dict[str, Any], width: int) -> None:
    mark = STATUS_MARKS.get(entry["status"], WARN)
    if entry["status"] == "error" and not entry["in_use"]:
        mark = WARN  # a provider no research uses cannot stop one
    use = "in use" if entry["in_use"] else "unused"
    said = entry["status"].replace("_", " ")
    checked = entry["status"] in ("ok", "error")
    model = f" {entry['model']}" if entry.get("model") and checked else ""
    line = Text("  ")
    line.append(mark[0], style=mark[1])
    line.append(f" {entry['name']:<{width}}  {entry['role']:<6}  {use:<6}  {said}{model}")
    console.print(line)
    for key in ("problem", "note"):
        if entry.get(key):
            console.print(Padding(Text(entry[key], style="dim"), (0, 0, 0, 6)))
    if entry.get("fix") and (entry["in_use"] or entry["status"] == "error"):
        _fix(console, entry["fix"], indent=6)


def _mcp_source(console: Console, entry: dict[str, Any]) -> None:
    """An MCP source: connected and what of it serves, or what is wrong and the fix."""
    line = Text("  ")
    mark = OK if entry["status"] == "ok" else BAD
    line.append(mark[0], style=mark[1])
    line.append(f" {entry['name']}  {entry['transport']}  {entry['status']}")
    console.print(line)
    if "tools" in entry:
        roles = ", ".join(
            f"{role} {entry[f'{role}_tool']}"
            for role in ("search", "list", "read")
            if entry.get(f"{role}_tool")
        )
        said = f"tools: {', '.join(entry['tools'])}" + (f"; {roles}" if roles else "")
        if entry.get("never_called"):
            said += f"; never called: {', '.join(entry['never_called'])}"
        console.print(Padding(Text(said, style="dim"), (0, 0, 0, 6)))
    for note in entry.get("notes") or []:
        console.print(Padding(Text(f"note: {note}", style="yellow"), (0, 0, 0, 6)))
    if entry.get("problem"):
        console.print(Padding(Text(entry["problem"], style="dim"), (0, 0, 0, 6)))
        _fix(console, entry["fix"], indent=6)


def _summary_mark(line: str) -> tuple[str, str]:
    return OK if line.startswith("ok") else BAD


def _line(console: Console, mark: tuple[str, str], label: str, value: str) -> None:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, style="bold", min_width=15)
    grid.add_column()
    grid.add_row(Text(mark[0], style=mark[1]), label, Text(value))
    console.print(grid)


def _fix(console: Console, fix: str, indent: int = 2) -> None:
    console.print(Padding(Text(f"fix: {fix}", style="yellow"), (0, 0, 0, indent)))
