"""Auto mode: which mode a question needs, from its wording and the planner's judgement.

The *lexical prior* is free: the question patterns of seed 000 (comparisons, "A and B and C",
positions to evaluate, causes/effects/solutions, several perspectives) suggest hierarchical
research; questions about which explanation holds, or why something happened, suggest
hypotheses. The planner's *complexity assessment* (seed 003's master planner) comes with the plan
it writes anyway, so deciding costs no extra call. They are combined as follows:

* both agree: that mode;
* the planner says simple but the wording has two or more signals of another mode: the wording
  wins (the planner under-reads long multi-part questions more often than it over-reads them);
* otherwise the planner's recommendation wins; if its answer was unreadable, the prior's when
  it has two or more signals, else simple (a mode change needs more than one word to go on);
* hierarchical needs a decomposition into at least the minimum number of sub-questions; without
  one the research runs in simple mode, and the decision says why.
"""

from __future__ import annotations

import re

from foundry_mcp.research.models import (
    ComplexityAssessment,
    LexicalPrior,
    ModeDecision,
    ResearchMode,
)

# (signal name, pattern) pairs over the lower-cased question.
HIERARCHICAL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("comparison", re.compile(r"\bcompar(e|es|ed|ing|ison)\b|\b(vs\.?|versus)\b")),
    ("differences", re.compile(r"\b(differences?|similarities) between\b|\bpros and cons\b")),
    ("several parts", re.compile(r"\b\w[\w\s-]*, \w[\w\s-]*,? and \w")),
    ("A and B and C", re.compile(r"\band\b.+\band\b")),
    (
        "positions to evaluate",
        re.compile(r"\bevaluat\w*\b.*\b(positions?|claims?|arguments?|views?)\b"),
    ),
    (
        "several experts",
        re.compile(
            r"\bexpert [a-z]\b.*\bexpert [a-z]\b|\b(two|three|four|several|multiple|competing) "
            r"(experts|views|positions|perspectives|viewpoints|approaches|options)\b"
        ),
    ),
    (
        "causes, effects and solutions",
        re.compile(
            r"\bcauses?\b.*\b(effects?|impacts?|consequences?|solutions?|fix(es)?|remed\w+)\b"
        ),
    ),
    ("perspectives", re.compile(r"\b(perspectives?|viewpoints?|stakeholders?)\b")),
    ("several questions", re.compile(r"\?.+\?")),
)
HYPOTHESIS_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "which explanation",
        re.compile(r"\bwhich (explanation|hypothesis|theory|account|cause)\b"),
    ),
    ("competing explanations", re.compile(r"\b(hypothes[ie]s|theories|explanations)\b")),
    ("why it happened", re.compile(r"^\s*why\b|\bwhat (explains|caused|causes|led to)\b")),
    ("is it true", re.compile(r"\bis it (true|likely|possible|plausible) that\b")),
)


def lexical_prior(question: str) -> LexicalPrior:
    """The mode the question's wording suggests, and the signals behind it."""
    text = " ".join(question.lower().split())
    hierarchical = [name for name, pattern in HIERARCHICAL_PATTERNS if pattern.search(text)]
    hypotheses = [name for name, pattern in HYPOTHESIS_PATTERNS if pattern.search(text)]
    suggests = ResearchMode.SIMPLE
    if hypotheses and len(hypotheses) >= len(hierarchical):
        suggests = ResearchMode.HYPOTHESES
    elif hierarchical:
        suggests = ResearchMode.HIERARCHICAL
    return LexicalPrior(
        suggests=suggests, hierarchical_signals=hierarchical, hypothesis_signals=hypotheses
    )


def choose_mode(
    requested: ResearchMode,
    prior: LexicalPrior,
    assessment: ComplexityAssessment | None,
    sub_questions: int | None,
    min_sub_questions: int,
) -> ModeDecision:
    """Combine the prior and the assessment (see the module); ``sub_questions`` is how many
    valid sub-questions the planner's decomposition holds (None: not decomposed yet)."""
    decision = ModeDecision(requested=requested, lexical=prior, assessment=assessment)
    reasons = decision.reasons
    if prior.hierarchical_signals or prior.hypothesis_signals:
        signals = ", ".join(prior.hierarchical_signals + prior.hypothesis_signals)
        reasons.append(f"The wording suggests {prior.suggests.value} ({signals}).")
    else:
        reasons.append("The wording shows no sign of a multi-part or investigative question.")
    chosen: ResearchMode
    if requested is not ResearchMode.AUTO:
        chosen = requested
        reasons.append(f"The {requested.value} mode was asked for.")
    elif assessment is None:
        chosen = prior.suggests if prior.strength >= 2 else ResearchMode.SIMPLE
        reasons.append(
            "The planner's assessment could not be read; "
            + (
                "the wording decides."
                if prior.strength >= 2
                else "one signal in the wording is not enough to leave simple mode."
            )
        )
    else:
        reasons.append(
            f"The planner recommends {assessment.recommended_mode.value}"
            + (f": {assessment.reasoning}" if assessment.reasoning else ".")
        )
        chosen = assessment.recommended_mode
        overruled = chosen is ResearchMode.SIMPLE and prior.strength >= 2
        if overruled:
            chosen = prior.suggests
            reasons.append(f"Two or more signals in the wording outweigh it: {chosen.value}.")
    if (
        chosen is ResearchMode.HIERARCHICAL
        and sub_questions is not None
        and sub_questions < min_sub_questions
    ):
        decision.fallback = (
            f"Hierarchical research needs at least {min_sub_questions} sub-questions; the "
            f"decomposition gave {sub_questions} usable ones, so the question is researched in "
            "simple mode."
        )
        reasons.append(decision.fallback)
        chosen = ResearchMode.SIMPLE
    decision.mode = chosen
    return decision
