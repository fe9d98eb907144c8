"""The commands of a report that lives: ``revise`` (a rewrite, a deepen or a refresh of a
completed research's report, followed to its end like a research, then its cost by phase) and
``versions`` (the report's versions, or with ``--diff A B`` what each of two has that the other
has not). Both call the service the MCP tool calls (``deep-research-revise``,
``deep-research-versions``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from foundry_mcp.cli.display.output import in_terminal_words, print_json, show
from foundry_mcp.cli.display.versions import cost_lines, show_delta, show_versions
from foundry_mcp.cli.report_file import report_target
from foundry_mcp.cli.running import follow
from foundry_mcp.plain import plain
from foundry_mcp.research.service.research_service import ResearchService


def revise_request(args: argparse.Namespace) -> dict[str, Any]:
    """The ``revise`` object the command's options make (checked by the service)."""
    kind = "rewrite" if args.rewrite else "deepen" if args.deepen is not None else "refresh"
    asked = {
        "kind": kind,
        "form": args.form,
        "audience": args.audience,
        "length_words": args.length,
        "language": args.language,
        "corrections": args.corrections,
        "part": args.deepen,
        "max_searches": args.max_searches,
    }
    return {key: value for key, value in asked.items() if value is not None}


async def revise_research(service: ResearchService, args: argparse.Namespace) -> int:
    """Start the revision; unless ``--no-wait``, follow it to its end, print the new version's
    report, and its cost by phase on stderr. 0 when it completed."""
    target = None if args.no_wait else report_target(service.settings, args.output, args.overwrite)
    started = await service.revise(args.research_id, revise_request(args))
    rid = started["research_id"]
    if args.no_wait:
        said = in_terminal_words(started, rid)
        show(args, said, lambda s: print(plain(f"{s['plan']}\n  next: {s['next_action']}")))
        return 0
    print(plain(f"version {started['version']}: {started['plan']}"), file=sys.stderr)
    code = await follow(service, rid, as_json=args.json, target=target)
    listed = await service.versions(rid)
    made = [v for v in listed["versions"] if v["number"] == started["version"]]
    if made:
        print("\n".join(cost_lines(made[0])), file=sys.stderr)
    return code


async def list_versions(service: ResearchService, args: argparse.Namespace) -> int:
    """The report's versions, what made each and its cost; ``--diff A B``: what version B has
    that version A has not, and the other way round."""
    base, version = args.diff or (None, None)
    listed = await service.versions(args.research_id, version, base)
    listed = in_terminal_words(listed, args.research_id)
    if args.diff:
        show(args, listed, lambda found: show_delta(found["delta"]))
    elif args.json or not sys.stdout.isatty():
        print_json(listed)
    else:
        show_versions(listed)
    return 0
