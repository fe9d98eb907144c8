"""The report's language: the caller's, else the question's when the model is sure of it."""

from __future__ import annotations

import pytest

from foundry_mcp.errors import InputError
from foundry_mcp.research import language
from foundry_mcp.research.language import (
    check_language,
    plainly_english,
    question_language,
    writing_rule,
)


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Wie schnell ist der Garbage Collector von Go bei großen Heaps?", "German"),
        ("Comment fonctionne le ramasse-miettes de Go avec de grands tas ?", "French"),
        ("¿Cómo pausan los recolectores de basura a los hilos de la aplicación?", "Spanish"),
        ("Почему сборщик мусора останавливает программу?", "Russian"),
        ("How do garbage collectors pause application threads?", "English"),
        # Names and acronyms say little about a language: nothing is asked of the writer.
        ("Postgres vs MySQL for OLTP", None),
        ("GC pause Go 1.22", None),
    ],
)
def test_the_question_language_is_taken_only_when_sure(question: str, language: str | None) -> None:
    assert question_language(question) == language


QUESTIONS = [
    "What is a B-tree?",
    "How does the Linux kernel schedule threads between cores?",
    "Which is faster for OLTP, Postgres or MySQL?",
    "Why is the sky blue?",
    "Wat is het verschil tussen een B-tree en een LSM-tree?",
    "Was ist der Unterschied zwischen Prozessen und Threads in Linux?",
    "Welche Datenbank ist die beste fuer Zeitreihen?",
    "Quelle est la difference entre TCP et UDP pour le jeu en ligne ?",
    "Qual e a diferenca entre threads e processos no Linux?",
    "Come funziona il garbage collector di Java con heap grandi?",
    "Hur fungerar skraepsamlaren i Go med stora heapar?",
    "Jak dziala garbage collector w Go przy duzych stertach?",
    "Postgres vs MySQL for OLTP",
    "GC pause Go 1.22",
    "Is Rust faster than C++ for the same algorithm?",
    "Dit is de vraag: what does the kernel do with this?",
    "Compare dbm.gnu, dbm.ndbm and dbm.dumb for lookup speed and file size",
    "Using asyncio and threading for network servers",
    "Quando compare il messaggio di errore e per quale motivo?",
]


@pytest.mark.parametrize("question", QUESTIONS)
def test_plain_english_is_taken_without_the_model_only_where_the_model_agrees(
    question: str,
) -> None:
    if plainly_english(question):
        code, probability = language._model().classify(question)
        assert code == "en", (question, code, probability)


def test_a_plainly_english_question_loads_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(language, "_identifier", None)

    def no_model() -> None:
        raise AssertionError("the model was loaded for a plainly English question")

    monkeypatch.setattr(language, "_model", no_model)
    assert question_language("How does the Linux kernel schedule threads?") == "English"
    with pytest.raises(AssertionError):
        question_language("Welche Datenbank ist die beste fuer Zeitreihen?")


@pytest.mark.parametrize(
    ("given", "name"),
    [("de", "German"), ("German", "German"), (" german ", "German"), ("PT", "Portuguese")],
)
def test_a_language_is_named_in_english_or_by_its_code(given: str, name: str) -> None:
    assert check_language(given) == name


@pytest.mark.parametrize("given", ["Klingon", "", "xx", 3])
def test_an_unknown_language_is_refused_with_the_ones_known(given: object) -> None:
    with pytest.raises(InputError) as caught:
        check_language(given)
    assert caught.value.details == {"field": "language"}
    assert "German (de)" in caught.value.remediation or "(de)" in caught.value.remediation


def test_the_writer_is_told_only_when_there_is_a_language() -> None:
    assert writing_rule(None) == ""
    rule = writing_rule("German")
    assert "Write the report in German" in rule and "citation brackets" in rule
