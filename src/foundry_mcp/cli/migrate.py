"""``foundry-mcp migrate``: copy the local SQLite research store into a PostgreSQL one, then
check the copy, and say what was done.

``--from`` names the research directory (or its ``research.db``), by default ``[research]
research_dir``; ``--to`` the PostgreSQL URL, by default ``[research] store_url``. A rerun copies
only what is missing, so an interrupted migration is continued by running it again. The copy
itself is :mod:`foundry_mcp.research.store.migration.copy`, the check
:mod:`foundry_mcp.research.store.migration.check`. Exit status: 0 when every research is in the
target and the check passed, 1 when one was refused, failed, differs or the check failed, 2 for
an error before copying (no store, no driver), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foundry_mcp.errors import ConfigError, FoundryError

if TYPE_CHECKING:
    from foundry_mcp.config import Settings
    from foundry_mcp.research.store.migration.check import ArchiveCopy, Check
    from foundry_mcp.research.store.migration.copy import Migration

PROGRESS_SECONDS = 2.0  # a progress line on stderr at most this often
SHOWN = 10  # research not copied named in the text summary


def add_parser(commands: Any, as_json: argparse.ArgumentParser) -> None:
    """The ``migrate`` command and its options, on the parser's sub-commands."""
    migrate = commands.add_parser(
        "migrate",
        parents=[as_json],
        help="copy the local SQLite research store into a PostgreSQL one (resumable, checked)",
    )
    migrate.add_argument(
        "--from",
        dest="source",
        metavar="PATH",
        help="the research_dir, or its research.db, to copy (default: [research] research_dir)",
    )
    migrate.add_argument(
        "--to",
        dest="target",
        metavar="URL",
        help="the PostgreSQL URL to copy into (default: [research] store_url)",
    )
    migrate.add_argument(
        "--sample",
        type=int,
        default=20,
        help="research whose reports are read back and compared after the copy (20)",
    )


def run_migrate(args: argparse.Namespace) -> int:
    """Copy, check, print what was done; the exit status (see the module's docstring)."""
    from foundry_mcp.cli.display.output import fail, print_json
    from foundry_mcp.config import load_settings
    from foundry_mcp.logs import configure_logging

    try:
        settings = load_settings()
        configure_logging(settings.logging.level)
        source_dir = _source_dir(args.source, settings)
        url = _target_url(args.target, settings)
        migrate, check = _modules()
        began = time.monotonic()
        migration = migrate.migrate_store(
            source_dir, url, settings.research.research_dir, _progress()
        )
        archive = check.copy_archive(*_archive_dirs(source_dir, settings))
        verified = check.verify(migration, url, max(0, args.sample))
        migration.seconds = time.monotonic() - began
    except FoundryError as exc:
        return fail(exc, as_json=args.json)
    except KeyboardInterrupt:
        print(
            "migrate: interrupted; the research copied so far are complete in the target. "
            "Run foundry-mcp migrate again to copy the rest.",
            file=sys.stderr,
        )
        return 130
    done = summary(migration, verified, archive)
    if args.json:
        print_json(done)
    else:
        print(text_summary(done))
    return 0 if done["success"] else 1


def _modules() -> tuple[Any, Any]:
    """The copy and the check (they need the PostgreSQL driver, an optional dependency)."""
    try:
        from foundry_mcp.research.store.migration import check as migrate_check
        from foundry_mcp.research.store.migration import copy as migrate
    except ImportError:
        raise ConfigError(
            "foundry-mcp migrate writes to PostgreSQL, but the PostgreSQL driver is not installed.",
            remediation="Install the postgres extra from the foundry-mcp clone: "
            "pip install '.[postgres]'.",
        ) from None
    return migrate, migrate_check


def _source_dir(given: str | None, settings: Settings) -> Path:
    """The research directory whose SQLite store is copied; ``ConfigError`` without one."""
    from foundry_mcp.research.store.sqlite.database import DB_NAME

    path = Path(given).expanduser() if given else settings.research.research_dir
    named = "--from" if given else "[research] research_dir"
    if path.is_file():
        if path.name != DB_NAME:
            raise ConfigError(
                f"{path} is not a foundry-mcp research store (its file is named {DB_NAME}).",
                remediation=f"Name the folder that holds {DB_NAME}, or the {DB_NAME} in it.",
            )
        return path.parent
    if not (path / DB_NAME).is_file():
        raise ConfigError(
            f"There is no SQLite research store to migrate: {path} ({named}) holds no {DB_NAME}.",
            remediation=f"Name the folder that holds {DB_NAME} with --from (the research_dir "
            "foundry-mcp kept its research in before it used PostgreSQL).",
        )
    return path


def _target_url(given: str | None, settings: Settings) -> str:
    """The PostgreSQL URL to copy into; ``ConfigError`` without one or for another kind."""
    from pydantic import ValidationError

    from foundry_mcp.config.research_settings import ResearchSettings

    configured = settings.research.store_url
    url = given or (configured.get_secret_value() if configured is not None else None)
    if not url:
        raise ConfigError(
            "There is no PostgreSQL store to migrate to.",
            remediation="Name it with --to postgresql://user@host:5432/database, or set "
            "[research] store_url (or FOUNDRY_MCP_STORE_URL); docs/team-server.md says how to "
            "create the database.",
        )
    try:
        ResearchSettings(store_url=url)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise ConfigError(
            f"--to {reason}.",
            remediation="Give the URL of the PostgreSQL database, as [research] store_url takes it.",
        ) from None
    return url


def _archive_dirs(source_dir: Path, settings: Settings) -> tuple[Path, Path]:
    """The content archive of the source (the configured one when it is the configured
    research_dir) and the folder this host's servers archive to."""
    from foundry_mcp.context.archive import archive_dir

    research = settings.research
    here = archive_dir(research.research_dir, research.research_archive_dir)
    if source_dir.resolve() == research.research_dir.resolve():
        return here, here
    return archive_dir(source_dir, None), here


def _progress() -> Any:
    last = [time.monotonic()]

    def show(done: int, total: int) -> None:
        if time.monotonic() - last[0] >= PROGRESS_SECONDS:
            last[0] = time.monotonic()
            print(f"migrate: {done:,} of {total:,} research", file=sys.stderr, flush=True)

    return show


def summary(migration: Migration, check: Check, archive: ArchiveCopy) -> dict[str, Any]:
    """What was done, as the JSON document ``--json`` prints."""
    success = check.ok and not (
        migration.refused or migration.failed or migration.differ or archive.missing
    )
    return {
        "success": success,
        "from": migration.source,
        "to": migration.target,
        "research": {
            "in_source": migration.in_source,
            "copied": len(migration.copied),
            "skipped": len(migration.skipped),
            "arrived_interrupted": migration.interrupted,
            "refused": migration.refused,
            "failed": migration.failed,
            "differ": migration.differ,
        },
        "rows": {**migration.rows, "pages": migration.pages},
        "bytes": migration.bytes,
        "seconds": round(migration.seconds, 2),
        "archive": archive.as_dict(),
        "verification": check.as_dict(),
    }


def text_summary(done: dict[str, Any]) -> str:
    """The same, said in a few lines."""
    research, rows = done["research"], done["rows"]
    check, archive = done["verification"], done["archive"]
    lines = [
        f"{'Migrated' if research['copied'] else 'Nothing left to copy from'} {done['from']} "
        f"to {done['to']} ({done['seconds']:.1f} s).",
        f"  research: {research['in_source']:,} in SQLite; {research['copied']:,} copied, "
        f"{research['skipped']:,} already there (skipped), {len(research['refused'])} refused, "
        f"{len(research['failed'])} failed, {len(research['differ'])} differ",
        f"  copied: {rows['events']:,} events, {rows['llm_journal']:,} journal entries, "
        f"{rows['branches']:,} branch states, {rows['archived']:,} archived originals, "
        f"{rows['research_pages']:,} page links, {rows['pages']:,} new pages, {rows['spend']:,} "
        f"spend rows; {done['bytes'] / 1e6:,.1f} MB",
    ]
    if research["arrived_interrupted"]:
        lines.append(
            f"  {len(research['arrived_interrupted'])} research active in SQLite whose process "
            "is gone arrived interrupted: resume them with foundry-mcp resume <id>"
        )
    not_copied = list({**research["refused"], **research["failed"]}.items())
    lines += [f"  not copied: {research_id}: {why}" for research_id, why in not_copied[:SHOWN]]
    if len(not_copied) > SHOWN:
        lines.append(f"  ... and {len(not_copied) - SHOWN:,} more (--json lists them all)")
    if research["refused"]:
        lines.append(
            "  Stop the foundry-mcp servers that use the SQLite store (or let their research "
            "end), then run foundry-mcp migrate again."
        )
    if research["differ"]:
        lines.append(
            f"  left as the target has them (they changed after an earlier migrate): "
            f"{', '.join(research['differ'][:5])}{', ...' if len(research['differ']) > 5 else ''}"
        )
    if archive["from"] == archive["to"]:
        lines.append(f"  content archive: {archive['records']:,} records stay in {archive['to']}")
    else:
        lines.append(
            f"  content archive: {archive['copied']:,} of {archive['records']:,} records copied "
            f"from {archive['from']} to {archive['to']}"
        )
    verdict = "OK" if check["ok"] else "FAIL"
    tables = check["tables"]
    lines.append(
        f"  verification: {verdict}: {check['research']:,} research, "
        f"{tables['events']['target']:,} of {tables['events']['source']:,} events, "
        f"{tables['llm_journal']['target']:,} of {tables['llm_journal']['source']:,} journal "
        f"entries, {tables['pages']['target']:,} of {tables['pages']['source']:,} pages; "
        f"{check['sampled_reports']} sampled reports compared"
    )
    lines += [f"    {problem}" for problem in check["problems"]]
    return "\n".join(lines)
