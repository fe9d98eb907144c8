"""Clarifying a vague question with the user, through a real MCP client session and its
elicitation callback: answers shape the brief and the report says what was asked; a decline, a
dismissal or no answer in time still give a report; a client without elicitation is asked
nothing and sees the assumptions made; a clear question asks nothing; the time spent answering
is not charged to max_time_s."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from foundry_mcp.config import Settings
from foundry_mcp.server import create_server
from tests.e2e.conftest import MovedClock, call, run_to_end
from tests.fakes import ResearchBrain

pytestmark = pytest.mark.anyio

VAGUE = "What is the best database?"
CLEAR = "How does PostgreSQL 16 implement logical replication of DDL changes?"
Answer = Callable[[ElicitRequestParams], Awaitable[ElicitResult]]


class User:
    """The person behind the client: answers each form with ``answer``, and remembers them."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.forms: list[ElicitRequestParams] = []

    async def __call__(self, _: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.forms.append(params)
        return await self.answer(params)


async def _research(
    settings: Settings, user: User | None, query: str = VAGUE, **arguments: Any
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Start (with ``user`` behind the client, if any) and run to the end: the start's data,
    the final status and the report."""
    server = create_server(lambda: settings)
    async with Client(server, mode="legacy", elicitation_callback=user) as client:
        started = await call(
            client, action="deep-research", query=query, max_iterations=1, **arguments
        )
        assert started["success"], started
        final = await run_to_end(client, started["data"]["research_id"])
        report = await call(
            client,
            action="deep-research-report",
            research_id=final["research_id"],
            max_chars=100_000,
        )
    assert final["status"] == "completed", final
    return started["data"], final, report["data"]["report"]


def _analyst_prompts(brain: ResearchBrain) -> list[str]:
    return [user for agent, _, user in brain.history if agent == "analyzer"]


async def test_a_vague_question_is_clarified_and_the_answers_shape_the_brief(
    settings: Settings, brain: ResearchBrain
) -> None:
    async def answer(params: ElicitRequestParams) -> ElicitResult:
        schema = params.requested_schema  # type: ignore[union-attr]
        first, second = list(schema["properties"])
        assert "analytics (OLAP)" in schema["properties"][first]["enum"]
        return ElicitResult(action="accept", content={first: "analytics (OLAP)", second: "2024"})

    user = User(answer)
    started, final, report = await _research(settings, user)
    (form,) = user.forms  # one form
    assert 1 <= len(form.requested_schema["properties"]) <= 3  # type: ignore[union-attr]
    assert started["clarification"]["outcome"] == "answered"
    answers = [q["answer"] for q in started["clarification"]["asked"]]
    assert answers == ["analytics (OLAP)", "2024"]
    # The planner was told, and the brief every analyst reads carries the answers.
    planner = [user for agent, _, user in brain.history if agent == "planner"]
    assert "analytics (OLAP)" in planner[0] and "<clarification>" in planner[0]
    assert all("analytics (OLAP)" in prompt for prompt in _analyst_prompts(brain))
    assert final["clarification"]["outcome"] == "answered"
    assert "Asked before researching" in report and "analytics (OLAP)" in report


@pytest.mark.parametrize(
    ("reply", "outcome", "why"),
    [
        ("decline", "declined", "the user declined"),
        # What an editor with nobody there answers (Claude Code in -p mode): not a decline.
        ("cancel", "dismissed", "closed unanswered"),
        ("timeout", "timed_out", "no answer in time"),
    ],
)
async def test_a_decline_a_dismissal_or_silence_still_give_a_report(
    settings: Settings, brain: ResearchBrain, reply: str, outcome: str, why: str
) -> None:
    settings.research.clarify_timeout = 0.5

    async def answer(_: ElicitRequestParams) -> ElicitResult:
        if reply == "timeout":
            await anyio.sleep(math.inf)  # the user never answers
        return ElicitResult(action=reply)  # type: ignore[arg-type]

    started, final, report = await _research(settings, User(answer))
    clarification = started["clarification"]
    assert clarification["outcome"] == outcome == final["clarification"]["outcome"]
    # The start and the status say that the research went on with assumptions, and why.
    for hint in (started["message"], final["next_action"]):
        assert why in hint and "clarification.assumptions" in hint, hint
    assert all(q["answer"] is None for q in clarification["asked"])
    assert clarification["assumptions"] == [
        "a general-purpose transactional workload",
        "the last two years",
    ]
    assert all("assumed: the last two years" in p for p in _analyst_prompts(brain))
    assert "no answer; assumed the last two years" in report


async def test_the_time_spent_answering_is_not_charged_to_max_time_s(
    settings: Settings, research_clock: type[MovedClock]
) -> None:
    # The person thinks for 90 s (the research's clock moves on by 90 s while the form is open)
    # of a research given 60 s: its deadline counts from when its work starts, not from the
    # question. Charged, its deadline would be gone before it began.
    async def answer(params: ElicitRequestParams) -> ElicitResult:
        research_clock.ahead += timedelta(seconds=90)
        first = next(iter(params.requested_schema["properties"]))  # type: ignore[union-attr]
        return ElicitResult(action="accept", content={first: "analytics (OLAP)"})

    started, final, report = await _research(settings, User(answer), max_time_s=60)
    assert started["clarification"]["outcome"] == "answered"
    assert not [w for w in final["warnings"] if "max_time_s" in w], final["warnings"]
    assert final["progress"]["findings"] > 0 and "## Time Limit" not in report
    created = datetime.fromisoformat(final["created_at"])
    assert (datetime.fromisoformat(final["updated_at"]) - created).total_seconds() >= 90


async def test_a_client_without_elicitation_is_asked_nothing_and_sees_the_assumptions(
    settings: Settings, brain: ResearchBrain
) -> None:
    started, final, report = await _research(settings, None)
    assert "clarification" not in started
    assert brain.calls["clarifier"] == 0  # no judgement call: the start is as fast as before
    assert final["clarification"]["outcome"] == "not_asked"
    assert final["clarification"]["assumptions"] == [
        "a general-purpose transactional workload",
        "the last two years",
    ]
    assert "sharper question" in final["next_action"]
    assert "the user could not be asked" in report


async def test_a_clear_question_asks_nothing(settings: Settings, brain: ResearchBrain) -> None:
    async def answer(_: ElicitRequestParams) -> ElicitResult:
        raise AssertionError("a clear question must not be asked about")

    started, _, report = await _research(settings, User(answer), query=CLEAR)
    assert started["clarification"]["outcome"] == "clear"
    assert brain.calls["clarifier"] == 1
    assert "Asked before researching" not in report


async def test_clarify_always_asks_and_off_never_judges(
    settings: Settings, brain: ResearchBrain
) -> None:
    async def answer(_: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"q1": "since 2023"})

    user = User(answer)
    started, _, _ = await _research(settings, user, query=CLEAR, clarify="always")
    assert started["clarification"]["asked"][0]["answer"] == "since 2023"
    calls = brain.calls["clarifier"]
    started, final, _ = await _research(settings, user, clarify="off")
    assert "clarification" not in started and final.get("clarification") is None
    assert brain.calls["clarifier"] == calls and len(user.forms) == 1


async def test_an_answer_that_does_not_fit_the_form_is_refused_and_nothing_starts(
    settings: Settings,
) -> None:
    async def answer(params: ElicitRequestParams) -> ElicitResult:
        first = next(iter(params.requested_schema["properties"]))  # type: ignore[union-attr]
        return ElicitResult(action="accept", content={first: "a rocket"})  # not a choice

    async with Client(
        create_server(lambda: settings), mode="legacy", elicitation_callback=User(answer)
    ) as client:
        refused = await call(client, action="deep-research", query=VAGUE)
        assert not refused["success"]
        assert refused["data"]["error_code"] == "VALIDATION_ERROR"
        assert "does not fit the form" in refused["error"]
        assert "Answer the form again" in refused["data"]["remediation"]
        listed = await call(client, action="deep-research-list")
        assert listed["data"]["items"] == []


@pytest.mark.parametrize("mode", ["hierarchical", "hypotheses"])
async def test_the_answers_reach_every_mode(
    settings: Settings, brain: ResearchBrain, mode: str
) -> None:
    async def answer(params: ElicitRequestParams) -> ElicitResult:
        first = next(iter(params.requested_schema["properties"]))  # type: ignore[union-attr]
        return ElicitResult(action="accept", content={first: "analytics (OLAP)"})

    started, final, _ = await _research(
        settings,
        User(answer),
        query="Which explanation of the best database ranking holds?",
        mode=mode,
    )
    assert started["clarification"]["outcome"] == "answered"
    planners = [u for agent, _, u in brain.history if agent in ("planner", "investigator")]
    assert planners and "analytics (OLAP)" in planners[0]
    assert final["status"] == "completed"


async def test_a_question_waiting_for_its_answer_holds_up_nothing_else(
    settings: Settings,
) -> None:
    asked, answer_now = anyio.Event(), anyio.Event()

    async def slow_user(params: ElicitRequestParams) -> ElicitResult:
        asked.set()
        await answer_now.wait()
        return ElicitResult(action="decline")

    server = create_server(lambda: settings)
    async with Client(server, mode="legacy", elicitation_callback=User(slow_user)) as client:
        first = await call(client, action="deep-research", query=CLEAR, clarify="off")
        started: dict[str, Any] = {}

        async def start_vague() -> None:
            started.update(await call(client, action="deep-research", query=VAGUE))

        async with anyio.create_task_group() as tg:
            tg.start_soon(start_vague)
            await asked.wait()  # the form is open: everything else is still answered
            with anyio.fail_after(5):
                listed = await call(client, action="deep-research-list")
                status = await call(
                    client, action="deep-research-status", research_id=first["data"]["research_id"]
                )
            assert [item["query"] for item in listed["data"]["items"]] == [CLEAR]
            assert status["success"]
            answer_now.set()
        assert started["data"]["clarification"]["outcome"] == "declined"


@pytest.mark.stdio
async def test_over_stdio_the_editor_is_asked_and_shown_the_plan(
    research_env: dict[str, str], tavily_server: Any
) -> None:
    from tests.e2e.conftest import editor_stdio

    async def answer(params: ElicitRequestParams) -> ElicitResult:
        properties = params.requested_schema["properties"]  # type: ignore[union-attr]
        if "decision" in properties:
            return ElicitResult(action="accept", content={"decision": "approve"})
        return ElicitResult(action="accept", content={"q1": "analytics (OLAP)"})

    user = User(answer)
    async with editor_stdio(research_env, user) as client:
        started = await call(
            client, action="deep-research", query=VAGUE, review_plan=True, max_iterations=1
        )
        assert started["data"]["clarification"]["outcome"] == "answered"
        final = await run_to_end(client, started["data"]["research_id"])
    assert final["status"] == "completed" and final["plan_review"] == "approved"
    assert len(user.forms) == 2  # the questions, then the plan
