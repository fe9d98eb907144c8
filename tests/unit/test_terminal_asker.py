"""The terminal's questions: a number or the text picks a choice, a wrong answer is asked
again, Enter leaves a question to its default, end of input dismisses the form, and a person
who never answers lets the research go on."""

from __future__ import annotations

import io
import threading

import pytest

from foundry_mcp.cli.asking import TerminalAsker
from foundry_mcp.research.asking import Form, Question

pytestmark = pytest.mark.anyio

FORM = Form(
    message="Before researching, a few questions.",
    questions=[
        Question(name="q1", title="Which workload?", kind="choice", choices=["OLTP", "OLAP"]),
        Question(name="q2", title="Since when?"),
        Question(name="queries", title="The searches", default="first\nsecond"),
    ],
)


def typed(*lines: str) -> TerminalAsker:
    """An asker reading ``lines`` as typed, then end of input."""
    pending = list(lines)

    def read_line() -> str:
        if not pending:
            raise EOFError
        return pending.pop(0) + "\n"

    return TerminalAsker(read_line, io.StringIO())


async def test_answers_by_number_by_text_and_enter_keeps_the_default() -> None:
    reply = await typed("2", "2024", "").ask(FORM, 5)
    assert reply.action == "accept"
    assert reply.content == {"q1": "OLAP", "q2": "2024", "queries": "first\nsecond"}
    reply = await typed("oltp", "", "a; b ;c").ask(FORM, 5)
    assert reply.content == {"q1": "OLTP", "queries": "a\nb\nc"}


async def test_a_wrong_choice_is_asked_again() -> None:
    out = io.StringIO()
    pending = ["7", "banana", "1", "", ""]
    asker = TerminalAsker(lambda: pending.pop(0) + "\n", out)
    reply = await asker.ask(FORM, 5)
    assert reply.content["q1"] == "OLTP"
    assert out.getvalue().count("please answer with a number from 1 to 2") == 2


async def test_end_of_input_dismisses_and_silence_times_out() -> None:
    assert (await typed("1").ask(FORM, 5)).action == "cancel"
    never = threading.Event()

    def wait_forever() -> str:
        never.wait(10)
        return "\n"

    reply = await TerminalAsker(wait_forever, io.StringIO()).ask(FORM, 0.2)
    never.set()
    assert reply.action == "timeout"
