"""A deterministic stand-in for an LLM that answers foundry-mcp's agent prompts."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

SOURCE_BLOCK_RE = re.compile(r"<source\s+id=\"(src-[0-9a-f]{8})\"")
SOURCE_ID_RE = re.compile(r"\bsrc-[0-9a-f]{8}\b")
GAP_ID_RE = re.compile(r"\bgap-[0-9a-f]{8}\b")
ITERATION_RE = re.compile(r"^\s*Iteration:\s*(\d+)\s*/\s*(\d+)", re.MULTILINE | re.IGNORECASE)
QUESTION_RE = re.compile(r"^\s*Research question:\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)
SOURCES_LINE_RE = re.compile(r"^\s*[-*]?\s*Sources?:\s*(.+)$", re.MULTILINE | re.IGNORECASE)
SOURCE_TEXT_RE = re.compile(r"<source\s+id=\"(src-[0-9a-f]{8})\"[^>]*>(.*?)</source>", re.DOTALL)
CONTENT_RE = re.compile(r"^\s*Content:\s*(.*)", re.DOTALL | re.MULTILINE | re.IGNORECASE)
FINDING_HEADER_RE = re.compile(r"^\s*Finding\s+\d+(?:\s*\([^)\n]*\))?\s*:\s*(.*)$", re.IGNORECASE)
# Fenced writer and refiner prompts: attribution comes from our tags' attributes, not the text.
FINDING_BLOCK_RE = re.compile(r"<finding\b([^>]*)>(.*?)</finding>", re.DOTALL)
CITED_BLOCK_RE = re.compile(r"<(?:finding|contradiction)\b[^>]*?\bsources=\"([^\"]*)\"")
SOURCES_ATTR_RE = re.compile(r"\bsources=\"([^\"]*)\"")
GAP_BLOCK_RE = re.compile(r"<gap\s+id=\"(gap-[0-9a-f]{8})\"")
SENTENCE_RE = re.compile(r"(?<=\.)\s+(?=[A-Z0-9])")
CLAIM_RE = re.compile(r"^Claim\s+(\d+):[ \t]*(.*)$", re.MULTILINE)
EXCERPT_RE = re.compile(r"<excerpt\b[^>]*>(.*?)</excerpt>", re.DOTALL)
WORD_RE = re.compile(r"[a-z0-9]+")
_JUDGE_STOP_WORDS_TEXT = """
a an and are as at be by for from has have in is it its of on or that the their this to was
were which with
"""
JUDGE_STOP_WORDS = frozenset(_JUDGE_STOP_WORDS_TEXT.split())
# The answer structurer's prompt: the schema in a <document>, and a value claim it is judged by.
SCHEMA_BLOCK_RE = re.compile(r"<document name=\"output schema\">\n(.*?)\n</document>", re.DOTALL)
VALUE_CLAIM_RE = re.compile(r"^(?:.+ — )?[^:—]{1,60}: (?P<value>.*[^.\s])$")
ISO_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
ISO_DATE_TIME_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:\d{2})")
NOT_NUMBER_RE = re.compile(r"\d{4}-\d{2}-\d{2}\S*|\d+(?:\.\d+){2,}")  # dates, versions
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\b")
NAME_KEYS = frozenset({"name", "title", "project", "package", "library", "tool", "product"})
# The follow-up answerer's prompt: the question, and each source's passages by number.
FOLLOW_UP_QUESTION_RE = re.compile(r"^Follow-up question:\s*(.+)$", re.MULTILINE)
NUMBERED_SOURCE_RE = re.compile(r"<source\s+number=\"(\d+)\"[^>]*>(.*?)</source>", re.DOTALL)
_FOLLOW_UP_QUESTION_WORDS_TEXT = "about which where there their these those would could should"
FOLLOW_UP_QUESTION_WORDS = frozenset(_FOLLOW_UP_QUESTION_WORDS_TEXT.split())

AGENT_MARKERS: tuple[tuple[str, str], ...] = (
    ("answer repairer", "repairer"),  # asked once for an answer that could not be read
    ("research fact-checker", "verifier"),
    ("sub-question answerer", "answerer"),
    ("follow-up answerer", "follow_up"),
    ("answer structurer", "structurer"),
    ("question clarifier", "clarifier"),
    ("research planner", "planner"),
    ("research analyst", "analyzer"),
    ("research writer", "writer"),
    ("research refiner", "refiner"),
    ("research investigator", "investigator"),
    ("evidence assessor", "assessor"),
    ("coverage assessor", "coverage"),
    ("research supervisor", "supervisor"),
)
HALLUCINATED_ID = "src-deadbeef"
# A question the fake clarifier and planner find ambiguous (best for what?).
VAGUE_RE = re.compile(r"\bbest\b", re.IGNORECASE)
# How foundry-mcp's prompts for a report written in parts say what they are
# (prompts/report_parts.py).
SECTION_TOPIC_RE = re.compile(r"^This section is about: (.+)$", re.MULTILINE)
FRAME_MARKER = "Body sections written separately"

Override = str | Callable[[str, str], str]


@dataclass(frozen=True)
class BrainReply:
    """One answer with its agent and estimated token usage."""

    agent: str
    text: str
    input_tokens: int
    output_tokens: int


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def question_of(user: str) -> str:
    """The research question from a ``Research question:`` line (else the first line)."""
    match = QUESTION_RE.search(user)
    if match:
        return match.group(1)
    lines = [line.strip() for line in user.splitlines() if line.strip()]
    return lines[0][:200] if lines else "the research topic"


PART_RE = re.compile(r"^- \[(sqn-[0-9a-f]+)\] (.+)$", re.MULTILINE)
READING_FOR_RE = re.compile(r"^This reading was asked for part \[(sqn-[0-9a-f]+)\]", re.MULTILINE)
_NAME_RE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+|[A-Za-z]{6,}")


def parts_for(user: str, content: str) -> list[str]:
    """The parts of an analyst's prompt (``- [sqn-...] question``) a finding answers, as a
    careful analyst files it: those whose question names something (a dotted name, a long
    word) that the finding names and no other part's question does; else the part the reading
    was asked for. No parts in the prompt: none."""
    parts = PART_RE.findall(user)
    if not parts:
        return []
    words = {part_id: set(_NAME_RE.findall(question.lower())) for part_id, question in parts}
    said = set(_NAME_RE.findall(content.lower()))
    own_words = {
        part_id: mine - set().union(*(w for other, w in words.items() if other != part_id))
        for part_id, mine in words.items()
    }
    named = [part_id for part_id, mine in own_words.items() if mine & said]
    if named:
        return named
    reading = READING_FOR_RE.search(user)
    return [reading.group(1)] if reading else []


class ResearchBrain:
    """Answers planner/analyst/writer/refiner prompts deterministically; thread-safe."""

    def __init__(
        self,
        *,
        gap_iterations: int = 1,
        hallucinate_citation: bool = False,
        include_sources_section: bool = False,
        unsupported_claim: str | None = None,
        json_in_fences: bool = False,
        broken_json_for: Iterable[str] = (),
    ) -> None:
        self.gap_iterations = gap_iterations
        self.hallucinate_citation = hallucinate_citation
        self.include_sources_section = include_sources_section
        # A sentence no source supports, added to the report citing a real source id.
        self.unsupported_claim = unsupported_claim
        self.json_in_fences = json_in_fences
        self.broken_json_for: set[str] = set(broken_json_for)
        # Every n-th finding the writer states cites another finding's sources (0: never).
        self.miscite_every = 0
        self.miscited: list[str] = []  # the findings it cited wrongly
        self.check_figures = False  # the fact-checker also wants each figure in the excerpts
        self.overrides: dict[str, Override] = {}  # agent -> fixed text or fn(system, user)
        self.calls: Counter[str] = Counter()
        self.history: list[tuple[str, str, str]] = []  # (agent, system, user)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ entry points

    @staticmethod
    def identify(system: str) -> str:
        """``planner``, ``analyzer``, ``writer``, ``refiner``, ``verifier`` or ``other``."""
        lowered = system.lower()
        for marker, agent in AGENT_MARKERS:
            if marker in lowered:
                return agent
        return "other"

    @staticmethod
    def estimate_tokens(text: str) -> int:
        """The fake tokenizer: four characters a token."""
        return len(text) // 4

    def reply(self, system: str, user: str) -> BrainReply:
        """Answer one (system, user) prompt pair, counting the call."""
        agent = self.identify(system)
        with self._lock:
            self.calls[agent] += 1
            self.history.append((agent, system, user))
        text = self._answer(agent, system, user)
        return BrainReply(
            agent=agent,
            text=text,
            input_tokens=self.estimate_tokens(system + user),
            output_tokens=self.estimate_tokens(text),
        )

    def respond(self, system: str, user: str) -> str:
        """Just the text of :meth:`reply`."""
        return self.reply(system, user).text

    # ------------------------------------------------------------------ agents

    def _answer(self, agent: str, system: str, user: str) -> str:
        override = self.overrides.get(agent)
        if override is not None:
            return override if isinstance(override, str) else override(system, user)
        if agent in self.broken_json_for:
            return f"Sorry, as the {agent} I lost my train of thought; no plan or data here."
        if agent == "clarifier":
            return self._json(self.clarify(user, system))
        if agent == "planner":
            return self._json(self.plan(user, system))
        if agent == "answerer":
            return self._json(self.answer(user))
        if agent == "follow_up":
            return self._json(self.follow_up(user))
        if agent == "structurer":
            return self._json(self.structure(user))
        if agent == "analyzer":
            return self._json(self.analyze(user))
        if agent == "refiner":
            return self._json(self.refine(user))
        if agent == "writer":
            return self.write(user)
        if agent == "verifier":
            return self._json(self.verify(user, system))
        if agent == "investigator":
            return self._json(self.investigate(user))
        if agent == "assessor":
            return self._json(self.assess(user))
        if agent == "coverage":
            return self._json(self.cover(user))
        if agent == "supervisor":
            return self._json(self.supervise(user))
        return "This is a deterministic answer from the fake research brain."

    def supervise(self, user: str) -> dict[str, Any]:
        """The supervisor's judgement of a phase: go on, guided by the quality gate.

        It proceeds whatever the gate said (the gate's own retry acts on a failure), scoring
        the phase 8 when the gate passed and 4 when not; it never stops the research early.
        """
        passed = "Quality gate: passed" in user
        return {
            "action": "proceed",
            "rationale": "The phase did what it had to." if passed else "The gate found issues.",
            "quality_assessment": {
                "score": 8 if passed else 4,
                "strengths": ["on the question"] if passed else [],
                "weaknesses": [] if passed else ["see the quality gate"],
            },
            "guidance": None,
        }

    def _json(self, data: dict[str, Any]) -> str:
        text = json.dumps(data, indent=2)
        if self.json_in_fences:
            return f"Here is the JSON you asked for:\n\n```json\n{text}\n```\n"
        return text

    def clarify(self, user: str, system: str = "") -> dict[str, Any]:
        """The clarifier's judgement: a question holding the word "best" is ambiguous (best for
        which workload, and when?); asked to always ask, it asks about the time frame at least.
        """
        q = question_of(user)
        questions = []
        if VAGUE_RE.search(q):
            questions.append(
                {
                    "question": "Which workload matters most to you?",
                    "choices": ["transactions (OLTP)", "analytics (OLAP)", "both"],
                    "assumption": "a general-purpose transactional workload",
                }
            )
        if questions or "Always ask" in system:
            questions.append(
                {
                    "question": "Which time frame should the research cover?",
                    "choices": [],
                    "assumption": "the last two years",
                }
            )
        return {
            "ambiguous": bool(questions),
            "reason": "The question does not say which workload or period it means."
            if questions
            else "The question is specific enough.",
            "questions": questions,
        }

    def plan(self, user: str, system: str = "") -> dict[str, Any]:
        """Planner output: a brief and three sub-queries derived from the question.

        Asked to judge the question, it also assesses it: a question naming several things to
        compare, or several aspects joined by "and", is complex and decomposed into one
        sub-question per part (see :func:`decompose`); asked to decompose, it always does.
        Shown the user's documents (a ``<documents>`` block), it aims at them the sub-queries
        whose angle (their words beyond the question's) shares a word of four letters or more
        with a listed document, the first other one at both, the rest at the web. Told to write
        no search queries (a required decomposition), it writes none.
        """
        q = question_of(user)
        angles = [
            ("overview and key definitions", "Establish the basic concepts and terminology."),
            ("recent evidence and developments", "Collect current data and concrete examples."),
            ("limitations, risks and criticisms", "Find counter-evidence and open problems."),
        ]
        plan: dict[str, Any] = {
            "research_brief": f"Investigate {q}: background, current evidence and limitations.",
            "sub_queries": [
                {"query": f"{q} {angle}", "rationale": why, "priority": i}
                for i, (angle, why) in enumerate(angles, start=1)
            ],
        }
        listed = re.search(r"<documents>\n(.*?)\n</documents>", user, re.DOTALL)
        if listed:
            documented = {w for w in WORD_RE.findall(listed.group(1).lower()) if len(w) >= 4}
            asked = set(WORD_RE.findall(q.lower()))
            targets = []
            for sub_query in plan["sub_queries"]:
                angle = set(WORD_RE.findall(sub_query["query"].lower())) - asked
                target = "local" if angle & documented else "web"
                if target == "web" and "both" not in targets:
                    target = "both"
                sub_query["target"] = target
                targets.append(target)
            plan["allocation_strategy"] = (
                f"{targets.count('local')} angle(s) the user's documents cover go to them, one "
                "to both, the rest to the web."
            )
        if "assumptions" in system and VAGUE_RE.search(q):
            plan["assumptions"] = [
                "a general-purpose transactional workload",
                "the last two years",
            ]
        if "Judging the question" not in system:
            return plan
        parts = decompose(q)
        required = "Decomposition: required" in system
        complex_question = len(parts) >= 2
        if required and not complex_question:
            parts = [
                f"What is known about {q}?",
                f"What are the limits of what is known about {q}?",
            ]
        plan["assessment"] = {
            "is_complex": complex_question,
            "recommended_mode": "hierarchical" if complex_question else "simple",
            "reasoning": (
                f"The question has {len(parts)} distinct parts."
                if complex_question
                else "One focused line of inquiry."
            ),
        }
        if re.search(r"\bwhich (explanation|hypothesis|theory)\b", q, re.I):
            plan["assessment"]["recommended_mode"] = "hypotheses"
        plan["decomposition"] = (
            {
                "strategy": "comparison"
                if re.search(r"compar|\bvs\b|versus", q, re.I)
                else "multi-faceted",
                "sub_questions": [
                    {
                        "question": part,
                        "priority": round(1.0 - 0.1 * i, 2),
                        "rationale": "A part of the question.",
                    }
                    for i, part in enumerate(parts)
                ],
            }
            if parts
            else None
        )
        if "Write no search queries" in system:  # its parts are planned by their researchers
            del plan["sub_queries"]
        return plan

    def answer(self, user: str) -> dict[str, Any]:
        """Sub-question answerer output: the findings restated with their citations."""
        stated = prompt_findings(user)
        if not stated:
            return {"direct_answer": "", "evidence": [], "caveats": [], "confidence": "low"}

        def cited(content: str, ids: list[str]) -> str:
            return f"{content.rstrip('.')} {' '.join(f'[{sid}]' for sid in ids)}."

        return {
            "direct_answer": cited(*stated[0]),
            "evidence": [cited(content, ids) for content, ids in stated[:4]],
            "caveats": ["The corpus searched is small."],
            "confidence": "high" if len(stated) >= 2 else "medium",
        }

    def follow_up(self, user: str) -> dict[str, Any]:
        """Follow-up answerer output, from the numbered ``<source number="n">`` passages.

        The question's distinctive words are its words of five letters or more, question words
        aside (what, which, about...). The source whose passages hold most of them (the lowest
        number on a tie) answers: its (at most two) sentences holding most of them, each citing
        its number, ``[n]``. No source holds one: ``answerable`` false, saying so.
        """
        asked = FOLLOW_UP_QUESTION_RE.search(user)
        words = {
            w
            for w in WORD_RE.findall((asked.group(1) if asked else "").lower())
            if len(w) >= 5 and w not in FOLLOW_UP_QUESTION_WORDS
        }
        best: tuple[int, int, list[str]] | None = None  # (words held, -number, sentences)
        for number, body in NUMBERED_SOURCE_RE.findall(user):
            text = " ".join(body.partition("Passages:")[2].replace("[…]", " ").split())
            sentences = [
                s for s in SENTENCE_RE.split(text) if words & set(WORD_RE.findall(s.lower()))
            ]
            held = len(words & set(WORD_RE.findall(text.lower())))
            if held and (best is None or (held, -int(number)) > best[:2]):
                ranked = sorted(
                    sentences, key=lambda s: -len(words & set(WORD_RE.findall(s.lower())))
                )
                best = (held, -int(number), [f"{s.rstrip('.')} [{number}]." for s in ranked[:2]])
        if best is None:
            return {
                "answerable": False,
                "answer": "The research's sources do not say anything about "
                f"{', '.join(sorted(words)) or 'this'}.",
                "reason": "No passage names what the question asks about.",
            }
        return {
            "answerable": True,
            "answer": " ".join(best[2]),
            "reason": f"Source {-best[1]} names {best[0]} of the question's words.",
        }

    def structure(self, user: str) -> dict[str, Any]:
        """Answer structurer output: the prompt's output schema filled from its findings.

        Each leaf takes a value only from a finding's text, citing that finding's sources: an
        enum option the text names, the ISO date it holds, the number nearest the key's word
        (a version or a date is no number), the word after "<key> is" or ":", or, for an
        object's name-like first string, the finding's first word. An array of objects has
        one row per finding that fills two of its values (at most maxItems, else five); any
        other leaf is null with its reason under "unknown". Nothing is guessed.
        """
        match = SCHEMA_BLOCK_RE.search(user)
        schema = json.loads(match.group(1)) if match else {"type": "object"}
        filled = fill_schema(schema, prompt_findings(user), None)
        return {"answer": filled.value, "sources": filled.sources, "unknown": filled.unknown}

    def analyze(self, user: str) -> dict[str, Any]:
        """Analyzer output: findings citing the prompt's sources, quality updates, gaps."""
        ids = _unique(SOURCE_BLOCK_RE.findall(user)) or _unique(SOURCE_ID_RE.findall(user))
        q = question_of(user)
        texts = source_sentences(user)
        findings: list[dict[str, Any]] = []
        if ids:
            cites = [ids[:2], ids[1:2] or ids[:1]]
            if len(ids) >= 3:
                cites.append([ids[2], ids[0]])
            for i, source_ids in enumerate(cites):
                # Evidence-based: finding i restates sentence i of its first cited source.
                sentences = texts.get(source_ids[0]) or []
                content = (
                    sentences[i % len(sentences)]
                    if sentences
                    else f"Finding {i + 1} about {q}: the sources agree on point "
                    f"{i + 1} and provide supporting detail."
                )
                findings.append(
                    {
                        "content": content,
                        "confidence": "high" if i == 0 else "medium",
                        "source_ids": source_ids,
                        "category": "evidence" if i == 0 else "context",
                        "parts": parts_for(user, content),
                    }
                )
        quality = [
            {"source_id": sid, "quality": "high" if i == 0 else "medium"}
            for i, sid in enumerate(ids)
        ]
        gaps: list[dict[str, Any]] = []
        match = ITERATION_RE.search(user)
        iteration, maximum = (int(match.group(1)), int(match.group(2))) if match else (1, 1)
        if iteration < maximum and iteration <= self.gap_iterations:
            gaps.append(
                {
                    "description": f"Long-term outcomes of {q} are not covered "
                    f"(iteration {iteration}).",
                    "suggested_queries": [f"{q} long-term outcomes iteration {iteration}"],
                    "priority": 1,
                }
            )
        return {"findings": findings, "gaps": gaps, "quality_updates": quality}

    def refine(self, user: str) -> dict[str, Any]:
        """Refiner output: an assessment and a follow-up query for every gap id."""
        gap_ids = _unique(GAP_BLOCK_RE.findall(user)) or _unique(GAP_ID_RE.findall(user))
        q = question_of(user)
        return {
            "gap_analysis": [
                {
                    "gap_id": gid,
                    "severity": "moderate",
                    "addressable": True,
                    "follow_up_queries": [
                        {
                            "query": f"{q} follow-up evidence {n}",
                            "expected_contribution": f"Closes gap {gid} with targeted sources.",
                        }
                    ],
                }
                for n, gid in enumerate(gap_ids, start=1)
            ],
            "iteration_recommendation": {
                "should_iterate": bool(gap_ids),
                "rationale": "Addressable gaps remain." if gap_ids else "No open gaps remain.",
                "priority_gaps": gap_ids,
            },
            "report_improvements": [],
        }

    def write(self, user: str) -> str:
        """Writer output: a markdown report, each finding a sentence followed by its citations.

        Without findings in the prompt, templated sentences cite the ids of the ``sources``
        attributes of ``<finding>``/``<contradiction>`` tags (of ``Sources:`` lines in an
        untagged prompt).
        """
        q = question_of(user)
        cited = CITED_BLOCK_RE.findall(user) or SOURCES_LINE_RE.findall(user)
        groups = [_unique(SOURCE_ID_RE.findall(ids)) for ids in cited]
        groups = [g for g in groups if g]
        if not groups:
            groups = [[sid] for sid in _unique(SOURCE_ID_RE.findall(user))]

        def cite(ids: list[str]) -> str:
            return " ".join(f"[{sid}]" for sid in ids)

        stated = self._miscited(prompt_findings(user))
        section = SECTION_TOPIC_RE.search(user)
        if section:  # one body section of a report written in parts
            lines = [f"- {content.rstrip('.')} {cite(ids)}." for content, ids in stated]
            return f"## {section.group(1).strip()}\n\n" + "\n".join(lines) + "\n"
        if FRAME_MARKER in user:  # the parts around the body sections
            return self._frame(q, groups, cite)
        if stated:
            findings = [f"{content.rstrip('.')} {cite(ids)}." for content, ids in stated]
        else:
            templates = (
                "The gathered evidence on {q} establishes point {i} {c}.",
                "Several sources add detail to point {i} about {q} {c}.",
                "Point {i} on {q} is consistent across independent reports {c}.",
            )
            findings = [
                templates[i % 3].format(q=q, i=i + 1, c=cite(groups[i % len(groups)]))
                for i in range(max(3, len(groups)) if groups else 0)
            ] or [f"The gathered material on {q} was thin and offers no citable finding."]
        findings += self._planted_claims(groups, cite)
        return self._report(
            q, groups, [], ["## Key Findings", "\n".join(f"- {f}" for f in findings)]
        )

    def _miscited(self, stated: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
        """With ``miscite_every = n``, every n-th finding cites the next finding's sources
        instead of its own (a writer mixing up ids), when those differ."""
        n = self.miscite_every
        if not n or len(stated) < 2:
            return stated
        swapped = list(stated)
        for i in range(n - 1, len(stated), n):
            other = stated[(i + 1) % len(stated)][1]
            if set(other) != set(stated[i][1]):
                swapped[i] = (stated[i][0], other)
                self.miscited.append(stated[i][0])
        return swapped

    @property
    def reports_written(self) -> int:
        """Writer calls that wrote a report or a report's frame: one per report (a report
        written in parts makes one more call per body section)."""
        return sum(
            1
            for agent, _, user in self.history
            if agent == "writer" and not SECTION_TOPIC_RE.search(user)
        )

    def _frame(self, q: str, groups: list[list[str]], cite: Callable[[list[str]], str]) -> str:
        """The title, summary, limitations and conclusion of a report whose body is elsewhere."""
        return self._report(q, groups, self._planted_claims(groups, cite), [])

    def _planted_claims(
        self, groups: list[list[str]], cite: Callable[[list[str]], str]
    ) -> list[str]:
        """The sentences the knobs ask the writer to add: one no source supports, one citing an
        ungathered source."""
        claims = []
        if self.unsupported_claim and groups:
            claims.append(f"{self.unsupported_claim.rstrip('.')} {cite(groups[0][:1])}.")
        if self.hallucinate_citation:
            claims.append(f"A further claim rests on an ungathered source [{HALLUCINATED_ID}].")
        return claims

    def _report(
        self, q: str, groups: list[list[str]], summary_claims: list[str], body: list[str]
    ) -> str:
        """A report on ``q``: title, summary (with ``summary_claims``), ``body``, limitations,
        conclusion and, with ``include_sources_section``, a model-written sources list."""
        summary = [
            f"This report summarises what the gathered sources say about {q}. "
            "The evidence is broadly consistent, with some open questions.",
            *summary_claims,
        ]
        parts = [
            f"# Research Report: {q}",
            "## Executive Summary",
            " ".join(summary),
            *body,
            "## Limitations",
            "The fake corpus is small and synthetic, so coverage is limited.",
            "## Conclusion",
            f"Overall, the sources give a coherent picture of {q}.",
        ]
        if self.include_sources_section:
            listed = [sid for g in groups for sid in g] or [HALLUCINATED_ID]
            parts += ["## Sources", "\n".join(f"- [{sid}] model-written entry" for sid in listed)]
        return "\n\n".join(parts) + "\n"

    def verify(self, user: str, system: str = "") -> dict[str, Any]:
        """Fact-checker output: a lexical judge of each numbered claim against its excerpts.

        Supported when at least three quarters of the claim's content words appear in its
        excerpts, partial when at least a third do, unsupported otherwise. With
        ``check_figures``, like a careful checker, it finds a claim unsupported when one of its
        figures (a word with a digit) is not in the excerpts. A structured answer's value claim
        ("requests — licence: Apache-2.0", no final full stop) is unsupported when a word of
        its value is not in the excerpts, whatever else they share with it. Asked to leave the
        reason out of a supported verdict ("needs no reason"), it does.
        """
        brief = "needs no reason" in system
        verdicts = []
        for number, claim, excerpts in prompt_claims(user):
            words = judge_words(claim)
            found = judge_words(" ".join(excerpts))
            share = len(words & found) / len(words) if words else 0.0
            figures = {w for w in WORD_RE.findall(claim.lower()) if any(c.isdigit() for c in w)}
            said = set(WORD_RE.findall(" ".join(excerpts).lower()))
            value = VALUE_CLAIM_RE.match(claim)
            stated = not value or set(WORD_RE.findall(value.group("value").lower())) <= said
            verdict = (
                "unsupported"
                if not stated or (self.check_figures and figures - said)
                else "supported"
                if share >= 0.75
                else "partial"
                if share >= 1 / 3
                else "unsupported"
            )
            judged: dict[str, Any] = {"claim": number, "verdict": verdict}
            if not (brief and verdict == "supported"):
                judged["reason"] = f"{share:.0%} of the claim's words appear in the excerpts."
            verdicts.append(judged)
        return {"verdicts": verdicts}

    def investigate(self, user: str) -> dict[str, Any]:
        """Investigator output: three hypotheses (at most the number asked) for a question about
        which explanation holds, why or what caused something, one otherwise; one query each."""
        q = question_of(user).rstrip("?. ")
        asked = re.search(r"at most (\d+) hypotheses", user)
        investigative = re.search(
            r"\b(which|why|explanations?|hypothes\w+|theor\w+|caus\w+)\b", q, re.I
        )
        count = min(int(asked.group(1)) if asked else 3, 3 if investigative else 1)
        angles = [
            ("direct mechanism", 70, ["mechanism", "study"]),
            ("environmental conditions", 50, ["climate", "conditions"]),
            ("measurement artefact", 30, ["methodology", "bias"]),
        ]
        return {
            "research_brief": f"Weigh the competing explanations of {q} against the evidence.",
            "hypotheses": [
                {
                    "statement": f"The {angle} explains {q}.",
                    "confidence": confidence,
                    "search_strategy": {
                        "sources": ["web"],
                        "signals": signals,
                        "expected_entities": [angle.split()[-1]],
                        "queries": [f"{q} {angle}"],
                    },
                    "exploration_priority": i,
                    "priority_reasoning": f"Prior confidence {confidence}.",
                }
                for i, (angle, confidence, signals) in enumerate(angles[:count], start=1)
            ],
        }

    def assess(self, user: str) -> dict[str, Any]:
        """Evidence assessor output: findings 1 and 2 support the hypothesis; with four or more
        listed, the last undermines it (partially supported)."""
        numbers = [int(n) for n in re.findall(r"<finding\s+n=\"(\d+)\"", user)]
        initial = re.search(r"^Initial confidence:\s*(\d+)", user, re.MULTILINE)
        confidence = int(initial.group(1)) if initial else 50
        supporting = numbers[:2]
        against = numbers[-1:] if len(numbers) >= 4 else []
        verdict = (
            "partially_supported"
            if supporting and against
            else "supported"
            if supporting
            else "inconclusive"
        )
        return {
            "final_confidence": min(95, confidence + (15 if verdict == "supported" else 5)),
            "verdict": verdict,
            "evidence_for": supporting,
            "evidence_against": against,
            "entities_found": [],
            "reasoning": f"{len(supporting)} finding(s) support it, {len(against)} undermine it.",
        }

    def cover(self, user: str) -> dict[str, Any]:
        """Coverage assessor output: sufficient once two hypotheses are explored; else the first
        one still to explore is recommended."""
        explored = re.search(r"Hypotheses explored:\s*(\d+)", user)
        count = int(explored.group(1)) if explored else 0
        remaining = re.findall(r"^- (H\d+) ", user, re.MULTILINE)
        sufficient = count >= 2 or not remaining
        return {
            "sufficient": sufficient,
            "reasoning": f"{count} hypotheses explored: "
            + ("two angles answer the question." if sufficient else "another angle is needed."),
            "recommended_next": None if sufficient else remaining[0],
        }


def source_sentences(user: str) -> dict[str, list[str]]:
    """The sentences of each source's ``Content:`` text in an analyzer prompt, by source id."""
    found: dict[str, list[str]] = {}
    for source_id, block in SOURCE_TEXT_RE.findall(user):
        match = CONTENT_RE.search(block)
        if not match:
            continue
        text = " ".join(match.group(1).replace("[...]", " ").split())
        sentences = [s.strip() for s in SENTENCE_RE.split(text) if len(s.split()) >= 4]
        if sentences:
            found.setdefault(source_id, sentences)
    return found


def prompt_findings(user: str) -> list[tuple[str, list[str]]]:
    """``(content, source ids)`` of each finding in a writer prompt.

    Each ``<finding sources="...">`` block, its ids from the attribute; in an untagged prompt,
    each ``Finding N ...:`` header up to its ``Sources:`` line.
    """
    blocks = FINDING_BLOCK_RE.findall(user)
    if blocks:
        tagged = []
        for attributes, body in blocks:
            cited = SOURCES_ATTR_RE.search(attributes)
            text = " ".join(body.split())
            ids = _unique(SOURCE_ID_RE.findall(cited.group(1))) if cited else []
            if text and ids:
                tagged.append((text, ids))
        return tagged
    findings: list[tuple[str, list[str]]] = []
    content: list[str] | None = None
    for line in user.splitlines():
        header = FINDING_HEADER_RE.match(line)
        if header:
            content = [header.group(1)]
            continue
        sources = SOURCES_LINE_RE.match(line)
        if sources and content is not None:
            text = " ".join(" ".join(content).split())
            ids = _unique(SOURCE_ID_RE.findall(sources.group(1)))
            if text and ids:
                findings.append((text, ids))
            content = None
        elif content is not None:
            content.append(line)
    return findings


def prompt_claims(user: str) -> list[tuple[int, str, list[str]]]:
    """``(number, claim, excerpts)`` of each ``Claim N:`` in a fact-checker prompt."""
    headers = list(CLAIM_RE.finditer(user))
    claims = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(user)
        excerpts = EXCERPT_RE.findall(user, header.end(), end)
        claims.append((int(header.group(1)), header.group(2).strip(), excerpts))
    return claims


def judge_words(text: str) -> set[str]:
    """The fake judge's content words: lower-case, three letters or more, no stop words."""
    return {w for w in WORD_RE.findall(text.lower()) if len(w) >= 3 and w not in JUDGE_STOP_WORDS}


@dataclass
class Filled:
    """A value of the fake structurer's answer, with its sources and unknown reasons keyed by
    JSON pointers relative to it."""

    value: Any = None
    sources: dict[str, list[str]] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)

    def under(self, prefix: str) -> tuple[dict[str, list[str]], dict[str, str]]:
        """Its sources and unknown reasons with ``prefix`` before their pointers."""
        return (
            {prefix + k: v for k, v in self.sources.items()},
            {prefix + k: v for k, v in self.unknown.items()},
        )


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def fill_schema(
    schema: dict[str, Any],
    findings: list[tuple[str, list[str]]],
    key: str | None,
    first: bool = False,
) -> Filled:
    """The fake structurer's value for ``schema`` from ``findings`` (see ``structure``)."""
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if "object" in kinds or "properties" in schema:
        filled = Filled(value={})
        plain = [
            name
            for name, sub in (schema.get("properties") or {}).items()
            if sub.get("type") == "string" and "enum" not in sub and "format" not in sub
        ]
        for name, sub in (schema.get("properties") or {}).items():
            part = fill_schema(sub, findings, name, first=bool(plain) and name == plain[0])
            filled.value[name] = part.value
            sources, unknown = part.under(f"/{_escaped(name)}")
            filled.sources.update(sources)
            filled.unknown.update(unknown)
        return filled
    if "array" in kinds:
        items = schema.get("items") or {}
        most = int(schema.get("maxItems", 5))
        rows = [fill_schema(items, [finding], key) for finding in findings]
        # A row of objects names more than the thing it is about (its first word).
        enough = 2 if len(items.get("properties") or {}) >= 2 else 1
        rows = [row for row in rows if len(row.sources) >= enough][:most]
        filled = Filled(value=[row.value for row in rows])
        for index, row in enumerate(rows):
            sources, unknown = row.under(f"/{index}")
            filled.sources.update(sources)
            filled.unknown.update(unknown)
        return filled
    for content, ids in findings:
        value = leaf_value(schema, key or "", content, first)
        if value is not None:
            return Filled(value=value, sources={"": ids})
    return Filled(unknown={"": f"no finding states the {key or 'value'}"})


def leaf_value(schema: dict[str, Any], key: str, text: str, first: bool) -> Any:
    """The value of one leaf a finding's ``text`` states, or None (see ``structure``)."""
    lowered = text.lower()
    options = schema.get("enum") or ([schema["const"]] if "const" in schema else [])
    if options:
        return next(
            (
                option
                for option in options
                if option is not None
                and re.search(rf"(?<![\w-]){re.escape(str(option).lower())}(?![\w-])", lowered)
            ),
            None,
        )
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if schema.get("format") in ("date", "date-time"):
        pattern = ISO_DATE_RE if schema["format"] == "date" else ISO_DATE_TIME_RE
        found = pattern.search(text)
        return found.group() if found else None
    if "integer" in kinds or "number" in kinds:
        return _nearest_number(key, text, integer="number" not in kinds)
    if "string" in kinds:
        said = re.search(
            rf"\b{re.escape(key.replace('_', ' '))}\s*(?:is|was|:)\s+([\w.+-]*\w)", text, re.I
        )
        if said:
            return said.group(1)
        if first or key in NAME_KEYS:
            words = text.split()
            return words[0].strip(",;:") if words else None
    return None


def _nearest_number(key: str, text: str, integer: bool) -> int | float | None:
    """The number nearest a word of ``key`` in ``text`` (None when the text lacks the word)."""
    plain = NOT_NUMBER_RE.sub(lambda m: " " * len(m.group()), text)
    anchors = [
        m.start()
        for word in WORD_RE.findall(key.lower())
        for m in re.finditer(re.escape(word[:5]), plain.lower())
    ]
    numbers = [m for m in NUMBER_RE.finditer(plain) if not integer or "." not in m.group()]
    if not anchors or not numbers:
        return None
    best = min(numbers, key=lambda m: min(abs(m.start() - a) for a in anchors)).group()
    return float(best) if "." in best else int(best)


_COMPARISON_RE = re.compile(
    r"\b(?:compare|comparing|comparison of)\s+(.+?)(?:\s+(?:for|in|on|when|as)\s+(.+?))?\??$",
    re.IGNORECASE,
)
_ITEM_SPLIT_RE = re.compile(r",\s*(?:and\s+)?|\s+and\s+|\s+vs\.?\s+|\s+versus\s+", re.IGNORECASE)


def decompose(question: str) -> list[str]:
    """The parts of a multi-part question, each as a sub-question (empty: one part only).

    "Compare A, B and C for X" gives one question per item; "the causes, effects and solutions
    of Z" one per aspect; "A and B and C" one per conjunct.
    """
    text = " ".join(question.split()).rstrip("?. ")
    match = _COMPARISON_RE.search(text)
    if match:
        items = [i.strip() for i in _ITEM_SPLIT_RE.split(match.group(1)) if i.strip()]
        context = f" for {match.group(2)}" if match.group(2) else ""
        if len(items) >= 2:
            return [f"How does {item} perform{context}?" for item in items]
    aspects = re.search(
        r"\b(causes?), (effects?),? and (solutions?|fixes) (?:of|for|to) (.+)$", text, re.I
    )
    if aspects:
        topic = aspects.group(4)
        return [f"What are the {a} of {topic}?" for a in aspects.groups()[:3]]
    conjuncts = [c.strip() for c in re.split(r"\s+and\s+", text) if c.strip()]
    if len(conjuncts) >= 3:
        return [f"{c}?" for c in conjuncts]
    return []
