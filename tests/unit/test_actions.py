"""The tool description says exactly what the dispatcher does with each parameter.

The dispatcher runs against a recording stand-in of the service: a parameter counts as read by an
action when its value reaches the service. The description, parsed as a model reads it, must list
exactly those parameters.
"""

from __future__ import annotations

import inspect
import re
from datetime import date
from typing import Any

import pytest

from foundry_mcp.errors import InputError
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.service.starting.request import ResearchRequest
from foundry_mcp.server.actions import HANDLERS, dispatch, tool_description
from foundry_mcp.server.arguments import LIMIT_PARAMS, ResearchArguments, parse_arguments

pytestmark = pytest.mark.anyio

# A distinct, valid value for every parameter, so what reaches the service can be traced back.
SAMPLES: dict[str, Any] = {
    "query": "sample query",
    "system_prompt": "sample context",
    "provider_id": "sample-provider",
    "model": "sample-model",
    "mode": "hierarchical",
    "effort": "deep",
    "max_time_s": 30.0,
    "language": "German",
    "source_types": ["academic", "news"],
    "preferred_sources": ["docs.python.org"],
    "clarify": "always",
    "review_plan": True,
    "include_domains": ["python.org"],
    "exclude_domains": ["example.com"],
    "published_after": date(2024, 1, 1),
    "published_before": date(2025, 6, 30),
    "output_schema": {"type": "object", "properties": {"answer": {"type": "string"}}},
    "plan": ["first edited query", "second edited query"],
    "max_iterations": 2,
    "max_sub_queries": 3,
    "max_sources_per_query": 4,
    "max_concurrent": 5,
    "task_timeout": 77.0,
    "reading_budget": 7_777,
    "research_id": "deepres-0123456789ab",
    "item_id": "src-1a2b3c4d",
    "wait": True,
    "wait_timeout": 12.0,
    "offset": 13,
    "max_chars": 1400,
    "limit": 15,
    "cursor": "sample-cursor",
    "completed_only": True,
    "status": "running",
    "format": "json",
    "path": "sample.json",
    "overwrite": True,
    "revise": {"kind": "rewrite", "form": "brief"},
    "version": 3,
    "compare_to": 2,
}


class RecordingService:
    """Records the arguments each service method receives, bound to the real signatures."""

    def __init__(self) -> None:
        self.received: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        real = getattr(ResearchService, name)
        signature = inspect.signature(real)

        def record(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(self, *args, **kwargs)
            for key, value in bound.arguments.items():
                if isinstance(value, ResearchRequest):  # a start's options, in one request
                    self._unfold(dict(value))
                elif signature.parameters[key].kind is inspect.Parameter.VAR_KEYWORD:
                    self.received.update(value)  # the limits, given as keywords
                elif key != "self":
                    self.received[key] = value
            if name == "start_warnings":
                return []
            return ({}, []) if name == "report" else {}

        if inspect.iscoroutinefunction(real):

            async def record_async(*args: Any, **kwargs: Any) -> Any:
                return record(*args, **kwargs)

            return record_async
        return record

    def _unfold(self, options: dict[str, Any]) -> None:
        """Record a request's options by the tool's names: its limits and source bounds each
        under its own name."""
        self.received.update(options.pop("limits"))
        self.received.update(options.pop("bounds") or {})
        self.received.update(options)


async def _reached(action: str, **extra: Any) -> tuple[set[str], list[str]]:
    service = RecordingService()
    arguments = parse_arguments({"action": action, **SAMPLES, **extra})
    _, warnings = await dispatch(service, arguments)  # type: ignore[arg-type]
    reached = {name for name, value in SAMPLES.items() if service.received.get(name) == value}
    return reached, warnings


def _documented(action: str) -> set[str]:
    lines = [line for line in tool_description().splitlines() if line.startswith(f"- {action}:")]
    assert len(lines) == 1, lines
    listed = re.search(r"\(([^()]*)\)$", lines[0])
    names = {p.strip() for p in listed.group(1).split(",")} if listed else set()
    if "limits" in names:  # the description's word for the limits
        names = (names - {"limits"}) | set(LIMIT_PARAMS)
    return {"research_id" if name == "id" else name for name in names}


def test_every_action_of_the_schema_has_a_handler() -> None:
    actions = ResearchArguments.model_json_schema()["properties"]["action"]["enum"]
    assert set(actions) == set(HANDLERS)


@pytest.mark.parametrize("action", list(HANDLERS))
async def test_the_description_lists_exactly_what_the_dispatcher_reads(action: str) -> None:
    reached, warnings = await _reached(action)
    assert reached == _documented(action)
    ignored = {re.search(r"'(\w+)'", w).group(1) for w in warnings}  # type: ignore[union-attr]
    assert ignored == set(SAMPLES) - reached


async def test_the_evidence_action_asks_the_service_for_evidence() -> None:
    service = RecordingService()
    arguments = parse_arguments(
        {"action": "deep-research-evidence", "research_id": SAMPLES["research_id"]}
    )
    await dispatch(service, arguments)  # type: ignore[arg-type]
    assert service.received["evidence"] is True
    service = RecordingService()
    arguments = parse_arguments(
        {"action": "deep-research-report", "research_id": SAMPLES["research_id"]}
    )
    await dispatch(service, arguments)  # type: ignore[arg-type]
    assert not service.received.get("evidence", False)


@pytest.mark.parametrize("retired", ["deep_research_action", "evidence"])
def test_a_retired_parameter_says_what_replaced_it(retired: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_arguments({"action": "deep-research", "query": "q", retired: "cancel"})
    assert retired in refused.value.message
    assert "action='deep-research-" in refused.value.remediation


def test_every_schema_parameter_is_read_by_some_action() -> None:
    parameters = set(ResearchArguments.model_fields) - {"action"}
    described = set().union(*(_documented(action) for action in HANDLERS))
    assert parameters <= described
