"""A command imports what it runs, nothing more: ``list`` starts without the MCP SDK or a
provider's SDK, a command that reads research without the research engine, ``trust`` without
the research code, ``--version`` without even the configuration; the server answers its
handshake without the research code. Each start is a fresh process, as a user's (or a test's)
``foundry-mcp`` is.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from foundry_mcp.cli.arguments import COMMANDS, COMMANDS_WITHOUT_SERVICE, build_parser

SDKS = ["mcp", "openai", "anthropic", "google.genai", "tavily", "ddgs", "tiktoken", "trafilatura"]
RESEARCH_CODE = ["foundry_mcp.runtime", "foundry_mcp.research.service", "foundry_mcp.providers"]
# What running a research needs and reading one does not: the modes and their agents, the
# supervisor, a revision's run, the agents' outputs, the export models, the HTTP client, the
# JSON repairer; and the terminal's drawing, which JSON output does not need.
ENGINE = [
    "foundry_mcp.research.modes",
    "foundry_mcp.research.workflow.supervisor",
    "foundry_mcp.research.revision.run",
    "foundry_mcp.research.models.handoffs",
    "foundry_mcp.research.export.document",
    "httpx",
    "json_repair",
    "rich",
]


def imported_by(argv: list[str], env: dict[str, str], cwd: Path, watched: list[str]) -> list[str]:
    """Which of ``watched`` a fresh process running ``foundry-mcp argv`` has imported."""
    script = (
        "import contextlib, io, json, sys\n"
        "from foundry_mcp.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})\n"
        f"print(json.dumps([name for name in {watched!r} if name in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
        check=True,
    )
    found: list[str] = json.loads(done.stdout)
    return found


def imported_after(setup: str, watched: list[str]) -> list[str]:
    """Which of ``watched`` a fresh Python has imported once it ran ``setup``."""
    script = f"import json, sys\n{setup}\nprint(json.dumps([m for m in {watched!r} if m in sys.modules]))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    found: list[str] = json.loads(done.stdout)
    return found


def test_listing_imports_no_sdk_even_with_providers_configured(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    assert imported_by(["list", "--json"], research_env, tmp_path, SDKS) == []


@pytest.mark.parametrize(
    "argv",
    [["list", "--json"], ["status", "deepres-000000000000", "--json"]],
    ids=["list", "status"],
)
def test_reading_research_imports_no_research_engine(
    argv: list[str], research_env: dict[str, str], tmp_path: Path
) -> None:
    assert imported_by(argv, research_env, tmp_path, ENGINE + SDKS) == []


def test_the_server_answers_its_handshake_without_the_research_code() -> None:
    # What serving imports before a client's first call: the service (runtime.py), the models
    # every answer is checked against and the research engine come with the service, opened
    # beside the handshake (server.host).
    service = ["foundry_mcp.runtime", "foundry_mcp.research.service.research_service"]
    stored = ["foundry_mcp.research.store", "foundry_mcp.research.models"]
    watched = [*service, *stored, "foundry_mcp.server.results.data", *ENGINE, *SDKS[1:]]
    setup = "from foundry_mcp.server.app import create_server\nfrom foundry_mcp.server.stdio import serve_stdio"
    assert imported_after(setup, watched) == []


def test_trust_imports_no_research_code(research_env: dict[str, str], tmp_path: Path) -> None:
    assert (
        imported_by(["trust", "--list", "--json"], research_env, tmp_path, SDKS + RESEARCH_CODE)
        == []
    )


def test_version_imports_not_even_the_configuration(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    watched = ["foundry_mcp.config", "pydantic", *SDKS, *RESEARCH_CODE]
    assert imported_by(["--version"], research_env, tmp_path, watched) == []


def body_of(where: str) -> object:
    module, _, function = where.partition(":")
    return getattr(importlib.import_module(f"foundry_mcp.cli.{module}"), function)


def test_every_command_has_one_body_and_every_body_exists() -> None:
    parser = build_parser()
    (subcommands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    tables = [*COMMANDS, *COMMANDS_WITHOUT_SERVICE]
    assert len(tables) == len(set(tables))  # no command in both tables
    assert set(subcommands.choices) == {"serve", *tables}
    # main awaits a body that takes the service, and calls one that does not.
    assert all(inspect.iscoroutinefunction(body_of(where)) for where in COMMANDS.values())
    assert not any(
        inspect.iscoroutinefunction(body_of(where)) or not callable(body_of(where))
        for where in COMMANDS_WITHOUT_SERVICE.values()
    )


def test_the_warm_up_imports_what_a_first_run_imports() -> None:
    """``runtime.RESEARCH_ENGINE`` (what a server's warm-up imports off the event loop) holds
    every module the runner's run imports when it starts, so the first research of a server
    imports nothing on the loop."""
    import ast

    from foundry_mcp.research.runs import runner

    tree = ast.parse(inspect.getsource(runner.ResearchRunner._run).strip().replace("\n    ", "\n"))
    wanted = sorted(
        {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    )
    assert wanted, "the runner's run imports the engine when it starts"
    setup = "from foundry_mcp.runtime import _import_engine\n_import_engine()"
    assert imported_after(setup, wanted) == wanted
