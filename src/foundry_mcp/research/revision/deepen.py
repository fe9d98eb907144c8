"""Deepening one part of a completed research: that part searched further, nothing else.

The part is named as the caller sees the research (:func:`resolve_part`): a sub-question (its
id or its question), a hypothesis, a gap (its id or its description), a section of the report
(its heading), or else a question of the caller's own about the research's subject. Its
searches (:func:`deepen_queries`: the part's question, a gap's suggested queries, a
hypothesis's planned ones; at most ``Revision.max_searches``) run through the research's
gatherer (:mod:`.searches`), so only pages the research does not know are fetched, and in a
hierarchical research the pages found for a sub-question belong to it. The analysis then reads
those pages only (:mod:`.analysis`); the other parts' pages are not read again.
"""

from __future__ import annotations

import re

from foundry_mcp.context.reading.passages import content_words
from foundry_mcp.errors import InputError
from foundry_mcp.research.models import ResearchState, Revision, SubQuery
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.revision.searches import (
    query_key,
    revision_sub_queries,
    revision_sub_query,
    search_for_revision,
)

DEEPEN_SEARCHES = 3  # a deepen's searches when the caller names no number
MAX_DEEPEN_SEARCHES = 10
MIN_PART_CHARS = 3  # letters and digits a question of the caller's needs at least
MAX_LISTED = 8  # parts of each kind named in the remediation
_ID_SHAPE = re.compile(r"^(?:sqn|hyp|gap)-[0-9a-f]{6,}$", re.IGNORECASE)
_WORD = re.compile(r"\w")


def _key(text: str) -> str:
    """Text as parts are matched: words lower-cased, one space, no closing punctuation."""
    return " ".join(text.casefold().split()).strip(" ?.!:;#*")


def resolve_part(state: ResearchState, part: str) -> tuple[str | None, str]:
    """The part of ``state`` the caller names by ``part``: (its id, or None for a section or a
    question of the caller's own, and the question to research).

    An id matches exactly (any case); a sub-question's question, a hypothesis's statement, a
    gap's description and a section's heading match ignoring case, spacing and closing
    punctuation. ``InputError`` for an empty part, one with no words, or an unknown id.
    """
    named = " ".join((part or "").split())
    if not named:
        raise _unusable(state, "A deepen needs the part of the report to research further.")
    wanted = _key(named)
    by_id: dict[str, tuple[str, str]] = {}
    by_text: dict[str, tuple[str, str]] = {}
    for sub_question in state.sub_questions:
        by_id[sub_question.id.casefold()] = (sub_question.id, sub_question.question)
        by_text.setdefault(_key(sub_question.question), (sub_question.id, sub_question.question))
    for hypothesis in state.hypotheses:
        by_id[hypothesis.id.casefold()] = (hypothesis.id, hypothesis.statement)
        by_text.setdefault(_key(hypothesis.statement), (hypothesis.id, hypothesis.statement))
    for gap in state.gaps:
        by_id[gap.id.casefold()] = (gap.id, gap.description)
        by_text.setdefault(_key(gap.description), (gap.id, gap.description))
    found = by_id.get(named.casefold()) or by_text.get(wanted)
    if found is not None:
        return found
    for heading in _sections(state):
        if _key(heading) == wanted:
            return None, f"{heading.strip()} (in: {state.query.strip()})"
    if _ID_SHAPE.match(named):
        raise _unusable(
            state, f"part {named!r} looks like an id, but research {state.id} has none."
        )
    if len(_WORD.findall(named)) < MIN_PART_CHARS:
        raise _unusable(state, f"part {named!r} names no part of research {state.id}.")
    return None, named


def _sections(state: ResearchState) -> list[str]:
    """The report's section headings (of its latest version)."""
    metadata = state.versions[-1].report_metadata if state.versions else state.report_metadata
    return list(metadata.sections) if metadata else []


def _unusable(state: ResearchState, message: str) -> InputError:
    """The error for a part that names nothing, listing what one can name."""
    named: list[str] = []
    if state.sub_questions:
        named.append(
            "a sub-question ("
            + "; ".join(
                f"{sq.id}: {_short(sq.question)}" for sq in state.sub_questions[:MAX_LISTED]
            )
            + ")"
        )
    if state.hypotheses:
        named.append(
            "a hypothesis (" + ", ".join(h.id for h in state.hypotheses[:MAX_LISTED]) + ")"
        )
    gaps = state.unaddressed_gaps() or state.gaps
    if gaps:
        named.append(
            "a gap ("
            + "; ".join(f"{gap.id}: {_short(gap.description)}" for gap in gaps[:MAX_LISTED])
            + ")"
        )
    sections = _sections(state)
    if sections:
        named.append("a section's heading (" + "; ".join(sections[:MAX_LISTED]) + ")")
    named.append("or a question of your own about the research's subject")
    return InputError(
        message,
        remediation="Give part as " + ", ".join(named) + ".",
        details={"field": "part"},
    )


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def deepen_queries(state: ResearchState, revision: Revision) -> list[SubQuery]:
    """The searches for the revision's part: its question first, then what the research
    planned for it (a gap's suggested queries, a hypothesis's), none asked before, at most
    ``max_searches``."""
    question = (revision.part_question or revision.part or "").strip()
    part_id = revision.part_id
    queries = [question]
    if not part_id and not _shares_words(question, state.query):
        # A question of the caller's own: searched in the research's subject.
        queries = [f"{question} ({state.query.strip()})"]
    gap = next((g for g in state.gaps if g.id == part_id), None)
    hypothesis = next((h for h in state.hypotheses if h.id == part_id), None)
    if gap is not None:
        queries += gap.suggested_queries
    if hypothesis is not None:
        queries += hypothesis.search_strategy.queries
    limit = revision.max_searches or DEEPEN_SEARCHES
    limit = max(1, min(limit, MAX_DEEPEN_SEARCHES))
    asked = {query_key(sq.query) for sq in state.sub_queries}
    chosen: list[str] = []
    for query in queries:
        key = query_key(query)
        # The part's question is searched even when asked before: the revision asks for
        # more results than the research took, and keeps only pages it did not know.
        if key and key not in {query_key(c) for c in chosen} and (not chosen or key not in asked):
            chosen.append(" ".join(query.split()))
    return [
        revision_sub_query(
            revision,
            number,
            query,
            rationale=f"Deepening: {_short(question)}",
            gap_id=gap.id if gap is not None else None,
            hypothesis_id=hypothesis.id if hypothesis is not None else None,
        )
        for number, query in enumerate(chosen[:limit], start=1)
    ]


def _shares_words(text: str, other: str) -> bool:
    return bool(set(content_words(text)) & set(content_words(other)))


async def deepen_gather(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    """Search for the revision's part only (see the module); the new pages' ids go to
    ``revision.changes.new_source_ids``, and in a hierarchical research the pages found for a
    sub-question belong to it."""
    if not revision.part_question and revision.part:
        revision.part_id, revision.part_question = resolve_part(state, revision.part)
    planned = revision_sub_queries(state, revision) or deepen_queries(state, revision)
    part = revision.part_id
    parts = (
        {query_key(sq.query): part for sq in planned}
        if part is not None and any(sq.id == part for sq in state.sub_questions)
        else {}
    )
    await search_for_revision(kit, state, revision, planned, parts)
