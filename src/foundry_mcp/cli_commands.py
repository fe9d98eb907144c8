"""The bodies of the terminal commands: each takes the parsed arguments and returns an exit code.

A research runs in the foreground with its progress on stderr and its report on stdout; the
other commands print JSON (or the report) on stdout. Errors go to stderr with their fix.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

import anyio

from foundry_mcp import __version__
from foundry_mcp.config import PROJECT_CONFIG, Settings, protected_keys_in
from foundry_mcp.errors import FoundryError
from foundry_mcp.providers.extract import extractor_problem
from foundry_mcp.research.service import ResearchService
from foundry_mcp.trust import TrustStore

TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}


def fail(exc: FoundryError) -> int:
    print(f"error: {exc.message}", file=sys.stderr)
    print(f"  fix: {exc.remediation}", file=sys.stderr)
    return 2


def print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


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
        source_types=args.source_types,
        preferred_sources=args.prefer,
        **limits,
    )
    return await _follow(service, started["research_id"])


async def resume_research(service: ResearchService, args: argparse.Namespace) -> int:
    started = service.resume(args.research_id, max_iterations=args.max_iterations)
    return await _follow(service, started["research_id"])


async def _follow(service: ResearchService, research_id: str) -> int:
    """Show progress on stderr until the research ends, then print the report on stdout."""
    print(f"research {research_id} started", file=sys.stderr)
    interrupted = anyio.Event()

    def on_interrupt(*_: object) -> None:
        interrupted.set()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        status = await _watch(service, research_id, interrupted)
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted.is_set() and status["status"] not in TERMINAL:
        await service.cancel(research_id)
        print(
            f"\ncancelled; partial work is saved. Continue with: foundry-mcp resume {research_id}",
            file=sys.stderr,
        )
        return 130
    if status["status"] != "completed":
        print(f"research ended {status['status']}: {status['error'] or ''}", file=sys.stderr)
        print(f"Continue with: foundry-mcp resume {research_id}", file=sys.stderr)
        return 1
    print(service.full_report(research_id))
    return 0


async def _watch(
    service: ResearchService, research_id: str, interrupted: anyio.Event
) -> dict[str, Any]:
    """Show progress until the research ends: a live bar on a terminal, else one line a change."""
    live = sys.stderr.isatty()
    last = ""
    while True:
        status = await service.status(research_id, wait=True, wait_timeout=0.5)
        line = _progress_line(status)
        if live:
            print(f"\r{line[: _terminal_width() - 1]}\033[K", end="", file=sys.stderr, flush=True)
        elif line.split("]", 1)[1] != last:
            print(line, file=sys.stderr)
        last = line.split("]", 1)[1]
        if status["status"] in TERMINAL or interrupted.is_set():
            if live:
                print(file=sys.stderr)
            return status


def _progress_line(status: dict[str, Any]) -> str:
    """``[  12.3s] [#####.........] analysis   iteration 1/3 ...`` for one status."""
    progress = status["progress"]
    iterations = max(1, status["max_iterations"])
    done = (
        status["iteration"] - 1 + (progress["phase_index"] - 1) / progress["phases"]
    ) / iterations
    if status["status"] == "completed":
        done = 1.0
    filled = round(min(1.0, done) * 20)
    counts = status["counts"]
    return (
        f"[{status['elapsed_s']:6.1f}s] [{'#' * filled}{'.' * (20 - filled)}] "
        f"{status['status']:<10} {status['phase']:<11} "
        f"iteration {status['iteration']}/{status['max_iterations']}  "
        f"sub-queries {counts['sub_queries_completed']}/{counts['sub_queries']}  "
        f"sources {counts['sources']}  findings {counts['findings']}  "
        f"tokens {status['tokens']['total']}"
    )


def _terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size((120, 20)).columns


def trust_file(args: argparse.Namespace) -> int:
    """Trust (or, with --revoke, stop trusting) a project file; --list shows the trusted ones."""
    store = TrustStore(Path.home())
    try:
        if args.list:
            print_json(store.entries())
            return 0
        path = Path(args.path or PROJECT_CONFIG).expanduser().resolve()
        if args.revoke:
            if not store.revoke(path):
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
        return fail(exc)
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
    if args.out is None:
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
    while True:
        page = service.events(args.research_id, cursor=cursor, limit=500)
        for event in page["events"]:
            data = json.dumps(event["data"], ensure_ascii=False)
            print(f"{event['seq']:>5} {event['at']} {event['kind']:<16} {data}")
        cursor = page["next_cursor"]
        if cursor is None:
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
    untrusted = settings.untrusted
    if untrusted is not None:
        checks["untrusted_config"] = {
            "file": str(untrusted.path),
            "reason": untrusted.reason,
            "ignored_keys": untrusted.ignored_keys,
            "fix": f"foundry-mcp trust {untrusted.path}",
        }
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
    print_json(checks)
    configured = all(not str(v).startswith("not usable") for v in checks.values())
    return 0 if configured and health["ok"] else 1
