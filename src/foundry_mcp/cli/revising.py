"""The command that makes a report live on: ``revise`` (a rewrite, a deepen or a refresh of a
completed research's report, followed to its end like a research, then its cost by phase). It
calls the service the MCP tool calls (``deep-research-revise``); ``versions``, which reads what
revisions made, is with the other reading commands (:mod:`foundry_mcp.cli.commands`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from foundry_mcp.cli.display.output import in_terminal_words, show
from foundry_mcp.cli.display.versions import cost_lines
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
