"""Checking every cited sentence of a report against the text of the sources it cites.

The writer cites ``[src-...]`` ids; asking it for citations does not make them true. After the
draft is written, each body sentence that carries a citation becomes a *claim*. For each claim
the sentences of its cited sources that best match it are selected, each with the sentence on
either side, and a fact-checker model judges, a batch of claims per call, whether those
excerpts back it:

- ``supported``: the sentence stays as written;
- ``partial``: the sentence stays, marked ``*(partly supported)*`` right after its words (before
  its closing punctuation and citations);
- ``unsupported``: the sentence is removed from the report (a table row loses its line);
- ``unverified``: the judge could not be asked (claim cap, provider error, a deadline that came
  first) or gave no readable verdict; the sentence stays as written.

A claim that cites only ids the research does not know is ``unsupported`` without asking the
model. An ``unsupported`` claim is not removed at once: the other gathered sources whose
passages share most of its words are judged for it, and when one backs it the citation is
repaired (the sentence cites that source instead) and recorded; only a claim no gathered source
backs is removed. Splitting the draft, selecting excerpts, applying verdicts and writing the Evidence
Quality section are plain functions; only :func:`verify_draft` talks to the model.

- :mod:`.claims`: the cited sentences of a draft, and the draft rewritten with their verdicts;
- :mod:`.excerpts`: the excerpts of the cited sources a claim is judged on;
- :mod:`.judge`: the fact-checker's batches and answers;
- :mod:`.repair`: other sources tried for a claim its citations do not back;
- :mod:`.quotes`: the excerpts as verbatim spans of the sources' stored text;
- :mod:`.verify`: :func:`verify_draft`, which puts them together;
- :mod:`.section`: the report's Evidence Quality section.
"""

from __future__ import annotations

from foundry_mcp.context.reading.passages import (
    PASSAGE_MAX_CHARS,
    PASSAGE_MIN_CHARS,
    PassageIndex,
    content_words,
    split_passages,
)
from foundry_mcp.research.verification.claims import (
    CITATION,
    MIN_SENTENCE_WORDS,
    PARTIAL_MARK,
    Claim,
    DraftClaims,
    apply_verdicts,
    claim_text,
    mark_partial,
    split_claims,
)
from foundry_mcp.research.verification.excerpts import (
    CONTEXT_SENTENCES,
    EXCERPT_CHARS_PER_CLAIM,
    MIN_EXCERPT_CHARS,
    PASSAGES_PER_SOURCE,
    ExcerptSelector,
)
from foundry_mcp.research.verification.judge import (
    BATCH_SIZE,
    VERIFIER_MAX_TOKENS,
    batches,
    read_judge_answer,
    read_verdict,
    spread,
)
from foundry_mcp.research.verification.section import (
    EVIDENCE_HEADING,
    REASON_CHARS,
    REMOVED_CLAIM_CHARS,
    evidence_quality_section,
)
from foundry_mcp.research.verification.verify import VerifiedDraft, verify_draft

__all__ = [
    "BATCH_SIZE",
    "CITATION",
    "CONTEXT_SENTENCES",
    "EVIDENCE_HEADING",
    "EXCERPT_CHARS_PER_CLAIM",
    "MIN_EXCERPT_CHARS",
    "MIN_SENTENCE_WORDS",
    "PARTIAL_MARK",
    "PASSAGES_PER_SOURCE",
    "PASSAGE_MAX_CHARS",
    "PASSAGE_MIN_CHARS",
    "REASON_CHARS",
    "REMOVED_CLAIM_CHARS",
    "VERIFIER_MAX_TOKENS",
    "Claim",
    "DraftClaims",
    "ExcerptSelector",
    "PassageIndex",
    "VerifiedDraft",
    "apply_verdicts",
    "batches",
    "claim_text",
    "content_words",
    "evidence_quality_section",
    "mark_partial",
    "read_judge_answer",
    "read_verdict",
    "split_claims",
    "split_passages",
    "spread",
    "verify_draft",
]
