"""Every error code the tool documents (specs/research-tool.md) is produced over MCP as documented."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.fakes import FakeHTTPServer

pytestmark = pytest.mark.anyio

SPEC = Path(__file__).resolve().parents[2] / "specs" / "research-tool.md"
MISSING_ID = "deepres-000000000000"


def documented_codes() -> dict[str, str]:
    """``error_code -> error_type`` from the spec's error table."""
    table = SPEC.read_text().split("## Error codes", 1)[1]
    return dict(re.findall(r"^\| `([A-Z_]+)` \| `([a-z_]+)` \|", table, re.MULTILINE))


def _client(settings: Settings) -> Client:
    return Client(create_server(lambda: settings), mode="legacy")


def _reload(
    settings: Settings, research_env: dict[str, str], tmp_path: Path, **changes: str
) -> Settings:
    env = {k: v for k, v in {**research_env, **changes}.items() if v}
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


async def _finished(client: Client, **extra: Any) -> str:
    started = await call(client, action="deep-research", query="What is a rope?", **extra)
    assert started["success"], started
    await run_to_end(client, started["data"]["research_id"])
    return str(started["data"]["research_id"])


Case = Callable[[Settings, dict[str, str], Path, FakeHTTPServer], Awaitable[dict[str, Any]]]


async def _validation(settings: Settings, *_: Any) -> dict[str, Any]:
    async with _client(settings) as client:
        return await call(client, action="deep-research", query="x", max_sub_queries=0)


async def _unknown_action(settings: Settings, *_: Any) -> dict[str, Any]:
    async with _client(settings) as client:
        return await call(client, action="deep-research-explode")


async def _invalid_id(settings: Settings, *_: Any) -> dict[str, Any]:
    async with _client(settings) as client:
        return await call(client, action="deep-research-status", research_id="../../etc/passwd")


async def _not_found(settings: Settings, *_: Any) -> dict[str, Any]:
    async with _client(settings) as client:
        return await call(client, action="deep-research-report", research_id=MISSING_ID)


async def _not_configured(
    settings: Settings, env: dict[str, str], tmp_path: Path, _: FakeHTTPServer
) -> dict[str, Any]:
    keyless = _reload(settings, env, tmp_path, OPENAI_API_KEY="")
    async with _client(keyless) as client:
        return await call(client, action="deep-research", query="What is a rope?")


async def _config_invalid(
    settings: Settings, env: dict[str, str], tmp_path: Path, _: FakeHTTPServer
) -> dict[str, Any]:
    bad = tmp_path / "bad.toml"
    bad.write_text("[research]\ndeep_research_max_iterations = 'three'\n")

    def loader() -> Settings:
        return _reload(settings, env, tmp_path, FOUNDRY_MCP_CONFIG=str(bad))

    async with Client(create_server(loader), mode="legacy") as client:
        return await call(client, action="deep-research-list")


async def _invalid_state(settings: Settings, *_: Any) -> dict[str, Any]:
    async with _client(settings) as client:
        research_id = await _finished(client, max_iterations=1)
        return await call(client, action="deep-research-cancel", research_id=research_id)


async def _report_not_ready(
    settings: Settings, env: dict[str, str], tmp_path: Path, openai: FakeHTTPServer
) -> dict[str, Any]:
    openai.latency = 2.0
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="What is a rope?")
        research_id = started["data"]["research_id"]
        envelope = await call(client, action="deep-research-report", research_id=research_id)
        await call(client, action="deep-research-cancel", research_id=research_id)
        return envelope


async def _context_exceeded(
    settings: Settings, env: dict[str, str], tmp_path: Path, _: FakeHTTPServer
) -> dict[str, Any]:
    tiny_window = tmp_path / "tiny-window.toml"
    tiny_window.write_text(
        '[research]\nmodel_context_overrides = { "gpt-4.1-mini" = 1000 }\n\n'
        "[research.fetch]\nenabled = false\n"
    )
    tiny = _reload(settings, env, tmp_path, FOUNDRY_MCP_CONFIG=str(tiny_window))
    async with _client(tiny) as client:
        started = await call(client, action="deep-research", query="What is a rope?")
        final = await run_to_end(client, started["data"]["research_id"])
        assert final["status"] == "failed", final
        # Not a tool error: a failed research carries its code in its status.
        return {"status": final}


async def _archive_not_found(settings: Settings, *_: Any) -> dict[str, Any]:
    async with _client(settings) as client:
        research_id = await _finished(client, max_iterations=1)
        store = ResearchStore(settings.research.research_dir)
        try:
            state = store.load(research_id)
            source = state.sources[0]
            source.content = None
            store.save(state)
        finally:
            store.close()
        return await call(
            client, action="deep-research-restore", research_id=research_id, item_id=source.id
        )


async def _internal(settings: Settings, *_: Any) -> dict[str, Any]:
    from foundry_mcp.research.service import research_service as service_module

    def broken(*_: Any, **__: Any) -> dict[str, Any]:
        raise RuntimeError("secret internals /home/user/.ssh")

    original = service_module.ResearchService.list
    service_module.ResearchService.list = broken  # type: ignore[method-assign]
    try:
        async with _client(settings) as client:
            return await call(client, action="deep-research-list")
    finally:
        service_module.ResearchService.list = original  # type: ignore[method-assign]


async def _research_stopped(
    settings: Settings, _: dict[str, str], __: Path, openai_server: FakeHTTPServer
) -> dict[str, Any]:
    from tests.e2e.test_tasks import MODERN, TasksClient

    openai_server.fail_next(401, times=100)  # the research fails; its task completes with why
    client = Client(create_server(lambda: settings), mode=MODERN, extensions=[TasksClient()])
    async with client:
        result = await client.call_tool(
            "research", {"action": "deep-research", "query": "What is a rope?"}
        )
    assert result.structured_content is not None
    return result.structured_content


async def _quota_exceeded(
    _: Settings, research_env: dict[str, str], __: Path, openai_server: FakeHTTPServer
) -> dict[str, Any]:
    from tests.e2e.teamserver import TeamServer, add_to_config, mcp_client

    token = "quota-token-0123456789abcdef"
    add_to_config(
        research_env,
        f'[[server.tokens]]\nname = "alice"\ntoken = "{token}"\nmax_concurrent_researches = 1\n',
    )
    openai_server.latency = 1.0  # the first research still runs when the second starts
    with TeamServer(research_env) as server:
        async with mcp_client(server.url, token) as client:
            first = await call(client, action="deep-research", query="What is a rope?")
            assert first["success"], first
            return await call(client, action="deep-research", query="What is a trie?")


async def _store_unavailable(
    settings: Settings, env: dict[str, str], tmp_path: Path, _: FakeHTTPServer
) -> dict[str, Any]:
    unreachable = _reload(
        settings,
        env,
        tmp_path,
        FOUNDRY_MCP_STORE_URL="postgresql://alice:pw-never-shown@127.0.0.1:1/x?connect_timeout=3",
    )
    async with _client(unreachable) as client:
        envelope = await call(client, action="deep-research-list")
    assert "pw-never-shown" not in str(envelope) and "alice:***@" in envelope["error"]
    return envelope


CASES: dict[str, Case] = {
    "VALIDATION_ERROR": _validation,
    "UNKNOWN_ACTION": _unknown_action,
    "INVALID_RESEARCH_ID": _invalid_id,
    "RESEARCH_NOT_FOUND": _not_found,
    "PROVIDER_NOT_CONFIGURED": _not_configured,
    "CONFIG_INVALID": _config_invalid,
    "INVALID_STATE": _invalid_state,
    "REPORT_NOT_READY": _report_not_ready,
    "CONTEXT_EXCEEDED": _context_exceeded,
    "ARCHIVE_NOT_FOUND": _archive_not_found,
    "RESEARCH_STOPPED": _research_stopped,
    "QUOTA_EXCEEDED": _quota_exceeded,
    "STORE_UNAVAILABLE": _store_unavailable,
    "INTERNAL_ERROR": _internal,
}


def test_every_documented_code_has_a_case() -> None:
    assert set(CASES) == set(documented_codes())


@pytest.mark.parametrize("code", sorted(documented_codes()))
async def test_the_documented_code_is_returned(
    code: str,
    settings: Settings,
    research_env: dict[str, str],
    tmp_path: Path,
    openai_server: FakeHTTPServer,
) -> None:
    envelope = await CASES[code](settings, research_env, tmp_path, openai_server)
    if "status" in envelope:
        status = envelope["status"]
        assert status["error_code"] == code and status["error"], status
        return
    assert envelope["success"] is False, envelope
    assert envelope["data"]["error_code"] == code, envelope
    assert envelope["data"]["error_type"] == documented_codes()[code], envelope
    assert envelope["data"]["remediation"] and envelope["error"], envelope
    assert "secret internals" not in str(envelope) and "Traceback" not in str(envelope)
