"""Archived originals and the spend ledger's reading, in a shared PostgreSQL store: the same
contract as :mod:`foundry_mcp.research.store.sqlite.archived`, readable by every server."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import psycopg

from foundry_mcp.context.archive import ArchiveRecord, normal_hash
from foundry_mcp.research.store.owners import Owner, fenced
from foundry_mcp.research.store.postgres.database import Database, unavailable
from foundry_mcp.research.store.postgres.ledger import spent_since_in
from foundry_mcp.research.store.postgres.pages import lock_for_writes, write_pages
from foundry_mcp.research.store.records import research_not_found

_ARCHIVED_AT = "%Y-%m-%dT%H:%M:%SZ"


class PgArchiveAndSpend:
    """The archive and ledger methods of the PostgreSQL store (``PostgresStore``)."""

    _db: Database

    def archive_content(
        self, research_id: str, record: ArchiveRecord, owner: Owner | None = None
    ) -> None:
        """Keep an archived original of ``research_id`` (its text as a page of it); with
        ``owner``, fenced (``LeaseLostError``). Archived again, its time starts over."""
        with self._db.connection() as conn, conn.transaction():
            lock_for_writes(conn)
            if owner is not None:
                held = conn.execute(
                    "SELECT 1 FROM research WHERE id = %s AND owner_token = %s FOR SHARE",
                    (research_id, owner.token),
                ).fetchone()
                fenced(0 if held is None else 1, research_id)
            elif (
                conn.execute(
                    "SELECT 1 FROM research WHERE id = %s FOR SHARE", (research_id,)
                ).fetchone()
                is None
            ):
                raise research_not_found(research_id)
            write_pages(conn, research_id, {record.content_hash: record.content})
            conn.execute(
                "INSERT INTO archived (research_id, hash, item_id, item_type, reason, "
                "original_tokens, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb) "
                "ON CONFLICT (research_id, hash) DO UPDATE SET archived_at = now()",
                (
                    research_id,
                    record.content_hash,
                    record.item_id,
                    record.item_type,
                    record.archive_reason,
                    record.original_tokens,
                    json.dumps(record.metadata, ensure_ascii=False),
                ),
            )

    def archived_content(self, research_id: str, content_hash: str) -> ArchiveRecord | None:
        """The original ``research_id`` archived under ``content_hash``, as kept (its hash is
        the caller's to check); None if there is none."""
        with self._db.connection() as conn, conn.cursor() as cursor:
            row = cursor.execute(
                "SELECT archived.hash, pages.content, item_id, item_type, archived_at, reason, "
                "original_tokens, metadata FROM archived JOIN pages ON pages.hash = archived.hash "
                "WHERE research_id = %s AND archived.hash = %s",
                (research_id, normal_hash(content_hash)),
            ).fetchone()
        if row is None:
            return None
        at: datetime = row[4]
        return ArchiveRecord(
            row[0],
            bytes(row[1]).decode("utf-8", "surrogatepass"),
            row[2],
            row[3],
            at.astimezone(UTC).strftime(_ARCHIVED_AT),
            row[5],
            int(row[6]),
            dict(row[7]),
        )

    def purge_archived(self, older_than_hours: float) -> int:
        """Forget the archived originals older than ``older_than_hours``; how many. (Their text
        stays a page of its research until the research is deleted.)"""
        with self._db.connection() as conn:
            cursor = conn.execute(
                "DELETE FROM archived "
                "WHERE archived_at < now() - make_interval(secs => %s::float8)",
                (older_than_hours * 3600.0,),
            )
            return cursor.rowcount

    def spent_since(self, principal: str, since: datetime) -> float:
        """What ``principal``'s research cost since ``since`` (whole hours: from the start of
        the hour of ``since``), research deleted since included; one statement.
        ``StoreUnavailableError`` when the database cannot answer."""
        if since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        try:
            with self._db.connection() as conn:
                return spent_since_in(conn, principal, since)
        except psycopg.Error as exc:  # a failure to reach it is StoreUnavailableError already
            raise unavailable(exc, self._db.url) from None
