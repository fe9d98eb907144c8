"""Asking the user on the terminal: the forms a research puts to its user (clarifying questions,
a plan to approve), one question at a time on stderr, answers read from stdin. The command's
end of :mod:`foundry_mcp.research.service.asking` (the MCP client's end:
:mod:`foundry_mcp.server.asking`).

Only when both are a terminal (:func:`terminal_asker`): a script piping into ``foundry-mcp``
is never stopped by a question. Enter leaves a question unanswered (its default, or the
research's assumption); end of input (Ctrl-D) dismisses the form; no answer within the timeout
leaves it too.

Lines are read by one reader per process (:class:`TypedLines`), a daemon thread that reads the
descriptor itself (never ``sys.stdin``, whose lock a read holds) and only while a question
waits. A question given up leaves nothing behind that takes the next question's line (the line
its read under way ends with, typed before the next form is shown, is dropped), nor anything
that holds the process open at its end waiting for Enter.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from functools import cache
from typing import Any, TextIO

import anyio

from foundry_mcp.plain import plain
from foundry_mcp.research.service.asking.asker import Form, Question, Reply

POLL_SECONDS = 0.05  # how often a question looks for its line: a typed answer is seen at once


class TypedLines:
    """The lines typed on ``fd``, read by a daemon thread only while a question waits for one.

    A question given up stops wanting a line: a read already under way ends with the next line
    typed, kept until the next form takes or drops it (:meth:`discard`), and nothing more is read
    until a question wants it. End of input ends the form waiting for it; on a pipe it is
    final, on a terminal (where Ctrl-D ends an answer, not the terminal) the next question reads
    on.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._tty = os.isatty(fd)
        self._lines: deque[str | None] = deque()  # read, not taken yet; None: end of input
        self._lock = threading.Lock()
        self._wanted = threading.Event()  # a question waits for a line
        self._reader: threading.Thread | None = None

    async def line(self) -> str:
        """The next line typed, with its newline; ``EOFError`` at the end of input."""
        if self._reader is None:
            self._reader = threading.Thread(target=self._read, name="terminal lines", daemon=True)
            self._reader.start()
        try:
            while True:
                with self._lock:
                    if self._lines:
                        line = self._lines[0]
                        if line is not None or self._tty:  # a pipe's end stays the end
                            self._lines.popleft()
                        break
                    self._wanted.set()
                await anyio.sleep(POLL_SECONDS)
        finally:
            self._wanted.clear()
        if line is None:
            raise EOFError
        return line

    def discard(self) -> None:
        """Drop the lines read and not taken (a pipe's end of input stays)."""
        with self._lock:
            ended = not self._tty and None in self._lines
            self._lines.clear()
            if ended:
                self._lines.append(None)

    def _read(self) -> None:
        pending = b""
        while True:
            self._wanted.wait()
            try:
                chunk = os.read(self._fd, 4096)
                final = not chunk and not self._tty
            except OSError:  # the terminal is gone
                chunk, final = b"", True
            *complete, pending = (pending + chunk).split(b"\n")
            lines: list[str | None] = [part.decode(errors="replace") + "\n" for part in complete]
            if not chunk:
                lines += [pending.decode(errors="replace"), None] if pending else [None]
                pending = b""
            with self._lock:
                self._lines.extend(lines)
                if lines:  # until a question wants the next one
                    self._wanted.clear()
            if final:
                return


@cache
def stdin_lines() -> TypedLines:
    """The one reader of this process's stdin."""
    return TypedLines(sys.stdin.fileno())


class TerminalAsker:
    """Asks forms on a terminal; see the module."""

    def __init__(self, lines: TypedLines | None = None, out: TextIO | None = None) -> None:
        self._lines = lines or stdin_lines()
        self._out = out or sys.stderr
        self._given_up = False  # the last form was not answered in time

    async def ask(self, form: Form, timeout: float) -> Reply:
        """Ask ``form``'s questions in turn; wait at most ``timeout`` seconds in all."""
        if self._given_up:  # read since: the answer to a question no longer asked
            self._lines.discard()
            self._given_up = False
        with anyio.move_on_after(timeout):
            return await self._ask_all(form)
        self._given_up = True
        self._say("\n(no answer in time; the research goes on without it)")
        return Reply(action="timeout")

    async def _ask_all(self, form: Form) -> Reply:
        self._say(f"\n{form.message}\n")
        content: dict[str, Any] = {}
        for question in form.questions:
            try:
                answer = await self._ask_one(question)
            except EOFError:
                self._say("")
                return Reply(action="cancel")
            if answer is not None:
                content[question.name] = answer
        return Reply(action="accept", content=content)

    async def _ask_one(self, question: Question) -> str | bool | None:
        if question.description:
            self._say(f"  ({question.description})")
        if question.kind == "choice":
            for number, choice in enumerate(question.choices, start=1):
                self._say(f"  {number}. {choice}")
        shown = _shown_default(question)
        while True:
            self._out.write(plain(f"{question.title}{shown} "))
            self._out.flush()
            text = (await self._lines.line()).strip()
            if not text:
                return question.default if question.default is not None else None
            answer = _read_answer(question, text)
            if answer is not None:
                return answer
            self._say(_expected(question))

    def _say(self, text: str) -> None:
        print(plain(text), file=self._out, flush=True)  # the questions are a model's words


def _shown_default(question: Question) -> str:
    if question.kind == "boolean":
        return " [y/n]"
    if isinstance(question.default, str) and "\n" in question.default:
        return "\n  (Enter keeps them as shown; or type the new ones separated by ';')\n  >"
    if question.default is not None:
        return f" [{question.default}]"
    return " (Enter to skip)" if not question.required else ""


def _read_answer(question: Question, text: str) -> str | bool | None:
    """The answer typed, read for the question's kind (None: not a valid answer)."""
    if question.kind == "boolean":
        return {"y": True, "yes": True, "n": False, "no": False}.get(text.lower())
    if question.kind == "choice":
        if text.isdigit() and 1 <= int(text) <= len(question.choices):
            return question.choices[int(text) - 1]
        matching = [c for c in question.choices if c.lower() == text.lower()]
        return matching[0] if matching else None
    if isinstance(question.default, str) and "\n" in question.default:
        return "\n".join(part.strip() for part in text.split(";") if part.strip())
    return text


def _expected(question: Question) -> str:
    if question.kind == "boolean":
        return "  please answer y or n"
    return f"  please answer with a number from 1 to {len(question.choices)}, or Enter"


def terminal_asker() -> TerminalAsker | None:
    """An asker when a person is at the terminal (stdin and stderr are terminals), else None."""
    if sys.stdin.isatty() and sys.stderr.isatty():
        return TerminalAsker()
    return None
