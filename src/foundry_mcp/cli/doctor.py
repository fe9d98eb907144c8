"""``foundry-mcp doctor``: the configuration read, where research is kept, and whether every
provider answers: one document whose summary agrees with its checks, drawn as a check list on a
terminal (:mod:`foundry_mcp.cli.display.checklist`) and printed as JSON into a pipe or with
``--json``.

What is checked live: one cheap call to every provider a research started now would use, and to
every provider with a key. A provider usable without a key that no research would use (the
assistants' programs, Semantic Scholar, the keyless web search) is ``not_checked``: no call is
made on its behalf (a program is only looked for on PATH), so doctor neither spends a
subscription's quota nor sends a query nobody asked for.

The ``llm`` and ``search`` lines sum up the providers a research started now would use: ``ok``
only when each of them answered its live call, ``failing`` when one is configured but its call
failed (not logged in, no network, a rejected key), ``not usable`` when the configuration
leaves none to use. Each ``[mcp_sources.*]`` server is started (or reached), its tools listed
and sorted into what a research may call; one that fails is a problem. Exit status 0 when all
is well, 1 otherwise.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from foundry_mcp import __version__
from foundry_mcp.cli.display.checklist import show_checks
from foundry_mcp.cli.display.output import show
from foundry_mcp.cli.wording import for_the_terminal_within
from foundry_mcp.config import Settings
from foundry_mcp.errors import FoundryError
from foundry_mcp.providers.keyless_notice import keyless_search_statement
from foundry_mcp.providers.pages.extract import extractor_problem
from foundry_mcp.research.service.research_service import ResearchService

# The fields of a provider's health entry that doctor shows.
ENTRY_FIELDS = (
    "name",
    "role",
    "in_use",
    "key_present",
    "model",
    "status",
    "problem",
    "note",
    "fix",
)
NOT_USABLE = "not usable"
FAILING = "failing"


async def doctor(service: ResearchService, args: argparse.Namespace) -> int:
    """Print the checks on stdout; 0 when every provider in use answered, else 1."""
    settings: Settings = service.settings
    checks: dict[str, Any] = {
        "version": __version__,
        "config_files": settings.sources,
        "research_dir": str(settings.research.research_dir),
    }
    try:  # where research is kept: the SQLite file, or the shared PostgreSQL database
        checks["store"] = service.store.describe().as_dict()
    except FoundryError as exc:
        checks["store"] = f"{NOT_USABLE}: {exc.message} {exc.remediation}"
    untrusted = settings.untrusted
    if untrusted is not None:
        checks["untrusted_config"] = {
            "file": str(untrusted.path),
            "reason": untrusted.reason,
            "ignored_keys": untrusted.ignored_keys,
            "fix": f"foundry-mcp trust {untrusted.path}",
        }
    choice = service.providers.llm_choice
    if choice is not None:
        checks["llm_choice"] = choice.statement
    # Every known or configured provider: key present, a cheap live call, the fix.
    health = await service.health()
    entries = {entry["name"]: entry for entry in health["providers"]}
    checks["llm"] = _llm_line(service, entries)
    checks["search"], searching, search_warnings = _search_line(service, entries)
    statement = keyless_search_statement(settings, searching)
    if statement is not None:
        checks["keyless_search"] = statement
    checks["providers"] = [
        {key: entry[key] for key in ENTRY_FIELDS if entry.get(key) is not None}
        for entry in health["providers"]
    ]
    checks["problems"] = health["problems"]
    checks["warnings"] = settings.trust_warnings() + search_warnings
    extraction = await anyio.to_thread.run_sync(extractor_problem)
    checks["page_extraction"] = (
        "ok: trafilatura" if extraction is None else f"degraded: {extraction}"
    )
    if extraction is not None:
        checks["warnings"].append(extraction)
    # Each configured MCP server: connected, its tools listed and sorted, or the fix.
    if health.get("mcp_sources"):
        checks["mcp_sources"] = health["mcp_sources"]
    summaries = (checks["store"], checks["llm"], checks["search"])
    all_ok = not any(str(line).startswith((NOT_USABLE, FAILING)) for line in summaries)
    healthy = all_ok and health["ok"]
    show(
        args, for_the_terminal_within(checks), lambda c: show_checks(c, problems_ahead=not healthy)
    )
    return 0 if healthy else 1


def _llm_line(service: ResearchService, entries: dict[str, dict[str, Any]]) -> str:
    """The default LLM as ``ok: provider:model``, or why a research cannot use it."""
    try:
        name, model = service.providers.resolve_llm(None, None)
    except FoundryError as exc:
        return f"{NOT_USABLE}: {exc.message} {exc.remediation}"
    return summary_line([f"{name}:{model}"], entries)


def _search_line(
    service: ResearchService, entries: dict[str, dict[str, Any]]
) -> tuple[str, list[str], list[str]]:
    """The search providers a research would use, summed up; their names; and what a start
    would warn about them (a provider skipped, an untrusted file's list ignored)."""
    try:
        usable, warnings = service.providers.search_providers(announce=False)
    except FoundryError as exc:
        return f"{NOT_USABLE}: {exc.message} {exc.remediation}", [], []
    return summary_line(usable, entries), usable, warnings


def summary_line(specs: list[str], entries: dict[str, dict[str, Any]]) -> str:
    """``ok: a, b`` when every provider of ``specs`` ("name" or "name:model") passed its
    check; otherwise ``failing: name (problem)`` for each that did not, then the others."""
    failing = []
    passing = []
    for spec in specs:
        name = spec.partition(":")[0]
        entry = entries.get(name)
        if entry is not None and entry.get("status") not in ("ok", None):
            problem = str(entry.get("problem") or entry["status"]).rstrip(".")
            problem = problem.removeprefix(f"{name}: ")
            failing.append(f"{spec} ({problem})")
        else:
            passing.append(spec)
    if not failing:
        return f"ok: {', '.join(passing)}"
    line = f"{FAILING}: {'; '.join(failing)}"
    return line + (f"; ok: {', '.join(passing)}" if passing else "")
