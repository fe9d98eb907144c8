"""One request carries a research's options: each way to start a research fills every option of
it, and the service hands it to the starter unchanged.

A new option is a new field of ``ResearchRequest``: the tool call and the command line must fill
it (the tests below find a field left at its default), and the starter receives the very object.
"""

from __future__ import annotations

import io
import json
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from foundry_mcp.cli.arguments import build_parser
from foundry_mcp.cli.bench import BenchRun, BenchTask
from foundry_mcp.cli.running import run_research
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.service.starting.request import ResearchRequest
from foundry_mcp.server.actions import dispatch
from foundry_mcp.server.arguments import parse_arguments

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
LIMITS = {
    "max_iterations": 2,
    "max_sub_queries": 3,
    "max_sources_per_query": 4,
    "max_concurrent": 5,
    "task_timeout": 77.0,
    "reading_budget": 7_777,
}


class Stopped(FoundryError):
    """Ends a start path once the service has its request."""


class StartingService:
    """Stands in for the service: keeps the request a start path builds, and stops there."""

    def __init__(self, tmp_path: Path) -> None:
        self.settings = SimpleNamespace(research=SimpleNamespace(research_dir=str(tmp_path)))
        self.requests: list[ResearchRequest] = []

    def start_warnings(self) -> list[str]:
        return []

    async def check_spending(self, principal: Principal | None) -> None:
        return None

    async def start(self, request: ResearchRequest, **runtime: Any) -> dict[str, Any]:
        assert set(runtime) <= {"asker", "principal"}, runtime  # the options are in the request
        self.requests.append(request)
        raise Stopped("stopped once started")


def asked(
    *, source_types: Any, preferred_sources: Any, published_after: Any, published_before: Any
) -> ResearchRequest:
    """The request every option of the tests below makes, with the values a front end passes
    on as it read them."""
    return ResearchRequest(
        query="How do heat pumps work?",
        system_prompt="For an engineer.",
        provider_id="openai",
        model="gpt-4.1",
        limits=LIMITS,
        mode="hierarchical",
        source_types=source_types,
        preferred_sources=preferred_sources,
        effort="deep",
        max_time_s=600,
        language="German",
        clarify="off",
        review_plan=True,
        bounds={
            "include_domains": ["python.org"],
            "exclude_domains": ["example.com"],
            "published_after": published_after,
            "published_before": published_before,
        },
        output_schema=SCHEMA,
    )


def left_at_default(request: ResearchRequest) -> list[str]:
    """The request's options a start path did not fill."""
    return [
        name
        for name, field in ResearchRequest.model_fields.items()
        if getattr(request, name) == field.get_default(call_default_factory=True)
    ]


async def test_the_tool_call_fills_every_option_of_the_request(tmp_path: Path) -> None:
    service = StartingService(tmp_path)
    arguments = parse_arguments(
        {
            "action": "deep-research",
            "query": "How do heat pumps work?",
            "system_prompt": "For an engineer.",
            "provider_id": "openai",
            "model": "gpt-4.1",
            "mode": "hierarchical",
            "effort": "deep",
            "max_time_s": 600,
            "language": "German",
            "source_types": ["academic"],
            "preferred_sources": ["docs.python.org"],
            "clarify": "off",
            "review_plan": True,
            "include_domains": ["python.org"],
            "exclude_domains": ["example.com"],
            "published_after": "2024-01-01",
            "published_before": "2025-06-30",
            "output_schema": SCHEMA,
            **LIMITS,
        }
    )
    with pytest.raises(Stopped):
        await dispatch(service, arguments)  # type: ignore[arg-type]
    (request,) = service.requests
    assert left_at_default(request) == []
    assert request == asked(
        source_types=["academic"],
        preferred_sources=["docs.python.org"],
        published_after=date(2024, 1, 1),
        published_before=date(2025, 6, 30),
    )


async def test_the_command_line_fills_every_option_of_the_request(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    args = build_parser().parse_args(
        [
            "research",
            "How do heat pumps work?",
            *("--provider", "openai", "--model", "gpt-4.1", "--context", "For an engineer."),
            *("--max-iterations", "2", "--max-sub-queries", "3", "--max-sources", "4"),
            *("--max-concurrent", "5", "--timeout", "77", "--reading-budget", "7777"),
            *("--max-time", "600", "--mode", "hierarchical", "--effort", "deep"),
            *("--language", "German", "--source-types", "academic"),
            *("--prefer", "docs.python.org", "--include-domain", "python.org"),
            *("--exclude-domain", "example.com", "--published-after", "2024-01-01"),
            *("--published-before", "2025-06-30", "--schema", str(schema)),
            *("--clarify", "off", "--review-plan"),
        ]
    )
    service = StartingService(tmp_path)
    with pytest.raises(Stopped):
        await run_research(service, args)  # type: ignore[arg-type]
    (request,) = service.requests
    assert left_at_default(request) == []
    assert request == asked(
        source_types="academic",  # the service reads the comma-separated list
        preferred_sources="docs.python.org",
        published_after="2024-01-01",
        published_before="2025-06-30",
    )


async def test_the_bench_starts_each_task_with_its_options(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["bench", "--sample", "--out", "out.jsonl", "--max-iterations", "2", "--effort", "quick"]
    )
    service = StartingService(tmp_path)
    run = BenchRun(service, args, io.StringIO(), io.StringIO(), total=1)  # type: ignore[arg-type]
    record = await run._research(BenchTask(id=7, prompt="What is a skip list?"))
    assert record["error"] == "stopped once started"
    assert service.requests == [
        ResearchRequest(query="What is a skip list?", limits={"max_iterations": 2}, effort="quick")
    ]


class RecordingStarter:
    def __init__(self) -> None:
        self.started: list[tuple[ResearchRequest, dict[str, Any]]] = []

    async def start(self, request: ResearchRequest, **runtime: Any) -> dict[str, Any]:
        self.started.append((request, runtime))
        return {"research_id": "deepres-0123456789ab"}


def starting_service() -> tuple[ResearchService, RecordingStarter]:
    """A service whose starter records what it is handed (no store: nobody is admitted)."""
    service = object.__new__(ResearchService)
    starter = RecordingStarter()
    service.starter = starter  # type: ignore[assignment]
    service.watch = None  # type: ignore[assignment]
    return service, starter


async def test_the_service_hands_the_request_to_the_starter_unchanged() -> None:
    service, starter = starting_service()
    request = ResearchRequest(query="What is a trie?", language="de", limits={"max_iterations": 1})
    asker = object()
    await service.start(request, asker=asker, principal=Principal(name="alice"))  # type: ignore[arg-type]
    ((handed, runtime),) = starter.started
    assert handed is request
    assert runtime == {"asker": asker, "principal": "alice"}


async def test_a_bare_question_with_keywords_makes_the_same_request() -> None:
    service, starter = starting_service()
    await service.start("What is a trie?", max_iterations=1, mode="simple", language="de")
    ((handed, runtime),) = starter.started
    assert handed == ResearchRequest(
        query="What is a trie?", limits={"max_iterations": 1}, mode="simple", language="de"
    )
    assert runtime == {"asker": None, "principal": None}
    with pytest.raises(TypeError, match="mode"):
        await service.start(handed, mode="hierarchical")


def test_a_request_keeps_values_as_given_for_the_service_to_check() -> None:
    # The service's checks name the field and the fix; pydantic must not coerce or refuse first.
    raw = ResearchRequest(
        query=42,
        max_time_s="600",
        review_plan="yes",
        limits={"max_iterations": 2.5},
        mode=3,
    )
    assert raw.model_dump() == {
        **ResearchRequest(query=42).model_dump(),
        "max_time_s": "600",
        "review_plan": "yes",
        "limits": {"max_iterations": 2.5},
        "mode": 3,
    }
    with pytest.raises(ValidationError, match="max_iteration"):
        ResearchRequest(query="q", max_iteration=2)  # type: ignore[call-arg]
    merged = ResearchRequest.of("q", limits={"task_timeout": 30.0}, max_iterations=2)
    assert merged.limits == {"task_timeout": 30.0, "max_iterations": 2}
