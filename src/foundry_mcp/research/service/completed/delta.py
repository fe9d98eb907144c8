"""The delta between two versions of a report: what each has that the other has not.

Sections are matched by their heading (case and spacing aside): a heading in one version only
is added or removed, one in both whose text differs is changed. Cited sources and findings (the
evidence each version was written from) are compared by id; findings come with their text. The
changes a deepen or a refresh recorded between the two versions are listed as they were found.
"""

from __future__ import annotations

import re
from typing import Any

from foundry_mcp.research.models import ReportVersion, ResearchState

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def sections(report: str) -> dict[str, tuple[str, str]]:
    """The report's sections: ``{key: (heading as written, text under it)}``, in order; a
    heading written twice is keyed by its occurrence (``key#2``). The text before the first
    heading is no section, and a ``#`` line inside a code fence is no heading."""
    found: dict[str, tuple[str, str]] = {}
    heading: str | None = None
    lines: list[str] = []
    fenced = False
    for line in report.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        _close(found, heading, lines)
        heading, lines = match.group(2), []
    _close(found, heading, lines)
    return found


def _close(found: dict[str, tuple[str, str]], heading: str | None, lines: list[str]) -> None:
    if heading is None:
        return
    key, n = _key(heading), 2
    while key in found:
        key, n = f"{_key(heading)}#{n}", n + 1
    found[key] = (heading, "\n".join(lines))


def _key(heading: str) -> str:
    return " ".join(heading.lower().split())


def _same_text(a: str, b: str) -> bool:
    return a.split() == b.split()


def version_delta(
    state: ResearchState, version: ReportVersion, base: ReportVersion
) -> dict[str, Any]:
    """What ``version`` has that ``base`` has not (``added``), what ``base`` has that it has not
    (``removed``), the sections in both that differ, and the changes recorded between them."""
    mine, theirs = sections(version.report), sections(base.report)
    changed = [
        {
            "heading": mine[key][0],
            "words_before": len(theirs[key][1].split()),
            "words_after": len(mine[key][1].split()),
        }
        for key in mine
        if key in theirs and not _same_text(mine[key][1], theirs[key][1])
    ]
    added = _side(state, version, base, [mine[k][0] for k in mine if k not in theirs])
    removed = _side(state, base, version, [theirs[k][0] for k in theirs if k not in mine])
    low, high = sorted((version.number, base.number))
    recorded = [
        {"version": v.number, "kind": v.kind.value, **_ids(v)}
        for v in (state.versions or [])
        if low < v.number <= high and v.changes is not None
    ]
    delta = {
        "version": version.number,
        "compare_to": base.number,
        "added": added,
        "removed": removed,
        "changed_sections": changed,
        "changes": recorded,
    }
    delta["summary"] = summary(delta)
    return delta


def _side(
    state: ResearchState, having: ReportVersion, lacking: ReportVersion, headings: list[str]
) -> dict[str, Any]:
    """What ``having`` has that ``lacking`` has not: section headings, cited sources (numbered
    as ``having`` cites them), findings with their text."""
    by_id = state.source_by_id()
    cited = having.cited_source_ids
    others = set(lacking.cited_source_ids)
    # A refresh drops the findings its changed pages no longer support: its changes keep them.
    dropped = [f for v in state.versions if v.changes for f in v.changes.dropped_findings]
    findings = {f.id: f for f in [*dropped, *state.findings]}
    without = set(lacking.finding_ids)
    return {
        "sections": headings,
        "sources": [
            {
                "number": n,
                "source_id": sid,
                "title": by_id[sid].title if sid in by_id else None,
                "url": by_id[sid].url if sid in by_id else None,
            }
            for n, sid in enumerate(cited, start=1)
            if sid not in others
        ],
        "findings": [
            {
                "finding_id": fid,
                "content": findings[fid].content,
                "confidence": findings[fid].confidence.value,
                "source_ids": list(findings[fid].source_ids),
            }
            for fid in having.finding_ids
            if fid not in without and fid in findings
        ],
    }


def _ids(version: ReportVersion) -> dict[str, list[str]]:
    changes = version.changes
    assert changes is not None
    return {
        "new_source_ids": list(changes.new_source_ids),
        "changed_source_ids": list(changes.changed_source_ids),
        "moved_source_ids": list(changes.moved_source_ids),
        "new_finding_ids": list(changes.new_finding_ids),
        "dropped_finding_ids": list(changes.dropped_finding_ids),
    }


def summary(delta: dict[str, Any]) -> str:
    """The delta in a sentence: what each version has that the other has not."""
    a, b = delta["version"], delta["compare_to"]

    def has(side: dict[str, Any]) -> str:
        counts = [
            _n(len(side["sections"]), "section"),
            _n(len(side["sources"]), "cited source"),
            _n(len(side["findings"]), "finding"),
        ]
        said = [c for c in counts if c]
        return ", ".join(said) if said else "nothing"

    changed = len(delta["changed_sections"])
    return (
        f"Version {a} has {has(delta['added'])} that version {b} has not; version {b} has "
        f"{has(delta['removed'])} that version {a} has not; "
        f"{_n(changed, 'section') or 'no section'} in both changed."
    )


def _n(n: int, word: str) -> str:
    return "" if n == 0 else f"{n} {word}{'s' if n != 1 else ''}"
