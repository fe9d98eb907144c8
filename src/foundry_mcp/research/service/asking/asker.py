"""Asking the user something while a call is answered: a small form, and what came back.

The research code only knows :class:`Asker`; the MCP server asks through the client
(elicitation: :mod:`foundry_mcp.server.asking`), the terminal asks on the terminal
(:mod:`foundry_mcp.cli.asking`). A caller that cannot ask passes no asker, and the research
goes on without the answer.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from foundry_mcp.errors import InputError


class Question(BaseModel):
    """One field of a form: free text, one of some choices, or yes/no."""

    name: str
    title: str
    description: str = ""
    kind: Literal["text", "choice", "boolean"] = "text"
    choices: list[str] = Field(default_factory=list)
    default: str | bool | None = None
    required: bool = False


class Form(BaseModel):
    """What is asked: a message and its fields (flat, as MCP elicitation allows)."""

    message: str
    questions: list[Question]

    def json_schema(self) -> dict[str, Any]:
        """The form as the restricted JSON Schema of an MCP elicitation request."""
        properties: dict[str, Any] = {}
        for question in self.questions:
            spec: dict[str, Any] = {"title": question.title}
            if question.description:
                spec["description"] = question.description
            if question.kind == "boolean":
                spec["type"] = "boolean"
            else:
                spec["type"] = "string"
                if question.kind == "choice":
                    spec["enum"] = list(question.choices)
            if question.default is not None:
                spec["default"] = question.default
            properties[question.name] = spec
        required = [q.name for q in self.questions if q.required]
        return {
            "type": "object",
            "properties": properties,
            **({"required": required} if required else {}),
        }


ReplyAction = Literal["accept", "decline", "cancel", "timeout"]


class Reply(BaseModel):
    """The user's answer: accepted with its content, declined, dismissed, or none in time."""

    action: ReplyAction
    content: dict[str, Any] = Field(default_factory=dict)

    def text(self, name: str) -> str:
        """The answer to field ``name`` as trimmed text ('' when not given)."""
        value = self.content.get(name)
        if value is None or isinstance(value, (dict, list)):
            return ""
        return str(value).strip()


class Asker(Protocol):
    """Puts a form to the user and returns the reply; never raises for a user's refusal, a
    client that went away or a timeout (those are replies too)."""

    async def ask(self, form: Form, timeout: float) -> Reply:
        """Ask ``form``; wait at most ``timeout`` seconds for the answer."""
        ...


def checked_reply(form: Form, reply: Reply) -> Reply:
    """The reply with only the form's fields, each of the right kind; an accepted reply whose
    content does not fit the form is an :class:`~foundry_mcp.errors.InputError`."""
    if reply.action != "accept":
        return Reply(action=reply.action)
    content: dict[str, Any] = {}
    for question in form.questions:
        value = reply.content.get(question.name)
        if value is None or value == "":
            if question.required:
                raise InputError(
                    f"The answer left out '{question.title}'.",
                    remediation="Answer every required field of the form.",
                    details={"field": question.name},
                )
            continue
        if question.kind == "boolean":
            if not isinstance(value, bool):
                raise _misfit(question, "yes or no")
        elif not isinstance(value, str):
            raise _misfit(question, "text")
        elif question.kind == "choice" and value not in question.choices:
            raise _misfit(question, "one of " + ", ".join(question.choices))
        content[question.name] = value
    return Reply(action="accept", content=content)


def _misfit(question: Question, expected: str) -> InputError:
    return InputError(
        f"The answer to '{question.title}' does not fit the form: {expected} was expected.",
        remediation="Answer the form again with a value of the kind it asks for.",
        details={"field": question.name},
    )
