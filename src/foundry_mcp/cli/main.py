"""Command line: ``foundry-mcp`` serves MCP over stdio (``serve --http``: over streamable HTTP,
for a team); sub-commands use the same service.

In server mode nothing but protocol bytes is written to stdout; logs go to stderr. This module
parses the command line and runs a command; the commands' bodies are in ``commands``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from foundry_mcp import __version__
from foundry_mcp.cli import migrate
from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import FoundryError
from foundry_mcp.logs import LOG_FORMATS, LogFormat, configure_logging

if TYPE_CHECKING:
    from foundry_mcp.research.service.research_service import ResearchService

# The commands that run a research here: their runtime warms the providers while it starts.
RESEARCH_COMMANDS = frozenset({"research", "resume", "bench"})


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``foundry-mcp`` console script."""
    _drop_implicit_working_directory()
    parser = _parser()
    args = parser.parse_args(argv)
    command = args.command or "serve"
    if command == "serve" and getattr(args, "http", False):
        return _serve_http(args)
    if getattr(args, "host", None) or getattr(args, "port", None) is not None:
        parser.error("--host and --port apply to the HTTP server: add --http")
    if command == "serve":
        return _serve(getattr(args, "log_format", "text"))
    # The research code is imported only here: serving answers `initialize` without it.
    from foundry_mcp.cli import commands
    from foundry_mcp.runtime import research_runtime

    if command == "trust":
        return commands.trust_file(args)
    if command == "migrate":  # two stores, not the research service
        return migrate.run_migrate(args)
    as_json = bool(getattr(args, "json", False))
    try:
        settings = load_settings()
    except FoundryError as exc:
        return commands.fail(exc, as_json=as_json)
    _configure_logging(settings.logging.level)
    handler: Callable[[ResearchService, argparse.Namespace], Awaitable[int]]
    if command == "bench":
        from foundry_mcp.cli.bench import run_bench

        handler = run_bench
    else:
        handler = getattr(commands, COMMANDS[command])
    warm = command in RESEARCH_COMMANDS

    async def run() -> int:
        async with research_runtime(settings, warm=warm, serving=False) as service:
            try:
                return await handler(service, args)
            except FoundryError as exc:
                return commands.fail(exc, as_json=as_json)

    try:
        return anyio.run(run)
    except FoundryError as exc:
        return commands.fail(exc, as_json=as_json)
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


def _serve(log_format: LogFormat) -> int:
    from foundry_mcp.server import create_server
    from foundry_mcp.server.stdio import serve_stdio

    settings: Settings | None = None
    with contextlib.suppress(FoundryError):
        settings = load_settings()

    def loader() -> Settings:
        # Read once here. With a bad configuration the server still starts: the session reads
        # the files again, meets the same error and reports it on every call.
        return settings if settings is not None else load_settings()

    _configure_logging(settings.logging.level if settings is not None else "WARNING", log_format)
    return anyio.run(serve_stdio, lambda on_stopped: create_server(loader, on_stopped))


def _serve_http(args: argparse.Namespace) -> int:
    """The team server. Unlike stdio, a bad configuration stops it at once: it decides who
    may connect."""
    from foundry_mcp.cli.commands import fail

    try:
        settings = load_settings()
    except FoundryError as exc:
        return fail(exc)
    _configure_logging(settings.logging.level, args.log_format)
    from foundry_mcp.server.team.http import serve_http

    host = args.host or settings.server.host
    port = settings.server.port if args.port is None else args.port
    try:
        return anyio.run(serve_http, settings, host, port)
    except FoundryError as exc:
        return fail(exc)
    except KeyboardInterrupt:  # uvicorn re-raises SIGINT once everything is saved
        return 130


def _configure_logging(level: str, log_format: LogFormat = "text") -> None:
    configure_logging(level, log_format)


# Each command and its function in ``commands`` (imported when a command runs); ``trust``
# runs without the research service, and ``bench`` is in its own module, ``foundry_mcp.cli.bench``.
COMMANDS: dict[str, str] = {
    "research": "run_research",
    "resume": "resume_research",
    "status": "show_status",
    "report": "print_report",
    "list": "list_researches",
    "events": "print_events",
    "cancel": "cancel_research",
    "restore": "restore_source",
    "delete": "delete_research",
    "export": "export_research",
    "watch": "watch_research",
    "doctor": "doctor",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="foundry-mcp",
        description="Deep research for coding assistants. With no command, serves MCP on stdio.",
    )
    parser.add_argument("--version", action="version", version=f"foundry-mcp {__version__}")
    commands = parser.add_subparsers(dest="command")
    # Every command that prints for people takes --json: one JSON document on stdout instead.
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument(
        "--json", action="store_true", help="print one JSON document on stdout instead"
    )
    serve = commands.add_parser(
        "serve", help="serve MCP over stdio (the default), or over HTTP with --http"
    )
    serve.add_argument(
        "--http",
        action="store_true",
        help="serve MCP over streamable HTTP at /mcp, for a team (see docs/team-server.md)",
    )
    serve.add_argument("--host", help="with --http: the address to listen on ([server] host)")
    serve.add_argument(
        "--port", type=_port, help="with --http: the port to listen on ([server] port, 8765)"
    )
    serve.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="log lines on stderr as text, or as one JSON object per line",
    )

    research = commands.add_parser(
        "research", parents=[as_json], help="run a research in the terminal"
    )
    research.add_argument("query", help="the research question")
    research.add_argument("--provider", help="LLM as provider[:model], e.g. anthropic")
    research.add_argument("--model", help="LLM model name")
    research.add_argument("--context", help="extra context for the research (system prompt)")
    research.add_argument("--max-iterations", type=int)
    research.add_argument("--max-sub-queries", type=int)
    research.add_argument("--max-sources", type=int, help="sources per sub-query")
    research.add_argument(
        "--reading-budget",
        type=int,
        help="tokens of page text a round reads, the passages worth most first; 0: whole pages",
    )
    research.add_argument(
        "--timeout", type=float, help="stop (status timed_out) after this many seconds"
    )
    research.add_argument(
        "--max-time",
        type=float,
        help="finish with a report within this many seconds (gathering stops early)",
    )
    _add_mode_and_effort(research, "the question is")
    research.add_argument(
        "--source-types",
        help="kinds of sources, comma-separated: web, academic, news, local (default: all)",
    )
    research.add_argument(
        "--prefer",
        help="sites to favour, comma-separated domains or https:// address prefixes",
    )

    bench = commands.add_parser(
        "bench",
        parents=[as_json],
        help="research every task of a JSONL file; answers in DeepResearch Bench's format",
    )
    bench.add_argument("tasks", nargs="?", help='JSONL file of {"id", "prompt"} lines')
    bench.add_argument("--sample", action="store_true", help="run the bundled sample tasks")
    bench.add_argument(
        "--out", required=True, help="answers file (JSONL; tasks already in it are skipped)"
    )
    bench.add_argument("--concurrency", type=int, default=2, help="researches at once (2)")
    bench.add_argument("--max-iterations", type=int)
    _add_mode_and_effort(bench, "each question is")

    resume = commands.add_parser(
        "resume", parents=[as_json], help="continue an unfinished research"
    )
    resume.add_argument("research_id")
    resume.add_argument("--max-iterations", type=int)

    for name, text in (
        ("status", "show a research's status"),
        ("events", "print a research's audit trail"),
        ("cancel", "cancel a research running in another foundry-mcp process"),
        ("delete", "delete a research"),
        ("watch", "follow a research another foundry-mcp process runs, until it ends"),
    ):
        commands.add_parser(name, parents=[as_json], help=text).add_argument("research_id")
    restore = commands.add_parser(
        "restore", parents=[as_json], help="bring an archived source back into a stopped research"
    )
    restore.add_argument("research_id")
    restore.add_argument("item_id", help="the source id, e.g. src-1a2b3c4d")
    report = commands.add_parser(
        "report", parents=[as_json], help="print a research's report (--json: summary, first page)"
    )
    report.add_argument("research_id")
    listing = commands.add_parser("list", parents=[as_json], help="list researches, newest first")
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--completed-only", action="store_true")
    listing.add_argument("--status", help="only these statuses, comma-separated")
    export = commands.add_parser(
        "export",
        parents=[as_json],
        help="export a research: the report, its state as JSON, or its sources",
    )
    export.add_argument("research_id")
    export.add_argument(
        "--format", choices=["markdown", "json", "bibtex", "ris"], default="markdown"
    )
    export.add_argument("--out", help="write to this file in the current directory (not stdout)")
    export.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    commands.add_parser(
        "doctor",
        parents=[as_json],
        help="check configuration, provider keys, and that each provider answers",
    )
    trust = commands.add_parser(
        "trust",
        parents=[as_json],
        help="let a project's foundry-mcp.toml set protected keys (base_url, hooks, paths...)",
    )
    trust.add_argument("path", nargs="?", help="the file to trust (default: ./foundry-mcp.toml)")
    trust.add_argument("--revoke", action="store_true", help="stop trusting the file")
    trust.add_argument("--list", action="store_true", help="show the trusted files")
    migrate.add_parser(commands, as_json)
    return parser


def _port(value: str) -> int:
    if not value.isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0 to 65535)")
    return int(value)


def _add_mode_and_effort(parser: argparse.ArgumentParser, researched: str) -> None:
    parser.add_argument(
        "--mode",
        choices=["auto", "simple", "hierarchical", "hypotheses"],
        help=f"how {researched} researched (default: [research] mode, auto)",
    )
    parser.add_argument(
        "--effort",
        choices=["quick", "standard", "deep"],
        help="how thorough: quick, standard (the configuration) or deep",
    )


if __name__ == "__main__":
    sys.exit(main())
