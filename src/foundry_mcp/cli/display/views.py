"""Documents drawn for a person at a terminal: the research list as a table, a status as a
block, the evidence as checked sentences. ``doctor``'s check list is in :mod:`foundry_mcp.cli.display.checklist`.

Every view takes the same document the JSON output prints, already said in the terminal's
words and made plain (:func:`foundry_mcp.cli.display.output.show`). What came from a user, a
page or a model is shown as plain text, never as markup nor as control sequences. A table never
cuts what a person copies from it (a research id, a file); the free text beside it gives way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from foundry_mcp.plain import plain

STATUS_STYLES = {
    "completed": "green",
    "running": "cyan",
    "queued": "cyan",
    "cancelling": "yellow",
    "cancelled": "yellow",
    "interrupted": "yellow",
    "timed_out": "yellow",
    "failed": "red",
    "waiting": "magenta",
}
VERDICT_STYLES = {"supported": "green", "partial": "yellow", "unsupported": "red"}


def stdout() -> Console:
    """The console on stdout, wide enough for a table even when the terminal says nothing."""
    return Console(highlight=False, soft_wrap=False)


def age(stamp: str | None, now: datetime | None = None) -> str:
    """How long ago an ISO time was, as a person says it: ``just now``, ``5 min ago``..."""
    if not stamp:
        return "?"
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - then).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    if days > 30:
        return then.date().isoformat()
    return "1 day ago" if days == 1 else f"{days} days ago"


def _status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))


def show_list(listing: dict[str, Any], *, filtered: bool, limit: int) -> None:
    """The research table: id, status, age, question; and how to see more."""
    console = stdout()
    items = listing["items"]
    if not items:
        console.print(
            "No research matches." if filtered else 'No research yet: foundry-mcp research "..."'
        )
        return
    rows = [
        (item["research_id"], item["status"], age(item["created_at"]), item["query"])
        for item in items
    ]
    table, needed = research_table(rows, console.width)
    _print_whole(console, table, needed)
    if listing.get("next_cursor"):
        console.print(
            Text(f"The newest {limit} are shown; --limit {min(100, limit * 2)} shows more.", "dim")
        )


LIST_COLUMNS = ("id", "status", "age")
COLUMN_GAP = 2  # the padding between two columns of a table without borders
QUESTION_AT_LEAST = 12  # columns the question keeps before the age, then the status, give way
DIGEST_AT_LEAST = 8  # columns of a trusted file's digest


def research_table(rows: list[tuple[str, str, str, str]], width: int) -> tuple[Table, int]:
    """The research table for a terminal ``width`` columns wide, and the width it takes.

    The id is what a person copies from it: always whole, on one line. The question gives way
    first (cut with an ellipsis); then, on a terminal too narrow for the rest (below about 60
    columns), the age and then the status are left out.
    """
    widths = [max(len(name), *(len(row[i]) for row in rows)) for i, name in enumerate(LIST_COLUMNS)]
    shown = len(LIST_COLUMNS)
    while shown > 1 and width - sum(widths[:shown]) - COLUMN_GAP * shown < QUESTION_AT_LEAST:
        shown -= 1
    room = max(QUESTION_AT_LEAST, width - sum(widths[:shown]) - COLUMN_GAP * shown)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name, least in zip(LIST_COLUMNS[:shown], widths, strict=False):
        table.add_column(name, no_wrap=True, min_width=least)
    table.add_column("question", no_wrap=True, overflow="ellipsis", max_width=room)
    for research_id, status, when, question in rows:
        cells = [Text(research_id), _status_text(status), Text(when)][:shown]
        table.add_row(*cells, Text(" ".join(question.split())))
    return table, sum(widths[:shown]) + COLUMN_GAP * shown + QUESTION_AT_LEAST


def show_status(status: dict[str, Any]) -> None:
    """One research's status as a labelled block."""
    console = stdout()
    head = Text(status["research_id"] + "  ", style="bold")
    head.append_text(_status_text(status["status"]))
    head.append(
        f"  {status['phase']}, round {status['iteration']} of {status['max_iterations']}",
        style="dim",
    )
    console.print(head)
    progress = status["progress"]
    spent = status["usage"]["total"]
    cost = spent.get("cost_usd")
    rows: list[tuple[str, str]] = [
        ("question", " ".join(status["query"].split())),
        ("mode", status["mode"]),
        ("started", f"{age(status['created_at'])}, ran {_duration(status['elapsed_s'])}"),
        (
            "progress",
            f"{progress['sub_queries_done']}/{progress['sub_queries_total']} sub-queries, "
            f"{progress['sources']} sources, {progress['findings']} findings, "
            f"{progress['gaps_unaddressed']} of {progress['gaps']} gaps open",
        ),
        (
            "tokens",
            f"{spent['input_tokens']:,} in + {spent['output_tokens']:,} out in {spent['calls']} "
            "calls"
            + ("" if cost is None else f", about ${cost:.4f}")
            + (f" (+{spent['unpriced_calls']} unpriced)" if spent.get("unpriced_calls") else ""),
        ),
    ]
    if status.get("provider"):
        rows.append(("model", status["provider"]))
    rows += _conversation_rows(status)
    if status.get("error"):
        rows.append(("error", status["error"]))
    rows += [("warning", warning) for warning in status.get("warnings") or []]
    rows.append(("next", status["next_action"]))
    console.print(_block(rows))


def _conversation_rows(status: dict[str, Any]) -> list[tuple[str, str]]:
    """What was asked before researching, or assumed; the plan waiting for approval."""
    rows = []
    clarification = status.get("clarification") or {}
    for asked in clarification.get("asked") or []:
        rows.append(("asked", f"{asked['question']} {asked.get('answer') or '(no answer)'}"))
    rows += [("assumed", text) for text in clarification.get("assumptions") or []]
    plan = status.get("plan") or {}
    rows += [(f"plan {i}", query) for i, query in enumerate(plan.get("queries", []), start=1)]
    return rows


def show_follow_up(answered: dict[str, Any]) -> None:
    """A follow-up's answer, the sources it cites, and what to do when they do not answer."""
    console = stdout()
    console.print(Text(answered.get("answer") or ""))
    sources = answered.get("sources") or []
    if sources:
        console.print(Text("\nSources", style="bold"))
    for source in sources:
        # Wrapped by the terminal, not cut by us: a long address copies whole.
        line = Text(f"  [{source['number']}] {source.get('title') or ''} {source['url']}")
        console.print(line, soft_wrap=True)
    if answered.get("next_action"):
        console.print(Text(f"\nnext: {answered['next_action']}", style="dim"))


def show_evidence(claims: dict[str, Any]) -> None:
    """Each checked sentence of the report, its verdict and the quotes behind it."""
    console = stdout()
    if not claims["claims"]:
        console.print("The report has no checked sentences.")
        return
    for claim in claims["claims"]:
        line = Text(claim["verdict"], style=VERDICT_STYLES.get(claim["verdict"], ""))
        line.append("  " + claim["sentence"])
        console.print(line)
        for quote in claim["quotes"]:
            said = " ".join(str(quote.get("text", "")).split())
            console.print(Text(f'    [{quote.get("number")}] "{said}"', "dim"))
        if claim.get("reason") and claim["verdict"] != "supported":
            console.print(Text(f"    why: {claim['reason']}", "dim"))


def show_trusted(entries: dict[str, dict[str, Any]]) -> None:
    """The project files trusted, when, and the start of their digest."""
    console = stdout()
    if not entries:
        console.print("No file is trusted. Trust one with: foundry-mcp trust ./foundry-mcp.toml")
        return
    # The file is what a person copies (to revoke it): whole on one line; the digest gives way.
    ages = {path: age(entry.get("trusted_at")) for path, entry in entries.items()}
    fixed = max(len(path) for path in entries) + max(map(len, [*ages.values(), "trusted"]))
    room = max(DIGEST_AT_LEAST, console.width - fixed - 2 * COLUMN_GAP)
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("file", no_wrap=True, min_width=max(len(path) for path in entries))
    table.add_column("trusted", no_wrap=True)
    table.add_column("digest", no_wrap=True, overflow="ellipsis", max_width=room)
    for path, entry in sorted(entries.items()):
        digest = str(entry.get("sha256", ""))
        table.add_row(Text(path), ages[path], digest[:19] + "...")
    _print_whole(console, table, fixed + 2 * COLUMN_GAP + DIGEST_AT_LEAST)


def show_done(line: str) -> None:
    """The one line a command that acted (cancel, delete, restore) says."""
    stdout().print(Text(plain(line)))


def _print_whole(console: Console, table: Table, needed: int) -> None:
    """``table`` printed ``needed`` columns wide at least: on a terminal narrower than what it
    must show whole, its lines are longer than the terminal (which wraps them), never cut."""
    console.width = max(console.width, needed)
    console.print(table, crop=False)


def _block(rows: list[tuple[str, str]]) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, Text(value))
    return grid


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"
