"""What the agents of hypotheses mode answer, read leniently.

Models drift from the asked shape: a confidence of "70%", "high" or 0.7; a priority of
"first"; a list written as one comma-separated string; a verdict of "partly supported"; a
hypothesis given as a bare string or under another key. Each field is mapped onto what was
asked, or defaulted, so that one odd field never costs the whole answer. Repeated hypotheses are
merged, and at most the asked number is kept, the most urgent first.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from foundry_mcp.research.models import Finding, Hypothesis, HypothesisVerdict, SearchStrategy

MIN_STATEMENT_CHARS = 8
DEFAULT_CONFIDENCE = 50

_CONFIDENCE_WORDS = {
    "very high": 90,
    "high": 80,
    "likely": 70,
    "medium": 50,
    "moderate": 50,
    "possible": 40,
    "low": 25,
    "unlikely": 20,
    "very low": 10,
}
_PRIORITY_WORDS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "highest": 1,
    "high": 1,
    "medium": 2,
    "low": 3,
    "lowest": 4,
}
_STATEMENT_KEYS = ("statement", "hypothesis", "title", "description", "name", "text")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_SPLIT = re.compile(r"[,;\n]")


def lenient_confidence(value: object) -> int | None:
    """0-100 from a number, a percentage, a fraction (0.7) or a word ("high"); None if none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = " ".join(value.lower().split())
        match = _NUMBER.search(text)
        if match is None:
            return _CONFIDENCE_WORDS.get(text.rstrip(". "))
        number, percent = float(match.group()), "%" in text
    elif isinstance(value, int | float):
        number, percent = float(value), False
    else:
        return None
    if not percent and 0 < number < 1:
        number *= 100
    return round(min(100.0, max(0.0, number)))


def lenient_priority(value: object) -> int | None:
    """1 (explore first) and up, from a number, "2nd", "first" or "high"; None if unreadable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return max(1, round(value))
    text = str(value).strip().lower()
    match = _NUMBER.search(text)
    if match is not None:
        return max(1, round(float(match.group())))
    return _PRIORITY_WORDS.get(text)


def lenient_strings(value: object) -> list[str]:
    """A list of distinct non-empty strings from a list, or from one delimited string."""
    if isinstance(value, str):
        items: list[Any] = _SPLIT.split(value)
    elif isinstance(value, list | tuple):
        items = [v for v in value if isinstance(v, str | int | float) and not isinstance(v, bool)]
    else:
        return []
    cleaned = (" ".join(str(item).split()) for item in items)
    return list(dict.fromkeys(item for item in cleaned if item))


def lenient_verdict(value: object) -> HypothesisVerdict:
    """A verdict from its name or a near wording; anything else is inconclusive."""
    text = str(value or "").strip().lower().replace("-", " ").replace("_", " ")
    if any(word in text for word in ("partial", "partly", "mixed", "some support")):
        return HypothesisVerdict.PARTIALLY_SUPPORTED
    if any(word in text for word in ("refut", "contradict", "disprov", "reject", "false")):
        return HypothesisVerdict.REFUTED
    if text.startswith(("support", "confirm", "true", "holds")):
        return HypothesisVerdict.SUPPORTED
    return HypothesisVerdict.INCONCLUSIVE


def lenient_bool(value: object) -> bool:
    """True for true, "yes", "sufficient", "stop"...; False for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    text = str(value or "").strip().lower()
    if text.startswith(("no", "false", "insufficient", "not", "continue")):
        return False
    return text.startswith(("yes", "true", "sufficient", "enough", "stop"))


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StrategyAnswer(_Answer):
    sources: list[str] = Field(default_factory=list)
    signals: list[str] = Field(default_factory=list)
    expected_entities: list[str] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)

    @field_validator("sources", "signals", "expected_entities", "queries", mode="before")
    @classmethod
    def _strings(cls, value: object) -> list[str]:
        return lenient_strings(value)


class HypothesisAnswer(_Answer):
    statement: str = ""
    confidence: int = DEFAULT_CONFIDENCE
    search_strategy: StrategyAnswer = Field(default_factory=StrategyAnswer)
    exploration_priority: int | None = None
    priority_reasoning: str = ""

    @field_validator("statement", "priority_reasoning", mode="before")
    @classmethod
    def _str(cls, value: object) -> str:
        return " ".join(_text(value).split())

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: object) -> int:
        confidence = lenient_confidence(value)
        return DEFAULT_CONFIDENCE if confidence is None else confidence

    @field_validator("exploration_priority", mode="before")
    @classmethod
    def _priority(cls, value: object) -> int | None:
        return lenient_priority(value)

    @field_validator("search_strategy", mode="before")
    @classmethod
    def _strategy(cls, value: object) -> object:
        return value if isinstance(value, dict) else {}


class GenerationAnswer(_Answer):
    research_brief: str = ""
    hypotheses: list[HypothesisAnswer] = Field(default_factory=list)

    @field_validator("research_brief", mode="before")
    @classmethod
    def _brief(cls, value: object) -> str:
        return _text(value)

    @field_validator("hypotheses", mode="before")
    @classmethod
    def _entries(cls, value: object) -> list[dict[str, Any]]:
        """Bare strings and renamed statement keys become hypothesis objects."""
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list):
            return []
        entries = []
        for item in value:
            if isinstance(item, str):
                item = {"statement": item}
            if not isinstance(item, dict):
                continue
            if not _text(item.get("statement")):
                named = next((item[k] for k in _STATEMENT_KEYS if _text(item.get(k))), "")
                item = {**item, "statement": named}
            entries.append(item)
        return entries


class AssessmentAnswer(_Answer):
    final_confidence: int | None = None
    verdict: HypothesisVerdict = HypothesisVerdict.INCONCLUSIVE
    evidence_for: list[str] = Field(default_factory=list)
    evidence_against: list[str] = Field(default_factory=list)
    entities_found: list[str] = Field(default_factory=list)
    reasoning: str = ""

    @field_validator("final_confidence", mode="before")
    @classmethod
    def _confidence(cls, value: object) -> int | None:
        return lenient_confidence(value)

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, value: object) -> HypothesisVerdict:
        return lenient_verdict(value)

    @field_validator("evidence_for", "evidence_against", "entities_found", mode="before")
    @classmethod
    def _strings(cls, value: object) -> list[str]:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = [value]
        return lenient_strings(value)

    @field_validator("reasoning", mode="before")
    @classmethod
    def _reasoning(cls, value: object) -> str:
        return _text(value)


class CoverageAnswer(_Answer):
    sufficient: bool = False
    reasoning: str = ""
    recommended_next: str | None = None

    @field_validator("sufficient", mode="before")
    @classmethod
    def _sufficient(cls, value: object) -> bool:
        return lenient_bool(value)

    @field_validator("reasoning", mode="before")
    @classmethod
    def _reasoning(cls, value: object) -> str:
        return _text(value)

    @field_validator("recommended_next", mode="before")
    @classmethod
    def _next(cls, value: object) -> str | None:
        if isinstance(value, bool) or value is None:
            return None
        return str(value).strip() or None


def _key(statement: str) -> str:
    return " ".join(re.findall(r"\w+", statement.lower()))


def hypotheses_from(answer: GenerationAnswer, limit: int) -> list[Hypothesis]:
    """The answer's usable hypotheses: repeats merged, in exploration order, at most ``limit``.

    Exploration order is the stated priority (unstated: the position in the answer), ties
    broken by confidence, then position; priorities are then renumbered 1, 2, 3...
    """
    merged: dict[str, HypothesisAnswer] = {}
    for position, proposed in enumerate(answer.hypotheses, start=1):
        if len(proposed.statement) < MIN_STATEMENT_CHARS:
            continue
        if proposed.exploration_priority is None:
            proposed.exploration_priority = position
        kept = merged.setdefault(_key(proposed.statement), proposed)
        if kept is not proposed:  # the same hypothesis twice: one, with both strategies
            kept.exploration_priority = min(
                kept.exploration_priority or position, proposed.exploration_priority
            )
            for name in ("sources", "signals", "expected_entities", "queries"):
                both = getattr(kept.search_strategy, name) + getattr(proposed.search_strategy, name)
                setattr(kept.search_strategy, name, list(dict.fromkeys(both)))
    ranked = sorted(
        enumerate(merged.values()),
        key=lambda pair: (pair[1].exploration_priority or 0, -pair[1].confidence, pair[0]),
    )[: max(1, limit)]
    return [
        Hypothesis(
            statement=proposed.statement,
            confidence=proposed.confidence,
            search_strategy=SearchStrategy.model_validate(proposed.search_strategy.model_dump()),
            exploration_priority=rank,
            priority_reasoning=proposed.priority_reasoning,
        )
        for rank, (_, proposed) in enumerate(ranked, start=1)
    ]


def finding_refs(refs: list[str], offered: list[Finding]) -> list[str]:
    """The ids of the findings ``refs`` name (by their number in the prompt, or by id)."""
    ids = {f.id for f in offered}
    found: list[str] = []
    for ref in refs:
        if ref in ids:
            found.append(ref)
            continue
        match = _NUMBER.search(ref)
        if match is None or "." in match.group():
            continue
        number = int(match.group())
        if 1 <= number <= len(offered):
            found.append(offered[number - 1].id)
    return list(dict.fromkeys(found))


def hypothesis_ref(ref: str | None, candidates: list[tuple[int, Hypothesis]]) -> str | None:
    """The id of the candidate ``ref`` names ("H3", "3", an id or the statement), else None."""
    if not ref:
        return None
    for _, hypothesis in candidates:
        if ref == hypothesis.id or _key(ref) == _key(hypothesis.statement):
            return hypothesis.id
    match = re.fullmatch(r"\s*(?:h(?:ypothesis)?\s*)?#?(\d+)\s*", ref.lower())
    if match is not None:
        wanted = int(match.group(1))
        for number, hypothesis in candidates:
            if number == wanted:
                return hypothesis.id
    return None
