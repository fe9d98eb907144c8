"""Command line: ``foundry-mcp`` serves MCP over stdio; sub-commands use the same service.

In server mode nothing but protocol bytes is written to stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from foundry_mcp import __version__
from foundry_mcp.config import PROJECT_CONFIG, Settings, load_settings, protected_keys_in
from foundry_mcp.errors import FoundryError
from foundry_mcp.providers.extract import extractor_problem
from foundry_mcp.research.service import ResearchService
from foundry_mcp.runtime import research_runtime
from foundry_mcp.trust import TrustStore

TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``foundry-mcp`` console script."""
    _drop_implicit_working_directory()
    args = _parser().parse_args(argv)
    command = args.command or "serve"
    if command == "serve":
        return _serve()
    if command == "trust":
        return _trust(args)
    try:
        settings = load_settings()
    except FoundryError as exc:
        return _fail(exc)
    _configure_logging(settings.logging.level)
    handler: Callable[[ResearchService, argparse.Namespace], Awaitable[int]] = COMMANDS[command]

    async def run() -> int:
        async with research_runtime(settings, warm=False) as service:
            try:
                return await handler(service, args)
            except FoundryError as exc:
                return _fail(exc)

    try:
        return anyio.run(run)
    except FoundryError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        return 130


def _drop_implicit_working_directory() -> None:
    """Take the working directory off the import path unless the user put it there.

    ``python -m foundry_mcp`` puts the working directory first on ``sys.path``; in a cloned
    repository that would let a file such as ``openai.py`` or a hooks module named by the
    repository shadow what the server imports. A folder named in ``PYTHONPATH`` stays.
    """
    if sys.flags.safe_path or not sys.path:
        return
    cwd = Path.cwd().resolve()
    explicit = {
        Path(entry).resolve()
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if entry
    }
    first = sys.path[0]
    if first in ("", ".") or (Path(first).resolve() == cwd and cwd not in explicit):
        del sys.path[0]


def _serve() -> int:
    from foundry_mcp.server import create_server

    level = "WARNING"
    # With a bad configuration the server still starts, and reports the error on every call.
    with contextlib.suppress(FoundryError):
        level = load_settings().logging.level
    _configure_logging(level)
    create_server().run()
    return 0


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def _fail(exc: FoundryError) -> int:
    print(f"error: {exc.message}", file=sys.stderr)
    print(f"  fix: {exc.remediation}", file=sys.stderr)
    return 2


def _print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


# ---------------------------------------------------------------------- commands


async def _research(service: ResearchService, args: argparse.Namespace) -> int:
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
        **limits,
    )
    return await _follow(service, started["research_id"])


async def _resume(service: ResearchService, args: argparse.Namespace) -> int:
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


def _trust(args: argparse.Namespace) -> int:
    """Trust (or, with --revoke, stop trusting) a project file; --list shows the trusted ones."""
    store = TrustStore(Path.home())
    try:
        if args.list:
            _print_json(store.entries())
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
        return _fail(exc)
    print(f"trusted {path} ({digest[:19]}...)", file=sys.stderr)
    if protected:
        print("These keys of it now apply:", file=sys.stderr)
        for key in protected:
            print(f"  {key}", file=sys.stderr)
    print("If the file changes, it must be trusted again.", file=sys.stderr)
    return 0


async def _status(service: ResearchService, args: argparse.Namespace) -> int:
    _print_json(await service.status(args.research_id))
    return 0


async def _report(service: ResearchService, args: argparse.Namespace) -> int:
    if args.json:
        payload, warnings = service.report(args.research_id)
        _print_json({**payload, "warnings": warnings})
    else:
        print(service.full_report(args.research_id))
    return 0


async def _list(service: ResearchService, args: argparse.Namespace) -> int:
    _print_json(
        service.list(limit=args.limit, completed_only=args.completed_only, status=args.status)
    )
    return 0


async def _events(service: ResearchService, args: argparse.Namespace) -> int:
    cursor: str | None = None
    while True:
        page = service.events(args.research_id, cursor=cursor, limit=500)
        for event in page["events"]:
            data = json.dumps(event["data"], ensure_ascii=False)
            print(f"{event['seq']:>5} {event['at']} {event['kind']:<16} {data}")
        cursor = page["next_cursor"]
        if cursor is None:
            return 0


async def _restore(service: ResearchService, args: argparse.Namespace) -> int:
    _print_json(service.restore_content(args.research_id, args.item_id))
    return 0


async def _cancel(service: ResearchService, args: argparse.Namespace) -> int:
    _print_json(await service.cancel(args.research_id))
    return 0


async def _delete(service: ResearchService, args: argparse.Namespace) -> int:
    _print_json(await service.delete(args.research_id))
    return 0


async def _doctor(service: ResearchService, args: argparse.Namespace) -> int:
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
        usable, warnings = service.providers.usable_search_providers(
            settings.research.deep_research_providers
        )
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
    checks["page_extraction"] = "ok: trafilatura" if extraction is None else f"degraded: {extraction}"
    if extraction is not None:
        checks["warnings"].append(extraction)
    _print_json(checks)
    configured = all(not str(v).startswith("not usable") for v in checks.values())
    return 0 if configured and health["ok"] else 1


COMMANDS: dict[str, Callable[[ResearchService, argparse.Namespace], Awaitable[int]]] = {
    "research": _research,
    "resume": _resume,
    "status": _status,
    "report": _report,
    "list": _list,
    "events": _events,
    "cancel": _cancel,
    "restore": _restore,
    "delete": _delete,
    "doctor": _doctor,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="foundry-mcp",
        description="Deep research for coding assistants. With no command, serves MCP on stdio.",
    )
    parser.add_argument("--version", action="version", version=f"foundry-mcp {__version__}")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="serve MCP over stdio (the default)")

    research = commands.add_parser("research", help="run a research in the terminal")
    research.add_argument("query", help="the research question")
    research.add_argument("--provider", help="LLM as provider[:model], e.g. anthropic")
    research.add_argument("--model", help="LLM model name")
    research.add_argument("--context", help="extra context for the research (system prompt)")
    research.add_argument("--max-iterations", type=int)
    research.add_argument("--max-sub-queries", type=int)
    research.add_argument("--max-sources", type=int, help="sources per sub-query")
    research.add_argument("--timeout", type=float, help="overall timeout in seconds")
    research.add_argument(
        "--mode",
        choices=["auto", "simple", "hierarchical", "hypotheses"],
        help="how the question is researched (default: [research] mode, auto)",
    )

    resume = commands.add_parser("resume", help="continue an unfinished research")
    resume.add_argument("research_id")
    resume.add_argument("--max-iterations", type=int)

    for name, text in (
        ("status", "show a research's status"),
        ("events", "print a research's audit trail"),
        ("cancel", "cancel a research running in another foundry-mcp process"),
        ("delete", "delete a research"),
    ):
        commands.add_parser(name, help=text).add_argument("research_id")
    restore = commands.add_parser(
        "restore", help="bring an archived source back into a stopped research"
    )
    restore.add_argument("research_id")
    restore.add_argument("item_id", help="the source id, e.g. src-1a2b3c4d")
    report = commands.add_parser("report", help="print a research's report")
    report.add_argument("research_id")
    report.add_argument("--json", action="store_true", help="summary, first page and metadata")
    listing = commands.add_parser("list", help="list researches, newest first")
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--completed-only", action="store_true")
    listing.add_argument("--status", help="only these statuses, comma-separated")
    commands.add_parser(
        "doctor", help="check configuration, provider keys, and that each provider answers"
    )
    trust = commands.add_parser(
        "trust",
        help="let a project's foundry-mcp.toml set protected keys (base_url, hooks, paths...)",
    )
    trust.add_argument("path", nargs="?", help="the file to trust (default: ./foundry-mcp.toml)")
    trust.add_argument("--revoke", action="store_true", help="stop trusting the file")
    trust.add_argument("--list", action="store_true", help="show the trusted files")
    return parser


if __name__ == "__main__":
    sys.exit(main())
