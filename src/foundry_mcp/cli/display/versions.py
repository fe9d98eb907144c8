"""A report's versions drawn for a person at a terminal: the list (what made each, its size and
its cost), the delta between two, and the cost of one version by phase.

Each view takes the document the JSON output prints (``deep-research-versions``), already said
in the terminal's words and made plain.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from foundry_mcp.cli.display.views import stdout
from foundry_mcp.plain import plain


def made_by(version: dict[str, Any]) -> str:
    """What made a version, in a few words: ``rewrite (brief, for a CFO)``."""
    kind = version["kind"]
    asked = version.get("instructions") or {}
    how = [
        str(asked[key])
        for key in ("form", "audience", "language")
        if asked.get(key) and asked[key] != "report"  # the form of the research's own report
    ]
    if asked.get("length_words"):
        how.append(f"~{asked['length_words']:,} words")
    if asked.get("corrections"):
        how.append("corrections")
    if version.get("part"):
        how.append(f"part: {' '.join(str(version['part']).split())[:60]}")
    return f"{kind} ({', '.join(how)})" if how else kind


def _money(totals: dict[str, Any]) -> str:
    if totals["calls"] and totals["unpriced_calls"] == totals["calls"]:
        return "cost unknown"
    return f"${totals['cost_usd']:.4f}"


def cost_lines(version: dict[str, Any]) -> list[str]:
    """A version's cost: the whole, then each phase (the revise command's last lines)."""
    cost = version["cost"]
    total = cost["total"]
    lines = [
        f"version {version['number']} ({made_by(version)}) cost: {total['input_tokens']:,} "
        f"prompt + {total['output_tokens']:,} completion tokens in {total['calls']:,} calls, "
        f"about {_money(total)} (estimated); {cost['search_calls']:,} searches"
    ]
    for phase, totals in cost["by_phase"].items():
        lines.append(
            f"  {phase:<12} {totals['input_tokens']:,} + {totals['output_tokens']:,} tokens, "
            f"{totals['calls']:,} calls, {_money(totals)}"
        )
    if version.get("changes_summary"):
        lines.append(f"  found: {version['changes_summary']}")
    return [plain(line) for line in lines]


def show_versions(listed: dict[str, Any]) -> None:
    """The versions as a table, oldest first, and a revision still being made."""
    table = Table(box=None, padding=(0, 2), header_style="bold")
    for name in ("version", "made by", "words", "sources", "findings", "cost", "searches", "made"):
        table.add_column(name, justify="right" if name in ("words", "sources") else "left")
    for version in listed["versions"]:
        number = f"{version['number']}{' (latest)' if version['latest'] else ''}"
        table.add_row(
            number,
            Text(made_by(version)),
            f"{version['words']:,}",
            str(version["cited_sources"]),
            str(version["findings"]),
            _money(version["cost"]["total"]),
            str(version["cost"]["search_calls"]),
            version["created_at"][:16].replace("T", " "),
        )
    console = stdout()
    console.print(table)
    revision = listed.get("revision")
    if revision:
        console.print(
            Text(
                f"being made: a {revision['kind']} of version {revision['base_version']} "
                f"({revision['step']})",
                style="dim",
            )
        )
    rid = listed["research_id"]
    console.print(
        Text(
            f"read one: foundry-mcp report {rid} --version N; compare two: foundry-mcp versions "
            f"{rid} --diff A B",
            style="dim",
        )
    )


def show_delta(delta: dict[str, Any]) -> None:
    """What each of two versions has that the other has not, section by section."""
    console = stdout()
    a, b = delta["compare_to"], delta["version"]
    console.print(Text(delta["summary"]))
    for sign, side, style in (("+", delta["added"], "green"), ("-", delta["removed"], "red")):
        only = b if sign == "+" else a
        if not any(side.values()):
            continue
        console.print(Text(f"\nOnly in version {only}:", style="bold"))
        for heading in side["sections"]:
            console.print(Text(f"  {sign} section  {heading}", style=style))
        for source in side["sources"]:
            title = source.get("title") or source["source_id"]
            console.print(Text(f"  {sign} [{source['number']}] {title} {source.get('url') or ''}"))
        for finding in side["findings"]:
            console.print(Text(f"  {sign} finding  {' '.join(finding['content'].split())}"))
    if delta["changed_sections"]:
        console.print(Text("\nChanged in both:", style="bold"))
    for changed in delta["changed_sections"]:
        console.print(
            Text(
                f"  ~ {changed['heading']} ({changed['words_before']:,} -> "
                f"{changed['words_after']:,} words)"
            )
        )
    for recorded in delta["changes"]:
        counts = ", ".join(
            f"{len(ids)} {key.removesuffix('_ids').replace('_', ' ')}"
            for key, ids in recorded.items()
            if key.endswith("_ids") and ids
        )
        console.print(
            Text(
                f"\nversion {recorded['version']} ({recorded['kind']}) found: {counts or 'nothing new'}"
            )
        )
