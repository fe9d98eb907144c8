"""Fake ``claude``, ``codex`` and ``gemini`` programs that speak each CLI's documented JSON.

:func:`write_cli_bins` writes executable scripts with those names into a directory (put it
first on ``PATH``); each runs :func:`main` of this module in a fresh Python process. A fake:

- accepts only the options foundry-mcp may pass, and refuses a prompt on its command line (or an
  unknown option) the way the real parser does: commander.js for ``claude``, clap for
  ``codex``, yargs for ``gemini``;
- answers with the repository's :class:`ResearchBrain` (system prompt from
  ``--system-prompt-file``, ``GEMINI_SYSTEM_MD`` or Codex's ``<instructions>`` block, user
  prompt from stdin), in the program's own output shape;
- writes one JSON record per call into the directory named by ``FAKE_CLI_LOG``: argv, stdin,
  pid and process group, its cwd's files, the system prompt and policy it read, a few
  environment facts (never the environment), start and end times, and a grandchild's pid;
- fails as scripted by ``FAKE_CLI_MODE``: ``not_logged_in``, ``usage_limit``, ``crash``,
  ``garbage``, ``hang`` (starts a grandchild, then sleeps), ``hang_hard`` (the same,
  ignoring SIGTERM) or ``leave_child`` (answers, leaving a grandchild that holds its output
  open); ``FAKE_CLI_DELAY`` sleeps before answering, ``FAKE_CLI_FENCE`` wraps the answer in a
  code fence.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

FAKES_DIR = Path(__file__).resolve().parent
LOG_ENV = "FAKE_CLI_LOG"
MODE_ENV = "FAKE_CLI_MODE"
DELAY_ENV = "FAKE_CLI_DELAY"
FENCE_ENV = "FAKE_CLI_FENCE"
PROGRAMS = ("claude", "codex", "gemini")
DEFAULT_MODELS = {"claude": "claude-sonnet-4-5-20250929", "gemini": "gemini-2.5-pro"}

_SHIM = """#!{python}
import sys
sys.path.insert(0, {fakes!r})
from cli_bins import main
sys.exit(main({program!r}))
"""

# Options each fake accepts: with a value, and flags.
_VALUED = {
    "claude": {"--output-format", "--tools", "--max-turns", "--system-prompt-file", "--model"},
    "codex": {"-c", "--config", "--sandbox", "-s", "--model", "-m", "--color"},
    "gemini": {
        "--output-format",
        "-o",
        "--approval-mode",
        "--extensions",
        "-e",
        "--allowed-mcp-server-names",
        "--policy",
        "--model",
        "-m",
    },
}
_FLAGS = {
    "claude": {"-p", "--print", "--strict-mcp-config", "--no-session-persistence"},
    "codex": {"exec", "--json", "--skip-git-repo-check"},
    "gemini": {"--skip-trust"},
}


def write_cli_bins(directory: Path, programs: tuple[str, ...] = PROGRAMS) -> Path:
    """Write the fake programs into ``directory``; return it (to put first on PATH)."""
    directory.mkdir(parents=True, exist_ok=True)
    for program in programs:
        path = directory / program
        path.write_text(_SHIM.format(python=sys.executable, fakes=str(FAKES_DIR), program=program))
        path.chmod(0o755)
    return directory


def read_calls(log_dir: Path) -> list[dict[str, Any]]:
    """The calls the fakes recorded, in the order they started."""
    calls = [json.loads(path.read_text()) for path in log_dir.glob("*.json")]
    return sorted(calls, key=lambda call: call["started"])


# --------------------------------------------------------------------------- the program


def main(program: str) -> int:
    argv = sys.argv[1:]
    if program == "claude" and os.environ.get("CLAUDECODE"):  # Claude Code >= 2.1.39
        print(
            "Error: Claude Code cannot be launched inside another Claude Code session.\n"
            "Nested sessions share runtime resources and will crash all active sessions.\n"
            "To bypass this check, unset the CLAUDECODE environment variable.",
            file=sys.stderr,
        )
        return 1
    options, positionals, unknown = _parse(program, argv)
    if unknown or _prompt_on_argv(program, positionals):
        return _refuse(program, unknown or positionals)
    stdin = sys.stdin.read()
    record: dict[str, Any] = {
        "program": program,
        "argv": argv,
        "options": options,
        "stdin": stdin,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "cwd": os.getcwd(),
        "cwd_files": sorted(os.listdir(os.getcwd())),
        "home_set": bool(os.environ.get("HOME")),
        "gemini_system_md": os.environ.get("GEMINI_SYSTEM_MD"),
        "gemini_trust_workspace": os.environ.get("GEMINI_CLI_TRUST_WORKSPACE"),
        "started": time.time(),
    }
    system, user = _prompts(program, options, stdin, record)
    mode = os.environ.get(MODE_ENV, "")
    if mode in ("hang", "hang_hard"):
        return _hang(record, ignore_term=mode == "hang_hard")
    if mode == "leave_child":
        record["grandchild_pid"] = _spawn_sleeper(ignore_term=False)
    _save(record)
    delay = float(os.environ.get(DELAY_ENV) or 0)
    if delay:
        time.sleep(delay)
    code = _respond(program, mode, options, system, user)
    record["ended"] = time.time()
    _save(record)
    return code


def _parse(program: str, argv: list[str]) -> tuple[dict[str, list[str]], list[str], list[str]]:
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    unknown: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in _VALUED[program] and index + 1 < len(argv):
            options.setdefault(arg, []).append(argv[index + 1])
            index += 2
            continue
        if arg in _FLAGS[program]:
            options.setdefault(arg, [])
        elif arg.startswith("-") and arg != "-":
            unknown.append(arg)
        else:
            positionals.append(arg)
        index += 1
    return options, positionals, unknown


def _prompt_on_argv(program: str, positionals: list[str]) -> bool:
    if program == "codex":
        return positionals not in ([], ["-"])  # `-`: the prompt is on stdin
    return bool(positionals)


def _refuse(program: str, offending: list[str]) -> int:
    """The real parser's usage error (the fakes treat a prompt argument as one)."""
    first = offending[0]
    if program == "claude":  # commander.js
        if first.startswith("-"):
            sys.stderr.write(f"error: unknown option '{first}'\n")
        else:
            sys.stderr.write(
                f"error: too many arguments. Expected 0 arguments but got {len(offending)}.\n"
            )
        return 1
    if program == "codex":  # clap
        sys.stderr.write(
            f"error: unexpected argument '{first}' found\n\n"
            "Usage: codex exec [OPTIONS] [PROMPT]\n\nFor more information, try '--help'.\n"
        )
        return 2
    sys.stderr.write(f"Unknown argument: {first.lstrip('-')}\n")  # yargs, strict
    return 1


def _prompts(
    program: str, options: dict[str, list[str]], stdin: str, record: dict[str, Any]
) -> tuple[str, str]:
    if program == "claude":
        path = (options.get("--system-prompt-file") or [""])[0]
        system = Path(path).read_text() if path else ""
        record["system"] = system
        return system, stdin
    if program == "gemini":
        path = os.environ.get("GEMINI_SYSTEM_MD", "")
        system = Path(path).read_text() if path else ""
        policy = (options.get("--policy") or [""])[0]
        record["system"] = system
        record["policy"] = Path(policy).read_text() if policy else None
        return system, stdin
    head, marker, user = stdin.partition("</instructions>")
    system = head.replace("<instructions>", "", 1).strip() if marker else ""
    record["system"] = system
    return system, (user.strip() if marker else stdin)


def _hang(record: dict[str, Any], *, ignore_term: bool) -> int:
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    record["grandchild_pid"] = _spawn_sleeper(ignore_term=ignore_term)
    _save(record)
    time.sleep(600)
    return 0


def _spawn_sleeper(*, ignore_term: bool) -> int:
    """A child that sleeps for ten minutes, holding the program's stdout and stderr open."""
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "time.sleep(600)\n"
    return subprocess.Popen([sys.executable, "-c", code]).pid


def _save(record: dict[str, Any]) -> None:
    log_dir = os.environ.get(LOG_ENV)
    if not log_dir:
        return
    path = Path(log_dir) / f"{record['program']}-{record['pid']}.json"
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(record))
    partial.replace(path)


def _respond(program: str, mode: str, options: dict[str, list[str]], system: str, user: str) -> int:
    if mode == "crash":
        sys.stderr.write("FATAL ERROR: Reached heap limit Allocation failed\n")
        return 134
    if mode == "garbage":
        sys.stdout.write("Thinking...\nHere is some text that is not JSON.\n")
        return 0
    model = (options.get("--model") or options.get("-m") or [DEFAULT_MODELS.get(program, "")])[0]
    if mode in ("not_logged_in", "usage_limit"):
        return _FAILURES[program](mode)
    sys.path.insert(0, str(FAKES_DIR))
    from brain import ResearchBrain  # the repository's fake LLM, imported as a plain module

    reply = ResearchBrain().reply(system, user)
    text = f"```json\n{reply.text}\n```" if os.environ.get(FENCE_ENV) else reply.text
    if program == "claude":
        _claude_result(text, model, reply.input_tokens, reply.output_tokens)
    elif program == "codex":
        _codex_events(text, reply.input_tokens, reply.output_tokens)
    else:
        _gemini_output(text, model, reply.input_tokens, reply.output_tokens)
    return 0


# --------------------------------------------------------------------------- output shapes


def _claude_result(
    text: str, model: str, input_tokens: int, output_tokens: int, **fields: Any
) -> None:
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
    }
    message = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 2300,
        "duration_api_ms": 2100,
        "num_turns": 1,
        "result": text,
        "stop_reason": "end_turn",
        "session_id": str(uuid.uuid4()),
        "total_cost_usd": 0.0123,
        "usage": usage,
        "modelUsage": {model: {"inputTokens": input_tokens, "outputTokens": output_tokens}}
        if output_tokens
        else {},
        "permission_denials": [],
        "uuid": str(uuid.uuid4()),
        **fields,
    }
    sys.stdout.write(json.dumps(message) + "\n")


def _claude_failure(mode: str) -> int:
    if mode == "not_logged_in":
        _claude_result("Not logged in · Please run /login", "", 0, 0, is_error=True)
    else:
        text = "You've hit your limit · resets 3pm (America/New_York)"
        _claude_result(text, "", 0, 0, is_error=True, api_error_status=429)
    return 1


def _codex_events(text: str, input_tokens: int, output_tokens: int) -> None:
    events: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": str(uuid.uuid4())},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**…**"}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": text}},
        {
            "type": "turn.completed",
            "usage": {
                "input_tokens": input_tokens,
                "cached_input_tokens": 0,
                "output_tokens": output_tokens,
            },
        },
    ]
    sys.stdout.write("".join(json.dumps(event) + "\n" for event in events))


def _codex_failure(mode: str) -> int:
    if mode == "not_logged_in":
        message = "exceeded retry limit, last status: 401 Unauthorized, request id: 9a57a2034f0c"
    else:
        message = (
            "You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), or "
            "try again in 2 days 3 hours 5 minutes."
        )
    events = [
        {"type": "thread.started", "thread_id": str(uuid.uuid4())},
        {"type": "turn.started"},
        {"type": "error", "message": message},
        {"type": "turn.failed", "error": {"message": message}},
    ]
    sys.stdout.write("".join(json.dumps(event) + "\n" for event in events))
    return 1


def _gemini_output(text: str, model: str, input_tokens: int, output_tokens: int) -> None:
    tokens = {
        "input": input_tokens,
        "prompt": input_tokens,
        "candidates": output_tokens,
        "total": input_tokens + output_tokens,
        "cached": 0,
        "thoughts": 0,
        "tool": 0,
    }
    stats = {
        "models": {
            model: {
                "api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 1800},
                "tokens": tokens,
            }
        },
        "tools": {"totalCalls": 0, "totalSuccess": 0, "totalFail": 0, "byName": {}},
        "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0},
    }
    output = {"session_id": str(uuid.uuid4()), "response": text, "stats": stats}
    sys.stdout.write(json.dumps(output, indent=2) + "\n")


def _gemini_failure(mode: str) -> int:
    if mode == "not_logged_in":
        error = {
            "type": "Error",
            "message": "Please set an Auth method in your ~/.gemini/settings.json or specify one "
            "of the following environment variables before running: GEMINI_API_KEY, "
            "GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA",
            "code": 41,
        }
        code = 41
    else:
        error = {
            "type": "TerminalQuotaError",
            "message": "You have exhausted your capacity on this model. Your quota will reset "
            "after 2h13m.",
            "code": 1,
        }
        code = 1
    sys.stderr.write(json.dumps({"session_id": str(uuid.uuid4()), "error": error}, indent=2))
    return code


_FAILURES = {"claude": _claude_failure, "codex": _codex_failure, "gemini": _gemini_failure}
