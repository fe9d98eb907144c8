"""A command imports what it runs, nothing more: ``list`` starts without the MCP SDK or a
provider's SDK, ``trust`` without the research code, ``--version`` without even the
configuration. Each start is a fresh process, as a user's (or a test's) ``foundry-mcp`` is.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

from foundry_mcp.cli.arguments import COMMANDS, COMMANDS_WITHOUT_SERVICE, build_parser

SDKS = ["mcp", "openai", "anthropic", "google.genai", "tavily", "ddgs", "tiktoken", "trafilatura"]
RESEARCH_CODE = ["foundry_mcp.runtime", "foundry_mcp.research.service", "foundry_mcp.providers"]


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


def test_listing_imports_no_sdk_even_with_providers_configured(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    assert imported_by(["list", "--json"], research_env, tmp_path, SDKS) == []


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
