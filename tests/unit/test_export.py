"""The export formats (markdown, json, bibtex, ris) and the path checks of an export file."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from foundry_mcp.errors import InputError, ReportNotReadyError
from foundry_mcp.research.export import (
    ResearchExport,
    bibtex_escape,
    render,
    schema,
)
from foundry_mcp.research.export_files import export_research, export_target
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


def _state(*, report: bool = True) -> ResearchState:
    paper = Source(
        id="src-0000aaaa",
        title=TRICKY_TITLE,
        url="https://doi.org/10.1145/3290605.3300288",
        provider="semantic_scholar",
        content="An abstract.",
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
    assert data["sources"][2]["doi"] == "10.1145/3290605.3300288"
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


# A strict reader of the BibTeX we write (no BibTeX parser is a dependency of the project):
# entries of `name = {value}` fields whose braces balance and whose specials are escaped.
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
            if name not in ("url", "doi", "eprint"):
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
    assert {kind for kind, _, _ in entries} == {"misc"}
    paper, page = entries[0][2], entries[1][2]
    assert _unescape(paper["title"]) == TRICKY_TITLE
    assert paper["doi"] == "10.1145/3290605.3300288"
    assert page["url"] == "https://example.org/a?b=1%20c#d"
    assert page["urldate"] == "2026-11-05" and "doi" not in page
    assert render(_state(), "bibtex", now=NOW) == text  # stable


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
    assert "TY  - JOUR\nID  - src-0000aaaa\n" in text
    assert "DO  - 10.1145/3290605.3300288\n" in text
    assert "TY  - ELEC\nID  - src-0000bbbb\n" in text and "Y2  - 2026/11/05\n" in text


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
