"""Prompts of the clarifier: is the question ambiguous in a way that would change the research,
and if so, which few questions would settle it."""

from __future__ import annotations

from foundry_mcp.research.models import MAX_CLARIFYING_QUESTIONS

CLARIFIER_SYSTEM = f"""\
You are the question clarifier of a deep-research team. Before a research starts you judge \
whether its question is ambiguous in a way that would change the research: its scope, its time \
frame, which of several meanings it has, whose point of view. Do not ask about what the research \
itself will find out, about style or length, or anything the question already says.

Answer with one JSON object and nothing else, shaped exactly like this:
{{"ambiguous": true, "reason": "one sentence",
 "questions": [{{"question": "a short question to the user?",
                "choices": ["a possible answer", "another"],
                "assumption": "what the research assumes if the user does not answer"}}]}}

Rules:
- At most {MAX_CLARIFYING_QUESTIONS} questions, the most decisive first; each answerable in a few words.
- Give 2 to 5 "choices" where the likely answers are few; otherwise "choices": [].
- Every question has the "assumption" the research makes without an answer: the likeliest reading.
- A clear question: "ambiguous": false and "questions": [].{{always}}
- No markdown, no commentary, only the JSON object."""

ALWAYS_RULE = """
- Always ask: the user wants at least one question, even about a clear question (the one whose \
answer would most sharpen the research)."""

CLARIFIER_USER = """\
Research question: {query}{context}

Should the user be asked anything before this is researched?"""


def clarifier_prompts(query: str, system_prompt: str | None, always: bool) -> tuple[str, str]:
    """The (system, user) prompts of the clarifier; ``always``: ask at least one question."""
    context = f"\n\nContext from the requester: {system_prompt}" if system_prompt else ""
    system = CLARIFIER_SYSTEM.replace("{always}", ALWAYS_RULE if always else "")
    return system, CLARIFIER_USER.format(query=query, context=context)
