"""Asking a model for a JSON answer: read leniently, repaired once, noted; in one place.

Every agent asks the same way, through :func:`ask_json`:

1. the prompts are sent by the agent's own ``ask`` (its purpose, token fitting, limits);
2. the answer is read by :func:`~foundry_mcp.research.llm.jsonparse.read_answer`: what is
   readable is kept, a field or item that is not is left out;
3. an answer that cannot be read at all (no JSON object, or a required field unreadable), or
   that fails the agent's own ``check``, is sent back once with what was wrong, asking for the
   JSON object alone (the repaired answer is kept unless it is worse);
4. what was left out is told in an ``answer_partly_read`` event and, once per agent, a warning;
   a repair in an ``answer_repair`` event; an answer still unreadable returns None, and the
   agent's ``fallback`` is recorded.

The agent then does what it does with the answer (keeps known source ids, ranks...), or falls
back. Model output is never kept as content when it cannot be read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel

from foundry_mcp.errors import FoundryError
from foundry_mcp.research.llm.jsonparse import Reading, read_answer
from foundry_mcp.research.models import AgentRole, ResearchState
from foundry_mcp.research.prompts.repair import repair_prompts

AnswerT = TypeVar("AnswerT", bound=BaseModel)

Ask = Callable[[str, str], Awaitable[str]]  # (system, user) prompts -> the model's text
RepairPrompts = Callable[[str, Sequence[str]], tuple[str, str]]  # (answer, errors) -> prompts
# What else is wrong with a readable answer; async for work kept off the loop (a schema's).
Check = Callable[[AnswerT], list[str] | Awaitable[list[str]]]
MAX_NOTED_PATHS = 20  # of one answer, in its event


async def ask_json(
    ask: Ask,
    system: str,
    user: str,
    model: type[AnswerT],
    *,
    state: ResearchState,
    agent: AgentRole,
    fallback: str | None = None,
    check: Check[AnswerT] | None = None,
    repair: RepairPrompts | None = None,
) -> AnswerT | None:
    """``model`` read from the answer to ``system`` and ``user``, or None; see the module.

    ``fallback``: what the agent does instead of an unreadable answer, recorded as its
    fallback when that happens. ``check``: what else is wrong with a readable answer (the
    structurer's schema errors; awaited when async), worth the one repair. ``repair``: the
    agent's own repair prompts; by default its instructions, its answer and the errors. A
    repair call that fails leaves the first answer as it was read.
    """
    text = await ask(system, user)
    reading = read_answer(text, model)
    problems = await _problems(reading, check)
    if problems:
        prompts = repair(text, problems) if repair else repair_prompts(system, text, problems)
        try:
            again = await ask(*prompts)
        except FoundryError as exc:
            state.warn(
                f"The {agent.value}'s request to correct an answer failed ({exc.message}); "
                "the answer was taken as first written."
            )
        else:
            repaired = read_answer(again, model)
            better = repaired.value is not None and (
                reading.value is None or not await _problems(repaired, check)
            )
            state.emit(
                "answer_repair",
                {
                    "agent": agent.value,
                    "answer": model.__name__,
                    "problems": list(problems[:MAX_NOTED_PATHS]),
                    "repaired": better,
                },
            )
            if better:
                reading = repaired
    _note(state, agent, model, reading)
    if reading.value is None and fallback:
        state.record_fallback(agent, fallback)
    return reading.value


async def _problems(reading: Reading[AnswerT], check: Check[AnswerT] | None) -> list[str]:
    """Why ``reading`` is worth a repair: unreadable, or the check's errors."""
    if reading.value is None:
        return list(reading.errors)
    if check is None:
        return []
    found = check(reading.value)
    return found if isinstance(found, list) else await found


def _note(
    state: ResearchState, agent: AgentRole, model: type[BaseModel], reading: Reading[AnswerT]
) -> None:
    """Tell what was left out of a readable answer, or read in another form."""
    if reading.value is None or not (reading.dropped or reading.coerced):
        return
    state.emit(
        "answer_partly_read",
        {
            "agent": agent.value,
            "answer": model.__name__,
            "dropped": list(reading.dropped[:MAX_NOTED_PATHS]),
            "coerced": list(reading.coerced[:MAX_NOTED_PATHS]),
        },
    )
    if reading.dropped:  # one warning per agent: the events say which answers and fields
        state.warn(
            f"Parts of the {agent.value}'s answers had the wrong type and were left out; the "
            "rest of each answer was kept."
        )
