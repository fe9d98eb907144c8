"""Checking a migration (:mod:`.migrate`): the target holds what the source has, counted and
sampled; and the content archive, which is files beside a store, not rows in it.

For every research that must now be in the target (copied, or there already and identical):

- its row, with the state as it had to arrive (the SHA-256 of every state is compared);
- per research and per table (events, branches, LLM journal, page links), as many rows in the
  target as in the source;
- every page those research link to, kept in the target with as many characters;
- for a random sample, the report, status, principal and creation time of the state read back
  through the stores' own decoder on both sides.

The content archive (originals of dropped or shortened sources: :mod:`foundry_mcp.context.archive`)
lives in each server's ``research_dir``, whichever store it uses. When the source's archive folder
is not the target's, its records are copied there, and checked by name.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from foundry_mcp.research.store.migration.copy import (
    CHILD_COLUMNS,
    Migration,
    read_only,
    snapshot,
    state_hash,
    target_connection,
    target_hashes,
)
from foundry_mcp.research.store.states import decode_state

SAMPLE = 20  # research whose reports are read back on both sides
SHOWN = 5  # ids named per kind of problem
_RECORD = re.compile(r"[0-9a-f]{64}\.json")


@dataclass
class Check:
    """What the check found: counts on both sides, the sample, and every difference."""

    research: int = 0
    tables: dict[str, dict[str, int]] = field(default_factory=dict)  # table -> source, target
    sampled: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "research": self.research,
            "tables": self.tables,
            "sampled_reports": self.sampled,
            "problems": self.problems,
        }


def verify(
    migration: Migration, target_url: str, sample: int = SAMPLE, seed: int | None = None
) -> Check:
    """Compare the target of ``target_url`` with the source for the research ``migration``
    left there."""
    with (
        closing(read_only(Path(migration.source))) as lite,
        target_connection(target_url) as pg,
        snapshot(lite),
    ):
        return _verify(lite, pg, migration, sample, seed)


def _verify(
    lite: sqlite3.Connection,
    pg: psycopg.Connection[Any],
    migration: Migration,
    sample: int = SAMPLE,
    seed: int | None = None,
) -> Check:
    ids = migration.present
    check = Check(research=len(ids))
    there = target_hashes(pg, ids)
    missing = [research_id for research_id in ids if research_id not in there]
    changed = [
        research_id
        for research_id in ids
        if research_id in there
        and there[research_id] != state_hash(migration.expected[research_id])
    ]
    _problem(check, "research missing from the target", missing)
    _problem(check, "research whose state differs in the target", changed)
    check.tables["research"] = {"source": len(ids), "target": len(there)}
    for table in CHILD_COLUMNS:
        _compare_counts(
            check, table, _source_counts(lite, table, ids), _target_counts(pg, table, ids)
        )
    _compare_pages(check, lite, pg, ids)
    _compare_spend(check, lite, pg, ids)
    _compare_sample(check, pg, migration, random.Random(seed).sample(ids, min(sample, len(ids))))
    return check


def _problem(check: Check, what: str, ids: Sequence[str]) -> None:
    if ids:
        shown = ", ".join(ids[:SHOWN]) + (", ..." if len(ids) > SHOWN else "")
        check.problems.append(f"{len(ids)} {what}: {shown}")


def _source_counts(lite: sqlite3.Connection, table: str, ids: Iterable[str]) -> Counter[str]:
    wanted = set(ids)
    rows = lite.execute(f"SELECT research_id, count(*) FROM {table} GROUP BY research_id")
    return Counter({row[0]: row[1] for row in rows if row[0] in wanted})


def _target_counts(pg: psycopg.Connection[Any], table: str, ids: Sequence[str]) -> Counter[str]:
    rows = pg.execute(
        f"SELECT research_id, count(*) FROM {table} WHERE research_id = ANY(%s) "
        "GROUP BY research_id",
        (list(ids),),
    )
    return Counter({row[0]: row[1] for row in rows})


def _compare_counts(check: Check, table: str, source: Counter[str], target: Counter[str]) -> None:
    check.tables[table] = {"source": source.total(), "target": target.total()}
    differing = sorted(key for key in source.keys() | target.keys() if source[key] != target[key])
    _problem(check, f"research with other counts of {table} rows", differing)


def _compare_pages(
    check: Check, lite: sqlite3.Connection, pg: psycopg.Connection[Any], ids: Sequence[str]
) -> None:
    """Every page the research link to in the source is kept in the target, as long."""
    wanted = set(ids)
    source = {
        row[0]: row[1]
        for row in lite.execute(
            "SELECT DISTINCT pages.hash, pages.chars, research_pages.research_id FROM pages "
            "JOIN research_pages ON research_pages.hash = pages.hash"
        )
        if row[2] in wanted
    }
    target = {
        row[0]: row[1]
        for row in pg.execute("SELECT hash, chars FROM pages WHERE hash = ANY(%s)", (list(source),))
    }
    check.tables["pages"] = {"source": len(source), "target": len(target)}
    check.tables["page_chars"] = {"source": sum(source.values()), "target": sum(target.values())}
    _problem(check, "pages missing from the target", sorted(source.keys() - target.keys()))
    longer = sorted(digest for digest in target if target[digest] != source[digest])
    _problem(check, "pages of another length in the target", longer)


def _compare_spend(
    check: Check, lite: sqlite3.Connection, pg: psycopg.Connection[Any], ids: Sequence[str]
) -> None:
    """The spend ledger of the research copied, and of those deleted before: as many rows."""
    known = {row[0] for row in lite.execute("SELECT id FROM research")}
    wanted = set(ids) | {row[0] for row in lite.execute("SELECT research_id FROM spend")} - known
    source = Counter(
        {
            row[0]: row[1]
            for row in lite.execute("SELECT research_id, count(*) FROM spend GROUP BY research_id")
            if row[0] in wanted
        }
    )
    _compare_counts(check, "spend", source, _target_counts(pg, "spend", sorted(wanted)))


def _compare_sample(
    check: Check, pg: psycopg.Connection[Any], migration: Migration, ids: Sequence[str]
) -> None:
    """Read the sampled states back on both sides: the same report, status, owner, birth."""
    found = dict(
        pg.execute("SELECT id, state FROM research WHERE id = ANY(%s)", (list(ids),)).fetchall()
    )
    differing = []
    for research_id in ids:
        if research_id not in found:
            continue  # counted missing above
        source = decode_state(migration.expected[research_id], research_id)
        target = decode_state(found[research_id], research_id)
        if _face(source.report, source) != _face(target.report, target):
            differing.append(research_id)
    check.sampled = len(ids)
    _problem(check, "sampled research whose report or status differ", differing)


def _face(report: str | None, state: Any) -> tuple[str, str, str | None, str]:
    digest = hashlib.sha256((report or "").encode("utf-8", "surrogatepass")).hexdigest()
    return digest, state.status.value, state.principal, state.created_at.isoformat()


@dataclass
class ArchiveCopy:
    """The content archive's records: where they were, where they are now, how many."""

    source: str
    target: str
    records: int = 0
    copied: int = 0
    missing: list[str] = field(default_factory=list)  # records not in the target after the copy

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "records": self.records,
            "copied": self.copied,
            "missing": len(self.missing),
        }


def copy_archive(source: Path, target: Path) -> ArchiveCopy:
    """Copy the archive records of ``source`` that ``target`` lacks (nothing when they are one
    folder); each atomically, owner-only, as the archive writes them."""
    done = ArchiveCopy(str(source), str(target))
    names = (
        sorted(p.name for p in source.iterdir() if _RECORD.fullmatch(p.name))
        if source.is_dir()
        else []
    )
    done.records = len(names)
    if not names or (target.is_dir() and source.resolve() == target.resolve()):
        return done
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in names:
        if (target / name).exists():
            continue
        data = (source / name).read_bytes()
        fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=target)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, target / name)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        done.copied += 1
    done.missing = [name for name in names if not (target / name).exists()]
    return done
