"""The export formats (markdown, json, bibtex, ris) and the path checks of an export file."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, date, datetime
from pathlib import Path

import bibtexparser
import pytest
from bibtexparser.middlewares import SeparateCoAuthors, SplitNameParts

from foundry_mcp.errors import InputError, ReportNotReadyError
from foundry_mcp.providers.search.base import Publication
from foundry_mcp.research.export.citations import bibtex_escape
from foundry_mcp.research.export.document import ResearchExport, render, schema
from foundry_mcp.research.export.files import export_research, export_target
from foundry_mcp.research.models import (
    ClaimCheck,
    EvidenceQuote,
    Finding,
    ReportMetadata,
    ResearchState,
    Source,
    Status,
)

NOW = datetime(2026, 11, 5, 12, 0, tzinfo=UTC)
TRICKY_TITLE = r"Costs & 100% of {R_&_D} #1: $x^2$ ~ C:\path"
DOI = "10.1145/3290605.3300288"
# As the Semantic Scholar adapter records a paper (see test_search_providers.py).
PAPER = Publication(
    authors=["Ada Lovelace", "Grace B. Hopper", "Martin Luther King Jr.", "R&D Group and Sons"],
    year=2019,
    venue="Proc. CHI & Friends",
    doi=DOI,
)


def _state(*, report: bool = True) -> ResearchState:
    paper = Source(
        id="src-0000aaaa",
        title=TRICKY_TITLE,
        url=f"https://doi.org/{DOI}",
        provider="semantic_scholar",
        content="An abstract.",
        publication=PAPER,
    )
    page = Source(id="src-0000bbbb", title="A web page", url="https://example.org/a?b=1%20c#d")
    unused = Source(id="src-0000cccc", title="Not cited", url="https://example.org/z")
    state = ResearchState(
        query="What is a CRDT?",
        llm_provider="openai",
        llm_model="gpt-test",
        status=Status.COMPLETED,
        sources=[unused, page, paper],
        findings=[Finding(content="CRDTs merge.", source_ids=[paper.id])],
        claim_checks=[
            ClaimCheck(
                sentence="CRDTs merge without coordination [1].",
                source_ids=[paper.id],
                verdict="supported",
                quotes=[EvidenceQuote(source_id=paper.id, text="An abstract", start=0, end=11)],
            )
        ],
        metadata={"authorization": "Bearer secret-token"},
    )
    if report:
        state.report = "# CRDTs\n\nThey merge [1]. Pages say so [2].\n"
        state.report_metadata = ReportMetadata(cited_source_ids=[paper.id, page.id])
    return state


def test_markdown_is_the_report() -> None:
    state = _state()
    assert render(state, "markdown", now=NOW) == state.report


def test_json_validates_against_the_published_schema_and_holds_no_secrets() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    text = render(_state(), "json", now=NOW)
    data = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.validate(data, schema())
    assert ResearchExport.model_validate_json(text).question == "What is a CRDT?"
    assert data["status"] == "completed" and data["report"].startswith("# CRDTs")
    numbers = {s["id"]: s["number"] for s in data["sources"]}
    assert numbers == {"src-0000aaaa": 1, "src-0000bbbb": 2, "src-0000cccc": None}
    paper = data["sources"][2]
    assert paper["doi"] == DOI and paper["year"] == 2019 and paper["venue"] == PAPER.venue
    assert paper["authors"] == PAPER.authors
    assert data["sources"][1]["authors"] == [] and data["sources"][1]["year"] is None
    assert data["claim_checks"][0]["quotes"][0]["text"] == "An abstract"
    assert data["findings"][0]["content"] == "CRDTs merge."
    assert set(data["usage"]) >= {"input_tokens", "output_tokens", "cost_usd"}
    assert "secret-token" not in text and "metadata" not in data
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "api_key": "x"}, schema())


def test_json_exports_a_research_without_a_report() -> None:
    data = json.loads(render(_state(report=False), "json", now=NOW))
    assert data["report"] is None


@pytest.mark.parametrize("fmt", ["markdown", "bibtex", "ris"])
def test_report_formats_need_a_report(fmt: str) -> None:
    with pytest.raises(ReportNotReadyError):
        render(_state(report=False), fmt, now=NOW)


def test_unknown_format_is_a_validation_error() -> None:
    with pytest.raises(InputError) as caught:
        render(_state(), "docx", now=NOW)
    assert caught.value.details["field"] == "format"


# A strict reader of the layout and escaping of the BibTeX we write (bibtexparser, below, is
# lenient about both): entries of `name = {value}` fields whose braces balance and whose
# specials are escaped.
_ENTRY = re.compile(r"@(\w+)\{([A-Za-z0-9_:-]+),\n((?:  \w+ = \{.*\},?\n)+)\}\n")
_UNESCAPE = [
    (r"\textbackslash{}", "\\"),
    (r"\^{}", "^"),
    (r"\~{}", "~"),
    *[(f"\\{c}", c) for c in "{}$&%#_"],
]


def _balanced(text: str) -> bool:
    depth = 0
    for i, char in enumerate(text):
        if char in "{}" and (i == 0 or text[i - 1] != "\\"):
            depth += 1 if char == "{" else -1
            if depth < 0:
                return False
    return depth == 0


def _parse_bibtex(text: str) -> list[tuple[str, str, dict[str, str]]]:
    entries, position = [], 0
    for match in _ENTRY.finditer(text):
        assert text[position : match.start()].strip() == "", text[position : match.start()]
        position = match.end()
        fields = {}
        for line in match.group(3).splitlines():
            name, value = re.fullmatch(r"  (\w+) = \{(.*)\},?", line).groups()  # type: ignore[union-attr]
            assert _balanced(value), line
            if name not in ("url", "doi", "eprint", "howpublished"):  # URLs: read verbatim
                bare = re.sub(r"\\textbackslash\{\}|\\[{}$&%#_]|\\[\^~]\{\}", "", value)
                assert not re.search(r"[$&%#_^~\\]", bare), line
            fields[name] = value
        entries.append((match.group(1), match.group(2), fields))
    assert text[position:].strip() == ""
    return entries


def _unescape(value: str) -> str:
    value = value.removeprefix("{").removesuffix("}")
    for escaped, plain in _UNESCAPE:
        value = value.replace(escaped, plain)
    return value


def test_bibtex_has_one_escaped_entry_per_cited_source_in_report_order() -> None:
    text = render(_state(), "bibtex", now=NOW)
    entries = _parse_bibtex(text)
    assert [key for _, key, _ in entries] == ["src-0000aaaa", "src-0000bbbb"]
    assert [kind for kind, _, _ in entries] == ["article", "misc"]
    paper, page = entries[0][2], entries[1][2]
    assert _unescape(paper["title"]) == TRICKY_TITLE
    assert paper["doi"] == DOI and paper["year"] == "2019"
    assert paper["journal"] == r"Proc. CHI \& Friends"
    assert paper["author"] == (
        r"Ada Lovelace and Grace B. Hopper and King, Jr., Martin Luther"
        r" and {R\&D Group and Sons}"
    )
    assert "howpublished" not in paper
    assert page["url"] == "https://example.org/a?b=1%20c#d"
    assert page["howpublished"] == r"\url{https://example.org/a?b=1%20c#d}"
    assert page["urldate"] == "2026-11-05" and page["note"] == "Accessed 2026-11-05"
    assert not {"doi", "author", "year", "journal"} & set(page)
    assert render(_state(), "bibtex", now=NOW) == text  # stable


def test_bibtex_parses_with_a_bibtex_library() -> None:
    text = render(_state(), "bibtex", now=NOW)
    library = bibtexparser.parse_string(
        text, append_middleware=[SeparateCoAuthors(), SplitNameParts()]
    )
    assert library.failed_blocks == []
    paper, page = library.entries
    assert (paper.entry_type, paper.key) == ("article", "src-0000aaaa")
    fields = {name: field.value for name, field in paper.fields_dict.items()}
    names = [(n.first, n.von, n.last, n.jr) for n in fields["author"]]
    assert names == [
        (["Ada"], [], ["Lovelace"], []),
        (["Grace", "B."], [], ["Hopper"], []),
        (["Martin", "Luther"], [], ["King"], ["Jr."]),
        ([], [], [r"{R\&D Group and Sons}"], []),
    ]
    assert fields["year"] == "2019"
    assert _unescape(fields["journal"]) == "Proc. CHI & Friends"
    assert fields["doi"] == DOI and fields["url"] == f"https://doi.org/{DOI}"
    assert _unescape(fields["title"]) == TRICKY_TITLE
    assert (page.entry_type, page.key) == ("misc", "src-0000bbbb")
    fields = {name: field.value for name, field in page.fields_dict.items()}
    assert fields["url"] == "https://example.org/a?b=1%20c#d"
    assert fields["note"] == "Accessed 2026-11-05" and fields["title"] == "{A web page}"
    assert not {"author", "year", "journal", "doi"} & set(fields)


def test_a_source_saved_before_publication_details_exports_from_its_url() -> None:
    data = json.loads(_state().model_dump_json())
    for source in data["sources"]:
        del source["publication"]  # as a state written by an earlier version has it
    state = ResearchState.model_validate(data)
    assert all(source.publication is None for source in state.sources)
    entries = _parse_bibtex(render(state, "bibtex", now=NOW))
    assert [kind for kind, _, _ in entries] == ["misc", "misc"]
    assert entries[0][2]["doi"] == DOI and "author" not in entries[0][2]
    assert "TY  - JOUR\nID  - src-0000aaaa\nTI  - " in render(state, "ris", now=NOW)


def test_a_news_article_carries_the_day_it_was_published() -> None:
    state = _state()
    state.sources[1].publication = Publication(year=2024, published=date(2024, 11, 20))
    page = _parse_bibtex(render(state, "bibtex", now=NOW))[1][2]
    assert page["year"] == "2024" and page["date"] == "2024-11-20"
    assert "PY  - 2024\nDA  - 2024/11/20\n" in render(state, "ris", now=NOW)


def test_bibtex_names_that_would_split_stay_whole() -> None:
    state = _state()
    state.sources[2].publication = Publication(authors=["others", "Doe, Jane", " Plato "])
    entries = _parse_bibtex(render(state, "bibtex", now=NOW))
    assert entries[0][2]["author"] == "{others} and {Doe, Jane} and Plato"


def test_bibtex_escape_balances_any_braces() -> None:
    assert _balanced(bibtex_escape("}{ a } b {"))
    assert bibtex_escape("a_b\n c") == r"a\_b c"


def test_ris_records_have_the_required_tags() -> None:
    text = render(_state(), "ris", now=NOW)
    records = text.split("ER  - \n")
    assert records[-1] == "" and len(records) == 3
    for record in records[:-1]:
        lines = record.splitlines()
        assert lines[0].startswith("TY  - ")
        assert all(re.fullmatch(r"[A-Z][A-Z0-9]  - .*", line) for line in lines)
        tags = {line[:2] for line in lines}
        assert {"TY", "TI", "UR", "ID"} <= tags
    paper, page = records[0].splitlines(), records[1].splitlines()
    assert paper[:2] == ["TY  - JOUR", "ID  - src-0000aaaa"]
    assert [line for line in paper if line.startswith("AU")] == [
        "AU  - Lovelace, Ada",
        "AU  - Hopper, Grace B.",
        "AU  - King, Martin Luther, Jr.",
        "AU  - R&D Group and Sons",
    ]
    assert {"PY  - 2019", "T2  - Proc. CHI & Friends", "JO  - Proc. CHI & Friends"} <= set(paper)
    assert f"DO  - {DOI}" in paper and f"UR  - https://doi.org/{DOI}" in paper
    assert page[:2] == ["TY  - ELEC", "ID  - src-0000bbbb"] and "Y2  - 2026/11/05" in page
    assert not [line for line in page if line[:2] in ("AU", "PY", "T2", "JO", "DO")]


# ---------------------------------------------------------------------- where files go


def _export(workspace: Path, path: str, *, overwrite: bool = False) -> dict[str, object]:
    return export_research(
        _state(), "markdown", path=path, overwrite=overwrite, workspace=workspace, now=NOW
    )


def _refused(workspace: Path, path: str, reason: str, *, overwrite: bool = False) -> None:
    before = sorted(p.name for p in workspace.rglob("*"))
    with pytest.raises(InputError) as caught:
        _export(workspace, path, overwrite=overwrite)
    assert caught.value.error_code == "VALIDATION_ERROR"
    assert caught.value.details == {"field": "path", "reason": reason}
    assert sorted(p.name for p in workspace.rglob("*")) == before  # nothing written


def test_writes_relative_and_absolute_paths_inside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    done = _export(tmp_path, "out/report.md")
    assert Path(str(done["path"])).read_text() == _state().report
    assert "content" not in done
    absolute = tmp_path / "out" / "again.md"
    assert _export(tmp_path, str(absolute))["path"] == str(absolute.resolve())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["again.md", "report.md"]


def test_traversal_and_outside_paths_are_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _refused(workspace, "../x.md", "traversal")
    _refused(workspace, "sub/../../x.md", "traversal")
    _refused(workspace, str(tmp_path / "outside.md"), "outside_workspace")
    assert not (tmp_path / "x.md").exists() and not (tmp_path / "outside.md").exists()


def test_symlink_escape_is_refused(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    _refused(workspace, "link/x.md", "symlink_escape")
    (workspace / "file.md").symlink_to(outside / "target.md")
    _refused(workspace, "file.md", "symlink", overwrite=True)
    assert list(outside.iterdir()) == []


def test_existing_file_needs_overwrite(tmp_path: Path) -> None:
    (tmp_path / "r.md").write_text("keep me")
    _refused(tmp_path, "r.md", "exists")
    assert (tmp_path / "r.md").read_text() == "keep me"
    _export(tmp_path, "r.md", overwrite=True)
    assert (tmp_path / "r.md").read_text() == _state().report
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]  # no temporary file left


def test_missing_parent_and_directories_are_refused(tmp_path: Path) -> None:
    _refused(tmp_path, "no/such/dir.md", "no_parent")
    (tmp_path / "d").mkdir()
    _refused(tmp_path, "d", "is_directory", overwrite=True)
    _refused(tmp_path, "", "invalid")


def test_a_path_inside_via_a_symlinked_workspace_is_accepted(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    export_target(str(alias / "r.md"), alias, overwrite=False)  # no refusal
    assert os.path.realpath(alias) == str(real)


def test_inline_export_is_bounded(tmp_path: Path) -> None:
    state = _state()
    state.report = "x" * 10
    done = export_research(
        state, "markdown", path=None, overwrite=False, workspace=tmp_path, max_inline_chars=10
    )
    assert done["content"] == "x" * 10 and done["chars"] == 10
    with pytest.raises(InputError) as caught:
        export_research(
            state, "markdown", path=None, overwrite=False, workspace=tmp_path, max_inline_chars=9
        )
    assert caught.value.details["reason"] == "too_large"
    assert "path" in caught.value.remediation


HOSTILE = "\x1b[2J\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b2J\u202e"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("fmt", ["markdown", "json", "bibtex", "ris"])
def test_every_format_is_plain_text_whatever_the_pages_held(fmt: str) -> None:
    state = _state()
    for source in state.sources:
        source.title = f"{source.title} {HOSTILE}"
        source.snippet = f"A snippet {HOSTILE}"
    state.findings[0].content = f"CRDTs merge {HOSTILE}."
    state.claim_checks[0].quotes[0].text = f"An abstract {HOSTILE}"
    state.report = f"# CRDTs {HOSTILE}\n\n| a | b |\n|---|---|\n\tThey merge [1]. *Yes* [2].\n"
    text = render(state, fmt, now=NOW)
    assert not CONTROL.search(text) and "evil.example" not in text
    assert "\\u001b" not in text and "\\u009b" not in text and "\\u202e" not in text
    if fmt == "markdown":  # Markdown is data: only the control sequences went
        assert text.startswith("# CRDTs link \n\n| a | b |\n|---|---|\n\tThey merge [1]. *Yes*")
    if fmt == "json":
        data = json.loads(text)
        assert data["findings"][0]["content"] == "CRDTs merge link ."
        assert {s["title"] for s in data["sources"]} >= {"A web page link "}
