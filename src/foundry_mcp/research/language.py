"""The language a report is written in: the caller's ``language``, else the question's own.

The question's language is recognised by py3langid (a maintained fork of langid.py, a model
trained on many languages), among the languages listed here, and only when it is sure: a short
question of product names ("Postgres vs MySQL for OLTP") says little about its language, and
then nothing is asked of the writer, whose report follows the question as it reads it. Searches
are not translated: they go out in whatever language the planner writes, which finds the
sources; only the report's prose is asked for in the language. The question's language is
decided when the report is written (:func:`decide_language`), not on the start's path. A
question in plain English (ASCII letters holding English function words such as "what" or
"the") is taken as English without the model; the model, which takes about half a second of
CPU to load, is loaded only for the other questions, once per process.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Protocol

import anyio

from foundry_mcp.errors import InputError

SURE = 0.9  # the probability below which a question's language is not taken as known
LANGUAGES: dict[str, str] = {
    "ar": "Arabic",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fi": "Finnish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "hu": "Hungarian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sv": "Swedish",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
    "zh": "Chinese",
}
_BY_NAME = {name.casefold(): name for name in LANGUAGES.values()}

# Words that mark English: one of them, with another of the wider set of English function
# words, marks an ASCII question as English ("compare", which Italian writes too, never counts
# alone; words several languages share, such as "in", "was", "an" or "a", count for nothing).
_ENGLISH_MARKS = frozenset(
    [
        "the",
        "what",
        "how",
        "why",
        "which",
        "does",
        "should",
        "between",
        "there",
        "this",
        "with",
        "from",
        "about",
        "compare",
        "using",
    ]
)
_ENGLISH_WORDS = _ENGLISH_MARKS | frozenset(
    [
        "is",
        "are",
        "do",
        "did",
        "can",
        "could",
        "would",
        "will",
        "and",
        "for",
        "than",
        "that",
        "when",
        "where",
        "who",
        "its",
        "it",
        "vs",
    ]
)
_WORD = re.compile(r"[a-z]+")


class ReportLanguage(Protocol):
    """Where a research keeps its report's language (``ResearchOptions``)."""

    language: str | None
    language_from_question: bool


_identifier: Any = None
_loading = threading.Lock()


def question_language(question: str) -> str | None:
    """The name of the language ``question`` is written in, when the model is sure of it."""
    if plainly_english(question):
        return "English"
    code, probability = _model().classify(question)
    return LANGUAGES.get(code) if probability >= SURE else None


async def decide_language(options: ReportLanguage, question: str) -> None:
    """Decide the report's language where the caller named none: the question's, when
    recognised. Done when the report is written, not when the research starts (the model may
    still be loading then, and a start answers at once); in a worker thread."""
    if options.language is None and options.language_from_question:
        options.language = await anyio.to_thread.run_sync(question_language, question)
    options.language_from_question = False


def check_language(value: Any) -> str:
    """A caller's ``language``: a language named in English ("German") or by its ISO 639-1
    code ("de"), as its English name; ``InputError`` for anything else."""
    said = value.strip() if isinstance(value, str) else ""
    name = LANGUAGES.get(said.lower()) or _BY_NAME.get(said.casefold())
    if name is None:
        raise InputError(
            f"language {value!r} is not a language foundry-mcp writes reports in.",
            remediation="Name one in English or by its two-letter code: "
            + ", ".join(f"{name} ({code})" for code, name in sorted(LANGUAGES.items())[:6])
            + ", ...; or leave it out to write in the question's language.",
            details={"field": "language"},
        )
    return name


def writing_rule(language: str | None) -> str:
    """The line a writer's instructions end with, when the report has a language."""
    if language is None:
        return ""
    return (
        f"\n\nWrite the report in {language}: its title, headings and every sentence. Keep "
        "quotations, names, code, figures and the citation brackets exactly as they are."
    )


def plainly_english(text: str) -> bool:
    """Whether ``text`` is English beyond doubt: ASCII, with a word only English writes so and
    another English function word (see :data:`_ENGLISH_MARKS`)."""
    if not text.isascii():
        return False
    words = set(_WORD.findall(text.lower()))
    return bool(words & _ENGLISH_MARKS) and len(words & _ENGLISH_WORDS) >= 2


def _model() -> Any:
    global _identifier
    with _loading:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            identifier.set_languages(list(LANGUAGES))
            _identifier = identifier
    return _identifier
