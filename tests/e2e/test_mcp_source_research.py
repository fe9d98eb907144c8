"""A research reads the user's MCP sources as it reads the web: the notes server's fact is found,
cited with a stable mcp:// link and quoted in the evidence; a source that hangs or crashes is
skipped with a warning and the research completes from the others."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.providers.mcp_sources.search import McpSourceSearch
from foundry_mcp.research.models import ResearchState
from foundry_mcp.runtime import research_runtime
from foundry_mcp.server import create_server
from foundry_mcp.server.host import ServiceHost
from tests.e2e.conftest import call, run_to_end
from tests.fakes import FakeHTTPServer
from tests.fakes.brain import ResearchBrain, source_sentences
from tests.fakes.docpages import DOC_QUESTIONS, DocCorpus
from tests.npm_servers import FILESYSTEM, npm_server
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How often do SQLite WAL checkpoints run in our single-user store?"


def _settings(research_env: dict[str, str], tmp_path: Path, **env: str) -> Settings:
    extra = "".join(f'{key} = "{value}"\n' for key, value in env.items())
    tables = (
        "\n[mcp_sources.notes]\n"
        f'command = ["{sys.executable}", "-m", "tests.fakes.notes_mcp_server"]\n'
        f'cwd = "{Path(__file__).resolve().parents[2]}"\ntimeout_s = 2\n'
    ) + ("[mcp_sources.notes.env]\n" + extra if extra else "")
    return _with_tables(research_env, tmp_path, tables)


def _with_tables(research_env: dict[str, str], tmp_path: Path, tables: str) -> Settings:
    """The research's settings with ``tables`` added to its configuration file."""
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text() + tables)
    return load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))


@dataclass
class Visit:
    """A research run to its end through an MCP client, and what the test reads of it."""

    final: dict[str, Any]  # its last status
    evidence: dict[str, Any]
    report: str  # the whole markdown
    state: ResearchState
    source: McpSourceSearch  # the MCP source's adapter (its connection counts the calls)
    policy: dict[str, Any]  # the source's resilience policy: attempts, retries, circuit


async def _visit(
    settings: Settings, provider: str = "mcp.notes", question: str = QUESTION
) -> Visit:
    hosts: list[ServiceHost] = []
    server = create_server(lambda: settings, on_started=hosts.append)
    async with Client(server, mode="legacy") as client:
        started = await call(
            client, action="deep-research", query=question, max_iterations=1, clarify="off"
        )
        assert started["success"], started
        assert provider in started["data"]["search"]["providers"]
        research_id = started["data"]["research_id"]
        final = await run_to_end(client, research_id)
        evidence = await call(client, action="deep-research-evidence", research_id=research_id)
        service = await hosts[0].service()
        report = await service.full_report(research_id)
        state = service.store.load(research_id)
        source = service.providers.search(provider)
        policy = service.providers.resilience.snapshot().get(provider, {})
    assert isinstance(source, McpSourceSearch)
    return Visit(final, evidence["data"], report, state, source, policy)


async def _research(
    settings: Settings, provider: str = "mcp.notes", question: str = QUESTION
) -> tuple[dict[str, Any], dict[str, Any]]:
    visit = await _visit(settings, provider, question)
    return visit.final, visit.evidence


async def test_a_fact_held_by_an_mcp_source_is_cited_and_quoted(
    research_env: dict[str, str], tavily_server: FakeHTTPServer, tmp_path: Path
) -> None:
    final, evidence = await _research(_settings(research_env, tmp_path))
    assert final["status"] == "completed", final
    quoted = [
        quote
        for claim in evidence["claims"]
        for quote in claim["quotes"]
        if "checkpoints run every 1000 pages" in quote["text"]
    ]
    assert quoted, evidence["claims"]
    cited = {s["url"] for claim in evidence["claims"] for s in claim["sources"]}
    assert any(url.startswith("mcp://notes/") for url in cited), cited


def _without_retries(research_env: dict[str, str]) -> dict[str, str]:
    """``research_env`` whose configuration sends a failed search of the notes source only once
    (as it does for every other provider): each retry of a hanging or crashing server would
    wait out its timeout or start it again."""
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text() + '\n[providers."mcp.notes"]\nmax_retries = 0\n')
    return research_env


@pytest.mark.parametrize("misbehaving", [{"NOTES_HANG": "call"}, {"NOTES_CRASH_AFTER": "0"}])
async def test_a_source_that_hangs_or_crashes_is_skipped(
    research_env: dict[str, str],
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
    misbehaving: dict[str, str],
) -> None:
    settings = _settings(_without_retries(research_env), tmp_path, **misbehaving)
    final, _ = await _research(settings)
    assert final["status"] == "completed", final
    assert any("notes" in warning for warning in final["warnings"]), final["warnings"]


# Commit messages as people write them: a subject, then paragraphs wrapped at 72 columns.
COMMITS = (
    ("a.txt", "Initial layout"),
    (
        "b.txt",
        "Queue the crawl workers\n\n"
        "Workers take jobs from an asyncio.Queue and put results on a second\n"
        "queue that the writer drains in batches of fifty.\n\n"
        "A full queue makes the workers wait; the writer never does.",
    ),
    (
        "c.txt",
        "Switch the store to WAL mode\n\n"
        "SQLite WAL checkpoints every 1000 pages keep readers going while the\n"
        "writer appends.\n\n"
        "Readers never wait for the writer, and the single-user store stays\n"
        "small.",
    ),
    ("d.txt", "Add the release workflow\n\nReleases are tagged and built by the workflow."),
)


def _git(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)


def _repository(path: Path) -> Path:
    """A git repository whose history holds the fact (in a wrapped commit body)."""
    path.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "dev@example.org"]):
        _git(path, *args).check_returncode()
    _git(path, "config", "user.name", "Dev").check_returncode()
    for name, message in COMMITS:
        (path / name).write_text(message)
        _git(path, "add", name).check_returncode()
        _git(path, "commit", "-q", "-m", message).check_returncode()
    return path


def _git_settings(research_env: dict[str, str], tmp_path: Path, server: str) -> Settings:
    repo = _repository(tmp_path / "repo")
    tables = (
        f'\n[mcp_sources.repo]\ncommand = ["{server}", "--repository", "{repo}"]\n'
        f'arguments = {{ repo_path = "{repo}" }}\n'
    )
    return _with_tables(research_env, tmp_path, tables)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_a_fact_in_a_repositorys_history_is_read_through_mcp_server_git(
    research_env: dict[str, str], tavily_server: FakeHTTPServer, tmp_path: Path
) -> None:
    server = shutil.which("mcp-server-git", path=str(Path(sys.executable).parent))
    assert server is not None, "mcp-server-git is a test dependency ([test] extras)"
    settings = _git_settings(research_env, tmp_path, server)
    visit = await _visit(settings, "mcp.repo")
    final, evidence = visit.final, visit.evidence
    assert final["status"] == "completed", final
    quoted = [
        (quote["text"], source["url"])
        for claim in evidence["claims"]
        for quote, source in zip(claim["quotes"], claim["sources"], strict=False)
        if "checkpoints every 1000 pages" in quote["text"]
    ]
    assert quoted, evidence["claims"]
    # Every link names a commit (its full hash), never a paragraph of a commit's body.
    links = set(re.findall(r"mcp://repo/([^\s)\]>\"']*)", visit.report + json.dumps(evidence)))
    assert links, visit.report
    repo = tmp_path / "repo"
    for link in links:
        assert re.fullmatch(r"[0-9a-f]{40}", link), link
        assert _git(repo, "cat-file", "-e", f"{link}^{{commit}}").returncode == 0, link
    # Titled by subject lines, without git_log's "Message: " label.
    subjects = {message.split("\n")[0] for _, message in COMMITS}
    titles = {s.title for s in visit.state.sources if (s.url or "").startswith("mcp://repo/")}
    assert titles and titles <= subjects, titles
    # Listed once and each commit read once, for all the research's sub-queries.
    calls = visit.source.connection.calls
    assert calls["git_log"] == 1 and calls["git_show"] <= len(COMMITS), calls


DOCS_QUESTION = "How many days does our research store keep fetched pages before the prune?"
DOCS_FACT = (
    "Our research store keeps fetched pages for 45 days; the nightly prune removes the rest."
)


# Text a research must never read: it lies outside the documentation folder.
SECRET = "SECRET deploy key: our research store keeps fetched pages; days before the prune."
# Files of the folder whose names, read as a server on another system or decoding them might,
# climb out of it: refused, never read, named in the research's warnings.
CLIMBING = ("..\\..\\outside-secret.md", "%2e%2e%2f%2e%2e%2fsecret-store-pages.md")


def _documentation(folder: Path) -> Path:
    """A documentation folder of long reference pages (20-400 KB of mixed prose and code);
    the fact sits in the middle of a 310 KB page whose name shares no word with the question.
    Beside them: names that climb out of the folder, and a link to a file outside it."""
    outside = folder.parent / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET)
    for name in CLIMBING:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(SECRET)
    (folder / "library").mkdir(parents=True, exist_ok=True)
    (folder / "library" / "store-pages-prune.md").symlink_to(outside / "secret.md")
    for page in DocCorpus(DOC_QUESTIONS[0]).all_pages():
        *_, part, name = page["url"].removesuffix(".html").split("/")
        path = folder / "library" / part / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = page["raw_content"]
        if path.name == "how-to.md" and part == "dbm-ndbm":
            middle = text.index("\n\n", len(text) // 2)
            text = f"{text[:middle]}\n\n{DOCS_FACT}\n\n{text[middle:]}"
        path.write_text(text)
    return folder


def _docs_settings(research_env: dict[str, str], tmp_path: Path, server: Path) -> Settings:
    docs = _documentation(tmp_path / "docs")
    tables = (
        f'\n[mcp_sources.docs]\ncommand = ["{server}", "{docs}"]\n'
        f'arguments = {{ path = "{docs}" }}\n'
    )
    return _with_tables(research_env, tmp_path, tables)


def _careful_analyst(brain: ResearchBrain) -> Callable[[str, str], str]:
    """An analyst that, as a real model would, states what the sources say on the question:
    the three sentences sharing the most words with it, wherever they stand, each citing its
    source (the fake's own analyst restates the first sources' opening sentences)."""

    def analyze(system: str, user: str) -> str:
        answer = brain.analyze(user)
        asked = set(DOCS_QUESTION.lower().split())
        said = [
            (len(asked & set(piece.lower().split())), piece, source_id)
            for source_id, sentences in source_sentences(user).items()
            for sentence in sentences
            for piece in re.split(r"\s*(?:\[…\]|```|\s>\s|\s-\s)\s*", sentence)
            if len(piece.split()) >= 4
        ]
        best = sorted(said, key=lambda found: -found[0])[: len(answer["findings"])]
        for finding, (_, sentence, source_id) in zip(answer["findings"], best, strict=False):
            finding.update(content=sentence, source_ids=[source_id])
        return json.dumps(answer)

    return analyze


async def test_a_fact_in_a_documentation_folder_is_read_through_the_filesystem_server(
    research_env: dict[str, str],
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    brain.overrides["analyzer"] = _careful_analyst(brain)
    settings = _docs_settings(research_env, tmp_path, npm_server(*FILESYSTEM))
    visit = await _visit(settings, "mcp.docs", DOCS_QUESTION)
    final, evidence = visit.final, visit.evidence
    assert final["status"] == "completed", final
    quoted = [
        (quote["text"], source["url"])
        for claim in evidence["claims"]
        for quote, source in zip(claim["quotes"], claim["sources"], strict=False)
        if "fetched pages for 45 days" in quote["text"]
    ]
    assert quoted, evidence["claims"]
    assert all(url == "mcp://docs/library/dbm-ndbm/how-to.md" for _, url in quoted), quoted
    # Nothing outside the folder was read: names climbing out are refused and said.
    assert "SECRET" not in visit.report
    assert not any("SECRET" in (s.content or "") for s in visit.state.sources)
    (said,) = [w for w in final["warnings"] if "outside its folder" in w]
    assert all(repr(name) in said for name in CLIMBING), said
    # One listing for the research, each file read at most once (the link's read refused).
    files = [p for p in (tmp_path / "docs").rglob("*") if p.is_file() or p.is_symlink()]
    calls = visit.source.connection.calls
    reads = sum(count for tool, count in calls.items() if tool.startswith("read"))
    assert calls["directory_tree"] == 1 and reads <= len(files) - len(CLIMBING), calls


@pytest.fixture
def notes_over_http() -> Iterator[str]:
    """The notes server over Streamable HTTP, wanting ``Authorization: Bearer notes-token``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "NOTES_HTTP_PORT": str(port), "NOTES_TOKEN": "notes-token"}
    root = Path(__file__).resolve().parents[2]
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.notes_mcp_server"], cwd=root, env=env
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(10)


def _http_settings(research_env: dict[str, str], tmp_path: Path, url: str, token: str) -> Settings:
    tables = (
        f'\n[mcp_sources.notes]\nurl = "{url}"\ntimeout_s = 5\n'
        f'headers = {{ Authorization = "Bearer {token}" }}\n'
    )
    return _with_tables(research_env, tmp_path, tables)


async def test_a_source_over_streamable_http_is_read_with_its_headers(
    research_env: dict[str, str],
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
    notes_over_http: str,
) -> None:
    settings = _http_settings(research_env, tmp_path, notes_over_http, "notes-token")
    final, evidence = await _research(settings)
    assert final["status"] == "completed", final
    quoted = [
        quote["text"]
        for claim in evidence["claims"]
        for quote in claim["quotes"]
        if "checkpoints run every 1000 pages" in quote["text"]
    ]
    assert quoted, evidence["claims"]
    assert not any("notes" in warning for warning in final["warnings"]), final["warnings"]


async def test_a_source_refusing_its_headers_is_skipped_with_the_fix(
    research_env: dict[str, str],
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
    notes_over_http: str,
) -> None:
    settings = _http_settings(research_env, tmp_path, notes_over_http, "wrong-token")
    final, _ = await _research(settings)
    assert final["status"] == "completed", final
    said = [warning for warning in final["warnings"] if "notes" in warning]
    assert said and "HTTP 401" in said[0] and "headers" in said[0], final["warnings"]
    assert "wrong-token" not in json.dumps(final)


async def test_the_planner_aims_sub_queries_at_a_source_by_name(
    research_env: dict[str, str],
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    def planner(system: str, user: str) -> str:
        plan = brain.plan(user, system)
        for sub_query in plan["sub_queries"]:
            sub_query.update(target="local", sources=["mcp.notes", "mcp.gone"])
        return json.dumps(plan)

    brain.overrides["planner"] = planner
    settings = _two_sources(research_env, tmp_path)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1, clarify="off")
        assert {"mcp.notes", "mcp.archive"} <= set(started["search"]["providers"])
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        state = service.store.load(started["research_id"])
    (system, user) = next((s, u) for agent, s, u in brain.history if agent == "planner")
    assert '"sources": ["<name>", ...]' in system
    assert "source mcp.notes: the team's decision records" in user
    assert "source mcp.archive: release notes of retired products" in user
    assert state.sub_queries and all(sq.sources == ["mcp.notes"] for sq in state.sub_queries)
    asked = {name for sq in state.sub_queries for name in sq.providers}
    assert asked == {"mcp.notes"}, asked


def _two_sources(research_env: dict[str, str], tmp_path: Path) -> Settings:
    server = f'command = ["{sys.executable}", "-m", "tests.fakes.notes_mcp_server"]\n'
    here = f'cwd = "{Path(__file__).resolve().parents[2]}"\n'
    tables = (
        # The archive comes first: were the planner's naming ignored, it would be asked.
        f"\n[mcp_sources.archive]\n{server}{here}"
        'description = "release notes of retired products"\n'
        f'\n[mcp_sources.notes]\n{server}{here}description = "the team\'s decision records"\n'
    )
    return _with_tables(research_env, tmp_path, tables)
