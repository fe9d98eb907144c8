"""The bodies of the terminal commands: each takes the parsed arguments and returns an exit code.

A research runs in the foreground with its progress on stderr and its report on stdout; the
other commands print JSON (or the report) on stdout. With ``--json`` every command prints one
JSON document on stdout. Errors go to stderr with their fix, phrased for a shell.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import anyio

from foundry_mcp import __version__
from foundry_mcp.cli_progress import TERMINAL, follow_progress
from foundry_mcp.config import PROJECT_CONFIG, Settings, protected_keys_in
from foundry_mcp.errors import FoundryError
from foundry_mcp.providers.extract import extractor_problem
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.trust import TrustStore


def fail(exc: FoundryError, *, as_json: bool = False) -> int:
    """Report an error: its message and fix on stderr, and with ``--json`` also as one JSON
    document on stdout (``success: false``, the MCP envelope's error fields). Exit code 2."""
    message, remediation = for_the_shell(exc.message), for_the_shell(exc.remediation)
    print(f"error: {message}", file=sys.stderr)
    print(f"  fix: {remediation}", file=sys.stderr)
    if as_json:
        details = {k: v for k, v in exc.details.items() if v is not None}
        print_json(
            {
                "success": False,
                "error": message,
                "error_code": exc.error_code,
                "error_type": exc.error_type,
                "remediation": remediation,
                **({"details": details} if details else {}),
            }
        )
    return 2


_ENV_BLOCK = "in the MCP server's env block"
_ENV_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")


def for_the_shell(text: str) -> str:
    """Say where a setting goes for a terminal user: the remediations are written for an MCP
    client's ``env`` block, which a shell does not have."""
    parts = text.split(_ENV_BLOCK)
    for i in range(1, len(parts)):
        named = _ENV_VARIABLE.findall(parts[i - 1].rsplit(". ", 1)[-1]) or ["NAME"]
        exports = " ".join(f"{variable}=..." for variable in dict.fromkeys(named))
        place = f"in your shell environment (export {exports})"
        if "~/.foundry-mcp.toml" not in parts[i].split(". ", 1)[0]:
            place += " or in ~/.foundry-mcp.toml"
        parts[i] = place + parts[i]
    return "".join(parts)


def print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


def _for_the_shell_within(value: Any) -> Any:
    """``for_the_shell`` applied to every string of a JSON-like value (doctor's fixes)."""
    if isinstance(value, str):
        return for_the_shell(value)
    if isinstance(value, list):
        return [_for_the_shell_within(item) for item in value]
    if isinstance(value, dict):
        return {key: _for_the_shell_within(item) for key, item in value.items()}
    return value


async def run_research(service: ResearchService, args: argparse.Namespace) -> int:
    limits = {
        "max_iterations": args.max_iterations,
        "max_sub_queries": args.max_sub_queries,
        "max_sources_per_query": args.max_sources,
        "task_timeout": args.timeout,
    }
    started = service.start(
        args.query,
        provider_id=args.provider,
        model=args.model,
        system_prompt=args.context,
        mode=args.mode,
        effort=args.effort,
        max_time_s=args.max_time,
        source_types=args.source_types,
        preferred_sources=args.prefer,
        **limits,
    )
    return await _follow(service, started["research_id"], as_json=args.json)


async def resume_research(service: ResearchService, args: argparse.Namespace) -> int:
    started = service.resume(args.research_id, max_iterations=args.max_iterations)
    return await _follow(service, started["research_id"], as_json=args.json)


async def _follow(
    service: ResearchService, research_id: str, *, as_json: bool, owned: bool = True
) -> int:
    """Show progress on stderr until the research ends, then print the report on stdout.

    With ``owned`` the research runs in this process and Ctrl-C cancels it; without (``watch``)
    Ctrl-C only stops watching. With ``as_json`` stdout gets one document: the final status and
    the report.
    """
    print(f"research {research_id} {'started' if owned else 'watched'}", file=sys.stderr)
    interrupted = anyio.Event()

    def on_interrupt(*_: object) -> None:
        interrupted.set()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        status = await follow_progress(service, research_id, interrupted)
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted.is_set() and status["status"] not in TERMINAL:
        if not owned:
            print(f"\nstopped watching {research_id}; it goes on.", file=sys.stderr)
            return 130
        await service.cancel(research_id)
        print(
            f"\ncancelled; partial work is saved. Continue with: foundry-mcp resume {research_id}",
            file=sys.stderr,
        )
        return 130
    completed = status["status"] == "completed"
    if not completed:
        print(f"research ended {status['status']}: {status['error'] or ''}", file=sys.stderr)
        print(f"Continue with: foundry-mcp resume {research_id}", file=sys.stderr)
    report = service.full_report(research_id) if completed else None
    if as_json:
        print_json({**status, "report": report})
    elif report is not None:
        print(report)
    return 0 if completed else 1


async def watch_research(service: ResearchService, args: argparse.Namespace) -> int:
    """Follow a research another process runs, without owning it: 0 completed, 1 otherwise."""
    await service.status(args.research_id)  # an unknown id fails here, with exit code 2
    return await _follow(service, args.research_id, as_json=args.json, owned=False)


def trust_file(args: argparse.Namespace) -> int:
    """Trust (or, with --revoke, stop trusting) a project file; --list shows the trusted ones."""
    store = TrustStore(Path.home())
    try:
        if args.list:
            print_json(store.entries())
            return 0
        path = Path(args.path or PROJECT_CONFIG).expanduser().resolve()
        if args.revoke:
            revoked = store.revoke(path)
            if args.json:
                print_json({"path": str(path), "trusted": False, "was_trusted": revoked})
            if not revoked:
                print(f"{path} was not trusted.", file=sys.stderr)
                return 1
            print(f"{path} is no longer trusted; its protected keys are ignored.", file=sys.stderr)
            return 0
        if not path.is_file():
            raise FoundryError(
                f"{path} does not exist.",
                remediation="Name the project's foundry-mcp.toml, e.g. foundry-mcp trust ./foundry-mcp.toml.",
            )
        data = path.read_bytes()
        protected = protected_keys_in(path, data)
        digest = store.trust(path, data)
    except FoundryError as exc:
        return fail(exc, as_json=args.json)
    if args.json:
        print_json(
            {"path": str(path), "trusted": True, "digest": digest, "protected_keys": protected}
        )
    print(f"trusted {path} ({digest[:19]}...)", file=sys.stderr)
    if protected:
        print("These keys of it now apply:", file=sys.stderr)
        for key in protected:
            print(f"  {key}", file=sys.stderr)
    print("If the file changes, it must be trusted again.", file=sys.stderr)
    return 0


async def show_status(service: ResearchService, args: argparse.Namespace) -> int:
    print_json(await service.status(args.research_id))
    return 0


async def print_report(service: ResearchService, args: argparse.Namespace) -> int:
    if args.json:
        payload, warnings = service.report(args.research_id)
        print_json({**payload, "warnings": warnings})
    else:
        print(service.full_report(args.research_id))
    return 0


async def export_research(service: ResearchService, args: argparse.Namespace) -> int:
    """The export on stdout, or written to ``--out`` inside the current directory."""
    done = service.export(
        args.research_id,
        format=args.format,
        path=args.out,
        overwrite=args.overwrite,
        max_inline_chars=None,  # stdout takes any length
    )
    if args.json:
        print_json(done)
    elif args.out is None:
        sys.stdout.write(done["content"])
    else:
        print(f"wrote {done['chars']:,} characters to {done['path']}", file=sys.stderr)
    return 0


async def list_researches(service: ResearchService, args: argparse.Namespace) -> int:
    print_json(
        service.list(limit=args.limit, completed_only=args.completed_only, status=args.status)
    )
    return 0


async def print_events(service: ResearchService, args: argparse.Namespace) -> int:
    cursor: str | None = None
    events: list[dict[str, Any]] = []
    while True:
        page = service.events(args.research_id, cursor=cursor, limit=500)
        for event in page["events"]:
            if args.json:
                events.append(event)
                continue
            data = json.dumps(event["data"], ensure_ascii=False)
            print(f"{event['seq']:>5} {event['at']} {event['kind']:<16} {data}")
        cursor = page["next_cursor"]
        if cursor is None:
            if args.json:
                print_json({"research_id": args.research_id, "events": events})
            return 0


async def restore_source(service: ResearchService, args: argparse.Namespace) -> int:
    print_json(service.restore_content(args.research_id, args.item_id))
    return 0


async def cancel_research(service: ResearchService, args: argparse.Namespace) -> int:
    print_json(await service.cancel(args.research_id))
    return 0


async def delete_research(service: ResearchService, args: argparse.Namespace) -> int:
    print_json(await service.delete(args.research_id))
    return 0


async def doctor(service: ResearchService, args: argparse.Namespace) -> int:
    settings: Settings = service.settings
    checks: dict[str, Any] = {
        "version": __version__,
        "config_files": settings.sources,
        "research_dir": str(settings.research.research_dir),
    }
    try:  # where research is kept: the SQLite file, or the shared PostgreSQL database
        checks["store"] = service.store.describe().as_dict()
    except FoundryError as exc:
        checks["store"] = f"not usable: {exc.message} {exc.remediation}"
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
    try:
        name, model = service.providers.resolve_llm(None, None)
        checks["llm"] = f"ok: {name}:{model}"
    except FoundryError as exc:
        checks["llm"] = f"not usable: {exc.message} {exc.remediation}"
    try:
        usable, warnings = service.providers.search_providers()
        checks["search"] = f"ok: {', '.join(usable)}" + (
            f" ({' '.join(warnings)})" if warnings else ""
        )
    except FoundryError as exc:
        checks["search"] = f"not usable: {exc.message} {exc.remediation}"
    # Every known or configured provider: key present, a cheap live call, the fix.
    health = await service.health()
    checks["providers"] = [
        {
            key: entry[key]
            for key in (
                "name",
                "role",
                "in_use",
                "key_present",
                "model",
                "status",
                "problem",
                "fix",
            )
            if entry.get(key) is not None
        }
        for entry in health["providers"]
    ]
    checks["problems"] = health["problems"]
    checks["warnings"] = settings.trust_warnings()
    extraction = await anyio.to_thread.run_sync(extractor_problem)
    checks["page_extraction"] = (
        "ok: trafilatura" if extraction is None else f"degraded: {extraction}"
    )
    if extraction is not None:
        checks["warnings"].append(extraction)
    print_json(_for_the_shell_within(checks))
    configured = all(not str(v).startswith("not usable") for v in checks.values())
    return 0 if configured and health["ok"] else 1
