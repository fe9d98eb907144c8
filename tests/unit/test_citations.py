"""The citation contract: ``[src-...]`` ids become numbers, and ``## Sources`` is built by code."""

from __future__ import annotations

import random
import re

import pytest

from foundry_mcp.research.models import ClaimCheck, EvidenceQuote, Source, Verdict
from foundry_mcp.research.workflow.report.citations import quote_sources, resolve_citations

A = Source(id="src-aaaaaaaa", title="Alpha paper", url="https://alpha.example/paper")
B = Source(id="src-bbbbbbbb", title="Beta   report\nwith  spaces", url="https://beta.example")
C = Source(id="src-cccccccc", title="Gamma note", url=None)
D = Source(id="src-dddddddd", title="Delta", url="https://delta.example/d")
KNOWN = {s.id: s for s in (A, B, C, D)}
UNKNOWN = "src-99999999"


def _split(markdown: str) -> tuple[str, str | None]:
    if "\n## Sources\n" not in markdown:
        return markdown, None
    body, sources = markdown.split("\n## Sources\n", 1)
    return body, sources


def _source_lines(sources: str) -> list[str]:
    return [line for line in sources.splitlines() if line.strip()]


def test_numbers_follow_order_of_first_appearance() -> None:
    draft = "First [src-cccccccc]. Then [src-aaaaaaaa]. Again [src-cccccccc]. Last [src-bbbbbbbb]."
    result = resolve_citations(draft, KNOWN)
    body, _ = _split(result.markdown)
    assert re.findall(r"\[(\d+)\]", body) == ["1", "2", "1", "3"]
    assert [s.id for s in result.cited] == [C.id, A.id, B.id]
    assert result.citations_count == 4
    assert result.dropped_citations == 0


def test_multi_id_bracket_becomes_adjacent_markers() -> None:
    draft = "Claim [src-aaaaaaaa, src-bbbbbbbb]. Other [src-bbbbbbbb;src-cccccccc]. End."
    result = resolve_citations(draft, KNOWN)
    body, _ = _split(result.markdown)
    assert "Claim [1][2]." in body
    assert "Other [2][3]." in body
    assert result.citations_count == 4


def test_same_id_twice_in_one_bracket_gives_one_marker() -> None:
    result = resolve_citations("Claim [src-aaaaaaaa, src-aaaaaaaa].", KNOWN)
    body, _ = _split(result.markdown)
    assert "Claim [1]." in body
    assert "[1][1]" not in body


def test_unknown_ids_are_removed_and_counted() -> None:
    draft = f"Known [src-aaaaaaaa, {UNKNOWN}]. Only unknown [{UNKNOWN}]. Fine."
    result = resolve_citations(draft, KNOWN)
    body, sources = _split(result.markdown)
    assert UNKNOWN not in result.markdown
    assert "Known [1]." in body
    assert "Only unknown." in body  # the empty bracket and the space before it disappear
    assert result.dropped_citations == 2
    assert result.citations_count == 1
    assert sources is not None and len(_source_lines(sources)) == 1


def test_nothing_cited_means_no_sources_section() -> None:
    result = resolve_citations(f"## Findings\n\nA claim [{UNKNOWN}].\n", KNOWN)
    assert "## Sources" not in result.markdown
    assert result.cited == []
    assert result.dropped_citations == 1
    plain = resolve_citations("## Findings\n\nNo citations here.\n", KNOWN)
    assert "## Sources" not in plain.markdown
    assert plain.citations_count == 0


def test_sources_lines_have_title_and_url_or_title_only() -> None:
    result = resolve_citations("x [src-bbbbbbbb] y [src-cccccccc].", KNOWN)
    _, sources = _split(result.markdown)
    assert sources is not None
    assert _source_lines(sources) == [
        "[1] Beta report with spaces - https://beta.example",
        "[2] Gamma note",
    ]


@pytest.mark.parametrize(
    "heading", ["## References", "## Sources", "### Bibliography", "# Works Cited"]
)
def test_model_written_source_list_is_removed_and_later_sections_kept(heading: str) -> None:
    level = len(heading) - len(heading.lstrip("#"))
    draft = (
        "# Report\n\n## Findings\n\nClaim [src-aaaaaaaa].\n\n"
        f"{heading}\n\n1. Made Up Paper - https://hallucinated.example/x\n"
        "2. Another [src-bbbbbbbb]\n\n"
        f"{'#' * level} Appendix\n\nKept text [src-cccccccc].\n"
    )
    result = resolve_citations(draft, KNOWN)
    assert "hallucinated.example" not in result.markdown
    assert "Made Up Paper" not in result.markdown
    assert "Kept text [2]." in result.markdown
    assert f"{'#' * level} Appendix" in result.markdown
    assert [s.id for s in result.cited] == [A.id, C.id]  # B was cited only inside the list
    assert result.markdown.count("## Sources") == 1


def test_model_source_list_subsections_are_removed_with_it() -> None:
    draft = (
        "## Findings\n\nClaim [src-aaaaaaaa].\n\n## References\n\n### Web\n\n- https://x.example\n\n"
        "## Conclusion\n\nDone.\n"
    )
    result = resolve_citations(draft, KNOWN)
    assert "### Web" not in result.markdown
    assert "x.example" not in result.markdown
    assert "## Conclusion\n\nDone." in result.markdown


def test_model_source_list_at_the_end_is_removed() -> None:
    draft = "## Findings\n\nClaim [src-dddddddd].\n\n## Sources\n\n[1] Something - https://mem.example\n"
    result = resolve_citations(draft, KNOWN)
    _, sources = _split(result.markdown)
    assert "mem.example" not in result.markdown
    assert sources is not None
    assert _source_lines(sources) == ["[1] Delta - https://delta.example/d"]
    assert result.markdown.count("## Sources") == 1


def _random_draft(rng: random.Random) -> tuple[str, list[str]]:
    """A draft with random brackets of known and unknown ids; also every id written, in order."""
    pool = [*KNOWN, UNKNOWN, "src-12345678", "src-0badf00d"]
    parts, written = ["# Report", "", "## Executive Summary", ""], []
    for sentence in range(rng.randint(0, 12)):
        text = f"Sentence {sentence} says something"
        if rng.random() < 0.8:
            ids = [rng.choice(pool) for _ in range(rng.randint(1, 3))]
            sep = rng.choice([",", ", ", ";", " ; "])
            text += f" [{sep.join(ids)}]"
            written += ids
        parts.append(text + rng.choice([".", "", "!"]))
        if rng.random() < 0.2:
            parts += ["", f"## Section {sentence}", ""]
    return "\n".join(parts) + "\n", written


@pytest.mark.parametrize("seed", range(40))
def test_every_marker_resolves_and_no_uncited_source_is_listed(seed: int) -> None:
    draft, written = _random_draft(random.Random(seed))
    result = resolve_citations(draft, KNOWN)
    body, sources = _split(result.markdown)

    known_written = [sid for sid in written if sid in KNOWN]
    first_use = list(dict.fromkeys(known_written))
    assert [s.id for s in result.cited] == first_use
    assert result.citations_count == len(known_written)
    assert result.dropped_citations == len(written) - len(known_written)
    assert "src-" not in body

    markers = [int(n) for n in re.findall(r"\[(\d+)\]", body)]
    if not first_use:
        assert sources is None
        assert markers == []
        return
    assert sources is not None
    lines = _source_lines(sources)
    listed = [int(re.match(r"\[(\d+)\] ", line).group(1)) for line in lines]
    assert listed == list(range(1, len(first_use) + 1))
    assert set(markers) == set(listed)  # every marker resolves, every listed source is cited
    assert list(dict.fromkeys(markers)) == listed  # numbered in order of first appearance
    for number, source_id in enumerate(first_use, start=1):
        assert lines[number - 1].startswith(f"[{number}] ")
        url = KNOWN[source_id].url
        if url:
            assert lines[number - 1].endswith(f" - {url}")


def test_malformed_id_in_a_bracket_does_not_block_the_known_one() -> None:
    result = resolve_citations("Claim [src-aaaaaaaa, src-bad].", KNOWN)
    assert "src-" not in result.markdown
    assert [s.id for s in result.cited] == [A.id]


def test_content_section_whose_title_starts_with_sources_is_kept() -> None:
    draft = (
        "## Findings\n\nA [src-aaaaaaaa].\n\n## Sources of Error\n\n"
        "Measurement noise dominates [src-bbbbbbbb].\n\n## Conclusion\n\nDone.\n"
    )
    result = resolve_citations(draft, KNOWN)
    assert "Measurement noise dominates" in result.markdown
    assert [s.id for s in result.cited] == [A.id, B.id]


def test_report_quotes_go_under_the_sources_they_come_from() -> None:
    first = Source(title="Heat pump trial", url="https://a.example/trial", content="x")
    second = Source(title="Noise survey", url="https://b.example/noise", content="y")
    report = resolve_citations(
        f"## Findings\n\nHeat pumps work [{first.id}]. They are quiet [{second.id}].",
        {first.id: first, second.id: second},
    )
    checks = [
        ClaimCheck(
            sentence="Heat pumps work.",
            source_ids=[first.id],
            verdict=Verdict.SUPPORTED,
            quotes=[EvidenceQuote(source_id=first.id, text="they work  well", start=0, end=15)],
        ),
        ClaimCheck(
            sentence="They are quiet.",
            source_ids=[second.id],
            verdict=Verdict.UNSUPPORTED,  # its quote backs nothing: not shown
            quotes=[EvidenceQuote(source_id=second.id, text="loud", start=0, end=4)],
        ),
    ]
    quoted = quote_sources(report.markdown, report.cited, checks)
    listing = quoted.split("\n## Sources\n", 1)[1]
    assert listing.index("[1] Heat pump trial") < listing.index('> "they work well"')
    assert listing.index('> "they work well"') < listing.index("[2] Noise survey")
    assert "loud" not in quoted
    assert quote_sources(report.markdown, report.cited, []) == report.markdown
