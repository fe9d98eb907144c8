"""Command line: ``foundry-mcp`` serves MCP over stdio (``serve --http``: over streamable HTTP,
for a team); sub-commands use the same service.

In server mode nothing but protocol bytes is written to stdout; logs go to stderr. This module
parses the command line and runs a command, importing only what that command needs: the MCP SDK
to serve, the research code for a command that opens the service, and the command's own module
(the table is :data:`foundry_mcp.cli.arguments.COMMANDS`). ``--help`` and ``--version`` import
neither, nor even the configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from foundry_mcp.cli.arguments import COMMANDS, COMMANDS_WITHOUT_SERVICE, build_parser
from foundry_mcp.cli.display.output import fail
from foundry_mcp.cli.pipes import is_closed_pipe, leave_quietly
from foundry_mcp.errors import FoundryError
from foundry_mcp.logs import LogFormat, configure_logging

if TYPE_CHECKING:
    from foundry_mcp.config import Settings
    from foundry_mcp.research.service.research_service import ResearchService

# The commands that run a research here: their runtime warms the providers while it starts.
RESEARCH_COMMANDS = frozenset({"research", "resume", "revise", "bench"})
# Said once on stderr when the stdio server is started from a terminal: a person, not a client.
WAITING_FOR_A_CLIENT = """\
foundry-mcp is an MCP server: it now waits for an MCP client on stdin and stdout, not for you.
  Register it with your assistant:  claude mcp add foundry-mcp -- foundry-mcp
  Run a research here instead:      foundry-mcp research "your question"
  Every command:                    foundry-mcp --help
Press Ctrl-C to stop."""


def run() -> NoReturn:
    """The ``foundry-mcp`` console script (and ``python -m foundry_mcp``): :func:`main`, then
    the process ends at once.

    Everything is saved and closed when :func:`main` returns; what the interpreter would do
    next is free its whole heap object by object (the MCP SDK's models above all), about half
    a second after a command's output or a client's goodbye, which the user or the client
    would wait out for nothing.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reader gone: nothing left to say to it
            stream.flush()
    logging.shutdown()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (the process's own when None); returns the exit code."""
    try:
        code = _run_command(argv)
        sys.stdout.flush()  # a reader gone early is found here, not at exit
    except BaseException as exc:
        if is_closed_pipe(exc):
            return leave_quietly()
        raise
    return code


def _run_command(argv: list[str] | None) -> int:
    _drop_implicit_working_directory()
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command or "serve"
    if command == "serve" and getattr(args, "http", False):
        return _serve_http(args)
    if getattr(args, "host", None) or getattr(args, "port", None) is not None:
        parser.error("--host and --port apply to the HTTP server: add --http")
    if command == "serve":
        return _serve(getattr(args, "log_format", "text"))
    if command in COMMANDS_WITHOUT_SERVICE:
        run_alone: Callable[[argparse.Namespace], int]
        run_alone = _command_body(COMMANDS_WITHOUT_SERVICE[command])
        return run_alone(args)
    return _run_with_service(command, args)


def _command_body(where: str) -> Any:
    """The function a command table names (``"module:function"`` in ``foundry_mcp.cli``), its
    module imported now."""
    module, _, function = where.partition(":")
    return getattr(importlib.import_module(f"foundry_mcp.cli.{module}"), function)


def _run_with_service(command: str, args: argparse.Namespace) -> int:
    """Run ``command`` with a research service opened for it, and close the service after."""
    from foundry_mcp.config import load_settings

    as_json = bool(getattr(args, "json", False))
    try:
        settings = load_settings()
    except FoundryError as exc:
        return fail(exc, as_json=as_json)
    _configure_logging(settings.logging.level)
    # The research code is imported only here: serving answers `initialize` without it.
    from foundry_mcp.runtime import research_runtime

    handler: Callable[[ResearchService, argparse.Namespace], Awaitable[int]]
    handler = _command_body(COMMANDS[command])
    warm = command in RESEARCH_COMMANDS

    async def run() -> int:
        async with research_runtime(settings, warm=warm, serving=False) as service:
            try:
                return await handler(service, args)
            except FoundryError as exc:
                return fail(exc, as_json=as_json)

    try:
        return anyio.run(run)
    except FoundryError as exc:
        return fail(exc, as_json=as_json)
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
    from foundry_mcp.config import load_settings
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
    if sys.stdin.isatty():
        print(WAITING_FOR_A_CLIENT, file=sys.stderr, flush=True)
    return anyio.run(serve_stdio, lambda on_stopped: create_server(loader, on_stopped))


def _serve_http(args: argparse.Namespace) -> int:
    """The team server. Unlike stdio, a bad configuration stops it at once: it decides who
    may connect."""
    from foundry_mcp.config import load_settings

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


if __name__ == "__main__":
    sys.exit(main())
