"""The content archive: records by hash, permissions, atomic writes, TTL cleanup, restore."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from foundry_mcp.context.archive import ArchiveError, ContentArchive, archive_dir, sha256_of
from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.research.models import Phase, ResearchState, Source, Status
from foundry_mcp.research.service.restore import restore_content

ORIGINAL = "The full original text of a long source about lithium recycling. " * 50


def _archive(tmp_path: Path, ttl_hours: float = 168.0) -> ContentArchive:
    return ContentArchive(tmp_path / "research" / "archive", ttl_hours)


def _write(archive: ContentArchive, content: str = ORIGINAL, item_id: str = "src-00000001") -> str:
    return archive.write(
        content=content,
        item_id=item_id,
        item_type="source",
        reason="dropped",
        original_tokens=1100,
        metadata={"url": "https://example.org/a", "title": "A page", "unused": None},
    )


def test_a_record_is_written_under_its_hash_and_read_back(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    digest = _write(archive)
    assert digest == sha256_of(ORIGINAL) and digest.startswith("sha256:")
    path = archive.directory / f"{digest.removeprefix('sha256:')}.json"
    raw = json.loads(path.read_text())
    assert set(raw) == {
        "content_hash",
        "content",
        "item_id",
        "item_type",
        "archived_at",
        "archive_reason",
        "original_tokens",
        "metadata",
    }
    assert raw["metadata"] == {"url": "https://example.org/a", "title": "A page"}
    assert raw["archived_at"].endswith("Z")
    record = archive.read(digest)
    assert record.content == ORIGINAL and record.item_id == "src-00000001"
    assert record.archive_reason == "dropped" and record.original_tokens == 1100
    assert archive.read(digest.removeprefix("sha256:")).content == ORIGINAL


def test_files_are_owner_only_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    digest = _write(archive)
    assert stat.S_IMODE(archive.directory.stat().st_mode) == 0o700
    path = archive.path_of(digest)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in archive.directory.iterdir()] == [path.name]


def test_the_same_content_is_archived_once(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    assert _write(archive) == _write(archive, item_id="src-00000002")
    assert len(list(archive.directory.iterdir())) == 1


def test_a_damaged_or_unknown_record_is_refused(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    digest = _write(archive)
    path = archive.path_of(digest)
    raw = json.loads(path.read_text())
    raw["content"] = "tampered"
    path.write_text(json.dumps(raw))
    with pytest.raises(ArchiveError, match="does not match"):
        archive.read(digest)
    with pytest.raises(ArchiveError, match="No archived content"):
        archive.read("sha256:" + "0" * 64)
    with pytest.raises(ArchiveError, match="not an archive hash"):
        archive.read("../../etc/passwd")


def test_records_older_than_the_ttl_are_purged(tmp_path: Path) -> None:
    archive = _archive(tmp_path, ttl_hours=1)
    old = _write(archive, "old content")
    new = _write(archive, "new content")
    stale_temp = archive.directory / ".tmp-leftover"
    stale_temp.write_text("partial")
    two_hours_ago = time.time() - 7200
    os.utime(archive.path_of(old), (two_hours_ago, two_hours_ago))
    os.utime(stale_temp, (two_hours_ago, two_hours_ago))
    assert archive.purge_expired() == 1
    assert not archive.path_of(old).exists() and archive.path_of(new).exists()
    assert not stale_temp.exists()
    assert _archive(tmp_path / "nowhere").purge_expired() == 0


def test_the_archive_directory_defaults_under_the_research_dir(tmp_path: Path) -> None:
    assert archive_dir(tmp_path, None) == tmp_path / "archive"
    assert archive_dir(tmp_path, tmp_path / "elsewhere") == tmp_path / "elsewhere"


# --------------------------------------------------------------------------- restore


def _dropped_state(archive: ContentArchive, status: Status, phase: Phase) -> ResearchState:
    source = Source(id="src-0000000a", title="A page", url="https://example.org/a", content=None)
    state = ResearchState(
        query="q", llm_provider="openai", llm_model="gpt-4o", status=status, phase=phase
    )
    state.sources.append(source)
    source.analyzed = True
    state.dropped_content_ids.append(source.id)
    state.content_archive_hashes[source.id] = _write(archive, item_id=source.id)
    return state


def test_restore_brings_the_original_back_and_reopens_analysis(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    state = _dropped_state(archive, Status.CANCELLED, Phase.SYNTHESIS)
    result = restore_content(state, "src-0000000a", archive)
    source = state.sources[0]
    assert source.content == ORIGINAL and not source.analyzed
    assert state.protected_content_ids == ["src-0000000a"]
    assert state.dropped_content_ids == []
    assert state.phase is Phase.ANALYSIS and result["reopened_analysis"]
    assert result["restored_from"] == "archive"
    assert "deep-research-resume" in result["next_action"]


def test_restore_of_a_completed_research_waits_for_the_next_iteration(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    state = _dropped_state(archive, Status.COMPLETED, Phase.SYNTHESIS)
    result = restore_content(state, "src-0000000a", archive)
    assert state.phase is Phase.SYNTHESIS and not result["reopened_analysis"]
    assert "max_iterations" in result["next_action"]


def test_restore_refuses_running_research_unknown_items_and_lost_originals(
    tmp_path: Path,
) -> None:
    archive = _archive(tmp_path)
    running = _dropped_state(archive, Status.RUNNING, Phase.ANALYSIS)
    with pytest.raises(InvalidStateError):
        restore_content(running, "src-0000000a", archive)
    stopped = _dropped_state(archive, Status.FAILED, Phase.ANALYSIS)
    with pytest.raises(InputError):
        restore_content(stopped, "src-ffffffff", archive)
    with pytest.raises(ArchiveError):
        restore_content(stopped, "src-0000000a", None)
    archive.path_of(stopped.content_archive_hashes["src-0000000a"]).unlink()
    with pytest.raises(ArchiveError):
        restore_content(stopped, "src-0000000a", archive)
