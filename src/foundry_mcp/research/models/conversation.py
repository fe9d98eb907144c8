"""What a research and its user say to each other: clarifying questions, the plan's review and
follow-up questions on the finished research (the records; asking the user is
:mod:`foundry_mcp.research.service.asking`'s)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field, field_validator

from foundry_mcp.research.models.base import _Model, new_id, utcnow

MAX_CLARIFYING_QUESTIONS = 3


class Clarify(StrEnum):
    """When a research asks its user about a vague question before researching it."""

    AUTO = "auto"  # when the question is ambiguous and the client can answer
    OFF = "off"
    ALWAYS = "always"  # at least one question whenever the client can answer


class ClarifyingQuestion(_Model):
    """One question put to the user before researching, with choices where they fit."""

    id: str
    question: str
    choices: list[str] = Field(default_factory=list)
    assumption: str = ""  # what the research assumes when it gets no answer


class ClarifierOutput(_Model):
    """The clarifier's handoff: whether the question is ambiguous, and the questions to ask."""

    ambiguous: bool = False
    reason: str = ""
    questions: list[ClarifyingQuestion] = Field(default_factory=list)

    @field_validator("questions", mode="before")
    @classmethod
    def _numbered(cls, value: object) -> list[dict[str, object]]:
        """Readable questions only, at most three, each with an id and at most five choices."""
        if not isinstance(value, list):
            return []
        kept: list[dict[str, object]] = []
        for item in value:
            if not isinstance(item, dict) or not isinstance(item.get("question"), str):
                continue
            text = " ".join(item["question"].split())[:300]
            raw = item.get("choices")
            choices = (
                [" ".join(c.split())[:100] for c in raw if isinstance(c, str) and c.strip()]
                if isinstance(raw, list)
                else []
            )
            assumption = item.get("assumption")
            if text:
                kept.append(
                    {
                        "id": f"q{len(kept) + 1}",
                        "question": text,
                        "choices": list(dict.fromkeys(choices))[:5],
                        "assumption": " ".join(assumption.split())[:300]
                        if isinstance(assumption, str)
                        else "",
                    }
                )
        return kept[:MAX_CLARIFYING_QUESTIONS]


ClarificationOutcome = Literal[
    "clear",  # the question needed no clarification
    "answered",
    "declined",  # the user declined the questions
    "dismissed",  # the form was closed unanswered (an editor with nobody there cancels it)
    "timed_out",
    "not_asked",  # the client could not be asked: the research made assumptions
]


class Clarification(_Model):
    """What was asked before researching and what came back; it shapes the research brief."""

    outcome: ClarificationOutcome
    questions: list[ClarifyingQuestion] = Field(default_factory=list)
    answers: dict[str, str] = Field(default_factory=dict)  # question id -> the user's answer
    assumptions: list[str] = Field(default_factory=list)  # taken where nothing was answered

    def as_brief(self) -> str:
        """The clarification in a few lines for the planner and the report ('' if none)."""
        lines = []
        for question in self.questions:
            answer = self.answers.get(question.id)
            if answer:
                lines.append(f"- Asked: {question.question} Answer: {answer}")
            elif question.assumption:
                lines.append(
                    f"- Asked: {question.question} No answer; assumed: {question.assumption}"
                )
        said = {q.assumption for q in self.questions}  # already told with their question
        lines += [f"- Assumed: {text}" for text in self.assumptions if text not in said]
        return "\n".join(lines)


PlanReviewState = Literal["waiting", "approved", "edited"]


class PlanReview(_Model):
    """A plan shown to the user before anything is searched (``review_plan``)."""

    state: PlanReviewState = "waiting"
    decided_at: datetime | None = None


class FollowUpQuote(_Model):
    """A passage of a saved source that backs a follow-up answer."""

    source_id: str
    number: int  # the source's number in the research's report
    quote: str


class FollowUp(_Model):
    """A question asked about a completed research, answered from its saved sources."""

    id: str = Field(default_factory=lambda: new_id("fu"))
    question: str
    answer: str = ""
    answerable: bool = True
    source_ids: list[str] = Field(default_factory=list)  # cited, in the order first cited
    quotes: list[FollowUpQuote] = Field(default_factory=list)
    verdicts: dict[str, int] = Field(default_factory=dict)  # verdict -> sentences so judged
    reason: str = ""  # what the answer rests on, or what the sources lack
    gap_id: str | None = None  # unanswerable: the gap that carries it into a further round
    asked_at: datetime = Field(default_factory=utcnow)
