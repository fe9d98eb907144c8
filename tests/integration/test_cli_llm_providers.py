"""The assistants' programs as LLM providers, against fake ``claude``, ``codex`` and ``gemini``.

The fakes (``tests/fakes/cli_bins.py``) are real executables on ``PATH`` that speak each
program's documented JSON, refuse a prompt on their command line, and record every call. The
adapters must send prompts through stdin and files only, switch the programs' tools and MCP
servers off, read answers and token usage from the JSON, turn each failure into the resilience
policy's kind with a fix, bound how many programs run at once, and leave no process behind
when a call times out or is cancelled.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from foundry_mcp.config import load_settings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.base import LLMRequest
from foundry_mcp.providers.llm.programs import runner as cli_runner
from foundry_mcp.providers.llm.programs.adapters import CLI_ADAPTERS
from foundry_mcp.providers.llm.programs.base import CLICall, CLIProvider
from foundry_mcp.providers.llm.programs.claude import ClaudeCLI
from foundry_mcp.providers.registry import ProviderRegistry
from tests.fakes.cli_bins import DELAY_ENV, FENCE_ENV, LOG_ENV, MODE_ENV, read_calls, write_cli_bins

pytestmark = pytest.mark.anyio

KINDS = sorted(CLI_ADAPTERS)
PROGRAM = {"claude-cli": "claude", "codex-cli": "codex", "gemini-cli": "gemini"}
SYSTEM = "You are the research planner of a deep research system. SYSTEM-MARKER-7f3a"
USER = "Research question: How do heat pumps perform in cold climates? USER-MARKER-91c2"


@pytest.fixture
def calls_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fakes first on PATH; the directory their call records go to."""
    bin_dir = write_cli_bins(tmp_path / "bin")
    log_dir = tmp_path / "calls"
    log_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv(LOG_ENV, str(log_dir))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))  # never the user's own
    for variable in (MODE_ENV, DELAY_ENV, FENCE_ENV):
        monkeypatch.delenv(variable, raising=False)
    yield log_dir


def _adapter(kind: str, timeout: float = 30.0, **options: Any) -> CLIProvider:
    return CLI_ADAPTERS[kind](kind, None, None, timeout, **options)


def _request(model: str = "default", json_mode: bool = True) -> LLMRequest:
    return LLMRequest(system=SYSTEM, user=USER, model=model, json_mode=json_mode)


async def _error(kind: str, **options: Any) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        await _adapter(kind, **options).complete(_request())
    return raised.value


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _gone(*pids: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --------------------------------------------------------------------------- what is sent


@pytest.mark.parametrize("kind", KINDS)
async def test_prompts_arrive_on_stdin_and_never_on_the_command_line(
    kind: str, calls_dir: Path
) -> None:
    await _adapter(kind).complete(_request())
    (call,) = read_calls(calls_dir)
    assert call["program"] == PROGRAM[kind]
    assert not any("MARKER" in arg for arg in call["argv"])
    assert USER in call["stdin"]
    assert "one JSON object" in call["stdin"]  # json_mode asks in words
    assert call["system"] == SYSTEM  # from its file, GEMINI_SYSTEM_MD or <instructions>
    assert call["home_set"]  # the environment is passed through: the login lives in HOME


async def test_each_call_runs_in_a_private_empty_directory_removed_afterwards(
    calls_dir: Path,
) -> None:
    for kind in KINDS:
        await _adapter(kind).complete(_request())
    calls = {call["program"]: call for call in read_calls(calls_dir)}
    assert calls["claude"]["cwd_files"] == ["system.md"]
    assert calls["codex"]["cwd_files"] == []
    assert calls["gemini"]["cwd_files"] == ["no-tools.toml", "system.md"]
    for call in calls.values():
        assert "foundry-mcp-cli-" in call["cwd"] and not await anyio.Path(call["cwd"]).exists()


async def test_claude_gets_no_tools_no_mcp_servers_and_one_turn(calls_dir: Path) -> None:
    await _adapter("claude-cli").complete(_request())
    argv = read_calls(calls_dir)[0]["argv"]
    assert argv[:3] == ["-p", "--output-format", "json"]
    assert argv[argv.index("--tools") + 1] == ""
    assert "--strict-mcp-config" in argv and "--mcp-config" not in argv  # no server at all
    assert argv[argv.index("--max-turns") + 1] == "1"
    assert "--no-session-persistence" in argv
    assert argv[argv.index("--system-prompt-file") + 1].endswith("/system.md")


async def test_codex_runs_read_only_without_shell_search_or_the_users_mcp_servers(
    calls_dir: Path, tmp_path: Path
) -> None:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        '[mcp_servers.foundry-mcp]\ncommand = "foundry-mcp"\n\n'
        '[mcp_servers.docs]\nurl = "https://docs.example.org/mcp"\n'
    )
    await _adapter("codex-cli").complete(_request())
    argv = read_calls(calls_dir)[0]["argv"]
    overrides = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"]
    assert "features.shell_tool=false" in overrides
    assert 'web_search="disabled"' in overrides
    assert "mcp_servers.foundry-mcp.enabled=false" in overrides
    assert "mcp_servers.docs.enabled=false" in overrides
    exec_args = argv[argv.index("exec") :]
    assert exec_args[exec_args.index("--sandbox") + 1] == "read-only"
    assert {"--json", "--skip-git-repo-check"} <= set(exec_args)
    assert exec_args[-1] == "-"  # the prompt comes from stdin


async def test_gemini_denies_every_tool_and_starts_no_mcp_server_or_extension(
    calls_dir: Path,
) -> None:
    await _adapter("gemini-cli").complete(_request())
    call = read_calls(calls_dir)[0]
    argv = call["argv"]
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--approval-mode") + 1] == "default"
    assert argv[argv.index("--extensions") + 1] == "none"
    assert argv[argv.index("--allowed-mcp-server-names") + 1] == "foundry-mcp-none"
    assert 'toolName = "*"' in call["policy"] and 'decision = "deny"' in call["policy"]
    assert call["gemini_system_md"].endswith("/system.md")
    assert call["gemini_trust_workspace"] == "true"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_model_is_passed_only_when_one_is_named(kind: str, calls_dir: Path) -> None:
    await _adapter(kind).complete(_request(model="default"))
    await _adapter(kind).complete(_request(model="fast-model-1"))
    default, named = read_calls(calls_dir)
    assert "--model" not in default["argv"]
    assert named["argv"][named["argv"].index("--model") + 1] == "fast-model-1"


# --------------------------------------------------------------------------- what is read


@pytest.mark.parametrize("kind", KINDS)
async def test_the_answer_and_token_usage_come_from_the_json(kind: str, calls_dir: Path) -> None:
    response = await _adapter(kind).complete(_request())
    assert response.provider == kind
    assert response.text.lstrip().startswith("{") and '"research_brief"' in response.text
    call = read_calls(calls_dir)[0]
    # The fake brain counts four characters a token (an estimate would count three).
    user = call["stdin"].partition("</instructions>")[2].strip() or call["stdin"]
    assert response.input_tokens == len(call["system"] + user) // 4
    assert response.output_tokens == len(response.text) // 4
    reported = {"claude-cli": "claude-sonnet-4-5-20250929", "gemini-cli": "gemini-2.5-pro"}
    assert response.model == reported.get(kind, "default")  # Codex's events name no model
    assert response.latency_s > 0


@pytest.mark.parametrize("kind", KINDS)
async def test_a_code_fence_around_a_json_answer_is_removed(
    kind: str, calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FENCE_ENV, "1")
    fenced = await _adapter(kind).complete(_request(json_mode=True))
    assert fenced.text.startswith("{") and fenced.text.endswith("}")
    plain = await _adapter(kind).complete(_request(json_mode=False))
    assert plain.text.startswith("```json")


# --------------------------------------------------------------------------- failures

LOGIN = {
    "claude-cli": "Run `claude` once in a terminal and log in",
    "codex-cli": "Run `codex login`",
    "gemini-cli": "Run `gemini` once in a terminal and sign in",
}


@pytest.mark.parametrize("kind", KINDS)
async def test_not_logged_in_is_an_auth_error_that_says_how_to_log_in(
    kind: str, calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_ENV, "not_logged_in")
    error = await _error(kind)
    assert error.kind == "auth" and not error.retryable
    assert LOGIN[kind] in error.remediation
    assert "no API key" in error.remediation


@pytest.mark.parametrize(
    ("kind", "wait"),
    [("claude-cli", None), ("codex-cli", 2 * 86400 + 3 * 3600 + 5 * 60), ("gemini-cli", None)],
)
async def test_a_usage_limit_is_a_rate_limit_left_to_a_fallback(
    kind: str, wait: float | None, calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_ENV, "usage_limit")
    error = await _error(kind)
    assert error.kind == "rate_limit"
    assert not error.retryable  # hours away: a fallback provider takes over instead
    assert error.retry_after == wait
    assert "usage limit is reached" in error.remediation and "fallback" in error.remediation
    if kind == "claude-cli":
        assert error.status_code == 429  # its api_error_status


@pytest.mark.parametrize("kind", KINDS)
async def test_a_crash_is_transient_and_unreadable_output_too(
    kind: str, calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_ENV, "crash")
    crashed = await _error(kind)
    assert crashed.kind == "transient" and crashed.retryable
    assert "heap limit" in crashed.message and "status 134" in crashed.message
    monkeypatch.setenv(MODE_ENV, "garbage")
    garbled = await _error(kind)
    assert garbled.kind == "transient" and "cannot read" in garbled.message


@pytest.mark.parametrize("kind", KINDS)
async def test_a_missing_program_says_how_to_install_it_or_where_to_point(
    kind: str, calls_dir: Path
) -> None:
    error = await _error(kind, command="/nowhere/bin/" + PROGRAM[kind])
    assert error.kind == "not_found"
    assert "npm install -g" in error.remediation
    assert f'[providers.{kind}] command = "/path/to/{PROGRAM[kind]}"' in error.remediation
    assert f"FOUNDRY_MCP_{PROGRAM[kind].upper()}_CLI" in error.remediation


async def test_an_option_the_program_does_not_know_asks_to_update_it(calls_dir: Path) -> None:
    class OutdatedClaude(ClaudeCLI):
        def call_for(self, request: LLMRequest, work_dir: Path) -> CLICall:
            call = super().call_for(request, work_dir)
            return CLICall([*call.args, "--option-of-the-future"], call.stdin, call.files)

    with pytest.raises(ProviderError) as raised:
        await OutdatedClaude("claude-cli", None, None, 30.0).complete(_request())
    assert raised.value.kind == "bad_request"
    assert "unknown option '--option-of-the-future'" in raised.value.message
    assert "Update Claude Code" in raised.value.remediation


@pytest.mark.parametrize("kind", KINDS)
def test_the_fakes_refuse_a_prompt_on_their_command_line(kind: str, calls_dir: Path) -> None:
    program = PROGRAM[kind]
    args = ["exec", "--json", "What is WAL?"] if program == "codex" else ["What is WAL?"]
    done = subprocess.run([program, *args], input="", capture_output=True, text=True)
    assert done.returncode != 0
    assert {"claude": "too many arguments", "codex": "unexpected argument", "gemini": "Unknown"}[
        program
    ] in done.stderr
    assert read_calls(calls_dir) == []


async def test_the_policy_retries_a_crash_but_not_a_missing_login(
    calls_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = load_settings(env={}, cwd=tmp_path, home=tmp_path)
    registry = ProviderRegistry(settings)
    llm = registry.llm("claude-cli")
    monkeypatch.setenv(MODE_ENV, "not_logged_in")
    with pytest.raises(ProviderError):
        await llm.complete(_request())
    assert len(read_calls(calls_dir)) == 1
    monkeypatch.setenv(MODE_ENV, "crash")
    with pytest.raises(ProviderError):
        await llm.complete(_request())
    assert len(read_calls(calls_dir)) == 1 + 1 + settings.provider("claude-cli").max_retries


# --------------------------------------------------------------------------- processes


def _wait_for_record(calls_dir: Path, key: str, within: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        calls = read_calls(calls_dir)
        if calls and key in calls[0]:
            return calls[0]
        time.sleep(0.02)
    raise AssertionError(f"the fake recorded no {key}")


@pytest.mark.parametrize("kind", KINDS)
async def test_a_timeout_kills_the_program_and_its_children(
    kind: str, calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_ENV, "hang_hard")  # ignores SIGTERM: SIGKILL must follow
    started = time.monotonic()
    error = await _error(kind, timeout=1.5)
    assert error.kind == "transient" and error.retryable and "1.5 s" in error.message
    assert time.monotonic() - started < 10
    call = _wait_for_record(calls_dir, "grandchild_pid")
    assert call["pgid"] == call["pid"]  # its own process group
    assert _gone(call["pid"], call["grandchild_pid"])


@pytest.mark.parametrize("kind", KINDS)
async def test_a_cancelled_call_leaves_no_process_behind(
    kind: str, calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_ENV, "hang")
    adapter = _adapter(kind, timeout=60.0)
    async with anyio.create_task_group() as group:
        group.start_soon(adapter.complete, _request())
        call = await anyio.to_thread.run_sync(_wait_for_record, calls_dir, "grandchild_pid")
        assert _alive(call["pid"]) and _alive(call["grandchild_pid"])
        group.cancel_scope.cancel()
    assert _gone(call["pid"], call["grandchild_pid"])


async def test_children_left_holding_the_output_do_not_delay_the_answer(
    calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_ENV, "leave_child")
    started = time.monotonic()
    response = await _adapter("claude-cli").complete(_request())
    assert '"research_brief"' in response.text
    assert time.monotonic() - started < 10  # a short grace, not the child's ten minutes
    call = read_calls(calls_dir)[0]
    assert _gone(call["grandchild_pid"])


async def test_output_beyond_the_cap_stops_the_program(
    calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_runner, "STDOUT_CAP_BYTES", 100)
    error = await _error("gemini-cli")
    assert error.kind == "transient" and "cannot read" in error.message
    assert _gone(read_calls(calls_dir)[0]["pid"])


async def test_at_most_two_programs_run_at_once_unless_configured(
    calls_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DELAY_ENV, "0.4")

    async def burst(adapter: CLIProvider, calls: int) -> int:
        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(adapter.complete, _request())
        spans = [(call["started"], call["ended"]) for call in _take_calls(calls_dir)]
        return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)

    assert await burst(_adapter("gemini-cli"), 5) == 2
    assert await burst(_adapter("gemini-cli", max_in_flight=3), 6) == 3


def _take_calls(calls_dir: Path) -> list[dict[str, Any]]:
    """The calls recorded so far, forgotten for the next burst."""
    calls = read_calls(calls_dir)
    for path in calls_dir.glob("*.json"):
        path.unlink()
    return calls


async def test_a_cancelled_research_leaves_no_program_behind(
    calls_dir: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The whole path: cancelling a research whose planner call hangs in ``claude`` ends the
    program and its child, and the research stops ``cancelled``."""
    from foundry_mcp.runtime import research_runtime
    from tests.support import TERMINAL, wait_until

    monkeypatch.setenv(MODE_ENV, "hang")
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do heat pumps work?", provider_id="claude-cli")
        call = await anyio.to_thread.run_sync(_wait_for_record, calls_dir, "grandchild_pid")
        assert _alive(call["pid"]) and _alive(call["grandchild_pid"])
        await service.cancel(started["research_id"])
        status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "cancelled"
    assert _gone(call["pid"], call["grandchild_pid"])
