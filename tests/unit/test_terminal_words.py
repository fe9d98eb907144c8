"""Every message the terminal can show is said in the terminal's words: commands and flags, never
a tool call (``action='deep-research-status'``) or a tool parameter (``format='json'``).

The messages are written once, for the MCP tool, and the command line says them through
``for_the_terminal``. This test walks every string the service, the providers, the store and the
configuration can produce (the MCP server's own package aside), and checks that each one naming
an action or a parameter of the tool comes out of ``for_the_terminal`` without it. A new message
the converter cannot say for the terminal fails here.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

import pytest

from foundry_mcp.cli.display.output import in_terminal_words
from foundry_mcp.cli.wording import for_the_terminal
from foundry_mcp.server.arguments import ACTION_PARAMS, ResearchArguments

SOURCE = Path(__file__).resolve().parents[2] / "src" / "foundry_mcp"
# Said only to MCP clients (the terminal has its own words for these), or only to a model.
NOT_SHOWN_ON_A_TERMINAL = (
    "server",
    "cli/wording.py",
    "research/prompts",
    "research/service/asking/clarifier_prompts.py",
)
SAMPLE_ID = "deepres-0123456789ab"
CACHE_PREFIX = "foundry-mcp-terminal-words-"
SQL = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER")

PARAMETERS = sorted(set(ResearchArguments.model_fields) - {"action"})
ACTIONS = sorted(ACTION_PARAMS, key=len, reverse=True)
TOOL_SPEAK = re.compile(
    r"\baction=['\"]"
    r"|(?<![\w.-])(?:" + "|".join(PARAMETERS) + r")=(?=['\"\[\w])"
    r"|(?<![\w/-])(?:" + "|".join(re.escape(a) for a in ACTIONS if a != "health") + r")\b(?!-)"
)


def _docstring_ids(nodes: list[ast.AST]) -> set[int]:
    ids = set()
    for node in nodes:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _rendered(node: ast.JoinedStr) -> str:
    """An f-string with each placeholder filled by a sample: a research id where the name
    says so, else a word."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            source = ast.unparse(value.value)
            sample = SAMPLE_ID if source.endswith(("research_id", "rid", ".id")) else "VALUE"
            parts.append(repr(sample) if value.conversion == ord("r") else sample)
    return "".join(parts)


def _sources() -> dict[str, str]:
    """The text of each module whose strings the terminal can show, by its relative path."""
    return {
        path.relative_to(SOURCE).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(SOURCE.rglob("*.py"))
        if not path.relative_to(SOURCE).as_posix().startswith(NOT_SHOWN_ON_A_TERMINAL)
    }


def messages() -> list[tuple[str, str]]:
    """:func:`messages_in` the sources, read from a file in the temporary folder when these
    sources (and this module) were walked before.

    Walking every module's syntax tree is most of the cost of collecting this module (about a
    second), and every pytest-xdist worker collects it: the first worker walks and writes the
    file while the others wait for its lock, then read it.
    """
    sources = _sources()
    # What the walk depends on: the sources, this module, and the tool's actions and
    # parameters (TOOL_SPEAK is built from the server's, outside the sources walked).
    digest = hashlib.sha256(Path(__file__).read_bytes() + TOOL_SPEAK.pattern.encode())
    for relative, text in sources.items():
        digest.update(f"{relative}\0{text}\0".encode())
    folder = Path(tempfile.gettempdir())
    cache = folder / f"{CACHE_PREFIX}{digest.hexdigest()[:32]}"
    with open(cache.with_suffix(".lock"), "w") as lock:
        if sys.platform != "win32":
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return [(str(where), str(text)) for where, text in json.loads(cache.read_text())]
        except (OSError, ValueError, TypeError):
            found = messages_in(sources)
            cache.write_text(json.dumps(found))
    for earlier in folder.glob(f"{CACHE_PREFIX}*"):  # walks of sources since changed
        if earlier.stem != cache.name:
            with contextlib.suppress(OSError):
                earlier.unlink()
    return found


def messages_in(sources: dict[str, str]) -> list[tuple[str, str]]:
    """(where, text) of every string literal naming a tool action or parameter."""
    found = []
    for relative, source in sources.items():
        # One walk of the tree, read three times.
        nodes = list(ast.walk(ast.parse(source)))
        inside_fstrings = {
            id(part) for node in nodes if isinstance(node, ast.JoinedStr) for part in node.values
        }
        not_messages = _docstring_ids(nodes) | inside_fstrings
        for node in nodes:
            if isinstance(node, ast.JoinedStr):
                text = _rendered(node)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in not_messages
            ):
                text = node.value
            else:
                continue
            if text.lstrip().startswith(SQL):
                continue
            if TOOL_SPEAK.search(text):
                found.append((f"{relative}:{node.lineno}", text))
    return found


MESSAGES = messages()


def test_the_walk_finds_the_messages_it_is_about() -> None:
    # The walk is only worth something if it reaches the service's hints and the errors' fixes.
    places = {where.split(":")[0] for where, _ in MESSAGES}
    assert {
        "errors.py",
        "research/service/payloads/status.py",
        "research/service/writes.py",
    } <= places
    assert len(MESSAGES) >= 20


@pytest.mark.parametrize(("where", "text"), MESSAGES, ids=[w for w, _ in MESSAGES])
def test_each_message_is_said_in_terminal_words(where: str, text: str) -> None:
    said = for_the_terminal(text, SAMPLE_ID)
    assert not TOOL_SPEAK.search(said), f"{where}: {said!r}"


def test_documents_are_said_in_terminal_words_and_data_is_left_alone() -> None:
    status = {
        "research_id": SAMPLE_ID,
        "query": "Why does action='x' appear in my logs?",  # the user's words: untouched
        "next_action": f"Resume it: action='deep-research-resume', research_id='{SAMPLE_ID}'.",
        "warnings": ["Or export format='json' for the state."],
        "providers": [{"name": "a", "fix": "Call action='health' again."}],
    }
    said = in_terminal_words(status, SAMPLE_ID)
    assert said["query"] == status["query"]
    assert said["next_action"] == f"Resume it: `foundry-mcp resume {SAMPLE_ID}`."
    assert said["warnings"] == ["Or export --format json for the state."]
    assert said["providers"][0]["fix"] == "Run `foundry-mcp doctor` again."
