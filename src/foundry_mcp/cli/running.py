"""The commands that follow a research to its end: ``research``, ``resume`` and ``watch``.

Progress goes to stderr while the research runs (:mod:`foundry_mcp.cli.display.progress`); at the end
the report goes to stdout and, for a research this process ran, to a Markdown file
(:mod:`foundry_mcp.cli.report_file`), whose path is printed with the commands that page, export
or continue it.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

import anyio

from foundry_mcp.cli.asking import terminal_asker
from foundry_mcp.cli.display.output import in_terminal_words, print_json
from foundry_mcp.cli.display.progress import TERMINAL, follow_progress
from foundry_mcp.cli.report_file import ReportTarget, WrittenReport, report_target, write_report
from foundry_mcp.cli.wording import for_the_terminal
from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.errors import InputError
from foundry_mcp.plain import plain, plain_within
from foundry_mcp.research.service.asking.asker import Asker
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.service.starting.request import ResearchRequest
from foundry_mcp.research.workflow.report.answer_schema import MAX_JSON_DEPTH


async def run_research(service: ResearchService, args: argparse.Namespace) -> int:
    target = report_target(service.settings, args.output, args.overwrite)
    asker = terminal_asker()  # a person at the terminal answers the research's questions
    started = await service.start(research_request(args), asker=asker)
    # What the start had to say (a provider left out, where keyless searches go) comes first.
    for warning in (started.get("search") or {}).get("warnings") or []:
        print(f"warning: {plain(for_the_terminal(warning))}", file=sys.stderr)
    rid = started["research_id"]
    return await follow(service, rid, as_json=args.json, target=target, asker=asker)


def research_request(args: argparse.Namespace) -> ResearchRequest:
    """The request the ``research`` command's arguments make (``--schema``: read from its
    file)."""
    return ResearchRequest(
        query=args.query,
        system_prompt=args.context,
        provider_id=args.provider,
        model=args.model,
        limits=LimitArgs(
            max_iterations=args.max_iterations,
            max_sub_queries=args.max_sub_queries,
            max_sources_per_query=args.max_sources,
            max_concurrent=args.max_concurrent,
            task_timeout=args.timeout,
            reading_budget=args.reading_budget,
        ),
        mode=args.mode,
        source_types=args.source_types,
        preferred_sources=args.prefer,
        effort=args.effort,
        max_time_s=args.max_time,
        language=args.language,
        clarify=args.clarify,
        review_plan=args.review_plan,
        bounds={
            "include_domains": args.include_domain,
            "exclude_domains": args.exclude_domain,
            "published_after": args.published_after,
            "published_before": args.published_before,
        },
        output_schema=read_schema(args.schema),
    )


async def resume_research(service: ResearchService, args: argparse.Namespace) -> int:
    target = report_target(service.settings, args.output, args.overwrite)
    started = await service.resume(
        args.research_id, plan=args.plan, max_iterations=args.max_iterations
    )
    rid = started["research_id"]
    return await follow(service, rid, as_json=args.json, target=target, asker=terminal_asker())


async def watch_research(service: ResearchService, args: argparse.Namespace) -> int:
    """Follow a research another process runs, without owning it: 0 completed, 1 otherwise."""
    await service.status(args.research_id)  # an unknown id fails here, with exit code 2
    return await follow(service, args.research_id, as_json=args.json, target=None)


async def follow(
    service: ResearchService,
    research_id: str,
    *,
    as_json: bool,
    target: ReportTarget | None,
    asker: Asker | None = None,
) -> int:
    """Show progress on stderr until the research ends, then print the report on stdout.

    With a ``target`` the research runs in this process: Ctrl-C cancels it, and its report is
    written to a file. Without (``watch``) Ctrl-C only stops watching. With ``as_json`` stdout
    gets one document: the final status, the report and the file's path.
    """
    owned = target is not None
    print(f"research {research_id} {'started' if owned else 'watched'}", file=sys.stderr)
    interrupted = anyio.Event()

    def on_interrupt(*_: object) -> None:
        interrupted.set()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        status = await follow_progress(service, research_id, interrupted, asker)
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted.is_set() and status["status"] not in TERMINAL:
        if not owned:
            print(f"\nstopped watching {research_id}; it goes on.", file=sys.stderr)
            return 130
        await service.cancel(research_id)
        print(
            f"\ncancelled; partial work is saved. Continue with: foundry-mcp resume {research_id}",
            file=sys.stderr,
        )
        return 130
    if status["status"] == "waiting":
        _show_waiting_plan(status, as_json)
        return 1
    completed = status["status"] == "completed"
    if not completed:
        error = plain(for_the_terminal(status.get("error") or "", research_id))
        print(f"research ended {status['status']}: {error}", file=sys.stderr)
    # What the pages and the model wrote, as plain text on stdout and in the file alike.
    report = plain(await service.full_report(research_id)) if status["report_available"] else None
    answer = (await service.report(research_id))[0].get("answer") if report else None
    written = _saved(status, report, target)
    if as_json:
        path = str(written.path) if written else None
        shaped = {"answer": answer} if answer is not None else {}
        print_json(
            {
                **in_terminal_words(status, research_id),
                "report": report,
                "report_file": path,
                **shaped,
            }
        )
    elif report is not None:
        print(report)
    sys.stdout.flush()
    if answer is not None and not as_json:
        _say_answered(answer, research_id)
    _say_what_next(status, written)
    return 0 if completed else 1


def read_schema(path: str | None) -> Any:
    """The JSON Schema in the file ``path`` (None: no schema), or an error saying what is
    wrong with the file."""
    if path is None:
        return None
    try:
        return json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        problem = f"--schema {path}: the file cannot be read ({exc.strerror or exc})."
    except (ValueError, UnicodeDecodeError) as exc:
        problem = f"--schema {path}: not JSON ({exc})."
    except RecursionError:  # Python's JSON reader recurses: about a thousand levels at most
        problem = (
            f"--schema {path}: its JSON nests too deeply to be read (an output schema's JSON "
            f"nests at most {MAX_JSON_DEPTH} levels)."
        )
    raise InputError(
        problem,
        remediation="Give a file holding one JSON Schema object, e.g. "
        '{"type": "object", "properties": {"licence": {"type": "string"}}}.',
        details={"field": "output_schema"},
    )


def _show_waiting_plan(status: dict[str, Any], as_json: bool) -> None:
    """A research waiting for its plan's approval: the plan, and how to approve it."""
    research_id = status["research_id"]
    if as_json:
        print_json(in_terminal_words(status, research_id))
        return
    plan = plain_within(status.get("plan") or {})
    lines = [f"research {research_id} waits for its plan's approval; nothing is searched yet."]
    lines += [f"  {i}. {query}" for i, query in enumerate(plan.get("queries", []), start=1)]
    lines += [
        f"  approve it:   foundry-mcp resume {research_id}",
        f"  change it:    foundry-mcp resume {research_id} --plan 'a query' --plan 'another'",
        f"  drop it:      foundry-mcp cancel {research_id}",
    ]
    print("\n".join(lines), file=sys.stderr)


def _saved(
    status: dict[str, Any], report: str | None, target: ReportTarget | None
) -> WrittenReport | None:
    """The report written to its file (None when there is none to write, or the file could
    not be written: it stays in the store either way)."""
    if report is None or target is None:
        return None
    try:
        return write_report(
            target,
            research_id=status["research_id"],
            question=status["query"],
            started=status["created_at"],
            report=report,
        )
    except OSError as exc:
        print(
            f"warning: the report could not be written to a file ({exc.strerror or exc}); it "
            f"is kept: foundry-mcp report {status['research_id']} > report.md",
            file=sys.stderr,
        )
        return None


def _say_answered(answer: dict[str, Any], research_id: str) -> None:
    """How the answer in the --schema's shape came out, and where to read it, on stderr."""
    cited, unknown = len(answer["citations"]), len(answer["unknown"])
    fits = "fits the schema" if answer["strict_valid"] else "fits the schema with nulls allowed"
    if not answer["valid"]:
        fits = "does not fit the schema: " + plain("; ".join(answer["errors"][:2]))
    print(
        f"answer in your schema's shape: {cited} value(s) cited, {unknown} unknown (null); it "
        f"{fits}\n  read it:      foundry-mcp export {research_id} --format json (its answer)",
        file=sys.stderr,
    )


def _say_what_next(status: dict[str, Any], written: WrittenReport | None) -> None:
    """The report's file and the commands to read, export or continue it, on stderr."""
    research_id = status["research_id"]
    completed = status["status"] == "completed"
    lines = []
    if written is not None:
        kind = "report" if completed else "partial report"
        note = f" ({written.note})" if written.note else ""
        lines += [f"{kind} saved to {written.path}{note}", f"  read it:      less {written.path}"]
    elif status["report_available"]:
        lines.append(f"  read it:      foundry-mcp report {research_id} | less")
    if status["report_available"]:
        lines.append(
            f"  export it:    foundry-mcp export {research_id} --format json "
            "(or bibtex, ris; --out FILE)"
        )
    if not completed:
        lines.append(f"  continue it:  foundry-mcp resume {research_id}")
    elif status["progress"]["gaps_unaddressed"]:  # another round has something to search for
        rounds = f" --max-iterations {status['iteration'] + 1}"
        lines.append(f"  go further:   foundry-mcp resume {research_id}{rounds}")
    print("\n".join(lines), file=sys.stderr)
