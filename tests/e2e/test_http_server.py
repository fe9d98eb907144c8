"""The team server: ``foundry-mcp serve --http`` as a subprocess, spoken to by the SDK's own
client over streamable HTTP (and by raw HTTP where the status line is the point): bearer
tokens, one principal's research invisible to another, task ids bound to their principal,
DNS-rebinding checks, the refusal to serve other machines without tokens, a clean stop."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import TextResourceContents

from foundry_mcp.research.models import Status
from foundry_mcp.research.store.sqlite.store import ResearchStore
from tests.e2e.conftest import call, run_to_end
from tests.e2e.teamserver import (
    TeamServer,
    add_to_config,
    bearer,
    foundry_command,
    free_port,
    mcp_client,
    server_env,
)
from tests.e2e.test_tasks import MODERN, TasksClient, task_request
from tests.fakes import FakeHTTPServer
from tests.support import assert_citations_resolve, served_urls

pytestmark = pytest.mark.anyio

ALICE = "alice-token-5c1e0d6a9b2f47e8"
BOB = "bob-token-8e4f2a7c1d9b3e60"
UNKNOWN_ID = "deepres-000000000000"
QUESTION = "How does WAL mode work in SQLite?"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def team_env(research_env: dict[str, str]) -> dict[str, str]:
    return {**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE},bob:{BOB}"}


def _all_bytes(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in folder.rglob("*") if path.is_file())


def _post(server: TeamServer, **headers: str) -> httpx.Response:
    return server.http.post(server.url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})


async def _finished(client: Any, query: str = QUESTION) -> str:
    started = await call(client, action="deep-research", query=query, effort="quick")
    assert started["success"], started
    research_id = str(started["data"]["research_id"])
    final = await run_to_end(client, research_id)
    assert final["status"] == "completed", final
    return research_id


async def test_a_token_holder_researches_and_no_one_else_gets_in(
    team_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    with TeamServer(team_env) as server:
        health = server.health()
        assert health.status_code == 200
        assert health.json()["status"] == "ok" and health.json()["research_service"] == "ready"

        for refused in (_post(server), _post(server, **bearer("not-a-token-of-this-server"))):
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith("Bearer ")
            assert "Authorization: Bearer <token>" in refused.json()["error_description"]
            for private in (ALICE, BOB, "alice", "bob"):
                assert private not in refused.text and private not in str(refused.headers)

        async with mcp_client(server.url, ALICE) as client:
            research_id = await _finished(client)
            report = await call(client, action="deep-research-report", research_id=research_id)
            assert_citations_resolve(report["data"]["report"], served_urls(tavily_server))
            resource = (await client.read_resource(f"research://{research_id}/report")).contents
            assert isinstance(resource[0], TextResourceContents)
            assert resource[0].text == report["data"]["report"]
    assert any("bearer tokens required; 2 principal(s): alice, bob" in line for line in server.log)
    research_dir = Path(team_env["FOUNDRY_MCP_RESEARCH_DIR"])
    stored = ResearchStore(research_dir)
    assert stored.load(research_id).principal == "alice"
    stored.close()
    written = _all_bytes(research_dir)
    for token in (ALICE, BOB):  # never in the log, the store or any file of research_dir
        assert token.encode() not in written
        assert not any(token in line for line in server.log)


ACTIONS: list[tuple[str, dict[str, Any]]] = [
    ("deep-research-status", {}),
    ("deep-research-report", {}),
    ("deep-research-events", {}),
    ("deep-research-export", {"format": "markdown"}),
    ("deep-research-restore", {"item_id": "src-00000000"}),
    ("deep-research-cancel", {}),
    ("deep-research-resume", {}),
    ("deep-research-evidence", {}),
    ("deep-research-revise", {"revise": {"kind": "rewrite", "form": "brief"}}),
    ("deep-research-versions", {}),
    ("deep-research-delete", {}),
]


def _anonymised(envelope: dict[str, Any], research_id: str) -> tuple[str, str]:
    """The error and data of an envelope with the research id taken out."""
    return (
        str(envelope["error"]).replace(research_id, "<id>"),
        json.dumps(envelope["data"], sort_keys=True).replace(research_id, "<id>"),
    )


async def test_another_principals_research_does_not_exist(team_env: dict[str, str]) -> None:
    with TeamServer(team_env) as server:
        async with mcp_client(server.url, ALICE) as alice:
            theirs = await _finished(alice)

        async with mcp_client(server.url, BOB) as bob:
            listed = await call(bob, action="deep-research-list")
            assert listed["success"] and listed["data"]["items"] == []
            for action, extra in ACTIONS:
                answer = await call(bob, action=action, research_id=theirs, **extra)
                unknown = await call(bob, action=action, research_id=UNKNOWN_ID, **extra)
                assert answer["data"]["error_code"] == "RESEARCH_NOT_FOUND", (action, answer)
                assert _anonymised(answer, theirs) == _anonymised(unknown, UNKNOWN_ID), action
            for part in ("report", "claims", "sources", "events"):
                with pytest.raises(MCPError) as refused:
                    await bob.read_resource(f"research://{theirs}/{part}")
                with pytest.raises(MCPError) as missing:
                    await bob.read_resource(f"research://{UNKNOWN_ID}/{part}")
                assert str(refused.value).replace(theirs, "<id>") == str(missing.value).replace(
                    UNKNOWN_ID, "<id>"
                )
            listed_resources = [str(r.uri) for r in (await bob.list_resources()).resources]
            assert not any(theirs in uri for uri in listed_resources)

        async with mcp_client(server.url, ALICE) as alice:  # untouched, and still hers
            status = await call(alice, action="deep-research-status", research_id=theirs)
            assert status["data"]["status"] == "completed"
            listed = await call(alice, action="deep-research-list")
            assert [item["research_id"] for item in listed["data"]["items"]] == [theirs]
            # Hers to revise: a brief, made as its second version, on the team server too.
            revised = await call(
                alice, action="deep-research-revise", research_id=theirs,
                revise={"kind": "rewrite", "form": "brief"},
            )  # fmt: skip
            assert revised["success"] and revised["data"]["version"] == 2, revised
            assert (await run_to_end(alice, theirs))["status"] == "completed"
            versions = await call(alice, action="deep-research-versions", research_id=theirs)
            assert [v["kind"] for v in versions["data"]["versions"]] == ["research", "rewrite"]
            assert versions["data"]["versions"][1]["cost"]["search_calls"] == 0
            uris = [str(r.uri) for r in (await alice.list_resources()).resources]
            assert f"research://{theirs}/report" in uris
            # Exports come back in the response: the server's disk is not the caller's.
            inline = await call(alice, action="deep-research-export", research_id=theirs)
            assert inline["success"] and inline["data"]["content"].startswith("#")
            to_disk = await call(
                alice, action="deep-research-export", research_id=theirs, path="report.md"
            )
            assert to_disk["data"]["error_code"] == "VALIDATION_ERROR"
            assert to_disk["data"]["details"]["reason"] == "team_server"
    # Three sessions came and went; the one research service closed once, with the server.
    assert sum("running research saved" in line for line in server.log) == 1


async def test_a_task_id_answers_only_its_principal(team_env: dict[str, str]) -> None:
    with TeamServer(team_env) as server:
        tasks = TasksClient()
        async with mcp_client(server.url, ALICE, mode=MODERN, extensions=[tasks]) as alice:
            result = await alice.call_tool(
                "research", {"action": "deep-research", "query": QUESTION, "effort": "quick"}
            )
            assert result.structured_content and result.structured_content["success"]
            task_id = tasks.handles[0].task_id
            again = await task_request(alice.session, "tasks/get", task_id)
            assert again["status"] == "completed"

        async with mcp_client(server.url, BOB, mode=MODERN, extensions=[TasksClient()]) as bob:
            research_id = task_id.partition(".")[0]
            for method in ("tasks/get", "tasks/cancel", "tasks/update"):
                with pytest.raises(MCPError) as refused:
                    await task_request(bob.session, method, task_id)
                with pytest.raises(MCPError) as unknown:
                    await task_request(bob.session, method, f"{research_id}.{'0' * 32}")
                assert refused.value.error == unknown.value.error, method


async def test_rebinding_hosts_and_origins_are_refused(team_env: dict[str, str]) -> None:
    with TeamServer(team_env) as server:
        token = bearer(ALICE)
        evil_host = _post(server, Host=f"rebind.example:{server.port}", **token)
        assert evil_host.status_code == 421, evil_host.text
        evil_origin = _post(server, Origin="http://rebind.example", **token)
        assert evil_origin.status_code == 403, evil_origin.text
        # The same request from a loopback page (a local inspector, say) is served.
        local = _post(server, Origin="http://localhost:6274", **token)
        assert local.status_code == 200, local.text


def test_listening_beyond_loopback_without_tokens_is_refused(
    research_env: dict[str, str],
) -> None:
    for host in ("0.0.0.0", "192.0.2.10"):  # nothing is bound: the check comes first
        refused = subprocess.run(
            foundry_command("serve", "--http", "--host", host, "--port", str(free_port())),
            env=server_env(research_env),
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert refused.returncode == 2, refused
        assert "Refusing to listen on" in refused.stderr and "Traceback" not in refused.stderr
        assert "FOUNDRY_MCP_TOKENS=alice:<token>" in refused.stderr


def test_a_server_whose_store_cannot_be_reached_exits_for_a_restart(
    research_env: dict[str, str],
) -> None:
    password = "pw-do-not-show"
    unreachable = f"postgresql://foundry:{password}@127.0.0.1:{free_port()}/foundry"
    stopped = subprocess.run(
        foundry_command("serve", "--http", "--port", str(free_port())),
        env=server_env({**research_env, "FOUNDRY_MCP_STORE_URL": unreachable}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stopped.returncode == 1, stopped
    assert "the research service could not start" in stopped.stderr
    assert "cannot be reached" in stopped.stderr and "Start PostgreSQL" in stopped.stderr
    assert password not in stopped.stderr and "Traceback" not in stopped.stderr


async def test_without_tokens_a_loopback_server_is_one_anonymous_principal(
    research_env: dict[str, str],
) -> None:
    with TeamServer(research_env, "--log-format", "json") as server:
        async with mcp_client(server.url) as client:
            listed = await call(client, action="deep-research-list")
            assert listed["success"], listed
    lines = [json.loads(line) for line in server.log]  # every line is one JSON object
    warning = next(line for line in lines if "no tokens configured" in line["message"])
    assert warning["level"] == "WARNING" and "anonymous principal" in warning["message"]
    assert {"time", "level", "logger", "message", "research_id", "principal"} <= set(warning)


async def test_a_stop_signal_saves_running_research_and_limits_hold(
    research_env: dict[str, str], tmp_path: Path, openai_server: FakeHTTPServer
) -> None:
    add_to_config(
        research_env,
        '[logging]\nlevel = "INFO"\n\n'
        f'[[server.tokens]]\nname = "alice"\ntoken = "{ALICE}"\nmax_concurrent_researches = 1\n',
    )
    openai_server.latency = 1.0  # the research is still running when the signal comes
    with TeamServer(research_env, "--log-format", "json") as server:
        async with mcp_client(server.url, ALICE) as alice:
            started = await call(alice, action="deep-research", query=QUESTION)
            assert started["success"], started
            research_id = started["data"]["research_id"]
            second = await call(alice, action="deep-research", query="What is a bloom filter?")
            assert second["data"]["error_code"] == "QUOTA_EXCEEDED", second
            assert "max_concurrent_researches" in second["error"]
            assert second["data"]["remediation"]
            code = server.stop(signal.SIGTERM)
    assert code in (-signal.SIGTERM, 128 + signal.SIGTERM), server.log
    store = ResearchStore(Path(research_env["FOUNDRY_MCP_RESEARCH_DIR"]))
    state = store.load(research_id)
    ownership = store.ownership(research_id)
    store.close()
    assert state.status is Status.INTERRUPTED and state.principal == "alice"
    assert ownership is None or ownership.token is None  # the lease is released
    lines = [json.loads(line) for line in server.log]
    about_it = [line for line in lines if line["research_id"] == research_id]
    assert any(line["message"].endswith("ended interrupted") for line in about_it), lines
    assert all(line["principal"] == "alice" for line in about_it), about_it
    assert any("running research saved" in line["message"] for line in lines)
