"""MCP Tasks (io.modelcontextprotocol/tasks): a client that speaks tasks gets a task handle for a
research, polls it to the report, and can cancel it; every other client keeps the ordinary
results. Driven through the SDK's own client extension API, in-process and over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any, Literal

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict, Field, TypeAdapter

from foundry_mcp.config import Settings
from foundry_mcp.server import create_server
from foundry_mcp.server.tasks import KEY_NAME, TASKS_EXTENSION
from tests.e2e.conftest import call
from tests.fakes import FakeHTTPServer

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
MISSING_CAPABILITY = -32021
RAW = TypeAdapter(dict[str, Any])


class TaskHandle(Result):
    """A ``CreateTaskResult`` as the client receives it."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")


class TaskRequest(Request[TaskParams, str]):
    method: str
    params: TaskParams


class TasksClient(ClientExtension):
    """A client that speaks tasks: it follows a handle with tasks/get to the final result."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.handles: list[TaskHandle] = []
        self.polled: list[str] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=TaskHandle, resolve=self._follow),)

    async def _follow(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        self.handles.append(handle)
        with anyio.fail_after(60):
            while True:
                task = await task_request(ctx.session, "tasks/get", handle.task_id)
                self.polled.append(task["status"])
                if task["status"] == "completed":
                    return CallToolResult.model_validate(task["result"])
                assert task["status"] == "working", task
                await anyio.sleep(0.05)  # the server suggests pollIntervalMs; tests are quick


async def task_request(session: Any, method: str, task_id: str) -> dict[str, Any]:
    request = TaskRequest(method=method, params=TaskParams(taskId=task_id))
    result: dict[str, Any] = await session.send_request(request, RAW)
    return result


def _client(settings: Settings, *extensions: ClientExtension) -> Client:
    return Client(create_server(lambda: settings), mode=MODERN, extensions=list(extensions))


async def test_a_research_runs_as_a_task_to_its_report(settings: Settings) -> None:
    tasks = TasksClient()
    async with _client(settings, tasks) as client:
        discovered = await client.session.send_discover(MODERN)
        result = await client.call_tool(
            "research", {"action": "deep-research", "query": "How does WAL mode work?"}
        )
        handle = tasks.handles[0]
        assert handle.status == "working"
        research_id, _, mac = handle.task_id.partition(".")
        assert research_id.startswith("deepres-") and len(mac) == 32

        # The completed task carries the report, as the report action returns it.
        envelope = result.structured_content
        assert envelope is not None and envelope["success"], envelope
        assert envelope["data"]["research_id"] == research_id
        assert "[1]" in envelope["data"]["report"]
        assert tasks.polled[-1] == "completed"

        # The task id is durable: polled again, it still answers, and the key is private.
        again = await task_request(client.session, "tasks/get", handle.task_id)
        assert again["status"] == "completed" and again["pollIntervalMs"] > 0
    assert TASKS_EXTENSION in discovered["capabilities"]["extensions"]
    key = settings.research.research_dir / f"{KEY_NAME}-key"
    assert key.stat().st_mode & 0o077 == 0


async def test_a_revision_of_the_report_runs_as_a_task_to_its_new_version(
    settings: Settings,
) -> None:
    tasks = TasksClient()
    async with _client(settings, tasks) as client:
        await client.call_tool(
            "research", {"action": "deep-research", "query": "How does WAL mode work?"}
        )
        research_id = tasks.handles[0].task_id.partition(".")[0]
        result = await client.call_tool(
            "research",
            {
                "action": "deep-research-revise",
                "research_id": research_id,
                "revise": {"kind": "rewrite", "form": "brief"},
            },
        )
        assert len(tasks.handles) == 2 and tasks.polled[-1] == "completed"
        envelope = result.structured_content
        assert envelope is not None and envelope["success"], envelope
        assert envelope["data"]["version"] == 2 and "[1]" in envelope["data"]["report"]


async def test_clients_without_the_extension_keep_ordinary_results(settings: Settings) -> None:
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="What is a bloom filter?")
        assert started["data"]["status"] in ("queued", "running")
        with pytest.raises(MCPError) as refused:
            await task_request(client.session, "tasks/get", started["data"]["research_id"])
        assert refused.value.error.code == MISSING_CAPABILITY


async def test_forged_unknown_and_cancelled_tasks(settings: Settings) -> None:
    async with _client(settings, TasksClient()) as client:
        handle = await client.session.call_tool(
            "research",
            {"action": "deep-research", "query": "What is a bloom filter?", "max_iterations": 3},
            allow_claimed=True,
        )
        assert isinstance(handle, TaskHandle)
        research_id = handle.task_id.partition(".")[0]

        for forged in (research_id, f"{research_id}.{'0' * 32}", "../../etc.passwd"):
            with pytest.raises(MCPError) as refused:
                await task_request(client.session, "tasks/get", forged)
            assert refused.value.error.code == INVALID_PARAMS

        acknowledged = await task_request(client.session, "tasks/cancel", handle.task_id)
        assert acknowledged["resultType"] == "complete"
        with anyio.fail_after(30):
            while (task := await task_request(client.session, "tasks/get", handle.task_id))[
                "status"
            ] == "working":
                await anyio.sleep(0.05)
        assert task["status"] in ("cancelled", "completed"), task  # cancelling is cooperative
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["data"]["status"] == task["status"]

        # Cancelling an ended task is still acknowledged; a deleted research's task is gone.
        acknowledged = await task_request(client.session, "tasks/cancel", handle.task_id)
        assert acknowledged["resultType"] == "complete"
        await call(client, action="deep-research-delete", research_id=research_id)
        with pytest.raises(MCPError) as gone:
            await task_request(client.session, "tasks/get", handle.task_id)
        assert gone.value.error.code == INVALID_PARAMS


async def test_a_failed_research_completes_its_task_with_a_tool_error(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.fail_next(401, times=100)  # the key is refused: the research fails
    tasks = TasksClient()
    async with _client(settings, tasks) as client:
        result = await client.call_tool(
            "research", {"action": "deep-research", "query": "What is a bloom filter?"}
        )
    envelope = result.structured_content
    assert result.is_error and envelope is not None, result
    assert tasks.handles and tasks.polled[-1] == "completed"  # not "failed": a tool error
    assert envelope["data"]["error_code"] == "RESEARCH_STOPPED"
    assert envelope["data"]["details"]["status"] == "failed"
    assert "deep-research-resume" in envelope["data"]["remediation"]


@pytest.mark.stdio
async def test_a_research_task_over_stdio(research_env: dict[str, str]) -> None:
    base = {key: os.environ[key] for key in ("PATH", "LANG", "SYSTEMROOT") if key in os.environ}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "foundry_mcp"], env={**base, **research_env}
    )
    tasks = TasksClient()
    async with Client(params, mode=MODERN, extensions=[tasks]) as client:
        result = await client.call_tool(
            "research", {"action": "deep-research", "query": "How does WAL mode work?"}
        )
    envelope = result.structured_content
    assert envelope is not None and envelope["success"], envelope
    assert envelope["data"]["report"] and tasks.polled[-1] == "completed"
    assert "working" in tasks.polled or len(tasks.polled) == 1


async def test_a_task_outlives_its_server(settings: Settings) -> None:
    """The server stops mid-research; a new one, polled with the same task id, resumes the
    research and completes the task."""
    async with _client(settings, TasksClient()) as client:
        handle = await client.session.call_tool(
            "research",
            {"action": "deep-research", "query": "How does WAL mode work?"},
            allow_claimed=True,
        )
        assert isinstance(handle, TaskHandle)
    research_id = handle.task_id.partition(".")[0]

    tasks = TasksClient()
    async with _client(settings, tasks) as client:
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["data"]["status"] == "interrupted"
        result = await tasks._follow(
            handle,
            ClaimContext(session=client.session, tool_name="research", read_timeout_seconds=None),
        )
    envelope = result.structured_content
    assert envelope is not None and envelope["success"], envelope
    assert envelope["data"]["research_id"] == research_id and envelope["data"]["report"]


async def test_a_plan_waiting_for_approval_is_an_input_required_task(settings: Settings) -> None:
    async with _client(settings, TasksClient()) as client:
        handle = await client.session.call_tool(
            "research",
            {"action": "deep-research", "query": "How does WAL mode work?", "review_plan": True},
            allow_claimed=True,
        )
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(30):
            while (task := await task_request(client.session, "tasks/get", handle.task_id))[
                "status"
            ] == "working":
                await anyio.sleep(0.05)
        assert task["status"] == "input_required", task
        assert "deep-research-resume" in task["statusMessage"]
        research_id = handle.task_id.partition(".")[0]
        await call(client, action="deep-research-resume", research_id=research_id)
        with anyio.fail_after(30):
            while (task := await task_request(client.session, "tasks/get", handle.task_id))[
                "status"
            ] in ("working", "input_required"):
                await anyio.sleep(0.05)
        assert task["status"] == "completed", task
