"""Asking the user on the terminal: the forms a research puts to its user (clarifying questions,
a plan to approve), one question at a time on stderr, answers read from stdin.

Only when both are a terminal (:func:`terminal_asker`): a script piping into ``foundry-mcp``
is never stopped by a question. Enter leaves a question unanswered (its default, or the
research's assumption); end of input (Ctrl-D) dismisses the form; no answer within the timeout
leaves it too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

import anyio

from foundry_mcp.research.asking import Form, Question, Reply

ReadLine = Callable[[], str]


class TerminalAsker:
    """Asks forms on a terminal; see the module."""

    def __init__(self, read_line: ReadLine | None = None, out: TextIO | None = None) -> None:
        self._read_line = read_line or _read_stdin
        self._out = out or sys.stderr

    async def ask(self, form: Form, timeout: float) -> Reply:
        """Ask ``form``'s questions in turn; wait at most ``timeout`` seconds in all."""
        with anyio.move_on_after(timeout):
            return await anyio.to_thread.run_sync(self._ask_all, form, abandon_on_cancel=True)
        self._say("\n(no answer in time; the research goes on without it)")
        return Reply(action="timeout")

    def _ask_all(self, form: Form) -> Reply:
        self._say(f"\n{form.message}\n")
        content: dict[str, Any] = {}
        for question in form.questions:
            try:
                answer = self._ask_one(question)
            except EOFError:
                self._say("")
                return Reply(action="cancel")
            if answer is not None:
                content[question.name] = answer
        return Reply(action="accept", content=content)

    def _ask_one(self, question: Question) -> str | bool | None:
        if question.description:
            self._say(f"  ({question.description})")
        if question.kind == "choice":
            for number, choice in enumerate(question.choices, start=1):
                self._say(f"  {number}. {choice}")
        shown = _shown_default(question)
        while True:
            self._out.write(f"{question.title}{shown} ")
            self._out.flush()
            text = self._read_line().strip()
            if not text:
                return question.default if question.default is not None else None
            answer = _read_answer(question, text)
            if answer is not None:
                return answer
            self._say(_expected(question))

    def _say(self, text: str) -> None:
        print(text, file=self._out, flush=True)


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


def _read_stdin() -> str:
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def terminal_asker() -> TerminalAsker | None:
    """An asker when a person is at the terminal (stdin and stderr are terminals), else None."""
    if sys.stdin.isatty() and sys.stderr.isatty():
        return TerminalAsker()
    return None
