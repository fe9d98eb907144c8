"""The content archive: originals of dropped or heavily compressed items, kept on disk.

With ``content_archive_enabled``, the original text of an item that was dropped or shortened
to key points or a headline is written to ``<archive dir>/<sha256 hex>.json``: ``content_hash``
(``"sha256:<hex>"`` of the content), ``content``, ``item_id``, ``item_type``, ``archived_at``,
``archive_reason``, ``original_tokens`` and ``metadata`` (``url``, ``title``). The directory is
``research_archive_dir`` or ``<research_dir>/archive``, owner-only (0700; files 0600). Writes
are atomic: a temporary file in the same directory, fsync, rename, fsync of the directory.
Records older than ``content_archive_ttl_hours`` are removed at start-up. A record is read back
by its hash, and the hash is checked against the content.

This directory is one server's. A store can keep the same records where every server of a team
reads them (``research/store/archive.py``, a subclass of :class:`ContentArchive` that falls back
to this directory for records written here before); :func:`new_record`, :func:`record_of` and
:func:`check_record` are what both share.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from foundry_mcp.errors import FoundryError

log = logging.getLogger(__name__)

ARCHIVE_SUBDIR = "archive"
_HASH = re.compile(r"^(?:sha256:)?([0-9a-f]{64})$")
STALE_TEMP_SECONDS = 3600.0


class ArchiveError(FoundryError):
    """An archived record is missing, expired or damaged."""

    error_code = "ARCHIVE_NOT_FOUND"
    error_type = "not_found"
    default_remediation = (
        "The archived original is gone (expired after content_archive_ttl_hours, or deleted). "
        "Start a new research to gather the source again."
    )


@dataclass(frozen=True)
class ArchiveRecord:
    content_hash: str
    content: str
    item_id: str
    item_type: str
    archived_at: str
    archive_reason: str
    original_tokens: int
    metadata: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "content_hash": self.content_hash,
            "content": self.content,
            "item_id": self.item_id,
            "item_type": self.item_type,
            "archived_at": self.archived_at,
            "archive_reason": self.archive_reason,
            "original_tokens": self.original_tokens,
            "metadata": self.metadata,
        }


def sha256_of(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def normal_hash(content_hash: str) -> str:
    """``sha256:<hex>`` of an archive hash given with or without its prefix; ``ArchiveError``
    when it is not one."""
    match = _HASH.match(content_hash.strip().lower())
    if match is None:
        raise ArchiveError(
            f"{content_hash!r} is not an archive hash.",
            remediation="Pass a hash as stored in content_archive_hashes: 'sha256:<hex>'.",
        )
    return "sha256:" + match.group(1)


def new_record(
    *,
    content: str,
    item_id: str,
    item_type: str,
    reason: str,
    original_tokens: int,
    metadata: dict[str, Any] | None = None,
) -> ArchiveRecord:
    """The record that archives ``content`` now."""
    return ArchiveRecord(
        content_hash=sha256_of(content),
        content=content,
        item_id=item_id,
        item_type=item_type,
        archived_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        archive_reason=reason,
        original_tokens=original_tokens,
        metadata={k: v for k, v in (metadata or {}).items() if v is not None},
    )


def record_of(raw: dict[str, Any]) -> ArchiveRecord:
    """A record from its JSON (``KeyError``, ``TypeError`` or ``ValueError`` if incomplete)."""
    return ArchiveRecord(
        content_hash=str(raw["content_hash"]),
        content=str(raw["content"]),
        item_id=str(raw["item_id"]),
        item_type=str(raw["item_type"]),
        archived_at=str(raw["archived_at"]),
        archive_reason=str(raw["archive_reason"]),
        original_tokens=int(raw["original_tokens"]),
        metadata=dict(raw.get("metadata") or {}),
    )


def check_record(record: ArchiveRecord, expected_hash: str, name: str) -> ArchiveRecord:
    """``record`` if its content has ``expected_hash``; ``ArchiveError`` (naming it) if not."""
    if sha256_of(record.content) != expected_hash:
        raise ArchiveError(f"The archive record {name} does not match its hash.")
    return record


def archive_dir(research_dir: Path, configured: Path | None) -> Path:
    """``research_archive_dir`` when set, else ``<research_dir>/archive``."""
    return (configured or research_dir / ARCHIVE_SUBDIR).expanduser()


class ContentArchive:
    """Archive records in one owner-only directory."""

    def __init__(self, directory: Path, ttl_hours: float) -> None:
        self.directory = directory
        self.ttl_hours = ttl_hours

    def _ensure_dir(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(self.directory, 0o700)

    def path_of(self, content_hash: str) -> Path:
        return self.directory / f"{normal_hash(content_hash).removeprefix('sha256:')}.json"

    def write(
        self,
        *,
        content: str,
        item_id: str,
        item_type: str,
        reason: str,
        original_tokens: int,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Archive ``content``; returns its ``sha256:...`` hash. Same content, same file."""
        content_hash = sha256_of(content)
        target = self.path_of(content_hash)
        self._ensure_dir()
        if target.exists():
            os.utime(target)  # archived again: the TTL starts over
            return content_hash
        record = new_record(
            content=content,
            item_id=item_id,
            item_type=item_type,
            reason=reason,
            original_tokens=original_tokens,
            metadata=metadata,
        )
        data = json.dumps(record.to_json(), ensure_ascii=False).encode("utf-8")
        _atomic_write(target, data)
        return content_hash

    def read(self, content_hash: str) -> ArchiveRecord:
        """The record of ``content_hash``; ``ArchiveError`` if missing or damaged."""
        path = self.path_of(content_hash)
        try:
            raw = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            raise ArchiveError(f"No archived content has hash {content_hash}.") from None
        except (OSError, ValueError) as exc:
            raise ArchiveError(f"The archive record {path.name} cannot be read: {exc}.") from None
        try:
            record = record_of(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise ArchiveError(f"The archive record {path.name} is incomplete: {exc}.") from None
        return check_record(record, "sha256:" + path.stem, path.name)

    def purge_expired(self, now: float | None = None) -> int:
        """Remove records older than the TTL (and stale temporary files); returns how many."""
        if not self.directory.is_dir():
            return 0
        now = time.time() if now is None else now
        limit = now - self.ttl_hours * 3600.0
        removed = 0
        for path in self.directory.iterdir():
            try:
                modified = path.stat().st_mtime
                if path.suffix == ".json" and _HASH.match(path.stem) and modified < limit:
                    path.unlink()
                    removed += 1
                elif path.name.startswith(".tmp-") and modified < now - STALE_TEMP_SECONDS:
                    path.unlink()
            except OSError as exc:
                log.debug("archive cleanup skipped %s: %s", path, exc)
        return removed


def _atomic_write(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` (0600) via a temporary file, fsync and rename."""
    fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
