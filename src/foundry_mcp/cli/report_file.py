"""Where ``foundry-mcp research`` leaves its report: a Markdown file a person can open.

By default the file goes in the ``reports`` folder next to the research store
(``~/.foundry-mcp/research/reports/`` unless ``research_dir`` says otherwise), named after the
day the research started, its question and its id:
``2026-11-28-how-do-garbage-collectors-pause-deepres-579becfb6622.md``. A resumed research
replaces its own earlier file there, and says so. ``--output PATH`` chooses the file; it is
checked before the research starts, and an existing file is replaced only with ``--overwrite``.
Nothing is ever replaced silently: a file that appeared while the research ran gets a sibling
name (``report-2.md``), and the message says which.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from foundry_mcp.config import Settings
from foundry_mcp.errors import InputError
from foundry_mcp.plain import plain

REPORTS_FOLDER = "reports"
SLUG_CHARS = 48


@dataclass(frozen=True)
class ReportTarget:
    """Where a research's report is to be written: ``path`` when ``--output`` chose it, else a
    file of the reports ``folder``."""

    folder: Path
    path: Path | None = None
    overwrite: bool = False


@dataclass(frozen=True)
class WrittenReport:
    path: Path
    note: str | None  # what happened besides a plain write (a file replaced, a name taken)


def report_target(settings: Settings, output: str | None, overwrite: bool) -> ReportTarget:
    """The place for the report, checked before anything is spent: ``InputError`` names what
    is wrong with ``--output`` and what to do."""
    folder = Path(settings.research.research_dir).expanduser() / REPORTS_FOLDER
    if output is None:
        return ReportTarget(folder)
    path = Path(output).expanduser().absolute()
    if path.is_dir():
        raise InputError(
            f"--output {output} is a folder.",
            remediation="Name a file, e.g. --output report.md.",
        )
    if not path.parent.is_dir():
        raise InputError(
            f"--output {output}: the folder {path.parent} does not exist.",
            remediation="Create the folder first, or name a file in an existing one.",
        )
    if path.exists() and not overwrite:
        raise InputError(
            f"--output {output} exists.",
            remediation="Add --overwrite to replace it, or name another file.",
        )
    return ReportTarget(folder, path, overwrite)


def write_report(
    target: ReportTarget, *, research_id: str, question: str, started: str, report: str
) -> WrittenReport:
    """Write ``report`` where ``target`` says (see the module for the rules), as plain text:
    a file a person later ``cat``s holds no control sequence a page slipped into it."""
    report = plain(report)
    if target.path is not None:
        if target.overwrite:
            _replace(target.path, report)
            return WrittenReport(target.path, None)
        return _write_new(target.path, report)
    target.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    earlier = sorted(target.folder.glob(f"*-{research_id}.md"))
    if earlier:
        _replace(earlier[0], report)
        return WrittenReport(earlier[0], "replaced this research's earlier report")
    name = f"{started[:10]}-{slug(question)}-{research_id}.md"
    return _write_new(target.folder / name, report)


def slug(question: str) -> str:
    """The question's first words, lowercase and joined by dashes, for a file name."""
    words = re.findall(r"\w+", question.lower())
    out = ""
    for word in words:
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > SLUG_CHARS:
            break
        out = candidate
    return out or "research"


def _write_new(path: Path, text: str) -> WrittenReport:
    """Write to ``path``, or to the first free ``<stem>-N<suffix>`` beside it."""
    for number in range(1, 1000):
        candidate = path if number == 1 else path.with_name(f"{path.stem}-{number}{path.suffix}")
        try:
            with candidate.open("x", encoding="utf-8") as file:
                file.write(text)
        except FileExistsError:
            continue
        note = None if candidate == path else f"{path.name} appeared meanwhile, so not replaced"
        return WrittenReport(candidate, note)
    raise InputError(
        f"Could not find a free name beside {path}.",
        remediation="Name the file with --output.",
    )


def _replace(path: Path, text: str) -> None:
    """Replace ``path`` in one step: a reader never sees half a report."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
