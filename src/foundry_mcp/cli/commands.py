"""The bodies of the terminal commands: each takes the parsed arguments and returns an exit code.

A command that prints a document draws it for a person on a terminal
(:mod:`foundry_mcp.cli.display.views`) and prints JSON into a pipe, a file, or with ``--json``
(:mod:`foundry_mcp.cli.display.output`). Errors go to stderr with their fix, phrased for a shell
(:func:`foundry_mcp.cli.display.output.fail`). The commands that follow a research are in
:mod:`foundry_mcp.cli.running`; ``doctor`` in :mod:`foundry_mcp.cli.doctor`. Each command's
module is imported only when it runs (:data:`foundry_mcp.cli.arguments.COMMANDS`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foundry_mcp.cli import display
from foundry_mcp.cli.display.output import fail, in_terminal_words, print_json, show
from foundry_mcp.errors import FoundryError
from foundry_mcp.plain import plain, plain_within
from foundry_mcp.trust import TrustStore

if TYPE_CHECKING:  # the service is opened by main, and only for the commands that use it
    from foundry_mcp.research.service.research_service import ResearchService


def trust_file(args: argparse.Namespace) -> int:
    """Trust (or, with --revoke, stop trusting) a project file; --list shows the trusted ones."""
    store = TrustStore(Path.home())
    try:
        if args.list:
            show(args, store.entries(), lambda doc: display.views.show_trusted(doc))
            return 0
        # Not for --list, which reads no configuration: importing it is most of its time.
        from foundry_mcp.config import PROJECT_CONFIG, protected_keys_in

        path = Path(args.path or PROJECT_CONFIG).expanduser().resolve()
        if args.revoke:
            revoked = store.revoke(path)
            if args.json:
                print_json({"path": str(path), "trusted": False, "was_trusted": revoked})
            if not revoked:
                print(f"{path} was not trusted.", file=sys.stderr)
                return 1
            print(f"{path} is no longer trusted; its protected keys are ignored.", file=sys.stderr)
            return 0
        if not path.is_file():
            raise FoundryError(
                f"{path} does not exist.",
                remediation="Name the project's foundry-mcp.toml, e.g. foundry-mcp trust ./foundry-mcp.toml.",
            )
        data = path.read_bytes()
        protected = protected_keys_in(path, data)
        digest = store.trust(path, data)
    except FoundryError as exc:
        return fail(exc, as_json=args.json)
    if args.json:
        print_json(
            {"path": str(path), "trusted": True, "digest": digest, "protected_keys": protected}
        )
    print(f"trusted {path} ({digest[:19]}...)", file=sys.stderr)
    if protected:
        print("These keys of it now apply:", file=sys.stderr)
        for key in protected:
            print(f"  {key}", file=sys.stderr)
    print("If the file changes, it must be trusted again.", file=sys.stderr)
    return 0


async def show_status(service: ResearchService, args: argparse.Namespace) -> int:
    status = in_terminal_words(await service.status(args.research_id), args.research_id)
    show(args, status, lambda doc: display.views.show_status(doc))
    return 0


async def print_report(service: ResearchService, args: argparse.Namespace) -> int:
    if args.json:
        payload, warnings = await service.report(args.research_id, version=args.version)
        print_json(in_terminal_words({**payload, "warnings": warnings}, args.research_id))
    else:
        print(plain(await service.full_report(args.research_id, version=args.version)))
    return 0


async def print_evidence(service: ResearchService, args: argparse.Namespace) -> int:
    claims = json.loads(await service.claims(args.research_id))
    show(args, claims, lambda doc: display.views.show_evidence(doc))
    return 0


async def export_research(service: ResearchService, args: argparse.Namespace) -> int:
    """The export on stdout, or written to ``--out`` inside the current directory."""
    done = await service.export(
        args.research_id,
        format=args.format,
        path=args.out,
        overwrite=args.overwrite,
        max_inline_chars=None,  # stdout takes any length
        version=args.version,
    )
    if args.json:
        print_json(in_terminal_words(done, args.research_id))
    elif args.out is None:
        sys.stdout.write(done["content"])
    else:
        print(f"wrote {done['chars']:,} characters to {done['path']}", file=sys.stderr)
    return 0


async def list_researches(service: ResearchService, args: argparse.Namespace) -> int:
    listing = await service.list(
        limit=args.limit,
        completed_only=args.completed_only,
        status=args.status,
        query=args.query,
    )
    filtered = bool(args.query or args.status or args.completed_only)
    show(
        args,
        listing,
        lambda found: display.views.show_list(found, filtered=filtered, limit=args.limit),
    )
    return 0


async def print_events(service: ResearchService, args: argparse.Namespace) -> int:
    cursor: str | None = None
    events: list[dict[str, Any]] = []
    while True:
        page = await service.events(args.research_id, cursor=cursor, limit=500)
        for event in page["events"]:
            if args.json:
                events.append(event)
                continue
            data = json.dumps(plain_within(event["data"]), ensure_ascii=False)
            print(plain(f"{event['seq']:>5} {event['at']} {event['kind']:<16} {data}"))
        cursor = page["next_cursor"]
        if cursor is None:
            if args.json:
                print_json({"research_id": args.research_id, "events": events})
            return 0


async def restore_source(service: ResearchService, args: argparse.Namespace) -> int:
    done = in_terminal_words(
        await service.restore_content(args.research_id, args.item_id), args.research_id
    )
    said = f"{args.item_id} is back in {args.research_id}. {done['next_action']}"
    show(args, done, lambda _: display.views.show_done(said))
    return 0


async def ask_research(service: ResearchService, args: argparse.Namespace) -> int:
    """A follow-up question answered from a completed research's sources: exit 0 when they
    answer it, 1 when they do not (the answer says how to research it further)."""
    answered = await service.follow_up(args.research_id, query=args.question)
    answered = in_terminal_words(answered, args.research_id)
    show(args, answered, lambda doc: display.views.show_follow_up(doc))
    return 0 if answered.get("answerable", True) else 1


async def cancel_research(service: ResearchService, args: argparse.Namespace) -> int:
    done = in_terminal_words(await service.cancel(args.research_id), args.research_id)
    said = (
        f"{args.research_id}: {done['status']}. Its work so far is saved; continue it with "
        f"foundry-mcp resume {args.research_id}"
    )
    show(args, done, lambda _: display.views.show_done(said))
    return 0


async def delete_research(service: ResearchService, args: argparse.Namespace) -> int:
    said = f"{args.research_id} deleted, with its sources and events."
    show(args, await service.delete(args.research_id), lambda _: display.views.show_done(said))
    return 0


async def list_versions(service: ResearchService, args: argparse.Namespace) -> int:
    """The report's versions, what made each and its cost; ``--diff A B``: what version B has
    that version A has not, and the other way round."""
    base, version = args.diff or (None, None)
    listed = await service.versions(args.research_id, version, base)
    listed = in_terminal_words(listed, args.research_id)
    if args.diff:
        show(args, listed, lambda found: display.versions.show_delta(found["delta"]))
    elif args.json or not sys.stdout.isatty():
        print_json(listed)
    else:
        display.versions.show_versions(listed)
    return 0
