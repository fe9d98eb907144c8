"""The sections code writes about what a deepen or a refresh changed (no model is asked).

A deepen's version says what it added, a refresh's what changed since the version before;
each cites its sources as ``[src-...]`` (numbered with the report's others), and only sources
the findings cite, which are the ones the report may cite. A refresh that found nothing new
keeps the report as it was, with a short section saying so (:func:`unchanged_report`).
"""

from __future__ import annotations

import re
from datetime import datetime

from foundry_mcp.research.models import (
    Finding,
    ResearchState,
    Revision,
    RevisionKind,
    Source,
    VersionChanges,
)
from foundry_mcp.research.revision.refresh import cited_sources, refresh_since
from foundry_mcp.research.verification.section import EVIDENCE_HEADING

REFRESH_HEADING = "## What Changed"
DEEPEN_HEADING = "## What This Version Added"
MAX_LISTED = 12  # findings listed by name; the rest are counted
MAX_TITLE_CHARS = 120
# A previous version's section, up to the next level-two heading or the end.
_OWN_SECTION = re.compile(
    rf"^(?:{re.escape(REFRESH_HEADING)}|{re.escape(DEEPEN_HEADING)})\s*$.*?(?=^## |\Z)",
    re.MULTILINE | re.DOTALL,
)
_SOURCES = "\n## Sources\n"


def changes_section(state: ResearchState, revision: Revision) -> str | None:
    """What a deepen added or a refresh changed, as a markdown section; None for a rewrite."""
    if revision.kind is RevisionKind.REWRITE:
        return None
    changes = revision.changes
    searches = max(0, state.search_calls - revision.search_calls_before)
    if revision.kind is RevisionKind.DEEPEN:
        heading = DEEPEN_HEADING
        asked = " ".join((revision.part_question or revision.part or "").split())
        lead = f'The part "{asked}" was researched further ({_count(searches, "search")}).'
    else:
        heading = REFRESH_HEADING
        lead = (
            f"The research's searches were asked again for what is new since "
            f"{_day(refresh_since(state, revision))} ({_count(searches, 'search')}), and "
            f"{_count(pages_reread(state, revision), 'cited page')} read again."
        )
    if changes.nothing_new:
        return f"{heading}\n\n{lead} Nothing was found that the version before did not hold.\n"
    citable = {sid for f in state.findings for sid in f.source_ids}
    by_id = state.source_by_id()
    lines = [heading, "", lead, ""]
    lines += _pages(changes, by_id, citable)
    known = {f.id: f for f in state.findings}
    found = [known[fid] for fid in changes.new_finding_ids if fid in known]
    lines += _findings("New findings", len(changes.new_finding_ids), found, cite=True)
    dropped = {f.id: f for f in changes.dropped_findings}
    dropped.update((fid, known[fid]) for fid in changes.dropped_finding_ids if fid in known)
    lines += _findings(
        "Findings the changed pages no longer support",
        max(len(changes.dropped_finding_ids), len(dropped)),
        list(dropped.values()),
    )
    return "\n".join(lines).rstrip() + "\n"


def _pages(changes: VersionChanges, by_id: dict[str, Source], citable: set[str]) -> list[str]:
    """Bullets on the pages found new, changed and gone: a new page cited (when a finding
    cites it, else counted), a changed or gone one named, and cited when a finding cites it."""
    lines = []
    new = [sid for sid in changes.new_source_ids if sid in citable]
    if changes.new_source_ids:
        rest = len(changes.new_source_ids) - len(new)
        lines.append(
            f"- New pages: {len(changes.new_source_ids)} {_cited(new)}".rstrip()
            + (f"; {rest} gave no finding" if rest else "")
        )
    for label, ids in (
        ("Pages whose text changed", changes.changed_source_ids),
        ("Pages gone or moved", changes.moved_source_ids),
    ):
        listed = [by_id[sid] for sid in ids[:MAX_LISTED] if sid in by_id]
        lines += [f"- {label}: {len(ids)}"] if ids else []
        for source in listed:
            moved = changes.moved_to.get(source.id)
            where = f", now at <{moved}>" if moved else ""
            cited = _cited([source.id] if source.id in citable else [])
            lines.append(f"  - {_named(source)}{where} {cited}".rstrip())
    return lines


def pages_reread(state: ResearchState, revision: Revision) -> int:
    """The cited pages a refresh read again: those it found unchanged, and those it found
    changed or gone."""
    changes = revision.changes
    judged = len(changes.changed_source_ids) + len(changes.moved_source_ids)
    return len(cited_sources(state, revision)) + judged


def unchanged_report(state: ResearchState, revision: Revision) -> str:
    """The report as it was, its section on the last changes replaced by one saying nothing
    changed (:func:`changes_section` of a revision that found nothing new)."""
    report = without_changes_section(state.report or "")
    section = changes_section(state, revision) or ""
    return with_section(report, section)


def without_changes_section(report: str) -> str:
    """``report`` without a section an earlier deepen or refresh added."""
    return _OWN_SECTION.sub("", report)


def with_section(report: str, section: str) -> str:
    """``report`` with ``section`` at the end of its body: before its Evidence Quality
    section (where a revision's section goes when the report is written), else before its
    Sources list."""
    section = section.strip()
    for anchor in (f"\n{EVIDENCE_HEADING}\n", _SOURCES):
        head, found, tail = report.partition(anchor)
        if found:
            return f"{head.rstrip()}\n\n{section}\n{found}{tail}"
    return f"{report.rstrip()}\n\n{section}\n"


def _findings(label: str, count: int, findings: list[Finding], *, cite: bool = False) -> list[str]:
    """A bullet counting ``findings`` (``count`` of them), then the first of them stated."""
    if not count:
        return []
    listed = findings[:MAX_LISTED]
    lines = [f"- {label}: {count}"]
    for finding in listed:
        text = " ".join(finding.content.split()).rstrip(".")
        refs = _cited(finding.source_ids) if cite else ""
        lines.append(f"  - {text}{f' {refs}' if refs else ''}.")
    if count > len(listed) and listed:
        lines.append(f"  - and {count - len(listed)} more")
    return lines


def _cited(ids: list[str]) -> str:
    return "".join(f"[{sid}]" for sid in ids)


def _named(source: Source) -> str:
    title = " ".join(source.title.split())[:MAX_TITLE_CHARS]
    return f"{title} <{source.url}>" if source.url else title


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 'es' if noun.endswith('h') else 's'}"


def _day(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d}" if moment else "the version before"
