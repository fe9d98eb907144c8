"""A plan to approve (``review_plan``), through real MCP client sessions: nothing is searched
before approval; the plan is in the status of the waiting research, which survives a server
restart; resume approves it as shown or edited; a client with elicitation is shown the plan as a
form; malformed plans and answers are refused and the research keeps waiting; an answer that
comes after another client approved or cancelled the research is not applied, saying why."""

from __future__ import annotations

from datetime import timedelta
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
from tests.fakes.http import FakeHTTPServer
from tests.support import searched_queries

pytestmark = pytest.mark.anyio

QUESTION = "How does SQLite's write-ahead log handle checkpoints?"
EDITED = ["sqlite wal checkpoint starvation", "sqlite wal_autocheckpoint pragma"]


async def _waiting(client: Client, **arguments: Any) -> dict[str, Any]:
    started = await call(
        client,
        action="deep-research",
        query=QUESTION,
        mode="simple",
        review_plan=True,
        max_iterations=1,
        **arguments,
    )
    assert started["success"], started
    return await run_to_end(client, started["data"]["research_id"])


async def test_nothing_is_searched_before_approval_and_the_waiting_research_survives_a_restart(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        waiting = await _waiting(client)
    assert waiting["status"] == "waiting" and waiting["waiting_for"] == "plan_approval"
    assert waiting["phase"] == "gathering"
    assert len(waiting["plan"]["queries"]) == 3 and waiting["plan"]["editable"]
    assert "deep-research-resume" in waiting["next_action"]
    assert searched_queries(tavily_server) == [] and brain.calls["analyzer"] == 0

    # A new server over the same store: the research still waits, and resumes as edited.
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        rid = waiting["research_id"]
        again = await call(client, action="deep-research-status", research_id=rid)
        assert again["data"]["status"] == "waiting"
        assert again["data"]["plan"] == waiting["plan"]
        resumed = await call(client, action="deep-research-resume", research_id=rid, plan=EDITED)
        assert resumed["data"]["plan"] == "edited", resumed
        final = await run_to_end(client, rid)
    assert final["status"] == "completed", final
    assert final["plan_review"] == "edited"
    assert set(searched_queries(tavily_server)) == set(
        EDITED
    )  # the edited plan is what was searched


async def test_resume_without_plan_approves_the_plan_as_shown(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        waiting = await _waiting(client)
        rid = waiting["research_id"]
        resumed = await call(client, action="deep-research-resume", research_id=rid)
        assert resumed["data"]["plan"] == "approved"
        final = await run_to_end(client, rid)
    assert final["status"] == "completed"
    assert set(searched_queries(tavily_server)) == set(waiting["plan"]["queries"])


async def test_the_wait_for_approval_is_not_charged_to_max_time_s(
    settings: Settings, research_clock: type[MovedClock]
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        rid = (await _waiting(client, max_time_s=60))["research_id"]
        research_clock.ahead += timedelta(hours=1)  # the plan waits an hour for its user
        await call(client, action="deep-research-resume", research_id=rid)
        final = await run_to_end(client, rid)
    assert final["status"] == "completed", final
    assert not [w for w in final["warnings"] if "max_time_s" in w], final["warnings"]
    assert final["progress"]["findings"] > 0


@pytest.mark.parametrize(
    ("plan", "says"),
    [
        ({"steps": ["x"]}, "malformed"),
        ([], "between 1 and"),
        ([f"query {i}" for i in range(30)], "between 1 and"),
        ({"queries": "one query"}, "list of texts"),
    ],
)
async def test_a_malformed_plan_is_refused_and_the_research_keeps_waiting(
    settings: Settings, tavily_server: FakeHTTPServer, plan: Any, says: str
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        rid = (await _waiting(client))["research_id"]
        refused = await call(client, action="deep-research-resume", research_id=rid, plan=plan)
        assert not refused["success"]
        assert says in refused["error"] and "keeps waiting" in refused["data"]["remediation"]
        still = await call(client, action="deep-research-status", research_id=rid)
        assert still["data"]["status"] == "waiting"
    assert searched_queries(tavily_server) == []


async def test_a_plan_given_to_a_research_that_does_not_wait_is_refused(
    settings: Settings,
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        started = await call(client, action="deep-research", query=QUESTION, max_iterations=1)
        final = await run_to_end(client, started["data"]["research_id"])
        refused = await call(
            client, action="deep-research-resume", research_id=final["research_id"], plan=EDITED
        )
    assert not refused["success"] and "not waiting" in refused["error"]


async def test_cancelling_a_waiting_research_ends_it(settings: Settings) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        rid = (await _waiting(client))["research_id"]
        cancelled = await call(client, action="deep-research-cancel", research_id=rid)
        assert cancelled["data"]["status"] == "cancelled"


class Reviewer:
    """The user behind an eliciting client, answering the plan's form with ``content``."""

    def __init__(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.forms: list[ElicitRequestParams] = []

    async def __call__(self, _: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.forms.append(params)
        return ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


async def _reviewed(settings: Settings, reviewer: Reviewer) -> dict[str, Any]:
    async with Client(
        create_server(lambda: settings), mode="legacy", elicitation_callback=reviewer
    ) as client:
        # clarify off: only the plan's form is asked
        return await _waiting(client, clarify="off")


async def test_an_eliciting_client_is_shown_the_plan_and_its_edit_is_researched(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    reviewer = Reviewer("accept", {"decision": "approve", "queries": "\n".join(EDITED)})
    final = await _reviewed(settings, reviewer)
    assert final["status"] == "completed", final
    (form,) = reviewer.forms
    assert QUESTION in form.message and "Planned searches" in form.message  # type: ignore[union-attr]
    assert final["plan_review"] == "edited"
    assert set(searched_queries(tavily_server)) == set(EDITED)


@pytest.mark.parametrize(
    ("action", "content", "status"),
    [
        ("accept", {"decision": "cancel"}, "cancelled"),
        ("decline", None, "cancelled"),
        ("cancel", None, "waiting"),
    ],
)
async def test_cancel_decline_or_dismiss_the_plan(
    settings: Settings,
    tavily_server: FakeHTTPServer,
    action: str,
    content: dict[str, Any] | None,
    status: str,
) -> None:
    final = await _reviewed(settings, Reviewer(action, content))
    assert final["status"] == status
    assert searched_queries(tavily_server) == []


async def test_an_answer_that_does_not_fit_the_plan_form_is_refused(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    reviewer = Reviewer("accept", {"decision": "maybe"})
    async with Client(
        create_server(lambda: settings), mode="legacy", elicitation_callback=reviewer
    ) as client:
        started = await call(
            client, action="deep-research", query=QUESTION, review_plan=True, clarify="off"
        )
        rid = started["data"]["research_id"]
        for _ in range(50):  # until it waits (the status answers the form's refusal then)
            status = await call(
                client, action="deep-research-status", research_id=rid, wait=True, wait_timeout=2
            )
            if not status["success"]:
                break
        assert not status["success"] and "does not fit the form" in status["error"]
        reviewer.action, reviewer.content = "cancel", None
        still = await call(client, action="deep-research-status", research_id=rid)
        assert still["data"]["status"] == "waiting"
    assert searched_queries(tavily_server) == []


async def test_a_hierarchical_plan_is_edited_as_its_sub_questions(
    settings: Settings, brain: ResearchBrain
) -> None:
    parts = ["How does PostgreSQL replicate?", "How does MySQL replicate?"]
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        started = await call(
            client,
            action="deep-research",
            query="Compare PostgreSQL and MySQL replication",
            mode="hierarchical",
            review_plan=True,
            max_iterations=1,
        )
        waiting = await run_to_end(client, started["data"]["research_id"])
        assert waiting["status"] == "waiting" and waiting["plan"]["mode"] == "hierarchical"
        assert waiting["plan"]["queries"] != parts
        rid = waiting["research_id"]
        await call(client, action="deep-research-resume", research_id=rid, plan={"queries": parts})
        final = await run_to_end(client, rid)
    assert final["status"] == "completed", final
    assert [sq["question"] for sq in final["tree"]["sub_questions"]] == parts


async def test_a_dismissed_plan_is_not_shown_again_at_every_status_read(
    settings: Settings,
) -> None:
    reviewer = Reviewer("cancel")
    async with Client(
        create_server(lambda: settings), mode="legacy", elicitation_callback=reviewer
    ) as client:
        waiting = await _waiting(client, clarify="off")
        for _ in range(3):
            again = await call(
                client, action="deep-research-status", research_id=waiting["research_id"]
            )
            assert again["data"]["status"] == "waiting"
    assert len(reviewer.forms) == 1


class LateReviewer:
    """A user who opens the plan's form and answers with ``content`` (None: declines) only once
    ``answer_now`` is set."""

    def __init__(self, content: dict[str, Any] | None) -> None:
        self.content = content
        self.asked, self.answer_now = anyio.Event(), anyio.Event()

    async def __call__(self, _: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked.set()
        await self.answer_now.wait()
        if self.content is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=self.content)


async def _answered_late(
    settings: Settings, other: Client, reviewer: LateReviewer, meanwhile: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """A plan waits; ``reviewer``'s client reads its status and is shown the form; while it is
    open ``other`` (a client of a second server on the same store, which cannot be asked) calls
    ``meanwhile`` on the research; then the form is answered. The status that asked, and the
    research's id."""
    rid = (await _waiting(other, clarify="off"))["research_id"]
    asked: dict[str, Any] = {}
    async with Client(
        create_server(lambda: settings), mode="legacy", elicitation_callback=reviewer
    ) as client:

        async def read_status() -> None:
            asked.update(await call(client, action="deep-research-status", research_id=rid))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_status)
            with anyio.fail_after(10):
                await reviewer.asked.wait()  # the form is open
            done = await call(other, research_id=rid, **meanwhile)
            assert done["success"], done
            reviewer.answer_now.set()
    assert asked["success"], asked
    return asked["data"], rid


async def test_a_late_approval_does_not_resume_a_research_cancelled_meanwhile(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    reviewer = LateReviewer({"decision": "approve"})
    async with Client(create_server(lambda: settings), mode="legacy") as other:
        cancel = {"action": "deep-research-cancel"}
        data, rid = await _answered_late(settings, other, reviewer, cancel)
        assert data["status"] == "cancelled", data
        answer = data["plan_answer"]
        assert answer["answer"] == "approve" and not answer["applied"]
        assert "was cancelled while the form was open" in answer["reason"]
        assert "approval given in the form was not applied" in answer["reason"]
        still = await call(other, action="deep-research-status", research_id=rid)
        assert still["data"]["status"] == "cancelled"
    assert searched_queries(tavily_server) == []


async def test_a_late_decline_does_not_cancel_a_research_approved_meanwhile(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    reviewer = LateReviewer(None)  # declines: that would cancel a research still waiting
    async with Client(create_server(lambda: settings), mode="legacy") as other:
        approve = {"action": "deep-research-resume"}
        data, rid = await _answered_late(settings, other, reviewer, approve)
        final = await run_to_end(other, rid)
    assert final["status"] == "completed", final
    assert searched_queries(tavily_server)  # it went on as the other client approved it
    assert data["status"] != "cancelled" and data["plan_review"] == "approved"
    answer = data["plan_answer"]
    assert answer["answer"] == "cancel" and not answer["applied"], data
    assert "had its plan approved by another client" in answer["reason"]
    assert "cancellation given in the form was not applied" in answer["reason"]
