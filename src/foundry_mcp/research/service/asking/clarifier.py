"""The clarifier: before a research starts, asks the user about a question that could be read in
ways that would change the research, when the user can be asked.

One short judgement call, then at most three questions in one form. Whatever happens (a clear
question, answers, a decline, a dismissal, no answer in time, a judgement that failed) the result
is a :class:`Clarification` or None, never an error: the research goes on with its assumptions.
"""

from __future__ import annotations

import logging
from functools import partial

import anyio

from foundry_mcp.errors import FoundryError
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    Clarification,
    ClarifierOutput,
    Clarify,
    ClarifyingQuestion,
    ResearchState,
)
from foundry_mcp.research.service.asking.asker import Asker, Form, Question, Reply, checked_reply
from foundry_mcp.research.service.asking.clarifier_prompts import clarifier_prompts

log = logging.getLogger(__name__)

JUDGE_SECONDS = 30.0  # the judgement is one short call; a slower one is given up
JUDGE_MAX_TOKENS = 600
OUTCOMES = {"decline": "declined", "cancel": "dismissed", "timeout": "timed_out"}


async def judge(llm: ResearchLLM, state: ResearchState) -> ClarifierOutput | None:
    """The clarifier's judgement of the question (None: it failed or took too long)."""
    # Here, not at the top: the JSON reader it brings in is for research that runs, not for a
    # process that only reads research (a CLI command).
    from foundry_mcp.research.llm.answers import ask_json

    always = state.options.clarify == Clarify.ALWAYS
    system, user = clarifier_prompts(state.query, state.system_prompt, always)
    with anyio.move_on_after(JUDGE_SECONDS):
        try:
            return await ask_json(
                partial(llm.ask, "planning", json_mode=True, max_tokens=JUDGE_MAX_TOKENS),
                system,
                user,
                ClarifierOutput,
                state=state,
                agent=AgentRole.PLANNER,
            )
        except FoundryError as exc:
            log.info("the clarifier's judgement failed: %s", exc.message)
            return None
    log.info("the clarifier's judgement took over %g s; no question asked", JUDGE_SECONDS)
    return None


async def clarify(
    llm: ResearchLLM, state: ResearchState, asker: Asker, timeout: float
) -> Clarification | None:
    """Judge the question and, when it needs it, ask the user; the outcome, recorded as a
    decision (None: the judgement failed; the planner then makes its own assumptions).

    An accepted answer that does not fit the form is an ``InputError`` (nothing is started).
    """
    output = await judge(llm, state)
    if output is None:
        return None
    questions = output.questions
    if not questions or not (output.ambiguous or state.options.clarify == Clarify.ALWAYS):
        clarification = Clarification(outcome="clear")
    else:
        form = form_of(questions)
        reply = checked_reply(form, await asker.ask(form, timeout))
        clarification = outcome_of(questions, reply)
    state.record(
        AgentDecision(
            agent=AgentRole.PLANNER,
            action="clarify",
            rationale=output.reason or f"The question is {clarification.outcome}.",
            outputs=clarification.model_dump(mode="json"),
        )
    )
    return clarification


def form_of(questions: list[ClarifyingQuestion]) -> Form:
    """The questions as one form: a choice where there are choices, free text otherwise."""
    fields = [
        Question(
            name=question.id,
            title=question.question,
            description=f"Unanswered: {question.assumption}" if question.assumption else "",
            kind="choice" if question.choices else "text",
            choices=question.choices,
        )
        for question in questions
    ]
    plural = "a few questions" if len(fields) > 1 else "a question"
    return Form(
        message=f"Before researching, {plural} to aim the research at what you mean "
        "(answer what you like; the rest is assumed as shown).",
        questions=fields,
    )


def outcome_of(questions: list[ClarifyingQuestion], reply: Reply) -> Clarification:
    """What came back: the answers, and the assumptions made for the questions left open."""
    answers = {q.id: reply.text(q.id) for q in questions if reply.text(q.id)}
    assumed = [q.assumption for q in questions if q.id not in answers and q.assumption]
    if reply.action == "accept":
        outcome = "answered" if answers else "declined"
    else:
        outcome = OUTCOMES[reply.action]
    return Clarification(
        outcome=outcome,
        questions=questions,
        answers=answers,
        assumptions=assumed,
    )
