"""A report written in parts on a small window: many findings, a model that rejects what it
cannot hold, and a research that still completes with every section and citation.

The fake model rejects any prompt that, with the output it is asked for, would not fit its
window (as a local server does), so a prompt foundry-mcp did not fit shows up as a rejection.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily
from tests.fakes.brain import FRAME_MARKER, SECTION_TOPIC_RE, source_sentences
from tests.fakes.http import FakeResponse, RecordedRequest
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How efficient is lithium battery recycling today?"
WINDOW = 6_000
FINDINGS_PER_SOURCE = 6
CITATION_RE = re.compile(r"\[(\d+)\]")


def page(query: str, n: int) -> str:
    """Twelve distinct sentences on the question (about 400 tokens)."""
    digest = hashlib.sha256(f"{query}|{n}".encode()).hexdigest()
    return " ".join(
        f"Study {digest[:6]}.{i} reports that lithium battery recycling recovered "
        f"{int(digest[i : i + 2], 16) % 90 + 5} percent of cathode metals in plant {i % 7 + 1}."
        for i in range(12)
    )


def corpus(query: str) -> list[dict[str, Any]]:
    slug = hashlib.sha256(query.encode()).hexdigest()[:10]
    return [
        {
            "title": f"Recycling field report {slug} number {n}",
            "url": f"https://reports.example.org/{slug}/{n}",
            "content": f"Field report {n} on lithium battery recycling yields.",
            "score": round(0.9 - 0.05 * n, 3),
            "raw_content": page(query, n),
        }
        for n in range(1, 4)
    ]


def many_findings(brain: ResearchBrain, per_source: int = FINDINGS_PER_SOURCE) -> None:
    """An analyst that states several findings per source read, each one of its sentences."""

    def analyze(system: str, user: str) -> str:
        answer = brain.analyze(user)
        answer["findings"] = [
            {
                "content": sentence,
                "confidence": "high" if i == 0 else "medium",
                "source_ids": [source_id],
                "category": "evidence",
            }
            for source_id, sentences in source_sentences(user).items()
            for i, sentence in enumerate(sentences[:per_source])
        ]
        return brain._json(answer)

    brain.overrides["analyzer"] = analyze


def reject_beyond_window(server: FakeHTTPServer, rejected: list[str]) -> None:
    """The fake model rejects a prompt whose tokens and asked output exceed ``WINDOW``."""
    answer = server._routes[("POST", "/v1/chat/completions")]

    def bounded(request: RecordedRequest) -> FakeResponse:
        body = request.json or {}
        text = "".join(str(m.get("content", "")) for m in body.get("messages") or [])
        asked = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        tokens = len(text) // 4
        if tokens + asked > WINDOW:
            rejected.append(ResearchBrain.identify(text))
            message = (
                f"This model's maximum context length is {WINDOW} tokens. However, you "
                f"requested {tokens + asked} tokens. Please reduce the length of the messages."
            )
            error = {"message": message, "type": "invalid_request_error", "param": "messages"}
            return FakeResponse(400, {"error": {**error, "code": "context_length_exceeded"}})
        return answer(request)

    server.route("POST", "/v1/chat/completions", bounded)


def small_window_settings(
    research_env: dict[str, str], tmp_path: Path, tavily: FakeHTTPServer
) -> Settings:
    config = tmp_path / "small-window.toml"
    config.write_text(
        "[providers.openai]\nmax_retries = 0\n\n[research]\n"
        f'model_context_overrides = {{ "gpt-4.1-mini" = {WINDOW} }}\n'
    )
    env = {**research_env, "FOUNDRY_MCP_CONFIG": str(config), "TAVILY_BASE_URL": tavily.base_url}
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


async def run_research(settings: Settings, **options: Any) -> tuple[dict[str, Any], ResearchState]:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            QUESTION, max_iterations=1, max_sub_queries=3, max_sources_per_query=3, **options
        )
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
        assert status["status"] == "completed", status["error"]
        return status, service.store.load(started["research_id"])


async def test_a_small_window_with_many_findings_still_writes_the_report(
    research_env: dict[str, str],
    tmp_path: Path,
    brain: ResearchBrain,
    openai_server: FakeHTTPServer,
) -> None:
    many_findings(brain)
    rejected: list[str] = []
    reject_beyond_window(openai_server, rejected)
    with fake_tavily(corpus) as tavily:
        status, state = await run_research(small_window_settings(research_env, tmp_path, tavily))

    # Many findings, more than one frame prompt of this window holds.
    assert len(state.findings) >= 40
    assert not rejected  # every prompt was fitted before it was sent
    writer = [user for agent, _, user in brain.history if agent == "writer"]
    sections = [user for user in writer if SECTION_TOPIC_RE.search(user)]
    assert len(sections) >= 2
    assert state.report
    body = state.report.split("\n## Sources\n", 1)[0]
    # Every section is in the report, and every finding (each section states its own).
    for user in sections:
        topic = SECTION_TOPIC_RE.search(user)
        assert topic and f"## {topic.group(1).strip()}" in body
    missing = [f.content for f in state.findings if f.content.rstrip(".") not in body]
    assert not missing
    assert len(set(CITATION_RE.findall(body))) >= 3
    # A warning says what the frame was not shown.
    assert any("frame" in w and "finding" in w for w in status["warnings"]), status["warnings"]
    assert [user for user in writer if FRAME_MARKER in user]


async def test_a_hierarchical_research_on_a_small_window_answers_every_part(
    research_env: dict[str, str],
    tmp_path: Path,
    brain: ResearchBrain,
    openai_server: FakeHTTPServer,
) -> None:
    """Each sub-question's answer rests on the findings its window holds; the report's
    sections state them all."""
    many_findings(brain, per_source=12)
    rejected: list[str] = []
    reject_beyond_window(openai_server, rejected)
    with fake_tavily(corpus) as tavily:
        settings = small_window_settings(research_env, tmp_path, tavily)
        _, state = await run_research(settings, mode="hierarchical")
    assert not rejected
    assert state.sub_questions and all(sq.synthesis for sq in state.sub_questions)
    assert state.report and len(set(CITATION_RE.findall(state.report))) >= 3
