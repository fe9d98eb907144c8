"""The bodies of the terminal commands: each takes the parsed arguments and returns an exit code.

A research runs in the foreground with its progress on stderr and its report on stdout; the
other commands print JSON (or the report) on stdout. With ``--json`` every command prints one
JSON document on stdout. Errors go to stderr with their fix, phrased for a shell
(:mod:`foundry_mcp.cli.wording`). ``doctor`` is in :mod:`foundry_mcp.cli.doctor`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

import anyio

from foundry_mcp.cli.doctor import doctor
from foundry_mcp.cli.progress import TERMINAL, follow_progress
from foundry_mcp.cli.wording import RESEARCH_ID, for_the_terminal
from foundry_mcp.config import PROJECT_CONFIG, protected_keys_in
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.trust import TrustStore


def fail(exc: FoundryError, *, as_json: bool = False) -> int:
    """Report an error: its message and fix on stderr, and with ``--json`` also as one JSON
    document on stdout (``success: false``, the MCP envelope's error fields). Exit code 2.

    Both are said for the terminal (:mod:`foundry_mcp.cli.wording`): commands, not tool calls.
    """
    named = RESEARCH_ID.search(exc.message)
    research_id = named.group(0) if named else None
    message = for_the_terminal(exc.message, research_id)
    remediation = for_the_terminal(exc.remediation, research_id)
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


def print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


async def run_research(service: ResearchService, args: argparse.Namespace) -> int:
    limits = {
        "max_iterations": args.max_iterations,
        "max_sub_queries": args.max_sub_queries,
        "max_sources_per_query": args.max_sources,
        "task_timeout": args.timeout,
        "reading_budget": args.reading_budget,
    }
    started = await service.start(
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
    # What the start had to say (a provider left out, where keyless searches go) comes first.
    for warning in (started.get("search") or {}).get("warnings") or []:
        print(f"warning: {for_the_terminal(warning)}", file=sys.stderr)
    return await _follow(service, started["research_id"], as_json=args.json)


async def resume_research(service: ResearchService, args: argparse.Namespace) -> int:
    started = await service.resume(args.research_id, max_iterations=args.max_iterations)
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
        error = for_the_terminal(status.get("error") or "", research_id)
        print(f"research ended {status['status']}: {error}", file=sys.stderr)
        print(f"Continue with: foundry-mcp resume {research_id}", file=sys.stderr)
    report = await service.full_report(research_id) if completed else None
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
        payload, warnings = await service.report(args.research_id)
        print_json({**payload, "warnings": warnings})
    else:
        print(await service.full_report(args.research_id))
    return 0


async def export_research(service: ResearchService, args: argparse.Namespace) -> int:
    """The export on stdout, or written to ``--out`` inside the current directory."""
    done = await service.export(
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
        await service.list(limit=args.limit, completed_only=args.completed_only, status=args.status)
    )
    return 0


async def print_events(service: ResearchService, args: argparse.Namespace) -> int:
    cursor: str | None = None
    events: list[dict[str, Any]] = []
    while True:
        page = await service.events(args.research_id, cursor=cursor, limit=500)
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
    print_json(await service.restore_content(args.research_id, args.item_id))
    return 0


async def cancel_research(service: ResearchService, args: argparse.Namespace) -> int:
    print_json(await service.cancel(args.research_id))
    return 0


async def delete_research(service: ResearchService, args: argparse.Namespace) -> int:
    print_json(await service.delete(args.research_id))
    return 0


__all__ = ["doctor", "fail", "print_json"]  # doctor lives in doctor.py; main finds it here
