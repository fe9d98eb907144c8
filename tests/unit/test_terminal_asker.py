"""The terminal's questions: a number or the text picks a choice, a wrong answer is asked
again, Enter leaves a question to its default, end of input dismisses the form, and a person
who never answers lets the research go on; a question given up leaves nothing reading its
input: the next question gets the next line, and what was typed for the question given up is
dropped. The answers are typed into a real pipe, or a pseudo-terminal."""

from __future__ import annotations

import io
import os
import pty
import select
from collections.abc import Iterator
from contextlib import suppress

import anyio
import pytest

from foundry_mcp.cli.asking import TerminalAsker, TypedLines
from foundry_mcp.research.service.asking.asker import Form, Question

pytestmark = pytest.mark.anyio

FORM = Form(
    message="Before researching, a few questions.",
    questions=[
        Question(name="q1", title="Which workload?", kind="choice", choices=["OLTP", "OLAP"]),
        Question(name="q2", title="Since when?"),
        Question(name="queries", title="The searches", default="first\nsecond"),
    ],
)


OTHER = Form(
    message="Research plan.",
    questions=[Question(name="decision", title="Approve?", kind="choice", choices=["yes", "no"])],
)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    """A pipe: its read end is the asker's input, its write end the person typing."""
    read, write = os.pipe()
    yield read, write
    for end in (write, read):  # the writer first: a read under way ends
        with suppress(OSError):  # closed by the test
            os.close(end)


def typed(pipe: tuple[int, int], *lines: str, out: io.StringIO | None = None) -> TerminalAsker:
    """An asker reading ``lines`` as typed into the pipe, then end of input."""
    read, write = pipe
    os.write(write, "".join(line + "\n" for line in lines).encode())
    os.close(write)
    return TerminalAsker(TypedLines(read), out or io.StringIO())


def unread(fd: int) -> bool:
    """Whether something typed on ``fd`` waits to be read."""
    return bool(select.select([fd], [], [], 0)[0])


@pytest.mark.parametrize(
    ("lines", "content"),
    [
        (["2", "2024", ""], {"q1": "OLAP", "q2": "2024", "queries": "first\nsecond"}),
        (["oltp", "", "a; b ;c"], {"q1": "OLTP", "queries": "a\nb\nc"}),
    ],
)
async def test_answers_by_number_by_text_and_enter_keeps_the_default(
    pipe: tuple[int, int], lines: list[str], content: dict[str, str]
) -> None:
    reply = await typed(pipe, *lines).ask(FORM, 5)
    assert reply.action == "accept" and reply.content == content


async def test_a_wrong_choice_is_asked_again(pipe: tuple[int, int]) -> None:
    out = io.StringIO()
    reply = await typed(pipe, "7", "banana", "1", "", "", out=out).ask(FORM, 5)
    assert reply.content["q1"] == "OLTP"
    assert out.getvalue().count("please answer with a number from 1 to 2") == 2


async def test_end_of_input_dismisses(pipe: tuple[int, int]) -> None:
    asker = typed(pipe, "1")
    assert (await asker.ask(FORM, 5)).action == "cancel"
    assert (await asker.ask(OTHER, 5)).action == "cancel"  # a pipe's end of input is final


async def test_silence_times_out(pipe: tuple[int, int]) -> None:
    silent = TerminalAsker(TypedLines(pipe[0]), io.StringIO())
    assert (await silent.ask(FORM, 0.2)).action == "timeout"


async def test_a_question_given_up_leaves_the_next_line_to_the_next_question(
    pipe: tuple[int, int],
) -> None:
    read, write = pipe
    lines = TypedLines(read)
    asker = TerminalAsker(lines, io.StringIO())
    assert (await asker.ask(FORM, 0.2)).action == "timeout"
    # The read begun for the question given up ends with the next line typed: the next form
    # drops it.
    os.write(write, b"2\n")
    with anyio.fail_after(5):
        while not lines._lines:  # read and handed over
            await anyio.sleep(0.01)
    # Then nothing reads until a question wants a line: typed ahead, it waits in the pipe.
    os.write(write, b"1\n")
    await anyio.sleep(0.2)
    assert unread(read)
    with anyio.fail_after(5):
        reply = await asker.ask(OTHER, 5)
    assert reply.action == "accept" and reply.content == {"decision": "yes"}


async def test_on_a_terminal_end_of_input_ends_one_form_only() -> None:
    leader, follower = pty.openpty()  # in line mode: Ctrl-D at a line's start ends input
    try:
        asker = TerminalAsker(TypedLines(follower), io.StringIO())
        os.write(leader, b"\x04")
        assert (await asker.ask(OTHER, 5)).action == "cancel"
        os.write(leader, b"2\n")
        reply = await asker.ask(OTHER, 5)
        assert reply.content == {"decision": "no"}
    finally:
        os.close(leader)
        os.close(follower)
