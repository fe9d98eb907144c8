"""The local documents provider: indexing a folder, incremental updates, passages, safe queries."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from foundry_mcp.config import LocalDocumentsSettings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.search import local as local_module
from foundry_mcp.providers.search.local import (
    LocalDocuments,
    first_heading,
    fts_query,
    split_passages,
)
from tests.fakes import article_html, make_pdf

pytestmark = pytest.mark.anyio

NOTES = """# Heat pumps in cold climates

Field trials in Norway showed that air-source heat pumps kept a seasonal COP above 2.5.

## Defrosting

Defrost cycles cost between 5 and 10 percent of the delivered heat in humid weather.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "heat-pumps.md").write_text(NOTES)
    (folder / "garden.txt").write_text("Tomatoes need warmth and six hours of sun a day.\n")
    return folder


def _provider(tmp_path: Path, *paths: Path, **settings: object) -> LocalDocuments:
    values: dict[str, object] = {"paths": list(paths)}
    values.update(settings)
    return LocalDocuments(
        "local",
        LocalDocumentsSettings.model_validate(values),
        tmp_path / "research" / "local-index.db",
    )


@pytest.fixture(autouse=True)
def rescan_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scan before every search, so changes show up without waiting."""
    monkeypatch.setattr(local_module, "SCAN_INTERVAL", 0.0)


# --------------------------------------------------------------------------- searching


async def test_search_finds_the_sentence_with_its_lines(tmp_path: Path, docs: Path) -> None:
    provider = _provider(tmp_path, docs)
    results = await provider.search("seasonal COP of air-source heat pumps in Norway", 5)
    assert results, "nothing found"
    hit = results[0]
    path = (docs / "heat-pumps.md").resolve()
    assert hit.url == f"{path.as_uri()}#L1-L7"
    assert hit.title == "heat-pumps.md — Heat pumps in cold climates"
    assert "**Norway**" in hit.snippet
    assert hit.content is not None and "seasonal COP above 2.5" in hit.content
    assert hit.provider == "local"
    assert hit.score is not None  # BM25, higher is better (tiny in a two-document corpus)
    assert (tmp_path / "research" / "local-index.db").is_file()
    assert all("garden" not in (r.url or "") for r in results)


async def test_unrelated_query_finds_nothing(tmp_path: Path, docs: Path) -> None:
    provider = _provider(tmp_path, docs)
    assert await provider.search("quantum chromodynamics lattice", 5) == []


async def test_content_is_the_passage_with_its_neighbours(tmp_path: Path) -> None:
    folder = tmp_path / "long"
    folder.mkdir()
    paragraphs = [f"Paragraph {n} talks about topic{n} in detail. " * 25 for n in range(6)]
    (folder / "long.md").write_text("\n\n".join(paragraphs))
    provider = _provider(tmp_path, folder)
    (hit,) = await provider.search("topic3", 1)
    assert hit.content is not None
    assert "topic2" in hit.content and "topic3" in hit.content and "topic4" in hit.content
    assert "topic0" not in hit.content
    assert hit.url is not None and hit.url.endswith("#L7")  # paragraph 3, one long line


async def test_one_file_gives_at_most_two_passages(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "big.md").write_text("\n\n".join(["The glacier keeps melting. " * 50] * 8))
    (folder / "small.md").write_text("A glacier is a river of ice.")
    provider = _provider(tmp_path, folder)
    results = await provider.search("glacier", 5)
    files = [Path((r.url or "").split("#")[0]).name for r in results]
    assert files.count("big.md") == 2
    assert "small.md" in files


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced quote',
        "NEAR(heat pumps, 2)",
        "heat AND OR NOT pumps",
        "title:secret body:heat",
        "* ^ - + ( ) { } :",
        "'; DROP TABLE files; --",
        "heat* pump^",
        "",
        "   ",
        "the of and",  # only stopwords: searched for anyway
    ],
)
async def test_fts_syntax_in_the_query_is_harmless(tmp_path: Path, docs: Path, query: str) -> None:
    provider = _provider(tmp_path, docs)
    results = await provider.search(query, 5)  # never raises
    assert isinstance(results, list)
    # The index is intact afterwards.
    assert await provider.search("defrost cycles", 5)


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('NEAR("heat" pumps) AND *') == 'body : ("near" OR "heat" OR "pumps")'
    assert fts_query("How do heat pumps work?") == 'body : ("heat" OR "pumps" OR "work")'
    assert fts_query("the and") == 'body : ("the" OR "and")'
    assert fts_query("?!* ()") is None
    assert fts_query("Heat pumps: title", column=None) == '("heat" OR "pumps" OR "title")'


# --------------------------------------------------------------------------- incremental index


async def test_added_changed_and_deleted_files_are_reflected(tmp_path: Path, docs: Path) -> None:
    provider = _provider(tmp_path, docs)
    assert await provider.search("tomatoes", 5)
    assert not await provider.search("photovoltaic", 5)

    (docs / "solar.md").write_text("Photovoltaic panels lose efficiency when hot.\n")
    assert [r.title for r in await provider.search("photovoltaic", 5)] == ["solar.md"]

    garden = docs / "garden.txt"
    garden.write_text("Courgettes grow fast in July.\n")
    os.utime(garden, ns=(garden.stat().st_atime_ns, garden.stat().st_mtime_ns + 10**9))
    assert not await provider.search("tomatoes", 5)
    assert await provider.search("courgettes", 5)

    (docs / "solar.md").unlink()
    assert not await provider.search("photovoltaic", 5)


async def test_unchanged_files_are_not_read_again(tmp_path: Path, docs: Path) -> None:
    provider = _provider(tmp_path, docs)
    first = provider.refresh(force=True)
    assert first is not None and first.indexed == 2
    again = provider.refresh(force=True)
    assert again is not None and again.indexed == 0 and again.files_seen == 2
    # A new process (a new provider on the same index file) trusts the index too.
    fresh = _provider(tmp_path, docs)
    stats = fresh.refresh(force=True)
    assert stats is not None and stats.indexed == 0


async def test_scans_are_spaced_out(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_module, "SCAN_INTERVAL", 60.0)
    provider = _provider(tmp_path, docs)
    scans = 0
    original = provider._scan

    def counting() -> local_module.ScanStats:
        nonlocal scans
        scans += 1
        return original()

    monkeypatch.setattr(provider, "_scan", counting)
    for _ in range(3):
        await provider.search("heat", 5)
    assert scans == 1


async def test_removed_path_drops_its_documents(tmp_path: Path, docs: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "bees.md").write_text("Bees pollinate apple trees.")
    both = _provider(tmp_path, docs, other)
    assert await both.search("bees", 5)
    only_docs = _provider(tmp_path, docs)
    assert not await only_docs.search("bees", 5)


async def test_what_is_skipped(tmp_path: Path, docs: Path) -> None:
    for hidden in (".git", "node_modules", "__pycache__", ".venv", ".cache"):
        (docs / hidden).mkdir()
        (docs / hidden / "x.md").write_text("zebra stripes")
    (docs / ".secret.md").write_text("zebra stripes")
    (docs / "zebra.bin").write_text("zebra stripes")
    (docs / "zebra-big.md").write_text("zebra stripes " + "x" * 3000)
    provider = _provider(tmp_path, docs, max_file_bytes=2000)
    assert await provider.search("zebra", 5) == []
    (docs / "nested").mkdir()
    (docs / "nested" / "zebra.md").write_text("zebra stripes")
    (hit,) = await provider.search("zebra", 5)
    assert hit.title == "zebra.md"


async def test_a_single_file_can_be_a_path(tmp_path: Path, docs: Path) -> None:
    provider = _provider(tmp_path, docs / "garden.txt")
    (hit,) = await provider.search("tomatoes", 5)
    assert hit.url is not None and hit.url.endswith("garden.txt#L1")


async def test_missing_paths(tmp_path: Path, docs: Path) -> None:
    partly = _provider(tmp_path, docs, tmp_path / "nowhere")
    assert await partly.search("tomatoes", 5)  # the existing folder is still searched
    nothing = _provider(tmp_path, tmp_path / "nowhere")
    with pytest.raises(ProviderError) as caught:
        await nothing.search("tomatoes", 5)
    assert "[research.local] paths" in caught.value.message
    assert "nowhere" in caught.value.message


def _damage(index: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)


async def test_a_damaged_index_is_rebuilt(tmp_path: Path, docs: Path) -> None:
    provider = _provider(tmp_path, docs)
    assert await provider.search("tomatoes", 5)
    index = tmp_path / "research" / "local-index.db"
    _damage(index)
    assert await _provider(tmp_path, docs).search("tomatoes", 5)
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 2


async def test_changed_extensions_reindex_everything(tmp_path: Path, docs: Path) -> None:
    assert await _provider(tmp_path, docs).search("tomatoes", 5)
    markdown_only = _provider(tmp_path, docs, extensions=[".md"])
    assert not await markdown_only.search("tomatoes", 5)
    assert await markdown_only.search("defrost", 5)


# --------------------------------------------------------------------------- formats


async def test_pdf_pages_are_searchable(tmp_path: Path, docs: Path) -> None:
    pdf = make_pdf(
        ["Introduction to geothermal loops.", "Boreholes stay near ten degrees all year."],
        title="Ground source study",
    )
    (docs / "study.pdf").write_bytes(pdf)
    provider = _provider(tmp_path, docs)
    (hit,) = await provider.search("boreholes", 5)
    assert hit.url == f"{(docs / 'study.pdf').resolve().as_uri()}#page=2"
    assert hit.title == "study.pdf — Ground source study"
    assert hit.content is not None and "Introduction to geothermal loops." in hit.content


async def test_html_documents_are_reduced_to_text(tmp_path: Path, docs: Path) -> None:
    (docs / "page.html").write_text(
        article_html("Wind turbines", ["Offshore wind turbines reach capacity factors of 50%."])
    )
    provider = _provider(tmp_path, docs)
    (hit,) = await provider.search("offshore capacity", 5)
    assert hit.title == "page.html — Wind turbines"
    assert hit.content is not None
    assert "capacity factors" in hit.content
    assert "do not extract me" not in hit.content
    assert not await provider.search("tracking", 5)  # script text is not indexed


async def test_unreadable_files_are_skipped_not_fatal(tmp_path: Path, docs: Path) -> None:
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (docs / "binary.txt").write_bytes(b"\x00\x01tomatoes\x00")
    provider = _provider(tmp_path, docs)
    stats = provider.refresh(force=True)
    assert stats is not None and stats.failed == 2
    (hit,) = await provider.search("tomatoes", 5)
    assert hit.title == "garden.txt"


# --------------------------------------------------------------------------- passages


def test_passages_follow_blank_lines_and_keep_line_numbers() -> None:
    paragraphs = [f"para {n} " + "word " * 60 for n in range(10)]  # ~300 chars each
    text = "\n\n".join(paragraphs)
    passages = split_passages(text, target=1200)
    assert 2 <= len(passages) <= 4
    lines = text.splitlines()
    for passage in passages:
        body = "\n".join(lines[passage.start_line - 1 : passage.end_line]).strip()
        assert body == passage.text
    assert passages[0].start_line == 1
    assert passages[-1].end_line == len(lines)


def test_very_long_lines_are_cut_into_pieces() -> None:
    text = "short line\n" + "x" * 100 + " " + "y " * 1500 + "\nlast line"
    passages = split_passages(text, target=1200)
    assert all(len(p.text) <= 1200 for p in passages)
    assert any(p.start_line == p.end_line == 2 for p in passages)
    assert passages[-1].text == "last line"


def test_first_heading() -> None:
    assert first_heading("intro\n\n# Title here #\n", ".md") == "Title here"
    assert first_heading("Setext title\n============\n", ".md") == "Setext title"
    assert first_heading("RST title\n=========\n\ntext", ".rst") == "RST title"
    assert first_heading("# not a heading in Python", ".py") is None


async def test_a_symlink_out_of_the_folder_is_not_followed(tmp_path: Path, docs: Path) -> None:
    secret = tmp_path / "elsewhere" / "credentials.md"
    secret.parent.mkdir()
    secret.write_text("The deploy token of the orchard server is hunter2-orchard.\n")
    (docs / "harmless.md").symlink_to(secret)
    inside = docs / "garden-copy.txt"
    inside.symlink_to(docs / "garden.txt")
    provider = _provider(tmp_path, docs)
    assert await provider.search("deploy token orchard server", 5) == []
    found = await provider.search("tomatoes warmth sun", 5)
    assert {Path(r.url or "").name.split("#")[0] for r in found} >= {"garden.txt"}
    await provider.aclose()


# --------------------------------------------------------------------------- the planner's sample


async def test_the_sample_names_the_most_relevant_documents_first(
    tmp_path: Path, docs: Path
) -> None:
    (docs / "projects").mkdir()
    (docs / "projects" / "roadmap.md").write_text("# Roadmap 2027\n\nShip the tomato sensor.\n")
    provider = _provider(tmp_path, docs)
    sample = await provider.sample("Do heat pumps work in cold climates?", 5)
    assert sample[0] == "heat-pumps.md — Heat pumps in cold climates"
    # The others follow as a spread, named by their path below the folder.
    assert set(sample[1:]) == {"garden.txt", "projects/roadmap.md — Roadmap 2027"}
    assert await provider.sample("quantum chromodynamics", 1) == ["garden.txt"]
    assert await provider.sample("?!", 0) == []


async def test_the_sample_spreads_over_the_folders_without_a_match(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    for letter in "abcdefgh":
        (folder / letter).mkdir(parents=True)
        (folder / letter / "note.md").write_text(f"Note {letter} about nothing in particular.\n")
    (folder / "empty.md").write_text("")  # no text: never named
    provider = _provider(tmp_path, folder)
    sample = await provider.sample("zeppelins", 4)
    assert sample == ["a/note.md", "c/note.md", "e/note.md", "g/note.md"]


async def test_the_sample_never_names_a_file_outside_the_configured_folders(
    tmp_path: Path, docs: Path
) -> None:
    secret = tmp_path / "elsewhere" / "credentials.md"
    secret.parent.mkdir()
    secret.write_text("# Heat pump vendor passwords\n\nheat pumps heat pumps\n")
    (docs / "vendor.md").symlink_to(secret)  # a link out of the folder is not followed
    # Another configuration indexed the other folder into the same index file.
    assert await _provider(tmp_path, docs, secret.parent).search("passwords", 5)
    provider = _provider(tmp_path, docs)
    original = provider.refresh
    # As if a scan had just run: the index still holds the other folder's document.
    provider.refresh = lambda force=False: None  # type: ignore[method-assign]
    stale = await provider.sample("heat pump passwords", 10)
    with sqlite3.connect(tmp_path / "research" / "local-index.db") as conn:
        indexed = [path for (path,) in conn.execute("SELECT path FROM files")]
    assert str(secret.resolve()) in indexed
    provider.refresh = original  # type: ignore[method-assign]
    fresh = await provider.sample("heat pump passwords", 10)
    for sample in (stale, fresh):
        assert sample and all("credentials" not in name for name in sample)
        assert all("password" not in name.lower() for name in sample)
        assert all(not name.startswith("/") and ".." not in name for name in sample)
    single = _provider(tmp_path, docs / "garden.txt")
    assert await single.sample("tomatoes", 5) == ["garden.txt"]


async def test_sampling_an_unusable_index_is_a_provider_error(tmp_path: Path, docs: Path) -> None:
    with pytest.raises(ProviderError):
        await _provider(tmp_path, tmp_path / "nowhere").sample("tomatoes", 5)
    provider = _provider(tmp_path, docs)
    assert await provider.sample("tomatoes", 5)
    _damage(tmp_path / "research" / "local-index.db")
    with pytest.raises(ProviderError) as caught:
        await provider.sample("tomatoes", 5)
    assert "local-index.db" in caught.value.remediation
