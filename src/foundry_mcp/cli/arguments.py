"""The command line's grammar: every command, its arguments and its help.

Each command that prints a document (``list``, ``status``, ``doctor``...) prints it for a person
on a terminal and as JSON into a pipe or a file; ``--json`` asks for JSON on a terminal too.
"""

from __future__ import annotations

import argparse

from foundry_mcp import __version__
from foundry_mcp.cli import migrate, view
from foundry_mcp.logs import LOG_FORMATS

# Where each command's body is, as "module:function" in ``foundry_mcp.cli``. ``main`` imports a
# command's module only when that command runs, so each command pays for its own imports alone
# (``trust`` imports no research code; ``list`` neither a provider's SDK nor the MCP SDK).
# These take the research service (opened by ``main``) and the parsed arguments:
COMMANDS: dict[str, str] = {
    "research": "running:run_research",
    "resume": "running:resume_research",
    "watch": "running:watch_research",
    "status": "commands:show_status",
    "report": "commands:print_report",
    "evidence": "commands:print_evidence",
    "list": "commands:list_researches",
    "events": "commands:print_events",
    "cancel": "commands:cancel_research",
    "restore": "commands:restore_source",
    "ask": "commands:ask_research",
    "revise": "revising:revise_research",
    "versions": "commands:list_versions",
    "delete": "commands:delete_research",
    "export": "commands:export_research",
    "view": "view:view_research",
    "doctor": "doctor:doctor",
    "bench": "bench:run_bench",
}
# These take the parsed arguments only: no research service is opened for them.
COMMANDS_WITHOUT_SERVICE: dict[str, str] = {
    "trust": "commands:trust_file",
    "migrate": "migrate:run_migrate",  # two stores, not the research service
}


def build_parser() -> argparse.ArgumentParser:
    """The ``foundry-mcp`` parser with all its commands."""
    parser = argparse.ArgumentParser(
        prog="foundry-mcp",
        description="Deep research for coding assistants. With no command, serves MCP on stdio.",
    )
    parser.add_argument("--version", action="version", version=f"foundry-mcp {__version__}")
    commands = parser.add_subparsers(dest="command")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document on stdout (the default when stdout is not a terminal)",
    )
    _add_serve(commands)
    _add_research(commands, as_json)
    _add_bench(commands, as_json)
    resume = commands.add_parser(
        "resume",
        parents=[as_json],
        help="continue an unfinished research (approving a waiting plan), or a completed one "
        "with more rounds",
    )
    resume.add_argument("research_id")
    resume.add_argument("--max-iterations", type=int)
    resume.add_argument(
        "--plan",
        action="append",
        metavar="QUERY",
        help="a waiting research: research these queries instead of its plan's (repeat it)",
    )
    _add_report_file(resume)
    for name, text in (
        ("status", "show a research's status"),
        ("events", "print a research's audit trail"),
        ("evidence", "the report's checked sentences, each with the quotes behind it"),
        ("cancel", "cancel a research running in another foundry-mcp process"),
        ("delete", "delete a research"),
        ("watch", "follow a research another foundry-mcp process runs, until it ends"),
    ):
        commands.add_parser(name, parents=[as_json], help=text).add_argument("research_id")
    ask = commands.add_parser(
        "ask",
        parents=[as_json],
        help="ask a follow-up question about a completed research, answered from its sources",
    )
    ask.add_argument("research_id")
    ask.add_argument("question", help="the follow-up question")
    restore = commands.add_parser(
        "restore", parents=[as_json], help="bring an archived source back into a stopped research"
    )
    restore.add_argument("research_id")
    restore.add_argument("item_id", help="the source id, e.g. src-1a2b3c4d")
    report = commands.add_parser(
        "report", parents=[as_json], help="print a research's report (--json: summary, first page)"
    )
    report.add_argument("research_id")
    _add_version(report)
    _add_revise(commands, as_json)
    versions = commands.add_parser(
        "versions",
        parents=[as_json],
        help="list a research's report versions, what made each and its cost",
    )
    versions.add_argument("research_id")
    versions.add_argument(
        "--diff",
        nargs=2,
        type=int,
        metavar=("A", "B"),
        help="what version B has that version A has not (sections, sources, findings), and "
        "the other way round",
    )
    listing = commands.add_parser("list", parents=[as_json], help="list researches, newest first")
    listing.add_argument("--limit", type=int, default=20, help="how many (20; at most 100)")
    listing.add_argument(
        "--query", metavar="WORDS", help="only research whose question holds all these words"
    )
    listing.add_argument("--completed-only", action="store_true")
    listing.add_argument("--status", help="only these statuses, comma-separated")
    _add_export(commands, as_json)
    view.add_parser(commands, as_json)
    commands.add_parser(
        "doctor",
        parents=[as_json],
        help="check configuration, provider keys, and that each provider in use answers",
    )
    trust = commands.add_parser(
        "trust",
        parents=[as_json],
        help="let a project's foundry-mcp.toml set protected keys (base_url, hooks, paths...)",
    )
    trust.add_argument("path", nargs="?", help="the file to trust (default: ./foundry-mcp.toml)")
    trust.add_argument("--revoke", action="store_true", help="stop trusting the file")
    trust.add_argument("--list", action="store_true", help="show the trusted files")
    migrate.add_parser(commands, as_json)
    return parser


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve", help="serve MCP over stdio (the default), or over HTTP with --http"
    )
    serve.add_argument(
        "--http",
        action="store_true",
        help="serve MCP over streamable HTTP at /mcp, for a team (see docs/team-server.md)",
    )
    serve.add_argument("--host", help="with --http: the address to listen on ([server] host)")
    serve.add_argument(
        "--port", type=_port, help="with --http: the port to listen on ([server] port, 8765)"
    )
    serve.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="log lines on stderr as text, or as one JSON object per line",
    )


def _add_research(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], as_json: argparse.ArgumentParser
) -> None:
    research = commands.add_parser(
        "research",
        parents=[as_json],
        help="run a research in the terminal; its report goes to stdout and to a file",
    )
    research.add_argument("query", help="the research question")
    research.add_argument("--provider", help="LLM as provider[:model], e.g. anthropic")
    research.add_argument("--model", help="LLM model name")
    research.add_argument("--context", help="extra context for the research (system prompt)")
    research.add_argument("--max-iterations", type=int)
    research.add_argument("--max-sub-queries", type=int)
    research.add_argument("--max-sources", type=int, help="sources per sub-query")
    research.add_argument("--max-concurrent", type=int, help="searches and readings at once")
    research.add_argument(
        "--reading-budget",
        type=int,
        help="tokens of page text a round reads, the passages worth most first; 0: whole pages",
    )
    research.add_argument(
        "--timeout", type=float, help="stop (status timed_out) after this many seconds"
    )
    research.add_argument(
        "--max-time",
        type=float,
        help="finish with a report within this many seconds (gathering stops early)",
    )
    _add_mode_and_effort(research, "the question is")
    research.add_argument(
        "--language",
        help="write the report in this language, e.g. German or de (default: the question's)",
    )
    research.add_argument(
        "--source-types",
        help="kinds of sources, comma-separated: web, academic, news, local (default: all)",
    )
    research.add_argument(
        "--prefer",
        help="sites to favour, comma-separated domains or https:// address prefixes",
    )
    research.add_argument(
        "--include-domain",
        action="append",
        metavar="DOMAIN",
        help="read only sources on this domain (its subdomains too); repeat for more",
    )
    research.add_argument(
        "--exclude-domain",
        action="append",
        metavar="DOMAIN",
        help="never search, read or cite this domain; repeat for more",
    )
    research.add_argument(
        "--published-after", metavar="YYYY-MM-DD", help="only sources published on or after"
    )
    research.add_argument(
        "--published-before", metavar="YYYY-MM-DD", help="only sources published on or before"
    )
    research.add_argument(
        "--schema",
        metavar="FILE",
        help="a JSON Schema file: also answer in that shape, every value cited (report: 'answer')",
    )
    research.add_argument(
        "--clarify",
        type=str.lower,
        choices=["auto", "off", "always"],
        help="ask about a vague question first, on this terminal (default: [research] "
        "clarify, auto)",
    )
    research.add_argument(
        "--review-plan",
        action="store_true",
        help="show the plan and wait for your approval before searching",
    )
    _add_report_file(research)


def _add_report_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        metavar="PATH",
        help="write the report to this Markdown file (default: a file in the reports folder "
        "next to the research store, named after the date, question and id)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the --output file if it exists"
    )


def _add_bench(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], as_json: argparse.ArgumentParser
) -> None:
    bench = commands.add_parser(
        "bench",
        parents=[as_json],
        help="research every task of a JSONL file; answers in DeepResearch Bench's format",
    )
    bench.add_argument("tasks", nargs="?", help='JSONL file of {"id", "prompt"} lines')
    bench.add_argument("--sample", action="store_true", help="run the bundled sample tasks")
    bench.add_argument(
        "--out", required=True, help="answers file (JSONL; tasks already in it are skipped)"
    )
    bench.add_argument("--concurrency", type=int, default=2, help="researches at once (2)")
    bench.add_argument("--max-iterations", type=int)
    _add_mode_and_effort(bench, "each question is")


def _add_export(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], as_json: argparse.ArgumentParser
) -> None:
    export = commands.add_parser(
        "export",
        parents=[as_json],
        help="export a research: the report, its state as JSON, or its sources",
    )
    export.add_argument("research_id")
    export.add_argument(
        "--format", choices=["markdown", "json", "bibtex", "ris"], default="markdown"
    )
    export.add_argument("--out", help="write to this file in the current directory (not stdout)")
    export.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    _add_version(export)


def _add_version(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--version",
        type=int,
        metavar="N",
        help="this version of the report (default: the latest; see foundry-mcp versions)",
    )


def _add_revise(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], as_json: argparse.ArgumentParser
) -> None:
    revise = commands.add_parser(
        "revise",
        parents=[as_json],
        help="make a completed research's report again as a new version: rewritten, deepened "
        "on one part, or refreshed",
    )
    revise.add_argument("research_id")
    kind = revise.add_mutually_exclusive_group(required=True)
    kind.add_argument(
        "--rewrite",
        action="store_true",
        help="write it again from the saved findings and sources, no search",
    )
    kind.add_argument(
        "--deepen",
        metavar="PART",
        help="research one part further: a sub-question's or gap's id, a section's heading, or "
        "a question",
    )
    kind.add_argument(
        "--refresh",
        action="store_true",
        help="ask its searches again for what is new, with a section on what changed",
    )
    revise.add_argument(
        "--form", type=str.lower, choices=["report", "brief", "table", "memo"], help="its shape"
    )
    revise.add_argument("--audience", help="who reads it, e.g. 'a CFO'")
    revise.add_argument("--length", type=int, metavar="WORDS", help="about how many words")
    revise.add_argument("--language", help="write it in this language, e.g. German")
    revise.add_argument(
        "--corrections",
        "--instructions",
        metavar="TEXT",
        help="what to correct or change, in your words",
    )
    revise.add_argument(
        "--max-searches", type=int, metavar="N", help="--deepen, --refresh: the most new searches"
    )
    revise.add_argument(
        "--no-wait", action="store_true", help="start it and return (follow with foundry-mcp watch)"
    )
    _add_report_file(revise)


def _port(value: str) -> int:
    if not value.isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0 to 65535)")
    return int(value)


def _add_mode_and_effort(parser: argparse.ArgumentParser, researched: str) -> None:
    parser.add_argument(
        "--mode",
        type=str.lower,
        choices=["auto", "simple", "hierarchical", "hypotheses"],
        help=f"how {researched} researched (default: [research] mode, auto)",
    )
    parser.add_argument(
        "--effort",
        type=str.lower,
        choices=["quick", "standard", "deep"],
        help="how thorough: quick, standard (the configuration) or deep",
    )
